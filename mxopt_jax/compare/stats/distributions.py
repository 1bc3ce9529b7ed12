"""The null distributions the study's tests read: Student's t (SciPy's, the arguments checked), the exact
signed-rank distribution (ties and zeros included, computed here: :func:`mxopt_jax.compare.stats.paired.wilcoxon`
says why not SciPy's) with its normal approximation, and the sign-flip (randomization) distribution of a sum."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.stats

#: Elements of the exact signed-rank distributions (rows x support) computed at once.
_CHUNK = 1 << 22

#: Student's t distribution (``scipy.stats`` makes its distributions at import, which a type checker cannot see).
_STUDENT_T: Any = scipy.stats.t  # type: ignore[attr-defined]

#: The standard normal distribution (for :func:`signed_rank_normal_less`).
_NORMAL: Any = scipy.stats.norm  # type: ignore[attr-defined]


def _check_df(df: int) -> int:
    if isinstance(df, bool) or int(df) != df or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    return int(df)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom.

    ``scipy.stats.t.ppf(p, df)``, with the arguments checked: ``t_quantile(0.975, 4)`` is 2.776,
    ``t_quantile(0.975, 9)`` 2.262, and it tends to 1.960 as ``df`` grows.

    Raises
    ------
    ValueError
        ``p`` outside (0, 1), or ``df`` not an integer >= 1.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    return float(_STUDENT_T.ppf(p, _check_df(df)))


def _t_sf_array(t: np.ndarray, df: int) -> np.ndarray:
    """``P(|T| >= |t|)`` elementwise (NaN stays NaN): twice ``scipy.stats.t.sf(|t|, df)``, which keeps its
    relative accuracy in the far tail (no subtraction from 1)."""
    return np.minimum(2.0 * _STUDENT_T.sf(np.abs(np.asarray(t, np.float64)), df), 1.0)


def t_sf_two_sided(t: float, df: int) -> float:
    """Two-sided p-value of Student's t: ``P(|T| >= |t|)`` with ``df`` (integer) degrees of freedom.

    ``2 * scipy.stats.t.sf(|t|, df)`` (at most 1), with the arguments checked. ``t = +-inf`` gives 0, ``t = 0``
    gives 1.

    Raises
    ------
    ValueError
        ``t`` is NaN, or ``df`` is not an integer >= 1.
    """
    df = _check_df(df)
    if math.isnan(t):
        raise ValueError("t must not be NaN")
    return float(_t_sf_array(np.asarray([float(t)]), df)[0])


def ci_halfwidth(values: Sequence[float] | np.ndarray, level: float = 0.95) -> float:
    """Half-width of the ``level`` Student-t confidence interval of the mean of ``values``.

    ``t_{(1 + level) / 2, n - 1} * s / sqrt(n)`` (:func:`t_quantile`) with ``s`` the sample standard deviation
    (``ddof=1``). NaN for fewer than two values; ``inf`` when a value is not finite.
    """
    v = np.asarray(values, np.float64).ravel()
    if len(v) < 2:
        return math.nan
    if not np.all(np.isfinite(v)):
        return math.inf
    return t_quantile((1 + level) / 2, len(v) - 1) * float(np.std(v, ddof=1)) / math.sqrt(len(v))


#: Seeds (or studies) up to which :func:`sign_flip_tails` enumerates every sign pattern (``2^16`` patterns);
#: beyond, it draws :data:`_FLIP_DRAWS` random patterns (Monte Carlo, the observed one included).
_FLIP_EXACT = 16

#: Random sign patterns drawn beyond :data:`_FLIP_EXACT` (smallest p-value ``1 / 2^16``), from
#: ``numpy.random.default_rng(_FLIP_SEED)``: the same patterns every call, so a result is reproducible.
_FLIP_DRAWS = (1 << 16) - 1

_FLIP_SEED = 0


@functools.lru_cache(maxsize=32)
def _flip_patterns(n: int) -> np.ndarray:
    """``(K, n)`` sign patterns (+-1): all ``2^n`` for ``n <= _FLIP_EXACT`` (the first all +1), else the
    identity followed by ``_FLIP_DRAWS`` random ones."""
    if n <= _FLIP_EXACT:
        k = np.arange(1 << n)[:, None]
        return np.where((k >> np.arange(n)[None, :]) & 1, -1.0, 1.0)
    rng = np.random.default_rng(_FLIP_SEED)
    draws = np.where(rng.random((_FLIP_DRAWS, n)) < 0.5, -1.0, 1.0)
    return np.concatenate([np.ones((1, n)), draws])


def sign_flip_tails(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sign-flip (randomization) test of the mean of each row of ``d`` ``(rows, n)``, finite: ``(p_less,
    p_greater)``, ``P(S <= s)`` and ``P(S >= s)`` with ``s = sum(d)`` and ``S = sum(eps d)`` over sign patterns
    ``eps`` (each a fair coin under the null: the two contenders exchangeable on every seed). Exact (every
    pattern) up to :data:`_FLIP_EXACT` values per row; beyond, ``(1 + #drawn patterns as extreme) / (1 +
    draws)`` over :data:`_FLIP_DRAWS` random patterns, a valid p-value as well (Monte Carlo with the observed
    pattern counted). Sums equal up to rounding (a relative ``1e-9`` of ``sum |d|``) count as equal, so ties and
    zeros are handled exactly: a zero difference adds nothing to any pattern, and the smallest p-value is
    ``2^-n`` per tail."""
    rows, n = d.shape
    p_less, p_greater = np.ones(rows), np.ones(rows)
    if rows == 0:
        return p_less, p_greater
    eps = _flip_patterns(n)
    K = len(eps)
    step = max(1, _CHUNK // K)
    for start in range(0, rows, step):
        x = d[start : start + step]
        sums = eps @ x.T  # (K, r); row 0 is the observed sum
        obs = x.sum(axis=-1)
        tol = 1e-9 * np.abs(x).sum(axis=-1)
        less = (sums <= (obs + tol)[None, :]).sum(axis=0)
        greater = (sums >= (obs - tol)[None, :]).sum(axis=0)
        p_less[start : start + step] = np.minimum(1.0, less / K)
        p_greater[start : start + step] = np.minimum(1.0, greater / K)
    return p_less, p_greater


@functools.lru_cache(maxsize=64)
def signed_rank_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(P(T <= t), P(T >= t))`` for ``t = 0 .. n(n+1)/2``: the exact null distribution of Wilcoxon's ``T``
    (the sum of the ranks ``1..n`` carrying a + sign, each sign a fair coin) without ties or zeros; by the
    recursion ``P_k(t) = (P_{k-1}(t) + P_{k-1}(t - k)) / 2``."""
    top = n * (n + 1) // 2
    prob = np.zeros(top + 1)
    prob[0] = 1.0
    for k in range(1, n + 1):
        shifted = np.zeros_like(prob)
        shifted[k:] = prob[:-k]
        prob = 0.5 * (prob + shifted)
    cdf = np.cumsum(prob)
    sf = np.cumsum(prob[::-1])[::-1]
    return np.minimum(cdf, 1.0), np.minimum(sf, 1.0)


def signed_rank_tails(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact signed-rank test of each row of ``d`` ``(rows, n)`` (finite or +-inf, no NaN): ``(w2, p_less,
    p_greater)`` with ``w2`` twice the observed ``W+``, ``p_less = P(W+ <= w+)`` and ``p_greater = P(W+ >=
    w+)`` under the null (each nonzero difference's sign a fair coin, the ranks fixed).

    Ranks are midranks of ``|d|`` over all ``n`` seeds (Pratt 1959: zeros are ranked, never signed), so twice
    a rank is an integer and the null distribution of ``2 W+`` is computed exactly on the integers: the
    textbook table for rows without ties or zeros (:func:`signed_rank_table`), else the same recursion with each
    row's own (doubled) ranks, vectorized over rows. ``inf`` (a diverged seed on one side) is the largest
    difference."""
    rows, n = d.shape
    a = np.abs(d)
    nonzero = a > 0
    less = (a[:, None, :] < a[:, :, None]).sum(axis=-1)  # [r, k]: #{l: |d_l| < |d_k|}
    eq = (a[:, None, :] == a[:, :, None]).sum(axis=-1)  # [r, k]: #{l: |d_l| == |d_k|} (k included)
    w = np.where(nonzero, 2 * less + eq + 1, 0)  # twice the midrank; 0 for a zero difference
    w2 = np.where(d > 0, w, 0).sum(axis=-1)
    p_less, p_greater = np.empty(rows), np.empty(rows)
    standard = nonzero.all(axis=-1) & (eq == 1).all(axis=-1)
    if standard.any():
        cdf, sf = signed_rank_table(n)
        t = w2[standard] // 2
        p_less[standard], p_greater[standard] = cdf[t], sf[t]
    rest = np.flatnonzero(~standard)
    if len(rest):
        top = int(w[rest].sum(axis=-1).max())
        step = max(1, _CHUNK // ((top + 1) * n))
        cols = np.arange(top + 1)
        for start in range(0, len(rest), step):
            r = rest[start : start + step]
            prob = np.zeros((len(r), top + 1))
            prob[:, 0] = 1.0
            for k in range(n):
                wk = w[r, k]
                if not wk.any():
                    continue
                src = cols[None, :] - wk[:, None]
                shifted = np.where(src >= 0, np.take_along_axis(prob, np.maximum(src, 0), axis=1), 0.0)
                prob = np.where(wk[:, None] > 0, 0.5 * (prob + shifted), prob)
            obs = w2[r][:, None]
            p_less[r] = np.minimum(np.where(cols[None, :] <= obs, prob, 0.0).sum(axis=1), 1.0)
            p_greater[r] = np.minimum(np.where(cols[None, :] >= obs, prob, 0.0).sum(axis=1), 1.0)
    return w2, p_less, p_greater


def signed_rank_normal_less(d: np.ndarray) -> np.ndarray:
    """``P(W+ <= w+)`` of the signed-rank test of every row of ``d`` (``(..., n)``: small where the differences
    are mostly negative) by the normal approximation, with a continuity correction, Pratt's zeros (ranked, never
    signed) and midranks for ties (``scipy.stats.rankdata``): ``W+`` has mean half the nonzero ranks' sum and
    variance a quarter of their squares' sum under the null. For estimates over many resampled tables of many
    seeds (:func:`mxopt_jax.compare.analysis.verdict.narrowing_seeds`), where the exact distribution
    (:func:`wilcoxon`) costs too much; no claim reads it. 1 where every difference is zero."""
    d = np.asarray(d, np.float64)
    a = np.abs(d)
    ranks = scipy.stats.rankdata(a, axis=-1)
    nonzero = a > 0
    w_plus = np.where(d > 0, ranks, 0.0).sum(axis=-1)
    mean = np.where(nonzero, ranks, 0.0).sum(axis=-1) / 2
    sd = np.sqrt(np.where(nonzero, ranks**2, 0.0).sum(axis=-1) / 4)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (w_plus - mean + 0.5) / sd
    return np.asarray(np.where(sd > 0, _NORMAL.cdf(z), 1.0), np.float64)
