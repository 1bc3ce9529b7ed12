"""The study's tuning protocol: grids, selection on validation, ranks, performance profiles.

(Student's t, the paired tests and Holm's correction themselves are tested in test_stats.py; the referee's
regression cases of the rank rule, through the whole report path, in test_ranking.py.)"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mxopt_jax.compare import analysis as A
from mxopt_jax.compare import protocol as P
from mxopt_jax.compare import stats
from mxopt_jax.compare.direction import Direction
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
    # enough confirmation seeds that the exact test can separate every pair of all 26 contenders
    assert (quick.confirm_seeds, full.confirm_seeds) == (16, 20)
    assert min(quick.confirm_seeds, full.confirm_seeds) >= stats.min_seeds(26 * 25 // 2)
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
    # what the other seed did is still reported: its value, and the quartiles with the diverged seed the worst
    assert s.finite == 1 and s.finite_mean == 1.5 and math.isnan(s.finite_ci)
    assert s.test_quartiles == (math.inf, math.inf, math.inf)  # 2 seeds: every quartile touches the worst
    # 2 seeds: the exact test's smallest p-value is 0.5, nothing can be shown
    assert P.rank([s, sel([8.0, 10.0])]) == [1, 1]


def test_nan_anywhere_in_a_run_is_diverged():
    """A NaN anywhere in a run's training loss or validation curve marks it diverged (the last point finite, the
    engine's flag missing); the test split is evaluated only where a record reads it, at the end, so there a
    NaN counts at the final point only (NaN before it is no value, not a divergence)."""
    for field, point in (("train_loss", 1), ("val", 1), ("test", -1)):
        base = records([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], evals=4)
        bad = np.asarray(getattr(base, field), np.float64).copy()
        bad[0, 1, point] = np.nan
        r = dataclasses.replace(base, **{field: bad})
        r.diverged_at = np.full((2, 3), np.inf)  # as if the engine had not flagged it
        s = P.select(r, PROBLEM)
        if field == "test":  # selection never reads the test split, not even to tell divergence
            assert s.index == 0 and s.diverged == 0
        else:
            assert s.index == 1 and s.scores[0] == math.inf and s.diverged == 1, field
        one = P.select(r.take(0), PROBLEM)
        assert one.diverged_chosen == 1 and one.test[1] == math.inf and one.test_mean == math.inf, field
    # a test curve evaluated at its end only (NaN before) is no divergence
    base = records([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], evals=4)
    test = np.asarray(base.test, np.float64).copy()
    test[..., :-1] = np.nan
    one = P.select(dataclasses.replace(base, test=test).take(0), PROBLEM)
    assert one.diverged_chosen == 0 and np.isfinite(one.test).all()


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
    # a majority of the seeds (AlgoPerf): half of an even count is not one
    assert P.time_to_target([10, 20, np.inf, np.inf]) == math.inf
    assert P.time_to_target([10, 20, 30, np.inf]) == 30  # 3 of 4: the upper median
    assert P.time_to_target([40, 10, 20, 30, 50]) == 30  # odd: the median
    assert P.time_to_target([10, 20, np.inf, np.inf, np.inf]) == math.inf  # 2 of 5
    assert P.time_to_target([10] * 5 + [np.inf] * 5) == math.inf  # 5 of 10 gave a time before
    assert P.time_to_target([10] * 6 + [np.inf] * 4) == 10
    assert P.time_to_target([np.inf]) == math.inf and P.time_to_target([]) == math.inf


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
    seeds = 10
    rng = np.random.default_rng(1)
    base = rng.normal(10.0, 2.0, seeds)  # the seeds' difficulty: shared by every contender
    a = sel(base, "a")
    b = sel(base + 0.5 + rng.normal(0, 0.01, seeds), "b")  # worse on every seed by 0.5
    c = sel(base + 0.5 + rng.normal(0, 0.01, seeds), "c")
    # the intervals overlap widely (spread 2 across seeds), but the pairing shows the difference
    assert P.rank([a, b, c]) == [1, 2, 2]
    table = P.compare_table([a, b, c])
    assert [table.rank_set(n) for n in "abc"] == ["1", "2-3", "2-3"]
    assert [table.letters(n) for n in "abc"] == ["a", "b", "b"]
    assert sorted(x[:2] for x in table.claims()) == [("a", "b"), ("a", "c")] and table.pairs == 3
    assert P.rank([c, a, b]) == [2, 1, 2]  # permuting the contenders permutes the ranks
    # the old rule (no overlap of the intervals) would have tied all three
    assert abs(a.test_mean - b.test_mean) < a.test_ci


def test_rank_pairs_by_seed_whatever_the_order():
    a = sel([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], "a", seeds=range(10, 18))
    b = sel(
        [8.5, 7.5, 6.5, 5.5, 4.5, 3.5, 2.5, 1.5], "b", seeds=range(17, 9, -1)
    )  # listed in reverse seed order
    values, seeds = P.paired_values([a, b])
    np.testing.assert_array_equal(seeds, range(10, 18))
    np.testing.assert_allclose(values[1] - values[0], 0.5)
    assert P.rank([a, b]) == [1, 2]  # consistently 0.5 worse on every seed (0.2 seed standard deviations)


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


def test_a_diverged_seed_is_the_worst_value_on_its_seed():
    """Item 4: ``a`` diverged on one seed of 8 and is better than ``b`` on the 7 others: not ranked last (its
    other seeds count), not shown better either; ``c`` diverged on every seed: worse than each finite one."""
    base = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0, 2.0, 6.0])
    a = base - 1.0 + 0.01 * np.arange(8)
    a[1] = math.inf
    tab = P.compare_table(
        [sel(a, "a"), sel(base, "b"), sel([math.nan] * 8, "c"), sel(base + 5.0 + 0.01 * np.arange(8), "d")]
    )
    # shown: b < c, d < c, b < d (8 seeds the same way, p = 2/256), a < c (7 seeds, the 8th a tie: 2/128);
    # a vs b and a vs d: the diverged seed has the largest rank, W+ = 8, p = 0.195
    assert sorted(x[:2] for x in tab.claims()) == [("a", "c"), ("b", "c"), ("b", "d"), ("d", "c")]
    assert [tab.rank_set(n) for n in "abcd"] == ["1-3", "1-2", "4", "2-3"]
    assert [tab.rank(n) for n in "abcd"] == [1, 1, 4, 2]
    s = sel(a, "a")
    assert s.finite == 7 and s.finite_mean == pytest.approx(np.mean(np.delete(a, 1)))
    q1, med, q3 = s.test_quartiles
    assert med == pytest.approx(np.median(np.where(np.isinf(a), 1e9, a))) and q3 < math.inf


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
        base = rng.normal(5.0, 1.0, 10)
        sels = [sel(base + d + rng.normal(0, 0.05, 10), n) for n, d in (("a", 0.0), ("b", 0.4), ("c", 0.8))]
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
    # the problems are resampled, each problem's tests kept: a contender ranked 1 on p1 and 3 on p2
    mixed = {"p1": by_problem["p1"], "p2": [dataclasses.replace(s, contender=n) for s, n in
             zip(by_problem["p2"], ["c", "b", "a", "a2"], strict=True)]}  # fmt: skip
    b3 = P.rank_uncertainty(
        mixed, {"p1": {"a": ["a2"]}, "p2": {"c": ["a2"]}}, names=["a", "b", "c"], n_boot=400
    )
    np.testing.assert_array_equal(b3.mean_rank, [2.0, 2.0, 2.0])
    assert set(np.unique(b3.replicates[:, 0])) == {1.0, 2.0, 3.0} and b3.low[0] == 1.0 and b3.high[0] == 3.0


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
def test_describe_computes_its_error_rates_and_power():
    """Issue 49's referee: the text said "29 % for the quick preset's 10 tables" where 1 - 0.95^10 is 40 %, and
    that 14 seeds separate at most 26 entries where it is 29. Both are computed from the report's own tables and
    seeds now."""
    five = [SimpleNamespace(**{**vars(PROBLEM), "name": f"p{k}"}) for k in range(5)]
    text = " ".join(
        describe(P.PRESETS["quick"], five, ["adam"], confirm_seeds=list(range(1000, 1014))).split()
    )
    assert "1 - 0.95^T (40 % for this report's 10 tables under a global null)" in text
    assert "these 14 report seeds can separate at most 29 entries (406 pairs)" in text
    assert stats.min_seeds(29 * 28 // 2) == 14 and stats.min_seeds(30 * 29 // 2) == 15
    assert round(100 * (1 - 0.95**10)) == 40


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
        "best mean over the selection seeds of the final validation metric",
        "the highest where the problem's metric is better higher",
        "16 seeds (1000-1015), disjoint from the selection seeds",
        "counts as the worst value",
        "never read to choose",
        "95 % Student-t confidence interval of that mean",
        "can reach past the metric's range",
        "median and quartiles over every report seed, a diverged seed counting as the worst value",
        "paired by seed",
        "Wilcoxon's signed-rank test (exact, two-sided)",
        "a diverged seed is the worst value on its seed",
        "0.0001 relative of the value on a seed is treated as no difference on that seed",
        "far above float32 rounding",
        # issue 40: what the claims are about, error control per table, the report-wide option, agree
        "Error control is per table",
        "--family report every pair of every table (the tables across studies included) is one Holm family",
        "What the tuned tables' claims are about: the optimizers under this search and budget",
        "at every one of the rates the other's search tried (an intersection-union test, Berger 1982",
        "--studies N repeats the whole tuning",
        "shown beside it as model-based effects, never as claims",
        "exact sign-flip test over the N studies' effects",
        "`mxopt-jax agree A B`",
        "only from 9 problems on and with --family report",
        "practical margin",
        "Holm's step-down method at 5 %",
        "The family is every pair of the table's entries",
        "compact letter display, Piepho 2004",
        "the rank set [1 + entries shown better, E - entries shown worse]",
        "smallest p-value on R seeds is 2/2^R",
        "folded into one entry",
        "1000 bootstrap resamples of the problems",
        "seed 0",
        "P(best)",
        "claims no difference a table did not show",
        "every rate tried is also run on",
        "never read to choose",
        "The fastest trial and the performance profile, ms/step and the selection divergences come from the "
        "selection runs",
        "a majority of the seeds",
        "fastest trial that reaches the target",
        "tau linear from 1 to 4",
        "Edge flag",
        "One-shot mode",
        "MXNet's defaults",
        "Steps to target",
        "which other rates share the program",
        "target <= 5",
        "(lower is better)",
        "practical margin 0 (none)",
        "40 steps",
    ):
        assert phrase in flat, phrase
    assert "adam" in text and f"{grids['adam'][0]:.3g}" in text


# --------------------------------------------------------------------------- the metric's direction
HIGHER = SimpleNamespace(**{**vars(PROBLEM), "metric_name": "accuracy %", "target": 90.0, "better": "higher"})


def test_direction_is_the_one_place_direction_becomes_arithmetic():
    low, high = Direction("lower"), Direction("higher")
    np.testing.assert_array_equal(low.orient([1.0, -2.0]), [1.0, -2.0])
    np.testing.assert_array_equal(high.orient([1.0, -2.0]), [-1.0, 2.0])
    np.testing.assert_array_equal(high.orient(high.orient([3.0, math.inf])), [3.0, math.inf])
    assert (low.symbol, high.symbol, low.worst, high.worst) == ("<=", ">=", math.inf, -math.inf)
    np.testing.assert_array_equal(high.meets([89.0, 90.0, np.nan], 90.0), [False, True, False])
    np.testing.assert_array_equal(low.meets([89.0, 90.0, np.inf], 90.0), [True, True, False])
    with pytest.raises(ValueError, match="better must be 'lower' or 'higher'"):
        Direction("up")


def test_selection_honours_higher_is_better():
    """Item 9: an accuracy is chosen, reported and ranked as higher-is-better; the records and the tables keep
    the raw values."""
    val = [[90.0, 91.0, 92.0], [95.0, 96.0, 94.0], [80.0, 99.0, np.nan]]
    s = P.select(records(val, test_final=np.asarray(val) - 1.0), HIGHER)
    assert s.index == 1 and s.better == "higher" and s.sign == -1.0  # 95 beats 91; a diverged seed is worst
    np.testing.assert_allclose(s.scores, [91.0, 95.0, -math.inf])
    np.testing.assert_array_equal(s.test, [94.0, 95.0, 93.0])  # raw values
    # the best validation value over the run is the highest: the earlier points (2x the final one here)
    np.testing.assert_array_equal(s.best_val, [190.0, 192.0, 188.0])
    # the same records read as lower-is-better choose the other way
    assert P.select(records(val), PROBLEM).index == 0
    # a diverged report seed is the worst value: -inf where higher is better
    one = P.select(records([[90.0, np.nan, 92.0]], lrs=[1e-2]), HIGHER)
    assert one.test[1] == -math.inf and one.test_mean == -math.inf and one.finite_mean == pytest.approx(91.5)
    assert one.test_quartiles[0] == -math.inf and one.test_quartiles[1:] == (90.5, 91.5)


def test_ranks_and_quartiles_honour_higher_is_better():
    rng = np.random.default_rng(8)
    base = rng.normal(90.0, 2.0, 10)
    hi = dataclasses.replace(sel(base + 1.0, "hi"), better="higher")
    lo = dataclasses.replace(sel(base, "lo"), better="higher")
    assert P.rank([hi, lo]) == [1, 2]  # higher accuracy: better
    assert P.rank([dataclasses.replace(hi, better="lower"), dataclasses.replace(lo, better="lower")]) == [
        2,
        1,
    ]
    q1, med, q3 = hi.test_quartiles
    assert q1 <= med <= q3 and med == pytest.approx(np.median(base + 1.0))
    assert P.quartiles([1.0, 2.0, np.nan, 4.0]) == (1.75, 3.0, math.inf)
    assert P.quartiles([1.0, 2.0, np.nan, 4.0], "higher") == (-math.inf, 1.5, 2.5)
    assert all(math.isnan(x) for x in P.quartiles([]))
    with pytest.raises(ValueError, match="must share the problem's better"):
        P.rank([hi, dataclasses.replace(lo, better="lower")])
    values, _ = P.paired_values([dataclasses.replace(hi, test=np.where(np.arange(10) == 2, np.nan, hi.test))])
    assert values[0, 2] == -math.inf  # the worst accuracy


def test_margin_is_read_from_the_problem_and_printed():
    rng = np.random.default_rng(9)
    base = rng.normal(5.0, 1.0, 10)
    a, b = sel(base, "a"), sel(base + 0.2 + 0.01 * rng.normal(size=10), "b")
    assert P.rank([a, b]) == [1, 2]
    wide = [dataclasses.replace(x, margin=0.5) for x in (a, b)]
    assert P.rank(wide) == [1, 1] and P.compare_table(wide).margin == 0.5
    with pytest.raises(ValueError, match="margin"):
        P.rank([wide[0], b])


def test_steps_to_target_honour_higher_is_better():
    from mxopt_jax.compare import engine
    from mxopt_jax.compare.direction import HIGHER

    val = np.array([[50.0, 80.0, 95.0, 97.0], [np.nan, 99.0, 90.0, 91.0]])
    steps = np.array([10, 20, 30, 40])
    np.testing.assert_array_equal(engine.steps_to_target(val, steps, 90.0, HIGHER), [30, 20])  # >= 90
    np.testing.assert_array_equal(engine.steps_to_target(val, steps, 60.0), [10, np.inf])  # <= 60


def test_selection_from_an_older_dict_reads_lower_is_better():
    s = P.select(records([[1.0, 2.0]]), PROBLEM)
    d = s.to_dict()
    assert d["better"] == "lower" and d["margin"] == 0.0
    del d["better"], d["margin"]
    back = P.Selection.from_dict(d)
    assert back.better == "lower" and back.margin == 0.0


def test_check_direction_refuses_an_untrained_model_that_meets_its_target():
    """Item 9, "check it": an untrained classifier's accuracy is near chance; said to be better lower, any
    target above chance is already met, and the study refuses it before anything runs."""
    import jax.numpy as jnp

    from mxopt_jax.compare.preflight import check_direction
    from mxopt_jax.compare.problems.base import Problem, Splits

    x = np.random.default_rng(0).normal(size=(40, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)

    def accuracy(p, batch):
        return 100.0 * jnp.mean(((batch[0] @ p["w"]) > 0) == (batch[1] > 0.5))

    common = dict(
        name="acc", title="t", description="d", data=lambda: Splits((x, y), (x, y), (x, y)),
        init=lambda key: {"w": jnp.zeros(3)}, loss=lambda p, b: jnp.mean((b[0] @ p["w"] - b[1]) ** 2),
        metric=accuracy, metric_name="accuracy %", steps=10, batch_size=8, eval_every=5,
    )  # fmt: skip
    chance = float(accuracy({"w": jnp.zeros(3)}, (x, y)))
    good = Problem(**common, target=90.0, better="higher")
    assert check_direction(good) == pytest.approx(chance)
    backwards = Problem(**common, target=90.0, better="lower")  # an accuracy ranked as an error
    with pytest.raises(ValueError, match=r"problem 'acc'.*accuracy %.*already meets the target \(<= 90") as e:
        check_direction(backwards)
    assert f"{chance:.6g}" in str(e.value) and "better='lower'" in str(e.value)
    with pytest.raises(ValueError, match="already meets the target"):
        check_direction(good, target=10.0)  # a target below chance: reached by the untrained model
    nan = Problem(**{**common, "metric": lambda p, b: jnp.nan}, target=90.0, better="higher")
    with pytest.raises(ValueError, match="not a finite number"):
        check_direction(nan)


def test_problem_margin_is_checked():
    from mxopt_jax.compare.problems.base import Problem

    base = dict(
        name="m", title="t", description="d", data=lambda: None, init=lambda k: None, loss=lambda p, b: 0.0,
        metric=lambda p, b: 0.0, metric_name="x", target=1.0, steps=10, batch_size=8, eval_every=5,
    )  # fmt: skip
    assert Problem(**base).margin == 0.0 and Problem(**base, margin=0.5).margin == 0.5
    for bad in (-0.1, math.inf, math.nan, True, "0.1"):
        with pytest.raises(ValueError, match="`margin` must be a finite number >= 0"):
            Problem(**base, margin=bad)


# --------------------------------------------------------------------------- across studies
def _studies(offsets, luck=0.0, n_studies=2, seeds=10, seed=0):
    """``n_studies`` studies of one table: contender ``k``'s test values ``base + offsets[k]`` plus, per study,
    a tuning-luck shift ``luck * N(0, 1)`` (the chosen configuration's own quality) and seed noise."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n_studies):
        base = rng.normal(5.0, 1.0, seeds)
        sels = []
        for k, off in enumerate(offsets):
            v = base + off + luck * rng.normal() + 0.05 * rng.normal(size=seeds)
            x = sel(v, f"c{k}", seeds=1000 + 100 * s + np.arange(seeds))
            sels.append(dataclasses.replace(x, lr=0.01 * 10.0 ** rng.integers(-1, 2)))
        out.append(sels)
    return out


def test_across_studies_spread_and_claims():
    studies = _studies([0.0, 0.5, 0.5, 2.0], n_studies=8)
    a = A.across_studies(studies)
    assert a.names == ("c0", "c1", "c2", "c3") and a.studies == 8 and a.lr.shape == (8, 4)
    np.testing.assert_allclose(a.test_mean[0], [s.test_mean for s in studies[0]])
    np.testing.assert_allclose(a.study_mean, a.test_mean.mean(axis=0))
    assert np.all(a.study_ci > 0) and np.all(a.lr_decades >= 0)
    # c0 < c1, c2 < c3 and c0 < c3 in every study; c1 vs c2 never
    assert a.replicated[0, 1] and a.replicated[0, 3] and a.replicated[1, 3] and not a.replicated[1, 2]
    assert a.replicated_letters() == ["a", "b", "b", "c"]
    # the across-studies test (the exact signed-rank test over the 8 studies' median differences): the same
    # claims here (no tuning luck); 8 studies are the fewest that can show a difference among 4 entries
    assert a.can_claim and a.min_studies == 8 and a.pairs == 6
    assert a.effect[0, 3] == pytest.approx(-2.0, abs=0.1) and a.effect[3, 0] == -a.effect[0, 3]
    assert a.p[0, 3] == 2 / 2**8 and a.p_adjusted[0, 3] == pytest.approx(6 * 2 / 2**8)
    three = A.across_studies(studies[:3])  # 3 studies: 2 / 2^3 > 5 % / 6, no claim possible, and it says so
    assert not three.can_claim and not three.shown.any() and three.replicated[0, 3]
    assert list(a.shown_rank_low) == [1, 2, 2, 4] and list(a.shown_rank_high) == [1, 3, 3, 4]
    assert a.shown_letters() == ["a", "b", "b", "c"] and np.isnan(a.p_adjusted[0, 0])
    assert a.agreement() == {
        "pairs": 6, "claimed": 5, "replicated": 5, "contradicted": 0, "unreplicated": 0, "shown": 5
    }  # fmt: skip
    # a study where c0 is worse than c1 and c2 (study 0: better than both): contradictions
    swapped = _studies([0.0, 0.5, 0.0, 2.0], n_studies=1, seed=5)[0]
    b = A.across_studies([studies[0], [dataclasses.replace(s, contender=n) for s, n in
                                        zip(swapped, ["c1", "c0", "c2", "c3"], strict=True)]])  # fmt: skip
    agree = b.agreement()
    assert agree["contradicted"] >= 1 and agree["claimed"] >= agree["replicated"] + agree["contradicted"]
    text = tables_format_across(b)
    assert "across 2 independent studies" in text and "agreement over 6 pair(s)" in text


def tables_format_across(a):
    from mxopt_jax.compare.report.tables import format_across

    return format_across(a, "error %")


def test_across_studies_bad_input():
    studies = _studies([0.0, 1.0])
    with pytest.raises(ValueError, match="at least one study"):
        A.across_studies([])
    with pytest.raises(ValueError, match="has no selection"):
        A.across_studies([studies[0], []])
    with pytest.raises(ValueError, match="one table"):
        A.across_studies([studies[0], [dataclasses.replace(s, problem="q") for s in studies[1]]])
    with pytest.raises(ValueError, match="one map per study"):
        A.across_studies(studies, identical=[None])
    with pytest.raises(ValueError, match="no contender ran in every study"):
        A.across_studies([studies[0][:1], studies[1][1:]])
    one = A.across_studies(studies[:1])
    assert one.studies == 1 and math.isnan(one.study_ci[0])


def test_combine_keeps_a_trace_when_both_grids_have_one():
    """A problem that records a trace (``Problem.trace``) keeps it through a grid's extension."""

    def rec(lrs, trace=True):
        g = len(lrs)
        v = np.ones((g, 2, 3))
        t = np.arange(g * 2 * 3 * 2, dtype=float).reshape(g, 2, 3, 2) if trace else None
        return Records("a", "p", lrs, [0, 1], [1, 2, 3], v, v, v, np.full((g, 2), np.inf), trace=t)

    both = P.combine(rec([1e-3, 1e-2, 1e-1]), rec([1e-1, 1.0, 10.0]))
    assert both.trace.shape == (5, 2, 3, 2) and np.array_equal(both.trace[3], rec([1e-1, 1.0, 10.0]).trace[1])
    assert P.combine(rec([1e-3, 1e-2]), rec([1e-2, 0.1], trace=False)).trace is None
