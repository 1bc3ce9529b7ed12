"""A user's program, checked by mypy in CI (never run by pytest): the public API type-checks as documented.

``mypy`` (pinned in the ``test`` extra, configured in pyproject.toml) checks this file and the public modules
of ``mxopt_jax``; a wrong annotation in a public signature makes one of these lines an error.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

import mxopt_jax
import mxopt_jax.sparse as sp
from mxopt_jax import facade, lr_scheduler, multi_tensor, mxnet_format


def functional() -> tuple[optax.Params, optax.OptState]:
    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    tx: optax.GradientTransformation = optax.chain(
        mxopt_jax.adam(learning_rate=1e-3, wd=1e-4), mxopt_jax.lamb(learning_rate=1e-3)
    )
    state = tx.init(params)
    updates, state = tx.update(jax.tree.map(jnp.ones_like, params), state, params)
    return optax.apply_updates(params, updates), state


def sparse() -> sp.RowSparse:
    def loss(params: dict[str, jax.Array], ids: jax.Array) -> jax.Array:
        return jnp.sum(sp.lookup(params["E"], ids) ** 2)

    grad_fn = sp.value_and_grad(loss, tables="E")
    _, grads = grad_fn({"E": jnp.ones((10, 2))}, jnp.array([1, 2]))
    g: sp.RowSparse = grads["E"]
    clip: optax.GradientTransformation = sp.clip_by_global_norm(1.0)
    del clip
    dense: jax.Array = g.todense()
    del dense
    ok: bool = sp.is_row_sparse(g)
    del ok
    return g


def mxnet_style() -> None:
    opt: facade.Optimizer = facade.create("adam", learning_rate=0.1)
    lamb = facade.LAMB(learning_rate=0.1)
    updater = facade.get_updater(opt)
    del lamb, updater
    sched = lr_scheduler.FactorScheduler(step=10, factor=0.5)
    rate: float = sched(20)
    del rate
    flat = multi_tensor.FlatParams.from_tree({"w": jnp.ones(3)})
    tree = flat.to_tree()
    del tree
    load = mxnet_format.load_params
    del load
