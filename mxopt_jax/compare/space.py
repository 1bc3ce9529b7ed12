"""Hyperparameters a study can tune: :class:`Hyperparameter` (a name, a default, a range and a scale).

A contender (:mod:`mxopt_jax.compare.contenders`) declares its hyperparameters, learning rate first. The grid
mode tunes the learning rate alone on a log grid around its default; every hyperparameter a study tunes is a
traced input of the compiled program (one program serves every configuration, never a recompile).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["ALIASES", "SCALES", "Hyperparameter", "kind", "lookup", "names"]

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

    def to_unit(self, value: np.ndarray | float) -> np.ndarray:
        """Where ``value`` lies in the range on this hyperparameter's scale (the inverse of :meth:`from_unit`:
        0 at ``low``, 1 at ``high``; outside ``[0, 1]`` outside the range, NaN where the scale has no place
        for it, such as 0 on a log scale). A range of one point maps to 0."""
        v = np.asarray(value, np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.high == self.low:
                return np.where(np.isfinite(v), 0.0, np.nan)
            if self.scale == "linear":
                return (v - self.low) / (self.high - self.low)
            if self.scale == "log":
                return np.where(
                    v > 0,
                    (np.log(v) - math.log(self.low)) / (math.log(self.high) - math.log(self.low)),
                    np.nan,
                )
            lo, hi = math.log(1 - self.high), math.log(1 - self.low)
            return np.where(v < 1, (np.log(1 - v) - hi) / (lo - hi), np.nan)


#: Keywords that name a kind of hyperparameter another way (optax's): ``{keyword: kind}``.
ALIASES = {"b1": "beta1", "b2": "beta2", "eps": "epsilon", "weight_decay": "wd"}


def kind(name: str) -> str:
    """The kind of the hyperparameter called ``name``: its name, or the kind an optax keyword stands for
    (:data:`ALIASES`: ``"b1"`` is ``"beta1"``). The random search draws one column of random numbers per kind,
    shared by every contender that has it (:mod:`mxopt_jax.compare.search`), and the built-in ranges are per
    kind (:data:`mxopt_jax.compare.contenders.RANGES`)."""
    return ALIASES.get(name, name)


def names(hyperparameters: Sequence[Hyperparameter]) -> tuple[str, ...]:
    """The names, in order."""
    return tuple(h.name for h in hyperparameters)


def lookup(hyperparameters: Sequence[Hyperparameter], name: str) -> Hyperparameter:
    """The hyperparameter called ``name`` (``KeyError`` naming the known ones if there is none)."""
    for h in hyperparameters:
        if h.name == name:
            return h
    raise KeyError(f"no hyperparameter {name!r}; known: {', '.join(names(hyperparameters))}")
