"""One process of ``mxopt-jax compare`` on two tiny workloads; ``tests/app/test_distributed.py`` starts it as
the 2 processes of a ``jax.distributed`` study and as one process alone, and compares what they write.

Run as ``python distributed_study_script.py OUT [compare flags...]``, e.g. ``--devices 2 --coordinator
localhost:PORT --num-processes 2 --process-id 0``. The command line runs as users run it (``main([...])``),
with two workloads small enough to compile in seconds (the tiny MLP and the tiny embedding model of
``tests/app/test_study.py``, registered as ``tiny`` and ``tiny_sparse``) and a tiny quick preset (3 rates x 2
seeds, 2 confirmation seeds); the SGD family (sgd, nag, sgld: SGLD draws from the optimizer's own stream), so
one compiled program per workload and the second compiling in the background while the first runs. Every
process calls the same ``main``: which of them prints and writes is the app's decision, not this script's.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

CONTENDERS = "sgd,nag,sgld"
PROBLEM_NAMES = "tiny,tiny_sparse"


def _mlp_problem():
    import jax
    import jax.numpy as jnp

    from mxopt_jax.compare.problems.base import Problem, Splits

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

    def loss(p, b):
        return jnp.mean((jnp.tanh(b[0] @ p["w1"] + p["b1"]) @ p["w2"] - b[1]) ** 2)

    return Problem(
        "tiny", "tiny MLP", "a tiny MLP on generated data", data, init, loss, loss, "mse", 0.5, 20, 16, 5
    )


def _sparse_problem():
    import jax
    import jax.numpy as jnp

    import mxopt_jax
    from mxopt_jax.compare.problems.base import Problem, Splits

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
        10,
        8,
        5,
        tables=("emb", "bias"),
    )


def main(out: str, flags: list[str]) -> int:
    from mxopt_jax.compare import cli, protocol
    from mxopt_jax.compare.problems import PROBLEMS

    PROBLEMS["tiny"] = _mlp_problem
    PROBLEMS["tiny_sparse"] = _sparse_problem
    protocol.PRESETS["quick"] = dataclasses.replace(
        protocol.PRESETS["quick"], grid_points=3, seeds=2, confirm_seeds=2
    )
    argv = ["compare", "--problems", PROBLEM_NAMES, "--optimizers", CONTENDERS, "--out", out, "--no-plots"]
    return cli.main([*argv, "--no-cache", *flags])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
