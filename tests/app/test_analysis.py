"""The analysis computed once and rendered: a small study's report is byte-for-byte what it was before the
analysis layer (the fixture in ``data/analysis_golden``, written by the code before it: ``make.py`` there)."""

from __future__ import annotations

import json
from pathlib import Path

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
