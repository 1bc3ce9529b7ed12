"""Which way a metric improves: :class:`Direction`, the one owner of ``"lower"``/``"higher"``.

A problem says it (``Problem.better``, the word it is made with; :attr:`mxopt_jax.compare.problems.base.Problem.
direction` asks it); a selection, a table's tests and a table across studies keep the :class:`Direction` itself
(:attr:`mxopt_jax.compare.selection.Selection.direction`). Everything that turns the word into arithmetic or text
asks a :class:`Direction`: the oriented (lower-is-better) values that selection, ranks, quartiles and the tests
read, the best value over runs, whether a value meets a target (the engine's steps to target, the preflight),
the ``<=``/``>=`` a report prints, which side of an axis is the worse one, the worst value a diverged run counts
as. Records and tables keep the raw values.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["HIGHER", "LOWER", "WORDS", "Direction"]

#: The two directions, as ``Problem.better`` and ``Direction.better`` spell them.
WORDS = ("lower", "higher")


@dataclasses.dataclass(frozen=True)
class Direction:
    """Which way a metric improves: ``better`` is ``"lower"`` (an error rate, a loss) or ``"higher"`` (an
    accuracy).

    Raises
    ------
    ValueError
        ``better`` not ``"lower"`` or ``"higher"``.
    """

    better: str = "lower"

    def __post_init__(self) -> None:
        if self.better not in WORDS:
            raise ValueError(
                f"better must be 'lower' or 'higher' (which way the metric improves), got {self.better!r}"
            )

    @property
    def sign(self) -> float:
        """``1.0`` where lower is better, ``-1.0`` where higher is: ``sign * value`` is lower-is-better."""
        return 1.0 if self.better == "lower" else -1.0

    @property
    def lower_is_better(self) -> bool:
        """Whether lower is better (an error rate, a loss): the worse values lie above the better ones."""
        return self.better == "lower"

    @property
    def word(self) -> str:
        """``"lower"`` or ``"higher"``."""
        return self.better

    @property
    def symbol(self) -> str:
        """How a target reads: ``"<="`` where lower is better, ``">="`` where higher is."""
        return "<=" if self.better == "lower" else ">="

    @property
    def worst(self) -> float:
        """The worst value, what a diverged run counts as: ``+inf`` where lower is better, ``-inf`` else."""
        return self.sign * math.inf

    def orient(self, values: Sequence[float] | np.ndarray | float) -> np.ndarray:
        """``values`` made lower-is-better: ``sign * values`` (``orient(orient(x)) == x``)."""
        return self.sign * np.asarray(values, np.float64)

    def best(self, values: Sequence[float] | np.ndarray | float, axis: int = -1) -> np.ndarray:
        """The best of ``values`` along ``axis`` (the lowest, or the highest where higher is better), raw units; a
        non-finite value (a diverged run) counts as the worst, so the best is the worst value only where every
        value is non-finite."""
        v = self.orient(values)
        with np.errstate(invalid="ignore"):
            return self.orient(np.where(np.isfinite(v), v, np.inf).min(axis=axis))

    def meets(self, values: Sequence[float] | np.ndarray | float, target: float) -> np.ndarray:
        """Whether each value reaches ``target`` (``value <= target``, or ``>=`` where higher is better); a
        non-finite value never does."""
        v = np.asarray(values, np.float64)
        with np.errstate(invalid="ignore"):
            return np.asarray(np.isfinite(v) & (self.sign * v <= self.sign * float(target)))


#: The two directions.
LOWER = Direction("lower")
HIGHER = Direction("higher")
