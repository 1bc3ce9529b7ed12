"""The multi-tensor path (``FlatParams`` and the functional ``aggregate_num``) equals the per-parameter path."""

from __future__ import annotations

import functools
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sampling import default_run, share

import mxopt_jax
from mxopt_jax.multi_tensor import FlatParams
from mxopt_jax.sparse import RowSparse

NAMES = sorted(n for n in mxopt_jax.OPTIMIZERS if n != "groupadagrad")  # GroupAdaGrad needs 2-D parameters


def _tree():
    rng = np.random.default_rng(0)
    params = {
        "fc_weight": jnp.asarray(rng.normal(size=(5, 4)), jnp.float32),
        "fc_bias": jnp.asarray(rng.normal(size=(4,)), jnp.float32),
        "emb": {"w": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)},
        "h": jnp.asarray(rng.normal(size=(7,)), jnp.float16),
        "h2": jnp.asarray(rng.normal(size=(2, 3)), jnp.float16),
    }
    grads = [jax.tree.map(lambda p: jnp.asarray(rng.normal(size=p.shape), p.dtype), params) for _ in range(3)]
    return params, grads


def _ctor(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mxopt_jax.OPTIMIZERS[name](
            wd=0.01,
            lr_mult=lambda path, leaf: 2.0 if path.endswith("bias") else 1.0,
            wd_mult={"fc_weight": 1.0, "fc_bias": 0.0, "emb": {"w": 0.5}, "h": 1.0, "h2": 1.0},
            multi_precision=True,
            **kw,
        )


def _run(tx, params, grads, wrap=None):
    p = params if wrap is None else wrap(params)
    state = tx.init(p)
    update = jax.jit(tx.update)
    for g in grads:
        g = g if wrap is None else p.like(g)
        u, state = update(g, state, p)
        p = optax.apply_updates(p, u)
    return (p if wrap is None else p.to_tree()), state


@functools.cache
def _per_parameter(name):
    """The per-parameter path's result, computed once for the tests that compare against it."""
    params, grads = _tree()
    return _run(_ctor(name), params, grads)[0]


def _assert_close(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        if (
            x.dtype == jnp.float16
        ):  # fp32 masters may differ by an ulp (FMA contraction) and round differently
            np.testing.assert_allclose(np.float32(x), np.float32(y), rtol=2e-3, atol=1e-3)
        else:
            np.testing.assert_allclose(x, y, rtol=2e-6, atol=1e-7)


# aggregate_num=inf for a quarter of the optimizers in the default run, the quarter whose FlatParams the next test
# holds (they share the per-parameter run); tests/properties/test_drivers_agree.py checks aggregate_num=2 and
# FlatParams for another quarter (share(4, 0)); the rest and aggregate_num=2 under ``slow``.
@pytest.mark.parametrize(
    ("name", "agg"),
    [
        pytest.param(
            n, a, id=f"{i}-{n}", marks=() if i == "inf" and n in share(4, 1) else (pytest.mark.slow,)
        )
        for a, i in ((np.inf, "inf"), (2, "2"))
        for n in NAMES
        if n != "sgld"
    ],
)
def test_aggregate_num_equals_per_parameter_path(name, agg):
    params, grads = _tree()
    ref = _per_parameter(name)
    out, state = _run(_ctor(name, aggregate_num=agg), params, grads)
    _assert_close(out, ref)
    n_buffers = 2 if agg == np.inf else 3  # fp32: 3 leaves, fp16: 2 leaves -> chunks of 2: 2 + 1
    field = next(f for f in state._fields if f not in ("count",) and getattr(state, f) is not None)
    assert isinstance(getattr(state, field), FlatParams)
    assert len(getattr(state, field).buffers) == n_buffers


# A quarter of the optimizers in the default run (see above), all of them under ``slow``.
@pytest.mark.parametrize("name", default_run([n for n in NAMES if n != "sgld"], share(4, 1)))
def test_flat_params_equal_per_parameter_path(name):
    params, grads = _tree()
    ref = _per_parameter(name)
    out, _ = _run(_ctor(name), params, grads, wrap=lambda t: FlatParams.from_tree(t, aggregate_num=2))
    _assert_close(out, ref)


def test_sgld_runs_flat_with_per_buffer_noise():
    params, grads = _tree()
    out, _ = _run(_ctor("sgld"), params, grads, wrap=FlatParams.from_tree)
    chex.assert_tree_all_finite(out)
    chex.assert_trees_all_equal_shapes_and_dtypes(out, params)


def test_lars_exempts_by_name_inside_a_buffer():
    """A buffer holding a bias (rate 1) and a weight (layer-wise rate) must treat each by its own name."""
    params, grads = _tree()
    tx = mxopt_jax.lars(learning_rate=0.1, momentum=0.9, eta=0.01, multi_precision=True)
    ref, _ = _run(tx, params, grads)
    out, _ = _run(tx, params, grads, wrap=FlatParams.from_tree)
    _assert_close(out, ref)


def test_grad_through_flat_params_and_training():
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(64, 5)), jnp.float32)
    y = x @ jnp.asarray(rng.normal(size=(5, 1)), jnp.float32) + 0.5
    params = {"w": jnp.zeros((5, 1)), "b": jnp.zeros((1,))}
    flat = FlatParams.from_tree(params)

    def loss(flat):
        p = flat.to_tree()
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    tx = mxopt_jax.lamb(learning_rate=0.1)
    state = tx.init(flat)
    g = jax.grad(loss)(flat)
    assert isinstance(g, FlatParams) and g.layout == flat.layout
    l0 = loss(flat)

    @jax.jit
    def step(flat, state):
        u, state = tx.update(jax.grad(loss)(flat), state, flat)
        return optax.apply_updates(flat, u), state

    for _ in range(50):
        flat, state = step(flat, state)
    assert loss(flat) < 0.5 * l0


def test_many_leaves_compile_to_a_small_program():
    """2000 leaves kept flat: the update traces to a handful of operations, not thousands."""
    params = {f"p{i}": jnp.ones((256,)) for i in range(2000)}
    flat = FlatParams.from_tree(params)
    for name in ("adam", "lamb", "sgd"):
        tx = mxopt_jax.OPTIMIZERS[name](learning_rate=1e-3)
        state = tx.init(flat)
        jaxpr = jax.make_jaxpr(lambda g, s, p, tx=tx: optax.apply_updates(p, tx.update(g, s, p)[0]))(
            flat, state, flat
        )
        assert len(jaxpr.jaxpr.eqns) < 80, (name, len(jaxpr.jaxpr.eqns))
        assert len(state) <= 5 and len(jax.tree.leaves(state)) <= 4


def test_flat_params_roundtrip_and_errors():
    params, grads = _tree()
    flat = FlatParams.from_tree(params)
    chex.assert_trees_all_equal(flat.to_tree(), params)
    chex.assert_trees_all_equal(flat.like(grads[0]).to_tree(), grads[0])
    assert len(flat.buffers) == 2 and {b.dtype.name for b in flat.buffers} == {"float32", "float16"}
    with pytest.raises(TypeError, match="only floating-point parameters"):
        FlatParams.from_tree({"i": jnp.arange(3)})
    with pytest.raises(ValueError, match="`aggregate_num` must be an int >= 1 or inf"):
        FlatParams.from_tree(params, aggregate_num=0)
    tx = mxopt_jax.group_adagrad()
    with pytest.raises(ValueError, match="2-D"):
        tx.init(FlatParams.from_tree({"w": jnp.ones((3, 4))}))
    with pytest.raises(ValueError, match="GroupAdaGrad keeps one accumulator per row"):
        mxopt_jax.group_adagrad(aggregate_num=4)
    tx = mxopt_jax.adam(aggregate_num=4)
    state = tx.init({"t": jnp.ones((5, 2))})
    g = RowSparse(jnp.array([1]), jnp.ones((1, 2)), (5, 2))
    with pytest.raises(ValueError, match="row-sparse gradients need `params`"):
        tx.update(
            {"t": g}, state
        )  # row-sparse leaves go through unaggregated (tests/drivers/test_sparse_compose.py)
    tx = mxopt_jax.adam()
    state = tx.init(flat)
    with pytest.raises(ValueError, match="FlatParams but `params` there is not one with the same layout"):
        tx.update(flat, state, FlatParams.from_tree(params, aggregate_num=1))
