"""Property tests: the lazy row-sparse driver against the dense rule (hypothesis).

* a lazy update whose gradient lists every row once (in any order) equals the dense update;
* a lazy update of some rows equals the dense update on those rows and leaves every other row of the weight
  and of the state bit-identical;
* a standard (non-lazy) row-sparse gradient, duplicates included, equals its dense form for every optimizer.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from host_random import normal
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sampling import share

import mxopt_jax
from mxopt_jax._src import registry
from mxopt_jax.sparse import RowSparse

FEW = settings(
    max_examples=2,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
MANY = settings(FEW, max_examples=6, phases=tuple(Phase))  # derandomized too: CI must not flake

# Optimizers with a lazy path and the options that select it (wd must be 0 for MXNet's sparse AdaGrad kernels).
LAZY = {
    "sgd": dict(momentum=0.9, lazy_update=True, wd=1e-3),
    "adam": dict(lazy_update=True, wd=1e-3),
    "lars": dict(momentum=0.9, lazy_update=True, wd=1e-3),
    "ftrl": dict(lazy_update=True, wd=1e-3),
    "adagrad": dict(wd=0.0),
    "groupadagrad": dict(wd=0.0),
}


def _make(name: str, **kw) -> optax.GradientTransformation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mxopt_jax.OPTIMIZERS[name](learning_rate=0.05, **kw)


@st.composite
def problems(draw):
    n = draw(st.integers(1, 6))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    return n, d, normal((seed, 0), (n, d)), seed


def _two_steps(tx, params, grads_list):
    """The updates of ``grads_list`` in one jitted program (one compile per example, not one per operation)."""

    @jax.jit
    def run(params, grads_list):
        state = tx.init(params)
        for g in grads_list:
            u, state = tx.update(g, state, params)
            params = optax.apply_updates(params, u)
        return params, state

    return run(params, grads_list)


def check_all_rows(name, data):
    n, d, table, seed = data.draw(problems(), label="problem")
    perms = [data.draw(st.permutations(range(n)), label=f"order {s}") for s in range(2)]
    vals = [normal((seed, 1, s), (n, d)) for s in range(2)]
    sparse = [
        {"E": RowSparse(jnp.asarray(p, jnp.int32), v, (n, d))} for p, v in zip(perms, vals, strict=True)
    ]
    dense = [{"E": g["E"].todense()} for g in sparse]
    tx = _make(name, **LAZY[name])
    a, sa = _two_steps(tx, {"E": table}, sparse)
    b, sb = _two_steps(tx, {"E": table}, dense)
    for x, y in zip(jax.tree.leaves((a, sa)), jax.tree.leaves((b, sb)), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=2e-6)


def check_some_rows(name, data):
    n, d, table, seed = data.draw(problems(), label="problem")
    rows = data.draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=2 * n), label="rows (may repeat)")
    g = RowSparse(jnp.asarray(rows, jnp.int32), normal((seed, 1), (len(rows), d)), (n, d))
    tx = _make(name, **LAZY[name])
    init = tx.init({"E": table})
    lazy_p, lazy_s = _two_steps(tx, {"E": table}, [{"E": g}])
    dense_p, dense_s = _two_steps(tx, {"E": table}, [{"E": g.todense()}])
    touched = np.zeros(n, bool)
    touched[sorted(set(rows))] = True
    pairs = [("weight", lazy_p["E"], dense_p["E"], table)]
    for field in init._fields:
        if field not in ("count", "master", "key") and getattr(init, field) is not None:
            old = getattr(init, field)["E"]
            pairs.append((field, getattr(lazy_s, field)["E"], getattr(dense_s, field)["E"], old))
    for what, lazy, dense, old in pairs:
        lazy, dense, old = np.asarray(lazy), np.asarray(dense), np.asarray(old)
        if lazy.shape[:1] != (n,):
            continue
        # listed rows: the dense rule; the others: bit-identical to before (the dense rule may move them)
        np.testing.assert_allclose(lazy[touched], dense[touched], rtol=2e-5, atol=2e-6, err_msg=what)
        np.testing.assert_array_equal(lazy[~touched], old[~touched], err_msg=what)


def check_standard_equals_dense(name, data):
    n, d, table, seed = data.draw(problems(), label="problem")
    if name == "groupadagrad":
        return  # always lazy (MXNet's sparse kernel); covered by the lazy properties
    rows = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2 * n), label="rows (may repeat)")
    g = RowSparse(jnp.asarray(rows, jnp.int32), normal((seed, 1), (len(rows), d)), (n, d))
    kw = {"seed": 3} if name == "sgld" else {}
    tx = _make(name, **kw)
    a = _two_steps(tx, {"E": table}, [{"E": g}])
    b = _two_steps(tx, {"E": table}, [{"E": g.todense()}])
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(LAZY))
@FEW
@given(data=st.data())
def test_lazy_with_every_row_listed_equals_dense(name, data):
    check_all_rows(name, data)


@pytest.mark.parametrize("name", sorted(LAZY))
@FEW
@given(data=st.data())
def test_lazy_updates_listed_rows_only(name, data):
    check_some_rows(name, data)


# A fixed table, bit for bit: tests/drivers/test_lazy.py (a quarter of the optimizers and AdaGrad's row-wise
# kernels); here random ones for another quarter (test_standard_row_sparse_equals_dense_many, under ``slow``: all
# of them).
@pytest.mark.parametrize("name", share(4, 3))
@settings(FEW, max_examples=1)
@given(data=st.data())
def test_standard_row_sparse_equals_dense(name, data):
    check_standard_equals_dense(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LAZY))
@MANY
@given(data=st.data())
def test_lazy_properties_many(name, data):
    check_all_rows(name, data)
    check_some_rows(name, data)


@pytest.mark.slow
@pytest.mark.parametrize("name", registry.NAMES)
@MANY
@given(data=st.data())
def test_standard_row_sparse_equals_dense_many(name, data):
    check_standard_equals_dense(name, data)
