"""The analysis computed once and rendered: a small study's report is byte-for-byte what it was before the
analysis layer (the fixture in ``data/analysis_golden``, written by the code before it: ``make.py`` there; the
text report and the HTML page re-rendered from the same study.json when their layout changed, their numbers
the same)."""

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


# The confidence half-widths (``val_ci``, ``test_ci``) come from SciPy's Student t quantile, which SciPy 1.10 (the
# floor) computes to about 1e-9 relative and newer SciPy to 1e-15: those fields are held to 1e-8 relative, every
# other field byte for byte.
CI_RTOL = 1e-8


def _same(new, old, key=""):
    if isinstance(old, dict):
        assert isinstance(new, dict) and new.keys() == old.keys(), key
        for k in old:
            _same(new[k], old[k], k)
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), key
        for a, b in zip(new, old, strict=True):
            _same(a, b, key)
    elif key.endswith("_ci") and isinstance(old, float) and isinstance(new, float):
        assert new == pytest.approx(old, rel=CI_RTOL, nan_ok=True), key
    else:
        assert new == old, key


def test_the_summary_csv_is_unchanged(golden, tmp_path):
    import csv

    render.write_study(golden, tmp_path, plots=False, data=False)
    new = list(csv.DictReader((tmp_path / "summary.csv").open(newline="")))
    old = list(csv.DictReader((GOLDEN / "summary.csv").open(newline="")))
    assert len(new) == len(old) and new[0].keys() == old[0].keys()
    for a, b in zip(new, old, strict=True):
        for k in b:
            if k.endswith("_ci") and b[k]:
                _same(float(a[k]), float(b[k]), k)
            else:
                assert a[k] == b[k], k


def test_the_selections_and_the_records_are_unchanged(golden):
    doc = render.study_document(golden)
    _same(json.loads(dumps(doc["selections"])), json.loads((GOLDEN / "selections.json").read_text()))
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
                "configurations" if table.mode == "tuned" else "defaults",  # a study saved before report runs
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
