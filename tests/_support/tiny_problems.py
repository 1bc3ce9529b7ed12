"""The tests' two tiny workloads, compiled in seconds: a tiny MLP on generated data (``tiny``) and a tiny embedding
model read through ``mxopt_jax.sparse`` (``tiny_sparse``, two row-sparse tables). Imported by the study's tests
and by the scripts they start in child processes (``distributed_study_script.py``, the resume script)."""

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
