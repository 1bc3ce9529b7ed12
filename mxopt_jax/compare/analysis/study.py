"""A whole study's analysis: :class:`StudyAnalysis`, made once by :func:`analyse_study` from a result
(:attr:`mxopt_jax.compare.result.StudyResult.analysis` builds and keeps it; every renderer reads it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from .. import stats
from ..protocol import (
    LEVEL,
    Selection,
    TableComparison,
    compare_table,
    report_family,
    search_table,
    searchable,
)
from .across import AcrossStudies, across_studies, common_identity, median_inf
from .overall import Ranking, analyse_ranking
from .table import Claim, TableAnalysis, analyse_table
from .verdict import Verdict, verdict

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

    @functools.cached_property
    def verdicts(self) -> dict[tuple[str, str], Verdict]:
        """``{(problem, mode): Verdict}``: each table's best set and what narrowing it would cost
        (:func:`~mxopt_jax.compare.analysis.verdict.verdict`), in :attr:`tables`' order."""
        return {key: verdict(t) for key, t in self.tables.items()}

    def verdict(self, problem: str, mode: str = "tuned") -> Verdict:
        """The verdict of ``problem``'s table in ``mode``."""
        return self.verdicts[(problem, mode)]

    def in_best_sets(self, mode: str = "tuned") -> dict[str, int]:
        """``{contender: in how many of mode's best sets}`` over the problems, every contender of the mode's
        tables (a contender folded into an entry counts with it), most first, then in the tables' order."""
        count: dict[str, int] = {}
        for (_, m), t in self.tables.items():
            if m != mode:
                continue
            best = set(self.verdicts[(t.problem, m)].best)
            for s in t.selections:
                count[s.contender] = count.get(s.contender, 0) + int(t.entry[s.contender] in best)
        return dict(sorted(count.items(), key=lambda kv: -kv[1]))

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

    def configuration_claims(self) -> list[Claim]:
        """Every tested pair of the chosen configurations alone, for the tables whose claims are about the
        optimizers under their searches (:attr:`TableAnalysis.configuration_claims`), in :meth:`all_tables`'
        order."""
        return [c for t in self.all_tables() for c in t.configuration_claims]

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
                    about="defaults" if a.mode == "one-shot" else "optimizers",
                    better=better,
                    equal=bool(np.all(eff == 0)),
                    level=a.level,
                    estimate=size.estimate,
                    low=size.low,
                    high=size.high,
                    confidence=size.confidence,
                    family=a.family or a.pairs,
                    agree=int((np.sign(oriented) == way).sum()),
                    study=None,
                    model=(
                        (float(a.model_effect[i, j]), float(a.model_low[i, j]), float(a.model_high[i, j]))
                        if a.model_effect.size
                        else (math.nan, math.nan, math.nan)
                    ),
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
                # claims about the optimizers under their searches where every configuration ran on the
                # report seeds; else about the chosen (or default) configurations
                test = search_table if searchable(table) else compare_table
                tested[(p, mode)] = (table, ident, test(table, ident))
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
    if str(getattr(result, "family", "table")) == "report":
        out, across = _one_family(out, across)
    return dataclasses.replace(out, across=tuple(across))


def _one_family(
    analysis: StudyAnalysis, across: list[AcrossStudies]
) -> tuple[StudyAnalysis, list[AcrossStudies]]:
    """The report-wide family (``--family report``) over everything the report claims: every pair of every
    table of the first study *and* of every table read across the studies, corrected together by Holm's method
    at the tables' level, so that the chance of any false claim in the whole report is at most that level. A
    report-wide claim is also a per-table one (its adjusted p-value is never smaller)."""
    tables = list(analysis.tables.values())
    raws = [t.comparison.comparison.p[np.triu_indices(len(t.entries), 1)] for t in tables]
    raws += [a.p[np.triu_indices(len(a.names), 1)] for a in across]
    flat = np.concatenate(raws) if raws else np.zeros(0)
    if not flat.size:
        return analysis, across
    level = tables[0].level if tables else across[0].level
    adj = stats._holm(flat)
    m = int(np.sum(~np.isnan(flat)))
    start = 0
    new_tables: dict[tuple[str, str], TableAnalysis] = {}
    for key, t in zip(analysis.tables, tables, strict=True):
        k = len(raws[len(new_tables)])
        c = t.comparison.comparison
        decided = stats._decided(
            c.p,
            c.statistic,
            c.direction,
            c.equal,
            c.median,
            adj[start : start + k],
            m,
            c.test,
            level,
            c.margin,
            c.rtol,
        )
        start += k
        comp = dataclasses.replace(
            t.comparison,
            comparison=decided,
            searches=None
            if t.comparison.searches is None
            else t.comparison.searches._replace(comparison=decided),
        )
        new_tables[key] = analyse_table(
            list(t.selections), t.identical, comparison=comp, configurations=t.configurations
        )
    new_across = []
    for a in across:
        C = len(a.names)
        iu = np.triu_indices(C, 1)
        k = len(iu[0])
        p_adj = np.full((C, C), np.nan)
        p_adj[iu] = p_adj[iu[1], iu[0]] = adj[start : start + k]
        start += k
        new_across.append(
            dataclasses.replace(a, p_adjusted=p_adj, shown=a.shown & (p_adj <= a.level), family=m)
        )
    rankings = {
        mode: analyse_ranking(
            {p: t for (p, md), t in new_tables.items() if md == mode},
            analysis.identical[mode],
            family="report",
        )
        for mode in analysis.rankings
    }
    return dataclasses.replace(analysis, tables=new_tables, rankings=rankings), new_across
