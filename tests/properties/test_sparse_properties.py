"""Property tests (hypothesis): row-sparse lookups and lazy updates against dense autodiff and the dense rule.

Random tables, several lookups with random ids (duplicates, all rows, no rows), out-of-range-free: loss and
gradient equal ``jax.value_and_grad`` of the dense computation; a lazy update equals the dense rule on the
touched rows (one step from a fresh state) and leaves every other row bit-identical; the optax compositions
equal their dense counterparts. A few derandomized examples by default, many under ``slow``. The transforms
and their jitted functions are built once, so examples of the same shapes share their compiled programs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import mxopt_jax
import mxopt_jax.sparse as sp

FAST = settings(max_examples=3, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
SLOW = settings(max_examples=20, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
ROWS, DIM = 16, 3


@st.composite
def cases(draw):
    seed = draw(st.integers(0, 2**16))
    n_lookups = draw(st.integers(1, 3))
    ids = []
    for _ in range(n_lookups):
        kind = draw(st.sampled_from(["random", "all", "none", "one-repeated"]))
        size = {"random": draw(st.integers(1, 8)), "all": ROWS, "none": 0, "one-repeated": 5}[kind]
        if kind == "all":
            ids.append(np.arange(ROWS, dtype=np.int32))
        elif kind == "one-repeated":
            ids.append(np.full(size, draw(st.integers(0, ROWS - 1)), np.int32))
        else:
            ids.append(
                np.asarray(draw(st.lists(st.integers(0, ROWS - 1), min_size=size, max_size=size)), np.int32)
            )
    return seed, ids


# (transform, jitted update) pairs, built once
_LAZY = [
    (tx, jax.jit(tx.update))
    for tx in (
        mxopt_jax.adam(learning_rate=0.1, lazy_update=True, wd=0.01),
        mxopt_jax.sgd(learning_rate=0.1, momentum=0.9, lazy_update=True, wd=0.01),
    )
]
_SGD = mxopt_jax.sgd(learning_rate=1.0)  # standard rule: the dense counterpart is exact
_COMPOSITIONS = [
    (ours, jax.jit(ours.update), theirs, jax.jit(theirs.update))
    for ours, theirs in (
        (optax.chain(sp.clip_by_global_norm(0.3), _SGD), optax.chain(optax.clip_by_global_norm(0.3), _SGD)),
        (sp.MultiSteps(_SGD, 2, tables="E"), optax.MultiSteps(_SGD, 2)),
    )
]


def _model(params, *ids):
    total = 0.0
    for j, i in enumerate(ids):
        rows = sp.lookup(params["E"], i)
        total = total + jnp.sum(jnp.tanh(rows @ params["W"]) * (j + 1)) + jnp.sum(rows**2) / (j + 2)
    return total


_SPARSE_GRAD = jax.jit(sp.value_and_grad(_model, tables="E"))
_DENSE_GRAD = jax.jit(jax.value_and_grad(_model))


def _check_grads(seed, ids):
    rng = np.random.default_rng(seed)
    params = {"E": jnp.asarray(rng.normal(size=(ROWS, DIM)), jnp.float32),
              "W": jnp.asarray(rng.normal(size=(DIM, 2)), jnp.float32)}  # fmt: skip
    ids = [jnp.asarray(i) for i in ids]
    loss, g = _SPARSE_GRAD(params, *ids)
    dloss, dg = _DENSE_GRAD(params, *ids)
    assert float(loss) == float(dloss)
    assert g["E"].num_rows == sum(i.size for i in ids)
    np.testing.assert_allclose(g["E"].todense(), dg["E"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g["W"], dg["W"], rtol=1e-5, atol=1e-6)
    return params, g


def _check_lazy(params, g):
    """One lazy step from a fresh state equals the dense rule on the touched rows; others bit-identical."""
    touched = np.unique(np.asarray(g["E"].indices))
    for tx, update in _LAZY:
        u, _ = update(g, tx.init(params), params)
        lazy = optax.apply_updates(params, u)["E"]
        ud, _ = update({**g, "E": g["E"].todense()}, tx.init(params), params)
        dense = optax.apply_updates(params, ud)["E"]
        np.testing.assert_allclose(
            np.asarray(lazy)[touched], np.asarray(dense)[touched], rtol=1e-5, atol=1e-6
        )
        untouched = np.setdiff1d(np.arange(ROWS), touched)
        np.testing.assert_array_equal(np.asarray(lazy)[untouched], np.asarray(params["E"])[untouched])


def _check_compositions(params, g):
    dense_g = {**g, "E": g["E"].todense()}
    for ours, ours_update, theirs, theirs_update in _COMPOSITIONS:
        p, q, s, r = params, params, ours.init(params), theirs.init(params)
        for _ in range(2):
            u, s = ours_update(g, s, p)
            p = optax.apply_updates(p, u)
            v, r = theirs_update(dense_g, r, q)
            q = optax.apply_updates(q, v)
        np.testing.assert_allclose(p["E"], q["E"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(p["W"], q["W"], rtol=1e-5, atol=1e-5)


@FAST
@given(cases())
def test_lookups_gradients_lazy_and_compositions_against_dense(case):
    params, g = _check_grads(*case)
    _check_lazy(params, g)
    _check_compositions(params, g)


@pytest.mark.slow
@SLOW
@given(cases())
def test_lookups_gradients_lazy_and_compositions_against_dense_many(case):
    params, g = _check_grads(*case)
    _check_lazy(params, g)
    _check_compositions(params, g)
