"""Row-sparse gradients: MXNet's ``row_sparse`` storage and ``lazy_update`` for embedding tables.

A :class:`RowSparse` value stands in a gradient pytree in place of a dense leaf: ``k`` rows (``indices``,
``values``) of a tensor of ``shape``, the other rows zero. Every optimizer accepts one. What it does with it
follows MXNet's kernels:

* **lazy** — SGD and Adam with ``lazy_update=True``, LARS with ``lazy_update=True`` (layer-wise norms of the
  whole tensor), Ftrl with ``lazy_update=True`` (MXNet's row_sparse weight), AdaGrad and GroupAdaGrad (their
  sparse kernels, which need ``wd == 0``): only the listed rows of the weight and of every state change, with
  exactly the dense formula (weight decay, bias correction with the parameter's own step count). A listed
  row counts as touched even when its values are zero. The cost scales with ``k``, not with the table (but
  for a table small next to ``k``, whose repeated rows are summed through a table-sized scratch array where
  that is cheaper than sorting the ids: the same rows and sums, bit for bit). The
  returned update is itself a :class:`RowSparse`, which :func:`optax.apply_updates` adds row by row.
* **standard** — every other case: the gradient is densified and the dense update runs, identical to passing
  the dense gradient.

Get a row-sparse gradient from a model with :func:`value_and_grad` (``tables=`` names the tables) around a
loss that reads them with :func:`lookup`, as often as it likes. Compose with optax as usual
(``chain``, ``inject_hyperparams``, ``masked``, ``partition``, ``apply_if_finite``), except for the two optax
transforms that map over every leaf, whose row-sparse-aware counterparts are here: :func:`clip_by_global_norm`
and :class:`MultiSteps` (optax's fail on a ``RowSparse``'s int32 indices: a ``TypeError`` or a
tree-structure ``ValueError``).

Index rule, everywhere (lookup, gradient, ``RowSparse.todense``, ``optax.apply_updates``, lazy updates): ids
must lie in ``[0, rows)``; concrete ids outside raise ``ValueError``; under ``jax.jit`` an out-of-range id
(negative ones included, never wrapped around) reads zeros and its rows are ignored.
"""

from ._src.embedding import lookup, value_and_grad
from ._src.rowsparse import RowSparse, is_row_sparse
from ._src.sparse_transforms import MultiSteps, MultiStepsState, clip_by_global_norm

__all__ = [
    "MultiSteps",
    "MultiStepsState",
    "RowSparse",
    "clip_by_global_norm",
    "is_row_sparse",
    "lookup",
    "value_and_grad",
]
