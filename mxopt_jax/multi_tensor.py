"""Multi-tensor updates: many parameters updated as one buffer per dtype (MXNet's ``aggregate_num``).

A model with thousands of small parameters pays per-array costs on every step: JAX dispatch, one XLA kernel
per array and operation, and compile time that grows with the number of arrays. :class:`FlatParams` holds the
parameters of a pytree grouped by dtype (and into chunks of ``aggregate_num`` parameters), each group one
contiguous 1-D buffer, and every mxopt_jax optimizer updates each buffer in one pass::

    flat = mxopt_jax.multi_tensor.FlatParams.from_tree(params)
    tx = mxopt_jax.lamb(learning_rate=1e-3)
    state = tx.init(flat)                      # state buffers mirror the parameter buffers

    def loss_fn(flat, batch):
        return model_loss(flat.to_tree(), batch)

    grads = jax.grad(loss_fn)(flat, batch)     # a FlatParams
    updates, state = tx.update(grads, state, flat)
    flat = optax.apply_updates(flat, updates)

Per-parameter semantics are kept: ``lr_mult``/``wd_mult`` (and the ``path`` a callable receives) refer to the
original parameters, LARS/LAMB/LANS take their norms per parameter (segment sums), LARS exempts parameters by
name, and results equal the per-parameter path within float32 rounding. GroupAdaGrad needs 2-D parameters and
rejects a ``FlatParams``. The functional constructors' ``aggregate_num`` does the grouping on an ordinary
parameter tree at every call (two extra passes); keeping the parameters flat between steps removes the
per-array cost entirely.
"""

from ._src.flatparams import FlatParams, Layout, is_flat

__all__ = ["FlatParams", "Layout", "is_flat"]
