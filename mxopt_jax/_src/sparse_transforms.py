"""Row-sparse-aware counterparts of the optax transforms that cannot take a :class:`RowSparse`.

``optax.clip_by_global_norm`` and ``optax.MultiSteps`` map over every leaf of the gradient, so they would
treat a ``RowSparse``'s integer row indices as gradient values; the int32 indices make both fail inside optax
(JAX's ``TypeError`` in ``lax.select``, a tree-structure ``ValueError``), where mxopt_jax's code does not run.
These behave like optax's on the dense gradient the ``RowSparse`` stands for, and pass row-sparse gradients on
as ``RowSparse``; a ``RowSparse`` whose indices an optax transform before them turned into floats is refused
with a ``TypeError`` that names them (:func:`~mxopt_jax._src.rowsparse.check_indices`).
"""

from __future__ import annotations

from typing import Any, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .rowsparse import RowSparse, _concrete, check_indices, is_row_sparse, unique_rows, valid_indices
from .validation import path_name

__all__ = ["MultiSteps", "MultiStepsState", "clip_by_global_norm"]


def _sq_norm(x: Any) -> jax.Array:
    if isinstance(x, RowSparse):
        _, values = unique_rows(x)  # repeated rows summed, out-of-range rows zero: the dense gradient's rows
        x = values
    return jnp.sum(jnp.square(jnp.abs(x)) if jnp.iscomplexobj(x) else jnp.square(x))


def _init_empty(params: Any) -> optax.EmptyState:
    del params
    return optax.EmptyState()


def clip_by_global_norm(max_norm: Any) -> optax.GradientTransformation:
    """``optax.clip_by_global_norm`` for trees holding :class:`RowSparse` gradients.

    The global norm is that of the dense gradient each ``RowSparse`` stands for (repeated rows summed,
    out-of-range rows ignored), so the result equals optax's on the densified tree; a ``RowSparse`` is
    scaled row by row and stays a ``RowSparse`` with the same rows. Dense leaves are treated as optax does.
    """
    if isinstance(max_norm, bool) or (_concrete(max_norm) is not None and not float(max_norm) > 0):
        raise ValueError(f"mxopt_jax.sparse.clip_by_global_norm: `max_norm` must be > 0, got {max_norm!r}")

    def update_fn(updates, state, params=None):
        del params
        leaves = jax.tree.leaves(updates, is_leaf=is_row_sparse)
        for x in leaves:
            if isinstance(x, RowSparse):
                check_indices(x, "mxopt_jax.sparse.clip_by_global_norm", "a RowSparse gradient")
        g_norm = jnp.sqrt(sum((_sq_norm(x) for x in leaves), jnp.zeros([], jnp.float32)))
        trigger = jnp.squeeze(g_norm < max_norm)

        def clip(t):
            if isinstance(t, RowSparse):
                v = t.values
                return RowSparse.tree_unflatten(
                    (t.shape, t.unique),
                    (jax.lax.select(trigger, v, (v / g_norm.astype(v.dtype)) * max_norm), t.indices),
                )
            return jax.lax.select(trigger, t, (t / g_norm.astype(t.dtype)) * max_norm)

        return jax.tree.map(clip, updates, is_leaf=is_row_sparse), state

    return optax.GradientTransformation(_init_empty, update_fn)


class MultiStepsState(NamedTuple):
    """State of :class:`MultiSteps`: the mini-step, the inner state and the accumulators (flatten order of
    the parameters; a table's entry is ``(summed rows, touched mask)``)."""

    mini_step: jax.Array
    inner_opt_state: Any
    acc: tuple


class MultiSteps:
    """``optax.MultiSteps`` for row-sparse gradients: the inner transform sees the mean gradient every
    ``every_k_schedule`` calls (zero updates in between).

    Dense leaves are accumulated as optax does (a running mean). The gradient of each table named in
    ``tables`` (paths, as :func:`~mxopt_jax.sparse.value_and_grad` takes them) must be a :class:`RowSparse`;
    its rows are summed into a table-sized accumulator with a mask of the rows touched, and the inner
    transform receives a ``RowSparse`` of every row touched in the cycle (sorted, each once, divided by
    ``k``), so a lazy update touches exactly the rows the ``k`` mini-batches touched. Its capacity is ``k``
    times the rows of one gradient, so every gradient of a cycle must have the same number of rows (as in a
    jitted step; checked on concrete values).

    Args:
      opt: the inner transform.
      every_k_schedule: ``k``, a Python int >= 1 (a schedule would make the capacity dynamic).
      tables: paths of the parameters whose gradients are row-sparse.
    """

    def __init__(self, opt: optax.GradientTransformation, every_k_schedule: int, tables: Any) -> None:
        if isinstance(every_k_schedule, bool) or not isinstance(every_k_schedule, (int, np.integer)):
            raise TypeError(
                "mxopt_jax.sparse.MultiSteps: `every_k_schedule` must be a Python int >= 1 (the accumulator's "
                f"capacity is static), got {every_k_schedule!r}"
            )
        if every_k_schedule < 1:
            raise ValueError(
                f"mxopt_jax.sparse.MultiSteps: `every_k_schedule` must be >= 1, got {every_k_schedule}"
            )
        tables = (tables,) if isinstance(tables, str) else tuple(tables)
        if not tables or not all(isinstance(t, str) for t in tables):
            raise TypeError(
                f"mxopt_jax.sparse.MultiSteps: `tables` must be a path or a sequence of paths, got {tables!r}"
            )
        self._opt, self._k, self._tables = opt, int(every_k_schedule), tables

    @property
    def inner_opt(self) -> optax.GradientTransformation:
        return self._opt

    def gradient_transformation(self) -> optax.GradientTransformation:
        # the update takes this transform's own state type, which optax's protocol spells OptState
        return optax.GradientTransformation(self.init, cast(optax.TransformUpdateFn, self.update))

    def _paths(self, tree: Any) -> tuple[list[str], list, Any]:
        lwp, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_row_sparse)
        return [path_name(p) for p, _ in lwp], [x for _, x in lwp], treedef

    def init(self, params: Any) -> MultiStepsState:
        paths, leaves, _ = self._paths(params)
        missing = [t for t in self._tables if t not in paths]
        if missing:
            raise ValueError(
                f"mxopt_jax.sparse.MultiSteps: `tables` names {missing}, not parameters; paths are {paths}"
            )
        acc = tuple(
            (jnp.zeros_like(x), jnp.zeros((x.shape[0],), bool)) if p in self._tables else jnp.zeros_like(x)
            for p, x in zip(paths, leaves, strict=True)
        )
        return MultiStepsState(jnp.zeros([], jnp.int32), self._opt.init(params), acc)

    def update(self, updates: Any, state: MultiStepsState, params: Any = None) -> tuple[Any, MultiStepsState]:
        paths, grads, treedef = self._paths(updates)
        k = self._k
        for p, g in zip(paths, grads, strict=True):
            if isinstance(g, RowSparse):
                check_indices(g, "mxopt_jax.sparse.MultiSteps", f"the RowSparse gradient at {p!r}")
            if (p in self._tables) != isinstance(g, RowSparse):
                raise TypeError(
                    f"mxopt_jax.sparse.MultiSteps: the gradient at {p!r} is "
                    + (
                        "dense but `tables` names it"
                        if p in self._tables
                        else "a RowSparse; name it in `tables`"
                    )
                )
        step = state.mini_step
        acc = []
        for g, a in zip(grads, state.acc, strict=True):
            if isinstance(g, RowSparse):
                idx = valid_indices(g)
                acc.append(
                    (
                        a[0].at[idx].add(g.values.astype(a[0].dtype), mode="drop"),
                        a[1].at[idx].set(True, mode="drop"),
                    )
                )
            else:
                acc.append(a + (g - a) / (step + 1).astype(a.dtype))  # optax's running mean
        caps = [min(g.shape[0], k * g.num_rows) if isinstance(g, RowSparse) else 0 for g in grads]
        for c, a, p in zip(caps, acc, paths, strict=True):
            mask = _concrete(a[1]) if isinstance(a, tuple) else None
            if mask is not None and int(mask.sum()) > c:
                raise ValueError(
                    f"mxopt_jax.sparse.MultiSteps: the gradients at {p!r} touched {int(mask.sum())} rows in this cycle, "
                    f"more than {k} times the rows of one gradient ({c}): give every gradient of a cycle the same "
                    "number of rows"
                )

        def mean_grads(acc):
            out = []
            for g, a, c in zip(grads, acc, caps, strict=True):
                if isinstance(g, RowSparse):
                    n = g.shape[0]
                    rows = jnp.nonzero(a[1], size=c, fill_value=n)[0].astype(jnp.int32)
                    vals = a[0].at[rows].get(mode="fill", fill_value=0) / jnp.asarray(k, a[0].dtype)
                    out.append(RowSparse.tree_unflatten((g.shape, True), (vals.astype(g.dtype), rows)))
                else:
                    out.append(a.astype(g.dtype))
            return treedef.unflatten(out)

        def emit(acc, inner):
            mean = mean_grads(acc)
            upd, inner = self._opt.update(mean, inner, params)
            reset = []
            for g, a, m in zip(grads, acc, treedef.flatten_up_to(mean), strict=True):
                if isinstance(g, RowSparse):
                    reset.append(
                        (a[0].at[m.indices].set(0, mode="drop"), a[1].at[m.indices].set(False, mode="drop"))
                    )
                else:
                    reset.append(jnp.zeros_like(a))
            return upd, inner, tuple(reset)

        def hold(acc, inner):
            shapes = jax.eval_shape(lambda a, s: self._opt.update(mean_grads(a), s, params)[0], acc, inner)

            def zero(x):
                if isinstance(x, RowSparse):  # no rows at all: every index out of range, dropped everywhere
                    return RowSparse.tree_unflatten(
                        (x.shape, x.unique),
                        (
                            jnp.zeros(x.values.shape, x.values.dtype),
                            jnp.full(x.indices.shape, x.shape[0], jnp.int32),
                        ),
                    )
                return jnp.zeros(x.shape, x.dtype)

            return jax.tree.map(zero, shapes, is_leaf=is_row_sparse), inner, tuple(acc)

        last = step == k - 1
        upd, inner, acc = jax.lax.cond(last, emit, hold, tuple(acc), state.inner_opt_state)
        new_step = jnp.where(last, 0, step + 1).astype(jnp.int32)
        return upd, MultiStepsState(new_step, inner, acc)
