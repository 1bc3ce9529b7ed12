"""The optax protocol, for every optimizer: chain, inject_hyperparams, partition, MultiSteps, apply_if_finite,
masked.

Each composition is checked against the same math written out by hand (NumPy for the optax side), so a
transform that mishandled optax's state nesting, ``params`` forwarding or masked nodes would fail. Updates
run eagerly (no compile per test) except where compiles are what is being counted.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from compat import partition
from interop_common import KW, NAMES, grads_for, make, params_for
from sampling import default_run, share

import mxopt_jax

MAX_NORM = 0.5
DECAY = 0.01


def _np_global_clip(tree, max_norm):
    """optax.clip_by_global_norm written out in NumPy."""
    norm = np.sqrt(sum(np.sum(np.square(np.asarray(x, np.float64))) for x in jax.tree.leaves(tree)))
    factor = 1.0 if norm < max_norm else max_norm / norm
    return jax.tree.map(lambda x: jnp.asarray(np.asarray(x, np.float64) * factor, x.dtype), tree), norm


def _np_decay(tree, params, wd):
    return jax.tree.map(lambda u, p: jnp.asarray(np.asarray(u) + wd * np.asarray(p), u.dtype), tree, params)


CHAIN_CASES = ["clip_before", "clip_after", "decay_before", "decay_after"]


@pytest.mark.parametrize("case", CHAIN_CASES)
@pytest.mark.parametrize("name", default_run(NAMES, share(2)))  # optax's chain: half of them by default
def test_chain_with_clip_and_decayed_weights(name, case):
    params = params_for(name)
    other = (
        optax.clip_by_global_norm(MAX_NORM) if case.startswith("clip") else optax.add_decayed_weights(DECAY)
    )
    chained = optax.chain(other, make(name)) if case.endswith("before") else optax.chain(make(name), other)
    tx = make(name)
    p_chain, s_chain = params, chained.init(params)
    p_ref, s_ref = params, tx.init(params)
    clipped = False
    for s in range(3):
        g = grads_for(params, s)
        u, s_chain = chained.update(g, s_chain, p_chain)
        p_chain = optax.apply_updates(p_chain, u)
        if case == "clip_before":
            g, norm = _np_global_clip(g, MAX_NORM)
            clipped |= norm > MAX_NORM
        elif case == "decay_before":
            g = _np_decay(g, p_ref, DECAY)
        u, s_ref = tx.update(g, s_ref, p_ref)
        if case == "clip_after":
            u, norm = _np_global_clip(u, MAX_NORM)
            clipped |= norm > MAX_NORM
        elif case == "decay_after":
            u = _np_decay(u, p_ref, DECAY)
        p_ref = optax.apply_updates(p_ref, u)
    if case == "clip_before":
        assert clipped  # the clip was active, so the comparison means something
    chex.assert_trees_all_close(p_chain, p_ref, rtol=1e-5, atol=1e-6)
    inner = s_chain[1] if case.endswith("before") else s_chain[0]
    chex.assert_trees_all_close(inner, s_ref, rtol=1e-5, atol=1e-6)
    assert int(inner.count) == 3


def _static(name):
    return ("seed", "lr_mult") if name == "sgld" else ("lr_mult",)


@pytest.mark.slow  # one compile per optimizer; the default run covers all three in test_optax_stack
@pytest.mark.filterwarnings("ignore:ccsgd is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", NAMES)
def test_inject_hyperparams_all_numeric_arguments_and_static_callables(name):
    """Extends test_api: every numeric argument injected (``rescale_grad`` too), a callable ``lr_mult`` as a
    static argument; changing the learning rate and ``rescale_grad`` neither recompiles nor deviates from the
    plain transform built with the new values (SGLD: same seed, same noise)."""
    params = params_for(name)
    lr_mult = lambda path, leaf: 0.5 if leaf.ndim == 2 else 1.0  # noqa: E731
    kw = {**KW[name], "rescale_grad": 0.5, "lr_mult": lr_mult}
    inj = optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name], static_args=_static(name))(**kw)
    traces = []

    def step(g, s, p):
        traces.append(1)
        return inj.update(g, s, p)

    step = jax.jit(step)
    plain = make(name, rescale_grad=0.5, lr_mult=lr_mult)
    s_inj, s_plain = inj.init(params), plain.init(params)
    assert set(s_inj.hyperparams) >= {"learning_rate", "rescale_grad"}
    p_inj = p_plain = params
    for s in range(2):
        g = grads_for(params, s)
        u, s_inj = step(g, s_inj, p_inj)
        p_inj = optax.apply_updates(p_inj, u)
        u, s_plain = plain.update(g, s_plain, p_plain)
        p_plain = optax.apply_updates(p_plain, u)
    # jit vs eager: float32 rounding (FMA contraction) only
    chex.assert_trees_all_close(p_inj, p_plain, rtol=2e-5, atol=1e-6)
    lr2 = 0.5 * KW[name]["learning_rate"]
    s_inj.hyperparams["learning_rate"] = jnp.asarray(lr2, s_inj.hyperparams["learning_rate"].dtype)
    s_inj.hyperparams["rescale_grad"] = jnp.asarray(2.0, s_inj.hyperparams["rescale_grad"].dtype)
    g = grads_for(params, 5)
    u_inj, _ = step(g, s_inj, p_inj)
    u_ref, _ = make(name, learning_rate=lr2, rescale_grad=2.0, lr_mult=lr_mult).update(
        g, s_inj.inner_state, p_inj
    )
    chex.assert_trees_all_close(u_inj, u_ref, rtol=2e-5, atol=1e-6)
    assert len(traces) == 1


def _with_bias(name):
    params = params_for(name)
    if name == "groupadagrad":  # a 1-D leaf GroupAdaGrad cannot take: routed to another transform
        params["bias"] = jnp.linspace(-1.0, 1.0, 3)
    return params


def _sub(tree, keys):
    return {k: tree[k] for k in keys}


@pytest.mark.parametrize("name", NAMES)
def test_partition_routes_leaves(name):
    """optax.partition (alias optax.multi_transform): mxopt_jax on some leaves, optax.sgd on the rest."""
    if hasattr(optax, "partition"):  # optax >= 0.2.5; 0.2.4 has only multi_transform
        assert optax.multi_transform is optax.partition
    params = _with_bias(name)
    labels = {k: "other" if k == "bias" else "mx" for k in params}
    mine = [k for k in params if labels[k] == "mx"]
    tx = partition({"mx": make(name), "other": optax.sgd(0.1)}, labels)
    alone, sgd = make(name), optax.sgd(0.1)
    state, s_alone, s_sgd = (
        tx.init(params),
        alone.init(_sub(params, mine)),
        sgd.init({"bias": params["bias"]}),
    )
    p, p_alone, p_sgd = params, _sub(params, mine), {"bias": params["bias"]}
    for s in range(3):
        g = grads_for(params, s)
        u, state = tx.update(g, state, p)
        p = optax.apply_updates(p, u)
        u, s_alone = alone.update(_sub(g, mine), s_alone, p_alone)
        p_alone = optax.apply_updates(p_alone, u)
        u, s_sgd = sgd.update({"bias": g["bias"]}, s_sgd, p_sgd)
        p_sgd = optax.apply_updates(p_sgd, u)
    chex.assert_trees_all_equal(_sub(p, mine), p_alone)
    chex.assert_trees_all_equal(p["bias"], p_sgd["bias"])
    inner = state.inner_states["mx"].inner_state
    chex.assert_trees_all_equal(jax.tree.leaves(inner), jax.tree.leaves(s_alone))


@pytest.mark.parametrize("name", NAMES)
def test_masked_passes_other_leaves_through(name):
    """optax.masked: masked-in leaves get the optimizer's update, the others their gradient unchanged."""
    params = _with_bias(name)
    mask = {k: k != "bias" for k in params}
    mine = [k for k in params if mask[k]]
    tx, alone = optax.masked(make(name), mask), make(name)
    state, s_alone = tx.init(params), alone.init(_sub(params, mine))
    p, p_alone = params, _sub(params, mine)
    for s in range(3):
        g = grads_for(params, s)
        u, state = tx.update(g, state, p)
        chex.assert_trees_all_equal(u["bias"], g["bias"])
        p = optax.apply_updates(p, u)
        u, s_alone = alone.update(_sub(g, mine), s_alone, p_alone)
        p_alone = optax.apply_updates(p_alone, u)
    chex.assert_trees_all_equal(_sub(p, mine), p_alone)


@pytest.mark.slow  # one compile per optimizer; the default run covers all three in test_optax_stack
@pytest.mark.parametrize("name", NAMES)
def test_multisteps_accumulates_then_updates(name):
    """optax.MultiSteps(k=2): zero updates on odd mini-steps; every 2nd the optimizer sees the mean gradient.

    MultiSteps runs the inner update under ``lax.cond``, so it is jitted once here (eager calls would trace
    and compile on every step); the plain reference runs eagerly: equal up to FMA rounding.
    """
    params = params_for(name)
    ms, plain = optax.MultiSteps(make(name), every_k_schedule=2), make(name)
    update = jax.jit(ms.update)
    state, s_plain = ms.init(params), plain.init(params)
    p, p_plain = params, params
    for s in range(4):
        g = grads_for(params, s)
        u, state = update(g, state, p)
        if s % 2 == 0:
            chex.assert_trees_all_equal(u, jax.tree.map(jnp.zeros_like, u))
        else:
            mean = jax.tree.map(lambda a, b: (a + b) / 2, grads_for(params, s - 1), g)
            u_ref, s_plain = plain.update(mean, s_plain, p_plain)
            p_plain = optax.apply_updates(p_plain, u_ref)
        p = optax.apply_updates(p, u)
    assert int(state.inner_opt_state.count) == 2 and int(state.gradient_step) == 2
    chex.assert_trees_all_close(p, p_plain, rtol=1e-4, atol=1e-6)
    chex.assert_trees_all_close(state.inner_opt_state, s_plain, rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # one compile per optimizer; the default run covers all three in test_optax_stack
@pytest.mark.parametrize("name", NAMES)
def test_apply_if_finite_skips_non_finite_steps(name):
    """optax.apply_if_finite: steps with a NaN or an inf gradient are skipped entirely (zero update, the inner
    state (SGLD's key too) unchanged); the next finite step equals the plain transform's next step. (Jitted
    once: optax runs the inner update under ``lax.cond``; equal to the eager plain update up to FMA rounding.)
    """
    params = params_for(name)
    safe, plain = optax.apply_if_finite(make(name), max_consecutive_errors=5), make(name)
    update = jax.jit(safe.update)
    s_safe, s_plain = safe.init(params), plain.init(params)
    g0 = grads_for(params, 0)
    u_safe, s_safe = update(g0, s_safe, params)
    u_plain, s_plain = plain.update(g0, s_plain, params)
    chex.assert_trees_all_close(u_safe, u_plain, rtol=1e-4, atol=1e-6)
    p_safe, p_plain = optax.apply_updates(params, u_safe), optax.apply_updates(params, u_plain)
    for n, bad in enumerate((np.nan, np.inf, -np.inf), start=1):
        g_bad = grads_for(params, n)
        first = sorted(g_bad)[n % len(g_bad)]
        g_bad[first] = g_bad[first].at[(0,) * g_bad[first].ndim].set(bad)
        before = s_safe.inner_state
        u, s_safe = update(g_bad, s_safe, p_safe)
        chex.assert_trees_all_equal(u, jax.tree.map(jnp.zeros_like, u))
        chex.assert_trees_all_equal(s_safe.inner_state, before)
        assert int(s_safe.notfinite_count) == n and int(s_safe.total_notfinite) == n
    g = grads_for(params, 9)
    u_safe, s_safe = update(g, s_safe, p_safe)
    u_plain, s_plain = plain.update(g, s_plain, p_plain)
    chex.assert_trees_all_close(u_safe, u_plain, rtol=1e-4, atol=1e-6)
    chex.assert_trees_all_close(s_safe.inner_state, s_plain, rtol=1e-4, atol=1e-6)
    assert int(s_safe.notfinite_count) == 0 and int(s_safe.inner_state.count) == 2


@pytest.mark.filterwarnings("ignore:ccsgd is deprecated:DeprecationWarning")
# Half of the optimizers in the default run (the other half meets inject_hyperparams in
# tests/properties/test_drivers_agree.py); the wrappers are the same code for all of them.
@pytest.mark.parametrize("name", default_run(NAMES, share(2, 1)))
def test_optax_stack(name):
    """inject_hyperparams, MultiSteps and apply_if_finite at once, one compile per optimizer:
    ``apply_if_finite(MultiSteps(inject_hyperparams(opt)(..., rescale_grad, lr_mult=callable), k=2))``.

    Mini-steps give zero updates; every 2nd the optimizer (plain, eager) sees the mean gradient; a NaN step is
    skipped without touching the state; changing the injected learning rate and ``rescale_grad`` changes the
    next update like a plain transform built with the new values, without recompiling. (The slow tests take
    each wrapper alone.)
    """
    params = params_for(name)
    lr_mult = lambda path, leaf: 0.5 if leaf.ndim == 2 else 1.0  # noqa: E731
    kw = {**KW[name], "rescale_grad": 0.5, "lr_mult": lr_mult}
    inj = optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name], static_args=_static(name))(**kw)
    tx = optax.apply_if_finite(optax.MultiSteps(inj, every_k_schedule=2), max_consecutive_errors=5)
    traces = []

    def update(g, s, p):
        traces.append(1)
        return tx.update(g, s, p)

    update = jax.jit(update)
    state, plain = tx.init(params), make(name, rescale_grad=0.5, lr_mult=lr_mult)
    s_plain, p, p_plain = plain.init(params), params, params
    g = [grads_for(params, i) for i in range(6)]
    g[2] = dict(g[2], **{sorted(params)[0]: g[2][sorted(params)[0]] * np.nan})

    def mini(i, zero=True):
        nonlocal state, p
        u, state = update(g[i], state, p)
        if zero:
            chex.assert_trees_all_equal(u, jax.tree.map(jnp.zeros_like, u))
        p = optax.apply_updates(p, u)
        return u

    mini(0)
    u = mini(1, zero=False)
    u_ref, s_plain = plain.update(jax.tree.map(lambda a, b: (a + b) / 2, g[0], g[1]), s_plain, p_plain)
    chex.assert_trees_all_close(u, u_ref, rtol=1e-4, atol=1e-6)
    p_plain = optax.apply_updates(p_plain, u_ref)
    before = state.inner_state
    mini(2)  # NaN: skipped, nothing accumulated
    chex.assert_trees_all_equal(state.inner_state, before)
    assert int(state.total_notfinite) == 1
    mini(3)
    hp = state.inner_state.inner_opt_state.hyperparams
    lr2 = 0.5 * KW[name]["learning_rate"]
    hp["learning_rate"] = jnp.asarray(lr2, hp["learning_rate"].dtype)
    hp["rescale_grad"] = jnp.asarray(2.0, hp["rescale_grad"].dtype)
    u = mini(4, zero=False)
    plain2 = make(name, learning_rate=lr2, rescale_grad=2.0, lr_mult=lr_mult)
    u_ref, s_plain = plain2.update(jax.tree.map(lambda a, b: (a + b) / 2, g[3], g[4]), s_plain, p_plain)
    chex.assert_trees_all_close(u, u_ref, rtol=1e-4, atol=1e-6)
    inner = state.inner_state.inner_opt_state.inner_state
    chex.assert_trees_all_close(inner, s_plain, rtol=1e-4, atol=1e-6)
    assert int(inner.count) == 2
    assert len(traces) == 1


def test_everything_together_under_jit():
    """A realistic stack, jitted once: apply_if_finite(MultiSteps(chain(clip, inject_hyperparams(LAMB)))).

    apply_if_finite goes outside MultiSteps: inside, a NaN mini-batch would poison MultiSteps' accumulator
    for good (it is reset by multiplying with 0, and 0 * NaN is NaN), as docs/interop.md explains.
    """
    params = params_for("lamb")
    tx = optax.apply_if_finite(
        optax.MultiSteps(
            optax.chain(
                optax.clip_by_global_norm(1.0),
                optax.inject_hyperparams(mxopt_jax.lamb)(learning_rate=0.05, wd=0.01),
            ),
            every_k_schedule=2,
        ),
        max_consecutive_errors=2,
    )
    state = tx.init(params)
    traces = []

    def update(g, state, p):
        traces.append(1)  # a Python side effect: once per trace
        return tx.update(g, state, p)

    step = jax.jit(update)
    p = params
    for s in range(6):
        g = grads_for(params, s)
        if s == 2:
            g["bias"] = g["bias"].at[0].set(np.nan)  # this mini-batch is dropped, not accumulated
        u, state = step(g, state, p)
        p = optax.apply_updates(p, u)
    assert int(state.total_notfinite) == 1
    lamb_state = state.inner_state.inner_opt_state[1].inner_state
    assert int(lamb_state.count) == 2  # mini-batches 0+1 and 3+4; 5 is still accumulating
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(p))
    assert not any(
        bool(jnp.all(a == b)) for a, b in zip(jax.tree.leaves(p), jax.tree.leaves(params), strict=True)
    )
    assert len(traces) == 1


def test_multisteps_accumulator_is_poisoned_by_nan_inside():
    """The reason for the order above (an optax property, documented in docs/interop.md)."""
    params = {"w": jnp.ones(2)}
    tx = optax.MultiSteps(optax.apply_if_finite(mxopt_jax.adam(learning_rate=0.1), 10), every_k_schedule=2)
    state, update = tx.init(params), jax.jit(tx.update)
    for s in range(6):
        g = {"w": jnp.array([np.nan, 1.0]) if s == 0 else jnp.ones(2)}
        u, state = update(g, state, params)
    assert int(state.inner_opt_state.total_notfinite) == 3  # every later emit is skipped too
