"""Issue 40: claims a researcher can cite. What each table's claims are about, the claims in sentences, the
records behind them (``claims.csv``, ``Study.claims()``, every study in ``summary.csv``), ``agree`` per study,
and the report-wide error control; on the small two-study fixture of ``data/analysis_golden``."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from mxopt_jax.compare import stats
from mxopt_jax.compare.cli import main
from mxopt_jax.compare.report import render
from mxopt_jax.compare.report.agreement import compare_studies
from mxopt_jax.compare.study import Study

GOLDEN = Path(__file__).parent / "data" / "analysis_golden"


@pytest.fixture(scope="module")
def two() -> Study:
    return Study.from_json(GOLDEN / "study.json")


@pytest.fixture(scope="module")
def one(two) -> Study:
    return dataclasses.replace(two, repeats=[])


def test_every_table_says_what_its_claims_are_about(one, two):
    """Finding 2: a single study's claims are about its chosen configurations, and the report says so and how to
    get claims about the optimizers; with --studies the report leads with the claims about the optimizers."""
    text = " ".join(render.format_study(one).split())
    assert text.startswith(
        "== Verdict: which optimizer could be the best on each problem At the configurations"
    )
    assert "Claims in this report are about the configurations this study chose" in text
    assert "mxopt-jax compare --studies N" in text
    tuned = len(one.analysis.tables_of("tuned"))
    assert text.count("claims (about the configurations this study chose") == tuned
    assert text.count("claims (about the default configurations") == len(one.analysis.tables) - tuned
    both = " ".join(render.format_study(two).split())
    assert both.index("Claims about the optimizers, over 2 independent tunings") < both.index(
        "== digits [tuned]"
    )
    tuned_across = [a for a in two.analysis.across if a.mode == "tuned"]
    assert both.count("claims (about the optimizers, over 2 independent tunings)") == len(tuned_across)
    # nothing is tuned in the one-shot mode: its tables across studies speak of the default configurations
    assert both.count("claims (about the default configurations, over 2 independent studies)") == len(
        two.analysis.across
    ) - len(tuned_across)
    assert "2 studies cannot support any claim about the default configurations in a table of 4" in both
    # 2 studies cannot support any claim in a 4-entry table: the report says so and names the studies needed
    assert "2 studies cannot support any claim about the optimizers in a table of 4 entries" in both
    assert "it needs at least 8 studies (--studies 8)" in both
    html = render.study_html(two, images={})
    assert "<h2>Claims</h2>" in html and "Claims about the optimizers, over 2 independent tunings" in html


def test_claims_in_sentences_under_each_table(one):
    """Finding 7: the claims in sentences (the median paired difference, its interval, p_adj, the seeds that
    went the claim's way), and "no difference shown among the E entries" where none was."""
    table = one.analysis.table("digits", "tuned")
    shown = table.shown_claims()
    assert shown
    c = shown[0]
    sentence = c.sentence("error %")
    assert sentence.startswith(  # a study saved before the report runs: about the chosen configurations
        f"{c.better} is better than {c.worse} at their chosen rates on digits (median paired difference "
    )
    assert f"p_adj {c.p_adjusted:.2g}" in sentence and f"{c.agree} of 12 seeds" in sentence
    assert "% interval" in sentence and "error %" in sentence
    text = " ".join(render.format_study(one).split())  # the report wraps its lines at 120 columns
    assert " ".join(sentence.split()) in text
    html = " ".join(render.study_html(one, images={}).replace("&#x27;", "'").split())
    assert " ".join(sentence.split()) in html
    # a table with no claim says so
    none = dataclasses.replace(table, claims=tuple(dataclasses.replace(x, better=None) for x in table.claims))
    from mxopt_jax.compare.report.tables import claims_sentences

    assert claims_sentences(none, "error %").endswith("no difference shown among the 4 entries.")


def test_claims_csv_and_frame_hold_every_tested_pair(two, tmp_path):
    """Finding 6: per table and pair the test, statistic, p, Holm-adjusted p, the effect (median paired
    difference, Hodges-Lehmann) with its interval, the seeds or studies used, what the claim is about; every
    study's tables and the tables across them."""
    render.write_study(two, tmp_path, plots=False, data=False)
    rows = list(csv.DictReader((tmp_path / "claims.csv").open()))
    studies = {r["study"] for r in rows}
    assert studies == {"0", "1", "all"}
    per_table = 6  # 4 entries
    assert len(rows) == per_table * (2 * len(two.analysis.tables) + len(two.analysis.across))
    table = two.analysis.table("digits", "tuned")
    cmp = table.comparison.comparison
    i, j = 0, 1
    a, b = table.entries[i], table.entries[j]
    row = next(
        r
        for r in rows
        if (r["study"], r["problem"], r["mode"], r["a"], r["b"]) == ("0", "digits", "tuned", a, b)
    )
    assert float(row["p"]) == pytest.approx(cmp.p[i, j]) and float(row["p_adjusted"]) == pytest.approx(
        cmp.p_adjusted[i, j]
    )
    assert float(row["statistic"]) == pytest.approx(cmp.statistic[i, j]) and row["test"] == "wilcoxon"
    sel = {s.contender: s for s in table.selections}
    d = stats.differences(sel[a].test, sel[b].test)
    size = stats.effect(d)
    assert float(row["effect"]) == pytest.approx(np.median(d))
    assert (float(row["ci_low"]), float(row["ci_high"])) == pytest.approx((size.low, size.high))
    assert float(row["hodges_lehmann"]) == pytest.approx(size.estimate)
    assert row["n"] == "12" and row["units"].split()[0] == "1000" and row["family"] == "6"
    assert row["about"] == "the configurations this study chose"
    across = [r for r in rows if r["study"] == "all"]
    assert {r["about"] for r in across if r["mode"] == "tuned"} == {
        "the optimizers, over 2 independent tunings"
    }
    # nothing was tuned in the one-shot mode: its across-studies claims are about the default configurations
    assert {r["about"] for r in across if r["mode"] == "one-shot"} == {
        "the default configurations, over 2 independent studies"
    }
    assert {r["about"] for r in rows if r["study"] == "0" and r["mode"] == "one-shot"} == {
        "the default configurations"
    }
    assert all(r["n"] == "2" and r["shown"] == "false" and float(r["p"]) >= 0.5 for r in across)
    frame = two.claims()
    assert list(frame.columns)[:3] == ["study", "problem", "mode"] and len(frame) == len(rows)


def test_summary_holds_every_study(two, tmp_path):
    """Finding 6: summary.csv and to_pandas() held study 0 only; now every study, with a study column."""
    render.write_study(two, tmp_path, plots=False, data=False)
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert {r["study"] for r in rows} == {"0", "1"}
    assert len(rows) == 2 * sum(len(t.selections) for t in two.analysis.all_tables())
    seeds = {
        r["study"]: r["report_seeds"]
        for r in rows
        if (r["problem"], r["contender"], r["mode"]) == ("digits", "adam", "tuned")
    }
    assert seeds["0"] != seeds["1"]  # each study its own confirmation seeds
    summary = two.to_pandas().summary
    assert sorted(summary["study"].unique()) == [0, 1]


def test_agree_names_and_picks_the_studies_and_warns_on_shared_seeds(capsys):
    """Finding 6: agree compared the first study of each folder silently (tau 1.00 for two folders whose first
    studies ran on the same seeds); now it names the studies, picks them, and warns when they share seeds."""
    same = compare_studies(GOLDEN, GOLDEN)
    assert same.shared_seeds and "warning: A and B share" in str(same)
    assert "study 1 of 2" in same.a  # numbered as the report numbers them (issue 53)
    other = compare_studies(GOLDEN, GOLDEN, study_b=2)
    assert not other.shared_seeds and "study 2 of 2" in other.b and "warning" not in str(other)
    with pytest.raises(ValueError, match=r"holds 2 independent studies \(numbered 1 to 2"):
        compare_studies(GOLDEN, GOLDEN, study_a=3)
    assert main(["agree", str(GOLDEN), str(GOLDEN), "--study-b", "2"]) == 0
    out = capsys.readouterr().out
    assert "study 2 of 2" in out and "warning" not in out


def test_report_wide_family_and_the_overall_ranking(two, tmp_path, capsys):
    """Finding 3: the report offers report-wide control (every table one Holm family), and the overall ranking's
    interval and P(best) are left out, with the reason, below 9 problems or with a family per table."""
    text = render.format_study(two)
    assert "P(best)" not in text.split("== Overall")[1].split("\n")[1]  # the header row
    assert (
        "The interval and P(best) are omitted: 3 problem(s) cannot support a bootstrap over problems"
        in " ".join(text.split())
    )
    wide = Study.from_json(GOLDEN / "study.json").with_family("report")
    tables = wide.analysis.all_tables()
    # the report's whole family: every table's pairs and every pair of the tables across the studies
    total = sum(t.pairs for t in tables) + sum(a.pairs for a in wide.analysis.across)
    assert total == 6 * 6 + 6 * 6 and all(t.comparison.comparison.family == total for t in tables)
    assert all(a.family == total for a in wide.analysis.across)
    assert all(c.family == total for c in wide.analysis.across_claims())
    # the table's note says the family its claims were corrected in (not the table's 6 pairs)
    assert f"Holm at 5 % over the report's {total} tests" in " ".join(render.format_study(wide).split())
    per = {(t.problem, t.mode): t for t in two.analysis.all_tables()}
    for t in tables:  # never a claim the table alone did not make
        assert not (
            t.comparison.comparison.better & ~per[(t.problem, t.mode)].comparison.comparison.better
        ).any()
    assert main(["report", str(GOLDEN), "--out", str(tmp_path), "--no-plots", "--family", "report"]) == 0
    capsys.readouterr()
    assert f'"family": "{total}"' not in (tmp_path / "claims.csv").read_text()
    assert {
        r["family"] for r in csv.DictReader((tmp_path / "claims.csv").open()) if r["study"] in ("0", "all")
    } == {str(total)}
    with pytest.raises(ValueError, match="family must be one of"):
        Study.from_json(GOLDEN / "study.json").with_family("everything")
