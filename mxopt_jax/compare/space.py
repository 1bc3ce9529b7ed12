"""Hyperparameters a study can tune: :class:`Hyperparameter` (a name, a default, a range and a scale).

A contender (:mod:`mxopt_jax.compare.contenders`) declares its hyperparameters, learning rate first. The grid
mode tunes the learning rate alone on a log grid around its default; every hyperparameter a study tunes is a
traced input of the compiled program (one program per family serves every configuration, never a recompile).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["SCALES", "Hyperparameter", "names", "lookup"]

#: How a hyperparameter's range is sampled: ``"log"`` log-uniformly (rates, epsilons, weight decays),
#: ``"linear"`` uniformly, ``"log1m"`` log-uniformly in ``1 - value`` (momenta and betas near 1).
SCALES = ("log", "linear", "log1m")


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
    """One tunable hyperparameter of a contender.

    Attributes:
      name: the keyword the contender's factory takes (mxopt_jax's optimizers: MXNet's keyword, such as
        ``"beta1"``; always ``"learning_rate"`` for the rate).
      default: its value when it is not tuned (MXNet's or optax's default).
      low, high: the range a search draws from (``low <= default <= high`` is not required).
      scale: one of :data:`SCALES`.
    """

    name: str
    default: float
    low: float
    high: float
    scale: Literal["log", "linear", "log1m"] = "log"

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"Hyperparameter name must be a Python identifier, got {self.name!r}")
        if self.scale not in SCALES:
            raise ValueError(
                f"Hyperparameter {self.name!r}: scale must be one of {SCALES}, got {self.scale!r}"
            )
        for field in ("default", "low", "high"):
            v = getattr(self, field)
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise ValueError(
                    f"Hyperparameter {self.name!r}: `{field}` must be a finite number, got {v!r}"
                )
        if not self.low <= self.high:
            raise ValueError(
                f"Hyperparameter {self.name!r}: need low <= high, got {self.low!r} > {self.high!r}"
            )
        if self.scale == "log" and self.low <= 0:
            raise ValueError(f"Hyperparameter {self.name!r}: a log scale needs low > 0, got {self.low!r}")
        if self.scale == "log1m" and self.high >= 1:
            raise ValueError(f"Hyperparameter {self.name!r}: a log1m scale needs high < 1, got {self.high!r}")

    def from_unit(self, u: np.ndarray | float) -> np.ndarray:
        """Values for points ``u`` in ``[0, 1]`` (0: ``low``, 1: ``high``) on this hyperparameter's scale."""
        u = np.asarray(u, np.float64)
        if self.scale == "linear":
            return self.low + u * (self.high - self.low)
        if self.scale == "log":
            return np.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        lo, hi = math.log(1 - self.high), math.log(1 - self.low)  # log1m: 1 - value is log-uniform
        return 1 - np.exp(hi + u * (lo - hi))


def names(hyperparameters: Sequence[Hyperparameter]) -> tuple[str, ...]:
    """The names, in order."""
    return tuple(h.name for h in hyperparameters)


def lookup(hyperparameters: Sequence[Hyperparameter], name: str) -> Hyperparameter:
    """The hyperparameter called ``name`` (``KeyError`` naming the known ones if there is none)."""
    for h in hyperparameters:
        if h.name == name:
            return h
    raise KeyError(f"no hyperparameter {name!r}; known: {', '.join(names(hyperparameters))}")
