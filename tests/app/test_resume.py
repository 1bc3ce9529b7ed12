"""Nothing is lost: each program's records are saved as it finishes, an interrupted study continues where it
stopped (``study(..., resume=DIR)``, ``mxopt-jax compare --resume DIR``) and equals an uninterrupted one;
Ctrl-C prints the exact command that continues it; a folder made under another protocol is refused."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from mxopt_jax.compare import cli, presets
from mxopt_jax.compare.plan import Plan
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.result import ProgramResult
from mxopt_jax.compare.serialize import write_atomic
from mxopt_jax.compare.store import Store, differences, program_key, spec

HERE = Path(__file__).resolve().parent

# One process (its own persistent compilation cache, so the same program compiles once): an interrupted study
# (stopped by raising from on_program once the first of its two programs is done), the study resumed, the same
# study run without interruption, then the study extended with a contender (only its program runs).
SCRIPT = textwrap.dedent(
    """
    import dataclasses, json, math, sys
    sys.path.insert(0, {here!r})
    from tiny_problems import mlp_problem as _mlp_problem
    from mxopt_jax.compare import PRESETS, report, study
    from mxopt_jax.compare.distributed import configure_jax
    from mxopt_jax.compare.study import Study

    configure_jax(devices=1, cache=False)
    import jax
    jax.config.update("jax_compilation_cache_dir", {cache!r})
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    p = _mlp_problem()
    preset = dataclasses.replace(PRESETS["quick"], grid_points=3, seeds=2, confirm_seeds=2)
    # plots and the batching check: tested elsewhere; one program per family (two here), so that a study can
    # stop between programs
    kw = dict(extend=1, check_batching="none", plots=False, group_by="family")

    class Stop(Exception):
        pass

    def stop(result):
        raise Stop(result.name)

    out, full_out = {out!r}, {full!r}
    facts = {{}}
    try:
        study(p, ["sgd", "adam"], preset, out=out, on_program=stop, **kw)
    except Stop as e:
        facts["stopped_after"] = str(e)
        facts["note"] = " ".join(getattr(e, "__notes__", []))
    import os
    facts["after_stop"] = sorted(os.listdir(out)) + sorted(os.listdir(out + "/programs"))
    try:
        study(p, ["sgd", "adam"], preset, out=out, **kw)
    except ValueError as e:
        facts["out_again"] = str(e)
    labels = []
    resumed = study(p, ["sgd", "adam"], preset, resume=out, progress=lambda s, f: labels.append(s), **kw)
    facts["resumed_compiled"] = [s for s in labels if s.startswith("compiled")]
    full = study(p, ["sgd", "adam"], preset, out=full_out, **kw)

    def data(rs):
        return [dataclasses.replace(r, compile_s=math.nan, run_s=math.nan) for r in rs]

    facts["records_equal"] = report.records_equal(data(resumed.all_records()), data(full.all_records()))
    facts["roles"] = sorted({{r.role for r in resumed.all_records()}})
    facts["tuned_equal"] = [
        (a.contender, a.lr, a.test.tolist()) == (b.contender, b.lr, b.test.tolist())
        for a, b in zip(resumed.selections(), full.selections(), strict=True)
    ]
    def untimed_report(folder):  # the report of the saved study, without its timings (they differ)
        doc = json.load(open(folder + "/study.json"))
        for r in doc["records"]:
            r["run_s"] = r["compile_s"] = None
        for prog in doc["timings"]["programs"]:
            prog["compile_s"] = 0.0
        doc["timings"]["wall_s"] = None
        doc.pop("selections")  # their ms/step no longer what the records say: the report makes them again
        facts.setdefault("resumed_timings", []).append(doc["timings"].pop("resumed", None))
        json.dump(doc, open(folder + "/untimed.json", "w"))
        return Study.from_json(folder + "/untimed.json").report()

    a, b = untimed_report(out), untimed_report(full_out)
    facts["report_equal"] = a == b
    if a != b:
        import difflib
        facts["report_diff"] = list(difflib.unified_diff(b.splitlines(), a.splitlines(), lineterm=""))
    facts["files_equal"] = [
        open(out + "/" + n).read() == open(full_out + "/" + n).read() for n in ("summary.csv",)
    ]
    facts["runs_equal"] = open(out + "/runs.csv").read() == open(full_out + "/runs.csv").read()
    back = Study.from_json(out + "/study.json")
    facts["reloaded_report_equal"] = back.report() == resumed.report()
    # the "Time:" paragraph, its wrapped lines joined (the report fits 120 columns)
    facts["resumed_time_note"] = [
        " ".join(part.split()) for part in resumed.report().split(chr(10) * 2) if part.startswith("Time:")
    ]
    labels.clear()
    more = study(p, ["sgd", "adam", "adamax"], preset, resume=out, progress=lambda s, f: labels.append(s), **kw)
    facts["extended_compiled"] = [s for s in labels if s.startswith("compiled")]
    facts["extended_contenders"] = sorted(more.tuned["tiny"])
    facts["extended_keeps_records"] = report.records_equal(
        data([r for r in more.all_records() if r.contender != "adamax"]), data(resumed.all_records())
    )
    try:
        study(dataclasses.replace(p, target=0.6), ["sgd", "adam"], preset, resume=out, **kw)
    except ValueError as e:
        facts["other_definition"] = str(e)
    try:
        study(p, ["sgd", "adam"], preset, resume=out, seeds=3, **kw)
    except ValueError as e:
        facts["other_protocol"] = str(e)
    print("FACTS" + json.dumps(facts))
    """
)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("resume")
    code = SCRIPT.format(
        here=str(HERE.parent / "_support"),
        cache=str(tmp / "cache"),
        out=str(tmp / "out"),
        full=str(tmp / "full"),
    )
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    facts = json.loads(proc.stdout.split("FACTS", 1)[1])
    facts["tmp"] = str(tmp)
    return facts


def test_finished_programs_survive_an_interruption(resumed):
    assert resumed["stopped_after"] == "tiny/SGD family"
    # the spec and the finished program are saved; no report (the study did not finish)
    assert resumed["after_stop"] == ["programs", "spec.json", program_key("tiny", "SGD family") + ".json"]
    assert "resume=" in resumed["note"]
    assert "already holds a study" in resumed["out_again"] and "resume" in resumed["out_again"]


def test_resumed_study_equals_an_uninterrupted_one(resumed):
    assert resumed["resumed_compiled"] == [next(s for s in resumed["resumed_compiled"])]  # one program ran
    assert "Adam family" in resumed["resumed_compiled"][0]
    assert resumed["records_equal"] and resumed["roles"] == ["report", "selection"]
    assert resumed["report_equal"], "\n".join(resumed.get("report_diff", []))
    assert all(resumed["tuned_equal"]) and resumed["runs_equal"]
    assert resumed["reloaded_report_equal"]
    # the resumed study's timing says what it counts: the earlier session's program and seconds
    assert resumed["resumed_timings"][0]["programs"] == 1 and not resumed["resumed_timings"][1]
    assert "resumed: the time counts every session (1 of the 2 programs" in resumed["resumed_time_note"][0]


def test_resume_runs_only_what_was_added(resumed):
    assert len(resumed["extended_compiled"]) == 1 and "Adam family" in resumed["extended_compiled"][0]
    assert resumed["extended_contenders"] == ["adam", "adamax", "sgd"]
    assert resumed["extended_keeps_records"]


def test_resume_refuses_another_protocol_saying_what_differs(resumed):
    assert "problems.tiny.target: stored 0.5, now 0.6" in resumed["other_definition"]
    assert "seeds: stored (0, 1), given (0, 1, 2)" in resumed["other_protocol"]


# --------------------------------------------------------------------------- the store, alone
def _records(name: str, role: str) -> Records:
    val = np.arange(6, dtype=float).reshape(1 if role != "selection" else 3, 2, -1)[:, :, :1]
    val = np.broadcast_to(val, val.shape).copy()
    g = val.shape[0]
    return Records(
        name, "p", np.linspace(1e-3, 1e-2, g), [0, 1], [5], val, val, val, np.full((g, 2), np.inf), role=role
    )


def test_store_round_trips_a_program_and_writes_atomically(tmp_path):
    result = ProgramResult(
        "p", "p/fam", ["a"], {"a": {r: _records("a", r) for r in ("selection", "confirmation", "default")}},
        {"a": 0.0}, 1.5, 1, 8, 5,
    )  # fmt: skip
    store = Store(tmp_path)
    path = store.write_program(program_key("p", "fam"), result, 3.0)
    assert path.name == "p__fam.json" and not [
        f for f in os.listdir(tmp_path / "programs") if f.startswith(".")
    ]
    back = store.read_programs()["p__fam"]
    assert back.result.info() == result.info() and back.wall_s == 3.0 and back.result.batching == {"a": 0.0}
    assert back.result.records["a"]["confirmation"].seeds.tolist() == [0, 1]
    assert program_key("p q", "SGD family") != program_key("p_q", "SGD_family")  # names never collide

    with pytest.raises(TypeError):
        write_atomic(tmp_path / "x.json", 123)  # type: ignore[arg-type]  # a failed write leaves nothing behind
    assert not list(tmp_path.glob("*x.json*"))
    (tmp_path / "programs" / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="broken.json is not a JSON file.*delete that file"):
        store.read_programs()


def test_differences_name_what_changed():
    plan = Plan.make(dataclasses.replace(presets.PRESETS["quick"], grid_points=3), seeds=2, confirm_seeds=2)
    a = spec(plan, [{"name": "p", "target": 1.0}], [])
    b = spec(plan, [{"name": "p", "target": 2.0}, {"name": "q", "target": 3.0}], [])
    assert differences(a, a) == []
    assert differences(a, b) == ["problems.p.target: stored 1.0, now 2.0"]  # an added problem is fine
    assert a["plan"] == plan.to_dict()  # the settings: held by Plan.resumed (tests/app/test_plan.py)


# --------------------------------------------------------------------------- Ctrl-C on the command line
def test_ctrl_c_prints_the_command_that_continues(tmp_path, monkeypatch, capsys):
    """The command line's answer to Ctrl-C (KeyboardInterrupt inside the study): the finished programs are
    named, the exact command to continue is printed, the status is 130."""
    study_module = sys.modules["mxopt_jax.compare.study"]  # the package's `study` attribute is the function

    def interrupted(problems, contenders, *, out=None, resume=None, **kwargs):
        Store(out).programs_dir.mkdir(parents=True)
        (Store(out).programs_dir / "logreg__SGD_family.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(study_module, "study", interrupted)
    monkeypatch.setattr(cli, "configure_jax", lambda *a, **k: None)
    out = tmp_path / "my study"
    rc = cli.main(["compare", "--problems", "logreg", "--contenders", "sgd", "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err
    assert rc == 130
    assert "1 finished program(s) are saved" in err
    command = err.strip().splitlines()[-1].strip()
    assert command == f"{shlex.quote(sys.executable)} -m mxopt_jax compare --resume '{out}'"
    # it runs as printed, with nothing on the PATH (the README's set-up puts nothing there): the program starts
    # and answers for the folder (here it holds no spec.json, so the resume is refused), not "command not found"
    ran = subprocess.run(
        ["/bin/sh", "-c", command], env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 2 and "holds no study to continue" in ran.stderr, ran.stderr[-2000:]

    def before_any(problems, contenders, *, out=None, resume=None, **kwargs):
        raise KeyboardInterrupt  # no program finished: no programs/ folder to point at

    monkeypatch.setattr(study_module, "study", before_any)
    rc = cli.main(["compare", "--problems", "logreg", "--contenders", "sgd", "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert rc == 130 and "no program had finished, so none is saved" in err and "programs" not in err


@pytest.mark.slow  # two processes, two compiles of logreg (about half a minute on 2 cores)
def test_ctrl_c_then_resume_on_the_command_line(tmp_path):
    env = dict(os.environ, MXOPT_JAX_CACHE=str(tmp_path / "cache"), JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    out = tmp_path / "out"
    # one program per family (two here), so that the interruption comes between programs
    args = [sys.executable, "-m", "mxopt_jax", "compare", "--problems", "logreg", "--contenders", "sgd,adam",
            "--seeds", "2", "--confirm-seeds", "2", "--extend", "0", "--check-batching", "none", "--no-plots",
            "--group-by", "family"]  # fmt: skip
    proc = subprocess.Popen(
        [*args, "--out", str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    t0 = time.time()
    while not (out / "programs").is_dir() or not any((out / "programs").glob("*.json")):
        assert proc.poll() is None and time.time() - t0 < 300, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-2000:]
    assert f"-m mxopt_jax compare --resume {out}" in err and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["programs", "spec.json"]
    done = subprocess.run([sys.executable, "-m", "mxopt_jax", "compare", "--resume", str(out)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.count("compiled logreg/") == 1  # only the missing program ran
    doc = json.loads((out / "study.json").read_text())
    assert sorted({r["contender"] for r in doc["records"]}) == ["adam", "sgd"]


def test_the_printed_program_is_the_one_that_runs(tmp_path, monkeypatch):
    """``program_command``: ``mxopt-jax`` only when that name on the PATH is this program; the script's path
    when it was started from a folder not on the PATH (``.venv/bin/mxopt-jax``); ``python -m mxopt_jax``
    with this interpreter otherwise."""
    from mxopt_jax.compare.files import program_command, resume_command

    script = tmp_path / "venv bin" / "mxopt-jax"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script), "compare"])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert program_command() == shlex.quote(str(script))
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert program_command() == "mxopt-jax"
    monkeypatch.setattr(sys, "argv", ["/somewhere/mxopt_jax/__main__.py", "compare"])
    assert program_command() == f"{shlex.quote(sys.executable)} -m mxopt_jax"
    assert resume_command("my study").endswith("-m mxopt_jax compare --resume 'my study'")


def test_a_folder_that_holds_a_study_names_the_command_that_continues_it(tmp_path):
    """The second message (re-running ``--out DIR`` on a saved study) gives the folder and a command that
    runs; the API's message gives the call."""
    from mxopt_jax.compare.store import ResumeError, open_folder

    out = tmp_path / "saved"
    (out / "programs").mkdir(parents=True)
    (out / "spec.json").write_text("{}")
    (out / "programs" / "p__f.json").write_text("{}")
    with pytest.raises(ResumeError) as e:
        open_folder(out, resume=False, what="--out")
    assert f"-m mxopt_jax compare --resume {out}" in str(e.value)
    with pytest.raises(ResumeError, match=r"study\(\.\.\., resume="):
        open_folder(out, resume=False, what="out")
