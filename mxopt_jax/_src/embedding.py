"""Row-sparse gradients of embedding tables: :func:`lookup` inside a loss, :func:`value_and_grad` around it.

Getting a row-sparse gradient from a model: look rows up with :func:`lookup` inside the loss and take the
gradient with :func:`value_and_grad`, which differentiates with respect to the looked-up rows only::

    def loss_fn(params, ids, labels):
        e = mxopt_jax.sparse.lookup(params["embed"], ids)  # (batch, seq, dim)
        ...

    grad_fn = mxopt_jax.sparse.value_and_grad(loss_fn)
    loss, grads = grad_fn(params, {"embed": ids}, ids, labels)  # grads["embed"] is a RowSparse

Jitting with ``donate_argnums`` for the parameters and the optimizer state lets XLA scatter the touched rows
in place; without donation XLA must copy the table each step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from .rowsparse import RowSparse, _concrete
from .validation import path_name

__all__ = ["lookup", "value_and_grad"]


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

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.sparse import lookup
      >>> print(lookup(jnp.arange(8.0).reshape(4, 2), jnp.array([3, 1])))
      [[6. 7.]
       [2. 3.]]
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
