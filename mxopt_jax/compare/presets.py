"""How much of the protocol a study runs and which learning rates it tries: :class:`Preset` (the grid, the seed
counts, the step budget; :data:`PRESETS`), the log-spaced grids around a contender's default rate
(:meth:`Preset.grid`, :func:`log_grid`), a grid shifted past its edge (:func:`shift_grid`) and two grids' records
joined into one (:func:`combine`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .records import Records, canonical

if TYPE_CHECKING:  # pragma: no cover
    from .problems.base import Problem

__all__ = [
    "CONFIRM_OFFSET",
    "PRESETS",
    "Preset",
    "combine",
    "log_grid",
    "shift_grid",
]


Edge = Literal["low", "high"]


#: Confirmation seeds start here: seeds ``CONFIRM_OFFSET, CONFIRM_OFFSET + 1, ...`` never meet the
#: selection seeds ``0, 1, ...`` (and stay the same when the number of selection seeds changes).
CONFIRM_OFFSET = 1000


@dataclasses.dataclass(frozen=True)
class Preset:
    """How much of the protocol a study runs.

    Attributes:
      name: ``"quick"`` or ``"full"``.
      grid_points: learning rates per contender (a log grid centred on the contender's default rate).
      seeds: selection seeds per configuration (the runs that choose).
      confirm_seeds: fresh seeds the chosen configuration (and, for the one-shot mode, the default one) is
        re-run on; the reported test results come from these runs only.
      spacing: decades between neighbouring rates (0.5: half a decade, a factor of about 3.16).
      quick: whether runs use the problem's ``quick_steps`` (else its ``steps``).
      description: one line for the printed protocol.
    """

    name: str
    grid_points: int
    seeds: int
    confirm_seeds: int = 10
    spacing: float = 0.5
    quick: bool = False
    description: str = ""

    def steps(self, problem: Problem) -> int:
        """Training steps of one run of ``problem`` under this preset."""
        if self.quick and problem.quick_steps is not None:
            return int(problem.quick_steps)
        return int(problem.steps)

    def grid(self, center: float) -> np.ndarray:
        """``grid_points`` rates ``spacing`` decades apart, centred (geometrically) on ``center``.

        The centre is at index ``grid_points // 2`` (with an even number of points the extra point goes
        below it). The quick grid (7 points) is the middle of the full one (11 points): both share the
        spacing, so their rates coincide.
        """
        if not (center > 0 and math.isfinite(center)):
            raise ValueError(f"grid centre must be a positive number, got {center!r}")
        below = self.grid_points // 2
        offsets = (np.arange(self.grid_points) - below) * self.spacing
        return canonical(float(center) * 10.0**offsets)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: dict[str, Preset] = {
    # 16 confirmation seeds: the exact signed-rank test's smallest p-value, 2 / 2^16 = 3.1e-5, is below Holm's
    # first threshold for every pair of all 26 contenders (5 % / 325 = 1.5e-4), so a table of them can show a
    # difference (10 seeds separate at most 7 entries); a 2-standard-deviation difference in a 23-entry table is
    # found 96 % of the time (0 % on 10 seeds, 71 % on 14), measured by simulation
    "quick": Preset(
        "quick",
        grid_points=7,
        seeds=5,
        confirm_seeds=16,
        spacing=0.5,
        quick=True,
        description="7 rates half a decade apart (3 decades), 5 selection seeds, 16 confirmation seeds, each "
        "problem's quick step budget",
    ),
    "full": Preset(
        "full",
        grid_points=11,
        seeds=10,
        confirm_seeds=20,
        spacing=0.5,
        quick=False,
        description="11 rates half a decade apart (5 decades), 10 selection seeds, 20 confirmation seeds, each "
        "problem's full step budget",
    ),
}


def log_grid(low: float, high: float, points: int) -> np.ndarray:
    """``points`` log-spaced rates from ``low`` to ``high``, both included."""
    if not (0 < low <= high) or not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"need 0 < low <= high, got {low!r}, {high!r}")
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points!r}")
    if points == 1:
        return np.array([float(low)])
    return np.geomspace(float(low), float(high), int(points))


def shift_grid(lrs: Sequence[float] | np.ndarray, direction: Edge | str | int) -> np.ndarray:
    """The grid ``lrs`` moved by ``len(lrs) - 1`` points up or down, with the same (log) spacing.

    ``direction`` is ``"high"``/``"up"``/``+1`` or ``"low"``/``"down"``/``-1`` (a :attr:`Selection.on_edge`
    value can be passed as is). The new grid starts where the old one ended: its first point (up) or last
    point (down) is the old edge rate, so the two grids join into one of ``2 * len - 1`` rates
    (:func:`combine`). Same length, so the orchestration re-runs it with the program it has already compiled
    (rates are traced inputs).
    """
    lrs = np.asarray(lrs, np.float64)
    if lrs.ndim != 1 or len(lrs) < 2:
        raise ValueError(f"need a grid of at least 2 rates, got {lrs!r}")
    if direction in ("high", "up", 1):
        up = True
    elif direction in ("low", "down", -1):
        up = False
    else:
        raise ValueError(f"direction must be 'high'/'up'/+1 or 'low'/'down'/-1, got {direction!r}")
    logs = np.log10(lrs)
    span = (logs[-1] - logs[0]) / (len(lrs) - 1) * (len(lrs) - 1)
    out = 10.0 ** (logs + span if up else logs - span)
    if up:  # the shared rate exactly (so the runs of both grids line up in combine())
        out[0] = lrs[-1]
    else:
        out[-1] = lrs[0]
    return out


def combine(a: Records, b: Records) -> Records:
    """One :class:`Records` from two grids of the same contender, problem, seeds and steps (e.g. a grid and
    its :func:`shift_grid`), sorted by rate. A rate present in both (equal within a relative 1e-9) is kept
    once, from ``a``.

    ``run_s`` is the sum, scaled to the runs kept, so :attr:`Records.ms_per_step` stays the per-run average;
    ``compile_s`` is ``a``'s (the shifted grid reuses the compiled program).
    """
    if (a.contender, a.problem, a.role) != (b.contender, b.problem, b.role):
        raise ValueError(
            f"cannot combine {a.contender}/{a.problem} ({a.role}) with {b.contender}/{b.problem} ({b.role})"
        )
    if not (np.array_equal(a.seeds, b.seeds) and np.array_equal(a.eval_steps, b.eval_steps)):
        raise ValueError("cannot combine records with different seeds or evaluation steps")
    if a.hparams or b.hparams:
        raise ValueError(
            "combine() joins learning-rate grids; records with other tuned hyperparameters do not join"
        )
    a_lrs, b_lrs = np.asarray(a.lrs, np.float64), np.asarray(b.lrs, np.float64)
    keep_b = ~np.isclose(b_lrs[:, None], a_lrs[None, :], rtol=1e-9, atol=0).any(axis=1)
    lrs = np.concatenate([a.lrs, np.asarray(b.lrs)[keep_b]])
    order = np.argsort(lrs, kind="stable")

    def cat(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(x), np.asarray(y)[keep_b]], axis=0)[order]

    total = len(a.lrs) + len(b.lrs)
    run_s = (a.run_s + b.run_s) * len(lrs) / total
    return dataclasses.replace(
        a,
        lrs=lrs[order],
        train_loss=cat(a.train_loss, b.train_loss),
        val=cat(a.val, b.val),
        test=cat(a.test, b.test),
        steps_to_target=cat(a.steps_to_target, b.steps_to_target),
        diverged_at=cat(np.asarray(a.diverged_at), np.asarray(b.diverged_at)),
        trace=None if a.trace is None or b.trace is None else cat(a.trace, b.trace),
        run_s=run_s,
    )
