"""What the engine hands to the protocol and the reports: :class:`Records`, one contender on one problem.

Plain NumPy arrays and numbers, so a study can be saved, reloaded and re-analysed without JAX
(:meth:`Records.to_dict` / :meth:`Records.from_dict` round-trip through JSON).

Axes: ``G`` learning rates (the grid), ``S`` seeds, ``E`` evaluation points (after ``eval_every``,
``2 * eval_every``, ..., ``steps`` steps; ``eval_steps`` holds those step numbers).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["Records"]


@dataclasses.dataclass
class Records:
    """Every run of one contender on one problem: the whole ``(learning rate, seed)`` grid.

    Attributes:
      contender: the contender's name (``"adam"``, ``"optax.adam"``, ...).
      problem: the problem's name.
      lrs: ``(G,)`` the learning rates of the grid.
      seeds: ``(S,)`` the seeds (each seed sets the initialization and the mini-batch order).
      eval_steps: ``(E,)`` step numbers of the evaluation points.
      train_loss: ``(G, S, E)`` mean mini-batch training loss over the steps since the previous point.
      val: ``(G, S, E)`` validation metric at each point (lower is better; NaN/inf where a run diverged).
      test: ``(G, S, E)`` test metric at each point (never read by selection).
      steps_to_target: ``(G, S)`` first evaluation step whose validation metric reached the problem's
        target (``<=``), ``inf`` if never.
      compile_s: seconds to compile the program this contender ran in (shared with the other contenders
        of that program, see ``program``).
      run_s: seconds to run all ``G * S`` runs (after compilation, without transfers to the host).
      program: name of the compiled program (contenders compiled together share it).
      devices: how many devices the runs were sharded over.
      note: free text (e.g. "identical to sgd at these settings").
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
    compile_s: float = math.nan
    run_s: float = math.nan
    program: str = ""
    devices: int = 1
    note: str = ""

    @property
    def steps(self) -> int:
        return int(self.eval_steps[-1])

    @property
    def ms_per_step(self) -> float:
        """Milliseconds per training step of one run, amortized over the ``G * S`` runs run together."""
        runs = self.val.shape[0] * self.val.shape[1]
        return 1e3 * self.run_s / (self.steps * runs)

    _ARRAYS = ("lrs", "seeds", "eval_steps", "train_loss", "val", "test", "steps_to_target")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as (nested) lists, non-finite values as ``None`` (JSON has no NaN/inf)."""

        def clean(a: np.ndarray) -> Any:
            a = np.asarray(a, dtype=np.float64)
            return np.where(np.isfinite(a), a, np.nan).tolist() if a.ndim else float(a)

        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for key in self._ARRAYS:
            arr = np.asarray(out[key], dtype=np.float64)
            out[key] = _nan_to_none(clean(arr))
            if key == "steps_to_target":  # inf (never reached) is meaningful: keep it apart from NaN
                out[key] = _nan_to_none(np.where(np.isinf(arr), -1.0, arr).tolist())
        for key in ("compile_s", "run_s"):
            out[key] = None if not math.isfinite(out[key]) else float(out[key])
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Records:
        kw = dict(d)
        for key in cls._ARRAYS:
            arr = np.array(_none_to_nan(kw[key]), dtype=np.float64)
            if key == "steps_to_target":
                arr = np.where(arr < 0, np.inf, arr)
            kw[key] = arr
        for key in ("compile_s", "run_s"):
            kw[key] = math.nan if kw[key] is None else float(kw[key])
        return cls(**kw)


def _nan_to_none(x: Any) -> Any:
    if isinstance(x, list):
        return [_nan_to_none(v) for v in x]
    return None if isinstance(x, float) and math.isnan(x) else x


def _none_to_nan(x: Any) -> Any:
    if isinstance(x, list):
        return [_none_to_nan(v) for v in x]
    return math.nan if x is None else x
