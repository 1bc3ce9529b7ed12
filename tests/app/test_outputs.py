"""Where researchers read a study: pandas DataFrames, the reloaded study (``Study.from_json``), the HTML report
(a notebook's display and ``report.html``, opened in a real browser where chromium is installed), the plots and
the progress bar. A study assembled from synthetic records (no training) keeps these tests at seconds."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mxopt_jax.compare import analysis as A
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import protocol as P
from mxopt_jax.compare.analysis import analyse
from mxopt_jax.compare.plan import Plan
from mxopt_jax.compare.problems.base import Problem
from mxopt_jax.compare.progress import StudyProgress
from mxopt_jax.compare.records import Records, canonical
from mxopt_jax.compare.report import export, plots
from mxopt_jax.compare.result import ProgramResult
from mxopt_jax.compare.study import Study

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")


def _problem(name: str, title: str, metric: str, target: float, steps: int = 200, every: int = 20) -> Problem:
    def nothing(*args):
        raise AssertionError("synthetic problem: it has no data")

    return Problem(
        name, title, f"synthetic {name}", nothing, nothing, nothing, nothing, metric, target, 2 * steps, 32, every,
        quick_steps=steps,
    )  # fmt: skip


#: contender -> (its best rate, in decades above its default rate; its quality, 0 best)
BEHAVIOUR = {"adam": (0.2, 0.2), "sgd": (-0.4, 0.6), "ftml": (1.4, 0.4), "optax.adam": (-0.1, 0.25)}


def _records(p, name, family, lrs, seed_list, role, center, rng, diverge) -> Records:
    """Smooth synthetic runs of contender ``name`` on problem ``p``: slow below its best rate, worse above it,
    diverged far above (with ``diverge``, selection runs only)."""
    chance, best = (90.0, 2.0) if "%" in p.metric_name else (0.69, 0.13)
    steps = p.eval_every * np.arange(1, p.quick_steps // p.eval_every + 1)
    mu, quality = BEHAVIOUR[name]
    x = np.log10(np.asarray(lrs) / center) - mu
    slow = np.clip(-x / 2.5, 0, 1) ** 1.5
    gap = best * (1 + quality)
    final = gap + (chance - gap) * slow + 0.3 * best * np.maximum(x, 0) ** 2
    noise = rng.normal(0, 0.06 * gap, (len(lrs), len(seed_list)))
    t = np.arange(1, len(steps) + 1) / len(steps)
    curve = np.exp(-(3 + 8 * (1 - slow))[:, None, None] * t[None, None, :])
    val = (final[:, None] + noise)[:, :, None] * (1 - curve) + chance * curve
    test, loss = val * 1.02, val / 10
    if diverge and role == "selection":
        bad = np.broadcast_to((x > 1.1)[:, None, None], val.shape)
        val, test, loss = (np.where(bad, np.nan, a) for a in (val, test, loss))
    hit = val <= p.target
    stt = np.where(hit.any(2), steps[np.argmax(hit, 2)], np.inf)
    return Records(
        name, p.name, lrs, np.asarray(seed_list), steps, loss, val, test, stt,
        role=role, compile_s=1.0, run_s=0.5, program=f"{p.name}/{family}",
    )  # fmt: skip


def synthetic_study(
    names=("adam", "sgd", "ftml", "optax.adam"), problems=None, diverge=True, studies=1
) -> Study:
    """A study as :func:`study` assembles it, from smooth synthetic records: ftml's best rate lies above its
    grid (its chosen rate is edge-flagged), rates far above the best diverge (with ``diverge``); ``studies``
    independent studies (each on the plan's seeds for it)."""
    rng = np.random.default_rng(0)
    problems = problems or [
        _problem("digits", "digits, MLP", "error %", 4.0),
        _problem("logreg", "logistic regression", "log-loss", 0.15),
    ]
    cs = C.resolve(list(names))
    preset = dataclasses.replace(P.PRESETS["quick"], grid_points=7, seeds=5, confirm_seeds=6)
    plan = Plan(preset, tuple(range(5)), tuple(range(1000, 1006)), studies=studies)
    results = []
    for p in problems:
        for family, members in C.group_by_family([c.name for c in cs], {c.name: c.family for c in cs}):
            work = []
            for k in range(studies):
                seeds, confirm = list(plan.seeds_of(k)), list(plan.confirm_seeds_of(k))
                recs = {}
                for c in (c for c in cs if c.name in members):
                    sel = _records(
                        p,
                        c.name,
                        family,
                        preset.grid(c.default_lr),
                        seeds,
                        "selection",
                        c.default_lr,
                        rng,
                        diverge,
                    )
                    chosen = P.select(sel, p)
                    both = _records(
                        p, c.name, family, [chosen.lr, c.default_lr], confirm, "confirmation", c.default_lr, rng,
                        diverge,
                    )  # fmt: skip
                    recs[c.name] = {
                        role: dataclasses.replace(r, study=k)
                        for role, r in (
                            ("selection", sel),
                            ("confirmation", both.take(0)),
                            ("default", dataclasses.replace(both.take(1), role="default")),
                        )
                    }
                work.append(recs)
            results.append(
                ProgramResult(
                    p.name,
                    f"{p.name}/{family}",
                    list(members),
                    work[0],
                    {members[0]: 0.0},
                    1.0,
                    1,
                    35,
                    200,
                    repeats=work[1:],
                )  # fmt: skip
            )
    return Study.assemble(plan, problems, cs, results, wall_s=12.0)


@pytest.fixture(scope="module")
def synthetic() -> Study:
    return synthetic_study()


@pytest.fixture(scope="module")
def written(synthetic, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("study")
    synthetic.write(out)
    return out


# --------------------------------------------------------------------------- pandas
def test_to_pandas_is_tidy_and_is_the_csv_files(synthetic, written):
    runs, summary = synthetic.to_pandas()
    assert len(runs) == sum(r.val.size for r in synthetic.all_records())
    assert runs["seed"].dtype == np.int64 and runs["step"].dtype == np.int64
    assert runs["lr"].dtype == np.float64 and runs["diverged"].dtype == bool
    assert set(runs["role"]) == {"selection", "confirmation", "default"}
    csv_runs = export.read_csv(written / "runs.csv")
    assert list(csv_runs.columns) == list(runs.columns)
    for col in ("lr", "seed", "step", "train_loss", "val", "test"):
        np.testing.assert_array_equal(csv_runs[col].to_numpy(), runs[col].to_numpy())
    np.testing.assert_array_equal(csv_runs["diverged"].to_numpy() == 1, runs["diverged"].to_numpy())
    csv_summary = export.read_csv(
        written / "summary.csv", keep_default_na=False, na_values={"test_mean": ["nan"]}
    )
    assert list(csv_summary.columns) == list(summary.columns) and len(summary) == 2 * 2 * 4
    assert summary["on_edge"].isin(["", "low", "high"]).all()
    tuned = summary[summary["mode"] == "tuned"]
    assert (tuned.loc[tuned["contender"] == "ftml", "on_edge"] == "high").all()


def test_a_grid_rate_is_one_value_everywhere(synthetic):
    """The same grid point computed two ways is one float (Records store rates canonically), so a pivot of
    the runs on the rate has one column per rate, and the summary's rate is one of the runs' rates."""
    a, b = 1e-3 * 10.0**-2.5, 10.0 ** (np.log10(1e-3) - 2.5)  # a grid point, and the same one shifted
    assert a != b and canonical(a) == canonical(b)
    runs, summary = synthetic.to_pandas()
    sel = runs[(runs["role"] == "selection") & (runs["step"] == runs["step"].max())]
    pivot = sel.pivot_table(index=["problem", "contender", "seed"], columns="lr", values="val", dropna=False)
    grid_rates = {float(x) for r in synthetic.all_records("selection") for x in r.lrs}
    assert set(pivot.columns) == grid_rates
    adam = sel[(sel["contender"] == "adam") & (sel["problem"] == "digits")]
    assert adam.groupby("lr").size().tolist() == [5] * 7  # 7 rates x 5 seeds, no rate split in two
    for _, row in summary.iterrows():
        assert row["lr"] in set(runs.loc[runs["contender"] == row["contender"], "lr"])
    rec = synthetic.all_records()[0]
    saved = json.loads(json.dumps(rec.to_dict()))
    assert all(type(s) is int for s in saved["seeds"]) and Records.from_dict(saved).seeds.dtype == np.int64


def test_to_pandas_without_pandas_names_the_extra(synthetic, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"mxopt_jax\[study\]"):
        synthetic.to_pandas()


# --------------------------------------------------------------------------- reload
def test_from_json_restores_report_write_and_plots(synthetic, written, tmp_path):
    back = Study.from_json(written / "study.json")
    assert back.report() == synthetic.report()
    assert [p.name for p in back.problems] == ["digits", "logreg"] and back.problems[0].target == 4.0
    assert back.families == synthetic.families and back.identical == synthetic.identical
    assert back.batching == synthetic.batching and back.seeds == [0, 1, 2, 3, 4]
    for mode in ("tuned", "one-shot"):
        for a, b in zip(back.selections(mode), synthetic.selections(mode), strict=True):
            assert (a.contender, a.lr, a.index, a.on_edge) == (b.contender, b.lr, b.index, b.on_edge)
            np.testing.assert_array_equal(a.test, b.test)
            assert a.report_seeds.dtype == np.int64
    again = back.write(tmp_path)
    assert {p.name for p in again} >= {
        "report.txt",
        "report.html",
        "sensitivity.png",
        "curves.png",
        "loss.png",
        "profile.png",
    }
    for name in ("report.txt", "runs.csv", "summary.csv"):
        assert (tmp_path / name).read_text() == (written / name).read_text(), name
    with pytest.raises(RuntimeError, match="restored from a saved study"):
        back.problems[0].data()


def test_from_json_of_an_old_file_says_what_it_lacks(written, tmp_path):
    doc = json.loads((written / "study.json").read_text())
    doc["format"] = "mxopt_jax.compare.study/1"
    (tmp_path / "old.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="read_document"):
        Study.from_json(tmp_path / "old.json")


def test_from_json_reloads_a_file_written_before_the_plan(synthetic, written, tmp_path):
    doc = json.loads((written / "study.json").read_text())
    plan = doc["meta"].pop("plan")
    doc["format"] = "mxopt_jax.compare.study/2"
    doc["meta"].update(
        {
            k: plan[k]
            for k in ("preset", "seeds", "confirm_seeds", "search", "trials", "search_seed", "schedule")
        }
    )
    (tmp_path / "old.json").write_text(json.dumps(doc))
    back = Study.from_json(tmp_path / "old.json")
    assert back.plan == synthetic.plan and back.report() == synthetic.report()


# --------------------------------------------------------------------------- HTML
def test_notebook_display_is_html_tables_and_figures(synthetic):
    page = synthetic._repr_html_()
    assert page.startswith("<div class='mxopt-study'>") and "<!DOCTYPE" not in page
    # two problems x (tuned, one-shot), the overall ranking of each mode, one-shot against tuned
    assert page.count("<table>") == 7
    assert "<h2>Overall ranking</h2>" in page and "mean rank" in page and "P(best)" in page
    assert "the performance profile, ms/step and the selection divergences read the selection runs" in page
    # sensitivity, validation curves, loss, profile; the ranks and each problem's results (issue 53)
    assert page.count("data:image/png;base64,") == 4 + 1 + 2
    for name in ("adam", "optax.adam", "ftml", "0.0791&gt;", "sgd"):
        assert name in page


def test_report_html_is_one_self_contained_page(written):
    page = (written / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "src='http" not in page and "href=" not in page  # nothing outside the file
    assert (
        page.count("data:image/png;base64,") == 4 + 1 + 2 and "Protocol" in page and "<details open>" in page
    )


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_html_opens_in_a_browser(written, tmp_path):
    """Headless chromium loads report.html: its tables are parsed and every embedded figure decodes."""
    page = (written / "report.html").read_text()
    probe = (
        "<script>window.addEventListener('load', () => { const imgs = [...document.images]; "
        "document.body.setAttribute('data-probe', JSON.stringify({tables: document.querySelectorAll('table').length, "
        "rows: document.querySelectorAll('tbody tr').length, images: imgs.length, "
        "decoded: imgs.filter(i => i.complete && i.naturalWidth > 100).length})); });</script>"
    )
    (tmp_path / "probe.html").write_text(page.replace("</body>", probe + "</body>"))
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
         "--dump-dom", (tmp_path / "probe.html").as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.split('data-probe="', 1)[1].split('"', 1)[0].replace("&quot;", '"'))
    assert found == {"tables": 7, "rows": 28, "images": 4, "decoded": 4}


# --------------------------------------------------------------------------- plots
def _axes_texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_sensitivity_band_is_the_tables_interval_and_edges_are_marked(synthetic):
    digits = synthetic.problems[0]
    recs = [r for r in synthetic.all_records("selection") if r.problem == "digits"]
    fig = plots.plot_sensitivity([digits], recs, synthetic.selections(), synthetic.families)
    ax = fig.axes[0]
    adam = next(r for r in recs if r.contender == "adam")
    final = adam.val[:, :, -1]
    final = final[np.isfinite(final).all(axis=1)]
    half = np.array([P.ci_halfwidth(v) for v in final])
    band = ax.collections[0].get_paths()[0].vertices[:, 1]  # adam is drawn first: the first band is its
    for end in (
        *(final.mean(1) - half),
        *(final.mean(1) + half),
    ):  # mean -+ the 95 % t half-width, not min-max
        assert np.isclose(band, end, rtol=1e-9, atol=0).any(), end
    assert not np.isclose(band, final.min(1)[0], rtol=1e-9, atol=0).any()
    markers = [line.get_marker() for line in ax.lines]
    assert ">" in markers  # ftml's chosen rate is the largest of its grid: flagged as in the tables
    title = fig.get_suptitle()
    assert "\n" not in title and len(title) < 60
    assert "95 % interval" in fig.get_supxlabel() and "diverged" in fig.get_supxlabel()


def test_nothing_diverged_says_nothing_of_divergence():
    s = synthetic_study(names=("adam", "optax.adam"), diverge=False)
    fig = plots.plot_sensitivity(s.problems, s.all_records("selection"), s.selections(), s.families)
    assert "diverged" not in fig.get_supxlabel() and "diverged" not in _axes_texts(fig)
    assert "edge" not in fig.get_supxlabel()


def test_log_axis_is_labelled_where_the_results_are(synthetic):
    digits = synthetic.problems[0]
    recs = [r for r in synthetic.all_records() if r.problem == "digits"]
    fig = plots.plot_curves([digits], recs, synthetic.selections(), synthetic.families)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    finals = [s.test_mean for s in synthetic.selections() if s.problem == "digits"]
    lo, hi = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    # a labelled tick inside the range where every contender ends (about 2 to 4 %)
    assert any(min(finals) * 0.8 <= t <= max(finals) * 1.25 for t in ticks), (ticks, finals)


def test_curves_show_the_reported_runs_and_the_training_loss(synthetic):
    digits = synthetic.problems[0]
    recs = [r for r in synthetic.all_records() if r.problem == "digits"]
    fig = plots.plot_curves([digits], recs, synthetic.selections(), synthetic.families)
    assert fig.axes[0].get_title() == "digits" and fig.axes[0].get_ylabel().startswith("validation error %")
    conf = next(r for r in recs if r.contender == "adam" and r.role == "confirmation")
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), conf.val[0].mean(axis=0))
    assert "confirmation seeds" in fig.get_supxlabel()
    loss = plots.plot_curves([digits], recs, synthetic.selections(), synthetic.families, what="loss")
    assert loss.axes[0].get_ylabel().startswith("training loss")
    np.testing.assert_allclose(loss.axes[0].lines[0].get_ydata(), conf.train_loss[0].mean(axis=0))


def test_no_profile_for_one_problem(synthetic):
    one = [s for s in synthetic.selections() if s.problem == "digits"]
    profile = analyse(one).rankings["tuned"].profile
    with pytest.raises(ValueError, match="two problems or more"):
        plots.plot_profile(profile)
    figs = plots.draw_all(
        synthetic.problems[:1], synthetic.all_records(), one, profile, families=synthetic.families
    )
    assert list(figs) == ["sensitivity.png", "curves.png", "loss.png"]


# --------------------------------------------------------------------------- progress
def test_progress_lines_in_a_log_and_a_bar_on_request(tmp_path):
    import io

    log = io.StringIO()
    p = StudyProgress(log)
    assert not p.bar  # not a terminal, no notebook: one line per step
    p("compiled x", 0.25)
    p("done", 1.0)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith(" 25%") and "compiled x" in lines[0]
    pytest.importorskip("tqdm")
    bar = io.StringIO()
    q = StudyProgress(bar, bar=True)
    q("half", 0.5)
    q("done", 1.0)
    assert "100%" in bar.getvalue() and "done" in bar.getvalue()


def test_summary_rows_are_the_summary_csv(synthetic, written):
    rows = export.summary_rows(synthetic.analysis.all_tables())
    with (written / "summary.csv").open(newline="") as f:
        assert rows == list(csv.DictReader(f))
    assert math.isfinite(float(rows[0]["test_mean"]))


# --------------------------------------------------------------------------- independent studies
def test_independent_studies_are_reported_across_and_reload(tmp_path):
    """``studies=2``: each study its own seeds; the report opens with the tables across the studies (the claims
    that hold whatever the tuning's luck, the chosen rate and the test value per study), and the files keep
    every study (runs.csv's ``study`` column, study.json reloads them)."""
    two = synthetic_study(studies=2)
    assert [s.seeds for s in two.studies()] == [[0, 1, 2, 3, 4], [100, 101, 102, 103, 104]]
    assert two.repeats[0].tuned["digits"]["adam"].report_seeds.tolist() == list(range(2000, 2006))
    text = two.report()
    assert text.startswith("== Verdict") and "== Across 2 independent studies" in text
    for name in ("digits", "logreg"):
        for mode in ("tuned", "one-shot"):
            assert f"== {name} [{mode}] across 2 independent studies" in text
    assert text.index("across 2 independent studies") < text.index("== Overall") < text.index("Protocol")
    two.write(tmp_path, plots=False)
    runs = export.read_csv(tmp_path / "runs.csv")
    assert sorted(runs["study"].unique()) == [0, 1] and set(runs[runs.study == 1].seed) >= {100, 2000}
    back = Study.from_json(tmp_path / "study.json")
    assert back.plan.studies == 2 and len(back.repeats) == 1 and back.report() == text
    assert "Across 2 independent studies" in (tmp_path / "report.html").read_text()
    assert "across" not in synthetic_study().report().split("== Overall")[0]  # one study: no such section


def test_contenders_identical_in_every_study_are_one_entry_across_them():
    two = synthetic_study(studies=2)
    tables = [list(s.tuned["digits"].values()) for s in two.studies()]
    both = A.across_studies(tables, [{"adam": ["optax.adam"]}, {"adam": ["optax.adam"]}])
    assert "optax.adam" not in both.names and both.identical == {"adam": ["optax.adam"]}
    one = A.across_studies(tables, [{"adam": ["optax.adam"]}, {}])  # identical in one study only: two entries
    assert "optax.adam" in one.names and one.identical == {}
    from mxopt_jax.compare.report import tables as T

    assert "adam (= optax.adam)" in T.format_across(both, "error %")
