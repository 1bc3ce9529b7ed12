"""The tests' tiny workloads, compiled in seconds: a tiny MLP on generated data (``tiny``), a tiny embedding
model read through ``mxopt_jax.sparse`` (``tiny_sparse``, two row-sparse tables) and the tiny MLP with a
BatchNorm layer whose running statistics are model state (``tiny_bn``). Imported by the study's tests and by
the scripts they start in child processes (``distributed_study_script.py``, the resume script)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import mxopt_jax
from mxopt_jax.compare.problems.base import Problem, Splits


def mlp_problem(steps: int = 20, eval_every: int = 5, target: float = 0.5) -> Problem:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 1))
    x = rng.normal(size=(300, 6)).astype(np.float32)
    y = (np.tanh(x @ w) + 0.1 * rng.normal(size=(300, 1))).astype(np.float32)

    def data() -> Splits:
        return Splits((x[:200], y[:200]), (x[200:250], y[200:250]), (x[250:], y[250:]))

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "w1": jax.random.normal(k1, (6, 8)) / 3.0,
            "b1": jnp.zeros(8),
            "w2": jax.random.normal(k2, (8, 1)) / 3.0,
        }

    def predict(p, x):
        return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]

    def loss(p, b):
        return jnp.mean((predict(p, b[0]) - b[1]) ** 2)

    return Problem(
        "tiny",
        "tiny MLP",
        "a tiny MLP on generated data",
        data,
        init,
        loss,
        loss,
        "mse",
        target,
        steps,
        16,
        eval_every,
    )


def sparse_problem(steps: int = 10) -> Problem:
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 500, size=(400, 3)).astype(np.int32)
    y = rng.normal(size=(400,)).astype(np.float32)

    def data() -> Splits:
        return Splits((ids[:300], y[:300]), (ids[300:350], y[300:350]), (ids[350:], y[350:]))

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "emb": 0.1 * jax.random.normal(k1, (500, 4)),
            "bias": jnp.zeros((500,)),
            "w": 0.1 * jax.random.normal(k2, (4,)),
        }

    def loss(p, b):
        e = mxopt_jax.sparse.lookup(p["emb"], b[0]).sum(axis=1)
        bias = mxopt_jax.sparse.lookup(p["bias"], b[0]).sum(axis=1)
        return jnp.mean((e @ p["w"] + bias - b[1]) ** 2)

    return Problem(
        "tiny_sparse",
        "tiny embedding",
        "a tiny embedding model",
        data,
        init,
        loss,
        loss,
        "mse",
        0.5,
        steps,
        8,
        5,
        tables=("emb", "bias"),
    )


def bn_problem(
    steps: int = 20, eval_every: int = 5, momentum: float = 0.8, tables: tuple[str, ...] = ()
) -> Problem:
    """``tiny``'s data and MLP with a BatchNorm on the hidden layer: the running mean and variance are the
    model's state (``init_state``), moved by each training batch, read by the metric. With ``tables``, the
    first layer's weights are read through :func:`mxopt_jax.sparse.lookup` by row (row-sparse gradients)."""
    base = mlp_problem(steps, eval_every)
    init_params = base.init

    def init_state(key):
        del key
        return {"mean": jnp.zeros(8), "var": jnp.ones(8)}

    def hidden(p, x):
        if tables:
            return x @ mxopt_jax.sparse.lookup(p["w1"], jnp.arange(6))
        return x @ p["w1"]

    def forward(p, s, x, train):
        h = hidden(p, x)
        if train:
            mean, var = h.mean(axis=0), h.var(axis=0)
            new = {
                "mean": momentum * s["mean"] + (1 - momentum) * mean,
                "var": momentum * s["var"] + (1 - momentum) * var,
            }
        else:
            (mean, var), new = (s["mean"], s["var"]), s
        h = (h - mean) / jnp.sqrt(var + 1e-5) + p["b1"]
        return jnp.tanh(h) @ p["w2"], jax.lax.stop_gradient(new)

    def loss(p, s, b):
        pred, new = forward(p, s, b[0], True)
        return jnp.mean((pred - b[1]) ** 2), new

    def metric(p, s, b):
        return jnp.mean((forward(p, s, b[0], False)[0] - b[1]) ** 2)

    return Problem(
        "tiny_bn",
        "tiny MLP with BatchNorm",
        "a tiny MLP with a BatchNorm (model state) on generated data",
        base.data,
        init_params,
        loss,
        metric,
        "mse",
        0.5,
        steps,
        16,
        eval_every,
        tables=tables,
        init_state=init_state,
    )
