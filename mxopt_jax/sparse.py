"""Row-sparse gradients: MXNet's ``row_sparse`` storage and ``lazy_update`` for embedding tables.

A :class:`RowSparse` value stands in a gradient pytree in place of a dense leaf: ``k`` rows (``indices``,
``values``) of a tensor of ``shape``, the other rows zero. Every optimizer accepts one. What it does with it
follows MXNet's kernels:

* **lazy** — SGD and Adam with ``lazy_update=True``, LARS with ``lazy_update=True`` (layer-wise norms of the
  whole tensor), Ftrl with ``lazy_update=True`` (MXNet's row_sparse weight), AdaGrad and GroupAdaGrad (their
  sparse kernels, which need ``wd == 0``): only the listed rows of the weight and of every state change, with
  exactly the dense formula (weight decay, bias correction with the parameter's own step count). A listed
  row counts as touched even when its values are zero. The cost scales with ``k``, not with the table. The
  returned update is itself a :class:`RowSparse`, which :func:`optax.apply_updates` adds row by row.
* **standard** — every other case: the gradient is densified and the dense update runs, identical to passing
  the dense gradient.

Get a row-sparse gradient from a model with :func:`lookup` inside the loss and :func:`value_and_grad` around
it. Indices must lie in ``[0, shape[0])``: concrete indices are checked (``ValueError``); under ``jax.jit``
rows with an out-of-range index, negative ones included, are ignored (never wrapped around).
"""

from ._src.embedding import lookup, value_and_grad
from ._src.rowsparse import RowSparse, is_row_sparse

__all__ = ["RowSparse", "is_row_sparse", "lookup", "value_and_grad"]
