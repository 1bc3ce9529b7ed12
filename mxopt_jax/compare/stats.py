"""Statistics of the optimizer study: Student t, paired tests, Holm's correction, ranks, bootstrap, profiles.

Pure NumPy and the standard library (no SciPy, no JAX), so a saved study can be re-analysed anywhere.

The study runs every contender (optimizer) on every problem with the *same* seeds: a seed fixes the
initialization and the order of the mini-batches, so two contenders' results on one seed form a pair. The
comparisons here are therefore paired by seed:

* :func:`paired_t`: Student's paired t-test of two contenders over the seeds;
* :func:`holm`: Holm's (1979) step-down correction of a family of p-values;
* :func:`significantly_better`: every pair of contenders on one problem, Holm-corrected;
* :func:`ranks`: ranks on one problem, monotone in the mean (the rule is quoted in full there);
* :func:`bootstrap_mean_ranks`: the mean rank over problems, its bootstrap interval and the probability of
  being ranked first (Efron's bootstrap over seeds, pairing kept);
* :func:`performance_ratios`, :func:`performance_profile`, :func:`profile_score`: performance profiles
  (Dolan & Moré 2002) as the AlgoPerf benchmark defines and scores them;
* :func:`t_quantile`, :func:`t_sf_two_sided`, :func:`ci_halfwidth`: Student's t distribution for integer
  degrees of freedom, in closed form.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = [
    "MIN_EFFECT",
    "BootstrapRanks",
    "PairedTest",
    "bootstrap_mean_ranks",
    "ci_halfwidth",
    "holm",
    "paired_t",
    "performance_profile",
    "performance_ratios",
    "profile_score",
    "ranks",
    "significantly_better",
    "t_quantile",
    "t_sf_two_sided",
]

#: Degrees of freedom beyond which Student's t is computed from the Cornish-Fisher expansion.
_CF_DF = 1000
#: Elements of the ``(replicates, pairs, seeds)`` differences computed at once by the bootstrap.
_CHUNK = 1 << 22


# --------------------------------------------------------------------------- Student's t
def _two_sided(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` (integer) degrees of freedom, exactly.

    Abramowitz & Stegun 26.7.3-4: with ``theta = atan(t / sqrt(df))``, a finite sum in ``cos(theta)``.
    """
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 1:
        if df == 1:
            return 2 * theta / math.pi
        term, total = math.cos(theta), math.cos(theta)
        for k in range(3, df - 1, 2):  # (2*4*...*(k-1)) / (1*3*...*k) cos^k
            term *= c2 * (k - 1) / k
            total += term
        return 2 / math.pi * (theta + s * total)
    term, total = 1.0, 1.0
    for k in range(2, df - 1, 2):  # (1*3*...*(k-1)) / (2*4*...*k) cos^k
        term *= c2 * (k - 1) / k
        total += term
    return s * total


def _cornish_fisher(z: float, df: int) -> float:
    """The Cornish-Fisher expansion of Student's t quantile around the normal quantile ``z`` (A&S 26.7.5)."""
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def _check_df(df: int) -> int:
    if isinstance(df, bool) or int(df) != df or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    return int(df)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (no SciPy).

    Exact (bisection on the closed-form distribution function of integer ``df``, Abramowitz & Stegun
    26.7.3-4) up to ``df = 1000``; beyond, the Cornish-Fisher expansion around the normal quantile ``z``
    (A&S 26.7.5, error below ``1e-9``):
    ``t = z + (z^3 + z) / (4 df) + (5 z^5 + 16 z^3 + 3 z) / (96 df^2) + (3 z^7 + 19 z^5 + 17 z^3 - 15 z)
    / (384 df^3)``. ``t_quantile(0.975, 4)`` is 2.776, ``t_quantile(0.975, 9)`` 2.262, and it tends to
    1.960 as ``df`` grows.

    Raises
    ------
    ValueError
        ``p`` outside (0, 1), or ``df`` not an integer >= 1.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    df = _check_df(df)
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    level = 2 * p - 1  # P(|T| <= t)
    if df > _CF_DF:
        return _cornish_fisher(statistics.NormalDist().inv_cdf(p), df)
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    lo, hi = 0.0, 1.0
    while _two_sided(hi, df) < level:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _two_sided(mid, df) < level:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


def _sf_cornish_fisher(t: float, df: int) -> float:
    """``P(|T| >= t)`` for ``t >= 0`` and ``df > 1000``: the ``z`` whose Cornish-Fisher quantile is ``t``
    (bisection; the expansion increases with ``z``), then the normal tail ``erfc(z / sqrt(2))``."""
    if math.isinf(t):
        return 0.0
    lo, hi = 0.0, max(t, 1.0)
    while _cornish_fisher(hi, df) < t:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _cornish_fisher(mid, df) < t:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return math.erfc(0.5 * (lo + hi) / math.sqrt(2))


def _t_sf_array(t: np.ndarray, df: int) -> np.ndarray:
    """``P(|T| >= |t|)`` elementwise (NaN stays NaN): ``1 -`` :func:`_two_sided`'s closed form, vectorized
    (the same sums), clipped to ``[0, 1]``; :func:`_sf_cornish_fisher` beyond ``df = 1000``."""
    a = np.abs(np.asarray(t, np.float64))
    if df > _CF_DF:
        out = np.full(a.shape, np.nan)
        ok = ~np.isnan(a)
        out[ok] = [_sf_cornish_fisher(float(x), df) for x in a[ok]]
        return out
    theta = np.arctan(a / math.sqrt(df))
    s, c = np.sin(theta), np.cos(theta)
    c2 = c**2
    if df == 1:
        cdf = 2 * theta / math.pi
    elif df % 2 == 1:
        term, total = c.copy(), c.copy()
        for k in range(3, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        cdf = 2 / math.pi * (theta + s * total)
    else:
        term, total = np.ones_like(a), np.ones_like(a)
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        cdf = s * total
    out = np.clip(1.0 - cdf, 0.0, 1.0)
    return np.where(np.isinf(a), 0.0, out)


def t_sf_two_sided(t: float, df: int) -> float:
    """Two-sided p-value of Student's t: ``P(|T| >= |t|)`` with ``df`` (integer) degrees of freedom.

    ``1 - P(|T| <= |t|)`` from the closed form of Abramowitz & Stegun 26.7.3-4 (the one :func:`t_quantile`
    inverts): with ``theta = atan(|t| / sqrt(df))``, ``c = cos(theta)``, ``s = sin(theta)``,

    * odd ``df``: ``P(|T| <= |t|) = (2 / pi) (theta + s (c + (2/3) c^3 + ... + (2*4*...*(df-3)) /
      (3*5*...*(df-2)) c^(df-2)))`` (``2 theta / pi`` for ``df = 1``);
    * even ``df``: ``P(|T| <= |t|) = s (1 + (1/2) c^2 + (1*3)/(2*4) c^4 + ... + (1*3*...*(df-3)) /
      (2*4*...*(df-2)) c^(df-2))``.

    Exact up to rounding (absolute error about ``1e-15``; the subtraction from 1 loses the relative accuracy
    of p-values below about ``1e-12``, which no test level here needs). Beyond ``df = 1000``, the inverse
    of :func:`t_quantile`'s Cornish-Fisher expansion and the normal tail. ``t = +-inf`` gives 0, ``t = 0``
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

    ``t_{(1 + level) / 2, n - 1} * s / sqrt(n)`` with ``s`` the sample standard deviation (``ddof=1``). NaN
    for fewer than two values; ``inf`` when a value is not finite.
    """
    v = np.asarray(values, np.float64).ravel()
    if len(v) < 2:
        return math.nan
    if not np.all(np.isfinite(v)):
        return math.inf
    return t_quantile((1 + level) / 2, len(v) - 1) * float(np.std(v, ddof=1)) / math.sqrt(len(v))


# --------------------------------------------------------------------------- paired comparison
class PairedTest(NamedTuple):
    """Result of :func:`paired_t`.

    Attributes
    ----------
    mean_difference : float
        Mean over seeds of ``a - b`` (negative: ``a`` is lower, i.e. better).
    t : float
        The t statistic ``mean_difference / (sd / sqrt(n))``.
    df : int
        Degrees of freedom, ``n - 1``.
    p : float
        Two-sided p-value ``P(|T| >= |t|)``.
    """

    mean_difference: float
    t: float
    df: int
    p: float


def _paired(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired t-test along the last axis of the differences ``d`` (``n >= 2`` seeds): mean, t and the
    two-sided p-value, with the zero-variance rule of :func:`paired_t`."""
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    sd = d.std(axis=-1, ddof=1)
    zero = sd == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    t = np.where(zero, np.where(mean == 0, 0.0, np.copysign(np.inf, mean)), t)
    p = _t_sf_array(t, n - 1)
    p = np.where(zero, np.where(mean == 0, 1.0, 0.0), p)
    return mean, t, p


def _vector(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    v = np.asarray(x, np.float64)
    if v.ndim != 1 or len(v) < 2:
        raise ValueError(
            f"{name} must be a 1-D array of at least 2 values (one per seed), got shape {v.shape}"
        )
    if not np.all(np.isfinite(v)):
        raise ValueError(
            f"{name} must be finite (a diverged run is handled by the ranking rule, not the test)"
        )
    return v


def paired_t(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> PairedTest:
    """Student's paired t-test of ``a`` against ``b``, two values per seed.

    The contenders of the study run on the same seeds (same initialization and mini-batches per seed), so
    ``a[k]`` and ``b[k]`` form a pair. With ``d = a - b`` over ``n`` seeds, ``dbar`` its mean and ``s_d``
    its sample standard deviation (``ddof = 1``): ``t = dbar / (s_d / sqrt(n))``, ``df = n - 1``, and the
    two-sided p-value ``p = P(|T_df| >= |t|)`` (:func:`t_sf_two_sided`) -- Student (1908), the paired form.

    Zero variance (``s_d = 0``: every pair differs by the same amount): ``p = 0`` and ``t = +-inf`` when
    that amount is nonzero, ``p = 1`` and ``t = 0`` when it is zero (identical vectors).

    Both vectors must be finite and of equal length ``n >= 2``. A non-finite value is a diverged run; the
    ranking rule (:func:`ranks`) handles it (such a contender ranks after every finite one), not the test.

    Raises
    ------
    ValueError
        ``a`` or ``b`` not 1-D, shorter than 2, not finite, or of different lengths.
    """
    va, vb = _vector(a, "a"), _vector(b, "b")
    if va.shape != vb.shape:
        raise ValueError(f"a and b must have the same length (paired by seed), got {len(va)} and {len(vb)}")
    mean, t, p = _paired((va - vb)[None, :])
    return PairedTest(float(mean[0]), float(t[0]), len(va) - 1, float(p[0]))


# --------------------------------------------------------------------------- Holm
def _holm(p: np.ndarray) -> np.ndarray:
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
    return _holm(p)


# --------------------------------------------------------------------------- significance and ranks
def _check_level(level: float, name: str = "level") -> float:
    try:
        x = float(level)
    except (TypeError, ValueError):
        x = math.nan
    if not 0 < x < 1:
        raise ValueError(f"{name} must be in (0, 1), got {level!r}")
    return x


def _check_effect(min_effect: float) -> float:
    try:
        x = float(min_effect)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"min_effect must be a finite number >= 0, got {min_effect!r}")
    return x


def _matrix(values: Sequence[Sequence[float]] | np.ndarray, name: str = "values") -> np.ndarray:
    v = np.asarray(values, np.float64)
    if v.ndim != 2 or v.shape[0] < 1 or v.shape[1] < 2:
        raise ValueError(
            f"{name} must be a (contenders, seeds) array with at least 1 contender and 2 seeds, "
            f"got shape {v.shape}"
        )
    return v


#: The smallest difference a rank separates, as a fraction of the seed-to-seed standard deviation: a paired
#: test shows differences far below the seed spread (two implementations of one algorithm that round
#: differently differ by 1e-7 on every seed, "significantly"); below a tenth of the spread a difference is
#: negligible for a reader and the ranks do not separate it. ``0`` tests significance alone.
MIN_EFFECT = 0.1


def _significance(
    values: np.ndarray, level: float, min_effect: float = MIN_EFFECT
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a batch ``values`` ``(B, C, S)``: ``better`` ``(B, C, C)`` (``[b, i, j]``: i significantly better
    than j), ``finite`` ``(B, C)`` (rows finite on every seed) and the means ``(B, C)`` (``inf`` where not
    finite). Holm's family: the pairs of finite contenders of each batch element. A significant pair counts
    only when its mean difference is at least ``min_effect`` times the pooled seed standard deviation of the
    two, ``sqrt((s_i^2 + s_j^2) / 2)``."""
    B, C, _ = values.shape
    finite = np.isfinite(values).all(axis=-1)
    v = np.where(finite[..., None], values, 0.0)
    means = np.where(finite, v.mean(axis=-1), np.inf)
    better = np.zeros((B, C, C), bool)
    if C < 2:
        return better, finite, means
    i, j = np.triu_indices(C, 1)
    mean_d, _, p = _paired(v[:, i, :] - v[:, j, :])
    p = np.where(finite[:, i] & finite[:, j], p, np.nan)
    var = v.var(axis=-1, ddof=1)
    spread = np.sqrt(0.5 * (var[:, i] + var[:, j]))
    relevant = np.abs(mean_d) >= min_effect * spread
    significant = (_holm(p) <= level) & relevant  # NaN: False
    better[:, i, j] = significant & (mean_d < 0)
    better[:, j, i] = significant & (mean_d > 0)
    return better, finite, means


def _ranks(values: np.ndarray, level: float, min_effect: float = MIN_EFFECT) -> np.ndarray:
    """:func:`ranks` of each element of the batch ``values`` ``(B, C, S)``: ``(B, C)`` integers."""
    better, finite, means = _significance(values, level, min_effect)
    raw = 1 + better.sum(axis=1)  # [b, i]: 1 + #{j: j significantly better than i}
    # [b, i, j]: j is finite and its mean is at most i's
    below = (means[:, None, :] <= means[:, :, None]) & finite[:, None, :]
    rank = np.where(below, raw[:, None, :], 0).max(axis=2)
    last = 1 + finite.sum(axis=1, keepdims=True)
    return np.where(finite, rank, last)


def significantly_better(
    values: Sequence[Sequence[float]] | np.ndarray, level: float = 0.05, min_effect: float = MIN_EFFECT
) -> np.ndarray:
    """Which contenders are significantly better than which on one problem (lower metric is better).

    ``values`` is ``(C, S)``: contender ``i``'s metric on seed ``k`` (the same seeds for every contender).
    Every pair ``i < j`` of contenders finite on every seed is tested by :func:`paired_t` (two-sided); the
    p-values of those ``F (F - 1) / 2`` tests (``F`` finite contenders) form one family, corrected by
    :func:`holm`. ``out[i, j]`` is True when the pair's adjusted p-value is at most ``level``, ``i``'s
    mean is the lower (``mean(values[i] - values[j]) < 0``) and the difference is at least ``min_effect`` times
    the pair's pooled seed standard deviation (:data:`MIN_EFFECT`: a negligible difference is no difference).
    A contender with a non-finite value (a diverged run) is in no test: its row and column are False.

    Returns
    -------
    numpy.ndarray
        ``(C, C)`` bool; never both ``out[i, j]`` and ``out[j, i]``; the diagonal is False.

    Raises
    ------
    ValueError
        ``values`` not ``(C, S)`` with ``C >= 1`` and ``S >= 2``; ``level`` outside (0, 1).
    """
    v = _matrix(values)
    level = _check_level(level)
    return _significance(v[None], level, _check_effect(min_effect))[0][0]


def ranks(
    values: Sequence[Sequence[float]] | np.ndarray, level: float = 0.05, min_effect: float = MIN_EFFECT
) -> list[int]:
    """Ranks of ``C`` contenders on one problem from their metric per seed (lower is better).

    ``values`` is ``(C, S)``: contender ``i``'s metric on seed ``k``; every contender ran the same seeds (same
    initialization and mini-batches), so contenders are compared pairwise by seed. The rule:

    1. Contenders finite on every seed are ordered by their mean over seeds (lower is better). A contender
       with a non-finite value on any seed (a diverged run) goes after every finite one.
    2. Every pair of finite contenders is compared by Student's paired t-test over the seeds (two-sided);
       the ``F (F - 1) / 2`` p-values (``F``: the number of finite contenders) are corrected together by
       Holm's step-down method. A pair differs significantly when its adjusted p-value is at most ``level``
       (0.05) and its mean difference is at least ``min_effect`` (0.1) times the pair's pooled seed standard
       deviation (smaller differences are negligible, however consistent); then the one with the lower mean is
       *significantly better* (:func:`significantly_better`).
    3. ``raw_i = 1 +`` the number of contenders significantly better than ``i``.
    4. A finite contender's rank is the largest ``raw_j`` over the finite contenders ``j`` whose mean is at
       most its own: the running maximum of ``raw`` along the mean order, contenders with equal means
       sharing it. Ranks therefore never decrease as the mean increases.
    5. A contender with a non-finite value ranks ``1 + F``: after every finite one, tied with the others like
       it.

    Consequences: a contender never outranks one with a lower mean, however unstable the latter's rivals or
    its own seeds (a contender at ``[3, 3, 3, 3, 30]``, mean 8.4, cannot rank before one at ``3.61 +- 0.09``);
    identical vectors tie; with clear, consistent differences (every pair significant) the ranks are
    ``1, 2, 3, ...``; permuting the contenders permutes the ranks. Ranks need not be consecutive (``1, 1,
    3``: the third is significantly worse than both; ``1, 2, 2``: the second and third are worse than the
    first and not distinguishable from each other). Few seeds give few significant differences, hence many
    shared ranks: a shared rank means "not shown to differ", not "equal".

    Returns
    -------
    list of int
        The rank of each contender, in ``values``' order.

    Raises
    ------
    ValueError
        ``values`` not ``(C, S)`` with ``C >= 1`` and ``S >= 2``; ``level`` outside (0, 1).
    """
    v = _matrix(values)
    level = _check_level(level)
    return [int(r) for r in _ranks(v[None], level, _check_effect(min_effect))[0]]


# --------------------------------------------------------------------------- bootstrap of the mean rank
class BootstrapRanks(NamedTuple):
    """Result of :func:`bootstrap_mean_ranks` (arrays in ``names``' order).

    Attributes
    ----------
    names : tuple of str
        The contenders.
    mean_rank : numpy.ndarray
        ``(C,)`` mean over problems of :func:`ranks` on the original data (NaN: ranked on no problem).
    low, high : numpy.ndarray
        ``(C,)`` the ``level`` percentile interval of the mean rank over the bootstrap replicates.
    p_first : numpy.ndarray
        ``(C,)`` fraction of replicates in which the contender has the lowest mean rank (ties split
        equally); sums to 1.
    replicates : numpy.ndarray
        ``(n_boot, C)`` the mean rank in each replicate.
    problems : numpy.ndarray
        ``(C,)`` the number of problems each contender was ranked on.
    level : float
        The interval's level.
    """

    names: tuple[str, ...]
    mean_rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_first: np.ndarray
    replicates: np.ndarray
    problems: np.ndarray
    level: float


def _check_names(names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str):
        raise ValueError("names must be a sequence of contender names, not one string")
    out = tuple(names)
    if not out:
        raise ValueError("names must not be empty")
    if not all(isinstance(n, str) for n in out):
        raise ValueError(f"names must be strings, got {out!r}")
    dup = sorted({n for n in out if out.count(n) > 1})
    if dup:
        raise ValueError(f"names must be unique, got duplicates {dup}")
    return out


def bootstrap_mean_ranks(
    per_problem: Mapping[str, np.ndarray],
    names: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    test_level: float = 0.05,
) -> BootstrapRanks:
    """Mean rank over problems, its bootstrap percentile interval, and the probability of ranking first.

    ``per_problem[problem]`` is a ``(C, S_p)`` array, row ``i`` contender ``names[i]``'s metric on the
    problem's ``S_p`` seeds (shared by all contenders). On each problem the contenders are ranked by
    :func:`ranks` (at ``test_level``); a contender's mean rank is the mean of its ranks over the problems.

    Efron's nonparametric bootstrap over seeds: a replicate draws, for each problem, ``S_p`` seed columns
    with replacement -- the *same* columns for every contender of the problem, so the pairing by seed is
    kept -- ranks the resampled problem and averages over problems. Over ``n_boot`` replicates:

    * ``low``, ``high``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each contender's
      replicate mean ranks (the percentile interval; ``numpy.quantile``'s linear interpolation);
    * ``p_first``: the fraction of replicates where the contender has the lowest mean rank, ``1 / k`` when
      ``k`` contenders share it.

    The seed columns are drawn by ``numpy.random.default_rng(seed)``, problem after problem in the
    mapping's order (all ``n_boot`` replicates of a problem at once): the result is reproducible from
    ``seed`` and the order of ``per_problem``.

    A contender missing from a problem has a row that is entirely NaN there: it is left out of that
    problem's ranking (the others are ranked among themselves) and its mean rank is over the problems where
    it ran (``problems`` counts them; a contender on no problem has NaN mean rank and interval and
    ``p_first`` 0). Any other non-finite value is a diverged run, ranked last by :func:`ranks` -- so a run
    that diverged on *every* seed must not be stored as all-NaN (store ``inf``), or it would read as
    missing. Mean ranks over different sets of problems are not directly comparable.

    The percentile interval describes how the ranking moves when the seeds are resampled; it is not a
    calibrated confidence interval and need not contain ``mean_rank``: ranks are discontinuous in the data
    (significance thresholds, the running maximum over the mean order), so their bootstrap distribution is
    typically shifted (towards larger ranks for contenders in the crowded middle).

    Time (vectorized: every pair of contenders of every replicate in a few array operations): 26
    contenders, 5 problems, 10 seeds, 1000 replicates take 0.4 to 0.9 s on one core (NumPy 2.4, measured);
    memory is bounded by chunks of replicates (:data:`_CHUNK` differences at a time).

    Raises
    ------
    ValueError
        ``per_problem`` empty, an array not ``(len(names), S_p)`` with ``S_p >= 2``, or every row missing;
        ``names`` empty, not strings or not unique; ``n_boot < 1``; ``level`` or ``test_level`` outside
        (0, 1).
    """
    names = _check_names(names)
    level = _check_level(level)
    test_level = _check_level(test_level, "test_level")
    if isinstance(n_boot, bool) or int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    n_boot = int(n_boot)
    if len(per_problem) == 0:
        raise ValueError("per_problem must hold at least one problem")
    C = len(names)
    data: dict[str, np.ndarray] = {}
    for prob, arr in per_problem.items():
        v = _matrix(arr, f"per_problem[{prob!r}]")
        if v.shape[0] != C:
            raise ValueError(f"per_problem[{prob!r}] must have {C} rows (one per name), got {v.shape[0]}")
        data[prob] = v
    rng = np.random.default_rng(seed)
    total = np.zeros(C)
    count: np.ndarray = np.zeros(C, np.int64)
    boot = np.zeros((n_boot, C))
    for v in data.values():
        present = ~np.isnan(v).all(axis=1)
        sub = v[present]
        S = sub.shape[1]
        idx = rng.integers(0, S, size=(n_boot, S))
        count[present] += 1
        if len(sub) == 0:
            continue
        total[present] += _ranks(sub[None], test_level)[0]
        pairs = max(len(sub) * (len(sub) - 1) // 2, 1)
        step = max(1, _CHUNK // (pairs * S))
        for start in range(0, n_boot, step):
            block = np.moveaxis(sub[:, idx[start : start + step]], 0, 1)  # (b, C_p, S)
            boot[start : start + step, present] += _ranks(block, test_level)
    ran = count > 0
    if not ran.any():
        raise ValueError("per_problem holds no result: every row is NaN (missing) on every problem")
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_rank = np.where(ran, total / count, np.nan)
        replicates = np.where(ran, boot / count, np.nan)
    low = np.full(C, np.nan)
    high = np.full(C, np.nan)
    if ran.any():
        q = np.quantile(replicates[:, ran], [(1 - level) / 2, (1 + level) / 2], axis=0)
        low[ran], high[ran] = q[0], q[1]
    best = np.min(np.where(ran, replicates, np.inf), axis=1, keepdims=True)
    first = ran & (replicates == best)
    p_first = (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
    return BootstrapRanks(names, mean_rank, low, high, p_first, replicates, count, level)


# --------------------------------------------------------------------------- performance profiles
def _check_tau_max(tau_max: float) -> float:
    try:
        x = float(tau_max)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x > 1):
        raise ValueError(f"tau_max must be a finite number > 1, got {tau_max!r}")
    return x


def performance_ratios(times: Mapping[str, Mapping[str, float]]) -> dict[str, np.ndarray]:
    """Each contender's performance ratio on each problem (Dolan & Moré 2002; AlgoPerf's scoring).

    ``times[problem][contender]`` is the time to reach the problem's target (``inf``: never reached). The
    ratio is ``r = t / min_c t_c``, the time over the fastest contender's on that problem (so 1 for the
    fastest); ``inf`` when the contender never reached the target, when no contender did, or when the
    contender is absent from ``times[problem]`` (as AlgoPerf, which scores a missing workload as not
    reached).

    Returns
    -------
    dict
        ``{contender: (P,) ratios}`` in the problems' order; contenders in order of first appearance.

    Raises
    ------
    ValueError
        ``times`` or one of its problems empty; a time NaN or not positive.
    """
    if len(times) == 0:
        raise ValueError("times must hold at least one problem")
    names: dict[str, None] = {}
    for prob, row in times.items():
        if len(row) == 0:
            raise ValueError(f"times[{prob!r}] must hold at least one contender")
        for c, t in row.items():
            if math.isnan(t) or t <= 0:
                raise ValueError(f"times[{prob!r}][{c!r}] must be positive or inf, got {t!r}")
            names.setdefault(c)
    out = {c: np.full(len(times), np.inf) for c in names}
    for p, row in enumerate(times.values()):
        fastest = min(float(t) for t in row.values())
        if math.isinf(fastest):
            continue
        for c, t in row.items():
            out[c][p] = float(t) / fastest  # inf / finite = inf
    return out


def performance_profile(
    times: Mapping[str, Mapping[str, float]], tau_max: float = 4.0, points: int = 301
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Performance profiles as AlgoPerf defines them (Dolan & Moré 2002; Dahl et al. 2023).

    With the ratios ``r_{c,p}`` of :func:`performance_ratios` over ``P`` problems,
    ``rho_c(tau) = #{p : r_{c,p} <= tau} / P``: the fraction of problems on which contender ``c`` reached
    the target within ``tau`` times the fastest contender's time. ``tau`` runs over a linear grid of
    ``points`` values from 1 to ``tau_max`` (AlgoPerf: linear scale, ``tau_max = 4``). A problem that no
    contender solved counts in ``P`` and lowers every profile.

    Returns
    -------
    taus : numpy.ndarray
        ``(points,)`` ``numpy.linspace(1, tau_max, points)``.
    rho : dict
        ``{contender: (points,) rho(taus)}``, non-decreasing step functions in [0, 1].

    Raises
    ------
    ValueError
        bad ``times`` (:func:`performance_ratios`), ``tau_max`` not a finite number > 1, ``points < 2``.
    """
    tau_max = _check_tau_max(tau_max)
    if isinstance(points, bool) or int(points) != points or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    ratios = performance_ratios(times)
    taus = np.linspace(1.0, tau_max, int(points))
    rho = {c: (r[None, :] <= taus[:, None]).mean(axis=1) for c, r in ratios.items()}
    return taus, rho


def profile_score(ratios: Sequence[float] | np.ndarray, tau_max: float = 4.0) -> float:
    """AlgoPerf's benchmark score of one contender: the normalized area under its performance profile.

    ``B = 1 / (tau_max - 1) * integral_1^tau_max rho(tau) dtau`` (linear ``tau``). ``rho`` is the step
    function of :func:`performance_profile`, so the integral is exact from the ratios themselves (no grid,
    no quantization): each problem with ratio ``r`` adds ``1/P`` to ``rho`` on ``[r, tau_max]``, hence
    ``B = mean_p max(0, tau_max - r_p) / (tau_max - 1)``. 1: fastest on every problem; ``(4 - 2) / 3`` at
    ratio 2 everywhere (``tau_max = 4``); 0: never within ``tau_max`` of the fastest. AlgoPerf integrates
    the same function with the trapezoid rule on its grid, which this value is the limit of.

    Parameters
    ----------
    ratios : array_like
        ``(P,)`` the contender's ratios, one per problem (:func:`performance_ratios`), each ``>= 1`` or
        ``inf``.
    tau_max : float
        The largest ratio that scores (AlgoPerf: 4).

    Raises
    ------
    ValueError
        ``ratios`` empty, not 1-D, NaN or below 1; ``tau_max`` not a finite number > 1.
    """
    tau_max = _check_tau_max(tau_max)
    r = np.asarray(ratios, np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"ratios must be a non-empty 1-D array, got shape {r.shape}")
    if np.any(np.isnan(r)) or np.any(r < 1):
        raise ValueError("ratios must be >= 1 (ratio to the fastest) or inf")
    return float(np.mean(np.clip(tau_max - r, 0.0, None)) / (tau_max - 1))
