"""Writes this folder: a small study (three synthetic problems, one higher-is-better with a practical margin;
five contenders, ccsgd's runs made identical to sgd's; two independent studies, 12 confirmation seeds) and its
report, summary CSV, selections and HTML page, as the code before the analysis layer rendered them; the text
report and the HTML page were rendered again, on purpose, from the same study.json when their layout changed
(issue 44: tables within 120 columns, "How to read these tables", the HTML in the text's order; issue 53: the
sentence on the omitted bootstrap interval, the page's width for figures beside tables): their numbers are the
same.

Run from the repository root: ``python tests/app/data/analysis_golden/make.py`` (only to remake the fixture
on purpose: ``tests/app/test_analysis.py`` holds the code to these files)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from pathlib import Path

sys.path[:0] = ["tests/app", "."]

import test_outputs as T  # noqa: E402

from mxopt_jax.compare.report import export, render  # noqa: E402
from mxopt_jax.compare.serialize import dumps  # noqa: E402
from mxopt_jax.compare.study import Study  # noqa: E402

out = Path("tests/app/data/analysis_golden")
T.BEHAVIOUR["ccsgd"] = T.BEHAVIOUR["sgd"]
problems = [
    T._problem("digits", "digits, MLP", "error %", 4.0, every=50),
    T._problem("logreg", "logistic regression", "log-loss", 0.15, every=50),
    dataclasses.replace(
        T._problem("acc", "accuracy task", "accuracy %", 60.0, every=50), better="higher", margin=0.5
    ),
]
# T.synthetic_study with 12 confirmation seeds (6 separate nothing in a table of 4 entries)
code = inspect.getsource(T.synthetic_study)
code = code.replace("range(1000, 1006)", "range(1000, 1012)").replace("confirm_seeds=6", "confirm_seeds=12")
ns = dict(vars(T))
exec(code, ns)
study = ns["synthetic_study"](
    names=("adam", "sgd", "ccsgd", "ftml", "optax.adam"), problems=problems, studies=2
)
render.write_study(study, "/tmp/analysis_golden", plots=False)
doc = json.loads(Path("/tmp/analysis_golden/study.json").read_text())
# ccsgd: the same runs as sgd (identical contenders fold into one entry)
by = {(r["problem"], r["study"], r["role"], r["contender"]): r for r in doc["records"]}
for r in doc["records"]:
    if r["contender"] == "ccsgd":
        src = by[(r["problem"], r["study"], r["role"], "sgd")]
        r.update({k: v for k, v in src.items() if k not in ("contender", "program")})
# and sgd's default rate, which its runs now centre on (a study's records are checked against its plan on reloading)
doc["meta"]["contenders"]["ccsgd"]["hyperparameters"][0] = doc["meta"]["contenders"]["sgd"][
    "hyperparameters"
][0]
doc.pop("versions", None)  # the environment's versions are not part of the fixture
doc.pop("selections", None)  # made again from the records on reloading
(out / "study.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")
again = Study.from_json(out / "study.json")
(out / "report.txt").write_text(render.format_study(again) + "\n")
export.write_summary_csv(
    out / "summary.csv", again.selections() + again.selections("one-shot"), again.identical_by_problem()
)
(out / "selections.json").write_text(dumps(render.study_document(again)["selections"]) + "\n")
(out / "report.html").write_text(render.study_html(again, images={}))
