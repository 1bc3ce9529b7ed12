"""How a value reads in a table's cell: a contender's label (with the contenders folded into it), rates, means
with their intervals, seconds, steps, targets, ranks; the edge marks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..analysis import StudyAnalysis
from ..selection import Selection

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = [
    "EDGE_MARKS",
    "EDGE_NOTE",
    "fmt_lr",
    "fmt_mean_ci",
    "fmt_ms",
    "fmt_num",
    "fmt_quartiles",
    "fmt_rank",
    "fmt_seconds",
    "fmt_steps",
    "fmt_target",
    "fmt_test",
    "fmt_value",
    "label",
    "label_all",
    "span",
    "study_label",
]


#: Marks appended to a chosen rate on the grid's edge.
EDGE_MARKS = {"low": "<", "high": ">"}


EDGE_NOTE = (
    "< / > after a rate: the chosen rate is the smallest / largest of its grid (random search: a chosen value, the rate or "
    "another hyperparameter, that is the lowest / highest of that hyperparameter among the trials); the best "
    "value may lie beyond it."
)


_DASH = "—"


def label(name: str, identical: Mapping[str, Sequence[str]] | None = None) -> str:
    """``name``, or ``"sgd (= ccsgd, test, lbsgd)"`` when ``identical`` lists contenders identical to it."""
    others = (identical or {}).get(name)
    return f"{name} (= {', '.join(others)})" if others else name


def fmt_lr(s: Selection) -> str:
    """The chosen rate with 3 significant digits and its edge mark (``"0.0316"``, ``"1e-05<"``)."""
    return f"{s.lr:.3g}{EDGE_MARKS.get(s.on_edge or '', '')}"


def _decimals(ci: float) -> int:
    """Decimals that show ``ci`` with two significant digits (0 to 6)."""
    if not math.isfinite(ci) or ci <= 0:
        return -1
    return int(min(6, max(0, 1 - math.floor(math.log10(ci)))))


def fmt_mean_ci(mean: float, ci: float) -> str:
    """``"3.42 ± 0.31"``: the interval with two significant digits, the mean to the same decimals;
    ``"diverged"`` for a non-finite mean, the mean alone (4 significant digits) without an interval."""
    if not math.isfinite(mean):
        return "diverged"
    d = _decimals(ci)
    if d < 0:
        return f"{mean:.4g}" + (" ± 0" if ci == 0 else "")
    if round(ci, d) == 0:  # a spread below the shown decimals (rounding): as none
        return f"{mean:.4g} ± 0"
    return f"{mean:.{d}f} ± {ci:.{d}f}"


def fmt_num(v: float) -> str:
    return f"{v:#.4g}".rstrip(".") if math.isfinite(v) else "diverged"


def fmt_target(s: Selection) -> str:
    k = f"({s.reached}/{s.seeds})"
    if math.isfinite(s.time_to_target):
        return f"{s.time_to_target:.0f} {k}"
    return f"{_DASH} {k}" if s.reached else _DASH


def fmt_seconds(steps: float, ms_per_step: float) -> str:
    """``steps x ms_per_step`` with its unit, 2 significant digits (``"0.29 ms"``, ``"1.2 s"``; a dash when
    either is unknown)."""
    if not (math.isfinite(steps) and math.isfinite(ms_per_step)):
        return _DASH
    v, unit = steps * ms_per_step, "ms"
    if v >= 1e3:
        v, unit = v / 1e3, "s"
    if v == 0:
        return "0 s"
    v = float(f"{v:.2g}")
    return f"{v:.{max(0, 1 - math.floor(math.log10(abs(v))))}f} {unit}"


def fmt_steps(v: float) -> str:
    return f"{v:.0f}" if math.isfinite(v) else _DASH


def fmt_ms(v: float) -> str:
    if not math.isfinite(v):
        return _DASH
    if v == 0:
        return "0"
    v = float(f"{v:.3g}")
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def fmt_test(s: Selection) -> str:
    """Mean ± interval over the report seeds; with diverged seeds, over the finite ones, saying how many."""
    if s.finite == len(np.asarray(s.test)):
        return fmt_mean_ci(s.test_mean, s.test_ci)
    if s.finite == 0:
        return "diverged"
    return f"{fmt_mean_ci(s.finite_mean, s.finite_ci)} ({s.finite}/{s.seeds} finite)"


def fmt_quartiles(s: Selection, quartiles: tuple[float, float, float]) -> str:
    """``"2.75 [2.50, 3.06]"``: median and quartiles over every report seed (a diverged seed the worst value),
    with the interval's decimals (4 significant digits without one)."""
    q1, med, q3 = quartiles
    ci = s.test_ci if math.isfinite(s.test_ci) else s.finite_ci
    d = _decimals(ci)

    def one(v: float) -> str:
        if not math.isfinite(v):
            return "diverged"
        return f"{v:.{d}f}" if d >= 0 else f"{v:.4g}"

    return f"{one(med)} [{one(q1)}, {one(q3)}]"


def fmt_rank(v: float) -> str:
    return f"{v:.2f}" if math.isfinite(v) else "-"


def fmt_value(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "diverged"


def span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def label_all(names: Sequence[str], identical: Mapping[str, Sequence[str]]) -> str:
    return ", ".join(label(n, identical) for n in names)


def study_label(analysis: StudyAnalysis) -> str:
    """``"study 1 of 3"`` when the analysis holds several independent studies (its tables are the first
    study's), else ``""``."""
    return f"study 1 of {analysis.across[0].studies}" if analysis.across else ""
