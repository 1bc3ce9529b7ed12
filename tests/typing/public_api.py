"""A user's program, checked by mypy in CI (never run by pytest): the public API type-checks as documented.

``mypy`` (pinned in the ``test`` extra, configured in pyproject.toml) checks this file and the public modules
of ``mxopt_jax``; a wrong annotation in a public signature makes one of these lines an error. A line that must
be rejected carries ``# type: ignore[code]``: with unused ignores reported (below), a signature that accepted
it would make that line an error too.
"""

# mypy: warn-unused-ignores

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
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


def hyperparameters() -> list[optax.GradientTransformation]:
    """Every float hyperparameter takes what optax's take (``optax.ScalarOrSchedule``, on chex's numbers): a
    Python float or int, a JAX scalar, a NumPy scalar, an optax schedule, any ``count -> value`` callable."""
    schedule: optax.Schedule = optax.exponential_decay(1e-3, transition_steps=100, decay_rate=0.9)
    return [
        mxopt_jax.adam(learning_rate=1e-3, beta1=jnp.float32(0.9), epsilon=1e-8, wd=0),
        mxopt_jax.adam(learning_rate=schedule, beta2=jnp.asarray(0.99)),
        mxopt_jax.sgd(0.1, momentum=lambda count: 0.9 - 0.5 * 0.99**count),
        mxopt_jax.lamb(learning_rate=None, lower_bound=1e-3, lr_scheduler=lr_scheduler.FactorScheduler(10)),
        mxopt_jax.rmsprop(learning_rate=np.float32(1e-3), clip_weights=None, rescale_grad=1 / 32),
        mxopt_jax.sgld(learning_rate=0.01, seed=jax.random.key(0)),
        mxopt_jax.adam(learning_rate="1e-3"),  # type: ignore[arg-type]
        mxopt_jax.sgd(momentum="0.9"),  # type: ignore[arg-type]
        mxopt_jax.nag(wd="0"),  # type: ignore[arg-type]
        mxopt_jax.adam(lr_scheduler=0.1),  # type: ignore[arg-type]
    ]


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
