"""Statistics of the optimizer study: Student t, paired tests, Holm's correction, what a table may claim,
the overall ranking, profiles.

NumPy and SciPy (no JAX), so a saved study can be re-analysed without the study's programs: Student's t
distribution is SciPy's (``scipy.stats.t``); the exact signed-rank test is written here (:func:`wilcoxon`
says why not SciPy's). Every function here reads *lower is better*; a metric where higher is better is
multiplied by -1 before (:attr:`mxopt_jax.compare.problems.base.Problem.sign`, in :mod:`mxopt_jax.compare.protocol`).

The study runs every contender (optimizer) on every problem with the *same* seeds: a seed fixes the
initialization and the order of the mini-batches, so two contenders' results on one seed form a pair. The
comparisons here are therefore paired by seed:

* :func:`wilcoxon`: Wilcoxon's signed-rank test, exact (ties and zeros included), the default;
  :func:`paired_t`: Student's paired t statistic with its exact sign-flip p-value;
* :func:`holm`: Holm's (1979) step-down correction of a family of p-values;
* :func:`compare`: every pair of contenders of one table, Holm-corrected, rounding twins never separated, and
  what the table may print: the compact letter display (:func:`letters`, Piepho 2004) and the simultaneous
  rank sets; :func:`significantly_better` and :func:`ranks` read it; :func:`min_seeds` says how many seeds a
  family needs;
* :func:`bootstrap_mean_ranks`, :func:`bootstrap_problems`: the mean rank over problems, its bootstrap interval
  over problems and the probability of being ranked first, the tests' decisions kept as they are;
* :func:`performance_ratios`, :func:`performance_profile`, :func:`profile_score`: performance profiles
  (Dolan & Moré 2002) as the AlgoPerf benchmark defines and scores them;
* :func:`t_quantile`, :func:`t_sf_two_sided`, :func:`ci_halfwidth`: Student's t distribution for integer
  degrees of freedom (``scipy.stats.t``, the arguments checked).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.stats

__all__ = [
    "ROUNDING_RTOL",
    "TEST",
    "TESTS",
    "BootstrapRanks",
    "Comparison",
    "DivergenceComparison",
    "Effect",
    "PairedTest",
    "SearchComparison",
    "SignedRankTest",
    "bootstrap_mean_ranks",
    "bootstrap_problems",
    "ci_halfwidth",
    "compare",
    "compare_divergence",
    "compare_searches",
    "differences",
    "effect",
    "holm",
    "holm_family",
    "letters",
    "min_seeds",
    "most_entries",
    "paired_t",
    "paired_t_rows",
    "performance_profile",
    "performance_ratios",
    "profile_score",
    "ranks",
    "signed_rank_normal_less",
    "significantly_better",
    "smallest_p",
    "t_quantile",
    "t_sf_two_sided",
    "wilcoxon",
]

#: Elements of the exact signed-rank distributions (rows x support) computed at once.
_CHUNK = 1 << 22
#: Student's t distribution (``scipy.stats`` makes its distributions at import, which a type checker cannot see).
_STUDENT_T: Any = scipy.stats.t  # type: ignore[attr-defined]
#: The standard normal distribution (for :func:`signed_rank_normal_less`).
_NORMAL: Any = scipy.stats.norm  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- Student's t
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
        Two-sided p-value of the sign-flip distribution of the statistic (:func:`paired_t`).
    """

    mean_difference: float
    t: float
    df: int
    p: float


def _t_statistic(d: np.ndarray) -> np.ndarray:
    """Student's paired t of every row of the finite differences ``d`` (``+-inf`` for zero variance, 0 for a
    row of zeros)."""
    n = d.shape[-1]
    mean, sd = d.mean(axis=-1), d.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    return np.where(sd == 0, np.where(mean == 0, 0.0, np.copysign(np.inf, mean)), t)


def paired_t_rows(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Student's paired t statistic of every row of the differences ``d`` (``(..., n)``, ``n >= 2`` finite values
    along the last axis) with its sign-flip p-value: ``(mean, t, p)``, each of ``d``'s shape less its last axis,
    ``p`` two-sided from :func:`_sign_flip_tails` (:func:`paired_t`, which tests one pair of vectors through
    it): zero variance gives ``t = +-inf`` (or 0 for identical rows) and ``p = 2 / 2^n`` (or 1), never 0. No
    checks: the callers hold finite differences."""
    d = np.asarray(d, np.float64)
    n = d.shape[-1]
    mean, t = d.mean(axis=-1), _t_statistic(d)
    flat = d.reshape(-1, n)
    pl, pg = _sign_flip_tails(flat)
    p = np.minimum(1.0, 2 * np.minimum(pl, pg)).reshape(d.shape[:-1])
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


#: Seeds (or studies) up to which :func:`_sign_flip_tails` enumerates every sign pattern (``2^16`` patterns);
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


def _sign_flip_tails(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def paired_t(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> PairedTest:
    """Student's paired t statistic of ``a`` against ``b``, two values per seed, with the exact sign-flip
    p-value.

    The contenders of the study run on the same seeds (same initialization and mini-batches per seed), so
    ``a[k]`` and ``b[k]`` form a pair. With ``d = a - b`` over ``n`` seeds, ``dbar`` its mean and ``s_d`` its
    sample standard deviation (``ddof = 1``): ``t = dbar / (s_d / sqrt(n))``, ``df = n - 1`` (Student 1908, the
    paired form). The p-value is *not* read from Student's t distribution: it is the two-sided sign-flip
    (randomization) p-value of the same statistic, ``min(1, 2 min(P(S <= s), P(S >= s)))`` with ``s = sum(d)``
    and ``S`` the sum under every pattern of signs (Fisher 1935; ``|t|`` is an increasing function of ``|s|``
    over the patterns, whose sum of squares is fixed). Exact up to 16 seeds (every one of the ``2^n``
    patterns), 65,535 random patterns beyond (the observed one counted: still a valid p-value). So the test
    holds its level whatever the distribution of the differences, a discrete metric and ties included, and a
    near-zero spread gives no certainty: the smallest p-value is ``2 / 2^n`` (0.5 on 2 seeds), as for the
    signed-rank test. Student's own p-value made ``s_d = 0`` (every pair differing by the same amount, as on a
    discrete metric) ``p = 0``: 67 % of null tables of a discrete metric claimed a difference at 2 seeds.

    Zero variance: ``t = +-inf`` when every pair differs by the same nonzero amount (``p = 2 / 2^n``), ``t = 0``
    and ``p = 1`` when the vectors are identical.

    Both vectors must be finite and of equal length ``n >= 2``. A non-finite value is a diverged run, which
    the t statistic cannot weigh: :func:`compare` tests a pair with a diverged seed by the signed-rank test
    (:func:`wilcoxon`), where it is the worst value on its seed. One seed far off inflates ``s_d`` and can hide a
    consistent difference; the tables' default test is the signed-rank test for that reason.

    Raises
    ------
    ValueError
        ``a`` or ``b`` not 1-D, shorter than 2, not finite, or of different lengths.
    """
    va, vb = _vector(a, "a"), _vector(b, "b")
    if va.shape != vb.shape:
        raise ValueError(f"a and b must have the same length (paired by seed), got {len(va)} and {len(vb)}")
    mean, t, p = paired_t_rows((va - vb)[None, :])
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


# --------------------------------------------------------------------------- the signed-rank test
class SignedRankTest(NamedTuple):
    """Result of :func:`wilcoxon`.

    Attributes
    ----------
    w_plus : float
        The sum of the (mid)ranks of ``|a - b|`` over the seeds where ``a - b > 0`` (Pratt's ranking: the
        zero differences are ranked with the others, never signed).
    expected : float
        ``w_plus``'s mean under the null: half the sum of the ranks of the nonzero differences.
    p : float
        Two-sided exact p-value, ``min(1, 2 min(P(W+ <= w_plus), P(W+ >= w_plus)))`` under the sign-flip
        distribution given the ranks (ties and zeros included).
    n : int
        Seeds (pairs).
    zeros : int
        Seeds where ``a == b`` (or both diverged).
    """

    w_plus: float
    expected: float
    p: float
    n: int
    zeros: int


@functools.lru_cache(maxsize=64)
def _standard_tails(n: int) -> tuple[np.ndarray, np.ndarray]:
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


def _signed_rank_tails(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact signed-rank test of each row of ``d`` ``(rows, n)`` (finite or +-inf, no NaN): ``(w2, p_less,
    p_greater)`` with ``w2`` twice the observed ``W+``, ``p_less = P(W+ <= w+)`` and ``p_greater = P(W+ >=
    w+)`` under the null (each nonzero difference's sign a fair coin, the ranks fixed).

    Ranks are midranks of ``|d|`` over all ``n`` seeds (Pratt 1959: zeros are ranked, never signed), so twice
    a rank is an integer and the null distribution of ``2 W+`` is computed exactly on the integers: the
    textbook table for rows without ties or zeros (:func:`_standard_tails`), else the same recursion with each
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
        cdf, sf = _standard_tails(n)
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


def differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` seed by seed (any shapes that broadcast), a seed where both are the same infinity (both
    diverged) counting as 0: what every paired test here reads."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both = np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))
    with np.errstate(invalid="ignore"):
        return np.where(both, 0.0, a - b)


# Why not scipy.stats.wilcoxon: its method="exact" reads the table of the signed-rank distribution without ties
# or zeros, so with a tie or a zero difference it is silently wrong (d = [1, -1, 2, 2, 0, 3, 3, 3, -0.5, 4],
# zero_method="pratt": 0.0371 where the exact p-value, every one of the 2^10 sign patterns counted, is 0.03125;
# SciPy 1.17.1). Its permutation method (method=scipy.stats.PermutationMethod(), which method="auto" picks for
# such small tied samples) is exact but enumerates the 2^n sign patterns: on 10 seeds with ties it took 1-2 s for
# one pair where _signed_rank_tails took about 100 us per pair of a batch (1e4 x), on 15 seeds about 40 s against
# 0.1-0.4 ms (1e5 x); a table tests every pair of its contenders on every problem. Measured by
# benchmarks/signed_rank_speed.py on 2 shared CPU cores (benchmarks/RESULTS.md). tests/app/test_stats.py holds
# this test to SciPy's permutation test on small tied cases and to method="exact" where that is right (no ties,
# no zeros).
def wilcoxon(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, margin: float = 0.0
) -> SignedRankTest:
    """Wilcoxon's (1945) signed-rank test of ``a`` against ``b``, paired by seed, exact.

    With ``d = a - b`` per seed, the ``|d|`` are ranked (midranks for ties; zeros ranked too, Pratt 1959) and
    ``W+`` is the sum of the ranks of the positive ``d``. Under the null (``a`` and ``b`` exchangeable on every
    seed, so each nonzero ``d``'s sign is a fair coin given the ranks), ``W+``'s distribution is computed
    exactly (all ``2^n`` sign patterns, by recursion on the integer doubled ranks): no normal approximation,
    ties and zeros included, so the test holds its level at any number of seeds. It reads ranks only, so one
    seed far off moves ``W+`` by at most its rank: worse on every seed by 20 standard deviations with one seed
    in five far off, ``p = 2 / 2^n`` (0.0625 at 5 seeds, 0.002 at 10), where Student's paired t gives 0.29
    (the far seed inflates its variance).

    A non-finite value is a diverged run: ``+inf``, the worst (largest) value on its seed, so ``d = +-inf`` is
    the largest difference; a seed where both diverged is a zero difference. ``margin >= 0``: the one-sided
    tails test ``d + margin`` (is ``a`` lower by more than ``margin``?) and ``d - margin`` (is ``b``?), and
    ``p = min(1, 2 min(P_less(d + margin), P_greater(d - margin)))``; ``margin = 0`` is the plain test.

    Power: the smallest two-sided p on ``n`` seeds is ``2 / 2^n`` (0.0625 at 5 seeds, 0.00195 at 10, 1.9e-6 at
    20): a family of ``m`` tests corrected by Holm can reject only when ``2 / 2^n <= level / m``
    (:func:`min_seeds`).

    Raises
    ------
    ValueError
        ``a`` or ``b`` not 1-D, shorter than 2, holding NaN, or of different lengths; ``margin`` negative or not
        finite.
    """
    va, vb = _paired_vectors(a, b)
    margin = _check_margin(margin)
    d = differences(va, vb)[None, :]
    w2, pl, pg = _signed_rank_tails(d)
    if margin:
        pl = _signed_rank_tails(d + margin)[1]
        pg = _signed_rank_tails(d - margin)[2]
    a_abs = np.abs(d[0])
    ranks = (a_abs[None, :] < a_abs[:, None]).sum(-1) + ((a_abs[None, :] == a_abs[:, None]).sum(-1) + 1) / 2
    expected = float(ranks[a_abs > 0].sum() / 2)
    p = float(min(1.0, 2 * min(pl[0], pg[0])))
    return SignedRankTest(float(w2[0]) / 2, expected, p, len(va), int((a_abs == 0).sum()))


def _paired_vectors(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Two paired 1-D vectors of at least 2 values, no NaN; ``+-inf`` become ``+inf`` (diverged: the worst)."""
    out = []
    for x, name in ((a, "a"), (b, "b")):
        v = np.asarray(x, np.float64)
        if v.ndim != 1 or len(v) < 2:
            raise ValueError(
                f"{name} must be a 1-D array of at least 2 values (one per seed), got shape {v.shape}"
            )
        if np.isnan(v).any():
            raise ValueError(
                f"{name} must not hold NaN (a diverged run is +inf, the worst value on its seed)"
            )
        out.append(np.where(np.isfinite(v), v, np.inf))
    if out[0].shape != out[1].shape:
        raise ValueError(
            f"a and b must have the same length (paired by seed), got {len(out[0])} and {len(out[1])}"
        )
    return out[0], out[1]


# --------------------------------------------------------------------------- the tests of a table
#: The paired tests a table can use: ``"wilcoxon"`` (the default: :func:`wilcoxon`, exact, robust to a seed far
#: off) and ``"t"`` (Student's paired t, :func:`paired_t`: more power with few seeds and many pairs, but one
#: seed far off can hide a difference; a pair with a diverged seed is compared by the signed-rank test).
TESTS = ("wilcoxon", "t")
#: The default test.
TEST = "wilcoxon"
#: Rounding tolerance, relative to the metric's magnitude, applied as a margin seed by seed: a paired difference
#: within ``ROUNDING_RTOL * max(|a|, |b|)`` is no difference (a zero on that seed, which the tests rank but
#: never sign), and two contenders within it on *every* seed are rounding twins ("equal"), never separated.
#: float32 carries about 7 significant digits, and two implementations of one update that round differently
#: drift apart over training: adam and optax.adam end 2e-6 to 4e-6 apart (relative) on every seed of logreg
#: after 200 steps, always the same way, which a paired test calls significant. 1e-4 leaves room for longer runs
#: and stays below the 4 significant digits the tables print: a difference the tables cannot show is never
#: claimed (a gate on every seed let 0.5-0.9e-4 on 15 seeds and 1.2e-4 on one through at p_adj = 3e-5).
ROUNDING_RTOL = 1e-4


def _check_level(level: float, name: str = "level") -> float:
    try:
        x = float(level)
    except (TypeError, ValueError):
        x = math.nan
    if not 0 < x < 1:
        raise ValueError(f"{name} must be in (0, 1), got {level!r}")
    return x


def _check_margin(margin: float, name: str = "margin") -> float:
    try:
        x = float(margin)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"{name} must be a finite number >= 0 (in the metric's units), got {margin!r}")
    return x


def _check_test(test: str) -> str:
    if test not in TESTS:
        raise ValueError(f"test must be one of {list(TESTS)}, got {test!r}")
    return test


def _check_rtol(rtol: float) -> float:
    try:
        x = float(rtol)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and 0 <= x < 1):
        raise ValueError(f"rtol must be a number in [0, 1), got {rtol!r}")
    return x


def _matrix(values: Sequence[Sequence[float]] | np.ndarray, name: str = "values") -> np.ndarray:
    v = np.asarray(values, np.float64)
    if v.ndim != 2 or v.shape[0] < 1 or v.shape[1] < 2:
        raise ValueError(
            f"{name} must be a (contenders, seeds) array with at least 1 contender and 2 seeds, "
            f"got shape {v.shape}"
        )
    return v


def _pair_tails(d: np.ndarray, test: str, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values of every row of ``d`` ``(rows, n)``: ``p_less`` (the first is lower by more than
    ``margin``) and ``p_greater`` (the second is). ``test == "t"``: the sign-flip test of the mean
    (:func:`_sign_flip_tails`, :func:`paired_t`'s p-value) on the rows with every value finite; every other row
    the exact signed-rank test (:func:`_signed_rank_tails`)."""
    rows = d.shape[0]
    p_less, p_greater = np.ones(rows), np.ones(rows)
    if rows == 0:
        return p_less, p_greater
    use_t = np.isfinite(d).all(axis=-1) if test == "t" else np.zeros(rows, bool)
    if use_t.any():
        p_less[use_t] = _sign_flip_tails(d[use_t] + margin)[0]
        p_greater[use_t] = _sign_flip_tails(d[use_t] - margin)[1]
    rank = ~use_t
    if rank.any():
        if margin:
            p_less[rank] = _signed_rank_tails(d[rank] + margin)[1]
            p_greater[rank] = _signed_rank_tails(d[rank] - margin)[2]
        else:
            _, p_less[rank], p_greater[rank] = _signed_rank_tails(d[rank])
    return p_less, p_greater


def _rounded(vi: np.ndarray, vj: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """The paired differences ``vi - vj`` (lower is better, ``+inf`` diverged; :func:`differences`) with the
    rounding margin applied seed by seed: a difference within ``rtol * max(|vi|, |vj|)`` is no difference (a
    zero, which the tests rank but never sign). And ``twins``: every seed's difference within it (the pair is
    rounding twins, never separated). Both over the last axis (seeds)."""
    d = differences(vi, vj)
    finite = np.isfinite(vi) & np.isfinite(vj)
    tol = np.where(finite, rtol * np.maximum(np.abs(vi), np.abs(vj)), 0.0)
    within = np.abs(d) <= tol
    return np.where(within, 0.0, d), within.all(axis=-1)


def _w_plus(d: np.ndarray) -> np.ndarray:
    """Wilcoxon's ``W+`` of every row of ``d`` (``(..., n)``): the sum of the midranks of ``|d|`` (Pratt's
    ranking, :func:`wilcoxon`) over the positive differences."""
    a = np.abs(d)
    less = (a[..., None, :] < a[..., :, None]).sum(axis=-1)
    eq = (a[..., None, :] == a[..., :, None]).sum(axis=-1)
    w = np.where(a > 0, 2 * less + eq + 1, 0)
    return np.asarray(np.where(d > 0, w, 0).sum(axis=-1) / 2.0, np.float64)


class _PairTests(NamedTuple):
    """The raw tests of a batch of tables' pairs ``(B, P)`` (pairs in ``numpy.triu_indices`` order)."""

    p: np.ndarray  # two-sided p-value; NaN where the pair is not tested (a row not present)
    lower: np.ndarray  # the first of the pair is the better one (its one-sided p-value is the smaller)
    higher: np.ndarray  # the second is
    twins: np.ndarray  # rounding twins (p = 1)
    stat: np.ndarray  # the statistic of first - second (W+, or Student's t); NaN where not tested
    stat_reversed: np.ndarray  # of second - first


def _pair_tests(
    values: np.ndarray, present: np.ndarray, test: str, margin: float | np.ndarray, rtol: float
) -> _PairTests:
    """Every pair of a batch of tables ``values`` ``(B, C, S)`` tested, before any correction (:func:`_decide`)."""
    B, C, S = values.shape
    v = np.where(np.isfinite(values), values, np.inf)
    i, j = np.triu_indices(C, 1)
    d, twins = _rounded(v[:, i], v[:, j], rtol)  # (B, P, S), (B, P)
    tested = present[:, i] & present[:, j]
    P = len(i)
    margins = np.broadcast_to(np.asarray(margin, np.float64), (B,))
    p_less, p_greater = np.ones((B, P)), np.ones((B, P))
    for m in np.unique(margins) if P else ():
        rows = margins == m
        pl, pg = _pair_tails(d[rows].reshape(-1, S), test, float(m))
        p_less[rows], p_greater[rows] = pl.reshape(-1, P), pg.reshape(-1, P)
    p = np.minimum(1.0, 2 * np.minimum(p_less, p_greater))
    p = np.where(twins, 1.0, p)
    p = np.where(tested, p, np.nan)
    stat = _w_plus(d)  # (B, P); W+ of the reversed pair is the rank total minus it
    stat_ji = _w_plus(np.abs(d)) - stat  # the ranks of the nonzero differences, less W+
    if test == "t" and P:
        use_t = np.isfinite(d).all(axis=-1)
        if use_t.any():
            t = _t_statistic(d[use_t])
            stat[use_t], stat_ji[use_t] = t, -t
    return _PairTests(
        p,
        p_less < p_greater,
        p_greater < p_less,
        twins & tested,
        np.where(tested, stat, np.nan),
        np.where(tested, stat_ji, np.nan),
    )


def _decide(
    values: np.ndarray,
    present: np.ndarray,
    level: float,
    test: str,
    margin: float | np.ndarray,
    rtol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tests of a batch of tables ``values`` ``(B, C, S)`` (lower is better; non-finite: diverged, ``+inf``)
    whose rows ``present`` ``(B, C)`` take part: ``better`` ``(B, C, C)`` (``[b, i, j]``: ``i`` shown better than
    ``j``), the Holm-adjusted p-values ``(B, C, C)`` (symmetric; NaN where not tested) and ``equal`` ``(B, C, C)``
    (rounding twins), then the raw two-sided p-values ``(B, C, C)`` (symmetric; NaN where not tested) and each
    pair's statistic ``(B, C, C)`` (``[b, i, j]`` of ``values[i] - values[j]``: ``W+`` for the signed-rank
    test, Student's t for a pair the t statistic compared). ``margin``: a number, or one per table ``(B,)``.
    Holm's family: each table's pairs."""
    B, C, _ = values.shape
    raw = np.full((B, C, C), np.nan)
    statistic = np.full((B, C, C), np.nan)
    if C < 2:
        return (
            np.zeros((B, C, C), bool),
            np.full((B, C, C), np.nan),
            np.zeros((B, C, C), bool),
            raw,
            statistic,
        )
    pt = _pair_tests(values, present, test, margin, rtol)
    better, adjusted, equal = _square(pt, _holm(pt.p), level, C)
    i, j = np.triu_indices(C, 1)
    raw[:, i, j] = raw[:, j, i] = pt.p
    statistic[:, i, j], statistic[:, j, i] = pt.stat, pt.stat_reversed
    return better, adjusted, equal, raw, statistic


def _square(
    pt: _PairTests, adj: np.ndarray, level: float, C: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(better, adjusted, equal)`` ``(B, C, C)`` from the pairs' tests ``(B, P)`` and their adjusted p-values."""
    B = pt.p.shape[0]
    better = np.zeros((B, C, C), bool)
    adjusted = np.full((B, C, C), np.nan)
    equal = np.zeros((B, C, C), bool)
    i, j = np.triu_indices(C, 1)
    significant = (adj <= level) & ~pt.twins  # NaN: False
    better[:, i, j] = significant & pt.lower
    better[:, j, i] = significant & pt.higher
    adjusted[:, i, j] = adjusted[:, j, i] = adj
    equal[:, i, j] = equal[:, j, i] = pt.twins
    return better, adjusted, equal


def _rank_sets(better: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` ``(B, C)``: ``1 + #shown better``, ``E - #shown worse`` (``E``: entries present); NaN for
    rows not present."""
    low = 1.0 + better.sum(axis=-2)
    high = present.sum(axis=-1, keepdims=True) - better.sum(axis=-1)
    return np.where(present, low, np.nan), np.where(present, high.astype(np.float64), np.nan)


def _letter_name(k: int) -> str:
    """``a .. z, A .. Z``, then ``{52}``, ``{53}``, ...: one letter per group, readable when concatenated."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return alphabet[k] if k < len(alphabet) else "{" + str(k) + "}"


def letters(
    different: Sequence[Sequence[bool]] | np.ndarray, order: Sequence[int] | None = None
) -> list[str]:
    """A compact letter display of a table's pairwise decisions (Piepho 2004, the insert-absorb algorithm).

    ``different[i, j]`` (symmetric) says whether entries ``i`` and ``j`` were shown to differ. The result gives
    each entry a string of letters such that two entries **share a letter exactly when they were not shown to
    differ**: a reader can check any pair by its letters, and no pair looks different without a rejected test.

    Insert-absorb: start with one letter held by every entry; for each pair shown to differ, every letter held
    by both is split into two copies, one without ``i`` and one without ``j``; a letter whose entries are a
    subset of another letter's is absorbed (dropped). Then Piepho's sweep drops an entry from a letter when every
    pair that letter connects it to shares another letter too, and letters left empty or absorbed go. Letters
    are named ``a, b, ...`` in the order of their first entry along ``order`` (default: ``0 .. C-1``), so the
    first entry shown holds ``a``.

    Raises
    ------
    ValueError
        ``different`` not a square boolean matrix, not symmetric, or true on its diagonal; ``order`` not a
        permutation of ``0 .. C-1``.
    """
    diff = np.asarray(different)
    if diff.ndim != 2 or diff.shape[0] != diff.shape[1]:
        raise ValueError(f"different must be a square (entries, entries) matrix, got shape {diff.shape}")
    diff = diff.astype(bool)
    if not np.array_equal(diff, diff.T) or diff.diagonal().any():
        raise ValueError("different must be symmetric with a False diagonal")
    C = len(diff)
    pos = list(range(C)) if order is None else [int(x) for x in order]
    if sorted(pos) != list(range(C)):
        raise ValueError(f"order must be a permutation of 0 .. {C - 1}, got {list(order or [])}")
    if C == 0:
        return []
    cols: list[int] = [(1 << C) - 1]  # bit k: entry k holds the letter

    def absorb(cs: list[int]) -> list[int]:
        uniq = sorted(set(cs), key=lambda c: -bin(c).count("1"))
        keep: list[int] = []
        for c in uniq:
            if c and not any(c | k == k for k in keep):
                keep.append(c)
        return keep

    for i, j in zip(*np.nonzero(np.triu(diff, 1)), strict=True):
        both = (1 << int(i)) | (1 << int(j))
        new: list[int] = []
        for c in cols:
            if c & both == both:
                new += [c & ~(1 << int(i)), c & ~(1 << int(j))]
            else:
                new.append(c)
        cols = absorb(new)
    # Piepho's sweep: an entry k leaves letter c when it holds another letter and each other entry of c shares
    # another letter with k
    for idx in range(len(cols)):
        c = cols[idx]
        for k in range(C):
            if not c >> k & 1:
                continue
            others = [m for m in range(C) if m != k and c >> m & 1]
            rest = [x for n, x in enumerate(cols) if n != idx]
            if any(x >> k & 1 for x in rest) and all(
                any(x >> k & 1 and x >> m & 1 for x in rest) for m in others
            ):
                c &= ~(1 << k)
                cols[idx] = c
    cols = absorb(cols)
    rank = {entry: n for n, entry in enumerate(pos)}

    def first(c: int) -> tuple[int, ...]:
        return tuple(sorted(rank[k] for k in range(C) if c >> k & 1))

    cols.sort(key=first)
    out = ["" for _ in range(C)]
    for n, c in enumerate(cols):
        for k in range(C):
            if c >> k & 1:
                out[k] += _letter_name(n)
    return out


class Comparison(NamedTuple):
    """Result of :func:`compare`: what one table's tests showed (arrays in the rows' order).

    Attributes
    ----------
    better : numpy.ndarray
        ``(C, C)`` bool: ``[i, j]`` when ``i`` was shown better than ``j`` (a rejected test).
    p_adjusted : numpy.ndarray
        ``(C, C)`` Holm-adjusted p-values, symmetric (NaN on the diagonal).
    equal : numpy.ndarray
        ``(C, C)`` bool: rounding twins (within :data:`ROUNDING_RTOL` on every seed), never separated.
    rank_low, rank_high : numpy.ndarray
        ``(C,)`` int: the simultaneous rank set ``[1 + #shown better, C - #shown worse]``.
    letters : tuple of str
        The compact letter display (:func:`letters`): two rows share a letter exactly when not shown to differ.
    order : tuple of int
        The rows in display order: by ``rank_low``, then ``rank_high``, then the median, then the row index.
    pairs : int
        The table's pairs of rows, ``C (C - 1) / 2``.
    test, level, margin, rtol
        What was run (:func:`compare`).
    p : numpy.ndarray
        ``(C, C)`` the raw two-sided p-values before Holm's correction, symmetric (NaN on the diagonal; 1 for
        rounding twins).
    statistic : numpy.ndarray
        ``(C, C)`` ``[i, j]``: the test's statistic of row ``i`` minus row ``j`` (``W+``, :func:`wilcoxon`;
        Student's t for a pair the t statistic compared, :func:`paired_t`); NaN on the diagonal.
    direction : numpy.ndarray
        ``(C, C)`` int: ``[i, j] = 1`` when ``i``'s one-sided tail (``i`` lower) is the smaller, ``-1`` when
        ``j``'s is, 0 when neither (antisymmetric): the way a rejected test points.
    median : numpy.ndarray
        ``(C,)`` each row's median (``+inf`` diverged counting as the largest): the display order's third key.
    family : int
        Holm's family: the number of tests corrected together, the table's ``pairs`` (:func:`compare`) or
        every pair of every table of a report (:func:`holm_family`).
    """

    better: np.ndarray
    p_adjusted: np.ndarray
    equal: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    letters: tuple[str, ...]
    order: tuple[int, ...]
    pairs: int
    test: str
    level: float
    margin: float
    rtol: float
    p: np.ndarray = np.zeros((0, 0))
    statistic: np.ndarray = np.zeros((0, 0))
    direction: np.ndarray = np.zeros((0, 0), np.int64)
    median: np.ndarray = np.zeros(0)
    family: int = 0


def _median_key(v: np.ndarray) -> np.ndarray:
    """The median of each row (the mean of the two middle values for an even count), ``+inf`` (diverged) the
    largest value."""
    return np.median(np.where(np.isfinite(v), v, np.inf), axis=-1)


def compare(
    values: Sequence[Sequence[float]] | np.ndarray,
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> Comparison:
    """Every pair of contenders of one table, paired by seed, and what the table may claim (lower is better).

    ``values`` is ``(C, S)``: contender ``i``'s metric on seed ``k`` (every contender ran the same seeds, so
    contenders are compared seed by seed); a non-finite value is a diverged run, the worst value on its seed
    (``+inf``). The rule:

    1. **Rounding margin**: on each seed, a difference of at most ``rtol * max(|a|, |b|)``
       (:data:`ROUNDING_RTOL`: float32 rounding, e.g. two implementations of one update) is no difference (a
       zero); a pair within it on every seed is *equal*, rounding twins, never separated (its p-value counts as
       1 in the family).
    2. **The test**: every other pair by ``test`` (:data:`TESTS`; two-sided): the exact signed-rank test
       (:func:`wilcoxon`, the default) or Student's paired t (:func:`paired_t`; a pair with a diverged seed is
       then compared by the signed-rank test). ``margin`` (``>= 0``, in the metric's units): a pair is shown to
       differ only by more than the margin (the one-sided tails test ``d + margin`` and ``d - margin``).
    3. **The family**: the ``C (C - 1) / 2`` p-values, corrected together by Holm's step-down method
       (:func:`holm`); a pair whose adjusted p-value is at most ``level`` was *shown to differ*, in the direction
       of its smaller one-sided p-value (the signed-rank test's direction is where most of the rank mass lies,
       which the median follows; the mean may disagree when one seed is far off).
    4. **What a table prints** -- only what the tests showed:

       * the letters (:func:`letters`): two contenders share a letter exactly when not shown to differ;
       * the simultaneous rank set ``[1 + #shown better, C - #shown worse]``: if every claim of the family is
         true (probability ``>= 1 - level``, Holm's guarantee), every contender's true rank lies in its set
         (Mogstad, Romano, Shaikh & Wilhelm 2024, pairwise construction). A rank set ``1-3`` means "not shown
         better or worse than the others", not "tied".

    A contender that is shown better than no one and worse than no one has the set ``[1, C]``: few seeds, or
    noisy results, show few differences. Under the null (contenders identical in distribution) the share of
    tables with *any* claim is at most ``level`` (the family-wise error rate; measured in
    ``tests/app/test_error_rates.py``).

    Raises
    ------
    ValueError
        ``values`` not ``(C, S)`` with ``C >= 1``, ``S >= 2``; ``level`` outside (0, 1); ``test`` unknown;
        ``margin`` negative; ``rtol`` outside [0, 1).
    """
    v = _matrix(values)
    level = _check_level(level)
    test = _check_test(test)
    margin = _check_margin(margin)
    rtol = _check_rtol(rtol)
    C = len(v)
    i, j = np.triu_indices(C, 1)
    pt = _pair_tests(v[None], np.ones((1, C), bool), test, margin, rtol)
    raw = np.full((C, C), np.nan)
    raw[i, j] = raw[j, i] = pt.p[0]
    direction = np.zeros((C, C), np.int64)
    direction[i, j] = np.where(pt.lower[0], 1, np.where(pt.higher[0], -1, 0))
    direction[j, i] = -direction[i, j]
    equal = np.zeros((C, C), bool)
    equal[i, j] = equal[j, i] = pt.twins[0]
    statistic = np.full((C, C), np.nan)
    statistic[i, j], statistic[j, i] = pt.stat[0], pt.stat_reversed[0]
    return _decided(
        raw, statistic, direction, equal, _median_key(v), _holm(pt.p[0]), len(i), test, level, margin, rtol
    )


def _decided(
    p: np.ndarray,
    statistic: np.ndarray,
    direction: np.ndarray,
    equal: np.ndarray,
    median: np.ndarray,
    adj: np.ndarray,
    family: int,
    test: str,
    level: float,
    margin: float,
    rtol: float,
) -> Comparison:
    """A :class:`Comparison` from one table's raw tests and its pairs' adjusted p-values ``adj`` (``numpy.
    triu_indices`` order): the claims, rank sets, display order and letters."""
    C = len(median)
    i, j = np.triu_indices(C, 1)
    adjusted = np.full((C, C), np.nan)
    adjusted[i, j] = adjusted[j, i] = adj
    significant = (adjusted <= level) & ~equal  # NaN: False
    better = significant & (direction > 0)
    low, high = _rank_sets(better[None], np.ones((1, C), bool))
    order = tuple(sorted(range(C), key=lambda k: (low[0, k], high[0, k], median[k], k)))
    return Comparison(
        better=better,
        p_adjusted=adjusted,
        equal=equal,
        rank_low=low[0].astype(np.int64),
        rank_high=high[0].astype(np.int64),
        letters=tuple(letters(better | better.T, order)),
        order=order,
        pairs=len(i),
        test=test,
        level=level,
        margin=margin,
        rtol=rtol,
        p=p,
        statistic=statistic,
        direction=direction,
        median=median,
        family=family,
    )


def _search_tests(
    chosen: np.ndarray, grids: np.ndarray, test: str, margin: float, rtol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The intersection-union tests of a batch of tables (:func:`compare_searches`): ``chosen`` ``(B, C, S)``
    each row's values at its chosen configuration, ``grids`` ``(B, C, G, S)`` at every configuration of its
    search (lower is better; non-finite: diverged, the worst). Returns ``(one_sided, binding, statistic)``, each
    ``(B, C, C)``: ``[b, i, j]`` the largest over ``j``'s configurations of the one-sided p-value of "``i`` lower
    than that configuration" (1 where within the rounding margin on every seed; NaN on the diagonal), the
    configuration where it was found (among equal largest p-values, the one whose median difference from ``i``
    is the smallest: the closest; -1 on the diagonal), and ``W+`` of ``i`` minus it."""
    B, C, S = chosen.shape
    G = grids.shape[2]
    v = np.where(np.isfinite(chosen), chosen, np.inf)
    g = np.where(np.isfinite(grids), grids, np.inf)
    one_sided = np.full((B, C, C), np.nan)
    binding = np.full((B, C, C), -1, np.int64)
    stat = np.full((B, C, C), np.nan)
    if C < 2:
        return one_sided, binding, stat
    i, j = np.nonzero(~np.eye(C, dtype=bool))  # every ordered pair
    d, twins = _rounded(v[:, i, None, :], g[:, j], rtol)  # (B, P, G, S), (B, P, G)
    p_less, _ = _pair_tails(d.reshape(-1, S), test, margin)
    p = np.where(twins, 1.0, p_less.reshape(B, len(i), G))
    # the binding configuration: the largest p-value, and among equal ones (every seed the same way at several
    # configurations: the smallest p-value the seeds allow) the one closest to i, its median difference largest
    with np.errstate(invalid="ignore"):
        closeness = np.nan_to_num(np.median(d, axis=-1), nan=0.0, posinf=np.inf, neginf=-np.inf)
    top = p >= p.max(axis=-1, keepdims=True)
    k = np.argmax(np.where(top, closeness, -np.inf), axis=-1)
    k = np.where(top[np.arange(B)[:, None], np.arange(len(i))[None, :], k], k, np.argmax(p, axis=-1))
    one_sided[:, i, j] = np.take_along_axis(p, k[..., None], axis=-1)[..., 0]
    binding[:, i, j] = k
    w = np.take_along_axis(d, k[..., None, None], axis=2)[:, :, 0]
    stat[:, i, j] = _w_plus(w)
    return one_sided, binding, stat


class SearchComparison(NamedTuple):
    """Result of :func:`compare_searches`: one table's claims about the optimizers under their searches.

    Attributes
    ----------
    comparison : Comparison
        The table's decisions (arrays in the rows' order), as :func:`compare` gives them: ``better[i, j]`` when
        row ``i`` at its chosen configuration was shown better than row ``j`` at *every* configuration of
        ``j``'s search; ``p`` the pair's two-sided p-value (twice the smaller one-sided intersection-union
        p-value), ``statistic[i, j]`` Wilcoxon's ``W+`` of ``i``'s chosen values minus ``j``'s at the binding
        configuration; Holm's correction over the table's pairs.
    one_sided : numpy.ndarray
        ``(C, C)``: ``[i, j]`` the intersection-union p-value of "``i`` at its chosen configuration is better
        than ``j`` at every configuration ``j`` tried": the largest of the one-sided exact signed-rank p-values
        over ``j``'s configurations (NaN on the diagonal).
    binding : numpy.ndarray
        ``(C, C)`` int: ``[i, j]`` the configuration of ``j``'s search where that largest p-value was found (the
        one that came closest to ``i``'s chosen one; the first of equal ones); -1 on the diagonal.
    configurations : numpy.ndarray
        ``(C,)`` int: how many configurations each row's search tried.
    """

    comparison: Comparison
    one_sided: np.ndarray
    binding: np.ndarray
    configurations: np.ndarray


def compare_searches(
    chosen: Sequence[Sequence[float]] | np.ndarray,
    searches: Sequence[Sequence[Sequence[float]] | np.ndarray],
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> SearchComparison:
    """Claims about the optimizers of one table under their searches, from one study: an intersection-union
    test (Berger 1982) of every pair of rows (lower is better).

    ``chosen`` is ``(C, S)``: row ``i``'s metric at its *chosen* configuration on each report seed (seeds never
    used to choose); ``searches[i]`` is ``(G_i, S)``: row ``i``'s metric at *every* configuration its search
    tried (the chosen one among them), on the same report seeds. A non-finite value is a diverged run, the worst
    value on its seed.

    Row ``i`` is shown better than row ``j`` when ``i`` at its chosen configuration is better than ``j`` at each
    of ``j``'s configurations: each of the ``G_j`` one-sided exact signed-rank tests (:func:`wilcoxon`'s test,
    paired by seed, with the rounding margin ``rtol`` seed by seed and the practical ``margin``) rejects, so the
    pair's p-value is the *largest* of them. Then ``i``'s best on its search beats ``j``'s best on its search
    whichever configuration ``j``'s tuning would have picked: the claim needs no model of the tuning's luck.
    The test holds its level because the claim's null (``i`` not better than some configuration of ``j``) is
    a union of the components' nulls, and each component is an exact level-``alpha`` test of its own (the
    chosen configuration was picked on other seeds, so the report seeds are fresh for every configuration).

    The pair's two-sided p-value is twice the smaller of its two one-sided ones (``i`` better than every
    configuration of ``j``, or ``j`` better than every configuration of ``i``), at most 1; Holm's step-down
    correction over the ``C (C - 1) / 2`` pairs at ``level`` decides, as :func:`compare` does, and the rank
    sets, letters and display order follow. Rows within the rounding margin on every seed at a configuration
    (rounding twins: the same update rounded differently) are never separated at it: such a component's p-value
    is 1. The smallest p-value on ``n`` seeds is ``2 / 2^n``, as for :func:`compare`, so :func:`min_seeds` holds
    for it too.

    Raises
    ------
    ValueError
        ``chosen`` not ``(C, S)`` with ``S >= 2``; ``searches`` not ``C`` arrays ``(G_i, S)`` with ``G_i >= 1``;
        ``level``, ``test``, ``margin`` or ``rtol`` as :func:`compare`.
    """
    v = _matrix(chosen, "chosen")
    level = _check_level(level)
    test = _check_test(test)
    margin = _check_margin(margin)
    rtol = _check_rtol(rtol)
    C, S = v.shape
    grids = [np.asarray(g, np.float64) for g in searches]
    if len(grids) != C:
        raise ValueError(f"searches must hold one array per row of chosen ({C}), got {len(grids)}")
    for k, g in enumerate(grids):
        if g.ndim != 2 or g.shape[0] < 1 or g.shape[1] != S:
            raise ValueError(
                f"searches[{k}] must be (configurations, {S}) like chosen's seeds, got shape {g.shape}"
            )
        if np.isnan(g).any():
            raise ValueError(f"searches[{k}] must not hold NaN (a diverged run is +inf, the worst value)")
    if np.isnan(v).any():
        raise ValueError("chosen must not hold NaN (a diverged run is +inf, the worst value)")
    sizes = np.array([len(g) for g in grids], np.int64)
    G = int(sizes.max())
    # a search's configurations padded to the longest by repeating its last one (a repeat changes no maximum)
    padded = np.stack([np.concatenate([g, np.repeat(g[-1:], G - len(g), axis=0)]) for g in grids])
    one_sided, binding, stat = _search_tests(v[None], padded[None], test, margin, rtol)
    one_sided, binding, stat = one_sided[0], binding[0], stat[0]
    iu, ju = np.triu_indices(C, 1)
    p_ij, p_ji = one_sided[iu, ju], one_sided[ju, iu]
    raw = np.full((C, C), np.nan)
    pair_p = np.minimum(1.0, 2 * np.minimum(p_ij, p_ji))
    raw[iu, ju] = raw[ju, iu] = pair_p
    direction = np.zeros((C, C), np.int64)
    direction[iu, ju] = np.where(p_ij < p_ji, 1, np.where(p_ji < p_ij, -1, 0))
    direction[ju, iu] = -direction[iu, ju]
    v = np.where(np.isfinite(v), v, np.inf)
    equal = np.zeros((C, C), bool)
    if C > 1:
        _, tw = _rounded(v[iu], v[ju], rtol)
        equal[iu, ju] = equal[ju, iu] = tw
    comparison = _decided(
        raw, stat, direction, equal, _median_key(v), _holm(pair_p), len(iu), test, level, margin, rtol
    )
    return SearchComparison(comparison, one_sided, binding, sizes)


def holm_family(comparisons: Sequence[Comparison], level: float | None = None) -> list[Comparison]:
    """The tables ``comparisons`` (each from :func:`compare`) re-decided as *one* Holm family: every pair of
    every table corrected together (``m`` = the sum of the tables' pairs), so that the chance of any false
    claim anywhere in them is at most ``level`` (default: the tables' own level), where a family per table
    bounds it only table by table (under a global null, ``T`` tables at 5 % carry some false claim with
    probability up to ``1 - 0.95^T``: 40 % for 10 tables). Each table keeps its raw tests, its directions, its
    rounding twins; its claims, rank sets, letters and order follow the new adjusted p-values, which are never
    below the per-table ones, so a report-wide claim is also a per-table claim.

    Raises
    ------
    ValueError
        a table without its raw p-values (not from :func:`compare`); ``level`` outside (0, 1).
    """
    tables = list(comparisons)
    if not tables:
        return []
    for c in tables:
        if c.p.shape != c.equal.shape:
            raise ValueError("comparisons must come from compare() (they carry the raw p-values)")
    lvl = _check_level(tables[0].level if level is None else level)
    raws = [c.p[np.triu_indices(len(c.median), 1)] for c in tables]
    flat = np.concatenate(raws) if raws else np.zeros(0)
    m = int(np.sum(~np.isnan(flat)))
    adj = _holm(flat) if len(flat) else flat
    out, start = [], 0
    for c, r in zip(tables, raws, strict=True):
        a = adj[start : start + len(r)]
        start += len(r)
        out.append(
            _decided(c.p, c.statistic, c.direction, c.equal, c.median, a, m, c.test, lvl, c.margin, c.rtol)
        )
    return out


def significantly_better(
    values: Sequence[Sequence[float]] | np.ndarray,
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> np.ndarray:
    """``(C, C)`` bool: ``out[i, j]`` when contender ``i`` was shown better than ``j`` on one table (lower is
    better): :attr:`Comparison.better` of :func:`compare` (its rule in full there). Never both ``out[i, j]``
    and ``out[j, i]``; the diagonal is False.

    Raises
    ------
    ValueError
        as :func:`compare`.
    """
    return compare(values, level, test, margin, rtol).better


def ranks(
    values: Sequence[Sequence[float]] | np.ndarray,
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> list[int]:
    """Each contender's rank on one table: ``1 +`` the number of contenders shown better than it (lower is
    better), the low end of its simultaneous rank set (:func:`compare`, whose rule is quoted in full there).

    A rank therefore stands for tested claims only: rank ``r`` means ``r - 1`` contenders were each shown better
    by a test that Holm's correction kept. It says nothing about the contenders it was not compared favourably
    or unfavourably with: two contenders with ranks 1 and 2 need not differ from each other (A ~ B, B ~ C,
    A < C gives 1, 1, 2: B and C are not shown to differ). The letters and the rank sets of :func:`compare` show
    exactly which pairs differ; tables print those. A diverged run is the worst value on its seed: a contender
    that diverged on one seed of ten is compared on all ten (it loses that seed), not sent to the bottom.

    Raises
    ------
    ValueError
        as :func:`compare`.
    """
    return [int(r) for r in compare(values, level, test, margin, rtol).rank_low]


def smallest_p(n: int, against: int = 0) -> float:
    """The smallest two-sided p-value the exact signed-rank test can give on ``n`` seeds when ``against`` of
    them go the other way with the largest differences (a contender that diverged on ``against`` seeds: there it
    is the worst value, the largest difference), every other seed the same way: ``2 P(T_n <= s)`` with ``s``
    the sum of the ``against`` largest ranks, ``n, n - 1, ...`` (``2 / 2^n`` for ``against = 0``). 16 seeds, one
    diverged: 0.0052 (above Holm's first threshold 5 % / 10 in a table of 5 entries).

    Raises
    ------
    ValueError
        ``n`` not an integer >= 1; ``against`` not an integer in ``[0, n]``.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(against, bool) or int(against) != against or not 0 <= against <= n:
        raise ValueError(f"against must be an integer in [0, n], got {against!r}")
    n, k = int(n), int(against)
    cdf, _ = _standard_tails(n)
    s = k * n - k * (k - 1) // 2
    return float(min(1.0, 2 * cdf[s]))


def min_seeds(pairs: int, level: float = 0.05, diverged: int = 0) -> int:
    """The fewest seeds on which the exact signed-rank test can show a difference in a family of ``pairs``
    tests corrected by Holm at ``level``: the smallest ``n`` with ``2 / 2^n <= level / pairs`` (the test's
    smallest p-value, every seed the same way, against Holm's first threshold). 1 pair: 6 seeds; 10 pairs (5
    contenders): 9; 21 (7): 10; 253 (23): 14; 325 (26): 14. The same count of *studies* lets the across-studies
    test (the study as the unit) show a difference.

    ``diverged``: a contender that diverged on that many seeds (the worst value there, the largest differences
    against it) and is better on every other seed: the smallest ``n`` with :func:`smallest_p` ``(n, diverged)
    <= level / pairs``. One diverged seed: 10 pairs need 17 seeds, 1 pair 12.

    Raises
    ------
    ValueError
        ``pairs`` not an integer >= 1; ``level`` outside (0, 1); ``diverged`` not an integer >= 0.
    """
    if isinstance(pairs, bool) or int(pairs) != pairs or pairs < 1:
        raise ValueError(f"pairs must be an integer >= 1, got {pairs!r}")
    level = _check_level(level)
    if isinstance(diverged, bool) or int(diverged) != diverged or diverged < 0:
        raise ValueError(f"diverged must be an integer >= 0, got {diverged!r}")
    if not diverged:
        return max(2, math.ceil(1 + math.log2(int(pairs) / level) - 1e-12))
    n = max(2, int(diverged) + 1)
    while smallest_p(n, int(diverged)) > level / int(pairs):
        n += 1
    return n


def most_entries(seeds: int, level: float = 0.05) -> int:
    """The most entries a table can have for the exact signed-rank test on ``seeds`` seeds to show any
    difference after Holm's correction at ``level``: the largest ``E`` with :func:`min_seeds` ``(E (E - 1) / 2)
    <= seeds`` (10 seeds: 7 entries, 14: 29, 16: 57); 1 when no pair can be shown.

    Raises
    ------
    ValueError
        ``seeds`` not an integer >= 1; ``level`` outside (0, 1).
    """
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    level = _check_level(level)
    pairs = math.floor(level * 2.0 ** (int(seeds) - 1) * (1 + 1e-12))  # 2 / 2^seeds <= level / pairs
    if pairs < 1:
        return 1
    return int(math.floor((1 + math.sqrt(1 + 8 * pairs)) / 2 + 1e-12))


class DivergenceComparison(NamedTuple):
    """Result of :func:`compare_divergence`: one table's divergence counts compared pair by pair (arrays in the
    rows' order).

    Attributes
    ----------
    diverged : numpy.ndarray
        ``(C,)`` int: the seeds on which each row diverged (a non-finite value).
    fewer : numpy.ndarray
        ``(C, C)`` bool: ``[i, j]`` when ``i`` was shown to diverge on fewer seeds than ``j``.
    discordant : numpy.ndarray
        ``(C, C)`` int: ``[i, j]`` the seeds where ``j`` diverged and ``i`` did not.
    p, p_adjusted : numpy.ndarray
        ``(C, C)`` the exact two-sided sign test's p-value and its Holm-adjusted value (symmetric; NaN where the
        two diverged on the same seeds: nothing to compare).
    family : int
        The pairs compared (those diverging on different seeds).
    level : float
    """

    diverged: np.ndarray
    fewer: np.ndarray
    discordant: np.ndarray
    p: np.ndarray
    p_adjusted: np.ndarray
    family: int
    level: float


def compare_divergence(
    values: Sequence[Sequence[float]] | np.ndarray, level: float = 0.05
) -> DivergenceComparison:
    """The divergence counts of one table's rows compared as their own paired comparison: per pair of rows, the
    seeds where exactly one of them diverged (a non-finite value), and the exact two-sided sign test on them
    (McNemar's exact test): ``p = min(1, 2 P(B <= min(x, y)))`` with ``B ~ Binomial(x + y, 1/2)``, ``x`` and
    ``y`` the seeds only the one or only the other diverged on (seeds both diverged on, or neither, say
    nothing). Holm over the pairs with ``x + y > 0`` at ``level`` (a pair diverging on the same seeds cannot be
    separated). The value tests (:func:`compare`) count a diverged seed as the worst value, so one diverged seed
    in 16 can keep a contender from being shown better (:func:`smallest_p`); this comparison says separately
    which contender diverges more often: 8 of 16 seeds against none gives ``p = 2 / 2^8 = 0.0078``.

    Raises
    ------
    ValueError
        ``values`` not ``(C, S)`` with ``S >= 2``; ``level`` outside (0, 1).
    """
    v = _matrix(values)
    level = _check_level(level)
    div = ~np.isfinite(v)
    C = len(v)
    only = (div[None, :, :] & ~div[:, None, :]).sum(axis=-1)  # [i, j]: seeds j diverged and i did not
    p = np.full((C, C), np.nan)
    i, j = np.triu_indices(C, 1)
    x, y = only[j, i], only[i, j]  # x: i alone diverged; y: j alone
    n = x + y
    raw = np.full(len(i), np.nan)
    for k in np.flatnonzero(n > 0):
        lo = int(min(x[k], y[k]))
        tail = sum(math.comb(int(n[k]), r) for r in range(lo + 1)) / 2.0 ** int(n[k])
        raw[k] = min(1.0, 2 * tail)
    p[i, j] = p[j, i] = raw
    adj = np.full((C, C), np.nan)
    if len(i):
        a = _holm(raw)
        adj[i, j] = adj[j, i] = a
    sig = adj <= level
    fewer = sig & (only > only.T)
    return DivergenceComparison(
        diverged=div.sum(axis=-1).astype(np.int64),
        fewer=fewer,
        discordant=only.astype(np.int64),
        p=p,
        p_adjusted=adj,
        family=int((n > 0).sum()),
        level=level,
    )


class Effect(NamedTuple):
    """Result of :func:`effect`: the size of a paired difference, in the metric's units.

    Attributes
    ----------
    median : float
        The median of the paired differences (the mean of the two middle ones for an even count; an average
        touching an infinite value is that value).
    estimate : float
        The Hodges-Lehmann estimate: the median of the Walsh averages ``(d_k + d_l) / 2``, ``k <= l``.
    low, high : float
        The exact distribution-free interval of the center of the differences from the signed-rank test
        (Walsh averages of order ``k`` and ``M + 1 - k``).
    confidence : float
        The interval's exact coverage, ``1 - 2 P(T_n <= k - 1)``: at least the requested level where ``n`` allows,
        else the most ``n`` can give (``1 - 2 / 2^n``, the whole range of the Walsh averages: 0.5 on 2 units).
    n : int
        The paired units (seeds, or studies).
    """

    median: float
    estimate: float
    low: float
    high: float
    confidence: float
    n: int


def effect(d: Sequence[float] | np.ndarray, level: float = 0.95) -> Effect:
    """The size of a paired difference ``d`` (one value per seed or study; ``+-inf`` for a diverged unit):
    the median, the Hodges-Lehmann estimate and its exact ``level`` interval (Hodges & Lehmann 1963; the
    interval inverts the signed-rank test, Bauer 1972): with the ``M = n (n + 1) / 2`` Walsh averages sorted,
    ``[W_(k), W_(M + 1 - k)]`` for the largest ``k`` with ``P(T_n <= k - 1) <= (1 - level) / 2`` under the
    signed-rank null without ties (``T_n`` the sum of the ranks with a + sign). Its coverage is exact for
    continuous differences and at least that with ties; with too few units for ``level`` (fewer than 6 at 95 %)
    the interval is the whole range of the Walsh averages and ``confidence`` says what it covers. A Walsh
    average of ``+inf`` and ``-inf`` is NaN and sorts last.

    Raises
    ------
    ValueError
        ``d`` not a 1-D array of at least 1 value, or holding NaN; ``level`` outside (0, 1).
    """
    v = np.asarray(d, np.float64)
    if v.ndim != 1 or v.size < 1:
        raise ValueError(f"d must be a 1-D array of at least 1 value, got shape {v.shape}")
    if np.isnan(v).any():
        raise ValueError("d must not hold NaN (a diverged unit is +-inf)")
    level = _check_level(level)
    n = len(v)
    k, lo = np.triu_indices(n)
    with np.errstate(invalid="ignore"):
        walsh = np.sort(0.5 * (v[k] + v[lo]))  # NaN (inf - inf) last
    M = len(walsh)
    cdf, _ = _standard_tails(n)
    ok = np.flatnonzero(cdf[: M // 2 + 1] <= (1 - level) / 2)  # cdf[t] = P(T <= t), t = k - 1
    kk = min(int(ok[-1]) + 1 if len(ok) else 1, (M + 1) // 2)
    confidence = 1.0 - 2.0 * float(cdf[kk - 1])
    finite = walsh[~np.isnan(walsh)]
    est = _median_of(finite) if len(finite) else math.nan
    return Effect(
        median=_median_of(v),
        estimate=est,
        low=float(walsh[kk - 1]),
        high=float(walsh[M - kk]),
        confidence=max(confidence, 0.0),
        n=n,
    )


def _median_of(v: np.ndarray) -> float:
    """The median of ``v`` (the mean of the two middle values for an even count), an average touching an
    infinite value being that value (``inf`` and ``-inf``: 0)."""
    s = np.sort(v)
    a, b = s[(len(s) - 1) // 2], s[len(s) // 2]
    if np.isinf(a) or np.isinf(b):
        return 0.0 if np.isinf(a) and np.isinf(b) and a != b else float(a if np.isinf(a) else b)
    return float(0.5 * (a + b))


# --------------------------------------------------------------------------- the overall ranking
class BootstrapRanks(NamedTuple):
    """Result of :func:`bootstrap_mean_ranks` and :func:`bootstrap_problems` (arrays in ``names``' order).

    Attributes
    ----------
    names : tuple of str
        The contenders.
    mean_rank : numpy.ndarray
        ``(C,)`` mean over the problems it ran of each contender's rank (the middle of its rank set on each
        problem); NaN: ranked on no problem.
    low, high : numpy.ndarray
        ``(C,)`` the ``level`` percentile interval of the mean rank over the replicates (resamples of problems).
    p_first : numpy.ndarray
        ``(C,)`` fraction of replicates in which the contender has the lowest mean rank (ties split equally);
        sums to 1.
    replicates : numpy.ndarray
        ``(n_boot, C)`` the mean rank in each replicate (NaN: none of its problems drawn).
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


def _check_boot(n_boot: int) -> int:
    if isinstance(n_boot, bool) or int(n_boot) != n_boot or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    return int(n_boot)


def bootstrap_problems(
    ranks: Sequence[Sequence[float]] | np.ndarray,
    names: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapRanks:
    """The mean rank over problems, its bootstrap interval over problems, and P(best), from fixed ranks.

    ``ranks`` is ``(P, C)``: contender ``names[i]``'s rank on problem ``p`` (NaN: it did not run there). Each
    problem's ranks are the decisions of that problem's own tests (:func:`compare`), kept as they are: a
    replicate draws ``P`` problems with replacement (Efron's bootstrap over problems,
    ``numpy.random.default_rng(seed)``) and averages each contender's ranks over the drawn problems it ran.
    Over ``n_boot`` replicates:

    * ``low``, ``high``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of each contender's replicate
      mean ranks (``numpy.nanquantile``, linear interpolation);
    * ``p_first``: the fraction of replicates where it has the lowest mean rank, ``1 / k`` when ``k`` share it.

    Nothing is re-tested, so the bootstrap can show no difference the tests did not: it measures how much the
    ranking depends on *which problems* were run (with one problem, the interval is the point). Resampling
    seeds and re-testing, as the study did before, treats duplicated seeds as independent: between two
    contenders with no true difference it separated 16-18 % of pairs at 10-20 seeds and 53 % at 2, against 5 %
    on the data. Under the null (contenders identical in distribution) the share of pairs whose intervals are
    disjoint, or with ``P(best) >= level``, stays below the tests' level (``tests/app/test_error_rates.py``).

    Raises
    ------
    ValueError
        ``ranks`` not ``(P, C)`` with ``C == len(names)``; every value NaN; ``names`` empty, not strings or not
        unique; ``n_boot < 1``; ``level`` outside (0, 1).
    """
    names = _check_names(names)
    level = _check_level(level)
    n_boot = _check_boot(n_boot)
    r = np.asarray(ranks, np.float64)
    if r.ndim != 2 or r.shape[1] != len(names) or r.shape[0] < 1:
        raise ValueError(
            f"ranks must be a (problems, {len(names)}) array, one column per name, got {r.shape}"
        )
    ran = ~np.isnan(r)
    if not ran.any():
        raise ValueError("per_problem holds no result: every row is NaN (missing) on every problem")
    count = ran.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_rank = np.where(count > 0, np.where(ran, r, 0.0).sum(axis=0) / count, np.nan)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, r.shape[0], size=(n_boot, r.shape[0]))
    drawn, hit = np.where(ran, r, 0.0)[idx], ran[idx]  # (n_boot, P, C)
    n = hit.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = np.where(n > 0, drawn.sum(axis=1) / n, np.nan)
    low, high = np.full(len(names), np.nan), np.full(len(names), np.nan)
    some = count > 0
    q = np.nanquantile(replicates[:, some], [(1 - level) / 2, (1 + level) / 2], axis=0)
    low[some], high[some] = q[0], q[1]
    filled = np.where(np.isnan(replicates), np.inf, replicates)
    best = filled.min(axis=1, keepdims=True)
    first = np.isfinite(filled) & (filled == best)
    p_first = (first / np.maximum(first.sum(axis=1, keepdims=True), 1)).mean(axis=0)
    return BootstrapRanks(names, mean_rank, low, high, p_first, replicates, count, level)


def bootstrap_mean_ranks(
    per_problem: Mapping[str, np.ndarray],
    names: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    test_level: float = 0.05,
    test: str = TEST,
    margin: float | Mapping[str, float] = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> BootstrapRanks:
    """The overall ranking of contenders over problems: each problem's tests once, then
    :func:`bootstrap_problems`.

    ``per_problem[problem]`` is a ``(C, S_p)`` array, row ``i`` contender ``names[i]``'s metric on the problem's
    ``S_p`` seeds (lower is better; a row entirely NaN: the contender did not run there, and the others are
    compared among themselves; any other non-finite value is a diverged run, the worst value on its seed). On
    each problem the contenders present are compared by :func:`compare` (``test`` at ``test_level``, Holm over
    the problem's pairs, ``margin`` -- one number, or ``{problem: margin}`` -- and ``rtol``), and a contender's
    rank there is the middle of its simultaneous rank set, ``(low + high) / 2``: 1 for one shown better than
    every other, ``(1 + C) / 2`` for one shown neither better nor worse than any. The mean rank averages those
    over the problems it ran, and the problems are resampled (:func:`bootstrap_problems`, seed ``seed``).

    Raises
    ------
    ValueError
        ``per_problem`` empty, an array not ``(len(names), S_p)`` with ``S_p >= 2``, or every row missing;
        ``names`` empty, not strings or not unique; ``n_boot < 1``; ``level`` or ``test_level`` outside (0, 1);
        ``test``, ``margin`` or ``rtol`` as :func:`compare`.
    """
    names = _check_names(names)
    level = _check_level(level)
    test_level = _check_level(test_level, "test_level")
    n_boot = _check_boot(n_boot)
    test = _check_test(test)
    rtol = _check_rtol(rtol)
    if len(per_problem) == 0:
        raise ValueError("per_problem must hold at least one problem")
    C = len(names)
    rows = []
    for prob, arr in per_problem.items():
        v = _matrix(arr, f"per_problem[{prob!r}]")
        if v.shape[0] != C:
            raise ValueError(f"per_problem[{prob!r}] must have {C} rows (one per name), got {v.shape[0]}")
        m = _check_margin(margin.get(prob, 0.0) if isinstance(margin, Mapping) else margin)
        present = ~np.isnan(v).all(axis=1)
        better = _decide(v[None], present[None], test_level, test, m, rtol)[0]
        low, high = _rank_sets(better, present[None])
        rows.append(0.5 * (low[0] + high[0]))
    return bootstrap_problems(np.stack(rows), names, n_boot, seed, level)


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
