"""Results of the comparison: :class:`Result`, ranking, the printed tables and the CSV file."""

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


def _fmt_loss(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.4g}")


def _rank_key(r: Result) -> tuple:
    return (math.isnan(r.final_loss), 0.0 if math.isnan(r.final_loss) else r.final_loss, r.name)


def ranked(results: Sequence[Result]) -> list[Result]:
    """Results sorted by final loss, best first; NaN last."""
    return sorted(results, key=_rank_key)


def format_table(results: Sequence[Result], title: str | None = None) -> str:
    """A ranked text table: rank, optimizer, lr, final loss, accuracy (when measured), steps, ms/step."""
    with_acc = any(not math.isnan(r.accuracy) for r in results)
    head = f"{'rank':>4}  {'optimizer':<13} {'lr':>7} {'final loss':>11}"
    head += f" {'accuracy':>9}" if with_acc else ""
    head += f" {'steps':>6} {'ms/step':>8}"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for i, r in enumerate(ranked(results), 1):
        line = f"{i:>4}  {r.name:<13} {r.learning_rate:>7.3g} {_fmt_loss(r.final_loss):>11}"
        if with_acc:
            line += f" {'-':>9}" if math.isnan(r.accuracy) else f" {100 * r.accuracy:>8.1f}%"
        line += f" {r.steps:>6d} {r.ms_per_step:>8.3g}"
        lines.append(line)
    return "\n".join(lines)


def format_overall(results: dict[str, list[Result]]) -> str:
    """Mean rank of each optimizer over the tasks, with its rank on each task."""
    tasks = list(results)
    ranks: dict[str, dict[str, int]] = {}
    for task, rs in results.items():
        for i, r in enumerate(ranked(rs), 1):
            ranks.setdefault(r.name, {})[task] = i
    rows = sorted(ranks.items(), key=lambda kv: (np.mean(list(kv[1].values())), kv[0]))
    head = f"{'rank':>4}  {'optimizer':<13} {'mean rank':>9}" + "".join(f" {t:>10}" for t in tasks)
    lines = [f"Overall: mean rank over {len(tasks)} task(s)", head, "-" * len(head)]
    for i, (name, rk) in enumerate(rows, 1):
        cells = "".join(f" {rk.get(t, 0):>10d}" for t in tasks)
        lines.append(f"{i:>4}  {name:<13} {np.mean(list(rk.values())):>9.2f}{cells}")
    return "\n".join(lines)


def write_csv(results: dict[str, list[Result]], path: str | Path) -> Path:
    """All results as CSV (task, rank, optimizer, lr, final_loss, accuracy, steps, ms_per_step, compile_s)."""
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["task", "rank", "optimizer", "lr", "final_loss", "accuracy", "steps", "ms_per_step", "compile_s"]
        )
        for task, rs in results.items():
            for i, r in enumerate(ranked(rs), 1):
                w.writerow(
                    [
                        task,
                        i,
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
