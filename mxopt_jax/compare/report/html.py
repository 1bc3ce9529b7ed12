"""A study as one self-contained HTML page: ``report.html`` beside ``report.txt``, and a notebook's display.

:func:`html_report` renders the tables of each problem (tuned and one-shot), the figures (PNG embedded as
base64: the file needs nothing beside it), the batching check, the timings, the protocol as it ran and the
whole text report. A :class:`~mxopt_jax.compare.study.Study` shows it in a notebook (``_repr_html_``).

The ranks are the ``rank`` column of ``summary.csv`` (:func:`~mxopt_jax.compare.report.export.summary_rows`):
the page, the CSV and the DataFrames show one rank.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..protocol import Selection
from ..result import StudyResult as Study
from .export import summary_rows
from .tables import _fmt_ms, _fmt_num, _fmt_target, fmt_lr, fmt_mean_ci, label

__all__ = ["FIGURE_CAPTIONS", "html_report"]

#: What each figure shows (the captions under the embedded PNGs).
FIGURE_CAPTIONS = {
    "sensitivity.png": "Final validation metric against the learning rate (the selection runs): mean and 95 % "
    "interval over seeds (a random search's trials as points); the chosen rate circled, a triangle pointing off "
    "the grid (or the trials) when it is the lowest or highest rate tried; a mean above the axis drawn as an open "
    "triangle at the top and counted per panel.",
    "curves.png": "The reported runs (the chosen configuration on the confirmation seeds): validation metric and "
    "training loss along training, mean and 95 % interval over seeds; each row's legend gives the rates chosen "
    "on that problem.",
    "profile.png": "Performance profiles: the fraction of problems a contender reaches the validation target "
    "within tau times the fastest contender's steps.",
}

_CSS = """
.mxopt-study { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 14px; color: #222;
  max-width: 1100px; line-height: 1.4; }
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


def _problem_table(study: Study, problem: Any, mode: str, ranks: Mapping[str, str]) -> str:
    table = study.tuned if mode == "tuned" else study.one_shot
    sels: dict[str, Selection] = table.get(problem.name, {})
    shown = [n for n in study.reported(problem.name, mode) if n in sels]
    if not shown:
        return ""
    same = study.identical_map(problem.name, mode)

    def key(n: str) -> tuple[float, float, str]:
        r = ranks.get(n, "")
        return (float(r) if r else math.inf, sels[n].test_mean, n)

    metric = _e(problem.metric_name or "metric")
    s0 = sels[shown[0]]
    pct = f"{100 * s0.level:g} %"
    head = [
        ("rank", ""),
        ("contender", "name"),
        (f"test {metric} (± {pct} CI)", ""),
        ("lr", ""),
        (f"best val {metric}", ""),
        ("steps to target", ""),
        ("ms/step", ""),
        ("diverged", ""),
    ]
    rows = []
    for n in sorted(shown, key=key):
        s = sels[n]
        runs = len(s.lrs) * s.seeds
        cells = [
            ranks.get(n, ""),
            label(n, same),
            fmt_mean_ci(s.test_mean, s.test_ci),
            fmt_lr(s),
            _fmt_num(s.best_val_mean),
            _fmt_target(s),
            _fmt_ms(s.ms_per_step),
            f"{s.diverged}/{runs}" if s.diverged else "",
        ]
        best = ' class="best"' if ranks.get(n) == "1" else ""
        tds = "".join(
            f'<td class="name">{_e(c)}</td>' if i == 1 else f"<td>{_e(c)}</td>" for i, c in enumerate(cells)
        )
        rows.append(f"<tr{best}>{tds}</tr>")
    ths = "".join(f'<th class="{cls}">{h}</th>' if cls else f"<th>{h}</th>" for h, cls in head)
    title = "tuned" if mode == "tuned" else "one-shot (default rate)"
    seeds = f"{s0.seeds} seeds, {s0.steps} steps"
    notes = []
    if any(sels[n].on_edge for n in shown):
        notes.append(
            "&lt; / &gt;: the chosen rate is the smallest / largest of its grid; the best may lie beyond."
        )
    notes.append(
        f"rank: summary.csv's (the protocol below says how ranks are decided); test: mean over the reported "
        f"seeds ± the {pct} interval; steps to target: median over seeds (k/S: seeds that reached it); diverged: "
        "(rate, seed) runs."
    )
    return (
        f"<h3>{_e(title)} <span class='note'>({_e(seeds)})</span></h3>"
        f"<table><thead><tr>{ths}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + "".join(f"<p class='note'>{n}</p>" for n in notes)
    )


def _ranks(study: Study) -> dict[tuple[str, str], dict[str, str]]:
    """``{(problem, mode): {contender: rank}}`` from ``summary.csv``'s rows."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    folds = {
        p.name: {m: study.identical_map(p.name, m) for m in ("tuned", "one-shot")} for p in study.problems
    }
    for row in summary_rows(study.selections("tuned") + study.selections("one-shot"), folds):
        out.setdefault((row["problem"], row["mode"]), {})[row["contender"]] = row.get("rank", "")
    return out


def render_images(study: Study) -> dict[str, bytes]:
    """The study's figures as PNG bytes (``{"sensitivity.png": ..., ...}``); empty without matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return {}
    from .. import figures
    from .plots import draw_all

    figs = draw_all(
        study.problems,
        study.all_records("selection") + study.all_records("confirmation"),
        study.selections(),
        study.families,
        study.identical_everywhere("tuned"),
    )
    return {name: figures.png_bytes(fig) for name, fig in figs.items()}


def _seeds(seeds: Sequence[int]) -> str:
    s = [int(x) for x in seeds]
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(map(str, s))


def html_report(
    study: Study,
    text: str,
    protocol: str,
    notes: Sequence[str] = (),
    standalone: bool = True,
    images: Mapping[str, bytes] | None = None,
) -> str:
    """The study as HTML: a whole page (``standalone``, what ``report.html`` holds) or a fragment for a
    notebook. ``text``: the text report (shown whole, folded); ``protocol``: the protocol as it ran; ``notes``: paragraphs under "Checks and
    timings"; ``images``: the figures as PNG bytes by file name (default: drawn now, when matplotlib is
    installed; ``{}``: none). :func:`mxopt_jax.compare.report.render.study_html` fills these in."""
    images = render_images(study) if images is None else images
    ranks = _ranks(study)
    names = [
        c.name for c in study.contenders if any(c.name in study.tuned.get(p.name, {}) for p in study.problems)
    ]
    parts = [f"<h1>Optimizer study: {len(names)} contender(s) on {len(study.problems)} problem(s)</h1>"]
    parts.append(
        "<p class='note'>"
        + _e(
            f"Preset '{study.preset.name}': {study.preset.grid_points} rates per grid, selection seeds "
            f"{_seeds(study.seeds)}, confirmation seeds {_seeds(study.confirm_seeds)} (the reported runs). "
            "Selection on validation, reported on test. Files beside this page: report.txt, runs.csv, "
            "summary.csv, study.json."
        )
        + "</p>"
    )
    for p in study.problems:
        parts.append(f"<h2>{_e(p.name)}: {_e(p.title)}</h2>")
        parts.append(
            f"<p class='note'>{_e(p.metric_name)} (lower is better), target &lt;= {_e(f'{p.target:g}')}; "
            f"{_e(study.preset.steps(p))} steps, batch {_e(p.batch_size)}. {_e(p.description)}</p>"
        )
        for mode in ("tuned", "one-shot"):
            parts.append(_problem_table(study, p, mode, ranks.get((p.name, mode), {})))
    if images:
        parts.append("<h2>Figures</h2>")
        for name, data in images.items():
            src = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            caption = FIGURE_CAPTIONS.get(name, name)
            parts.append(
                f"<figure><img src='{src}' alt='{_e(name)}'><figcaption>{_e(caption)}</figcaption></figure>"
            )
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
