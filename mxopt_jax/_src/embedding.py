"""Row-sparse gradients of embedding tables: :func:`lookup` inside a loss, :func:`value_and_grad` around it.

Name the tables whose gradients should come out row-sparse and read them only through :func:`lookup`::

    def loss_fn(params, ids, labels):
        e = mxopt_jax.sparse.lookup(params["embed"], ids)  # (batch, seq, dim); any number of lookups
        ...

    grad_fn = mxopt_jax.sparse.value_and_grad(loss_fn, tables=("embed",))
    loss, grads = grad_fn(params, ids, labels)  # grads["embed"] is a RowSparse

How it works, and why the rows looked up are the rows differentiated by construction: ``fun`` is traced
once abstractly (:func:`jax.eval_shape`) to learn how many lookups it makes and their shapes; it is then
differentiated with every lookup returning ``table[ids] + delta`` for a zero ``delta`` of the rows' shape,
and the gradient with respect to each ``delta`` is that lookup's row gradient, paired with the very ``ids``
the same lookup used (recorded in that pass). The table itself is never differentiated densely, so no
table-sized gradient is formed. A lookup made inside a transformation within ``fun`` (``jax.vmap``,
``lax.scan``, ``jax.checkpoint``, an inner ``jax.jit``; told from a top-level one by JAX's public trace-state
hook, ``jax.extend.core.get_opaque_trace_state``, which changes inside every transformation's body, checked
once per process, an error naming the JAX version where it is missing) cannot hand its rows out of that
transformation; its
contribution is the ordinary dense gradient of the table, added as every row (correct, but table-sized):
look the rows up at the top level of ``fun`` (any ``ids`` shape, e.g. all time steps at once) and pass them
into the transformation to keep it row-sparse.

Index rule (the same in :func:`lookup`, in the gradient, in :meth:`RowSparse.todense` and in
``optax.apply_updates``): ids must lie in ``[0, rows)``. Concrete ids outside raise ``ValueError``; under
``jax.jit`` they cannot be checked, and an out-of-range id (negative ones included, never wrapped around)
reads a row of zeros and its gradient row is dropped.

Jitting with ``donate_argnums`` for the parameters and the optimizer state lets XLA scatter the touched rows
in place; without donation XLA must copy the table each step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .rowsparse import RowSparse, _concrete
from .validation import path_name

__all__ = ["lookup", "value_and_grad"]

_OWNER = "mxopt_jax.sparse.value_and_grad"

# The trace state tells a lookup at the top level of `fun` from one inside a vmap/scan/jit/checkpoint body
# within it: JAX's public hook for libraries that must know whether the trace changed (haiku and flax use it).
# It moved from jax.core to jax.extend.core (jax.core's name is deprecated in newer JAX).
_opaque_trace_state: Callable[..., Any] | None
try:
    from jax.extend.core import get_opaque_trace_state as _opaque_trace_state
except ImportError:  # JAX before jax.extend.core had it (the supported floor, 0.4.35)
    _opaque_trace_state = getattr(jax.core, "get_opaque_trace_state", None)

_probe_ok: bool | None = None  # whether _opaque_trace_state tells a vmap body from the code around it


def _current_trace() -> Any:
    if _opaque_trace_state is None:
        _check_trace_state()  # raises, naming the JAX version
    assert _opaque_trace_state is not None
    return _opaque_trace_state(convention="haiku")


def _check_trace_state() -> None:
    """Make sure the trace state tells nesting apart on the running JAX (once), or raise naming the version.

    Without it every lookup would have to take the dense path (a table-sized gradient): never silently.
    """
    global _probe_ok
    if _probe_ok is None:
        if _opaque_trace_state is None:
            _probe_ok = False
        else:
            seen: dict = {}

            def outer(x: jax.Array) -> jax.Array:
                top = _current_trace()
                seen["top"] = _current_trace() == top

                def inner(y: jax.Array) -> jax.Array:
                    seen["vmap"] = _current_trace() == top
                    return y

                return jax.vmap(inner)(x)

            jax.eval_shape(outer, jax.ShapeDtypeStruct((1,), jnp.float32))
            _probe_ok = seen == {"top": True, "vmap": False}
    if not _probe_ok:
        raise RuntimeError(
            f"{_OWNER} needs jax.extend.core.get_opaque_trace_state (jax.core.get_opaque_trace_state in older "
            "JAX) to tell apart a lookup at the top level of `fun` from one inside a transformation; JAX "
            f"{jax.__version__} "
            "does not provide it as JAX 0.4.35 to 0.10.2 do (the versions mxopt_jax supports)"
        )


def _check_ids(where: str, ids: Any, rows: int) -> jax.Array:
    ids = jnp.asarray(ids)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"{where}: `ids` must be an integer array, got dtype {ids.dtype}")
    flat = _concrete(ids)
    if flat is not None and flat.size and (flat.min() < 0 or flat.max() >= rows):
        bad = flat[(flat < 0) | (flat >= rows)]
        raise ValueError(
            f"{where}: `ids` must lie in [0, {rows}) (the table's rows), got {np.unique(bad)[:5].tolist()}"
        )
    return ids


def _take(table: jax.Array, ids: jax.Array) -> jax.Array:
    """``table[ids]`` with zeros for out-of-range ids (negative ones too: never wrapped around)."""
    n = table.shape[0]
    safe = jnp.where((ids >= 0) & (ids < n), ids, n)
    return jnp.take(table, safe, axis=0, mode="fill", fill_value=0)


class _Session:
    """The lookups of one trace of ``fun``: their tables and id shapes (``discover``) or ids and deltas (``run``)."""

    def __init__(
        self, mode: str, plan: list | None = None, deltas: list | None = None, dense: dict | None = None
    ):
        self.mode = mode
        self.top = _current_trace()
        self.plan: list = [] if plan is None else plan  # (table position, ids shape) of each top-level lookup
        self.nested: set = set()  # tables looked up inside a transformation within fun
        self.deltas = deltas or []
        self.dense = dense or {}  # table position -> the differentiated dense table (nested lookups)
        self.ids: list = []

    def lookup(self, table: _Table, ids: Any) -> jax.Array:
        ids = _check_ids(f"mxopt_jax.sparse.lookup (table {table.path!r})", ids, table.shape[0])
        nested = _current_trace() != self.top
        if self.mode == "discover":
            if nested:
                self.nested.add(table.pos)
            else:
                self.plan.append((table.pos, tuple(ids.shape)))
            return _take(table.value, ids)
        if nested:
            if table.pos not in self.dense:
                raise ValueError(
                    f"{_OWNER}: `fun` looked table {table.path!r} up inside a transformation in one trace and "
                    "not in the other; `fun` must be a pure function of its arguments"
                )
            return _take(self.dense[table.pos], ids)
        j = len(self.ids)
        if j >= len(self.plan) or self.plan[j] != (table.pos, tuple(ids.shape)):
            raise ValueError(
                f"{_OWNER}: `fun` made different lookups in two traces (lookup {j + 1}, table {table.path!r}, ids "
                f"of shape {tuple(ids.shape)}); `fun` must be a pure function of its arguments"
            )
        self.ids.append(ids)
        # -0.0: x + (-0.0) == x bit for bit (a +0.0 would turn a -0.0 weight into +0.0)
        return _take(jax.lax.stop_gradient(table.value), ids) + self.deltas[j]


def _dense_use(table: _Table, *_: Any, **__: Any) -> Any:
    raise TypeError(
        f"{_OWNER}: table {table.path!r} is named in `tables`, so inside `fun` it may only be read through "
        f"mxopt_jax.sparse.lookup(params[...], ids) (its gradient is row-sparse). For a dense use as well (a tied "
        f"output projection, a norm of the whole table), leave {table.path!r} out of `tables`: it then gets the "
        "ordinary dense gradient of every use"
    )


@jax.tree_util.register_pytree_node_class
class _Table:
    """Stands in for a table named in ``tables`` inside ``fun``: readable only through :func:`lookup`.

    A pytree without children (it passes through ``jax.vmap``/``lax.scan``/``jax.jit`` arguments as static
    structure); any dense use raises a ``TypeError`` that names the table.
    """

    __slots__ = ("pos", "path", "value", "session")

    def __init__(self, pos: int, path: str, value: Any, session: _Session) -> None:
        self.pos, self.path, self.value, self.session = pos, path, value, session

    def tree_flatten(self) -> tuple[tuple, _Table]:
        return (), self

    @classmethod
    def tree_unflatten(cls, aux: _Table, children: tuple) -> _Table:
        return aux

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)

    @property
    def dtype(self) -> Any:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    def __repr__(self) -> str:
        return f"<embedding table {self.path!r}: read it with mxopt_jax.sparse.lookup>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        _dense_use(self)

    __jax_array__ = __array__ = __getitem__ = __iter__ = __len__ = _dense_use
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _dense_use
    __matmul__ = __rmatmul__ = __pow__ = __neg__ = __abs__ = _dense_use


def lookup(table: Any, ids: Any) -> jax.Array:
    """Embedding lookup ``table[ids]`` (shape ``ids.shape + table.shape[1:]``).

    On a plain array this is a gather with an ordinary (dense) gradient. Inside a function differentiated by
    :func:`value_and_grad`, on a table named in its ``tables``, the rows read here are the rows whose
    gradient comes out in the table's :class:`RowSparse`. Call it as often as needed, with any ids.

    Ids must lie in ``[0, rows)``: concrete ids outside raise ``ValueError``; under ``jax.jit`` an
    out-of-range id (negative ones included) reads zeros and gets no gradient.

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.sparse import lookup
      >>> print(lookup(jnp.arange(8.0).reshape(4, 2), jnp.array([3, 1])))
      [[6. 7.]
       [2. 3.]]
    """
    if isinstance(table, _Table):
        return table.session.lookup(table, ids)
    table = jnp.asarray(table)
    if table.ndim < 1:
        raise ValueError("mxopt_jax.sparse.lookup: `table` must be at least 1-D (rows first), got a scalar")
    return _take(table, _check_ids("mxopt_jax.sparse.lookup", ids, table.shape[0]))


def _tables_arg(tables: Any) -> tuple[str, ...]:
    if isinstance(tables, str):
        tables = (tables,)
    try:
        out = tuple(tables)
    except TypeError:
        raise TypeError(f"{_OWNER}: `tables` must be a path or a sequence of paths, got {tables!r}") from None
    if not out or not all(isinstance(t, str) for t in out):
        raise TypeError(
            f"{_OWNER}: `tables` must name at least one parameter by its path (keys joined by '/', as lr_mult "
            f"callables see them, e.g. 'E' or 'embed/table'), got {tables!r}"
        )
    if len(set(out)) != len(out):
        raise ValueError(f"{_OWNER}: `tables` names a parameter twice: {out}")
    return out


def value_and_grad(fun: Callable, tables: str | Sequence[str], *, has_aux: bool = False) -> Callable:
    """Like ``jax.value_and_grad(fun)`` (over the first argument), with row-sparse gradients for ``tables``.

    Args:
      fun: ``fun(params, *args, **kwargs) -> loss`` (or ``(loss, aux)`` with ``has_aux``); it reads each
        table named in ``tables`` only through :func:`lookup`, as often as it likes, with any ids.
      tables: the paths in ``params`` of the tables (keys joined by ``'/'``, the paths ``lr_mult`` callables
        see: ``'E'``, ``'embed/table'``).
      has_aux: as in JAX.

    Returns:
      ``grad_fn(params, *args, **kwargs) -> (value, grads)``: ``grads`` has the structure of ``params``, with
      a :class:`RowSparse` for each table (one row per id looked up at the top level of ``fun``, repeats
      kept and summed wherever the gradient is used) and dense gradients elsewhere. Its loss and gradients
      are those of ``jax.value_and_grad`` of the same computation on dense tables.
    """
    if not callable(fun):
        raise TypeError(f"{_OWNER}: `fun` must be callable, got {fun!r}")
    names = _tables_arg(tables)
    if not isinstance(has_aux, bool):
        raise TypeError(f"{_OWNER}: `has_aux` must be a bool, got {has_aux!r}")

    def grad_fn(params: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        _check_trace_state()
        leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(params)
        paths = [path_name(p) for p, _ in leaves_with_path]
        leaves = [leaf for _, leaf in leaves_with_path]
        unknown = [t for t in names if t not in paths]
        if unknown:
            raise ValueError(
                f"{_OWNER}: `tables` names {unknown}, which are not parameters; paths are {paths}"
            )
        pos = [paths.index(t) for t in names]
        for p in pos:
            leaf = leaves[p]
            if jnp.ndim(leaf) < 1 or not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
                raise ValueError(
                    f"{_OWNER}: table {paths[p]!r} must be a floating-point array of at least 1 dimension, got "
                    f"shape {jnp.shape(leaf)} and dtype {jnp.result_type(leaf)}"
                )
        table_vals = [jnp.asarray(leaves[p]) for p in pos]
        dense_pos = [i for i in range(len(leaves)) if i not in pos]

        def call(session: _Session, dense: list, tabs: list) -> Any:
            full: list = [None] * len(leaves)
            for i, x in zip(dense_pos, dense, strict=True):
                full[i] = x
            for p, t in zip(pos, tabs, strict=True):
                full[p] = _Table(p, paths[p], t, session)
            return fun(jax.tree_util.tree_unflatten(treedef, full), *args, **kwargs)

        found: dict = {}

        def discover(dense: list, tabs: list) -> Any:
            session = _Session("discover")
            out = call(session, dense, tabs)
            found["plan"], found["nested"] = session.plan, session.nested
            return out

        jax.eval_shape(discover, [leaves[i] for i in dense_pos], table_vals)
        plan, nested = found["plan"], sorted(found["nested"])
        deltas = [
            jnp.full(shape + table_vals[pos.index(p)].shape[1:], -0.0, table_vals[pos.index(p)].dtype)
            for p, shape in plan
        ]

        def run(dense: list, nested_tabs: list, deltas: list) -> tuple[Any, tuple]:
            session = _Session("run", plan, deltas, dict(zip(nested, nested_tabs, strict=True)))
            out = call(session, dense, table_vals)
            if len(session.ids) != len(plan):
                raise ValueError(
                    f"{_OWNER}: `fun` made {len(session.ids)} lookups in one trace and {len(plan)} in the other; "
                    "`fun` must be a pure function of its arguments"
                )
            value, aux = out if has_aux else (out, None)
            return value, (aux, session.ids)

        nested_tabs = [table_vals[pos.index(p)] for p in nested]
        (value, (aux, ids)), (g_dense, g_nested, g_deltas) = jax.value_and_grad(
            run, argnums=(0, 1, 2), has_aux=True
        )([leaves[i] for i in dense_pos], nested_tabs, deltas)
        out: list = [None] * len(leaves)
        for i, g in zip(dense_pos, g_dense, strict=True):
            out[i] = g
        for p, t in zip(pos, table_vals, strict=True):
            rows = t.shape[1:]
            idx = [i.reshape(-1) for (q, _), i in zip(plan, ids, strict=True) if q == p]
            val = [d.reshape((-1, *rows)) for (q, _), d in zip(plan, g_deltas, strict=True) if q == p]
            if p in nested:
                idx.append(jnp.arange(t.shape[0], dtype=jnp.int32))
                val.append(g_nested[nested.index(p)])
            if not idx:
                idx, val = [jnp.zeros((0,), jnp.int32)], [jnp.zeros((0, *rows), t.dtype)]
            indices = jnp.concatenate([i.astype(jnp.int32) for i in idx])
            out[p] = RowSparse.tree_unflatten((tuple(t.shape), False), (jnp.concatenate(val), indices))
        grads = jax.tree_util.tree_unflatten(treedef, out)
        return ((value, aux) if has_aux else value), grads

    return grad_fn
