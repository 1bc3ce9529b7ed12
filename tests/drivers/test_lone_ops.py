"""The weight update never compiles to a lone element-wise add on XLA:CPU.

XLA:CPU emits an element-wise op that is alone in its fusion through a row-by-row path vectorized only along
the last dimension: for 3x3 and 7x7 convolution kernels, or any parameter whose last dimension is small, it
runs several times slower than the same op fused with anything else. When a rule's weight change is a state
array the step also returns (SGD with momentum, LARS), the dense driver multiplies it by an opaque exact
one, so that ``optax.apply_updates``' ``w + update`` is a two-op loop fusion. These tests read the compiled
program (no timing) and check the result is bit for bit the rule's.
"""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxopt_jax
from mxopt_jax._src.registry import NAMES

SHAPE = (32, 3)  # small last dimension, like a (cout, cin, 3, 3) kernel; 2-D so GroupAdaGrad applies too
MOMENTUM = {"sgd", "nag", "lars", "lbsgd", "ccsgd", "dcasgd"}


def _tx(name: str) -> optax.GradientTransformation:
    kwargs = {"momentum": 0.9} if name in MOMENTUM else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mxopt_jax.OPTIMIZERS[name](**kwargs)


def _step(tx):
    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    return step


@pytest.mark.parametrize("name", NAMES)
def test_no_lone_add_on_the_weight(name):
    tx = _tx(name)
    p = {"w": jax.ShapeDtypeStruct(SHAPE, jnp.float32)}
    s = jax.eval_shape(tx.init, p)
    text = jax.jit(_step(tx), donate_argnums=(0, 1)).lower(p, s, p).compile().as_text()
    entry = text[text.index("ENTRY") :]
    shape = "f32[" + ",".join(map(str, SHAPE)) + "]"
    lone = re.findall(r"%wrapped_(add|subtract)\S* = " + re.escape(shape), entry)
    assert not lone, f"{name}: the weight update compiles to a lone {lone[0]}"


@pytest.mark.parametrize("name", ["sgd", "lars"])
def test_opaque_one_is_exact(name):
    """The multiplied update is bit for bit the rule's (compare with the update computed eagerly)."""
    tx = _tx(name)
    rng = np.random.default_rng(0)
    p = {"w": jnp.asarray(rng.standard_normal(SHAPE), jnp.float32)}
    g = {"w": jnp.asarray(rng.standard_normal(SHAPE), jnp.float32)}
    s = tx.init(p)
    u, s2 = jax.jit(tx.update)(g, s, p)
    # The weight change is the momentum buffer itself: equal bit for bit, -0.0 and all.
    mom = [x for x in jax.tree.leaves(s2) if getattr(x, "shape", None) == SHAPE]
    assert any(np.array_equal(np.asarray(u["w"]), np.asarray(m)) for m in mom)
    with jax.disable_jit():
        u_eager, _ = tx.update(g, s, p)
    np.testing.assert_array_equal(np.asarray(u["w"]), np.asarray(u_eager["w"]))


def test_lazy_rows_keep_one_update():
    """Gathered rows are not guarded: the new momentum rows feed both scatters as they are (splitting the
    update there made the lazy SGD-momentum step on a 1M x 64 table twice as slow)."""
    from mxopt_jax.sparse import RowSparse

    tx = mxopt_jax.sgd(learning_rate=0.1, momentum=0.9, lazy_update=True)
    p = {"w": jnp.zeros((100, 8), jnp.float32)}
    g = {
        "w": RowSparse(
            jnp.array([1, 5], jnp.int32), jnp.ones((2, 8), jnp.float32), (100, 8), sorted_unique=True
        )
    }
    jaxpr = jax.make_jaxpr(_step(tx))(p, tx.init(p), g)
    assert "optimization_barrier" not in str(jaxpr)
    dense = jax.make_jaxpr(_step(_tx("sgd")))(p, _tx("sgd").init(p), p)
    assert "optimization_barrier" in str(dense)  # the dense step is guarded (test_no_lone_add_on_the_weight)
