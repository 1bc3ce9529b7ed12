"""A study's numbers as files: every run as long-form CSV, the selections as a summary CSV, all of it as JSON.

The JSON (:func:`write_json`) holds everything needed to re-analyse a study without re-running it: the
records of every run (:meth:`Records.to_dict`), the selections, the protocol text, the presets, the
versions of the libraries and the timings, and what the report needs of each problem and contender
(:func:`problem_info`, :func:`contender_info`); :func:`read_json` reloads it (records as :class:`Records`,
selections as :class:`Selection`), and :meth:`mxopt_jax.compare.Study.from_json` rebuilds the study from it
(problems and contenders restored from their saved descriptions, :func:`restore_problem`,
:func:`restore_contender`).

The same numbers as pandas DataFrames (:func:`runs_frame`, :func:`summary_frame`; pandas is imported lazily,
the app's ``study`` extra): one row per evaluation point of every run, one row per selection.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contenders import Contender
from ..problems.base import Problem
from ..protocol import Preset, Selection, compare_table
from ..records import Records
from ..space import Hyperparameter
from .tables import group_by_problem

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "FORMAT",
    "PANDAS_HINT",
    "contender_info",
    "problem_info",
    "read_json",
    "records_equal",
    "restore_contender",
    "restore_problem",
    "runs_frame",
    "summary_frame",
    "summary_rows",
    "versions",
    "write_csv",
    "write_json",
    "write_summary_csv",
]

#: Identifies the JSON layout (bumped when it changes). 2: what the report needs of each problem and
#: contender, the full preset and the study's options are saved (``meta``), so a study reloads on its own.
FORMAT = "mxopt_jax.compare.study/2"
#: What to do when pandas is missing.
PANDAS_HINT = "pandas is needed for DataFrames; install the app's extra: pip install 'mxopt_jax[study]'"

RUN_COLUMNS = ("problem", "contender", "role", "lr", "seed", "step", "train_loss", "val", "test", "diverged")
SUMMARY_COLUMNS = (
    "problem",
    "contender",
    "mode",
    "rank",
    "rank_high",
    "group",
    "lr",
    "on_edge",
    "test_mean",
    "test_ci",
    "test_median",
    "test_q1",
    "test_q3",
    "val_final_mean",
    "best_val_mean",
    "time_to_target",
    "reached",
    "fastest_time",
    "seeds",
    "steps",
    "ms_per_step",
    "diverged",
    "runs",
    "diverged_report",
    "report_seeds",
)


def _num(v: float) -> str:
    """A float for CSV: unrounded (``repr``), ``nan``/``inf`` as words."""
    v = float(v)
    return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


def _extra(names: Iterable[str]) -> list[str]:
    """Other hyperparameters' columns, sorted (``learning_rate`` has the ``lr`` column)."""
    return sorted(set(names) - {"learning_rate"})


def write_csv(path: str | Path, records_list: Iterable[Records]) -> Path:
    """Every evaluation point of every run as long-form CSV, one row per ``(configuration, seed, step)``.

    Columns: problem, contender, role (``selection``, ``confirmation``, ``default``), lr, seed, step,
    train_loss, val, test, diverged (1 from the point a run diverged), then one column per other tuned
    hyperparameter (empty where a contender does not have it). Numbers are unrounded; a diverged value is
    written ``nan``.
    """
    path = Path(path)
    records_list = list(records_list)
    extra = _extra(k for r in records_list for k in r.hparams)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*RUN_COLUMNS, *extra])
        for r in records_list:
            steps = np.asarray(r.eval_steps)
            dead = np.asarray(r.diverged_at, np.float64)
            for g, lr in enumerate(np.asarray(r.lrs, np.float64)):
                more = [_num(r.hparams[k][g]) if k in r.hparams else "" for k in extra]
                for s, seed in enumerate(np.asarray(r.seeds)):
                    for e, step in enumerate(steps):
                        w.writerow(
                            [
                                r.problem,
                                r.contender,
                                r.role,
                                _num(lr),
                                int(seed),
                                int(step),
                                _num(r.train_loss[g, s, e]),
                                _num(r.val[g, s, e]),
                                _num(r.test[g, s, e]),
                                int(step >= dead[g, s]),
                                *more,
                            ]
                        )
    return path


def write_summary_csv(
    path: str | Path,
    selections: Iterable[Selection],
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
) -> Path:
    """One row per selection (contender, problem, mode): the reported numbers, the rank, the seeds they come
    from, and the chosen value of every tuned hyperparameter (one column each after the fixed ones).

    ``rank``, ``rank_high`` and ``group`` are the table's (:func:`~mxopt_jax.compare.protocol.compare_table`,
    among the selections of the same problem and mode, paired by seed): the simultaneous rank set ``[rank,
    rank_high]`` (``rank``: 1 + the entries shown better) and the compact letter display (two contenders share
    a letter exactly when not shown to differ); the contenders ``identical_by_problem[problem][mode]`` lists as
    identical (``{representative: [others]}``) are folded before testing and share their representative's.
    ``test_median``, ``test_q1``, ``test_q3``: over every report seed, a diverged seed the worst value;
    ``diverged_report``: report seeds that diverged (``diverged``: selection runs, of ``runs``).
    ``time_to_target`` (steps, at the chosen rate on the report seeds) is ``inf`` unless a majority of the
    seeds reached the target; ``fastest_time`` is the performance profile's time (the fastest trial, from the
    selection runs: per selection seed the fewest steps any configuration tried needed, then a majority).
    """
    path = Path(path)
    sels = list(selections)
    extra = _extra(k for s in sels for k in s.config)
    ranks: dict[int, tuple[int, int, str]] = {}
    by = identical_by_problem or {}
    for mode in dict.fromkeys(s.mode for s in sels):
        for prob, group in group_by_problem(s for s in sels if s.mode == mode).items():
            table = compare_table(group, by.get(prob, {}).get(mode))
            for s in group:
                n = s.contender
                ranks[id(s)] = (table.rank(n), table.rank_high(n), table.letters(n))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*SUMMARY_COLUMNS, *extra])
        for s in sels:
            w.writerow(
                [
                    s.problem,
                    s.contender,
                    s.mode,
                    *ranks[id(s)],
                    _num(s.lr),
                    s.on_edge or "",
                    _num(s.test_mean),
                    _num(s.test_ci),
                    *(_num(q) for q in (s.test_quartiles[1], s.test_quartiles[0], s.test_quartiles[2])),
                    _num(s.val_mean),
                    _num(s.best_val_mean),
                    _num(s.time_to_target),
                    s.reached,
                    _num(s.fastest_time),
                    s.seeds,
                    s.steps,
                    _num(s.ms_per_step),
                    s.diverged,
                    len(s.lrs) * len(s.val_final),
                    s.seeds - s.finite,
                    " ".join(str(int(x)) for x in np.asarray(s.report_seeds).ravel()),
                    *(_num(s.config[k]) if k in s.config else "" for k in extra),
                ]
            )
    return path


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


def _get(study: Any, key: str, default: Any = None) -> Any:
    if isinstance(study, Mapping):
        return study.get(key, default)
    return getattr(study, key, default)


def _jsonable(x: Any) -> Any:
    """Plain JSON values: dataclasses and arrays converted, NaN as None, infinities as "inf"/"-inf"."""
    if isinstance(x, Records | Selection):
        return x.to_dict()
    if isinstance(x, Preset):
        return x.to_dict()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _jsonable(dataclasses.asdict(x))
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float):
        if math.isnan(x):
            return None
        return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")
    return x


def write_json(path: str | Path, study: Any) -> Path:
    """``study`` as JSON (strict: no NaN/Infinity literals).

    ``study`` is a mapping or an object with (any of) these keys/attributes: ``records`` (a sequence of
    :class:`Records`, tuned and one-shot alike), ``selections`` (a sequence of :class:`Selection`),
    ``protocol`` (the text of :func:`~mxopt_jax.compare.report.text.describe`), ``preset`` (a
    :class:`~mxopt_jax.compare.protocol.Preset` or its name), ``presets`` (defaults to every preset),
    ``timings`` (a mapping, e.g. total, compile and run seconds) and ``meta`` (anything JSON-ready). The
    file also records :func:`versions` and :data:`FORMAT`.
    """
    from ..protocol import PRESETS

    preset = _get(study, "preset")
    doc = {
        "format": FORMAT,
        "versions": versions(),
        "protocol": _get(study, "protocol", "") or "",
        "preset": preset.name if isinstance(preset, Preset) else preset,
        "presets": _jsonable(_get(study, "presets") or PRESETS),
        "timings": _jsonable(_get(study, "timings") or {}),
        "meta": _jsonable(_get(study, "meta") or {}),
        "records": [r.to_dict() for r in (_get(study, "records") or ())],
        "selections": [s.to_dict() for s in (_get(study, "selections") or ())],
    }
    path = Path(path)
    path.write_text(json.dumps(_jsonable(doc), allow_nan=False, indent=1))
    return path


def read_json(path: str | Path) -> dict[str, Any]:
    """A study written by :func:`write_json`: the same keys, with ``records`` as :class:`Records`,
    ``selections`` as :class:`Selection` and ``presets`` as :class:`Preset` objects."""
    doc = json.loads(Path(path).read_text())
    doc["records"] = [Records.from_dict(d) for d in doc.get("records", ())]
    doc["selections"] = [Selection.from_dict(d) for d in doc.get("selections", ())]
    doc["presets"] = {k: Preset(**v) for k, v in (doc.get("presets") or {}).items()}
    return doc


def records_equal(a: Sequence[Records], b: Sequence[Records]) -> bool:
    """Whether two lists of records hold the same values, for round-trip checks: NaN equals NaN, and in
    ``train_loss``/``val``/``test`` any non-finite value equals any other (JSON stores a diverged value as
    NaN, :meth:`Records.to_dict`)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        for f in dataclasses.fields(Records):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if isinstance(u, np.ndarray) or isinstance(v, np.ndarray):
                u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
                if f.name in ("train_loss", "val", "test"):  # JSON keeps a diverged value as NaN
                    u, v = np.where(np.isfinite(u), u, np.nan), np.where(np.isfinite(v), v, np.nan)
                if not np.array_equal(u, v, equal_nan=True):
                    return False
            elif f.name == "hparams":
                if set(u) != set(v) or not all(np.array_equal(u[k], v[k]) for k in u):
                    return False
            elif isinstance(u, float) and isinstance(v, float):
                if not (u == v or (math.isnan(u) and math.isnan(v))):
                    return False
            elif u != v:
                return False
    return True


# --------------------------------------------------------------------------- what a saved study keeps
def _plain(v: Any) -> Any:
    """A setting's value as JSON keeps it: numbers, strings, booleans and None as they are, anything else
    as its ``repr`` (printed with the protocol either way)."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float | np.floating):
        return _jsonable(float(v))
    if isinstance(v, np.integer):
        return int(v)
    return repr(v)


def problem_info(problem: Problem) -> dict[str, Any]:
    """What the report needs of ``problem`` (and a reloaded study keeps): name, title, description, metric
    name and direction, target, budgets, batch size, evaluation interval, embedding tables."""
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


# --------------------------------------------------------------------------- pandas
def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:
        raise ImportError(PANDAS_HINT) from e
    return pandas


def runs_frame(records_list: Iterable[Records]) -> pd.DataFrame:
    """Every evaluation point of every run as a tidy DataFrame, the rows and columns of ``runs.csv``
    (:func:`write_csv`): problem, contender, role, lr, seed, step, train_loss, val, test, diverged (bool), then
    one column per other tuned hyperparameter (NaN where a contender does not have it). Rates are stored
    canonically (:func:`~mxopt_jax.compare.records.canonical`), so a pivot on ``lr`` has one column per rate."""
    pd = _pandas()
    records_list = list(records_list)
    extra = _extra(k for r in records_list for k in r.hparams)
    parts = []
    for r in records_list:
        G, S, E = np.asarray(r.val).shape
        steps = np.asarray(r.eval_steps, np.int64)
        dead = np.asarray(r.diverged_at, np.float64)
        cols: dict[str, Any] = {
            "problem": np.full(G * S * E, r.problem, object),
            "contender": np.full(G * S * E, r.contender, object),
            "role": np.full(G * S * E, r.role, object),
            "lr": np.repeat(np.asarray(r.lrs, np.float64), S * E),
            "seed": np.tile(np.repeat(np.asarray(r.seeds, np.int64), E), G),
            "step": np.tile(steps, G * S),
            "train_loss": np.asarray(r.train_loss, np.float64).ravel(),
            "val": np.asarray(r.val, np.float64).ravel(),
            "test": np.asarray(r.test, np.float64).ravel(),
            "diverged": (steps[None, None, :] >= dead[:, :, None]).ravel(),
        }
        for k in extra:
            cols[k] = np.repeat(np.asarray(r.hparams[k], np.float64), S * E) if k in r.hparams else np.nan
        parts.append(pd.DataFrame(cols))
    if not parts:
        return pd.DataFrame({c: [] for c in (*RUN_COLUMNS, *extra)})
    frame = pd.concat(parts, ignore_index=True)
    return frame.astype({"problem": "str", "contender": "str", "role": "str"})


def summary_frame(
    selections: Iterable[Selection],
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
) -> pd.DataFrame:
    """One row per selection (contender, problem, mode) as a DataFrame: exactly ``summary.csv``
    (:func:`write_summary_csv`) parsed, numbers as floats (``inf``: never / diverged), ``on_edge`` ``""`` where
    the chosen rate is inside its grid."""
    _pandas()  # without pandas: the error naming the extra, before any work
    with tempfile.TemporaryDirectory() as tmp:
        path = write_summary_csv(Path(tmp) / "summary.csv", selections, identical_by_problem)
        frame = read_csv(path, keep_default_na=False, na_values={c: ["nan", ""] for c in _numeric(path)})
    return frame


def read_csv(path: str | Path, **kwargs: Any) -> pd.DataFrame:
    """``pandas.read_csv`` with every float read back as the one written: pandas 2's default parser may
    differ in the last bit before pandas 3.1 (``float_precision="round_trip"``, the default from 3.1 on, which
    deprecates the argument)."""
    pd = _pandas()
    if tuple(int(x) for x in pd.__version__.split(".")[:2]) < (3, 1):
        kwargs.setdefault("float_precision", "round_trip")
    return pd.read_csv(path, **kwargs)


def _numeric(path: Path) -> list[str]:
    """The columns of a summary CSV other than the text ones."""
    with path.open(newline="") as f:
        head = next(csv.reader(f), [])
    return [c for c in head if c not in ("problem", "contender", "mode", "group", "on_edge", "report_seeds")]


def summary_rows(
    selections: Iterable[Selection],
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
) -> list[dict[str, str]]:
    """The rows of ``summary.csv`` (:func:`write_summary_csv`) as ``{column: text}`` dicts, without pandas."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_summary_csv(Path(tmp) / "summary.csv", selections, identical_by_problem)
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
