"""A study's work on disk as it happens, so that nothing finished is lost and an interrupted study continues.

An output folder of a study run with ``out=`` (``mxopt-jax compare --out``) holds, besides the final files
(:func:`mxopt_jax.compare.report.write_study`):

* ``spec.json``: the study's fingerprint (:func:`spec`): the preset, the selection and confirmation seeds,
  the study's options, every problem's definition (budgets, target, metric, a digest of its data and the
  shapes of its parameters) and every contender's (family, settings, hyperparameters), and the versions of
  jax, jaxlib, optax and mxopt_jax. Written before the first compile;
* ``programs/<problem>__<family>.json``: one file per compiled program, written (atomically: a file is whole
  or absent) as soon as the program's work is done: every record of its contenders, its batching check and
  its timings.

Resuming (``study(..., resume=DIR)``, ``mxopt-jax compare --resume DIR``) compares the fingerprints
(:func:`differences`): the protocol, the versions and the definitions of the problems and contenders both
share must agree (a folder made under another protocol is refused, with what differs); problems and
contenders may be added. Only the programs whose files are missing run.

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
from typing import Any

import jax
import numpy as np

from .contenders import Contender
from .distributed import is_writer
from .problems.base import Problem
from .protocol import Preset
from .records import Records
from .report.export import _jsonable, contender_info, problem_info, versions

__all__ = [
    "FORMAT",
    "VERSIONED",
    "ResumeError",
    "Store",
    "differences",
    "problem_fingerprint",
    "program_key",
    "spec",
]

#: Identifies the layout of ``spec.json`` and the program files.
FORMAT = "mxopt_jax.compare.store/1"
#: Libraries whose versions must agree for a study to be resumed (their numbers could differ).
VERSIONED = ("jax", "jaxlib", "optax", "mxopt_jax")


class ResumeError(ValueError):
    """A folder that cannot be continued as asked (made under another protocol, or missing runs of problems or
    contenders that were not given), or an output folder that already holds a study."""


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename: the file is whole or
    absent, even when the process is interrupted."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w") as f:  # the usual permissions (the umask's), unlike tempfile's private files
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


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
    """:func:`~mxopt_jax.compare.report.export.problem_info` plus what tells one definition from another: a
    digest of its data (``data``: its splits, when already loaded) and the shapes of its parameters."""
    info = problem_info(problem)
    info["data"] = _digest(tuple(problem.data() if data is None else data))
    shapes = jax.eval_shape(problem.init, jax.ShapeDtypeStruct((2,), np.uint32))
    info["params"] = [
        f"{jax.tree_util.keystr(path)}: {tuple(leaf.shape)} {leaf.dtype}"
        for path, leaf in jax.tree_util.tree_leaves_with_path(shapes)
    ]
    return info


def spec(
    preset: Preset,
    seeds: Sequence[int],
    confirm_seeds: Sequence[int],
    options: Mapping[str, Any],
    problems: Sequence[Mapping[str, Any]],
    contenders: Sequence[Contender],
) -> dict[str, Any]:
    """A study's fingerprint: ``problems`` are :func:`problem_fingerprint` dicts, ``options`` the study's
    options (``extend``, ``check_batching``, ``group_by``)."""
    return {
        "format": FORMAT,
        "preset": preset.to_dict(),
        "seeds": [int(s) for s in seeds],
        "confirm_seeds": [int(s) for s in confirm_seeds],
        "options": dict(options),
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
    """What keeps a study stored as ``stored`` (a :func:`spec`) from being continued as ``now``: the
    protocol (preset, seeds, options), the versions, and the definitions of problems and contenders present in
    both (added ones are fine). Empty: it may be resumed."""
    out: list[str] = []
    for key in ("format", "preset", "seeds", "confirm_seeds", "options", "versions"):
        _diff(key, _jsonable(stored.get(key)), _jsonable(now.get(key)), out)
    for kind in ("problems", "contenders"):
        a, b = stored.get(kind, {}), now.get(kind, {})
        for name in a:
            if name in b:
                _diff(f"{kind}.{name}", _jsonable(a[name]), _jsonable(b[name]), out)
    return out


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
        try:
            doc = json.loads(self.spec_path.read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"{self.spec_path} cannot be read as a study's spec: {e}") from None
        if doc.get("format") != FORMAT:
            raise ValueError(f"{self.spec_path}: unknown format {doc.get('format')!r} (expected {FORMAT!r})")
        return doc

    def write_spec(self, doc: Mapping[str, Any]) -> Path | None:
        """Save the study's fingerprint (process 0 only: elsewhere nothing is written and None returned)."""
        if not is_writer():
            return None
        self.root.mkdir(parents=True, exist_ok=True)
        return write_atomic(self.spec_path, json.dumps(_jsonable(doc), indent=1, allow_nan=False))

    def write_program(self, key: str, result: Any, wall_s: float) -> Path | None:
        """Save a program's work (a :class:`~mxopt_jax.compare.study.ProgramResult`): its description, every
        record and its batching check, and ``wall_s``, the seconds the study spent on it (process 0 only:
        elsewhere nothing is written and None returned)."""
        if not is_writer():
            return None
        doc = {
            "format": FORMAT,
            "key": key,
            "info": result.info(),
            "batching": dict(result.batching),
            "wall_s": float(wall_s),
            "records": [
                {"role": role, **rec.to_dict()}
                for per in result.records.values()
                for role, rec in per.items()
            ],
        }
        self.programs_dir.mkdir(parents=True, exist_ok=True)
        return write_atomic(
            self.programs_dir / f"{key}.json", json.dumps(_jsonable(doc), indent=None, allow_nan=False)
        )

    def read_programs(self) -> dict[str, dict[str, Any]]:
        """``{key: {"info", "batching", "wall_s", "records": {contender: {role: Records}}}}`` of every saved
        program (unreadable files are refused, naming them)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.programs_dir.is_dir():
            return out
        for path in sorted(self.programs_dir.glob("*.json")):
            try:
                doc = json.loads(path.read_text())
                records: dict[str, dict[str, Records]] = {}
                for d in doc["records"]:
                    rec = Records.from_dict(d)
                    records.setdefault(rec.contender, {})[rec.role] = rec
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ValueError(
                    f"{path} cannot be read ({type(e).__name__}: {e}); delete it to re-run that program"
                ) from None
            out[doc["key"]] = {
                "info": doc["info"],
                "batching": {k: float(v) for k, v in doc["batching"].items()},
                "wall_s": float(doc.get("wall_s") or 0.0),
                "records": records,
            }
        return out
