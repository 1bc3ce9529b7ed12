"""A whole study's analysis: :class:`StudyAnalysis`, made once by :func:`analyse_study` from a result
(:attr:`mxopt_jax.compare.result.StudyResult.analysis` builds and keeps it; every renderer reads it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from ..protocol import Selection
from .across import AcrossStudies, across_studies
from .overall import Ranking, analyse_ranking
from .table import Claim, TableAnalysis, analyse_table

__all__ = ["MODES", "StudyAnalysis", "analyse", "analyse_study"]

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


def analyse(
    selections: Iterable[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    *,
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
    identical_by_mode: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> StudyAnalysis:
    """The analysis of a set of selections (a study's, or any a user made with
    :func:`mxopt_jax.compare.protocol.select`; both modes mixed or not): each problem's table of each mode
    (:attr:`Selection.mode <mxopt_jax.compare.protocol.Selection.mode>`) tested once, the overall ranking of each
    mode from those tables. Problems and contenders keep the order met.

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
    tables: dict[tuple[str, str], TableAnalysis] = {}
    for p in problems:
        for mode in MODES:
            table = by_mode[mode].get(p)
            if table:
                ident = (identical_by_problem or {}).get(p, {}).get(mode, flat)
                tables[(p, mode)] = analyse_table(table, ident)
    everywhere = {m: {k: list(v) for k, v in (identical_by_mode or {}).get(m, flat).items()} for m in MODES}
    rankings = {}
    for mode in MODES:
        of = {p: t for (p, m), t in tables.items() if m == mode}
        if of:
            rankings[mode] = analyse_ranking(of, everywhere[mode])
    both = {
        rep: [o for o in others if o in everywhere["one-shot"].get(rep, [])]
        for rep, others in everywhere["tuned"].items()
    }
    return StudyAnalysis(tables, rankings, everywhere, {k: v for k, v in both.items() if v})


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
