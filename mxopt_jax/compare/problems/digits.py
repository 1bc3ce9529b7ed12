"""Workload ``digits_mlp``: an MLP classifier on scikit-learn's bundled 8x8 digits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._common import (
    dense_init,
    digits_raw,
    param_count,
    preset_targets,
    softmax_cross_entropy,
    standardize,
    stratified_split,
    targets_text,
)
from .base import Batch, Params, Problem, Splits

__all__ = ["DIGITS_SPLIT", "digits_mlp"]

#: Sizes of the train / validation / test splits of the 1797 digits (stratified by class, fixed seed).
DIGITS_SPLIT = (1077, 360, 360)
_SIZES = (64, 128, 10)


def _data() -> Splits:
    x, y = digits_raw()
    tr, va, te = stratified_split(y, DIGITS_SPLIT)
    xs = standardize(x[tr], x[va], x[te])
    return Splits(*((xi, y[i].astype(np.int32)) for xi, i in zip(xs, (tr, va, te), strict=True)))


def _init(key: jax.Array) -> Params:
    return dense_init(key, _SIZES)


def _logits(params: Params, x: jax.Array) -> jax.Array:
    """``tanh(x W1 + b1) W2 + b2``: the class scores of standardized images ``x`` (batch, 64)."""
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _loss(params: Params, batch: Batch) -> jax.Array:
    x, y = batch
    return softmax_cross_entropy(_logits(params, x), y).mean()


def _metric(params: Params, batch: Batch) -> jax.Array:
    """Error rate in %: the share of examples whose highest score is not their label."""
    x, y = batch
    return 100.0 * jnp.mean(jnp.argmax(_logits(params, x), axis=-1) != y)


def digits_mlp() -> Problem:
    """Digits (1797 8x8 images, 10 classes), MLP 64-128-10 (tanh), cross-entropy; metric: error %."""
    n = param_count(_SIZES)
    steps, quick, batch, every = 900, 300, 64, 10
    targets = preset_targets(quick=3.73, full=3.45)
    return Problem(
        name="digits_mlp",
        title="digits, MLP 64-128-10",
        description=(
            "Data: scikit-learn's bundled digits (1797 8x8 grey images, 10 classes, nothing downloaded), "
            f"split {DIGITS_SPLIT[0]}/{DIGITS_SPLIT[1]}/{DIGITS_SPLIT[2]} (train/validation/test) stratified by "
            "class with a fixed seed; pixels standardized with the training split's mean and deviation. "
            f"Model: MLP 64-128-10, tanh hidden layer, LeCun-normal init, {n:,} parameters. "
            "Loss: mean softmax cross-entropy of a mini-batch. Metric: error rate in % on the validation and "
            f"test splits (360 images each: one image is 0.28 %). Budget: {steps} steps (quick: {quick}), "
            f"batch {batch}, evaluated every {every} steps. "
            + targets_text(
                "error (%)",
                targets,
                "(evaluated every 25 steps then) quick (300 steps): at step 150 optax.adam 3.5, optax.sgd 4.89, sgd 3.78, adagrad 3.72, rmsprop 3.67 %; steps to reach 3.73: optax.adam 75-125, sgd 125-175 (3 of 5 seeds), adagrad 75-175, rmsprop 100-150, optax.sgd never; full (900 steps): at step 450 optax.adam 3.33, optax.sgd 3.5, sgd 3.61, adagrad 3.44, rmsprop 2.94 %; steps to reach 3.45: optax.adam 75-550, optax.sgd 100-250 (4/5), sgd 75-175 (4/5), adagrad 75-325, rmsprop 100-175 (the error rate moves in steps of 0.28 %, so the seeds spread widely).",
            )
        ),
        data=_data,
        init=_init,
        loss=_loss,
        metric=_metric,
        metric_name="error %",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        quick_steps=quick,
    )
