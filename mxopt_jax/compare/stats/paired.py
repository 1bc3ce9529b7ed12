"""Paired tests of two contenders on the same seeds, with SciPy-shaped results (``statistic``, ``pvalue``, and
the effect with its interval): Wilcoxon's signed-rank test, exact (:func:`wilcoxon`), Student's paired t with
its exact sign-flip p-value (:func:`paired_t`), the size of a paired difference (:func:`effect`: the
Hodges-Lehmann estimate and its exact interval); and what every paired comparison of the study reads: the
differences seed by seed (:func:`differences`, :func:`rounded_differences`) and the one-sided tails of many
rows at once (:func:`one_sided`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._checks import check_level, check_margin
from .distributions import (
    ci_halfwidth,
    sign_flip_tails,
    signed_rank_table,
    signed_rank_tails,
)


class PairedTest(NamedTuple):
    """Result of :func:`paired_t`, shaped as SciPy's (``statistic``, ``pvalue``, ``df``) with the effect and its
    interval.

    Attributes
    ----------
    statistic : float
        The t statistic ``estimate / (sd / sqrt(n))``.
    pvalue : float
        Two-sided p-value of the sign-flip distribution of the statistic (:func:`paired_t`).
    df : int
        Degrees of freedom, ``n - 1``.
    estimate : float
        The effect: the mean over seeds of ``a - b`` (negative: ``a`` is lower, i.e. better).
    low, high : float
        Student's t interval of the mean difference at ``confidence``.
    confidence : float
        The interval's level.
    """

    statistic: float
    pvalue: float
    df: int
    estimate: float
    low: float
    high: float
    confidence: float


def t_statistic(d: np.ndarray) -> np.ndarray:
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
    ``p`` two-sided from :func:`sign_flip_tails` (:func:`paired_t`, which tests one pair of vectors through
    it): zero variance gives ``t = +-inf`` (or 0 for identical rows) and ``p = 2 / 2^n`` (or 1), never 0. No
    checks: the callers hold finite differences."""
    d = np.asarray(d, np.float64)
    n = d.shape[-1]
    mean, t = d.mean(axis=-1), t_statistic(d)
    flat = d.reshape(-1, n)
    pl, pg = sign_flip_tails(flat)
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


def paired_t(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, level: float = 0.95
) -> PairedTest:
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
    the t statistic cannot weigh: :func:`~mxopt_jax.compare.stats.pairwise.compare_configurations` tests a pair
    with a diverged seed by the signed-rank test (:func:`wilcoxon`), where it is the worst value on its seed. One seed far off inflates ``s_d`` and can hide a
    consistent difference; the tables' default test is the signed-rank test for that reason.

    The effect is the mean difference with its Student-t interval at ``level`` (:attr:`PairedTest.low`,
    :attr:`PairedTest.high`).

    Raises
    ------
    ValueError
        ``a`` or ``b`` not 1-D, shorter than 2, not finite, or of different lengths; ``level`` outside (0, 1).
    """
    va, vb = _vector(a, "a"), _vector(b, "b")
    if va.shape != vb.shape:
        raise ValueError(f"a and b must have the same length (paired by seed), got {len(va)} and {len(vb)}")
    level = check_level(level)
    d = va - vb
    mean, t, p = paired_t_rows(d[None, :])
    half = ci_halfwidth(d, level)
    est = float(mean[0])
    return PairedTest(float(t[0]), float(p[0]), len(va) - 1, est, est - half, est + half, level)


class SignedRankTest(NamedTuple):
    """Result of :func:`wilcoxon`, shaped as SciPy's (``statistic``, ``pvalue``) with the effect and its interval.

    Attributes
    ----------
    statistic : float
        ``W+``: the sum of the (mid)ranks of ``|a - b|`` over the seeds where ``a - b > 0`` (Pratt's ranking: the
        zero differences are ranked with the others, never signed).
    pvalue : float
        Two-sided exact p-value, ``min(1, 2 min(P(W+ <= w), P(W+ >= w)))`` under the sign-flip distribution
        given the ranks (ties and zeros included).
    expected : float
        ``W+``'s mean under the null: half the sum of the ranks of the nonzero differences.
    n : int
        Seeds (pairs).
    zeros : int
        Seeds where ``a == b`` (or both diverged).
    estimate, low, high, confidence : float
        The effect: the Hodges-Lehmann estimate of ``a - b`` with its exact interval and that interval's
        coverage (:func:`effect`).
    """

    statistic: float
    pvalue: float
    expected: float
    n: int
    zeros: int
    estimate: float
    low: float
    high: float
    confidence: float


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
# one pair where signed_rank_tails took about 100 us per pair of a batch (1e4 x), on 15 seeds about 40 s against
# 0.1-0.4 ms (1e5 x); a table tests every pair of its contenders on every problem. Measured by
# benchmarks/signed_rank_speed.py on 2 shared CPU cores (benchmarks/RESULTS.md). tests/app/test_stats.py holds
# this test to SciPy's permutation test on small tied cases and to method="exact" where that is right (no ties,
# no zeros).
def wilcoxon(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    margin: float = 0.0,
    level: float = 0.95,
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
    (:func:`~mxopt_jax.compare.stats.power.min_seeds`).

    The effect is the Hodges-Lehmann estimate of ``a - b`` with its exact interval at ``level`` (:func:`effect`).

    Raises
    ------
    ValueError
        ``a`` or ``b`` not 1-D, shorter than 2, holding NaN, or of different lengths; ``margin`` negative or not
        finite; ``level`` outside (0, 1).
    """
    va, vb = _paired_vectors(a, b)
    margin = check_margin(margin)
    level = check_level(level)
    d = differences(va, vb)[None, :]
    w2, pl, pg = signed_rank_tails(d)
    if margin:
        pl = signed_rank_tails(d + margin)[1]
        pg = signed_rank_tails(d - margin)[2]
    a_abs = np.abs(d[0])
    ranks = (a_abs[None, :] < a_abs[:, None]).sum(-1) + ((a_abs[None, :] == a_abs[:, None]).sum(-1) + 1) / 2
    expected = float(ranks[a_abs > 0].sum() / 2)
    p = float(min(1.0, 2 * min(pl[0], pg[0])))
    size = effect(d[0], level)
    return SignedRankTest(
        float(w2[0]) / 2,
        p,
        expected,
        len(va),
        int((a_abs == 0).sum()),
        size.estimate,
        size.low,
        size.high,
        size.confidence,
    )


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


def check_test(test: str) -> str:
    if test not in TESTS:
        raise ValueError(f"test must be one of {list(TESTS)}, got {test!r}")
    return test


def one_sided(d: np.ndarray, test: str, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided p-values of every row of ``d`` ``(rows, n)``: ``p_less`` (the first is lower by more than
    ``margin``) and ``p_greater`` (the second is). ``test == "t"``: the sign-flip test of the mean
    (:func:`sign_flip_tails`, :func:`paired_t`'s p-value) on the rows with every value finite; every other row
    the exact signed-rank test (:func:`signed_rank_tails`)."""
    rows = d.shape[0]
    p_less, p_greater = np.ones(rows), np.ones(rows)
    if rows == 0:
        return p_less, p_greater
    use_t = np.isfinite(d).all(axis=-1) if test == "t" else np.zeros(rows, bool)
    if use_t.any():
        p_less[use_t] = sign_flip_tails(d[use_t] + margin)[0]
        p_greater[use_t] = sign_flip_tails(d[use_t] - margin)[1]
    rank = ~use_t
    if rank.any():
        if margin:
            p_less[rank] = signed_rank_tails(d[rank] + margin)[1]
            p_greater[rank] = signed_rank_tails(d[rank] - margin)[2]
        else:
            _, p_less[rank], p_greater[rank] = signed_rank_tails(d[rank])
    return p_less, p_greater


def rounded_differences(vi: np.ndarray, vj: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """The paired differences ``vi - vj`` (lower is better, ``+inf`` diverged; :func:`differences`) with the
    rounding margin applied seed by seed: a difference within ``rtol * max(|vi|, |vj|)`` is no difference (a
    zero, which the tests rank but never sign). And ``twins``: every seed's difference within it (the pair is
    rounding twins, never separated). Both over the last axis (seeds)."""
    d = differences(vi, vj)
    finite = np.isfinite(vi) & np.isfinite(vj)
    tol = np.where(finite, rtol * np.maximum(np.abs(vi), np.abs(vj)), 0.0)
    within = np.abs(d) <= tol
    return np.where(within, 0.0, d), within.all(axis=-1)


def w_plus(d: np.ndarray) -> np.ndarray:
    """Wilcoxon's ``W+`` of every row of ``d`` (``(..., n)``): the sum of the midranks of ``|d|`` (Pratt's
    ranking, :func:`wilcoxon`) over the positive differences."""
    a = np.abs(d)
    less = (a[..., None, :] < a[..., :, None]).sum(axis=-1)
    eq = (a[..., None, :] == a[..., :, None]).sum(axis=-1)
    w = np.where(a > 0, 2 * less + eq + 1, 0)
    return np.asarray(np.where(d > 0, w, 0).sum(axis=-1) / 2.0, np.float64)


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
    level = check_level(level)
    n = len(v)
    k, lo = np.triu_indices(n)
    with np.errstate(invalid="ignore"):
        walsh = np.sort(0.5 * (v[k] + v[lo]))  # NaN (inf - inf) last
    M = len(walsh)
    cdf, _ = signed_rank_table(n)
    ok = np.flatnonzero(cdf[: M // 2 + 1] <= (1 - level) / 2)  # cdf[t] = P(T <= t), t = k - 1
    kk = min(int(ok[-1]) + 1 if len(ok) else 1, (M + 1) // 2)
    confidence = 1.0 - 2.0 * float(cdf[kk - 1])
    finite = walsh[~np.isnan(walsh)]
    est = median_inf(finite) if len(finite) else math.nan
    return Effect(
        median=median_inf(v),
        estimate=est,
        low=float(walsh[kk - 1]),
        high=float(walsh[M - kk]),
        confidence=max(confidence, 0.0),
        n=n,
    )


def median_inf(v: Sequence[float] | np.ndarray) -> float:
    """The median of ``v`` (``numpy.median``'s mean of the two middle values for an even count), an average
    touching an infinite value being that value (``inf`` and ``-inf``: 0, a tie)."""
    s = np.sort(v)
    a, b = s[(len(s) - 1) // 2], s[len(s) // 2]
    if np.isinf(a) or np.isinf(b):
        return 0.0 if np.isinf(a) and np.isinf(b) and a != b else float(a if np.isinf(a) else b)
    return float(0.5 * (a + b))
