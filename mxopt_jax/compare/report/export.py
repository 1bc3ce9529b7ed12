"""A study's numbers as files and frames: every run as long-form CSV (:func:`write_csv`), the selections as a
summary CSV (:func:`write_summary_csv`), and the same as pandas DataFrames (:func:`runs_frame`,
:func:`summary_frame`; pandas is imported lazily, the app's ``study`` extra): one row per evaluation point of
every run, one row per selection. The number formats and the JSON document are
:mod:`mxopt_jax.compare.serialize`'s; every text cell goes through
:func:`~mxopt_jax.compare.serialize.csv_text`, so that a name such as ``=HYPERLINK(...)`` is never a formula
in a spreadsheet (the DataFrames keep the names as they are).
"""

from __future__ import annotations

import csv
import dataclasses
import math
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis import Claim, TableAnalysis
from ..checks import atomic_file
from ..records import Records
from ..serialize import csv_number, csv_text, csv_untext, pandas, read_csv

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "RUN_COLUMNS",
    "CLAIMS_COLUMNS",
    "SUMMARY_COLUMNS",
    "claims_frame",
    "claims_rows",
    "read_csv",
    "records_equal",
    "runs_frame",
    "summary_frame",
    "summary_rows",
    "write_claims_csv",
    "write_csv",
    "write_summary_csv",
]

RUN_COLUMNS = (
    "problem",
    "contender",
    "study",
    "role",
    "lr",
    "seed",
    "step",
    "train_loss",
    "val",
    "test",
    "diverged",
)
SUMMARY_COLUMNS = (
    "problem",
    "contender",
    "mode",
    "study",
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


def _extra(names: Iterable[str]) -> list[str]:
    """Other hyperparameters' columns, sorted (``learning_rate`` has the ``lr`` column)."""
    return sorted(set(names) - {"learning_rate"})


def write_csv(path: str | Path, records_list: Iterable[Records]) -> Path:
    """Every evaluation point of every run as long-form CSV, one row per ``(configuration, seed, step)``.

    Columns: problem, contender, study (which independent study of the plan: 0 unless it repeats the tuning),
    role (``selection``, ``confirmation``, ``default``), lr, seed, step,
    train_loss, val, test, diverged (1 from the point a run diverged), then one column per other tuned
    hyperparameter (empty where a contender does not have it). Numbers are unrounded; a diverged value is
    written ``nan``.
    """
    path = Path(path)
    records_list = list(records_list)
    extra = _extra(k for r in records_list for k in r.hparams)
    with atomic_file(path, newline="") as f:  # whole or not at all (a full disk)
        w = csv.writer(f)
        w.writerow([*RUN_COLUMNS, *extra])
        for r in records_list:
            steps = np.asarray(r.eval_steps)
            dead = np.asarray(r.diverged_at, np.float64)
            for g, lr in enumerate(np.asarray(r.lrs, np.float64)):
                more = [csv_number(r.hparams[k][g]) if k in r.hparams else "" for k in extra]
                for s, seed in enumerate(np.asarray(r.seeds)):
                    for e, step in enumerate(steps):
                        w.writerow(
                            [
                                csv_text(r.problem),
                                csv_text(r.contender),
                                int(r.study),
                                csv_text(r.role),
                                csv_number(lr),
                                int(seed),
                                int(step),
                                csv_number(r.train_loss[g, s, e]),
                                csv_number(r.val[g, s, e]),
                                csv_number(r.test[g, s, e]),
                                int(step >= dead[g, s]),
                                *more,
                            ]
                        )
    return path


StudyTables = Iterable[TableAnalysis] | Iterable[tuple[int, TableAnalysis]]


def _numbered(tables: StudyTables) -> list[tuple[int, TableAnalysis]]:
    """``tables`` as ``(study, table)`` pairs: a bare table is study 0's."""
    return [t if isinstance(t, tuple) else (0, t) for t in tables]


def write_summary_csv(path: str | Path, tables: StudyTables) -> Path:
    """One row per selection (contender, problem, mode, study) of ``tables`` (a study's:
    :meth:`~mxopt_jax.compare.analysis.StudyAnalysis.all_tables`, or ``(study, table)`` pairs for a plan of
    independent studies: every study's tables, ``study`` numbering them from 0), in their order: the reported
    numbers, the rank, the seeds they come from, and the chosen value of every tuned hyperparameter (one column
    each after the fixed ones).

    ``rank``, ``rank_high`` and ``group`` are the table's analysis (:class:`~mxopt_jax.compare.analysis.TableAnalysis`,
    among the selections of the same problem and mode, paired by seed): the simultaneous rank set ``[rank,
    rank_high]`` (``rank``: 1 + the entries shown better) and the compact letter display (two contenders share
    a letter exactly when not shown to differ); contenders identical to another in that table are folded
    before testing and share their representative's.
    ``test_median``, ``test_q1``, ``test_q3``: over every report seed, a diverged seed the worst value;
    ``diverged_report``: report seeds that diverged (``diverged``: selection runs, of ``runs``).
    ``time_to_target`` (steps, at the chosen rate on the report seeds) is ``inf`` unless a majority of the
    seeds reached the target; ``fastest_time`` is the performance profile's time (the fastest trial, from the
    selection runs: per selection seed the fewest steps any configuration tried needed, then a majority).
    """
    path = Path(path)
    rows = [(k, t, s) for k, t in _numbered(tables) for s in t.selections]
    extra = _extra(k for _, _, s in rows for k in s.config)
    with atomic_file(path, newline="") as f:  # whole or not at all (a full disk)
        w = csv.writer(f)
        w.writerow([*SUMMARY_COLUMNS, *extra])
        for study, table, s in rows:
            n = s.contender
            q1, med, q3 = table.quartiles[n]
            w.writerow(
                [
                    csv_text(s.problem),
                    csv_text(s.contender),
                    csv_text(s.mode),
                    study,
                    table.rank(n),
                    table.rank_high(n),
                    csv_text(table.letters(n)),
                    csv_number(s.lr),
                    csv_text(s.on_edge or ""),
                    csv_number(s.test_mean),
                    csv_number(s.test_ci),
                    *(csv_number(q) for q in (med, q1, q3)),
                    csv_number(s.val_mean),
                    csv_number(s.best_val_mean),
                    csv_number(s.time_to_target),
                    s.reached,
                    csv_number(s.fastest_time),
                    s.seeds,
                    s.steps,
                    csv_number(s.ms_per_step),
                    s.diverged,
                    len(s.lrs) * len(s.val_final),
                    s.seeds - s.finite,
                    " ".join(str(int(x)) for x in np.asarray(s.report_seeds).ravel()),
                    *(csv_number(s.config[k]) if k in s.config else "" for k in extra),
                ]
            )
    return path


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


def runs_frame(records_list: Iterable[Records]) -> pd.DataFrame:
    """Every evaluation point of every run as a tidy DataFrame, the rows and columns of ``runs.csv``
    (:func:`write_csv`): problem, contender, study, role, lr, seed, step, train_loss, val, test, diverged (bool), then
    one column per other tuned hyperparameter (NaN where a contender does not have it). Rates are stored
    canonically (:func:`~mxopt_jax.compare.records.canonical`), so a pivot on ``lr`` has one column per rate."""
    pd = pandas()
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
            "study": np.full(G * S * E, int(r.study), np.int64),
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


def summary_frame(tables: StudyTables) -> pd.DataFrame:
    """One row per selection (contender, problem, mode) of ``tables`` as a DataFrame: exactly ``summary.csv``
    (:func:`write_summary_csv`) parsed, numbers as floats (``inf``: never / diverged), ``on_edge`` ``""`` where
    the chosen rate is inside its grid."""
    pandas()  # without pandas: the error naming the extra, before any work
    with tempfile.TemporaryDirectory() as tmp:
        path = write_summary_csv(Path(tmp) / "summary.csv", tables)
        frame = read_csv(path, keep_default_na=False, na_values={c: ["nan", ""] for c in _numeric(path)})
    return _untext(frame, SUMMARY_TEXT)


#: The text columns of ``summary.csv`` (the others hold numbers).
SUMMARY_TEXT = ("problem", "contender", "mode", "group", "on_edge", "report_seeds")


def _numeric(path: Path) -> list[str]:
    """The columns of a summary CSV other than the text ones."""
    with path.open(newline="") as f:
        head = next(csv.reader(f), [])
    return [c for c in head if c not in SUMMARY_TEXT]


def _untext(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``frame`` with its text ``columns`` as the names were (:func:`~mxopt_jax.compare.serialize.csv_untext`)."""
    pd = pandas()
    for c in columns:
        if c in frame.columns and not pd.api.types.is_numeric_dtype(frame[c]):
            frame[c] = frame[c].map(csv_untext)
    return frame


def summary_rows(tables: StudyTables) -> list[dict[str, str]]:
    """The rows of ``summary.csv`` (:func:`write_summary_csv`) as ``{column: text}`` dicts, without pandas."""
    with tempfile.TemporaryDirectory() as tmp:
        path = write_summary_csv(Path(tmp) / "summary.csv", tables)
        with path.open(newline="") as f:
            return list(csv.DictReader(f))


#: The columns of ``claims.csv`` (:func:`write_claims_csv`).
CLAIMS_COLUMNS = (
    "study",
    "problem",
    "mode",
    "about",
    "a",
    "b",
    "shown",
    "better",
    "worse",
    "equal",
    "test",
    "statistic",
    "p",
    "p_adjusted",
    "family",
    "level",
    "effect",
    "hodges_lehmann",
    "ci_low",
    "ci_high",
    "ci_confidence",
    "n",
    "agree",
    "units",
    "tried_a",
    "tried_b",
    "versus",
    "edge",
    "model_effect",
    "model_low",
    "model_high",
    "sentence",
)


def claims_rows(claims: Iterable[Claim], metrics: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """One row per tested pair (:class:`~mxopt_jax.compare.analysis.Claim`), as ``{column: text}``
    (:data:`CLAIMS_COLUMNS`): ``study`` the study number (``all`` for a claim across the independent studies);
    ``about`` what the claim speaks of (``the configurations this study chose`` or ``the optimizers, over N
    independent tunings``); ``a``, ``b`` the pair and ``better``/``worse`` where a test Holm's correction kept
    showed one better (``shown``); ``test`` and its ``statistic`` of ``a - b`` (``W+``, or Student's t);
    ``p`` raw and ``p_adjusted`` (Holm over ``family`` tests at ``level``); ``effect`` the median paired
    difference ``a - b`` in the metric's raw units (across studies: the median of the studies' medians),
    ``hodges_lehmann`` its Hodges-Lehmann estimate and ``[ci_low, ci_high]`` the exact signed-rank interval
    with the coverage it has (``ci_confidence``); ``n`` the seeds (or studies) used, ``units`` which,
    ``agree`` how many went the claim's way; for a claim about the optimizers from one study, ``tried_a`` and
    ``tried_b`` the configurations each one's search tried, ``versus`` the worse one's configuration the
    effect is measured against (the one that came closest) and ``edge`` whether a chosen configuration it
    rests on sits on its search's edge; across studies, ``model_effect`` with ``[model_low, model_high]`` the
    model-based reading of ``a - b`` (a random-effects estimate with its Hartung-Knapp 95 % interval: an effect,
    never a claim); ``sentence`` the claim as the report says it (``metrics``: ``{problem:
    metric name}``)."""
    out = []
    for c in claims:
        out.append(
            {
                "study": "all" if c.study is None else str(c.study),
                "problem": c.problem,
                "mode": c.mode,
                "about": c.what,
                "a": c.a,
                "b": c.b,
                "shown": str(c.shown).lower(),
                "better": c.better or "",
                "worse": c.worse or "",
                "equal": str(c.equal).lower(),
                "test": c.test,
                "statistic": csv_number(c.statistic),
                "p": csv_number(c.p),
                "p_adjusted": csv_number(c.p_adjusted),
                "family": str(c.family),
                "level": csv_number(c.level),
                "effect": csv_number(c.effect),
                "hodges_lehmann": csv_number(c.estimate),
                "ci_low": csv_number(c.low),
                "ci_high": csv_number(c.high),
                "ci_confidence": csv_number(c.confidence),
                "n": str(c.n),
                "agree": str(c.agree),
                "units": " ".join(str(u) for u in c.units),
                "tried_a": str(c.tried[0]) if c.tried[0] else "",
                "tried_b": str(c.tried[1]) if c.tried[1] else "",
                "versus": c.versus,
                "edge": str(c.edge).lower() if c.tried[0] else "",
                "model_effect": csv_number(c.model[0]),
                "model_low": csv_number(c.model[1]),
                "model_high": csv_number(c.model[2]),
                "sentence": c.sentence((metrics or {}).get(c.problem, "")),
            }
        )
    return out


def write_claims_csv(
    path: str | Path, claims: Iterable[Claim], metrics: Mapping[str, str] | None = None
) -> Path:
    """``claims.csv``: one row per table and pair (:func:`claims_rows`, every study's tables and, with
    independent studies, the tables across them), what a citation can point to."""
    path = Path(path)
    with atomic_file(path, newline="") as f:  # whole or not at all (a full disk)
        w = csv.DictWriter(f, fieldnames=list(CLAIMS_COLUMNS))
        w.writeheader()
        w.writerows(
            {k: csv_text(v) if k in CLAIMS_TEXT else v for k, v in row.items()}
            for row in claims_rows(claims, metrics)
        )
    return path


#: The text columns of ``claims.csv`` (the others hold numbers).
CLAIMS_TEXT = frozenset(
    {
        "study",
        "problem",
        "mode",
        "about",
        "a",
        "b",
        "shown",
        "better",
        "worse",
        "equal",
        "test",
        "units",
        "sentence",
        "versus",
        "edge",
    }
)


def claims_frame(claims: Iterable[Claim], metrics: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``claims.csv`` (:func:`write_claims_csv`) as a DataFrame, numbers as floats."""
    pandas()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_claims_csv(Path(tmp) / "claims.csv", claims, metrics)
        numeric = [c for c in CLAIMS_COLUMNS if c not in CLAIMS_TEXT]
        frame = read_csv(path, keep_default_na=False, na_values={c: ["nan", ""] for c in numeric})
    return _untext(frame, CLAIMS_TEXT)
