"""Compare optimizers on built-in tasks: the library's main job (``mxopt-jax compare``).

Nothing is downloaded. Two kinds of task:

* **spiral** — a real (small) learning task: a generated 3-class spiral classification set (600 points in
  2-D) learned by an MLP (2-32-32-3, tanh) with full-batch cross-entropy; the same data and initialization
  (from ``--seed``) for every optimizer.
* **rosenbrock**, **beale**, **saddle** — classic 2-D test functions (:mod:`mxopt_jax.testfns`), where the
  optimizer moves one point from a fixed start and its trajectory can be drawn over the contours.

Every training run is one ``jax.lax.scan`` (no Python loop over steps). Several optimizers are compiled
together as one XLA program, a ``lax.switch`` over their runs (:func:`train_all`, :func:`minimize_all`;
:func:`compare` makes one program per optimizer family and kind of task), which compiles in well under half
the time of one program each; every optimizer is then run on its own, so the reported time per step is its
own, without compilation.

Learning rates: MXNet's default rates (mostly 0.01 or 0.001) are made for mini-batch training and barely move
within a few hundred full-batch steps, so each optimizer uses a tuned rate: :data:`TUNED_LR` for the spiral
task, :data:`mxopt_jax.testfns.LEARNING_RATES` for the test functions. Every other hyperparameter is MXNet's
default. Pass ``learning_rate(s)`` to :func:`train` / :func:`train_all` / :func:`minimize` /
:func:`minimize_all` to try others.
"""

from __future__ import annotations

import argparse
import csv
import math
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import OPTIMIZERS
from .testfns import FUNCTIONS, LEARNING_RATES, Function2D

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

#: Optimizers compared by default: all of them, in the order of ``mxopt_jax.OPTIMIZERS``.
DEFAULT_OPTIMIZERS: tuple[str, ...] = tuple(OPTIMIZERS)

#: The built-in tasks: the spiral classification task, then the 2-D test functions.
TASKS: tuple[str, ...] = ("spiral", *FUNCTIONS)

TASK_DESCRIPTIONS: dict[str, str] = {
    "spiral": "3-class spiral classification (600 points), MLP 2-32-32-3, full batch, cross-entropy",
    "rosenbrock": "Rosenbrock (1-x)^2 + 100(y-x^2)^2 from (-1.5, 2); minimum 0 at (1, 1)",
    "beale": "Beale's function from (1, 1.5); minimum 0 at (3, 0.5)",
    "saddle": "saddle x^2 + (y^2/2 - 1)^2 from (-1.5, 0.01); saddle point (0, 0); minima 0 at (0, +/-1.41)",
}

#: Optimizers grouped by family (used to split curve plots into readable panels).
FAMILIES: dict[str, tuple[str, ...]] = {
    "SGD family": ("sgd", "nag", "signum", "sgld", "dcasgd", "lbsgd", "ccsgd", "test"),
    "AdaGrad, AdaDelta, RMSProp, FTRL, FTML": (
        "adagrad",
        "groupadagrad",
        "adadelta",
        "rmsprop",
        "ftrl",
        "ftml",
    ),
    "Adam family": ("adam", "adamw", "adamax", "nadam", "adabelief"),
    "layer-wise (LARS, LAMB, LANS)": ("lars", "lamb", "lans"),
}


class Result(NamedTuple):
    """One optimizer's run on one task.

    ``losses`` holds ``steps + 1`` values: the loss before each update, then the final loss. For the spiral
    task ``accuracies`` is the training accuracy at the same points; for a test function ``trajectory`` is
    the point (``(steps + 1, 2)``) and ``accuracy`` is NaN. ``ms_per_step`` is the best of two runs of the
    compiled program, divided by ``steps``; it excludes compilation (``compile_s``).
    """

    name: str
    learning_rate: float
    final_loss: float
    accuracy: float
    steps: int
    ms_per_step: float
    losses: np.ndarray
    task: str = "spiral"
    accuracies: np.ndarray | None = None
    trajectory: np.ndarray | None = None
    compile_s: float = math.nan


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


def loss_fn(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean softmax cross-entropy of the MLP on ``(x, y)``."""
    return optax.softmax_cross_entropy_with_integer_labels(mlp(params, x), y).mean()


# --------------------------------------------------------------------------- running an optimizer
def make_optimizer(name: str, learning_rate: float, seed: int = 0) -> optax.GradientTransformation:
    """``OPTIMIZERS[name](learning_rate=...)`` with MXNet's other defaults; SGLD is seeded with ``seed``.

    The deprecation warnings of the MXNet 1.x optimizers (``lbsgd``, ``ccsgd``) are silenced here: comparing
    them is deliberate.
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    kwargs: dict[str, Any] = {"seed": seed} if name == "sgld" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return OPTIMIZERS[name](learning_rate=learning_rate, **kwargs)


def family_groups(names: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``names`` grouped by family (families in :data:`FAMILIES` order; unknown names last, as 'other')."""
    groups = []
    known = {n for members in FAMILIES.values() for n in members}
    for family, members in FAMILIES.items():
        present = [n for n in names if n in members]
        if present:
            groups.append((family, present))
    other = [n for n in names if n not in known]
    if other:
        groups.append(("other", other))
    return groups


def _compile_and_run_each(
    branches: Sequence[Callable[..., Any]], *args: Any, repeats: int = 2
) -> tuple[list[Any], float, list[float]]:
    """Compile one program that runs ``branches[index](*args)`` (a ``lax.switch``), then run every branch.

    Returns each branch's output (as NumPy), the compile time (s) and each branch's run time (s, the best of
    ``repeats`` runs; the first run also pays one-time costs). One program for several optimizers compiles in
    well under half the time of one program each (XLA compiles the shared model code once), while each call
    still runs only the selected optimizer, so run times stay per optimizer.
    """

    def program(index, *args):
        return jax.lax.switch(index, branches, *args)

    t0 = time.perf_counter()
    compiled = jax.jit(program).lower(jnp.int32(0), *args).compile()
    compile_s = time.perf_counter() - t0
    outs, times = [], []
    for k in range(len(branches)):
        index, best = jnp.int32(k), math.inf
        for _ in range(max(repeats, 1)):
            t0 = time.perf_counter()
            out = jax.block_until_ready(compiled(index, *args))
            best = min(best, time.perf_counter() - t0)
        outs.append(jax.tree.map(np.asarray, out))
        times.append(best)
    return outs, compile_s, times


def _scan_updates(
    objective: Callable[[Any], tuple[jax.Array, jax.Array]],
    params: Any,
    tx: optax.GradientTransformation,
    steps: int,
    record_params: bool,
) -> tuple[jax.Array, jax.Array, Any]:
    """``steps`` updates as one ``lax.scan`` (traceable; call it inside ``jit``).

    ``objective(params) -> (loss, aux)``. Returns the losses and aux values before each update and after
    the last (``steps + 1`` each) and, when ``record_params``, the parameters at the same points (else None).
    """
    state = tx.init(params)

    def body(carry, _):
        p, s = carry
        (loss, aux), grads = jax.value_and_grad(objective, has_aux=True)(p)
        updates, s = tx.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), (loss, aux, p if record_params else None)

    (p, _), (losses, auxs, ps) = jax.lax.scan(body, (params, state), None, length=steps)
    loss, aux = objective(p)
    losses = jnp.append(losses, loss)
    auxs = jnp.append(auxs, aux)
    if record_params:
        ps = jax.tree.map(lambda h, last: jnp.concatenate([h, last[None]]), ps, p)
    return losses, auxs, ps


def _check_steps(steps: int) -> None:
    if not isinstance(steps, int | np.integer) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")


def _check_names(names: Sequence[str]) -> list[str]:
    names = list(names)
    if not names:
        raise ValueError("no optimizers given")
    for name in names:
        if name not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    return names


def train_all(
    names: Sequence[str],
    steps: int = 300,
    seed: int = 0,
    learning_rates: Sequence[float | None] | None = None,
) -> list[Result]:
    """Train the spiral task with each optimizer in ``names`` (one compiled program for all of them).

    ``learning_rates`` (one per name, ``None`` for the default) default to :data:`TUNED_LR`. GroupAdaGrad
    (one accumulator per row of a 2-D weight) updates the weight matrices; the 1-D biases go to AdaGrad with
    the same rate (a row of one). Results come in ``names`` order.
    """
    _check_steps(steps)
    names = _check_names(names)
    given = [None] * len(names) if learning_rates is None else list(learning_rates)
    if len(given) != len(names):
        raise ValueError(f"{len(given)} learning rates for {len(names)} optimizers")
    lrs = [float(TUNED_LR[n] if lr is None else lr) for n, lr in zip(names, given, strict=True)]
    x, y = spiral_dataset(seed=seed)
    x, y = jnp.asarray(x), jnp.asarray(y)
    params = init_mlp(jax.random.PRNGKey(seed))

    def objective(p):
        logits = mlp(p, x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, jnp.mean(jnp.argmax(logits, axis=1) == y)

    def branch(name: str, lr: float) -> Callable[[dict], Any]:
        tx = make_optimizer(name, lr, seed)
        if name == "groupadagrad":
            tx = optax.multi_transform(
                {"rows": tx, "bias": make_optimizer("adagrad", lr)},
                lambda p: {k: "rows" if v.ndim == 2 else "bias" for k, v in p.items()},
            )
        return lambda p: _scan_updates(objective, p, tx, steps, record_params=False)[:2]

    branches = [branch(n, lr) for n, lr in zip(names, lrs, strict=True)]
    outs, compile_s, times = _compile_and_run_each(branches, params)
    return [
        Result(
            name,
            lr,
            float(losses[-1]),
            float(accs[-1]),
            steps,
            1e3 * run_s / steps,
            losses.astype(np.float64),
            task="spiral",
            accuracies=accs.astype(np.float64),
            compile_s=compile_s,
        )
        for name, lr, (losses, accs), run_s in zip(names, lrs, outs, times, strict=True)
    ]


def train(name: str, steps: int = 300, seed: int = 0, learning_rate: float | None = None) -> Result:
    """Train the spiral task with one optimizer; returns the loss/accuracy curves and the final metrics.

    ``learning_rate`` defaults to :data:`TUNED_LR` (see :func:`train_all`).
    """
    return train_all([name], steps=steps, seed=seed, learning_rates=[learning_rate])[0]


def minimize_all(
    names: Sequence[str],
    functions: Sequence[str | Function2D] = tuple(FUNCTIONS),
    steps: int = 300,
    seed: int = 0,
    learning_rates: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, list[Result]]:
    """Minimize 2-D test functions (:mod:`mxopt_jax.testfns`) with each optimizer; one compiled program.

    Returns ``{function name: [Result per optimizer, in names order]}``. For each optimizer the functions run
    side by side as one ``vmap``-ed ``lax.scan`` (each lane picks its function with ``lax.switch`` and gets its
    own learning rate), so ``ms_per_step`` is that run's time per step divided by the number of functions.
    ``learning_rates`` (``{function: {optimizer: lr}}``, entries may be missing) default to
    ``testfns.LEARNING_RATES``; ``seed`` only matters for SGLD. Each result's ``trajectory`` holds the
    ``steps + 1`` points visited.
    """
    _check_steps(steps)
    names = _check_names(names)
    fns = [FUNCTIONS[f] if isinstance(f, str) else f for f in functions]
    if not fns:
        raise ValueError("no functions given")
    given = learning_rates or {}
    lrs = {n: [float(given.get(fn.name, {}).get(n, LEARNING_RATES[fn.name][n])) for fn in fns] for n in names}
    fn_branches = [fn.fn for fn in fns]

    def branch(name: str) -> Callable[[jax.Array], Any]:
        lanes = jnp.asarray(lrs[name], jnp.float32)

        def lane(index, lr, start):
            tx = make_optimizer(name, lr, seed)

            def objective(p):
                return jax.lax.switch(index, fn_branches, p), jnp.zeros((), jnp.float32)

            losses, _, ps = _scan_updates(objective, start, tx, steps, record_params=True)
            return losses, ps

        return lambda starts: jax.vmap(lane)(jnp.arange(len(fns)), lanes, starts)

    starts = jnp.stack([fn.start_point() for fn in fns])
    outs, compile_s, times = _compile_and_run_each([branch(n) for n in names], starts)
    results: dict[str, list[Result]] = {fn.name: [] for fn in fns}
    for name, (losses, ps), run_s in zip(names, outs, times, strict=True):
        for k, fn in enumerate(fns):
            results[fn.name].append(
                Result(
                    name,
                    lrs[name][k],
                    float(losses[k, -1]),
                    math.nan,
                    steps,
                    1e3 * run_s / steps / len(fns),
                    losses[k].astype(np.float64),
                    task=fn.name,
                    trajectory=ps[k].reshape(steps + 1, 2).astype(np.float64),
                    compile_s=compile_s,
                )
            )
    return results


def minimize(
    name: str,
    function: str | Function2D,
    steps: int = 300,
    seed: int = 0,
    learning_rate: float | None = None,
) -> Result:
    """Minimize one 2-D test function from its start point with one optimizer (see :func:`minimize_all`)."""
    fn = FUNCTIONS[function] if isinstance(function, str) else function
    lrs = None if learning_rate is None else {fn.name: {name: learning_rate}}
    return minimize_all([name], [fn], steps=steps, seed=seed, learning_rates=lrs)[fn.name][0]


def run_task(
    task: str, name: str, steps: int = 300, seed: int = 0, learning_rate: float | None = None
) -> Result:
    """:func:`train` for ``'spiral'``, :func:`minimize` for a test function name."""
    if task == "spiral":
        return train(name, steps=steps, seed=seed, learning_rate=learning_rate)
    if task in FUNCTIONS:
        return minimize(name, task, steps=steps, seed=seed, learning_rate=learning_rate)
    raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")


class Progress:
    """A tiny progress bar on stderr (no dependency).

    On a terminal it redraws one ``\\r``-updated line; otherwise (logs, CI) it prints one line per finished
    item, so progress stays visible without control characters.
    """

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24) -> None:
        self.total, self.width, self.done = total, width, 0
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._t0 = time.perf_counter()
        self._shown = 0

    def _draw(self, label: str) -> None:
        filled = round(self.width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {self.done}/{self.total} {time.perf_counter() - self._t0:5.1f}s {label}"
        line = line[: shutil.get_terminal_size().columns - 1]  # a wrapped line could not be redrawn
        self.stream.write("\r" + line.ljust(self._shown))
        self._shown = len(line)
        self.stream.flush()

    def status(self, label: str) -> None:
        """Show what is running now (terminal only)."""
        if self.tty:
            self._draw(label)

    def advance(self, label: str) -> None:
        """Mark one item finished."""
        self.done += 1
        if self.tty:
            self._draw(label)
            if self.done >= self.total:
                self.stream.write("\n")
                self.stream.flush()
        else:
            elapsed = time.perf_counter() - self._t0
            print(
                f"[{self.done:>{len(str(self.total))}}/{self.total}] {elapsed:6.1f}s {label}",
                file=self.stream,
            )
            self.stream.flush()


def compare(
    names: Sequence[str] = DEFAULT_OPTIMIZERS,
    tasks: Sequence[str] = TASKS,
    steps: int = 300,
    seed: int = 0,
    progress: Progress | None = None,
) -> dict[str, list[Result]]:
    """Run every optimizer in ``names`` on every task; returns ``{task: [Result, ...]}`` in ``names`` order.

    Optimizers are compiled together one family at a time (:func:`train_all`, :func:`minimize_all`): one
    program per family for the spiral task and one for all the test functions. ``progress`` (see
    :func:`progress_total`) advances once per program.
    """
    _check_steps(steps)
    names = _check_names(names)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known: {', '.join(TASKS)}")
    results: dict[str, list[Result]] = {t: [] for t in tasks}
    functions = [t for t in tasks if t in FUNCTIONS]
    for family, members in family_groups(names):
        if "spiral" in tasks:
            if progress is not None:
                progress.status(f"spiral: compiling and running {family} ({len(members)})")
            rs = train_all(members, steps=steps, seed=seed)
            results["spiral"] += rs
            if progress is not None:
                done = ", ".join(f"{r.name} {_fmt_loss(r.final_loss)}" for r in rs)
                progress.advance(f"spiral, {family} (compiled in {rs[0].compile_s:.1f} s): {done}")
        if functions:
            if progress is not None:
                progress.status(f"{', '.join(functions)}: compiling and running {family} ({len(members)})")
            by_fn = minimize_all(members, functions, steps=steps, seed=seed)
            for task, rs in by_fn.items():
                results[task] += rs
            if progress is not None:
                first = by_fn[functions[0]][0]
                progress.advance(f"{', '.join(functions)}, {family} (compiled in {first.compile_s:.1f} s)")
    order = {n: i for i, n in enumerate(names)}
    return {t: sorted(rs, key=lambda r: order[r.name]) for t, rs in results.items()}


def progress_total(names: Sequence[str], tasks: Sequence[str]) -> int:
    """The number of programs :func:`compare` compiles (its progress steps)."""
    kinds = ("spiral" in tasks) + any(t in FUNCTIONS for t in tasks)
    return len(family_groups(list(names))) * kinds


# --------------------------------------------------------------------------- reporting
def _fmt_loss(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.4g}")


def _rank_key(r: Result) -> tuple:
    return (math.isnan(r.final_loss), 0.0 if math.isnan(r.final_loss) else r.final_loss, r.name)


def ranked(results: Sequence[Result]) -> list[Result]:
    """Results sorted by final loss, best first; NaN last."""
    return sorted(results, key=_rank_key)


def format_table(results: Sequence[Result], title: str | None = None) -> str:
    """A ranked text table: rank, optimizer, lr, final loss, accuracy (when measured), steps, ms/step."""
    with_acc = any(not math.isnan(r.accuracy) for r in results)
    head = f"{'rank':>4}  {'optimizer':<13} {'lr':>7} {'final loss':>11}"
    head += f" {'accuracy':>9}" if with_acc else ""
    head += f" {'steps':>6} {'ms/step':>8}"
    lines = [title] if title else []
    lines += [head, "-" * len(head)]
    for i, r in enumerate(ranked(results), 1):
        line = f"{i:>4}  {r.name:<13} {r.learning_rate:>7.3g} {_fmt_loss(r.final_loss):>11}"
        if with_acc:
            line += f" {'-':>9}" if math.isnan(r.accuracy) else f" {100 * r.accuracy:>8.1f}%"
        line += f" {r.steps:>6d} {r.ms_per_step:>8.3g}"
        lines.append(line)
    return "\n".join(lines)


def format_overall(results: dict[str, list[Result]]) -> str:
    """Mean rank of each optimizer over the tasks, with its rank on each task."""
    tasks = list(results)
    ranks: dict[str, dict[str, int]] = {}
    for task, rs in results.items():
        for i, r in enumerate(ranked(rs), 1):
            ranks.setdefault(r.name, {})[task] = i
    rows = sorted(ranks.items(), key=lambda kv: (np.mean(list(kv[1].values())), kv[0]))
    head = f"{'rank':>4}  {'optimizer':<13} {'mean rank':>9}" + "".join(f" {t:>10}" for t in tasks)
    lines = [f"Overall: mean rank over {len(tasks)} task(s)", head, "-" * len(head)]
    for i, (name, rk) in enumerate(rows, 1):
        cells = "".join(f" {rk.get(t, 0):>10d}" for t in tasks)
        lines.append(f"{i:>4}  {name:<13} {np.mean(list(rk.values())):>9.2f}{cells}")
    return "\n".join(lines)


def write_csv(results: dict[str, list[Result]], path: str | Path) -> Path:
    """All results as CSV (task, rank, optimizer, lr, final_loss, accuracy, steps, ms_per_step, compile_s)."""
    path = Path(path)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["task", "rank", "optimizer", "lr", "final_loss", "accuracy", "steps", "ms_per_step", "compile_s"]
        )
        for task, rs in results.items():
            for i, r in enumerate(ranked(rs), 1):
                w.writerow(
                    [
                        task,
                        i,
                        r.name,
                        r.learning_rate,
                        r.final_loss,
                        r.accuracy,
                        r.steps,
                        r.ms_per_step,
                        r.compile_s,
                    ]
                )
    return path


def save_plots(results: dict[str, list[Result]], out: str | Path) -> list[Path]:
    """Write the PNG plots for ``results`` into ``out`` (needs matplotlib); returns the paths.

    ``spiral.png`` (loss and accuracy curves), ``<function>.png`` (one trajectory panel per optimizer over
    the contours), ``testfns_loss.png`` (function value curves, one row per function).
    """
    from . import plotting

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if results.get("spiral"):
        written.append(plotting.save(plotting.plot_training(results["spiral"]), out / "spiral.png"))
    fns = {t: rs for t, rs in results.items() if t in FUNCTIONS and rs}
    for task, rs in fns.items():
        written.append(plotting.save(plotting.plot_trajectories(FUNCTIONS[task], rs), out / f"{task}.png"))
    if fns:
        written.append(plotting.save(plotting.plot_function_losses(fns), out / "testfns_loss.png"))
    return written


# --------------------------------------------------------------------------- command line
def _names_arg(value: str) -> list[str]:
    if value.strip().lower() == "all":
        return list(DEFAULT_OPTIMIZERS)
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPTIMIZERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown optimizer(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(OPTIMIZERS)} or 'all'"
        )
    return list(dict.fromkeys(names))


def _tasks_arg(value: str) -> list[str]:
    if value.strip().lower() == "all":
        return list(TASKS)
    tasks = [t.strip().lower() for t in value.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if not tasks or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown task(s) {', '.join(map(repr, unknown)) or '(none given)'}; known: {', '.join(TASKS)} or 'all'"
        )
    return list(dict.fromkeys(tasks))


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The ``mxopt-jax`` argument parser (one sub-command: ``compare``)."""
    parser = argparse.ArgumentParser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare",
        help="compare optimizers on built-in tasks (no download)",
        description="Run optimizers on a spiral classification task and on 2-D test functions (Rosenbrock, "
        "Beale, a saddle); print ranked tables and write PNG plots and a CSV.",
    )
    cmp.add_argument(
        "--optimizers",
        type=_names_arg,
        default=list(DEFAULT_OPTIMIZERS),
        metavar="NAMES",
        help="comma-separated MXNet names, or 'all' (default: all 22)",
    )
    cmp.add_argument(
        "--tasks",
        type=_tasks_arg,
        default=list(TASKS),
        metavar="TASKS",
        help=f"comma-separated tasks from {', '.join(TASKS)}, or 'all' (default: all)",
    )
    cmp.add_argument("--steps", type=_positive_int, default=300, help="steps per run (default: %(default)s)")
    cmp.add_argument(
        "--seed", type=int, default=0, help="data, initialization and SGLD noise seed (default: %(default)s)"
    )
    cmp.add_argument(
        "--out", default="mxopt_compare", help="folder for the plots and results.csv (default: ./%(default)s)"
    )
    cmp.add_argument("--no-plots", action="store_true", help="only print the tables (and write results.csv)")
    return parser


PLOT_HINT = (
    "matplotlib is not installed, so no plots were written; install it with: pip install 'mxopt_jax[plot]'"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    args = build_parser().parse_args(argv)
    names, tasks = args.optimizers, args.tasks
    print(
        f"mxopt-jax compare: {len(names)} optimizer(s) x {len(tasks)} task(s), {args.steps} steps each, "
        f"seed {args.seed} (tuned learning rates; ms/step excludes compilation)",
        flush=True,
    )
    progress = Progress(progress_total(names, tasks))
    results = compare(names, tasks, steps=args.steps, seed=args.seed, progress=progress)
    for task in tasks:
        print()
        print(format_table(results[task], title=f"== {task}: {TASK_DESCRIPTIONS[task]}"))
    if len(tasks) > 1:
        print()
        print(format_overall(results))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = [write_csv(results, out / "results.csv")]
    if not args.no_plots:
        try:
            written += save_plots(results, out)
        except ImportError as e:
            if "matplotlib" not in str(e):
                raise
            print(PLOT_HINT, file=sys.stderr)
    print()
    print("Wrote " + ", ".join(str(p) for p in written))
    return 0
