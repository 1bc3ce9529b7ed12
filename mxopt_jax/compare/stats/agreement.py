"""Agreement of two rankings: Kendall's tau-b (SciPy's, the inputs checked: :func:`kendall_tau`), its p-value
(:func:`tau_p_value`) and the smallest p-value any order of ``n`` contenders can have (:func:`smallest_tau_p`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.stats

__all__ = ["kendall_tau", "smallest_tau_p", "tau_p_value"]


def _pair(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"kendall_tau: need two 1-D samples of the same length, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("kendall_tau: NaN has no order (a diverged result is +inf)")
    return x, y


def _defined(x: np.ndarray, y: np.ndarray) -> bool:
    return len(x) >= 2 and not (x == x[0]).all() and not (y == y[0]).all()


def kendall_tau(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of two paired samples (ties in either corrected for; ``+inf`` equals ``+inf``).

    ``scipy.stats.kendalltau(a, b, variant="b")`` with the inputs checked. 1: the same order; -1: reversed;
    NaN with fewer than two pairs or when one sample is all ties.
    """
    x, y = _pair(a, b)
    if not _defined(x, y):
        return math.nan
    return float(scipy.stats.kendalltau(x, y, variant="b")[0])


def tau_p_value(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """The two-sided p-value of :func:`kendall_tau`: the chance of a tau at least as far from 0 if the two orders
    were unrelated (SciPy's: exact without ties and for small samples, else its normal approximation); NaN where
    tau is."""
    x, y = _pair(a, b)
    if not _defined(x, y):
        return math.nan
    return float(scipy.stats.kendalltau(x, y, variant="b")[1])


def smallest_tau_p(n: int) -> float:
    """The smallest two-sided p-value Kendall's tau of ``n`` contenders can have (without ties): ``2 / n!``, the
    same or the reversed order being one of the ``n!`` orders each (NaN below 2). Above 0.05 (``n <= 4``) no
    ranking of that many contenders can show agreement at the 5 % level."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        return math.nan
    return min(1.0, 2.0 / math.factorial(n))
