"""Shared helpers of the interop, checkpoint, hostile-input and dtype tests (every optimizer)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import optax
from host_random import normal

import mxopt_jax

NAMES = sorted(mxopt_jax.OPTIMIZERS)

# Hyperparameters that make every optimizer move noticeably in a few steps, with some options switched on.
KW = {
    "sgd": dict(learning_rate=0.05, momentum=0.9, wd=1e-3),
    "nag": dict(learning_rate=0.05, momentum=0.9),
    "signum": dict(learning_rate=0.01, wd_lh=1e-3),
    "sgld": dict(learning_rate=1e-3, seed=7),
    "dcasgd": dict(learning_rate=0.05, momentum=0.9),
    "lbsgd": dict(learning_rate=0.05, momentum=0.9),
    "ccsgd": dict(learning_rate=0.05, momentum=0.9),
    "adagrad": dict(learning_rate=0.1, wd=1e-3),
    "groupadagrad": dict(learning_rate=0.1),
    "adadelta": dict(learning_rate=1.0),
    "rmsprop": dict(learning_rate=0.01, centered=True),
    "adam": dict(learning_rate=0.05, wd=1e-3),
    "adamw": dict(learning_rate=0.05, wd=0.01),
    "adamax": dict(learning_rate=0.05),
    "nadam": dict(learning_rate=0.05),
    "adabelief": dict(learning_rate=0.05, wd=1e-3),
    "ftrl": dict(learning_rate=0.1),
    "ftml": dict(learning_rate=0.05),
    "lars": dict(learning_rate=1.0, momentum=0.9, eta=0.01, wd=1e-3),
    "lamb": dict(learning_rate=0.05, wd=0.01),
    "lans": dict(learning_rate=0.05, wd=0.01),
    "test": dict(learning_rate=0.05),
}


def make(name: str, **kw) -> optax.GradientTransformation:
    """``mxopt_jax.OPTIMIZERS[name]`` with :data:`KW` (overridden by ``kw``); 1.x deprecations silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**{**KW[name], **kw})


def params_for(name: str, dtype=jnp.float32) -> dict:
    """A flat dict of two parameters (names matter to LARS: ``bias`` is exempt from its trust ratio);
    GroupAdaGrad gets 2-D leaves only. Few distinct shapes keep eager op compiles shared across tests."""
    if name == "groupadagrad":
        return {"emb": normal((0, 0), (4, 3), dtype), "table": normal((0, 1), (2, 3), dtype)}
    return {"kernel": normal((0, 0), (4, 3), dtype), "bias": normal((0, 1), (3,), dtype)}


def grads_for(params, step: int = 0):
    """Deterministic pseudo-random gradients shaped like ``params`` (a different draw per ``step``)."""
    leaves, treedef = jax.tree.flatten(params)
    return treedef.unflatten([normal((100 + step, i), x.shape, x.dtype) for i, x in enumerate(leaves)])


def run(tx: optax.GradientTransformation, params, steps: int = 3, start: int = 0, state=None, update=None):
    """``steps`` updates from ``state`` (or ``tx.init``) with :func:`grads_for` gradients ``start, ...``."""
    state = tx.init(params) if state is None else state
    update = tx.update if update is None else update
    for s in range(start, start + steps):
        u, state = update(grads_for(params, s), state, params)
        params = optax.apply_updates(params, u)
    return params, state
