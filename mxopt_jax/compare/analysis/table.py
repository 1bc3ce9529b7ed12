"""One table's analysis: :class:`TableAnalysis` (the tests, claims, rank sets, letters and quartiles of one
problem in one mode) and :class:`Claim` (one tested pair), made once by :func:`analyse_table`.

The tests are the protocol's (:func:`mxopt_jax.compare.protocol.compare_table`: the exact signed-rank test of
every pair of the table's entries, paired by seed, Holm over the table, rounding twins never separated, the
problem's practical margin); this module runs them once and keeps what every renderer reads.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from .. import stats
from ..direction import Direction
from ..protocol import LEVEL, TEST, TEST_LEVEL, Selection, TableComparison, compare_table, paired_values
from .across import median_inf

__all__ = ["About", "Claim", "TableAnalysis", "analyse_table"]

#: What a claim speaks of: ``"configurations"`` (a study's own tests hold the chosen configurations fixed) or
#: ``"optimizers"`` (a test with the independent study as the unit, whatever the tuning's luck).
About = Literal["configurations", "optimizers"]


def _num(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits (``inf``, ``-inf``, ``nan`` as such)."""
    return f"{v:.{digits}g}" if math.isfinite(v) else str(v)


@dataclasses.dataclass(frozen=True)
class Claim:
    """One tested pair ``a``, ``b`` of a table's entries: what the test found, whether Holm's correction kept
    it, and how large the difference is.

    Attributes:
      problem, mode: the table (``mode``: ``"tuned"`` or ``"one-shot"``).
      a, b: the two entries (representatives of their identical contenders), ``a`` before ``b`` in the table's
        selections' order.
      test: the test's name (:data:`mxopt_jax.compare.stats.TESTS`: ``"wilcoxon"``, ``"t"``; across studies:
        the across-studies test's).
      statistic: the test's statistic of ``a - b`` on the oriented (lower-is-better) values: Wilcoxon's ``W+``
        (:func:`mxopt_jax.compare.stats.wilcoxon`) or Student's t; NaN where the test has none.
      p: the raw two-sided p-value (1 for rounding twins); ``p_adjusted``: Holm's over the table's pairs.
      effect: the median over the ``n`` paired units of ``a - b`` in the metric's raw units (a diverged seed is
        its worst value; the median of an even count the mean of the two middle ones, an average touching an
        infinite value that value).
      n: the paired units (report seeds, or studies); ``units``: their seeds (or study numbers), ascending.
      about: ``"configurations"`` or ``"optimizers"`` (:data:`About`).
      better: the entry shown better (a rejected test Holm's correction kept), or ``None``: not shown to differ.
      equal: whether the pair are rounding twins (never separated).
      level: the level of the family.
      estimate, low, high, confidence: the Hodges-Lehmann estimate of ``a - b`` (raw units) and its exact
        signed-rank interval with the coverage it has (:func:`mxopt_jax.compare.stats.effect`; with fewer than
        6 units the interval is the whole range of the Walsh averages and ``confidence`` below 95 %).
      family: Holm's family (the tests corrected together: the table's pairs, or every pair of a report under
        the report-wide family).
      agree: how many of the ``n`` units went the way of the claim (the better one lower where lower is better);
        for a pair not shown to differ, the way of the median.
      study: the study the claim comes from (0 for the first), or ``None`` for a claim across the studies.

    Extending it (a new test, an interval): add fields with defaults after these, so every construction stays
    valid, and say in this docstring what they hold.
    """

    problem: str
    mode: str
    a: str
    b: str
    test: str
    statistic: float
    p: float
    p_adjusted: float
    effect: float
    n: int
    units: tuple[int, ...]
    about: About = "configurations"
    better: str | None = None
    equal: bool = False
    level: float = TEST_LEVEL
    estimate: float = math.nan
    low: float = math.nan
    high: float = math.nan
    confidence: float = math.nan
    family: int = 0
    agree: int = 0
    study: int | None = 0

    @property
    def what(self) -> str:
        """What the claim is about, in words: ``"the configurations this study chose"`` or ``"the optimizers,
        over N independent tunings"``."""
        if self.about == "optimizers":
            return f"the optimizers, over {self.n} independent tunings"
        return "the configurations this study chose"

    def sentence(self, metric: str = "") -> str:
        """The claim as a reader would cite it: ``"adam is better than nag on logreg (tuned, median paired
        difference -0.0085 [95 % interval -0.011, -0.006] log-loss, p_adj 0.003, 5 of 5 studies)"``; for a
        pair not shown to differ, ``"adam and nag are not shown to differ ..."``. The interval is the
        Hodges-Lehmann one of ``a - b`` (or ``b - a``, following the sentence's order)."""
        if self.better is not None:
            first, second = self.better, self.worse
            verb = "is better than"
        else:
            first, second = self.a, self.b
            verb = ""
        sign = 1.0 if first == self.a else -1.0
        eff, lo, hi = sign * self.effect, sign * self.low, sign * self.high
        if sign < 0:
            lo, hi = hi, lo
        unit = "studies" if self.about == "optimizers" else "seeds"
        interval = (
            f" [{100 * self.confidence:.3g} % interval {_num(lo)}, {_num(hi)}]"
            if math.isfinite(self.confidence) and not math.isnan(lo)
            else ""
        )
        detail = (
            f"{self.mode}, median paired difference {_num(eff)}{interval}{' ' + metric if metric else ''}, "
            f"p_adj {_num(self.p_adjusted, 2)}, {self.agree} of {self.n} {unit}"
        )
        if self.better is not None:
            return f"{first} {verb} {second} on {self.problem} ({detail})"
        return f"{first} and {second} are not shown to differ on {self.problem} ({detail})"

    @property
    def shown(self) -> bool:
        """Whether the pair was shown to differ."""
        return self.better is not None

    @property
    def worse(self) -> str | None:
        """The entry shown worse, or ``None``."""
        if self.better is None:
            return None
        return self.b if self.better == self.a else self.a


@dataclasses.dataclass(frozen=True)
class TableAnalysis:
    """One table (a problem in one mode) analysed once: every renderer reads it, none re-tests.

    Attributes:
      problem, mode: the table.
      selections: every contender's :class:`~mxopt_jax.compare.protocol.Selection` of the table (folded ones
        included), in the study's order.
      identical: ``{representative: [others]}``: contenders folded into one entry before testing.
      comparison: the tests (:class:`~mxopt_jax.compare.protocol.TableComparison`; its
        :class:`~mxopt_jax.compare.stats.Comparison` holds the matrices).
      claims: one :class:`Claim` per pair of entries (every tested pair, shown or not), in ``(i, j)``, ``i < j``
        order of :attr:`entries`.
      quartiles: ``{contender: (q1, median, q3)}`` of the test values over every report seed, a diverged seed
        the worst value (:func:`mxopt_jax.compare.protocol.quartiles`).
      needed_seeds: the fewest report seeds on which the exact signed-rank test can show a difference in a
        family of this table's pairs (:func:`mxopt_jax.compare.stats.min_seeds`; 0 for fewer than 2 entries).

    The rank sets, letters and display order are the comparison's, by contender name (a folded contender
    answers with its representative's).
    """

    problem: str
    mode: str
    selections: tuple[Selection, ...]
    identical: dict[str, list[str]]
    comparison: TableComparison
    claims: tuple[Claim, ...]
    quartiles: dict[str, tuple[float, float, float]]
    needed_seeds: int = 0

    # ------------------------------------------------------------------ what the tests decided
    @property
    def entries(self) -> tuple[str, ...]:
        """The table's entries (representatives), in the selections' order."""
        return self.comparison.entries

    @property
    def entry(self) -> dict[str, str]:
        """``{contender: its entry}`` for every contender of the table."""
        return self.comparison.entry

    @property
    def order(self) -> list[str]:
        """The entries in display order (rank set, then the median, then the selections' order)."""
        return self.comparison.order

    @property
    def seeds(self) -> int:
        """Report seeds per contender (the paired units)."""
        return self.comparison.seeds

    @property
    def pairs(self) -> int:
        """Holm's family: the pairs of entries."""
        return self.comparison.pairs

    @property
    def test(self) -> str:
        return self.comparison.comparison.test

    @property
    def level(self) -> float:
        return self.comparison.comparison.level

    @property
    def rtol(self) -> float:
        return self.comparison.comparison.rtol

    @property
    def margin(self) -> float:
        return self.comparison.margin

    @property
    def direction(self) -> Direction:
        return Direction(self.comparison.better)

    def rank(self, name: str) -> int:
        """The low end of ``name``'s rank set (``1 +`` the entries shown better)."""
        return self.comparison.rank(name)

    def rank_high(self, name: str) -> int:
        """The high end of ``name``'s rank set."""
        return self.comparison.rank_high(name)

    def rank_set(self, name: str) -> str:
        """``"2"`` or ``"1-3"``."""
        return self.comparison.rank_set(name)

    def midpoint(self, name: str) -> float:
        """The middle of the rank set, what the overall mean rank averages."""
        return self.comparison.midpoint(name)

    def letters(self, name: str) -> str:
        """The compact letter display's letters of ``name``."""
        return self.comparison.letters(name)

    def shown_better(self, a: str, b: str) -> bool:
        """Whether ``a``'s entry was shown better than ``b``'s."""
        return self.comparison.shown_better(a, b)

    # ------------------------------------------------------------------ the selections
    def selection(self, name: str) -> Selection:
        """``name``'s selection (folded contenders included)."""
        for s in self.selections:
            if s.contender == name:
                return s
        raise KeyError(f"{name!r} is not in the table of {self.problem} ({self.mode})")

    @property
    def entry_selections(self) -> list[Selection]:
        """The entries' selections (the representatives), in the selections' order."""
        return [s for s in self.selections if self.entry[s.contender] == s.contender]

    def shown_claims(self) -> list[Claim]:
        """The claims a test showed (Holm's correction kept)."""
        return [c for c in self.claims if c.shown]


def analyse_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    comparison: TableComparison | None = None,
) -> TableAnalysis:
    """One table's analysis: :func:`~mxopt_jax.compare.protocol.compare_table` once (``identical`` folded before
    testing; or ``comparison``, the table's tests already run, e.g. re-decided as one family with the report's
    other tables by :func:`~mxopt_jax.compare.protocol.report_family`), every pair's :class:`Claim`, every
    contender's quartiles.

    Raises
    ------
    ValueError
        as :func:`~mxopt_jax.compare.protocol.compare_table`.
    """
    sels = list(selections)
    if comparison is None:
        comparison = compare_table(sels, identical, level, test)
    c = comparison.comparison
    values, seeds = paired_values(sels)
    row = {s.contender: k for k, s in enumerate(sels)}
    entries = comparison.entries
    units = tuple(int(x) for x in seeds)
    claims = []
    for i in range(len(entries)):
        for j in range(i + 1, len(entries)):
            a, b = entries[i], entries[j]
            d = stats.differences(values[row[a]], values[row[b]])
            shown = a if c.better[i, j] else b if c.better[j, i] else None
            size = stats.effect(d, LEVEL)
            oriented = Direction(comparison.better).orient(d)  # lower: a better
            # the claim's way: a lower (better) is a negative oriented difference; unshown: the median's way
            way = -1.0 if shown == a else 1.0 if shown == b else float(np.sign(median_inf(oriented))) or -1.0
            agree = int((np.sign(oriented) == way).sum())
            claims.append(
                Claim(
                    problem=comparison.problem,
                    mode=comparison.mode,
                    a=a,
                    b=b,
                    test=c.test,
                    statistic=float(c.statistic[i, j]),
                    p=float(c.p[i, j]),
                    p_adjusted=float(c.p_adjusted[i, j]),
                    effect=median_inf(d),
                    n=len(units),
                    units=units,
                    about="configurations",
                    better=shown,
                    equal=bool(c.equal[i, j]),
                    level=c.level,
                    estimate=size.estimate,
                    low=size.low,
                    high=size.high,
                    confidence=size.confidence,
                    family=c.family or c.pairs,
                    agree=agree,
                )
            )
    return TableAnalysis(
        problem=comparison.problem,
        mode=comparison.mode,
        selections=tuple(sels),
        identical={k: list(v) for k, v in (identical or {}).items()},
        comparison=comparison,
        claims=tuple(claims),
        quartiles={s.contender: s.test_quartiles for s in sels},
        needed_seeds=stats.min_seeds(c.pairs, c.level) if c.pairs else 0,
    )
