"""Workload ``recommender``: matrix factorization of synthetic ratings through row-sparse embedding tables.

The ratings come from a known low-rank model plus noise, drawn with a fixed NumPy seed, with the long tails
of real rating data (a few users and items account for many ratings). The model reads its four tables
(user and item factors, user and item biases) only through :func:`mxopt_jax.sparse.lookup`, so mxopt_jax's
optimizers get row-sparse gradients (one row per rating of the mini-batch) and, with ``lazy_update=True``,
touch only those rows of the weights and of their states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mxopt_jax.sparse import lookup

from ._common import preset_targets, targets_text
from .base import Batch, Params, Problem, Splits

__all__ = ["ITEMS", "RATINGS_SPLIT", "USERS", "recommender"]

USERS, ITEMS = 2_000, 500
#: Rank of the true factors; the model's factors have ``_DIM`` columns.
_RANK, _DIM = 4, 8
#: Ratings in the train / validation / test splits (distinct (user, item) pairs).
RATINGS_SPLIT = (60_000, 4_000, 4_000)
_NOISE = 0.5  # standard deviation of the rating noise: the best possible RMSE
_REG = 0.05  # L2 weight on the factor rows a mini-batch reads
_MU = 3.5
_INIT = 0.1  # std of the initial factors
_SEED = 2024
_TABLES = ("users", "items", "user_bias", "item_bias")


def _data() -> Splits:
    rng = np.random.default_rng(_SEED)
    p = rng.normal(size=(USERS, _RANK)) / _RANK**0.25
    q = rng.normal(size=(ITEMS, _RANK)) / _RANK**0.25
    bu = rng.normal(0.0, 0.3, USERS)
    bi = rng.normal(0.0, 0.5, ITEMS)
    # long tails: user activity log-normal, item popularity Zipf-like over a random order of the items
    pu = rng.lognormal(0.0, 1.0, USERS)
    pu /= pu.sum()
    pi = 1.0 / (1.0 + rng.permutation(ITEMS)) ** 0.8
    pi /= pi.sum()
    n = sum(RATINGS_SPLIT)
    pairs = np.zeros(0, np.int64)
    while len(pairs) < n:  # distinct pairs, in the order first drawn (shuffled before the split)
        more = rng.choice(USERS, 2 * n, p=pu) * ITEMS + rng.choice(ITEMS, 2 * n, p=pi)
        both = np.concatenate([pairs, more])
        _, first = np.unique(both, return_index=True)
        pairs = both[np.sort(first)]
    pairs = pairs[:n]
    u, i = pairs // ITEMS, pairs % ITEMS
    r = _MU + bu[u] + bi[i] + np.sum(p[u] * q[i], axis=1) + rng.normal(0.0, _NOISE, n)
    # the pairs come in drawing order, where the popular ones come first: cutting that order would give the
    # validation and test splits rarer items and users than training; a seeded permutation splits at random
    order = rng.permutation(n)
    cols = (u[order].astype(np.int32), i[order].astype(np.int32), r[order].astype(np.float32))
    bounds = np.cumsum((0, *RATINGS_SPLIT))
    return Splits(*(tuple(c[a:b] for c in cols) for a, b in zip(bounds[:-1], bounds[1:], strict=True)))


def _init(key: jax.Array) -> Params:
    """Factors normal with std 0.1, biases zero, the global offset at the middle of the scale (3.5)."""
    ku, ki = jax.random.split(key)
    return {
        "users": _INIT * jax.random.normal(ku, (USERS, _DIM), jnp.float32),
        "items": _INIT * jax.random.normal(ki, (ITEMS, _DIM), jnp.float32),
        "user_bias": jnp.zeros((USERS,), jnp.float32),
        "item_bias": jnp.zeros((ITEMS,), jnp.float32),
        "mu": jnp.full((), _MU, jnp.float32),
    }


def _predict(params: Params, u: jax.Array, i: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``mu + b_u + b_i + <p_u, q_i>`` for each (user, item) pair, and the factor rows read."""
    pu = lookup(params["users"], u)
    qi = lookup(params["items"], i)
    pred = params["mu"] + lookup(params["user_bias"], u) + lookup(params["item_bias"], i)
    return pred + jnp.sum(pu * qi, axis=-1), pu, qi


def _loss(params: Params, batch: Batch) -> jax.Array:
    """Mean squared error of the mini-batch's ratings + ``_REG`` times the squared norms of the rows it read."""
    u, i, r = batch
    pred, pu, qi = _predict(params, u, i)
    return jnp.mean((pred - r) ** 2) + _REG * jnp.mean(jnp.sum(pu**2 + qi**2, axis=-1))


def _rmse(params: Params, batch: Batch) -> jax.Array:
    """Root mean squared error of the predicted ratings."""
    u, i, r = batch
    return jnp.sqrt(jnp.mean((_predict(params, u, i)[0] - r) ** 2))


def n_params() -> int:
    """Parameters of the model."""
    return (USERS + ITEMS) * (_DIM + 1) + 1


def recommender() -> Problem:
    """Synthetic ratings, matrix factorization with row-sparse user/item tables; metric: RMSE."""
    steps, quick, batch, every = 600, 200, 512, 10
    targets = preset_targets(quick=1.03, full=0.809)
    return Problem(
        name="recommender",
        title=f"ratings, matrix factorization {USERS:,} users x {ITEMS:,} items",
        description=(
            f"Data: {sum(RATINGS_SPLIT):,} ratings of {ITEMS:,} items by {USERS:,} users, drawn with a fixed "
            f"NumPy seed from a rank-{_RANK} model (user and item factors, user and item biases, offset {_MU}) "
            f"plus Gaussian noise of std {_NOISE} (the best achievable RMSE), on distinct (user, item) pairs "
            "with long-tailed user activity (log-normal) and item popularity (Zipf-like); nothing downloaded; "
            f"split {RATINGS_SPLIT[0]:,}/{RATINGS_SPLIT[1]:,}/{RATINGS_SPLIT[2]:,} (train/validation/test) at "
            f"random. Model: prediction mu + b_u + b_i + <p_u, q_i> with factor tables {USERS:,}x{_DIM} and "
            f"{ITEMS:,}x{_DIM} and bias tables, all four read only through mxopt_jax.sparse.lookup "
            f"(tables={_TABLES}: row-sparse gradients, lazy updates where the optimizer has them); "
            f"{n_params():,} parameters. Loss: mean squared error of a mini-batch + {_REG:g} x the mean squared "
            "norm of the factor rows it reads. Metric: RMSE on the validation and test ratings. Budget: "
            f"{steps} steps (quick: {quick}), batch {batch}, evaluated every {every} steps. "
            + targets_text(
                "RMSE",
                targets,
                "quick (200 steps): at step 100 optax.adam 1.02, optax.sgd 1.18, sgd 1.22, adagrad 1.00, rmsprop 1.01; steps to reach 1.03: adagrad 90-100, optax.adam and rmsprop 90-110, optax.sgd and sgd never (they stay near the biases-only fit); full (600 steps): at step 300 optax.adam 0.808, optax.sgd 1.03, sgd 1.18, adagrad 0.697, rmsprop 0.718; steps to reach 0.809: adagrad 180-200, rmsprop 190-210, optax.adam 290-320, optax.sgd 450-470, sgd never (the noise floor is 0.5; predicting the offset alone scores about 1.27).",
            )
        ),
        data=_data,
        init=_init,
        loss=_loss,
        metric=_rmse,
        metric_name="RMSE",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        quick_steps=quick,
        tables=_TABLES,
    )
