"""Results of the tour: :class:`Result` (a view of the engine's records), ranking by final loss, the printed
tables and the CSV file.

Numbers print as the study's report prints them (its time-per-step format and fixed-width tables,
:mod:`mxopt_jax.compare.report.tables`; CSV numbers unrounded, :func:`mxopt_jax.compare.serialize.csv_number`).
"""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..checks import atomic_file
from ..records import Records
from ..report.tables import fmt_ms, text_table
from ..serialize import csv_number, csv_text
from .functions import FUNCTIONS

__all__ = [
    "TIE_RTOL",
    "Result",
    "fmt_loss",
    "fmt_ms",
    "format_overall",
    "format_table",
    "ranked",
    "ranks",
    "same_loss",
    "with_ranks",
    "write_csv",
]


@dataclasses.dataclass(frozen=True)
class Result:
    """One contender's run on one task of the tour: a view of its :class:`~mxopt_jax.compare.records.Records`.

    The engine's records are the app's one result type (what the study saves, reloads and reports); a tour run
    is records of one configuration and one seed, and this view names what the tour's tables and figures read
    of them, so that no other copy of the numbers exists. Every task evaluates after each step
    (``eval_every=1``), with the task's loss as its metric; its trace is the point (a 2-D function) or the
    accuracy (the spiral task).

    Attributes:
      records: the run, as the engine returned it (``G = S = 1``).
    """

    records: Records

    def __post_init__(self) -> None:
        shape = np.shape(self.records.val)
        if shape[:2] != (1, 1) or self.records.trace is None:
            raise ValueError(f"a tour Result views the records of one traced run, got val of shape {shape}")

    # what the records hold for the run, named (G = S = 1)
    name = property(lambda self: self.records.contender, doc="The contender's name.")
    task = property(lambda self: self.records.problem, doc="The task's name (the problem's).")
    learning_rate = property(lambda self: float(self.records.lrs[0]), doc="The run's learning rate.")
    seed = property(lambda self: int(self.records.seeds[0]), doc="The seed (the MLP's initialization, SGLD).")
    steps = property(lambda self: self.records.steps, doc="Steps of the run.")
    ms_per_step = property(
        lambda self: float(self.records.ms_per_step),
        doc="Milliseconds per step, compilation excluded (:attr:`Records.ms_per_step`).",
    )
    compile_s = property(
        lambda self: float(self.records.compile_s),
        doc="Seconds to compile the program the run was made in (shared by its family).",
    )

    @property
    def losses(self) -> np.ndarray:
        """``steps + 1`` loss values: at the start (the first step's loss, on the whole batch), then after each
        step (the metric); NaN from the point the run diverged."""
        return np.concatenate([self.records.train_loss[0, 0, :1], self.records.val[0, 0]])

    @property
    def final_loss(self) -> float:
        """The loss after the last step (NaN for a diverged run)."""
        return float(self.records.val[0, 0, -1])

    @property
    def accuracies(self) -> np.ndarray | None:
        """Training accuracy after each step (the spiral task's trace; ``None`` on a test function)."""
        return None if self.task in FUNCTIONS else np.asarray(self.records.trace)[0, 0]

    @property
    def accuracy(self) -> float:
        """The final training accuracy (NaN on a test function)."""
        acc = self.accuracies
        return math.nan if acc is None else float(acc[-1])

    @property
    def trajectory(self) -> np.ndarray | None:
        """The ``steps + 1`` points visited on a test function, ``(steps + 1, 2)``: its start, then the trace
        (``None`` for the spiral task)."""
        if self.task not in FUNCTIONS:
            return None
        return np.vstack([FUNCTIONS[self.task].start, np.asarray(self.records.trace)[0, 0]])


#: Relative tolerance under which two final losses tie (share a rank). The losses are float32 values: 1e-6 is
#: about eight float32 ulps, so runs that differ only by rounding (or not at all: ``sgd``, ``ccsgd``, ``lbsgd``
#: and ``test`` follow the same update with MXNet's defaults) tie, while any real difference (one in the
#: first five significant digits, which is what the tables print) does not. Diverged runs (a non-finite final
#: loss) tie, last. Where two neighbouring results do not tie but print alike with 4 significant digits, the
#: table prints more digits for them (:func:`format_table`), so that distinct ranks always show distinct values.
TIE_RTOL = 1e-6


def fmt_loss(v: float, digits: int = 4) -> str:
    """A final loss with ``digits`` significant digits; ``"diverged"`` when it is not finite."""
    return f"{v:.{digits}g}" if math.isfinite(v) else "diverged"


def _loss_digits(rows: Sequence[tuple[int, Result]], start: int = 4, most: int = 9) -> list[int]:
    """Significant digits per row: ``start``, or more where neighbours of different rank would print alike."""
    digits = [start] * len(rows)
    for i in range(1, len(rows)):
        (ka, a), (kb, b) = rows[i - 1], rows[i]
        if ka == kb:
            continue
        d = start
        while d < most and fmt_loss(a.final_loss, d) == fmt_loss(b.final_loss, d):
            d += 1
        digits[i - 1], digits[i] = max(digits[i - 1], d), max(digits[i], d)
    return digits


def same_loss(a: float, b: float, rtol: float = TIE_RTOL) -> bool:
    """Whether final losses ``a`` and ``b`` tie: equal within ``rtol`` (relative), or both not finite."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return not (math.isfinite(a) or math.isfinite(b))
    return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))


def _rank_key(r: Result) -> tuple[bool, float, str]:
    finite = math.isfinite(r.final_loss)
    return (not finite, r.final_loss if finite else 0.0, r.name)


def with_ranks(results: Sequence[Result], rtol: float = TIE_RTOL) -> list[tuple[int, Result]]:
    """``(rank, result)`` pairs, best first, with standard competition ranking ("1, 2, 2, 4").

    Results whose final loss ties (:func:`same_loss`) with the best of a group share that group's rank; within
    a group they are listed by name (display order only). Diverged runs rank last.
    """
    groups: list[list[Result]] = []
    for r in sorted(results, key=_rank_key):
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
    """``{contender: rank}`` (shared ranks for ties, see :func:`with_ranks`)."""
    return {r.name: k for k, r in with_ranks(results, rtol)}


def ranked(results: Sequence[Result]) -> list[Result]:
    """Results best first (by final loss, diverged last; ties by name)."""
    return [r for _, r in with_ranks(results)]


def format_table(results: Sequence[Result], title: str | None = None) -> str:
    """A ranked text table: rank, contender, lr, final loss, accuracy (the spiral task), steps, ms/step.

    Ties share a rank (:func:`with_ranks`); a note under the table says so when there are any. Final losses
    print with 4 significant digits, more where neighbours of different rank would otherwise print alike.
    """
    with_acc = any(r.accuracies is not None for r in results)
    head = ["rank", "contender", "lr", "final loss", *(["accuracy"] if with_acc else []), "steps", "ms/step"]
    rows = with_ranks(results)
    cells = []
    for (k, r), digits in zip(rows, _loss_digits(rows), strict=True):
        acc = ["-" if math.isnan(r.accuracy) else f"{100 * r.accuracy:.1f}%"] if with_acc else []
        cells.append(
            [str(k), r.name, f"{r.learning_rate:.3g}", fmt_loss(r.final_loss, digits), *acc]
            + [str(r.steps), fmt_ms(r.ms_per_step)]
        )
    lines = ([title] if title else []) + text_table(head, cells, "><" + ">" * (len(head) - 2))
    if len({k for k, _ in rows}) < len(rows):
        lines.append(f"(equal ranks: final losses equal within a relative {TIE_RTOL:g})")
    return "\n".join(lines)


def format_overall(results: Mapping[str, Sequence[Result]]) -> str:
    """Mean rank of each contender over the tasks (ranks shared by ties), with its rank on each task.

    Equal mean ranks share an overall rank too (competition ranking; listed by name).
    """
    tasks = list(results)
    per_task: dict[str, dict[str, int]] = {}
    for task, rs in results.items():
        for name, k in ranks(rs).items():
            per_task.setdefault(name, {})[task] = k
    means = {name: float(np.mean(list(rk.values()))) for name, rk in per_task.items()}
    names = sorted(per_task, key=lambda n: (means[n], n))
    cells, overall = [], 0
    for i, name in enumerate(names):
        if i == 0 or not math.isclose(means[name], means[names[i - 1]], rel_tol=1e-9):
            overall = i + 1
        by_task = [str(per_task[name].get(t, "-")) for t in tasks]
        cells.append([str(overall), name, f"{means[name]:.2f}", *by_task])
    head = ["rank", "contender", "mean rank", *tasks]
    lines = text_table(head, cells, "><" + ">" * (len(head) - 2))
    return "\n".join([f"Overall: mean rank over {len(tasks)} task(s)", *lines])


#: The columns of ``results.csv``, one row per run.
CSV_COLUMNS = (
    "task",
    "rank",
    "contender",
    "lr",
    "final_loss",
    "accuracy",
    "steps",
    "ms_per_step",
    "compile_s",
)


def write_csv(path: str | Path, results: Mapping[str, Sequence[Result]]) -> Path:
    """All results as CSV (:data:`CSV_COLUMNS`), one row per run; ``rank`` is the shared rank of
    :func:`with_ranks`; numbers unrounded."""
    path = Path(path)
    with atomic_file(path, newline="") as f:  # whole or not at all (a full disk)
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for task, rs in results.items():
            for k, r in with_ranks(rs):
                numbers = (r.learning_rate, r.final_loss, r.accuracy)
                w.writerow(
                    [csv_text(task), k, csv_text(r.name), *map(csv_number, numbers), r.steps]
                    + [csv_number(r.ms_per_step), csv_number(r.compile_s)]
                )
    return path
