"""How far two studies' rankings agree, as data (``mxopt-jax agree``: :mod:`mxopt_jax.compare.report.agreement`
reads the studies and renders this).

Per problem both studies ran, over the contenders both ran on it: Kendall's tau-b of their tuned test means
(:func:`~mxopt_jax.compare.stats.agreement.kendall_tau`; ties, such as identical contenders or two diverged ones,
counted as ties), what tau can show at that size (its two-sided p-value, :func:`~mxopt_jax.compare.stats.
agreement.tau_p_value`, and the smallest p-value any order of that many contenders can have,
:func:`~mxopt_jax.compare.stats.agreement.smallest_tau_p`: with 4 contenders even the same order, tau = +1, has
p = 2/4! = 0.083),
and the overlap of the top ``k`` (by mean, name breaking ties). Contenders in one study only are listed and left
out of both numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping

import numpy as np

from ..selection import Selection
from ..stats.agreement import kendall_tau, smallest_tau_p, tau_p_value

__all__ = [
    "ProblemAgreement",
    "agree",
    "mean_tau",
    "tuned_means",
]


@dataclasses.dataclass
class ProblemAgreement:
    """One problem's agreement between studies ``a`` and ``b``.

    Attributes:
      problem: the problem; ``common``: the contenders both ran on it; ``only_a``/``only_b``: those one ran.
      tau: Kendall's tau-b of the tuned test means over ``common`` (NaN with fewer than two, or all tied).
      p: its two-sided p-value (:func:`~mxopt_jax.compare.stats.agreement.tau_p_value`; NaN where tau is).
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
        """The smallest p-value tau can have over ``common`` (:func:`mxopt_jax.compare.stats.agreement.
        smallest_tau_p`)."""
        return smallest_tau_p(len(self.common))


def tuned_means(selections: Iterable[Selection]) -> dict[str, dict[str, float]]:
    """``{problem: {contender: tuned test mean}}`` of a study's selections, every mean lower-is-better (oriented:
    :meth:`~mxopt_jax.compare.direction.Direction.orient`) and a diverged one (no finite mean) ``+inf``."""
    out: dict[str, dict[str, float]] = {}
    for sel in selections:
        if sel.mode != "tuned":
            continue
        mean = float(sel.direction.orient(sel.test_mean)) if math.isfinite(sel.test_mean) else math.inf
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
