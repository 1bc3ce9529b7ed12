"""The study's tuning protocol: grids, t quantiles, selection on validation, ranks, performance profiles."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mxopt_jax.compare import protocol as P
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.report.text import describe

PROBLEM = SimpleNamespace(
    name="toy",
    title="a toy problem",
    metric_name="error %",
    target=5.0,
    description="synthetic",
    steps=100,
    quick_steps=40,
    batch_size=8,
)


def records(val_final, test_final=None, stt=None, lrs=None, evals=3, name="adam") -> Records:
    """Records whose validation metric ends at ``val_final`` ``(G, S)`` (earlier points: 2x that)."""
    v = np.asarray(val_final, np.float64)
    G, S = v.shape
    val = np.stack([2 * v] * (evals - 1) + [v], axis=-1)
    t = v + 0.5 if test_final is None else np.asarray(test_final, np.float64)
    test = np.stack([2 * t] * (evals - 1) + [t], axis=-1)
    lrs = np.geomspace(1e-3, 1e-1, G) if lrs is None else np.asarray(lrs, np.float64)
    steps = 10 * np.arange(1, evals + 1)
    return Records(
        contender=name,
        problem="toy",
        lrs=lrs,
        seeds=np.arange(S),
        eval_steps=steps,
        train_loss=val.copy(),
        val=val,
        test=test,
        steps_to_target=np.full((G, S), np.inf) if stt is None else np.asarray(stt, np.float64),
        run_s=1.0,
    )


def sel(mean: float, ci: float, name: str = "x", ttt: float = math.inf) -> P.Selection:
    """A Selection with the given test mean and interval (other fields filler)."""
    s = P.select(records([[1.0, 1.0]]), PROBLEM)
    return dataclasses.replace(s, contender=name, test_mean=mean, test_ci=ci, time_to_target=ttt)


# --------------------------------------------------------------------------- grids and presets
def test_presets():
    quick, full = P.PRESETS["quick"], P.PRESETS["full"]
    assert (quick.grid_points, quick.seeds, full.grid_points, full.seeds) == (7, 5, 11, 10)
    assert quick.steps(PROBLEM) == 40 and full.steps(PROBLEM) == 100
    assert P.Preset("q", 3, 2, quick=True).steps(SimpleNamespace(steps=50, quick_steps=None)) == 50
    g = full.grid(1e-3)
    np.testing.assert_allclose(np.diff(np.log10(g)), 0.5)
    assert g[5] == pytest.approx(1e-3)
    np.testing.assert_allclose(quick.grid(1e-3), g[2:9])  # the quick grid is the middle of the full one
    even = P.Preset("even", grid_points=6, seeds=2).grid(1.0)
    assert even[3] == pytest.approx(1.0) and len(even) == 6  # the centre at index G // 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.seeds = 3


def test_log_grid_and_shift():
    g = P.log_grid(1e-4, 1e-1, 7)
    assert len(g) == 7 and g[0] == pytest.approx(1e-4) and g[-1] == pytest.approx(1e-1)
    np.testing.assert_allclose(np.diff(np.log10(g)), 0.5)
    up = P.shift_grid(g, "high")
    assert up[0] == pytest.approx(g[-1]) and up[-1] == pytest.approx(1e2)
    np.testing.assert_allclose(np.diff(np.log10(up)), 0.5)
    down = P.shift_grid(g, "low")
    assert down[-1] == pytest.approx(g[0]) and down[0] == pytest.approx(1e-7)
    np.testing.assert_allclose(P.shift_grid(g, +1), up)
    for center in np.geomspace(1e-6, 10.0, 50):  # the shared rate is exactly the old edge
        q = P.PRESETS["quick"].grid(center)
        assert P.shift_grid(q, "up")[0] == q[-1] and P.shift_grid(q, "down")[-1] == q[0]
    with pytest.raises(ValueError):
        P.shift_grid(g, "sideways")
    with pytest.raises(ValueError):
        P.shift_grid([1e-3], "up")


def test_combine_shifted_grids():
    a = records([[3.0, 3.0], [2.0, 2.0], [1.0, 1.0]], lrs=[1e-3, 1e-2, 1e-1])
    b = records([[0.9, 0.9], [0.5, 0.5], [8.0, 8.0]], lrs=P.shift_grid(a.lrs, "high"))
    c = P.combine(a, b)
    np.testing.assert_allclose(c.lrs, [1e-3, 1e-2, 1e-1, 1.0, 10.0])
    np.testing.assert_array_equal(c.val[:, 0, -1], [3.0, 2.0, 1.0, 0.5, 8.0])  # the shared rate from `a`
    assert c.ms_per_step == pytest.approx(a.ms_per_step)
    assert P.select(c, PROBLEM).lr == pytest.approx(1.0)
    nearly = dataclasses.replace(b, lrs=b.lrs * np.array([1 + 1e-12, 1, 1]))  # the shared rate, 1 ulp off
    assert len(P.combine(a, nearly).lrs) == 5


# --------------------------------------------------------------------------- t quantiles and intervals
@pytest.mark.parametrize(
    ("df", "t"),
    [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (10, 2.228), (30, 2.042), (120, 1.980)],
)
def test_t_quantile_table_values(df, t):
    assert P.t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)


def test_t_quantile_limits_and_symmetry():
    assert P.t_quantile(0.975, 10**7) == pytest.approx(1.959964, abs=1e-6)
    assert P.t_quantile(0.975, 2000) == pytest.approx(1.961151, abs=1e-6)
    assert P.t_quantile(0.025, 4) == pytest.approx(-P.t_quantile(0.975, 4))
    assert P.t_quantile(0.5, 7) == 0.0
    assert P.t_quantile(0.95, 5) == pytest.approx(2.015, abs=5e-4)
    with pytest.raises(ValueError):
        P.t_quantile(0.975, 0)


def test_t_quantile_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 5, 8, 13, 29, 64, 999, 1001, 4000):
        for p in (0.6, 0.9, 0.975, 0.995):
            assert P.t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-9)


def test_ci_hand_example():
    # values 1..5: mean 3, s = sqrt(2.5), t(0.975, 4) = 2.7764451
    assert P.ci_halfwidth([1, 2, 3, 4, 5]) == pytest.approx(
        2.7764451 * math.sqrt(2.5) / math.sqrt(5), rel=1e-6
    )
    assert P.ci_halfwidth([2.0, 2.0, 2.0]) == 0.0
    assert math.isnan(P.ci_halfwidth([1.0]))
    assert P.ci_halfwidth([1.0, math.nan]) == math.inf


# --------------------------------------------------------------------------- selection
def test_select_picks_lowest_mean_final_val():
    val = [[5.0, 5.2, 4.8], [3.0, 3.4, 2.6], [3.1, 2.9, 3.1], [9.0, 9.0, 9.0]]
    s = P.select(records(val), PROBLEM)
    assert s.index == 1 and s.lr == pytest.approx(np.geomspace(1e-3, 1e-1, 4)[1])  # mean 3.0 < 3.033
    np.testing.assert_allclose(s.scores, np.mean(val, axis=1))
    assert s.mode == "tuned" and s.on_edge is None and s.seeds == 3


def test_select_reports_test_at_chosen_rate():
    val = [[4.0, 4.0, 4.0], [1.0, 2.0, 3.0]]
    test = [[0.0, 0.0, 0.0], [1.5, 2.5, 3.5]]  # the unchosen rate's test metric is better: never used
    s = P.select(records(val, test), PROBLEM)
    assert s.index == 1 and s.on_edge == "high"
    np.testing.assert_array_equal(s.test, [1.5, 2.5, 3.5])
    assert s.test_mean == pytest.approx(2.5)
    assert s.test_ci == pytest.approx(P.t_quantile(0.975, 2) * 1.0 / math.sqrt(3))
    assert s.val_mean == pytest.approx(2.0)
    np.testing.assert_array_equal(s.best_val, [1.0, 2.0, 3.0])  # earlier points were 2x: the final is best
    assert (s.metric_name, s.target) == ("error %", 5.0)


def test_selection_never_reads_test():
    rng = np.random.default_rng(0)
    val = rng.uniform(1, 2, (6, 4))
    base = records(val)
    for garbage in (np.full_like(base.test, np.nan), rng.normal(0, 1e6, base.test.shape), -base.test):
        other = dataclasses.replace(base, test=garbage)
        a, b = P.select(base, PROBLEM), P.select(other, PROBLEM)
        assert (a.index, a.lr, a.on_edge, a.diverged) == (b.index, b.lr, b.on_edge, b.diverged)
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.val_mean == b.val_mean and a.best_val_mean == b.best_val_mean


def test_diverged_seed_counts_as_inf():
    # rate 0 has the lowest mean over its finite seeds but one seed diverged: rate 1 is chosen
    val = [[0.5, np.nan, 0.5], [2.0, 2.0, 2.0], [1.0, np.inf, 1.0]]
    s = P.select(records(val), PROBLEM)
    assert s.index == 1 and s.on_edge is None
    assert s.scores[0] == math.inf and s.scores[2] == math.inf
    assert s.diverged == 2 and s.diverged_chosen == 0


def test_every_rate_diverged_somewhere():
    val = [[np.nan, np.nan], [1.0, np.nan], [np.nan, 3.0]]
    s = P.select(records(val), PROBLEM)
    assert s.index == 1 and s.diverged_chosen == 1
    assert s.test_mean == math.inf and s.test_ci == math.inf
    assert P.rank([s, sel(9.0, 1.0)]) == [2, 1]


def test_edge_flag():
    assert P.select(records([[1.0], [2.0], [3.0]]), PROBLEM).on_edge == "low"
    assert P.select(records([[3.0], [2.0], [1.0]]), PROBLEM).on_edge == "high"
    assert P.select(records([[3.0], [1.0], [2.0]]), PROBLEM).on_edge is None


def test_one_shot_has_no_edge_flag():
    s = P.select(records([[1.0, 2.0, 3.0]], lrs=[1e-3]), PROBLEM)
    assert s.mode == "one-shot" and s.on_edge is None and s.index == 0 and s.lr == 1e-3


def test_steps_to_target_at_chosen_rate():
    stt = [[10, 20, 30, 40, np.inf], [10, np.inf, np.inf, 20, np.inf]]
    s = P.select(records([[2.0] * 5, [1.0] * 5], stt=stt), PROBLEM)
    assert s.index == 1 and s.reached == 2 and s.time_to_target == math.inf  # 2 of 5: fewer than half
    s = P.select(records([[1.0] * 5, [2.0] * 5], stt=stt), PROBLEM)
    assert s.reached == 4 and s.time_to_target == 30
    assert P.time_to_target([10, 20, np.inf, np.inf]) == 20  # half of an even count: the lower median
    assert P.time_to_target([10, np.inf, np.inf, np.inf]) == math.inf


def test_selection_dict_round_trip():
    s = P.select(records([[1.0, np.nan], [2.0, 3.0]], stt=[[10, np.inf], [20, 30]]), PROBLEM)
    back = P.Selection.from_dict(s.to_dict())
    for f in dataclasses.fields(P.Selection):
        u, v = getattr(back, f.name), getattr(s, f.name)
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(u, v)
        else:
            assert u == v or (isinstance(v, float) and math.isnan(v) and math.isnan(u)), f.name


# --------------------------------------------------------------------------- ranks
def test_rank_rule_examples():
    # intervals [0, 2], [1, 3], [4, 5]: the first two overlap, both lie below the third
    assert P.rank([sel(1.0, 1.0), sel(2.0, 1.0), sel(4.5, 0.5)]) == [1, 1, 3]
    # not transitive: [0, 1] and [1.5, 3] differ, [0.9, 2] overlaps both
    assert P.rank([sel(0.5, 0.5), sel(1.45, 0.55), sel(2.25, 0.75)]) == [1, 1, 2]
    # identical means tie, even with zero-width intervals
    assert P.rank([sel(2.0, 0.0), sel(2.0, 0.0), sel(3.0, 0.0)]) == [1, 1, 3]
    # order of the input does not matter
    assert P.rank([sel(4.5, 0.5), sel(1.0, 1.0), sel(2.0, 1.0)]) == [3, 1, 1]


def test_rank_diverged_last_tied():
    ranks = P.rank([sel(math.inf, math.inf), sel(1.0, 0.1), sel(math.inf, math.nan), sel(5.0, 0.1)])
    assert ranks == [3, 1, 3, 2]


def test_rank_without_interval_compares_means():
    assert P.rank([sel(1.0, math.nan), sel(2.0, math.nan), sel(1.0, math.nan)]) == [1, 3, 1]


# --------------------------------------------------------------------------- performance profiles
def test_performance_profile_hand_example():
    taus = np.array([1.0, 1.5, 2.0, 3.0, 4.0])
    by_problem = {
        "p1": [sel(0, 0, "a", 100.0), sel(0, 0, "b", 200.0), sel(0, 0, "c", math.inf)],
        "p2": [sel(0, 0, "a", 300.0), sel(0, 0, "b", 100.0), sel(0, 0, "c", 150.0)],
    }
    rho = P.performance_profile(by_problem, taus)
    # ratios: a (1, 3), b (2, 1), c (inf, 1.5)
    np.testing.assert_allclose(rho["a"], [0.5, 0.5, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(rho["b"], [0.5, 0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(rho["c"], [0.0, 0.5, 0.5, 0.5, 0.5])
    # a contender absent from a problem never reaches its target there
    rho = P.performance_profile({"p1": [sel(0, 0, "a", 10.0)], "p2": [sel(0, 0, "b", 10.0)]}, taus)
    np.testing.assert_allclose(rho["a"], 0.5)
    # nobody reached: everyone's ratio is inf
    rho = P.performance_profile({"p": [sel(0, 0, "a"), sel(0, 0, "b")]}, taus)
    assert not rho["a"].any() and not rho["b"].any()


def test_profile_score_bounds():
    taus = P.profile_taus(4.0)
    assert taus[0] == 1.0 and taus[-1] == pytest.approx(4.0)
    assert P.profile_score(np.ones_like(taus), taus) == pytest.approx(1.0)
    assert P.profile_score(np.zeros_like(taus), taus) == 0.0
    # rho = 1 from tau = 2 on: the score is the share of log tau past 2
    step = (taus >= 2.0).astype(float)
    assert P.profile_score(step, taus) == pytest.approx(math.log(2) / math.log(4), abs=5e-3)
    by_problem = {"p": [sel(0, 0, "a", 10.0), sel(0, 0, "b", 15.0), sel(0, 0, "c")]}
    scores = {n: P.profile_score(r, taus) for n, r in P.performance_profile(by_problem, taus).items()}
    assert scores["a"] == pytest.approx(1.0) and scores["c"] == 0.0 and 0 < scores["b"] < 1
    with pytest.raises(ValueError):
        P.profile_score([1.0, 1.0], [2.0, 4.0])


# --------------------------------------------------------------------------- the protocol in words
def test_describe_states_the_rules():
    grids = {"adam": P.PRESETS["quick"].grid(1e-3), "sgd": P.PRESETS["quick"].grid(0.1)}
    text = describe(P.PRESETS["quick"], [PROBLEM], ["adam", "sgd"], grids)
    flat = " ".join(text.split())
    for phrase in (
        "preset 'quick'",
        "7 learning rates",
        "5 seeds",
        "initialization, the order of the mini-batches",
        "three independent streams",
        "data split",
        "lowest mean over the selection seeds of the final validation metric",
        "10 seeds (1000-1009), disjoint from the selection seeds",
        "counts as +inf",
        "never read to choose",
        "95 % confidence",
        "Student t",
        "significantly better",
        "Edge flag",
        "One-shot mode",
        "MXNet's defaults",
        "Steps to target",
        "which other rates share the program",
        "target <= 5",
        "40 steps",
    ):
        assert phrase in flat, phrase
    assert "adam" in text and f"{grids['adam'][0]:.3g}" in text
