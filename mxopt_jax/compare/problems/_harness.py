"""A minimal stand-in for the study engine, to check and size the workloads (tests and ``python -m``).

:func:`train_grid` trains every ``(learning rate, seed)`` pair of one optimizer in one compiled program, the
way the engine does: ``jax.jit(jax.vmap(run))`` over the flattened grid, ``lax.scan`` over the steps, per
step ``batch_size`` row indices drawn with ``jax.random.randint`` and every leaf of the training split
indexed with them, the metric on the whole validation and test splits every ``eval_every`` steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .base import Problem

__all__ = ["GridResult", "train_grid"]


class GridResult(dict):
    """``train_loss``, ``val``, ``test``: ``(G, S, E)`` arrays; ``compile_s``, ``run_s`` (wall) and
    ``compile_cpu_s``, ``run_cpu_s`` (CPU time of the process): floats."""


def train_grid(
    problem: Problem,
    make_opt: Callable[[jax.Array], optax.GradientTransformation],
    lrs: Sequence[float],
    seeds: Sequence[int],
    steps: int | None = None,
    *,
    sparse: bool = False,
    eval_every: int | None = None,
    compiler_options: dict[str, Any] | None = None,
) -> GridResult:
    """Train ``len(lrs) * len(seeds)`` runs of ``make_opt(lr)`` on ``problem`` at once; times compile and run.

    ``sparse=True`` takes gradients with :func:`mxopt_jax.sparse.value_and_grad` over ``problem.tables``
    (row-sparse gradients; only mxopt_jax's optimizers accept them). ``compiler_options`` go to XLA's
    compiler (e.g. ``{"xla_backend_optimization_level": 0}``).
    """
    import mxopt_jax.sparse as mxs

    steps = (problem.quick_steps or problem.steps) if steps is None else steps
    every = problem.eval_every if eval_every is None else eval_every
    if steps % every:
        raise ValueError(f"steps {steps} must be a multiple of eval_every {every}")
    splits = problem.data()
    train, val, test = (jax.tree.map(jnp.asarray, s) for s in splits)
    n_train = jax.tree.leaves(train)[0].shape[0]
    if sparse and problem.tables:
        vg = mxs.value_and_grad(problem.loss, tables=problem.tables)
    else:
        vg = jax.value_and_grad(problem.loss)

    def run(lr: jax.Array, seed: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
        params = problem.init(k_init)
        opt = make_opt(lr)
        state = opt.init(params)

        def step(carry: Any, k: jax.Array) -> tuple[Any, jax.Array]:
            params, state = carry
            idx = jax.random.randint(k, (problem.batch_size,), 0, n_train)
            batch = jax.tree.map(lambda a: a[idx], train)
            loss, grads = vg(params, batch)
            updates, state = opt.update(grads, state, params)
            return (optax.apply_updates(params, updates), state), loss

        def chunk(carry: Any, keys: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
            carry, losses = jax.lax.scan(step, carry, keys)
            p = carry[0]
            return carry, (losses.mean(), problem.metric(p, val), problem.metric(p, test))

        keys = jax.random.split(k_data, steps).reshape(steps // every, every, -1)
        _, (tl, v, t) = jax.lax.scan(chunk, (params, state), keys)
        return tl, v, t

    lr_grid, seed_grid = np.meshgrid(np.asarray(lrs, np.float32), np.asarray(seeds, np.uint32), indexing="ij")
    args = (jnp.asarray(lr_grid.ravel()), jnp.asarray(seed_grid.ravel()))
    t0, c0 = time.perf_counter(), time.process_time()
    compiled = jax.jit(jax.vmap(run)).lower(*args).compile(compiler_options=compiler_options)
    t1, c1 = time.perf_counter(), time.process_time()
    out = jax.block_until_ready(compiled(*args))
    t2, c2 = time.perf_counter(), time.process_time()
    shape = (len(lrs), len(seeds), steps // every)
    res = GridResult(
        {k: np.asarray(a).reshape(shape) for k, a in zip(("train_loss", "val", "test"), out, strict=True)}
    )
    res["compile_s"], res["run_s"] = t1 - t0, t2 - t1
    res["compile_cpu_s"], res["run_cpu_s"] = c1 - c0, c2 - c1  # CPU time of all threads
    return res


def _main(argv: Sequence[str] | None = None) -> None:
    """``python -m mxopt_jax.compare.problems._harness [NAME ...] [--sgd] [--opt-level N]``: cost and target check per problem.

    Trains 7 rates (1e-4 .. 0.1, half a decade apart) x 5 seeds of ``optax.adam`` (``--sgd``: ``optax.sgd``
    with momentum 0.9, rates 1e-3 .. 1) for the quick budget of each problem; prints the compile and run
    time (wall and CPU), and per rate the final validation metric and the steps at which each seed first
    reached the target (``-`` where it did not).
    """
    import argparse

    from . import PROBLEMS

    parser = argparse.ArgumentParser(prog="python -m mxopt_jax.compare.problems._harness")
    parser.add_argument("names", nargs="*", default=list(PROBLEMS))
    parser.add_argument("--sgd", action="store_true")
    parser.add_argument("--opt-level", type=int, default=None, help="XLA's xla_backend_optimization_level")
    args = parser.parse_args(argv)
    options = None if args.opt_level is None else {"xla_backend_optimization_level": args.opt_level}
    if args.sgd:
        lrs, make, label = np.logspace(-3, 0, 7), lambda lr: optax.sgd(lr, momentum=0.9), "optax.sgd(m=0.9)"
    else:
        lrs, make, label = np.logspace(-4, -1, 7), optax.adam, "optax.adam"
    for name in args.names:
        p = PROBLEMS[name]()
        r = train_grid(p, make, lrs, range(5), compiler_options=options)
        print(
            f"{name}: {label}, {len(lrs)} rates x 5 seeds x {p.quick_steps} steps: compile {r['compile_s']:.1f} s "
            f"(CPU {r['compile_cpu_s']:.1f} s), run {r['run_s']:.2f} s (CPU {r['run_cpu_s']:.2f} s)"
        )
        for g, lr in enumerate(lrs):
            v = r["val"][g]
            hit = v <= p.target
            reach = [str((int(np.argmax(h)) + 1) * p.eval_every) if h.any() else "-" for h in hit]
            print(
                f"  lr {lr:8.2e}: final val {p.metric_name} {v[:, -1].mean():.4g} +- {v[:, -1].std():.2g}, "
                f"test {r['test'][g][:, -1].mean():.4g}; steps to target {p.target:g}: {' '.join(reach)}"
            )


if __name__ == "__main__":
    _main()
