"""End-to-end training with Flax (linen ``TrainState``, ``nnx.Optimizer``) and Haiku, for FTML, Adam, LAMB
and Ftrl: the loss drops clearly, and each framework's loop equals a plain optax loop on the same model.

Every training run is one compiled ``lax.fori_loop`` (nnx: one ``nnx.jit`` step), and models are tiny.
The whole sweep over all 22 optimizers with ``TrainState`` is marked ``slow``.
"""

from __future__ import annotations

import warnings

import chex
import flax.linen as nn
import haiku as hk
import jax
import jax.numpy as jnp
import optax
import pytest
from compat import nnx_leaves, nnx_optimizer, nnx_update, partition
from flax import nnx
from flax.training import train_state
from host_random import normal
from interop_common import NAMES

import mxopt_jax

STEPS = 80
OPTS = {
    "ftml": dict(learning_rate=0.01),
    "adam": dict(learning_rate=0.01),
    "lamb": dict(learning_rate=0.01, wd=1e-4),
    "ftrl": dict(learning_rate=0.5, lamda1=0.0),
}


# The integration is the same code for every optimizer: two of the four per framework in the default run, the
# other two under ``slow`` (each trains a model: a compile and 80 steps).
DEFAULT = {"linen": ("adam", "lamb"), "nnx": ("ftml", "ftrl"), "haiku": ("adam", "ftrl")}


def _names(framework: str) -> list:
    return [n if n in DEFAULT[framework] else pytest.param(n, marks=pytest.mark.slow) for n in sorted(OPTS)]


def make(name: str, **kw) -> optax.GradientTransformation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**{**OPTS.get(name, {}), **kw})


def data(image: bool):
    x = normal(0, (64, 6, 6, 1))
    w_true = normal(1, (36,))
    y = jnp.tanh(x.reshape(64, -1) @ w_true / 6.0)[:, None]
    return (x if image else x.reshape(64, -1)), y


def plain_loop(tx, loss_fn, params, steps=STEPS):
    """The reference: tx.update + optax.apply_updates, compiled as one loop."""

    def body(_, carry):
        p, s = carry
        u, s = tx.update(jax.grad(loss_fn)(p), s, p)
        return optax.apply_updates(p, u), s

    return jax.jit(lambda p: jax.lax.fori_loop(0, steps, body, (p, tx.init(p))))(params)


def assert_trained(loss_fn, before, after, factor=0.2):
    l0, l1 = float(loss_fn(before)), float(loss_fn(after))
    assert l1 < factor * l0, (l0, l1)


# --------------------------------------------------------------------------- Flax linen + TrainState
class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(4, (3, 3))(x))
        x = nn.relu(nn.Dense(16)(x.reshape(x.shape[0], -1)))
        return nn.Dense(1)(x)


def _linen_train(tx):
    x, y = data(image=True)
    model = CNN()
    params = model.init(jax.random.PRNGKey(2), x)["params"]

    def loss_fn(p):
        return jnp.mean((model.apply({"params": p}, x) - y) ** 2)

    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    def body(_, s):
        return s.apply_gradients(grads=jax.grad(loss_fn)(s.params))

    return loss_fn, params, jax.jit(lambda s: jax.lax.fori_loop(0, STEPS, body, s))(state)


@pytest.mark.parametrize(
    "compare_all", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["", "vs-plain"]
)
@pytest.mark.parametrize("name", _names("linen"))
def test_flax_train_state(name, compare_all):
    """TrainState.apply_gradients training; equal to a plain optax loop (LAMB by default, all four when slow:
    the comparison costs a second compile)."""
    if compare_all and name == "lamb":
        pytest.skip("compared in the default run")
    loss_fn, params, state = _linen_train(make(name))
    assert int(state.step) == STEPS and int(state.opt_state.count) == STEPS
    assert_trained(loss_fn, params, state.params)
    if name == "lamb" or compare_all:
        ref_params, ref_state = plain_loop(make(name), loss_fn, params)
        chex.assert_trees_all_close(state.params, ref_params, rtol=1e-5, atol=1e-6)
        chex.assert_trees_all_close(state.opt_state, ref_state, rtol=1e-5, atol=1e-6)


FACTOR_ALL = {"signum": 0.5, "adadelta": 0.5, "lars": 0.6}
LR_ALL = {
    "sgd": 0.05, "nag": 0.05, "ccsgd": 0.05, "dcasgd": 0.05, "lbsgd": 0.05, "test": 0.05, "sgld": 1e-3,
    "signum": 0.003, "adagrad": 0.05, "adadelta": 1.0, "rmsprop": 0.003, "lars": 0.5, "lans": 0.01,
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_flax_train_state_every_optimizer(name):
    if name == "groupadagrad":  # 2-D parameters only: route the others elsewhere (docs/interop.md)
        labels = lambda p: jax.tree.map(lambda x: "g" if x.ndim == 2 else "other", p)  # noqa: E731
        tx = partition({"g": make(name, learning_rate=0.05), "other": make("adam")}, labels)
    else:
        tx = make(name, **({"learning_rate": LR_ALL[name]} if name in LR_ALL else {}))
    loss_fn, params, state = _linen_train(tx)
    if name == "sgld":  # a sampler: its Langevin noise does not minimize the loss; same draws as plain optax
        ref_params, _ = plain_loop(tx, loss_fn, params)
        chex.assert_trees_all_close(state.params, ref_params, rtol=1e-5, atol=1e-6)
        chex.assert_tree_all_finite(state.params)
        return
    assert_trained(loss_fn, params, state.params, FACTOR_ALL.get(name, 0.3))


# --------------------------------------------------------------------------- Flax NNX + nnx.Optimizer
class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(36, 16, rngs=rngs)
        self.out = nnx.Linear(16, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


@pytest.mark.parametrize(
    "compare_all", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["", "vs-plain"]
)
@pytest.mark.parametrize("name", _names("nnx"))
def test_flax_nnx_optimizer(name, compare_all):
    """nnx.Optimizer training; equal to a plain optax loop (FTML by default, all four when slow)."""
    if compare_all and name == "ftml":
        pytest.skip("compared in the default run")
    x, y = data(image=False)
    model = MLP(nnx.Rngs(0))
    graphdef, params0 = nnx.split(nnx.clone(model), nnx.Param)  # an untouched copy for the reference
    optimizer = nnx_optimizer(model, make(name))

    def model_loss(m):
        return jnp.mean((m(x) - y) ** 2)

    @nnx.jit
    def step(m, opt):
        grads = nnx.grad(model_loss)(m)
        nnx_update(opt, m, grads)

    for _ in range(STEPS):
        step(model, optimizer)
    trained = nnx.state(model, nnx.Param)

    def loss_fn(p):
        return model_loss(nnx.merge(graphdef, p))

    assert_trained(loss_fn, params0, trained)
    assert int(optimizer.opt_state.count[...]) == STEPS  # the NamedTuple state lives in the Optimizer
    if name == "ftml" or compare_all:
        ref_params, _ = plain_loop(make(name), loss_fn, params0)
        chex.assert_trees_all_close(
            nnx_leaves(trained),
            nnx_leaves(ref_params),
            rtol=1e-5,
            atol=1e-6,
        )


# --------------------------------------------------------------------------- Haiku
@pytest.mark.parametrize("name", _names("haiku"))
def test_haiku_transformed_model(name):
    """A haiku.transform'ed MLP: its nested ``{'mlp/~/linear_0': {'w', 'b'}}`` params are a plain pytree."""
    x, y = data(image=False)
    net = hk.without_apply_rng(hk.transform(lambda v: hk.nets.MLP([16, 1])(v)))
    params = net.init(jax.random.PRNGKey(3), x)

    def loss_fn(p):
        return jnp.mean((net.apply(p, x) - y) ** 2)

    trained, opt_state = plain_loop(make(name), loss_fn, params)
    assert_trained(loss_fn, params, trained)
    assert int(opt_state.count) == STEPS
    chex.assert_trees_all_equal_structs(trained, params)
    for field in opt_state._fields:  # every per-parameter state entry is a tree shaped like the params
        sub = getattr(opt_state, field)
        if field not in ("count", "master") and sub is not None:
            chex.assert_trees_all_equal_shapes(sub, params)
