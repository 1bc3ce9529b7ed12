"""Property tests: a learning rate of 0 is a step that leaves every weight unchanged, never a NaN (hypothesis).

optax calls a ``learning_rate`` schedule with the update count from 0, so the usual warmup
(``optax.warmup_cosine_decay_schedule(0.0, peak, ...)``) gives a rate of exactly 0 on the first update.
For every optimizer of the table, with random valid hyperparameters and parameters, the rate is given as such
a schedule, as a traced 0 under ``optax.inject_hyperparams`` and as a concrete ``learning_rate=0.0`` (the
functional constructor and the facade); these must hold (docs/differences.md #20):

* a step at rate 0 leaves every weight bit for bit unchanged, and nothing is NaN, under ``jax.jit`` and in
  eager mode (which agree);
* the following steps at the schedule's positive rates stay finite;
* ``jax.grad`` of the loss after a few such steps with respect to the schedule's peak rate is finite (no
  ``0 / 0`` is ever evaluated, so no NaN reaches the gradient through a ``where``).

The default run tries one derandomized example for SGLD (its noise's ``sqrt(rate)``) and LAMB (its trust
ratio), two steps each; Ftrl's and FTML's divisions by the rate are held in the default run by
``tests/regressions/test_rate_zero.py`` (a warmup from 0, jit and eager, its meta-gradient, a traced and a
concrete 0). ``-m slow`` tries all 22 optimizers, three examples each, three steps.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from host_random import normal
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import strategies as st
from strategies import float_in

import mxopt_jax
from mxopt_jax._src import registry

NAMES = tuple(mxopt_jax.OPTIMIZERS)
FEW = settings(
    max_examples=1,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
MANY = settings(FEW, max_examples=3, phases=tuple(Phase))  # derandomized too: CI must not flake
# the first update is at rate 0 (no step), the next at a positive rate (finite): the trajectory and its
# meta-gradient are jitted programs of STEPS unrolled updates, so the default run takes the two it needs
STEPS, MANY_STEPS = 2, 3
PEAK = 0.05
UNIT_WARMUP = optax.warmup_cosine_decay_schedule(0.0, 1.0, 10, 100)


@st.composite
def problems(draw, name: str):
    """Valid hyperparameters (learning rate left out), a parameter tree and a quadratic's targets."""
    rule = registry.BY_NAME[name].rule
    sig = mxopt_jax.OPTIMIZERS[name].__signature__.parameters
    kw: dict = {}
    for hp, check in rule.checks.items():
        if hp in sig and isinstance(sig[hp].default, float | int) and hp != "clip_weights":
            kw[hp] = draw(float_in(check), label=hp)
    for switch in rule.static:
        if switch != "lazy_update":
            kw[switch] = draw(st.booleans(), label=switch)
    if name != "groupadagrad":  # GroupAdaGrad has no weight decay (as MXNet)
        kw["wd"] = draw(st.sampled_from([0.0, 1e-3, 0.05]), label="wd")
    kw["clip_gradient"] = draw(st.sampled_from([None, 0.5]), label="clip_gradient")
    if name == "sgld":
        kw["seed"] = draw(st.integers(0, 100), label="seed")
    seed = draw(st.integers(0, 2**16), label="data seed")
    shape = (3, 2) if name == "groupadagrad" else (2, 3)
    params = {"w": normal((seed, 0), shape), "b": normal((seed, 1), (shape[0],))}
    if name == "groupadagrad":
        params = {"w": params["w"], "v": normal((seed, 1), (2, 2))}
    targets = {k: x + normal((seed, 2), x.shape) for k, x in params.items()}
    return kw, params, targets


def loss(params, targets):
    return sum(
        0.5 * jnp.sum((p - t) ** 2)
        for p, t in zip(jax.tree.leaves(params), jax.tree.leaves(targets), strict=True)
    )


def build(name: str, **kw) -> optax.GradientTransformation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return mxopt_jax.OPTIMIZERS[name](**kw)
        except ValueError:
            reject()  # a combination the optimizer refuses (e.g. LAMB lower_bound > upper_bound)


def run(tx, params, targets, steps: int):
    """The weights after each of ``steps`` updates on the quadratic, and the final loss."""
    state = tx.init(params)
    seen = []
    for _ in range(steps):
        grads = jax.grad(loss)(params, targets)
        updates, state = tx.update(grads, state, params)
        params = optax.apply_updates(params, updates)
        seen.append(params)
    return seen, loss(params, targets)


def finite(tree, what: str) -> None:
    for x in jax.tree.leaves(tree):
        assert np.all(np.isfinite(np.asarray(x))), f"{what}: {x}"


def unchanged(before, after, what: str) -> None:
    for x, y in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        np.testing.assert_array_equal(np.asarray(y), np.asarray(x), err_msg=what)


def check_zero_rate(name: str, data, steps: int) -> None:
    kw, params, targets = data.draw(problems(name), label="problem")
    build(name, learning_rate=PEAK, **kw)  # rejects refused combinations before anything is compiled

    # 1. a schedule that starts at 0 (optax's count from 0): no step, then finite steps; jit == eager
    def traj(peak):  # warmup_cosine_decay_schedule(0.0, peak, 10, 100), written so that peak may be traced
        sched = lambda count: peak * UNIT_WARMUP(count)  # noqa: E731
        return run(build(name, learning_rate=sched, **kw), params, targets, steps)

    jitted, jloss = jax.jit(traj)(PEAK)
    with jax.disable_jit():
        eager, eloss = traj(PEAK)
    for got, what in ((jitted, "jit"), (eager, "eager")):
        unchanged(params, got[0], f"{name}: first update of a warmup from 0 ({what})")
        finite(got, f"{name}: warmup from 0 ({what})")
    for a, b in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, err_msg=name)
    assert np.isfinite(jloss) and np.isfinite(eloss)

    # ... and the meta-gradient with respect to the peak rate is finite (one compiled program: op by op, the
    # backward pass took 4 s per example)
    meta = jax.jit(jax.grad(lambda peak: traj(peak)[1]))(jnp.float32(PEAK))
    assert np.isfinite(meta), f"{name}: d loss / d peak = {meta}"

    # 2. a traced 0 under inject_hyperparams (jit and eager)
    sig = mxopt_jax.OPTIMIZERS[name].__signature__.parameters
    rule = registry.BY_NAME[name].rule
    static = tuple(k for k in ("seed", *rule.static) if k in sig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        itx = optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name], static_args=static)(
            learning_rate=0.0, **kw
        )
    for what, go in (("jit", jax.jit), ("eager", lambda f: f)):
        with jax.disable_jit(what == "eager"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ccsgd's deprecation, on every call of the inner constructor
            got, _ = go(lambda p: run(itx, p, targets, steps=2))(params)
        unchanged(params, got[-1], f"{name}: traced learning_rate 0 ({what})")

    # 3. a concrete 0: the functional constructor and the facade
    got, _ = jax.jit(lambda p: run(build(name, learning_rate=0.0, **kw), p, targets, steps=2))(params)
    unchanged(params, got[-1], f"{name}: learning_rate=0.0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = mxopt_jax.create(name, learning_rate=0.0, **kw)
    updater = mxopt_jax.get_updater(opt)
    leaves = jax.tree.leaves(params)
    weights = list(leaves)
    for _ in range(2):
        grads = jax.tree.leaves(
            jax.grad(loss)(jax.tree.unflatten(jax.tree.structure(params), weights), targets)
        )
        weights = updater(list(range(len(weights))), grads, weights)
    unchanged(leaves, weights, f"{name}: facade with learning_rate=0.0")


# The default run: the traps no other default-run test holds at rate 0 (SGLD's sqrt(rate), LAMB's trust ratio;
# Ftrl's and FTML's division by the rate: tests/regressions/test_rate_zero.py); -m slow runs all 22 with more
# examples (AdaDelta's division among them).
DEFAULT_RUN = ("sgld", "lamb")


@pytest.mark.parametrize("name", DEFAULT_RUN)
@FEW
@given(data=st.data())
def test_zero_learning_rate(name, data):
    check_zero_rate(name, data, STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
@MANY
@given(data=st.data())
def test_zero_learning_rate_many(name, data):
    check_zero_rate(name, data, MANY_STEPS)
