"""What a problem of the study is: :class:`Problem` (data, model, loss, metric, target, budget).

A problem is plain data plus pure functions, so the engine (:mod:`mxopt_jax.compare.engine`) can trace one
training run and ``jax.vmap`` it over learning rates and seeds. A user's own problem (a Flax model, say) is
the same small protocol: fill in a :class:`Problem` and pass it to :func:`mxopt_jax.compare.study`.

Conventions every problem follows:

* ``data()`` is deterministic: the same arrays every call (a problem's split is fixed; the *seed* of a run
  changes its initialization and the order of its mini-batches, never the data).
* ``loss(params, batch)`` is the mean training loss over a mini-batch (what is differentiated);
  ``metric(params, batch)`` is the evaluation metric over a whole split; ``better`` says which way it
  improves: ``"lower"`` (the default: an error rate, a held-out loss, an RMSE) or ``"higher"`` (an accuracy).
  Both are pure and traceable; neither may branch in Python on traced values.
* Batches are pytrees of arrays whose leading axis runs over examples (e.g. ``(x, y)``); the engine draws a
  mini-batch by indexing every leaf with the same row indices.
* ``tables`` names top-level keys of the parameter dict that ``loss`` reads only through
  :func:`mxopt_jax.sparse.lookup`; for those, mxopt_jax's optimizers get row-sparse gradients
  (:func:`mxopt_jax.sparse.value_and_grad`) and update lazily where the optimizer can.

Model state (BatchNorm's running statistics, say): a problem whose model carries values that training
updates but no optimizer does gives ``init_state``. Then, and only then, ``loss`` and ``metric`` take the state
as their second argument:

* ``init_state(key) -> state``: a pytree, called with the **same** key as ``init`` (so a Flax model can call
  ``model.init(key, x)`` in both and keep its ``"params"`` and ``"batch_stats"`` collections);
* ``loss(params, state, batch) -> (loss, new_state)``: the mean training loss of a mini-batch in training mode
  (batch statistics) and the state after that step (the running statistics moved towards the batch's);
* ``metric(params, state, batch) -> scalar``: the metric in evaluation mode (the running statistics).

The engine carries the state next to the parameters through every step: it differentiates ``loss`` with
respect to ``params`` only (``has_aux``), hands the optimizer the parameters' gradients and never the state,
replaces the state with ``new_state`` after each step, and evaluates ``metric`` with the state as it stands.
A non-finite state is a diverged run, like a non-finite parameter. :meth:`Problem.initial_state`,
:meth:`Problem.train_loss` and :meth:`Problem.evaluate` call either kind of problem the same way (a problem
without ``init_state`` has the empty state ``()``), which is how the engine and the preflight call them.

Trace: a problem may give ``trace(params) -> array``, a few numbers of the model that the engine records at
every evaluation point next to the metrics (:attr:`mxopt_jax.compare.records.Records.trace`): the point itself
on a 2-D test function (the tour's paths), a weight's norm, the accuracy on a small fixed set the function
holds. It is pure and traceable like ``metric``, returns an array of the same shape at every point, and is
recorded as it stands (also once the run has diverged: a diverged run's trace shows where it went).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax

from ..checks import finite_number, printable
from ..direction import WORDS, Direction

__all__ = ["Batch", "Params", "Problem", "Splits", "State"]

Params = Any  # a pytree of arrays
Batch = Any  # a pytree of arrays with a leading example axis
State = Any  # a pytree of arrays the model updates itself (BatchNorm's running statistics); () when none


class Splits(NamedTuple):
    """A problem's data: three disjoint splits, each a :data:`Batch` (NumPy or JAX arrays)."""

    train: Batch  # what mini-batches are drawn from
    val: Batch  # what selection (learning rate, steps to target) reads
    test: Batch  # what is reported; selection never reads it


@dataclasses.dataclass(frozen=True)
class Problem:
    """One problem: data, model, loss, metric, target and training budget.

    Attributes:
      name: short identifier (lower case, no spaces), e.g. ``"digits_mlp"``.
      title: one line for tables and plots, e.g. ``"digits, MLP 64-128-10"``.
      description: what a reader needs to judge the result: the data (source, sizes of the splits), the
        model (layers, number of parameters), the loss and metric, steps, batch size, the target and why.
      data: ``() -> Splits``, deterministic.
      init: ``(key) -> params`` (a pytree; a dict when ``tables`` is used).
      loss: ``(params, batch) -> scalar``, the mean training loss of a mini-batch; with ``init_state``,
        ``(params, state, batch) -> (scalar, new_state)``.
      metric: ``(params, batch) -> scalar``, evaluated on a whole split; ``better`` says which way is better;
        with ``init_state``, ``(params, state, batch) -> scalar``.
      metric_name: how tables label the metric, e.g. ``"error %"`` (the value is shown as computed).
      target: the validation metric a run must reach (``<=``, or ``>=`` when higher is better) to count as
        "reached target" (the full budget's; see ``targets``).
      steps: training steps of one run (the full preset; the quick preset scales it, see ``quick_steps``).
      batch_size: examples per mini-batch.
      eval_every: steps between evaluations of the metric on the validation and test splits.
      quick_steps: steps in the quick preset (a multiple of ``eval_every``); ``None`` means ``steps``.
      tables: top-level parameter keys read only through :func:`mxopt_jax.sparse.lookup` (row-sparse).
      targets: the target per preset name (``{"quick": ..., "full": ...}``), each calibrated at that preset's
        budget; a preset not named here uses ``target`` (:meth:`target_for`).
      better: ``"lower"`` (default) or ``"higher"``: which way the metric improves. Selection, ranks, targets
        and tables all read it (:attr:`direction`).
      margin: the practical margin, in the metric's own units (``>= 0``, default 0: none): two contenders are
        shown to differ only by more than this (the tables' tests shift by it, and the report prints it). Use it
        for a difference too small to matter to a reader (e.g. 0.1 for an error rate in %).
      init_state: ``None`` (the default: no model state), or ``(key) -> state``, the model's own state at
        initialization (BatchNorm's running statistics), called with ``init``'s key; it makes ``loss`` and
        ``metric`` take the state (the module's docstring says how the engine carries it).
      trace: ``None`` (the default: nothing recorded), or ``(params) -> array``: a few numbers of the model
        recorded at every evaluation point (the module's docstring; :attr:`Records.trace
        <mxopt_jax.compare.records.Records.trace>`).
    """

    name: str
    title: str
    description: str
    data: Callable[[], Splits]
    init: Callable[[jax.Array], Params]
    loss: Callable[..., Any]
    metric: Callable[..., jax.Array]
    metric_name: str
    target: float
    steps: int
    batch_size: int
    eval_every: int
    quick_steps: int | None = None
    tables: tuple[str, ...] = ()
    targets: Mapping[str, float] = dataclasses.field(default_factory=dict)
    better: str = "lower"
    margin: float = 0.0

    init_state: Callable[[jax.Array], State] | None = None
    trace: Callable[[Params], jax.Array] | None = None

    @property
    def stateful(self) -> bool:
        """Whether the model carries a state of its own (``init_state`` is given)."""
        return self.init_state is not None

    def initial_state(self, key: jax.Array) -> State:
        """``init_state(key)``, or ``()`` for a problem without model state."""
        return () if self.init_state is None else self.init_state(key)

    def train_loss(self, params: Params, state: State, batch: Batch) -> tuple[jax.Array, State]:
        """``(loss, new_state)`` of a mini-batch for either kind of problem (without model state, the state
        passes through unchanged)."""
        if self.init_state is None:
            return self.loss(params, batch), state
        out = self.loss(params, state, batch)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(
                f"Problem {self.name!r} has `init_state`, so `loss(params, state, batch)` must return "
                f"`(loss, new_state)`; it returned {type(out).__name__}"
            )
        return out

    def evaluate(self, params: Params, state: State, batch: Batch) -> jax.Array:
        """The metric on ``batch`` for either kind of problem (``state`` is ignored without model state)."""
        if self.init_state is None:
            return self.metric(params, batch)
        return self.metric(params, state, batch)

    @property
    def direction(self) -> Direction:
        """Which way the metric improves (:class:`~mxopt_jax.compare.direction.Direction`, from ``better``):
        its sign, oriented values, ``<=``/``>=``, whether a value meets a target."""
        return Direction(self.better)

    @property
    def sign(self) -> float:
        """``1.0`` when lower is better, ``-1.0`` when higher is (:attr:`direction`'s)."""
        return self.direction.sign

    def target_for(self, preset: str) -> float:
        """The validation target at preset ``preset``'s budget: ``targets[preset]``, else ``target``."""
        return float(self.targets.get(preset, self.target))

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"Problem `name` must be a non-empty str, got {self.name!r}")
        for field in ("title", "description", "metric_name"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(
                    f"Problem {self.name!r}: `{field}` must be a str, got {getattr(self, field)!r}"
                )
        for field in ("name", "title", "description", "metric_name"):  # printed by every report: no escapes
            printable(getattr(self, field), f"Problem {self.name!r}: `{field}`", lines=field == "description")
        if self.init_state is not None and not callable(self.init_state):
            raise TypeError(
                f"Problem {self.name!r}: `init_state` must be None or callable, got {type(self.init_state).__name__}"
            )
        if self.trace is not None and not callable(self.trace):
            raise TypeError(
                f"Problem {self.name!r}: `trace` must be None or callable, got {type(self.trace).__name__}"
            )
        for field in ("data", "init", "loss", "metric"):
            if not callable(getattr(self, field)):
                raise TypeError(
                    f"Problem {self.name!r}: `{field}` must be callable, got {type(getattr(self, field)).__name__}"
                )
        # a target is compared with the metric (<=): NaN never compares, an infinite one is always (or never) met
        finite_number(self.target, f"Problem {self.name!r}: `target`")
        for field in ("steps", "batch_size", "eval_every"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Problem {self.name!r}: `{field}` must be an int >= 1, got {value!r}")
        q = self.quick_steps
        if q is not None and (not isinstance(q, int) or isinstance(q, bool) or q < 1):
            raise ValueError(f"Problem {self.name!r}: `quick_steps` must be None or an int >= 1, got {q!r}")
        for field in ("steps", "quick_steps"):
            value = getattr(self, field)
            if value is not None and value % self.eval_every:
                raise ValueError(
                    f"Problem {self.name!r}: `{field}` ({value}) must be a multiple of `eval_every` "
                    f"({self.eval_every})"
                )
        if not isinstance(self.targets, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
            for k, v in self.targets.items()
        ):
            raise TypeError(
                f"Problem {self.name!r}: `targets` must map preset names to numbers, got {self.targets!r}"
            )
        if self.better not in WORDS:
            raise ValueError(
                f"Problem {self.name!r}: `better` must be 'lower' or 'higher' (which way the metric improves), "
                f"got {self.better!r}"
            )
        margin = self.margin
        if (
            isinstance(margin, bool)
            or not isinstance(margin, int | float)
            or not math.isfinite(margin)
            or margin < 0
        ):
            raise ValueError(
                f"Problem {self.name!r}: `margin` must be a finite number >= 0 (the practical margin, in the "
                f"metric's units), got {margin!r}"
            )
        if not isinstance(self.tables, tuple) or not all(isinstance(t, str) for t in self.tables):
            raise TypeError(f"Problem {self.name!r}: `tables` must be a tuple of str, got {self.tables!r}")
