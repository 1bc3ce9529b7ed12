"""What a study produced, as data: :class:`ProgramResult` (one compiled program's work) and
:class:`StudyResult` (every record, the selections of both modes, which contenders are identical in which
table, the batching check, the programs), made from the programs' work by :meth:`StudyResult.assemble`.

Below the report (:mod:`mxopt_jax.compare.report` renders a result and never reaches back into the
orchestration) and above the tuning (:mod:`mxopt_jax.compare.tuning` selects, once per problem, contender and
study: a result keeps the selections its programs made, and asks the tuning only for those of programs read back
from their records). A result reloads
from its ``study.json`` alone (:meth:`StudyResult.from_json`): problems and contenders come back from their
saved descriptions, so it reports but cannot train.

Contenders whose records agree exactly in a table's runs (the same update at these settings, e.g. SGD,
ccSGD and Test at MXNet's defaults) are one entry of that table (:func:`identical_groups`): identity is
decided per table, from the records that table shows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from . import tuning
from .analysis import StudyAnalysis, analyse_study, common_identity
from .analysis.comparison import FAMILIES
from .contenders import Contender
from .plan import Plan
from .presets import Preset
from .problems.base import Problem
from .records import Records
from .selection import MODES, Selection
from .serialize import FORMAT, read_document, restore_contender, restore_problem

__all__ = ["ProgramResult", "StudyResult", "identical_groups"]

#: The layout of ``study.json`` before the plan was saved whole (still reloaded).
_FORMAT_2 = "mxopt_jax.compare.study/2"

#: Records of one study on one problem: ``{contender: {role: Records}}``.
ByContender = dict[str, dict[str, Records]]
#: The selections of one study on one problem: ``{contender: {mode: Selection}}``.
Chosen = dict[str, dict[str, Selection]]

R = TypeVar("R", bound="StudyResult")


@dataclasses.dataclass
class ProgramResult:
    """The work of one compiled program: every record of its contenders on its problem, and its timings.

    Attributes:
      problem: the problem's name; ``name``: the program's name; ``contenders``: the names, in order.
      records: ``{contender: {role: Records}}`` of study 0 (roles ``"selection"``, ``"confirmation"``,
        ``"default"``); ``repeats``: the same for studies 1, 2, ... of a plan with ``studies > 1``.
      batching: ``{contender: largest relative difference}`` of the batching check (study 0's contenders it ran
        for).
      compile_s: seconds to compile; ``devices``: devices the runs were sharded over; ``runs``: runs per call;
      ``steps``: training steps per run; ``platform``: the devices' platform (``"cpu"``, ``"gpu"``, ...);
      ``processes``: how many processes owned them (``jax.distributed``).
      selections: per study (0, 1, ...), ``{contender: {mode: Selection}}``, the selections the tuning made
        (:attr:`mxopt_jax.compare.tuning.Tuned.selections`); empty for a program read back from its records
        (they are made again from them, :func:`mxopt_jax.compare.tuning.selections`).
    """

    problem: str
    name: str
    contenders: list[str]
    records: ByContender
    batching: dict[str, float]
    compile_s: float
    devices: int
    runs: int
    steps: int
    platform: str = ""
    processes: int = 1
    repeats: list[ByContender] = dataclasses.field(default_factory=list)
    selections: list[Chosen] = dataclasses.field(default_factory=list)

    def info(self) -> dict[str, Any]:
        """The program's description (for the report and ``study.json``)."""
        return {
            "problem": self.problem,
            "name": self.name,
            "contenders": list(self.contenders),
            "compile_s": self.compile_s,
            "devices": self.devices,
            "runs": self.runs,
            "steps": self.steps,
            "platform": self.platform,
            "processes": self.processes,
        }

    def all_records(self) -> list[Records]:
        """Every record of every study."""
        return [r for per in (self.records, *self.repeats) for roles in per.values() for r in roles.values()]

    @classmethod
    def from_saved(
        cls, info: Mapping[str, Any], records: Sequence[Records], batching: Mapping[str, float]
    ) -> ProgramResult:
        """A program's result from its description (:meth:`info`), its records (each knows its study, contender
        and role) and its batching check."""
        by_study: dict[int, ByContender] = {}
        for r in records:
            by_study.setdefault(int(r.study), {}).setdefault(r.contender, {})[r.role] = r
        n = max(by_study, default=0) + 1
        return cls(
            problem=str(info["problem"]),
            name=str(info["name"]),
            contenders=list(info["contenders"]),
            records=by_study.get(0, {}),
            batching={k: float(v) for k, v in batching.items()},
            compile_s=float(info["compile_s"]),
            devices=int(info["devices"]),
            runs=int(info["runs"]),
            steps=int(info["steps"]),
            platform=str(info.get("platform", "")),
            processes=int(info.get("processes", 1)),
            repeats=[by_study.get(k, {}) for k in range(1, n)],
        )


# --------------------------------------------------------------------------- identity
def _same(a: Records, b: Records, min_shared: int) -> bool:
    """Whether two records agree exactly (NaN equals NaN) at every configuration they share (at least
    ``min_shared`` of them), on the same seeds and evaluation points."""
    if not np.array_equal(a.seeds, b.seeds) or a.val.shape[2:] != b.val.shape[2:]:
        return False
    if set(a.hparams) != set(b.hparams):
        return False
    ia, ib = [], []
    for i in range(len(a.lrs)):
        j = np.flatnonzero(
            np.isclose(b.lrs, a.lrs[i], rtol=1e-6, atol=0.0)
            & np.all(
                [np.isclose(b.hparams[k], a.hparams[k][i], rtol=1e-6) for k in a.hparams] or [True], axis=0
            )
        )
        if j.size:
            ia.append(i)
            ib.append(int(j[0]))
    if len(ia) < min_shared:
        return False
    return all(
        np.array_equal(getattr(a, f)[ia], getattr(b, f)[ib], equal_nan=True)
        for f in ("train_loss", "val", "test")
    )


def identical_groups(
    records: Mapping[str, Records],
    min_shared: int = 3,
    also: Mapping[str, Records] | None = None,
) -> list[list[str]]:
    """Groups (of two or more) of contenders whose ``records`` agree exactly at every configuration they share
    (at least ``min_shared``), and whose ``also`` records (when given) agree exactly too.

    Agreement is exact: same training losses, validation and test metrics at every evaluation point and seed
    (NaN equals NaN). A table decides identity from the records it shows: the tuned table from the selection
    runs and the confirmation runs, the one-shot table from the default runs (``min_shared=1``).
    """
    names = list(records)
    parent = {n: n for n in names}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if parent[b] != b or parent[a] != a:
                continue
            if not _same(records[a], records[b], min_shared):
                continue
            if also is not None and not (a in also and b in also and _same(also[a], also[b], 1)):
                continue
            parent[b] = a
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(parent[n], []).append(n)
    return [g for g in groups.values() if len(g) > 1]


# --------------------------------------------------------------------------- the result
@dataclasses.dataclass
class StudyResult:
    """Everything one study produced (the report renders it; :class:`mxopt_jax.compare.Study` adds the
    rendering methods).

    Attributes:
      plan: the :class:`~mxopt_jax.compare.plan.Plan` it ran (for study ``k`` of a repeated plan:
        ``plan.for_study(k)``'s seeds).
      problems: the problems, in order; ``contenders``: the contenders, in order.
      records: ``problem -> contender -> role -> Records`` (selection grid with its extensions merged,
        confirmation, default).
      tuned / one_shot: ``problem -> contender ->`` :class:`~mxopt_jax.compare.selection.Selection` (the
        results of each mode).
      identical: ``problem -> mode -> [[name, name, ...], ...]``: contenders whose records in that mode's table
        agree exactly (reported as one entry, the first name).
      batching: ``problem -> contender ->`` the largest relative difference of the final validation metric
        at the chosen configuration between the selection run and a run where every slot holds it (0.0: the
        result does not depend on the other runs in the program).
      programs: one dict per compiled program (:meth:`ProgramResult.info`).
      wall_s: wall-clock seconds of the whole study, earlier sessions of a resumed one included.
      study: which independent study of the plan this is (0 for the first); ``repeats``: the results of
        studies 1, 2, ... (each complete; empty when the plan runs one study).
      resumed: for a resumed study, ``{"programs": programs saved by earlier sessions, "wall_s": their
        seconds}`` (empty otherwise): what the timing counts.
    """

    plan: Plan
    problems: list[Problem]
    contenders: list[Contender]
    records: dict[str, dict[str, dict[str, Records]]]
    tuned: dict[str, dict[str, Selection]]
    one_shot: dict[str, dict[str, Selection]]
    identical: dict[str, dict[str, list[list[str]]]]
    batching: dict[str, dict[str, float]]
    programs: list[dict[str, Any]]
    wall_s: float
    study: int = 0
    repeats: Sequence[StudyResult] = dataclasses.field(default_factory=list)
    resumed: dict[str, float] = dataclasses.field(default_factory=dict)
    _analyses: dict[str, StudyAnalysis] = dataclasses.field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # ------------------------------------------------------------------ the plan's settings, for reading
    @property
    def preset(self) -> Preset:
        return self.plan.preset

    @property
    def seeds(self) -> list[int]:
        """The selection seeds that ran."""
        return list(self.plan.seeds)

    @property
    def confirm_seeds(self) -> list[int]:
        """The confirmation seeds that ran (the reported runs)."""
        return list(self.plan.confirm_seeds)

    @property
    def search(self) -> str:
        return self.plan.search

    @property
    def search_seed(self) -> int:
        return self.plan.search_seed

    @property
    def schedule(self) -> str:
        return self.plan.schedule

    # ------------------------------------------------------------------ the analysis
    def analysis_for(self, family: str = "table") -> StudyAnalysis:
        """The study's analysis (:class:`~mxopt_jax.compare.analysis.StudyAnalysis`: every table's tests and
        claims, the overall rankings, the tables across the plan's independent studies) with the report's error
        control ``family`` (:data:`~mxopt_jax.compare.analysis.comparison.FAMILIES`: ``"table"``, one Holm family
        per table; ``"report"``, every pair of every table one family), made from the selections on first use and
        kept, one per family: every renderer reads it, none re-tests, and the result itself never changes. A
        reloaded result makes it again from its records.

        Raises
        ------
        ValueError
            ``family`` not one of :data:`~mxopt_jax.compare.analysis.comparison.FAMILIES`.
        """
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {list(FAMILIES)}, got {family!r}")
        if family not in self._analyses:
            self._analyses[family] = analyse_study(self, family)
        return self._analyses[family]

    @property
    def analysis(self) -> StudyAnalysis:
        """The analysis with a Holm family per table, the default (:meth:`analysis_for`)."""
        return self.analysis_for("table")

    # ------------------------------------------------------------------ queries
    def __repr__(self) -> str:
        ran = {n for per in self.records.values() for n in per}
        more = f", {1 + len(self.repeats)} studies" if self.repeats else ""
        return (
            f"<{type(self).__name__}: {len(ran)} contender(s) on {len(self.problems)} problem(s) "
            f"({', '.join(p.name for p in self.problems)}), preset {self.preset.name!r}{more}, "
            f"{len(self.programs)} program(s), {self.wall_s:.0f} s>"
        )

    @property
    def families(self) -> dict[str, str]:
        return {c.name: c.family for c in self.contenders}

    def studies(self) -> list[StudyResult]:
        """Every independent study of the plan: this one, then its repeats."""
        return [self, *self.repeats]

    def identical_map(self, problem: str, mode: str = "tuned") -> dict[str, list[str]]:
        """``{representative: [the contenders identical to it]}`` in ``mode``'s table of ``problem``."""
        return {g[0]: g[1:] for g in self.identical.get(problem, {}).get(mode, [])}

    def identical_everywhere(self, mode: str = "tuned") -> dict[str, list[str]]:
        """``{representative: [others]}`` for contenders identical in ``mode`` on every problem (folded in the
        cross-problem tables): those every problem's table puts in one group, whichever contender each table
        names first (:func:`~mxopt_jax.compare.analysis.common_identity`)."""
        return common_identity([self.identical_map(p.name, mode) for p in self.problems])

    def identical_by_problem(self) -> dict[str, dict[str, dict[str, list[str]]]]:
        """``{problem: {mode: {representative: [identical contenders]}}}``: how each table folds."""
        return {p.name: {m: self.identical_map(p.name, m) for m in MODES} for p in self.problems}

    def selections(self, mode: str = "tuned") -> list[Selection]:
        """Every selection of ``mode`` (``"tuned"`` or ``"one-shot"``), problem by problem."""
        table = self.tuned if mode == "tuned" else self.one_shot
        return [sel for p in self.problems for sel in table.get(p.name, {}).values()]

    def shown_records(self, mode: str = "tuned") -> list[Records]:
        """The records ``mode``'s tables show (:func:`mxopt_jax.compare.tuning.shown`: the chosen configurations'
        report runs, or the default configurations'), problem by problem, contender by contender."""
        table = self.tuned if mode == "tuned" else self.one_shot
        by_name = {c.name: c for c in self.contenders}
        return [
            tuning.shown(roles, mode, by_name[n], self.tuned[p.name][n])
            for p in self.problems
            for n, roles in self.records.get(p.name, {}).items()
            if n in table.get(p.name, {})
        ]

    def all_records(self, role: str | None = None) -> list[Records]:
        """Every record of this study (of one ``role``, or all), problem by problem, contender by contender."""
        return [
            r
            for p in self.problems
            for per in self.records.get(p.name, {}).values()
            for k, r in per.items()
            if role is None or k == role
        ]

    def reported(self, problem: str, mode: str = "tuned") -> list[str]:
        """The contenders shown as entries of ``mode``'s table of ``problem`` (one per group of identical ones)."""
        table = self.tuned if mode == "tuned" else self.one_shot
        hidden = {n for group in self.identical.get(problem, {}).get(mode, []) for n in group[1:]}
        return [c.name for c in self.contenders if c.name in table.get(problem, {}) and c.name not in hidden]

    # ------------------------------------------------------------------ making one
    @classmethod
    def assemble(
        cls: type[R],
        plan: Plan,
        problems: Sequence[Problem],
        contenders: Sequence[Contender],
        results: Sequence[ProgramResult],
        wall_s: float = math.nan,
        resumed: Mapping[str, float] | None = None,
    ) -> R:
        """A result from the programs' work: the selections of both modes, identity per table, for every study
        of the plan. In a random search a chosen value is flagged (``Selection.edges``; ``on_edge`` the learning
        rate's) when it is the lowest or the highest of its hyperparameter among the trials
        (:func:`mxopt_jax.compare.search.edges`), and contenders are identical in the tuned table when they agree
        at every drawn trial they share (three, or every drawn one when fewer) and in the confirmation runs."""
        problems = list(problems)

        def made(k: int) -> list[Chosen]:  # the selections the programs' tuning made in study k, if they did
            return [r.selections[k] if len(r.selections) > k else {} for r in results]

        repeats = [
            cls._one(
                plan.for_study(k),
                problems,
                contenders,
                [r.repeats[k - 1] for r in results if len(r.repeats) >= k],
                [m for r, m in zip(results, made(k), strict=True) if len(r.repeats) >= k],
                [],
                [],
                wall_s,
                k,
            )
            for k in range(1, plan.studies)
        ]
        first = cls._one(
            plan.for_study(0) if plan.studies > 1 else plan,
            problems,
            contenders,
            [r.records for r in results],
            made(0),
            [(r.problem, r.batching) for r in results],
            [r.info() for r in results],
            wall_s,
            0,
        )
        first.plan = plan
        first.repeats = repeats
        first.resumed = dict(resumed or {})
        for r in repeats:
            r.programs = first.programs
        return first

    @classmethod
    def _one(
        cls: type[R],
        plan: Plan,
        problems: list[Problem],
        contenders: Sequence[Contender],
        work: Sequence[ByContender],
        made: Sequence[Chosen],
        batching_by_program: Sequence[tuple[str, Mapping[str, float]]],
        programs: list[dict[str, Any]],
        wall_s: float,
        study: int,
    ) -> R:
        """One study's result from its records (``work``: each program's ``{contender: {role: Records}}``) and the
        selections its programs' tuning made (``made``: each program's ``{contender: {mode: Selection}}``, empty
        for a program read back from its records: the tuning makes them from the records, once)."""
        records: dict[str, dict[str, dict[str, Records]]] = {p.name: {} for p in problems}
        chosen: dict[str, Chosen] = {p.name: {} for p in problems}
        batching: dict[str, dict[str, float]] = {p.name: {} for p in problems}
        for per, sels in zip(work, made, strict=True):
            for name, roles in per.items():
                problem = next(iter(roles.values())).problem
                records[problem][name] = roles
                if name in sels:
                    chosen[problem][name] = dict(sels[name])
        for problem, b in batching_by_program:
            batching[problem].update(b)
        known = {p.name: p for p in problems}
        order = [c.name for c in contenders]
        by_name = {c.name: c for c in contenders}
        tuned: dict[str, dict[str, Selection]] = {}
        one_shot: dict[str, dict[str, Selection]] = {}
        identical: dict[str, dict[str, list[list[str]]]] = {}
        for name, per in records.items():
            per = {n: per[n] for n in order if n in per}
            records[name] = per
            p = known[name]
            modes = {
                n: chosen[name].get(n) or tuning.selections(r, p, by_name[n], plan.search)
                for n, r in per.items()
            }
            tuned[name] = {n: m["tuned"] for n, m in modes.items()}
            one_shot[name] = {n: m["one-shot"] for n, m in modes.items()}
            defaults = {n: tuning.shown(r, "one-shot", by_name[n], tuned[name][n]) for n, r in per.items()}
            identical[name] = {
                "tuned": identical_groups(
                    {n: r["selection"] for n, r in per.items()},
                    # a random search's contenders share its drawn trials (common random numbers), not its first
                    min_shared=3 if plan.search == "grid" else max(1, min(3, plan.configurations - 1)),
                    also={n: r["report"] if "report" in r else r["confirmation"] for n, r in per.items()},
                ),
                "one-shot": identical_groups(defaults, min_shared=1),
            }
        return cls(
            plan,
            problems,
            list(contenders),
            records,
            tuned,
            one_shot,
            identical,
            batching,
            programs,
            wall_s,
            study,
        )

    # ------------------------------------------------------------------ reloading
    @classmethod
    def from_document(cls: type[R], doc: Mapping[str, Any], where: str = "study.json") -> R:
        """The result a study document holds (:func:`mxopt_jax.compare.serialize.read_document`'s dict)."""
        meta = doc.get("meta") or {}
        if doc.get("format") == FORMAT:
            plan = Plan.from_dict(meta["plan"])
        elif doc.get("format") == _FORMAT_2:  # the settings kept one by one in meta, before the plan
            plan = Plan(
                preset=Preset(**meta["preset"]),
                seeds=tuple(meta["seeds"]),
                confirm_seeds=tuple(meta["confirm_seeds"]),
                search=meta.get("search") or "grid",
                trials=meta.get("trials"),
                search_seed=int(meta.get("search_seed") or 0),
                schedule=meta.get("schedule") or "constant",
            )
        else:
            raise ValueError(
                f"{where}: written as {doc.get('format')!r}, which this version does not reload as a study "
                f"({FORMAT!r} and {_FORMAT_2!r} it does); its records and selections load with "
                "mxopt_jax.compare.serialize.read_document"
            )
        problems = [restore_problem(info) for info in meta["problems"].values()]
        contenders = [restore_contender(info) for info in meta["contenders"].values()]
        by_contender: dict[tuple[str, str], list[Records]] = {}
        for r in doc["records"]:
            by_contender.setdefault((r.problem, r.contender), []).append(r)
        batching = meta.get("batching") or {}
        results = [
            ProgramResult.from_saved(
                info,
                [r for n in info["contenders"] for r in by_contender.get((info["problem"], n), [])],
                {n: d for n, d in batching.get(info["problem"], {}).items() if n in info["contenders"]},
            )
            for info in doc["timings"]["programs"]
        ]
        wall = doc["timings"].get("wall_s")
        return cls.assemble(
            plan,
            problems,
            contenders,
            results,
            wall_s=math.nan if wall is None else float(wall),
            resumed=doc["timings"].get("resumed") or {},
        )

    @classmethod
    def from_json(cls: type[R], path: str | Path) -> R:
        """The study saved in ``path`` (a ``study.json``), from that file alone: it reports, writes and makes
        DataFrames as the original; its problems and contenders come back from their saved descriptions
        (name, title, metric, target, budgets; family, settings, hyperparameters): they cannot train."""
        return cls.from_document(read_document(path), str(path))
