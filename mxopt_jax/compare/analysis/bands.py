"""The interval a figure draws around a mean over seeds: :func:`mean_band`, the tables' Student-t interval
(:func:`mxopt_jax.compare.stats.ci_halfwidth`) along an axis of seeds."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..selection import LEVEL
from ..stats.distributions import ci_halfwidth

__all__ = ["Band", "mean_band"]


class Band(NamedTuple):
    """The mean over seeds and the ends of its ``level`` Student-t interval; NaN wherever a seed is not
    finite (a diverged run breaks the mean)."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def mean_band(values: np.ndarray, axis: int, level: float = LEVEL) -> Band:
    """The :class:`Band` of ``values`` over ``axis`` (the seeds): the mean and the mean ± the half-width of
    :func:`~mxopt_jax.compare.stats.ci_halfwidth` at ``level`` (0 for one seed), NaN where a seed is not
    finite."""
    v = np.moveaxis(np.asarray(values, np.float64), axis, -1)
    ok = np.isfinite(v).all(axis=-1)
    flat = v.reshape(-1, v.shape[-1])
    half = np.array(
        [ci_halfwidth(row, level) if v.shape[-1] > 1 and np.isfinite(row).all() else 0.0 for row in flat]
    ).reshape(v.shape[:-1])
    mean = np.where(ok, np.where(np.isfinite(v), v, 0.0).mean(axis=-1), np.nan)
    half = np.where(ok, half, np.nan)
    return Band(mean, mean - half, mean + half)
