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
from ..protocol import (
    LEVEL,
    TEST,
    TEST_LEVEL,
    Selection,
    TableComparison,
    compare_table,
    paired_values,
    search_table,
    searchable,
)
from .across import median_inf

__all__ = ["About", "Claim", "TableAnalysis", "analyse_table"]

#: What a claim speaks of: ``"optimizers"`` (in one study: each contender under its search and budget, the one
#: shown better at its chosen configuration beating the other at every configuration the other's search tried;
#: across studies: the study as the unit, whatever the tuning's luck), ``"configurations"`` (a study's chosen
#: configurations, held fixed: the tuning's luck is inside the claim) or ``"defaults"`` (the default
#: configurations, no tuning: the one-shot mode).
About = Literal["configurations", "optimizers", "defaults"]


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
      search, tried, chosen, versus, steps, selection_seeds, edge: what a claim about the optimizers in one study
        rests on (``about == "optimizers"``, ``study`` not ``None``): ``search`` the search's name for its
        configurations (``"rates"``, ``"trials"``), ``tried`` how many configurations ``a``'s and ``b``'s
        searches tried, ``chosen`` their chosen configurations in words (``"lr 0.01"``), ``versus`` for a shown
        claim the worse one's configuration that came closest to the better one's (in words; the claim's effect
        and interval are measured against it), ``steps`` the training budget, ``selection_seeds`` the seeds the
        configurations were chosen on, ``edge`` whether a chosen configuration the claim rests on sits on the
        edge of what its search tried (the best may lie beyond it).
      model: across studies, the model-based reading of ``a - b`` (raw units): the random-effects estimate with
        its Hartung-Knapp 95 % interval, ``(estimate, low, high)`` (:func:`mxopt_jax.compare.analysis.across.
        random_effects`); an effect with an interval, never a claim; NaN elsewhere.

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
    search: str = ""
    tried: tuple[int, int] = (0, 0)
    chosen: tuple[str, str] = ("", "")
    versus: str = ""
    steps: int = 0
    selection_seeds: int = 0
    edge: bool = False
    model: tuple[float, float, float] = (math.nan, math.nan, math.nan)

    @property
    def what(self) -> str:
        """What the claim is about, in words: ``"the optimizers under this search and budget"`` (one study),
        ``"the optimizers, over N independent tunings"``, ``"the default configurations, over N independent
        studies"``, ``"the configurations this study chose"`` or ``"the default configurations"``."""
        if self.study is None:
            if self.mode == "one-shot":
                return f"the default configurations, over {self.n} independent studies"
            return f"the optimizers, over {self.n} independent tunings"
        if self.about == "optimizers":
            return "the optimizers under this search and budget"
        if self.about == "defaults" or self.mode == "one-shot":
            return "the default configurations"
        return "the configurations this study chose"

    def _side(self, name: str) -> str:
        """``"adam (lr 0.01, chosen from 7 rates on 5 seeds, 200 steps)"`` for a claim about the optimizers."""
        k = 0 if name == self.a else 1
        if not self.chosen[k]:
            return name
        return (
            f"{name} ({self.chosen[k]}, chosen from {self.tried[k]} {self.search} on {self.selection_seeds} "
            f"seeds, {self.steps} steps)"
        )

    def sentence(self, metric: str = "") -> str:
        """The claim as a reader would cite it, naming what it is about:

        * about the optimizers, one study: ``"adam (lr 0.01, chosen from 7 rates on 5 seeds, 200 steps) is
          better than nag at every one of nag's 7 rates on logreg (16 seeds, p_adj 0.003; median paired
          difference -0.0085 [95.6 % interval -0.011, -0.006] log-loss against nag's lr 0.0316, 16 of 16
          seeds)"``;
        * the chosen configurations: ``"adam is better than nag at their chosen rates on logreg (...)"``;
        * the default configurations: ``"... at their default configurations ..."``;
        * across studies: ``"... over 5 independent tunings ..."`` (``"studies"`` for the one-shot mode).

        For a pair not shown to differ, ``"adam and nag are not shown to differ ..."``. The interval is the
        Hodges-Lehmann one of the difference (in the sentence's order)."""
        if self.better is not None:
            first, second = self.better, self.worse or ""
        else:
            first, second = self.a, self.b
        sign = 1.0 if first == self.a else -1.0
        eff, lo, hi = sign * self.effect, sign * self.low, sign * self.high
        if sign < 0:
            lo, hi = hi, lo
        across = self.study is None
        unit = "studies" if across else "seeds"
        interval = (
            f" [{100 * self.confidence:.3g} % interval {_num(lo)}, {_num(hi)}]"
            if math.isfinite(self.confidence) and not math.isnan(lo)
            else ""
        )
        size = f"median paired difference {_num(eff)}{interval}{' ' + metric if metric else ''}"
        edge = "; a chosen configuration on its search's edge" if self.edge else ""
        if self.about == "optimizers" and not across:
            if self.better is None:
                return (
                    f"{first} and {second} are not shown to differ under their searches on {self.problem} "
                    f"({self.n} seeds, p_adj {_num(self.p_adjusted, 2)}; at their chosen configurations {size})"
                )
            k = 1 if second == self.b else 0
            return (
                f"{self._side(first)} is better than {second} at every one of {second}'s {self.tried[k]} "
                f"{self.search} on {self.problem} ({self.n} seeds, p_adj {_num(self.p_adjusted, 2)}; {size} "
                f"against {second}'s {self.versus}, {self.agree} of {self.n} seeds{edge})"
            )
        if across:
            at = f"over {self.n} independent {'studies' if self.mode == 'one-shot' else 'tunings'}"
        else:
            at = "at their default configurations" if self.mode == "one-shot" else "at their chosen rates"
        detail = f"{size}, p_adj {_num(self.p_adjusted, 2)}, {self.agree} of {self.n} {unit}"
        if self.better is not None:
            return f"{first} is better than {second} {at} on {self.problem} ({detail})"
        return f"{first} and {second} are not shown to differ {at} on {self.problem} ({detail})"

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
      configurations: for a table whose claims are about the optimizers under their searches
        (``comparison.searches``), the tests of the chosen configurations alone
        (:func:`~mxopt_jax.compare.protocol.compare_table`) and their claims, ``configuration_claims``
        (``about="configurations"``: claims.csv keeps them; the tuning's luck is inside them); else ``None`` and
        empty.
      hopeless: the entries that diverged on every report seed at every configuration they tried (the claims
        against them need no test; the report sums them up in one line).

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
    configurations: TableComparison | None = None
    configuration_claims: tuple[Claim, ...] = ()
    hopeless: tuple[str, ...] = ()

    @property
    def about(self) -> str:
        """What the table's claims speak of (:attr:`~mxopt_jax.compare.protocol.TableComparison.about`)."""
        return self.comparison.about

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

    @property
    def best(self) -> tuple[str, ...]:
        """The entries no other entry was shown better than (their rank set starts at 1), in display order:
        the table's best set (:class:`~mxopt_jax.compare.analysis.verdict.Verdict`, the figures' shading)."""
        return tuple(n for n in self.order if self.rank(n) == 1)

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


def _words(s: Selection, row: int | None = None) -> str:
    """A configuration of ``s``'s search in words: ``"lr 0.01"`` (the chosen one, or row ``row`` of its report
    grid; a random search's other hyperparameters are not named)."""
    lr = s.lr if row is None else float(np.asarray(s.lrs)[row])
    return f"lr {lr:.3g}"


def _claims(
    comparison: TableComparison,
    sels: Sequence[Selection],
    values: np.ndarray,
    seeds: np.ndarray,
) -> list[Claim]:
    """One :class:`Claim` per pair of ``comparison``'s entries (``values``: every selection's report values,
    paired by ``seeds``, rows in ``sels``' order)."""
    c = comparison.comparison
    row = {s.contender: k for k, s in enumerate(sels)}
    by = {s.contender: s for s in sels}
    entries = comparison.entries
    units = tuple(int(x) for x in seeds)
    searches = comparison.searches
    about = comparison.about
    direction = Direction(comparison.better)
    out = []
    for i in range(len(entries)):
        for j in range(i + 1, len(entries)):
            a, b = entries[i], entries[j]
            shown = a if c.better[i, j] else b if c.better[j, i] else None
            va, vb = values[row[a]], values[row[b]]
            extra: dict = {}
            if searches is not None:
                sa, sb = by[a], by[b]
                extra = {
                    "search": "trials" if sa.edges or sb.edges else "rates",
                    "tried": (int(searches.configurations[i]), int(searches.configurations[j])),
                    "chosen": (_words(sa), _words(sb)),
                    "steps": int(sa.steps),
                    "selection_seeds": len(sa.val_final),
                    "edge": sa.on_edge is not None or sb.on_edge is not None or bool(sa.edges or sb.edges),
                }
                if shown is not None:  # the effect against the worse one's configuration that came closest
                    k = int(searches.binding[i, j] if shown == a else searches.binding[j, i])
                    worse = sb if shown == a else sa
                    grid = np.asarray(worse.report_grid, np.float64)[
                        :, np.argsort(np.asarray(worse.report_seeds, np.int64), kind="stable")
                    ]
                    closest = np.where(np.isfinite(grid[k]), grid[k], worse.sign * np.inf)
                    extra["versus"] = _words(worse, k)
                    if shown == a:
                        vb = closest
                    else:
                        va = closest
            d = stats.differences(va, vb)
            size = stats.effect(d, LEVEL)
            oriented = direction.orient(d)  # lower: a better
            # the claim's way: a lower (better) is a negative oriented difference; unshown: the median's way
            way = -1.0 if shown == a else 1.0 if shown == b else float(np.sign(median_inf(oriented))) or -1.0
            agree = int((np.sign(oriented) == way).sum())
            out.append(
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
                    about=about,  # type: ignore[arg-type]
                    better=shown,
                    equal=bool(c.equal[i, j]),
                    level=c.level,
                    estimate=size.estimate,
                    low=size.low,
                    high=size.high,
                    confidence=size.confidence,
                    family=c.family or c.pairs,
                    agree=agree,
                    **extra,
                )
            )
    return out


def analyse_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    comparison: TableComparison | None = None,
    configurations: TableComparison | None = None,
) -> TableAnalysis:
    """One table's analysis: its tests once and every pair's :class:`Claim`, every contender's quartiles.

    A tuned table whose contenders ran every configuration on the report seeds is compared under their searches
    (:func:`~mxopt_jax.compare.protocol.search_table`: claims about the optimizers), and its chosen
    configurations alone as well (:func:`~mxopt_jax.compare.protocol.compare_table`, the
    ``configuration_claims``); any other table by :func:`~mxopt_jax.compare.protocol.compare_table` (``identical``
    folded before testing). ``comparison`` / ``configurations``: the tests already run (e.g. re-decided as one
    family with the report's other tables by :func:`~mxopt_jax.compare.protocol.report_family`).

    Raises
    ------
    ValueError
        as :func:`~mxopt_jax.compare.protocol.compare_table`.
    """
    sels = list(selections)
    if comparison is None:
        comparison = (search_table if searchable(sels) else compare_table)(sels, identical, level, test)
    if comparison.searches is not None and configurations is None:
        configurations = compare_table(sels, identical, level, test)
    values, seeds = paired_values(sels)
    claims = _claims(comparison, sels, values, seeds)
    config_claims = _claims(configurations, sels, values, seeds) if configurations is not None else []
    c = comparison.comparison
    by = {s.contender: s for s in sels}
    hopeless = tuple(
        n
        for n in comparison.entries
        if not np.isfinite(
            np.asarray(by[n].report_grid if by[n].report_grid is not None else by[n].test, np.float64)
        ).any()
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
        configurations=configurations,
        configuration_claims=tuple(config_claims),
        hopeless=hopeless,
    )
