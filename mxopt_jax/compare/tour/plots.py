"""Figures of the tour (needs matplotlib: ``pip install 'mxopt_jax[plot]'``; drawn in the app's one style,
:mod:`mxopt_jax.compare.style`, which also writes the PNGs).

Two layouts, picked by the number of optimizers (:data:`mxopt_jax.compare.style.ONE_PANEL_MAX`):

* a small selection (up to eight) is drawn as **one comparison per task**: every optimizer on the same axes,
  each with its own colour *and* line style (the same in every figure of a run), one legend naming exactly
  the optimizers that ran;
* a large selection is split into **one panel per optimizer family**, so that at most eight lines share an
  axes; a panel is titled with the optimizers that ran in it (never with its family's other members) and its
  curves differ in colour and line style, so optimizers whose curves coincide (``sgd``, ``ccsgd``, ``lbsgd``
  and ``test`` with MXNet's defaults) stay visible.

Panels that show the same quantity share their y axis.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import jax
import numpy as np

from .. import style as theme
from ..contenders import group_by_family
from .functions import FUNCTIONS, Function2D
from .results import Result, fmt_loss, fmt_ms, with_ranks

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

_FLOOR = 1e-12  # smallest value drawn on log axes (function values reach ~1e-15 in float32)
_figure = theme.figure
_style = theme.style
_styles = theme.styles
_GRID = theme.GRID


def _positive(values: np.ndarray) -> np.ndarray:
    """Values for a log axis: clipped below at a floor, non-finite values left out (NaN breaks the line)."""
    v = np.asarray(values, np.float64)
    return np.where(np.isfinite(v), np.maximum(v, _FLOOR), np.nan)


def _names_title(names: Sequence[str], width: int) -> str:
    """A panel title naming exactly ``names`` (the optimizers that ran in it), wrapped to ``width``."""
    return "\n".join(textwrap.wrap(", ".join(names), width=width)) or "(none)"


def is_small(results: Sequence[Result] | Mapping[str, Sequence[Result]]) -> bool:
    """Whether ``results`` involve few enough optimizers (:data:`~mxopt_jax.compare.style.ONE_PANEL_MAX`) for one axes per task."""
    rs = [r for v in results.values() for r in v] if isinstance(results, Mapping) else list(results)
    return len({r.name for r in rs}) <= theme.ONE_PANEL_MAX


def _lr_labels(rows: Sequence[Sequence[Result]]) -> dict[str, str]:
    """Legend label per optimizer: ``name (lr x)`` when it used one rate in every row, else ``name``."""
    lrs: dict[str, set[float]] = {}
    for results in rows:
        for r in results:
            lrs.setdefault(r.name, set()).add(r.learning_rate)
    return {n: f"{n} (lr {next(iter(v)):g})" if len(v) == 1 else n for n, v in lrs.items()}


def _curve(ax: Any, r: Result, kind: str, label: str, style: dict[str, Any]) -> None:
    if kind == "accuracy":  # after each step
        ax.plot(r.records.eval_steps, 100 * np.asarray(r.accuracies, np.float64), label=label, **style)
    else:  # at the start, then after each step
        ax.plot(np.arange(r.steps + 1), _positive(r.losses), label=label, **style)


def _dress(ax: Any, kind: str) -> None:
    if kind == "accuracy":
        ax.set_ylim(0, 102)
    else:
        ax.set_yscale("log")
    ax.grid(True, **_GRID)
    ax.tick_params(labelsize=8.5)


def _legend_below(fig: Figure, ax_or_fig: Any, n: int, ncol: int | None = None) -> None:
    kwargs = {"fontsize": 8.5, "frameon": False, "handlelength": 3.2, "columnspacing": 1.4}
    if ax_or_fig is fig:  # one entry per label (the same optimizer is drawn on several axes)
        entries: dict[str, Any] = {}
        for ax in fig.axes:
            for line in ax.get_lines():
                if not line.get_label().startswith("_"):
                    entries.setdefault(line.get_label(), line)
        fig.legend(
            entries.values(), entries.keys(), loc="outside lower center", ncol=ncol or min(n, 4), **kwargs
        )
    else:
        ax_or_fig.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol or 2, **kwargs)


def _one_panel_curves(fig: Figure, panels: Sequence[tuple[str, Sequence[Result], str]], ylabel_once: bool):
    """One axes per ``(title, results, kind)`` panel, side by side, every optimizer on each; one legend.

    Panels of the same ``kind`` share their y axis (``ylabel_once``: only the first is labelled).
    """
    names = list(dict.fromkeys(r.name for _, rs, _ in panels for r in rs))
    styles = _styles(names)
    labels = _lr_labels([rs for _, rs, _ in panels])
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    first: dict[str, Any] = {}
    for ax, (title, results, kind) in zip(axes, panels, strict=True):
        if kind in first:
            ax.sharey(first[kind])
            ax.tick_params(labelleft=not ylabel_once)
        else:
            first[kind] = ax
        by_name = {r.name: r for r in results}
        for name in names:
            if name in by_name:
                _curve(ax, by_name[name], kind, labels[name], styles[name])
        _dress(ax, kind)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step", fontsize=9)
        if not ylabel_once or ax is first[kind]:
            ax.set_ylabel("training accuracy (%)" if kind == "accuracy" else "value (log scale)", fontsize=9)
    _legend_below(fig, fig, len(names))
    return axes


def _family_curves(
    fig: Figure,
    rows: Sequence[tuple[str, Sequence[Result], str]],
    sharey: bool | Literal["none", "all", "row", "col"] = "row",
) -> np.ndarray:
    """One row per ``(label, results, kind)``; one column per family; panels share their y axis along a row
    (``sharey="row"``) or across the figure (``sharey=True``).

    An optimizer keeps its colour and line style in every row, so each column has one legend, under its
    bottom panel; it shows the learning rate when the optimizer uses the same one in every row. Each column
    is titled with the optimizers that ran in it.
    """
    names = list(dict.fromkeys(r.name for _, rs, _ in rows for r in rs))
    groups = group_by_family(names)
    axes = fig.subplots(len(rows), len(groups), squeeze=False, sharex=True, sharey=sharey)
    labels = _lr_labels([rs for _, rs, _ in rows])
    for row, (label, results, kind) in enumerate(rows):
        by_name = {r.name: r for r in results}
        for col, (_, members) in enumerate(groups):
            ax = axes[row][col]
            for i, name in enumerate(members):
                if name in by_name:
                    _curve(ax, by_name[name], kind, labels[name], _style(i))
            _dress(ax, kind)
            if row == 0:
                ax.set_title(_names_title(members, 40), fontsize=9)
            if col == 0:
                ax.set_ylabel(label, fontsize=9)
            if row == len(rows) - 1:
                ax.set_xlabel("step", fontsize=9)
                _legend_below(fig, ax, len(members))
    return axes


def plot_training(
    results: Sequence[Result], title: str | None = None, one_panel: bool | None = None
) -> Figure:
    """Loss (log scale) and, when recorded, accuracy curves of a training task.

    With few optimizers (``one_panel``, default :func:`is_small`): one loss axes and one accuracy axes, every
    optimizer on both; otherwise one column per family (loss row, accuracy row).
    """
    if not results:
        raise ValueError("no results to plot")
    has_acc = all(r.accuracies is not None for r in results)
    title = title or f"Spiral classification, {results[0].steps} full-batch steps"
    if is_small(results) if one_panel is None else one_panel:
        panels = [("training loss", results, "loss")]
        if has_acc:
            panels.append(("training accuracy", results, "accuracy"))
        fig = _figure(figsize=(4.4 * len(panels) + 0.4, 4.3))
        axes = _one_panel_curves(fig, panels, ylabel_once=False)
        axes[0].set_ylabel("cross-entropy (log scale)", fontsize=9)
    else:
        rows = [("training loss", results, "loss")]
        if has_acc:
            rows.append(("training accuracy (%)", results, "accuracy"))
        ncols = len(group_by_family([r.name for r in results]))
        fig = _figure(figsize=(3.5 * ncols + 0.6, 2.6 * len(rows) + 2.2))
        _family_curves(fig, rows)
    fig.suptitle(title, fontsize=11)
    return fig


def plot_function_losses(
    results: Mapping[str, Sequence[Result]], title: str | None = None, one_panel: bool | None = None
) -> Figure:
    """Function value curves (log scale, all panels on one y scale) on the 2-D test functions.

    With few optimizers (``one_panel``, default :func:`is_small`): one axes per function, every optimizer on
    each; otherwise one row per function and one column per family.
    """
    if not results:
        raise ValueError("no results to plot")
    steps = next(iter(results.values()))[0].steps
    title = title or f"2-D test functions: function value per step ({steps} steps)"
    if is_small(results) if one_panel is None else one_panel:
        panels = [(task, rs, "loss") for task, rs in results.items()]
        fig = _figure(figsize=(3.6 * len(panels) + 0.5, 3.9))
        axes = _one_panel_curves(fig, panels, ylabel_once=True)
        axes[0].set_ylabel("f(x, y) (log scale)", fontsize=9)
    else:
        rows = [(f"{task}: f(x, y)", rs, "loss") for task, rs in results.items()]
        names = list(dict.fromkeys(r.name for rs in results.values() for r in rs))
        ncols = len(group_by_family(names))
        fig = _figure(figsize=(3.5 * ncols + 0.6, 2.2 * len(rows) + 2.0))
        _family_curves(fig, rows, sharey=True)  # one y scale: every panel shows a function value
    fig.suptitle(title, fontsize=11)
    return fig


@functools.lru_cache(maxsize=16)
def _background(function: Function2D, n: int = 200, bands: int = 14) -> np.ndarray:
    """An RGBA image of ``log f`` over the plotting window, quantized into flat colour bands (the filled
    contours of the function; an image draws far faster than contour paths and compresses well)."""
    from matplotlib import colormaps

    xs = np.linspace(*function.xlim, n, dtype=np.float32)
    ys = np.linspace(*function.ylim, n, dtype=np.float32)
    X, Y = np.meshgrid(xs, ys)
    Z = np.asarray(jax.jit(jax.vmap(function.fn))(np.stack([X.ravel(), Y.ravel()], axis=1)), np.float64)
    logz = np.log10(np.maximum(Z.reshape(X.shape), 1e-3))
    level = np.floor((logz - logz.min()) / max(np.ptp(logz), 1e-12) * bands).clip(0, bands - 1)
    rgba = colormaps["Blues_r"](0.3 + 0.7 * level / (bands - 1))
    rgba[..., 3] = 0.55
    return rgba


def _contours(ax: Any, function: Function2D, background: np.ndarray) -> None:
    ax.imshow(
        background,
        extent=(*function.xlim, *function.ylim),
        origin="lower",
        interpolation="nearest",
        aspect="auto",
    )
    ax.plot(*function.minimum, marker="*", color="gold", markersize=12, markeredgecolor="black", zorder=5)
    ax.plot(*function.start, marker="o", color="black", markersize=5, zorder=5)
    ax.set_xlim(function.xlim)
    ax.set_ylim(function.ylim)


def _path_length(r: Result) -> float:
    t = np.asarray(r.trajectory, np.float64)
    steps = np.linalg.norm(np.diff(t, axis=0), axis=1)
    return float(np.sum(steps[np.isfinite(steps)]))


def _trajectory(ax: Any, r: Result, **style: Any) -> None:
    t = np.asarray(r.trajectory, np.float64)
    ax.plot(t[:, 0], t[:, 1], **style)
    style.pop("path_effects", None)
    last = t[np.isfinite(t).all(axis=1)]
    if len(last):
        ax.plot(
            *last[-1],
            marker="X",
            color=style.get("color"),
            markersize=7,
            markeredgecolor="black",
            zorder=style.get("zorder", 2) + 4,
        )


_MARKS = "● start, ★ minimum, ✖ end"


def plot_trajectories(function: str | Function2D, results: Sequence[Result], ncols: int = 6) -> Figure:
    """One panel per optimizer: its path (start ●, end ✖, minimum ★) over the function's contours.

    Panels are ordered best first (by final value; ties share a rank); each title names its optimizer, with
    its rank, learning rate and final value. The panels share their axes.
    """
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    rows = with_ranks(results)
    ncols = min(ncols, len(rows))
    nrows = math.ceil(len(rows) / ncols)
    fig = _figure(figsize=(2.3 * ncols + 0.4, 2.25 * nrows + 0.6))
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    background = _background(fn)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(rows):
            ax.set_visible(False)
            continue
        rank, r = rows[k]
        _contours(ax, fn, background)
        _trajectory(ax, r, color="#d62728", linewidth=1.4, label=r.name)
        ax.set_title(
            f"{rank}. {r.name}  lr {r.learning_rate:g}\nf = {fmt_loss(r.final_loss, 2)}", fontsize=8.5
        )
        ax.tick_params(labelsize=7.5)
        if k + ncols < len(rows):  # a panel below it shows the x tick labels
            ax.tick_params(labelbottom=False)
    fig.suptitle(f"{fn.name}: {fn.formula}, {rows[0][1].steps} steps ({_MARKS})", fontsize=10.5)
    return fig


def plot_family_trajectories(function: str | Function2D, results: Sequence[Result]) -> Figure:
    """One panel per optimizer family with its members' paths overlaid (a compact view of every optimizer).

    Each panel is titled with the optimizers drawn in it; each path ends at ✖; the legend gives the learning
    rate and the final value.
    """
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    by_name = {r.name: r for r in results}
    groups = group_by_family(list(by_name))
    rows = max(len(members) for _, members in groups)  # legend entries under the fullest panel, one a line
    fig = _figure(figsize=(3.4 * len(groups) + 0.4, 4.4 + 0.17 * rows))
    axes = fig.subplots(1, len(groups), squeeze=False, sharex=True, sharey=True)[0]
    background = _background(fn)
    for ax, (_, members) in zip(axes, groups, strict=True):
        _contours(ax, fn, background)
        # the longest (noisiest) paths underneath, so that they do not hide the others
        order = sorted(members, key=lambda n: -_path_length(by_name[n]))
        for name in members:
            r = by_name[name]
            label = f"{name} ({r.learning_rate:g}): {fmt_loss(r.final_loss, 2)}"
            _trajectory(
                ax, r, label=label, zorder=2 + order.index(name) / len(order), **_style(members.index(name))
            )
        _legend_below(fig, ax, len(members), ncol=1)  # two columns of "name (lr): value" overrun the panel
        ax.legend_.set_bbox_to_anchor((0.5, -0.08))
        ax.set_title(_names_title(members, 38), fontsize=9)
        ax.tick_params(labelsize=7.5)
    steps = results[0].steps
    fig.suptitle(f"{fn.name}: {fn.formula}, {steps} steps; legend: contender (lr): final value", fontsize=10)
    return fig


def plot_overlay(function: str | Function2D, results: Sequence[Result], title: str | None = None) -> Figure:
    """Several optimizers' paths on one contour plot, with a legend (best for up to about eight).

    Each optimizer keeps the colour and line style it has in the run's other figures (the order of
    ``results``); the legend lists them best first, with their rank, learning rate and final value.
    """
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    styles = _styles([r.name for r in results])
    fig = _figure(figsize=(6.4, 5.6))
    ax = fig.subplots()
    _contours(ax, fn, _background(fn))
    lengths = {r.name: _path_length(r) for r in results}
    order = sorted(lengths, key=lambda n: -lengths[n])  # the longest (noisiest) paths underneath
    from matplotlib import patheffects

    halo = [patheffects.Stroke(linewidth=3.6, foreground="white", alpha=0.9), patheffects.Normal()]
    for rank, r in with_ranks(results):
        label = f"{rank}. {r.name} (lr {r.learning_rate:g}): f = {fmt_loss(r.final_loss, 2)}"
        z = 2 + order.index(r.name) / len(order)
        # a white halo keeps a path visible where it crosses or runs along another
        _trajectory(ax, r, label=label, zorder=z, path_effects=halo, **{**styles[r.name], "linewidth": 1.8})
    _legend_below(fig, fig, len(results), ncol=1 if len(results) <= 4 else 2)
    ax.set_xlabel("x", fontsize=9)
    ax.set_ylabel("y", fontsize=9)
    ax.tick_params(labelsize=8.5)
    ax.set_title(
        title or f"{fn.name}: {fn.formula}, {results[0].steps} steps\n{_MARKS}; legend: rank. contender",
        fontsize=10,
    )
    return fig


def plot_time_per_step(results: Sequence[Result], title: str | None = None) -> Figure:
    """Horizontal bars of the run time per step (ms, compilation excluded), fastest at the top."""
    if not results:
        raise ValueError("no results to plot")
    rs = sorted(results, key=lambda r: r.ms_per_step)
    fig = _figure(figsize=(6.0, 0.25 * len(rs) + 1.2))
    ax = fig.subplots()
    y = np.arange(len(rs))[::-1]
    bars = ax.barh(y, [r.ms_per_step for r in rs], color="#1f77b4")
    ax.bar_label(bars, labels=[fmt_ms(r.ms_per_step) for r in rs], padding=2, fontsize=7.5)
    ax.set_yticks(y, [r.name for r in rs], fontsize=8)
    ax.set_xlabel("ms per step (compiled scan, compilation excluded)")
    ax.set_xlim(0, 1.15 * max(r.ms_per_step for r in rs))
    ax.grid(True, axis="x", color="#dddddd")
    ax.set_title(title or f"Time per step on {rs[0].task}", fontsize=10)
    return fig


def save_all(results: dict[str, list[Result]], out: str | Path) -> list[Path]:
    """Write the PNG plots for ``results`` into ``out`` (needs matplotlib); returns the paths.

    ``spiral.png`` (loss and accuracy curves), ``<function>.png`` (the paths over the contours: all on one
    plot for a small selection, one panel per optimizer for a large one), ``testfns_loss.png`` (function
    value curves). See :data:`mxopt_jax.compare.style.ONE_PANEL_MAX`.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    small = is_small(results)
    if results.get("spiral"):
        written.append(theme.save(plot_training(results["spiral"], one_panel=small), out / "spiral.png"))
    fns = {t: rs for t, rs in results.items() if t in FUNCTIONS and rs}
    for task, rs in fns.items():
        fig = plot_overlay(task, rs) if small else plot_trajectories(task, rs)
        written.append(theme.save(fig, out / f"{task}.png"))
    if fns:
        written.append(theme.save(plot_function_losses(fns, one_panel=small), out / "testfns_loss.png"))
    return written


__all__ = [
    "is_small",
    "plot_family_trajectories",
    "plot_function_losses",
    "plot_overlay",
    "plot_time_per_step",
    "plot_trajectories",
    "plot_training",
    "save_all",
]
