"""The study engine: many training runs as one compiled program (a driver, in the library's sense).

For one problem (:class:`~mxopt_jax.compare.problems.base.Problem`) and a group of contenders
(:class:`~mxopt_jax.compare.contenders.Contender`), :func:`compile_group` builds **one** XLA program that trains
every ``(learning rate, seed)`` pair at once: a run is a ``lax.scan`` over evaluation intervals of a
``lax.scan`` over steps, ``jax.vmap``-ed over the flattened ``(rate, seed)`` axis, and the contenders of the
group are branches of one ``lax.switch`` (the index picks one contender per call, so each call runs only that
contender and its time is its own; one program for a family compiles in well under half the time of one
program each). Learning rates are traced inputs: any grid of the same size, and any seeds, run through the same
compiled program without recompiling.

The ``(rate, seed)`` axis is sharded over every device (``jax.sharding``; on CPU, start the process with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` to get N host devices, which the command line does for
you), so the same study runs on one CPU, a GPU or many devices unchanged.

What a run does (every contender sees exactly the same data, initializations and mini-batches for a seed):

1. ``key = PRNGKey(seed)``; ``init_key, batch_key = split(key)``; ``params = problem.init(init_key)``;
   ``tx = contender.make(lr, key)``; ``state = tx.init(params)``.
2. Step ``i`` draws ``batch_size`` row indices uniformly with replacement from the training split (from
   ``batch_key``), differentiates ``problem.loss`` (row-sparse through :func:`mxopt_jax.sparse.value_and_grad`
   for a contender that takes row-sparse gradients on a problem with embedding tables), and applies
   ``tx.update``.
3. After every ``eval_every`` steps it records the mean mini-batch loss of the interval and
   ``problem.metric`` on the validation and the test splits.

Nothing here selects or reports: that is :mod:`mxopt_jax.compare.protocol` and :mod:`mxopt_jax.compare.report`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import sparse as _sparse
from .contenders import Contender
from .problems.base import Problem
from .records import Records

__all__ = ["CompiledGroup", "compile_group", "run_one", "single_run", "steps_to_target", "train_run"]


def _grad_fn(problem: Problem, contender: Contender) -> Callable[..., Any]:
    if problem.tables and contender.row_sparse:
        return _sparse.value_and_grad(problem.loss, tables=problem.tables)
    return jax.value_and_grad(problem.loss)


def train_run(
    problem: Problem,
    contender: Contender,
    lr: Any,
    key: jax.Array,
    data: Any,
    steps: int,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One training run (traceable): returns ``(train_loss, val, test)``, each of shape ``(steps // eval_every,)``.

    ``data`` is the problem's :class:`~mxopt_jax.compare.problems.base.Splits` as JAX arrays. This is the
    unbatched definition the engine vmaps; the tests hold the vmapped program equal to it.
    """
    train, val, test = data
    n_train = jax.tree.leaves(train)[0].shape[0]
    init_key, batch_key = jax.random.split(key)
    params = problem.init(init_key)
    tx = contender.factory(bool(problem.tables))(lr, key)
    state = tx.init(params)
    grad_fn = _grad_fn(problem, contender)
    every = problem.eval_every
    n_evals = steps // every

    def step(carry, k):
        p, s = carry
        idx = jax.random.randint(k, (problem.batch_size,), 0, n_train)
        batch = jax.tree.map(lambda a: a[idx], train)
        loss, grads = grad_fn(p, batch)
        updates, s = tx.update(grads, s, p)
        return (optax.apply_updates(p, updates), s), loss

    def interval(carry, keys):
        carry, losses = jax.lax.scan(step, carry, keys)
        p = carry[0]
        return carry, (jnp.mean(losses), problem.metric(p, val), problem.metric(p, test))

    keys = jax.random.split(batch_key, n_evals * every).reshape(n_evals, every, -1)
    _, (train_loss, val_m, test_m) = jax.lax.scan(interval, (params, state), keys)
    return train_loss, val_m, test_m


def steps_to_target(val: np.ndarray, eval_steps: np.ndarray, target: float) -> np.ndarray:
    """First evaluation step whose validation metric is ``<= target`` (``inf`` if none), over the last axis."""
    val = np.asarray(val, dtype=np.float64)
    hit = np.isfinite(val) & (val <= target)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), np.asarray(eval_steps, dtype=np.float64)[first], np.inf)


def _mesh(devices: Sequence[jax.Device] | None) -> jax.sharding.Mesh:
    devs = list(jax.devices() if devices is None else devices)
    return jax.sharding.Mesh(np.array(devs), ("runs",))


@dataclasses.dataclass
class CompiledGroup:
    """One compiled program: a group of contenders on one problem, for ``grid_size`` rates x ``n_seeds`` seeds.

    Call :meth:`run` with a contender's index and its grid (any ``grid_size`` rates) and seeds.
    """

    problem: Problem
    contenders: list[Contender]
    grid_size: int
    n_seeds: int
    steps: int
    compiled: Any
    compile_s: float
    name: str
    mesh: jax.sharding.Mesh
    data: Any

    @property
    def n_devices(self) -> int:
        return int(self.mesh.devices.size)

    def run(self, index: int, lrs: Sequence[float], seeds: Sequence[int]) -> Records:
        """Run contender ``index`` on every ``(lr, seed)`` pair; returns its :class:`Records`."""
        lrs = np.asarray(lrs, dtype=np.float64)
        seeds = np.asarray(seeds, dtype=np.int64)
        if lrs.shape != (self.grid_size,) or seeds.shape != (self.n_seeds,):
            raise ValueError(
                f"program {self.name!r} was compiled for {self.grid_size} rates x {self.n_seeds} seeds, got "
                f"{lrs.shape[0] if lrs.ndim else lrs} rates x {seeds.shape[0] if seeds.ndim else seeds} seeds"
            )
        flat_lr, flat_key = _flatten(lrs.astype(np.float32), seeds, self.n_devices)
        sharded = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec("runs"))
        flat_lr = jax.device_put(flat_lr, sharded)
        flat_key = jax.device_put(flat_key, sharded)
        t0 = time.perf_counter()
        out = jax.block_until_ready(self.compiled(np.int32(index), flat_lr, flat_key, self.data))
        run_s = time.perf_counter() - t0
        n = lrs.size * seeds.size
        train_loss, val, test = (np.asarray(a)[:n].reshape(lrs.size, seeds.size, -1) for a in out)
        every = self.problem.eval_every
        eval_steps = every * np.arange(1, self.steps // every + 1)
        return Records(
            contender=self.contenders[index].name,
            problem=self.problem.name,
            lrs=lrs,
            seeds=seeds,
            eval_steps=eval_steps,
            train_loss=train_loss.astype(np.float64),
            val=val.astype(np.float64),
            test=test.astype(np.float64),
            steps_to_target=steps_to_target(val, eval_steps, self.problem.target),
            compile_s=self.compile_s,
            run_s=run_s,
            program=self.name,
            devices=self.n_devices,
        )


def _flatten(lrs: np.ndarray, seeds: np.ndarray, n_devices: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(rate, seed)`` grid as one run axis (rate-major), padded to a multiple of the device count."""
    flat_lr = np.repeat(lrs, seeds.size)
    keys = np.stack([np.asarray(jax.random.PRNGKey(int(s))) for s in seeds])
    flat_key = np.tile(keys, (lrs.size, 1))
    pad = (-flat_lr.size) % n_devices
    if pad:  # padding runs repeat the last one; their results are dropped
        flat_lr = np.concatenate([flat_lr, np.repeat(flat_lr[-1:], pad)])
        flat_key = np.concatenate([flat_key, np.repeat(flat_key[-1:], pad, axis=0)])
    return flat_lr, flat_key


def compile_group(
    problem: Problem,
    contenders: Sequence[Contender],
    grid_size: int,
    n_seeds: int,
    steps: int | None = None,
    devices: Sequence[jax.Device] | None = None,
    name: str = "",
) -> CompiledGroup:
    """Compile one program that trains any of ``contenders`` on ``grid_size x n_seeds`` runs of ``problem``.

    ``steps`` defaults to ``problem.steps`` (a multiple of ``problem.eval_every``). The program is compiled
    ahead of time (``jax.jit(...).lower(...).compile()``), once: rates and seeds are inputs.
    """
    contenders = list(contenders)
    if not contenders:
        raise ValueError("compile_group: no contenders")
    steps = problem.steps if steps is None else steps
    if not isinstance(steps, int) or steps < problem.eval_every or steps % problem.eval_every:
        raise ValueError(
            f"steps must be a positive multiple of problem {problem.name!r}'s eval_every ({problem.eval_every}), "
            f"got {steps!r}"
        )
    mesh = _mesh(devices)
    n_dev = int(mesh.devices.size)
    n_runs = grid_size * n_seeds
    n_runs += (-n_runs) % n_dev
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    sharded = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("runs"))
    data = jax.device_put(jax.tree.map(jnp.asarray, tuple(problem.data())), replicated)

    def branch(c: Contender) -> Callable[..., Any]:
        def runs(lrs, keys, data):
            return jax.vmap(lambda lr, k: train_run(problem, c, lr, k, data, steps))(lrs, keys)

        return runs

    branches = [branch(c) for c in contenders]

    def program(index, lrs, keys, data):
        if len(branches) == 1:
            return branches[0](lrs, keys, data)
        return jax.lax.switch(index, branches, lrs, keys, data)

    jitted = jax.jit(
        program,
        in_shardings=(replicated, sharded, sharded, replicated),
        out_shardings=sharded,
    )
    lr_spec = jax.ShapeDtypeStruct((n_runs,), jnp.float32, sharding=sharded)
    key_spec = jax.ShapeDtypeStruct((n_runs, 2), jnp.uint32, sharding=sharded)
    t0 = time.perf_counter()
    compiled = jitted.lower(np.int32(0), lr_spec, key_spec, data).compile()
    compile_s = time.perf_counter() - t0
    return CompiledGroup(
        problem=problem,
        contenders=contenders,
        grid_size=grid_size,
        n_seeds=n_seeds,
        steps=steps,
        compiled=compiled,
        compile_s=compile_s,
        name=name or "+".join(c.name for c in contenders),
        mesh=mesh,
        data=data,
    )


def single_run(problem: Problem, contender: Contender, steps: int | None = None) -> Callable[..., Any]:
    """A jitted single run ``(lr, seed) -> (train_loss, val, test)`` as NumPy: the reference for the engine.

    Compiled once per call of this function; the rate and the seed are traced, so call the result for as many
    as you like.
    """
    steps = problem.steps if steps is None else steps
    data = jax.tree.map(jnp.asarray, tuple(problem.data()))
    fn = jax.jit(lambda lr, key: train_run(problem, contender, lr, key, data, steps))

    def run(lr: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = fn(jnp.float32(lr), jax.random.PRNGKey(seed))
        return tuple(np.asarray(a, dtype=np.float64) for a in out)  # type: ignore[return-value]

    return run


def run_one(
    problem: Problem, contender: Contender, lr: float, seed: int, steps: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run made alone (jitted, unbatched): ``(train_loss, val, test)``; see :func:`single_run`."""
    return single_run(problem, contender, steps)(lr, seed)
