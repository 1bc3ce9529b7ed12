"""Row-sparse gradients: MXNet's ``row_sparse`` storage and ``lazy_update`` for embedding tables.

A :class:`RowSparse` value stands in a gradient pytree in place of a dense leaf. It holds a fixed number ``k``
of rows (``indices``, ``values``) of a tensor of ``shape``; rows may repeat (a repeated row's values add up,
as a dense gradient would sum them), and the rows not listed are zero. ``k`` is static, so a training step
compiles once however the rows change.

Every optimizer accepts a :class:`RowSparse` gradient; what it does with it follows MXNet (spec §0.6):

* **lazy** — SGD and Adam with ``lazy_update=True``, LARS with ``lazy_update=True`` (layer-wise norms of the
  whole tensor), Ftrl with ``lazy_update=True`` (MXNet's row_sparse weight), AdaGrad and GroupAdaGrad (their
  sparse kernels, which need ``wd == 0``): only the listed rows of the weight and of every state change, with
  exactly the dense formula (weight decay, bias correction with the parameter's own step count). A listed
  row counts as touched even when its values are zero. The work is a gather of the listed rows, the rule on
  ``k`` rows and a scatter back: its cost scales with ``k``, not with the table. The returned update is itself
  a :class:`RowSparse`, which :func:`optax.apply_updates` adds row by row (``params + update`` scatter-adds).
* **standard** — every other case (``lazy_update=False``, and optimizers without a sparse kernel in MXNet):
  the gradient is densified and the dense update runs, identical to passing the dense gradient.

Getting a row-sparse gradient from a model: look rows up with :func:`lookup` inside the loss and take the
gradient with :func:`value_and_grad`, which differentiates with respect to the looked-up rows only::

    def loss_fn(params, ids, labels):
        e = mxopt_jax.sparse.lookup(params["embed"], ids)  # (batch, seq, dim)
        ...

    grad_fn = mxopt_jax.sparse.value_and_grad(loss_fn)
    loss, grads = grad_fn(params, {"embed": ids}, ids, labels)  # grads["embed"] is a RowSparse

Jitting with ``donate_argnums`` for the parameters and the optimizer state lets XLA scatter the touched rows
in place; without donation XLA must copy the table each step.

Index checks: indices must lie in ``[0, shape[0])``. Concrete (non-traced) indices are checked when a
:class:`RowSparse` is built (``ValueError``); inside ``jax.jit`` values cannot be checked, and rows with an
out-of-range index are ignored (never wrapped around, never written elsewhere).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._base import path_name

__all__ = ["RowSparse", "is_row_sparse", "lookup", "value_and_grad"]


def _concrete(x: Any) -> np.ndarray | None:
    if isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.asarray(x)
    except Exception:  # pragma: no cover - exotic array types
        return None


@jax.tree_util.register_pytree_node_class
class RowSparse:
    """A row-sparse tensor: ``k`` rows (``indices``, ``values``) of a tensor of ``shape``; other rows are zero.

    Args:
      indices: integer array of shape ``(k,)``: the row of each entry of ``values``; rows may repeat (their
        values add up). Must lie in ``[0, shape[0])``.
      values: array of shape ``(k, *shape[1:])``.
      shape: the dense shape (at least 1-D).
      sorted_unique: keyword-only; ``True`` promises that ``indices`` are strictly increasing (MXNet's
        ``row_sparse`` storage guarantees this). Lazy updates then use the rows as they are instead of sorting
        and summing duplicates (``jnp.unique`` + ``segment_sum``), which is most of their cost for small row
        counts. Checked on concrete indices (``ValueError``); under ``jit`` the promise is trusted.

    ``RowSparse`` is a pytree (children ``indices`` and ``values``), so it passes through ``jax.jit``,
    ``jax.lax.scan`` and friends. ``dense + row_sparse`` scatter-adds the rows (this is how
    :func:`optax.apply_updates` applies a lazy update); :meth:`todense` densifies.
    """

    __slots__ = ("indices", "values", "shape", "unique")

    def __init__(
        self, indices: Any, values: Any, shape: tuple[int, ...] | Any, *, sorted_unique: bool = False
    ) -> None:
        if not isinstance(sorted_unique, (bool, np.bool_)):
            raise TypeError(f"RowSparse: `sorted_unique` must be a bool, got {sorted_unique!r}")
        try:
            shape = tuple(int(d) for d in shape)
        except TypeError:
            raise TypeError(f"RowSparse: `shape` must be a tuple of ints, got {shape!r}") from None
        if len(shape) < 1 or any(d < 0 for d in shape):
            raise ValueError(f"RowSparse: `shape` must have at least one non-negative dimension, got {shape}")
        indices = jnp.asarray(indices)
        values = jnp.asarray(values)
        if indices.ndim != 1 or not jnp.issubdtype(indices.dtype, jnp.integer):
            raise TypeError(
                f"RowSparse: `indices` must be a 1-D integer array, got dtype {indices.dtype} and "
                f"shape {indices.shape}"
            )
        if values.shape != (indices.shape[0], *shape[1:]):
            raise ValueError(
                f"RowSparse: `values` must have shape (k, *shape[1:]) = {(indices.shape[0], *shape[1:])} "
                f"for k = {indices.shape[0]} indices and shape {shape}, got {values.shape}"
            )
        idx = _concrete(indices)
        if idx is not None and idx.size and (idx.min() < 0 or idx.max() >= shape[0]):
            bad = idx[(idx < 0) | (idx >= shape[0])]
            raise ValueError(
                f"RowSparse: `indices` must lie in [0, {shape[0]}) (the number of rows), got {bad[:5].tolist()}"
            )
        if sorted_unique and idx is not None and idx.size > 1 and not bool(np.all(np.diff(idx) > 0)):
            raise ValueError(
                "RowSparse: `sorted_unique=True` needs strictly increasing `indices` (sorted, no repeats)"
            )
        self.indices = indices.astype(jnp.int32)
        self.values = values
        self.shape = shape
        # True: indices sorted and unique but for padding (sorted_unique=True, or set by the lazy updates)
        self.unique = bool(sorted_unique)

    # pytree protocol: rebuild without re-validating (children may be tracers, None or sentinels)
    def tree_flatten(self) -> tuple[tuple, tuple]:
        return (self.indices, self.values), (self.shape, self.unique)

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: tuple) -> RowSparse:
        obj = object.__new__(cls)
        obj.indices, obj.values = children
        obj.shape, obj.unique = aux
        return obj

    @classmethod
    def _unique_rows(cls, shape: tuple, rows: jax.Array, values: jax.Array) -> RowSparse:
        """Rows from :func:`unique_rows` (sorted, each once, padded with ``shape[0]``)."""
        return cls.tree_unflatten((tuple(shape), True), (rows, values))

    @property
    def dtype(self) -> Any:
        return self.values.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def num_rows(self) -> int:
        """``k``, the number of (possibly repeated) rows stored."""
        return int(self.indices.shape[0])

    def todense(self) -> jax.Array:
        """The dense tensor: zeros with the listed rows added in (repeated rows sum)."""
        return jnp.zeros(self.shape, self.values.dtype).at[valid_indices(self)].add(self.values, mode="drop")

    def astype(self, dtype: Any) -> RowSparse:
        return RowSparse.tree_unflatten((self.shape, self.unique), (self.indices, self.values.astype(dtype)))

    def __radd__(self, other: Any) -> jax.Array:
        return self._add_to(other)

    def __add__(self, other: Any) -> jax.Array:
        if isinstance(other, RowSparse):
            return NotImplemented
        return self._add_to(other)

    def _add_to(self, dense: Any) -> jax.Array:
        dense = jnp.asarray(dense)
        if dense.shape != self.shape:
            raise ValueError(f"RowSparse of shape {self.shape} added to an array of shape {dense.shape}")
        if not jnp.issubdtype(self.indices.dtype, jnp.integer):
            raise TypeError(
                f"RowSparse indices have dtype {self.indices.dtype}: a transform mapped over them (element-wise "
                "optax transforms must not follow a row-sparse update)"
            )
        dtype = jnp.result_type(dense, self.values)
        if self.unique and dtype == dense.dtype:  # one scatter-add over rows known to be sorted and unique
            return dense.at[self.indices].add(
                self.values, mode="drop", indices_are_sorted=True, unique_indices=True
            )
        if self.unique:
            summed = gather_rows(dense, self.indices).astype(dtype) + self.values
            return scatter_rows(dense, self.indices, summed)
        if dtype == dense.dtype:
            return dense.at[valid_indices(self)].add(self.values, mode="drop")
        # Wider values (a float32 multi-precision update on a float16 table): add each row in the wider
        # dtype and round once, as a dense ``p + u`` would; repeated rows are summed first.
        rows, values = unique_rows(self)
        summed = gather_rows(dense, rows).astype(dtype) + values
        return scatter_rows(dense, rows, summed)

    def __repr__(self) -> str:
        return f"RowSparse(shape={self.shape}, k={self.indices.shape[0]}, dtype={self.values.dtype})"


def is_row_sparse(x: Any) -> bool:
    """``True`` for a :class:`RowSparse` value (use as ``is_leaf`` when flattening gradient trees)."""
    return isinstance(x, RowSparse)


def valid_indices(g: RowSparse) -> jax.Array:
    """Indices with every out-of-range entry (negative too) mapped to ``shape[0]``, which scatters drop."""
    n = g.shape[0]
    idx = g.indices
    return jnp.where((idx >= 0) & (idx < n), idx, n).astype(jnp.int32)


def unique_rows(g: RowSparse) -> tuple[jax.Array, jax.Array]:
    """``(rows, values)``: each listed row once (sorted; padded with ``shape[0]``) and its summed values.

    The output keeps ``k`` entries so shapes stay static under ``jax.jit``; padding rows carry zeros and an
    out-of-range index, so gathers read zeros there and scatters drop them.
    """
    n, k = g.shape[0], g.indices.shape[0]
    idx = valid_indices(g)
    if g.unique:  # already sorted and unique (out-of-range entries map to n: gathers fill, scatters drop)
        return idx, g.values
    rows, inverse = jnp.unique(idx, size=k, fill_value=n, return_inverse=True)
    values = jax.ops.segment_sum(g.values, inverse.reshape(-1), num_segments=k)
    return rows, values


def gather_rows(x: jax.Array, rows: jax.Array) -> jax.Array:
    """``x[rows]`` for sorted rows from :func:`unique_rows`, with zeros for the padding rows."""
    return x.at[rows].get(mode="fill", fill_value=0, indices_are_sorted=True)


def scatter_rows(x: jax.Array, rows: jax.Array, values: jax.Array) -> jax.Array:
    """``x`` with ``x[rows] = values`` for rows from :func:`unique_rows` (padding rows, out of range, dropped)."""
    return x.at[rows].set(values.astype(x.dtype), mode="drop", indices_are_sorted=True, unique_indices=True)


# --------------------------------------------------------------------------- model side
class _Gathered:
    """Stands in for an embedding table inside :func:`value_and_grad`: the rows looked up for ``ids``."""

    __slots__ = ("rows", "ids", "shape", "path")

    def __init__(self, rows: jax.Array, ids: jax.Array, shape: tuple, path: str) -> None:
        self.rows, self.ids, self.shape, self.path = rows, ids, shape, path


def lookup(table: Any, ids: Any) -> jax.Array:
    """Embedding lookup ``table[ids]`` (shape ``ids.shape + table.shape[1:]``).

    On a plain array this is ``jnp.take(table, ids, axis=0)`` (dense gradient). Inside
    :func:`value_and_grad`, the table is replaced by the rows gathered for the ``ids`` given there, so the
    gradient with respect to the table comes out as a :class:`RowSparse`; ``ids`` must then be the same ids
    (same shape) as the ones passed to :func:`value_and_grad` for this table.
    """
    if isinstance(table, _Gathered):
        ids = jnp.asarray(ids)
        if ids.shape != table.ids.shape:
            raise ValueError(
                f"mxopt_jax.sparse.lookup: `ids` for table {table.path!r} must be the ids given to "
                f"value_and_grad (shape {table.ids.shape}), got shape {ids.shape}"
            )
        return table.rows.reshape(ids.shape + tuple(table.shape[1:]))
    table = jnp.asarray(table)
    return jnp.take(table, jnp.asarray(ids), axis=0)


def value_and_grad(fun: Callable, has_aux: bool = False) -> Callable:
    """Like :func:`jax.value_and_grad` over the first argument, with row-sparse gradients for tables.

    Returns ``g(params, ids, *args, **kwargs) -> (value, grads)`` where ``ids`` maps a table's path in
    ``params`` (keys joined by ``'/'``, e.g. ``'encoder/embed'``) to the integer ids looked up in it with
    :func:`lookup` inside ``fun(params, *args, **kwargs)``. ``grads`` has the structure of ``params``, with a
    :class:`RowSparse` of ``ids.size`` rows (one per id, repeated ids kept and summed by the optimizer) for
    each table and dense gradients elsewhere. No dense gradient of a table is ever formed. With
    ``has_aux=True``, ``value`` is ``(loss, aux)`` as in JAX.
    """

    def wrapped(params: Any, ids: Mapping[str, Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if not isinstance(ids, Mapping):
            raise TypeError(
                "mxopt_jax.sparse.value_and_grad: `ids` must be a mapping from a table's path in params "
                f"(keys joined by '/') to its ids, got {type(ids).__name__}"
            )
        leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(params)
        paths = [path_name(p) for p, _ in leaves_with_path]
        leaves = [leaf for _, leaf in leaves_with_path]
        unknown = sorted(set(ids) - set(paths))
        if unknown:
            raise ValueError(
                f"mxopt_jax.sparse.value_and_grad: `ids` names {unknown}, which are not parameters; "
                f"parameter paths are {paths}"
            )
        table_pos = {paths.index(p): jnp.asarray(v) for p, v in ids.items()}
        for pos, v in table_pos.items():
            if not jnp.issubdtype(v.dtype, jnp.integer):
                raise TypeError(
                    f"mxopt_jax.sparse.value_and_grad: ids for {paths[pos]!r} must be integers, got {v.dtype}"
                )
            if jnp.ndim(leaves[pos]) < 1:
                raise ValueError(f"mxopt_jax.sparse.value_and_grad: {paths[pos]!r} is a scalar, not a table")
            flat = _concrete(v)
            n = jnp.shape(leaves[pos])[0]
            if flat is not None and flat.size and (flat.min() < 0 or flat.max() >= n):
                raise ValueError(
                    f"mxopt_jax.sparse.value_and_grad: ids for {paths[pos]!r} must lie in [0, {n}), got "
                    f"values from {flat.min()} to {flat.max()}"
                )
        dense_pos = [i for i in range(len(leaves)) if i not in table_pos]
        dense = [leaves[i] for i in dense_pos]
        rows = [jnp.take(leaves[i], table_pos[i].reshape(-1), axis=0) for i in sorted(table_pos)]

        def f(dense_leaves: list, row_leaves: list) -> Any:
            full: list = [None] * len(leaves)
            for i, x in zip(dense_pos, dense_leaves, strict=True):
                full[i] = x
            for i, r in zip(sorted(table_pos), row_leaves, strict=True):
                full[i] = _Gathered(r, table_pos[i], tuple(jnp.shape(leaves[i])), paths[i])
            return fun(treedef.unflatten(full), *args, **kwargs)

        value, (g_dense, g_rows) = jax.value_and_grad(f, argnums=(0, 1), has_aux=has_aux)(dense, rows)
        out: list = [None] * len(leaves)
        for i, g in zip(dense_pos, g_dense, strict=True):
            out[i] = g
        for i, g in zip(sorted(table_pos), g_rows, strict=True):
            out[i] = RowSparse.tree_unflatten(
                (tuple(jnp.shape(leaves[i])), False), (table_pos[i].reshape(-1).astype(jnp.int32), g)
            )
        return value, treedef.unflatten(out)

    return wrapped
