"""Tests for ``mxopt_jax.lr_scheduler`` against MXNet 2.0.0b1 golden data and MXNet's documented facts.

Golden data: ``tests/golden/schedulers.npz``, produced by ``tools/make_scheduler_golden.py`` (see its
docstring for the regeneration command). MXNet itself is never imported here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from mxopt_jax import lr_scheduler as L
from mxopt_jax.lr_scheduler import (
    CosineScheduler,
    FactorScheduler,
    LRScheduler,
    MultiFactorScheduler,
    PolyScheduler,
)

GOLDEN = Path(__file__).parent / "golden" / "schedulers.npz"
_DATA = np.load(GOLDEN, allow_pickle=False)
META = json.loads(str(_DATA["meta"]))
CASES = META["cases"]
N = np.asarray(META["n"])
SEQ_CALLS = META["seq_calls"]
IDS = [f"{i}-{c['cls']}" + ("-overwrite" if c["overwrite"] is not None else "") for i, c in enumerate(CASES)]

PURE_RTOL = 1e-6


def build(case: dict) -> LRScheduler:
    """A fresh scheduler for a golden case, with the optimizer-style ``base_lr`` overwrite applied."""
    sched = getattr(L, case["cls"])(**case["kwargs"])
    if case["overwrite"] is not None:
        sched.base_lr = case["overwrite"]
    return sched


def pure_values(sched: LRScheduler, ns) -> np.ndarray:
    f = jax.jit(sched.as_schedule())
    return np.array([np.asarray(f(int(n))) for n in ns], dtype=np.float64)


# ------------------------------------------------------------------------------------------------------
# golden data
# ------------------------------------------------------------------------------------------------------
def test_golden_file_covers_every_class():
    assert META["mxnet_version"].startswith("2.0.0")
    classes = {c["cls"] for c in CASES}
    assert classes == {"FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"}
    assert sum(c["overwrite"] is not None for c in CASES) >= 4
    assert {c["kwargs"].get("warmup_mode", "linear") for c in CASES if c["kwargs"].get("warmup_steps")} == {
        "linear",
        "constant",
    }


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_stateful_matches_mxnet(i):
    sched = build(CASES[i])
    got = np.array([sched(int(n)) for n in N], dtype=np.float64)
    np.testing.assert_allclose(got, _DATA[f"lr_{i}"], rtol=1e-12, atol=0)


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_stateful_non_monotone_calls_match_mxnet(i):
    sched = build(CASES[i])
    got = np.array([sched(n) for n in SEQ_CALLS], dtype=np.float64)
    np.testing.assert_allclose(got, _DATA[f"seq_{i}"], rtol=1e-12, atol=0)


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_pure_jit_matches_mxnet(i):
    got = pure_values(build(CASES[i]), N)
    np.testing.assert_allclose(got, _DATA[f"lr_{i}"], rtol=PURE_RTOL, atol=0)


# Every case's pure values are checked under jit above; vmap and broadcasting for every third case (each class,
# with and without the base_lr overwrite), the others under ``slow``.
@pytest.mark.parametrize(
    "i", [i if i % 3 == 0 else pytest.param(i, marks=pytest.mark.slow) for i in range(len(CASES))], ids=IDS
)
def test_pure_vmap_matches_mxnet(i):
    schedule = build(CASES[i]).as_schedule()
    out = jax.jit(jax.vmap(schedule))(jnp.asarray(N, dtype=jnp.int32))
    assert out.dtype == jnp.float32 and out.shape == N.shape
    np.testing.assert_allclose(np.asarray(out, np.float64), _DATA[f"lr_{i}"], rtol=PURE_RTOL, atol=0)
    # broadcasting over an array argument (no vmap) gives the same values
    direct = jax.jit(schedule)(jnp.asarray(N, dtype=jnp.int32).reshape(-1, 1))
    assert direct.shape == (N.size, 1)
    np.testing.assert_allclose(np.asarray(direct[:, 0]), np.asarray(out), rtol=PURE_RTOL, atol=0)


# ------------------------------------------------------------------------------------------------------
# facts from schedulers.md (the spec's examples)
# ------------------------------------------------------------------------------------------------------
def check_sequence(make, ns, expected, rtol=1e-12, atol=0.0):
    """Stateful (one scheduler, calls in the given order) and pure forms both give ``expected``."""
    sched = make()
    np.testing.assert_allclose([sched(n) for n in ns], expected, rtol=rtol, atol=atol)
    np.testing.assert_allclose(pure_values(make(), ns), expected, rtol=max(rtol, PURE_RTOL), atol=atol)


def test_factor_examples():
    check_sequence(
        lambda: FactorScheduler(step=3, factor=0.5, base_lr=1.0),
        range(11),
        [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125],
    )
    check_sequence(
        lambda: FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.2, base_lr=1.0),
        [1, 4, 7, 10, 13],
        [1, 0.5, 0.25, 0.2, 0.2],
    )
    check_sequence(
        lambda: FactorScheduler(step=3, factor=0.5, base_lr=1.0, warmup_steps=4, warmup_begin_lr=0.2),
        range(11),
        [0.2, 0.4, 0.6, 0.8, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125],
    )


def test_factor_decays_are_not_undone():
    s = FactorScheduler(step=3, factor=0.5, base_lr=1.0)
    assert s(10) == 0.125
    assert s(1) == 0.125
    assert s.count == 9 and s.base_lr == 0.125
    m = MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    assert m(7) == pytest.approx(0.01, rel=1e-12)
    assert m(0) == pytest.approx(0.01, rel=1e-12)
    assert (m.cur_step_ind, m.count) == (2, 5)


def test_factor_base_below_stop_is_returned_until_first_decay():
    s = FactorScheduler(step=4, factor=0.1, stop_factor_lr=1e-3, base_lr=1e-4)
    assert [s(n) for n in (0, 4, 5, 100)] == [1e-4, 1e-4, 1e-3, 1e-3]
    pure = FactorScheduler(step=4, factor=0.1, stop_factor_lr=1e-3, base_lr=1e-4).as_schedule()
    np.testing.assert_allclose(
        np.asarray(pure(jnp.array([0, 4, 5, 100]))), [1e-4, 1e-4, 1e-3, 1e-3], rtol=1e-6
    )
    # factor == 1 with base below stop: the first "decay" raises the lr to stop_factor_lr
    s = FactorScheduler(step=2, factor=1, stop_factor_lr=0.5, base_lr=0.1)
    assert [s(n) for n in (2, 3, 50)] == [0.1, 0.5, 0.5]


def test_multifactor_examples():
    check_sequence(
        lambda: MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0),
        range(8),
        [1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.01],
    )
    check_sequence(
        lambda: MultiFactorScheduler(
            step=[2, 5], factor=0.1, base_lr=1.0, warmup_steps=3, warmup_mode="constant"
        ),
        range(8),
        [0, 0, 0, 0.1, 0.1, 0.1, 0.01, 0.01],
    )


def test_poly_examples():
    check_sequence(
        lambda: PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.1),
        [0, 1, 5, 9, 10, 11, 20],
        [1.0, 0.829, 0.325, 0.109, 0.1, 0.1, 0.1],
        rtol=1e-9,
    )
    check_sequence(
        lambda: PolyScheduler(
            max_update=10, base_lr=1.0, pwr=1, final_lr=0, warmup_steps=4, warmup_begin_lr=0.2
        ),
        range(13),
        [0.2, 0.4, 0.6, 0.8, 1.0, 5 / 6, 4 / 6, 0.5, 2 / 6, 1 / 6, 0, 0, 0],
        rtol=1e-9,
        atol=1e-15,
    )


def test_poly_and_cosine_cache_quirk():
    assert PolyScheduler(10, base_lr=1)(15) == 1.0
    p = PolyScheduler(10, base_lr=1, pwr=1)
    p.base_lr = 2.0
    assert p(15) == 2.0  # never called in range: the optimizer-written value comes back
    c = CosineScheduler(10, base_lr=1, final_lr=0.1)
    assert c(11) == 1.0
    assert c(10) == pytest.approx(0.1) and c(11) == pytest.approx(0.1)
    # the pure form uses min(n, max_update) instead of the cache
    assert float(PolyScheduler(10, base_lr=1).as_schedule()(15)) == 0.0


def test_cosine_examples():
    check_sequence(
        lambda: CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.1),
        [0, 1, 5, 9, 10, 11],
        [1.0, 0.977975, 0.55, 0.122025, 0.1, 0.1],
        rtol=0,
        atol=5e-7,  # the spec's values are rounded to 6 decimals
    )
    check_sequence(
        lambda: CosineScheduler(max_update=10, base_lr=1.0, final_lr=0, warmup_steps=2, warmup_begin_lr=0.5),
        range(12),
        [0.5, 0.75, 1.0, 0.96194, 0.853553, 0.691342, 0.5, 0.308658, 0.146447, 0.03806, 0.0, 0.0],
        rtol=0,
        atol=5e-6,  # the spec's values are rounded to 5-6 significant digits
    )


def test_base_lr_overwrite_examples():
    def factor():
        s = FactorScheduler(step=2, factor=0.5, base_lr=1.0, warmup_steps=3)
        s.base_lr = 2.0
        return s

    check_sequence(factor, range(8), [0, 1 / 3, 2 / 3, 1.0, 1.0, 0.5, 0.5, 0.25], rtol=1e-12)
    assert factor().warmup_final_lr == 1.0

    def poly():
        s = PolyScheduler(10, base_lr=1.0, pwr=1)
        s.base_lr = 2.0
        return s

    check_sequence(poly, [0, 5, 10], [1.0, 0.5, 0.0], rtol=1e-12)
    assert poly().base_lr_orig == 1.0


# ------------------------------------------------------------------------------------------------------
# facts from MXNet's own tests (recorded from MXNet)
# ------------------------------------------------------------------------------------------------------
def test_mxnet_unittest_factor():
    check_sequence(
        lambda: FactorScheduler(
            step=100,
            factor=0.1,
            stop_factor_lr=1e-4,
            base_lr=1,
            warmup_steps=20,
            warmup_begin_lr=0.1,
            warmup_mode="constant",
        ),
        [0, 10, 21, 101, 201, 1000],
        [0.1, 0.1, 1, 0.1, 0.01, 1e-4],
        rtol=1e-9,
    )


def test_mxnet_unittest_multifactor():
    check_sequence(
        lambda: MultiFactorScheduler(
            step=[15, 25],
            factor=0.1,
            base_lr=0.1,
            warmup_steps=10,
            warmup_begin_lr=0.05,
            warmup_mode="linear",
        ),
        [0, 5, 15, 16, 20, 26, 100],
        [0.05, 0.075, 0.1, 0.01, 0.01, 0.001, 0.001],
        rtol=1e-9,
    )


@pytest.mark.parametrize("pure", [False, True])
def test_mxnet_unittest_poly(pure):
    make = lambda: PolyScheduler(  # noqa: E731
        max_update=1000,
        base_lr=3,
        pwr=2,
        final_lr=0,
        warmup_steps=100,
        warmup_begin_lr=0,
        warmup_mode="linear",
    )
    s = (lambda n: float(make().as_schedule()(n))) if pure else make()
    assert s(0) == pytest.approx(0, abs=1e-12)
    assert s(50) == pytest.approx(1.5, rel=1e-6)
    assert s(100) == pytest.approx(3, rel=1e-6)
    assert s(101) < s(100)
    assert s(500) < 1.6
    assert s(1000) == pytest.approx(0, abs=1e-12)


@pytest.mark.parametrize("pure", [False, True])
def test_mxnet_unittest_cosine(pure):
    make = lambda: CosineScheduler(max_update=1000, base_lr=3, final_lr=0.1)  # noqa: E731
    s = (lambda n: float(make().as_schedule()(n))) if pure else make()
    assert s(0) == pytest.approx(3, rel=1e-6)
    assert s(1000) == pytest.approx(0.1, rel=1e-6)
    assert s(500) > 1.5


def test_mxnet_unittest_optimizer_scheduler_facts():
    # Optimizer(lr_scheduler=FactorScheduler(step=1, base_lr=1024)).learning_rate == 1024 (num_update 0)
    assert FactorScheduler(step=1, base_lr=1024)(0) == 1024
    # Optimizer(lr_scheduler=FactorScheduler(step=1), learning_rate=0.3) overwrites base_lr, then 0.4
    s = FactorScheduler(step=1)
    s.base_lr = 0.3
    assert s(0) == 0.3
    s.base_lr = 0.4
    assert s(0) == 0.4
    assert float(s.as_schedule()(0)) == pytest.approx(0.4, rel=1e-7)


# ------------------------------------------------------------------------------------------------------
# pure form: snapshot semantics, state resumption, jit behaviour
# ------------------------------------------------------------------------------------------------------
def test_as_schedule_snapshots_current_attributes():
    s = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    before = s.as_schedule()
    s.base_lr = 4.0  # what an optimizer does
    after = s.as_schedule()
    assert float(before(3)) == 0.5
    assert float(after(3)) == 2.0
    s.base_lr = 8.0
    assert float(after(3)) == 2.0  # built functions do not see later mutations


@pytest.mark.parametrize(
    "make",
    [
        lambda: FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.01, base_lr=1.0, warmup_steps=2),
        lambda: MultiFactorScheduler(step=[2, 5, 9, 14], factor=0.3, base_lr=1.0, warmup_steps=2),
        lambda: PolyScheduler(20, base_lr=1.0, pwr=3, final_lr=0.05, warmup_steps=2),
        lambda: CosineScheduler(20, base_lr=1.0, final_lr=0.05, warmup_steps=2),
    ],
    ids=["factor", "multifactor", "poly", "cosine"],
)
@pytest.mark.parametrize("start", [0, 4, 8, 11])
def test_as_schedule_resumes_from_current_state(make, start):
    s = make()
    for n in range(start + 1):
        s(n)
    pure = jax.jit(s.as_schedule())
    for n in range(start, 40):
        assert float(pure(n)) == pytest.approx(s(n), rel=PURE_RTOL, abs=1e-12)


def test_factor_long_schedule_beyond_precomputed_table():
    kw = dict(step=1, factor=0.999, stop_factor_lr=0, base_lr=1.0)
    from mxopt_jax._src.schedulers import _MAX_FACTOR_TABLE

    ns = np.arange(0, 2 * _MAX_FACTOR_TABLE + 500)
    s = FactorScheduler(**kw)
    ref = np.array([s(int(n)) for n in ns])
    got = np.asarray(jax.jit(FactorScheduler(**kw).as_schedule())(jnp.asarray(ns)), dtype=np.float64)
    np.testing.assert_allclose(got, ref, rtol=2e-6)


def test_pure_accepts_python_ints_and_returns_float32():
    for sched in (
        FactorScheduler(step=3),
        MultiFactorScheduler(step=[3]),
        PolyScheduler(10),
        CosineScheduler(10),
    ):
        out = sched.as_schedule()(5)
        assert isinstance(out, jax.Array)
        assert out.dtype == jnp.float32 and out.shape == ()
        assert sched.as_schedule()(np.int64(5)).dtype == jnp.float32


def test_pure_rejects_non_integer_num_update():
    schedule = FactorScheduler(step=3).as_schedule()
    with pytest.raises(TypeError, match="num_update must be an integer"):
        schedule(2.5)
    with pytest.raises(TypeError, match="num_update must be an integer"):
        jax.jit(schedule)(jnp.float32(2.0))


def test_pure_no_recompilation():
    traces = []
    base = MultiFactorScheduler(step=[3, 7], factor=0.5, base_lr=1.0, warmup_steps=2).as_schedule()

    def schedule(n):
        traces.append(None)  # Python side effect: runs once per trace
        return base(n)

    f = jax.jit(schedule)
    for n in range(20):
        f(n * 7 + 1)
    assert len(traces) == 1
    assert f._cache_size() == 1
    for sched in (
        FactorScheduler(step=3, factor=0.5),
        PolyScheduler(10),
        CosineScheduler(10, warmup_steps=3),
    ):
        g = jax.jit(sched.as_schedule())
        for n in range(20):
            g(jnp.int32(n))
        assert g._cache_size() == 1


def test_pure_schedule_is_an_optax_schedule():
    sched = FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = optax.sgd(learning_rate=sched.as_schedule())
    params = jnp.zeros(())
    state = opt.init(params)
    lrs = []
    for _ in range(4):
        updates, state = opt.update(jnp.ones(()), state, params)
        lrs.append(-float(updates))
    assert lrs == [1.0, 1.0, 0.5, 0.25]  # optax's count starts at 0: sched(0), sched(1), ...


# ------------------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------------------
def test_base_class_is_abstract():
    s = LRScheduler(base_lr=0.1, warmup_steps=4, warmup_begin_lr=0.02)
    with pytest.raises(NotImplementedError, match="must override this"):
        s(1)
    with pytest.raises(NotImplementedError):
        s.as_schedule()
    assert s.get_warmup_lr(2) == pytest.approx(0.06)
    const = LRScheduler(base_lr=0.1, warmup_steps=4, warmup_begin_lr=0.02, warmup_mode="constant")
    assert const.get_warmup_lr(3) == 0.02
    with pytest.raises(ValueError, match="num_update < warmup_steps"):
        s.get_warmup_lr(4)


def test_defaults_and_attributes():
    s = FactorScheduler(step=5)
    assert (s.base_lr, s.factor, s.stop_factor_lr, s.count) == (0.01, 1, 1e-8, 0)
    assert (s.warmup_steps, s.warmup_begin_lr, s.warmup_mode, s.warmup_final_lr) == (0, 0, "linear", 0.01)
    m = MultiFactorScheduler(step=(3, 9))
    assert m.step == [3, 9] and m.cur_step_ind == 0 and m.count == 0 and m.factor == 1
    p = PolyScheduler(50, warmup_steps=10)
    assert (p.power, p.final_lr, p.base_lr_orig, p.max_update, p.max_steps) == (2, 0, 0.01, 50, 40)
    c = CosineScheduler(50, base_lr=0.5)
    assert (c.final_lr, c.base_lr_orig, c.max_steps) == (0, 0.5, 50)


ALL_CLASSES = [
    lambda **kw: LRScheduler(**kw),
    lambda **kw: FactorScheduler(3, **kw),
    lambda **kw: MultiFactorScheduler([3], **kw),
    lambda **kw: PolyScheduler(10, **kw),
    lambda **kw: CosineScheduler(10, **kw),
]
CLASS_IDS = ["base", "factor", "multifactor", "poly", "cosine"]


@pytest.mark.parametrize("make", ALL_CLASSES, ids=CLASS_IDS)
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"warmup_steps": 2.5}, TypeError, r"warmup_steps must be an int \(got 2\.5\)"),
        ({"warmup_steps": True}, TypeError, r"warmup_steps must be an int \(got True\)"),
        (
            {"warmup_steps": -1},
            ValueError,
            r"Warmup steps has to be positive or 0: warmup_steps must be >= 0",
        ),
        (
            {"base_lr": 0.1, "warmup_begin_lr": 0.5},
            ValueError,
            r"Base lr has to be higher than warmup_begin_lr: warmup_begin_lr must be <= base_lr",
        ),
        (
            {"warmup_mode": "cosine"},
            ValueError,
            r"Supports only linear and constant modes of warmup: warmup_mode must be 'linear' or 'constant'",
        ),
        ({"base_lr": float("nan")}, ValueError, r"base_lr must be a finite number >= 0 \(got nan\)"),
        ({"base_lr": float("inf")}, ValueError, r"base_lr must be a finite number >= 0 \(got inf\)"),
        ({"base_lr": -0.1}, ValueError, r"base_lr must be a finite number >= 0 \(got -0\.1\)"),
        ({"base_lr": "0.1"}, TypeError, r"base_lr must be a real number"),
        ({"base_lr": np.array([0.1])}, TypeError, r"base_lr must be a real number"),
        ({"warmup_begin_lr": -0.1}, ValueError, r"warmup_begin_lr must be a finite number >= 0"),
        ({"warmup_begin_lr": float("nan")}, ValueError, r"warmup_begin_lr must be a finite number >= 0"),
    ],
)
def test_common_validation(make, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make(**kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            {"step": 0},
            ValueError,
            r"Schedule step must be greater or equal than 1 round: step must be an int >= 1",
        ),
        ({"step": -3}, ValueError, r"Schedule step must be greater or equal than 1 round"),
        ({"step": 2.5}, TypeError, r"step must be an int \(got 2\.5\)"),
        (
            {"step": 2, "factor": 1.5},
            ValueError,
            r"Factor must be no more than 1 to make lr reduce: factor must be in \[0, 1\] \(got 1\.5\)",
        ),
        ({"step": 2, "factor": -0.5}, ValueError, r"factor must be in \[0, 1\] \(got -0\.5\)"),
        ({"step": 2, "factor": float("nan")}, ValueError, r"factor must be in \[0, 1\]"),
        ({"step": 2, "stop_factor_lr": -1e-3}, ValueError, r"stop_factor_lr must be a finite number >= 0"),
        (
            {"step": 2, "stop_factor_lr": float("inf")},
            ValueError,
            r"stop_factor_lr must be a finite number >= 0",
        ),
    ],
)
def test_factor_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        FactorScheduler(**kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"step": 5}, TypeError, r"step must be a non-empty list of increasing ints >= 1 \(got 5\)"),
        (
            {"step": []},
            ValueError,
            r"step must be a non-empty list of increasing ints >= 1 \(got an empty list\)",
        ),
        (
            {"step": [5, 2]},
            ValueError,
            r"Schedule step must be an increasing integer list: step must be a non-empty list of",
        ),
        ({"step": [3, 3]}, ValueError, r"Schedule step must be an increasing integer list"),
        (
            {"step": [0, 2]},
            ValueError,
            r"Schedule step must be greater or equal than 1 round: step must be a non-empty list",
        ),
        (
            {"step": [1, 2.5]},
            TypeError,
            r"step must be a non-empty list of increasing ints >= 1 \(got \[1, 2\.5\]\)",
        ),
        (
            {"step": [2], "factor": 2},
            ValueError,
            r"Factor must be no more than 1 to make lr reduce: factor must be in \[0, 1\]",
        ),
    ],
)
def test_multifactor_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        MultiFactorScheduler(**kwargs)


@pytest.mark.parametrize("cls", [PolyScheduler, CosineScheduler])
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"max_update": 10.0}, TypeError, r"max_update must be an int \(got 10\.0\)"),
        (
            {"max_update": 0},
            ValueError,
            r"maximum number of updates must be strictly positive: max_update must be an int >= 1 \(got 0\)",
        ),
        (
            {"max_update": 10, "warmup_steps": 10},
            ValueError,
            r"warmup_steps must be smaller than max_update \(got warmup_steps=10, max_update=10\)",
        ),
        ({"max_update": 10, "warmup_steps": 12}, ValueError, r"warmup_steps must be smaller than max_update"),
        ({"max_update": 10, "final_lr": -0.5}, ValueError, r"final_lr must be a finite number >= 0"),
    ],
)
def test_poly_cosine_validation(cls, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        cls(**kwargs)


@pytest.mark.parametrize("pwr", [-1, float("nan"), float("inf")])
def test_poly_power_validation(pwr):
    with pytest.raises(ValueError, match=r"pwr must be a finite number >= 0"):
        PolyScheduler(10, pwr=pwr)


def test_as_schedule_revalidates_overwritten_attributes():
    s = FactorScheduler(step=2, base_lr=0.1)
    s.base_lr = float("nan")
    with pytest.raises(ValueError, match="base_lr must be a finite number >= 0"):
        s.as_schedule()
    m = MultiFactorScheduler(step=[2, 4])
    m.step = [4, 2]
    with pytest.raises(ValueError, match="Schedule step must be an increasing integer list"):
        m.as_schedule()


def test_numpy_scalars_accepted():
    s = FactorScheduler(
        step=np.int64(3), factor=np.float32(0.5), base_lr=np.float64(1.0), warmup_steps=np.int32(1)
    )
    assert isinstance(s.step, int) and isinstance(s.warmup_steps, int)
    assert [s(n) for n in (0, 3, 4)] == [0.0, 1.0, 0.5]
    assert math.isclose(float(s.as_schedule()(4)), 0.5)
