"""Row-sparse values: MXNet's ``row_sparse`` storage as a pytree, and the row gathers/scatters of lazy updates.

A :class:`RowSparse` value stands in a gradient pytree in place of a dense leaf. It holds a fixed number ``k``
of rows (``indices``, ``values``) of a tensor of ``shape``; rows may repeat (a repeated row's values add up,
as a dense gradient would sum them), and the rows not listed are zero. ``k`` is static, so a training step
compiles once however the rows change. What an optimizer does with one is the lazy driver's business
(:mod:`mxopt_jax._src.drivers.lazy`); how a model produces one is :mod:`mxopt_jax._src.embedding`'s.

Index rule: indices must lie in ``[0, shape[0])``. Concrete (non-traced) indices are checked when a
:class:`RowSparse` is built (``ValueError``); inside ``jax.jit`` values cannot be checked, and rows with an
out-of-range index, negative ones included, are ignored (never wrapped around, never written elsewhere) by
:meth:`RowSparse.todense`, by ``dense + row_sparse`` (``optax.apply_updates``) and by lazy updates.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["RowSparse", "is_row_sparse"]


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
        ``row_sparse`` storage guarantees this). Lazy updates then use the rows as they are instead of summing
        duplicates (sorting the ids, or through a table-sized scratch array for a small table), which is most
        of their cost for small row counts. Checked on concrete indices (``ValueError``); under ``jit`` the
        promise is trusted.

    ``RowSparse`` is a pytree (children ``indices`` and ``values``), so it passes through ``jax.jit``,
    ``jax.lax.scan`` and friends. ``dense + row_sparse`` scatter-adds the rows (this is how
    :func:`optax.apply_updates` applies a lazy update); :meth:`todense` densifies.

    Examples:
      >>> import jax.numpy as jnp, numpy as np
      >>> from mxopt_jax.sparse import RowSparse
      >>> g = RowSparse(jnp.array([0, 2, 2]), jnp.ones((3, 2)), (4, 2))  # row 2 listed twice: summed
      >>> print(np.asarray(g.todense()))
      [[1. 1.]
       [0. 0.]
       [2. 2.]
       [0. 0.]]
      >>> print(np.asarray(jnp.zeros((4, 2)) + g))  # dense + row-sparse scatter-adds the rows
      [[1. 1.]
       [0. 0.]
       [2. 2.]
       [0. 0.]]
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

    # pytree protocol: rebuild without re-validating (children may be tracers, None or sentinels). The values
    # come first: code that takes the dtype of a tree's first leaf (optax 0.2.4's inject_hyperparams casts the
    # hyperparameters to it) must see the gradient's dtype, not the int32 indices.
    def tree_flatten(self) -> tuple[tuple, tuple]:
        return (self.values, self.indices), (self.shape, self.unique)

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: tuple) -> RowSparse:
        obj = object.__new__(cls)
        obj.values, obj.indices = children
        obj.shape, obj.unique = aux
        return obj

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
        check_indices(self, "RowSparse.todense()")
        return jnp.zeros(self.shape, self.values.dtype).at[valid_indices(self)].add(self.values, mode="drop")

    def astype(self, dtype: Any) -> RowSparse:
        return RowSparse.tree_unflatten((self.shape, self.unique), (self.values.astype(dtype), self.indices))

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
        check_indices(self, "optax.apply_updates (dense + RowSparse)")
        dtype = jnp.result_type(dense, self.values)
        if self.unique:
            # Rows promised sorted and unique: one scatter-add, no sort. Out-of-range indices (negative ones
            # too, which NumPy-style indexing would wrap) map to shape[0] and are dropped; such an entry may
            # break the order, so the scatter is not told the indices are sorted.
            idx = valid_indices(self)
            if dtype == dense.dtype:
                return dense.at[idx].add(self.values, mode="drop", unique_indices=True)
            summed = dense.at[idx].get(mode="fill", fill_value=0).astype(dtype) + self.values
            return dense.at[idx].set(summed.astype(dense.dtype), mode="drop", unique_indices=True)
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


def check_indices(g: RowSparse, where: str, what: str = "a RowSparse") -> None:
    """Refuse a ``RowSparse`` whose row indices are not integers: an optax transform mapped over them as if they
    were gradient values (``optax.scale(0.5)``, ``optax.clip``, an optax optimizer). The ``TypeError`` says
    where (``where``, e.g. the optimizer) and which row-sparse-aware counterparts to use. Free under ``jit``
    (a dtype). Indices an integer factor kept integers (``optax.scale(2)``) cannot be told from real ones."""
    if jnp.issubdtype(g.indices.dtype, jnp.integer):
        return
    raise TypeError(
        f"{where}: {what} has {g.indices.dtype} row indices: an optax transform mapped over them as if they were "
        "gradient values (optax's own transforms treat every leaf of a RowSparse, its int32 indices too, as "
        "values: scale, clip, an optax optimizer). Use the row-sparse-aware counterparts: "
        "mxopt_jax.sparse.clip_by_global_norm for optax.clip_by_global_norm, mxopt_jax.sparse.MultiSteps for "
        "optax.MultiSteps, mxopt_jax's optimizers (lazy_update=True for a lazy update) for optax's; apply a "
        "lazy update with optax.apply_updates and nothing in between; or densify the gradient first "
        "(RowSparse.todense())"
    )


def valid_indices(g: RowSparse) -> jax.Array:
    """Indices with every out-of-range entry (negative too) mapped to ``shape[0]``, which scatters drop (integer
    indices only: :func:`check_indices`)."""
    check_indices(g, "mxopt_jax.sparse")
    n = g.shape[0]
    idx = g.indices
    return jnp.where((idx >= 0) & (idx < n), idx, n).astype(jnp.int32)


#: How :func:`unique_rows` sums repeated rows: through a scratch copy of the table (a scatter-add into zeros
#: of its shape, then the rows it touched compacted: work ``rows * (row_size + _TABLE_ROW_COST)``) or by sorting
#: the ``k`` ids (``jnp.unique`` and a segment sum: work ``_SORT_ID_COST * k``), whichever costs less. Measured on
#: XLA's CPU backend (8 runs under ``vmap``, ``k`` 64 to 4,096, rows of 1 to 64 elements): the table's way about
#: 21 ns per table row plus 0.8 ns per element, the sort 0.33 to 0.42 us per id; the constants are those
#: figures in units of 0.8 ns. On the ``recommender`` problem (512 ids a step into tables of 2,000 and 500 rows)
#: the table's way makes a lazy Adam step 1.9 to 2.1x faster (benchmarks/RESULTS.md); a million-row table
#: keeps the sort. Both ways give the same rows and sums, bit for bit: each row's values are added in the order
#: listed (``tests/drivers/test_unique_rows.py``).
_TABLE_ROW_COST = 26
_SORT_ID_COST = 512


def dedup_through_table(rows: int, k: int, row_size: int) -> bool:
    """Whether :func:`unique_rows` deduplicates ``k`` ids into a table of ``rows`` rows of ``row_size``
    elements through the table (``True``) rather than by sorting the ids (``False``)."""
    return rows * (row_size + _TABLE_ROW_COST) <= _SORT_ID_COST * k


def unique_rows(g: RowSparse, through_table: bool | None = None) -> tuple[jax.Array, jax.Array]:
    """``(rows, values)``: each listed row once (sorted; padded with ``shape[0]``) and its summed values.

    The output keeps ``k`` entries so shapes stay static under ``jax.jit``; padding rows carry zeros and an
    out-of-range index, so gathers read zeros there and scatters drop them. Entries with an out-of-range index
    (possible only under ``jax.jit``) are gathered into one row ``shape[0]`` whose values are zero: they count
    nowhere (not in a norm of the gradient, not in a lazy update). ``through_table``: which way repeated rows
    are summed (``None``, the default: :func:`dedup_through_table` decides by cost); both give the same bits.
    """
    n, k = g.shape[0], g.indices.shape[0]
    idx = valid_indices(g)
    values = _listed_values(g, idx)
    if g.unique:  # already sorted and unique (out-of-range entries map to n: gathers fill, scatters drop)
        return idx, values
    if through_table is None:
        through_table = dedup_through_table(n, k, math.prod(values.shape[1:]))
    if through_table:
        # Row n collects the out-of-range entries (zeros). The scatter-add sums each row's values in the order
        # listed, as the segment sum below does, so both ways give the same bits.
        table = jnp.zeros((n + 1, *values.shape[1:]), values.dtype).at[idx].add(values)
        touched = jnp.zeros((n + 1,), jnp.bool_).at[idx].set(True)
        rows = jnp.nonzero(touched, size=k, fill_value=n)[0].astype(jnp.int32)
        return rows, table.at[rows].get(indices_are_sorted=True)
    rows, inverse = jnp.unique(idx, size=k, fill_value=n, return_inverse=True)
    return rows, jax.ops.segment_sum(values, inverse.reshape(-1), num_segments=k)


def _listed_values(g: RowSparse, idx: jax.Array) -> jax.Array:
    """``g.values`` with the out-of-range entries' rows zero (a no-op where every index is in range)."""
    listed = (idx < g.shape[0]).reshape(idx.shape + (1,) * (g.values.ndim - 1))
    return jnp.where(listed, g.values, jnp.zeros((), g.values.dtype))


def gather_rows(x: jax.Array, rows: jax.Array) -> jax.Array:
    """``x[rows]`` for sorted rows from :func:`unique_rows`, with zeros for the padding rows."""
    return x.at[rows].get(mode="fill", fill_value=0, indices_are_sorted=True)


def scatter_rows(x: jax.Array, rows: jax.Array, values: jax.Array) -> jax.Array:
    """``x`` with ``x[rows] = values`` for rows from :func:`unique_rows` (padding rows, out of range, dropped)."""
    return x.at[rows].set(values.astype(x.dtype), mode="drop", indices_are_sorted=True, unique_indices=True)
