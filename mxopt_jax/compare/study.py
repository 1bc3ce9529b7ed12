"""Running a study: problems x contenders under a preset of the protocol (the orchestration).

:func:`study` compiles one program per problem and group of contenders (:func:`engine.compile_group`; a group is
a family by default), then for every contender of the program:

1. **selection**: runs every configuration (the learning-rate grid of :meth:`protocol.Preset.grid`, centred on
   its default rate, or the trials of a random search over every hyperparameter, :mod:`.search`, under the
   study's learning-rate schedule, :mod:`.schedules`) on the selection seeds. These runs are timed (ms/step)
   while nothing else runs: the next program starts compiling, in a background thread, only once every
   contender of this one has made them;
2. chooses on validation (:func:`protocol.select`); where the chosen rate is on the grid's edge (grid mode),
   runs the grid shifted past that edge with the same compiled program (rates are inputs) and chooses again on
   the union, up to ``extend`` times; a rate still on the edge stays flagged;
3. **confirmation**: re-runs the chosen configuration on fresh seeds (disjoint from the selection seeds); the
   tuned mode reports these runs only;
4. **default**: runs the default configuration (MXNet's or optax's defaults) on the same fresh seeds: the
   one-shot mode (the Crowded Valley's smallest budget, no tuning) reports them;
5. checks that the chosen configuration's result does not depend on the other runs batched with it: the same
   program runs it in every slot, and the largest relative difference of the final validation metric from
   the selection run is recorded (``Study.batching``).

Each program's work is one :class:`ProgramResult` (handed to ``on_program`` as soon as it is done). Contenders
whose records agree exactly in a table's runs (the same update at these settings, e.g. SGD, ccSGD and Test at
MXNet's defaults) are reported as one entry of that table (``Study.identical``): identity is decided per table,
from the records that table shows.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import numpy as np

from . import checks, preflight, protocol
from . import report as _report
from . import schedules as _schedules
from . import search as _search
from .contenders import Contender, group_by_family, resolve
from .distributed import is_writer
from .engine import CompiledGroup, Schedule, compile_group
from .problems.base import Problem
from .progress import StudyProgress, interactive
from .protocol import Preset, Selection
from .records import Records
from .report import export
from .report.render import study_html
from .store import ResumeError, Store, differences, problem_fingerprint, program_key, spec

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


__all__ = ["MODES", "Frames", "ProgramResult", "Study", "identical_groups", "study"]

Progress = Callable[[str, float], None]

#: The two modes a study reports: which records each one's table shows.
MODES = {"tuned": "confirmation", "one-shot": "default"}


@dataclasses.dataclass
class ProgramResult:
    """The work of one compiled program: every record of its contenders on its problem, and its timings.

    Attributes:
      problem: the problem's name; ``name``: the program's name; ``contenders``: the names, in order.
      records: ``{contender: {role: Records}}`` (roles ``"selection"``, ``"confirmation"``, ``"default"``).
      batching: ``{contender: largest relative difference}`` of the batching check (contenders it ran for).
      compile_s: seconds to compile; ``devices``: devices the runs were sharded over; ``runs``: runs per call;
      ``steps``: training steps per run; ``platform``: the devices' platform (``"cpu"``, ``"gpu"``, ...);
      ``processes``: how many processes owned them (``jax.distributed``).
    """

    problem: str
    name: str
    contenders: list[str]
    records: dict[str, dict[str, Records]]
    batching: dict[str, float]
    compile_s: float
    devices: int
    runs: int
    steps: int
    platform: str = ""
    processes: int = 1

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


class Frames(NamedTuple):
    """A study as pandas DataFrames (:meth:`Study.to_pandas`)."""

    runs: pd.DataFrame
    summary: pd.DataFrame


@dataclasses.dataclass
class Study:
    """Everything a study produced (:mod:`mxopt_jax.compare.report` renders and writes it).

    Attributes:
      preset: the protocol preset used.
      problems: the problems, in order; ``contenders``: the contenders, in order.
      records: ``problem -> contender -> role -> Records`` (selection grid with its extensions merged,
        confirmation, default).
      tuned / one_shot: ``problem -> contender ->`` :class:`protocol.Selection` (the results of each mode).
      identical: ``problem -> mode -> [[name, name, ...], ...]``: contenders whose records in that mode's table
        agree exactly (reported as one entry, the first name).
      batching: ``problem -> contender ->`` the largest relative difference of the final validation metric
        at the chosen configuration between the selection run and a run where every slot holds it (0.0: the
        result does not depend on the other runs in the program).
      programs: one dict per compiled program (:meth:`ProgramResult.info`).
      seeds / confirm_seeds: the selection and the confirmation seeds that ran.
      wall_s: wall-clock seconds of the whole study.
      protocol: the protocol in words, as it ran (:func:`mxopt_jax.compare.report.text.describe`).
      search: ``"grid"`` or ``"random"`` (:mod:`mxopt_jax.compare.search`); ``trials``: configurations per
        contender of a random search (None for the grid); ``search_seed``: the random search's seed;
        ``schedule``: the learning-rate schedule's name (:mod:`mxopt_jax.compare.schedules`).
    """

    preset: Preset
    problems: list[Problem]
    contenders: list[Contender]
    records: dict[str, dict[str, dict[str, Records]]]
    tuned: dict[str, dict[str, Selection]]
    one_shot: dict[str, dict[str, Selection]]
    identical: dict[str, dict[str, list[list[str]]]]
    batching: dict[str, dict[str, float]]
    programs: list[dict[str, Any]]
    seeds: list[int]
    confirm_seeds: list[int]
    wall_s: float
    protocol: str
    search: str = "grid"
    trials: int | None = None
    search_seed: int = 0
    schedule: str = "constant"

    def __repr__(self) -> str:
        ran = {n for per in self.records.values() for n in per}
        return (
            f"<Study: {len(ran)} contender(s) on {len(self.problems)} problem(s) "
            f"({', '.join(p.name for p in self.problems)}), preset {self.preset.name!r}, {len(self.programs)} "
            f"program(s), {self.wall_s:.0f} s; .report(), .to_pandas(), .write(folder)>"
        )

    @property
    def families(self) -> dict[str, str]:
        return {c.name: c.family for c in self.contenders}

    def identical_map(self, problem: str, mode: str = "tuned") -> dict[str, list[str]]:
        """``{representative: [the contenders identical to it]}`` in ``mode``'s table of ``problem``."""
        return {g[0]: g[1:] for g in self.identical.get(problem, {}).get(mode, [])}

    def identical_everywhere(self, mode: str = "tuned") -> dict[str, list[str]]:
        """``{representative: [others]}`` for contenders identical in ``mode`` on every problem (folded in the
        cross-problem tables)."""
        maps = [self.identical_map(p.name, mode) for p in self.problems]
        out: dict[str, list[str]] = {}
        for rep, others in maps[0].items() if maps else ():
            common = [o for o in others if all(o in m.get(rep, []) for m in maps[1:])]
            if common:
                out[rep] = common
        return out

    def selections(self, mode: str = "tuned") -> list[Selection]:
        """Every selection of ``mode`` (``"tuned"`` or ``"one-shot"``), problem by problem."""
        table = self.tuned if mode == "tuned" else self.one_shot
        return [sel for p in self.problems for sel in table[p.name].values()]

    def all_records(self, role: str | None = None) -> list[Records]:
        """Every record (of one ``role``, or all), problem by problem, contender by contender."""
        return [
            r
            for p in self.problems
            for per in self.records[p.name].values()
            for k, r in per.items()
            if role is None or k == role
        ]

    def reported(self, problem: str, mode: str = "tuned") -> list[str]:
        """The contenders shown as entries of ``mode``'s table of ``problem`` (one per group of identical ones)."""
        table = self.tuned if mode == "tuned" else self.one_shot
        hidden = {n for group in self.identical.get(problem, {}).get(mode, []) for n in group[1:]}
        return [c.name for c in self.contenders if c.name in table[problem] and c.name not in hidden]

    def report(self) -> str:
        """The text report (:func:`mxopt_jax.compare.report.format_study`)."""
        return _report.format_study(self)

    def write(self, out_dir: str | Path, plots: bool = True) -> list[Path]:
        """Write the report (text and HTML), records and plots into ``out_dir``
        (:func:`mxopt_jax.compare.report.write_study`)."""
        if not is_writer():  # a study of several processes: process 0 writes (write_study says so too)
            return []
        return _report.write_study(self, checks.output_dir(out_dir, "out_dir"), plots=plots)

    def to_pandas(self) -> Frames:
        """The runs and the summary as tidy pandas DataFrames (``runs, summary = study.to_pandas()``): one row
        per evaluation point of every run (``runs.csv``), one row per contender, problem and mode
        (``summary.csv``); see :func:`~mxopt_jax.compare.report.export.runs_frame` and
        :func:`~mxopt_jax.compare.report.export.summary_frame`. Needs pandas (the app's ``study`` extra)."""
        return Frames(
            export.runs_frame(self.all_records()),
            export.summary_frame(
                self.selections() + self.selections("one-shot"), _report.render.identical_by_problem(self)
            ),
        )

    def _repr_html_(self) -> str:
        """A notebook displays a study as its HTML report: tables and figures (figures need matplotlib)."""
        return study_html(self, standalone=False)

    @classmethod
    def from_json(cls, path: str | Path) -> Study:
        """The study saved in ``path`` (a ``study.json`` written by :meth:`write`), from that file alone:
        :meth:`report`, :meth:`write`, :meth:`to_pandas` and the plots work as on the original. Problems and
        contenders come back from their saved descriptions (name, title, metric, target, budgets; family,
        settings, hyperparameters): they report, they cannot train."""
        doc = _report.read_json(path)
        if doc.get("format") != export.FORMAT:
            raise ValueError(
                f"{path}: written as {doc.get('format')!r}, which does not keep the problems' and contenders' "
                f"descriptions ({export.FORMAT!r} does); its records and selections load with "
                "mxopt_jax.compare.report.read_json"
            )
        meta = doc["meta"]
        problems = [export.restore_problem(info) for info in meta["problems"].values()]
        contenders = [export.restore_contender(info) for info in meta["contenders"].values()]
        preset = protocol.Preset(**meta["preset"])
        by_key: dict[tuple[str, str], dict[str, Records]] = {}
        for r in doc["records"]:
            by_key.setdefault((r.problem, r.contender), {})[r.role] = r
        batching = meta.get("batching") or {}
        results = []
        for info in doc["timings"]["programs"]:
            names = [n for n in info["contenders"] if (info["problem"], n) in by_key]
            results.append(
                _program_result(
                    info,
                    {n: by_key[(info["problem"], n)] for n in names},
                    {n: float(d) for n, d in batching.get(info["problem"], {}).items() if n in names},
                )
            )
        wall = doc["timings"].get("wall_s")
        return assemble(
            preset,
            problems,
            contenders,
            results,
            meta["seeds"],
            meta["confirm_seeds"],
            wall_s=float("nan") if wall is None else float(wall),
            search=meta.get("search") or "grid",
            trials=meta.get("trials"),
            search_seed=int(meta.get("search_seed") or 0),
            schedule=meta.get("schedule") or "constant",
        )


def _groups(contenders: Sequence[Contender], group_by: str) -> list[list[Contender]]:
    if group_by == "none":
        return [[c] for c in contenders]
    if group_by != "family":
        raise ValueError(f"group_by must be 'family' or 'none', got {group_by!r}")
    by_name = {c.name: c for c in contenders}
    return [
        [by_name[n] for n in members]
        for _, members in group_by_family(list(by_name), {c.name: c.family for c in contenders})
    ]


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


def _rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_bad = ~np.isfinite(a) & ~np.isfinite(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    d = np.where(both_bad | (a == b), 0.0, d)
    return float(np.nanmax(np.where(np.isfinite(d), d, 1.0))) if d.size else 0.0


def _seed_list(value: int | Sequence[int], what: str) -> list[int]:
    if isinstance(value, bool):
        raise TypeError(f"study: `{what}` must be a count or a list of ints, got {value!r}")
    if isinstance(value, int | np.integer):
        out = (
            list(range(int(value)))
            if what == "seeds"
            else list(range(protocol.CONFIRM_OFFSET, protocol.CONFIRM_OFFSET + int(value)))
        )
    else:
        try:
            out = [int(s) for s in value]
        except (TypeError, ValueError):
            raise TypeError(f"study: `{what}` must be a count or a list of ints, got {value!r}") from None
        if any(s != float(v) for s, v in zip(out, value, strict=True)):
            raise ValueError(f"study: `{what}` must be integers, got {list(value)}")
    if len(out) < 2:
        raise ValueError(f"study: need at least 2 {what} for confidence intervals, got {out}")
    if len(set(out)) != len(out):
        dup = sorted({s for s in out if out.count(s) > 1})
        raise ValueError(
            f"study: `{what}` repeat {dup}: a repeated seed repeats a run and shrinks the interval"
        )
    if any(s < 0 or s >= 2**31 for s in out):
        raise ValueError(f"study: `{what}` must be in [0, 2**31), got {out}")
    return out


def study(
    problems: Sequence[Problem] | Problem,
    contenders: Sequence[str | Contender] | None = None,
    preset: str | protocol.Preset = "quick",
    *,
    seeds: int | Sequence[int] | None = None,
    confirm_seeds: int | Sequence[int] | None = None,
    extend: int = 2,
    check_batching: str = "best",
    group_by: str = "family",
    devices: Sequence[jax.Device] | None = None,
    progress: Progress | bool | None = None,
    on_program: Callable[[ProgramResult], None] | None = None,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    plots: bool = True,
    search: str = "grid",
    trials: int | None = None,
    search_seed: int = 0,
    schedule: str | Schedule | None = None,
) -> Study:
    """Run the protocol on ``problems`` for ``contenders`` (names, :class:`Contender` objects, or ``None``: all).

    Args:
      problems: one :class:`~mxopt_jax.compare.problems.base.Problem` or several (a user's own included).
      contenders: names (``"adam"``, ``"optax.adam"``, ``"all"``, ``"mxopt"``, ``"optax"``) or contenders
        (:func:`mxopt_jax.compare.contenders.contender` wraps any optax optimizer factory).
      preset: ``"quick"``, ``"full"`` or a :class:`protocol.Preset`.
      seeds: the selection seeds: how many (``0, 1, ...``) or which; defaults to the preset's.
      confirm_seeds: the confirmation seeds (the reported runs): how many (``1000, 1001, ...``) or which; they
        must not meet ``seeds``. Defaults to the preset's.
      extend: how many times a grid may be extended past an edge where the chosen rate sits (an int >= 0).
      check_batching: ``"all"``, ``"best"`` (default: the best contender of each compiled program, i.e. of
        each family) or ``"none"``: run the chosen configuration in every slot of the program and record the
        largest relative difference of the final validation metric from the selection run.
      group_by: ``"family"`` (one compiled program per problem and family) or ``"none"`` (one per contender).
      devices: the devices to shard the runs over (default: all).
      progress: ``(label, fraction_done)`` callback; ``True``: a bar (:class:`~mxopt_jax.compare.progress.
        StudyProgress`: a notebook widget or a terminal bar, with an ETA); ``False``: silent; ``None``
        (default): a bar where a person watches (a notebook, a terminal), silent elsewhere.
      on_program: called with each :class:`ProgramResult` as soon as its program's work is done.
      out: a folder to keep the study in (:mod:`mxopt_jax.compare.store`): checked before anything runs, each
        program's records saved as soon as it finishes, the report, CSV, JSON, HTML and plots written at the
        end. A folder that already holds a study's programs is refused (continue it with ``resume``).
      resume: a folder made with ``out`` (an interrupted or finished study): only what is missing runs (the
        programs not saved yet, problems or contenders added), then the outputs are written from the union.
        A folder made under another protocol or other definitions of the problems or contenders is refused,
        saying what differs. Problems and contenders saved there but not given are restored from it.
      plots: with ``out``/``resume``, whether to write the PNG plots (when matplotlib is installed).
      search: ``"grid"`` (default: the learning rate on the preset's grid, the other hyperparameters at their
        defaults) or ``"random"``: ``trials`` configurations of every hyperparameter a contender declares, the
        same number for every contender, the first its defaults (:mod:`mxopt_jax.compare.search`).
      trials: configurations per contender of a random search (default
        :data:`mxopt_jax.compare.search.DEFAULT_TRIALS`).
      search_seed: seeds the random search: common random numbers, one stream per kind of hyperparameter
        shared by every contender (its trials depend on its space alone, not on its name nor on the other
        contenders; :mod:`mxopt_jax.compare.search`).
      schedule: the learning-rate schedule of every run, its peak the tuned rate: ``"constant"`` (default),
        ``"cosine"``, ``"warmup-cosine"``, ``"trapezoidal"`` (:mod:`mxopt_jax.compare.schedules`) or a hook
        ``(peak, steps) -> learning_rate`` written with ``jax.numpy``.

    Each problem's validation target is its target for the preset (:meth:`Problem.target_for`).

    Every contender is traced on every problem before the first compile (:mod:`mxopt_jax.compare.preflight`,
    seconds): one that cannot run is refused up front, named with the cause, before anything ran.
    """
    t_start = time.perf_counter()
    from .problems import PROBLEMS  # to name a factory passed for a problem

    problems = [problems] if isinstance(problems, Problem) else problems
    if callable(problems) or not isinstance(problems, Sequence):
        problems = [checks.problem_object(problems, Problem, PROBLEMS)]
    problems = [checks.problem_object(p, Problem, PROBLEMS) for p in problems]
    if not problems:
        raise ValueError("study: no problems given")
    names = [p.name for p in problems]
    if len(set(names)) != len(names):
        raise ValueError(f"study: problem names must be unique, got {names}")
    if isinstance(preset, str):
        if preset not in protocol.PRESETS:
            raise ValueError(f"preset must be one of {sorted(protocol.PRESETS)} or a Preset, got {preset!r}")
        preset = protocol.PRESETS[preset]
    if not isinstance(preset, protocol.Preset):
        raise TypeError(f"preset must be one of {sorted(protocol.PRESETS)} or a Preset, got {preset!r}")
    trials = _search.check_search(search, trials)
    _search.generator(search_seed, "")  # checks the seed
    schedule_name, hook = _schedules.resolve(schedule)
    problems = [_preset_target(p, preset) for p in problems]
    seed_list = _seed_list(preset.seeds if seeds is None else seeds, "seeds")
    confirm_list = _seed_list(
        preset.confirm_seeds if confirm_seeds is None else confirm_seeds, "confirm_seeds"
    )
    shared = sorted(set(seed_list) & set(confirm_list))
    if shared:
        raise ValueError(f"study: confirmation seeds must be fresh; {shared} are also selection seeds")
    extend = checks.extend_count(extend)
    check = check_batching
    if check not in ("all", "best", "none"):
        raise ValueError(f"check_batching must be 'all', 'best' or 'none', got {check_batching!r}")
    if group_by not in ("family", "none"):
        raise ValueError(f"group_by must be 'family' or 'none', got {group_by!r}")
    cs = resolve(contenders)
    store, stored_spec, stored = _open_store(out, resume)
    checks.check_host_devices()  # a configure_jax that came too late is said now

    # the union with what a resumed folder holds: problems and contenders saved there and not given come back
    # from their saved descriptions (they cannot train: nothing of theirs may be missing)
    restored_p: set[str] = set()
    restored_c: set[str] = set()
    if stored_spec is not None:
        given_p, given_c = {p.name: p for p in problems}, {c.name: c for c in cs}
        problems = [
            given_p.get(n) or export.restore_problem(info) for n, info in stored_spec["problems"].items()
        ] + [p for p in problems if p.name not in stored_spec["problems"]]
        cs = [
            given_c.get(n) or export.restore_contender(info) for n, info in stored_spec["contenders"].items()
        ] + [c for c in cs if c.name not in stored_spec["contenders"]]
        restored_p = {p.name for p in problems if p.name not in given_p}
        restored_c = {c.name for c in cs if c.name not in given_c}

    # the programs: every (problem, group); a program saved in the folder is not run again, a group with some
    # contenders saved runs the others only
    done_by: dict[str, set[str]] = {}
    for saved in stored.values():
        done_by.setdefault(saved["info"]["problem"], set()).update(saved["records"])
    order: list[str] = []  # every program's key, in the order an uninterrupted study makes them
    jobs: list[tuple[Problem, list[Contender], str]] = []
    for p in problems:
        for g in _groups(cs, group_by):
            key = program_key(p.name, g[0].family if group_by == "family" else g[0].name)
            order.append(key)
            missing = [c for c in g if c.name not in done_by.get(p.name, set())]
            if missing and len(missing) < len(
                g
            ):  # contenders added to a family saved earlier: a program of their own
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

    # before the first compile: every contender traced on every problem (nothing compiled, seconds)
    if progress is None or isinstance(progress, bool):
        show = interactive() if progress is None else progress
        progress = StudyProgress() if show else None
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
        preset.steps,
        tuned=lambda p, c: _search.tuned([c], search, sparse=bool(p.tables))[c.name],
        schedule=hook,
        data=data,
    )
    if failures:
        raise preflight.PreflightError(failures)

    if store is not None:
        fingerprints = [
            stored_spec["problems"][p.name]
            if p.name in restored_p and stored_spec is not None
            else problem_fingerprint(p, data.get(p.name))
            for p in problems
        ]
        doc = spec(
            preset,
            seed_list,
            confirm_list,
            {
                "extend": extend,
                "check_batching": check,
                "group_by": group_by,
                "search": search,
                "trials": trials,
                "search_seed": search_seed,
                **({"draws": _search.DRAWS} if search == "random" else {}),
                "schedule": schedule_name,
            },
            fingerprints,
            cs,
        )
        if stored_spec is not None:
            differ = differences(stored_spec, doc)
            if differ:
                raise ResumeError(
                    f"resume: {str(store.root)!r} holds a study made under another protocol or other definitions; "
                    "resume it with the same ones, or start a new folder. What differs:\n  "
                    + "\n  ".join(differ)
                )
        store.write_spec(doc)

    G, S, C = trials or preset.grid_points, len(seed_list), len(confirm_list)
    capacity = max(G * S, 2 * C)
    # work units for the progress bar: a compile ~ 4 units, a contender's runs ~ 1 unit (measured on CPU)
    checks_of = {"all": lambda g: len(g), "best": lambda g: 1, "none": lambda g: 0}[check]
    total = sum(4 + len(g) + checks_of(g) for _, g, _ in jobs) or 1
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
            capacity,
            steps=preset.steps(p),
            tuned=_search.tuned(group, search, sparse=bool(p.tables)),
            schedule=hook,
            devices=devices,
            name=f"{p.name}/{group[0].family}",
        )

    def configs(p: Problem, c: Contender) -> dict[str, np.ndarray]:
        return _search.configurations(c, preset, search, trials, search_seed, sparse=bool(p.tables))

    results: dict[str, ProgramResult] = {key: _saved_result(saved) for key, saved in stored.items()}
    wall_before = sum(saved["wall_s"] for saved in stored.values())
    if jobs:
        try:
            _run_jobs(
                jobs,
                build,
                configs,
                tick,
                progress,
                preset,
                seed_list,
                confirm_list,
                extend if search == "grid" else 0,  # a random search is not extended
                check,
                store,
                on_program,
                results,
            )
        except BaseException as e:
            if store is not None:
                e.add_note(
                    f"The finished programs are saved in {str(store.root)!r}; continue the study with "
                    f"study(..., resume={str(store.root)!r}) (or mxopt-jax compare --resume {store.root})."
                )
            raise
    if progress is not None:
        progress("done", 1.0)
    ordered = [results[k] for k in order if k in results] + [r for k, r in results.items() if k not in order]
    result = assemble(
        preset,
        problems,
        cs,
        ordered,
        seed_list,
        confirm_list,
        wall_s=time.perf_counter() - t_start + wall_before,
        search=search,
        trials=trials,
        search_seed=search_seed,
        schedule=schedule_name,
    )
    if store is not None:
        result.write(store.root, plots=plots and _has_matplotlib())
    return result


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _open_store(
    out: str | Path | None, resume: str | Path | None
) -> tuple[Store | None, dict[str, Any] | None, dict[str, dict[str, Any]]]:
    """The study's folder (checked: creatable, writable, not a file), its saved spec and programs when
    resuming."""
    writer = is_writer()  # in a study of several processes only process 0 creates or writes anything
    if resume is not None:
        root = checks.output_dir(resume, "resume", create=False) if writer else Path(resume)
        if out is not None and checks.output_dir(out, "out").resolve() != root.resolve():
            raise ValueError(
                f"study: give `out` or `resume` (the folder continued is written), not both: {out!r}, {resume!r}"
            )
        store = Store(root)
        if not store.exists():
            raise ValueError(
                f"resume: {str(resume)!r} holds no study to continue (no spec.json); start one with out="
            )
        return store, store.read_spec(), store.read_programs()
    if out is None:
        return None, None, {}
    store = Store(checks.output_dir(out, "out") if writer else Path(out))
    if store.exists() and store.saved():
        raise ResumeError(
            f"out: {str(out)!r} already holds a study ({store.saved()} program(s) saved); continue it with "
            "resume= (mxopt-jax compare --resume), or give another folder"
        )
    return store, None, {}


def _program_result(info: Mapping[str, Any], records: Any, batching: Mapping[str, float]) -> ProgramResult:
    """A :class:`ProgramResult` from its saved description (:meth:`ProgramResult.info`) and work."""
    return ProgramResult(
        problem=info["problem"],
        name=info["name"],
        contenders=list(info["contenders"]),
        records=records,
        batching=dict(batching),
        compile_s=float(info["compile_s"]),
        devices=int(info["devices"]),
        runs=int(info["runs"]),
        steps=int(info["steps"]),
        platform=str(info.get("platform", "")),
        processes=int(info.get("processes", 1)),
    )


def _saved_result(saved: Mapping[str, Any]) -> ProgramResult:
    return _program_result(saved["info"], saved["records"], saved["batching"])


def _run_jobs(
    jobs: Sequence[tuple[Problem, list[Contender], str]],
    build: Callable[[Problem, list[Contender]], CompiledGroup],
    configs: Callable[[Problem, Contender], dict[str, np.ndarray]],
    tick: Callable[[str, float], None],
    progress: Progress | None,
    preset: protocol.Preset,
    seed_list: list[int],
    confirm_list: list[int],
    extend: int,
    check: str,
    store: Store | None,
    on_program: Callable[[ProgramResult], None] | None,
    results: dict[str, ProgramResult],
) -> None:
    """Compile and run every program of ``jobs``: the next program compiles in a background thread once the
    current one's selection runs are done (they are timed alone); each program's work is saved (``store``)
    and handed to ``on_program`` as soon as it is done. On an interruption (Ctrl-C) the compile in progress
    is abandoned, not waited for."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    interrupted = False
    try:
        if progress is not None:
            progress(f"compiling {jobs[0][0].name}/{jobs[0][1][0].family}", 0.0)
        future = pool.submit(build, jobs[0][0], jobs[0][1])
        t_last = time.perf_counter()
        for k, (p, group, key) in enumerate(jobs):
            prog = future.result()
            tick(f"compiled {prog.name} ({prog.compile_s:.1f} s)", 4)
            selection = {c.name: prog.run(i, configs(p, c), seed_list) for i, c in enumerate(group)}
            if k + 1 < len(jobs):  # selection runs are timed alone; the next compile overlaps what follows
                future = pool.submit(build, jobs[k + 1][0], jobs[k + 1][1])
            result = _finish(prog, group, selection, preset, seed_list, confirm_list, extend, check, tick)
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


def _preset_target(p: Problem, preset: protocol.Preset) -> Problem:
    """``p`` with its target for ``preset`` (:meth:`Problem.target_for`)."""
    target = p.target_for(preset.name)
    return p if target == p.target else dataclasses.replace(p, target=target)


def _columns(names: Sequence[str], *configs: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Configurations as the columns a program takes (``names``: the hyperparameters it traces)."""
    return {n: np.array([float(cfg[n]) for cfg in configs], np.float64) for n in names}


def _finish(
    prog: CompiledGroup,
    group: list[Contender],
    selection: dict[str, Records],
    preset: protocol.Preset,
    seed_list: list[int],
    confirm_list: list[int],
    extend: int,
    check: str,
    tick: Callable[[str, float], None],
) -> ProgramResult:
    """Steps 2 to 5 of the module's docstring for every contender of ``prog``."""
    p = prog.problem
    records: dict[str, dict[str, Records]] = {}
    chosen: dict[str, protocol.Selection] = {}
    for i, c in enumerate(group):
        rec = selection[c.name]
        sel = protocol.select(rec, p)
        grid = rec.lrs
        for _ in range(extend):
            if sel.on_edge is None:
                break
            more = prog.run(i, {"learning_rate": protocol.shift_grid(grid, sel.on_edge)}, seed_list)
            grid = more.lrs
            rec = protocol.combine(rec, more)
            sel = protocol.select(rec, p)
        names = prog.tuned[c.name]
        both = prog.run(i, _columns(names, sel.config, c.defaults), confirm_list, role="confirmation")
        records[c.name] = {
            "selection": rec,
            "confirmation": both.take(0),
            "default": dataclasses.replace(both.take(1), role="default"),
        }
        chosen[c.name] = sel
        tick(f"{p.name}: {c.name}", 1)
    batching: dict[str, float] = {}
    if check != "none":
        targets = (
            group if check == "all" else [min(group, key=lambda c: float(np.min(chosen[c.name].scores)))]
        )
        for c in targets:
            i, sel = group.index(c), chosen[c.name]
            width = len(selection[c.name].lrs)  # the selection call's configurations: the same batch shape
            alone = prog.run(i, _columns(prog.tuned[c.name], *[sel.config] * width), seed_list)
            batching[c.name] = _rel_diff(
                alone.val[0, :, -1], records[c.name]["selection"].val[sel.index, :, -1]
            )
            tick(f"{p.name}: {c.name} (batching check)", 1)
    return ProgramResult(
        problem=p.name,
        name=prog.name,
        contenders=[c.name for c in group],
        records=records,
        batching=batching,
        compile_s=prog.compile_s,
        devices=prog.n_devices,
        runs=prog.capacity,
        steps=prog.steps,
        platform=prog.platform,
        processes=prog.processes,
    )


def assemble(
    preset: protocol.Preset,
    problems: Sequence[Problem],
    contenders: Sequence[Contender],
    results: Sequence[ProgramResult],
    seeds: Sequence[int],
    confirm_seeds: Sequence[int],
    wall_s: float = float("nan"),
    search: str = "grid",
    trials: int | None = None,
    search_seed: int = 0,
    schedule: str = "constant",
) -> Study:
    """A :class:`Study` from the programs' results: selections of both modes, identity per table, the protocol
    as it ran. In a random search a chosen value is flagged (``Selection.edges``; ``on_edge`` the learning
    rate's) when it is the lowest or the highest of its hyperparameter among the trials
    (:func:`mxopt_jax.compare.search.edges`), and contenders are identical in the tuned table when they agree at
    every drawn trial they share (three, or every drawn one when fewer) and in the confirmation runs."""
    problems = list(problems)
    records: dict[str, dict[str, dict[str, Records]]] = {p.name: {} for p in problems}
    batching: dict[str, dict[str, float]] = {p.name: {} for p in problems}
    for r in results:
        records[r.problem].update(r.records)
        batching[r.problem].update(r.batching)
    known = {p.name: p for p in problems}
    order = [c.name for c in contenders]
    by_name = {c.name: c for c in contenders}
    tuned: dict[str, dict[str, protocol.Selection]] = {}
    one_shot: dict[str, dict[str, protocol.Selection]] = {}
    identical: dict[str, dict[str, list[list[str]]]] = {}
    for name, per in records.items():
        per = {n: per[n] for n in order if n in per}
        records[name] = per
        p = known[name]
        tuned[name] = {
            n: protocol.select(r["selection"], p, confirmation=r["confirmation"]) for n, r in per.items()
        }
        if search == "random":  # the index of a trial says nothing about its place among the values tried
            for n, sel in tuned[name].items():
                rec = per[n]["selection"]
                sel.edges = _search.edges(
                    {"learning_rate": rec.lrs, **rec.hparams}, sel.index, by_name[n].hyperparameters
                )
                sel.on_edge = sel.edges.get("learning_rate")
        one_shot[name] = {n: protocol.select(r["default"], p) for n, r in per.items()}
        identical[name] = {
            "tuned": identical_groups(
                {n: r["selection"] for n, r in per.items()},
                # a random search's contenders share its drawn trials (common random numbers), not its first
                min_shared=3 if search == "grid" else max(1, min(3, (trials or 1) - 1)),
                also={n: r["confirmation"] for n, r in per.items()},
            ),
            "one-shot": identical_groups({n: r["default"] for n, r in per.items()}, min_shared=1),
        }
    ran = [c for c in contenders if any(c.name in records[p.name] for p in problems)]
    searched = {c.name: set(c.defaults) if search == "random" else {"learning_rate"} for c in ran}
    text = _report.describe(
        preset,
        problems,
        [c.name for c in ran],
        grids={  # each problem's grids as they ran (extensions included)
            p.name: {n: r["selection"].lrs for n, r in records[p.name].items()} for p in problems
        }
        if search == "grid"
        else None,
        seeds=list(seeds),
        confirm_seeds=list(confirm_seeds),
        settings={
            c.name: (c.description, {k: v for k, v in c.settings.items() if k not in searched[c.name]})
            for c in ran
        },
        search=search,
        trials=trials,
        search_seed=search_seed,
        spaces={c.name: c.hyperparameters for c in ran} if search == "random" else None,
        schedule=schedule,
    )
    return Study(
        preset=preset,
        problems=problems,
        contenders=list(contenders),
        records=records,
        tuned=tuned,
        one_shot=one_shot,
        identical=identical,
        batching=batching,
        programs=[r.info() for r in results],
        seeds=list(seeds),
        confirm_seeds=list(confirm_seeds),
        wall_s=wall_s,
        protocol=text,
        search=search,
        trials=trials,
        search_seed=search_seed,
        schedule=schedule,
    )
