"""Plots of :mod:`mxopt_jax.compare` results (needs matplotlib: ``pip install 'mxopt_jax[plot]'``).

matplotlib is imported lazily, so ``import mxopt_jax`` never needs it. The functions build
``matplotlib.figure.Figure`` objects directly (no ``pyplot``, no global figure registry, no GUI backend):
:func:`save` / :func:`png_bytes` render them with the Agg canvas (as compact palette PNGs), and a notebook
displays a returned figure as its cell's value (or ``IPython.display.Image(png_bytes(fig))`` for a smaller one).

Curves are split into one panel per optimizer family (:data:`mxopt_jax.compare.FAMILIES`) so that at most
eight lines share an axes; within a panel each optimizer gets its own colour and line style, so optimizers
whose curves coincide (``sgd``, ``ccsgd``, ``lbsgd`` and ``test`` with MXNet's defaults) stay visible.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from .results import Result, ranked
from .tasks import FUNCTIONS, Function2D, family_groups

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: Resolution of saved PNGs and notebook figures (modest, to keep files small).
DPI = 72
_STYLES = ("-", "--", "-.", ":")
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
_FLOOR = 1e-12  # smallest value drawn on log axes (function values reach ~1e-15 in float32)


def _figure(**kwargs: Any) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - exercised by hiding matplotlib in the tests
        raise ImportError("matplotlib is needed for plots: pip install 'mxopt_jax[plot]'") from e
    kwargs.setdefault("dpi", DPI)
    return Figure(**kwargs)  # fixed margins (set by each plot): a layout engine would re-draw the figure


def _margins(
    fig: Figure,
    left: float,
    right: float,
    top: float,
    bottom: float,
    wgap: float = 0.0,
    hgap: float = 0.0,
    nrows: int = 1,
    ncols: int = 1,
) -> None:
    """Fixed margins and gaps between axes, in inches."""
    w, h = fig.get_size_inches()
    axw = max((w - left - right - wgap * (ncols - 1)) / ncols, 0.1)
    axh = max((h - top - bottom - hgap * (nrows - 1)) / nrows, 0.1)
    fig.subplots_adjust(
        left=left / w,
        right=1 - right / w,
        top=1 - top / h,
        bottom=bottom / h,
        wspace=wgap / axw,
        hspace=hgap / axh,
    )


def png_bytes(fig: Figure, dpi: int = DPI, colors: int | None = 128) -> bytes:
    """``fig`` rendered (Agg) as PNG bytes; with ``colors``, reduced to a palette of that many colours.

    Plots use few colours, so a 128-colour palette (PIL's octree quantizer, no dithering) looks the same and
    makes files three to four times smaller. ``colors=None`` keeps full RGBA.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    if colors is None:
        return buf.getvalue()
    from PIL import Image  # a dependency of matplotlib

    with Image.open(buf) as im:
        pal = im.convert("RGB").quantize(
            colors=colors, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )
    out = io.BytesIO()
    pal.save(out, format="PNG", optimize=True)
    return out.getvalue()


def save(fig: Figure, path: str | Path, dpi: int = DPI, colors: int | None = 128) -> Path:
    """Write ``fig`` as a PNG (see :func:`png_bytes`) and return the path."""
    path = Path(path)
    path.write_bytes(png_bytes(fig, dpi=dpi, colors=colors))
    return path


def _style(i: int) -> dict[str, Any]:
    return {"color": _COLORS[i % len(_COLORS)], "linestyle": _STYLES[i % len(_STYLES)], "linewidth": 1.4}


def _positive(values: np.ndarray) -> np.ndarray:
    """Values for a log axis: clipped below at a floor, non-finite values left out (NaN breaks the line)."""
    v = np.asarray(values, np.float64)
    return np.where(np.isfinite(v), np.maximum(v, _FLOOR), np.nan)


def _curve_panels(fig: Figure, rows: Sequence[tuple[str, Sequence[Result], str]], share_y: bool) -> None:
    """One row per ``(label, results, kind)``; one column per family; ``kind`` is 'loss' or 'accuracy'.

    An optimizer keeps its colour and line style in every row, so each column has one legend, under its
    bottom panel; it shows the learning rate when the optimizer uses the same one in every row.
    """
    names = list(dict.fromkeys(r.name for _, rs, _ in rows for r in rs))
    groups = family_groups(names)
    axes = fig.subplots(
        len(rows), len(groups), squeeze=False, sharex=True, sharey="row" if share_y else False
    )
    lrs: dict[str, set[float]] = {}
    for _, results, _ in rows:
        for r in results:
            lrs.setdefault(r.name, set()).add(r.learning_rate)
    for row, (label, results, kind) in enumerate(rows):
        by_name = {r.name: r for r in results}
        for col, (family, members) in enumerate(groups):
            ax = axes[row][col]
            for i, name in enumerate(members):
                r = by_name.get(name)
                if r is None:
                    continue
                if kind == "accuracy":
                    y = 100 * np.asarray(r.accuracies, np.float64)
                else:
                    y = _positive(r.losses)
                (lr,) = lrs[name] if len(lrs[name]) == 1 else (None,)
                ax.plot(
                    np.arange(len(y)), y, label=name if lr is None else f"{name} (lr {lr:g})", **_style(i)
                )
            if kind == "accuracy":
                ax.set_ylim(0, 102)
            else:
                ax.set_yscale("log")
            ax.grid(True, color="#dddddd", linewidth=0.6)
            if row == 0:
                ax.set_title(family, fontsize=10)
            if col == 0:
                ax.set_ylabel(label)
            if row == len(rows) - 1:
                ax.set_xlabel("step")
                ax.legend(
                    fontsize=7.5,
                    loc="upper center",
                    bbox_to_anchor=(0.5, -0.2),
                    ncol=2,
                    frameon=False,
                    handlelength=2.5,
                    columnspacing=1.0,
                )
            ax.tick_params(labelsize=8)
    _margins(
        fig,
        0.8,
        0.15,
        0.6,
        1.35,
        wgap=0.1 if share_y else 0.45,
        hgap=0.15,
        nrows=len(rows),
        ncols=len(groups),
    )


def plot_training(results: Sequence[Result], title: str | None = None) -> Figure:
    """Loss (log scale) and, when recorded, accuracy curves of a training task; one column per family."""
    if not results:
        raise ValueError("no results to plot")
    has_acc = all(r.accuracies is not None for r in results)
    rows = [("training loss", results, "loss")]
    if has_acc:
        rows.append(("training accuracy (%)", results, "accuracy"))
    ncols = len(family_groups([r.name for r in results]))
    fig = _figure(figsize=(3.4 * ncols + 0.6, 2.6 * len(rows) + 1.3))
    _curve_panels(fig, rows, share_y=False)
    fig.suptitle(title or f"Spiral classification, {results[0].steps} full-batch steps", fontsize=11)
    return fig


def plot_function_losses(results: Mapping[str, Sequence[Result]], title: str | None = None) -> Figure:
    """Function value curves (log scale) on the 2-D test functions: one row per function, one column per
    family."""
    if not results:
        raise ValueError("no results to plot")
    rows = [(f"{task}: f(x, y)", rs, "loss") for task, rs in results.items()]
    names = list(dict.fromkeys(r.name for rs in results.values() for r in rs))
    ncols = len(family_groups(names))
    fig = _figure(figsize=(3.4 * ncols + 0.6, 2.2 * len(rows) + 1.3))
    _curve_panels(fig, rows, share_y=True)
    fig.suptitle(title or "2-D test functions: function value per step", fontsize=11)
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
    rgba = colormaps["Blues_r"](0.25 + 0.75 * level / (bands - 1))
    rgba[..., 3] = 0.6
    return rgba


def _contours(ax: Any, function: Function2D, background: np.ndarray) -> None:
    ax.imshow(
        background,
        extent=(*function.xlim, *function.ylim),
        origin="lower",
        interpolation="nearest",
        aspect="auto",
    )
    ax.plot(*function.minimum, marker="*", color="gold", markersize=11, markeredgecolor="black", zorder=5)
    ax.plot(*function.start, marker="o", color="black", markersize=4, zorder=5)
    ax.set_xlim(function.xlim)
    ax.set_ylim(function.ylim)


def _path_length(r: Result) -> float:
    t = np.asarray(r.trajectory, np.float64)
    steps = np.linalg.norm(np.diff(t, axis=0), axis=1)
    return float(np.sum(steps[np.isfinite(steps)]))


def _trajectory(ax: Any, r: Result, **style: Any) -> None:
    t = np.asarray(r.trajectory, np.float64)
    ax.plot(t[:, 0], t[:, 1], **style)
    last = t[np.isfinite(t).all(axis=1)]
    if len(last):
        ax.plot(
            *last[-1], marker="X", color=style.get("color"), markersize=6, markeredgecolor="black", zorder=6
        )


def plot_trajectories(function: str | Function2D, results: Sequence[Result], ncols: int = 6) -> Figure:
    """One panel per optimizer: its path (start ●, end ✖, minimum ★) over the function's contours.

    Panels are ordered best first (by final value); the title gives the learning rate and the final value.
    """
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    rs = ranked(results)
    ncols = min(ncols, len(rs))
    nrows = math.ceil(len(rs) / ncols)
    fig = _figure(figsize=(2.15 * ncols + 0.3, 1.95 * nrows + 0.5))
    axes = fig.subplots(nrows, ncols, squeeze=False)  # same limits everywhere; sharing axes is slow
    background = _background(fn)
    for k, ax in enumerate(axes.ravel()):
        if k >= len(rs):
            ax.set_visible(False)
            continue
        r = rs[k]
        _contours(ax, fn, background)
        _trajectory(ax, r, color="#d62728", linewidth=1.3, label=r.name)
        ax.set_title(f"{k + 1}. {r.name}  lr {r.learning_rate:g}\nf = {_short(r.final_loss)}", fontsize=8)
        ax.tick_params(labelsize=7, labelbottom=k + ncols >= len(rs), labelleft=k % ncols == 0)
    _margins(fig, 0.35, 0.1, 0.7, 0.3, wgap=0.1, hgap=0.45, nrows=nrows, ncols=ncols)
    fig.suptitle(f"{fn.name}: {fn.formula}, {rs[0].steps} steps (● start, ★ minimum, ✖ end)", fontsize=10)
    return fig


def plot_family_trajectories(function: str | Function2D, results: Sequence[Result]) -> Figure:
    """One panel per optimizer family with its members' paths overlaid (a compact view of every optimizer).

    Each path ends at ✖; the legend gives the learning rate and the final value.
    """
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    by_name = {r.name: r for r in results}
    groups = family_groups(list(by_name))
    fig = _figure(figsize=(3.3 * len(groups) + 0.4, 4.3))
    axes = fig.subplots(1, len(groups), squeeze=False)[0]
    background = _background(fn)
    for ax, (family, members) in zip(axes, groups, strict=True):
        _contours(ax, fn, background)
        # the longest (noisiest) paths underneath, so that they do not hide the others
        order = sorted(members, key=lambda n: -_path_length(by_name[n]))
        for name in members:
            r = by_name[name]
            label = f"{name} ({r.learning_rate:g}): {_short(r.final_loss)}"
            _trajectory(
                ax, r, label=label, zorder=2 + order.index(name) / len(order), **_style(members.index(name))
            )
        ax.legend(
            fontsize=7,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.06),
            ncol=2,
            frameon=False,
            handlelength=2.0,
            columnspacing=0.8,
        )
        ax.set_title(family, fontsize=9)
        ax.tick_params(labelsize=7)
    _margins(fig, 0.4, 0.1, 0.55, 1.0, wgap=0.45, ncols=len(groups))
    steps = results[0].steps
    fig.suptitle(f"{fn.name}: {fn.formula}, {steps} steps; legend: optimizer (lr): final value", fontsize=10)
    return fig


def plot_overlay(function: str | Function2D, results: Sequence[Result], title: str | None = None) -> Figure:
    """Several optimizers' paths on one contour plot, with a legend (best for up to about eight)."""
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    if not results:
        raise ValueError("no results to plot")
    fig = _figure(figsize=(6.0, 4.6))
    ax = fig.subplots()
    _contours(ax, fn, _background(fn))
    for i, r in enumerate(ranked(results)):
        _trajectory(
            ax, r, label=f"{r.name} (lr {r.learning_rate:g}): f = {_short(r.final_loss)}", **_style(i)
        )
    ax.legend(fontsize=8, loc="upper right", framealpha=0.85)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title or f"{fn.name}: {fn.formula}, {results[0].steps} steps", fontsize=10)
    _margins(fig, 0.6, 0.15, 0.35, 0.5)
    return fig


def plot_time_per_step(results: Sequence[Result], title: str | None = None) -> Figure:
    """Horizontal bars of the run time per step (ms, compilation excluded), fastest at the top."""
    if not results:
        raise ValueError("no results to plot")
    rs = sorted(results, key=lambda r: r.ms_per_step)
    fig = _figure(figsize=(6.0, 0.25 * len(rs) + 1.2))
    ax = fig.subplots()
    y = np.arange(len(rs))[::-1]
    ax.barh(y, [r.ms_per_step for r in rs], color="#1f77b4")
    ax.set_yticks(y, [r.name for r in rs], fontsize=8)
    ax.set_xlabel("ms per step (compiled scan, compilation excluded)")
    ax.grid(True, axis="x", color="#dddddd")
    ax.set_title(title or f"Time per step on {rs[0].task}", fontsize=10)
    _margins(fig, 1.1, 0.2, 0.35, 0.5)
    return fig


def _short(v: float) -> str:
    if not math.isfinite(v):
        return "diverged" if not math.isnan(v) else "NaN"
    return f"{v:.2g}"


def save_all(results: dict[str, list[Result]], out: str | Path) -> list[Path]:
    """Write the PNG plots for ``results`` into ``out`` (needs matplotlib); returns the paths.

    ``spiral.png`` (loss and accuracy curves), ``<function>.png`` (one trajectory panel per optimizer over
    the contours), ``testfns_loss.png`` (function value curves, one row per function).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if results.get("spiral"):
        written.append(save(plot_training(results["spiral"]), out / "spiral.png"))
    fns = {t: rs for t, rs in results.items() if t in FUNCTIONS and rs}
    for task, rs in fns.items():
        written.append(save(plot_trajectories(FUNCTIONS[task], rs), out / f"{task}.png"))
    if fns:
        written.append(save(plot_function_losses(fns), out / "testfns_loss.png"))
    return written
