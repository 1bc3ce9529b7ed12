"""One figure style for the app: sizes, colours, line styles, axes set-up and PNG writing.

The study's figures (:mod:`mxopt_jax.compare.report.plots`) and the tour's
(:mod:`mxopt_jax.compare.tour.plots`) both draw with what is here. In the study's figures a contender has one
look everywhere, whatever the study and whichever figure (:func:`contender_style`, :data:`CONTENDER_STYLES`):
its colour's hue says its family, the shade, the line style and the marker tell the members of a family apart.
matplotlib is imported lazily (``pip install 'mxopt_jax[plot]'``): the functions build
``matplotlib.figure.Figure`` objects directly (no ``pyplot``, no global figure registry, no GUI backend);
:func:`save` / :func:`png_bytes` render them with the Agg canvas as compact palette PNGs, and a notebook
displays a returned figure as its cell's value.
"""

from __future__ import annotations

import contextlib
import io
import math
import textwrap
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checks import atomic_file

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

__all__ = [
    "BAND_ALPHA",
    "CONTENDER_STYLES",
    "MARKERS",
    "OTHER_COLORS",
    "PLOT_HINT",
    "COLORS",
    "DPI",
    "GRID",
    "LINESTYLES",
    "ONE_PANEL_MAX",
    "contender_style",
    "figure",
    "legend_below",
    "log_subs",
    "no_minor_ticks",
    "plain_formatter",
    "plain_text",
    "png_bytes",
    "save",
    "set_log_axis",
    "style",
    "styles",
    "suptitle",
    "titles",
]

#: What to do when matplotlib is missing (the study and the tour print it and write no PNGs).
PLOT_HINT = (
    "matplotlib is not installed, so no plots were written; install it with: pip install 'mxopt_jax[plot]'"
)
#: Resolution of saved PNGs and notebook figures (modest, to keep files small).
DPI = 80
#: Up to this many curves share one axes; more are split into one panel per family.
ONE_PANEL_MAX = 8
#: Line colours (no blue: the tour's contours are blue): red, black, green, orange, purple, brown, magenta,
#: olive.
COLORS = ("#d62728", "#222222", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#a0a000")
#: Line styles, paired with :data:`COLORS`: eight curves differ in colour *and* style.
LINESTYLES: tuple[Any, ...] = (
    "-",
    (0, (5, 2)),
    (0, (1, 1)),
    (0, (6, 2, 1.5, 2)),
    (0, (10, 3)),
    (0, (3, 1.5, 1, 1.5, 1, 1.5)),
    (0, (2.5, 2.5)),
    (0, (8, 2, 1.5, 2, 1.5, 2)),
)
#: Markers, paired with :data:`LINESTYLES` in a contender's look (:func:`contender_style`): none of the shapes
#: the figures give a meaning of their own (``^ v < >``: off the axis or on the grid's edge, ``x``: diverged).
MARKERS = ("o", "s", "D", "P", "*", "h", "p", "d")

#: The study's fixed look of every built-in contender: ``name: (colour, k)``, its line style
#: ``LINESTYLES[k]`` and marker ``MARKERS[k]``. The hue is the family's (mxopt_jax's table:
#: :data:`mxopt_jax.FAMILIES`), the shade and ``k`` its place in the family:
#:
#: * SGD family, reds, oranges and browns: sgd red, nag orange, signum brown, sgld salmon, dcasgd maroon,
#:   lbsgd rust, ccsgd tan, test sand;
#: * adaptive family, greens and teals: adagrad green, groupadagrad light green, adadelta dark green, rmsprop
#:   teal, ftrl olive, ftml dark teal;
#: * Adam family, blues and purples: adam blue, adamw purple, adamax light blue, nadam indigo, adabelief
#:   lavender;
#: * layer-wise family, pinks and magentas: lars pink, lamb magenta, lans plum;
#: * optax baselines, black and greys: optax.sgd black, optax.adam grey, optax.adamw dark grey, optax.lamb light
#:   grey.
#:
#: Any other contender (a user's) takes a golden shade, a line style and a marker from its name
#: (:data:`OTHER_COLORS`, :func:`contender_style`).
CONTENDER_STYLES: dict[str, tuple[str, int]] = {
    "sgd": ("#d62728", 0),
    "nag": ("#ff7f0e", 1),
    "signum": ("#8c564b", 2),
    "sgld": ("#fa8072", 3),
    "dcasgd": ("#7f0000", 4),
    "lbsgd": ("#b35806", 5),
    "ccsgd": ("#c49c94", 6),
    "test": ("#e8a33d", 7),
    "adagrad": ("#2ca02c", 0),
    "groupadagrad": ("#7fcf6f", 1),
    "adadelta": ("#00561f", 2),
    "rmsprop": ("#17becf", 3),
    "ftrl": ("#9c9d10", 4),
    "ftml": ("#00796b", 5),
    "adam": ("#1f77b4", 0),
    "adamw": ("#9467bd", 1),
    "adamax": ("#6baed6", 2),
    "nadam": ("#3f007d", 3),
    "adabelief": ("#b19cd9", 4),
    "lars": ("#e377c2", 0),
    "lamb": ("#ae017e", 1),
    "lans": ("#67004f", 2),
    "optax.sgd": ("#222222", 0),
    "optax.adam": ("#808080", 1),
    "optax.adamw": ("#4d4d4d", 2),
    "optax.lamb": ("#b0b0b0", 3),
}
#: The shades of a contender outside :data:`CONTENDER_STYLES` (a user's): golds and ochres, a hue no family
#: has; the shade, line style and marker are drawn from the CRC-32 of its name (the same in every study).
OTHER_COLORS = ("#c9a100", "#8a6d00", "#e0b84d", "#5c4a00")
#: Grid lines of every axes.
GRID = {"color": "#dddddd", "linewidth": 0.6}
#: Opacity of a band (a confidence interval or a spread) around a line.
BAND_ALPHA = 0.13


def figure(**kwargs: Any) -> Figure:
    """A ``Figure`` with constrained layout (no overlapping tick labels, titles or legends) at :data:`DPI`."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # pragma: no cover - exercised by hiding matplotlib in the tests
        raise ImportError("matplotlib is needed for plots: pip install 'mxopt_jax[plot]'") from e
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    kwargs.setdefault("dpi", DPI)
    kwargs.setdefault("layout", ConstrainedLayoutEngine(w_pad=0.06, h_pad=0.06, wspace=0.03, hspace=0.03))
    return Figure(**kwargs)


def plain_text() -> contextlib.AbstractContextManager[Any]:
    """A context in which matplotlib takes every text as it is: a ``$`` in a name or title is a dollar sign, not
    the start of mathtext (whose parser raises on a name such as ``$\\foo{$``, so a study read from a folder
    would end in a traceback). Texts keep the setting they were made with: draw inside it."""
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False})


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
    data = png_bytes(fig, dpi=dpi, colors=colors)
    with atomic_file(path, "wb") as f:  # whole or not at all (a full disk)
        f.write(data)
    return path


def style(i: int, linewidth: float = 1.5) -> dict[str, Any]:
    """The ``i``-th colour and line style: both differ for up to eight curves."""
    return {
        "color": COLORS[i % len(COLORS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
        "linewidth": linewidth,
    }


def contender_style(name: str, linewidth: float = 1.5) -> dict[str, Any]:
    """The look of contender ``name`` in every figure of the study: ``{"color", "linestyle", "marker",
    "linewidth"}`` (:data:`CONTENDER_STYLES`; another name: a shade of :data:`OTHER_COLORS`, a line style and
    a marker chosen by the CRC-32 of the name, so the same in every study and figure)."""
    if name in CONTENDER_STYLES:
        color, k = CONTENDER_STYLES[name]
        return {"color": color, "linestyle": LINESTYLES[k], "marker": MARKERS[k], "linewidth": linewidth}
    h = zlib.crc32(name.encode("utf-8"))
    return {
        "color": OTHER_COLORS[h % len(OTHER_COLORS)],
        "linestyle": LINESTYLES[(h // len(OTHER_COLORS)) % len(LINESTYLES)],
        "marker": MARKERS[(h // (len(OTHER_COLORS) * len(LINESTYLES))) % len(MARKERS)],
        "linewidth": linewidth,
    }


def styles(names: Sequence[str], linewidth: float = 1.5) -> dict[str, dict[str, Any]]:
    """``{name: style}`` in the order given (repeated names keep their first style)."""
    return {name: style(i, linewidth) for i, name in enumerate(dict.fromkeys(names))}


def plain_formatter() -> Any:
    """Tick labels as plain numbers (``0.5``, ``2``, ``1e-05``), never ``10^x`` mathtext."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:g}")


def no_minor_ticks(axis: Axis) -> None:
    """No minor ticks (on many log axes they cost seconds to lay out and add nothing)."""
    from matplotlib.ticker import NullFormatter, NullLocator

    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def log_subs(low: float, high: float) -> tuple[float, ...]:
    """Multiples of each power of ten to label on a log axis from ``low`` to ``high``: denser the fewer the
    decades, so that a range inside one or two decades (error rates from 2 to 5 %) has labels where the values
    lie, and a wide one is not crowded."""
    decades = math.log10(high / low) if low > 0 and high > low else 1.0
    if decades <= 1.2:
        return (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
    if decades <= 2.2:
        return (1.0, 2.0, 3.0, 5.0)
    if decades <= 4.5:
        return (1.0, 2.0, 5.0)
    return (1.0,)


def set_log_axis(
    axis: Axis, subs: Sequence[float] | None = (1.0, 2.0, 5.0), limits: tuple[float, float] | None = None
) -> None:
    """A log axis labelled where values lie: major ticks at ``subs`` times each power of ten (default 1, 2, 5;
    ``None``: :func:`log_subs` of ``limits``, which are then set), plain-number labels, no minor ticks."""
    from matplotlib.ticker import LogLocator

    x = axis is axis.axes.xaxis
    if x:
        axis.axes.set_xscale("log")
    else:
        axis.axes.set_yscale("log")
    if limits is not None:
        (axis.axes.set_xlim if x else axis.axes.set_ylim)(*limits)
        if subs is None:
            subs = log_subs(*limits)
    axis.set_major_locator(LogLocator(base=10, subs=tuple(subs or (1.0, 2.0, 5.0))))
    axis.set_major_formatter(plain_formatter())
    no_minor_ticks(axis)


def legend_below(ax: Axes, n: int, offset: float = -0.2, max_label: int = 20) -> None:
    """A legend under ``ax``: two columns for more than four short labels (long ones would widen the
    column of panels), else one."""
    longest = max((len(t) for t in ax.get_legend_handles_labels()[1]), default=0)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, offset),
        ncol=2 if n > 4 and longest <= max_label else 1,
        fontsize=8,
        frameon=False,
        handlelength=2.8,
        columnspacing=1.0,
    )


def suptitle(fig: Figure, text: str, fontsize: float = 10.5) -> None:
    """A figure title wrapped to the figure's width."""
    width = max(40, int(fig.get_figwidth() * 12))
    fig.suptitle(textwrap.fill(text, width), fontsize=fontsize)


def titles(fig: Figure, title: str, note: str = "", fontsize: float = 11.0) -> None:
    """A short title on one line at the top, and at the bottom, in small grey type, a note that says how to
    read the figure (wrapped to the figure's width), like a caption."""
    fig.suptitle(title, fontsize=fontsize, fontweight="bold")
    if note:
        width = max(60, int(fig.get_figwidth() * 16))
        fig.supxlabel(textwrap.fill(note, width), fontsize=8, color="#555555")
