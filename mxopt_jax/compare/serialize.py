"""Reading and writing the study's files: the JSON format and the CSV numbers (the report and the tour write the CSV
files), below both the store and the report.

Everything the app writes as JSON goes through :func:`jsonable` and :func:`dumps` (strict JSON: NaN as
``null``, infinities as ``"inf"``/``"-inf"``), and files are written whole or not at all
(:func:`write_atomic`). What a saved study keeps of each problem and contender (its description, never its
code) is :func:`problem_info` / :func:`contender_info`, and :func:`restore_problem` /
:func:`restore_contender` bring it back as an object that reports but cannot train. CSV numbers are written
unrounded (:func:`csv_number`) and read back exactly (:func:`read_csv`).

The study document (``study.json``) is :func:`write_document` / :func:`read_document`; what it holds is the
result's (:meth:`mxopt_jax.compare.result.StudyResult.document`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .checks import atomic_file
from .contenders import Contender
from .floats import encode
from .presets import Preset
from .problems.base import Problem
from .records import Records
from .selection import Selection
from .space import Hyperparameter

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "FORMAT",
    "PANDAS_HINT",
    "contender_info",
    "csv_number",
    "dumps",
    "jsonable",
    "pandas",
    "problem_info",
    "read_csv",
    "read_document",
    "read_json",
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


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename
    (:func:`~mxopt_jax.compare.checks.atomic_file`): the file is whole or absent, even when the process is
    interrupted or the disk is full."""
    path = Path(path)
    with atomic_file(path) as f:
        f.write(text)
    return path


def write_json(path: str | Path, doc: Any, indent: int | None = 1) -> Path:
    """``doc`` as strict JSON in ``path`` (:func:`dumps`, :func:`write_atomic`)."""
    return write_atomic(path, dumps(doc, indent))


def read_json(path: str | Path) -> Any:
    """The JSON in ``path``; a file that is not JSON is a ``ValueError`` naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not a JSON file: {e}") from None


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


# --------------------------------------------------------------------------- the study document
def write_document(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """A study document (:meth:`~mxopt_jax.compare.result.StudyResult.document`) as ``study.json``, with
    :data:`FORMAT` and :func:`versions`."""
    return write_json(path, {"format": FORMAT, "versions": versions(), **doc})


def read_document(path: str | Path) -> dict[str, Any]:
    """A ``study.json``: the same keys as written, ``records`` as :class:`Records`, ``selections`` as
    :class:`Selection` and ``presets`` as :class:`Preset` objects. Any JSON file written by an earlier
    version is read the same way (its ``format`` says which)."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise ValueError(f"{path} is not a study's JSON (a JSON object with records and selections)")
    doc["records"] = [Records.from_dict(d) for d in doc.get("records", ())]
    doc["selections"] = [Selection.from_dict(d) for d in doc.get("selections", ())]
    doc["presets"] = {k: Preset(**v) for k, v in (doc.get("presets") or {}).items()}
    return doc


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


def restore_problem(info: Mapping[str, Any]) -> Problem:
    """A :class:`Problem` from :func:`problem_info`: everything the report reads; its data, init, loss and
    metric raise (a saved study keeps results, not code)."""
    name = str(info["name"])
    return Problem(
        name=name,
        title=str(info["title"]),
        description=str(info["description"]),
        data=_unavailable("problem", name, "data"),
        init=_unavailable("problem", name, "model"),
        loss=_unavailable("problem", name, "loss"),
        metric=_unavailable("problem", name, "metric"),
        metric_name=str(info["metric_name"]),
        better=str(info.get("better", "lower")),
        margin=float(info.get("margin", 0.0)),
        target=float(info["target"]),
        steps=int(info["steps"]),
        batch_size=int(info["batch_size"]),
        eval_every=int(info["eval_every"]),
        quick_steps=None if info.get("quick_steps") is None else int(info["quick_steps"]),
        tables=tuple(info.get("tables") or ()),
    )


def restore_contender(info: Mapping[str, Any]) -> Contender:
    """A :class:`Contender` from :func:`contender_info`: name, family, description, settings and
    hyperparameters; its factory raises (a saved study keeps results, not code)."""
    name = str(info["name"])
    make = _unavailable("contender", name, "factory")
    return Contender(
        name=name,
        make=make,
        hyperparameters=tuple(Hyperparameter(*h) for h in info["hyperparameters"]),
        family=str(info["family"]),
        row_sparse=bool(info.get("row_sparse", False)),
        sparse_make=make if info.get("sparse_make") else None,
        description=str(info.get("description", "")),
        settings=dict(info.get("settings") or {}),
    )


# --------------------------------------------------------------------------- CSV
def csv_number(v: float) -> str:
    """A float for CSV: unrounded (``repr``), ``nan``/``inf``/``-inf`` as words."""
    v = float(v)
    return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


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
