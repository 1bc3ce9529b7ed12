"""Results of the tour: :class:`Result`, ranking by final loss, the printed tables and the CSV file."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np


class Result(NamedTuple):
    """One optimizer's run on one task.

    ``losses`` holds ``steps + 1`` values: the loss before each update, then the final loss. For the spiral
    task ``accuracies`` is the training accuracy at the same points; for a test function ``trajectory`` is
    the point (``(steps + 1, 2)``) and ``accuracy`` is NaN. ``ms_per_step`` is the best of two runs of the
    compiled program, divided by ``steps``; it excludes compilation (``compile_s``).
    """

    name: str
    learning_rate: float
    final_loss: float
    accuracy: float
    steps: int
    ms_per_step: float
    losses: np.ndarray
    task: str = "spiral"
    accuracies: np.ndarray | None = None
    trajectory: np.ndarray | None = None
    compile_s: float = math.nan


#: Relative tolerance under which two final losses tie (share a rank). The losses are float32 values: 1e-6 is
#: about eight float32 ulps, so runs that differ only by rounding (or not at all: ``sgd``, ``ccsgd``, ``lbsgd``
#: and ``test`` follow the same update with MXNet's defaults) tie, while any real difference (one in the
#: first five significant digits, which is what the tables print) does not. All NaN losses tie (last), as do
#: equal infinities. Where two neighbouring results do not tie but print alike with 4 significant digits, the
#: table prints more digits for them (:func:`format_table`), so that distinct ranks always show distinct values.
TIE_RTOL = 1e-6


def _fmt_loss(v: float, digits: int = 4) -> str:
    return "nan" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.{digits}g}")


def _loss_digits(rows: Sequence[tuple[int, Result]], start: int = 4, most: int = 9) -> list[int]:
    """Significant digits per row: ``start``, or more where neighbours of different rank would print alike."""
    digits = [start] * len(rows)
    for i in range(1, len(rows)):
        (ka, a), (kb, b) = rows[i - 1], rows[i]
        if ka == kb:
            continue
        d = start
        while d < most and _fmt_loss(a.final_loss, d) == _fmt_loss(b.final_loss, d):
            d += 1
        digits[i - 1], digits[i] = max(digits[i - 1], d), max(digits[i], d)
    return digits


def fmt_ms(v: float) -> str:
    """A time in milliseconds with 3 significant digits and no exponent (``12.3``, ``0.154``, ``0.000749``)."""
    if not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    v = float(f"{v:.3g}")  # round first, so that 9.996 prints as 10.0 (3 digits), not 10.00
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def same_loss(a: float, b: float, rtol: float = TIE_RTOL) -> bool:
    """Whether final losses ``a`` and ``b`` tie: equal within ``rtol`` (relative), or both NaN."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b))


def _rank_key(r: Result) -> tuple:
    return (math.isnan(r.final_loss), 0.0 if math.isnan(r.final_loss) else r.final_loss, r.name)


def with_ranks(results: Sequence[Result], rtol: float = TIE_RTOL) -> list[tuple[int, Result]]:
    """``(rank, result)`` pairs, best first, with standard competition ranking ("1, 2, 2, 4").

    Results whose final loss ties (:func:`same_loss`) with the best of a group share that group's rank; within
    a group they are listed by name (display order only). NaN losses rank last.
    """
    rs = sorted(results, key=_rank_key)
    groups: list[list[Result]] = []
    for r in rs:
        if groups and same_loss(groups[-1][0].final_loss, r.final_loss, rtol):
            groups[-1].append(r)
        else:
            groups.append([r])
    out: list[tuple[int, Result]] = []
    for group in groups:
        rank = len(out) + 1
        out += [(rank, r) for r in sorted(group, key=lambda r: r.name)]
    return out


def ranks(results: Sequence[Result], rtol: float = TIE_RTOL) -> dict[str, int]:
    """``{optimizer: rank}`` (shared ranks for ties, see :func:`with_ranks`)."""
    return {r.name: k for k, r in with_ranks(results, rtol)}


def ranked(results: Sequence[Result]) -> list[Result]:
    """Results best first (by final loss, NaN last; ties by name)."""
    return [r for _, r in with_ranks(results)]


def format_table(results: Sequence[Result], title: str | None = None) -> str:
    """A ranked text table: rank, optimizer, lr, final loss, accuracy (when measured), steps, ms/step.

    Ties share a rank (:func:`with_ranks`); a note under the table says so when there are any. Final losses
    print with 4 significant digits, more where neighbours of different rank would otherwise print alike.
    """
    with_acc = any(not math.isnan(r.accuracy) for r in results)
    head = f"{'rank':>4}  {'optimizer':<13} {'lr':>7} {'final loss':>11}"
    head += f" {'accuracy':>9}" if with_acc else ""
    head += f" {'steps':>6} {'ms/step':>9}"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    rows = with_ranks(results)
    for (k, r), digits in zip(rows, _loss_digits(rows), strict=True):
        line = f"{k:>4}  {r.name:<13} {r.learning_rate:>7.3g} {_fmt_loss(r.final_loss, digits):>11}"
        if with_acc:
            line += f" {'-':>9}" if math.isnan(r.accuracy) else f" {100 * r.accuracy:>8.1f}%"
        line += f" {r.steps:>6d} {fmt_ms(r.ms_per_step):>9}"
        lines.append(line)
    if len({k for k, _ in rows}) < len(rows):
        lines.append(f"(equal ranks: final losses equal within a relative {TIE_RTOL:g})")
    return "\n".join(lines)


def format_overall(results: dict[str, list[Result]]) -> str:
    """Mean rank of each optimizer over the tasks (ranks shared by ties), with its rank on each task.

    Equal mean ranks share an overall rank too (competition ranking; listed by name).
    """
    tasks = list(results)
    per_task: dict[str, dict[str, int]] = {}
    for task, rs in results.items():
        for name, k in ranks(rs).items():
            per_task.setdefault(name, {})[task] = k
    means = {name: float(np.mean(list(rk.values()))) for name, rk in per_task.items()}
    rows = sorted(per_task, key=lambda n: (means[n], n))
    head = f"{'rank':>4}  {'optimizer':<13} {'mean rank':>9}" + "".join(f" {t:>10}" for t in tasks)
    lines = [f"Overall: mean rank over {len(tasks)} task(s)", head, "-" * len(head)]
    overall = 0
    for i, name in enumerate(rows):
        if i == 0 or not math.isclose(means[name], means[rows[i - 1]], rel_tol=1e-9):
            overall = i + 1
        cells = "".join(f" {per_task[name][t]:>10d}" if t in per_task[name] else f" {'-':>10}" for t in tasks)
        lines.append(f"{overall:>4}  {name:<13} {means[name]:>9.2f}{cells}")
    return "\n".join(lines)


def write_csv(path: str | Path, results: dict[str, list[Result]]) -> Path:
    """All results as CSV (task, rank, optimizer, lr, final_loss, accuracy, steps, ms_per_step, compile_s).

    ``rank`` is the shared rank of :func:`with_ranks`; numbers are written unrounded.
    """
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["task", "rank", "optimizer", "lr", "final_loss", "accuracy", "steps", "ms_per_step", "compile_s"]
        )
        for task, rs in results.items():
            for k, r in with_ranks(rs):
                w.writerow(
                    [
                        task,
                        k,
                        r.name,
                        r.learning_rate,
                        r.final_loss,
                        r.accuracy,
                        r.steps,
                        r.ms_per_step,
                        r.compile_s,
                    ]
                )
    return path
