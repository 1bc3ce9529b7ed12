"""The overall ranking over problems: the mean rank, its bootstrap interval over problems and the probability of
being ranked first, each problem's tests' decisions kept as they are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from ._checks import check_level, check_margin, check_matrix, check_rtol
from .paired import ROUNDING_RTOL, TEST, check_test
from .pairwise import _decide, _rank_sets


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
    problem's ranks are the decisions of that problem's own tests (:func:`compare_configurations`), kept as they are: a
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
    level = check_level(level)
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
    each problem the contenders present are compared by :func:`compare_configurations` (``test`` at ``test_level``, Holm over
    the problem's pairs, ``margin`` -- one number, or ``{problem: margin}`` -- and ``rtol``), and a contender's
    rank there is the middle of its simultaneous rank set, ``(low + high) / 2``: 1 for one shown better than
    every other, ``(1 + C) / 2`` for one shown neither better nor worse than any. The mean rank averages those
    over the problems it ran, and the problems are resampled (:func:`bootstrap_problems`, seed ``seed``).

    Raises
    ------
    ValueError
        ``per_problem`` empty, an array not ``(len(names), S_p)`` with ``S_p >= 2``, or every row missing;
        ``names`` empty, not strings or not unique; ``n_boot < 1``; ``level`` or ``test_level`` outside (0, 1);
        ``test``, ``margin`` or ``rtol`` as :func:`compare_configurations`.
    """
    names = _check_names(names)
    level = check_level(level)
    test_level = check_level(test_level, "test_level")
    n_boot = _check_boot(n_boot)
    test = check_test(test)
    rtol = check_rtol(rtol)
    if len(per_problem) == 0:
        raise ValueError("per_problem must hold at least one problem")
    C = len(names)
    rows = []
    for prob, arr in per_problem.items():
        v = check_matrix(arr, f"per_problem[{prob!r}]")
        if v.shape[0] != C:
            raise ValueError(f"per_problem[{prob!r}] must have {C} rows (one per name), got {v.shape[0]}")
        m = check_margin(margin.get(prob, 0.0) if isinstance(margin, Mapping) else margin)
        present = ~np.isnan(v).all(axis=1)
        better = _decide(v[None], present[None], test_level, test, m, rtol)[0]
        low, high = _rank_sets(better, present[None])
        rows.append(0.5 * (low[0] + high[0]))
    return bootstrap_problems(np.stack(rows), names, n_boot, seed, level)
