"""Multi-tensor updates: many parameters updated as one buffer per dtype (MXNet's ``aggregate_num``).

A model with thousands of small parameters pays per-array costs on every step: JAX dispatch (~1.6 µs per
array argument), one XLA kernel per array and operation, and compile time that grows with the number of
arrays. MXNet's answer is its ``multi_*`` kernels; ours is :class:`FlatParams`: the parameters of a pytree,
grouped by dtype (and into chunks of ``aggregate_num`` parameters), each group stored as one contiguous 1-D
buffer. A ``FlatParams`` is a pytree whose leaves are the buffers, so it can be the parameters of a training
step: the model reads its parameters with :meth:`FlatParams.to_tree` (slices that XLA fuses into their
consumers), ``jax.grad`` returns the gradient as a ``FlatParams`` of the same layout, and every mxopt_jax
optimizer updates each buffer in one pass::

    flat = mxopt_jax.multi_tensor.FlatParams.from_tree(params)
    tx = mxopt_jax.lamb(learning_rate=1e-3)
    state = tx.init(flat)                      # state buffers mirror the parameter buffers

    def loss_fn(flat, batch):
        return model_loss(flat.to_tree(), batch)

    grads = jax.grad(loss_fn)(flat, batch)     # a FlatParams
    updates, state = tx.update(grads, state, flat)
    flat = optax.apply_updates(flat, updates)

Per-parameter semantics are kept: ``lr_mult``/``wd_mult`` (and the ``path`` a callable receives) refer to
the original parameters, LARS/LAMB/LANS take their norms per parameter (segment sums), LARS exempts
parameters by name, and results equal the per-parameter path within float32 rounding. GroupAdaGrad needs
2-D parameters and rejects a ``FlatParams``.

The functional constructors' ``aggregate_num`` does the grouping for you on an ordinary parameter tree:
``init`` keeps the state flat and ``update`` concatenates the gradients, updates the buffers and splits the
update back into the tree. That saves per-array work in the update itself, but the concatenation and split
cost two extra passes and, for thousands of arrays, compile time; keeping the parameters flat between steps
(``FlatParams``) is what removes the per-array cost entirely.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .validation import path_name

__all__ = ["FlatParams", "Layout", "is_flat"]


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where each parameter lives in the buffers of a :class:`FlatParams` (static, hashable).

    Attributes:
      treedef: the structure of the original parameter tree.
      paths: each parameter's path (keys joined by ``'/'``), in tree order.
      shapes: each parameter's shape.
      dtypes: each parameter's dtype name.
      groups: for each buffer, the indices of the parameters it holds, in order.
    """

    treedef: Any
    paths: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]

    def sizes(self, group: int) -> tuple[int, ...]:
        return tuple(math.prod(self.shapes[i]) for i in self.groups[group])

    def buffer_size(self, group: int) -> int:
        return sum(self.sizes(group))


def _groups(dtypes: list[str], aggregate_num: Any) -> tuple[tuple[int, ...], ...]:
    by_dtype: dict[str, list[int]] = {}
    for i, dt in enumerate(dtypes):
        by_dtype.setdefault(dt, []).append(i)
    chunk = None if aggregate_num is None or aggregate_num == np.inf else int(aggregate_num)
    out = []
    for idx in by_dtype.values():
        if chunk is None:
            out.append(tuple(idx))
        else:
            out.extend(tuple(idx[k : k + chunk]) for k in range(0, len(idx), chunk))
    return tuple(out)


@jax.tree_util.register_pytree_node_class
class FlatParams:
    """Parameters stored as one 1-D buffer per dtype group; see the module docstring.

    Build with :meth:`from_tree`; read the parameters with :meth:`to_tree`. ``buffers`` are the pytree
    children (so ``jax.grad``, ``jax.jit``, ``optax.apply_updates`` and checkpointing see plain arrays);
    ``layout`` is static.

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.multi_tensor import FlatParams
      >>> flat = FlatParams.from_tree({"w": jnp.ones((2, 3)), "b": jnp.zeros((3,))})
      >>> [b.shape for b in flat.buffers]  # one float32 buffer holds both parameters
      [(9,)]
      >>> flat.to_tree()["w"].shape
      (2, 3)
    """

    __slots__ = ("buffers", "layout")

    def __init__(self, buffers: Sequence[Any], layout: Layout) -> None:
        self.buffers = tuple(buffers)
        self.layout = layout

    def tree_flatten(self) -> tuple[tuple, Layout]:
        return self.buffers, self.layout

    @classmethod
    def tree_unflatten(cls, layout: Layout, children: Any) -> FlatParams:
        obj = object.__new__(cls)
        obj.buffers = tuple(children)
        obj.layout = layout
        return obj

    @classmethod
    def from_tree(cls, tree: Any, aggregate_num: Any = np.inf) -> FlatParams:
        """Group ``tree``'s leaves by dtype (chunks of ``aggregate_num`` leaves; ``inf``: one per dtype)."""
        if aggregate_num is not None and aggregate_num != np.inf:
            if isinstance(aggregate_num, bool) or not isinstance(aggregate_num, (int, np.integer)):
                raise TypeError(
                    f"FlatParams: `aggregate_num` must be an int >= 1 or inf, got {aggregate_num!r}"
                )
            if aggregate_num < 1:
                raise ValueError(
                    f"FlatParams: `aggregate_num` must be an int >= 1 or inf, got {aggregate_num}"
                )
        leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(tree)
        if not leaves_with_path:
            raise ValueError("FlatParams: the parameter tree has no arrays")
        leaves = [jnp.asarray(leaf) for _, leaf in leaves_with_path]
        for (p, _), leaf in zip(leaves_with_path, leaves, strict=True):
            if not jnp.issubdtype(leaf.dtype, jnp.floating):
                raise TypeError(
                    f"FlatParams: parameter {path_name(p) or '<root>'} has dtype {leaf.dtype}; only "
                    "floating-point parameters can be flattened"
                )
        dtypes = [jnp.dtype(leaf.dtype).name for leaf in leaves]
        layout = Layout(
            treedef,
            tuple(path_name(p) for p, _ in leaves_with_path),
            tuple(tuple(leaf.shape) for leaf in leaves),
            tuple(dtypes),
            _groups(dtypes, aggregate_num),
        )
        return cls(_concat(layout, leaves), layout)

    def like(self, tree: Any) -> FlatParams:
        """``tree`` (structured like the original parameters) flattened into this layout."""
        leaves = self.layout.treedef.flatten_up_to(tree)
        return FlatParams(_concat(self.layout, [jnp.asarray(x) for x in leaves]), self.layout)

    def to_tree(self) -> Any:
        """The parameter tree (each leaf a reshaped slice of its buffer)."""
        return self.layout.treedef.unflatten(_split(self.layout, self.buffers))

    def __repr__(self) -> str:
        sizes = [int(b.size) for b in self.buffers]
        return (
            f"FlatParams({len(self.layout.paths)} parameters in {len(self.buffers)} buffers of sizes {sizes})"
        )


def is_flat(x: Any) -> bool:
    return isinstance(x, FlatParams)


def _concat(layout: Layout, leaves: list) -> tuple:
    out = []
    for group in layout.groups:
        parts = [jnp.ravel(leaves[i]) for i in group]
        out.append(parts[0] if len(parts) == 1 else jnp.concatenate(parts))
    return tuple(out)


def _split(layout: Layout, buffers: tuple) -> list:
    leaves: list = [None] * len(layout.paths)
    for g, (group, buf) in enumerate(zip(layout.groups, buffers, strict=True)):
        off = 0
        for i, size in zip(group, layout.sizes(g), strict=True):
            leaves[i] = jax.lax.slice_in_dim(buf, off, off + size).reshape(layout.shapes[i])
            off += size
    return leaves


def segment_info(layout: Layout, group: int) -> dict:
    """What reductions and per-parameter values need to know about buffer ``group`` (static)."""
    return {
        "sizes": layout.sizes(group),
        "names": tuple(layout.paths[i] for i in layout.groups[group]),
    }
