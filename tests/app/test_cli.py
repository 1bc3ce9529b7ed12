"""The command line as a user meets it: one verb per job (compare, report, agree, tour), one word per concept,
every usage error one line naming the argument and what is allowed, old spellings still working with a notice,
and a refused command leaves nothing behind. Nothing here trains: seconds."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from mxopt_jax import compare
from mxopt_jax.compare import checks, cli

sys.path.insert(0, os.path.dirname(__file__))
from test_outputs import synthetic_study  # noqa: E402


def _code(argv):
    try:
        return cli.main(argv)
    except SystemExit as e:  # argparse's usage errors exit
        return e.code


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "give a command: compare, report, agree or tour"),
        (["frobnicate"], "argument {compare,report,agree,tour}: invalid choice: 'frobnicate'"),
        (
            ["compare", "--preset", "huge"],
            "argument --preset: invalid choice: 'huge' (choose from 'quick', 'full')",
        ),
        (
            ["compare", "--seeds", "1"],
            "argument --seeds: need at least 2 seeds for confidence intervals, got 1: give a count >= 2",
        ),
        (["compare", "--confirm-seeds", "x"], "argument --confirm-seeds: must be an integer, got 'x'"),
        (
            ["compare", "--problems", "nope"],
            "argument --problems: unknown problem(s) 'nope'; known: digits_mlp",
        ),
        (
            ["compare", "--contenders", "adamm"],
            "argument --contenders: unknown contender(s) 'adamm' (did you mean 'adam'?); known: ",
        ),
        (
            ["compare", "--studies", "0"],
            "argument --studies: studies must be an integer between 1 and 20, got 0",
        ),
        (["compare", "--extend", "-1"], "argument --extend: extend must be an integer >= 0, got -1"),
        (["compare", "--trials", "4"], "trials: only a random search takes a number of trials"),
        (
            ["compare", "--problem", "logreg"],
            "unrecognized arguments: --problem logreg (did you mean --problems?) (see mxopt-jax compare --help)",
        ),
        (["compare", "--problems", "logre"], "unknown problem(s) 'logre' (did you mean 'logreg'?); known: "),
        (["report"], "the following arguments are required: DIR"),
        (["agree", "a"], "the following arguments are required: DIR_B"),
    ],
)
def test_every_usage_error_is_one_line(argv, words, capsys):
    assert _code(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and words in err and "usage:" not in err, err
    assert captured.out == ""


def test_the_setting_flags_are_the_plans_settings_checked_by_the_plan(capsys):
    """One flag per setting of the plan, its words the plan's (SETTINGS), its choices the plan's (CHOICES), and
    a bad value refused with the plan's own message (check_setting): no second check in the command line."""
    from mxopt_jax.compare.plan import CHOICES, SETTINGS, check_setting

    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for key, words in SETTINGS.items():
        flag = "--" + key.replace("_", "-")
        assert f"{flag} " in text and " ".join(words.split()) in text, key
        if key in CHOICES:
            assert "{" + ",".join(CHOICES[key]) + "}" in text, key
    assert "--seeds N the selection seeds (the runs that choose): how many, 0, 1, ..." in text
    for flag, key, value in (
        ("--seeds", "seeds", 1),
        ("--studies", "studies", 0),
        ("--extend", "extend", -1),
    ):
        with pytest.raises(ValueError) as plan_says:
            check_setting(key, value)
        assert _code(["compare", flag, str(value)]) == 2
        assert f"argument {flag}: {plan_says.value}" in capsys.readouterr().err


def test_old_spellings_keep_working_with_a_notice(capsys):
    args = cli.build_parser().parse_args(["compare", "--optimizers", "adam", "--batching-check", "all"])
    assert args.contenders == ["adam"] and args.check_batching == "all"
    assert _code(["compare", "--optimizers", "adamm"]) == 2
    err = capsys.readouterr().err
    assert "--optimizers is deprecated; it is now --contenders" in err


def test_a_refused_command_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(checks, "_HOST_DEVICES", None)
    monkeypatch.setattr(cli, "configure_jax", lambda *a, **k: None)  # JAX is already up in this process
    assert cli.main(["compare", "--devices", "99", "--problems", "logreg"]) == 2
    assert "--devices" in capsys.readouterr().err
    assert not (tmp_path / "mxopt_compare").exists()  # the default folder was not created
    deep = tmp_path / "a" / "b" / "c"
    assert cli.main(["compare", "--devices", "99", "--out", str(deep)]) == 2
    assert not (tmp_path / "a").exists()  # nor any folder above it
    capsys.readouterr()
    # a refused resume prints nothing before its error (no "resuming ...")
    synthetic_study().write(tmp_path / "saved", plots=False)
    (tmp_path / "saved" / "spec.json").write_text('{"format": "mxopt_jax.compare.store/1"}')
    assert cli.main(["compare", "--resume", str(tmp_path / "saved")]) == 2
    captured = capsys.readouterr()
    assert (
        captured.out == "" and "cannot resume" in captured.err and len(captured.err.strip().splitlines()) == 1
    )


def test_report_re_renders_a_saved_study_without_touching_its_records(tmp_path, capsys):
    study = synthetic_study()
    study.write(tmp_path, plots=False)
    before = {n: (tmp_path / n).read_bytes() for n in ("runs.csv", "study.json")}
    (tmp_path / "report.txt").unlink()
    (tmp_path / "summary.csv").unlink()
    assert cli.main(["report", str(tmp_path), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(study.report().rstrip("\n")[:200])
    assert (tmp_path / "report.txt").read_text() == study.report() + "\n"
    assert (tmp_path / "summary.csv").is_file() and (tmp_path / "report.html").is_file()
    assert {n: (tmp_path / n).read_bytes() for n in before} == before  # the records, unchanged
    other = tmp_path / "elsewhere"
    assert cli.main(["report", str(tmp_path / "study.json"), "--out", str(other), "--no-plots"]) == 0
    assert (other / "report.txt").read_text() == study.report() + "\n"
    assert cli.main(["report", str(tmp_path / "nothing")]) == 2
    assert "no study.json at" in capsys.readouterr().err


def test_the_report_puts_results_first_then_the_protocol():
    text = synthetic_study().report()
    overall, table, protocol = text.find("== Overall"), text.find("== digits"), text.find("Protocol")
    assert 0 <= overall < table < protocol, (overall, table, protocol)


def test_the_study_api_lists_what_users_call_and_the_errors_it_raises():
    api = set(compare.__all__)
    assert {"study", "Study", "Plan", "Problem", "Contender", "contender", "compare_studies"} <= api
    assert {"ResumeError", "PreflightError", "PlanError"} <= api
    assert not api & {"build_parser", "main", "StudyProgress", "engine", "report", "cli"}
    for name in api:
        assert getattr(compare, name) is not None


class _ClosedPipe(io.TextIOBase):
    """Standard output whose reader has gone (``| head`` after its lines): every write is a broken pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path, monkeypatch):
    """``mxopt-jax report DIR | head``: no BrokenPipeError escapes (status 1, as Python's docs do for SIGPIPE),
    and the files were written before the report was printed."""
    synthetic_study().write(tmp_path, plots=False)
    (tmp_path / "report.txt").unlink()
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["report", str(tmp_path), "--no-plots"]) == 1
    assert (tmp_path / "report.txt").is_file() and (tmp_path / "summary.csv").is_file()


def test_a_closed_pipe_prints_no_traceback(tmp_path):
    """The same through a real pipe closed by its reader, in a process of its own (what a shell does)."""
    synthetic_study().write(tmp_path, plots=False)
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mxopt_jax", "report", str(tmp_path), "--no-plots"],
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
        )
        assert proc.stdout is not None
        proc.stdout.close()  # the reader is gone before the first line
        assert proc.wait(timeout=120) == 1
    text = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in text and "BrokenPipeError" not in text, text


def test_the_lines_compare_prints_fit_120_columns():
    """The main job's own header (contenders on problems; the folder) and its closing "Wrote into" line were
    174 and 293 characters: they wrap at 120, continuations indented, a path never broken."""
    from mxopt_jax.compare.cli import _fill

    folder = "/tmp/" + "x" * 130  # longer than a line: kept whole
    text = _fill("Wrote into /tmp/out: " + ", ".join(f"file{k}.csv" for k in range(40)) + " " + folder)
    lines = text.splitlines()
    assert len(lines) > 2 and all(line.startswith("  ") for line in lines[1:])
    assert all(len(line) <= 120 for line in lines if folder not in line) and folder in text.split()
