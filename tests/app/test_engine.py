"""The engine's calls: where the test split is evaluated (``test=``), the mini-batches drawn an interval at a
time, and how many runs a call holds. ``test_study.py`` holds the vmapped program equal to runs made alone and
the study's records bit for bit."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from tiny_problems import mlp_problem

from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine
from mxopt_jax.compare.problems.base import Problem

LRS = {"learning_rate": np.array([1e-2, 1e-1, 3.0])}


@pytest.fixture(scope="module")
def tiny() -> Problem:
    return mlp_problem()


@pytest.fixture(scope="module")
def group(tiny: Problem) -> engine.CompiledGroup:
    return engine.compile_group(tiny, C.resolve(["sgd", "adam"]), 4)


# --------------------------------------------------------------------------- test=: where the test split is read
def test_test_final_evaluates_the_final_point_only(group):
    """``test="final"``: the test metric at the final evaluation point, bit for bit what ``test=True`` gives
    there, NaN before it; every other record is the same whatever ``test`` is (one call of 6 runs in slots of
    4, so the padded second call is covered too)."""
    every, final, never = (group.run(1, LRS, [0, 1], test=t) for t in (True, "final", False))
    assert final.test.shape == every.test.shape == (3, 2, 4)
    assert np.isnan(final.test[..., :-1]).all() and np.isnan(never.test).all()
    assert np.isfinite(every.test[:2]).all()  # the tame rates: a test metric at every point
    np.testing.assert_array_equal(final.test[..., -1], every.test[..., -1])
    for rec in (final, never):
        for field in ("train_loss", "val", "steps_to_target", "diverged_at"):
            np.testing.assert_array_equal(getattr(rec, field), getattr(every, field), err_msg=field)


def test_test_final_in_run_many_and_the_reference(group, tiny):
    """Requests packed into the same calls share ``test="final"``; the unbatched reference takes it too and
    gives the same final test metric."""
    a, b = group.run_many(
        0, [(LRS, [0], "selection"), ({"learning_rate": [0.05]}, [2, 3], "confirmation")], "final"
    )
    assert np.isnan(a.test[..., :-1]).all() and np.isnan(b.test[..., :-1]).all()
    assert np.isfinite(b.test[..., -1]).all()
    alone = engine.single_run(tiny, group.contenders[0], test="final")(0.05, 3)
    assert np.isnan(alone[2][:-1]).all()
    np.testing.assert_allclose(b.test[0, 1, -1], alone[2][-1], rtol=2e-5)


@pytest.mark.parametrize("bad", ["last", "every", 1, None, np.array([True])])
def test_test_values_are_checked(group, tiny, bad):
    with pytest.raises(ValueError, match=r"test must be True .*False .*'final'"):
        group.run(0, LRS, [0], test=bad)
    with pytest.raises(ValueError, match=r"test must be True"):
        engine.single_run(tiny, group.contenders[0], test=bad)


# --------------------------------------------------------------------------- the mini-batches, an interval at a time
def test_an_intervals_draws_are_the_per_step_draws():
    """The rows of an evaluation interval, drawn in one call, are bit for bit what one ``randint`` per step
    with the step's key gives (jitted and vmapped over runs too, as the programs draw them)."""
    keys = jax.random.split(jax.random.PRNGKey(3), 10)
    want = np.stack([np.asarray(jax.random.randint(k, (64,), 0, 1077)) for k in keys])
    np.testing.assert_array_equal(engine._draw(keys, 64, 1077), want)
    runs = jax.random.split(jax.random.PRNGKey(4), 6).reshape(3, 2, 2)  # 3 runs, intervals of 2 steps
    got = jax.jit(jax.vmap(lambda k: engine._draw(k, 512, 60_000)))(runs)
    for r in range(3):
        for i in range(2):
            np.testing.assert_array_equal(got[r, i], jax.random.randint(runs[r, i], (512,), 0, 60_000))


# --------------------------------------------------------------------------- how many runs a call holds
def test_call_capacity_least_padding_within_the_platforms_range():
    """The capacity that runs the requests in the fewest slots (a slot more per call), a multiple of the
    devices, within what runs well on the platform (on the CPU, the cache budget given a run's bytes)."""
    assert engine.call_capacity(147, devices=2) == 148  # one call, one slot padded
    assert engine.call_capacity(35, devices=2) == 36
    assert engine.call_capacity(3, devices=4) == 4  # fewer runs than devices: one slot each
    # seven configurations on 21 seeds, then six: 5 + 4 calls of 32 (297 slots with the calls) beat 2 + 2 of 74
    assert engine.call_capacity((147, 126), devices=2, run_bytes=150_000) == 32
    # the cache budget: the recommender's 360 kB runs at most 11 a device; logreg's tiny runs in one call
    big = engine.call_capacity(147, devices=2, run_bytes=360_020)
    assert big <= 2 * (engine.CPU_CALL_BYTES // 360_020) and big % 2 == 0
    assert engine.call_capacity(147, devices=2, run_bytes=500) == 148
    most = engine.CALL_RUNS["cpu"][1]
    assert engine.call_capacity(6 * most, devices=2, run_bytes=500) == 2 * most  # 3 full calls
    assert engine.call_capacity(6 * most - 1, devices=2, run_bytes=500) == 2 * most
    assert engine.call_capacity(2 * most + 2, devices=2, run_bytes=500) == 2 * (
        most // 2 + 1
    )  # 2 calls, not 3
    for runs in (1, 7, 35, 147, 300):
        for devices in (1, 2, 3, 8):
            cap = engine.call_capacity(runs, devices=devices, run_bytes=100_000)
            assert cap % devices == 0 and cap >= devices and cap <= max(runs + devices - 1, devices), (
                runs,
                devices,
            )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"runs": 0}, "runs must be a positive int"),
        ({"runs": ()}, "runs must be a positive int"),
        ({"runs": (5, 2.5)}, "runs must be a positive int"),
        ({"runs": 5, "devices": 0}, "devices must be an int >= 1"),
        ({"runs": 5, "platform": "metal"}, "platform must be one of cpu, gpu, tpu"),
        ({"runs": 5, "run_bytes": -1}, "run_bytes must be a positive int"),
    ],
)
def test_call_capacity_checks_its_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        engine.call_capacity(**kwargs)


def test_program_capacity_is_call_capacity_for_the_programs_devices_and_runs(tiny):
    """What the study sizes its calls with: :func:`engine.call_capacity` given the devices' count and platform
    and the program's runs' state (:func:`engine.run_bytes`), for one device and for every device."""
    cs = [C.mxopt_contender("sgd"), C.mxopt_contender("adam")]
    size = engine.run_bytes(tiny, cs)
    for devices in (jax.devices()[:1], None):
        n = len(devices) if devices is not None else len(jax.devices())
        want = engine.call_capacity((147 * 3, 147), n, jax.devices()[0].platform, size)
        assert engine.program_capacity(tiny, cs, (147 * 3, 147), devices) == want
    # the tiny problem's runs are far within the CPU's cache budget: a request of 200 runs is one call
    assert size * 200 < engine.CPU_CALL_BYTES
    assert engine.program_capacity(tiny, cs, 200, jax.devices()[:1]) == 200


def test_run_bytes_counts_parameters_and_the_largest_state(tiny):
    """The tiny MLP's 6*8 + 8 + 8 parameters (float32): SGD without momentum keeps none of its own beside
    them (a few scalars), Adam two more copies."""
    params = 4 * (6 * 8 + 8 + 8)
    sgd, adam = C.resolve(["sgd", "adam"])
    assert params <= engine.run_bytes(tiny, [sgd]) < params + 64
    assert 3 * params <= engine.run_bytes(tiny, [adam]) < 3 * params + 64
    assert engine.run_bytes(tiny, [sgd, adam]) == engine.run_bytes(tiny, [adam])


@pytest.mark.slow  # compiles four small programs; the roofline script's count, not the engine's behaviour
def test_roofline_counts_a_call_from_its_pieces(tiny):
    """``benchmarks/roofline.py`` counts a call from the engine's own step, draw and evaluation (XLA counts a
    loop's body once): twice the steps, twice the step's FLOPs and the evaluations' (none for the test split
    where it is off)."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py"
    spec = importlib.util.spec_from_file_location("_bench_roofline", path)
    roofline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roofline)
    adam = C.resolve(["adam"])[0]
    f20, b20 = roofline.call_cost(tiny, adam, 4, 20, tests=0)
    f40, _ = roofline.call_cost(tiny, adam, 4, 40, tests=0)
    f20t, _ = roofline.call_cost(tiny, adam, 4, 20, tests=4)
    assert f20 > 0 and b20 > 0
    assert f40 == pytest.approx(2 * f20, rel=1e-9)
    assert f20t > f20
