"""A study folder from a stranger (issue 51, items 1-7): ``mxopt-jax report DIR``, ``mxopt-jax agree A B`` and a
resumed study read folders other people wrote. Nothing planted in one redirects a write (links at an output's
name, at the temporary names, a linked ``programs/``), puts a formula in a spreadsheet, reaches the terminal
raw, tells a second story (stored selections against the records), ends in a traceback (malformed files) or
slips edited records into a resume; and ``agree`` numbers the studies as the report does and says what its tau
can show. Nothing here trains: synthetic studies (``test_outputs.synthetic_study``), seconds."""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from mxopt_jax import compare
from mxopt_jax.compare import checks, cli
from mxopt_jax.compare.problems.base import Problem
from mxopt_jax.compare.report import render
from mxopt_jax.compare.result import ProgramResult
from mxopt_jax.compare.serialize import contender_info, problem_info
from mxopt_jax.compare.store import ResumeError, Store, open_folder, program_key, spec
from mxopt_jax.compare.study import Study

sys.path.insert(0, os.path.dirname(__file__))
from test_outputs import synthetic_study  # noqa: E402

#: What a terminal acts on: OSC 52 (write the clipboard), a window title (OSC 0), clear the screen (CSI 2J).
ESCAPES = ("\x1b]52;c;ZWNobyBwd25lZA==\x07", "\x1b]0;owned\x07", "\x1b[2J\x1b[H")


@pytest.fixture(scope="module")
def study() -> Study:
    return synthetic_study()


@pytest.fixture(scope="module")
def saved(study, tmp_path_factory) -> Path:
    """A study's folder as ``mxopt-jax compare`` leaves it (no plots: drawn in one test only)."""
    out = tmp_path_factory.mktemp("saved")
    study.write(out, plots=False)
    return out


def _copy(saved: Path, to: Path) -> Path:
    shutil.copytree(saved, to)
    return to


def _doc(folder: Path) -> dict:
    return json.loads((folder / "study.json").read_text())


def _put(folder: Path, doc) -> None:
    (folder / "study.json").write_text(json.dumps(doc))


def _renamed(value, old: str, new: str):
    """``value`` (a JSON document) with every string and key equal to ``old`` made ``new``."""
    if isinstance(value, dict):
        return {(new if k == old else k): _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return new if value == old else value


def _run(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- 1, 2: a planted link redirects nothing
OUTPUTS = ("report.txt", "report.html", "runs.csv", "summary.csv", "claims.csv")


def test_report_replaces_links_planted_at_its_outputs_and_writes_nothing_through_them(
    saved, tmp_path, capsys
):
    """Item 1: an output that is a link to an outside file (``runs.csv`` was left so, a stale link beside the new
    report): every output replaces its link, and the outside file is as it was."""
    folder = _copy(saved, tmp_path / "shared")
    victim = tmp_path / "victim.txt"
    victim.write_text("the reader's own file")
    for name in OUTPUTS:
        (folder / name).unlink()
        (folder / name).symlink_to(victim)
    code, _, err = _run(["report", str(folder), "--no-plots"], capsys)
    assert code == 0, err
    assert victim.read_text() == "the reader's own file"
    assert not [n for n in OUTPUTS if (folder / n).is_symlink() or not (folder / n).stat().st_size]


def test_links_planted_at_the_temporary_names_are_never_opened(saved, tmp_path, capsys):
    """Item 1: every temporary file was ``.NAME.<pid>.tmp``, opened with ``open('w')`` (following a link): links
    planted for the next 400 process ids redirected the report. Now the temporary names are random and created
    exclusively: a link at any name is never opened."""
    folder = _copy(saved, tmp_path / "shared")
    victim = tmp_path / "victim.txt"
    victim.write_text("the reader's own file")
    pid = os.getpid()
    for name in (*OUTPUTS, "study.json"):
        for p in range(pid - 5, pid + 400):
            (folder / f".{name}.{p}.tmp").symlink_to(victim)
    code, _, err = _run(["report", str(folder), "--no-plots"], capsys)
    assert code == 0, err
    assert victim.read_text() == "the reader's own file"
    assert all((folder / n).is_file() and not (folder / n).is_symlink() for n in OUTPUTS)


def test_every_writer_goes_through_the_one_safe_writer(study, tmp_path):
    """Item 1, every writer: the text and HTML reports, the CSV files, study.json, the PNG figures, spec.json and
    the programs, each with a link planted at its name: each output replaces the link, none writes through."""
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    figures = [
        "results_digits.png",
        "results_logreg.png",
        "ranks.png",
        "sensitivity.png",
        "curves.png",
        "loss.png",
    ]
    names = [*OUTPUTS, "study.json", *figures, "profile.png", "spec.json"]
    for name in names:  # at the output's name and at the temporary name this process would once have used
        (out / name).symlink_to(victim)
        (out / f".{name}.{os.getpid()}.tmp").symlink_to(victim)
    written = render.write_study(study, out, plots=True)
    store = Store(out)
    store.write_spec({"format": "x"})
    assert {p.name for p in written} | {"spec.json"} == set(names)
    assert victim.read_text() == "keep"
    assert not [n for n in names if (out / n).is_symlink()]
    # a program's file, and the tour's CSV writer: the same writer
    (out / "programs").mkdir()
    for name in ("p__f.json", f".p__f.json.{os.getpid()}.tmp"):
        (out / "programs" / name).symlink_to(victim)
    store.write_program("p__f", _program(study), 1.0)
    from mxopt_jax.compare.tour.results import write_csv as tour_csv

    for name in ("tour.csv", f".tour.csv.{os.getpid()}.tmp"):
        (out / name).symlink_to(victim)
    tour_csv(out / "tour.csv", {})
    assert victim.read_text() == "keep" and not (out / "tour.csv").is_symlink()


def _program(study: Study) -> ProgramResult:
    info = study.programs[0]
    records = [
        r for r in study.all_records() if r.problem == info["problem"] and r.contender in info["contenders"]
    ]
    return ProgramResult.from_saved(info, records, {n: 0.0 for n in info["contenders"]})


def test_a_linked_programs_folder_is_refused_and_nothing_written_through_it(study, tmp_path):
    """Item 2: ``--resume`` wrote a program's records through a ``programs/`` that was a link to an outside
    folder. Now a linked ``programs/`` is refused when the folder is opened, and a write refuses it too."""
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "spec.json").write_text("{}")
    (folder / "programs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ResumeError, match="programs' is a link"):
        open_folder(folder, resume=True)
    with pytest.raises(OSError, match="'programs' is a link"):
        Store(folder).write_program("p__f", _program(study), 1.0)
    assert list(outside.iterdir()) == []
    (folder / "programs").unlink()
    (folder / "programs").write_text("a file where a folder belongs")
    with pytest.raises(OSError, match="'programs' is not a folder"):
        Store(folder).write_program("p__f", _program(study), 1.0)


def test_only_regular_files_are_read(saved, tmp_path, capsys):
    """A study.json that is a device or a FIFO (a read that never returns; ``/dev/zero``, one that never ends) is
    refused unread, in one line. (A FIFO read that hung would be cut short by an alarm: this test cannot hang.)"""
    import signal

    folder = _copy(saved, tmp_path / "shared")
    (folder / "study.json").unlink()
    (folder / "study.json").symlink_to("/dev/null")  # a device that is safe to read, if it were read
    with pytest.raises(ValueError, match="not a regular file"):
        Study.from_json(folder / "study.json")
    (folder / "study.json").unlink()
    os.mkfifo(folder / "study.json")

    def hung(*args):
        raise TimeoutError("the FIFO was opened and read: it never returns")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with pytest.raises(ValueError, match="not a regular file"):
            Study.from_json(folder / "study.json")
        for argv in (["report", str(folder)], ["agree", str(folder), str(saved)]):
            code, _, err = _run(argv, capsys)
            assert code == 2 and len(err.strip().splitlines()) == 1, err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- 3: formula injection
FORMULA = '=HYPERLINK("http://example.com/x","open")'


def _with_name(saved: Path, to: Path, old: str, new: str) -> Path:
    folder = _copy(saved, to)
    _put(folder, _renamed(_doc(folder), old, new))
    return folder


def test_no_csv_cell_is_a_formula_and_numbers_stay_numbers(saved, tmp_path, capsys):
    """Item 3: a contender named ``=HYPERLINK(...)`` was written verbatim at the start of thousands of cells of
    summary.csv, claims.csv and runs.csv. Now every text cell starting with ``= + - @``, a tab or a carriage
    return is prefixed with ``'`` (OWASP); numbers, negative ones included, are written as numbers; the
    DataFrames keep the name as it is."""
    folder = _with_name(saved, tmp_path / "shared", "adam", FORMULA)
    code, _, err = _run(["report", str(folder), "--no-plots"], capsys)
    assert code == 0, err
    negative = 0
    for name in ("runs.csv", "summary.csv", "claims.csv"):
        with (folder / name).open(newline="") as f:
            cells = [c for row in csv.reader(f) for c in row]
        assert "'" + FORMULA in cells, name
        for c in cells:
            if c.startswith(("=", "+", "-", "@", "\t", "\r")):
                float(c)  # a number, such as -0.0085: never a formula
                negative += 1
    assert negative  # the numbers that start with '-' were left numbers
    back = Study.from_json(folder / "study.json")
    runs, summary = back.to_pandas()
    assert FORMULA in set(runs["contender"]) and FORMULA in set(summary["contender"])
    claims = back.claims()
    assert FORMULA in set(claims["a"]) | set(claims["b"])
    assert any(s.startswith(FORMULA) for s in claims["sentence"])


def test_a_text_cell_comes_back_as_it_was():
    from mxopt_jax.compare.serialize import csv_text, csv_untext

    for text in ("adam", "=1+1", "+x", "-y", "@z", "\tq", "'quoted", "''", ""):
        assert csv_untext(csv_text(text)) == text
    assert csv_text("=1+1") == "'=1+1" and csv_text("optax.adam") == "optax.adam"


# --------------------------------------------------------------------------- 4: terminal escapes
@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("a contender's name", lambda doc: _renamed(doc, "sgd", "sgd" + ESCAPES[0])),
        ("a problem's title", lambda doc: _titled(doc, "digits, MLP" + ESCAPES[1])),
        ("the preset's name", lambda doc: _preset_named(doc, "quick" + ESCAPES[2])),
        ("a setting's value", lambda doc: _setting(doc, "momentum", ESCAPES[0])),
    ],
)
def test_nothing_from_a_folder_reaches_the_terminal_raw(where, edit, saved, tmp_path, capsys):
    """Item 4: OSC-52, window-title and clear-screen sequences in a contender's name, a problem's title or the
    preset were printed raw by ``report`` (84 bytes) and ``agree`` (7). Now such a folder is refused in one line
    naming the field, and nothing printed holds a control character."""
    folder = _copy(saved, tmp_path / "shared")
    _put(folder, edit(_doc(folder)))
    for argv in (["report", str(folder), "--no-plots"], ["agree", str(folder), str(saved)]):
        code, out, err = _run(argv, capsys)
        assert code == 2, (where, argv[0], out[-500:], err)
        assert len(err.strip().splitlines()) == 1 and "study.json" in err and "printable" in err, err
        assert not any(c in out + err for c in "\x1b\x07\x9b\x9d"), (where, argv[0])


def _titled(doc, title):
    doc["meta"]["problems"]["digits"]["title"] = title
    return doc


def _preset_named(doc, name):
    doc["meta"]["plan"]["preset"]["name"] = name
    return doc


def _setting(doc, key, value):
    doc["meta"]["contenders"]["sgd"]["settings"][key] = value
    return doc


def test_a_dollar_in_a_name_is_a_dollar_in_the_figures(tmp_path, capsys):
    """A contender named ``$\\foo{$`` (printable text) was mathtext to matplotlib, whose parser raised: the report
    of such a folder ended in a traceback once it drew the figures. The figures now take every text as it is."""
    pytest.importorskip("matplotlib")
    from test_outputs import _problem

    small = synthetic_study(
        names=("adam", "sgd"), problems=[_problem("digits", "digits, MLP", "error %", 4.0)]
    )
    small.write(tmp_path, plots=False)
    _put(tmp_path, _renamed(_doc(tmp_path), "adam", "$\\foo{$"))
    code, _, err = _run(["report", str(tmp_path)], capsys)
    assert code == 0, err
    assert (tmp_path / "curves.png").stat().st_size > 1000 and "$\\foo{$" in (
        tmp_path / "report.html"
    ).read_text()


def test_names_made_in_python_are_checked_where_they_are_made():
    with pytest.raises(ValueError, match=r"Contender name must be printable text.*\\x1b"):
        compare.contender("adam" + ESCAPES[0], lambda lr: None, default_lr=1e-3)
    p = synthetic_study().problems[0]
    with pytest.raises(ValueError, match=r"`title` must be printable text"):
        dataclasses.replace(p, title="digits" + ESCAPES[1])
    assert isinstance(dataclasses.replace(p, description="two\nlines"), Problem)  # a description may wrap


def test_what_the_command_line_prints_is_escaped(saved, tmp_path, capsys):
    """The command line prints through one escape (``checks.terminal``): a folder's own name (the user's, on the
    command line) with an escape in it is printed escaped, not raw."""
    odd = _copy(saved, tmp_path / ("odd" + ESCAPES[2]))
    code, out, err = _run(["agree", str(odd), str(saved)], capsys)
    assert code == 0, err
    assert "\x1b" not in out and "\\x1b[2J" in out
    assert checks.terminal("a\x1b]0;t\x07b\nc\u202e") == "a\\x1b]0;t\\x07b\nc\\u202e"


# --------------------------------------------------------------------------- 5: one truth, checked
def test_report_and_agree_refuse_selections_that_are_not_the_records(saved, tmp_path, capsys):
    """Item 5: ``agree`` trusted the stored selections while ``report`` recomputed from the records: with the
    selections permuted, agree gave another tau and top three, silently. Now both read the records, and stored
    selections that disagree with them are refused in one line."""
    folder = _copy(saved, tmp_path / "shared")
    doc = _doc(folder)
    tuned = [i for i, s in enumerate(doc["selections"]) if s["mode"] == "tuned" and s["problem"] == "digits"]
    names = [doc["selections"][i]["contender"] for i in tuned]
    for i, name in zip(
        tuned, names[1:] + names[:1], strict=True
    ):  # each contender's numbers given to another
        doc["selections"][i]["contender"] = name
    _put(folder, doc)
    for argv in (["report", str(folder), "--no-plots"], ["agree", str(folder), str(saved)]):
        code, out, err = _run(argv, capsys)
        assert code == 2 and out == "", (argv[0], err)
        assert len(err.strip().splitlines()) == 1 and "selections[" in err and "records" in err, err
    # without the stored selections, the records are the one truth: agree with itself is the same order
    doc.pop("selections")
    _put(folder, doc)
    agreement = compare.compare_studies(folder, saved)
    assert all(w.tau == 1.0 and w.top_a == w.top_b for w in agreement.problems)


def test_agree_numbers_the_studies_as_the_report_and_says_what_tau_can_show(saved, capsys):
    """Issue 53 item 8: studies were "1 of 3" in the report and "study 0 of 3" in agree; with 4 contenders agree
    printed tau +-1 without saying how little that is."""
    code, out, err = _run(["agree", str(saved), str(saved)], capsys)
    assert code == 0, err
    assert "study 1 of 1" in out and "study 0" not in out
    text = " ".join(out.split())
    assert "tau over 4 contenders: 24 possible orders" in text
    assert "even the same order (tau = +1) has p = 0.083" in text and "cannot show" in text
    assert "p" in out.splitlines()[2].split()  # a p-value column
    code, _, err = _run(["agree", str(saved), str(saved), "--study-b", "2"], capsys)
    assert code == 2 and "holds 1 independent study (numbered 1 to 1" in err


# --------------------------------------------------------------------------- 6: malformed study.json
def _records0(doc, key, value):
    doc["records"][0][key] = value
    return doc


def _meta(doc, path, value):
    at = doc["meta"]
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return doc


def _drop(doc, key):
    doc.pop(key)
    return doc


#: Malformed variants of a study.json: (name, the file's text from the document, what the error names).
MALFORMED = {
    "not JSON": (lambda d: "{", "not a JSON file"),
    "not UTF-8": (lambda d: b"\xff\xfe{}", "not a JSON file"),
    "nested too deep": (lambda d: "[" * 100_000 + "]" * 100_000, "nested deeper"),
    "an integer of 5000 digits": (
        lambda d: json.dumps(d).replace('"steps": 400', '"steps": ' + "9" * 5000),
        "JSON",
    ),
    "a list": (lambda d: [], "not a study's JSON"),
    "no format": (lambda d: _drop(d, "format"), "written as None"),
    "meta a list": (lambda d: {**d, "meta": []}, "meta: must be a JSON object"),
    "no plan": (lambda d: _meta(d, ["plan"], None) and _drop(d["meta"], "plan") and d, "meta.plan: missing"),
    "seeds a string": (lambda d: _meta(d, ["plan", "seeds"], "abc"), "meta.plan"),
    "a huge grid": (lambda d: _meta(d, ["plan", "preset", "grid_points"], 10**12), "grid_points"),
    "preset a list": (lambda d: _meta(d, ["plan", "preset"], [1]), "meta.plan.preset"),
    "problems a list": (lambda d: _meta(d, ["problems"], []), "meta.problems: must be a JSON object"),
    "steps a word": (
        lambda d: _meta(d, ["problems", "digits", "steps"], "many"),
        "meta.problems.digits.steps",
    ),
    "steps NaN": (
        lambda d: _meta(d, ["problems", "digits", "steps"], float("nan")),
        "meta.problems.digits.steps",
    ),
    "a renamed problem": (lambda d: _meta(d, ["problems", "digits", "name"], "other"), "digits.name"),
    "a short hyperparameter": (
        lambda d: _meta(d, ["contenders", "sgd", "hyperparameters"], [[1, 2]]),
        "sgd.hyperparameters[0]",
    ),
    "no learning rate": (
        lambda d: _meta(d, ["contenders", "sgd", "hyperparameters"], [["beta", 0.5, 0.1, 0.9, "linear"]]),
        "meta.contenders.sgd",
    ),
    "batching a word": (lambda d: _meta(d, ["batching", "digits", "sgd"], "x"), "meta.batching.digits.sgd"),
    "records an object": (lambda d: {**d, "records": {}}, "records: must be a list"),
    "a record a string": (lambda d: {**d, "records": ["x", *d["records"][1:]]}, "records[0]"),
    "ragged rates": (lambda d: _records0(d, "lrs", [[1.0], [2.0, 3.0]]), "records[0].lrs"),
    "a short val": (lambda d: _records0(d, "val", d["records"][0]["val"][:-1]), "records[0].val"),
    "seeds words": (lambda d: _records0(d, "seeds", ["a", "b"]), "records[0].seeds"),
    "a role": (lambda d: _records0(d, "role", "boss"), "records[0].role"),
    "steps backwards": (
        lambda d: _records0(d, "eval_steps", d["records"][0]["eval_steps"][::-1]),
        "eval_steps",
    ),
    "a divergence off the steps": (
        lambda d: _records0(d, "diverged_at", [[7.0] * len(r) for r in d["records"][0]["diverged_at"]]),
        "records[0].diverged_at",
    ),
    "an unknown problem": (lambda d: _records0(d, "problem", "nowhere"), "'nowhere' belong to no program"),
    "a study the plan has not": (lambda d: _records0(d, "study", 5), "the plan runs 1 study"),
    "a study of 10**20": (
        lambda d: _records0(d, "study", 10**20),
        "records[0].study: must be an integer between",
    ),
    "a preset of 10**12 seeds": (
        lambda d: _meta(d, ["plan", "seeds"], []) and _meta(d, ["plan", "preset", "seeds"], 10**12),
        "meta.plan.preset.seeds",
    ),
    "a record twice": (lambda d: {**d, "records": [d["records"][0], *d["records"]]}, "saved twice"),
    "no records": (lambda d: {**d, "records": []}, "timings.programs[0]: its records must be those of"),
    "no timings": (lambda d: _drop(d, "timings"), "timings: missing"),
    "programs a word": (lambda d: {**d, "timings": {**d["timings"], "programs": "x"}}, "timings.programs"),
    "a ghost contender": (
        lambda d: {
            **d,
            "timings": {
                **d["timings"],
                "programs": [{**d["timings"]["programs"][0], "contenders": ["ghost"]}],
            },
        },
        "belong to no program",
    ),
    "a selection a number": (lambda d: {**d, "selections": [5]}, "selections[0]"),
}


@pytest.fixture(scope="module")
def pristine(saved) -> dict:
    return _doc(saved)


@pytest.mark.parametrize("variant", list(MALFORMED))
def test_a_malformed_study_json_is_one_line_naming_the_file_and_the_field(
    variant, pristine, saved, tmp_path, capsys
):
    """Item 6: 14 of 28 malformed study.json files ended in tracebacks (RecursionError, AttributeError,
    IndexError, KeyError, TypeError) from report and agree. Now each is one line naming the file and the field."""
    make, words = MALFORMED[variant]
    text = make(copy.deepcopy(pristine))
    folder = tmp_path / "shared"
    folder.mkdir()
    data = text if isinstance(text, bytes) else (text if isinstance(text, str) else json.dumps(text)).encode()
    (folder / "study.json").write_bytes(data)
    for argv in (["report", str(folder), "--no-plots"], ["agree", str(folder), str(saved)]):
        code, out, err = _run(argv, capsys)
        assert code == 2 and out == "", (variant, argv[0], err[-2000:])
        line = err.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in err, (variant, err[-2000:])
        assert str(folder / "study.json") in line and words in line, (variant, line)


def test_a_malformed_spec_json_is_one_line_before_anything_runs(saved, tmp_path, capsys, monkeypatch):
    """Item 6, resume: a spec.json whose fields are of the wrong type is refused, naming the file and the field,
    before JAX starts."""
    monkeypatch.setattr(cli, "configure_jax", lambda *a, **k: pytest.fail("JAX was set up"))
    folder = tmp_path / "study"
    Store(folder).root.mkdir()
    study = synthetic_study()
    good = spec(study.plan, [problem_info(p) for p in study.problems], study.contenders)
    for field, value, words in [
        ("plan", [], "plan: must be a JSON object"),
        ("plan", {"seeds": "abc"}, "plan: `seeds` must be a count or a list of ints"),
        ("problems", {"digits": {"name": "digits"}}, "problems.digits.title: missing"),
        ("contenders", {"sgd": 3}, "contenders.sgd: must be a JSON object"),
        ("versions", {"jax": ["0.4"]}, "versions.jax: must be a string"),
    ]:
        (folder / "spec.json").write_text(
            json.dumps({**json.loads(json.dumps(good, default=str)), field: value})
        )
        code, out, err = _run(["compare", "--resume", str(folder)], capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert f"{folder / 'spec.json'}: {words}" in err, err


# --------------------------------------------------------------------------- 7: resume never mixes edited records
def _saved_study(folder: Path, study: Study) -> Store:
    """``study``'s work saved as a study's folder holds it (spec.json and programs/), as a resume reads it."""
    store = Store(folder)
    store.write_spec(spec(study.plan, [problem_info(p) for p in study.problems], study.contenders))
    for info in study.programs:
        records = [
            r
            for s in study.studies()
            for r in s.all_records()
            if r.problem == info["problem"] and r.contender in info["contenders"]
        ]
        batching = {
            n: d for n, d in study.batching.get(info["problem"], {}).items() if n in info["contenders"]
        }
        result = ProgramResult.from_saved(info, records, batching)
        store.write_program(program_key(info["problem"], info["name"].split("/")[1]), result, 1.0)
    return store


def _edit_program(path: Path, edit, sign: bool) -> None:
    from mxopt_jax.compare.store import digest  # (kept local: this file runs on the code before the fix too)

    doc = json.loads(path.read_text())
    edit(doc)
    if sign:
        doc["digest"] = digest(doc)
    path.write_text(json.dumps(doc))


def test_a_resume_refuses_edited_records(study, tmp_path):
    """Item 7: sgd's saved rates multiplied by 1,000 were mixed silently into a resume. Now a program's records
    are checked against their digest and, with the digest written again, against the plan, before any is used."""
    store = _saved_study(tmp_path / "study", study)
    assert set(store.read_programs()) == {
        program_key(i["problem"], i["name"].split("/")[1]) for i in study.programs
    }
    path = next(p for p in store.programs_dir.glob("digits__SGD*.json"))

    def times_1000(doc):
        for r in doc["records"]:
            r["lrs"] = [x * 1000 for x in r["lrs"]]

    _edit_program(path, times_1000, sign=False)
    with pytest.raises(ResumeError, match="does not match its digest.*delete that file"):
        store.read_programs()
    _edit_program(path, lambda doc: None, sign=True)  # the digest written again: the plan still refuses them
    with pytest.raises(
        ResumeError, match=r"records of 'sgd' on 'digits' \(study 0, selection\): the preset's grid"
    ):
        store.read_programs()


def _twice_as_long(record):
    """``record`` as if evaluated every 40 steps (its steps to target and divergences moved with them)."""
    record["eval_steps"] = [2 * x for x in record["eval_steps"]]
    for key in ("steps_to_target", "diverged_at"):
        record[key] = [[2 * x if x > 0 else x for x in row] for row in record[key]]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: d["records"][0].update(seeds=[9, 8, 7, 6, 5]), "ran on seeds [9, 8, 7, 6, 5]"),
        (lambda d: d["records"][1].update(lrs=[12.5]), "the confirmation runs"),
        (lambda d: d["records"][2].update(lrs=[0.5]), "not the contender's defaults"),
        (lambda d: d["records"].pop(1), "saved as selection, default; a study saves"),
        (lambda d: d["info"].update(steps=7), "7 steps, the plan's budget"),
        (lambda d: d["batching"].update(adam=0.5), "its batching check names ['adam']"),
        (lambda d: d.update(key="other"), "key: must be the file's name"),
        (lambda d: _twice_as_long(d["records"][0]), "evaluated at steps [40, 80, 120"),
    ],
)
def test_a_resume_holds_each_saved_program_to_the_plan(edit, words, study, tmp_path):
    store = _saved_study(tmp_path / "study", study)
    path = next(p for p in store.programs_dir.glob("digits__SGD*.json"))
    _edit_program(path, edit, sign=True)
    with pytest.raises(ResumeError, match=__import__("re").escape(words)):
        store.read_programs()


def test_a_program_or_spec_nested_deep_is_refused_in_one_line(study, tmp_path):
    """A value nested 900 deep (within what Python's JSON reader follows) in a program file made its digest's
    recursion fail (``RecursionError``), and one in spec.json's descriptions made the comparison of definitions
    fail the same way: refused now, naming the file."""
    store = _saved_study(tmp_path / "study", study)
    path = next(p for p in store.programs_dir.glob("digits__SGD*.json"))
    good = path.read_text()
    deep = "[" * 900 + "]" * 900
    path.write_text(good.replace('"wall_s":', f'"junk": {deep}, "wall_s":', 1))
    with pytest.raises(ResumeError, match=f"{path.name}: its content does not match its digest"):
        store.read_programs()
    path.write_text(good)
    spec_doc = json.loads(store.spec_path.read_text())
    spec_doc["problems"]["digits"]["junk"] = json.loads(deep)
    store.spec_path.write_text(json.dumps(spec_doc))
    with pytest.raises(ResumeError, match="spec.json: problems.digits: unknown field"):
        store.read_spec()


def test_the_saved_fields_are_the_ones_read_back(study):
    from mxopt_jax.compare.serialize import CONTENDER_FIELDS, PROBLEM_FIELDS

    assert set(problem_info(study.problems[0])) == set(PROBLEM_FIELDS)
    assert set(contender_info(study.contenders[0])) == set(CONTENDER_FIELDS)


def _as_report_runs(doc):
    """A program file's records as the report runs save them (:mod:`mxopt_jax.compare.tuning`): the selection's
    configurations, in its order, on the report seeds (here the confirmation runs' values, one row per
    configuration), no confirmation record, no default record (the grid holds the default rate)."""
    records = []
    for r in doc["records"]:
        if r["role"] == "selection":
            conf = next(
                x
                for x in doc["records"]
                if (x["contender"], x["study"], x["role"]) == (r["contender"], r["study"], "confirmation")
            )
            G = len(r["lrs"])
            rep = {k: conf[k] for k in conf}
            rep.update(role="report", lrs=r["lrs"], hparams=r["hparams"])
            for key in ("train_loss", "val", "test", "steps_to_target", "diverged_at"):
                rep[key] = conf[key] * G
            records += [r, rep]
    doc["records"] = records


def test_a_resume_takes_report_runs_and_holds_them_to_the_selection(study, tmp_path):
    """Saved as the report runs are (every configuration of the search on the report seeds): read back whole;
    report runs that are not the selection's configurations in its order, or a confirmation record beside them,
    are refused."""
    store = _saved_study(tmp_path / "study", study)
    path = next(p for p in store.programs_dir.glob("digits__SGD*.json"))
    _edit_program(path, _as_report_runs, sign=True)
    good = path.read_text()
    saved = store.read_programs()
    assert set(next(s for k, s in saved.items() if k == path.stem).result.records["sgd"]) == {
        "selection",
        "report",
    }

    def reversed_rates(doc):
        doc["records"][1]["lrs"] = doc["records"][1]["lrs"][::-1]

    _edit_program(path, reversed_rates, sign=True)
    with pytest.raises(ResumeError, match="the report runs are not the selection's configurations"):
        store.read_programs()
    path.write_text(good)

    def with_confirmation(doc):
        rep = next(r for r in doc["records"] if r["role"] == "report")
        row = {
            k: (v[:1] if k in ("lrs", "train_loss", "val", "test", "steps_to_target", "diverged_at") else v)
            for k, v in rep.items()
        }
        doc["records"].append({**row, "role": "confirmation"})

    _edit_program(path, with_confirmation, sign=True)
    with pytest.raises(ResumeError, match="saved as selection, report, confirmation"):
        store.read_programs()


def test_report_rewrites_runs_csv_from_the_records(saved, tmp_path, capsys):
    """Item 7: ``runs.csv`` was never read, so a fabricated one stayed beside the new report while the command
    called the records unchanged. Now report writes runs.csv from the records with the rest."""
    folder = _copy(saved, tmp_path / "shared")
    (folder / "runs.csv").write_text("problem,contender\ndigits,the best optimizer\n")
    code, out, err = _run(["report", str(folder), "--no-plots"], capsys)
    assert code == 0, err
    assert (folder / "runs.csv").read_bytes() == (saved / "runs.csv").read_bytes()
    said = " ".join(out.split("Wrote into", 1)[1].split())
    assert "runs.csv" in said and "which is unchanged" in said


def test_a_resumed_folder_written_by_this_study_is_read_back(study, tmp_path):
    """The checks refuse what is wrong, not what is right: a folder saved as a study saves it reads back whole,
    independent studies included."""
    two = synthetic_study(studies=2)
    store = _saved_study(tmp_path / "two", two)
    back = store.read_programs()
    assert sum(len(s.result.repeats) for s in back.values()) == len(two.programs)
    assert np.array_equal(
        next(iter(back.values()))
        .result.repeats[0][next(iter(back.values())).result.contenders[0]]["selection"]
        .seeds,
        two.plan.seeds_of(1),
    )
    assert contender_info(study.contenders[0])["name"] == study.contenders[0].name


# --------------------------------------------------------------------------- every field, mutated
#: What a mutation puts in a field: each JSON type, a negative, a zero, a huge and an infinite value.
MUTATIONS = [None, "x", -1, 0, 1.5, 1e308, [], {}, True, "inf", 10**20, [1, 2], {"a": 1}]


def _fields(value, path=()):
    """Every field of a JSON document (a list of numbers counts once: its first item)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _fields(v, (*path, k))
    elif isinstance(value, list) and value:
        if isinstance(value[0], int | float | type(None)):
            yield (*path, 0)
        else:
            for i, v in enumerate(value[:2]):
                yield from _fields(v, (*path, i))


def _mutated(doc, path, value):
    doc = copy.deepcopy(doc)
    at = doc
    for k in path[:-1]:
        at = at[k]
    at[path[-1]] = value
    return doc


@pytest.mark.slow  # about 2,000 mutated files read (a minute of CPU): the cases it found are the tests above
def test_every_field_mutated_is_refused_in_one_line_or_renders(tmp_path):
    """Every field of a small study's study.json, spec.json and program file, set to each of :data:`MUTATIONS`:
    reading it is a one-line ``ValueError`` naming the file, or it reads and renders (the report, the files,
    agree); never another exception. (It found a record's study number 10**20 allocating 10**20 repeats.)"""
    from test_outputs import _problem

    small = synthetic_study(
        names=("adam", "sgd"), problems=[_problem("digits", "digits, MLP", "error %", 4.0)]
    )
    small.write(tmp_path / "w", plots=False)
    base = _doc(tmp_path / "w")
    fields = [p for p in _fields(base) if p and not (p[0] == "records" and len(p) > 2 and p[1] != 0)]
    rendered = set()
    for path in fields:
        for value in MUTATIONS:
            (tmp_path / "m.json").write_text(json.dumps(_mutated(base, path, value)))
            try:
                back = Study.from_json(tmp_path / "m.json")
            except ValueError as e:
                assert "\n" not in str(e) and str(tmp_path / "m.json") in str(e), (path, value, str(e)[:300])
                continue
            if path not in rendered:  # the first value a field takes: the whole report made from it
                rendered.add(path)
                back.report()
                render.write_study(back, tmp_path / "out", plots=False, data=False)
                compare.compare_studies(tmp_path / "m.json", tmp_path / "m.json")
    store = _saved_study(tmp_path / "folder", small)
    program = next(store.programs_dir.glob("*.json"))
    for file in (program, store.spec_path):
        good = json.loads(file.read_text())
        for path in [p for p in _fields(good) if p and not (p[0] == "records" and len(p) > 2 and p[1] != 0)]:
            for value in MUTATIONS:
                doc = _mutated(good, path, value)
                if file == program:
                    _edit_program(
                        file, lambda d, doc=doc: (d.clear(), d.update(doc)), sign=path != ("digest",)
                    )
                else:
                    file.write_text(json.dumps(doc))
                try:
                    store.read_spec()
                    store.read_programs()
                except ResumeError as e:
                    assert "\n" not in str(e), (path, value, str(e)[:300])
        file.write_text(json.dumps(good))
