"""Figures of a study (needs matplotlib: ``pip install 'mxopt_jax[plot]'``; imported lazily, Agg backend).

* :func:`plot_sensitivity`: final validation metric against the learning rate (log axis) over the selection
  seeds: the mean with its 95 % Student-t interval (the tables' interval), the chosen rate circled (a triangle
  pointing off the grid when it sits on the grid's edge, the tables' ``<``/``>``); a mean above the y range
  marked at the top (and counted); only when a run diverged, a grey strip at the top where such rates are
  marked ``x``;
* :func:`plot_curves`: the reported runs (the chosen rate on the confirmation seeds): the validation metric
  and the training loss against steps, mean with its 95 % interval; two rows per problem;
* :func:`plot_profile`: the performance profiles (``rho`` against ``tau``), legend sorted by score; it needs
  two problems or more (on one problem a profile says nothing the table does not).

Each figure has one row per problem (the curves: two; the profile: one row) and, when more than
:data:`~mxopt_jax.compare.figures.ONE_PANEL_MAX` contenders are drawn, one column per family (at most eight
lines per axes); the panels of a row share their y range, and log axes are labelled inside a decade
(:func:`~mxopt_jax.compare.figures.log_subs`). A short title on top, how to read the figure at the bottom.
Colours, line styles, figure set-up and PNG writing are the app's one style
(:mod:`mxopt_jax.compare.figures`), so a contender looks the same in every figure of the app.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import figures
from ..analysis import Profile, StudyAnalysis, mean_band
from ..contenders import group_by_family
from ..protocol import LEVEL, Selection
from ..records import Records
from .tables import label

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..problems.base import Problem

__all__ = [
    "draw_all",
    "draw_study",
    "plot_curves",
    "plot_profile",
    "plot_sensitivity",
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


def _panels(
    rows: int, names: Sequence[str], families: Mapping[str, str] | None, height: float
) -> tuple[Figure, np.ndarray, list[tuple[str, list[str]]]]:
    groups = _groups(names, families)
    ncols = len(groups)
    legend_rows = max(math.ceil(len(m) / (1 if len(m) <= 4 else 2)) for _, m in groups)
    fig = figures.figure(
        figsize=(3.4 * ncols + 0.8 + (2.0 if ncols == 1 else 0), height * rows + 1.1 + 0.2 * legend_rows)
    )
    axes = fig.subplots(rows, ncols, squeeze=False, sharex="row", sharey="row")
    return fig, axes, groups


def _final_stats(r: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per rate: the mean over seeds of the final validation metric and its 95 % interval (NaN where a seed
    diverged), and the mask of rates where a seed diverged."""
    v = np.where(np.asarray(r.diverged), np.nan, np.asarray(r.val, np.float64)[:, :, -1])
    bad = np.asarray(~np.isfinite(v).all(axis=1))
    mean, low, high = mean_band(v, axis=1)
    return mean, low, high, bad


def _style(i: int, n: int) -> dict[str, Any]:
    return figures.style(i, linewidth=1.4)


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
) -> Figure:
    """Learning-rate sensitivity: final validation metric against the rate, one row per problem.

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
    fig, axes, groups = _panels(len(probs), names, families, 2.7)
    any_bad = any_edge = any_trials = any_above = False
    for row, p in enumerate(probs):
        recs = per[p.name]
        means = {n: _final_stats(recs[n]) for n in recs if n in names}  # the range: drawn lines only
        allv = np.concatenate([m[0] for m in means.values()]) if means else np.array([])
        picked = np.array([means[n][0][s.index] for n, s in sels[p.name].items() if n in means])
        lo, hi, logy = _ylim(allv, picked, p.metric_name, p.target)
        row_bad = any(m[3].any() for m in means.values())
        any_bad |= row_bad
        for col, (family, members) in enumerate(groups):
            ax = axes[row][col]
            clip = _strip(ax, lo, hi, logy, row_bad)
            diverging = [n for n in members if n in recs and means[n][3].any()]
            gap = min(0.03, (_STRIP - 0.05) / max(len(diverging) - 1, 1))
            top = 1 - _STRIP if row_bad else 1.0  # the top of the data area, in axes coordinates
            above = 0  # finite means above the y range in this panel: marked at its top and counted
            rising = [
                n for n in members if n in recs and (np.isfinite(means[n][0]) & (means[n][0] > hi)).any()
            ]
            for i, n in enumerate(members):
                if n not in recs:
                    continue
                style = _style(i, len(members))
                mean, low, high, bad = means[n]
                lrs = np.asarray(recs[n].lrs, np.float64)
                # a random search's trials (other hyperparameters vary between them): points, no line or band
                trials = bool(recs[n].hparams) or not bool(np.all(np.diff(lrs) > 0))
                any_trials |= trials
                shape = {**style, "linestyle": "none"} if trials else style
                artists = ax.plot(
                    lrs,
                    mean,
                    marker="o",
                    markersize=3.5 if trials else 2.5,
                    label=label(n, identical),
                    **shape,
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
            if row == 0 and family:
                ax.set_title(family, fontsize=9.5)
            if col == 0:
                ax.set_ylabel(f"{p.name}\nfinal val {p.metric_name}" + (" (log)" if logy else ""), fontsize=9)
            if row == len(probs) - 1:
                ax.set_xlabel("learning rate", fontsize=9)
                figures.legend_below(ax, len(members))
    note = f"Mean over the selection seeds, band: its {_PCT} interval; ○ the chosen rate"
    if any_trials:
        note = (
            "Mean over the selection seeds of each trial of a random search (points: the other hyperparameters "
            "vary between them, so no line or band); ○ the chosen trial"
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
) -> Figure:
    """The reported runs along training: validation metric and training loss against steps, mean over seeds
    with its 95 % interval; two rows per problem.

    The reported runs are the chosen rate's confirmation records (fresh seeds) where ``records`` hold them,
    else the selection runs at the chosen rate. The legend below names the contenders; each problem's
    validation panel has its own legend of the rates chosen on that problem (and how many seeds diverged, which
    breaks the mean)."""
    probs = _as_list(problems)
    per = {p.name: _tuned_records(records, p.name) for p in probs}
    conf = {p.name: _confirmation(records, p.name) for p in probs}
    sels = {p.name: _selections(per[p.name], selections) for p in probs}
    names = _shown(per, sels, identical)
    fig, axes, groups = _panels(2 * len(probs), names, families, 2.1)
    fresh = all(n in conf[p.name] for p in probs for n in sels[p.name])
    for row, p in enumerate(probs):
        recs, chosen = per[p.name], sels[p.name]
        bands: dict[str, Any] = {}
        for n, r in recs.items():
            if n not in chosen:
                continue
            src, g = (conf[p.name][n], 0) if n in conf[p.name] else (r, chosen[n].index)
            v = np.asarray(src.val, np.float64)[g]  # (S, E)
            loss = np.asarray(src.train_loss, np.float64)[g]
            bad = int((~np.isfinite(v[:, -1])).sum())
            steps = np.asarray(src.eval_steps, np.float64)
            bands[n] = (steps, mean_band(v, axis=0), mean_band(loss, axis=0), bad)
        allv = np.concatenate([s[1][0] for s in bands.values()]) if bands else np.array([])
        finals = np.array([s[1][0][-1] for s in bands.values()])
        lo, hi, logy = _ylim(allv, finals, p.metric_name, p.target, factor=5.0)
        losses = np.concatenate([s[2][0] for s in bands.values()]) if bands else np.array([])
        # the loss axis as the metric's: around the final losses, a blow-up (SGLD at a huge rate) leaves the top
        llo, lhi, loss_log = _ylim(losses, np.array([s[2][0][-1] for s in bands.values()]), "", math.nan, 5.0)
        for col, (family, members) in enumerate(groups):
            ax, lax = axes[2 * row][col], axes[2 * row + 1][col]
            rates: tuple[list[Any], list[str]] = ([], [])  # this row's chosen rates, its own legend
            for i, n in enumerate(members):
                if n not in bands:
                    continue
                steps, (mean, low, high), (lmean, llow, lhigh), bad = bands[n]
                style = _style(i, len(members))
                rates[0].append(ax.plot(steps, mean, **style)[0])
                rates[1].append(f"{chosen[n].lr:.3g}" + (f", {bad} diverged" if bad else ""))
                ax.fill_between(steps, low, high, color=style["color"], alpha=figures.BAND_ALPHA, linewidth=0)
                lax.plot(steps, lmean, label=label(n, identical), **style)
                if loss_log:
                    llow = np.where(llow > 0, llow, np.nan)
                lax.fill_between(
                    steps, llow, lhigh, color=style["color"], alpha=figures.BAND_ALPHA, linewidth=0
                )
            if rates[0]:
                ax.legend(
                    *rates,
                    title="rate",
                    loc="upper right",
                    fontsize=7.5,
                    title_fontsize=7.5,
                    ncol=2 if len(rates[0]) > 4 else 1,
                    handlelength=1.8,
                    columnspacing=0.8,
                    framealpha=0.85,
                    borderpad=0.3,
                    labelspacing=0.25,
                )
            _target_line(ax, p.target)
            _set_y(ax, lo, hi, logy)
            _set_y(lax, llo, lhi, loss_log)
            for a in (ax, lax):
                a.grid(True, **figures.GRID)
                a.tick_params(labelsize=8)
            if row == 0 and family:
                ax.set_title(family, fontsize=9.5)
            if col == 0:
                ax.set_ylabel(f"{p.name}\nval {p.metric_name}" + (" (log)" if logy else ""), fontsize=9)
                lax.set_ylabel(f"{p.name}\ntrain loss" + (" (log)" if loss_log else ""), fontsize=9)
            if row == len(probs) - 1:
                lax.set_xlabel("step", fontsize=9)
                figures.legend_below(lax, len(members), offset=-0.28)
    runs = "the chosen rate on the confirmation seeds" if fresh else "the chosen rate on the selection seeds"
    figures.titles(
        fig,
        "Training curves of the reported runs",
        f"Runs at {runs}: validation metric and training loss (mean over the steps since the previous point), "
        f"mean over seeds, band: its {_PCT} interval; legend below: contender; in each problem's validation "
        "panel: the rate chosen on that problem; dashed: the target.",
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
        for n in order:
            i = members.index(n)  # the colour a contender has in the other figures
            ax.plot(
                taus,
                rho[n],
                drawstyle="steps-post",
                label=f"{label(n, identical)} ({scores[n]:.2f})",
                **_style(i, len(members)),
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
        "rho(tau): the fraction of problems on which a contender's fastest trial (per seed the fastest rate, "
        "then the steps by which a majority of the seeds reached it) reaches the validation target within tau times the fastest contender's steps; "
        "legend: contender (AlgoPerf score: normalized area, 1 = fastest everywhere).",
    )
    return fig


def draw_all(
    problems: Problem | Sequence[Problem],
    records: Sequence[Records],
    selections: Sequence[Selection],
    profile: Profile | None = None,
    **style: Any,
) -> dict[str, Figure]:
    """The figures by file name: ``sensitivity.png``, ``curves.png`` and, given a ``profile`` of two problems
    or more, ``profile.png``; ``style``: the plots' ``families`` and ``identical``. Only records and selections
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
    }
    if profile is not None and profile.problems >= 2:
        out["profile.png"] = plot_profile(profile, **style)
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
    )


def save_all(out_dir: str | Path, figures_by_name: Mapping[str, Figure]) -> list[Path]:
    """Write ``figures_by_name`` (:func:`draw_all`'s or :func:`draw_study`'s) into ``out_dir``; returns the
    paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [figures.save(fig, out / name) for name, fig in figures_by_name.items()]
