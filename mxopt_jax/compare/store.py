"""A study's work on disk as it happens, so that nothing finished is lost and an interrupted study continues.

An output folder of a study run with ``out=`` (``mxopt-jax compare --out``) holds, besides the final files
(:func:`mxopt_jax.compare.report.write_study`):

* ``spec.json``: the study's fingerprint (:func:`spec`): its :class:`~mxopt_jax.compare.plan.Plan` (every
  setting), every problem's definition (budgets, target, metric, a digest of its data and the shapes of its
  parameters) and every contender's (family, settings, hyperparameters), and the versions of jax, jaxlib,
  optax and mxopt_jax. Written before the first compile;
* ``programs/<problem>__<family>.json``: one file per compiled program, written (atomically: a file is whole
  or absent) as soon as the program's work is done: every record of its contenders, its batching check and
  its timings.

Resuming (``study(..., resume=DIR)``, ``mxopt-jax compare --resume DIR``) takes the stored plan with what the
user changed (:meth:`~mxopt_jax.compare.plan.Plan.resumed`: any setting given with another value is refused,
naming it) and compares the rest of the fingerprints (:func:`differences`): the versions and the definitions
of the problems and contenders both share must agree; problems and contenders may be added. Only the programs
whose files are missing run.

:func:`open_folder` is the one check of a study's folder (the command line calls it before JAX starts, the
API when the study starts): nothing is created until the first file is written.

Every write of the app goes through :class:`Store` and :func:`mxopt_jax.compare.report.write_study`; in a
study of several processes only process 0 writes (:func:`mxopt_jax.compare.distributed.is_writer`); every
process reads a folder it resumes (so resuming a study of several hosts needs a shared file system).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from .checks import output_dir, resume_command
from .contenders import Contender
from .distributed import is_writer
from .plan import Plan
from .problems.base import Problem
from .result import ProgramResult, check_programs
from .search import DRAWS
from .serialize import (
    CONTENDER_FIELDS,
    PROBLEM_FIELDS,
    Where,
    contender_info,
    dumps,
    jsonable,
    problem_info,
    read_json,
    read_plan,
    read_program_info,
    read_records,
    restore_contender,
    restore_problem,
    versions,
    write_atomic,
)

__all__ = [
    "FORMAT",
    "VERSIONED",
    "ResumeError",
    "Saved",
    "Store",
    "check_saved",
    "differences",
    "digest",
    "open_folder",
    "problem_fingerprint",
    "program_key",
    "spec",
]

#: Identifies the layout of ``spec.json`` and the program files (2: the plan is saved whole; 3: a program file
#: holds its digest).
FORMAT = "mxopt_jax.compare.store/3"
#: Libraries whose versions must agree for a study to be resumed (their numbers could differ).
VERSIONED = ("jax", "jaxlib", "optax", "mxopt_jax")


class ResumeError(ValueError):
    """A folder that cannot be continued as asked (made under other settings or definitions, or missing runs of
    problems or contenders that were not given), or an output folder that already holds a study."""


def _slug(text: str) -> str:
    """A file-name-safe form of ``text`` (a short digest added when characters had to be replaced)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    if safe != text:
        safe += "-" + hashlib.sha1(text.encode()).hexdigest()[:6]
    return safe


def program_key(problem: str, group: str) -> str:
    """The file name (without ``.json``) of the program of ``problem`` and ``group`` (a family, or a contender
    when programs are not grouped)."""
    return f"{_slug(problem)}__{_slug(group)}"


def _digest(tree: Any) -> str:
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(tree):
        a = np.ascontiguousarray(np.asarray(leaf))
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def problem_fingerprint(problem: Problem, data: Any = None) -> dict[str, Any]:
    """:func:`~mxopt_jax.compare.serialize.problem_info` plus what tells one definition from another: a digest of
    its data (``data``: its splits, when already loaded) and the shapes of its parameters (and of its model
    state, for a problem with one)."""
    info = problem_info(problem)
    info["data"] = _digest(tuple(problem.data() if data is None else data))
    key = jax.ShapeDtypeStruct((2,), np.uint32)
    for field, make in (("params", problem.init), ("state", problem.initial_state)):
        if field == "state" and not problem.stateful:
            continue  # a problem without model state keeps the fingerprint it always had
        info[field] = [
            f"{jax.tree_util.keystr(path)}: {tuple(leaf.shape)} {leaf.dtype}"
            for path, leaf in jax.tree_util.tree_leaves_with_path(jax.eval_shape(make, key))
        ]
    return info


def spec(
    plan: Plan,
    problems: Sequence[Mapping[str, Any]],
    contenders: Sequence[Contender],
) -> dict[str, Any]:
    """A study's fingerprint: its plan, ``problems`` as :func:`problem_fingerprint` dicts, the contenders'
    definitions and the versions that must agree to resume."""
    return {
        "format": FORMAT,
        "plan": plan.to_dict(),
        # how a random search draws its trials (a study drawn another way cannot be continued with these draws)
        **({"draws": DRAWS} if plan.search == "random" else {}),
        "problems": {p["name"]: dict(p) for p in problems},
        "contenders": {c.name: contender_info(c) for c in contenders},
        "versions": {k: v for k, v in versions().items() if k in VERSIONED},
    }


def _diff(path: str, a: Any, b: Any, out: list[str]) -> None:
    """Append ``"path: stored A, now B"`` for every leaf where ``a`` and ``b`` differ."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in dict.fromkeys([*a, *b]):
            _diff(f"{path}.{k}" if path else str(k), a.get(k, "(absent)"), b.get(k, "(absent)"), out)
        return
    if a != b:
        text = [json.dumps(v) if not isinstance(v, str) else v for v in (a, b)]
        short = [t if len(t) <= 80 else t[:77] + "..." for t in text]
        out.append(f"{path}: stored {short[0]}, now {short[1]}")


def differences(stored: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What keeps a study stored as ``stored`` (a :func:`spec`) from being continued as ``now`` besides its plan
    (:meth:`~mxopt_jax.compare.plan.Plan.resumed` holds the settings): the versions, and the definitions of
    problems and contenders present in both (added ones are fine). Empty: it may be resumed."""
    out: list[str] = []
    for key in ("format", "draws", "versions"):
        _diff(key, jsonable(stored.get(key, "(absent)")), jsonable(now.get(key, "(absent)")), out)
    for kind in ("problems", "contenders"):
        a, b = stored.get(kind, {}), now.get(kind, {})
        for name in a:
            if name in b:
                _diff(f"{kind}.{name}", jsonable(a[name]), jsonable(b[name]), out)
    return out


class Saved(NamedTuple):
    """A saved program: its result and the seconds the study spent on it."""

    result: ProgramResult
    wall_s: float


def digest(doc: Mapping[str, Any]) -> str:
    """The SHA-256 of a program file's content (``doc``: its plain JSON values, as written or as read; every key
    but ``digest``, as canonical JSON: sorted keys, no spaces): written with the file and checked when it is
    read, so a file edited by hand (or damaged) is refused before its records are used. (It is no signature:
    whoever edits the records can write its digest again; the records are held to the plan by
    :func:`check_saved` all the same.)"""
    content = {k: v for k, v in doc.items() if k != "digest"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_saved(
    saved: Mapping[str, Saved], plan: Plan, stored: Mapping[str, Any], where: str = "programs"
) -> None:
    """Whether a folder's saved programs (``{key: Saved}``, :meth:`Store.read_programs`) are the work ``plan``
    makes of the problems and contenders its spec describes (``stored``: :meth:`Store.read_spec`), before a
    resumed study uses them: a :class:`ResumeError` naming the file and what is wrong. The one check of saved
    programs against the plan (extend it, or the rules it calls, when the protocol changes); none of it depends
    on what a selection chose:

    * the programs (:func:`mxopt_jax.compare.result.check_programs`): each program's problem and contenders the
      spec's (each contender in one program per problem), its steps the plan's budget for its problem, its
      batching check about its own contenders, its records those of its contenders, every one with records;
    * their records (:func:`mxopt_jax.compare.result.check_records`, the same rules a saved ``study.json`` is
      read under): one per contender, study and role, every role of every study of the plan; the plan's seeds
      and evaluation steps; one configuration where a role runs one; a diverged run's metrics NaN from its
      divergence on; the configurations the plan runs (a grid search's grid around the default rate and its
      shifts, or a random search's draws; the defaults; a confirmation one of its selection's).

    Each file's own digest (:func:`digest`), key, fields and records as such are checked as it is read
    (:meth:`Store.read_programs`)."""
    w = Where(where)
    problems = {n: restore_problem(info, w / n) for n, info in stored.get("problems", {}).items()}
    contenders = {n: restore_contender(info, w / n) for n, info in stored.get("contenders", {}).items()}
    keys = list(saved)
    try:
        check_programs(
            [saved[k].result for k in keys], plan, problems, contenders, [f"{where}/{k}.json" for k in keys]
        )
    except ValueError as e:
        raise ResumeError(f"{e}; delete that file to run its program again") from None


def open_folder(path: str | os.PathLike[str], resume: bool, what: str | None = None) -> Store:
    """The folder of a study, checked (the one check, with one wording, for the command line and the API);
    nothing is created. ``resume``: it must hold a study (a ``spec.json``) to continue; otherwise it must not
    hold one (a study's programs are never overwritten: continue it with resume). ``what`` names the argument
    in errors (``"--out"``, ``"out"``, ...)."""
    what = what or ("resume" if resume else "out")
    store = Store(output_dir(path, what, exists=resume))
    for inner in (store.programs_dir, store.spec_path):
        if inner.is_symlink() or (inner == store.programs_dir and inner.exists() and not inner.is_dir()):
            raise ResumeError(
                f"{what}: {str(inner)!r} is a link (or not a folder); a study's folder holds its own files and "
                "folders, never links: remove it, or give another folder"
            )
    if resume and not store.exists():
        raise ResumeError(
            f"{what}: {str(path)!r} holds no study to continue (no spec.json); start one there instead"
        )
    if not resume and store.exists() and store.saved():
        how = resume_command(path) if what.startswith("--") else f"study(..., resume={str(path)!r})"
        raise ResumeError(
            f"{what}: {str(path)!r} already holds a study ({store.saved()} program(s) saved); continue it with "
            f"{how}, or give another folder"
        )
    return store


class Store:
    """The folder of a study's work (see the module's docstring). Every method that writes is here."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.programs_dir = self.root / "programs"
        self.spec_path = self.root / "spec.json"

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def exists(self) -> bool:
        """Whether the folder holds a study (a ``spec.json``)."""
        return self.spec_path.is_file()

    def saved(self) -> int:
        """How many programs are saved."""
        return len(list(self.programs_dir.glob("*.json"))) if self.programs_dir.is_dir() else 0

    def read_spec(self) -> dict[str, Any]:
        """The folder's ``spec.json``, every field a resume reads checked (the plan, each problem's and
        contender's description, the versions): a :class:`ResumeError` naming the file and the field."""
        w = Where(str(self.spec_path))
        try:
            doc = read_json(self.spec_path, follow=False)
        except (OSError, ValueError) as e:
            raise ResumeError(f"{self.spec_path} cannot be read as a study's spec: {e}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            found = doc.get("format") if isinstance(doc, dict) else None
            raise ResumeError(
                f"{self.spec_path}: written as {str(found)[:60]!r}, which this version cannot resume (it writes "
                f"{FORMAT!r}); start a new folder"
            )
        known = {  # what differences() compares: nothing else may be there
            "problems": {*PROBLEM_FIELDS, "data", "params", "state"},
            "contenders": set(CONTENDER_FIELDS),
        }
        try:
            read_plan(w.field(doc, "plan"), w / "plan")
            if "draws" in doc:
                (w / "draws").text(doc["draws"])
            for kind, restore in (("problems", restore_problem), ("contenders", restore_contender)):
                for name, info in (w / kind).obj(w.field(doc, kind)).items():
                    made = restore(info, w / kind / name)
                    if made.name != name:
                        raise (w / kind / name / "name").error(f"must be the key it is saved under, {name!r}")
                    unknown = sorted(set(info) - known[kind])
                    if unknown:
                        raise (w / kind / name).error(
                            f"unknown field(s) {', '.join(map(repr, unknown))[:120]}"
                        )
                    for field in ("data", "params", "state") if kind == "problems" else ():
                        if field in info:
                            value = info[field]
                            items = value if field != "data" else [value]
                            for i, item in enumerate((w / kind / name / field).seq(items)):
                                (w / kind / name / field / i).text(item)
            for name, version in (w / "versions").obj(w.field(doc, "versions")).items():
                (w / "versions" / name).text(version)
        except ValueError as e:
            raise ResumeError(str(e)) from None
        return doc

    def read_plan(self, **given: Any) -> Plan:
        """The stored plan, held against the settings given to resume it (:meth:`Plan.resumed`)."""
        return Plan.from_dict(self.read_spec()["plan"]).resumed(**given)

    def write_spec(self, doc: Mapping[str, Any]) -> Path | None:
        """Save the study's fingerprint (process 0 only: elsewhere nothing is written and None returned)."""
        if not is_writer():
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        return write_atomic(self.spec_path, dumps(doc, indent=1), root=self.root)

    def write_program(self, key: str, result: ProgramResult, wall_s: float) -> Path | None:
        """Save a program's work: its description, every record (of every study) and its batching check, and
        ``wall_s``, the seconds the study spent on it (process 0 only: elsewhere nothing is written and None
        returned)."""
        if not is_writer():
            return None
        doc: dict[str, Any] = jsonable(
            {
                "format": FORMAT,
                "key": key,
                "info": result.info(),
                "batching": dict(result.batching),
                "wall_s": float(wall_s),
                "records": [rec.to_dict() for rec in result.all_records()],
            }
        )
        doc["digest"] = digest(doc)
        self.root.mkdir(parents=True, exist_ok=True)
        return write_atomic(self.programs_dir / f"{key}.json", dumps(doc, indent=None), root=self.root)

    def read_programs(self) -> dict[str, Saved]:
        """``{key: Saved(result, wall_s)}`` of every saved program, each checked before it is used: its file a
        regular file (not a link), its format, its key its file's name, its digest (:func:`digest`: a file
        edited or damaged since it was written), every field and record read as such
        (:func:`~mxopt_jax.compare.serialize.read_records`) and, in a folder with a ``spec.json``, the whole
        against the stored plan (:func:`check_saved`). Anything wrong is a :class:`ResumeError` naming the file
        (delete it to run that program again)."""
        out: dict[str, Saved] = {}
        if not self.programs_dir.is_dir():
            return out
        if self.programs_dir.is_symlink():
            raise ResumeError(
                f"{self.programs_dir} is a link; a study's folder holds its own programs/, never a link"
            )
        for path in sorted(self.programs_dir.glob("*.json")):
            w = Where(str(path))
            try:
                doc = w.obj(read_json(path, follow=False))
                if doc.get("format") != FORMAT:
                    raise w.error(f"written as {str(doc.get('format'))[:60]!r}, not {FORMAT!r}")
                if (w / "key").text(w.field(doc, "key")) != path.stem:
                    raise (w / "key").error(f"must be the file's name, {path.stem!r}", doc["key"])
                try:
                    same = doc.get("digest") == digest(doc)
                except RecursionError:
                    raise w.error("nested deeper than a program file is") from None
                if not same:
                    raise w.error(
                        "its content does not match its digest (edited or damaged since it was written)"
                    )
                records = [
                    read_records(d, w / "records" / i)
                    for i, d in enumerate((w / "records").seq(w.field(doc, "records")))
                ]
                info = read_program_info(w.field(doc, "info"), w / "info")
                batching = {
                    (w / "batching").name(k): (w / "batching" / k).number(v, low=0.0)
                    for k, v in (w / "batching").obj(w.field(doc, "batching")).items()
                }
                try:
                    result = ProgramResult.from_saved(info, records, batching)
                except ValueError as e:  # a record saved twice
                    raise (w / "records").wrap(e) from None
                wall = (w / "wall_s").number(doc.get("wall_s") or 0.0, low=0.0)
            except (OSError, ValueError) as e:
                raise ResumeError(f"{e}; delete that file to run its program again") from None
            out[path.stem] = Saved(result, wall)
        if self.exists():
            stored = self.read_spec()
            check_saved(
                out,
                read_plan(stored["plan"], Where(str(self.spec_path)) / "plan"),
                stored,
                str(self.programs_dir),
            )
        return out
