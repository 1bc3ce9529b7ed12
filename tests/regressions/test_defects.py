"""Defects found by using the library from outside, each kept as a plain regression test.

Every test here failed on the code before its fix (the message says what went wrong then).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxopt_jax
from mxopt_jax import facade
from mxopt_jax.sparse import RowSparse


def _donated_step(tx):
    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return jax.jit(step, donate_argnums=(0, 1))


def test_centered_rmsprop_state_buffers_are_distinct_and_donatable():
    """``init`` returned one zeros array for ``mean``, ``var`` and ``mom``: donating the state failed with
    "donate the same buffer twice"."""
    tx = mxopt_jax.rmsprop(learning_rate=0.01, centered=True)
    params = {"w": jnp.ones((3, 2))}
    state = tx.init(params)
    bufs = [state.mean["w"], state.var["w"], state.mom["w"]]
    assert len({id(b) for b in bufs}) == 3
    step = _donated_step(tx)
    for _ in range(2):
        params, state = step(params, state, {"w": jnp.full((3, 2), 0.5)})
    assert bool(jnp.all(jnp.isfinite(params["w"])))


def test_multiplier_callable_sees_a_leaf_when_update_has_no_params():
    """A callable ``lr_mult`` was called with ``leaf=None`` by ``update(grads, state)`` (no params, allowed
    when ``wd == 0``): ``lambda path, leaf: ... leaf.ndim ...`` raised AttributeError."""
    seen = []

    def mult(path, leaf):
        seen.append((path, leaf.ndim, tuple(leaf.shape)))
        return 0.0 if leaf.ndim == 1 else 1.0

    tx = mxopt_jax.adam(learning_rate=0.1, lr_mult=mult)
    params = {"b": jnp.ones(3), "k": jnp.ones((2, 3))}
    grads = {"b": jnp.ones(3), "k": jnp.ones((2, 3))}
    state = tx.init(params)
    updates, _ = tx.update(grads, state)  # no params
    np.testing.assert_array_equal(updates["b"], 0.0)  # lr_mult 0 for the 1-D leaf
    assert bool(jnp.all(updates["k"] < 0))
    assert ("b", 1, (3,)) in seen and ("k", 2, (2, 3)) in seen
    with_params, _ = tx.update(grads, state, params)  # the same multipliers with params given
    for k in updates:
        np.testing.assert_array_equal(updates[k], with_params[k])


def test_sorted_unique_rowsparse_never_wraps_a_negative_index_under_jit():
    """Under ``jit``, ``RowSparse(..., sorted_unique=True)`` applied to a dense array wrapped index -1 to the
    last row, although the documented rule is that out-of-range rows are ignored."""
    table = jnp.zeros((4, 2))

    @jax.jit
    def apply(idx, vals):
        return table + RowSparse(idx, vals, table.shape, sorted_unique=True)

    out = apply(jnp.array([-1, 1], jnp.int32), jnp.ones((2, 2)))
    np.testing.assert_array_equal(out, jnp.array([[0, 0], [1, 1], [0, 0], [0, 0]], jnp.float32))
    wide = jax.jit(
        lambda idx, vals: table.astype(jnp.float16) + RowSparse(idx, vals, table.shape, sorted_unique=True)
    )
    out16 = wide(jnp.array([-2, 3], jnp.int32), jnp.ones((2, 2)))  # float32 values on a float16 table
    np.testing.assert_array_equal(out16, jnp.array([[0, 0], [0, 0], [0, 0], [1, 1]], jnp.float16))


@pytest.mark.parametrize("cls", ["LARS", "LAMB", "LANS", "GroupAdaGrad"])
def test_facade_refuses_axis_name_at_construction(cls):
    """The facade accepted ``axis_name`` and then failed at the first update."""
    with pytest.raises(ValueError, match=r"`axis_name` is for the functional API"):
        getattr(facade, cls)(axis_name="model")
    assert getattr(facade, cls)(axis_name=None) is not None
