"""What the engine hands to the protocol and the reports: :class:`Records`, one contender's runs on one problem.

Plain NumPy arrays and numbers, so a study can be saved, reloaded and re-analysed without JAX
(:meth:`Records.to_dict` / :meth:`Records.from_dict` round-trip through JSON).

Axes: ``G`` configurations (a learning rate and, in a random search, the other hyperparameters: one setting of
the contender each), ``S`` seeds, ``E`` evaluation points (after ``eval_every``, ``2 * eval_every``, ...,
``steps`` steps; ``eval_steps`` holds those step numbers).

A study makes these kinds of records, told apart by :attr:`Records.role`:

* ``"selection"``: the tuning runs (every configuration of the grid or the random search) on the selection
  seeds; the protocol chooses a configuration from their validation metric;
* ``"report"``: the same configurations, in the same order, on the report seeds (fresh, disjoint from the
  selection seeds): the chosen configuration's runs are what the tuned mode reports, and every configuration's
  final test value is what the claims about the optimizers compare against (a contender is shown better than
  another only when it beats it at every configuration the other's search tried);
* ``"confirmation"``: the chosen configuration on the report seeds: the row of ``"report"`` the selection chose
  (a study saved before ``"report"`` existed ran it alone);
* ``"default"``: the contender's default configuration on the report seeds; the one-shot mode (no tuning)
  reports them (a grid is centred on the default rate, so in a grid search they are a row of ``"report"``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .floats import decode, encode

__all__ = ["ROLES", "Records", "canonical"]

#: The roles of records, in the order a study makes them.
ROLES = ("selection", "report", "confirmation", "default")


def canonical(values: Any) -> np.ndarray:
    """Hyperparameter values as stored: float64 rounded to 12 significant digits, so that the same grid point
    computed twice (``1e-3 * 10 ** 0.5`` here, ``10 ** -2.5`` there) is one value everywhere (tables, CSV,
    JSON, a pandas pivot)."""
    v = np.asarray(values, np.float64)
    return np.array([float(f"{x:.12g}") for x in v.ravel()], np.float64).reshape(v.shape)


@dataclasses.dataclass
class Records:
    """Runs of one contender on one problem: ``G`` configurations x ``S`` seeds.

    Attributes:
      contender: the contender's name (``"adam"``, ``"optax.adam"``, ...).
      problem: the problem's name.
      lrs: ``(G,)`` the learning rate of each configuration (the peak of the schedule, when there is one).
      seeds: ``(S,)`` the seeds (each seed sets the initialization, the mini-batch order and any randomness of
        the optimizer, from independent streams).
      eval_steps: ``(E,)`` step numbers of the evaluation points.
      train_loss: ``(G, S, E)`` mean mini-batch training loss over the steps since the previous point.
      val: ``(G, S, E)`` validation metric at each point (lower is better; NaN from the point a run diverged).
      test: ``(G, S, E)`` test metric at each point (NaN where diverged); evaluated only in the runs on the
        report seeds, and there only where a record needs it (the final point): a selection run's test metric is
        NaN throughout (selection never reads it).
      steps_to_target: ``(G, S)`` first evaluation step whose validation metric reached the problem's
        target (``<=``), ``inf`` if never.
      diverged_at: ``(G, S)`` first evaluation step at which the run had diverged (its training loss or a
        parameter was not finite), ``inf`` if it never did. A diverged run's metrics are NaN from there on,
        whatever the problem's metric would have returned (a classifier with NaN logits still scores an error
        rate).
      hparams: the configurations' other hyperparameters, ``{name: (G,) values}`` (empty when only the
        learning rate is tuned).
      role: ``"selection"``, ``"report"``, ``"confirmation"`` or ``"default"`` (see the module's docstring).
      compile_s: seconds to compile the program this contender ran in (shared with the other contenders
        of that program, see ``program``).
      run_s: seconds to run these ``G * S`` runs (compilation and transfers excluded).
      program: name of the compiled program (contenders compiled together share it).
      devices: how many devices the runs were sharded over.
      study: which independent study of the plan the runs belong to (``0`` unless the plan repeats the tuning,
        :attr:`mxopt_jax.compare.plan.Plan.studies`).
      trace: ``(G, S, E, ...)`` the problem's ``trace(params)`` at each evaluation point (a few numbers of the
        model, as they stand, also after a divergence: :class:`~mxopt_jax.compare.problems.base.Problem`), or
        ``None`` when the problem has no trace (then :meth:`to_dict` writes no key for it).
    """

    contender: str
    problem: str
    lrs: np.ndarray
    seeds: np.ndarray
    eval_steps: np.ndarray
    train_loss: np.ndarray
    val: np.ndarray
    test: np.ndarray
    steps_to_target: np.ndarray
    diverged_at: np.ndarray | None = None
    hparams: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    role: str = "selection"
    compile_s: float = math.nan
    run_s: float = math.nan
    program: str = ""
    devices: int = 1
    study: int = 0
    trace: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.lrs = canonical(self.lrs)
        if self.trace is not None:
            self.trace = np.asarray(self.trace, np.float64)
            if self.trace.shape[:3] != np.shape(self.val):
                raise ValueError(
                    f"Records.trace must be (G, S, E, ...) like val {np.shape(self.val)}, got {self.trace.shape}"
                )
        self.seeds = np.asarray(self.seeds, np.int64)
        self.hparams = {k: canonical(v) for k, v in self.hparams.items()}
        if self.diverged_at is None:  # records made without divergence tracking: a non-finite value marks it
            bad = ~np.isfinite(np.asarray(self.val, np.float64))
            first = np.argmax(bad, axis=-1)
            steps = np.asarray(self.eval_steps, np.float64)
            self.diverged_at = np.where(bad.any(axis=-1), steps[first], np.inf)
        if self.role not in ROLES:
            raise ValueError(f"Records.role must be one of {ROLES}, got {self.role!r}")

    @property
    def steps(self) -> int:
        return int(self.eval_steps[-1])

    @property
    def diverged(self) -> np.ndarray:
        """``(G, S)`` whether each run diverged by its last step."""
        return np.isfinite(np.asarray(self.diverged_at, np.float64))

    @property
    def ms_per_step(self) -> float:
        """Milliseconds per training step of one run, amortized over the ``G * S`` runs run together."""
        runs = self.val.shape[0] * self.val.shape[1]
        return 1e3 * self.run_s / (self.steps * runs)

    def config(self, index: int) -> dict[str, float]:
        """Configuration ``index``: ``{"learning_rate": lr, other hyperparameter: value, ...}``."""
        out = {"learning_rate": float(self.lrs[index])}
        out.update({k: float(v[index]) for k, v in self.hparams.items()})
        return out

    def take(self, index: int | np.ndarray | slice) -> Records:
        """The records of some configurations (one index keeps a configuration axis of length 1)."""
        idx = np.atleast_1d(np.arange(len(self.lrs))[index])
        return dataclasses.replace(
            self,
            lrs=self.lrs[idx],
            hparams={k: v[idx] for k, v in self.hparams.items()},
            train_loss=self.train_loss[idx],
            val=self.val[idx],
            test=self.test[idx],
            steps_to_target=self.steps_to_target[idx],
            diverged_at=np.asarray(self.diverged_at)[idx],
            run_s=self.run_s * len(idx) / max(len(self.lrs), 1),
            trace=None if self.trace is None else self.trace[idx],
        )

    _ARRAYS = ("lrs", "seeds", "eval_steps", "train_loss", "val", "test", "steps_to_target", "diverged_at")
    _INF = ("steps_to_target", "diverged_at")  # inf (never) is meaningful there: stored as -1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as (nested) lists, NaN as ``None`` and infinities as ``"inf"``/``"-inf"`` (JSON has
        neither), seeds as integers: a reloaded record equals the original (a resumed study, too)."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for key in self._ARRAYS:
            arr = np.asarray(out[key], dtype=np.float64)
            if key in self._INF:
                arr = np.where(np.isinf(arr), -1.0, arr)
            out[key] = encode(arr.tolist())
        out["seeds"] = [int(s) for s in np.asarray(self.seeds).ravel()]
        out["eval_steps"] = [int(s) for s in np.asarray(self.eval_steps).ravel()]
        out["hparams"] = {k: np.asarray(v, np.float64).tolist() for k, v in self.hparams.items()}
        for key in ("compile_s", "run_s"):
            out[key] = None if not math.isfinite(out[key]) else float(out[key])
        if self.trace is None:
            del out["trace"]
        else:
            out["trace"] = encode(np.asarray(self.trace, np.float64).tolist())
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Records:
        kw = {k: v for k, v in d.items() if k in {f.name for f in dataclasses.fields(cls)}}
        for key in cls._ARRAYS:
            if kw.get(key) is None:
                continue
            arr = np.array(decode(kw[key]), dtype=np.float64)
            if key in cls._INF:
                arr = np.where(arr < 0, np.inf, arr)
            kw[key] = arr
        kw["seeds"] = np.asarray(kw["seeds"], np.int64)
        kw["eval_steps"] = np.asarray(kw["eval_steps"], np.int64)
        kw["hparams"] = {k: np.asarray(v, np.float64) for k, v in (kw.get("hparams") or {}).items()}
        kw["study"] = int(kw.get("study") or 0)
        for key in ("compile_s", "run_s"):
            kw[key] = math.nan if kw.get(key) is None else float(kw[key])
        if kw.get("trace") is not None:
            kw["trace"] = np.array(decode(kw["trace"]), dtype=np.float64)
        return cls(**kw)
