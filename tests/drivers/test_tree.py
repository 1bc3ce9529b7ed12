"""The functional API contract, for every optimizer: signatures, pytrees, jit, dtypes, validation, optax."""

from __future__ import annotations

import inspect
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from compat import enable_x64
from host_random import normal
from sampling import default_run, share

import mxopt_jax

NAMES = sorted(mxopt_jax.OPTIMIZERS)

# MXNet 2.0 defaults of every optimizer's own arguments; lbsgd/ccsgd: MXNet 1.9.1.
MXNET_DEFAULTS = {
    "sgd": dict(learning_rate=0.1, momentum=0.0, lazy_update=False),
    "ccsgd": dict(learning_rate=0.01, momentum=0.0, lazy_update=True),
    "nag": dict(learning_rate=0.1, momentum=0.9),
    "signum": dict(learning_rate=0.01, momentum=0.9, wd_lh=0.0),
    "sgld": dict(learning_rate=0.1),
    "dcasgd": dict(learning_rate=0.1, momentum=0.0, lamda=0.04),
    "lbsgd": dict(
        learning_rate=0.01,
        momentum=0.0,
        warmup_strategy="linear",
        warmup_epochs=5,
        batch_scale=1,
        updates_per_epoch=32,
        begin_epoch=0,
        num_epochs=60,
    ),
    "adagrad": dict(learning_rate=0.01, epsilon=1e-6),
    "groupadagrad": dict(learning_rate=0.01, epsilon=1e-6),
    "adadelta": dict(learning_rate=1.0, rho=0.9, epsilon=1e-6),
    "rmsprop": dict(
        learning_rate=0.001, rho=0.9, momentum=0.9, epsilon=1e-8, centered=False, clip_weights=None
    ),
    "adam": dict(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=False),
    "adamw": dict(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True),
    "adamax": dict(learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1e-8),
    "nadam": dict(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004),
    "adabelief": dict(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True),
    "ftrl": dict(learning_rate=0.1, lamda1=0.01, beta=1.0),
    "ftml": dict(learning_rate=0.0025, beta1=0.6, beta2=0.999, epsilon=1e-8),
    "lars": dict(learning_rate=0.1, momentum=0.0, eta=0.001, epsilon=1e-8, lazy_update=False),
    "lamb": dict(
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        lower_bound=None,
        upper_bound=None,
        bias_correction=True,
        aggregate_num=None,  # MXNet's 4 is the facade's default; the functional default is per parameter
    ),
    "lans": dict(
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        lower_bound=None,
        upper_bound=None,
        aggregate_num=None,
    ),
    "test": dict(learning_rate=0.01),
}
BASE_DEFAULTS = dict(
    wd=0.0,
    rescale_grad=1.0,
    clip_gradient=None,
    lr_scheduler=None,
    multi_precision=False,
    lr_mult=None,
    wd_mult=None,
    begin_num_update=0,
    use_fused_step=None,
)
# Hyperparameters that make every optimizer move noticeably in a few steps.
FAST = {
    "adadelta": dict(learning_rate=1.0),
    "sgld": dict(learning_rate=1e-4),
    "ftml": dict(learning_rate=0.05),
}


def make(name: str, **kw) -> optax.GradientTransformation:
    ctor = mxopt_jax.OPTIMIZERS[name]
    args = {"learning_rate": 0.05, **FAST.get(name, {}), **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return ctor(**args)


def params_for(name: str, dtype=jnp.float32):
    """A nested dict/list pytree; GroupAdaGrad needs 2-D leaves."""
    if name == "groupadagrad":
        return {"emb": normal((0, 0), (5, 3), dtype), "blocks": [normal((0, 1), (2, 4), dtype)]}
    return {
        "dense": {"w": normal((0, 0), (4, 3), dtype), "b": normal((0, 1), (3,), dtype)},
        "blocks": [normal((0, 2), (2, 2, 2), dtype), jnp.asarray(0.7, dtype)],
    }


def grads_for(params, step: int = 0):
    leaves, treedef = jax.tree.flatten(params)
    return treedef.unflatten([normal((100 + step, i), x.shape, x.dtype) for i, x in enumerate(leaves)])


def run(tx, params, steps=5, jit=True):
    state = tx.init(params)
    update = jax.jit(tx.update) if jit else tx.update
    for s in range(steps):
        updates, state = update(grads_for(params, s), state, params)
        params = optax.apply_updates(params, updates)
    return params, state


# --------------------------------------------------------------------------- signatures and defaults
@pytest.mark.parametrize("name", NAMES)
def test_mxnet_argument_names_and_defaults(name):
    sig = inspect.signature(mxopt_jax.OPTIMIZERS[name])
    defaults = {k: p.default for k, p in sig.parameters.items()}
    for arg, value in {**BASE_DEFAULTS, **MXNET_DEFAULTS[name]}.items():
        assert arg in defaults, f"{name} lacks MXNet argument {arg}"
        assert defaults[arg] == value or (defaults[arg] is None and value is None), (name, arg, defaults[arg])
    assert "aggregate_num" in defaults
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())
    assert sig.return_annotation in ("optax.GradientTransformation", optax.GradientTransformation)


def test_all_constructors_exported():
    expected = {
        "sgd", "nag", "signum", "sgld", "dcasgd", "lbsgd", "adagrad", "group_adagrad", "adadelta", "rmsprop",
        "adam", "adamw", "adamax", "nadam", "adabelief", "ftrl", "ftml", "lars", "lamb", "lans", "test", "ccsgd",
    }  # fmt: skip
    assert expected <= set(mxopt_jax.__all__)
    for n in expected:
        assert callable(getattr(mxopt_jax, n))


@pytest.mark.parametrize("name", NAMES)
def test_docstring_states_the_update(name):
    doc = mxopt_jax.OPTIMIZERS[name].__doc__
    assert "w" in doc and "=" in doc and "Common arguments" in doc


# --------------------------------------------------------------------------- behaviour on pytrees
# Half of the optimizers in turns (test_drivers_agree holds jit against eager on random pytrees too).
@pytest.mark.parametrize("name", default_run(NAMES, share(2)))
def test_jit_and_eager_agree_on_nested_pytrees(name):
    params = params_for(name)
    wd = 0.0 if name == "groupadagrad" else 0.01  # GroupAdaGrad has no weight decay
    eager, s_eager = run(make(name, wd=wd, clip_gradient=1.5), params, jit=False)
    jitted, s_jit = run(make(name, wd=wd, clip_gradient=1.5), params, jit=True)
    # XLA contracts multiply-adds into FMAs under jit, so the two differ by float32 rounding only.
    atol = 1e-6
    if name in ("adamw", "adabelief"):
        # MXNet's multi-tensor association (ema_multi: beta2 * (v - g^2) + g^2, kept to match MXNet's
        # trajectories) cancels while v << g^2 (the first steps): rounded once under jit (FMA) and twice op by
        # op, v differs by up to 2^-24 / (1 - beta2) = 6e-5 of itself, a step by 3e-5 of itself. That error is
        # relative to the step (~lr), not to the weight: 5 steps of ~lr = 0.05 give up to 5 * 0.05 * 3e-5.
        atol = 5 * 0.05 * 3e-5
    chex.assert_trees_all_close(eager, jitted, rtol=2e-5, atol=atol)
    chex.assert_trees_all_close(s_eager, s_jit, rtol=2e-5, atol=1e-6)
    chex.assert_trees_all_equal_structs(eager, params)
    chex.assert_trees_all_equal_dtypes(jitted, params)  # float32 kept (16-bit: test_dtypes_preserved)
    # the weights really moved
    assert not all(
        np.allclose(a, b) for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(params), strict=True)
    )
    # the state is named and counts the updates
    assert hasattr(s_jit, "_fields") and s_jit._fields[0] == "count" and "master" in s_jit._fields
    assert int(s_jit.count) == int(s_eager.count) == 5


# float32 parameters keep their dtype in test_jit_and_eager_agree_on_nested_pytrees; bfloat16 and half of the
# optimizers' float16 runs under ``slow``.
_DTYPE_CASES = [
    pytest.param(n, d, id=f"{n}-{i}", marks=() if i == "float16" and n in share(2) else (pytest.mark.slow,))
    for n in NAMES
    for d, i in ((jnp.bfloat16, "bfloat16"), (jnp.float16, "float16"))
]


@pytest.mark.parametrize(("name", "dtype"), _DTYPE_CASES)
def test_dtypes_preserved(name, dtype):
    """Two jitted steps keep 16-bit dtypes and stay finite (test_dtypes checks every dtype abstractly)."""
    params = params_for(name, dtype)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new, state = run(make(name), params, steps=2)
    chex.assert_trees_all_equal_dtypes(new, params)
    if dtype != jnp.float32:
        assert any("multi_precision" in str(w.message) for w in caught)  # warns like MXNet, never crashes
    for leaf in jax.tree.leaves(new):
        assert np.all(np.isfinite(np.asarray(leaf, np.float32)))


# Every optimizer's float16 golden replays check the same landing in the default run (tests/rules/test_golden);
# here a third of the optimizers on a nested tree with a scalar, the rest and bfloat16 under ``slow``.
_MP_CASES = [
    pytest.param(
        n, d, id=f"{i}-{n}", marks=() if i == "float16" and n in share(3, 1) else (pytest.mark.slow,)
    )
    for d, i in ((jnp.bfloat16, "bfloat16"), (jnp.float16, "float16"))
    for n in NAMES
]


@pytest.mark.parametrize(("name", "dtype"), _MP_CASES)
def test_multi_precision_lands_on_rounded_master(name, dtype):
    params = params_for(name, dtype)
    tx = make(name, multi_precision=True)
    state = tx.init(params)
    chex.assert_trees_all_equal_dtypes(state.master, jax.tree.map(lambda x: x.astype(jnp.float32), params))
    update = jax.jit(tx.update)
    for s in range(4):
        u, state = update(grads_for(params, s), state, params)
        params = optax.apply_updates(params, u)
        rounded = jax.tree.map(lambda m: m.astype(dtype), state.master)
        chex.assert_trees_all_equal(params, rounded)


@pytest.mark.parametrize("name", NAMES)
def test_multi_precision_master_follows_the_float32_math(name):
    """The master of a float16 run equals a float32 run fed the same (upcast) gradients."""
    p16 = params_for(name, jnp.float16)
    p32 = jax.tree.map(lambda x: x.astype(jnp.float32), p16)
    tx16, tx32 = make(name, multi_precision=True), make(name)
    s16, s32 = tx16.init(p16), tx32.init(p32)
    for s in range(3):
        g16 = grads_for(p16, s)
        u16, s16 = tx16.update(g16, s16, p16)
        p16 = optax.apply_updates(p16, u16)
        u32, s32 = tx32.update(jax.tree.map(lambda x: x.astype(jnp.float32), g16), s32, p32)
        p32 = optax.apply_updates(p32, u32)
    chex.assert_trees_all_close(s16.master, p32, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", default_run(NAMES, share(4, 2)))
def test_float64_under_x64(name):
    with enable_x64():
        params = params_for(name, jnp.float64)
        new, state = run(make(name), params, steps=2)
        chex.assert_trees_all_equal_dtypes(new, params)
        for leaf in jax.tree.leaves(state):
            if jnp.issubdtype(leaf.dtype, jnp.floating):
                assert leaf.dtype == jnp.float64, name


# params_for's trees hold a scalar leaf in every other test; a scalar as the whole tree: a third of them.
@pytest.mark.parametrize("name", default_run(NAMES, share(3, 2)))
def test_scalar_parameter(name):
    if name == "groupadagrad":
        pytest.skip("GroupAdaGrad takes 2-D parameters only (tested in test_validation)")
    new, _ = run(make(name), jnp.array(1.5), steps=3)
    assert new.shape == () and np.isfinite(new)


@pytest.mark.parametrize("name", default_run(NAMES, share(2, 1)))
def test_converges_on_a_quadratic(name):
    target = jnp.array([[1.0, -2.0, 0.5], [0.3, 0.0, -1.0]])
    params = {"x": jnp.zeros_like(target)}
    loss = lambda p: 0.5 * jnp.sum((p["x"] - target) ** 2)  # noqa: E731
    lr = {
        "adadelta": 1.0, "ftrl": 1.0, "signum": 0.02, "sgld": 1e-4, "lbsgd": 0.2, "sgd": 0.2, "ccsgd": 0.2,
        "nag": 0.1, "test": 0.2, "dcasgd": 0.2, "lars": 50.0, "lamb": 0.05, "lans": 0.05, "adagrad": 0.5,
        "groupadagrad": 0.5,
    }.get(name, 0.05)  # fmt: skip
    extra = {"lamda1": 0.0} if name == "ftrl" else {}
    if name == "sgld":  # Langevin dynamics samples exp(-rescale_grad * loss): a high inverse temperature
        lr, extra = 1e-3, {"rescale_grad": 1000.0}
    tx = make(name, learning_rate=lr, **extra)
    if name in ("lars", "lamb", "lans"):
        params = {"x": jnp.full_like(target, 0.1)}  # trust ratios need a non-zero weight norm
    state = tx.init(params)

    @jax.jit
    def step(p, s):
        g = jax.grad(loss)(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    start = float(loss(params))
    for _ in range(600):
        params, state = step(params, state)
    assert float(loss(params)) < 0.05 * start, (name, float(loss(params)), start)


# --------------------------------------------------------------------------- params requirement
@pytest.mark.parametrize("name", NAMES)
def test_update_without_params(name):
    params = params_for(name)
    tx = make(name, wd=0.01) if name != "groupadagrad" else make(name)
    state = tx.init(params)
    g = grads_for(params)
    needs = name != "groupadagrad"
    if needs:
        with pytest.raises(ValueError, match="needs `params`"):
            tx.update(g, state)
    # Without weight decay, rules that read the weight only for decay accept params=None (optax habit).
    free = {"sgd", "ccsgd", "nag", "sgld", "adagrad", "groupadagrad", "adadelta", "adam", "adamw", "adamax"}
    free |= {"nadam", "adabelief", "test"}
    tx0 = make(name)
    s0 = tx0.init(params)
    if name in free:
        u, _ = tx0.update(g, s0)
        u_ref, _ = tx0.update(g, s0, params)
        chex.assert_trees_all_close(u, u_ref)
    else:
        with pytest.raises(ValueError, match="needs `params`"):
            tx0.update(g, s0)


# --------------------------------------------------------------------------- hyperparameters
# Every optimizer's inject_hyperparams run is also checked never to recompile in tests/properties.
@pytest.mark.parametrize("name", default_run(NAMES, share(2, 1)))
def test_inject_hyperparams_matches_plain_and_does_not_recompile(name):
    params = params_for(name)
    inj = optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name])(
        **{"learning_rate": 0.05, **FAST.get(name, {})}
    )
    plain = make(name)
    traces = []

    def step(g, s, p):
        traces.append(1)
        return inj.update(g, s, p)

    step = jax.jit(step)
    s_inj, s_plain = inj.init(params), plain.init(params)
    p_inj = p_plain = params
    for s in range(3):
        g = grads_for(params, s)
        u, s_inj = step(g, s_inj, p_inj)
        p_inj = optax.apply_updates(p_inj, u)
        u, s_plain = plain.update(g, s_plain, p_plain)
        p_plain = optax.apply_updates(p_plain, u)
    if name != "sgld":
        # jitted against op by op: AdamW's and AdaBelief's first steps differ by up to 3e-5 of a step (see
        # test_jit_and_eager_agree_on_nested_pytrees), 3 steps of ~lr = 0.05
        atol = 3 * 0.05 * 3e-5 if name in ("adamw", "adabelief") else 1e-6
        chex.assert_trees_all_close(p_inj, p_plain, rtol=1e-5, atol=atol)
    s_inj.hyperparams["learning_rate"] = jnp.asarray(0.01, s_inj.hyperparams["learning_rate"].dtype)
    step(grads_for(params, 9), s_inj, p_inj)
    assert len(traces) == 1


def test_inject_hyperparams_ftml_example():
    params = {"w": jnp.ones((3,))}
    tx = optax.inject_hyperparams(mxopt_jax.ftml)(learning_rate=0.01, beta1=0.5)
    state = tx.init(params)
    u, state = tx.update({"w": jnp.ones((3,))}, state, params)
    assert float(state.hyperparams["learning_rate"]) == pytest.approx(0.01)
    assert np.all(np.asarray(u["w"]) < 0)


def test_learning_rate_schedule_uses_optax_count():
    params = {"w": jnp.zeros((2,))}
    seen = []
    sched = lambda count: 0.1 * (count + 1)  # noqa: E731
    tx = mxopt_jax.sgd(learning_rate=sched)
    state = tx.init(params)
    for _ in range(3):
        u, state = tx.update({"w": jnp.ones((2,))}, state, params)
        seen.append(float(-u["w"][0]))
    np.testing.assert_allclose(seen, [0.1, 0.2, 0.3], rtol=1e-6)


def test_schedules_change_the_rate_inside_one_program():
    """A schedule as ``learning_rate``, MXNet's ``lr_scheduler`` and a schedule as another float
    hyperparameter are evaluated inside the step from the update count: the step changes every update, and the
    jitted step is traced once."""
    params, g = {"w": jnp.ones((3,))}, {"w": jnp.ones((3,))}
    sched = mxopt_jax.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    for tx in (
        mxopt_jax.sgd(learning_rate=lambda count: 0.1 / (count + 1.0)),
        mxopt_jax.sgd(learning_rate=None, lr_scheduler=sched),
        mxopt_jax.sgd(learning_rate=0.1, momentum=optax.linear_schedule(0.0, 0.9, 3)),
    ):
        traces = []

        @jax.jit
        def step(p, s, tx=tx, traces=traces):
            traces.append(1)  # a Python side effect: once per trace
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        p, s, seen = params, tx.init(params), [params["w"]]
        for _ in range(4):
            p, s = step(p, s)
            seen.append(p["w"])
        steps = np.diff([float(w[0]) for w in seen])
        assert len(traces) == 1 and len(set(np.round(steps, 6))) == 4, steps


def test_array_hyperparameters_do_not_recompile():
    params = {"w": jnp.ones((3,))}
    traces = []

    @jax.jit
    def step(lr, wd, g, p):
        traces.append(1)
        tx = mxopt_jax.adam(learning_rate=lr, wd=wd)
        u, _ = tx.update(g, tx.init(p), p)
        return u

    a = step(jnp.float32(0.1), jnp.float32(0.0), params, params)
    b = step(jnp.float32(0.2), jnp.float32(0.1), params, params)
    assert len(traces) == 1
    assert not np.allclose(a["w"], b["w"])


def test_lr_mult_and_wd_mult_trees_and_callables():
    params = {"a_weight": jnp.ones((3,)), "b_bias": jnp.ones((2,))}
    g = {"a_weight": jnp.ones((3,)), "b_bias": jnp.ones((2,))}
    tx = mxopt_jax.sgd(
        learning_rate=0.1,
        wd=0.5,
        lr_mult={"a_weight": 2.0, "b_bias": 1.0},
        wd_mult={"a_weight": 1.0, "b_bias": 0.0},
    )
    u, _ = tx.update(g, tx.init(params), params)
    np.testing.assert_allclose(u["a_weight"], -0.1 * 2 * (1 + 0.5), rtol=1e-6)
    np.testing.assert_allclose(u["b_bias"], -0.1 * 1, rtol=1e-6)
    tx2 = mxopt_jax.sgd(
        learning_rate=0.1,
        wd=0.5,
        lr_mult=lambda path, leaf: 2.0 if path.endswith("weight") else 1.0,
        wd_mult=lambda path, leaf: 0.0 if path.endswith("bias") else 1.0,
    )
    u2, _ = tx2.update(g, tx2.init(params), params)
    chex.assert_trees_all_close(u, u2)
    with pytest.raises(ValueError, match="lr_mult"):
        bad = mxopt_jax.sgd(lr_mult={"a_weight": 2.0})
        bad.init(params)
    with pytest.raises(ValueError, match="wd_mult"):
        bad = mxopt_jax.sgd(wd_mult={"a_weight": -1.0, "b_bias": 1.0})
        bad.init(params)


def test_lr_scheduler_and_base_lr_overwrite():
    from mxopt_jax.lr_scheduler import FactorScheduler

    params = {"w": jnp.zeros(())}
    s = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    with pytest.warns(UserWarning, match="overwritten"):
        tx = mxopt_jax.sgd(lr_scheduler=s)  # SGD's default learning_rate=0.1 replaces base_lr (as MXNet)
    assert s.base_lr == 0.1
    s2 = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    tx = mxopt_jax.sgd(learning_rate=None, lr_scheduler=s2)
    state = tx.init(params)
    lrs = []
    for _ in range(5):
        u, state = tx.update({"w": jnp.ones(())}, state, params)
        lrs.append(float(-u["w"]))
    np.testing.assert_allclose(lrs, [1.0, 1.0, 0.5, 0.5, 0.25], rtol=1e-6)  # sched(1), sched(2), ...


# --------------------------------------------------------------------------- departures (docs/differences.md)
def test_signum_state_holds_the_ema_with_its_natural_sign():
    params = {"w": jnp.zeros((3,))}
    tx = mxopt_jax.signum(learning_rate=0.1, momentum=0.9)
    g = {"w": jnp.array([1.0, -2.0, 0.0])}
    _, state = tx.update(g, tx.init(params), params)
    np.testing.assert_allclose(state.mom["w"], 0.1 * g["w"], rtol=1e-6)


def test_lamb_counts_once_per_update_whatever_aggregate_num():
    params = {"w": jnp.linspace(-1, 1, 6)}
    a, sa = run(mxopt_jax.lamb(learning_rate=0.05, wd=0.1, aggregate_num=1), params, steps=4)
    b, sb = run(mxopt_jax.lamb(learning_rate=0.05, wd=0.1, aggregate_num=4), params, steps=4)
    chex.assert_trees_all_equal(a, b)
    assert int(sa.count) == 4


@pytest.mark.parametrize("name", ["adamw", "lans"])
def test_step_path_computes_the_fused_math(name):
    params = params_for(name)
    a, _ = run(make(name, wd=0.5, use_fused_step=False), params)
    b, _ = run(make(name, wd=0.5, use_fused_step=True), params)
    chex.assert_trees_all_equal(a, b)


def test_nadam_schedule_is_per_parameter():
    """A parameter's trajectory does not depend on how many other parameters there are (docs/differences.md #5)."""
    p = {"a": jnp.linspace(-1, 1, 4), "b": jnp.linspace(1, 2, 3)}
    tx = mxopt_jax.nadam(learning_rate=0.05)
    st_both, st_a = tx.init(p), tx.init({"a": p["a"]})
    for s in range(4):
        g = grads_for(p, s)
        u_both, st_both = tx.update(g, st_both, p)
        u_a, st_a = tx.update({"a": g["a"]}, st_a, {"a": p["a"]})
        np.testing.assert_array_equal(u_both["a"], u_a["a"])
    np.testing.assert_allclose(st_both.m_schedule["a"], st_both.m_schedule["b"])


def test_ccsgd_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="ccsgd"):
        tx = mxopt_jax.ccsgd(learning_rate=0.1, momentum=0.9)
    params = params_for("sgd")
    a, _ = run(tx, params)
    b, _ = run(mxopt_jax.sgd(learning_rate=0.1, momentum=0.9), params)
    chex.assert_trees_all_equal(a, b)
