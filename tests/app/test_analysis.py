"""The analysis computed once and rendered: a small study's report is byte-for-byte what it was before the
analysis layer (the fixture in ``data/analysis_golden``, written by the code before it: ``make.py`` there)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mxopt_jax.compare.report import render
from mxopt_jax.compare.serialize import dumps
from mxopt_jax.compare.study import Study

GOLDEN = Path(__file__).parent / "data" / "analysis_golden"


@pytest.fixture(scope="module")
def golden() -> Study:
    return Study.from_json(GOLDEN / "study.json")


def test_the_text_report_is_unchanged(golden):
    assert render.format_study(golden) + "\n" == (GOLDEN / "report.txt").read_text()


def test_the_summary_csv_is_unchanged(golden, tmp_path):
    path = render.write_study(golden, tmp_path, plots=False, data=False)
    assert (tmp_path / "summary.csv").read_bytes() == (GOLDEN / "summary.csv").read_bytes(), path


def test_the_selections_and_the_records_are_unchanged(golden):
    doc = render.study_document(golden)
    assert dumps(doc["selections"]) + "\n" == (GOLDEN / "selections.json").read_text()
    saved = json.loads((GOLDEN / "study.json").read_text())["records"]
    assert json.loads(dumps(doc["records"])) == saved


def test_the_html_page_is_unchanged(golden):
    assert render.study_html(golden, images={}) == (GOLDEN / "report.html").read_text()


def test_writing_a_study_tests_each_table_once(golden, tmp_path, monkeypatch):
    """The report reads the analysis: writing every file tests each table of each study once (before the
    analysis layer, the text, the HTML page and summary.csv each re-ran every table's tests; summary.csv and
    claims.csv hold every study's tables since issue 40)."""
    from mxopt_jax.compare import protocol
    from mxopt_jax.compare.analysis import study as analysis_study

    fresh = Study.from_json(GOLDEN / "study.json")
    calls = []
    real = protocol.compare_table

    def counted(*args, **kwargs):
        calls.append(args[0][0].problem)
        return real(*args, **kwargs)

    monkeypatch.setattr(analysis_study, "compare_table", counted)
    render.write_study(fresh, tmp_path, plots=False, data=False)
    render.format_study(fresh)
    per_study = len(fresh.analysis.tables)
    assert per_study == 2 * len(fresh.problems)
    assert len(calls) == per_study * len(fresh.studies())
    assert fresh.analysis is fresh.analysis  # computed once, kept


def test_claims_are_the_tables_tests(golden):
    """Each table's claims: every pair of its entries once, with the raw and Holm-adjusted p-values, the
    statistic and the median paired difference the table's tests read; shown exactly where the letters differ."""
    from mxopt_jax.compare import stats

    analysis = golden.analysis
    assert analysis.claims() == [c for t in analysis.all_tables() for c in t.claims]
    for table in analysis.all_tables():
        E = len(table.entries)
        assert len(table.claims) == E * (E - 1) // 2 == table.pairs
        by = {s.contender: s for s in table.selections}
        for c in table.claims:
            assert (c.problem, c.mode, c.about, c.n) == (
                table.problem,
                table.mode,
                "configurations",
                table.seeds,
            )
            assert c.units == tuple(sorted(int(x) for x in by[c.a].report_seeds))
            assert c.p <= c.p_adjusted <= 1.0
            assert c.shown == (c.p_adjusted <= c.level and not c.equal)
            assert c.shown == (not set(table.letters(c.a)) & set(table.letters(c.b)))
            if c.better is not None:
                assert table.shown_better(c.better, c.worse)
            a, b = by[c.a].test, by[c.b].test  # report seeds in the same (ascending) order here
            d = table.direction.orient(a) - table.direction.orient(b)
            if c.test == "wilcoxon" and np.isfinite(d).all() and not table.margin:
                expect = stats.wilcoxon(table.direction.orient(a), table.direction.orient(b))
                assert c.statistic == expect.w_plus and c.p == pytest.approx(expect.p, rel=1e-12)
            if np.isfinite(a - b).all():
                assert c.effect == pytest.approx(float(np.median(a - b)))
    # the higher-is-better problem: a claim's effect is in the raw units (the better one has the larger value)
    acc = [c for c in analysis.table("acc", "tuned").claims if c.better is not None]
    assert acc and all((c.effect > 0) == (c.better == c.a) for c in acc)
