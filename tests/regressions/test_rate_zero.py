"""Learning rates of 0 and near 0 in the rules that divide by the rate (FTML, Ftrl): docs/differences.md #20.

Found by trying the usual optax warmup, ``optax.warmup_cosine_decay_schedule(0.0, 0.01, 10, 100)``: its rate is
exactly 0 on the first update (optax counts from 0), and FTML and Ftrl turned every weight into NaN; from 1e-8,
FTML stepped *along* the gradient by up to 3.5e-3, and Ftrl (MXNet's formula) grew the weights with the ratio of
successive rates. The float64 references below are MXNet's formulas and, for Ftrl with a schedule,
FTRL-Proximal's per-step rate.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from host_random import normal

import mxopt_jax

W0 = np.array([1.0, -2.0, 3.0], np.float32)
G = np.array([0.5, -0.5, 1.0], np.float32)
STEPS = 12


def _rates(init: float) -> list[float]:
    sched = optax.warmup_cosine_decay_schedule(init, 0.01, 10, 100)
    return [float(sched(k)) for k in range(STEPS)]


def _run(tx, steps: int = STEPS, w0=W0, perturb: dict | None = None, jit: bool = True):
    """Weights after every update of a constant gradient ``G`` (``perturb``: step -> added to the weight)."""
    step = jax.jit(tx.update) if jit else tx.update
    w, state, out = jnp.asarray(w0), tx.init(jnp.asarray(w0)), []
    for k in range(steps):
        if perturb and k in perturb:
            w = w + perturb[k]
        u, state = step(jnp.asarray(G), state, w)
        w = optax.apply_updates(w, u)
        out.append(np.asarray(w))
    return np.stack(out), state


def ftml64(rates, w0=W0, perturb=None, b1=0.6, b2=0.999, eps=1e-8):
    """MXNet's FTML in float64; a step at rate 0 keeps the weight, ``d`` and ``z`` (``v`` is updated)."""
    w, d, v, z = (np.asarray(w0, np.float64), 0.0, 0.0, 0.0)
    g, out = G.astype(np.float64), []
    for t, lr in enumerate(rates, start=1):
        if perturb and t - 1 in perturb:
            w = w + perturb[t - 1]
        v = b2 * v + (1 - b2) * g * g
        if lr > 0:
            d_t = (1 - b1**t) / lr * (np.sqrt(v / (1 - b2**t)) + eps)
            z = b1 * z + (1 - b1) * g - (d_t - b1 * d) * w
            d, w = d_t, -z / d_t
        out.append(w)
    return np.stack(out)


def ftrl64(rates, w0=W0, lamda1=0.01, beta=1.0):
    """MXNet's Ftrl in float64; a step at rate 0 keeps the weight, ``z`` and ``n``."""
    w, z, n = np.asarray(w0, np.float64), 0.0, 0.0
    g, out = G.astype(np.float64), []
    for lr in rates:
        if lr > 0:
            n_new = n + g * g
            z = z + g - (np.sqrt(n_new) - np.sqrt(n)) / lr * w
            n = n_new
            w = -np.sign(z) * np.maximum(np.abs(z) - lamda1, 0) / ((beta + np.sqrt(n)) / lr)
        out.append(w)
    return np.stack(out)


@pytest.mark.parametrize("init", [0.0, 1e-8])
@pytest.mark.parametrize("jit", [True, False])
def test_ftml_warmup_never_steps_uphill(init, jit):
    rates = _rates(init)
    ws, _ = _run(
        mxopt_jax.ftml(learning_rate=optax.warmup_cosine_decay_schedule(init, 0.01, 10, 100)), jit=jit
    )
    assert np.all(np.isfinite(ws))
    prev = np.concatenate([W0[None], ws[:-1]])
    assert np.all((ws - prev) * G <= 0), (ws - prev) * G  # never along the gradient, in float32
    assert np.all((ws[-1] - W0) * G < 0)  # and it trains
    # MXNet's formula in float64 (its float32 evaluation stepped uphill by up to 3.5e-3 from 1e-8)
    np.testing.assert_allclose(ws, ftml64(rates), rtol=1e-5, atol=1e-6)
    if init == 0.0:
        np.testing.assert_array_equal(ws[0], W0)  # a step at rate 0 is no step


def test_ftml_rate_zero_keeps_weight_d_and_z_updates_v():
    tx = mxopt_jax.ftml(learning_rate=0.01)
    w = jnp.asarray(W0)
    _, s1 = tx.update(jnp.asarray(G), tx.init(w), w)  # a state with d, z != 0
    tx0 = optax.inject_hyperparams(mxopt_jax.ftml)(learning_rate=0.0)
    st = tx0.init(w)
    st = st._replace(inner_state=s1)
    u, s2 = jax.jit(tx0.update)(jnp.asarray(G), st, w)
    np.testing.assert_array_equal(np.asarray(u), 0.0)
    np.testing.assert_array_equal(s2.inner_state.d, s1.d)
    np.testing.assert_array_equal(s2.inner_state.z, s1.z)
    np.testing.assert_allclose(s2.inner_state.v, 0.999 * s1.v + 0.001 * G * G, rtol=2e-5)
    assert int(s2.inner_state.count) == 2


def test_ftml_keeps_mxnets_pull_back_on_a_changed_weight():
    """The reformulation is MXNet's formula, also when the weight was changed between two steps."""
    rates = [0.01] * 6
    perturb = {3: np.float32(0.25)}
    ws, _ = _run(mxopt_jax.ftml(learning_rate=0.01), steps=6, perturb=perturb)
    np.testing.assert_allclose(ws, ftml64(rates, perturb=perturb), rtol=1e-5, atol=1e-6)
    # MXNet's FTML pulls a changed weight part of the way back (it is not an ordinary step from it)
    plain, _ = _run(mxopt_jax.ftml(learning_rate=0.01), steps=6)
    assert np.all(np.abs(ws[3] - (plain[3] + 0.25)) > 0.05)


def ftrl_proximal64(rates, w0=W0, lamda1=0.01, beta=1.0, wd=0.0):
    """FTRL-Proximal with a per-step rate in float64: ``sigma_t = (beta + sqrt(n_t)) / lr_t - (beta +
    sqrt(n_{t-1})) / lr_{t-1}``, ``lr_{t-1} := lr_t`` before any gradient (MXNet's first step); a step at rate 0
    keeps the weight, ``z`` and ``n``. (No rate 0 after a gradient here.)"""
    w, z, n, prev = np.asarray(w0, np.float64), 0.0, 0.0, None
    g, out = G.astype(np.float64), []
    for lr in rates:
        if lr > 0:
            n_new = n + g * g
            lp = lr if prev is None else prev
            z = z + g - ((beta + np.sqrt(n_new)) / lr - (beta + np.sqrt(n)) / lp) * w
            n, prev = n_new, lr
            w = -np.sign(z) * np.maximum(np.abs(z) - lamda1, 0) / ((beta + np.sqrt(n)) / lr + wd)
        out.append(w)
    return np.stack(out)


def adagrad64(rates, w0=W0):
    """``w -= lr_t G / sqrt(n_t)`` (steps at rate 0 skipped): FTRL-Proximal with ``beta = lamda1 = wd = 0``."""
    w, n, out = np.asarray(w0, np.float64), 0.0, []
    g = G.astype(np.float64)
    for lr in rates:
        if lr > 0:
            n = n + g * g
            w = w - lr * g / np.sqrt(n)
        out.append(w)
    return np.stack(out)


FTRL_CONFIGS = [{}, {"lamda1": 0.0, "beta": 0.0}, {"lamda1": 0.05, "beta": 0.5, "wd": 0.01}]


@pytest.mark.parametrize("cfg", FTRL_CONFIGS)
@pytest.mark.parametrize("init", [0.0, 1e-8])
def test_ftrl_warmup_never_steps_uphill(init, cfg):
    """A schedule as ``learning_rate``: FTRL-Proximal's per-step rate, not MXNet's formula (which scales the
    weights by the ratio of successive rates: 2.9-4.1x the start after a warmup from 0, ~1e6 from 1e-8)."""
    sched = optax.warmup_cosine_decay_schedule(init, 0.01, 10, 100)
    rates = _rates(init)
    ws, state = _run(mxopt_jax.ftrl(learning_rate=sched, **cfg))
    eager, _ = _run(mxopt_jax.ftrl(learning_rate=sched, **cfg), jit=False)
    np.testing.assert_allclose(eager, ws, rtol=1e-6, atol=1e-7)
    assert np.all(np.isfinite(ws)) and np.all(np.isfinite(np.asarray(state.z)))
    prev = np.concatenate([W0[None], ws[:-1]])
    assert np.all((ws - prev) * G <= 0), (ws - prev) * G  # never along the gradient, in float32
    assert np.all((ws[-1] - W0) * G < 0)  # and it trains
    assert np.all(np.abs(ws) <= np.abs(W0))  # bounded: no growth with the rate
    np.testing.assert_allclose(ws, ftrl_proximal64(rates, **cfg), rtol=1e-5, atol=1e-6)
    if not cfg.get("beta", 1.0) and not cfg.get("lamda1", 0.01):
        np.testing.assert_allclose(ws, adagrad64(rates), rtol=1e-6, atol=1e-6)  # AdaGrad at the current rate
    if init == 0.0:
        np.testing.assert_array_equal(ws[0], W0)  # a step at rate 0 is no step

    def loss(peak):
        tx = mxopt_jax.ftrl(learning_rate=optax.warmup_cosine_decay_schedule(init, peak, 10, 100), **cfg)
        w, s = jnp.asarray(W0), tx.init(jnp.asarray(W0))
        for _ in range(STEPS):
            u, s = tx.update(jnp.asarray(G), s, w)
            w = optax.apply_updates(w, u)
        return jnp.sum(w * G)

    meta = jax.grad(loss)(0.01)
    assert np.isfinite(meta) and meta < 0


@pytest.mark.parametrize("init", [0.0, 1e-8])
def test_ftrl_traced_rate_keeps_mxnets_formula(init):
    """Under ``optax.inject_hyperparams`` the rate is a traced value whose previous value is unknown: MXNet's
    formula (as for a constant rate and for ``lr_scheduler``), with its growth under a warmup."""
    sched = optax.warmup_cosine_decay_schedule(init, 0.01, 10, 100)
    ws, _ = _run(optax.inject_hyperparams(mxopt_jax.ftrl)(learning_rate=sched))
    assert np.all(np.isfinite(ws))
    np.testing.assert_allclose(ws, ftrl64(_rates(init)), rtol=1e-4, atol=1e-5)
    assert np.max(np.abs(ws[-1] / W0)) > (2 if init == 0.0 else 1e4)


@pytest.mark.parametrize("cfg", [*FTRL_CONFIGS, {"lamda1": 0.6, "wd": 0.1}])
def test_ftrl_constant_schedule_equals_constant_rate(cfg):
    for jit in (True, False):
        const, _ = _run(mxopt_jax.ftrl(learning_rate=0.05, **cfg), jit=jit)
        sched, _ = _run(mxopt_jax.ftrl(learning_rate=optax.constant_schedule(0.05), **cfg), jit=jit)
        np.testing.assert_allclose(sched, const, rtol=1e-6, atol=1e-6)
    # a changed weight between two steps: MXNet's pull back, in both
    perturb = {4: np.float32(0.25)}
    const, _ = _run(mxopt_jax.ftrl(learning_rate=0.05, **cfg), perturb=perturb)
    sched, _ = _run(mxopt_jax.ftrl(learning_rate=lambda c: 0.05 + 0.0 * c, **cfg), perturb=perturb)
    np.testing.assert_allclose(sched, const, rtol=1e-6, atol=1e-6)


def test_ftrl_schedule_through_rate_zero_resumes_at_the_current_rate():
    """Rate 1e-3, then 0 (the state of the 1e-3 steps is kept), then 1e-2: the step after the 0 is the step
    of 1e-2 (the weight is taken as the one the state gives), not MXNet's 10x scaling."""
    rates = [1e-3] * 4 + [0.0] + [1e-2] * 4
    sched = lambda c: jnp.asarray(rates)[jnp.minimum(c, len(rates) - 1)]  # noqa: E731
    ws, _ = _run(mxopt_jax.ftrl(learning_rate=sched, lamda1=0.0, beta=0.0), steps=len(rates))
    np.testing.assert_allclose(ws, adagrad64(rates), rtol=1e-6, atol=1e-6)
    ws1, _ = _run(mxopt_jax.ftrl(learning_rate=sched), steps=len(rates))
    prev = np.concatenate([W0[None], ws1[:-1]])
    assert np.all(np.isfinite(ws1)) and np.all((ws1 - prev) * G <= 0)
    np.testing.assert_array_equal(ws1[4], ws1[3])


def test_ftrl_rate_zero_keeps_weight_z_and_n():
    tx = mxopt_jax.ftrl(learning_rate=0.1)
    w = jnp.asarray(W0)
    _, s1 = tx.update(jnp.asarray(G), tx.init(w), w)
    u, s2 = jax.jit(mxopt_jax.ftrl(learning_rate=0.0).update)(jnp.asarray(G), s1, w)
    np.testing.assert_array_equal(np.asarray(u), 0.0)
    np.testing.assert_array_equal(s2.z, s1.z)
    np.testing.assert_array_equal(s2.n, s1.n)


def test_ftrl_beta_zero_before_any_gradient_gives_zero_not_nan():
    """``beta = 0``, ``wd = 0`` and no non-zero gradient yet: ``0 / 0`` in MXNet; the weight is 0 (``z = 0``)."""
    tx = mxopt_jax.ftrl(learning_rate=0.1, beta=0.0, lamda1=0.0)
    w = jnp.array([1.0, -2.0, 3.0])
    g = jnp.array([0.5, 0.0, 1.0])
    u, _ = tx.update(g, tx.init(w), w)
    new = np.asarray(optax.apply_updates(w, u))
    assert np.all(np.isfinite(new)) and new[1] == 0.0

    def moved(lr):
        t = mxopt_jax.ftrl(learning_rate=lr, beta=0.0, lamda1=0.0)
        return jnp.sum(t.update(g, t.init(w), w)[0])

    assert np.isfinite(jax.grad(moved)(0.1))


EPSILON_RULES = [
    ("adam", {}),
    ("adamw", {}),
    ("adamax", {}),
    ("nadam", {}),
    ("adabelief", {"beta1": 0.5}),
    ("adagrad", {}),
    ("groupadagrad", {}),
    ("adadelta", {}),
    ("rmsprop", {}),
    ("rmsprop", {"centered": True}),
    ("lamb", {}),
    ("lans", {}),
    ("ftml", {}),
]


@pytest.mark.parametrize(
    ("name", "kw"), EPSILON_RULES, ids=[f"{n}{'-' + '-'.join(k) if k else ''}" for n, k in EPSILON_RULES]
)
def test_traced_epsilon_zero_with_a_zero_gradient_is_no_step_not_nan(name, kw):
    """A concrete ``epsilon=0`` is refused; a schedule's 0 cannot be (nor a 0 set into an inject_hyperparams
    state under jit). Where the gradient has been 0 so far, the quotient is ``0 / 0``: taken as 0, no step
    (MXNet: NaN)."""
    tx = mxopt_jax.OPTIMIZERS[name](epsilon=optax.constant_schedule(0.0), **kw)
    w = jnp.array([[1.0, -2.0], [3.0, 0.5]])
    g = jnp.array([[0.5, 0.0], [1.0, 0.0]]) if name != "groupadagrad" else jnp.array([[0.5, 1.0], [0.0, 0.0]])
    state = tx.init(w)
    step = jax.jit(tx.update)
    for _ in range(2):
        u, state = step(g, state, w)
        assert np.all(np.isfinite(np.asarray(u))), (name, u)
        np.testing.assert_array_equal(np.asarray(u)[g == 0], 0.0)
        w = optax.apply_updates(w, u)


def _ftrl_drivers(tx, grads_fn, steps=6):
    params = {"a": jnp.linspace(-1.0, 2.0, 18).reshape(6, 3), "b": jnp.array([0.5, -1.5, 2.5, -0.25])}
    state, out = tx.init(params), []
    step = jax.jit(tx.update)
    for k in range(steps):
        u, state = step(grads_fn(k), state, params)
        params = optax.apply_updates(params, u)
        out.append(params)
    return out


def _ftrl_grads(k, sparse=False, rows=None):
    a = normal((k, 0), (6, 3))
    b = normal((k, 1), (4,))
    if rows is not None:
        rows = jnp.asarray(rows)
        a = jnp.zeros_like(a).at[rows].set(a[rows])
    if sparse:
        idx = jnp.arange(6) if rows is None else rows
        a = mxopt_jax.sparse.RowSparse(idx, a[idx], (6, 3))
    return {"a": a, "b": b}


@pytest.mark.parametrize("init", [0.0, 1e-8])
def test_ftrl_schedule_drivers_agree(init):
    """The previous rate reaches the rule in every driver: lazy (all rows listed) and flat equal dense."""
    sched = optax.warmup_cosine_decay_schedule(init, 0.01, 3, 100)
    dense = _ftrl_drivers(mxopt_jax.ftrl(learning_rate=sched), _ftrl_grads)
    lazy = _ftrl_drivers(
        mxopt_jax.ftrl(learning_rate=sched, lazy_update=True), lambda k: _ftrl_grads(k, sparse=True)
    )
    flat = _ftrl_drivers(mxopt_jax.ftrl(learning_rate=sched, aggregate_num=2), _ftrl_grads)
    for other in (lazy, flat):
        for x, y in zip(jax.tree.leaves(dense), jax.tree.leaves(other), strict=True):
            np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-6, atol=1e-7)


def test_ftrl_lazy_rows_touched_late_constant_schedule_equals_constant_rate():
    """Rows a lazy update touches for the first time later (n = 0: MXNet's first step): a constant schedule
    equals the constant rate. (Two rows a step, so that every step's gradient has one shape: one program.)"""
    rows = [[0, 1], [1, 2], [4, 1], [0, 5], [3, 0], [2, 4]]
    for lr in (0.05, optax.constant_schedule(0.05)):
        got = _ftrl_drivers(
            mxopt_jax.ftrl(learning_rate=lr, lazy_update=True), lambda k: _ftrl_grads(k, True, rows[k])
        )
        if not callable(lr):
            ref = got
    for x, y in zip(jax.tree.leaves(ref), jax.tree.leaves(got), strict=True):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-6, atol=1e-6)
