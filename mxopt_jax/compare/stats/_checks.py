"""The statistics' argument checks: each raises a ``ValueError`` naming the argument and what it allows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def check_level(level: float, name: str = "level") -> float:
    try:
        x = float(level)
    except (TypeError, ValueError):
        x = math.nan
    if not 0 < x < 1:
        raise ValueError(f"{name} must be in (0, 1), got {level!r}")
    return x


def check_margin(margin: float, name: str = "margin") -> float:
    try:
        x = float(margin)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"{name} must be a finite number >= 0 (in the metric's units), got {margin!r}")
    return x


def check_rtol(rtol: float) -> float:
    try:
        x = float(rtol)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and 0 <= x < 1):
        raise ValueError(f"rtol must be a number in [0, 1), got {rtol!r}")
    return x


def check_matrix(values: Sequence[Sequence[float]] | np.ndarray, name: str = "values") -> np.ndarray:
    v = np.asarray(values, np.float64)
    if v.ndim != 2 or v.shape[0] < 1 or v.shape[1] < 2:
        raise ValueError(
            f"{name} must be a (contenders, seeds) array with at least 1 contender and 2 seeds, "
            f"got shape {v.shape}"
        )
    return v
