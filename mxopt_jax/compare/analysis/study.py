"""A whole study's analysis: :class:`StudyAnalysis`, made once by :func:`analyse_study` from a result
(:attr:`mxopt_jax.compare.result.StudyResult.analysis` builds and keeps it; every renderer reads it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from .. import stats
from ..protocol import LEVEL, Selection, TableComparison, compare_table, report_family
from .across import AcrossStudies, across_studies, common_identity, median_inf
from .overall import Ranking, analyse_ranking
from .table import Claim, TableAnalysis, analyse_table

__all__ = ["MODES", "StudyAnalysis", "across_claims", "analyse", "analyse_study"]

#: The two modes a study reports, in the order the report shows them.
MODES = ("tuned", "one-shot")


class _Problem(Protocol):
    @property
    def name(self) -> str: ...


class _Result(Protocol):
    """What :func:`analyse_study` reads of a result (:class:`mxopt_jax.compare.result.StudyResult` has it)."""

    @property
    def problems(self) -> Sequence[_Problem]: ...

    @property
    def tuned(self) -> Mapping[str, Mapping[str, Selection]]: ...

    @property
    def one_shot(self) -> Mapping[str, Mapping[str, Selection]]: ...

    def identical_map(self, problem: str, mode: str = "tuned") -> dict[str, list[str]]: ...

    def identical_everywhere(self, mode: str = "tuned") -> dict[str, list[str]]: ...

    def studies(self) -> Sequence[_Result]: ...


@dataclasses.dataclass(frozen=True)
class StudyAnalysis:
    """Everything a study's report says, computed once.

    Attributes:
      tables: ``{(problem, mode): TableAnalysis}`` of the first study, problems in the study's order, tuned
        before one-shot for each problem.
      rankings: ``{mode: Ranking}``: the overall ranking of each mode that has a table.
      identical: ``{mode: {representative: [others]}}``: contenders identical on every problem in that mode
        (one row of the overall tables); ``identical_both``: those identical in both modes (one row of the
        one-shot-against-tuned table).
      across: one :class:`~mxopt_jax.compare.analysis.across.AcrossStudies` per table run in every study of
        the plan (empty for a study of one), problems in order, tuned then one-shot.
    """

    tables: dict[tuple[str, str], TableAnalysis]
    rankings: dict[str, Ranking]
    identical: dict[str, dict[str, list[str]]]
    identical_both: dict[str, list[str]]
    across: tuple[AcrossStudies, ...] = ()

    def table(self, problem: str, mode: str = "tuned") -> TableAnalysis:
        """The analysis of ``problem``'s table in ``mode``."""
        return self.tables[(problem, mode)]

    def tables_of(self, mode: str) -> dict[str, TableAnalysis]:
        """``{problem: TableAnalysis}`` of ``mode``, problems in order."""
        return {p: t for (p, m), t in self.tables.items() if m == mode}

    def all_tables(self) -> list[TableAnalysis]:
        """Every table: the tuned ones problem by problem, then the one-shot ones (``summary.csv``'s order)."""
        return [t for mode in MODES for t in self.tables_of(mode).values()]

    def claims(self) -> list[Claim]:
        """Every tested pair of every table, in :meth:`all_tables`' order."""
        return [c for t in self.all_tables() for c in t.claims]

    def across_claims(self) -> list[Claim]:
        """Every tested pair of every table read across the independent studies (:func:`across_claims`), the
        claims about the optimizers; empty for a study of one."""
        return [c for a in self.across for c in across_claims(a)]


def across_claims(a: AcrossStudies) -> list[Claim]:
    """One :class:`Claim` per pair of ``a``'s entries (``about="optimizers"``, ``study=None``): the
    across-studies test's raw and Holm-adjusted p-values, its statistic (``W+`` of the studies' effects, oriented
    lower-is-better; Student's t of them for the t option), the effect (the median over the studies of each
    study's median paired difference, raw units) with the Hodges-Lehmann estimate and exact interval over the
    studies (:func:`mxopt_jax.compare.stats.effect`: with fewer than 6 studies the interval is the range and its
    coverage below 95 %), and in how many studies the effect went the claim's way."""
    out: list[Claim] = []
    C, N = len(a.names), a.studies
    units = tuple(range(N))
    for i in range(C):
        for j in range(i + 1, C):
            eff = a.effects[:, i, j] if a.effects.size else np.zeros(N)
            oriented = a.direction.orient(eff)
            if a.test == "t" and np.isfinite(oriented).all() and N > 1:
                sd = oriented.std(ddof=1)
                stat = (
                    float(oriented.mean() / (sd / np.sqrt(N)))
                    if sd > 0
                    else math.copysign(math.inf, oriented.mean())
                    if oriented.mean()
                    else 0.0
                )
            else:
                stat = float(stats._w_plus(oriented[None])[0])
            better = a.names[i] if a.shown[i, j] else a.names[j] if a.shown[j, i] else None
            way = (
                -1.0
                if better == a.names[i]
                else 1.0
                if better == a.names[j]
                else float(np.sign(median_inf(oriented))) or -1.0
            )
            size = stats.effect(eff, LEVEL)
            p = float(a.p[i, j]) if a.p.size else math.nan
            out.append(
                Claim(
                    problem=a.problem,
                    mode=a.mode,
                    a=a.names[i],
                    b=a.names[j],
                    test=a.test,
                    statistic=stat,
                    p=p,
                    p_adjusted=float(a.p_adjusted[i, j]),
                    effect=size.median,
                    n=N,
                    units=units,
                    about="optimizers",
                    better=better,
                    equal=bool(np.all(eff == 0)),
                    level=a.level,
                    estimate=size.estimate,
                    low=size.low,
                    high=size.high,
                    confidence=size.confidence,
                    family=a.pairs,
                    agree=int((np.sign(oriented) == way).sum()),
                    study=None,
                )
            )
    return out


def analyse(
    selections: Iterable[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    *,
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
    identical_by_mode: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    family: str = "table",
) -> StudyAnalysis:
    """The analysis of a set of selections (a study's, or any a user made with
    :func:`mxopt_jax.compare.protocol.select`; both modes mixed or not): each problem's table of each mode
    (:attr:`Selection.mode <mxopt_jax.compare.protocol.Selection.mode>`) tested once, the overall ranking of each
    mode from those tables. Problems and contenders keep the order met.

    ``family`` (:data:`mxopt_jax.compare.protocol.FAMILIES`): ``"table"`` (the default) corrects each table's
    pairs by Holm on their own; ``"report"`` corrects every pair of every table together (:func:`~mxopt_jax.
    compare.protocol.report_family`), so that the chance of any false claim in the whole report is at most the
    level.

    Identity (``{representative: [others]}``): ``identical_by_problem[problem][mode]`` folds a table (default
    ``identical``); ``identical_by_mode[mode]`` folds the rows of that mode's overall table (contenders identical
    on every problem; default ``identical``).

    Raises
    ------
    ValueError
        as :func:`~mxopt_jax.compare.analysis.table.analyse_table`.
    """
    sels = list(selections)
    by_mode = {m: _by_problem(s for s in sels if s.mode == m) for m in MODES}
    problems = list(dict.fromkeys([*by_mode["tuned"], *by_mode["one-shot"]]))
    flat = {k: list(v) for k, v in (identical or {}).items()}
    tested: dict[tuple[str, str], tuple[list[Selection], Mapping[str, Sequence[str]], TableComparison]] = {}
    for p in problems:
        for mode in MODES:
            table = by_mode[mode].get(p)
            if table:
                ident = (identical_by_problem or {}).get(p, {}).get(mode, flat)
                tested[(p, mode)] = (table, ident, compare_table(table, ident))
    # the report's error control: a family per table (as printed by default) or every table's pairs one family
    decided = report_family([t for _, _, t in tested.values()], family)
    tables: dict[tuple[str, str], TableAnalysis] = {
        key: analyse_table(sels, ident, comparison=c)
        for (key, (sels, ident, _)), c in zip(tested.items(), decided, strict=True)
    }
    everywhere = {m: {k: list(v) for k, v in (identical_by_mode or {}).get(m, flat).items()} for m in MODES}
    rankings = {}
    for mode in MODES:
        of = {p: t for (p, m), t in tables.items() if m == mode}
        if of:
            rankings[mode] = analyse_ranking(of, everywhere[mode], family=family)
    both = common_identity([everywhere["tuned"], everywhere["one-shot"]])
    return StudyAnalysis(tables, rankings, everywhere, both)


def _by_problem(selections: Iterable[Selection]) -> dict[str, list[Selection]]:
    out: dict[str, list[Selection]] = {}
    for s in selections:
        out.setdefault(s.problem, []).append(s)
    return out


def analyse_study(result: _Result) -> StudyAnalysis:
    """The analysis of ``result``: each table's tests once (folded by that table's identity), the overall
    ranking of each mode from them (:func:`analyse`), and, for a plan of several independent studies, each
    table read across the studies (:func:`~mxopt_jax.compare.analysis.across.across_studies`).

    Raises
    ------
    ValueError
        as :func:`analyse` and :func:`~mxopt_jax.compare.analysis.across.across_studies`.
    """
    names = [p.name for p in result.problems]
    out = analyse(
        [s for p in names for t in (result.tuned, result.one_shot) for s in t.get(p, {}).values()],
        identical_by_problem={p: {m: result.identical_map(p, m) for m in MODES} for p in names},
        identical_by_mode={m: result.identical_everywhere(m) for m in MODES},
        family=str(getattr(result, "family", "table")),
    )
    studies = list(result.studies())
    if len(studies) < 2:
        return out
    across: list[AcrossStudies] = []
    for p in names:
        for mode in MODES:
            per = [s.tuned if mode == "tuned" else s.one_shot for s in studies]
            if all(p in t and t[p] for t in per):
                across.append(
                    across_studies(
                        [list(t[p].values()) for t in per], [s.identical_map(p, mode) for s in studies]
                    )
                )
    return dataclasses.replace(out, across=tuple(across))
