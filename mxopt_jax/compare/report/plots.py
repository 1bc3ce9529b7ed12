"""Figures of a study (needs matplotlib: ``pip install 'mxopt_jax[plot]'``; imported lazily, Agg backend).

The pictures of the tables, first (:func:`draw_tables`), read from the analysis like the tables:

* :func:`plot_results` (``results_<problem>.png``): a problem's tables (tuned, one-shot) as a picture: every
  entry's test value with its 95 % interval, in the table's order, the best set (:func:`best_set`) shaded;
* :func:`plot_ranks` (``ranks.png``): the overall tables as a rank heatmap, contenders by problems.

The figures of the runs (:func:`draw_study`):

* :func:`plot_sensitivity`: final validation metric against the learning rate (log axis) over the selection
  seeds: the mean with its 95 % Student-t interval (the tables' interval), the chosen rate circled (a triangle
  pointing off the grid when it sits on the grid's edge, the tables' ``<``/``>``); a mean above the y range
  marked at the top (and counted); only when a run diverged, a grey strip at the top where such rates are
  marked ``x``;
* :func:`plot_curves`: the reported runs (the chosen rate on the confirmation seeds): the validation metric
  or the training loss against steps, mean with its 95 % interval; a mean above the y range clipped, marked at
  the top and counted;
* :func:`plot_profile`: the performance profiles (``rho`` against ``tau``), legend sorted by score; it needs
  two problems or more (on one problem a profile says nothing the table does not).

Every figure names the split it shows (test for the tables' pictures, validation or training for the runs') in
its axis titles and its note. The figures of the runs have one row per problem (the profile: one row) and, when
more than :data:`~mxopt_jax.compare.figures.ONE_PANEL_MAX` contenders are drawn, one column per family (at most
eight lines per axes); the panels of a row share their y range, and log axes are labelled inside a decade
(:func:`~mxopt_jax.compare.figures.log_subs`). A short title on top, how to read the figure at the bottom.
Colours, line styles, markers, figure set-up and PNG writing are the app's one style
(:mod:`mxopt_jax.compare.figures`): a contender has one look in every figure of every study
(:func:`~mxopt_jax.compare.figures.contender_style`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import figures
from ..analysis import Profile, Ranking, StudyAnalysis, TableAnalysis, mean_band
from ..contenders import group_by_family
from ..direction import Direction
from ..protocol import LEVEL, Selection
from ..records import Records
from .tables import label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..problems.base import Problem

__all__ = [
    "best_set",
    "draw_all",
    "draw_report",
    "draw_study",
    "draw_tables",
    "plot_curves",
    "plot_profile",
    "plot_ranks",
    "plot_results",
    "plot_sensitivity",
    "results_png",
    "save_all",
]

_STRIP = 0.2  # top fraction of a sensitivity panel where diverged rates are marked
_TARGET = {"color": "#777777", "linestyle": (0, (4, 3)), "linewidth": 1.0, "zorder": 1}
_PCT = f"{100 * LEVEL:g} %"


def _groups(names: Sequence[str], families: Mapping[str, str] | None) -> list[tuple[str, list[str]]]:
    """``names`` split into panels: one ``("", names)`` panel for few names, else one per family."""
    names = list(dict.fromkeys(names))
    if len(names) <= figures.ONE_PANEL_MAX:
        return [("", names)]
    return group_by_family(names, families)


def _as_list(problems: Problem | Sequence[Problem]) -> list[Problem]:
    return list(problems) if isinstance(problems, Sequence) else [problems]


def _tuned_records(records: Sequence[Records], problem: str) -> dict[str, Records]:
    """``{contender: records}`` on ``problem``, the one with the most rates where there are several (the
    selection runs)."""
    out: dict[str, Records] = {}
    for r in records:
        if r.problem == problem and (r.contender not in out or len(r.lrs) > len(out[r.contender].lrs)):
            out[r.contender] = r
    return out


def _confirmation(records: Sequence[Records], problem: str) -> dict[str, Records]:
    """``{contender: confirmation records}`` on ``problem`` (the reported runs), where there are any."""
    return {
        r.contender: r for r in records if r.problem == problem and getattr(r, "role", "") == "confirmation"
    }


def _selections(recs: Mapping[str, Records], selections: Sequence[Selection]) -> dict[str, Selection]:
    """The given selection of each contender's records (matched by problem and grid; none: not drawn as
    chosen)."""
    given = {(s.problem, s.contender, len(s.lrs)): s for s in selections}
    return {
        n: given[(r.problem, n, len(r.lrs))] for n, r in recs.items() if (r.problem, n, len(r.lrs)) in given
    }


def _ylim(
    values: np.ndarray, chosen: np.ndarray, metric_name: str, target: float, factor: float = 3.0
) -> tuple[float, float, bool]:
    """A readable y range ``(bottom, top, log)``.

    Linear by default: from the lowest value (or the target) up by ``factor`` times the distance to the
    upper quartile of the ``chosen`` values (the tuned results), and at least a quarter of that quartile,
    so the differences between good results stay visible and the slopes around them show. When the values
    span more than a decade (an error rate from 2 % to chance level), a log axis up to the largest value
    shows the good results and the slow rates at once. Always capped at 100 for a percentage and at 30 times
    the upper quartile; values above (blow-ups) leave the panel at the top.
    """
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    c = np.asarray(chosen, np.float64)
    c = c[np.isfinite(c)]
    low = float(v.min()) if v.size else 0.0
    if math.isfinite(target):
        low = min(low, target)
    if c.size == 0:
        c = v
    sane = float(np.quantile(c, 0.75)) if c.size else low + 1.0
    cap = 100.0 if "%" in metric_name else math.inf
    if v.size and low > 0:
        top = min(float(v.max()), 30 * sane, cap)
        if top / low >= 10:
            return low / 1.15, top * 1.15, True
    top = low + max(factor * (sane - low), 0.25 * abs(sane))
    if math.isfinite(target):
        top = max(top, target + 0.5 * (target - low))
    if v.size:
        top = min(top, float(v.max()))
    top = min(top, cap)
    if top <= low:
        top = low + max(abs(low) * 0.1, 1e-3)
    pad = 0.04 * (top - low)
    bottom = low - pad
    if low >= 0 > bottom:
        bottom = 0.0 if low < 2 * pad else low - pad
    return bottom, top + pad, False


def _strip(ax: Any, lo: float, hi: float, log: bool, show: bool = True) -> Any:
    """Set the y axis so that ``[lo, hi]`` fills the lower ``1 - _STRIP`` of ``ax``, shade the strip above
    it (where diverged rates are marked) and return the data area, to clip lines to. Without ``show`` (no
    run diverged in the row), no strip: ``[lo, hi]`` fills the panel."""
    from matplotlib.patches import Rectangle

    if not show:
        _set_y(ax, lo, hi, log)
        return Rectangle((0, 0), 1, 1, transform=ax.transAxes)

    if log:
        top = 10 ** (math.log10(lo) + (math.log10(hi) - math.log10(lo)) / (1 - _STRIP))
    else:
        top = lo + (hi - lo) / (1 - _STRIP)
    _set_y(ax, lo, hi, log)  # ticks chosen for the data's range
    ax.set_yticks([t for t in ax.get_yticks() if lo <= t <= hi])  # no ticks in the strip
    ax.set_ylim(lo, top)
    ax.axhspan(hi, top, color="#eeeeee", zorder=0, linewidth=0)
    ax.text(
        0.015,
        1 - _STRIP / 2,
        "diverged",
        transform=ax.transAxes,
        fontsize=7,
        color="#888888",
        va="center",
        ha="left",
        zorder=0,
    )
    return Rectangle((0, 0), 1, 1 - _STRIP, transform=ax.transAxes)


def _set_y(ax: Any, lo: float, hi: float, log: bool) -> None:
    if log:
        figures.set_log_axis(ax.yaxis, subs=None, limits=(lo, hi))
    else:
        ax.set_ylim(lo, hi)


def _target_line(ax: Any, target: float) -> None:
    if math.isfinite(target):
        ax.axhline(target, **_TARGET)


def _grid(
    probs: Sequence[Problem], names: Sequence[str], families: Mapping[str, str] | None, height: float
) -> tuple[Figure, dict[tuple[int, int], Any], list[tuple[str, list[str]]]]:
    """A figure with one panel per problem and family: rows are problems and columns families when the
    contenders are split by family, else the problems fill rows of up to three panels. Returns the figure,
    ``{(problem index, family index): axes}`` and the families' ``(name, members)``; unused axes are hidden."""
    groups = _groups(names, families)
    n = len(probs)
    if len(groups) > 1:
        nrows, ncols = n, len(groups)
        where = {(r, c): (r, c) for r in range(n) for c in range(ncols)}
    else:
        ncols = min(3, n)
        nrows = math.ceil(n / ncols)
        where = {(r, 0): divmod(r, ncols) for r in range(n)}
    fig = figures.figure(figsize=(4.2 * ncols + 0.6, height * nrows + 1.3))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for r in range(nrows):
        for c in range(ncols):
            if (r, c) not in where.values():
                axes[r][c].set_visible(False)
    return fig, {k: axes[v[0]][v[1]] for k, v in where.items()}, groups


def _identity(
    problem: str,
    identical: Mapping[str, Sequence[str]] | None,
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None,
) -> dict[str, list[str]]:
    """The identical contenders of ``problem``'s table (``identical_by_problem``), else those identical on
    every problem (``identical``): what a panel of that problem folds and names, as the table does."""
    if identical_by_problem is not None and problem in identical_by_problem:
        return {k: list(v) for k, v in identical_by_problem[problem].items()}
    return {k: list(v) for k, v in (identical or {}).items()}


def _panel_legend(ax: Any, title: str = "", entries: int | None = None) -> None:
    """A small legend inside the panel: its contenders, named where the lines are (two columns for more than
    five ``entries``, by default the panel's lines), under ``title`` when given."""
    ax.legend(
        loc="best",
        fontsize=6.5,
        handlelength=1.6,
        framealpha=0.8,
        borderpad=0.3,
        labelspacing=0.2,
        ncol=2 if (len(ax.lines) if entries is None else entries) > 5 else 1,
        columnspacing=0.8,
        title=title or None,
        title_fontsize=6.5,
    )


def _final_stats(r: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per rate: the mean over seeds of the final validation metric and its 95 % interval (NaN where a seed
    diverged), and the mask of rates where a seed diverged."""
    v = np.where(np.asarray(r.diverged), np.nan, np.asarray(r.val, np.float64)[:, :, -1])
    bad = np.asarray(~np.isfinite(v).all(axis=1))
    mean, low, high = mean_band(v, axis=1)
    return mean, low, high, bad


def _look(name: str) -> dict[str, Any]:
    """``name``'s line in these figures: its colour, line style and marker in every figure of every study
    (:func:`mxopt_jax.compare.figures.contender_style`)."""
    return figures.contender_style(name, linewidth=1.4)


def _shown(
    per: Mapping[str, Mapping[str, Any]],
    sels: Mapping[str, Mapping[str, Selection]],
    identical: Mapping[str, Sequence[str]] | None,
) -> list[str]:
    """Contenders to draw, in the order met, without those identical to a drawn one."""
    names = list(dict.fromkeys(n for recs in per.values() for n in recs))
    hidden = {o for rep, others in (identical or {}).items() if rep in names for o in others if o != rep}
    return [n for n in names if n not in hidden]


_EDGE_MARKER = {"low": "<", "high": ">"}  # the tables' marks, as triangles pointing off the grid


def plot_sensitivity(
    problems: Problem | Sequence[Problem],
    records: Sequence[Records],
    selections: Sequence[Selection],
    families: Mapping[str, str] | None = None,
    identical: Mapping[str, Sequence[str]] | None = None,
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> Figure:
    """Learning-rate sensitivity: final validation metric against the rate, one panel per problem (and
    family; laid out as :func:`plot_curves`), each titled with its problem and naming its contenders in its own
    legend as that problem's table does (``identical_by_problem``: the table's identical contenders, drawn once
    and named in one entry, ``"sgd (= lbsgd, ccsgd, test)"``; ``identical``: those identical everywhere).

    Per contender: the mean over seeds (line and dots) and its 95 % Student-t interval (band), the chosen rate
    circled, or marked with a triangle pointing off the grid when it is the grid's smallest or largest (the
    tables' ``<``/``>``: the best rate may lie beyond). Where a run diverged, a grey strip at the top of the
    row marks such rates ``x`` (the protocol scores them ``+inf``). The y range is a readable range around the
    good results (:func:`_ylim`): a mean above it is drawn as an open triangle at the top of the data area, at
    its rate, and each panel counts them, so every configuration tried is on the figure. The dashed line is the
    problem's target. Only records with more than one rate are drawn.
    """
    probs = _as_list(problems)
    per = {
        p.name: {n: r for n, r in _tuned_records(records, p.name).items() if len(r.lrs) > 1} for p in probs
    }
    sels = {p.name: _selections(per[p.name], selections) for p in probs}
    names = _shown(per, sels, identical)
    fig, place, groups = _grid(probs, names, families, 2.8)
    any_bad = any_edge = any_trials = any_above = False
    for row, p in enumerate(probs):
        recs = per[p.name]
        ident = _identity(p.name, identical, identical_by_problem)
        drawn = set(_shown({p.name: recs}, {}, ident))
        means = {n: _final_stats(recs[n]) for n in recs if n in names and n in drawn}  # drawn lines only
        allv = np.concatenate([m[0] for m in means.values()]) if means else np.array([])
        picked = np.array([means[n][0][s.index] for n, s in sels[p.name].items() if n in means])
        lo, hi, logy = _ylim(allv, picked, p.metric_name, p.target)
        row_bad = any(m[3].any() for m in means.values())
        any_bad |= row_bad
        for col, (family, members) in enumerate(groups):
            ax = place[(row, col)]
            clip = _strip(ax, lo, hi, logy, row_bad)
            diverging = [n for n in members if n in means and means[n][3].any()]
            gap = min(0.03, (_STRIP - 0.05) / max(len(diverging) - 1, 1))
            top = 1 - _STRIP if row_bad else 1.0  # the top of the data area, in axes coordinates
            above = 0  # finite means above the y range in this panel: marked at its top and counted
            rising = [
                n for n in members if n in means and (np.isfinite(means[n][0]) & (means[n][0] > hi)).any()
            ]
            for n in members:
                if n not in means:
                    continue
                style = _look(n)
                mean, low, high, bad = means[n]
                lrs = np.asarray(recs[n].lrs, np.float64)
                # a random search's trials (other hyperparameters vary between them): points, no line or band
                trials = bool(recs[n].hparams) or not bool(np.all(np.diff(lrs) > 0))
                any_trials |= trials
                shape = {**style, "linestyle": "none"} if trials else style
                artists = ax.plot(
                    lrs, mean, markersize=3.5 if trials else 3.0, label=label(n, ident), **shape
                )
                if not trials:
                    artists.append(
                        ax.fill_between(lrs, low, high, color=style["color"], alpha=figures.BAND_ALPHA, lw=0)
                    )
                off = np.isfinite(mean) & (mean > hi)
                if off.any():  # above the axis: a mark at the top of the data area, pointing up
                    above += int(off.sum())
                    ax.plot(  # one row of marks per contender, as the diverged ones in the strip
                        lrs[off],
                        np.full(off.sum(), top - 0.035 - 0.03 * rising.index(n)),
                        transform=ax.get_xaxis_transform(),
                        linestyle="none",
                        marker="^",
                        markersize=4.5,
                        markerfacecolor="none",
                        markeredgewidth=1.1,
                        color=style["color"],
                        zorder=4,
                    )
                if bad.any():  # in the strip above the data, one row per contender
                    ax.plot(
                        lrs[bad],
                        np.full(bad.sum(), 1 - 0.025 - gap * diverging.index(n)),
                        transform=ax.get_xaxis_transform(),
                        linestyle="none",
                        marker="x",
                        markersize=4.5,
                        markeredgewidth=1.3,
                        color=style["color"],
                        zorder=4,
                    )
                s = sels[p.name].get(n)
                if s is not None and math.isfinite(mean[s.index]):
                    edge = _EDGE_MARKER.get(s.on_edge or "")
                    any_edge |= edge is not None
                    artists += ax.plot(
                        s.lr,
                        mean[s.index],
                        marker=edge or "o",
                        markersize=8 if edge else 7,
                        markerfacecolor="white",
                        markeredgewidth=1.6,
                        markeredgecolor=style["color"],
                        linestyle="none",
                        zorder=5,
                    )
                for artist in artists:
                    artist.set_clip_path(clip)
            if above:
                any_above = True
                ax.text(
                    0.985,
                    top - 0.07 - 0.03 * len(rising),
                    f"△ {above} above the axis",
                    transform=ax.transAxes,
                    fontsize=7,
                    color="#555555",
                    ha="right",
                    va="top",
                    zorder=6,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1.0},
                )
            _target_line(ax, p.target)
            ax.set_xscale("log")
            figures.no_minor_ticks(
                ax.xaxis
            )  # minor ticks on 25 log axes cost seconds to lay out, add nothing
            ax.grid(True, **figures.GRID)
            ax.tick_params(labelsize=8)
            ax.set_title(f"{p.name} · {family}" if family else p.name, fontsize=9.5)
            ax.set_ylabel(f"final validation {p.metric_name}" + (" (log)" if logy else ""), fontsize=8.5)
            ax.set_xlabel("learning rate", fontsize=8.5)
            if ax.get_legend_handles_labels()[1]:
                _panel_legend(ax)
    note = (
        "The selection runs' final validation metric (the tables report the test metric of the confirmation "
        f"runs): mean over the selection seeds, band: its {_PCT} interval; ○ the chosen rate"
    )
    if any_trials:
        note = (
            "The selection runs' final validation metric (the tables report the test metric of the confirmation "
            "runs): mean over the selection seeds of each trial of a random search (points: the other "
            "hyperparameters vary between them, so no line or band); ○ the chosen trial"
        )
    if any_edge:
        note += (
            " (◁ ▷ the lowest / highest rate among the trials: the best rate may lie beyond)"
            if any_trials
            else " (◁ ▷ on the grid's edge: the best rate may lie beyond)"
        )
    if any_above:
        note += "; △ at the top: a mean above the axis, drawn there and counted per panel"
    if any_bad:
        note += "; × in the grey strip: a seed diverged at that rate"
    note += "; dashed: the target."
    figures.titles(fig, "Learning-rate sensitivity: final validation metric", note)
    return fig


def plot_curves(
    problems: Problem | Sequence[Problem],
    records: Sequence[Records],
    selections: Sequence[Selection],
    families: Mapping[str, str] | None = None,
    identical: Mapping[str, Sequence[str]] | None = None,
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    what: str = "val",
) -> Figure:
    """The reported runs along training: the validation metric (``what="val"``, ``curves.png``) or the
    training loss (``what="loss"``, ``loss.png``) against steps, mean over seeds with its 95 % interval.

    One panel per problem (and per family when more than
    :data:`~mxopt_jax.compare.figures.ONE_PANEL_MAX` contenders are drawn: rows are problems, columns families;
    else the problems fill rows of up to three panels). Each panel is titled with its problem (and family) and
    names its contenders in its own legend, as that problem's table does (``identical_by_problem``: the
    table's identical contenders, drawn once; ``identical``: those identical everywhere), with the rate chosen
    on that problem (and how many seeds diverged, which breaks the mean). The reported runs are the chosen
    rate's confirmation records (fresh seeds) where ``records`` hold them, else the selection runs at the
    chosen rate."""
    if what not in ("val", "loss"):
        raise ValueError(f"plot_curves: what must be 'val' or 'loss', got {what!r}")
    probs = _as_list(problems)
    per = {p.name: _tuned_records(records, p.name) for p in probs}
    conf = {p.name: _confirmation(records, p.name) for p in probs}
    sels = {p.name: _selections(per[p.name], selections) for p in probs}
    names = _shown(per, sels, identical)
    fig, place, groups = _grid(probs, names, families, 2.6)
    fresh = all(n in conf[p.name] for p in probs for n in sels[p.name])
    clipped = False
    for row, p in enumerate(probs):
        recs, chosen = per[p.name], sels[p.name]
        ident = _identity(p.name, identical, identical_by_problem)
        drawn = _shown({p.name: recs}, {}, ident)
        bands: dict[str, Any] = {}
        for n, r in recs.items():
            if n not in chosen or n not in drawn:
                continue
            src, g = (conf[p.name][n], 0) if n in conf[p.name] else (r, chosen[n].index)
            curve = src.val if what == "val" else src.train_loss
            v = np.asarray(curve, np.float64)[g]  # (S, E)
            bad = int((~np.isfinite(np.asarray(src.val, np.float64)[g][:, -1])).sum())
            bands[n] = (np.asarray(src.eval_steps, np.float64), mean_band(v, axis=0), bad)
        allv = np.concatenate([b[1][0] for b in bands.values()]) if bands else np.array([])
        finals = np.array([b[1][0][-1] for b in bands.values()])
        if what == "val":
            lo, hi, logy = _ylim(allv, finals, p.metric_name, p.target, factor=5.0)
        else:  # the loss axis as the metric's: around the final losses (a blow-up leaves the top)
            lo, hi, logy = _ylim(allv, finals, "", math.nan, 5.0)
        any_off = False
        for col, (family, members) in enumerate(groups):
            ax = place[(row, col)]
            drawn_here = [n for n in members if n in bands]
            off = {}  # contender -> the steps where its mean is above the axis (clipped there)
            for n in drawn_here:
                steps, (mean, low, high), bad = bands[n]
                style = _look(n)
                if what == "loss" and logy:
                    low = np.where(low > 0, low, np.nan)
                rate = f"{chosen[n].lr:.3g}" + (f", {bad} diverged" if bad else "")
                every = max(1, len(steps) // 8)
                ax.plot(
                    steps,
                    mean,
                    label=f"{label(n, ident)}  {rate}",
                    markersize=3.0,
                    markevery=(drawn_here.index(n) % every, every),
                    **style,
                )
                ax.fill_between(steps, low, high, color=style["color"], alpha=figures.BAND_ALPHA, linewidth=0)
                above = np.isfinite(mean) & (mean > hi)
                if above.any():
                    off[n] = steps[above]
            for k, (n, at) in enumerate(off.items()):  # one row of marks per clipped contender, at the top
                ax.plot(
                    at,
                    np.full(len(at), 0.985 - 0.025 * k),
                    transform=ax.get_xaxis_transform(),
                    linestyle="none",
                    marker="^",
                    markersize=3.5,
                    markerfacecolor="none",
                    markeredgewidth=0.9,
                    color=_look(n)["color"],
                    zorder=4,
                    clip_on=False,
                )
            any_off |= bool(off)
            if what == "val":
                _target_line(ax, p.target)
            _set_y(ax, lo, hi, logy)
            ax.grid(True, **figures.GRID)
            ax.tick_params(labelsize=8)
            ax.set_title(f"{p.name} · {family}" if family else p.name, fontsize=9.5)
            unit = f"validation {p.metric_name}" if what == "val" else "training loss"
            ax.set_ylabel(unit + (" (log)" if logy else ""), fontsize=8.5)
            ax.set_xlabel("step", fontsize=8.5)
            if (
                drawn_here
            ):  # the count of curves clipped heads the legend (text in the panel would hide lines)
                _panel_legend(ax, f"△ {len(off)} clipped above the axis" if off else "", len(drawn_here))
        clipped |= any_off
    runs = "the chosen rate on the confirmation seeds" if fresh else "the chosen rate on the selection seeds"
    shown = (
        "the validation metric (the tables report the test metric)"
        if what == "val"
        else "the training loss (mean over the steps since the previous point)"
    )
    figures.titles(
        fig,
        "Validation curves of the reported runs" if what == "val" else "Training loss of the reported runs",
        f"Runs at {runs}: {shown}, mean over seeds, band: its {_PCT} interval; each panel's legend: contender "
        "(= those identical to it in that problem's table) and the rate chosen on that problem"
        + ("; dashed: the target" if what == "val" else "")
        + (
            "; △ at the top: the mean is above the axis at that step (the curve is clipped there), one row per "
            "contender, counted at the head of the panel's legend."
            if clipped
            else "."
        ),
    )
    return fig


def plot_profile(
    profile: Profile,
    families: Mapping[str, str] | None = None,
    identical: Mapping[str, Sequence[str]] | None = None,
) -> Figure:
    """Performance profiles as AlgoPerf defines them, read from ``profile`` (a ranking's
    :class:`~mxopt_jax.compare.analysis.Profile`): ``rho(tau)``, the fraction of problems on which a
    contender's fastest trial reaches the target within ``tau`` times the fastest contender's steps; step lines
    on a linear ``tau`` axis from 1 to ``tau_max``. Legends are sorted by score (AlgoPerf's normalized area, in
    brackets); family panels share the y range."""
    if profile.problems < 2:
        raise ValueError(
            f"plot_profile: a performance profile needs two problems or more, got {profile.problems}: on one "
            "problem it says nothing the table does not"
        )
    taus, rho, scores, tau_max = profile.taus, profile.rho, profile.scores, profile.tau_max
    groups = _groups(list(rho), families)
    ncols = len(groups)
    fig = figures.figure(figsize=(3.3 * ncols + 0.8 + (1.5 if ncols == 1 else 0), 4.6))
    axes = fig.subplots(1, ncols, squeeze=False, sharex=True, sharey=True)[0]
    from matplotlib.ticker import FixedLocator

    for ax, (family, members) in zip(axes, groups, strict=True):
        order = sorted(members, key=lambda n: (-scores[n], n))
        every = max(1, len(taus) // 6)
        for k, n in enumerate(order):  # each contender in its look of the other figures
            ax.plot(
                taus,
                rho[n],
                drawstyle="steps-post",
                label=f"{label(n, identical)} ({scores[n]:.2f})",
                markersize=3.5,
                markevery=((k * every) // max(len(order), 1), every),
                **_look(n),
            )
        ax.set_xlim(1, tau_max)
        ax.set_ylim(-0.03, 1.03)
        ax.xaxis.set_major_locator(FixedLocator([float(t) for t in np.arange(1.0, tau_max + 0.25, 0.5)]))
        ax.xaxis.set_major_formatter(figures.plain_formatter())
        figures.no_minor_ticks(ax.xaxis)
        ax.grid(True, **figures.GRID)
        ax.tick_params(labelsize=8)
        ax.set_xlabel("tau (steps / fastest's steps)", fontsize=9)
        if family:
            ax.set_title(family, fontsize=9.5)
        figures.legend_below(ax, len(members))
    axes[0].set_ylabel("fraction of problems within tau", fontsize=9)
    figures.titles(
        fig,
        f"Performance profiles over {profile.problems} problems",
        "From the selection runs: rho(tau), the fraction of problems on which a contender's fastest trial (per "
        "seed the fastest rate, then the steps by which a majority of the seeds reached it) reaches the "
        "validation target within tau times the fastest contender's steps; legend: contender (AlgoPerf score: "
        "normalized area, 1 = fastest everywhere).",
    )
    return fig


# --------------------------------------------------------------------------- the pictures of the tables
def best_set(table: TableAnalysis) -> tuple[str, ...]:
    """The entries of ``table`` no other entry was shown better than (their rank set starts at 1), in the
    table's order: what the figures mark as the problem's best, the verdict's best set
    (:attr:`~mxopt_jax.compare.analysis.TableAnalysis.best`)."""
    return table.best


def _reported(s: Selection) -> tuple[float, float, str]:
    """What a table's test column says of ``s``: ``(mean, half-width, note)``, over the finite seeds with a
    note ``"k/n finite"`` when some diverged; ``(nan, nan, "diverged")`` when every seed did."""
    if s.finite == len(np.asarray(s.test)):
        return float(s.test_mean), float(s.test_ci), ""
    if s.finite == 0:
        return math.nan, math.nan, "diverged"
    return float(s.finite_mean), float(s.finite_ci), f"{s.finite}/{s.seeds} finite"


def _value_range(
    ends: np.ndarray, means: np.ndarray, target: float, direction: Direction
) -> tuple[float, float]:
    """A linear value axis for a table's picture, ``(low, high)``: from the best end of any interval (or the
    target) towards the bad side by four times the distance to the median of the ``means`` (at least a quarter
    of that median), far enough to show the target, no further than the worst value; values beyond it (a
    contender far behind) leave the axis on the bad side (their rows keep their marks: a best set's too)."""
    sign = direction.sign
    v = sign * np.asarray(ends, np.float64)
    v = v[np.isfinite(v)]
    m = sign * np.asarray(means, np.float64)
    m = m[np.isfinite(m)]
    if not v.size:
        return 0.0, 1.0
    low = float(v.min())
    t = sign * target
    if math.isfinite(t):
        low = min(low, t)
    mid = float(np.median(m)) if m.size else float(v.max())
    top = low + max(4.0 * (mid - low), 0.25 * abs(mid))
    if math.isfinite(t):
        top = max(top, t + 0.15 * (t - low))
    top = min(top, float(v.max()))
    if top <= low:
        top = low + max(abs(low) * 0.1, 1e-3)
    pad = 0.04 * (top - low)
    a, b = low - pad, top + pad
    return (a, b) if sign > 0 else (-b, -a)


def _results_panel(ax: Any, table: TableAnalysis, target: float) -> tuple[int, int]:
    """One table drawn on ``ax``: its entries top to bottom in its order, each the mean of its test values with
    the table's interval, the best set shaded; returns ``(entries drawn, off the axis)``."""
    from matplotlib.transforms import blended_transform_factory

    order = list(table.order)
    direction = table.direction
    best = set(best_set(table))
    values = {n: _reported(table.selection(n)) for n in order}
    means = np.array([values[n][0] for n in order])
    ends = np.array(
        [v[0] + sign * v[1] for v in values.values() for sign in (-1.0, 1.0) if np.isfinite(v[1])]
    )
    ends = np.concatenate([means[np.isfinite(means)], ends[np.isfinite(ends)]])
    lo, hi = _value_range(ends, means, target, direction)
    ax.set_xlim(lo, hi)
    bad_edge = 1.0 if direction.sign > 0 else 0.0  # the axes' x of the worse side
    edge = blended_transform_factory(ax.transAxes, ax.transData)
    off = 0
    for y, n in enumerate(order):
        look = _look(n)
        mean, half, note = values[n]
        if n in best:
            ax.axhspan(y - 0.5, y + 0.5, color="#fff1b8", zorder=0, linewidth=0)
        if not math.isfinite(mean) or (mean > hi if direction.sign > 0 else mean < lo):
            off += 1
            ax.plot(
                [bad_edge],
                [y],
                transform=edge,
                marker="x" if not math.isfinite(mean) else (">" if direction.sign > 0 else "<"),
                markersize=6,
                markeredgewidth=1.4,
                color=look["color"],
                linestyle="none",
                clip_on=False,
                zorder=5,
            )
            words = "diverged" if not math.isfinite(mean) else f"{mean:.4g}" + (f" ({note})" if note else "")
            ax.text(
                bad_edge - (0.025 if direction.sign > 0 else -0.025),
                y,
                words,
                transform=edge,
                fontsize=7,
                color="#444444",
                ha="right" if direction.sign > 0 else "left",
                va="center",
                zorder=6,
            )
            continue
        ax.errorbar(
            [mean],
            [y],
            xerr=[[half], [half]] if math.isfinite(half) else None,
            color=look["color"],
            marker=look["marker"],
            markersize=5.5,
            elinewidth=1.6,
            capsize=2.5,
            linestyle="none",
            zorder=4,
        )
        if note:
            ax.annotate(
                note, (mean, y), xytext=(5, 4), textcoords="offset points", fontsize=6.5, color="#555555"
            )
    if math.isfinite(target):
        ax.axvline(target, **_TARGET)
    ax.set_yticks(range(len(order)), [label(n, table.identical) for n in order])
    for tick, n in zip(ax.get_yticklabels(), order, strict=True):
        if n in best:
            tick.set_fontweight("bold")
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.tick_params(labelsize=7.5)
    ax.grid(True, axis="x", **figures.GRID)
    figures.no_minor_ticks(ax.xaxis)
    return len(order), off


def plot_results(problem: Problem | None, tables: Sequence[TableAnalysis]) -> Figure:
    """The picture of a problem's tables (``tables``: its tuned and one-shot
    :class:`~mxopt_jax.compare.analysis.TableAnalysis`, one panel each, one under the other): every entry's
    test value as the table reports it, the mean over the report seeds (the confirmation runs) with its 95 %
    Student-t interval (over the finite seeds, said beside the point, when some diverged), in the table's order
    (rank set, then median), labelled as the table labels it (``"sgd (= lbsgd, ccsgd, test)"``), in the
    contender's colour and marker of every figure; the best set (:func:`best_set`) shaded and its names in bold;
    the target dashed. The value axis is a readable linear range around the good results (:func:`_value_range`):
    an entry beyond it is drawn as a triangle on the axis' edge with its value written, a
    diverged one as an ``x``, and the figure's note says so; intervals end at the edge."""
    tables = [t for t in tables if t.selections]
    if not tables:
        raise ValueError("plot_results needs at least one table with selections")
    s0 = tables[0].selections[0]
    metric = (problem.metric_name if problem is not None else s0.metric_name) or "metric"
    target = problem.target if problem is not None else s0.target
    name = problem.name if problem is not None else s0.problem
    rows = [len(t.order) for t in tables]
    longest = max(len(label(n, t.identical)) for t in tables for n in t.order)
    fig = figures.figure(figsize=(3.6 + 0.055 * longest, sum(0.19 * r + 0.85 for r in rows) + 1.3))
    axes = fig.subplots(len(tables), 1, squeeze=False, height_ratios=[0.19 * r + 0.85 for r in rows])[:, 0]
    off = 0
    for ax, t in zip(axes, tables, strict=True):
        _, k = _results_panel(ax, t, target)
        off += k
        mode = "tuned" if t.mode == "tuned" else "one-shot (default rate)"
        ax.set_title(f"{mode}: {t.seeds} report seeds", fontsize=9.5)
        better = "lower" if t.direction.sign > 0 else "higher"
        ax.set_xlabel(f"test {metric} (mean ± {_PCT} t interval; {better} is better)", fontsize=8.5)
    note = (
        "Each table's entries in its order, from the confirmation runs (the chosen configuration on fresh seeds): "
        f"the mean test value over the report seeds with its {_PCT} Student-t interval; shaded, names in bold: "
        "the best set (no entry was shown better: the rank set starts at 1)"
        + ("; dashed: the target" if math.isfinite(target) else "")
        + (
            "; ▷ on the edge (◁ where higher is better): a mean off the axis, its value written; × diverged on "
            "every seed."
            if off
            else "."
        )
    )
    figures.titles(fig, f"{name}: test {metric} as the tables report it", note)
    return fig


def plot_ranks(rankings: Mapping[str, Ranking]) -> Figure:
    """The rank heatmap: one panel per mode (``rankings``: the study's
    :class:`~mxopt_jax.compare.analysis.Ranking` of each mode, tuned first), rows the overall table's rows in its
    order (labelled as it labels them, each with a marker in the contender's colour of every figure), columns
    its problems; each cell the contender's rank set in that problem's table (text), coloured by the middle of
    the rank set among the table's entries (dark: first, light: last), outlined where the entry is in the
    table's best set (:func:`best_set`); the mean rank at the right."""
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle
    from matplotlib.transforms import blended_transform_factory, offset_copy

    ranked = [(m, r) for m, r in rankings.items() if r.tables]
    if not ranked:
        raise ValueError("plot_ranks needs at least one ranking with tables")
    cmap = colormaps["YlGnBu_r"]
    longest = max(len(label(n, r.identical)) for _, r in ranked for n in r.names)
    problems = max(len(r.problems) for _, r in ranked)
    heights = [0.2 * len(r.names) + 0.9 for _, r in ranked]
    width = max(4.8, 1.2 + 0.058 * longest + 0.72 * (problems + 1))  # the titles fit a figure of few problems
    fig = figures.figure(figsize=(width, sum(heights) + 1.4))
    axes = fig.subplots(len(ranked), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (mode, r) in zip(axes, ranked, strict=True):
        order, names = r.order, r.problems
        grid = np.full((len(order), len(names)), np.nan)
        for j, p in enumerate(names):
            t = r.tables[p]
            span = max(len(t.entries) - 1, 1)
            for i, n in enumerate(order):
                if n in t.entry:
                    grid[i, j] = (t.midpoint(n) - 1) / span
        ax.imshow(
            np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
        )
        for j, p in enumerate(names):
            t = r.tables[p]
            best = set(best_set(t))
            for i, n in enumerate(order):
                if n not in t.entry:
                    ax.text(j, i, "-", ha="center", va="center", fontsize=7, color="#777777")
                    continue
                dark = grid[i, j] < 0.45
                inbest = t.entry[n] in best
                ax.text(
                    j,
                    i,
                    t.rank_set(n),
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color="white" if dark else "#222222",
                    fontweight="bold" if inbest else "normal",
                )
                if inbest:
                    ax.add_patch(
                        Rectangle(
                            (j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="#111111", linewidth=1.1
                        )
                    )
        # the contender's marker just left of the cells, its label left of the marker
        beside = offset_copy(blended_transform_factory(ax.transAxes, ax.transData), fig, x=-8, units="points")
        for i, n in enumerate(order):
            ax.text(len(names) - 0.35, i, f"{r.mean_rank(n):.2f}", ha="left", va="center", fontsize=7)
            look = _look(n)
            ax.plot(
                [0.0],
                [i],
                transform=beside,
                marker=look["marker"],
                color=look["color"],
                markersize=5,
                linestyle="none",
                clip_on=False,
            )
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.xaxis.tick_top()
        ax.tick_params(axis="x", labelsize=7.5, pad=1)
        ax.set_yticks(range(len(order)), [label(n, r.identical) for n in order])
        ax.tick_params(axis="y", labelsize=7.5, pad=15)
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.tick_params(length=0)
        ax.set_title("tuned" if mode == "tuned" else "one-shot (default rate)", fontsize=9.5)
        ax.annotate(
            "mean rank",
            xy=(1.0, 1.0),
            xycoords="axes fraction",
            xytext=(6, 3),
            textcoords="offset points",
            fontsize=7.5,
            rotation=30,
            ha="left",
            va="bottom",
        )
    figures.titles(
        fig,
        f"Rank sets on the test metric, {problems} problem(s)",
        "Each cell: the contender's rank set in that problem's table (the test metric of the confirmation runs), "
        "coloured by its middle among the table's entries (dark: first, light: last); outlined and bold: in the "
        "table's best set (no entry shown better); rows in the overall table's order (mean rank, at the right); "
        "the marker: the contender's colour in every figure.",
    )
    return fig


def results_png(problem: str) -> str:
    """The file name of ``problem``'s :func:`plot_results`: ``results_<problem>.png``, the name made safe for a
    file name."""
    return "results_" + re.sub(r"[^A-Za-z0-9_.-]", "_", problem) + ".png"


def draw_tables(problems: Sequence[Problem], analysis: StudyAnalysis) -> dict[str, Figure]:
    """The pictures of a study's tables, by file name: ``ranks.png`` (:func:`plot_ranks`, two problems or
    more) and, per problem, ``results_<problem>.png`` (:func:`plot_results`: its tuned and one-shot tables)."""
    out: dict[str, Figure] = {}
    if len(analysis.rankings) and max(len(r.tables) for r in analysis.rankings.values()) >= 2:
        out["ranks.png"] = plot_ranks(analysis.rankings)
    for p in problems:
        tables = [
            analysis.tables[(p.name, m)] for m in ("tuned", "one-shot") if (p.name, m) in analysis.tables
        ]
        if tables:
            out[results_png(p.name)] = plot_results(p, tables)
    return out


def draw_report(
    problems: Sequence[Problem],
    records: Sequence[Records],
    analysis: StudyAnalysis,
    families: Mapping[str, str] | None = None,
) -> dict[str, Figure]:
    """Every figure of a study's report, by file name: the pictures of its tables (:func:`draw_tables`), then
    the figures of its runs (:func:`draw_study`)."""
    return {**draw_tables(problems, analysis), **draw_study(problems, records, analysis, families)}


def draw_all(
    problems: Problem | Sequence[Problem],
    records: Sequence[Records],
    selections: Sequence[Selection],
    profile: Profile | None = None,
    **style: Any,
) -> dict[str, Figure]:
    """The figures by file name: ``sensitivity.png``, ``curves.png``, ``loss.png`` and, given a ``profile`` of two problems
    or more, ``profile.png``; ``style``: the plots' ``families``, ``identical`` and ``identical_by_problem``
    (the profile reads the first two). Only records and selections
    of ``problems`` are drawn. ``selections`` are the tuned ones (one-shot selections are used only when there
    are no tuned ones); one-shot records (one rate) are left out of the sensitivity plot, confirmation records
    (when given) are the curves."""
    probs = _as_list(problems)
    known = {p.name: p for p in probs}
    records = [r for r in records if r.problem in known]
    selections = [s for s in selections if s.problem in known]
    tuned = [s for s in selections if s.mode == "tuned"] or selections
    out = {
        "sensitivity.png": plot_sensitivity(probs, records, tuned, **style),
        "curves.png": plot_curves(probs, records, tuned, **style),
        "loss.png": plot_curves(probs, records, tuned, what="loss", **style),
    }
    if profile is not None and profile.problems >= 2:
        out["profile.png"] = plot_profile(
            profile, **{k: v for k, v in style.items() if k in ("families", "identical")}
        )
    return out


def draw_study(
    problems: Sequence[Problem],
    records: Sequence[Records],
    analysis: StudyAnalysis,
    families: Mapping[str, str] | None = None,
) -> dict[str, Figure]:
    """A study's figures (:func:`draw_all`) from its analysis: the tuned tables' selections (the one-shot ones
    when nothing was tuned), that mode's profile, contenders identical on every problem drawn once."""
    mode = "tuned" if "tuned" in analysis.rankings else "one-shot"
    ranking = analysis.rankings.get(mode)
    selections = [s for t in analysis.tables_of(mode).values() for s in t.selections]
    return draw_all(
        problems,
        records,
        selections,
        ranking.profile if ranking is not None else None,
        families=families,
        identical=analysis.identical.get(mode, {}),
        identical_by_problem={p: t.identical for p, t in analysis.tables_of(mode).items()},
    )


def save_all(out_dir: str | Path, figures_by_name: Mapping[str, Figure]) -> list[Path]:
    """Write ``figures_by_name`` (:func:`draw_all`'s or :func:`draw_study`'s) into ``out_dir``; returns the
    paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [figures.save(fig, out / name) for name, fig in figures_by_name.items()]
