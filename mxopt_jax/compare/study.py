"""Running a study: problems x contenders under a :class:`~mxopt_jax.compare.plan.Plan` (the orchestration).

:func:`study` compiles one program per problem and group of contenders (:func:`engine.compile_group`; by default
one group of every contender, ``Plan.group_by``; its calls hold :func:`engine.program_capacity` runs), then, for
every contender of the program and every independent study of the plan, tunes it (:mod:`mxopt_jax.compare.tuning`,
which owns the protocol's steps 1 to 3):

1. **every configuration on both seed sets**: the learning-rate grid of :meth:`presets.Preset.grid` (centred on
   the default rate) or the trials of a random search over every hyperparameter (:mod:`.search`, the first of
   them the defaults), under the plan's learning-rate schedule (:mod:`.schedules`), run on the selection seeds
   and on the report seeds (fresh, disjoint from them) in the same calls; every study's runs of a contender are
   packed into the program's slots (:meth:`~mxopt_jax.compare.engine.CompiledGroup.run_many`), and these first
   passes are timed (ms/step) while nothing else runs: the next program starts compiling, in a background thread,
   only once every contender of this one has made them;
2. chooses on the selection runs' validation metric (:func:`tuning.tuned_selection`); where the chosen rate is on the
   grid's edge (grid mode), runs the grid shifted past that edge the same way (rates are inputs of the compiled
   program) and chooses again on the union, up to ``extend`` times; a rate still on the edge stays flagged;
3. reports: the tuned mode the chosen configuration's report runs, the one-shot mode the default
   configuration's (a row of the same runs: the grid's centre, the random search's first trial); every
   configuration's final test value on the report seeds is what the claims about the optimizers compare
   against (:func:`mxopt_jax.compare.analysis.comparison.search_table`);
4. (study 0) checks that the chosen configuration's result does not depend on the other runs batched with it:
   the same program runs it in every slot, and the largest relative difference of the final validation metric
   from the selection run is recorded (``Study.batching``).

Each program's work is one :class:`~mxopt_jax.compare.result.ProgramResult` (saved, and handed to
``on_program``, as soon as it is done); :meth:`~mxopt_jax.compare.result.StudyResult.assemble` makes the
result, and :class:`Study` adds the report to it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import jax

from . import files, preflight, studyfile, tuning, validation
from . import report as _report
from . import schedules as _schedules
from . import search as _search
from .contenders import Contender, group_by_family, resolve
from .distributed import is_writer
from .engine import CompiledGroup, compile_group, program_capacity
from .plan import Plan, check_settings
from .presets import Preset
from .problems.base import Problem
from .progress import StudyProgress, interactive
from .records import Records
from .result import ProgramResult, StudyResult
from .selection import Selection
from .serialize import restore_contender, restore_problem
from .store import ResumeError, Saved, Store, differences, open_folder, problem_fingerprint, program_key, spec

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


__all__ = ["Frames", "Study", "study"]

Progress = Callable[[str, float], None]


class Frames(NamedTuple):
    """A study as pandas DataFrames (:meth:`Study.to_pandas`)."""

    runs: pd.DataFrame
    summary: pd.DataFrame


class Study(StudyResult):
    """Everything a study produced (:class:`~mxopt_jax.compare.result.StudyResult`), with its report:
    :meth:`report` (text), :meth:`write` (report, HTML, CSV, JSON and plots into a folder), :meth:`to_pandas`,
    and the HTML report as a notebook's display. :meth:`from_json` reloads one from its ``study.json``."""

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + "; .report(), .to_pandas(), .write(folder)>"

    @classmethod
    def from_json(cls, path: str | Path) -> Study:
        """The study saved in ``path`` (a ``study.json``), from that file alone (:func:`mxopt_jax.compare.
        studyfile.read`, every field checked): it reports, writes and makes DataFrames as the original; its
        problems and contenders come back from their saved descriptions (name, title, metric, target, budgets;
        family, settings, hyperparameters): they cannot train."""
        return studyfile.read(path, cls)

    @property
    def protocol(self) -> str:
        """The protocol in words, as it ran (:func:`mxopt_jax.compare.report.render.describe_study`)."""
        return _report.render.describe_study(self)

    def report(self, family: str = "table") -> str:
        """The text report (:func:`mxopt_jax.compare.report.format_study`): results first, then the protocol;
        ``family``: the report's error control (``"table"``, a Holm family per table; ``"report"``, every table
        one family: :meth:`~mxopt_jax.compare.result.StudyResult.analysis_for`)."""
        return _report.format_study(self, family)

    def write(self, out_dir: str | Path, plots: bool = True, family: str = "table") -> list[Path]:
        """Write the report (text and HTML), records and plots into ``out_dir``
        (:func:`mxopt_jax.compare.report.write_study`), the claims corrected as ``family`` says."""
        if not is_writer():  # a study of several processes: process 0 writes (write_study says so too)
            return []
        out = files.output_dir(out_dir, "out_dir", create=True)
        return _report.write_study(self, out, plots=plots, family=family)

    def to_pandas(self, family: str = "table") -> Frames:
        """The runs and the summary as tidy pandas DataFrames (``runs, summary = study.to_pandas()``): one row
        per evaluation point of every run (``runs.csv``), one row per contender, problem and mode
        (``summary.csv``); see :func:`~mxopt_jax.compare.report.export.runs_frame` and
        :func:`~mxopt_jax.compare.report.export.summary_frame`. Needs pandas (the app's ``study`` extra)."""
        return Frames(
            _report.export.runs_frame([r for s in self.studies() for r in s.all_records()]),
            _report.export.summary_frame(_report.render.study_tables(self, family)),
        )

    def claims(self, family: str = "table") -> pd.DataFrame:
        """Every tested pair of every table as a DataFrame, what ``claims.csv`` holds
        (:func:`~mxopt_jax.compare.report.export.claims_rows`: per study and table, then across the independent
        studies; the test, its statistic, p, Holm-adjusted p, the effect with its interval, the seeds or studies
        used, what the claim is about, the claim in a sentence). Needs pandas (the app's ``study`` extra)."""
        metrics = {p.name: p.metric_name for p in self.problems}
        return _report.export.claims_frame(_report.render.all_claims(self, family), metrics)

    def _repr_html_(self) -> str:
        """A notebook displays a study as its HTML report: tables and figures (figures need matplotlib)."""
        return _report.render.study_html(self, standalone=False)


def study(
    problems: Sequence[Problem | str] | Problem | str,
    contenders: Sequence[str | Contender] | None = None,
    plan: Plan | Preset | str | None = None,
    *,
    devices: Sequence[jax.Device] | None = None,
    progress: Progress | bool | None = None,
    on_program: Callable[[ProgramResult], None] | None = None,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    plots: bool = True,
    **settings: Any,
) -> Study:
    """Run the protocol on ``problems`` for ``contenders`` (names, :class:`Contender` objects, or ``None``: all).

    Args:
      problems: one :class:`~mxopt_jax.compare.problems.base.Problem` or several (a user's own included), or
        built-in problems by name (``"logreg"``, ``["digits_mlp", "logreg"]``, ``"all"``:
        :data:`~mxopt_jax.compare.problems.PROBLEMS`).
      contenders: names (``"adam"``, ``"optax.adam"``, ``"all"``, ``"mxopt"``, ``"optax"``) or contenders
        (:func:`mxopt_jax.compare.contenders.contender` wraps any optax optimizer factory).
      plan: the protocol: a :class:`~mxopt_jax.compare.plan.Plan`, or a preset (``"quick"`` (default),
        ``"full"`` or a :class:`presets.Preset`) that the ``settings`` complete.
      settings: any setting of a plan (:data:`mxopt_jax.compare.plan.SETTINGS`, checked by
        :class:`~mxopt_jax.compare.plan.Plan`): ``seeds`` and ``confirm_seeds`` (counts or lists), ``search``
        (``"grid"`` or ``"random"``), ``trials``, ``search_seed``, ``schedule`` (a name or a hook ``(peak,
        steps) -> learning_rate``), ``studies``, ``extend``, ``check_batching``, ``group_by``, ``preset``.
      devices: the devices to shard the runs over (default: all).
      progress: ``(label, fraction_done)`` callback; ``True``: a bar (:class:`~mxopt_jax.compare.progress.
        StudyProgress`: a notebook widget or a terminal bar, with an ETA); ``False``: silent; ``None``
        (default): a bar where a person watches (a notebook, a terminal), silent elsewhere.
      on_program: called with each :class:`~mxopt_jax.compare.result.ProgramResult` as soon as its program's
        work is done.
      out: a folder to keep the study in (:mod:`mxopt_jax.compare.store`): checked before anything runs, each
        program's records saved as soon as it finishes, the report, CSV, JSON, HTML and plots written at the
        end. A folder that already holds a study's programs is refused (continue it with ``resume``).
      resume: a folder made with ``out`` (an interrupted or finished study): the stored plan, with what the
        settings change (a setting given with another value is refused, naming it); only what is missing runs
        (the programs not saved yet, problems or contenders added), then the outputs are written from the
        union. Problems and contenders saved there but not given are restored from it.
      plots: with ``out``/``resume``, whether to write the PNG plots (when matplotlib is installed).

    Each problem's validation target is its target for the preset (:meth:`Problem.target_for`).

    Every contender is traced on every problem before the first compile (:mod:`mxopt_jax.compare.preflight`,
    seconds): one that cannot run is refused up front (:class:`~mxopt_jax.compare.preflight.PreflightError`),
    named with the cause, before anything ran; so is a problem whose untrained model already meets its target
    (``ValueError``: the metric's direction, ``Problem.better``, or the target is wrong). A folder that cannot be used raises
    :class:`~mxopt_jax.compare.store.ResumeError`; a setting out of range ``ValueError``/``TypeError``, a
    resumed plan changed :class:`~mxopt_jax.compare.plan.PlanError`.
    """
    t_start = time.perf_counter()
    problem_list: list[Problem] = _problem_list(problems)
    check_settings(settings)
    plan, store, stored_spec, stored = _open(plan, settings, out, resume)
    validation.check_host_devices()  # a configure_jax that came too late is said now
    problem_list = [_preset_target(p, plan.preset) for p in problem_list]
    problem_list, cs, restored = _union(problem_list, resolve(contenders), stored_spec, plan)
    order, jobs = _jobs(problem_list, cs, plan, stored, restored, store)
    progress = _progress(progress)
    data = _preflight(problem_list, jobs, plan, progress)
    if store is not None:
        _write_spec(store, plan, problem_list, cs, data, stored_spec, restored[0])
    results = {key: saved.result for key, saved in stored.items()}
    if jobs:
        _run_all(jobs, plan, progress, devices, store, on_program, results)
    if progress is not None:
        progress("done", 1.0)
    wall_before = sum(saved.wall_s for saved in stored.values())
    ordered = [results[k] for k in order if k in results] + [r for k, r in results.items() if k not in order]
    result = Study.assemble(
        plan,
        problem_list,
        cs,
        ordered,
        wall_s=time.perf_counter() - t_start + wall_before,
        resumed={"programs": len(stored), "wall_s": wall_before} if stored else None,
    )
    if store is not None:
        result.write(store.root, plots=plots and _has_matplotlib())
    return result


def _open(
    plan: Plan | Preset | str | None,
    settings: dict[str, Any],
    out: str | Path | None,
    resume: str | Path | None,
) -> tuple[Plan, Store | None, dict[str, Any] | None, dict[str, Saved]]:
    """The study's plan and folder: a new plan (and ``out``, checked), or a resumed folder's stored plan held
    against what was given, its spec and its saved programs. In a study of several processes only process 0
    creates or writes anything."""
    writer = is_writer()
    store: Store | None = None
    stored_spec: dict[str, Any] | None = None
    stored: dict[str, Saved] = {}
    if resume is not None:
        if out is not None and Path(out).expanduser().resolve() != Path(resume).expanduser().resolve():
            raise ValueError(
                f"study: give `out` or `resume` (the folder continued is written), not both: {out!r}, {resume!r}"
            )
        store = open_folder(resume, resume=True) if writer else Store(resume)
        stored_spec = store.read_spec()
        made = _resumed(Plan.from_dict(stored_spec["plan"]), plan, settings)
        stored = store.read_programs()
    else:
        made = _plan(plan, settings)
        if out is not None:
            store = open_folder(out, resume=False) if writer else Store(out)
    if not made.runnable:
        raise ValueError(
            f"schedule {made.schedule!r} is a hook of your own, known here by name only: pass it again "
            f"(schedule={made.schedule}) to run the study"
        )
    return made, store, stored_spec, stored


def _union(
    problems: list[Problem], cs: list[Contender], stored_spec: dict[str, Any] | None, plan: Plan
) -> tuple[list[Problem], list[Contender], tuple[set[str], set[str]]]:
    """The problems and contenders with what a resumed folder holds: those saved there and not given come back
    from their saved descriptions (they cannot train: nothing of theirs may be missing); and the names of the
    restored ``(problems, contenders)``."""
    if stored_spec is None:
        return problems, cs, (set(), set())
    given_p, given_c = {p.name: p for p in problems}, {c.name: c for c in cs}
    problems = [
        given_p.get(n) or _preset_target(restore_problem(info), plan.preset)
        for n, info in stored_spec["problems"].items()
    ] + [p for p in problems if p.name not in stored_spec["problems"]]
    cs = [given_c.get(n) or restore_contender(info) for n, info in stored_spec["contenders"].items()] + [
        c for c in cs if c.name not in stored_spec["contenders"]
    ]
    restored = (
        {p.name for p in problems if p.name not in given_p},
        {c.name for c in cs if c.name not in given_c},
    )
    return problems, cs, restored


Job = tuple[Problem, list[Contender], str]


def _jobs(
    problems: list[Problem],
    cs: list[Contender],
    plan: Plan,
    stored: Mapping[str, Saved],
    restored: tuple[set[str], set[str]],
    store: Store | None,
) -> tuple[list[str], list[Job]]:
    """Every program's key in the order an uninterrupted study makes them, and the programs to run: every
    (problem, group) not saved in the folder; a group with some contenders saved runs the others only (their
    own program). Refused when a missing run belongs to a restored problem or contender."""
    restored_p, restored_c = restored
    done_by: dict[str, set[str]] = {}
    for saved in stored.values():
        done_by.setdefault(saved.result.problem, set()).update(saved.result.records)
    order: list[str] = []
    jobs: list[Job] = []
    for p in problems:
        for g in _groups(cs, plan.group_by):
            key = program_key(p.name, _group_name(g, plan.group_by))
            order.append(key)
            missing = [c for c in g if c.name not in done_by.get(p.name, set())]
            if missing and len(missing) < len(g):  # contenders added to a family saved earlier
                key += "__" + program_key("", "+".join(c.name for c in missing)).lstrip("_")
                order.append(key)
            if missing:
                jobs.append((p, missing, key))
    cannot = [
        f"{c.name} on {p.name}"
        for p, group, _ in jobs
        for c in group
        if p.name in restored_p or c.name in restored_c
    ]
    if cannot:
        raise ResumeError(
            f"study: {store.root if store else ''} holds problems or contenders that were not given, and these "
            f"runs of them are missing: {', '.join(cannot)}; pass those problems and contenders too"
        )
    return order, jobs


def _progress(progress: Progress | bool | None) -> Progress | None:
    """The progress callback: ``True`` a bar, ``False`` none, ``None`` a bar where a person watches."""
    if progress is None or isinstance(progress, bool):
        show = interactive() if progress is None else progress
        return StudyProgress() if show else None
    return progress


def _preflight(
    problems: list[Problem], jobs: list[Job], plan: Plan, progress: Progress | None
) -> dict[str, tuple[Any, ...]]:
    """Before the first compile: every contender traced on every problem it will run on (nothing compiled,
    seconds), and each problem's direction and target held against an untrained model; the problems' data
    (read once, for the preflight and the folder's fingerprints)."""
    if jobs and progress is not None:
        n_c = len({c.name for _, group, _ in jobs for c in group})
        n_p = len({p.name for p, _, _ in jobs})
        progress(f"checking {n_c} contender(s) on {n_p} problem(s) (tracing)", 0.0)
    try:
        data = {p.name: tuple(p.data()) for p in {p.name: p for p, _, _ in jobs}.values()}
    except Exception:  # noqa: BLE001 - traced below, where the failure is named
        data = {}
    need: dict[str, list[Contender]] = {}
    for p, group, _ in jobs:
        need.setdefault(p.name, []).extend(group)
    failures = preflight.trace_all(
        [p for p in problems if p.name in need],
        need,
        plan.preset.steps,
        tuned=lambda p, c: _search.tuned([c], plan.search, sparse=bool(p.tables))[c.name],
        schedule=plan.schedule_hook,
        data=data,
    )
    if failures:
        raise preflight.PreflightError(failures)
    for p in problems:  # the metric's direction and the target, held against an untrained model
        if p.name in need:
            preflight.check_direction(p, p.target, data.get(p.name))
    return data


def _write_spec(
    store: Store,
    plan: Plan,
    problems: list[Problem],
    cs: list[Contender],
    data: Mapping[str, tuple[Any, ...]],
    stored_spec: dict[str, Any] | None,
    restored_p: set[str],
) -> None:
    """The folder's spec (plan, problems' fingerprints, contenders), refused when a resumed folder's differs."""
    fingerprints = [
        stored_spec["problems"][p.name]
        if p.name in restored_p and stored_spec is not None
        else problem_fingerprint(p, data.get(p.name))
        for p in problems
    ]
    doc = spec(plan, fingerprints, cs)
    if stored_spec is not None:
        differ = differences(stored_spec, doc)
        if differ:
            raise ResumeError(
                f"resume: {str(store.root)!r} holds a study made with other definitions or versions; resume "
                "it with the same ones, or start a new folder. What differs:\n  " + "\n  ".join(differ)
            )
    store.write_spec(doc)


def _run_all(
    jobs: list[Job],
    plan: Plan,
    progress: Progress | None,
    devices: Sequence[jax.Device] | None,
    store: Store | None,
    on_program: Callable[[ProgramResult], None] | None,
    results: dict[str, ProgramResult],
) -> None:
    """Compile and run ``jobs`` into ``results`` (:func:`_run_jobs`), the progress bar counting work units; on
    an interruption, say where the finished programs are saved."""
    # what a program is asked for at a time: a contender's first pass of every study, then of one study (an
    # extension of its grid); the runs a call holds are those that run them in the fewest slots on the platform
    first = tuning.call_runs(plan)
    requests = (first * plan.studies, first)
    # work units for the progress bar: a compile ~ 3 units and a quarter more per contender in it, a contender's
    # runs ~ 1 unit per study (measured on CPU: 1.7 to 2.5 CPU s a program, 0.2 to 0.4 more per contender)
    checks_of = {"all": lambda g: len(g), "best": lambda g: 1, "none": lambda g: 0}[plan.check_batching]
    total = sum(3 + len(g) / 4 + len(g) * plan.studies + checks_of(g) for _, g, _ in jobs) or 1
    done = 0.0

    def tick(label: str, units: float) -> None:
        nonlocal done
        done += units
        if progress is not None:
            progress(label, min(done / total, 1.0))

    def build(p: Problem, group: list[Contender]) -> CompiledGroup:
        return compile_group(
            p,
            group,
            program_capacity(p, group, requests, devices),
            steps=plan.preset.steps(p),
            tuned=_search.tuned(group, plan.search, sparse=bool(p.tables)),
            schedule=plan.schedule_hook,
            devices=devices,
            name=f"{p.name}/{_group_name(group, plan.group_by)}",
        )

    try:
        _run_jobs(jobs, build, tick, progress, plan, store, on_program, results)
    except BaseException as e:
        if store is not None:
            e.add_note(
                f"The finished programs are saved in {str(store.root)!r}; continue the study with "
                f"study(..., resume={str(store.root)!r}) (or {files.resume_command(store.root)})."
            )
        raise


def _problem_list(problems: Any) -> list[Problem]:
    """The problems of a study: :class:`Problem` objects, or built-in problems by name (``"logreg"``, or
    ``"all"``), as contenders are given by name; one or a sequence."""
    from .problems import PROBLEMS  # built-in problems by name; to name a factory passed for a problem

    problems = [problems] if isinstance(problems, Problem | str) else problems
    if callable(problems) or not isinstance(problems, Sequence):
        problems = [validation.problem_object(problems, Problem, PROBLEMS)]
    named: list[Any] = []
    for p in problems:
        if isinstance(p, str):
            if p != "all" and p not in PROBLEMS:
                raise ValueError(validation.unknown_name("problem", p, list(PROBLEMS), groups=("all",)))
            if p == "all":
                named.extend(factory() for factory in PROBLEMS.values())
            else:
                named.append(PROBLEMS[p]())
        else:
            named.append(p)
    out = [validation.problem_object(p, Problem, PROBLEMS) for p in named]
    if not out:
        raise ValueError("study: no problems given")
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"study: problem names must be unique, got {names}")
    return out


def _plan(plan: Plan | Preset | str | None, settings: dict[str, Any]) -> Plan:
    """The plan of a new study: ``plan`` completed or changed by ``settings``."""
    if isinstance(plan, Plan):
        return plan.replace(**settings) if settings else plan
    if plan is not None and "preset" in settings:
        raise TypeError(f"study: the preset is given twice: {plan!r} and preset={settings['preset']!r}")
    if plan is not None:
        settings = {"preset": plan, **settings}
    return Plan.make(**settings)


def _resumed(stored: Plan, plan: Plan | Preset | str | None, settings: dict[str, Any]) -> Plan:
    """A resumed study's plan: the stored one, held against what was given (a whole :class:`Plan` given is
    held setting by setting)."""
    given = dict(settings)
    if isinstance(plan, Plan):
        given = {**plan.settings(), **given}
        if (
            plan.schedule_hook is not None and plan.schedule not in _schedules.SCHEDULES
        ):  # a hook of the user's
            given["schedule"] = plan.schedule_hook
    elif plan is not None:
        if "preset" in settings:
            raise TypeError(f"study: the preset is given twice: {plan!r} and preset={settings['preset']!r}")
        given["preset"] = plan
    return stored.resumed(**given)


def _group_name(group: Sequence[Contender], group_by: str) -> str:
    """How a program of ``group`` is named (in its records and its file in the folder's ``programs/``)."""
    return {"problem": "all", "family": group[0].family, "none": group[0].name}[group_by]


def _groups(contenders: Sequence[Contender], group_by: str) -> list[list[Contender]]:
    if group_by == "problem":
        return [list(contenders)] if contenders else []
    if group_by == "none":
        return [[c] for c in contenders]
    by_name = {c.name: c for c in contenders}
    return [
        [by_name[n] for n in members]
        for _, members in group_by_family(list(by_name), {c.name: c.family for c in contenders})
    ]


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _preset_target(p: Problem, preset: Preset) -> Problem:
    """``p`` with its target for ``preset`` (:meth:`Problem.target_for`)."""
    target = p.target_for(preset.name)
    return p if target == p.target else dataclasses.replace(p, target=target)


def _run_jobs(
    jobs: Sequence[tuple[Problem, list[Contender], str]],
    build: Callable[[Problem, list[Contender]], CompiledGroup],
    tick: Callable[[str, float], None],
    progress: Progress | None,
    plan: Plan,
    store: Store | None,
    on_program: Callable[[ProgramResult], None] | None,
    results: dict[str, ProgramResult],
) -> None:
    """Compile and run every program of ``jobs``: the next program compiles in a background thread once the
    current one's selection runs of study 0 are done (they are timed alone); each program's work (every study
    of the plan) is saved (``store``) and handed to ``on_program`` as soon as it is done. On an interruption
    (Ctrl-C) the compile in progress is abandoned, not waited for."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    interrupted = False
    studies = [plan.for_study(k) for k in range(plan.studies)] if plan.studies > 1 else [plan]
    try:
        if progress is not None:
            progress(f"compiling {jobs[0][0].name}/{_group_name(jobs[0][1], plan.group_by)}", 0.0)
        future = pool.submit(build, jobs[0][0], jobs[0][1])
        t_last = time.perf_counter()
        for k, (_, group, key) in enumerate(jobs):
            prog = future.result()
            tick(f"compiled {prog.name} ({prog.compile_s:.1f} s)", 3 + len(group) / 4)
            # every study's first pass of a contender through the same calls (packed into the slots)
            firsts = {c.name: tuning.first_pass(prog, i, studies) for i, c in enumerate(group)}
            if k + 1 < len(jobs):  # the first passes are timed alone; the next compile overlaps the rest
                future = pool.submit(build, jobs[k + 1][0], jobs[k + 1][1])
            result = _finish(prog, group, firsts, studies, tick)
            now = time.perf_counter()
            if store is not None:
                store.write_program(key, result, now - t_last)
            t_last = now
            results[key] = result
            if on_program is not None:
                on_program(result)
            del prog
    except BaseException:
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def _finish(
    prog: CompiledGroup,
    group: list[Contender],
    firsts: dict[str, list[Records]],
    studies: Sequence[Plan],
    tick: Callable[[str, float], None],
) -> ProgramResult:
    """Steps 2 to 4 of the module's docstring for every contender of ``prog`` and every study (``studies``: the
    plan of each; ``firsts[name]``: the contender's first pass, :func:`mxopt_jax.compare.tuning.first_pass`):
    :func:`mxopt_jax.compare.tuning.tune` selects, extends and reports; the batching check
    (:func:`mxopt_jax.compare.tuning.check_batching`) runs in study 0.
    The program's work: study 0's records, the other studies' (``repeats``), every study's selections as the
    tuning made them."""
    p = prog.problem
    plan = studies[0]
    n = len(studies)
    records: list[dict[str, dict[str, Records]]] = [{} for _ in range(n)]
    made: list[dict[str, dict[str, Selection]]] = [{} for _ in range(n)]
    for i, c in enumerate(group):
        for k, tuned in enumerate(tuning.tune(prog, i, studies, first=firsts[c.name], tick=tick)):
            records[k][c.name] = tuned.records
            made[k][c.name] = tuned.selections
    batching = tuning.check_batching(prog, group, made[0], records[0], plan, tick)
    return ProgramResult(
        problem=p.name,
        name=prog.name,
        contenders=[c.name for c in group],
        records=records[0],
        batching=batching,
        compile_s=prog.compile_s,
        devices=prog.n_devices,
        runs=prog.capacity,
        steps=prog.steps,
        platform=prog.platform,
        processes=prog.processes,
        repeats=records[1:],
        selections=made,
    )
