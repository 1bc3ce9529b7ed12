"""A study as one self-contained HTML page: ``report.html`` beside ``report.txt``, and a notebook's display.

:func:`html_report` renders the text report's sections in its order, as HTML tables: with independent
studies the tables across them first, then the first study's (labelled with it): the overall ranking with its
pictures beside it (the rank heatmap, ``ranks.png``, and the performance profile), each problem's tables (tuned
and one-shot) with their picture beside them (``results_<problem>.png``), one-shot against tuned; then "How to
read these tables", the figures of the runs (sensitivity, validation curves, training loss), the batching check,
the timings, the protocol as it ran and the whole text report (folded). Figures are PNG embedded as base64 (the
file needs nothing beside it), each with a caption saying which runs and which split it shows (:func:`caption`);
"beside" is a wrapping row: on a narrow page the figure comes under its tables. A
:class:`~mxopt_jax.compare.study.Study` shows it in a notebook (``_repr_html_``).

The tables are the text report's (:func:`~mxopt_jax.compare.report.tables.problem_table`,
:func:`~mxopt_jax.compare.report.tables.overall_table`, :func:`~mxopt_jax.compare.report.tables.modes_table`,
:func:`~mxopt_jax.compare.report.tables.across_table`) rendered as HTML tables, with the same reference lines:
the page, the text and ``summary.csv`` show the same rank sets and groups (all read from the study's analysis,
:attr:`~mxopt_jax.compare.result.StudyResult.analysis`).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..result import StudyResult
from .plots import results_png
from .tables import (
    Table,
    across_table,
    guide_sections,
    modes_table,
    overall_table,
    problem_table,
    sparse_note,
    study_label,
)

__all__ = ["FIGURE_CAPTIONS", "RESULTS_CAPTION", "caption", "html_report"]

#: What each figure shows: which runs it reads and which split (the captions under the embedded PNGs; a
#: problem's ``results_<problem>.png`` takes :data:`RESULTS_CAPTION`).
FIGURE_CAPTIONS = {
    "ranks.png": "The overall tables as a picture: each contender's rank set on each problem, read from that "
    "problem's table (the test metric of the confirmation runs: the chosen configuration on fresh seeds), "
    "coloured by the middle of the rank set (dark: first), outlined where the contender is in the table's best "
    "set (no entry shown better); rows in the overall table's order, its mean rank at the right; one panel per "
    "mode.",
    "sensitivity.png": "The selection runs (every rate tried, on the selection seeds): the final validation "
    "metric against the learning rate (the tables report the test metric of other runs, the confirmation runs), "
    "one panel per problem (and family), its legend naming each contender as that problem's table does: mean "
    "and 95 % interval over seeds (a random search's trials as points); the chosen rate circled, a triangle "
    "pointing off the grid (or the trials) when it is the lowest or highest rate tried; a mean above the axis "
    "drawn as an open triangle at the top and counted per panel.",
    "curves.png": "The reported runs (the chosen configuration on the confirmation seeds): the validation metric "
    "along training (the tables report these runs' test metric at the end), mean and 95 % interval over seeds; "
    "one panel per problem (and family), its legend naming each contender as that problem's table does, with "
    "the rate chosen on that problem; a mean above the axis is clipped, marked by open triangles at the top and "
    "counted per panel.",
    "loss.png": "The same reported runs' training loss (on the training split: the mean over the steps since "
    "the previous point), panels and clipping as in the validation curves.",
    "profile.png": "Performance profiles, from the selection runs' validation metric: the fraction of problems "
    "on which a contender's fastest trial (per selection seed the fewest steps any rate tried needed, then a "
    "majority of the seeds) reaches the validation target within tau times the fastest contender's steps.",
}
#: The caption of a problem's ``results_<problem>.png`` (:func:`mxopt_jax.compare.report.plots.plot_results`).
RESULTS_CAPTION = (
    "The problem's tables as a picture: every entry's test metric from the confirmation runs (the chosen "
    "configuration on fresh seeds), the mean with its 95 % Student-t interval, in the table's order, the best set "
    "(no entry shown better) shaded; a mean beyond the axis is drawn on its edge with its value written."
)


def caption(name: str) -> str:
    """The caption of the figure written as ``name`` (:data:`FIGURE_CAPTIONS`, :data:`RESULTS_CAPTION`)."""
    if name.startswith("results_"):
        return RESULTS_CAPTION
    return FIGURE_CAPTIONS.get(name, name)


_CSS = """
.mxopt-study { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 14px; color: #222;
  max-width: 1900px; line-height: 1.4; }
.mxopt-study .beside { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 0 2em; }
.mxopt-study .beside > div { max-width: 1150px; }
.mxopt-study .beside figure { max-width: 600px; margin-top: 0.3em; }
.mxopt-study h1 { font-size: 1.5em; margin: 0.4em 0; }
.mxopt-study h2 { font-size: 1.2em; margin: 1.2em 0 0.3em; border-bottom: 1px solid #ddd; }
.mxopt-study h3 { font-size: 1em; margin: 0.8em 0 0.2em; }
.mxopt-study table { border-collapse: collapse; margin: 0.3em 0 0.6em; }
.mxopt-study th, .mxopt-study td { padding: 2px 10px; border-bottom: 1px solid #eee; text-align: right;
  white-space: nowrap; }
.mxopt-study th { background: #f4f4f4; font-weight: 600; }
.mxopt-study td.name, .mxopt-study th.name { text-align: left; }
.mxopt-study tr.best td { font-weight: 600; }
.mxopt-study .note { color: #666; font-size: 0.9em; margin: 0.2em 0; }
.mxopt-study figure { margin: 0.8em 0; }
.mxopt-study figure img { max-width: 100%; height: auto; }
.mxopt-study figcaption { color: #555; font-size: 0.9em; }
.mxopt-study pre { background: #f8f8f8; padding: 8px; overflow-x: auto; font-size: 12px; }
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table_html(t: Table, name_col: int, best_col: int | None = None) -> str:
    """``t`` as an HTML table (header, rows) and its notes as paragraphs; rows whose ``best_col`` cell is
    ``"1"`` (the rank set {1}: shown better than every other entry) in bold."""
    if not t.rows:
        return ""
    ths = "".join(
        f'<th class="name">{_e(h)}</th>' if c == name_col else f"<th>{_e(h)}</th>"
        for c, h in enumerate(t.head)
    )
    rows = []
    for r in t.rows:
        tds = "".join(
            f'<td class="name">{_e(x)}</td>' if c == name_col else f"<td>{_e(x)}</td>"
            for c, x in enumerate(r)
        )
        best = ' class="best"' if best_col is not None and r[best_col] == "1" else ""
        rows.append(f"<tr{best}>{tds}</tr>")
    extra = f"<pre>{_e(chr(10).join(t.extra))}</pre>" if t.extra else ""
    return f"<table><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>{extra}" + "".join(
        f"<p class='note'>{_e(n).replace(chr(10), '<br>')}</p>" for n in t.notes
    )


def _problem_table(study: StudyResult, problem: Any, mode: str) -> str:
    """One problem's table of ``mode`` (:func:`~mxopt_jax.compare.report.tables.problem_table`, identical
    contenders folded as in the text)."""
    analysis = study.analysis.tables.get((problem.name, mode))
    if analysis is None:
        return ""
    t = problem_table(analysis, problem, notes=[sparse_note(problem, study.contenders)])
    s0 = analysis.selections[0]
    title = "tuned" if mode == "tuned" else "one-shot (default rate)"
    seeds = f"{s0.seeds} report seeds, {s0.steps} steps"
    return f"<h3>{_e(title)} <span class='note'>({_e(seeds)})</span></h3>" + _table_html(t, 2, 0)


def _overall(study: StudyResult, mode: str) -> str:
    """The overall ranking of ``mode`` as an HTML table (:func:`~mxopt_jax.compare.report.tables.overall_table`,
    the text report's)."""
    ranking = study.analysis.rankings.get(mode)
    if ranking is None:
        return ""
    t = overall_table(ranking)
    title = "tuned" if mode == "tuned" else "one-shot (default rate)"
    return f"<h3>{_e(title)}</h3>" + _table_html(t, 0)


def _across(study: StudyResult) -> list[str]:
    """The tables across the plan's independent studies (:func:`~mxopt_jax.compare.report.tables.across_table`,
    the text report's first section); none for a study of one."""
    across = study.analysis.across
    if not across:
        return []
    metrics = {p.name: p.metric_name for p in study.problems}
    out = [
        f"<h2>Across {across[0].studies} independent studies</h2>",
        "<p class='note'>The claims to cite: each study repeats the whole tuning on its own seeds and draws; "
        "the tables below test with the study as the unit. The sections after them are the first study's.</p>",
    ]
    for a in across:
        t = across_table(a, metrics.get(a.problem, "metric"), title=f"{a.problem} [{a.mode}]")
        out.append(f"<h3>{_e(t.title)}</h3>" + _table_html(t, 3, 0))
    return out


def _modes(study: StudyResult, of: str) -> list[str]:
    """The one-shot-against-tuned table (:func:`~mxopt_jax.compare.report.tables.modes_table`)."""
    r = study.analysis.rankings
    if len(r) < 2:
        return []
    t = modes_table(r["tuned"], r["one-shot"], study.analysis.identical_both)
    return [f"<h2>One-shot (default rate) -> tuned{_e(of)}</h2>", _table_html(t, 0)]


def _guide(study: StudyResult) -> list[str]:
    """ "How to read these tables" (:func:`~mxopt_jax.compare.report.tables.guide_sections`), the text's."""
    sections = guide_sections(study.analysis)
    if not sections:
        return []
    out = ["<h2>How to read these tables</h2>"]
    for name, items in sections:
        out.append(f"<h3>{_e(name[0].upper() + name[1:])}</h3>")
        out.append("<ul class='note'>" + "".join(f"<li>{_e(x)}</li>" for x in items) + "</ul>")
    return out


def render_images(study: StudyResult) -> dict[str, bytes]:
    """The study's figures as PNG bytes (``{"ranks.png": ..., "sensitivity.png": ..., ...}``:
    :func:`mxopt_jax.compare.report.plots.draw_report`); empty without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return {}
    from .. import figures
    from .plots import draw_report

    with figures.plain_text():  # names as they are: a '$' in one is no mathtext
        figs = draw_report(
            study.problems,
            study.all_records("selection") + study.shown_records("tuned"),
            study.analysis,
            study.families,
        )
    return {name: figures.png_bytes(fig) for name, fig in figs.items()}


def _figure(name: str, data: bytes) -> str:
    """One embedded PNG with its caption."""
    src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return f"<figure><img src='{src}' alt='{_e(name)}'><figcaption>{_e(caption(name))}</figcaption></figure>"


def _beside(tables: Sequence[str], figures: Sequence[str]) -> str:
    """``tables`` with ``figures`` beside them (below them where the page is too narrow); the tables alone
    when there is no figure."""
    if not figures:
        return "".join(tables)
    return f"<div class='beside'><div>{''.join(tables)}</div><div>{''.join(figures)}</div></div>"


def _seeds(seeds: Sequence[int]) -> str:
    s = [int(x) for x in seeds]
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def html_report(
    study: StudyResult,
    text: str,
    protocol: str,
    notes: Sequence[str] = (),
    standalone: bool = True,
    images: Mapping[str, bytes] | None = None,
    lead: str = "",
) -> str:
    """The study as HTML, in the text report's order, results first: a whole page (``standalone``, what
    ``report.html`` holds) or a fragment for a notebook. First what the claims are about, or with independent
    studies the claims about the optimizers in sentences (``lead``:
    :func:`mxopt_jax.compare.report.render.lead_claims`); with independent studies the tables across them next,
    then the first study's sections, each labelled with it. ``text``: the text report (shown whole, folded);
    ``protocol``: the protocol as it ran; ``notes``: paragraphs under "Checks and timings"; ``images``: the
    figures as PNG bytes by file name (default: drawn now, when matplotlib is installed; ``{}``: none).
    :func:`mxopt_jax.compare.report.render.study_html` fills these in."""
    images = render_images(study) if images is None else images
    names = [
        c.name for c in study.contenders if any(c.name in study.tuned.get(p.name, {}) for p in study.problems)
    ]
    parts = [f"<h1>Optimizer study: {len(names)} contender(s) on {len(study.problems)} problem(s)</h1>"]
    parts.append(
        "<p class='note'>"
        + _e(
            f"Preset '{study.preset.name}': {study.preset.grid_points} rates per grid, selection seeds "
            f"{_seeds(study.seeds)}, confirmation seeds {_seeds(study.confirm_seeds)}. Selection on validation, "
            "reported on test. The tables' test values, medians, groups, rank sets, best validation values, steps "
            "to target and report divergences read the confirmation runs; the fastest trial, the performance "
            "profile, ms/step and the selection divergences read the selection runs. Files beside this page: "
            "report.txt, runs.csv, summary.csv, study.json."
        )
        + "</p>"
    )
    if lead:
        head, *items = [line.strip() for line in lead.splitlines() if line.strip()]
        listed = "".join(f"<li>{_e(item)}</li>" for item in items)
        parts.append(f"<h2>Claims</h2><p>{_e(head)}</p>" + (f"<ul>{listed}</ul>" if listed else ""))
    parts += _across(study)
    which = study_label(study.analysis)
    of = f" ({which})" if which else ""
    if which:
        parts.append(
            f"<p class='note'>{_e(which[0].upper() + which[1:])}: its overall ranking and each problem's tables "
            "(the other studies enter only the tables across studies).</p>"
        )
    images = dict(images)

    def placed(*names: str) -> list[str]:
        """The figures ``names`` that are there, each placed once."""
        return [_figure(n, images.pop(n)) for n in names if n in images]

    if len(study.problems) > 0:
        parts.append(f"<h2>Overall ranking{_e(of)}</h2>")
        parts.append(
            _beside(
                [_overall(study, mode) for mode in ("tuned", "one-shot")], placed("ranks.png", "profile.png")
            )
        )
    for p in study.problems:
        parts.append(f"<h2>{_e(p.name)}: {_e(p.title)}{_e(of)}</h2>")
        better = p.direction.word
        relation = _e(p.direction.symbol)
        margin = float(getattr(p, "margin", 0.0))
        parts.append(
            f"<p class='note'>{_e(p.metric_name)} ({_e(better)} is better), target {relation} "
            f"{_e(f'{p.target:g}')}; practical margin {_e(f'{margin:g}' if margin else '0 (none)')}; "
            f"{_e(study.preset.steps(p))} steps, batch {_e(p.batch_size)}. {_e(p.description)}</p>"
        )
        parts.append(
            _beside(
                [_problem_table(study, p, mode) for mode in ("tuned", "one-shot")],
                placed(results_png(p.name)),
            )
        )
    parts += _modes(study, of)
    parts += _guide(study)
    if images:  # the figures of the runs (no table of their own): after the tables
        parts.append("<h2>Figures</h2>")
        parts += placed(*images)
    parts.append("<h2>Checks and timings</h2>")
    parts += [f"<p>{_e(n)}</p>" for n in notes]
    parts.append(
        f"<details{' open' if standalone else ''}><summary><b>Protocol</b> (as it ran)</summary>"
        f"<pre>{_e(protocol)}</pre></details>"
    )
    parts.append(
        "<details><summary><b>Text report</b> (every table, as in report.txt)</summary>"
        f"<pre>{_e(text)}</pre></details>"
    )
    body = f"<div class='mxopt-study'><style>{_CSS}</style>{''.join(parts)}</div>"
    if not standalone:
        return body
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>Optimizer study: {_e(', '.join(p.name for p in study.problems))}</title></head>"
        f"<body>{body}</body></html>\n"
    )
