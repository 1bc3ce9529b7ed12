"""The results file, ``study.json``: written (:func:`document`, :func:`write`) and read (:func:`read`,
:func:`from_document`) here alone, the writer beside the reader.

It holds every record of every study of the plan, the selections, the plan, what a report needs of each problem
and contender, the protocol in words and the timings. A study is read back from its records: the file may come from
a stranger, so every field is checked as it is read (a one-line ``ValueError`` naming the file and the field,
:class:`~mxopt_jax.compare.serialize.Where`), the records are held to their plan
(:func:`~mxopt_jax.compare.result.check_programs`), the selections are made again from them
(:func:`mxopt_jax.compare.tuning.selections`) and the ones stored must be those; it reports but cannot train (its
problems and contenders come back from their saved descriptions). The JSON spelling itself (strict JSON, NaN and
infinities encoded, files written whole) is :mod:`mxopt_jax.compare.serialize`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from .contenders import Contender
from .plan import Plan
from .presets import PRESETS
from .problems.base import Problem
from .records import Records
from .result import ProgramResult, StudyResult, check_programs
from .selection import Selection
from .serialize import (
    FORMAT,
    Where,
    contender_info,
    jsonable,
    problem_info,
    read_document,
    read_plan,
    read_program_info,
    read_records,
    read_selection,
    restore_contender,
    restore_problem,
    write_document,
)

__all__ = ["document", "from_document", "read", "write"]

#: The layout of ``study.json`` before the plan was saved whole (still reloaded).
_FORMAT_2 = "mxopt_jax.compare.study/2"

R = TypeVar("R", bound=StudyResult)


def document(study: StudyResult, protocol: str) -> dict[str, Any]:
    """What ``study.json`` holds: every record of every study, the selections, the protocol's text (``protocol``:
    :func:`mxopt_jax.compare.report.render.describe_study`, the words the report prints), the plan, what the
    report needs of each problem and contender (the file reloads on its own: :func:`read`), and the timings."""
    return {
        "protocol": protocol,
        "preset": study.preset.name,
        "presets": PRESETS,
        "timings": {"wall_s": study.wall_s, "programs": study.programs, "resumed": study.resumed},
        "meta": {
            "plan": study.plan.to_dict(),
            "identical": study.identical,
            "batching": study.batching,
            "problems": {p.name: problem_info(p) for p in study.problems},
            "contenders": {c.name: contender_info(c) for c in study.contenders},
        },
        "records": [r for s in study.studies() for r in s.all_records()],
        "selections": study.selections() + study.selections("one-shot"),
    }


def write(path: str | Path, study: StudyResult, protocol: str) -> Path:
    """Write ``study``'s :func:`document` to ``path`` (whole or not at all:
    :func:`~mxopt_jax.compare.serialize.write_document`); returns the path."""
    return write_document(path, document(study, protocol))


@overload
def from_document(doc: Mapping[str, Any], where: str = ...) -> StudyResult: ...


@overload
def from_document(doc: Mapping[str, Any], where: str, cls: type[R]) -> R: ...


def from_document(
    doc: Mapping[str, Any], where: str = "study.json", cls: type[StudyResult] = StudyResult
) -> StudyResult:
    """The result a study document holds (:func:`mxopt_jax.compare.serialize.read_document`'s dict),
    recomputed from its records: the one way a saved study is read (``mxopt-jax report`` and ``agree`` alike).

    A document may come from a stranger, so every field is checked as it is read (a bad one is a one-line
    ``ValueError`` naming ``where``, the file, and the field): the plan, the problems and contenders, the
    programs and timings, the records (each as a record, :func:`~mxopt_jax.compare.serialize.read_records`,
    then all against the plan, :func:`~mxopt_jax.compare.result.check_records`), every record in exactly one program; and the stored
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
        for i, x in enumerate((w / "timings" / "programs").seq((w / "timings").field(timings, "programs")))
    ]
    wall = (w / "timings" / "wall_s").number(timings.get("wall_s"), low=0.0, nan=True)
    resumed = _resumed_info(timings.get("resumed"), w / "timings" / "resumed")
    batching = _batching(meta.get("batching"), w / "meta" / "batching", by_problem, by_contender)
    # each record to the program of its problem and contender (check_programs holds the rest)
    program_of = {
        (info["problem"], n): i for i, info in reversed(list(enumerate(programs))) for n in info["contenders"]
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


@overload
def read(path: str | Path) -> StudyResult: ...


@overload
def read(path: str | Path, cls: type[R]) -> R: ...


def read(path: str | Path, cls: type[StudyResult] = StudyResult) -> StudyResult:
    """The study saved in ``path`` (a ``study.json``), from that file alone (:func:`from_document`, every
    field checked): it reports, writes and makes DataFrames as the original; its problems and contenders come
    back from their saved descriptions (name, title, metric, target, budgets; family, settings,
    hyperparameters): they cannot train."""
    return from_document(read_document(path), str(path), cls)


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
