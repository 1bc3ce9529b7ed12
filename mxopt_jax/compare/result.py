"""What a study produced, as data: :class:`ProgramResult` (one compiled program's work) and
:class:`StudyResult` (every record, the selections of both modes, which contenders are identical in which
table, the batching check, the programs), made from the programs' work by :meth:`StudyResult.assemble`.

Below the report (:mod:`mxopt_jax.compare.report` renders a result and never reaches back into the
orchestration) and above the protocol (:func:`~mxopt_jax.compare.protocol.select` chooses). A result reloads
from its ``study.json`` alone (:meth:`StudyResult.from_json`): problems and contenders come back from their
saved descriptions, so it reports but cannot train.

Contenders whose records agree exactly in a table's runs (the same update at these settings, e.g. SGD,
ccSGD and Test at MXNet's defaults) are one entry of that table (:func:`identical_groups`): identity is
decided per table, from the records that table shows.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from . import protocol, tuning
from . import search as _search
from .analysis import StudyAnalysis, analyse_study, common_identity
from .contenders import Contender
from .plan import Plan
from .problems.base import Problem
from .protocol import Selection
from .records import ROLES, Records
from .serialize import (
    FORMAT,
    Where,
    jsonable,
    read_document,
    read_plan,
    read_program_info,
    read_records,
    read_selection,
    restore_contender,
    restore_problem,
)

__all__ = ["MODES", "ProgramResult", "StudyResult", "check_programs", "check_records", "identical_groups"]

#: The two modes a study reports, and which records each one's table shows.
MODES = {"tuned": "confirmation", "one-shot": "default"}

#: The layout of ``study.json`` before the plan was saved whole (still reloaded).
_FORMAT_2 = "mxopt_jax.compare.study/2"

#: Records of one study on one problem: ``{contender: {role: Records}}``.
ByContender = dict[str, dict[str, Records]]

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
            roles = by_study.setdefault(int(r.study), {}).setdefault(r.contender, {})
            if r.role in roles:
                raise ValueError(
                    f"the {r.role} records of {r.contender!r} on {r.problem!r} (study {r.study}) are saved twice"
                )
            roles[r.role] = r
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


def _tuned(roles: Mapping[str, Records], problem: Problem, contender: Contender, search: str) -> Selection:
    """The tuned selection of one contender on one problem: chosen on its selection runs, reported on the chosen
    row of its report runs, every row's final test value kept for the claims about the optimizers
    (:func:`~mxopt_jax.compare.protocol.select`; a study saved before the report runs existed reports its
    confirmation runs and compares chosen configurations only); in a random search the edge flags are the
    trials' (:func:`mxopt_jax.compare.search.edges`: the index of a trial says nothing about its place among the
    values tried)."""
    rec = roles["selection"]
    if "report" in roles:
        sel = protocol.select(rec, problem, report=roles["report"])
    else:
        sel = protocol.select(rec, problem, confirmation=roles["confirmation"])
    if search != "random":
        return sel
    edges = _search.edges({"learning_rate": rec.lrs, **rec.hparams}, sel.index, contender.hyperparameters)
    return dataclasses.replace(sel, edges=edges, on_edge=edges.get("learning_rate"))


def shown(roles: Mapping[str, Records], mode: str, contender: Contender, selection: Selection) -> Records:
    """The records ``mode``'s table shows of one contender (``roles``: what its program ran): the tuned mode's
    confirmation runs (the chosen row of the report runs), the one-shot mode's default runs (the default
    configuration's row of the report runs, or the default runs made alone), as records of role
    ``"confirmation"`` or ``"default"``. A study saved before the report runs existed stored both."""
    role = MODES[mode]
    if role in roles:
        return roles[role]
    report = roles["report"]
    if mode == "tuned":
        return dataclasses.replace(report.take(selection.index), role=role)
    row = tuning.default_row(report, contender)
    if row is None:
        raise ValueError(
            f"{contender.name} on {report.problem}: no default runs, and its report runs do not hold its default "
            "configuration"
        )
    return dataclasses.replace(report.take(row), role=role)


# --------------------------------------------------------------------------- a study's records, checked
def _close(a: Any, b: Any) -> bool:
    """Whether two stored values agree: numbers to 1e-9 relative (NaN equals NaN), lists and objects item by
    item, anything else exactly."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return bool(a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return bool(a == b)


def _on_grid(lrs: np.ndarray, center: float, preset: protocol.Preset, extend: int) -> str | None:
    """Why ``lrs`` are not a grid search's selection rates (None: they are): the preset's grid around ``center``
    (:meth:`~mxopt_jax.compare.protocol.Preset.grid`), with its shifts past either edge
    (:func:`~mxopt_jax.compare.protocol.shift_grid` of the rates so far: ``len - 1`` points each), ``extend``
    times at most."""
    G = preset.grid_points
    if len(lrs) < G:
        return f"{len(lrs)} rate(s), fewer than the preset's grid of {G}"
    if len(np.unique(lrs)) != len(lrs):
        return "a rate is repeated"
    base = preset.grid(center)
    if not all(np.isclose(lrs, r, rtol=1e-9, atol=0.0).any() for r in base):
        return f"the preset's grid around the contender's default rate {center:g} is not among them"
    below = G // 2
    steps = np.log10(lrs / center) / preset.spacing  # each rate's place, in grid steps from the centre
    # each shift moves the union of the grids so far past its edge: the reach doubles (a float: a stranger's plan
    # may say extend = 10**20)
    reach = (2.0 ** min(extend, 64) - 1) * (G - 1)
    off = ~np.isclose(steps, np.round(steps), rtol=0.0, atol=1e-6) | (steps < -below - reach - 1e-6)
    off |= steps > G - 1 - below + reach + 1e-6
    if off.any():
        return f"rate {lrs[np.argmax(off)]:g} is not on the grid nor on its shifts (extend = {extend})"
    return None


def _configs(rec: Records) -> np.ndarray:
    """``(G, 1 + H)`` a record's configurations: the rate, then its other hyperparameters (by name)."""
    return np.column_stack([rec.lrs, *(rec.hparams[k] for k in sorted(rec.hparams))])


def check_records(
    records: Sequence[Records],
    plan: Plan,
    problems: Mapping[str, Problem],
    contenders: Mapping[str, Contender],
    where: str = "records",
) -> None:
    """Whether ``records`` are what ``plan`` makes of ``problems`` and ``contenders``, in everything that does not
    depend on what a selection chose: a ``ValueError`` naming the first record that is not (``WHERE: records of
    'sgd' on 'logreg' (study 0, selection): ...``). The one check of saved records against their plan: a saved
    study's reader (:meth:`StudyResult.from_document`) and a resumed folder's programs
    (:func:`mxopt_jax.compare.store.check_saved`) both call it. A record's own arrays are checked as it is read
    (:func:`~mxopt_jax.compare.serialize.read_records`: their shapes agree, rates positive and finite,
    evaluation steps increasing). The rules, one block each below, so that a change of the protocol changes its
    block:

    * names: each record's problem and contender are the study's; its study one of the plan's;
    * roles: one record per problem, contender, study and role; every contender that ran on a problem has, in
      every study of the plan, its selection runs and either its report runs (:mod:`mxopt_jax.compare.tuning`;
      its default runs too when its search leaves the default configuration out) or, as studies saved before
      the report runs did, its confirmation and default runs;
    * seeds: a selection record's are its study's selection seeds (:meth:`Plan.seeds_of`), a report,
      confirmation or default record's its report seeds (:meth:`Plan.confirm_seeds_of`);
    * steps: evaluated every ``eval_every`` steps up to the problem's budget under the preset
      (:meth:`~mxopt_jax.compare.protocol.Preset.steps`);
    * shapes: one configuration in a confirmation or a default record;
    * finiteness: other hyperparameters finite (rates are, by the reader); a diverged run's validation and test
      metrics are NaN from its divergence on (the engine's rule);
    * configurations: a default record runs the contender's defaults; a grid search's selection rates are the
      preset's grid around the contender's default rate, with its shifts past either edge (``plan.extend`` at
      most), and nothing else is tuned; a random search's selection configurations are the plan's draws for
      that study (:func:`mxopt_jax.compare.search.draw`, seed ``search_seed + study``); the report runs are the
      selection's configurations, in its order; a confirmation record runs one of the selection's
      configurations; without default runs, the report runs hold the default configuration.
    """
    seen: dict[tuple[str, str, int], dict[str, Records]] = {}
    for rec in records:
        what = f"{where}: records of {rec.contender!r} on {rec.problem!r} (study {rec.study}, {rec.role})"
        # names
        if rec.problem not in problems:
            raise ValueError(f"{what}: the study has no problem {rec.problem!r}")
        if rec.contender not in contenders:
            raise ValueError(f"{what}: the study has no contender {rec.contender!r}")
        if not 0 <= rec.study < plan.studies:
            raise ValueError(
                f"{what}: the plan runs {plan.studies} stud{'y' if plan.studies == 1 else 'ies'}"
            )
        # roles
        roles = seen.setdefault((rec.problem, rec.contender, rec.study), {})
        if rec.role in roles:
            raise ValueError(f"{what}: saved twice")
        roles[rec.role] = rec
        # seeds
        want = plan.seeds_of(rec.study) if rec.role == "selection" else plan.confirm_seeds_of(rec.study)
        if rec.seeds.tolist() != list(want):
            raise ValueError(f"{what}: ran on seeds {_few(rec.seeds)}, the plan's are {_few(want)}")
        # steps
        p = problems[rec.problem]
        steps, every = plan.preset.steps(p), p.eval_every
        if len(rec.eval_steps) != steps // every or rec.eval_steps.tolist() != list(
            range(every, steps + 1, every)
        ):
            raise ValueError(
                f"{what}: evaluated at steps {_few(rec.eval_steps)}, the plan's are every {every} up to {steps}"
            )
        # shapes
        if rec.role in ("confirmation", "default") and len(rec.lrs) != 1:
            raise ValueError(f"{what}: {len(rec.lrs)} configurations, a {rec.role} record runs one")
        # finiteness
        if not all(np.isfinite(v).all() for v in rec.hparams.values()):
            raise ValueError(f"{what}: a hyperparameter's value is not finite")
        after = np.asarray(rec.eval_steps)[None, None, :] >= np.asarray(rec.diverged_at)[:, :, None]
        if not (np.isnan(rec.val[after]).all() and np.isnan(rec.test[after]).all()):
            raise ValueError(f"{what}: a run has metrics after it diverged (they are NaN from there on)")
        # configurations
        c = contenders[rec.contender]
        if rec.role == "default":
            want_cfg = {
                "learning_rate": c.default_lr,
                **{k: c.defaults.get(k, math.nan) for k in rec.hparams},
            }
            if not all(np.isclose(v, rec.config(0)[k], rtol=1e-9) for k, v in want_cfg.items()):
                raise ValueError(f"{what}: runs {rec.config(0)}, not the contender's defaults")
        elif rec.role == "selection":
            problem = _selection_rule(rec, c, plan)
            if problem:
                raise ValueError(f"{what}: {problem}")
    for (problem, contender, study), roles in seen.items():
        what = f"{where}: records of {contender!r} on {problem!r} (study {study})"
        for k in range(plan.studies):
            if (problem, contender, k) not in seen:
                raise ValueError(f"{where}: records of {contender!r} on {problem!r}: none of study {k}")
        # roles: the selection, and the report runs (the default runs where the search leaves them out) or, as
        # saved before the report runs existed, the confirmation and default runs
        made = {"selection", "report"} if "report" in roles else {"selection", "confirmation", "default"}
        missing, extra = sorted(made - set(roles)), sorted(set(roles) - made - {"default"})
        if missing or extra:
            saved = ", ".join(r for r in ROLES if r in roles)
            raise ValueError(
                f"{what}: saved as {saved}; a study saves selection and report runs (and default runs where "
                "its search leaves the default configuration out), or selection, confirmation and default runs"
            )
        sel = roles["selection"]
        if any(set(r.hparams) != set(sel.hparams) for r in roles.values()):
            raise ValueError(f"{what}: its records tune different hyperparameters")
        if "report" in roles:
            rep = roles["report"]
            if _configs(rep).shape != _configs(sel).shape or not np.allclose(
                _configs(rep), _configs(sel), rtol=1e-9, atol=0.0
            ):
                raise ValueError(
                    f"{what}: the report runs are not the selection's configurations, in its order"
                )
            if "default" not in roles and tuning.default_row(rep, contenders[contender]) is None:
                raise ValueError(
                    f"{what}: no default runs, and the report runs leave out the default configuration"
                )
        else:
            conf = roles["confirmation"]
            if not np.isclose(_configs(sel), _configs(conf)[0], rtol=1e-9, atol=0.0).all(axis=1).any():
                raise ValueError(
                    f"{what}: the confirmation runs {conf.config(0)}, none of the selection's configurations"
                )


def check_programs(
    programs: Sequence[ProgramResult],
    plan: Plan,
    problems: Mapping[str, Problem],
    contenders: Mapping[str, Contender],
    where: Sequence[str],
) -> None:
    """Whether ``programs`` (their descriptions and records; ``where``: where each is saved, for the message) are
    the work ``plan`` makes of ``problems`` and ``contenders``, in everything that does not depend on what a
    selection chose: a ``ValueError`` naming the first that is not. The one check of a study's saved work
    against its plan, for a saved study's reader (:meth:`StudyResult.from_document`) and a resumed folder
    (:func:`mxopt_jax.compare.store.check_saved`) alike; the protocol's rules for the records are
    :func:`check_records`, which it calls. Each program's problem is one of the study's, its contenders the
    study's (each in one program per problem), its steps the plan's budget for its problem, its batching check
    about its own contenders, and its records those of its contenders, every one of them with records."""
    owner: dict[tuple[str, str], str] = {}
    for r, at in zip(programs, where, strict=True):
        if r.problem not in problems:
            raise ValueError(f"{at}: a program of {r.problem!r}, not one of the study's problems")
        unknown = [n for n in r.contenders if n not in contenders]
        if unknown or not r.contenders or len(set(r.contenders)) != len(r.contenders):
            raise ValueError(f"{at}: its contenders {unknown or r.contenders} are not the study's, each once")
        for n in r.contenders:
            if (r.problem, n) in owner:
                raise ValueError(
                    f"{at}: {n!r} on {r.problem!r} is in another program too ({owner[r.problem, n]})"
                )
            owner[r.problem, n] = at
        budget = plan.preset.steps(problems[r.problem])
        if r.steps != budget:
            raise ValueError(f"{at}: {r.steps} steps, the plan's budget for {r.problem!r} is {budget}")
        if set(r.batching) - set(r.contenders):
            raise ValueError(f"{at}: its batching check names {sorted(set(r.batching) - set(r.contenders))}")
        records = r.all_records()
        ran = {x.contender for x in records}
        if ran != set(r.contenders) or {x.problem for x in records} - {r.problem}:
            missing, other = sorted(set(r.contenders) - ran), sorted(ran - set(r.contenders))
            raise ValueError(
                f"{at}: its records must be those of its contenders on {r.problem!r}"
                + (f"; none of {missing}" if missing else "")
                + (f"; records of {other}" if other else "")
            )
        check_records(records, plan, problems, contenders, at)


def _selection_rule(rec: Records, contender: Contender, plan: Plan) -> str | None:
    """Why ``rec`` is not the selection a plan runs for ``contender`` (None: it is)."""
    if plan.search == "grid":
        if rec.hparams:
            return (
                f"a grid search tunes the rate alone, these records tune {', '.join(sorted(rec.hparams))} too"
            )
        return _on_grid(rec.lrs, contender.default_lr, plan.preset, plan.extend)
    if len(rec.lrs) != plan.trials:
        return f"{len(rec.lrs)} configurations, the plan draws {plan.trials}"
    names = {h.name for h in contender.hyperparameters} - {"learning_rate"}
    if not set(rec.hparams) <= names:
        return f"hyperparameters {sorted(set(rec.hparams) - names)} are not the contender's"
    drawn = _search.draw(contender.hyperparameters, int(plan.trials or 1), plan.search_seed + rec.study)
    for k, v in {"learning_rate": rec.lrs, **rec.hparams}.items():
        if not np.allclose(v, drawn[k], rtol=1e-9, atol=0.0):
            return (
                f"its {k} values are not the plan's random draws (search seed {plan.search_seed + rec.study})"
            )
    return None


def _few(values: Any) -> str:
    v = [int(x) for x in np.asarray(values).ravel()]
    return str(v) if len(v) <= 6 else f"[{', '.join(map(str, v[:3]))}, ..., {v[-1]}] ({len(v)})"


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
      tuned / one_shot: ``problem -> contender ->`` :class:`~mxopt_jax.compare.protocol.Selection` (the
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
      family: the report's error control (:meth:`with_family`): ``"table"`` (each table one Holm family, the
        default) or ``"report"`` (every table of the report one family).
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
    family: str = "table"

    def with_family(self: R, family: str) -> R:
        """This result read with the report's error control ``family`` (:data:`mxopt_jax.compare.protocol.
        FAMILIES`: ``"table"``, the default, one Holm family per table; ``"report"``, every table one family):
        sets it here and in the repeats, and drops the analysis made so far (the next use makes it again).

        Raises
        ------
        ValueError
            ``family`` not one of :data:`~mxopt_jax.compare.protocol.FAMILIES`.
        """
        if family not in protocol.FAMILIES:
            raise ValueError(f"family must be one of {list(protocol.FAMILIES)}, got {family!r}")
        results: list[StudyResult] = [self, *self.repeats]
        for r in results:
            r.family = family
            r.__dict__.pop("analysis", None)
        return self

    # ------------------------------------------------------------------ the plan's settings, for reading
    @property
    def preset(self) -> protocol.Preset:
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
    def trials(self) -> int | None:
        return self.plan.trials

    @property
    def search_seed(self) -> int:
        return self.plan.search_seed

    @property
    def schedule(self) -> str:
        return self.plan.schedule

    # ------------------------------------------------------------------ the analysis
    @functools.cached_property
    def analysis(self) -> StudyAnalysis:
        """The study's analysis (:class:`~mxopt_jax.compare.analysis.StudyAnalysis`: every table's tests and
        claims, the overall rankings, the tables across the plan's independent studies), computed from the
        selections on first use and kept: every renderer reads it, none re-tests. A reloaded result
        (:meth:`from_json`) makes it again from its records."""
        return analyse_study(self)

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
        """The records ``mode``'s tables show (:func:`shown`: the chosen configurations' report runs, or the
        default configurations'), problem by problem, contender by contender."""
        table = self.tuned if mode == "tuned" else self.one_shot
        by_name = {c.name: c for c in self.contenders}
        return [
            shown(roles, mode, by_name[n], self.tuned[p.name][n])
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
        repeats = [
            cls._one(
                plan.for_study(k),
                problems,
                contenders,
                [r.repeats[k - 1] for r in results if len(r.repeats) >= k],
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
        batching_by_program: Sequence[tuple[str, Mapping[str, float]]],
        programs: list[dict[str, Any]],
        wall_s: float,
        study: int,
    ) -> R:
        """One study's result from its records (``work``: each program's ``{contender: {role: Records}}``)."""
        records: dict[str, dict[str, dict[str, Records]]] = {p.name: {} for p in problems}
        batching: dict[str, dict[str, float]] = {p.name: {} for p in problems}
        for per in work:
            for name, roles in per.items():
                problem = next(iter(roles.values())).problem
                records[problem][name] = roles
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
            tuned[name] = {n: _tuned(r, p, by_name[n], plan.search) for n, r in per.items()}
            defaults = {n: shown(r, "one-shot", by_name[n], tuned[name][n]) for n, r in per.items()}
            one_shot[name] = {n: protocol.select(d, p) for n, d in defaults.items()}
            identical[name] = {
                "tuned": identical_groups(
                    {n: r["selection"] for n, r in per.items()},
                    # a random search's contenders share its drawn trials (common random numbers), not its first
                    min_shared=3 if plan.search == "grid" else max(1, min(3, (plan.trials or 1) - 1)),
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
        """The result a study document holds (:func:`mxopt_jax.compare.serialize.read_document`'s dict),
        recomputed from its records: the one way a saved study is read (``mxopt-jax report`` and ``agree`` alike).

        A document may come from a stranger, so every field is checked as it is read (a bad one is a one-line
        ``ValueError`` naming ``where``, the file, and the field): the plan, the problems and contenders, the
        programs and timings, the records (each as a record, :func:`~mxopt_jax.compare.serialize.read_records`,
        then all against the plan, :func:`check_records`), every record in exactly one program; and the stored
        selections must be the ones the records give (they are the records' summary, never a second truth: a
        document whose selections disagree with its records is refused)."""
        w = Where(where)
        doc = w.obj(doc)
        meta = (w / "meta").obj(w.field(doc, "meta"))
        plan = _stored_plan(doc, meta, w)
        problems = _described(meta, "problems", restore_problem, w)
        contenders = _described(meta, "contenders", restore_contender, w)
        records = [
            r if isinstance(r, Records) else read_records(r, w / "records" / i)
            for i, r in enumerate((w / "records").seq(w.field(doc, "records")))
        ]
        selections = [
            s if isinstance(s, Selection) else read_selection(s, w / "selections" / i)
            for i, s in enumerate((w / "selections").seq(doc.get("selections", [])))
        ]
        by_problem = {p.name: p for p in problems}
        by_contender = {c.name: c for c in contenders}
        timings = (w / "timings").obj(w.field(doc, "timings"))
        programs = [
            read_program_info(x, w / "timings" / "programs" / i)
            for i, x in enumerate(
                (w / "timings" / "programs").seq((w / "timings").field(timings, "programs"))
            )
        ]
        wall = (w / "timings" / "wall_s").number(timings.get("wall_s"), low=0.0, nan=True)
        resumed = _resumed_info(timings.get("resumed"), w / "timings" / "resumed")
        batching = _batching(meta.get("batching"), w / "meta" / "batching", by_problem, by_contender)
        # each record to the program of its problem and contender (check_programs holds the rest)
        program_of = {
            (info["problem"], n): i
            for i, info in reversed(list(enumerate(programs)))
            for n in info["contenders"]
        }
        grouped: dict[int, list[Records]] = {}
        for i, r in enumerate(records):
            if (r.problem, r.contender) not in program_of:
                raise (w / "records" / i).error(
                    f"the records of {r.contender!r} on {r.problem!r} belong to no program of timings.programs"
                )
            grouped.setdefault(program_of[r.problem, r.contender], []).append(r)
        results = []
        for i, info in enumerate(programs):
            own = {n: d for n, d in batching.get(info["problem"], {}).items() if n in info["contenders"]}
            try:
                results.append(ProgramResult.from_saved(info, grouped.get(i, []), own))
            except ValueError as e:  # a record saved twice
                raise (w / "records").wrap(e) from None
        check_programs(
            results,
            plan,
            by_problem,
            by_contender,
            [str(w / "timings" / "programs" / i) for i in range(len(programs))],
        )
        result = cls.assemble(plan, problems, contenders, results, wall_s=wall, resumed=resumed)
        _check_selections(result, selections, w / "selections")
        return result

    @classmethod
    def from_json(cls: type[R], path: str | Path) -> R:
        """The study saved in ``path`` (a ``study.json``), from that file alone (:meth:`from_document`, every
        field checked): it reports, writes and makes DataFrames as the original; its problems and contenders come
        back from their saved descriptions (name, title, metric, target, budgets; family, settings,
        hyperparameters): they cannot train."""
        return cls.from_document(read_document(path), str(path))


def _stored_plan(doc: Mapping[str, Any], meta: Mapping[str, Any], w: Where) -> Plan:
    """The plan a study document was made under (format 3: saved whole; format 2: its settings in ``meta``)."""
    if doc.get("format") == FORMAT:
        return read_plan((w / "meta").field(meta, "plan"), w / "meta" / "plan")
    if doc.get("format") == _FORMAT_2:  # the settings kept one by one in meta, before the plan
        keys = ("preset", "seeds", "confirm_seeds", "search", "trials", "search_seed", "schedule")
        return read_plan({k: meta[k] for k in keys if meta.get(k) is not None}, w / "meta")
    raise ValueError(
        f"{w}: written as {_shown(doc.get('format'))}, which this version does not reload as a study "
        f"({FORMAT!r} and {_FORMAT_2!r} it does); its records and selections load with "
        "mxopt_jax.compare.serialize.read_document"
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:56] + "..."


def _described(meta: Mapping[str, Any], kind: str, restore: Any, w: Where) -> list[Any]:
    """The problems or contenders a document describes (``meta[kind]``: ``{name: description}``), restored."""
    table = (w / "meta" / kind).obj((w / "meta").field(meta, kind))
    out = []
    for key, info in table.items():
        made = restore(info, w / "meta" / kind / key)
        if made.name != key:
            raise (w / "meta" / kind / key / "name").error(
                f"must be the key it is saved under, {key!r}", made.name
            )
        out.append(made)
    if kind == "problems" and not out:
        raise (w / "meta" / kind).error("a study has at least one problem")
    return out


def _resumed_info(value: Any, w: Where) -> dict[str, float]:
    """A resumed study's earlier sessions (``{"programs": n, "wall_s": seconds}``; empty when not resumed)."""
    d = w.obj(value or {})
    if not d:
        return {}
    return {
        "programs": (w / "programs").integer(w.field(d, "programs"), 0),
        "wall_s": (w / "wall_s").number(w.field(d, "wall_s"), low=0.0),
    }


def _batching(
    value: Any, w: Where, problems: Mapping[str, Problem], contenders: Mapping[str, Contender]
) -> dict[str, dict[str, float]]:
    """The batching check's differences, ``{problem: {contender: difference >= 0}}``."""
    out: dict[str, dict[str, float]] = {}
    for p, per in w.obj(value or {}).items():
        if p not in problems:
            raise (w / p).error("not one of the study's problems", p)
        out[p] = {}
        for c, d in (w / p).obj(per).items():
            if c not in contenders:
                raise (w / p / c).error("not one of the study's contenders", c)
            out[p][c] = (w / p / c).number(d, low=0.0)
    return out


def _check_selections(result: StudyResult, stored: Sequence[Selection], w: Where) -> None:
    """The selections a document stores are the ones its records give (``result``'s, recomputed): otherwise a
    one-line ``ValueError`` naming the first that differs and how. None stored: nothing to hold."""
    if not stored:
        return
    made = {(s.problem, s.contender, s.mode): s for s in result.selections() + result.selections("one-shot")}
    given: dict[tuple[str, str, str], tuple[int, Selection]] = {}
    for i, s in enumerate(stored):
        key = (s.problem, s.contender, s.mode)
        if key in given:
            raise (w / i).error(f"the {s.mode} selection of {s.contender!r} on {s.problem!r} is stored twice")
        given[key] = (i, s)
    for key in made:
        if key not in given:
            raise w.error(
                f"the {key[2]} selection of {key[1]!r} on {key[0]!r} is missing (its records are there)"
            )
    for key, (i, s) in given.items():
        if key not in made:
            raise (w / i).error(f"the {key[2]} selection of {key[1]!r} on {key[0]!r} has no records")
        try:
            a, b = jsonable(s), jsonable(made[key])
        except (TypeError, ValueError, AttributeError, OverflowError) as e:
            raise (w / i).error(f"not a selection ({type(e).__name__}: {e})") from None
        differ = next((f for f in b if not _close(a.get(f), b[f])), None)
        if differ is not None:
            raise (w / i).error(
                f"the {key[2]} selection of {key[1]!r} on {key[0]!r} is not what the file's records give "
                f"({differ}: stored {_shown(a.get(differ))}, from the records {_shown(b[differ])}); its records and "
                "selections disagree (one was edited), so the file is refused"
            )
