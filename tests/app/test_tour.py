"""The visual tour (``mxopt-jax tour``), the runs behind it (the study's engine, the problems' trace) and the
plots they draw.

The programs are compiled once for the module: the command line runs in-process first (:func:`cli`), and the
tour keeps its programs (:data:`mxopt_jax.compare.tour.runner.KEPT_PROGRAMS`), so the tests below that run the
same tasks, groups of contenders and steps reuse them (a rate and a seed are inputs of a program).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from mxopt_jax import FAMILIES, OPTIMIZERS
from mxopt_jax.compare import cli as app_cli
from mxopt_jax.compare import engine, style, tour
from mxopt_jax.compare.contenders import mxopt_contender
from mxopt_jax.compare.problems.base import Problem
from mxopt_jax.compare.progress import StudyProgress
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.report.export import records_equal
from mxopt_jax.compare.tour import Result, runner
from mxopt_jax.compare.tour import functions as testfns
from mxopt_jax.compare.tour import plots as plotting

PIL_Image = pytest.importorskip("PIL.Image")
pytest.importorskip("matplotlib")

STEPS = 5  # every run of this module: the programs compiled by the command line serve the other tests
NAMES = ("adam", "ftml", "sgd")
# two families, so two programs per task; GroupAdaGrad needs 2-D weights: the MLP's biases go to AdaGrad
CLI_NAMES = ("adam", "ftml", "groupadagrad", "nadam")
PNGS = ("spiral.png", "rosenbrock.png", "beale.png", "saddle.png", "testfns_loss.png")


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("mxopt-jax")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mxopt_jax"]


def _main(argv: list[str]) -> tuple[int, str, str]:
    """``mxopt-jax ARGV`` in this process: ``(exit code, stdout, stderr)``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = app_cli.main(argv)
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def _table_rows(stdout: str, task: str) -> list[list[str]]:
    """The rows of one task's table: split fields, in printed (rank) order."""
    block = stdout.split(f"== {task}:", 1)[1].split("\n\n", 1)[0].splitlines()
    assert block[1].split()[:4] == ["rank", "contender", "lr", "final"], block[:3]
    return [line.split() for line in block[3:] if not line.startswith("(")]


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    argv = ["tour", "--tasks", "all", "--steps", str(STEPS), "--contenders", ",".join(CLI_NAMES)]
    code, stdout, stderr = _main([*argv, "--out", str(out)])
    assert code == 0, stderr
    return stdout, stderr, out


def test_cli_prints_ranked_tables(cli):
    stdout, _, _ = cli
    for task in tour.TASKS:
        rows = _table_rows(stdout, task)
        assert [r[0] for r in rows] == ["1", "2", "3", "4"]
        assert sorted(r[1] for r in rows) == sorted(CLI_NAMES)
        losses = [float(r[3]) for r in rows]
        assert losses == sorted(losses)
        for r in rows:
            assert float(r[2]) == pytest.approx(tour.learning_rate(task, r[1]), rel=1e-3)
            assert r[-2] == str(STEPS)  # steps
            assert float(r[-1]) > 0  # ms/step
        if task == "spiral":
            assert all(re.fullmatch(r"\d+\.\d%", r[4]) for r in rows)
    assert "Overall: mean rank over 4 task(s)" in stdout
    assert "results.csv" in stdout and "spiral.png" in stdout


def test_cli_progress_and_clean_output(cli):
    _, stderr, _ = cli
    # stderr is not a terminal here: the study's progress, one line per program (4 tasks x 2 families)
    progress = [line for line in stderr.splitlines() if re.match(r"\s*\d+% ", line)]
    assert len(progress) == 8 and "spiral/adaptive family" in progress[0] and "groupadagrad" in progress[0]
    assert progress[-1].startswith("100%") and "saddle/" in progress[-1]
    assert "Warning" not in stderr
    assert "\r" not in stderr


def test_cli_writes_valid_pngs_and_csv(cli):
    _, _, out = cli
    for name in PNGS:
        path = out / name
        assert path.stat().st_size > 5_000, name
        with PIL_Image.open(path) as im:
            im.verify()
        with PIL_Image.open(path) as im:
            assert im.format == "PNG"
            w, h = im.size
            assert 400 <= w <= 2000 and 150 <= h <= 1500, (name, im.size)
            colors = im.convert("RGB").getcolors(maxcolors=1 << 16)
            assert colors is None or len(colors) > 20, f"{name} looks blank"
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[0] == ",".join(tour.results.CSV_COLUMNS)
    assert lines[0].startswith("task,rank,contender,lr,final_loss")
    assert len(lines) == 1 + len(CLI_NAMES) * len(tour.TASKS)


def test_python_m_form_deprecated_optimizers_and_no_matplotlib(tmp_path):
    # -X importtime lists every module imported: a run without plots never imports matplotlib
    cmd = [sys.executable, "-X", "importtime", "-m", "mxopt_jax", "tour", "--optimizers", "ccsgd"]
    cmd += ["--tasks", "saddle", "--steps", "3", "--no-plots", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [r[1] for r in _table_rows(proc.stdout, "saddle")] == ["ccsgd"]
    imported = [
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "mxopt_jax.compare" in imported and "jax" in imported
    assert not [m for m in imported if m.startswith("matplotlib")]
    other = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    # the old spelling works, with the app's one notice
    assert "mxopt-jax: --optimizers is deprecated; it is now --contenders (same meaning)" in other
    assert not [line for line in other if "Warning" in line]  # ccsgd's DeprecationWarning is silenced
    assert "Overall" not in proc.stdout  # one task: no overall ranking
    assert not list(tmp_path.glob("*.png"))
    assert (tmp_path / "results.csv").exists()


def _one_error_line(err: str) -> str:
    """The error of a refused command: exactly one line (no usage block), a deprecation notice aside."""
    lines = [line for line in err.splitlines() if "is deprecated" not in line]
    assert len(lines) == 1 and "usage:" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "argument"),
    [
        (["--steps", "0"], "--steps"),
        (["--steps", "ten"], "--steps"),
        (["--contenders", "adam,nosuch"], "--contenders"),
        (["--contenders", ","], "--contenders"),
        (["--optimizers", "adam,nosuch"], "--optimizers"),
        (["--tasks", "spiral,moons"], "--tasks"),
        (["--seed", "1.5"], "--seed"),
        (["--contend", "adam"], "--contend"),  # no abbreviations: one spelling per flag
    ],
)
def test_bad_arguments_name_the_argument(argv, argument, tmp_path):
    code, _, err = _main(["tour", *argv, "--out", str(tmp_path / "out")])
    assert code == 2
    line = _one_error_line(err)
    # a bad value is the tour's error; an unknown flag the command line's (parsed before the sub-command)
    assert line.startswith(("mxopt-jax tour: error:", "mxopt-jax: error:")) and argument in line
    if "nosuch" in argv[1]:
        assert "'nosuch'" in line and "ftml" in line  # names the culprit and lists the known names
    assert not (tmp_path / "out").exists()  # a refused command leaves nothing behind


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("adam", "expected NAME=RATE"),
        ("adam=", "expected NAME=RATE"),
        ("nosuch=0.1", "unknown contender 'nosuch'"),
        ("adam=fast", "not a number: 'fast'"),
        ("adam=0", "must be a positive number"),
        ("adam=-0.1", "must be a positive number"),
        ("adam=nan", "must be a positive number"),
        ("adam=0.1,adam=0.2", "given twice"),
        (",", "expected NAME=RATE"),
        ("lamb=0.1", "'lamb' not among the contenders (--contenders adam,ftml)"),
    ],
)
def test_lr_override_errors(value, message, tmp_path):
    argv = ["tour", "--contenders", "adam,ftml", "--lr", value, "--no-plots", "--out", str(tmp_path / "out")]
    code, out, err = _main(argv)
    assert code == 2 and not out
    line = _one_error_line(err)
    assert line.startswith("mxopt-jax tour: error: argument --lr") and message in line
    assert not (tmp_path / "out").exists()


def test_an_unusable_folder_is_refused_before_anything_runs(tmp_path):
    afile = tmp_path / "file"
    afile.write_text("")
    for out, reason in ((afile, "is a file"), (afile / "below", "which is a file")):
        code, stdout, err = _main(["tour", "--contenders", "sgd", "--tasks", "saddle", "--out", str(out)])
        assert code == 2 and not stdout  # nothing ran
        line = _one_error_line(err)
        assert line.startswith("mxopt-jax tour: error: --out:") and reason in line
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_lr_override_parses_and_changes_the_runs(cli, tmp_path):
    """--lr sets one contender's rate and leaves the others at their tuned ones (the CLI and tour.run; the
    spiral task takes the same path, drawn by the CLI test above); another rate compiles nothing."""
    from mxopt_jax.compare.tour.cli import _lr_arg

    assert _lr_arg(" Adam=1e-2, ftml = 0.1 ") == {"adam": 0.01, "ftml": 0.1}
    kept = dict(runner._programs)
    argv = ["tour", "--contenders", "adam,nadam", "--tasks", "beale", "--steps", str(STEPS)]
    code, out, err = _main([*argv, "--no-plots", "--out", str(tmp_path), "--lr", "adam=0.0123"])
    assert code == 0, err
    assert "except adam=0.0123 (--lr)" in out.splitlines()[0]
    assert "compiled before" in err
    tuned = testfns.LEARNING_RATES["beale"]
    rows = {r[1]: r for r in _table_rows(out, "beale")}
    assert {k: float(r[2]) for k, r in rows.items()} == {
        "adam": 0.0123,
        "nadam": pytest.approx(tuned["nadam"]),
    }
    a, n = tour.run(["adam", "nadam"], ["beale"], steps=STEPS, learning_rates={"adam": 0.0123})["beale"]
    assert a.learning_rate == 0.0123 and n.learning_rate == pytest.approx(tuned["nadam"])
    assert float(rows["adam"][3]) == pytest.approx(a.final_loss, rel=1e-3)
    assert runner._programs == kept  # rates are inputs of the programs the CLI compiled
    alone = tour.run(["adam"], ["beale"], steps=STEPS, learning_rates={"adam": 0.0123})["beale"][0]
    assert a.final_loss == alone.final_loss  # compiled alone (one more program), the same run
    assert a.final_loss != tour.run(["adam"], ["beale"], steps=STEPS)["beale"][0].final_loss
    assert len(runner._programs) == len(kept) + 1  # the tuned rate ran in that program too
    with pytest.raises(ValueError, match="not among"):
        tour.run(["adam"], ["beale"], steps=1, learning_rates={"ftml": 0.1})
    with pytest.raises(ValueError, match="contenders: unknown 'nosuch'"):
        tour.run(["nosuch"], ["beale"])
    with pytest.raises(ValueError, match="tasks: unknown 'moons'"):
        tour.run(["adam"], ["moons"])


def test_missing_matplotlib_still_prints_table(cli, tmp_path, monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, mod, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    plotting._background.cache_clear()
    argv = ["tour", "--contenders", "adam,nadam", "--tasks", "saddle", "--steps", str(STEPS)]
    argv += ["--out", str(tmp_path)]
    code, out, err = _main(argv)
    assert code == 0
    assert "pip install 'mxopt_jax[plot]'" in err
    assert sorted(r[1] for r in _table_rows(out, "saddle")) == ["adam", "nadam"]
    assert not list(tmp_path.glob("*.png"))


def test_the_tour_shows_the_study_progress_bar():
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    p = StudyProgress(tty, desc="tour")
    p("saddle/SGD family: sgd 0.1", 0.5)
    p("done", 1.0)
    assert p.bar and tty.getvalue().count("\r") >= 2 and "tour" in tty.getvalue() and "100%" in tty.getvalue()


# --------------------------------------------------------------------------- the runs behind it
def test_runs_record_the_path_and_match_the_function(cli):
    by_fn = tour.run(CLI_NAMES, testfns.FUNCTIONS, steps=STEPS, seed=0)  # the CLI's programs
    assert list(by_fn) == list(testfns.FUNCTIONS)
    for task, (r, *others) in by_fn.items():
        assert [x.task for x in (r, *others)] == [task] * 4 and [x.name for x in others] == list(
            CLI_NAMES[1:]
        )
        fn = testfns.FUNCTIONS[r.task]
        assert r.trajectory.shape == (STEPS + 1, 2) and r.losses.shape == (STEPS + 1,)
        np.testing.assert_allclose(r.trajectory[0], fn.start)
        values = np.asarray(jax.jit(jax.vmap(fn.fn))(r.trajectory.astype(np.float32)))
        np.testing.assert_allclose(r.losses, values, rtol=1e-5)
        assert r.final_loss == r.losses[-1] and math.isnan(r.accuracy) and r.accuracies is None
        assert r.learning_rate == testfns.LEARNING_RATES[r.task]["adam"]
        assert r.records.problem == task and r.records.eval_steps.tolist() == list(range(1, STEPS + 1))
    # a contender compiled alone runs exactly as in its family's program, and as the engine's unbatched run
    ftml = by_fn["beale"][1]
    alone = tour.run(["ftml"], ["beale"], steps=STEPS)["beale"][0]
    np.testing.assert_array_equal(alone.trajectory, ftml.trajectory)
    ref = engine.run_one(tour.problem("beale"), mxopt_contender("ftml"), ftml.learning_rate, 0, steps=STEPS)
    np.testing.assert_allclose(ref[4], ftml.trajectory[1:], rtol=1e-6)
    np.testing.assert_allclose(ref[1], ftml.losses[1:], rtol=1e-6)
    # SGLD's noise follows the run's seed (an input: one program for every seed)
    s0, s1, again = (tour.run(["sgld"], ["beale"], steps=STEPS, seed=k)["beale"][0] for k in (0, 1, 0))
    assert not np.array_equal(s0.trajectory, s1.trajectory)
    np.testing.assert_array_equal(s0.trajectory, again.trajectory)
    assert s0.compile_s == s1.compile_s == again.compile_s  # the same program


def test_the_spiral_task_is_full_batch_with_accuracy_as_its_trace(cli):
    r, _ = tour.run(["adam", "nadam"], ["spiral"], steps=STEPS)["spiral"]  # the CLI's program
    rec = r.records
    # full batch: the loss before step k+1 (training) is the loss after step k (the metric, the whole set)
    np.testing.assert_allclose(rec.train_loss[0, 0, 1:], rec.val[0, 0, :-1], rtol=1e-5)
    assert r.accuracies.shape == (STEPS,) and ((0 <= r.accuracies) & (r.accuracies <= 1)).all()
    assert r.accuracy == r.accuracies[-1] and r.trajectory is None and r.losses.shape == (STEPS + 1,)
    p = tour.problem("spiral")
    x, y = tour.spiral_dataset()
    np.testing.assert_array_equal(p.data().val[0], x)  # the same set for every run and seed
    assert p.data().train[0].shape == (1, *x.shape) and p.batch_size == 1 and p.eval_every == 1


def test_trace_records_round_trip_and_slice():
    r = _fake("adam", "beale", 0.1)
    rec = r.records
    back = Records.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert records_equal([rec], [back]) and back.trace.shape == rec.trace.shape == (1, 1, 20, 2)
    np.testing.assert_array_equal(back.trace, rec.trace)
    nan = Records.from_dict(json.loads(json.dumps(_records(rec, trace=rec.trace * np.nan).to_dict())))
    assert np.isnan(nan.trace).all()
    two = _records(rec, lrs=[0.1, 0.2], trace=np.concatenate([rec.trace, 2 * rec.trace]))
    np.testing.assert_array_equal(two.take(1).trace, 2 * rec.trace)
    # without a trace, nothing changes: no key written, None read back (study files made before the trace)
    plain = _records(rec, trace=None)
    assert "trace" not in plain.to_dict() and Records.from_dict(plain.to_dict()).trace is None
    with pytest.raises(ValueError, match="Records.trace must be"):
        _records(rec, trace=rec.trace[:, :, :-1])
    with pytest.raises(TypeError, match="`trace` must be None or callable"):
        Problem(**{**_problem_fields(tour.problem("beale")), "trace": 3})


def _problem_fields(p: Problem) -> dict:
    import dataclasses

    return {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}


def test_learning_rate_tables_cover_every_optimizer():
    assert set(tour.TUNED_LR) == set(OPTIMIZERS)
    for fn in testfns.FUNCTIONS:
        assert set(testfns.LEARNING_RATES[fn]) == set(OPTIMIZERS)
    assert set(tour.DEFAULT_OPTIMIZERS) == set(OPTIMIZERS) and len(OPTIMIZERS) == 22
    assert sorted(n for members in FAMILIES.values() for n in members) == sorted(OPTIMIZERS)


def test_testfns_minima():
    for fn in testfns.FUNCTIONS.values():
        f = jax.jit(fn.fn)
        assert float(f(np.asarray(fn.minimum, np.float32))) == pytest.approx(0.0, abs=1e-6)
        assert float(f(fn.start_point())) > 0.5
    f = jax.jit(jax.grad(testfns.saddle))
    np.testing.assert_array_equal(f(np.zeros(2, np.float32)), [0.0, 0.0])  # the saddle point
    assert float(testfns.saddle(np.zeros(2, np.float32))) == 1.0


def _records(base: Records, **changes) -> Records:
    import dataclasses

    if "lrs" in changes:  # more configurations: every array of the base repeated along G
        g = len(changes["lrs"])
        for k in ("train_loss", "val", "test", "steps_to_target", "diverged_at"):
            changes.setdefault(k, np.repeat(np.asarray(getattr(base, k)), g, axis=0))
    return dataclasses.replace(base, **changes)


def _fake(
    name: str,
    task: str,
    final: float,
    steps: int = 20,
    seed: int = 0,
    ms: float | None = None,
    scale: float = 1.0,
) -> Result:
    """A run's records as the engine would return them, made up on the host."""
    rng = np.random.default_rng(seed)
    losses = (np.exp(-np.linspace(0, 3 + seed, steps + 1)) + final) * scale
    losses[-1] = final * scale
    if task == "spiral":
        trace = np.linspace(0.3, min(0.9 + 0.004 * seed, 1.0), steps)
    else:
        fn = testfns.FUNCTIONS[task]
        trace = np.asarray(fn.start) + np.cumsum(rng.normal(0, 0.05, (steps, 2)), axis=0)
    ms = (0.5 if task == "spiral" else 0.01) if ms is None else ms
    rec = Records(
        contender=name,
        problem=task,
        lrs=[0.1],
        seeds=[seed],
        eval_steps=np.arange(1, steps + 1),
        train_loss=losses[None, None, :-1],
        val=losses[None, None, 1:],
        test=losses[None, None, 1:],
        steps_to_target=np.full((1, 1), np.inf),
        run_s=ms * steps / 1e3,
        trace=trace[None, None],
    )
    return Result(rec)


def test_format_table_ranks_nan_last():
    rs = [_fake("sgd", "spiral", math.nan), _fake("adam", "spiral", 0.5), _fake("nag", "spiral", 0.1)]
    rs.append(_fake("lamb", "spiral", math.inf))
    lines = tour.format_table(rs, title="T").splitlines()
    assert lines[0] == "T"
    assert [line.split()[1] for line in lines[3:-1]] == ["nag", "adam", "lamb", "sgd"]
    assert [line.split()[3] for line in lines[3:-1]][2:] == ["diverged", "diverged"]  # both last, one rank
    assert "accuracy" in lines[1]
    fn_table = tour.format_table([_fake("sgd", "beale", 0.1)])
    assert "accuracy" not in fn_table
    overall = tour.format_overall({"spiral": rs, "beale": [_fake(n, "beale", 0.1) for n in ("sgd", "nag")]})
    assert "mean rank" in overall


def test_ties_share_a_rank_and_the_overall_table_uses_them(tmp_path):
    from mxopt_jax.compare.tour import results as res

    x = 0.123456789
    rs = [
        _fake("test", "spiral", x),
        _fake("sgd", "spiral", x * (1 + 1e-7)),  # a float32 rounding apart: ties
        _fake("nag", "spiral", 0.05),
        _fake("ccsgd", "spiral", x),
        _fake("adam", "spiral", x * (1 + 1e-4)),  # a real difference: does not tie
        _fake("lamb", "spiral", math.nan),
        _fake("lans", "spiral", math.nan),
    ]
    ranked = res.with_ranks(rs)
    assert [(k, r.name) for k, r in ranked] == [
        (1, "nag"),
        (2, "ccsgd"),  # ties listed by name
        (2, "sgd"),
        (2, "test"),
        (5, "adam"),
        (6, "lamb"),
        (6, "lans"),
    ]
    assert res.ranks(rs)["sgd"] == 2 and [r.name for r in tour.ranked(rs)][:2] == ["nag", "ccsgd"]
    table = tour.format_table(rs).splitlines()
    assert [line.split()[0] for line in table[2:9]] == ["1", "2", "2", "2", "5", "6", "6"]
    assert "equal ranks" in table[-1] and "1e-06" in table[-1]
    assert "equal ranks" not in tour.format_table(rs[2:5:2])
    # no tie, but alike to 4 digits: the table prints enough digits to tell them apart
    close = [_fake("adam", "beale", 0.00852653943), _fake("adamw", "beale", 0.00852657016)]
    close.append(_fake("nag", "beale", 0.5))
    assert [line.split()[:4:3] for line in tour.format_table(close).splitlines()[2:]] == [
        ["1", "0.0085265"],
        ["2", "0.0085266"],
        ["3", "0.5"],
    ]
    # the overall table averages the shared ranks (and ties on equal means share its rank too)
    fn = [_fake(n, "beale", v) for n, v in (("test", 0.5), ("sgd", 0.5), ("nag", 0.1), ("ccsgd", 0.5))]
    fn += [_fake(n, "beale", 1.0) for n in ("adam", "lamb", "lans")]
    overall = tour.format_overall({"spiral": rs, "beale": fn}).splitlines()
    rows = {line.split()[1]: line.split() for line in overall[3:]}
    assert rows["nag"][:3] == ["1", "nag", "1.00"]
    for name in ("ccsgd", "sgd", "test"):  # spiral 2, beale 2: mean 2.00, all three at overall rank 2
        assert rows[name] == ["2", name, "2.00", "2", "2"]
    assert rows["adam"] == ["5", "adam", "5.00", "5", "5"]
    assert [line.split()[1] for line in overall[3:]][:4] == ["nag", "ccsgd", "sgd", "test"]
    lines = tour.write_csv(tmp_path / "r.csv", {"spiral": rs}).read_text().splitlines()
    assert [line.split(",")[1] for line in lines[1:]] == ["1", "2", "2", "2", "5", "6", "6"]


def test_ms_per_step_has_one_format():
    from mxopt_jax.compare.report import cells
    from mxopt_jax.compare.tour.results import fmt_ms

    assert fmt_ms is cells.fmt_ms  # the study's report's format, not a copy
    got = [fmt_ms(v) for v in (0.000749, 0.0012, 0.154, 9.996, 12.34, 1234.5)]
    assert got == ["0.000749", "0.00120", "0.154", "10.0", "12.3", "1230"]
    rs = [_fake("sgd", "beale", 0.1, ms=5.123e-5), _fake("nag", "beale", 0.2)]
    cells = [line.split()[-1] for line in tour.format_table(rs).splitlines()[2:]]
    assert cells == ["0.0000512", "0.0100"]  # no exponent, 3 significant digits, milliseconds


# --------------------------------------------------------------------------- the figures
def _visible(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _named(text: str) -> set[str]:
    """The optimizer names that ``text`` (a title or legend label) mentions, as whole words."""
    return {n for n in OPTIMIZERS if re.search(rf"(?<![\w-]){n}(?![\w-])", text, re.IGNORECASE)}


def _labelled(ax):
    return [ln for ln in ax.get_lines() if ln.get_label() and not ln.get_label().startswith("_")]


def _check_curves(ax, names, with_legend=True):
    lines = _labelled(ax)
    assert lines, "empty axes"
    for ln in lines:
        y = np.asarray(ln.get_ydata(), float)
        assert len(y) > 1 and np.isfinite(y).all()
    colors = [ln.get_color() for ln in lines]
    dashes = [str(ln.get_linestyle()) + str(ln._dash_pattern) for ln in lines]
    assert len(set(colors)) == len(lines) and len(set(dashes)) == len(lines), "two curves drawn alike"
    assert all(_named(ln.get_label()) <= set(names) for ln in lines)
    legend = ax.get_legend()
    if with_legend:
        assert legend is not None
        assert [t.get_text() for t in legend.get_texts()] == [ln.get_label() for ln in lines]
    return lines


def _check_no_overlaps(fig):
    """Render ``fig`` and check that no two texts of different axes (tick labels, titles, axis labels, legend
    entries) overlap, and that no text overlaps another text of its own axes either."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for owner, ax in enumerate([fig, *fig.axes]):
        if not ax.get_visible():
            continue
        texts = (
            [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
            if ax is not fig
            else []
        )
        if ax is not fig:
            for axis, k, (lo, hi) in ((ax.xaxis, 0, ax.get_xlim()), (ax.yaxis, 1, ax.get_ylim())):
                lo, hi = min(lo, hi), max(lo, hi)  # tick labels outside the view are not drawn
                texts += [t for t in axis.get_ticklabels() if lo <= t.get_position()[k] <= hi]
        legend = ax.get_legend() if ax is not fig else None
        texts += list(legend.get_texts()) if legend else []
        if ax is fig:
            texts += [t for leg in fig.legends for t in leg.get_texts()]
            texts += [fig._suptitle] if fig._suptitle else []
        for t in texts:
            if t.get_visible() and t.get_text().strip():
                boxes.append((owner, t.get_text(), t.get_window_extent(renderer)))
    w, h = canvas.get_width_height()
    for i, (o1, s1, b1) in enumerate(boxes):
        assert b1.x0 >= -1 and b1.y0 >= -1 and b1.x1 <= w + 1 and b1.y1 <= h + 1, f"{s1!r} leaves the figure"
        for o2, s2, b2 in boxes[i + 1 :]:
            overlap = (
                min(b1.x1, b2.x1) - max(b1.x0, b2.x0) > 0.5 and min(b1.y1, b2.y1) - max(b1.y0, b2.y0) > 0.5
            )
            assert not overlap, f"{s1!r} (axes {o1}) overlaps {s2!r} (axes {o2})"


def _check_curve_grid(fig, nrows, names):
    """Rows x families of curves; one legend per column, under its bottom panel, naming every curve."""
    axes = np.asarray(_visible(fig)).reshape(nrows, -1)
    for col in axes.T:
        labels = [ln.get_label() for ln in _check_curves(col[-1], names)]
        for ax in col[:-1]:
            assert ax.get_legend() is None
            assert [ln.get_label() for ln in _check_curves(ax, names, with_legend=False)] == labels
        assert col[-1].get_xlabel() == "step"
        # the column's title names exactly the optimizers drawn in it
        assert _named(col[0].get_title()) == set().union(*(_named(lb) for lb in labels))
    for row in axes:  # panels of a row show the same quantity: one y scale
        assert all(row[0].get_shared_y_axes().joined(row[0], ax) for ax in row)
        assert len({ax.get_ylim() for ax in row}) == 1
    for ax in axes.ravel():  # a shared scale still shows every curve whole
        lo, hi = sorted(ax.get_ylim())
        for ln in _labelled(ax):
            y = np.asarray(ln.get_ydata(), float)
            assert lo <= y.min() and y.max() <= hi, (ln.get_label(), (lo, hi), (y.min(), y.max()))
    return axes


ALL = tuple(OPTIMIZERS)
MANY = tuple(n for n in ALL if n not in ("adamw", "lars", "lans", "ftrl"))  # 18: family panels, some partial


def test_plot_training_large_selection_family_panels():
    rs = [_fake(n, "spiral", 0.01 * (i + 1), seed=i) for i, n in enumerate(ALL)]
    fig = plotting.plot_training(rs)
    axes = _check_curve_grid(fig, 2, ALL)
    assert axes.shape == (2, len(FAMILIES))
    assert axes[0, 0].get_ylabel() == "training loss" and axes[0, 0].get_yscale() == "log"
    assert axes[1, 0].get_ylabel() == "training accuracy (%)" and axes[1, 0].get_ylim() == (0, 102)
    assert [_named(ax.get_title()) for ax in axes[0]] == [set(m) for m in FAMILIES.values()]
    assert fig.get_suptitle()
    drawn = [t.get_text().split()[0] for ax in axes[-1] for t in ax.get_legend().get_texts()]
    assert sorted(drawn) == sorted(ALL)  # every optimizer appears exactly once per row
    assert "(lr 0.1)" in axes[-1, 0].get_legend().get_texts()[0].get_text()
    _check_no_overlaps(fig)


def test_panel_titles_and_legends_name_only_the_optimizers_that_ran():
    rs = [_fake(n, "spiral", 0.01 * (i + 1), seed=i) for i, n in enumerate(MANY)]
    fig = plotting.plot_training(rs)
    axes = _check_curve_grid(fig, 2, MANY)
    titles = [ax.get_title() for ax in axes[0]]
    assert _named(titles[-1]) == {"lamb"} and _named(titles[2]) == {"adam", "adamax", "nadam", "adabelief"}
    assert set().union(*map(_named, titles)) == set(MANY)
    legends = [t.get_text() for ax in axes[-1] for t in ax.get_legend().get_texts()]
    assert sorted(n for lb in legends for n in _named(lb)) == sorted(MANY)
    fns = {t: [_fake(n, t, 0.1, seed=i) for i, n in enumerate(MANY)] for t in testfns.FUNCTIONS}
    fns["beale"] = [
        _fake(n, "beale", 0.1, seed=i, scale=1e-6) for i, n in enumerate(MANY)
    ]  # another range: still whole
    fig = plotting.plot_function_losses(fns)
    axes = _check_curve_grid(fig, 3, MANY)
    assert all(axes[0, 0].get_shared_y_axes().joined(axes[0, 0], ax) for ax in axes.ravel())
    assert set().union(*(_named(ax.get_title()) for ax in axes[0])) == set(MANY)
    _check_no_overlaps(fig)
    fig = plotting.plot_family_trajectories("beale", fns["beale"])
    axes = _visible(fig)
    for ax in axes:
        lines = _check_curves(ax, MANY)
        assert _named(ax.get_title()) == {ln.get_label().split()[0] for ln in lines}
        assert len(ax.get_images()) == 1
    assert sorted(ln.get_label().split()[0] for ax in axes for ln in _labelled(ax)) == sorted(MANY)
    _check_no_overlaps(fig)


def _check_one_comparison(fig, names, n_axes):
    """Every optimizer on every axes (distinct colour and line style, the same on each); one figure legend."""
    axes = _visible(fig)
    assert len(axes) == n_axes
    styles = None
    for ax in axes:
        lines = _check_curves(ax, names, with_legend=False)
        assert ax.get_legend() is None
        assert [ln.get_label().split()[0] for ln in lines] == list(names)
        got = [(ln.get_color(), ln.get_linestyle()) for ln in lines]
        assert styles in (None, got)
        styles = got
    (legend,) = fig.legends
    assert [t.get_text().split()[0] for t in legend.get_texts()] == list(names)  # exactly those that ran
    _check_no_overlaps(fig)
    return axes


def test_small_selection_is_one_comparison_per_task():
    assert style.ONE_PANEL_MAX == 8
    names = ("ftml", "adam", "lamb")
    rs = [_fake(n, "spiral", 0.1 * (i + 1), seed=i) for i, n in enumerate(names)]
    loss, acc = _check_one_comparison(plotting.plot_training(rs), names, 2)  # the task's two quantities
    assert loss.get_yscale() == "log" and acc.get_ylim() == (0, 102)
    fns = {t: [_fake(n, t, 0.1, seed=i) for i, n in enumerate(names)] for t in testfns.FUNCTIONS}
    axes = _check_one_comparison(plotting.plot_function_losses(fns), names, 3)  # one axes per function
    assert [ax.get_title() for ax in axes] == list(testfns.FUNCTIONS)
    assert all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes)
    eight = ALL[:8]
    rs8 = [_fake(n, "spiral", 0.1, seed=i) for i, n in enumerate(eight)]
    _check_one_comparison(plotting.plot_training(rs8), eight, 2)
    assert len(_visible(plotting.plot_training([*rs8, _fake("adam", "spiral", 0.1)]))) == 2 * 3  # 9: families
    fig = plotting.plot_overlay("rosenbrock", fns["rosenbrock"])
    (ax,) = _visible(fig)
    lines = _check_curves(ax, names, with_legend=False)
    assert [ln.get_label() for ln in lines] == [t.get_text() for t in fig.legends[0].get_texts()]
    assert {n for ln in lines for n in _named(ln.get_label())} == set(names)
    _check_no_overlaps(fig)


def test_cli_small_selection_draws_one_axes_per_task(tmp_path, monkeypatch):
    drawn = {}
    monkeypatch.setattr(
        style, "save", lambda fig, path, **kw: drawn.setdefault(Path(path).name, fig) and path
    )
    results = {t: [_fake(n, t, 0.1, seed=i) for i, n in enumerate(NAMES)] for t in tour.TASKS}
    plotting.save_all(results, tmp_path)
    assert sorted(drawn) == sorted(PNGS)
    assert len(_visible(drawn["spiral.png"])) == 2
    for task in testfns.FUNCTIONS:
        assert len(_visible(drawn[f"{task}.png"])) == 1
    many = {t: [_fake(n, t, 0.1, seed=i) for i, n in enumerate(MANY)] for t in tour.TASKS}
    drawn.clear()
    plotting.save_all(many, tmp_path)
    assert len(_visible(drawn["rosenbrock.png"])) == len(MANY)  # one panel per optimizer


def test_plot_trajectories_and_overlay():
    rs = [_fake(n, "rosenbrock", 0.1 * i, seed=i) for i, n in enumerate(ALL)]
    rs[3] = _fake(rs[3].name, "rosenbrock", rs[2].final_loss, seed=3)  # a tie: both panels say rank 3
    fig = plotting.plot_trajectories("rosenbrock", rs)
    axes = _visible(fig)
    assert len(axes) == len(ALL)
    titles = [ax.get_title() for ax in axes]
    assert titles[0].startswith("1. sgd")  # best first
    assert (
        titles[2].startswith("3. sgld") and titles[3].startswith("3. signum") and titles[4].startswith("5.")
    )
    for ax, r in zip(axes, tour.ranked(rs), strict=True):
        assert _named(ax.get_title()) == {r.name}
        assert len(ax.get_images()) == 1  # the function's contours
        traj = [ln for ln in ax.get_lines() if ln.get_label() == r.name]
        assert len(traj) == 1 and np.isfinite(traj[0].get_xydata()).all()
        np.testing.assert_allclose(traj[0].get_xydata(), r.trajectory)
        assert ax.get_xlim() == testfns.FUNCTIONS["rosenbrock"].xlim
    _check_no_overlaps(fig)
    fig = plotting.plot_overlay("saddle", [_fake(n, "saddle", 0.1, seed=i) for i, n in enumerate(NAMES)])
    (ax,) = _visible(fig)
    _check_curves(ax, NAMES, with_legend=False)
    assert ax.get_xlabel() == "x" and ax.get_title() and len(ax.get_images()) == 1
    fig = plotting.plot_family_trajectories("beale", rs)
    axes = _visible(fig)
    assert [_named(ax.get_title()) for ax in axes] == [set(m) for m in FAMILIES.values()]
    for ax, members in zip(axes, FAMILIES.values(), strict=True):
        lines = _check_curves(ax, members)
        assert [ln.get_label().split()[0] for ln in lines] == list(members)
        assert len(ax.get_images()) == 1
    # legends as long as real ones ("adadelta (0.1): 7.9e-04"): one column each, no legend runs into the next
    long = [_fake(n, "saddle", 7.9e-4 * 10**-i, seed=i) for i, n in enumerate(ALL)]
    _check_no_overlaps(plotting.plot_family_trajectories("saddle", long))


def test_plot_time_per_step_and_save(tmp_path):
    rs = [_fake(n, "spiral", 0.1, seed=i, ms=0.1 * (i + 1)) for i, n in enumerate(NAMES)]
    fig = plotting.plot_time_per_step(rs)
    (ax,) = _visible(fig)
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_yticklabels()] == list(NAMES)
    assert [t.get_text() for t in ax.texts] == ["0.100", "0.200", "0.300"]  # the tables' ms/step format
    path = style.save(fig, tmp_path / "t.png")
    with PIL_Image.open(path) as im:
        assert im.format == "PNG" and im.mode == "P" and im.size == (480, 156)  # 6 x 1.95 inches at 80 dpi
    full = style.png_bytes(fig, colors=None)
    assert full.startswith(b"\x89PNG") and len(full) > path.stat().st_size
    with pytest.raises(ValueError, match="no results"):
        plotting.plot_training([])
