"""The study's reports: text tables, CSV/JSON export and figures, on synthetic records (no training)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from mxopt_jax.compare import figures, serialize
from mxopt_jax.compare import protocol as P
from mxopt_jax.compare.analysis import analyse, analyse_table, mean_band
from mxopt_jax.compare.contenders import FAMILY_ORDER
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.report import export, plots, tables
from mxopt_jax.compare.report.text import describe

MXOPT = (
    "sgd", "nag", "signum", "sgld", "dcasgd", "lbsgd", "ccsgd", "test",
    "adagrad", "groupadagrad", "adadelta", "rmsprop", "ftrl", "ftml",
    "adam", "adamw", "adamax", "nadam", "adabelief",
    "lars", "lamb", "lans",
)  # fmt: skip
OPTAX = ("optax.sgd", "optax.adam", "optax.adamw", "optax.lamb")
IDENTICAL_TO_SGD = ("lbsgd", "ccsgd", "test")

#: (name, title, metric, target, chance level, best reachable)
PROBLEMS = (
    ("digits_mlp", "digits, MLP 64-128-10", "error %", 4.0, 90.0, 2.5),
    ("digits_cnn", "digits, small CNN", "error %", 3.0, 90.0, 1.8),
    ("charlm", "character LM, embedding + GRU", "val loss", 1.6, 3.3, 1.35),
    ("movielens_mf", "matrix factorization (row-sparse)", "RMSE", 0.95, 1.4, 0.88),
    ("logreg", "logistic regression (convex)", "loss", 0.32, 0.69, 0.30),
)


def problem(name: str = "digits_mlp") -> SimpleNamespace:
    """The fields of a Problem that the reports read."""
    row = next(r for r in PROBLEMS if r[0] == name)
    return SimpleNamespace(
        name=row[0],
        title=row[1],
        metric_name=row[2],
        target=row[3],
        description=f"synthetic {row[0]}",
        steps=400,
        quick_steps=200,
        batch_size=64,
    )


def synthetic_records(
    names=MXOPT + OPTAX, problems=PROBLEMS, points=7, seeds=5, evals=20, seed=0, one_shot=False
) -> list[Records]:
    """Records that look like a study: each contender has a best log-rate (somewhere around its grid's
    centre), is slow below it (towards chance level), diverges above it; seed noise; smooth curves."""
    rng = np.random.default_rng(seed)
    out = []
    base = {}
    for name in names:
        base[name] = (rng.uniform(-1.4, 1.4), rng.uniform(0.0, 1.0), rng.uniform(0.6, 1.3))
    for p_name, _, _, target, chance, best in problems:
        for name in names:
            src = "sgd" if name in IDENTICAL_TO_SGD else name
            mu, quality, width = base[src]
            mu = mu + rng.normal(0, 0.3)
            center = 1e-2
            offsets = np.arange(points) - (points - 1) // 2 if points > 1 else np.zeros(1)
            lrs = center * 10.0 ** (0.5 * offsets)
            x = np.log10(lrs / center) - mu  # decades above the best rate
            gap = best + (target - best) * (0.3 + 1.6 * quality)  # best final value of this contender
            slow = np.clip(-x / 2.5, 0, 1) ** 1.5
            final = gap + (chance - gap) * slow + 0.4 * (target - best) * np.maximum(x, 0) ** 2
            noise = rng.normal(0, 0.05 * (target - best) + 0.02 * abs(gap), (points, seeds))
            final = final[:, None] + noise
            t = np.arange(1, evals + 1) / evals
            rate = 3 + 8 * (1 - slow)
            curve = np.exp(-rate[:, None, None] * t[None, None, :])
            val = final[:, :, None] + (chance - final[:, :, None]) * curve
            val += rng.normal(0, 0.01 * abs(gap), val.shape)
            test = val + rng.normal(0.02 * abs(gap), 0.02 * abs(gap), val.shape)
            bad = (x[:, None] > width) | ((x[:, None] > width - 0.5) & (rng.random((points, seeds)) < 0.4))
            for g, s in zip(*np.nonzero(bad), strict=True):
                k = rng.integers(0, evals)
                val[g, s, k:] = np.nan if rng.random() < 0.7 else np.inf
                test[g, s, k:] = np.nan
            steps = 20 * np.arange(1, evals + 1)
            hit = val <= target
            stt = np.where(hit.any(axis=2), steps[np.argmax(hit, axis=2)], np.inf)
            if name in IDENTICAL_TO_SGD and out:
                twin = next(r for r in out if r.problem == p_name and r.contender == "sgd")
                val, test, stt = twin.val.copy(), twin.test.copy(), twin.steps_to_target.copy()
            r = Records(
                contender=name,
                problem=p_name,
                lrs=lrs,
                seeds=np.arange(seeds),
                eval_steps=steps,
                train_loss=np.abs(val) / 10,
                val=val,
                test=test,
                steps_to_target=stt.astype(np.float64),
                compile_s=2.5,
                run_s=0.5 + rng.random(),
                program=name,
            )
            out.append(r)
    if one_shot:  # the grid's centre only (the default rate)
        mid = slice((points - 1) // 2, (points - 1) // 2 + 1)
        out = [dataclasses.replace(r.take(mid), role="default") for r in out]
    return out


def problems_list():
    return [problem(r[0]) for r in PROBLEMS]


@pytest.fixture(scope="module")
def study():
    recs = synthetic_records()
    one = synthetic_records(one_shot=True)
    known = {p.name: p for p in problems_list()}
    tuned = [P.select(r, known[r.problem]) for r in recs]
    shot = [P.select(r, known[r.problem]) for r in one]
    return SimpleNamespace(
        records=recs, one_shot_records=one, tuned=tuned, one_shot=shot, problems=problems_list()
    )


# --------------------------------------------------------------------------- tables
GROUPS = {"sgd": ["lbsgd", "ccsgd", "test"]}  # identity travels as data (a study's `identical`)


def test_identical_label():
    assert tables.label("sgd", GROUPS) == "sgd (= lbsgd, ccsgd, test)"


def _rows(text: str) -> list[str]:
    """The rows of a table's first part (a wide table is split into parts, each under its own header)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-")) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()[:1].isdigit()), len(lines))
    return lines[start:end]


def test_problem_table_lists_every_contender_once(study):
    identical = GROUPS
    for p in study.problems:
        sels = [s for s in study.tuned if s.problem == p.name]
        text = tables.format_problem(analyse_table(sels, identical), p)
        rows = _rows(text)
        assert len(rows) == len(MXOPT + OPTAX) - len(IDENTICAL_TO_SGD)
        cells = " ".join(rows)
        for name in MXOPT + OPTAX:
            assert (
                len(
                    [
                        w
                        for w in cells.replace(",", " ").replace("(", " ").replace(")", " ").split()
                        if w == name
                    ]
                )
                == 1
            ), name
        assert p.title in text.splitlines()[0] and "target" in text.splitlines()[0]
        assert "±" in cells


def test_problem_table_marks_edges_and_ranks_in_order(study):
    p = study.problems[0]
    sels = [s for s in study.tuned if s.problem == p.name]
    low = dataclasses.replace(sels[0], index=0, lr=float(sels[0].lrs[0]), on_edge="low")
    high = dataclasses.replace(sels[1], index=6, lr=float(sels[1].lrs[-1]), on_edge="high")
    inner = dataclasses.replace(sels[2], on_edge=None)
    text = tables.format_problem(analyse_table([low, high, inner]), p)
    assert f"{low.lr:.3g}<" in text and f"{high.lr:.3g}>" in text
    # the marks are explained once, in "How to read these tables", when a table has them
    assert "smallest / largest of its grid" in tables.how_to_read(analyse([low, high, inner]))
    sets = [r.split()[0].split("-") for r in _rows(text)]
    ranks = [(int(x[0]), int(x[-1])) for x in sets]  # rank sets "2" or "1-3": rows in their order
    assert ranks == sorted(ranks) and all(lo <= hi for lo, hi in ranks)
    assert "smallest / largest" not in tables.how_to_read(analyse([inner]))


def test_mean_ci_format():
    assert tables.fmt_mean_ci(3.4213, 0.3127) == "3.42 ± 0.31"
    assert tables.fmt_mean_ci(12.0, 3.2) == "12.0 ± 3.2"
    assert tables.fmt_mean_ci(0.9312, 0.0041) == "0.9312 ± 0.0041"
    assert tables.fmt_mean_ci(math.inf, math.nan) == "diverged"
    assert tables.fmt_mean_ci(1.5, math.nan) == "1.5"


def test_overall_and_modes_tables(study):
    identical = GROUPS
    analysis = analyse(study.tuned + study.one_shot, identical)
    text = tables.format_overall(analysis.rankings["tuned"])
    shown = len(MXOPT + OPTAX) - len(IDENTICAL_TO_SGD)
    body = text.splitlines()[3 : 3 + shown]
    assert len(body) == shown
    means = [float(re.split(r"\s{2,}", line.strip())[1]) for line in body]
    assert means == sorted(means)
    modes = tables.format_modes(analysis.rankings["tuned"], analysis.rankings["one-shot"], identical)
    # no averaged "change": rank-set middles mix how sure a table is with how good an entry is (issue 49)
    assert "->" in modes and "change" not in modes and " up " in modes.splitlines()[1] + " "
    report = tables.format_report(analysis, study.problems, "Protocol text.")
    assert report.startswith("== Overall") and report.rstrip().endswith("Protocol text.")  # results first
    for p in study.problems:
        assert report.count(f"== {p.name}:") == 2  # tuned and one-shot


# --------------------------------------------------------------------------- export
def test_csv_long_form(study, tmp_path):
    recs = study.records[:3] + study.one_shot_records[:1]
    path = export.write_csv(tmp_path / "runs.csv", recs)
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(export.RUN_COLUMNS)
    assert len(rows) == sum(r.val.size for r in recs)
    assert {r["role"] for r in rows} == {"selection", "default"}
    r0 = recs[0]
    first = rows[0]
    assert float(first["lr"]) == r0.lrs[0] and int(first["step"]) == r0.eval_steps[0]
    assert float(first["val"]) == r0.val[0, 0, 0]


def test_summary_csv(study, tmp_path):
    path = export.write_summary_csv(
        tmp_path / "summary.csv", analyse(study.tuned + study.one_shot).all_tables()
    )
    with path.open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(study.tuned) + len(study.one_shot)
    assert all(1 <= int(r["rank"]) <= int(r["rank_high"]) for r in rows)
    assert all(r["group"] and r["group"].isalpha() for r in rows)
    assert all(float(r["test_q1"]) <= float(r["test_median"]) <= float(r["test_q3"]) for r in rows)
    assert all(int(r["diverged_report"]) >= 0 for r in rows)
    assert {r["on_edge"] for r in rows} <= {"", "low", "high"}


def test_json_round_trip(study, tmp_path):
    protocol_text = describe(P.PRESETS["quick"], study.problems, list(MXOPT + OPTAX))
    doc = {
        "records": study.records[:30] + study.one_shot_records[:30],
        "selections": study.tuned[:30] + study.one_shot[:30],
        "protocol": protocol_text,
        "preset": "quick",
        "presets": P.PRESETS,
        "timings": {"total_s": 12.5, "compile_s": {"adam": 2.5}},
    }
    path = serialize.write_document(tmp_path / "study.json", doc)
    raw = json.loads(path.read_text())  # strict JSON: no NaN / Infinity literals
    assert set(raw["versions"]) >= {"jax", "optax", "mxopt_jax", "numpy"}
    back = serialize.read_document(path)
    assert export.records_equal(back["records"], doc["records"])
    assert back["protocol"] == protocol_text and back["preset"] == "quick"
    assert back["presets"]["full"] == P.PRESETS["full"]
    for a, b in zip(back["selections"], doc["selections"], strict=True):
        for f in dataclasses.fields(P.Selection):
            u, v = getattr(a, f.name), getattr(b, f.name)
            if isinstance(v, np.ndarray):
                np.testing.assert_array_equal(u, v)
            elif isinstance(v, float) and math.isnan(v):
                assert math.isnan(u)
            else:
                assert u == v, f.name
    # re-selecting the reloaded records gives the same choices
    known = {p.name: p for p in study.problems}
    again = [P.select(r, known[r.problem]) for r in back["records"][:30]]
    assert [s.index for s in again] == [s.index for s in study.tuned[:30]]


# --------------------------------------------------------------------------- figures
def test_plots_save_pngs(study, tmp_path):
    pytest.importorskip("matplotlib")
    identical = GROUPS
    few = [r for r in study.records if r.contender in ("adam", "sgd", "optax.adam") and r.problem == "logreg"]
    known = {p.name: p for p in study.problems}
    chosen = [P.select(r, known[r.problem]) for r in few]
    paths = plots.save_all(tmp_path / "few", plots.draw_all(study.problems[-1], few, chosen))
    # more than eight contenders shown: one panel per family (here four), duplicates folded into sgd's line
    many = (
        "adagrad",
        "rmsprop",
        "sgd",
        "lbsgd",
        "ccsgd",
        "test",
        "nag",
        "signum",
        "adam",
        "adamw",
        "nadam",
        "optax.adam",
        "optax.sgd",
    )
    recs = [r for r in study.records if r.contender in many and r.problem == "digits_mlp"]
    sels = [s for s in study.tuned if s.contender in many and s.problem == "digits_mlp"]
    paths += plots.save_all(
        tmp_path / "many", plots.draw_all(study.problems[0], recs, sels, identical=identical)
    )
    # one problem: no performance profile (on one problem it says nothing the table does not)
    assert [p.name for p in paths] == ["sensitivity.png", "curves.png", "loss.png"] * 2
    two = [r for r in study.records if r.contender in many and r.problem in ("digits_mlp", "logreg")]
    both = [s for s in study.tuned if s.contender in many and s.problem in ("digits_mlp", "logreg")]
    profile = analyse(both, identical=identical).rankings["tuned"].profile
    figs = plots.draw_all([study.problems[0], study.problems[-1]], two, both, profile, identical=identical)
    paths += plots.save_all(tmp_path / "two", figs)
    assert [p.name for p in paths[-4:]] == ["sensitivity.png", "curves.png", "loss.png", "profile.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_family_panels():
    names = list(MXOPT + OPTAX)
    groups = plots._groups(names, None)
    assert [g for g, _ in groups] == list(FAMILY_ORDER)
    assert sorted(n for _, m in groups for n in m) == sorted(names)
    assert all(len(m) <= 8 for _, m in groups)
    assert plots._groups(["adam", "sgd"], None) == [("", ["adam", "sgd"])]


# --------------------------------------------------------------------------- the report agrees with its records
def _assembled(records: list[Records], problems, search: str = "grid", trials: int | None = None):
    """A study as :func:`~mxopt_jax.compare.study.study` assembles it from ``records`` (selection runs; the chosen
    and the default configuration's runs stand in for the confirmation and default runs)."""
    from mxopt_jax.compare import contenders as C
    from mxopt_jax.compare.plan import Plan
    from mxopt_jax.compare.result import ProgramResult
    from mxopt_jax.compare.study import Study

    known = {p.name: p for p in problems}
    results = []
    for p in problems:
        per = {}
        for r in (r for r in records if r.problem == p.name):
            chosen = P.select(r, known[p.name])
            per[r.contender] = {
                "selection": r,
                "confirmation": dataclasses.replace(r.take(chosen.index), role="confirmation"),
                "default": dataclasses.replace(r.take(len(r.lrs) // 2), role="default"),
            }
        results.append(ProgramResult(p.name, p.name, list(per), per, {}, 1.0, 1, 35, 200))
    names = list(dict.fromkeys(r.contender for r in records))
    plan = Plan(P.PRESETS["quick"], tuple(range(5)), tuple(range(1000, 1005)), search=search, trials=trials)
    return Study.assemble(plan, problems, C.resolve(names), results)


def test_protocol_prints_each_workloads_grid_as_it_ran():
    """The "Grids" section listed the first workload's grid for every workload (SGLD's chosen 3.16e-09 lay
    outside the printed range): each workload's grid is printed where they differ, extensions included."""
    probs = [problem("digits_mlp"), problem("logreg")]
    recs = synthetic_records(("sgd", "sgld"), PROBLEMS[:1], points=7) + synthetic_records(
        ("sgd", "sgld"), PROBLEMS[-1:], points=11, seed=1
    )
    recs = [r for r in recs if not (r.problem == "logreg" and r.contender == "sgd")]
    recs += [r for r in synthetic_records(("sgd",), PROBLEMS[-1:], points=7)]
    text = _assembled(recs, probs).protocol
    grids = text[text.index("Grids") :].splitlines()
    sgd = next(line for line in grids if line.split()[0] == "sgd")
    sgld = next(line for line in grids if line.split()[0] == "sgld")
    assert sgd.split(None, 1)[1] == "7 rates 0.000316 .. 0.316"  # the same on both: once
    assert (
        sgld.split(None, 1)[1] == "7 rates 0.000316 .. 0.316 (digits_mlp); 11 rates 3.16e-05 .. 3.16 (logreg)"
    )
    assert "ran 7 or 11 rates" in " ".join(text.split())
    # the same from describe, given one grid for every problem (a custom study)
    flat = describe(P.PRESETS["quick"], probs, ["sgd"], {"sgd": np.array([0.01, 0.1])})
    assert "  sgd  2 rates 0.01 .. 0.1" in flat


def test_curves_legend_of_each_panel_names_its_contenders_and_rates():
    """The legend showed the last workload's chosen rates on every row, and named the contenders only below
    the figure: each panel is titled with its problem and its own legend names each contender with the rate
    chosen on that problem."""
    pytest.importorskip("matplotlib")
    probs = [problem("digits_mlp"), problem("logreg")]
    recs = [r for r in synthetic_records(("adam", "sgd"), [PROBLEMS[0], PROBLEMS[-1]])]
    sels = [P.select(r, next(p for p in probs if p.name == r.problem)) for r in recs]
    fig = plots.plot_curves(probs, recs, sels)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["digits_mlp", "logreg"]
    shown = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in panels]
    want = [[f"{s.contender}  {s.lr:.3g}" for s in sels if s.problem == p.name] for p in probs]
    assert shown == want and want[0] != want[1]


def test_sensitivity_plot_marks_and_counts_trials_above_its_axis():
    """A random search's trials far above the good results left the axis without a mark (13 of 18 on one run):
    each is drawn at the top of its panel and the panel counts them."""
    pytest.importorskip("matplotlib")
    p = problem("logreg")
    recs = synthetic_records(("adam", "sgd"), PROBLEMS[-1:], points=9, seed=3)
    rng = np.random.default_rng(0)
    trials = []
    for r in recs:
        order = rng.permutation(len(r.lrs))  # trials, in no order, with a second hyperparameter
        r = r.take(order)
        val = np.where(np.isfinite(r.val), r.val, 0.69)  # no diverged run here: no strip at the top
        val = np.where(np.isin(np.arange(len(r.lrs)), [1, 4]), 50.0, 1.0)[:, None, None] * val
        trials.append(
            dataclasses.replace(
                r,
                val=val,
                train_loss=val / 10,
                test=val,
                diverged_at=np.full(val.shape[:2], np.inf),
                hparams={"wd": rng.uniform(0, 1e-3, len(r.lrs))},
            )
        )
    sels = [P.select(r, p) for r in trials]
    fig = plots.plot_sensitivity(p, trials, sels)
    ax = fig.axes[0]
    top = ax.get_ylim()[1]
    means = [plots._final_stats(r)[0] for r in trials]
    above = sum(int((np.isfinite(m) & (m > top)).sum()) for m in means)
    assert above >= 4  # the two far trials of each contender at least
    marks = [ln for ln in ax.get_lines() if ln.get_marker() == "^"]
    assert sum(len(ln.get_xdata()) for ln in marks) == above
    assert [t.get_text() for t in ax.texts if "above" in t.get_text()] == [f"△ {above} above the axis"]
    assert "△ at the top" in fig.get_supxlabel()


def test_protocol_says_what_each_figure_reads_and_how_random_trials_are_drawn():
    text = " ".join(
        describe(P.PRESETS["quick"], [problem("logreg")], ["adam"], search="random", trials=8).split()
    )
    assert (
        "Figures: the training curves show the chosen configuration's report runs (validation); the " in text
    )
    assert "the sensitivity plot shows the selection runs" in text
    assert "Common random numbers: the search seed (0) alone seeds one stream" in text
    assert "lowest (<) or the highest (>) of its hyperparameter among the contender's trials" in text
    assert "within 5%" not in text


# --------------------------------------------------------------------------- the report where it is printed
def _main_job() -> tuple[list, list, object]:
    """The main job's shape (``mxopt-jax compare``: every contender on the quick preset's default problems,
    the problems' real names, titles and metrics; sgd, lbsgd, ccsgd and test identical) from synthetic records:
    the problems, the selections (tuned and one-shot) and their analysis."""
    from mxopt_jax.compare.problems import DEFAULT
    from mxopt_jax.compare.problems import PROBLEMS as REGISTRY

    real = [REGISTRY[n]() for n in DEFAULT]
    shape = tuple((p.name, p.title, p.metric_name, p.target, 3 * p.target, 0.8 * p.target) for p in real)
    known = {p.name: p for p in real}
    recs = synthetic_records(problems=shape) + synthetic_records(problems=shape, one_shot=True)
    sels = [P.select(r, known[r.problem]) for r in recs]
    return real, recs, analyse(sels, GROUPS)


#: Lines the text report may print wider than tables.WIDTH: none in the main job. Only two kinds cannot be
#: broken (docs/study.md says so too): a single word longer than the width (never split), and a table part
#: whose repeated contender column plus one column group is wider by itself (a very long contender name).
def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > tables.WIDTH]


def test_the_main_jobs_report_fits_120_columns():
    """The main job's tables were 147-210 columns wide, with a ~900-character footer under every table: every
    line of its report (tables, "How to read these tables", the protocol) now fits 120 columns, each
    explanation is printed once, and under each table stands a short reference to it."""
    from mxopt_jax.compare import contenders as C

    real, _, analysis = _main_job()
    cs = C.resolve(["all"])
    quick = P.PRESETS["quick"]
    protocol = describe(
        quick,
        real,
        [c.name for c in cs],
        grids={c.name: quick.grid(c.default_lr) for c in cs},
        settings={c.name: (c.description, dict(c.settings)) for c in cs},
    )
    text = tables.format_report(analysis, real, protocol)
    assert tables.WIDTH == 120 and _too_wide(text) == []
    assert "sgd (= lbsgd, ccsgd, test)" in text  # the widest label, whole
    assert text.count("== How to read these tables") == 1
    problem_tables = len(analysis.tables)
    assert text.count('See "How to read these tables" (problem tables).') == problem_tables == 10
    assert text.count("half-width of the 95% Student-t interval") == 1  # once, not under every table
    assert max(len(line) for line in text.split("== How to read")[0].splitlines()) <= tables.WIDTH
    # the split parts of a problem's table repeat the contender column and keep every row
    first = tables.format_problem(analysis.table("digits_mlp"), real[0]).splitlines()
    rules = [i for i, line in enumerate(first) if line.startswith("-")]
    assert len(rules) == 2 and first[rules[1] - 1].startswith("contender")
    assert rules[1] - 1 - (rules[0] + 1) == len(analysis.table("digits_mlp").order)


def test_a_study_of_several_studies_fits_120_columns_too():
    """The golden multi-study report (batching and timing notes, the across-studies tables, the protocol)."""
    from pathlib import Path

    from mxopt_jax.compare.report import render
    from mxopt_jax.compare.study import Study

    golden = Study.from_json(Path(__file__).parent / "data" / "analysis_golden" / "study.json")
    text = render.format_study(golden)
    assert _too_wide(text) == []
    assert "== Study 1 of 2" in text and "== Overall (study 1 of 2): 3 problem(s)" in text


def test_one_problem_prints_no_interval_and_says_so():
    """The overall table's legend said "one problem: no interval" above an interval like [3.00, 3.00]: below
    the problems a bootstrap over them needs (one, or three here) the interval and P(best) are left out, and
    the reference line says why; no bracketed interval is printed (9 problems with the report-wide family show
    them: tests/app/test_ranking.py)."""
    one = [s for s in synthetic_selections() if s.problem == "digits_mlp"]
    for sels, n in ((one, 1), (synthetic_selections(), 3)):
        text = tables.format_overall(analyse(sels).rankings["tuned"])
        head, *rows = [line for line in text.splitlines()[1:] if line and not line.startswith("-")]
        assert "bootstrap" not in head and "P(best)" not in head and not re.search(r"\[\d\.\d\d, ", text)
        flat = " ".join(text.split())
        assert f"The interval and P(best) are omitted: {n} problem(s) cannot support a bootstrap" in flat
        assert "One problem: no bootstrap interval" not in text


def synthetic_selections() -> list:
    names = ("adam", "sgd", "nag", "ftml")
    known = {p.name: p for p in problems_list()}
    return [P.select(r, known[r.problem]) for r in synthetic_records(names, PROBLEMS[:3])]


def _alias_study():
    """Three problems, sgd with lbsgd, ccsgd and test identical on two of them; test differs on the third
    (there the table folds only lbsgd and ccsgd, and so do the cross-problem tables)."""
    names = ("sgd", "lbsgd", "ccsgd", "test", "adam", "nag")
    probs = problems_list()[:3]
    recs = synthetic_records(names, PROBLEMS[:3])
    third = probs[2].name
    recs = [
        dataclasses.replace(r, val=r.val * 1.01, test=r.test * 1.01)
        if (r.contender, r.problem) == ("test", third)
        else r
        for r in recs
    ]
    known = {p.name: p for p in probs}
    sels = [P.select(r, known[r.problem]) for r in recs]
    by_problem = {
        p.name: {"tuned": {"sgd": ["lbsgd", "ccsgd"] if p.name == third else ["lbsgd", "ccsgd", "test"]}}
        for p in probs
    }
    everywhere = {"tuned": {"sgd": ["lbsgd", "ccsgd"]}}
    analysis = analyse(sels, identical_by_problem=by_problem, identical_by_mode=everywhere)
    return probs, recs, analysis


def test_figure_legends_name_the_tables_aliases():
    """The sensitivity legend said ``sgd (= ccsgd)`` where the table said ``(= lbsgd, ccsgd, test)``: every
    panel of the sensitivity plot and of the curves names its contenders exactly as its problem's table does
    (one source: the table's identity, :func:`tables.label`)."""
    pytest.importorskip("matplotlib")
    probs, recs, analysis = _alias_study()
    figs = plots.draw_study(probs, recs, analysis)
    for name in ("sensitivity.png", "curves.png", "loss.png"):
        panels = [ax for ax in figs[name].axes if ax.get_visible()]
        assert [ax.get_title() for ax in panels] == [p.name for p in probs], name
        for ax, p in zip(panels, probs, strict=True):
            table = analysis.table(p.name)
            rows = [tables.label(n, table.identical) for n in table.order]
            named = [t.get_text().split("  ")[0] for t in ax.get_legend().get_texts()]
            assert sorted(named) == sorted(rows), (name, p.name)
            text = tables.format_problem(table, p)
            assert all(r in text for r in named)
    first, third = (analysis.table(p.name) for p in (probs[0], probs[2]))
    assert tables.label("sgd", first.identical) == "sgd (= lbsgd, ccsgd, test)"
    assert tables.label("sgd", third.identical) == "sgd (= lbsgd, ccsgd)"


def test_figure_grid_is_problems_by_families_and_not_tall():
    """curves.png was a tall 10 x 5 grid (a validation and a loss row per problem): the main job's figures
    are one panel per problem and family (5 x 5), about as wide as tall, every panel titled with its problem
    and family; few contenders: the problems fill rows of up to three panels."""
    pytest.importorskip("matplotlib")
    from mxopt_jax.compare import contenders as C

    cs = C.resolve(["all"])
    families = {c.name: c.family for c in cs}
    real = problems_list()
    fig, place, groups = plots._grid(real, [c.name for c in cs], families, 2.6)
    shape = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    assert shape == (5, 5) and len(groups) == 5
    w, h = fig.get_size_inches()
    assert 0.8 <= w / h <= 2.0, (w, h)
    fig, place, groups = plots._grid(real, ["adam", "sgd"], families, 2.6)
    assert fig.axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 3)
    assert sum(ax.get_visible() for ax in fig.axes) == 5
    w, h = fig.get_size_inches()
    assert w > h


@pytest.mark.slow
def test_the_main_jobs_figures_read_at_a_glance(tmp_path):
    """Every figure of the main job's shape drawn and saved: each visible panel titled with its problem and
    family and carrying its own legend; the figures no taller than wide."""
    pytest.importorskip("matplotlib")
    from mxopt_jax.compare import contenders as C

    real, recs, analysis = _main_job()
    families = {c.name: c.family for c in C.resolve(["all"])}
    figs = plots.draw_study(real, [r for r in recs if r.role != "default"], analysis, families)
    for name, fig in figs.items():
        w, h = fig.get_size_inches()
        assert h <= w, (name, w, h)
        if name == "profile.png":
            continue
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == 25
        for ax in panels:
            p, family = ax.get_title().split(" · ")
            assert p in {q.name for q in real} and family in FAMILY_ORDER
            assert ax.get_legend() is not None
    assert [p.name for p in plots.save_all(tmp_path, figs)] == [
        "sensitivity.png",
        "curves.png",
        "loss.png",
        "profile.png",
    ]


def test_the_html_of_several_studies_mirrors_the_text_report():
    """The HTML of a --studies 2 run opened with the first study's "Overall ranking", unlabelled, and showed the
    across-studies section as a <pre> text dump: its sections now come in the text report's order, the
    across-studies tables first as real <table>s, then the first study's sections, each labelled with it."""
    from html.parser import HTMLParser
    from pathlib import Path

    from mxopt_jax.compare.report import render
    from mxopt_jax.compare.study import Study

    class Page(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.sections: list[list] = []  # [h2 text, [tables: [rows: [cells]]], <pre> count]
            self.tag: str | None = None
            self.details = 0

        def handle_starttag(self, tag, attrs):
            if tag == "h2":
                self.sections.append(["", [], 0])
            elif tag == "table":
                self.sections[-1][1].append([])
            elif tag == "tr":
                self.sections[-1][1][-1].append([])
            elif tag in ("td", "th"):
                self.sections[-1][1][-1][-1].append("")
            elif tag == "pre" and not self.details:
                self.sections[-1][2] += 1
            self.details += tag == "details"
            self.tag = tag

        def handle_endtag(self, tag):
            self.details -= tag == "details"
            self.tag = None

        def handle_data(self, data):
            if self.tag == "h2":
                self.sections[-1][0] += data
            elif self.tag in ("td", "th"):
                self.sections[-1][1][-1][-1][-1] += data

    golden = Study.from_json(Path(__file__).parent / "data" / "analysis_golden" / "study.json")
    page = Page()
    page.feed(render.study_html(golden, images={}))
    heads = [s[0] for s in page.sections]
    names = [p.name for p in golden.problems]
    # the claims about the optimizers (or why there are none) lead, as in the text
    assert heads[0] == "Claims"
    assert heads[1] == "Across 2 independent studies"
    assert heads[2] == "Overall ranking (study 1 of 2)"
    assert [h.split(":")[0] for h in heads[3:6]] == names and all(
        h.endswith("(study 1 of 2)") for h in heads[3:6]
    )
    assert heads[6:] == [
        "One-shot (default rate) -> tuned (study 1 of 2)",
        "How to read these tables",
        "Checks and timings",
    ]
    assert all(pre == 0 for _, _, pre in page.sections)  # no text dump outside the folded details
    text = render.format_study(golden)
    assert text.index("across 2 independent studies") < text.index("== Overall (study 1 of 2)")
    across = page.sections[1][1]
    assert len(across) == len(golden.analysis.across) == 2 * len(names)
    metrics = {p.name: p.metric_name for p in golden.problems}
    for table, a in zip(across, golden.analysis.across, strict=True):
        want = tables.across_table(a, metrics[a.problem])
        assert table[0] == want.head and [r for r in table[1:]] == want.rows
    overall = page.sections[2][1]
    assert [t[0][0] for t in overall] == ["contender", "contender"] and len(overall[0]) == 1 + 4
    for sec, p in zip(page.sections[3:6], golden.problems, strict=True):
        assert len(sec[1]) == 2  # tuned, one-shot
        assert sec[1][0][1:] == tables.problem_table(golden.analysis.table(p.name), p).rows


def test_the_report_explains_sgld_s_enormous_tuned_rate():
    """SGLD's tuned rate runs to 1e5 and beyond (its noise N(0, sqrt(lr)) is scaled for a summed gradient, the
    study's losses are batch means): the protocol says so beside SGLD's settings, and only there."""
    from mxopt_jax.compare import contenders as C
    from mxopt_jax.compare.problems import PROBLEMS
    from mxopt_jax.compare.report.text import describe

    sgld, sgd = C.resolve(["sgld", "sgd"])
    assert C.SGLD_NOTE in sgld.description and C.SGLD_NOTE not in sgd.description
    text = describe(
        P.PRESETS["full"],
        [PROBLEMS["digits_mlp"]()],
        ["sgld", "sgd"],
        settings={c.name: (c.description, {}) for c in (sgld, sgd)},
    )
    # sgld's entry: its first line and the continuation lines wrapped under it (the report fits 120 columns)
    lines = text.splitlines()
    (start,) = [i for i, ln in enumerate(lines) if ln.strip().startswith("sgld ")]
    entry = [lines[start]]
    for ln in lines[start + 1 :]:
        if not ln.startswith("        "):
            break
        entry.append(ln)
    words = " ".join(" ".join(entry).split())
    assert "sgd" not in words.split("sgld", 1)[1].split()
    assert "N(0, sqrt(lr))" in words and "SGLD's parametrisation, not a fault" in words
    assert "rescale_grad = the number of training examples" in words


# --------------------------------------------------------------------------- issue 53: pictures and words
def _drawn():
    """Every figure of the alias study's report (three problems, sgd with aliases, adam, nag) and its parts."""
    probs, recs, analysis = _alias_study()
    return probs, recs, analysis, plots.draw_report(probs, recs, analysis)


@pytest.fixture(scope="module")
def drawn():
    pytest.importorskip("matplotlib")
    return _drawn()


def _errorbar_points(ax) -> list:
    """The data points of the errorbars on ``ax`` (one ``Line2D`` with a marker each)."""
    return [c.lines[0] for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]


def test_each_problem_has_the_picture_of_its_table(drawn):
    """Issue 53, item 6: the figures were grids of families, so comparing nadam with ftml took two panels: each
    problem now has the picture of its table, every entry's test value with its interval in the table's order,
    named as the table names it, the best set marked (shaded, bold), entries off the axis drawn on its edge with
    their value."""
    probs, _, analysis, figs = drawn
    for p in probs:
        table = analysis.table(p.name)
        fig = figs[plots.results_png(p.name)]
        (ax,) = [a for a in fig.axes if a.get_visible()]  # one mode (tuned) in this study
        names = [t.get_text() for t in ax.get_yticklabels()]
        assert names == [tables.label(n, table.identical) for n in table.order]
        best = plots.best_set(table)
        assert best == tuple(n for n in table.order if table.rank(n) == 1) and best
        bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
        assert bold == [tables.label(n, table.identical) for n in best]
        assert len([patch for patch in ax.patches if patch.get_facecolor()[:3] != (1.0, 1.0, 1.0)]) >= len(
            best
        )
        points = _errorbar_points(ax)
        lo, hi = ax.get_xlim()
        inside = [n for n in table.order if lo <= plots._reported(table.selection(n))[0] <= hi]
        assert len(points) == len(inside)
        for line, n in zip(points, inside, strict=True):
            s = table.selection(n)
            assert line.get_xdata()[0] == pytest.approx(plots._reported(s)[0])
            assert line.get_color() == figures.contender_style(n)["color"]
        assert "test" in ax.get_xlabel() and p.metric_name in ax.get_xlabel()
    # a contender far behind: drawn on the axis' edge with its value written, and the note says so
    table = analysis.table(probs[0].name)
    worst = table.order[-1]
    far = dataclasses.replace(
        table,
        selections=tuple(
            dataclasses.replace(s, test=s.test * 50, test_mean=s.test_mean * 50)
            if s.contender == worst
            else s
            for s in table.selections
        ),
    )
    fig = plots.plot_results(probs[0], [far])
    ax = fig.axes[0]
    assert len(_errorbar_points(ax)) == len(table.order) - 1
    assert [t.get_text() for t in ax.texts] == [f"{far.selection(worst).test_mean:.4g}"]
    assert "a mean off the axis, its value written" in " ".join(fig.get_supxlabel().split())


def test_the_rank_heatmap_is_the_overall_table(drawn):
    """Issue 53, item 6: a rank heatmap, contenders by problems: rows the overall table's rows in its order,
    columns its problems, each cell the rank set of that problem's table, the best set's cells outlined."""
    probs, _, analysis, figs = drawn
    ranking = analysis.rankings["tuned"]
    ax = figs["ranks.png"].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        tables.label(n, ranking.identical) for n in ranking.order
    ]
    assert [t.get_text() for t in ax.get_xticklabels()] == [p.name for p in probs]
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    outlined = 0
    for i, n in enumerate(ranking.order):
        for j, p in enumerate(probs):
            t = ranking.tables[p.name]
            assert cells[(i, j)] == t.rank_set(n)
            outlined += t.entry[n] in plots.best_set(t)
    assert len([r for r in ax.patches if not r.get_fill()]) == outlined > 0
    # the mean rank at the right, each row's marker in the contender's colour
    assert [cells[(i, len(probs))] for i in range(len(ranking.order))] == [
        f"{ranking.mean_rank(n):.2f}" for n in ranking.order
    ]
    markers = [ln for ln in ax.get_lines()]
    assert [ln.get_color() for ln in markers] == [figures.contender_style(n)["color"] for n in ranking.order]


def test_a_contender_has_one_look_in_every_figure_of_every_study(drawn):
    """Issue 53, item 6: colours were reused across panels (red was sgd, adagrad, adam, lars or optax.sgd by
    panel, by its place among the panel's lines): a contender's colour, line style and marker are its own, the
    same in every figure, whichever contenders a study has and in whatever order."""
    probs, recs, analysis, figs = drawn
    seen: dict[str, set] = {}
    for name in ("sensitivity.png", "curves.png", "loss.png"):
        for ax in figs[name].axes:
            if ax.get_legend() is None:
                continue
            for line, text in zip(ax.get_legend().get_lines(), ax.get_legend().get_texts(), strict=True):
                n = text.get_text().split("  ")[0].split(" (= ")[0]
                seen.setdefault(n, set()).add((line.get_color(), line.get_marker()))
    for ax in figs["profile.png"].axes:
        for line, text in zip(ax.get_legend().get_lines(), ax.get_legend().get_texts(), strict=True):
            n = text.get_text().split(" (")[0]
            seen.setdefault(n, set()).add((line.get_color(), line.get_marker()))
    for p in probs:
        ax = figs[plots.results_png(p.name)].axes[0]
        table = analysis.table(p.name)
        for line, n in zip(_errorbar_points(ax), table.order, strict=False):
            seen.setdefault(n, set()).add((line.get_color(), line.get_marker()))
    assert {"sgd", "adam", "nag"} <= set(seen)
    for n, looks in seen.items():
        want = figures.contender_style(n)
        assert looks == {(want["color"], want["marker"])}, n
    # another study, other contenders in another order: the same look
    few = [r for r in recs if r.contender in ("nag", "adam") and r.problem == probs[0].name][::-1]
    sels = [s for s in analysis.table(probs[0].name).selections if s.contender in ("nag", "adam")][::-1]
    fig = plots.plot_curves(probs[0], few, sels)
    for line, text in zip(
        fig.axes[0].get_legend().get_lines(), fig.axes[0].get_legend().get_texts(), strict=True
    ):
        n = text.get_text().split("  ")[0]
        assert line.get_color() == figures.contender_style(n)["color"]


def test_every_builtin_contender_has_a_look_of_its_own():
    """Issue 53, item 6: 26 contenders, each its own colour (the hue its family's) and, within a family, its own
    line style and marker; a user's contender takes a look from its name, the same every time."""
    from mxopt_jax.compare import contenders as C

    names = [c.name for c in C.resolve(["all"])]
    assert len(names) == 26 and set(names) == set(figures.CONTENDER_STYLES)
    colours = [figures.contender_style(n)["color"] for n in names]
    assert len(set(colours)) == len(colours)
    for _, members in C.group_by_family(names):
        looks = [
            (figures.contender_style(n)["linestyle"], figures.contender_style(n)["marker"]) for n in members
        ]
        assert len(set(looks)) == len(looks)
    assert not {"^", "v", "<", ">", "x"} & set(
        figures.MARKERS
    )  # shapes the figures give a meaning of their own
    lion = figures.contender_style("optax.lion")
    assert lion == figures.contender_style("optax.lion") and lion["color"] in figures.OTHER_COLORS


def test_curves_off_the_axis_are_clipped_and_said_so():
    """Issue 53, item 6: curves above the y range left the panel silently: the steps where a mean is above the
    axis are marked at its top (one row per contender), each panel counts the curves clipped, the note says so."""
    pytest.importorskip("matplotlib")
    p = problem("logreg")
    recs = synthetic_records(("adam", "sgd", "nag", "ftml", "adamw"), PROBLEMS[-1:], seed=5)
    far = [
        dataclasses.replace(r, val=r.val * 3.0, train_loss=r.train_loss * 3.0) if r.contender == "nag" else r
        for r in recs
    ]
    sels = [P.select(r, p) for r in far]
    for what in ("val", "loss"):
        fig = plots.plot_curves(p, far, sels, what=what)
        ax = fig.axes[0]
        top = ax.get_ylim()[1]
        marks = [ln for ln in ax.get_lines() if ln.get_marker() == "^"]
        colours = {ln.get_color() for ln in marks}
        assert figures.contender_style("nag")["color"] in colours
        assert ax.get_legend().get_title().get_text() == f"△ {len(marks)} clipped above the axis"
        nag = next(b for b in far if b.contender == "nag")
        sel = next(s for s in sels if s.contender == "nag")
        curve = mean_band(np.asarray(nag.val if what == "val" else nag.train_loss)[sel.index], axis=0).mean
        mark = next(ln for ln in marks if ln.get_color() == figures.contender_style("nag")["color"])
        assert len(mark.get_xdata()) == int((curve > top).sum()) > 0
        assert "the curve is clipped there" in " ".join(fig.get_supxlabel().split())


def test_every_figure_says_which_runs_and_split_it_shows(drawn):
    """Issue 53, item 7: the curves showed validation and the tables test, unlabelled (lamb first in the test
    table, worst in the curves): every figure names its split in its axis titles and its note, and the report's
    captions say which runs and which split each figure shows."""
    from mxopt_jax.compare.report import html

    probs, _, _, figs = drawn
    label_of = {
        "sensitivity.png": "final validation",
        "curves.png": "validation",
        "loss.png": "training loss",
    }
    for name, words in label_of.items():
        panels = [ax for ax in figs[name].axes if ax.get_visible()]
        assert all(ax.get_ylabel().startswith(words) for ax in panels), name
    notes = {name: " ".join(fig.get_supxlabel().split()) for name, fig in figs.items()}
    assert "the tables report the test metric" in notes["sensitivity.png"]
    assert "the tables report the test metric" in notes["curves.png"] and "validation" in notes["curves.png"]
    assert "training loss" in notes["loss.png"] and "From the selection runs" in notes["profile.png"]
    for p in probs:
        ax = figs[plots.results_png(p.name)].axes[0]
        assert ax.get_xlabel().startswith("test ") and "confirmation runs" in notes[plots.results_png(p.name)]
    assert "test metric" in figs["ranks.png"].get_suptitle()
    runs = ("selection runs", "confirmation", "reported runs")
    for name in figs:
        caption = html.caption(name)
        assert any(w in caption for w in ("validation", "test metric", "training")), name
        assert any(w in caption for w in runs), name


def test_the_html_puts_each_figure_beside_its_table():
    """Issue 53, item 6: the figures came after every table: the rank heatmap and the profile stand beside the
    overall tables, each problem's picture beside its tables, the figures of the runs after the tables."""
    from pathlib import Path

    from mxopt_jax.compare.report import render
    from mxopt_jax.compare.study import Study

    golden = Study.from_json(Path(__file__).parent / "data" / "analysis_golden" / "study.json")
    names = ["ranks.png", "profile.png", "sensitivity.png", "curves.png", "loss.png"]
    names += [plots.results_png(p.name) for p in golden.problems]
    page = render.study_html(golden, images={n: n.encode() for n in names})
    sections = {s.split("</h2>", 1)[0]: s for s in page.split("<h2>")[1:]}

    def figures_in(section: str) -> list[str]:
        return re.findall(r"alt='([^']+)'", section)

    overall = next(s for h, s in sections.items() if h.startswith("Overall ranking"))
    assert "<div class='beside'>" in overall and figures_in(overall) == ["ranks.png", "profile.png"]
    assert overall.index("<table>") < overall.index("alt='ranks.png'")
    for p in golden.problems:
        section = next(s for h, s in sections.items() if h.startswith(f"{p.name}:"))
        assert figures_in(section) == [plots.results_png(p.name)] and "<div class='beside'>" in section
    assert figures_in(sections["Figures"]) == ["sensitivity.png", "curves.png", "loss.png"]
    assert sum(len(figures_in(s)) for s in sections.values()) == len(names)  # each once


def _twins_study():
    """Two problems: on the first sgd, lbsgd, ccsgd and test are identical; on the second lbsgd and test differ
    from sgd and ccsgd but not from each other (the main job's recommender: lazy and dense updates round
    differently)."""
    names = ("sgd", "lbsgd", "ccsgd", "test", "adam")
    probs = [problem("digits_mlp"), problem("logreg")]
    recs = synthetic_records(names, [PROBLEMS[0], PROBLEMS[-1]])
    recs = [
        dataclasses.replace(r, val=r.val * 1.001, test=r.test * 1.001, train_loss=r.train_loss * 1.001)
        if r.problem == "logreg" and r.contender in ("lbsgd", "test")
        else r
        for r in recs
    ]
    return _assembled(recs, probs)


def test_contenders_identical_on_every_problem_are_one_row_whichever_the_tables_name_first():
    """Issue 53, item 8: the main job's overall table listed lbsgd and test as two rows with the same numbers:
    they are one entry in every problem's table, but under sgd on some problems and under lbsgd on the
    recommender, and the identity over problems looked only for the first problem's representatives."""
    from mxopt_jax.compare.analysis import common_identity
    from mxopt_jax.compare.report import render

    study = _twins_study()
    assert study.identical_map("digits_mlp") == {"sgd": ["lbsgd", "ccsgd", "test"]}
    assert study.identical_map("logreg") == {"sgd": ["ccsgd"], "lbsgd": ["test"]}
    assert study.identical_everywhere() == {"sgd": ["ccsgd"], "lbsgd": ["test"]}
    overall = render.format_study(study).split("== Overall: ")[1].split("\n\n")[0]
    rows = [line.split("  ")[0] for line in overall.splitlines()[3:] if line and line[0].isalpha()]
    assert "lbsgd (= test)" in rows and "sgd (= ccsgd)" in rows and "test" not in rows
    # the rule, on the main job's maps (problem by problem) and on maps that name other representatives
    mj = [{"sgd": ["lbsgd", "ccsgd", "test"]}] * 4 + [{"sgd": ["ccsgd"], "lbsgd": ["test"]}]
    assert common_identity(mj) == {"sgd": ["ccsgd"], "lbsgd": ["test"]}
    assert common_identity([{"a": ["b", "c"]}, {"b": ["c"]}]) == {"b": ["c"]}
    assert common_identity([{"a": ["b"]}, {}]) == {} and common_identity([]) == {}
    assert common_identity([{"a": ["b", "c"]}], names=["a", "c"]) == {"a": ["c"]}


def test_the_omitted_interval_sentence_points_nowhere_it_cannot():
    """Issue 53, item 8: "below, its 95 % interval covers ..." stood under the overall table with nothing below
    it (it meant: below 9 problems): the sentence now says with how many problems."""
    for n in (1, 2, 5, 8):
        text = P.ranking_omitted(n)
        assert "below" not in text and "with 2 problems" in text and "with 5 to 8" in text
        assert text.startswith(f"The interval and P(best) are omitted: {n} problem(s) cannot support")


def test_a_problem_with_embedding_tables_says_under_its_tables_who_ran_lazy_updates():
    """Issue 53, item 8: on the recommender adam runs lazy_update=True and optax.adam does not, which the report
    said only in the protocol, 800 lines later: under each table of a problem with embedding tables, right under
    its rows, it says which contenders ran lazy updates there and which pairs are different updates there."""
    from mxopt_jax.compare.direction import Direction
    from mxopt_jax.compare.report import render

    probs = [problem("movielens_mf"), problem("logreg")]
    probs = [SimpleNamespace(**vars(p), direction=Direction("lower")) for p in probs]
    probs[0].tables = ("users", "items")
    recs = synthetic_records(("adam", "optax.adam", "nag"), [PROBLEMS[3], PROBLEMS[-1]])
    study = _assembled(recs, probs)
    text = render.format_study(study)
    note = (
        "Embedding tables (users, items): adam ran with lazy_update=True here (each step updates only the table "
        "rows the mini-batch reads"
    )
    for mode in ("tuned", "one-shot"):
        part = text.split(f"== movielens_mf: matrix factorization (row-sparse) [{mode}")[1].split("\n== ")[0]
        flat = " ".join(part.split())
        assert note in flat and "optax.adam take dense gradients and update every row" in flat
        assert "adam and optax.adam are different updates on this problem." in flat
        assert flat.index(note) < flat.index("claims") if "claims" in flat else True
        assert flat.index("This table:") < flat.index(note)
    logreg = text.split("== logreg:")[1]
    assert "Embedding tables" not in logreg.split("\n== ")[0]
    assert tables.sparse_note(probs[1], study.contenders) == ""
    page = render.study_html(study, images={})
    tables_part = page.split("<details")[0]  # the page's tables, before the folded protocol and text report
    assert tables_part.count("Embedding tables (users, items)") == 2  # under both of its tables
