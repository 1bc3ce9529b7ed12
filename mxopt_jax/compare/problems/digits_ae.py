"""Workload ``autoencoder``: a deep, ill-conditioned autoencoder of the 8x8 digits."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._common import dense_init, digits_raw, param_count, stratified_split
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
    steps, quick, batch, every, target = 900, 300, 32, 10, 0.04
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
            f"Target: validation MSE <= {target:g}. Why: "
            "measured with optax.adam over rates 1e-4..0.1 (half-decade steps) x 5 seeds on the quick budget, the best rates (3e-3 and 0.01) pass 0.04 after 120-270 steps (0.033 at step 300), while 1e-3 ends at 0.046 and 3e-4 at 0.069 (the mean image scores about 0.07); SGD with momentum 0.9 (optax.sgd, rates 0.01..1) stays near that plateau longer: it reaches the target only at rate 1, the largest tried, in 3 of 5 seeds after 210-270 steps, and ends at 0.055 at rate 0.3."
        ),
        data=_data,
        init=_init,
        loss=_mse,
        metric=_mse,
        metric_name="MSE",
        target=target,
        steps=steps,
        batch_size=batch,
        eval_every=every,
        quick_steps=quick,
    )
