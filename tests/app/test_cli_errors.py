"""Every bad argument gets a clear error at the boundary, before anything runs (the command line and the API):
an output folder that cannot be written, a negative --extend, more devices than the platform offers, a
workload's factory passed as a problem, meaningless Problem fields, a contender that cannot be traced (named,
with its cause, before any compile), a configure_jax that comes too late; and --help reads cleanly."""

from __future__ import annotations

import csv
import dataclasses
import errno
import os
import re
import sys
import types
import warnings

import jax
import optax
import pytest

from mxopt_jax import compare
from mxopt_jax.compare import checks, cli
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare.preflight import PreflightError
from mxopt_jax.compare.problems import DEFAULT, PROBLEMS
from mxopt_jax.compare.store import Store

sys.path.insert(0, os.path.dirname(__file__))
from test_study import _mlp_problem  # noqa: E402

TINY = dataclasses.replace(compare.PRESETS["quick"], grid_points=3, seeds=2, confirm_seeds=2)


@pytest.fixture
def isolated(monkeypatch):
    """The command line's global settings (XLA_FLAGS, the cache, the host-device check) restored after."""
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(checks, "_HOST_DEVICES", None)
    return monkeypatch


def _bad_places(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    return {
        "proc": ("/proc/nope", "cannot write into '/proc/nope'"),
        "a file": (str(afile), "is a file, not a folder"),
        "under a file": (str(afile / "sub"), "lies under"),
    }


@pytest.mark.parametrize("case", ["proc", "a file", "under a file"])
def test_unwritable_out_is_refused_at_once(case, tmp_path, capsys):
    path, words = _bad_places(tmp_path)[case]
    assert cli.main(["compare", "--out", path, "--problems", "logreg"]) == 2
    err = capsys.readouterr().err
    assert f"--out: {path!r}" in err or f"--out: cannot write into {path!r}" in err, err
    assert words in err and "Traceback" not in err
    labels = []
    with pytest.raises(ValueError, match=f"out: .*{words}"):
        compare.study(_mlp_problem(), ["adam"], TINY, out=path, progress=lambda s, f: labels.append(s))
    assert labels == []  # refused before anything ran (not even the tracing)


def test_resume_of_a_missing_or_empty_folder(tmp_path, capsys):
    assert cli.main(["compare", "--resume", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "none").exists()
    assert cli.main(["compare", "--resume", str(tmp_path)]) == 2
    assert "holds no study to continue" in capsys.readouterr().err
    assert cli.main(["compare", "--resume", str(tmp_path), "--out", str(tmp_path / "other")]) == 2
    assert "not both" in capsys.readouterr().err
    with pytest.raises(ValueError, match="holds no study to continue"):
        compare.study(_mlp_problem(), ["adam"], TINY, resume=tmp_path)


def test_negative_extend(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--extend", "-1"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --extend: extend must be an integer >= 0, got -1" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="extend must be an integer >= 0, got -1"):
        compare.study(_mlp_problem(), ["adam"], TINY, extend=-1)


def test_devices_beyond_the_platform(isolated, tmp_path, capsys):
    cores = checks.cpu_devices()
    assert cli.main(["compare", "--devices", "64", "--no-cache", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    if jax.default_backend() == "cpu":
        assert f"--devices must be an integer between 1 and {cores}, got 64 (the CPU cores" in err
    else:
        assert "--devices: asked for 64 per process" in err
    assert not list(tmp_path.iterdir())  # refused before the study: nothing written
    with pytest.raises(ValueError, match="devices must be an int >= 1"):
        cli.configure_jax(devices=0, cache=False)


def test_configure_jax_after_jax_started_warns(isolated):
    """JAX has started in this process (it reads XLA_FLAGS once): asking for another host-device count has no
    effect, and the study says so when it starts (JAX has no public way to tell earlier)."""
    have = len(jax.devices("cpu"))
    want = 1 if have != 1 else 2
    if want > checks.cpu_devices():
        pytest.skip("needs two cores to ask for a count JAX does not have")
    cli.configure_jax(devices=want, cache=False)
    with pytest.warns(
        RuntimeWarning, match=rf"configure_jax\(devices={want}\) had no effect.*{have} CPU device"
    ):
        checks.check_host_devices()
    with warnings.catch_warnings():  # warned once, not at every study
        warnings.simplefilter("error")
        checks.check_host_devices()


def test_help_lists_the_workloads_and_has_no_doubled_percent(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "%%" not in text and "95 % confidence" in text
    for name, factory in PROBLEMS.items():
        p = factory()
        line = next(line for line in text.splitlines() if line.strip().startswith((name + " ", name + "* ")))
        assert ("*" in line.split()[0]) == (name in DEFAULT)  # the quick preset's default set is marked
        assert p.title.split(",")[0] in line, line
    assert "--resume DIR" in text and "Ctrl-C" in text
    # each preset's target, said as such (the quick report's target is not the full preset's)
    words = " ".join(text.split()).replace("log- loss", "log-loss")
    for name, factory in PROBLEMS.items():
        p = factory()
        quick, full, reach = (
            p.target_for("quick"),
            p.target_for("full"),
            "<=" if p.better == "lower" else ">=",
        )
        said = (
            f"target {reach} {full:g}"
            if quick == full
            else f"target {reach} {quick:g} (quick), {full:g} (full)"
        )
        assert said in words, (name, said)
    assert PROBLEMS["digits_mlp"]().target_for("quick") != PROBLEMS["digits_mlp"]().target_for("full")


def test_a_factory_is_not_a_problem():
    for given in (PROBLEMS["logreg"], [PROBLEMS["logreg"]]):
        with pytest.raises(
            TypeError, match=r"got the factory 'logreg', not a Problem; call it: PROBLEMS\[\"logreg\"\]\(\)"
        ):
            compare.study(given, ["adam"], TINY)
    with pytest.raises(TypeError, match="must be Problem objects or built-in problems' names"):
        compare.study([42], ["adam"], TINY)


def test_python_errors_are_as_good_as_the_command_lines():
    """What the command line says of a misspelt name, the API says too: the table of problems lists its names
    and suggests the close match; study() takes problems by name as it takes contenders by name; an unknown
    contender is called a contender."""
    from mxopt_jax.compare.study import _problem_list

    with pytest.raises(
        KeyError, match=r"unknown problem 'logreg2' \(did you mean 'logreg'\?\); known: digits_mlp"
    ):
        PROBLEMS["logreg2"]
    assert PROBLEMS.get("logreg2") is None and "logreg" in PROBLEMS  # the rest of a dict, unchanged
    assert [p.name for p in _problem_list("logreg")] == ["logreg"]
    assert [p.name for p in _problem_list(["digits_mlp", "logreg"])] == ["digits_mlp", "logreg"]
    assert [p.name for p in _problem_list("all")] == list(PROBLEMS)
    with pytest.raises(
        ValueError, match=r"unknown problem 'logreg2' \(did you mean 'logreg'\?\);.* or 'all'"
    ):
        compare.study("logreg2", ["adam"], TINY)
    with pytest.raises(ValueError, match=r"unknown contender 'adamm' \(did you mean 'adam'\?\); known: sgd,"):
        compare.study(_mlp_problem(), ["adamm"], TINY)
    assert [c.name for c in C.resolve("adam")] == ["adam"]  # one name: one contender, not its letters


def _usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("adma", "'adam'"),  # a swap of two letters is one edit: adam, not adamax
        ("adamm", "'adam'"),
        ("adamx", "'adamax'"),
        ("nadm", "'nadam'"),
        ("sdg", "'sgd'"),
        ("rmsporp", "'rmsprop'"),
        ("adagard", "'adagrad'"),
        ("ftlm", "'ftml'"),
        ("optax.adma", "'optax.adam'"),
        ("opt", "'optax.sgd', 'optax.adam', 'optax.adamw', 'optax.lamb' or 'optax'"),
    ],
)
def test_a_misspelt_contender_gets_the_names_it_most_likely_meant(typo, meant, capsys):
    err = _usage_error(["compare", "--contenders", f"lamb,{typo}"], capsys)
    assert f"unknown contender(s) {typo!r} (did you mean {meant}?); known: sgd, nag," in err
    with pytest.raises(
        ValueError, match=rf"unknown contender {typo!r} \(did you mean {re.escape(meant)}\?\)"
    ):
        C.resolve(typo)


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("mnist", "'mnist1d_mlp', 'mnist1d_cnn' or 'mnist1d_bn'"),  # the names it begins, not one of them
        ("mnist1d", "'mnist1d_mlp', 'mnist1d_cnn' or 'mnist1d_bn'"),
        ("cnn", "'mnist1d_cnn'"),  # a part of a name
        ("char", "'char_lm' or 'char_transformer'"),
        ("logre", "'logreg'"),
        ("recomender", "'recommender'"),
    ],
)
def test_a_misspelt_problem_gets_the_names_it_most_likely_meant(typo, meant, capsys):
    err = _usage_error(["compare", "--problems", typo], capsys)
    assert f"unknown problem(s) {typo!r} (did you mean {meant}?); known: digits_mlp," in err
    with pytest.raises(KeyError, match=rf"unknown problem {typo!r} \(did you mean {re.escape(meant)}\?\)"):
        PROBLEMS[typo]


def test_two_misspelt_names_each_get_their_own_suggestion(capsys):
    err = _usage_error(["compare", "--contenders", "adma,lamb,nadm"], capsys)
    assert "unknown contender(s) 'adma', 'nadm' (did you mean 'adam' for 'adma', 'nadam' for 'nadm'?)" in err
    err = _usage_error(["compare", "--problems", "mnist,nope"], capsys)
    assert "(did you mean 'mnist1d_mlp', 'mnist1d_cnn' or 'mnist1d_bn' for 'mnist'?)" in err


def test_an_optimizers_constructor_spelling_is_taken_as_its_name():
    """``group_adagrad`` (the function's name) is ``groupadagrad`` (the registry's) wherever a contender is
    named: the command line (compare and tour) and the study's Python API; the alias table is the library's."""
    args = cli.build_parser().parse_args(["compare", "--contenders", "group_adagrad,adam,groupadagrad"])
    assert args.contenders == ["groupadagrad", "adam"]
    assert [c.name for c in C.resolve(["group_adagrad", "adam"])] == ["groupadagrad", "adam"]
    assert C.mxopt_contender("group_adagrad").name == "groupadagrad"
    with pytest.raises(ValueError, match=r"unknown optimizer 'adma' \(did you mean 'adam'\?\); known: sgd"):
        C.mxopt_contender("adma")
    tour = cli.build_parser().parse_args(["tour", "--contenders", "group_adagrad"])
    assert tour.contenders == ["groupadagrad"]
    assert checks.canonical_name("group_adagrad", ["adam"]) == "group_adagrad"  # only where the name is known


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        (
            "--seeds",
            "-1",
            "need at least 2 seeds for confidence intervals, got -1: give a count >= 2 (the seeds 0,",
        ),
        ("--seeds", "1", "need at least 2 seeds for confidence intervals, got 1: give a count >= 2"),
        (
            "--confirm-seeds",
            "0",
            "need at least 2 confirm_seeds for confidence intervals, got 0: give a count >= 2 (the seeds 1000, "
            "1001, ...) or a list of at least 2 distinct ints in [0, 2**31)",
        ),
    ],
)
def test_too_few_seeds_says_what_was_given_and_what_is_allowed(flag, value, words, capsys):
    err = _usage_error(["compare", flag, value], capsys)
    assert f"argument {flag}: {words}" in err and "got []" not in err
    with pytest.raises(ValueError, match=r"got \[5\]: give a count >= 2 .* list of at least 2 distinct ints"):
        compare.Plan.make(seeds=[5])


def test_a_misspelt_flag_gets_the_close_match_and_its_commands_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compare", "--problem", "logreg"])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err == (
        "mxopt-jax compare: error: unrecognized arguments: --problem logreg (did you mean --problems?) "
        "(see mxopt-jax compare --help)"
    )
    with pytest.raises(SystemExit):
        cli.main(["report", "saved", "--outt", "x"])
    assert "(did you mean --out?) (see mxopt-jax report --help)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("field", "value", "error", "words"),
    [
        ("target", float("nan"), ValueError, "`target` must be a finite number, got nan"),
        ("target", float("inf"), ValueError, "`target` must be a finite number, got inf"),
        ("target", "4", TypeError, "`target` must be a finite number"),
        ("quick_steps", 0, ValueError, "`quick_steps` must be None or an int >= 1, got 0"),
        ("batch_size", -3, ValueError, "`batch_size` must be an int >= 1, got -3"),
        ("name", "", TypeError, "`name` must be a non-empty str"),
        ("metric_name", None, TypeError, "`metric_name` must be a str"),
        ("loss", 3.0, TypeError, "`loss` must be callable"),
        (
            "better",
            "up",
            ValueError,
            "`better` must be 'lower' or 'higher' (which way the metric improves), got 'up'",
        ),
    ],
)
def test_problem_fields_are_checked(field, value, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        dataclasses.replace(_mlp_problem(), **{field: value})


def test_an_untraceable_contender_is_named_before_any_compile():
    def careful(lr):  # checks its rate in Python: fine with a number, impossible with a traced rate
        if lr > 0.5:
            raise ValueError("rate too large")
        return optax.adam(lr)

    labels = []
    with pytest.raises(PreflightError) as e:
        compare.study(
            _mlp_problem(),
            ["adam", C.contender("careful", careful, 1e-3)],
            TINY,
            progress=lambda s, f: labels.append(s),
        )
    message = str(e.value)
    assert "contender(s) careful cannot be traced" in message and "nothing ran" in message
    assert "careful on tiny: " in message and "TracerBoolConversionError" in message
    assert "test_cli_errors.py" in message and "in careful" in message  # where, in the user's code
    assert [f.contender for f in e.value.failures] == ["careful"]  # adam traced fine
    assert not [s for s in labels if s.startswith(("compiling", "compiled"))]  # refused before compiling


def test_a_broken_problem_is_named_once():
    def bad_loss(p, b):
        return float(b[0].sum())  # a concrete value of a traced array

    with pytest.raises(PreflightError, match=r"problem\(s\) tiny cannot be traced") as e:
        compare.study(dataclasses.replace(_mlp_problem(), loss=bad_loss), ["adam", "sgd"], TINY)
    assert [(f.problem, f.contender) for f in e.value.failures] == [("tiny", None)]


# --------------------------------------------------------------------------- a full disk
class _FullDisk:
    """A file on a disk that fills after ``room`` characters: the write that does not fit fails as a full disk
    does (``OSError: [Errno 28] No space left on device``), after writing what fitted."""

    def __init__(self, f, room: int) -> None:
        self.f, self.room = f, room

    def write(self, text: str) -> int:
        if len(text) > self.room:
            self.f.write(text[: self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(text)
        return self.f.write(text)


def _fill_disk_in_runs_csv(monkeypatch, room: int = 2000) -> None:
    """The disk fills while a CSV file is written after ``room`` characters (``runs.csv``, the largest file, the
    one a small disk fails on; ``summary.csv`` too)."""
    from mxopt_jax.compare.report import export

    real = csv.writer
    fake = types.SimpleNamespace(writer=lambda f, *a, **k: real(_FullDisk(f, room), *a, **k))
    monkeypatch.setattr(export, "csv", fake)


def test_a_full_disk_leaves_no_truncated_file(tmp_path, monkeypatch):
    from test_outputs import synthetic_study

    study = synthetic_study()
    _fill_disk_in_runs_csv(monkeypatch)
    with pytest.raises(OSError, match="No space left on device") as e:
        study.write(tmp_path, plots=False)
    assert not (tmp_path / "runs.csv").exists()  # not a truncated one
    assert e.value.filename == str(tmp_path / "runs.csv")  # the file the user knows, not the temporary one
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # nor a temporary file
    assert (tmp_path / "report.txt").read_text() == study.report() + "\n"  # what was written before is whole


def test_a_full_disk_on_the_command_line_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """``mxopt-jax compare`` on a disk that fills: one line saying what happened, where the finished work is
    and the command that continues once there is room; status 1; no truncated runs.csv."""
    from test_outputs import synthetic_study

    study_module = sys.modules["mxopt_jax.compare.study"]

    def study_on_a_small_disk(problems, contenders, *, out=None, resume=None, **kwargs):
        store = Store(out)
        store.write_spec({"plan": {}})
        store.programs_dir.mkdir()
        (store.programs_dir / "logreg__SGD_family.json").write_text("{}")
        synthetic_study().write(out, plots=False)  # the outputs, at the end of the study

    _fill_disk_in_runs_csv(monkeypatch)
    monkeypatch.setattr(study_module, "study", study_on_a_small_disk)
    monkeypatch.setattr(cli, "configure_jax", lambda *a, **k: None)
    out = tmp_path / "small disk"
    rc = cli.main(["compare", "--problems", "logreg", "--contenders", "sgd", "--out", str(out), "--no-plots"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1, err
    assert f"cannot write into {out}: No space left on device ({out / 'runs.csv'})" in err
    assert (
        f"1 finished program(s) are kept in {out / 'programs'}" in err
        and "no file was left half-written" in err
    )
    assert err.endswith(checks.resume_command(out))
    assert not (out / "runs.csv").exists()


def test_a_full_disk_in_report_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    from test_outputs import synthetic_study

    synthetic_study().write(tmp_path / "saved", plots=False)
    _fill_disk_in_runs_csv(monkeypatch, room=100)  # summary.csv, the CSV that report writes
    out = tmp_path / "out"
    rc = cli.main(["report", str(tmp_path / "saved"), "--out", str(out), "--no-plots"])
    captured = capsys.readouterr()
    assert rc == 1 and len(captured.err.strip().splitlines()) == 1, captured.err
    assert f"mxopt-jax report: error: cannot write into {out}: No space left on device" in captured.err
    assert not (out / "summary.csv").exists() and not [p for p in out.iterdir() if p.name.startswith(".")]
