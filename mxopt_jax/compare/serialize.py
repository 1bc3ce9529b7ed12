"""Reading and writing the study's files: the JSON format and the CSV numbers (the report and the tour write the CSV
files), below both the store and the report.

Everything the app writes as JSON goes through :func:`jsonable` and :func:`dumps` (strict JSON: NaN as
``null``, infinities as ``"inf"``/``"-inf"``), and files are written whole or not at all, never through a link
(:func:`write_atomic`). What a saved study keeps of each problem and contender (its description, never its
code) is :func:`problem_info` / :func:`contender_info`, and :func:`restore_problem` /
:func:`restore_contender` bring it back as an object that reports but cannot train. CSV numbers are written
unrounded (:func:`csv_number`) and read back exactly (:func:`read_csv`); CSV text is written so that no
spreadsheet runs it as a formula (:func:`csv_text`).

A folder may come from a stranger: everything read back from one is checked as it is read (:class:`Where` and
its readers: :func:`read_records`, :func:`read_selection`, :func:`read_preset`, :func:`read_plan`, the restored
problems and contenders), and a bad value is a one-line ``ValueError`` naming the file and the field.

The study document (``study.json``) is :func:`write_document` / :func:`read_document`; what it holds is the
result's (:meth:`mxopt_jax.compare.result.StudyResult.document`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .checks import atomic_file, printable, read_regular
from .contenders import Contender
from .floats import encode
from .plan import MAX_STUDIES, Plan
from .problems.base import Problem
from .protocol import Preset, Selection
from .records import ROLES, Records
from .space import Hyperparameter

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "CONTENDER_FIELDS",
    "FORMAT",
    "FORMULA_START",
    "PANDAS_HINT",
    "PROBLEM_FIELDS",
    "Where",
    "contender_info",
    "csv_number",
    "csv_text",
    "csv_untext",
    "dumps",
    "jsonable",
    "pandas",
    "problem_info",
    "read_csv",
    "read_document",
    "read_json",
    "read_plan",
    "read_preset",
    "read_program_info",
    "read_records",
    "read_selection",
    "restore_contender",
    "restore_problem",
    "versions",
    "write_atomic",
    "write_document",
    "write_json",
]

#: Identifies the layout of ``study.json`` (bumped when it changes). 3: the plan (every setting) is saved.
FORMAT = "mxopt_jax.compare.study/3"
#: What to do when pandas is missing.
PANDAS_HINT = "pandas is needed for DataFrames; install the app's extra: pip install 'mxopt_jax[study]'"


# --------------------------------------------------------------------------- JSON
def jsonable(x: Any) -> Any:
    """Plain JSON values: records, selections, presets and dataclasses as dicts, arrays as lists, NaN as None,
    infinities as ``"inf"``/``"-inf"``."""
    if isinstance(x, Records | Selection | Preset):
        return x.to_dict()
    if hasattr(x, "to_dict") and callable(x.to_dict) and not isinstance(x, type):
        return jsonable(x.to_dict())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return jsonable(dataclasses.asdict(x))
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return jsonable(x.item())
    return encode(x)


def dumps(doc: Any, indent: int | None = 1) -> str:
    """``doc`` as strict JSON text (:func:`jsonable` first: no NaN or Infinity literals)."""
    return json.dumps(jsonable(doc), indent=indent, allow_nan=False)


def write_atomic(path: str | Path, text: str, root: str | Path | None = None) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename
    (:func:`~mxopt_jax.compare.checks.atomic_file`): the file is whole or absent, even when the process is
    interrupted or the disk is full, and nothing is written through a link (``root``: the folder the user
    named, when ``path`` lies in a folder of the app's below it, such as ``programs/``)."""
    path = Path(path)
    with atomic_file(path, root=root) as f:
        f.write(text)
    return path


def write_json(path: str | Path, doc: Any, indent: int | None = 1) -> Path:
    """``doc`` as strict JSON in ``path`` (:func:`dumps`, :func:`write_atomic`)."""
    return write_atomic(path, dumps(doc, indent))


def read_json(path: str | Path, follow: bool = True) -> Any:
    """The JSON in ``path``, a regular file (:func:`~mxopt_jax.compare.checks.read_regular`; ``follow=False``: not
    a link either); a file that is not JSON (or not UTF-8, or nested too deep to read) is a ``ValueError`` naming
    it."""
    data = read_regular(path, follow=follow)
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError, and an integer of too many digits
        raise ValueError(f"{path} is not a JSON file: {e}") from None
    except RecursionError:
        raise ValueError(f"{path} is not a study's JSON: nested deeper than any study file is") from None


def versions() -> dict[str, str]:
    """Installed versions of jax, jaxlib, optax, mxopt_jax and numpy (``"unknown"`` when not found)."""
    out = {}
    for name in ("jax", "jaxlib", "optax", "mxopt_jax", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "unknown"
    if out["mxopt_jax"] == "unknown":
        import mxopt_jax

        out["mxopt_jax"] = getattr(mxopt_jax, "__version__", "unknown")
    out["numpy"] = np.__version__
    return out


# --------------------------------------------------------------------------- reading what a stranger wrote
_UNSET: Any = object()
#: The most dimensions an array of a saved study has (a record's trace: ``(G, S, E, ...)``).
MAX_NDIM = 8


def _describe(value: Any) -> str:
    """``value`` in an error message: short, escaped, never the whole of a large or deep value."""
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 60 else text[:56] + "...'"
    if value is None or isinstance(value, bool | int | float):
        text = repr(value)
        return text if len(text) <= 40 else text[:36] + "..."
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return f"an object of {len(value)} key(s)"
    return type(value).__name__


class Where:
    """A place in a file, ``study.json: meta.problems.logreg.steps``, and the readers of what may be found there.

    Everything the app reads back from a folder (``study.json``, ``spec.json``, ``programs/*.json``: a folder
    may come from a stranger) goes through these readers: each checks a value's type, range and shape and
    raises a one-line ``ValueError`` naming the file and the field (``where / "meta" / "plan"``), never lets a
    ``KeyError``, ``TypeError`` or ``IndexError`` out, and never prints a value raw (strings escaped, lists and
    objects described by their size)."""

    def __init__(self, file: str, path: str = "") -> None:
        self.file = str(file)
        self.path = path

    def __truediv__(self, key: str | int) -> Where:
        if isinstance(key, int):
            return Where(self.file, f"{self.path}[{key}]")
        part = str(key) if str(key).isidentifier() or str(key).replace(".", "").isalnum() else repr(str(key))
        return Where(self.file, f"{self.path}.{part}" if self.path else part)

    def __str__(self) -> str:
        return f"{self.file}: {self.path}" if self.path else self.file

    def __repr__(self) -> str:
        return f"Where({str(self)!r})"

    def error(self, what: str, value: Any = _UNSET) -> ValueError:
        """The error for this place: ``FILE: FIELD: what, got VALUE``."""
        got = "" if value is _UNSET else f", got {_describe(value)}"
        return ValueError(f"{self}: {what}{got}")

    def wrap(self, e: BaseException) -> ValueError:
        """An error raised by a constructor given this place's value, as this place's error."""
        return ValueError(f"{self}: {e}")

    # ------------------------------------------------------------------ one value each
    def field(self, doc: Mapping[str, Any], key: str, default: Any = _UNSET) -> Any:
        """``doc[key]``; a missing key is this place's error (unless a ``default`` is given)."""
        if key in doc:
            return doc[key]
        if default is _UNSET:
            raise (self / key).error("missing")
        return default

    def obj(self, value: Any) -> dict[str, Any]:
        """A JSON object."""
        if not isinstance(value, dict):
            raise self.error("must be a JSON object", value)
        return value

    def seq(self, value: Any) -> list[Any]:
        """A JSON list."""
        if not isinstance(value, list):
            raise self.error("must be a list", value)
        return value

    def text(self, value: Any, lines: bool = False) -> str:
        """Printable text (:func:`~mxopt_jax.compare.checks.printable`: no terminal escapes); ``lines``: line breaks
        allowed."""
        try:
            return printable(value, "text", lines=lines)
        except TypeError:
            raise self.error("must be a string", value) from None
        except ValueError:
            raise self.error(
                "must be printable text (no control characters such as terminal escapes)", value
            ) from None

    def name(self, value: Any) -> str:
        """A name: non-empty printable text on one line."""
        text = self.text(value)
        if not text.strip():
            raise self.error("must be a non-empty name", value)
        return text

    def choice(self, value: Any, allowed: Sequence[str]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.error(f"must be one of {', '.join(map(repr, allowed))}", value)
        return value

    def flag(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.error("must be true or false", value)
        return value

    def integer(self, value: Any, low: int | None = None, high: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"must be an integer{_range(low, high)}", value)
        if (low is not None and value < low) or (high is not None and value > high):
            raise self.error(f"must be an integer{_range(low, high)}", value)
        return value

    def number(
        self,
        value: Any,
        low: float | None = None,
        high: float | None = None,
        nan: bool = False,
        inf: bool = False,
    ) -> float:
        """A number (an integer or a float; ``nan``: ``null`` too, read as NaN; ``inf``: ``"inf"``/``"-inf"`` too,
        the JSON spelling of :mod:`~mxopt_jax.compare.floats`), finite unless ``inf``, in ``[low, high]``."""
        allowed = "a finite number" if not inf else "a number"
        allowed += " or null" if nan else ""
        allowed += _range(low, high)
        if value is None and nan:
            return math.nan
        if isinstance(value, str) and inf and value in ("inf", "-inf"):
            v = float(value)
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"must be {allowed}", value)
        else:
            try:
                v = float(value)
            except OverflowError:
                raise self.error(f"must be {allowed}", value) from None
            if math.isnan(v) or (math.isinf(v) and not inf):
                raise self.error(f"must be {allowed}", value)
        if (low is not None and v < low) or (high is not None and v > high):
            raise self.error(f"must be {allowed}", value)
        return v

    def array(self, value: Any, ndim: int | None = None, integer: bool = False) -> np.ndarray:
        """A rectangular array of nested lists (``ndim`` levels; ``integer``: of integers, else of numbers,
        ``null`` and ``"inf"``/``"-inf"`` read as NaN and infinities): float64, or int64 for ``integer``."""
        what = f"a {ndim}-dimensional array" if ndim else "an array"
        what += " of integers" if integer else " of numbers"
        if not isinstance(value, list):
            raise self.error(f"must be {what} (nested lists)", value)
        try:
            arr = np.array(value) if integer else np.array(value, dtype=np.float64)
            ok = (
                arr.ndim <= MAX_NDIM
                and (ndim is None or arr.ndim == ndim)
                and (arr.dtype.kind == "i" or (arr.size == 0 and arr.dtype.kind == "f") if integer else True)
            )
            if not integer and ok:  # numpy reads numeric strings and booleans: only JSON's own spellings pass
                ok = _json_numbers(value)
        except (ValueError, TypeError, OverflowError, RecursionError):
            ok = False
        if not ok:
            raise self.error(f"must be {what} (nested lists of one length per level)", value)
        return arr.astype(np.int64) if integer else arr


def _json_numbers(value: list[Any]) -> bool:
    """Whether every leaf of a rectangular nested list is a number, ``null``, ``"inf"`` or ``"-inf"``."""
    level: list[Any] = value
    while level and isinstance(level[0], list):
        level = [y for x in level for y in x]
    return all(
        x is None or type(x) in (int, float) or (type(x) is str and x in ("inf", "-inf")) for x in level
    )


def _range(low: float | None, high: float | None) -> str:
    if low is not None and high is not None:
        return f" between {low:g} and {high:g}"
    if low is not None:
        return f" >= {low:g}"
    if high is not None:
        return f" <= {high:g}"
    return ""


def read_records(value: Any, where: Where) -> Records:
    """One saved :class:`Records` (:meth:`Records.to_dict`'s dict), checked as a record: every field of its
    type, names printable, its arrays of one configuration axis ``G``, seed axis ``S`` and evaluation axis ``E``
    (``lrs (G,)``, ``seeds (S,)``, ``eval_steps (E,)``, ``train_loss``/``val``/``test`` ``(G, S, E)``,
    ``steps_to_target``/``diverged_at`` ``(G, S)``, each other hyperparameter ``(G,)``, ``trace (G, S, E,
    ...)``), rates positive and finite, evaluation steps increasing, steps to target and divergences at one of
    them (or never). Whether it is the record a plan makes is :func:`mxopt_jax.compare.result.check_records`'."""
    d = where.obj(value)
    out: dict[str, Any] = {
        "contender": (where / "contender").name(where.field(d, "contender")),
        "problem": (where / "problem").name(where.field(d, "problem")),
        "role": (where / "role").choice(where.field(d, "role"), ROLES),
        "program": (where / "program").text(d.get("program", "")),
        "devices": (where / "devices").integer(d.get("devices", 1), 1),
        "study": (where / "study").integer(d.get("study") or 0, 0, MAX_STUDIES - 1),
    }
    for key in ("compile_s", "run_s"):
        out[key] = (where / key).number(d.get(key), low=0.0, nan=True)
    lrs = (where / "lrs").array(where.field(d, "lrs"), 1)
    seeds = (where / "seeds").array(where.field(d, "seeds"), 1, integer=True)
    steps = (where / "eval_steps").array(where.field(d, "eval_steps"), 1, integer=True)
    G, S, E = len(lrs), len(seeds), len(steps)
    if not G or not S or not E:
        raise where.error(
            f"a record needs at least one configuration, seed and evaluation point, got {G}, {S}, {E}"
        )
    if not (np.isfinite(lrs).all() and (lrs > 0).all()):
        raise (where / "lrs").error("learning rates must be finite numbers > 0")
    if steps[0] < 1 or (np.diff(steps) <= 0).any():
        raise (where / "eval_steps").error("must be increasing step numbers >= 1")
    for key in ("train_loss", "val", "test"):
        arr = (where / key).array(where.field(d, key), 3)
        if arr.shape != (G, S, E):
            raise (where / key).error(f"must have the shape (G, S, E) = {(G, S, E)}, got {arr.shape}")
        out[key] = arr
    at = set(steps.tolist())
    for key in ("steps_to_target", "diverged_at"):
        raw = d.get(key)
        if raw is None and key == "diverged_at":  # records made before divergence was tracked
            out[key] = None
            continue
        arr = (where / key).array(raw if key in d else where.field(d, key), 2)
        if arr.shape != (G, S):
            raise (where / key).error(f"must have the shape (G, S) = {(G, S)}, got {arr.shape}")
        never = arr < 0  # stored as -1 (JSON has no infinity there)
        if not all(x in at for x in arr[~never].tolist()):
            raise (where / key).error("must hold evaluation steps (or -1 for never)")
        out[key] = np.where(never, np.inf, arr)
    hp = (where / "hparams").obj(d.get("hparams") or {})
    out["hparams"] = {}
    for name, values in hp.items():
        w = where / "hparams" / name
        if not isinstance(name, str) or not name.isidentifier():
            raise w.error("a hyperparameter's name must be a Python identifier", name)
        arr = w.array(values, 1)
        if arr.shape != (G,) or not np.isfinite(arr).all():
            raise w.error(f"must be {G} finite number(s), one per configuration", values)
        out["hparams"][name] = arr
    trace = d.get("trace")
    if trace is not None:
        arr = (where / "trace").array(trace)
        if arr.shape[:3] != (G, S, E):
            raise (where / "trace").error(
                f"must have the shape (G, S, E, ...) = {(G, S, E)}, ...), got {arr.shape}"
            )
        out["trace"] = arr
    try:
        return Records(lrs=lrs, seeds=seeds, eval_steps=steps, **out)
    except (TypeError, ValueError) as e:
        raise where.wrap(e) from None


def read_selection(value: Any, where: Where) -> Selection:
    """One saved :class:`~mxopt_jax.compare.protocol.Selection` (its ``to_dict``), its names checked; its other
    fields as :meth:`Selection.from_dict` reads them (what a study's reader holds them to is the records:
    :meth:`mxopt_jax.compare.result.StudyResult.from_document`)."""
    d = where.obj(value)
    for key in ("contender", "problem", "mode"):
        (where / key).name(where.field(d, key))
    try:
        return Selection.from_dict(d)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError) as e:
        raise where.error(f"not a selection ({type(e).__name__}: {e})") from None


def read_program_info(value: Any, where: Where) -> dict[str, Any]:
    """A compiled program's saved description (:meth:`mxopt_jax.compare.result.ProgramResult.info`), every field
    checked (whether it is one of the study's programs: :func:`mxopt_jax.compare.result.check_programs`)."""
    d = where.obj(value)
    return {
        "problem": (where / "problem").name(where.field(d, "problem")),
        "name": (where / "name").text(where.field(d, "name")),
        "contenders": [
            (where / "contenders" / i).name(n)
            for i, n in enumerate((where / "contenders").seq(where.field(d, "contenders")))
        ],
        "compile_s": (where / "compile_s").number(where.field(d, "compile_s"), low=0.0),
        "devices": (where / "devices").integer(where.field(d, "devices"), 1),
        "runs": (where / "runs").integer(where.field(d, "runs"), 1),
        "steps": (where / "steps").integer(where.field(d, "steps"), 1),
        "platform": (where / "platform").text(d.get("platform", "")),
        "processes": (where / "processes").integer(d.get("processes", 1), 1),
    }


#: The largest grid a saved preset may ask for, and the most seeds (a stranger's file must not make the reader
#: allocate what it never holds).
MAX_GRID = 1000
MAX_SEEDS = 100_000


def read_preset(value: Any, where: Where) -> Preset:
    """A saved :class:`~mxopt_jax.compare.protocol.Preset` (its ``to_dict``), every field checked."""
    d = where.obj(value)
    known = {f.name for f in dataclasses.fields(Preset)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise where.error(
            f"unknown field(s) {', '.join(map(repr, unknown))}; a preset has {', '.join(sorted(known))}"
        )
    return Preset(
        name=(where / "name").name(where.field(d, "name")),
        grid_points=(where / "grid_points").integer(where.field(d, "grid_points"), 1, MAX_GRID),
        seeds=(where / "seeds").integer(where.field(d, "seeds"), 1, MAX_SEEDS),
        confirm_seeds=(where / "confirm_seeds").integer(d.get("confirm_seeds", 10), 1, MAX_SEEDS),
        spacing=(where / "spacing").number(d.get("spacing", 0.5), low=1e-6, high=10.0),
        quick=(where / "quick").flag(d.get("quick", False)),
        description=(where / "description").text(d.get("description", ""), lines=True),
    )


def read_plan(value: Any, where: Where) -> Plan:
    """A saved :class:`~mxopt_jax.compare.plan.Plan` (its ``to_dict``): the preset and the names read here, every
    setting checked again by the plan itself (:meth:`Plan.from_dict`); its error names the file and field."""
    d = dict(where.obj(value))
    if "preset" in d:
        d["preset"] = read_preset(d["preset"], where / "preset")
    if isinstance(d.get("schedule"), str):  # a hook of the user's comes back by name: printed in the protocol
        (where / "schedule").name(d["schedule"])
    try:
        return Plan.from_dict(d)
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise where.wrap(e) from None


# --------------------------------------------------------------------------- the study document
def write_document(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """A study document (:meth:`~mxopt_jax.compare.result.StudyResult.document`) as ``study.json``, with
    :data:`FORMAT` and :func:`versions`."""
    return write_json(path, {"format": FORMAT, "versions": versions(), **doc})


def read_document(path: str | Path) -> dict[str, Any]:
    """A ``study.json``: the same keys as written, ``records`` as :class:`Records`, ``selections`` as
    :class:`Selection` and ``presets`` as :class:`Preset` objects. Any JSON file written by an earlier
    version is read the same way (its ``format`` says which). Each of these is checked as it is read
    (:func:`read_records`, :func:`read_selection`, :func:`read_preset`): a bad one is a one-line ``ValueError``
    naming the file and the field. (Whether the records are those of the study's plan, and the selections
    those of its records: :meth:`mxopt_jax.compare.result.StudyResult.from_json`.)"""
    doc = read_json(path)
    where = Where(str(path))
    if not isinstance(doc, dict):
        raise where.error("not a study's JSON (a JSON object with records and selections)", doc)
    doc["records"] = [
        read_records(d, where / "records" / i) for i, d in enumerate(_items(doc, "records", where))
    ]
    doc["selections"] = [
        read_selection(d, where / "selections" / i) for i, d in enumerate(_items(doc, "selections", where))
    ]
    presets = (where / "presets").obj(doc.get("presets") or {})
    doc["presets"] = {k: read_preset(v, where / "presets" / k) for k, v in presets.items()}
    return doc


def _items(doc: Mapping[str, Any], key: str, where: Where) -> list[Any]:
    """``doc[key]``, a list (absent: empty)."""
    return (where / key).seq(doc.get(key, []))


# --------------------------------------------------------------------------- problems and contenders, as saved
def _plain(v: Any) -> Any:
    """A setting's value as JSON keeps it: numbers, strings, booleans and None as they are, anything else
    as its ``repr`` (printed with the protocol either way)."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float | np.floating):
        return jsonable(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return repr(v)


#: The fields :func:`problem_info` and :func:`contender_info` save.
PROBLEM_FIELDS = (
    "name",
    "title",
    "description",
    "metric_name",
    "better",
    "margin",
    "target",
    "steps",
    "quick_steps",
    "batch_size",
    "eval_every",
    "tables",
)
CONTENDER_FIELDS = (
    "name",
    "family",
    "description",
    "settings",
    "hyperparameters",
    "row_sparse",
    "sparse_make",
)


def problem_info(problem: Problem) -> dict[str, Any]:
    """What the report needs of ``problem`` (and a reloaded study keeps): name, title, description, metric
    name, direction and margin, target, budgets, batch size, evaluation interval, embedding tables."""
    return {
        "name": problem.name,
        "title": problem.title,
        "description": problem.description,
        "metric_name": problem.metric_name,
        "better": problem.better,
        "margin": float(problem.margin),
        "target": float(problem.target),
        "steps": int(problem.steps),
        "quick_steps": None if problem.quick_steps is None else int(problem.quick_steps),
        "batch_size": int(problem.batch_size),
        "eval_every": int(problem.eval_every),
        "tables": list(problem.tables),
    }


def contender_info(contender: Contender) -> dict[str, Any]:
    """What the report needs of ``contender`` (and a reloaded study keeps): name, family, description,
    settings, hyperparameters (``[name, default, low, high, scale]`` each), whether it takes row-sparse
    gradients and has a lazy (sparse) factory."""
    return {
        "name": contender.name,
        "family": contender.family,
        "description": contender.description,
        "settings": {str(k): _plain(v) for k, v in contender.settings.items()},
        "hyperparameters": [[h.name, h.default, h.low, h.high, h.scale] for h in contender.hyperparameters],
        "row_sparse": bool(contender.row_sparse),
        "sparse_make": contender.sparse_make is not None,
    }


def _unavailable(kind: str, name: str, what: str) -> Any:
    def stub(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{kind} {name!r} was restored from a saved study, which keeps its results and description, not "
            f"its {what}; pass the {kind} itself to run it"
        )

    return stub


def _problem_fields(info: Any, where: Where) -> dict[str, Any]:
    """:func:`problem_info`'s fields, each checked (a stranger's file names its field)."""
    d = where.obj(info)
    opt = d.get("quick_steps")
    return {
        "name": (where / "name").name(where.field(d, "name")),
        "title": (where / "title").text(where.field(d, "title")),
        "description": (where / "description").text(d.get("description", ""), lines=True),
        "metric_name": (where / "metric_name").text(where.field(d, "metric_name")),
        "better": (where / "better").choice(d.get("better", "lower"), ("lower", "higher")),
        "margin": (where / "margin").number(d.get("margin", 0.0), low=0.0),
        "target": (where / "target").number(where.field(d, "target")),
        "steps": (where / "steps").integer(where.field(d, "steps"), 1),
        "quick_steps": None if opt is None else (where / "quick_steps").integer(opt, 1),
        "batch_size": (where / "batch_size").integer(where.field(d, "batch_size"), 1),
        "eval_every": (where / "eval_every").integer(where.field(d, "eval_every"), 1),
        "tables": tuple(
            (where / "tables" / i).name(t)
            for i, t in enumerate((where / "tables").seq(d.get("tables") or []))
        ),
    }


def restore_problem(info: Mapping[str, Any], where: Where | None = None) -> Problem:
    """A :class:`Problem` from :func:`problem_info`: everything the report reads; its data, init, loss and
    metric raise (a saved study keeps results, not code). Every field is checked: a bad one is a ``ValueError``
    naming it (``where``: the file and the place of ``info`` in it)."""
    where = where or Where("a saved problem")
    kw = _problem_fields(info, where)
    name = kw["name"]
    try:
        return Problem(
            data=_unavailable("problem", name, "data"),
            init=_unavailable("problem", name, "model"),
            loss=_unavailable("problem", name, "loss"),
            metric=_unavailable("problem", name, "metric"),
            **kw,
        )
    except (TypeError, ValueError) as e:
        raise where.wrap(e) from None


def _setting(value: Any, where: Where) -> Any:
    """A saved setting's value (:func:`_plain`): null, a boolean, an integer, a number or printable text."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float) or value in ("inf", "-inf"):
        return where.number(value, inf=True)
    return where.text(value)


def restore_contender(info: Mapping[str, Any], where: Where | None = None) -> Contender:
    """A :class:`Contender` from :func:`contender_info`: name, family, description, settings and
    hyperparameters; its factory raises (a saved study keeps results, not code). Every field is checked: a bad
    one is a ``ValueError`` naming it (``where``: the file and the place of ``info`` in it)."""
    where = where or Where("a saved contender")
    d = where.obj(info)
    name = (where / "name").name(where.field(d, "name"))
    hps = []
    for i, h in enumerate((where / "hyperparameters").seq(where.field(d, "hyperparameters"))):
        w = where / "hyperparameters" / i
        h = w.seq(h)
        if len(h) != 5:
            raise w.error("must be [name, default, low, high, scale]", h)
        hp_name, default, low, high = (w / 0).name(h[0]), *((w / k).number(h[k]) for k in (1, 2, 3))
        scale = (w / 4).name(h[4])
        try:
            hps.append(Hyperparameter(hp_name, default, low, high, scale))  # type: ignore[arg-type]  # checked there
        except (TypeError, ValueError) as e:
            raise w.wrap(e) from None
    settings = (where / "settings").obj(d.get("settings") or {})
    make = _unavailable("contender", name, "factory")
    kw: dict[str, Any] = {
        "family": (where / "family").name(where.field(d, "family")),
        "row_sparse": (where / "row_sparse").flag(d.get("row_sparse", False)),
        "sparse_make": make if (where / "sparse_make").flag(d.get("sparse_make", False)) else None,
        "description": (where / "description").text(d.get("description", ""), lines=True),
        "settings": {
            (where / "settings").name(k): _setting(v, where / "settings" / k) for k, v in settings.items()
        },
    }
    try:
        return Contender(name=name, make=make, hyperparameters=tuple(hps), **kw)
    except (TypeError, ValueError) as e:
        raise where.wrap(e) from None


# --------------------------------------------------------------------------- CSV
def csv_number(v: float) -> str:
    """A float for CSV: unrounded (``repr``), ``nan``/``inf``/``-inf`` as words."""
    v = float(v)
    return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


#: What makes a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell as a formula: its first character
#: (OWASP's CSV injection rule: ``=HYPERLINK(...)`` in a contender's name would be a live link in every cell).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: Any) -> str:
    """A text cell of the app's CSV files that no spreadsheet runs: a cell starting with ``= + - @``, a tab or a
    carriage return gets a leading ``'`` (OWASP's rule), and so does one starting with ``'`` itself, so that
    :func:`csv_untext` gives back exactly the text. Only text (names, words, sentences) goes through it; numbers
    are :func:`csv_number`'s and stay numbers (``-0.5`` is not a formula)."""
    text = str(value)
    return "'" + text if text.startswith((*FORMULA_START, "'")) else text


def csv_untext(cell: str) -> str:
    """The text :func:`csv_text` wrote (its leading ``'`` taken off): how the app's DataFrames read back the
    names of its CSV files."""
    return cell[1:] if isinstance(cell, str) and cell.startswith("'") else cell


def pandas() -> Any:
    """The pandas module; an ``ImportError`` naming the extra when it is missing."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError(PANDAS_HINT) from e
    return pandas


def read_csv(path: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv`` with every float read back as the one written: pandas 2's default parser may
    differ in the last bit before pandas 3.1 (``float_precision="round_trip"``, the default from 3.1 on, which
    deprecates the argument)."""
    pd = pandas()
    if tuple(int(x) for x in pd.__version__.split(".")[:2]) < (3, 1):
        kwargs.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kwargs)
