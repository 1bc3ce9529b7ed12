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
from mxopt_jax.compare.analysis import analyse, analyse_table
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
        if field == "test":  # the test split is evaluated where a record reads it: the final point
            point = -1
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


def _rows(text: str) -> list[list[str]]:
    """The rows of the first table in ``text``: cells split on runs of 2+ spaces; a table split into parts
    (each under its own header and rule, repeating the contender) joined back, row by row."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("-")]
    out: list[list[str]] = []
    for k, r in enumerate(rules):
        end = rules[k + 1] - 1 if k + 1 < len(rules) else len(lines)
        part = []
        for line in lines[r + 1 : end]:
            if not line.strip() or line.startswith(
                ("This table:", "See ", "power:", "chosen configurations")
            ):
                break
            part.append(re.split(r"\s{2,}", line.strip()))
        if k == 0:
            out = [row for row in part if row[0][:1].isdigit()]
            if len(out) < len(part):
                break  # the first table ended: what follows is another
        elif len(part) == len(out) and all(row[0] == o[2] for row, o in zip(part, out, strict=True)):
            out = [o + row[1:] for o, row in zip(out, part, strict=True)]  # the same rows, more columns
        else:
            break
    return out


def table_ranks(sels, identical=None) -> dict[str, str]:
    """The rank sets printed in the problem's table, by contender."""
    return {
        r[2].split(" (= ")[0]: r[0]
        for r in _rows(tables.format_problem(analyse_table(sels, identical), PROBLEM))
    }


def table_groups(sels, identical=None) -> dict[str, str]:
    """The letters printed in the problem's table, by contender."""
    return {
        r[2].split(" (= ")[0]: r[1]
        for r in _rows(tables.format_problem(analyse_table(sels, identical), PROBLEM))
    }


def table_cells(sels, name: str) -> list[str]:
    """The cells of ``name``'s row of the problem's table."""
    for r in _rows(tables.format_problem(analyse_table(sels), PROBLEM)):
        if r[2] == name:
            return r
    raise AssertionError(f"no row for {name}")


def summary_rows(sels, identical=None) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as d:
        path = export.write_summary_csv(Path(d) / "summary.csv", [analyse_table(sels, identical)])
        return list(csv.DictReader(io.StringIO(path.read_text())))


def summary_ranks(sels, identical=None) -> dict[str, str]:
    """The rank sets of summary.csv (``rank``, ``rank_high``), by contender."""
    out = {}
    for r in summary_rows(sels, identical):
        lo, hi = r["rank"], r["rank_high"]
        out[r["contender"]] = lo if lo == hi else f"{lo}-{hi}"
    return out


def overall_ranks(sels, identical=None) -> dict[str, str]:
    """The per-problem rank sets of the overall table (the problem's column, wherever the interval and P(best)
    are shown or left out)."""
    text = tables.format_overall(analyse(sels, identical=identical).rankings[sels[0].mode])
    lines = text.splitlines()
    head = re.split(r"\s{2,}", lines[1].strip())
    k = head.index(sels[0].problem)
    return {r[0].split(" (= ")[0]: r[k] for r in (re.split(r"\s{2,}", x.strip()) for x in lines[3:])
            if len(r) == len(head) and r[k][:1].isdigit()}  # fmt: skip


def every_rank(sels, identical=None) -> list[dict[str, str]]:
    """The rank sets each output of the report shows: the table, summary.csv and the overall table."""
    return [table_ranks(sels, identical), summary_ranks(sels, identical), overall_ranks(sels, identical)]


def claims(sels) -> set[tuple[str, str]]:
    """Every (better, worse) the problem's table implies, read from its letters and rank sets: two contenders
    with no letter in common differ, the one whose rank set lies lower (or is shown better) being better."""
    table = P.compare_table(sels)
    out = set()
    for a in table.entries:
        for b in table.entries:
            if a != b and not set(table.letters(a)) & set(table.letters(b)) and table.shown_better(a, b):
                out.add((a, b))
    return out


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
STABLE = [3.55, 3.60, 3.70, 3.52, 3.68, 3.58, 3.63, 3.66, 3.54, 3.64]  # 3.61 ± 0.04
UNSTABLE = [3.0] * 8 + [30.0, 30.0]  # mean 8.4


def test_unstable_contender_is_never_claimed_above_a_stable_better_one():
    stable = contender("stable", STABLE)
    assert round(stable.test_mean, 2) == 3.61
    unstable = contender("unstable", UNSTABLE)
    between = contender("between", np.add(STABLE, 0.3 + 0.01 * np.arange(10)))  # worse on every seed
    sels = [unstable, stable, between]
    old = _overlap_rank(sels)
    assert old["unstable"] < old["between"]  # the old rule: mean 8.4 ranked above mean 3.91
    # stable is shown better than between; unstable (lower on 8 seeds, far worse on 2) is shown nothing
    assert claims(sels) == {("stable", "between")}
    assert table_groups(sels) == {"stable": "a", "unstable": "ab", "between": "b"}
    for ranks in every_rank(sels):
        assert ranks == {"stable": "1-2", "unstable": "1-3", "between": "2-3"}, ranks


def test_wide_one_shot_result_does_not_tie_for_first_with_a_consistent_one():
    consistent = [7.0, 7.2, 7.1, 7.05, 7.15]
    wide = [10.9, 12.8, 20.5, 61.1, 74.7]
    x = contender("wide", wide, mode="one-shot")
    y = contender("consistent", consistent, mode="one-shot")
    assert tables.fmt_mean_ci(x.test_mean, x.test_ci) == "36 ± 37"
    # 5 seeds cannot show anything with an exact test (smallest p-value 2/32): a shared group, and the table
    # says why
    assert table_groups([x, y]) == {"wide": "a", "consistent": "a"}
    text = " ".join(tables.format_problem(analyse_table([x, y]), PROBLEM).split())
    assert "on 5 seeds the signed-rank test's smallest p-value is 2/2^5 = 0.062" in text
    assert "1 pairs need at least 6 report seeds" in text
    # on 10 seeds, worse on every one: shown, and with a third contender the pairing tells from both
    x = contender("wide", wide + [v + 1 for v in wide], mode="one-shot")
    y = contender("consistent", consistent * 2, mode="one-shot")
    z = contender(
        "close", np.add(y.test, 2.0 + 0.01 * np.arange(10)), mode="one-shot"
    )  # 9.1, worse each seed
    sels = [x, y, z]
    assert claims(sels) == {("consistent", "close"), ("consistent", "wide"), ("close", "wide")}
    for ranks in every_rank(sels):
        assert ranks == {"consistent": "1", "close": "2", "wide": "3"}, ranks


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
    assert not stats.significantly_better(
        np.stack([adam, nadam])
    ).any()  # adam and nadam: not shown to differ
    # the table claims nothing about adam against nadam: they share a letter, whatever else was shown
    assert ("nadam", "adam") not in claims(sels) and ("adam", "nadam") not in claims(sels)
    groups = table_groups(sels)
    assert set(groups["adam"]) & set(groups["nadam"])
    assert claims(sels) <= {("best", "adam"), ("best", "nadam")}
    # with nothing shown anywhere, everyone shares one group and the whole rank set
    flat = [contender("adam", adam), contender("nadam", nadam), contender("best", 2.3 + 0.5 * w)]
    for ranks in every_rank(flat):
        assert set(ranks.values()) == {"1-3"}, ranks
    assert set(table_groups(flat).values()) == {"a"}


@st.composite
def tables_with_an_unstable_contender(draw):
    """A stable contender, one built to be unstable (most seeds near or below the stable one's values, one or
    two seeds far off, so its mean is higher), and up to three others, on 10 seeds."""
    level = draw(st.floats(1.0, 50.0))
    noise = draw(st.lists(st.floats(-1.0, 1.0), min_size=10, max_size=10))
    stable = [level + 0.02 * level * e for e in noise]
    under = draw(st.floats(0.0, 0.1))
    unstable = [v - under * level for v in stable]
    for far in draw(st.lists(st.integers(0, 9), min_size=1, max_size=2, unique=True)):
        unstable[far] = stable[far] + draw(st.floats(1.0, 20.0)) * level
    others = []
    for _ in range(draw(st.integers(1, 3))):
        offset = draw(st.sampled_from([-0.2, -0.05, 0.05, 0.3, 1.0]))  # relative to the stable one
        spread = draw(st.sampled_from([0.0, 0.001, 0.01, 0.1, 1.0]))
        e = draw(st.lists(st.floats(-1.0, 1.0), min_size=10, max_size=10))
        others.append([v + offset * level + spread * level * x for v, x in zip(stable, e, strict=True)])
    return stable, unstable, others


@settings(derandomize=True, max_examples=40, deadline=None)
@given(tables_with_an_unstable_contender(), st.sampled_from(["tuned", "one-shot"]))
def test_unstable_contender_is_never_claimed_better_than_a_stable_one(case, mode):
    # one seed of ten far off (W+ >= 10, p >= 0.084) is enough that no table claims the unstable one better,
    # whatever the others; and every output shows the same rank sets
    stable, unstable, others = case
    assert np.mean(unstable) > np.mean(stable)
    sels = [contender("stable", stable, mode=mode), contender("unstable", unstable, mode=mode)]
    sels += [contender(f"other{k}", o, mode=mode) for k, o in enumerate(others)]
    assert ("unstable", "stable") not in claims(sels)
    table, summary, overall = every_rank(sels)
    assert (
        table
        == summary
        == {k: v for k, v in overall.items()} | {k: v for k, v in table.items() if k not in overall}
    )


@settings(derandomize=True, max_examples=25, deadline=None)
@given(
    st.sampled_from(["train_loss", "val", "test"]),
    st.integers(0, 9),
    st.integers(0, 3),
    st.integers(0, 2),
    st.sampled_from(["tuned", "one-shot"]),
)
def test_a_diverged_report_seed_is_reported_and_ranked_as_a_lost_seed(field, seed, point, victim, mode):
    """Item 4: a NaN anywhere in one reported run is a diverged seed: the table shows the other seeds' mean and
    median, how many report seeds diverged, and ranks the contender as having lost that seed, not as having
    vanished (it ranked last and showed nothing before)."""
    rng = np.random.default_rng(seed)
    values = [
        1.0 + 0.05 * rng.normal(size=10),
        2.0 + 0.05 * rng.normal(size=10),
        1.5 + 0.05 * rng.normal(size=10),
    ]
    names = ["alpha", "beta", "gamma"]
    sels = [
        contender(n, v, mode=mode, corrupt=(field, seed, point) if k == victim else None)
        for k, (n, v) in enumerate(zip(names, values, strict=True))
    ]
    bad = sels[victim]
    assert bad.test[seed] == math.inf and bad.diverged_chosen == 1 and bad.test_mean == math.inf
    cells = table_cells(sels, names[victim])
    finite = np.delete(values[victim], seed)
    assert cells[3] == tables.fmt_mean_ci(finite.mean(), stats.ci_halfwidth(finite)) + " (9/10 finite)"
    assert "diverged" not in cells[4].split("[")[0]  # the median of ten seeds, one diverged: a number
    assert cells[11] == "1/10"  # diverged report seeds
    # alpha < gamma < beta by 0.5 on every seed: shown between the two others; the victim lost one seed, so
    # a contender it beats on the nine others is never shown better than it
    table = P.compare_table(sels)
    order = ["alpha", "gamma", "beta"]
    v = names[victim]
    for i, a in enumerate(order):
        for b in order[i + 1 :]:
            if v not in (a, b):
                assert table.shown_better(a, b)
            if v == a:
                assert not table.shown_better(b, a)
    table_, summary, overall = every_rank(sels)
    assert table_ == summary == overall


# --------------------------------------------------------------------------- what the tables say
def test_table_notes_state_the_interval_and_the_test():
    """What the columns read is said once, in "How to read these tables"; what is particular to the table (its
    pairs, its margin) in its reference line."""
    sels = [contender("a", STABLE), contender("b", UNSTABLE)]
    analysis = analyse(sels)
    guide = " ".join(tables.how_to_read(analysis).split())
    for phrase in (
        "half-width of the 95% Student-t interval of the mean",
        "can reach past the metric's range",
        "median [quartiles]: over every report seed, a diverged seed counting as the worst value",
        "paired by seed",
        "Wilcoxon's signed-rank test (exact, two-sided)",
        "Holm's correction over the table's pairs",
        "level 5 %",
        "two entries that share a letter were not shown to differ",
        "a difference within 0.0001 relative of the value on a seed is treated as none on that seed",
        "the simultaneous rank set [1 + entries shown better, E - entries shown worse]",
        "Report seeds (the chosen rate's report runs): test, median, best val",
        "Selection runs (every rate tried on the selection seeds): fastest trial",
    ):
        assert phrase in guide, phrase
    text = " ".join(tables.format_problem(analyse_table(sels), PROBLEM).split())
    assert 'This table: 1 pair(s), Holm at 5 %; no practical margin. See "How to read these tables"' in text
    assert "power:" not in text  # 10 seeds, one pair: the test can show a difference
    assert "Student-t" not in text  # the explanations are not repeated under the table
    wide = [dataclasses.replace(s, margin=0.25) for s in sels]
    assert "practical margin 0.25 error %" in " ".join(
        tables.format_problem(analyse_table(wide), PROBLEM).split()
    )


def test_members_share_their_representatives_rank_everywhere():
    rng = np.random.default_rng(5)
    base = rng.normal(5.0, 0.5, 10)
    sels = [
        contender("sgd", base),
        contender("ccsgd", base),
        contender("test", base),
        contender("mid", base + 0.2 + rng.normal(0, 0.01, 10)),
        contender("worst", base + 0.4 + rng.normal(0, 0.01, 10)),
    ]
    ident = {"sgd": ["ccsgd", "test"]}
    assert table_ranks(sels, ident) == {"sgd": "1", "mid": "2", "worst": "3"}
    assert summary_ranks(sels, ident) == {"sgd": "1", "ccsgd": "1", "test": "1", "mid": "2", "worst": "3"}
    assert overall_ranks(sels, ident) == {"sgd": "1", "mid": "2", "worst": "3"}
    # unfolded, the duplicates would count three times against the others
    assert summary_ranks(sels)["worst"] == "5"


def test_unpaired_table_is_refused_with_a_reason():
    a = contender("a", STABLE)
    b = dataclasses.replace(contender("b", STABLE), report_seeds=np.arange(10))
    with pytest.raises(ValueError, match="same seeds"):
        tables.format_problem(analyse_table([a, b]), PROBLEM)


def test_overall_table_shows_the_bootstrap_interval_and_p_best():
    """The interval and P(best) are shown from 9 problems on with the report-wide family (issue 40, item 3),
    and left out, with the reason, below that or with a family per table."""
    rng = np.random.default_rng(6)
    by_problem = {}
    for p in [f"p{k}" for k in range(1, 10)]:
        base = rng.normal(5.0, 1.0, 12)
        noise = rng.normal(0, 0.05, 12)
        values = {"a": base + rng.normal(0, 0.05, 12), "b": base + 0.5 + noise, "c": base + 0.5 + noise[::-1]}
        # b - c is antisymmetric over the seeds: W+ is its null mean, p = 1
        by_problem[p] = [dataclasses.replace(contender(n, v), problem=p) for n, v in values.items()]
    every = [s for v in by_problem.values() for s in v]
    three = [s for p in ("p1", "p2", "p3") for s in by_problem[p]]
    short = tables.format_overall(analyse(three, family="report").rankings["tuned"])
    assert "P(best)" not in short.splitlines()[1] and "3 problem(s) cannot support a bootstrap" in " ".join(
        short.split()
    )
    per_table = tables.format_overall(analyse(every).rankings["tuned"])
    assert "P(best)" not in per_table.splitlines()[1] and "run with `--family report`" in " ".join(
        per_table.split()
    )
    text = tables.format_overall(analyse(every, family="report").rankings["tuned"])
    assert text == tables.format_overall(analyse(every, family="report").rankings["tuned"])  # a fixed seed
    lines = text.splitlines()
    assert "95% bootstrap (problems)" in lines[1] and "P(best)" in lines[1]
    rows = {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip()) for line in lines[3:6]}
    # a: shown better than b and c on every problem (rank set 1); b and c: not told apart (2-3, middle 2.5)
    # nine problems: the table prints in two parts (within 120 columns), the problems' rank sets second
    sets = {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip()) for line in lines[8:11]}
    assert lines[6].split()[1:] == [f"p{k}" for k in range(1, 10)]
    assert rows["a"][1:4] == ["1.00", "[1.00, 1.00]", "1.00"] and sets["a"][1:] == ["1"] * 9
    assert rows["b"][1:4] == ["2.50", "[2.50, 2.50]", "0.00"] and sets["c"][1] == "2-3"
    assert sum(float(r[3]) for r in rows.values()) == pytest.approx(1.0)
    flat = " ".join(tables.how_to_read(analyse(every)).split())  # the columns, explained once
    assert "1000 resamples of the problems" in flat and "nothing re-tested" in flat
    assert "numpy seed 0" in flat and "Neither claims a difference that no table's test showed" in flat
    assert "a majority of the selection seeds" in flat and "read from the selection runs" in flat
    # the one-shot overall table has them too
    shot = {p: [dataclasses.replace(s, mode="one-shot") for s in sels] for p, sels in by_problem.items()}
    report = tables.format_report(analyse(every + [s for v in shot.values() for s in v], family="report"))
    one_shot = report[report.index("== Overall, one-shot") :]
    assert "P(best)" in one_shot.splitlines()[1]
    modes = report[report.index("== One-shot (default rate) -> tuned") :]
    assert "1->1" in modes and "2-3->2-3" in modes


def test_profile_and_time_to_target_in_the_tables():
    stt_fast = [20, 20, 40, 20, 20]
    stt_slow = [60, 40, np.inf, 60, 80]
    five = STABLE[:5]
    a = contender("a", five, stt=stt_fast)
    b = contender("b", np.add(five, 0.1), stt=stt_slow)
    # the selection grid of ``contender`` never reaches the target: the fastest trial is the chosen rate's
    # confirmation runs only when they are the records selected among (one-shot); here: no time
    assert a.fastest_time == math.inf
    shot_a = contender("a", five, mode="one-shot", stt=stt_fast)
    shot_b = contender("b", np.add(five, 0.1), mode="one-shot", stt=stt_slow)
    assert shot_a.fastest_time == 20 and shot_b.fastest_time == 60
    scores = P.profile_scores({"toy": [shot_a, shot_b]})
    assert scores == {"a": 1.0, "b": pytest.approx((4 - 3) / 3)}
    cells = table_cells([shot_a, shot_b], "b")
    assert (
        cells[7] == "60 (4/5)" and cells[9] == "60"
    )  # steps to target (3rd of 5: a majority), fastest trial
    ms = shot_b.ms_per_step
    value, unit = cells[8].split()
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
    """Two implementations of one update that round differently (adam and optax.adam on logreg: 2e-6 to 4e-6
    apart relative on every seed, always the same way) are rounding twins and share a group, through the whole
    report path; a difference of half a seed standard deviation, just as consistent, separates them."""
    rng = np.random.default_rng(0)
    base = 0.0819 + 0.0013 * rng.normal(size=10)
    twins = [contender("adam", base), contender("optax.adam", base * (1 + 3e-6))]
    assert stats.wilcoxon(twins[0].test, twins[1].test).p == 2 / 2**10  # the test alone would split them
    for ranks in every_rank(twins):
        assert ranks == {"adam": "1-2", "optax.adam": "1-2"}, ranks
    apart = [contender("adam", base), contender("slower", base + 0.5 * base.std(ddof=1))]
    for ranks in every_rank(apart):
        assert ranks == {"adam": "1", "slower": "2"}, ranks
