"""What one table may claim: every pair of its contenders tested (:func:`compare_configurations`, or under their
searches, :func:`compare_searches`), Holm over the table (or over a whole report, :func:`holm_family`),
rounding twins never separated, and what the table prints of it: the compact letter display (:func:`letters`)
and the simultaneous rank sets (:class:`Comparison`); the divergence counts compared on their own
(:func:`compare_divergence`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._checks import check_level, check_margin, check_matrix, check_rtol
from .multiple import holm_adjusted, holm_together
from .paired import ROUNDING_RTOL, TEST, check_test, one_sided, rounded_differences, t_statistic, w_plus


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
    d, twins = rounded_differences(v[:, i], v[:, j], rtol)  # (B, P, S), (B, P)
    tested = present[:, i] & present[:, j]
    P = len(i)
    margins = np.broadcast_to(np.asarray(margin, np.float64), (B,))
    p_less, p_greater = np.ones((B, P)), np.ones((B, P))
    for m in np.unique(margins) if P else ():
        rows = margins == m
        pl, pg = one_sided(d[rows].reshape(-1, S), test, float(m))
        p_less[rows], p_greater[rows] = pl.reshape(-1, P), pg.reshape(-1, P)
    p = np.minimum(1.0, 2 * np.minimum(p_less, p_greater))
    p = np.where(twins, 1.0, p)
    p = np.where(tested, p, np.nan)
    stat = w_plus(d)  # (B, P); W+ of the reversed pair is the rank total minus it
    stat_ji = w_plus(np.abs(d)) - stat  # the ranks of the nonzero differences, less W+
    if test == "t" and P:
        use_t = np.isfinite(d).all(axis=-1)
        if use_t.any():
            t = t_statistic(d[use_t])
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
    better, adjusted, equal = _square(pt, holm_adjusted(pt.p), level, C)
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
    """Result of :func:`compare_configurations`: what one table's tests showed (arrays in the rows' order).

    Attributes
    ----------
    better : numpy.ndarray
        ``(C, C)`` bool: ``[i, j]`` when ``i`` was shown better than ``j`` (a rejected test).
    pvalue_adjusted : numpy.ndarray
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
        What was run (:func:`compare_configurations`).
    pvalue : numpy.ndarray
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
        Holm's family: the number of tests corrected together, the table's ``pairs`` (:func:`compare_configurations`) or
        every pair of every table of a report (:func:`holm_family`).
    """

    better: np.ndarray
    pvalue_adjusted: np.ndarray
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
    pvalue: np.ndarray = np.zeros((0, 0))
    statistic: np.ndarray = np.zeros((0, 0))
    direction: np.ndarray = np.zeros((0, 0), np.int64)
    median: np.ndarray = np.zeros(0)
    family: int = 0

    @property
    def pair_pvalues(self) -> np.ndarray:
        """``(pairs,)`` the raw two-sided p-values of the pairs, in ``numpy.triu_indices`` order (what a Holm
        family corrects).

        Raises
        ------
        ValueError
            a comparison without its raw p-values (not from :func:`compare_configurations`).
        """
        if self.pvalue.shape != self.equal.shape:
            raise ValueError(
                "the comparison must come from compare_configurations() (it carries the raw p-values)"
            )
        return np.asarray(self.pvalue[np.triu_indices(len(self.median), 1)])

    def redecided(self, adjusted: np.ndarray, family: int, level: float | None = None) -> Comparison:
        """This table's raw tests decided again with the pairs' adjusted p-values ``adjusted`` (``(pairs,)``,
        ``numpy.triu_indices`` order, e.g. corrected in a larger Holm family of ``family`` tests) at ``level``
        (default: its own): the claims, rank sets, letters and order follow them; the raw tests, directions and
        rounding twins stay."""
        lvl = self.level if level is None else level
        return _decided(
            self.pvalue,
            self.statistic,
            self.direction,
            self.equal,
            self.median,
            adjusted,
            family,
            self.test,
            lvl,
            self.margin,
            self.rtol,
        )


def _median_key(v: np.ndarray) -> np.ndarray:
    """The median of each row (the mean of the two middle values for an even count), ``+inf`` (diverged) the
    largest value."""
    return np.median(np.where(np.isfinite(v), v, np.inf), axis=-1)


def compare_configurations(
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
    v = check_matrix(values)
    level = check_level(level)
    test = check_test(test)
    margin = check_margin(margin)
    rtol = check_rtol(rtol)
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
        raw,
        statistic,
        direction,
        equal,
        _median_key(v),
        holm_adjusted(pt.p[0]),
        len(i),
        test,
        level,
        margin,
        rtol,
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
        pvalue_adjusted=adjusted,
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
        pvalue=p,
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
    largest = np.full((B, C, C), np.nan)
    binding = np.full((B, C, C), -1, np.int64)
    stat = np.full((B, C, C), np.nan)
    if C < 2:
        return largest, binding, stat
    i, j = np.nonzero(~np.eye(C, dtype=bool))  # every ordered pair
    d, twins = rounded_differences(v[:, i, None, :], g[:, j], rtol)  # (B, P, G, S), (B, P, G)
    p_less, _ = one_sided(d.reshape(-1, S), test, margin)
    p = np.where(twins, 1.0, p_less.reshape(B, len(i), G))
    # the binding configuration: the largest p-value, and among equal ones (every seed the same way at several
    # configurations: the smallest p-value the seeds allow) the one closest to i, its median difference largest
    with np.errstate(invalid="ignore"):
        closeness = np.nan_to_num(np.median(d, axis=-1), nan=0.0, posinf=np.inf, neginf=-np.inf)
    top = p >= p.max(axis=-1, keepdims=True)
    k = np.argmax(np.where(top, closeness, -np.inf), axis=-1)
    k = np.where(top[np.arange(B)[:, None], np.arange(len(i))[None, :], k], k, np.argmax(p, axis=-1))
    largest[:, i, j] = np.take_along_axis(p, k[..., None], axis=-1)[..., 0]
    binding[:, i, j] = k
    w = np.take_along_axis(d, k[..., None, None], axis=2)[:, :, 0]
    stat[:, i, j] = w_plus(w)
    return largest, binding, stat


class SearchComparison(NamedTuple):
    """Result of :func:`compare_searches`: one table's claims about the optimizers under their searches.

    Attributes
    ----------
    comparison : Comparison
        The table's decisions (arrays in the rows' order), as :func:`compare_configurations` gives them: ``better[i, j]`` when
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
    correction over the ``C (C - 1) / 2`` pairs at ``level`` decides, as :func:`compare_configurations` does, and the rank
    sets, letters and display order follow. Rows within the rounding margin on every seed at a configuration
    (rounding twins: the same update rounded differently) are never separated at it: such a component's p-value
    is 1. The smallest p-value on ``n`` seeds is ``2 / 2^n``, as for :func:`compare_configurations`, so :func:`min_seeds` holds
    for it too.

    Raises
    ------
    ValueError
        ``chosen`` not ``(C, S)`` with ``S >= 2``; ``searches`` not ``C`` arrays ``(G_i, S)`` with ``G_i >= 1``;
        ``level``, ``test``, ``margin`` or ``rtol`` as :func:`compare_configurations`.
    """
    v = check_matrix(chosen, "chosen")
    level = check_level(level)
    test = check_test(test)
    margin = check_margin(margin)
    rtol = check_rtol(rtol)
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
        _, tw = rounded_differences(v[iu], v[ju], rtol)
        equal[iu, ju] = equal[ju, iu] = tw
    comparison = _decided(
        raw, stat, direction, equal, _median_key(v), holm_adjusted(pair_p), len(iu), test, level, margin, rtol
    )
    return SearchComparison(comparison, one_sided, binding, sizes)


def holm_family(comparisons: Sequence[Comparison], level: float | None = None) -> list[Comparison]:
    """The tables ``comparisons`` (each from :func:`compare_configurations`) re-decided as *one* Holm family: every pair of
    every table corrected together (``m`` = the sum of the tables' pairs), so that the chance of any false
    claim anywhere in them is at most ``level`` (default: the tables' own level), where a family per table
    bounds it only table by table (under a global null, ``T`` tables at 5 % carry some false claim with
    probability up to ``1 - 0.95^T``: 40 % for 10 tables). Each table keeps its raw tests, its directions, its
    rounding twins; its claims, rank sets, letters and order follow the new adjusted p-values, which are never
    below the per-table ones, so a report-wide claim is also a per-table claim.

    Raises
    ------
    ValueError
        a table without its raw p-values (not from :func:`compare_configurations`); ``level`` outside (0, 1).
    """
    tables = list(comparisons)
    if not tables:
        return []
    raws = [c.pair_pvalues for c in tables]
    lvl = check_level(tables[0].level if level is None else level)
    adjusted, m = holm_together(raws)
    return [c.redecided(a, m, lvl) for c, a in zip(tables, adjusted, strict=True)]


def significantly_better(
    values: Sequence[Sequence[float]] | np.ndarray,
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> np.ndarray:
    """``(C, C)`` bool: ``out[i, j]`` when contender ``i`` was shown better than ``j`` on one table (lower is
    better): :attr:`Comparison.better` of :func:`compare_configurations` (its rule in full there). Never both ``out[i, j]``
    and ``out[j, i]``; the diagonal is False.

    Raises
    ------
    ValueError
        as :func:`compare_configurations`.
    """
    return compare_configurations(values, level, test, margin, rtol).better


def ranks(
    values: Sequence[Sequence[float]] | np.ndarray,
    level: float = 0.05,
    test: str = TEST,
    margin: float = 0.0,
    rtol: float = ROUNDING_RTOL,
) -> list[int]:
    """Each contender's rank on one table: ``1 +`` the number of contenders shown better than it (lower is
    better), the low end of its simultaneous rank set (:func:`compare_configurations`, whose rule is quoted in full there).

    A rank therefore stands for tested claims only: rank ``r`` means ``r - 1`` contenders were each shown better
    by a test that Holm's correction kept. It says nothing about the contenders it was not compared favourably
    or unfavourably with: two contenders with ranks 1 and 2 need not differ from each other (A ~ B, B ~ C,
    A < C gives 1, 1, 2: B and C are not shown to differ). The letters and the rank sets of :func:`compare_configurations` show
    exactly which pairs differ; tables print those. A diverged run is the worst value on its seed: a contender
    that diverged on one seed of ten is compared on all ten (it loses that seed), not sent to the bottom.

    Raises
    ------
    ValueError
        as :func:`compare_configurations`.
    """
    return [int(r) for r in compare_configurations(values, level, test, margin, rtol).rank_low]


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
    pvalue, pvalue_adjusted : numpy.ndarray
        ``(C, C)`` the exact two-sided sign test's p-value and its Holm-adjusted value (symmetric; NaN where the
        two diverged on the same seeds: nothing to compare).
    family : int
        The pairs compared (those diverging on different seeds).
    level : float
    """

    diverged: np.ndarray
    fewer: np.ndarray
    discordant: np.ndarray
    pvalue: np.ndarray
    pvalue_adjusted: np.ndarray
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
    separated). The value tests (:func:`compare_configurations`) count a diverged seed as the worst value, so one diverged seed
    in 16 can keep a contender from being shown better (:func:`smallest_p`); this comparison says separately
    which contender diverges more often: 8 of 16 seeds against none gives ``p = 2 / 2^8 = 0.0078``.

    Raises
    ------
    ValueError
        ``values`` not ``(C, S)`` with ``S >= 2``; ``level`` outside (0, 1).
    """
    v = check_matrix(values)
    level = check_level(level)
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
        a = holm_adjusted(raw)
        adj[i, j] = adj[j, i] = a
    sig = adj <= level
    fewer = sig & (only > only.T)
    return DivergenceComparison(
        diverged=div.sum(axis=-1).astype(np.int64),
        fewer=fewer,
        discordant=only.astype(np.int64),
        pvalue=p,
        pvalue_adjusted=adj,
        family=int((n > 0).sum()),
        level=level,
    )
