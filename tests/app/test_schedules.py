"""Learning-rate schedules of a study: their values, a traced peak, the step budget reaching a factory, and a
clear error when a factory or a schedule needs a traced value in Python."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from tiny_problems import mlp_problem as _mlp_problem

import mxopt_jax
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine, schedules


def _values(name: str, peak: float, steps: int) -> np.ndarray:
    return np.asarray(schedules.SCHEDULES[name](peak, steps)(jnp.arange(steps + 1)), np.float64)


def test_schedule_values():
    wc = _values("warmup-cosine", 2.0, 100)  # warm-up 10 steps
    np.testing.assert_allclose(wc[[0, 4, 9, 10, 55, 100]], [0.2, 1.0, 2.0, 2.0, 1.0, 0.0], atol=1e-6)
    assert np.all(np.diff(wc[10:]) <= 1e-7) and np.all(np.diff(wc[:10]) > 0)
    cos = _values("cosine", 2.0, 100)
    np.testing.assert_allclose(cos[[0, 50, 100]], [2.0, 1.0, 0.0], atol=1e-6)
    tr = _values("trapezoidal", 2.0, 100)  # warm-up 10, decay over the last 20
    np.testing.assert_allclose(
        tr[[0, 9, 50, 80, 90, 99, 100]], [0.2, 2.0, 2.0, 2.0, 1.0, 0.1, 0.0], atol=1e-6
    )
    # past the budget the count is clipped
    assert float(schedules.warmup_cosine(1.0, 10)(jnp.int32(50))) == pytest.approx(0.0, abs=1e-7)
    assert schedules.SCHEDULES["constant"](0.3, 10) == 0.3  # the peak itself: no schedule traced


@pytest.mark.parametrize("name", ["cosine", "warmup-cosine", "trapezoidal"])
def test_schedules_take_a_traced_peak(name):
    """No Python comparison touches the peak: vmapped over peaks under jit, each is the peak times the shape."""
    peaks = jnp.array([0.1, 1.0, 3.0])
    got = jax.jit(jax.vmap(lambda p: schedules.SCHEDULES[name](p, 50)(jnp.arange(51))))(peaks)
    np.testing.assert_allclose(got, np.asarray(peaks)[:, None] * _values(name, 1.0, 50)[None], rtol=1e-5)


def test_bad_schedule_arguments():
    with pytest.raises(ValueError, match="step budget"):
        schedules.warmup_cosine(1.0, 0)
    with pytest.raises(ValueError, match="warmup must be"):
        schedules.warmup_cosine(1.0, 10, warmup=1.5)
    with pytest.raises(ValueError, match="schedule must be one of"):
        schedules.resolve("linear")
    assert schedules.resolve(None) == ("constant", None) == schedules.resolve("constant")


def test_the_study_schedule_equals_a_factory_that_takes_the_budget():
    """``schedule="warmup-cosine"`` on MXNet's Adam gives the runs of a user's factory that builds the same
    schedule from ``steps`` (which it receives: the run's budget)."""
    prob = _mlp_problem(steps=10)
    seen: list[int] = []

    def make(lr, steps):
        seen.append(steps)
        return mxopt_jax.adam(learning_rate=schedules.warmup_cosine(lr, steps))

    mine = C.contender("adam wc", make, 1e-3)
    name, hook = schedules.resolve("warmup-cosine")
    a = engine.compile_group(prob, [C.mxopt_contender("adam")], 2, schedule=hook).run(
        0, {"learning_rate": [0.05]}, [0, 1]
    )
    b = engine.compile_group(prob, [mine], 2).run(0, {"learning_rate": [0.05]}, [0, 1])
    assert seen and set(seen) == {10}
    np.testing.assert_array_equal(a.val, b.val)  # b's factory builds the schedule itself: a's hook ran


def test_a_factory_that_compares_the_traced_rate_fails_naming_the_contender():
    """optax's warmup_cosine_decay_schedule compares its peak with 0 in Python: under the study it fails at
    once (while tracing), with a message that names the contender and the way out."""
    bad = C.contender(
        "adam wc",
        lambda lr: mxopt_jax.adam(learning_rate=optax.warmup_cosine_decay_schedule(0.0, lr, 30, 300)),
        1e-3,
    )
    with pytest.raises(TypeError, match=r"contender 'adam wc'.*schedule='warmup-cosine'") as e:
        engine.compile_group(_mlp_problem(steps=10), [bad], 2)
    assert isinstance(e.value.__cause__, jax.errors.ConcretizationTypeError)

    def late(lr):  # the comparison happens inside update, not in the factory
        tx = optax.sgd(lr)
        return optax.GradientTransformation(
            tx.init, lambda u, s, p=None: tx.update(u, s, p) if lr > 0 else (u, s)
        )

    with pytest.raises(TypeError, match=r"contender 'late'.*transform's update"):
        engine.compile_group(_mlp_problem(steps=10), [C.contender("late", late, 1e-3)], 2)


def test_a_schedule_hook_that_compares_the_peak_fails_naming_it():
    def stepwise(peak, steps):
        return peak if peak > 0.01 else 0.0

    _, hook = schedules.resolve(stepwise)
    with pytest.raises(TypeError, match="schedule 'stepwise'"):
        engine.compile_group(_mlp_problem(steps=10), [C.mxopt_contender("adam")], 2, schedule=hook)
