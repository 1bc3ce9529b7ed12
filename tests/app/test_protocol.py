"""The study's tuning protocol: grids, selection on validation, ranks, performance profiles.

(Student's t, the paired tests and Holm's correction themselves are tested in test_stats.py; the referee's
regression cases of the rank rule, through the whole report path, in test_ranking.py.)"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mxopt_jax.compare import protocol as P
from mxopt_jax.compare import stats
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


def sel(test, name: str = "x", fastest: float = math.inf, seeds=None) -> P.Selection:
    """A Selection reporting the test values ``test`` (one per seed; seeds 0, 1, ... unless given) and the
    profile time ``fastest`` (other fields filler)."""
    test = np.asarray(test, np.float64)
    s = P.select(records([[1.0] * len(test)]), PROBLEM)
    return dataclasses.replace(
        s,
        contender=name,
        test=test,
        mode="tuned",
        test_mean=float(test.mean()) if np.all(np.isfinite(test)) else math.inf,
        test_ci=stats.ci_halfwidth(test),
        report_seeds=np.arange(len(test)) if seeds is None else np.asarray(seeds),
        fastest_time=fastest,
    )


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
    assert s.test_ci == pytest.approx(stats.t_quantile(0.975, 2) * 1.0 / math.sqrt(3))
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
    assert P.rank([s, sel([8.0, 10.0])]) == [2, 1]


def test_nan_anywhere_in_a_run_is_diverged():
    # a NaN in the middle of one seed's training loss, validation or test curve, the last point finite
    for field in ("train_loss", "val", "test"):
        base = records([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], evals=4)
        bad = np.asarray(getattr(base, field), np.float64).copy()
        bad[0, 1, 1] = np.nan
        r = dataclasses.replace(base, **{field: bad})
        r.diverged_at = np.full((2, 3), np.inf)  # as if the engine had not flagged it
        s = P.select(r, PROBLEM)
        if field == "test":  # selection never reads the test split, not even to tell divergence
            assert s.index == 0 and s.diverged == 0
        else:
            assert s.index == 1 and s.scores[0] == math.inf and s.diverged == 1, field
        one = P.select(r.take(0), PROBLEM)
        assert one.diverged_chosen == 1 and one.test[1] == math.inf and one.test_mean == math.inf, field


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
def test_rank_follows_paired_tests():
    seeds = 6
    rng = np.random.default_rng(1)
    base = rng.normal(10.0, 2.0, seeds)  # the seeds' difficulty: shared by every contender
    a = sel(base, "a")
    b = sel(base + 0.5 + rng.normal(0, 0.01, seeds), "b")  # worse on every seed by 0.5
    c = sel(base + 0.5 + rng.normal(0, 0.01, seeds), "c")
    # the intervals overlap widely (spread 2 across seeds), but the pairing shows the difference
    assert P.rank([a, b, c]) == [1, 2, 2]
    assert P.rank([c, a, b]) == [2, 1, 2]  # permuting the contenders permutes the ranks
    # the old rule (no overlap of the intervals) would have tied all three
    assert abs(a.test_mean - b.test_mean) < a.test_ci


def test_rank_pairs_by_seed_whatever_the_order():
    a = sel([1.0, 2.0, 3.0, 4.0], "a", seeds=[10, 11, 12, 13])
    b = sel([4.5, 3.5, 2.5, 1.5], "b", seeds=[13, 12, 11, 10])  # the same runs listed in reverse seed order
    values, seeds = P.paired_values([a, b])
    np.testing.assert_array_equal(seeds, [10, 11, 12, 13])
    np.testing.assert_allclose(values[1] - values[0], 0.5)
    assert P.rank([a, b]) == [1, 2]  # consistently 0.5 worse on every seed (0.39 seed standard deviations)


def test_rank_refuses_unpaired_tables():
    a = sel([1.0, 2.0, 3.0], "a")
    with pytest.raises(ValueError, match="same seeds"):
        P.rank([a, sel([1.0, 2.0, 3.0], "b", seeds=[0, 1, 5])])
    with pytest.raises(ValueError, match="report seeds"):
        P.rank([a, dataclasses.replace(sel([1.0, 2.0, 3.0], "b"), report_seeds=np.arange(2))])
    with pytest.raises(ValueError, match="repeat"):
        P.rank([sel([1.0, 2.0, 3.0], "b", seeds=[0, 0, 1])])
    with pytest.raises(ValueError, match="one table"):
        P.rank([a, dataclasses.replace(sel([1.0, 2.0, 3.0], "b"), problem="other")])
    with pytest.raises(ValueError, match="more than once"):
        P.rank([a, a])
    with pytest.raises(ValueError, match="at least 2 report seeds"):
        P.rank([sel([1.0], "a"), sel([2.0], "b")])
    assert P.rank([]) == []


def test_rank_diverged_last_tied():
    ranks = P.rank(
        [
            sel([1.0, math.inf, 1.0], "a"),
            sel([1.0, 1.1, 0.9], "b"),
            sel([math.nan] * 3, "c"),
            sel([5, 6, 7], "d"),
        ]
    )
    assert ranks == [3, 1, 3, 2]  # a and c diverged: after every finite one, tied


def test_identical_contenders_folded_before_ranking():
    rng = np.random.default_rng(3)
    base = rng.normal(5.0, 1.0, 5)
    good = base + rng.normal(0, 0.02, 5)
    worse = base + 0.3 + rng.normal(0, 0.02, 5)
    mid = base + 0.15 + rng.normal(0, 0.02, 5)
    sels = [sel(good, "sgd"), sel(good, "ccsgd"), sel(good, "test"), sel(mid, "m"), sel(worse, "w")]
    folded = P.rank(sels, {"sgd": ["ccsgd", "test"]})
    assert folded[:3] == [folded[0]] * 3  # the members share their representative's rank
    alone = P.rank([sels[0], sels[3], sels[4]])
    assert folded == [alone[0]] * 3 + alone[1:]  # and the others rank as if the duplicates were not there
    # unfolded, the duplicates would count as three significantly better contenders
    assert P.rank(sels)[4] >= folded[4]


def test_rank_uncertainty_is_reproducible_and_folds():
    rng = np.random.default_rng(4)
    by_problem = {}
    for p in ("p1", "p2"):
        base = rng.normal(5.0, 1.0, 6)
        sels = [sel(base + d + rng.normal(0, 0.05, 6), n) for n, d in (("a", 0.0), ("b", 0.4), ("c", 0.8))]
        sels.append(dataclasses.replace(sels[0], contender="a2"))  # identical to a
        by_problem[p] = [dataclasses.replace(s, problem=p) for s in sels]
    ident = {"p1": {"a": ["a2"]}, "p2": {"a": ["a2"]}}
    b1 = P.rank_uncertainty(by_problem, ident, n_boot=200)
    b2 = P.rank_uncertainty(by_problem, ident, n_boot=200)
    np.testing.assert_array_equal(b1.replicates, b2.replicates)
    assert b1.names == ("a", "b", "c", "a2")
    np.testing.assert_array_equal(b1.mean_rank, [1.0, 2.0, 3.0, 1.0])
    np.testing.assert_array_equal(b1.replicates[:, 0], b1.replicates[:, 3])  # a2 shares a's rank everywhere
    assert np.all(b1.low <= b1.high) and b1.p_first[1] == b1.p_first[2] == 0.0
    assert b1.p_first[0] == pytest.approx(0.5)  # a and a2 tie for first in every replicate
    assert P.rank_uncertainty(by_problem, ident, n_boot=200, seed=1).replicates.shape == (200, 4)


# --------------------------------------------------------------------------- performance profiles
def test_profile_times_are_the_fastest_trial():
    # 3 rates x 5 seeds: per seed the fastest rate reaching the target, then the median over the seeds
    stt = [
        [40, np.inf, 60, np.inf, 100],
        [20, 80, np.inf, np.inf, 30],
        [np.inf, 50, 10, np.inf, np.inf],
    ]
    s = P.select(records([[1.0] * 5, [2.0] * 5, [3.0] * 5], stt=stt), PROBLEM)
    np.testing.assert_array_equal(s.fastest_steps, [20, 50, 10, np.inf, 30])
    assert s.fastest_time == 30  # median of 10, 20, 30, 50, inf
    # the chosen rate alone (rate 0) reaches the target in 3 of 5 seeds, its median is 100
    assert s.index == 0 and s.time_to_target == 100
    one = P.select(records([[1.0] * 5], stt=[stt[0]]), PROBLEM)  # one configuration: its own median
    assert one.fastest_time == one.time_to_target == 100


def test_profile_scores_hand_example():
    by_problem = {
        "p1": [sel([1, 2], "a", 100.0), sel([1, 2], "b", 200.0), sel([1, 2], "c")],
        "p2": [sel([1, 2], "a", 300.0), sel([1, 2], "b", 100.0), sel([1, 2], "c", 150.0)],
    }
    assert P.profile_times(by_problem)["p2"] == {"a": 300.0, "b": 100.0, "c": 150.0}
    scores = P.profile_scores(by_problem)
    # ratios: a (1, 3), b (2, 1), c (inf, 1.5); score = mean(max(0, 4 - r)) / 3, linear tau
    assert scores["a"] == pytest.approx((3 + 1) / 2 / 3)
    assert scores["b"] == pytest.approx((2 + 3) / 2 / 3)
    assert scores["c"] == pytest.approx((0 + 2.5) / 2 / 3)
    assert P.profile_scores({"p": [sel([1, 2], "a"), sel([1, 2], "b")]}) == {"a": 0.0, "b": 0.0}
    assert P.profile_scores({}) == {}


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
        "95 % Student-t confidence interval of that mean",
        "can reach past the metric's range",
        "paired by seed",
        "Student's paired t-test (two-sided)",
        "Holm's step-down method (over all pairs in the table)",
        "at most 5 %",
        "largest raw among the finite entries whose mean is at most its own",
        "folded into one entry",
        "significantly better",
        "1000 bootstrap resamples of the report seeds",
        "seed 0 + the problem's index",
        "P(best)",
        "not a calibrated confidence interval",
        "fastest trial that reaches the target",
        "tau linear from 1 to 4",
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
