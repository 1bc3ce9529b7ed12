"""Running optimizers on the tour's tasks (:mod:`mxopt_jax.compare.tour.tasks`): one ``jax.lax.scan`` per run.

Optimizers are built as the study builds them (:func:`mxopt_jax.compare.contenders.mxopt_contender`: MXNet's
defaults but for the learning rate). Every run is one ``jax.lax.scan`` (no Python loop over steps). Several
optimizers are compiled together as one XLA program, a ``lax.switch`` over their runs (:func:`train_all`,
:func:`minimize_all`; :func:`run` makes one program per optimizer family and kind of task), which compiles in
well under half the time of one program each; every optimizer is then run on its own, so the reported time
per step is its own, without compilation.

Learning rates default to the tuned tables (:data:`~mxopt_jax.compare.tour.tasks.TUNED_LR` for the spiral
task, :data:`~mxopt_jax.compare.tour.functions.LEARNING_RATES` for the test functions); pass
``learning_rate(s)`` to :func:`train` / :func:`train_all` / :func:`minimize` / :func:`minimize_all` /
:func:`run` to try others.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..contenders import group_by_family, mxopt_contender
from .results import Result, _fmt_loss
from .tasks import (
    DEFAULT_OPTIMIZERS,
    FUNCTIONS,
    LEARNING_RATES,
    OPTIMIZERS,
    TASKS,
    TUNED_LR,
    Function2D,
    init_mlp,
    mlp,
    spiral_dataset,
)


class ProgressLike(Protocol):
    """What :func:`run` reports progress to (:class:`mxopt_jax.compare.tour.cli.Progress` is one)."""

    def status(self, label: str) -> None: ...

    def advance(self, label: str) -> None: ...


# --------------------------------------------------------------------------- running an optimizer
def make_optimizer(name: str, learning_rate: float, seed: int = 0) -> optax.GradientTransformation:
    """The study's contender ``name`` (:func:`~mxopt_jax.compare.contenders.mxopt_contender`: MXNet's defaults
    but for the learning rate) at ``learning_rate``; SGLD draws its noise from ``PRNGKey(seed)``.

    GroupAdaGrad keeps one accumulator per row of a 2-D weight; other leaves (the spiral MLP's biases) go to
    AdaGrad with the same rate, as in the study.
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    return mxopt_contender(name).build(learning_rate, jax.random.PRNGKey(seed))


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
    x_np, y_np = spiral_dataset(seed=seed)
    x, y = jnp.asarray(x_np), jnp.asarray(y_np)
    params = init_mlp(jax.random.PRNGKey(seed))

    def objective(p):
        logits = mlp(p, x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, jnp.mean(jnp.argmax(logits, axis=1) == y)

    def branch(name: str, lr: float) -> Callable[[dict], Any]:
        tx = make_optimizer(name, lr, seed)
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


def run(
    names: Sequence[str] = DEFAULT_OPTIMIZERS,
    tasks: Sequence[str] = TASKS,
    steps: int = 300,
    seed: int = 0,
    progress: ProgressLike | None = None,
    learning_rates: Mapping[str, float] | None = None,
) -> dict[str, list[Result]]:
    """Run every optimizer in ``names`` on every task; returns ``{task: [Result, ...]}`` in ``names`` order.

    Optimizers are compiled together one family at a time (:func:`train_all`, :func:`minimize_all`): one
    program per family for the spiral task and one for all the test functions. ``progress`` (see
    :func:`progress_total`) advances once per program. ``learning_rates`` (``{optimizer: lr}``, the CLI's
    ``--lr``) overrides the tuned rate of those optimizers on every task; the others keep the tuned tables.
    """
    _check_steps(steps)
    names = _check_names(names)
    overrides = dict(learning_rates or {})
    for name, lr in overrides.items():
        if name not in names:
            raise ValueError(f"learning rate given for {name!r}, which is not among the optimizers {names}")
        if not (isinstance(lr, int | float | np.number) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"learning rate of {name!r} must be a positive finite number, got {lr!r}")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known: {', '.join(TASKS)}")
    results: dict[str, list[Result]] = {t: [] for t in tasks}
    functions = [t for t in tasks if t in FUNCTIONS]
    for family, members in group_by_family(names):
        if "spiral" in tasks:
            if progress is not None:
                progress.status(f"spiral: compiling and running {family}: {', '.join(members)}")
            rs = train_all(
                members, steps=steps, seed=seed, learning_rates=[overrides.get(n) for n in members]
            )
            results["spiral"] += rs
            if progress is not None:
                done = ", ".join(f"{r.name} {_fmt_loss(r.final_loss)}" for r in rs)
                progress.advance(f"spiral, {family} (compiled in {rs[0].compile_s:.1f} s): {done}")
        if functions:
            if progress is not None:
                progress.status(
                    f"{', '.join(functions)}: compiling and running {family}: {', '.join(members)}"
                )
            lrs = {f: {n: overrides[n] for n in members if n in overrides} for f in functions}
            by_fn = minimize_all(members, functions, steps=steps, seed=seed, learning_rates=lrs)
            for task, rs in by_fn.items():
                results[task] += rs
            if progress is not None:
                first = by_fn[functions[0]][0]
                done = ", ".join(members)
                progress.advance(
                    f"{', '.join(functions)}, {family} (compiled in {first.compile_s:.1f} s): {done}"
                )
    order = {n: i for i, n in enumerate(names)}
    return {t: sorted(rs, key=lambda r: order[r.name]) for t, rs in results.items()}


def progress_total(names: Sequence[str], tasks: Sequence[str]) -> int:
    """The number of programs :func:`run` compiles (its progress steps)."""
    kinds = ("spiral" in tasks) + any(t in FUNCTIONS for t in tasks)
    return len(group_by_family(list(names))) * kinds
