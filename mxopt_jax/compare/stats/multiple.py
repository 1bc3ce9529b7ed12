"""Multiple testing: Holm's (1979) step-down correction of a family of p-values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm_adjusted(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis; NaN entries stay NaN and do not count in ``m``."""
    order = np.argsort(p, axis=-1, kind="stable")  # NaN last
    ps = np.take_along_axis(p, order, axis=-1)
    m = np.sum(~np.isnan(p), axis=-1, keepdims=True)
    factor = m - np.arange(p.shape[-1])
    adj = np.maximum.accumulate(np.minimum(1.0, factor * ps), axis=-1)
    adj = np.where(np.isnan(ps), np.nan, adj)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values of one family of ``m`` tests.

    With the p-values sorted, ``p_(1) <= ... <= p_(m)``, the adjusted values are
    ``p~_(k) = min(1, max_{j <= k} (m - j + 1) p_(j))``, returned in the input's order. Rejecting where
    ``p~ <= level`` is Holm's procedure: the family-wise error rate is at most ``level`` under any
    dependence between the tests. Adjusted values never decrease along the sorted p-values, are at least the
    raw ones and at most 1; equal p-values get equal adjusted values.

    NaN entries are not tests: they stay NaN and do not count in ``m`` (as R's ``p.adjust``).

    Raises
    ------
    ValueError
        ``pvalues`` empty, not 1-D, or holding a value outside [0, 1] (NaN allowed).
    """
    p = np.asarray(pvalues, np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"pvalues must be a non-empty 1-D array, got shape {p.shape}")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("pvalues must lie in [0, 1] (or be NaN)")
    return holm_adjusted(p)


def holm_together(families: Sequence[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Several families of p-values (each a 1-D array; NaN: no test) corrected as *one* Holm family: each
    family's adjusted p-values, in its order, and ``m``, the tests corrected together. A family's adjusted values
    are never below what its own correction gives."""
    raws = [np.asarray(f, np.float64).ravel() for f in families]
    flat = np.concatenate(raws) if raws else np.zeros(0)
    adj = holm_adjusted(flat) if len(flat) else flat
    out, start = [], 0
    for r in raws:
        out.append(adj[start : start + len(r)])
        start += len(r)
    return out, int(np.sum(~np.isnan(flat)))
