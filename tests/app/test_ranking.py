"""Rankings a referee accepts, through the whole report path (records -> selections -> tables and files).

The referee's cases: an unstable contender ([3, 3, 3, 3, 30]) must not rank above a stable better one
(3.61 ± 0.09); a wide one-shot "36 ± 37 %" must not tie for rank 1 with a consistent 7.1 % once the paired
comparisons tell them apart; "Nadam 2.36 ± 0.41, rank 1 / Adam 2.36 ± 0.30, rank 2" must not happen without a
significant difference behind it; a NaN anywhere in a run is reported as diverged. The interval-overlap rule the
study used before (:func:`_overlap_rank`, kept here only to show that each case was a real trap) failed them.
Also: the overall table's bootstrap interval and P(best), the AlgoPerf profile in the tables, the recommender's
random split and the workloads' docstrings.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mxopt_jax.compare import protocol as P
from mxopt_jax.compare import stats
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.report import export, tables

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
EVAL_STEPS = np.array([10, 20, 30, 40])


def _records(name, val_final, test_final, seeds, lrs, role, stt=None) -> Records:
    """Records whose curves fall to ``val_final``/``test_final`` ``(G, S)`` at the last of 4 evaluations."""
    v, t = np.asarray(val_final, np.float64), np.asarray(test_final, np.float64)
    scale = np.array([4.0, 2.0, 1.5, 1.0])
    val, test = v[..., None] * scale, t[..., None] * scale
    return Records(
        contender=name,
        problem=PROBLEM.name,
        lrs=np.asarray(lrs, np.float64),
        seeds=np.asarray(seeds),
        eval_steps=EVAL_STEPS,
        train_loss=val / 10,
        val=val,
        test=test,
        steps_to_target=np.full(v.shape, np.inf) if stt is None else np.asarray(stt, np.float64),
        run_s=1.0,
    )


def contender(name: str, test, *, mode: str = "tuned", stt=None, corrupt=None) -> P.Selection:
    """One contender's selection, made the way a study makes it: 3 rates on 2 selection seeds (the middle
    one chosen), then the chosen rate on fresh seeds 1000, 1001, ... whose final test metric is ``test``
    (``mode="one-shot"``: the default rate alone on those seeds). ``corrupt=(field, seed, point)`` puts a
    NaN into the reported runs there."""
    test = np.asarray(test, np.float64)
    seeds = 1000 + np.arange(len(test))
    conf = _records(name, [test], [test], seeds, [1e-2], "confirmation", stt=None if stt is None else [stt])
    if corrupt is not None:
        field, seed, point = corrupt
        arr = np.asarray(getattr(conf, field), np.float64).copy()
        arr[0, seed, point] = np.nan
        conf = dataclasses.replace(conf, **{field: arr})
        conf.diverged_at = np.full((1, len(test)), np.inf)  # as if nothing had flagged it
    if mode == "one-shot":
        return P.select(dataclasses.replace(conf, role="default"), PROBLEM)
    grid = _records(
        name, [[2.0, 2.0], [1.0, 1.0], [3.0, 3.0]], np.ones((3, 2)), [0, 1], [1e-3, 1e-2, 1e-1], "selection"
    )
    return P.select(grid, PROBLEM, confirmation=conf)


def table_ranks(sels, identical=None) -> dict[str, int]:
    """The ranks printed in the problem's table, by contender."""
    text = tables.format_problem(sels, PROBLEM, identical)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-")) + 1
    out = {}
    for line in lines[start:]:
        if not line.strip()[:1].isdigit():
            break
        cells = re.split(r"\s{2,}", line.strip())
        out[cells[1].split(" (= ")[0]] = int(cells[0])
    return out


def table_cells(sels, name: str) -> list[str]:
    """The cells of ``name``'s row of the problem's table."""
    for line in tables.format_problem(sels, PROBLEM).splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 2 and cells[0].isdigit() and cells[1] == name:
            return cells
    raise AssertionError(f"no row for {name}")


def summary_ranks(sels, identical=None) -> dict[str, int]:
    """The ranks of summary.csv, by contender."""
    with tempfile.TemporaryDirectory() as d:
        path = export.write_summary_csv(
            Path(d) / "summary.csv", sels, {PROBLEM.name: {sels[0].mode: identical or {}}}
        )
        rows = list(csv.DictReader(io.StringIO(path.read_text())))
    return {r["contender"]: int(r["rank"]) for r in rows}


def overall_ranks(sels, identical=None) -> dict[str, int]:
    """The per-problem rank column of the overall table."""
    text = tables.format_overall(sels, identical, n_boot=50)
    lines = text.splitlines()
    out = {}
    for line in lines[3:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 5 or not cells[4].isdigit():
            break
        out[cells[0].split(" (= ")[0]] = int(cells[4])
    return out


def every_rank(sels, identical=None) -> list[dict[str, int]]:
    """The ranks each output of the report shows: the table, summary.csv and the overall table."""
    return [table_ranks(sels, identical), summary_ranks(sels, identical), overall_ranks(sels, identical)]


def _overlap_rank(sels) -> dict[str, int]:
    """The rule the study used before: 1 + the number of contenders whose 95 % interval lies entirely below
    one's own (kept here only to show the cases below were real traps)."""
    out = {}
    for s in sels:
        if not math.isfinite(s.test_mean):
            out[s.contender] = 1 + sum(math.isfinite(o.test_mean) for o in sels)
            continue
        low = s.test_mean - s.test_ci
        out[s.contender] = 1 + sum(
            1 for o in sels if o is not s and math.isfinite(o.test_mean) and o.test_mean + o.test_ci < low
        )
    return out


# --------------------------------------------------------------------------- the referee's cases
STABLE = [3.55, 3.60, 3.70, 3.52, 3.68]  # 3.61 ± 0.09
UNSTABLE = [3.0, 3.0, 3.0, 3.0, 30.0]  # mean 8.4, interval [-6.6, 23.4]


def test_unstable_contender_does_not_rank_above_a_stable_better_one():
    stable = contender("stable", STABLE)
    assert round(stable.test_mean, 2) == 3.61 and stable.test_ci == pytest.approx(0.09, abs=0.01)
    unstable = contender("unstable", UNSTABLE)
    between = contender(
        "between", np.add(STABLE, [0.30, 0.31, 0.29, 0.30, 0.31])
    )  # 3.91, worse on every seed
    sels = [unstable, stable, between]
    old = _overlap_rank(sels)
    assert old["unstable"] < old["between"]  # the old rule: mean 8.4 ranked above mean 3.91
    for ranks in every_rank(sels):
        assert ranks["stable"] == 1 and ranks["between"] == 2
        assert ranks["unstable"] >= ranks["between"] >= ranks["stable"], ranks  # monotone in the mean


def test_wide_one_shot_result_does_not_tie_for_first_with_a_consistent_one():
    consistent = [7.0, 7.2, 7.1, 7.05, 7.15]
    wide = [10.9, 12.8, 20.5, 61.1, 74.7]
    x = contender("wide", wide, mode="one-shot")
    y = contender("consistent", consistent, mode="one-shot")
    assert tables.fmt_mean_ci(x.test_mean, x.test_ci) == "36 ± 37"
    assert round(y.test_mean, 2) == 7.1 and y.test_ci < 0.1
    # alone, 5 seeds cannot tell them apart (7.1 lies inside the wide interval; the paired test agrees): a
    # shared rank is what the data say, "not shown to differ"
    assert stats.paired_t(wide, consistent).p > 0.05
    assert table_ranks([x, y]) == {"wide": 1, "consistent": 1}
    # with a third contender the pairing tells from the consistent one, the wide one no longer ties for
    # first: its rank is at least that of every contender with a lower mean
    z = contender(
        "close", np.add(consistent, [1.9, 2.0, 1.9, 2.1, 2.0]), mode="one-shot"
    )  # 9.1, worse each seed
    sels = [x, y, z]
    assert _overlap_rank(sels) == {"wide": 1, "consistent": 1, "close": 2}  # the old rule: tied for first
    for ranks in every_rank(sels):
        assert ranks == {"consistent": 1, "close": 2, "wide": 2}, ranks


def test_equal_means_are_not_one_and_two_without_a_significant_difference():
    # the numbers: nadam 2.36 ± 0.41 (noisier) and adam 2.36 ± 0.30 on 10 seeds, nadam's mean a hair
    # above adam's, and a third contender whose interval lies below adam's but overlaps nadam's
    rng = np.random.default_rng(0)
    z = rng.standard_normal(10)
    z = (z - z.mean()) / z.std(ddof=1)
    w = rng.standard_normal(10)
    w = (w - w.mean()) / w.std(ddof=1)
    adam = 2.3600 + 0.4193 * z  # ± 0.30
    nadam = 2.3604 + 0.5731 * w  # ± 0.41
    best = 1.95 + 0.07 * z  # ± 0.05, better than adam on every seed
    sels = [contender("adam", adam), contender("nadam", nadam), contender("best", best)]
    shown = {s.contender: tables.fmt_mean_ci(s.test_mean, s.test_ci) for s in sels}
    assert shown["adam"] == "2.36 ± 0.30" and shown["nadam"] == "2.36 ± 0.41"
    old = _overlap_rank(sels)
    assert (old["nadam"], old["adam"]) == (1, 2)  # the old rule: the noisier one ranked first
    better = stats.significantly_better(np.stack([adam, nadam]))
    assert not better.any()  # adam and nadam: not shown to differ
    for ranks in every_rank(sels):
        # nadam's mean is not below adam's: it never ranks before adam
        assert ranks["nadam"] >= ranks["adam"], ranks
        assert ranks["best"] == 1
    # with nothing significant anywhere, everyone shares rank 1
    flat = [contender("adam", adam), contender("nadam", nadam), contender("best", 2.3 + 0.5 * w)]
    for ranks in every_rank(flat):
        assert set(ranks.values()) == {1}, ranks


@st.composite
def tables_with_an_unstable_contender(draw):
    """A stable contender, one built to be unstable (four seeds near or below the stable one's values, one
    seed far off, so its mean is higher), and up to three others, on 5 seeds."""
    level = draw(st.floats(1.0, 50.0))
    noise = draw(st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=5))
    stable = [level + 0.02 * level * e for e in noise]
    under = draw(st.floats(0.0, 0.1))
    unstable = [v - under * level for v in stable]
    far = draw(st.integers(0, 4))
    unstable[far] = stable[far] + draw(st.floats(1.0, 20.0)) * level
    others = []
    for _ in range(draw(st.integers(1, 3))):
        offset = draw(st.sampled_from([-0.2, -0.05, 0.05, 0.3, 1.0]))  # relative to the stable one
        spread = draw(st.sampled_from([0.0, 0.001, 0.01, 0.1, 1.0]))
        e = draw(st.lists(st.floats(-1.0, 1.0), min_size=5, max_size=5))
        others.append([v + offset * level + spread * level * x for v, x in zip(stable, e, strict=True)])
    return stable, unstable, others


@settings(derandomize=True, max_examples=40, deadline=None)
@given(tables_with_an_unstable_contender(), st.sampled_from(["tuned", "one-shot"]))
def test_unstable_contender_never_outranks_a_stable_better_one(case, mode):
    stable, unstable, others = case
    assert np.mean(unstable) > np.mean(stable)
    sels = [contender("stable", stable, mode=mode), contender("unstable", unstable, mode=mode)]
    sels += [contender(f"other{k}", o, mode=mode) for k, o in enumerate(others)]
    for ranks in every_rank(sels):
        assert ranks["unstable"] >= ranks["stable"], ranks


@settings(derandomize=True, max_examples=25, deadline=None)
@given(
    st.sampled_from(["train_loss", "val", "test"]),
    st.integers(0, 4),
    st.integers(0, 3),
    st.integers(0, 2),
    st.sampled_from(["tuned", "one-shot"]),
)
def test_nan_anywhere_in_a_run_is_reported_as_diverged(field, seed, point, victim, mode):
    values = [[1.0, 1.1, 0.9, 1.0, 1.05], [2.0, 2.1, 1.9, 2.0, 2.05], [1.5, 1.4, 1.6, 1.5, 1.45]]
    names = ["alpha", "beta", "gamma"]
    sels = [
        contender(n, v, mode=mode, corrupt=(field, seed, point) if k == victim else None)
        for k, (n, v) in enumerate(zip(names, values, strict=True))
    ]
    bad = sels[victim]
    assert bad.test[seed] == math.inf and bad.diverged_chosen == 1 and bad.test_mean == math.inf
    assert table_cells(sels, names[victim])[2] == "diverged"
    for ranks in every_rank(sels):
        assert ranks[names[victim]] == 3, ranks  # after every finite one
        assert max(r for n, r in ranks.items() if n != names[victim]) <= 2


# --------------------------------------------------------------------------- what the tables say
def test_table_notes_state_the_interval_and_the_test():
    sels = [contender("a", STABLE), contender("b", UNSTABLE)]
    text = " ".join(tables.format_problem(sels, PROBLEM).split())
    for phrase in (
        "half-width of the 95% Student-t interval of the mean",
        "can reach past the metric's range",
        "paired by seed",
        "Student's paired t-test (two-sided)",
        "Holm's correction over the table's 1 pair(s)",
        "level 5 %",
    ):
        assert phrase in text, phrase


def test_members_share_their_representatives_rank_everywhere():
    rng = np.random.default_rng(5)
    base = rng.normal(5.0, 0.5, 5)
    sels = [
        contender("sgd", base),
        contender("ccsgd", base),
        contender("test", base),
        contender("mid", base + 0.2 + rng.normal(0, 0.01, 5)),
        contender("worst", base + 0.4 + rng.normal(0, 0.01, 5)),
    ]
    ident = {"sgd": ["ccsgd", "test"]}
    assert table_ranks(sels, ident) == {"sgd": 1, "mid": 2, "worst": 3}
    assert summary_ranks(sels, ident) == {"sgd": 1, "ccsgd": 1, "test": 1, "mid": 2, "worst": 3}
    assert overall_ranks(sels, ident) == {"sgd": 1, "mid": 2, "worst": 3}
    # unfolded, the duplicates would count three times against the others
    assert summary_ranks(sels)["worst"] == 5


def test_unpaired_table_is_refused_with_a_reason():
    a = contender("a", STABLE)
    b = dataclasses.replace(contender("b", STABLE), report_seeds=np.arange(5))
    with pytest.raises(ValueError, match="same seeds"):
        tables.format_problem([a, b], PROBLEM)


def test_overall_table_shows_the_bootstrap_interval_and_p_best():
    rng = np.random.default_rng(6)
    by_problem = {}
    for p in ("p1", "p2", "p3"):
        base = rng.normal(5.0, 1.0, 6)
        by_problem[p] = [
            dataclasses.replace(contender(n, base + d + rng.normal(0, 0.05, 6)), problem=p)
            for n, d in (("a", 0.0), ("b", 0.5), ("c", 0.52))
        ]
    text = tables.format_overall(by_problem)
    assert text == tables.format_overall(by_problem)  # reproducible: a fixed seed
    lines = text.splitlines()
    assert "95% bootstrap" in lines[1] and "P(best)" in lines[1]
    rows = {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip()) for line in lines[3:6]}
    assert rows["a"][1] == "1.00" and rows["a"][2] == "[1.00, 1.00]" and rows["a"][3] == "1.00"
    assert float(rows["b"][3]) == float(rows["c"][3]) == 0.0
    assert sum(float(r[3]) for r in rows.values()) == pytest.approx(1.0)
    flat = " ".join(text.split())
    assert "1000 resamples of the report seeds" in flat and "not a calibrated confidence interval" in flat
    assert "numpy seed 0" in flat
    # the one-shot overall table has them too
    shot = {p: [dataclasses.replace(s, mode="one-shot") for s in sels] for p, sels in by_problem.items()}
    report = tables.format_report(
        [], [s for v in by_problem.values() for s in v], [s for v in shot.values() for s in v]
    )
    one_shot = report[report.index("== Overall, one-shot") :]
    assert "P(best)" in one_shot.splitlines()[1]


def test_profile_and_time_to_target_in_the_tables():
    stt_fast = [20, 20, 40, 20, 20]
    stt_slow = [60, 40, np.inf, 60, 80]
    a = contender("a", STABLE, stt=stt_fast)
    b = contender("b", np.add(STABLE, 0.1), stt=stt_slow)
    # the selection grid of ``contender`` never reaches the target: the fastest trial is the chosen rate's
    # confirmation runs only when they are the records selected among (one-shot); here: no time
    assert a.fastest_time == math.inf
    shot_a = contender("a", STABLE, mode="one-shot", stt=stt_fast)
    shot_b = contender("b", np.add(STABLE, 0.1), mode="one-shot", stt=stt_slow)
    assert shot_a.fastest_time == 20 and shot_b.fastest_time == 60
    scores = P.profile_scores({"toy": [shot_a, shot_b]})
    assert scores == {"a": 1.0, "b": pytest.approx((4 - 3) / 3)}
    cells = table_cells([shot_a, shot_b], "b")
    assert cells[5] == "60 (4/5)" and cells[7] == "60"  # steps to target, fastest trial
    ms = shot_b.ms_per_step
    value, unit = cells[6].split()
    assert unit == "ms" and float(value) == pytest.approx(60 * ms, rel=0.05)  # time = steps x ms/step
    assert tables._fmt_seconds(2000, 1.0) == "2.0 s" and tables._fmt_seconds(math.inf, 1.0) == "—"
    del a, b


# --------------------------------------------------------------------------- workloads
def test_recommender_split_is_random():
    from mxopt_jax.compare.problems.ratings import ITEMS, USERS, _data

    a, b = _data(), _data()
    for x, y in zip(a, b, strict=True):
        for u, v in zip(x, y, strict=True):
            np.testing.assert_array_equal(u, v)  # data() stays deterministic
    train_items = np.bincount(a.train[1], minlength=ITEMS)
    train_users = np.bincount(a.train[0], minlength=USERS)
    popular = {k: train_items[split[1]].mean() for k, split in zip(("train", "val", "test"), a, strict=True)}
    active = {k: train_users[split[0]].mean() for k, split in zip(("train", "val", "test"), a, strict=True)}
    # cut in drawing order, the validation and test items had 250 and 232 training ratings on average
    # against 314 for the training pairs' items; a random split makes them alike
    for k in ("val", "test"):
        assert popular[k] == pytest.approx(popular["train"], rel=0.03), popular
        assert active[k] == pytest.approx(active["train"], rel=0.05), active
    pairs = [set((a_.astype(np.int64) * ITEMS + b_).tolist()) for a_, b_, _ in a]
    assert not (pairs[0] & pairs[1]) and not (pairs[0] & pairs[2]) and not (pairs[1] & pairs[2])


def test_workload_docstrings_match_the_code():
    from mxopt_jax.compare.problems import cancer, charlm

    doc = charlm.char_lm.__doc__ or ""
    assert f"context {charlm.CONTEXT}" in doc
    assert f"embeddings {len(charlm.VOCAB)}x{charlm._EMBED}" in doc and f"tanh {charlm._HIDDEN}" in doc
    stated = re.search(r"L2 ([0-9.e+-]+);", cancer.logreg.__doc__ or "")
    assert stated is not None and float(stated.group(1)) == cancer.L2


def test_a_consistent_but_negligible_difference_does_not_separate_ranks():
    """Two implementations of one update that round differently (adam and optax.adam on logreg: 1.5e-7 apart on
    every seed, seed spread 1e-3) are printed alike and must share a rank; a difference of half a seed standard
    deviation, just as consistent, separates them."""
    from mxopt_jax.compare import stats

    rng = np.random.default_rng(0)
    base = 0.0819 + 0.0013 * rng.normal(size=10)
    twins = np.stack([base, base + 1.5e-7])
    assert stats.ranks(twins) == [1, 1]
    assert stats.ranks(twins, min_effect=0.0) == [1, 2]  # significance alone would split them
    apart = np.stack([base, base + 0.5 * base.std(ddof=1)])
    assert stats.ranks(apart) == [1, 2]
    with pytest.raises(ValueError, match="min_effect must be a finite number >= 0"):
        stats.ranks(twins, min_effect=-1)
