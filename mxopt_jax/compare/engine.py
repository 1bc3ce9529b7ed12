"""The study engine: many training runs as one compiled program (a driver, in the library's sense).

For one problem (:class:`~mxopt_jax.compare.problems.base.Problem`) and a group of contenders
(:class:`~mxopt_jax.compare.contenders.Contender`), :func:`compile_group` builds **one** XLA program that trains
a batch of runs at once: a run is a ``lax.scan`` over evaluation intervals of a ``lax.scan`` over steps,
``jax.vmap``-ed over the run axis, and the contenders of the group are branches of a ``lax.switch`` (the index
picks one contender per call, so each call runs only that contender and its time is its own; one program for
a family compiles in well under half the time of one program each). The switch holds only each interval's
training steps (:func:`group_run`): the loop over intervals, the evaluations on the validation and test splits,
the divergence checks and the trace are in the program once, whatever the number of contenders, the
contenders' optimizer states sharing buffers (one per dtype) between intervals. A run's configuration (its learning rate
and every other hyperparameter the study tunes) and its seed are traced inputs: any grid, any random search and
any seeds run through the same compiled program without recompiling. On the CPU the program is compiled with
:data:`CPU_COMPILER_OPTIONS` (LLVM's optimization level 1: a fifth to two thirds less compile time, calls as
fast; ``compile_group(compiler_options={})`` for XLA's defaults).

The run axis is sharded over every device (``jax.sharding``; on CPU, start the process with
``XLA_FLAGS=--xla_force_host_platform_device_count=N`` to get N host devices, which the command line does for
you), so the same study runs on one CPU, a GPU or many devices unchanged, and on the devices of many processes
joined by ``jax.distributed`` (:mod:`mxopt_jax.compare.distributed`): each process places its own shards of the
inputs and every process gets the whole results back, so all of them take the same decisions.

What a run does (every contender sees exactly the same data, initializations and mini-batches for a seed):

1. ``key = PRNGKey(seed)``; ``init_key, batch_key, opt_key = split(key, 3)``: three independent streams, for
   the initialization, the mini-batches and the optimizer's own randomness (SGLD's noise);
   ``params = problem.init(init_key)``; the model's own state, if the problem has one, is
   ``problem.init_state(init_key)``; ``tx = contender.make(hp, opt_key, steps)``; ``state = tx.init(params)``.
   ``hp`` holds the configuration: the learning rate (turned into a schedule when the study has one, its peak
   the configuration's rate) and every tuned hyperparameter as traced scalars, the others at their defaults.
2. Step ``i`` draws ``batch_size`` row indices uniformly with replacement from the training split
   (``jax.random.randint`` with the ``i``-th key of ``split(batch_key, steps)``; an evaluation interval's
   draws are made in one call, the same values), differentiates ``problem.loss`` (row-sparse through :func:`mxopt_jax.sparse.value_and_grad`
   for a contender that takes row-sparse gradients on a problem with embedding tables), and applies
   ``tx.update``. A problem with model state (:class:`~mxopt_jax.compare.problems.base.Problem`'s
   ``init_state``: BatchNorm's running statistics) returns its new state with the loss; the engine carries
   it next to the parameters, differentiates the parameters only, and never hands the state to the
   optimizer.
3. After every ``eval_every`` steps it records the mean mini-batch loss of the interval and
   ``problem.metric`` on the validation and the test splits (with the model's state as it stands; the test
   split only where the call asks for it, ``test=``: at every evaluation point, at none or at the final one
   only; elsewhere it is NaN), and whether the run is still alive: a run whose training loss, any parameter
   or any value of the model's state has become non-finite has **diverged**, and its metrics are NaN from
   that point on, whatever the problem's metric returns (NaN logits still give an ``argmax``). A problem with a
   ``trace`` (:class:`~mxopt_jax.compare.problems.base.Problem`) has ``problem.trace(params)`` recorded at the
   same points, as it stands (:attr:`Records.trace <mxopt_jax.compare.records.Records.trace>`).

Nothing here selects or reports: that is :mod:`mxopt_jax.compare.selection` and :mod:`mxopt_jax.compare.report`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import sparse as _sparse
from .contenders import Contender
from .direction import LOWER, Direction
from .problems.base import Problem
from .records import Records

__all__ = [
    "CALL_RUNS",
    "CPU_CALL_BYTES",
    "TEST_CODES",
    "CompiledGroup",
    "Test",
    "Schedule",
    "call_capacity",
    "compile_group",
    "program_capacity",
    "group_run",
    "run_bytes",
    "run_one",
    "single_run",
    "steps_to_target",
    "train_run",
]

#: A learning-rate schedule the engine applies to every contender: ``(peak, steps) -> learning_rate``, where
#: ``peak`` is the configuration's (traced) rate and ``steps`` the run's budget; it returns a traced scalar (a
#: constant rate) or an optax-style schedule ``count -> rate``. ``None`` means a constant rate.
Schedule = Callable[[Any, int], Any]

#: XLA options for the study's programs on the CPU: LLVM's optimization level 1 instead of XLA's default. Measured
#: on the quick preset's programs (2 host devices, 36 runs a call; benchmarks/RESULTS.md, "The study's own
#: time"): compilation 20 to 68 % shorter (digits_mlp's SGD family 26.7 -> 8.6 CPU s, char_lm's adaptive family
#: 25.2 -> 16.1, mnist1d_cnn's Adam family 33.1 -> 22.4; a whole study's programs 21 %) while a call runs as
#: fast. The code differs, so a few values round differently in their last place (the small study of the tests:
#: 0.05282027 against 0.05282026; ``tests/app/test_study.py`` holds the records bit for bit under XLA's defaults
#: and within float32 rounding under these); level 0 is not an option (a call 3x slower). Passed through JAX's
#: public ``Lowered.compile(compiler_options)``; an XLA that did not know the option would refuse it, never
#: ignore it.
CPU_COMPILER_OPTIONS: Mapping[str, Any] = {"xla_backend_optimization_level": 1}


def _grad_fn(problem: Problem, contender: Contender) -> Callable[..., Any]:
    """``(params, model_state, batch) -> ((loss, new_model_state), grads)``: gradients with respect to the
    parameters only (the model's state is an auxiliary output, never differentiated)."""
    if problem.tables and contender.row_sparse:
        return _sparse.value_and_grad(problem.train_loss, tables=problem.tables, has_aux=True)
    return jax.value_and_grad(problem.train_loss, has_aux=True)


def _all_finite(tree: Any) -> jax.Array:
    leaves = [
        jnp.all(jnp.isfinite(leaf))
        for leaf in jax.tree.leaves(tree)
        if jnp.issubdtype(leaf.dtype, jnp.inexact)
    ]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.bool_(True)


#: What ``test=`` may be (:meth:`CompiledGroup.run`, :func:`train_run`): ``True``, the test split evaluated at
#: every evaluation point; ``False``, never (NaN throughout); ``"final"``, at the final evaluation point only
#: (NaN at the others). In a compiled program it is a traced input, one of :data:`TEST_CODES`.
Test = bool | Literal["final"]

#: The code of each ``test=`` value, as the compiled programs take it (a replicated ``int32`` input).
TEST_CODES: Mapping[Any, int] = {False: 0, True: 1, "final": 2}


def _test_code(test: object) -> int:
    """``test`` (``True``, ``False`` or ``"final"``) as its code in :data:`TEST_CODES`; refused otherwise."""
    if isinstance(test, bool | np.bool_):
        return int(bool(test))
    if isinstance(test, str) and test == "final":
        return TEST_CODES["final"]
    raise ValueError(
        "test must be True (the test split evaluated at every evaluation point), False (never) or 'final' "
        f"(at the final evaluation point only), got {test!r}"
    )


def _test_now(test: Test | jax.Array, e: jax.Array, last: int) -> bool | jax.Array:
    """Whether the test split is evaluated at evaluation point ``e`` (traced) of ``last + 1``: a Python bool
    where ``test`` is one, else a traced bool (``test`` a code of :data:`TEST_CODES` or a traced bool)."""
    if isinstance(test, bool | np.bool_):
        return bool(test)
    if isinstance(test, str):
        _test_code(test)  # "final", or refused
        return e == last
    test = jnp.asarray(test)
    if test.dtype == jnp.bool_:
        return test
    return (test == TEST_CODES[True]) | ((test == TEST_CODES["final"]) & (e == last))


def _observe(
    problem: Problem,
    p: Any,
    m: Any,
    alive: jax.Array,
    losses: jax.Array,
    val: Any,
    test_split: Any,
    with_test: bool | jax.Array,
) -> tuple[jax.Array, jax.Array, tuple[Any, ...]]:
    """What a run records at the end of an evaluation interval, given its parameters ``p``, model state ``m``
    and the interval's mini-batch ``losses``: ``(mean_loss, alive, (mean_loss, val, test, alive, trace))``.
    ``alive`` turns False for good once the loss, a parameter or the model's state is non-finite, and the
    metrics are NaN from then on; the test split is evaluated only where ``with_test`` (a Python bool, or a
    traced one through ``lax.cond``)."""
    mean_loss = jnp.mean(losses)
    alive = alive & jnp.isfinite(mean_loss) & _all_finite(p) & _all_finite(m)
    nan = jnp.float32(jnp.nan)
    v = jnp.where(alive, problem.evaluate(p, m, val), nan)
    if isinstance(with_test, bool):
        t = jnp.where(alive, problem.evaluate(p, m, test_split), nan) if with_test else nan
    else:
        t = jax.lax.cond(
            with_test,
            lambda: jnp.where(alive, problem.evaluate(p, m, test_split), nan).astype(jnp.float32),
            lambda: nan,
        )
    traced = None if problem.trace is None else jnp.asarray(problem.trace(p))
    return mean_loss, alive, (mean_loss, v, t, alive, traced)


#: An evaluation interval's training steps: ``(params, opt_state, model_state, rows) -> (params, opt_state,
#: model_state, losses)``, ``rows`` the interval's mini-batches as row indices ``(eval_every, batch_size)``.
Steps = Callable[[Any, Any, Any, jax.Array], tuple[Any, Any, Any, jax.Array]]


def _steps(problem: Problem, contender: Contender, tx: optax.GradientTransformation, train: Any) -> Steps:
    """The training step, written once (every run of the engine takes it, :func:`train_run` and
    :func:`group_run` alike): the mini-batch ``train[rows[i]]``, the loss and the gradient of the parameters
    (row-sparse where the contender takes it on a problem with tables), ``tx.update``, the update applied; a
    ``lax.scan`` over an interval's rows."""
    grad_fn = _grad_fn(problem, contender)

    def step(carry: tuple[Any, Any, Any], rows: jax.Array) -> tuple[tuple[Any, Any, Any], jax.Array]:
        p, s, m = carry
        batch = jax.tree.map(lambda a: a[rows], train)
        (loss, m), grads = grad_fn(p, m, batch)
        updates, s = tx.update(grads, s, p)
        return (optax.apply_updates(p, updates), s, m), loss

    def steps(p: Any, s: Any, m: Any, rows: jax.Array) -> tuple[Any, Any, Any, jax.Array]:
        (p, s, m), losses = jax.lax.scan(step, (p, s, m), rows)
        return p, s, m, losses

    return steps


def _draw(keys: jax.Array, batch_size: int, n_train: int) -> jax.Array:
    """The mini-batches of an evaluation interval, as row indices ``(len(keys), batch_size)``: step ``i``'s
    rows are ``jax.random.randint(keys[i], (batch_size,), 0, n_train)``, drawn for the whole interval in one
    (vmapped) call rather than one per step; the same values, bit for bit (JAX's hash of a key does not depend
    on what else is drawn beside it)."""
    return jax.vmap(lambda k: jax.random.randint(k, (batch_size,), 0, n_train))(keys)


def _run(
    problem: Problem,
    key: jax.Array,
    data: Any,
    steps: int,
    test: Test | jax.Array,
    optimizer: Callable[[jax.Array, Any], tuple[Any, Steps]],
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array | None]:
    """A run, written once (:func:`train_run` and :func:`group_run` differ only in ``optimizer``): the seed's
    three streams, the initialization, then ``steps // eval_every`` evaluation intervals, each the interval's
    mini-batches drawn (:func:`_draw`), its training steps and what is recorded (:func:`_observe`).
    ``optimizer(opt_key, params) -> (opt_state, steps)`` makes the optimizer's state and an interval's training
    steps (:data:`Steps`)."""
    train, val, test_split = data
    n_train = jax.tree.leaves(train)[0].shape[0]
    init_key, batch_key, opt_key = jax.random.split(key, 3)
    params = problem.init(init_key)
    model_state = problem.initial_state(init_key)  # () without one; never seen by the optimizer
    opt_state, interval_steps = optimizer(opt_key, params)
    every = problem.eval_every
    n_evals = steps // every

    def interval(carry, xs):
        (p, s, m), alive = carry
        e, keys = xs
        rows = _draw(keys, problem.batch_size, n_train)
        p, s, m, losses = interval_steps(p, s, m, rows)
        with_test = _test_now(test, e, n_evals - 1)
        _, alive, observed = _observe(problem, p, m, alive, losses, val, test_split, with_test)
        return ((p, s, m), alive), observed

    keys = jax.random.split(batch_key, n_evals * every).reshape(n_evals, every, -1)
    carry = ((params, opt_state, model_state), jnp.bool_(True))
    _, (train_loss, val_m, test_m, alive, trace) = jax.lax.scan(
        interval, carry, (jnp.arange(n_evals, dtype=jnp.int32), keys)
    )
    return train_loss, val_m, test_m, alive, trace


def train_run(
    problem: Problem,
    contender: Contender,
    hp: Mapping[str, Any],
    key: jax.Array,
    data: Any,
    steps: int,
    schedule: Schedule | None = None,
    test: Test | jax.Array = True,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array | None]:
    """One training run (traceable): ``(train_loss, val, test, alive, trace)``, the first four of shape
    ``(steps // eval_every,)``; ``trace`` is ``problem.trace(params)`` at each evaluation point, stacked
    (``(steps // eval_every, ...)``), or ``None`` for a problem without a trace.

    ``hp`` maps the contender's hyperparameters to their values (``"learning_rate"`` always; missing ones take
    their defaults); ``data`` is the problem's :class:`~mxopt_jax.compare.problems.base.Splits` as JAX arrays.
    ``alive[e]`` is False once the run has diverged (a non-finite training loss, parameter or model state); ``val`` and
    ``test`` are NaN from there on. ``test`` (:data:`Test`: ``True``, ``False`` or ``"final"``; or traced, a
    code of :data:`TEST_CODES` or a bool, the same for every run of a batch) says where the test split is
    evaluated: at every evaluation point, at none (NaN throughout) or at the final one only (NaN before it);
    elsewhere its evaluation is skipped (a ``lax.cond``), so the runs that report nothing on the test split
    (selection) do not pay for it. This is the unbatched definition the engine vmaps: the optimizer alone,
    without :func:`group_run`'s switch and shared state buffers (the run itself, :func:`_run`, and the training
    step, :func:`_steps`, are written once for both); the tests hold the vmapped program equal to it.
    """
    values = {**contender.defaults, **hp}
    if schedule is not None:
        values["learning_rate"] = schedule(values["learning_rate"], steps)

    def optimizer(opt_key: jax.Array, params: Any) -> tuple[Any, Steps]:
        tx = contender.factory(bool(problem.tables))(values, opt_key, steps)
        return tx.init(params), _steps(problem, contender, tx, data[0])

    return _run(problem, key, data, steps, test, optimizer)


class _Layout:
    """How one contender's optimizer state sits in the group's shared state buffers: its leaves, in order, each
    a slice of the one-dimensional buffer of its dtype (the contenders of a program share one buffer per
    dtype, as long as the largest of them needs)."""

    def __init__(self, abstract: Any) -> None:
        leaves, self.treedef = jax.tree.flatten(abstract)
        self.leaves: list[tuple[str, tuple[int, ...], int]] = []  # (dtype, shape, offset in its buffer)
        self.sizes: dict[str, int] = {}
        for leaf in leaves:
            dtype, shape = np.dtype(leaf.dtype).name, tuple(leaf.shape)
            offset = self.sizes.get(dtype, 0)
            self.leaves.append((dtype, shape, offset))
            self.sizes[dtype] = offset + int(np.prod(shape, dtype=np.int64))

    def flatten(self, state: Any, sizes: Mapping[str, int]) -> dict[str, jax.Array]:
        """``state`` as the shared buffers (``sizes``: each dtype's length; this contender's values first, the
        rest zeros). Pure data movement: the values are not changed."""
        parts: dict[str, list[jax.Array]] = {d: [] for d in sizes}
        for leaf, (dtype, _, _) in zip(jax.tree.leaves(state), self.leaves, strict=True):
            parts[dtype].append(jnp.ravel(leaf))
        out = {}
        for dtype, size in sizes.items():
            used = self.sizes.get(dtype, 0)
            pieces = parts[dtype] + ([jnp.zeros((size - used,), dtype)] if size > used else [])
            out[dtype] = jnp.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        return out

    def unflatten(self, buffers: Mapping[str, jax.Array]) -> Any:
        """The state :meth:`flatten` stored in ``buffers``."""
        leaves = [
            jax.lax.slice(buffers[dtype], (offset,), (offset + int(np.prod(shape, dtype=np.int64)),)).reshape(
                shape
            )
            for dtype, shape, offset in self.leaves
        ]
        return jax.tree.unflatten(self.treedef, leaves)


def group_run(
    problem: Problem,
    contenders: Sequence[Contender],
    tuned: Mapping[str, Sequence[str]],
    index: jax.Array | int,
    row: jax.Array,
    key: jax.Array,
    data: Any,
    steps: int,
    schedule: Schedule | None = None,
    test: Test | jax.Array = True,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array | None]:
    """One run of contender ``contenders[index]`` (traceable), exactly :func:`train_run`'s, written so that a
    program holding several contenders holds the problem's evaluation (and the divergence checks, the trace)
    once, not once per contender: the loop over evaluation intervals is shared, and only each interval's
    training steps are a ``lax.switch`` over the contenders (their optimizer states kept in shared buffers,
    one per dtype; :class:`_Layout`). ``row`` holds the tuned values in the order of ``tuned[name]``; ``test``
    is as in :func:`train_run`.

    The run and its training step are :func:`train_run`'s own (:func:`_run`, :func:`_steps`), operation for
    operation (the state buffers only move values); the tests hold the two equal.
    """
    train = data[0]

    def optimizer(opt_key: jax.Array, params: Any) -> tuple[Any, Steps]:
        def make_tx(c: Contender) -> optax.GradientTransformation:
            values = {**c.defaults, **{n: row[j] for j, n in enumerate(tuned[c.name])}}
            if schedule is not None:
                values["learning_rate"] = schedule(values["learning_rate"], steps)
            return c.factory(bool(problem.tables))(values, opt_key, steps)

        layouts = [_Layout(jax.eval_shape(lambda c=c: make_tx(c).init(params))) for c in contenders]
        sizes: dict[str, int] = {}
        for lay in layouts:
            for dtype, size in lay.sizes.items():
                sizes[dtype] = max(sizes.get(dtype, 0), size)

        def init_branch(i: int) -> Callable[[], dict[str, jax.Array]]:
            return lambda: layouts[i].flatten(make_tx(contenders[i]).init(params), sizes)

        def train_branch(i: int) -> Steps:
            c, lay = contenders[i], layouts[i]

            def run_interval(p, buffers, m, rows):
                p, s, m, losses = _steps(problem, c, make_tx(c), train)(p, lay.unflatten(buffers), m, rows)
                return p, lay.flatten(s, sizes), m, losses

            return run_interval

        def pick(branches: list[Callable[..., Any]], *operands: Any) -> Any:
            if len(branches) == 1:
                return branches[0](*operands)
            return jax.lax.switch(index, branches, *operands)

        buffers = pick([init_branch(i) for i in range(len(contenders))])
        trains = [train_branch(i) for i in range(len(contenders))]
        return buffers, lambda p, b, m, rows: pick(trains, p, b, m, rows)

    return _run(problem, key, data, steps, test, optimizer)


def steps_to_target(
    val: np.ndarray, eval_steps: np.ndarray, target: float, direction: Direction = LOWER
) -> np.ndarray:
    """First evaluation step whose validation metric reached ``target`` (``inf`` if none), over the last axis.

    ``direction`` is the problem's :attr:`~mxopt_jax.compare.problems.base.Problem.direction`, which says
    what reaching means (:meth:`~mxopt_jax.compare.direction.Direction.meets`: ``val <= target`` where lower
    is better, the default, ``val >= target`` where higher is).
    """
    if not isinstance(direction, Direction):
        raise TypeError(
            f"steps_to_target: `direction` must be a Direction (the problem's), got {type(direction).__name__}"
        )
    hit = direction.meets(val, target)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(axis=-1), np.asarray(eval_steps, dtype=np.float64)[first], np.inf)


def _diverged_at(alive: np.ndarray, eval_steps: np.ndarray) -> np.ndarray:
    dead = ~np.asarray(alive, bool)
    first = np.argmax(dead, axis=-1)
    return np.where(dead.any(axis=-1), np.asarray(eval_steps, np.float64)[first], np.inf)


def _mesh(devices: Sequence[jax.Device] | None) -> jax.sharding.Mesh:
    devs = list(jax.devices() if devices is None else devices)
    return jax.sharding.Mesh(np.array(devs), ("runs",))


def _to_device(host: np.ndarray, sharding: jax.sharding.Sharding) -> jax.Array:
    """A host array placed with ``sharding``, which may span the devices of several processes
    (``jax.distributed``): every process holds the whole host array and hands in the shards of its own devices
    (:func:`jax.make_array_from_callback`). Nothing here talks to the other processes, so it is safe in the
    study's background compile thread (``jax.device_put`` of a host array onto devices of several processes
    first checks, collectively, that every process holds the same value: a collective outside the main
    thread's order)."""
    host = np.asarray(host)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def _to_host(array: jax.Array) -> np.ndarray:
    """A (sharded) result as one host array, in every process: gathered from the devices of all processes
    (:func:`jax.experimental.multihost_utils.process_allgather`, a collective: every process calls it at the
    same point) when this process cannot address them all."""
    if array.is_fully_addressable:
        return np.asarray(array)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(array, tiled=True))


def _host_data(problem: Problem) -> Any:
    """The problem's splits as host arrays of the dtypes JAX computes in (``float64`` data becomes
    ``float32`` unless x64 is on, as ``jnp.asarray`` does)."""

    def canonical(a: Any) -> np.ndarray:
        a = np.asarray(a)
        return a.astype(jax.dtypes.canonicalize_dtype(a.dtype), copy=False)

    return jax.tree.map(canonical, tuple(problem.data()))


def _columns(configs: Mapping[str, Any] | Sequence[Mapping[str, float]]) -> dict[str, np.ndarray]:
    """Configurations as columns ``{name: (G,) float64}`` (a sequence of dicts or a dict of sequences)."""
    if isinstance(configs, Mapping):
        cols = {k: np.atleast_1d(np.asarray(v, np.float64)) for k, v in configs.items()}
    else:
        configs = list(configs)
        keys = list(dict.fromkeys(k for c in configs for k in c))
        if any(set(c) != set(keys) for c in configs):
            raise ValueError("every configuration must name the same hyperparameters")
        cols = {k: np.array([float(c[k]) for c in configs], np.float64) for k in keys}
    sizes = {v.shape for v in cols.values()}
    if len(sizes) != 1 or len(next(iter(sizes))) != 1:
        raise ValueError(f"configurations must be equally long 1-D columns, got shapes {sorted(sizes)}")
    return cols


@dataclasses.dataclass
class CompiledGroup:
    """One compiled program: a group of contenders on one problem, ``capacity`` runs per call.

    Call :meth:`run` with a contender's index, its configurations and seeds: every (configuration, seed) pair is
    one run; more pairs than ``capacity`` take several calls, fewer are padded. :meth:`run_many` runs several
    such requests (the independent studies' runs of one contender) through the same calls, packed one after
    another into the slots, and hands each its own :class:`Records`.
    """

    problem: Problem
    contenders: list[Contender]
    capacity: int
    tuned: dict[str, tuple[str, ...]]
    steps: int
    compiled: Any
    compile_s: float
    name: str
    mesh: jax.sharding.Mesh
    data: Any
    schedule: Schedule | None = None

    @property
    def n_devices(self) -> int:
        return int(self.mesh.devices.size)

    @property
    def platform(self) -> str:
        """The platform of the program's devices (``"cpu"``, ``"gpu"``, ``"tpu"``)."""
        return str(self.mesh.devices.flat[0].platform)

    @property
    def processes(self) -> int:
        """How many processes own the program's devices (``jax.distributed``: more than one)."""
        return len({int(d.process_index) for d in self.mesh.devices.flat})

    @property
    def eval_steps(self) -> np.ndarray:
        every = self.problem.eval_every
        return every * np.arange(1, self.steps // every + 1)

    def run(
        self,
        index: int,
        configs: Mapping[str, Any] | Sequence[Mapping[str, float]],
        seeds: Sequence[int] | np.ndarray,
        role: str = "selection",
        test: Test = True,
    ) -> Records:
        """Run contender ``index`` at every configuration x seed; returns its :class:`Records` (``role``).

        ``configs`` gives the tuned hyperparameters of each configuration (``{"learning_rate": rates, ...}`` or a
        list of ``{"learning_rate": rate, ...}``): exactly the names this program traces for that contender.
        ``test``: where the test split is evaluated, for every run of the call: ``True`` at every evaluation
        point, ``False`` at none, ``"final"`` at the final evaluation point only (:data:`Test`); where it is not,
        :attr:`Records.test` is NaN. A study's selection runs, which report nothing on it, skip it; runs that
        report only the final test metric take ``"final"`` (so selection runs and report runs can share a
        call: the selection never reads the test values). The other records do not depend on ``test``.
        """
        return self.run_many(index, [(configs, seeds, role)], test=test)[0]

    def run_many(
        self,
        index: int,
        requests: Sequence[
            tuple[Mapping[str, Any] | Sequence[Mapping[str, float]], Sequence[int] | np.ndarray, str]
        ],
        test: Test = True,
    ) -> list[Records]:
        """Run contender ``index`` for every request ``(configs, seeds, role)`` (each as :meth:`run`), all of them
        through the same calls: their runs are packed one after another into the program's slots, so the
        independent studies of a plan cost ``ceil(total runs / capacity)`` calls together rather than that many
        each. A run's result does not depend on which slot it ran in (the batching check measures it), so each
        request's records are those :meth:`run` would give; the calls' seconds are shared out by runs.

        ``test`` is as in :meth:`run`; it is one input of a call, so every request of one ``run_many`` shares it.
        """
        c = self.contenders[index]
        names = self.tuned[c.name]
        code = _test_code(test)
        if not requests:
            raise ValueError(f"program {self.name!r}: run_many needs at least one request")
        width = max(len(v) for v in self.tuned.values())
        prepared = []
        for configs, seeds, role in requests:
            cols = _columns(configs)
            if set(cols) != set(names):
                raise ValueError(
                    f"program {self.name!r} tunes {', '.join(names)} of {c.name!r}; the configurations give "
                    f"{', '.join(cols) or 'nothing'}"
                )
            seeds = np.asarray(seeds, np.int64).ravel()
            G, S = len(cols["learning_rate"]), len(seeds)
            if G == 0 or S == 0:
                raise ValueError(f"program {self.name!r}: need at least one configuration and one seed")
            hp = np.stack([np.repeat(cols[n], S) for n in names], axis=1).astype(
                np.float32
            )  # (G*S, K), rate-major
            hp = np.pad(hp, ((0, 0), (0, width - hp.shape[1])))
            keys = np.tile(np.stack([np.asarray(jax.random.PRNGKey(int(s))) for s in seeds]), (G, 1))
            prepared.append((cols, seeds, role, hp, keys))
        hp_all = np.concatenate([q[3] for q in prepared])
        keys_all = np.concatenate([q[4] for q in prepared])
        outs, run_s = self._call(index, hp_all, keys_all, code)
        n_all = len(hp_all)
        eval_steps = self.eval_steps
        out: list[Records] = []
        start = 0
        for cols, seeds, role, hp, _ in prepared:
            G, S = len(cols["learning_rate"]), len(seeds)
            rows = slice(start, start + len(hp))
            start += len(hp)
            train_loss, val, test_m, alive = (o[rows].reshape(G, S, -1) for o in outs[:4])
            trace = (
                None
                if outs[4] is None
                else outs[4][rows].reshape(G, S, *outs[4].shape[1:]).astype(np.float64)
            )
            out.append(
                Records(
                    contender=c.name,
                    problem=self.problem.name,
                    lrs=cols["learning_rate"],
                    seeds=seeds,
                    eval_steps=eval_steps,
                    train_loss=train_loss.astype(np.float64),
                    val=val.astype(np.float64),
                    test=test_m.astype(np.float64),
                    steps_to_target=steps_to_target(
                        val, eval_steps, self.problem.target, self.problem.direction
                    ),
                    diverged_at=_diverged_at(alive, eval_steps),
                    hparams={n: cols[n] for n in names if n != "learning_rate"},
                    role=role,
                    compile_s=self.compile_s,
                    run_s=run_s * len(hp) / n_all,
                    program=self.name,
                    devices=self.n_devices,
                    trace=trace,
                )
            )
        return out

    def _index(self, index: int) -> jax.Array:
        """The contender's index, replicated over the program's devices."""
        replicated = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec())
        return _to_device(np.asarray(index, np.int32), replicated)

    def _test_input(self, code: int) -> jax.Array:
        """The ``test`` input (a code of :data:`TEST_CODES`), replicated over the program's devices."""
        replicated = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec())
        return _to_device(np.asarray(code, np.int32), replicated)

    def _call(
        self, index: int, hp: np.ndarray, keys: np.ndarray, test: int = TEST_CODES[True]
    ) -> tuple[list[Any], float]:
        """Run the ``N`` rows of ``hp``/``keys`` in calls of ``capacity`` (the last one padded with copies of its
        last run, whose results are dropped), the test split evaluated as ``test`` (a code of
        :data:`TEST_CODES`) says; returns the outputs (``N`` rows each; a problem without a trace has ``None``
        for it) and the seconds spent."""
        n = len(hp)
        sharded = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec("runs"))
        parts: list[list[Any]] = []
        run_s = 0.0
        for start in range(0, n, self.capacity):
            h, k = hp[start : start + self.capacity], keys[start : start + self.capacity]
            pad = self.capacity - len(h)
            if pad:
                h = np.concatenate([h, np.repeat(h[-1:], pad, axis=0)])
                k = np.concatenate([k, np.repeat(k[-1:], pad, axis=0)])
            h_dev, k_dev = _to_device(h, sharded), _to_device(k, sharded)
            t0 = time.perf_counter()
            out = jax.block_until_ready(
                self.compiled(self._index(index), self._test_input(test), h_dev, k_dev, self.data)
            )
            run_s += time.perf_counter() - t0
            parts.append([None if a is None else _to_host(a)[: self.capacity - pad] for a in out])
        return [None if p[0] is None else np.concatenate(p, axis=0) for p in zip(*parts, strict=True)], run_s


def _tuned_names(
    contenders: Sequence[Contender], tuned: Sequence[str] | Mapping[str, Sequence[str]]
) -> dict[str, tuple[str, ...]]:
    out = {}
    for c in contenders:
        names = tuple(tuned.get(c.name, ("learning_rate",)) if isinstance(tuned, Mapping) else tuned)
        known = [h.name for h in c.hyperparameters]
        unknown = [n for n in names if n not in known]
        if unknown or "learning_rate" not in names:
            raise ValueError(
                f"contender {c.name!r}: tuned hyperparameters must include learning_rate and be among "
                f"{', '.join(known)}; got {', '.join(names)}"
            )
        out[c.name] = ("learning_rate", *(n for n in known if n in names and n != "learning_rate"))
    return out


#: Runs a call per device that keep a run's cost low, by platform: ``(smallest, largest)``. Measured on the CPU
#: (2-core AMD EPYC, 2 host devices; ``benchmarks/call_capacity.py``, benchmarks/RESULTS.md, 2026-12-07): from 5
#: runs a device up, a run of the quick preset's problems costs the same within 8 % until the runs' state
#: outgrows the caches (:data:`CPU_CALL_BYTES`); the tiniest, logreg, costs less a run the more a call holds
#: (its calls' fixed costs: 1.15x at 5 runs a device, 0.55x at 74, against 18). On a GPU or TPU not measured: a
#: call as large as the runs asked for, up to the largest.
CALL_RUNS: Mapping[str, tuple[int, int]] = {"cpu": (5, 256), "gpu": (1, 4096), "tpu": (1, 4096)}

#: On the CPU, the bytes of parameters, model state and optimizer state (:func:`run_bytes`) a call may hold per
#: device. Measured (benchmarks/RESULTS.md, 2026-12-07): a run costs the same within 8 % while its parameters
#: and Adam's state stay under about 5 MB a device, more past it (the recommender, 270 kB a run with Adam:
#: 1.13x at 27 runs a device, 1.46x at 37, 1.85x at 74, against 18; digits_mlp 1.15x at 74 a device, 8.5 MB);
#: :func:`run_bytes` counts the largest optimizer state of a program's contenders, so the budget is below that.
CPU_CALL_BYTES = 4 << 20


def run_bytes(problem: Problem, contenders: Sequence[Contender]) -> int:
    """The bytes one run of ``problem`` holds between steps: its parameters and model state, and the largest
    optimizer state among ``contenders`` (shapes only: nothing is computed or compiled); what
    :func:`call_capacity`'s ``run_bytes`` takes."""

    def size(tree: Any) -> int:
        return sum(
            int(np.prod(leaf.shape, dtype=np.int64)) * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree)
        )

    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    params = jax.eval_shape(problem.init, key)
    model = jax.eval_shape(problem.initial_state, key)

    def state(c: Contender) -> Any:
        make = c.factory(bool(problem.tables))
        return jax.eval_shape(lambda p, k: make(dict(c.defaults), k, problem.steps).init(p), params, key)

    return size(params) + size(model) + max((size(state(c)) for c in contenders), default=0)


def call_capacity(
    runs: int | Sequence[int], devices: int = 1, platform: str = "cpu", run_bytes: int | None = None
) -> int:
    """The capacity (runs a call, a multiple of ``devices``) for a program that will be asked for ``runs``
    runs at a time: the sizes of the requests it will run (each one :meth:`CompiledGroup.run` or
    :meth:`CompiledGroup.run_many`, e.g. ``(7 * 21, 6 * 21)``: seven configurations on 21 seeds, then six
    more). Among the capacities whose calls run at a good throughput on ``platform`` (:data:`CALL_RUNS` per
    device; on the CPU no more than :data:`CPU_CALL_BYTES` of runs' state per device, given ``run_bytes``:
    :func:`run_bytes`), the one that runs every request in the fewest slots (runs plus padding), counting a
    slot more for each call; a tie goes to the larger (fewer calls).

    >>> call_capacity((147, 126), devices=2, run_bytes=150_000)  # 147 runs in 5 calls of 32, 126 in 4
    32
    >>> call_capacity(147, devices=2)  # tiny runs: one call
    148
    """
    sizes = [runs] if isinstance(runs, int) else list(runs)
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1 for n in sizes):
        raise ValueError(f"runs must be a positive int or a sequence of them, got {runs!r}")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices must be an int >= 1, got {devices!r}")
    if platform not in CALL_RUNS:
        raise ValueError(f"platform must be one of {', '.join(CALL_RUNS)}, got {platform!r}")
    if run_bytes is not None and (
        isinstance(run_bytes, bool) or not isinstance(run_bytes, int) or run_bytes < 1
    ):
        raise ValueError(f"run_bytes must be a positive int (bytes) or None, got {run_bytes!r}")
    low, high = CALL_RUNS[platform]
    if platform == "cpu" and run_bytes is not None:
        high = max(low, min(high, CPU_CALL_BYTES // run_bytes))
    most = -(-max(sizes) // devices)  # per device: the largest request in one call
    high = min(high, most)
    low = min(low, high)

    def slots(per_device: int) -> int:
        capacity = per_device * devices
        return sum(-(-n // capacity) * (capacity + 1) for n in sizes)

    best = min(range(low, high + 1), key=lambda k: (slots(k), -k))
    return best * devices


def program_capacity(
    problem: Problem,
    contenders: Sequence[Contender],
    runs: int | Sequence[int],
    devices: Sequence[jax.Device] | None = None,
) -> int:
    """:func:`call_capacity` for the program :func:`compile_group` makes of ``problem`` and ``contenders`` on
    ``devices`` (None: every device), asked for ``runs`` runs at a time: the devices' count and platform, and the
    runs' state in bytes (:func:`run_bytes`), taken from them."""
    mesh = _mesh(devices)
    platform = str(mesh.devices.flat[0].platform)
    size = run_bytes(problem, contenders) if platform == "cpu" else None
    return call_capacity(runs, int(mesh.devices.size), platform if platform in CALL_RUNS else "gpu", size)


def compile_group(
    problem: Problem,
    contenders: Sequence[Contender],
    runs: int,
    *,
    steps: int | None = None,
    tuned: Sequence[str] | Mapping[str, Sequence[str]] = ("learning_rate",),
    schedule: Schedule | None = None,
    devices: Sequence[jax.Device] | None = None,
    name: str = "",
    compiler_options: Mapping[str, Any] | None = None,
) -> CompiledGroup:
    """Compile one program that trains any of ``contenders`` on ``runs`` runs of ``problem`` per call.

    ``tuned`` names the hyperparameters that are traced inputs (for every contender, or ``{contender name:
    names}``); the others stay at their defaults, as constants. ``steps`` defaults to ``problem.steps`` (a
    multiple of ``problem.eval_every``). ``runs`` is rounded up to a multiple of the device count. The program
    is compiled ahead of time (``jax.jit(...).lower(...).compile()``), once, with ``compiler_options`` (XLA's
    options; ``None``: :data:`CPU_COMPILER_OPTIONS` on the CPU, XLA's defaults elsewhere; ``{}``: XLA's defaults).
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
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an int >= 1, got {runs!r}")
    names = _tuned_names(contenders, tuned)
    width = max(len(v) for v in names.values())
    mesh = _mesh(devices)
    n_dev = int(mesh.devices.size)
    capacity = runs + (-runs) % n_dev
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    sharded = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("runs"))
    data = jax.tree.map(lambda a: _to_device(a, replicated), _host_data(problem))

    def one(index, test, row, key, data):
        return group_run(problem, contenders, names, index, row, key, data, steps, schedule, test)

    def program(index, test, hp, keys, data):
        return jax.vmap(one, in_axes=(None, None, 0, 0, None))(index, test, hp, keys, data)

    jitted = jax.jit(
        program,
        in_shardings=(replicated, replicated, sharded, sharded, replicated),
        out_shardings=sharded,
    )
    hp_spec = jax.ShapeDtypeStruct((capacity, width), jnp.float32, sharding=sharded)
    key_spec = jax.ShapeDtypeStruct((capacity, 2), jnp.uint32, sharding=sharded)
    t0 = time.perf_counter()
    compiled = jitted.lower(np.int32(0), np.int32(TEST_CODES[True]), hp_spec, key_spec, data).compile(
        _compiler_options(compiler_options, str(mesh.devices.flat[0].platform))
    )
    compile_s = time.perf_counter() - t0
    return CompiledGroup(
        problem=problem,
        contenders=contenders,
        capacity=capacity,
        tuned=names,
        steps=steps,
        compiled=compiled,
        compile_s=compile_s,
        name=name or "+".join(c.name for c in contenders),
        mesh=mesh,
        data=data,
        schedule=schedule,
    )


def _compiler_options(given: Mapping[str, Any] | None, platform: str) -> dict[str, Any] | None:
    if given is None:
        given = CPU_COMPILER_OPTIONS if platform == "cpu" else {}
    if not isinstance(given, Mapping):
        raise TypeError(f"compiler_options must be a mapping of XLA option names to values, got {given!r}")
    return dict(given) or None


def single_run(
    problem: Problem,
    contender: Contender,
    steps: int | None = None,
    tuned: Sequence[str] = ("learning_rate",),
    schedule: Schedule | None = None,
    test: Test = True,
) -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]]:
    """A jitted single run ``(config, seed) -> (train_loss, val, test, alive, trace)`` as NumPy (``trace`` is
    ``None`` for a problem without one): the reference for the engine. ``config`` maps the ``tuned`` names to
    values (a bare number is the learning rate); ``test`` is as in :func:`train_run`.

    Compiled once per call of this function; the configuration and the seed are traced, so call the result for
    as many as you like.
    """
    steps = problem.steps if steps is None else steps
    names = _tuned_names([contender], tuned)[contender.name]
    _test_code(test)
    data = jax.tree.map(jnp.asarray, tuple(problem.data()))
    fn = jax.jit(lambda hp, key: train_run(problem, contender, hp, key, data, steps, schedule, test))

    def run(
        config: float | Mapping[str, float], seed: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        cfg = {"learning_rate": config} if not isinstance(config, Mapping) else dict(config)
        if set(cfg) != set(names):
            raise ValueError(f"config must give {', '.join(names)}, got {', '.join(cfg)}")
        hp = {k: jnp.float32(v) for k, v in cfg.items()}
        out = fn(hp, jax.random.PRNGKey(seed))
        train_loss, val, test, alive = (np.asarray(a) for a in out[:4])
        trace = None if out[4] is None else np.asarray(out[4], np.float64)
        return (train_loss.astype(np.float64), val.astype(np.float64), test.astype(np.float64), alive, trace)

    return run


def run_one(
    problem: Problem,
    contender: Contender,
    config: float | Mapping[str, float],
    seed: int,
    steps: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One run made alone (jitted, unbatched): ``(train_loss, val, test, alive, trace)``; see
    :func:`single_run`."""
    tuned = ("learning_rate",) if not isinstance(config, Mapping) else tuple(config)
    return single_run(problem, contender, steps, tuned)(config, seed)
