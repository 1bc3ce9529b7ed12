"""How far two studies' rankings agree, as data (``mxopt-jax agree``: :mod:`mxopt_jax.compare.report.agreement`
reads the studies and renders this).

Per problem both studies ran, over the contenders both ran on it: Kendall's tau-b of their tuned test means
(:func:`kendall_tau`; ties, such as identical contenders or two diverged ones, counted as ties), what tau can
show at that size (its two-sided p-value, :func:`tau_p_value`, and the smallest p-value any order of that many
contenders can have, :func:`smallest_p`: with 4 contenders even the same order, tau = +1, has p = 2/4! = 0.083),
and the overlap of the top ``k`` (by mean, name breaking ties). Contenders in one study only are listed and left
out of both numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import scipy.stats

from ..protocol import Selection

__all__ = [
    "ProblemAgreement",
    "agree",
    "kendall_tau",
    "mean_tau",
    "smallest_p",
    "tau_p_value",
    "tuned_means",
]


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


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value Kendall's tau of ``n`` contenders can have (without ties): ``2 / n!``, the
    same or the reversed order being one of the ``n!`` orders each (NaN below 2). Above 0.05 (``n <= 4``) no
    ranking of that many contenders can show agreement at the 5 % level."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        return math.nan
    return min(1.0, 2.0 / math.factorial(n))


@dataclasses.dataclass
class ProblemAgreement:
    """One problem's agreement between studies ``a`` and ``b``.

    Attributes:
      problem: the problem; ``common``: the contenders both ran on it; ``only_a``/``only_b``: those one ran.
      tau: Kendall's tau-b of the tuned test means over ``common`` (NaN with fewer than two, or all tied).
      p: its two-sided p-value (:func:`tau_p_value`; NaN where tau is).
      top_a, top_b: the ``k`` best of ``common`` in each study (lowest mean first).
      overlap: ``len(set(top_a) & set(top_b))``.
    """

    problem: str
    common: list[str]
    only_a: list[str]
    only_b: list[str]
    tau: float
    top_a: list[str]
    top_b: list[str]
    overlap: int
    p: float = math.nan

    @property
    def orders(self) -> int:
        """How many orders the ``common`` contenders have (``n!``)."""
        return math.factorial(len(self.common))

    @property
    def smallest_p(self) -> float:
        """The smallest p-value tau can have over ``common`` (:func:`smallest_p`)."""
        return smallest_p(len(self.common))


def tuned_means(selections: Iterable[Selection]) -> dict[str, dict[str, float]]:
    """``{problem: {contender: tuned test mean}}`` of a study's selections, every mean lower-is-better (a metric
    better higher is negated) and a diverged one (no finite mean) ``+inf``."""
    out: dict[str, dict[str, float]] = {}
    for sel in selections:
        if sel.mode != "tuned":
            continue
        mean = sel.sign * sel.test_mean if math.isfinite(sel.test_mean) else math.inf
        out.setdefault(sel.problem, {})[sel.contender] = float(mean)
    return out


def agree(
    a: Mapping[str, Mapping[str, float]], b: Mapping[str, Mapping[str, float]], k: int = 3
) -> list[ProblemAgreement]:
    """Per problem in both ``a`` and ``b`` (:func:`tuned_means`' dicts), in ``a``'s order: tau, its p-value and
    the top-``k`` overlap over the contenders both ran."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    rows = []
    for problem in [p for p in a if p in b]:
        xa, xb = a[problem], b[problem]
        common = [c for c in xa if c in xb]
        va, vb = [xa[c] for c in common], [xb[c] for c in common]
        top_a = sorted(common, key=lambda c: (xa[c], c))[:k]
        top_b = sorted(common, key=lambda c: (xb[c], c))[:k]
        rows.append(
            ProblemAgreement(
                problem=problem,
                common=common,
                only_a=[c for c in xa if c not in xb],
                only_b=[c for c in xb if c not in xa],
                tau=kendall_tau(va, vb),
                top_a=top_a,
                top_b=top_b,
                overlap=len(set(top_a) & set(top_b)),
                p=tau_p_value(va, vb),
            )
        )
    return rows


def mean_tau(rows: Iterable[ProblemAgreement]) -> float:
    """The mean of the problems' taus (those defined; NaN when none is): descriptive, not a test."""
    taus = [w.tau for w in rows if math.isfinite(w.tau)]
    return float(np.mean(taus)) if taus else math.nan
