"""The tour's tasks as the study's problems (:class:`~mxopt_jax.compare.problems.base.Problem`), their learning
rates, and the spiral classification set.

Nothing is downloaded. Two kinds of task, each a :class:`Problem` that the study's engine runs
(:mod:`mxopt_jax.compare.engine`, evaluating after every step, ``eval_every=1``):

* **spiral**: a real (small) learning task: a generated 3-class spiral classification set (600 points in 2-D,
  the same for every run) learned by an MLP (2-32-32-3, tanh) with full-batch cross-entropy. The metric is the
  cross-entropy on the whole set (what the tour ranks by); the trace (:attr:`Problem.trace`) is the accuracy
  on it. Full batch through the engine's mini-batches: the training split is the whole set as *one* example,
  and a batch of one draws it every step.
* **rosenbrock**, **beale**, **saddle**: the classic 2-D test functions of
  :mod:`~mxopt_jax.compare.tour.functions`: ``init`` returns the function's fixed start point (the key is
  unused), the loss and the metric are the function's value, the trace is the point (so the engine records
  the path). A function has no data: its splits are a dummy row the loss never reads.

A run's seed sets the MLP's initialization and SGLD's noise (the engine's independent key streams), never the
data. Learning rates: MXNet's default rates (mostly 0.01 or 0.001) are made for mini-batch training and barely
move within a few hundred full-batch steps, so each optimizer uses a tuned rate (:func:`learning_rate`):
:data:`TUNED_LR` for the spiral task, :data:`mxopt_jax.compare.tour.functions.LEARNING_RATES` for the test
functions. Every other hyperparameter is MXNet's default.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ... import OPTIMIZERS
from ..problems.base import Problem, Splits
from .functions import FUNCTIONS, LEARNING_RATES, Function2D

__all__ = [
    "DEFAULT_OPTIMIZERS",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "TUNED_LR",
    "init_mlp",
    "learning_rate",
    "mlp",
    "problem",
    "spiral_dataset",
]

#: Learning rate of each optimizer on the spiral task. Provenance: a grid over {1e-3, 3e-3, 0.01, …, 30, 100}
#: (11 values about half a decade apart), 300 full-batch steps, seeds 0, 1 and 2, every other hyperparameter
#: at MXNet's default. Rule: the rate with the lowest worst-case (over the three seeds) final loss, then one
#: grid step lower where the next larger rate failed for some seed (final loss at or above chance, ln 3),
#: as a margin against divergence on other seeds. One exception: RMSProp's loss is chaotic from 0.03 up (the
#: grid's pick, 0.1, ended at 2.6 for seed 0 when run unbatched), so it uses 0.01. SGLD is a sampler, not a
#: minimizer: on the mean loss its noise (standard deviation ``sqrt(lr)`` per weight) dominates at every
#: rate and the loss ends above its start; it keeps the smallest rate of the grid.
TUNED_LR: dict[str, float] = {
    "sgd": 1.0,
    "nag": 0.3,
    "signum": 0.01,
    "sgld": 0.001,
    "dcasgd": 1.0,
    "lbsgd": 1.0,
    "ccsgd": 1.0,
    "adagrad": 0.3,
    "groupadagrad": 0.3,
    "adadelta": 10.0,
    "rmsprop": 0.01,
    "adam": 0.1,
    "adamw": 0.3,
    "adamax": 1.0,
    "nadam": 0.1,
    "adabelief": 0.3,
    "ftrl": 1.0,
    "ftml": 0.3,
    "lars": 1.0,
    "lamb": 0.01,
    "lans": 0.01,
    "test": 1.0,
}

#: Contenders of the tour by default: every mxopt_jax optimizer, in the order of ``mxopt_jax.OPTIMIZERS``.
DEFAULT_OPTIMIZERS: tuple[str, ...] = tuple(OPTIMIZERS)

#: The built-in tasks: the spiral classification task, then the 2-D test functions.
TASKS: tuple[str, ...] = ("spiral", *FUNCTIONS)

#: One line per task (each problem's title; the tables' headings).
TASK_DESCRIPTIONS: dict[str, str] = {
    "spiral": "3-class spiral classification (600 points), MLP 2-32-32-3, full batch, cross-entropy",
    "rosenbrock": "Rosenbrock (1-x)^2 + 100(y-x^2)^2 from (-1.5, 2); minimum 0 at (1, 1)",
    "beale": "Beale's function from (1, 1.5); minimum 0 at (3, 0.5)",
    "saddle": "saddle x^2 + (y^2/2 - 1)^2 from (-1.5, 0.01); saddle point (0, 0); minima 0 at (0, +/-1.41)",
}

_STEPS = 300  # the tour's default budget (the command line's --steps); the runner passes its own


def learning_rate(task: str, name: str) -> float:
    """The tuned learning rate of optimizer ``name`` on ``task`` (:data:`TUNED_LR`, or the function's row of
    :data:`~mxopt_jax.compare.tour.functions.LEARNING_RATES`)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    return float(TUNED_LR[name] if task == "spiral" else LEARNING_RATES[task][name])


def problem(task: str) -> Problem:
    """The tour's task ``task`` (one of :data:`TASKS`) as a :class:`Problem` for the study's engine."""
    if task == "spiral":
        return _spiral_problem()
    if task in FUNCTIONS:
        return _function_problem(FUNCTIONS[task])
    raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")


# --------------------------------------------------------------------------- the 2-D test functions
def _function_problem(fn: Function2D) -> Problem:
    dummy = np.zeros((1, 1), np.float32)  # the engine draws batches from the training split; nothing reads it

    def value(params: jax.Array, batch: jax.Array) -> jax.Array:
        return fn(params)

    return Problem(
        name=fn.name,
        title=TASK_DESCRIPTIONS[fn.name],
        description=f"{TASK_DESCRIPTIONS[fn.name]}. The point is one (1, 2) weight, so every optimizer sees the "
        "same tree (GroupAdaGrad a row, the layer-wise optimizers one layer); loss and metric are the "
        "function's value; no data (a dummy split).",
        data=lambda: Splits(dummy, dummy, dummy),
        init=lambda key: fn.start_point(),
        loss=value,
        metric=value,
        metric_name="f(x, y)",
        target=1e-3,
        steps=_STEPS,
        batch_size=1,
        eval_every=1,
        trace=lambda params: jnp.reshape(params, (2,)),
    )


# --------------------------------------------------------------------------- the spiral task
def spiral_dataset(n_per_class: int = 200, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A generated 2-D spiral classification set (no download): ``(x float32 (n, 2), y int32 (n,))``."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.normal(0, 0.2, n_per_class)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int32)


def init_mlp(key: jax.Array, sizes: Sequence[int] = (2, 32, 32, 3)) -> dict:
    """MLP parameters ``fc{i}_weight`` (LeCun-normal) and ``fc{i}_bias`` (zeros), MXNet-style names."""
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        key, sub = jax.random.split(key)
        params[f"fc{i}_weight"] = jax.random.normal(sub, (a, b)) * np.sqrt(1.0 / a)
        params[f"fc{i}_bias"] = jnp.zeros((b,))
    return params


def mlp(params: dict, x: jax.Array) -> jax.Array:
    """Logits of the tanh MLP made by :func:`init_mlp`."""
    n = len(params) // 2
    for i in range(n):
        x = x @ params[f"fc{i}_weight"] + params[f"fc{i}_bias"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x


def _spiral_problem() -> Problem:
    x, y = spiral_dataset()

    def cross_entropy(params: dict, batch: tuple[jax.Array, jax.Array]) -> jax.Array:
        bx, by = batch  # the whole set: (600, 2) and (600,), or as one example of the training split
        logits = mlp(params, jnp.reshape(bx, (-1, 2)))
        return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.reshape(by, (-1,))).mean()

    def accuracy(params: dict) -> jax.Array:
        return jnp.mean(jnp.argmax(mlp(params, jnp.asarray(x)), axis=1) == y)

    return Problem(
        name="spiral",
        title=TASK_DESCRIPTIONS["spiral"],
        description="A generated 3-class spiral (200 points per class, 2-D; the same set for every run), an "
        "MLP 2-32-32-3 with tanh (1,251 parameters), full-batch cross-entropy (the training split holds the "
        "whole set as one example); the metric is the cross-entropy on the whole set, the trace its accuracy.",
        data=lambda: Splits((x[None], y[None]), (x, y), (x, y)),
        init=init_mlp,
        loss=cross_entropy,
        metric=cross_entropy,
        metric_name="cross-entropy",
        target=0.05,
        steps=_STEPS,
        batch_size=1,
        eval_every=1,
        trace=accuracy,
    )
