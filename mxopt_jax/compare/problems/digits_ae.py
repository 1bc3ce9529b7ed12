"""Workload ``autoencoder``: a deep, ill-conditioned autoencoder of the 8x8 digits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._common import dense_init, digits_raw, param_count, preset_targets, stratified_split, targets_text
from .base import Batch, Params, Problem, Splits
from .digits import DIGITS_SPLIT

__all__ = ["AE_SIZES", "autoencoder"]

#: Layer widths: encoder 64-48-32-16-8 (tanh), decoder 8-16-32-48-64 (tanh, sigmoid output).
AE_SIZES = (64, 48, 32, 16, 8, 16, 32, 48, 64)


def _data() -> Splits:
    x, y = digits_raw()
    x = (x / 16.0).astype(np.float32)  # intensities in [0, 1], what the sigmoid output reconstructs
    return Splits(*(x[i] for i in stratified_split(y, DIGITS_SPLIT)))


def _init(key: jax.Array) -> Params:
    return dense_init(key, AE_SIZES)


def _reconstruct(params: Params, x: jax.Array) -> jax.Array:
    """``sigmoid`` of the last of 8 dense layers, ``tanh`` after each of the others: the image rebuilt from 8 codes."""
    layers = len(AE_SIZES) - 1
    h = x
    for i in range(1, layers):
        h = jnp.tanh(h @ params[f"w{i}"] + params[f"b{i}"])
    return jax.nn.sigmoid(h @ params[f"w{layers}"] + params[f"b{layers}"])


def _mse(params: Params, batch: Batch) -> jax.Array:
    """Mean squared reconstruction error per pixel (intensities in [0, 1])."""
    return jnp.mean((_reconstruct(params, batch) - batch) ** 2)


def autoencoder() -> Problem:
    """Digits autoencoder 64-48-32-16-8-16-32-48-64 (tanh, sigmoid output), MSE; metric: held-out MSE."""
    n = param_count(AE_SIZES)
    steps, quick, batch, every = 900, 300, 32, 10
    targets = preset_targets(quick=0.0517, full=0.0311)
    return Problem(
        name="autoencoder",
        title="digits, deep autoencoder 64-...-8-...-64",
        description=(
            "Data: scikit-learn's bundled digits (1797 8x8 images, intensities scaled to [0, 1], nothing "
            f"downloaded), the same fixed stratified split as digits_mlp, {DIGITS_SPLIT[0]}/{DIGITS_SPLIT[1]}/"
            f"{DIGITS_SPLIT[2]} (train/validation/test). Model: a deep autoencoder in the manner of Hinton & "
            "Salakhutdinov (2006), encoder 64-48-32-16-8, decoder 8-16-32-48-64, tanh hidden layers, sigmoid "
            f"output, LeCun-normal init, {n:,} parameters; 8 layers through an 8-unit bottleneck make it "
            "ill-conditioned (plain SGD stalls on the plateau of the mean image). Loss: mean squared "
            "reconstruction error per pixel of a mini-batch. Metric: that MSE on the validation and test splits. "
            f"Budget: {steps} steps (quick: {quick}), batch {batch}, evaluated every {every} steps. "
            + targets_text(
                "MSE",
                targets,
                "(evaluated every 30 steps then) quick (300 steps): at step 150 optax.adam 0.0519, optax.sgd 0.0531, sgd 0.0517, adagrad 0.0455, rmsprop 0.0399; steps to reach 0.0517: rmsprop 90-120, adagrad 90-150, optax.adam 120-180, optax.sgd 150-210, sgd 120-240; full (900 steps): at step 450 optax.adam 0.0291, optax.sgd 0.0310, sgd 0.0333, adagrad 0.0336, rmsprop 0.0267; steps to reach 0.0311: rmsprop 270-390, optax.adam 360-420, optax.sgd 360-570, sgd 480-630, adagrad 420-810 (the mean image scores about 0.07).",
            )
        ),
        data=_data,
        init=_init,
        loss=_mse,
        metric=_mse,
        metric_name="MSE",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        quick_steps=quick,
    )
