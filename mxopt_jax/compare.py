"""Compare optimizers on a built-in task: the library's main job (``mxopt-jax compare``).

The task needs no download: a generated 3-class spiral classification set (600 points in 2-D) learned by a
small MLP (2-32-32-3, tanh), full-batch, the same initialization and data for every optimizer. Each optimizer
uses a hand-picked learning rate that suits this task (``TUNED_LR``; MXNet's default rates are meant for
mini-batch training and are too small for a few hundred full-batch steps); every other hyperparameter is
MXNet's default. Pass ``learning_rate`` to :func:`train` to try others.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import OPTIMIZERS

#: Hand-picked learning rates for the built-in task.
TUNED_LR = {
    "sgd": 0.3,
    "ccsgd": 0.3,
    "nag": 0.1,
    "signum": 0.01,
    "sgld": 0.003,
    "dcasgd": 0.3,
    "lbsgd": 0.3,
    "adagrad": 0.1,
    "groupadagrad": 0.1,
    "adadelta": 1.0,
    "rmsprop": 0.01,
    "adam": 0.01,
    "adamw": 0.01,
    "adamax": 0.03,
    "nadam": 0.01,
    "adabelief": 0.01,
    "ftrl": 0.3,
    "ftml": 0.03,
    "lars": 3.0,
    "lamb": 0.03,
    "lans": 0.03,
    "test": 0.3,
}
DEFAULT_OPTIMIZERS = (
    "sgd",
    "nag",
    "adagrad",
    "rmsprop",
    "adam",
    "adamw",
    "nadam",
    "adabelief",
    "ftml",
    "lamb",
)


class Result(NamedTuple):
    name: str
    learning_rate: float
    final_loss: float
    accuracy: float
    steps: int
    ms_per_step: float
    losses: np.ndarray


def spiral_dataset(n_per_class: int = 200, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A generated 2-D spiral classification set (no download)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.normal(0, 0.2, n_per_class)
        xs.append(np.stack([r * np.sin(theta), r * np.cos(theta)], axis=1))
        ys.append(np.full(n_per_class, c))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int32)


def init_mlp(key: jax.Array, sizes: Sequence[int] = (2, 32, 32, 3)) -> dict:
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        key, sub = jax.random.split(key)
        params[f"fc{i}_weight"] = jax.random.normal(sub, (a, b)) * np.sqrt(1.0 / a)
        params[f"fc{i}_bias"] = jnp.zeros((b,))
    return params


def mlp(params: dict, x: jax.Array) -> jax.Array:
    n = len(params) // 2
    for i in range(n):
        x = x @ params[f"fc{i}_weight"] + params[f"fc{i}_bias"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x


def loss_fn(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(mlp(params, x), y).mean()


def train(name: str, steps: int = 300, seed: int = 0, learning_rate: float | None = None) -> Result:
    """Train the built-in task with one optimizer; returns the loss curve and the final metrics."""
    x, y = spiral_dataset(seed=seed)
    x, y = jnp.asarray(x), jnp.asarray(y)
    params = init_mlp(jax.random.PRNGKey(seed))
    lr = TUNED_LR[name] if learning_rate is None else learning_rate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tx = OPTIMIZERS[name](learning_rate=lr)
    if name == "groupadagrad":  # rows of 2-D weights; biases (1-D) get AdaGrad's row of one
        tx = optax.multi_transform(
            {"rows": tx, "bias": OPTIMIZERS["adagrad"](learning_rate=lr)},
            lambda p: {k: "rows" if v.ndim == 2 else "bias" for k, v in p.items()},
        )
    state = tx.init(params)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    params, state, loss = step(params, state)  # compile
    losses = [float(loss)]
    t0 = time.perf_counter()
    for _ in range(steps - 1):
        params, state, loss = step(params, state)
        losses.append(loss)
    jax.block_until_ready(params)
    elapsed = time.perf_counter() - t0
    final = float(loss_fn(params, x, y))
    acc = float(jnp.mean(jnp.argmax(mlp(params, x), axis=1) == y))
    return Result(
        name, lr, final, acc, steps, 1e3 * elapsed / max(steps - 1, 1), np.asarray(losses, np.float32)
    )


def format_table(results: Sequence[Result]) -> str:
    rows = sorted(results, key=lambda r: (np.nan_to_num(r.final_loss, nan=np.inf), r.name))
    lines = [
        f"{'rank':>4}  {'optimizer':<13} {'lr':>7} {'final loss':>11} {'accuracy':>9} {'steps':>6} {'ms/step':>8}",
        "-" * 66,
    ]
    for i, r in enumerate(rows, 1):
        lines.append(
            f"{i:>4}  {r.name:<13} {r.learning_rate:>7g} {r.final_loss:>11.4f} {100 * r.accuracy:>8.1f}% "
            f"{r.steps:>6d} {r.ms_per_step:>8.3f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="compare optimizers on a built-in classification task")
    cmp.add_argument(
        "--optimizers",
        default=",".join(DEFAULT_OPTIMIZERS),
        help="comma-separated MXNet names, or 'all' (default: %(default)s)",
    )
    cmp.add_argument(
        "--steps", type=int, default=300, help="full-batch training steps (default: %(default)s)"
    )
    cmp.add_argument(
        "--seed", type=int, default=0, help="data and initialization seed (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    names = (
        sorted(OPTIMIZERS)
        if args.optimizers == "all"
        else [n.strip().lower() for n in args.optimizers.split(",")]
    )
    unknown = [n for n in names if n not in OPTIMIZERS]
    if unknown:
        parser.error(f"unknown optimizer(s) {unknown}; known: {', '.join(sorted(OPTIMIZERS))}")
    if args.steps < 2:
        parser.error("--steps must be >= 2")
    print(
        f"Built-in task: 3-class spiral (600 points), MLP 2-32-32-3, {args.steps} full-batch steps, seed {args.seed}"
    )
    results = []
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name} ...", flush=True)
        results.append(train(name, steps=args.steps, seed=args.seed))
    print(format_table(results))
    return 0
