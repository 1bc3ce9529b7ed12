"""Workload ``char_transformer``: a small pre-LayerNorm transformer language model on ``char_lm``'s corpus.

The text is the one :func:`mxopt_jax.compare.problems.charlm.corpus` generates (the same characters, cut into
the same consecutive train/validation/test parts as ``char_lm``), read as sequences: a training example is
any ``CONTEXT + 1`` consecutive characters of the training part (the model predicts each of the last
``CONTEXT`` from the ones before it), the validation and test splits are the non-overlapping windows of
their parts. The model is a GPT-style decoder (Radford et al., 2019): learned token and position
embeddings, ``LAYERS`` blocks of pre-LayerNorm causal multi-head self-attention and a GELU MLP, each in a
residual branch, a final LayerNorm and a linear read-out. Transformers are where the gap between Adam and
SGD is reported to be widest (Zhang et al., "Why Transformers Need Adam: A Hessian Perspective", 2024); this
problem lets the study show or refute that gap at a small scale.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._common import preset_targets, targets_text
from .base import Batch, Params, Problem, Splits
from .charlm import CORPUS_SPLIT, VOCAB, corpus

__all__ = ["CONTEXT", "HEADS", "LAYERS", "WIDTH", "char_transformer", "n_params"]

#: Characters a sequence predicts (its attention span): windows of ``CONTEXT + 1`` characters.
CONTEXT = 16
#: Width of the residual stream, attention heads, blocks, and the MLP's hidden width.
WIDTH, HEADS, LAYERS, MLP = 24, 2, 2, 48
_LN_EPS = 1e-5


def _ids() -> np.ndarray:
    text = corpus()
    table = np.full(256, -1, np.int64)
    table[np.frombuffer(VOCAB.encode("ascii"), np.uint8)] = np.arange(len(VOCAB))
    return table[np.frombuffer(text.encode("ascii"), np.uint8)].astype(np.int32)


def _data() -> Splits:
    ids = _ids()
    bounds = np.cumsum((0, *CORPUS_SPLIT))
    train, val, test = (ids[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    every = np.lib.stride_tricks.sliding_window_view(train, CONTEXT + 1)  # every offset
    out = [np.ascontiguousarray(every)]
    for part in (val, test):
        n = (len(part) - 1) // CONTEXT  # non-overlapping windows: each character predicted once
        out.append(np.stack([part[i * CONTEXT : i * CONTEXT + CONTEXT + 1] for i in range(n)]))
    return Splits(*out)


def _init(key: jax.Array) -> Params:
    """GPT-2's initialization: normal with std 0.02, the residual branches' output projections scaled by
    ``1 / sqrt(2 * LAYERS)``, zero biases, LayerNorm gains 1."""
    keys = iter(jax.random.split(key, 3 + 4 * LAYERS))

    def normal(shape: tuple[int, ...], std: float = 0.02) -> jax.Array:
        return std * jax.random.normal(next(keys), shape, jnp.float32)

    proj_std = 0.02 / math.sqrt(2 * LAYERS)
    params: dict[str, jax.Array] = {
        "tokens": normal((len(VOCAB), WIDTH)),
        "positions": normal((CONTEXT, WIDTH)),
        "out_w": normal((WIDTH, len(VOCAB))),
        "out_b": jnp.zeros((len(VOCAB),), jnp.float32),
        "ln_f_g": jnp.ones((WIDTH,), jnp.float32),
        "ln_f_b": jnp.zeros((WIDTH,), jnp.float32),
    }
    for i in range(LAYERS):
        params |= {
            f"b{i}_ln1_g": jnp.ones((WIDTH,), jnp.float32),
            f"b{i}_ln1_b": jnp.zeros((WIDTH,), jnp.float32),
            f"b{i}_qkv_w": normal((WIDTH, 3 * WIDTH)),
            f"b{i}_qkv_b": jnp.zeros((3 * WIDTH,), jnp.float32),
            f"b{i}_proj_w": normal((WIDTH, WIDTH), proj_std),
            f"b{i}_proj_b": jnp.zeros((WIDTH,), jnp.float32),
            f"b{i}_ln2_g": jnp.ones((WIDTH,), jnp.float32),
            f"b{i}_ln2_b": jnp.zeros((WIDTH,), jnp.float32),
            f"b{i}_fc_w": normal((WIDTH, MLP)),
            f"b{i}_fc_b": jnp.zeros((MLP,), jnp.float32),
            f"b{i}_fc2_w": normal((MLP, WIDTH), proj_std),
            f"b{i}_fc2_b": jnp.zeros((WIDTH,), jnp.float32),
        }
    return params


def n_params() -> int:
    """Parameters of the model."""
    shapes = jax.eval_shape(_init, jax.ShapeDtypeStruct((2,), jnp.uint32))
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(shapes))


def _layer_norm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + _LN_EPS) * g + b


def _attention(params: Params, i: int, x: jax.Array) -> jax.Array:
    """Causal multi-head self-attention of ``x`` ``(batch, time, WIDTH)``."""
    bsz, t, _ = x.shape
    head = WIDTH // HEADS
    qkv = x @ params[f"b{i}_qkv_w"] + params[f"b{i}_qkv_b"]
    q, k, v = (a.reshape(bsz, t, HEADS, head) for a in jnp.split(qkv, 3, axis=-1))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(head)
    causal = jnp.tril(jnp.ones((t, t), bool))
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    out = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v).reshape(bsz, t, WIDTH)
    return out @ params[f"b{i}_proj_w"] + params[f"b{i}_proj_b"]


def _logits(params: Params, x: jax.Array) -> jax.Array:
    """Next-character scores ``(batch, time, vocabulary)`` of the character ids ``x`` ``(batch, time)``."""
    # embeddings as one-hot products (a gather's gradient is a scatter-add, which XLA's CPU backend runs
    # row by row; under the engine's vmap the one-hot product is a batched matrix product, several times faster)
    h = (
        jax.nn.one_hot(x, len(VOCAB), dtype=jnp.float32) @ params["tokens"]
        + params["positions"][: x.shape[1]]
    )
    for i in range(LAYERS):
        h = h + _attention(params, i, _layer_norm(h, params[f"b{i}_ln1_g"], params[f"b{i}_ln1_b"]))
        m = _layer_norm(h, params[f"b{i}_ln2_g"], params[f"b{i}_ln2_b"])
        m = jax.nn.gelu(m @ params[f"b{i}_fc_w"] + params[f"b{i}_fc_b"])
        h = h + m @ params[f"b{i}_fc2_w"] + params[f"b{i}_fc2_b"]
    h = _layer_norm(h, params["ln_f_g"], params["ln_f_b"])
    return h @ params["out_w"] + params["out_b"]


def _loss(params: Params, batch: Batch) -> jax.Array:
    """Mean cross-entropy (nats) of every position of every sequence of the batch."""
    logp = jax.nn.log_softmax(_logits(params, batch[:, :-1]), axis=-1)
    return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(batch[:, 1:], len(VOCAB), dtype=logp.dtype), axis=-1))


def _bits(params: Params, batch: Batch) -> jax.Array:
    """Cross-entropy in bits per character over every predicted character of the split."""
    return _loss(params, batch) / math.log(2.0)


def char_transformer() -> Problem:
    """A 2-layer, 2-head pre-LayerNorm transformer LM on ``char_lm``'s corpus; metric: bits/char."""
    steps, batch, every = 360, 8, 18
    targets = preset_targets(quick=2.71, full=2.71)
    n_val = (CORPUS_SPLIT[1] - 1) // CONTEXT
    n_test = (CORPUS_SPLIT[2] - 1) // CONTEXT
    return Problem(
        name="char_transformer",
        title=f"characters, transformer LM ({LAYERS} layers, {HEADS} heads)",
        description=(
            f"Data: char_lm's corpus ({sum(CORPUS_SPLIT):,} characters of English-like text from a small "
            "probabilistic grammar, fixed seed, nothing downloaded) cut into the same train/validation/test "
            f"parts ({CORPUS_SPLIT[0]:,}/{CORPUS_SPLIT[1]:,}/{CORPUS_SPLIT[2]:,} characters); a training "
            f"example is any {CONTEXT + 1} consecutive characters of the training part "
            f"({CORPUS_SPLIT[0] - CONTEXT:,} sequences), the validation and test splits are the "
            f"non-overlapping windows of theirs ({n_val} and {n_test} sequences, {n_val * CONTEXT} and "
            f"{n_test * CONTEXT} predicted characters). Model: a GPT-style decoder, learned token "
            f"({len(VOCAB)}x{WIDTH}) and position ({CONTEXT}x{WIDTH}) embeddings, {LAYERS} pre-LayerNorm blocks "
            f"of causal self-attention ({HEADS} heads of {WIDTH // HEADS}) and a GELU MLP ({WIDTH}-{MLP}-{WIDTH}), "
            f"a final LayerNorm and a linear read-out; GPT-2's init; {n_params():,} parameters. Loss: mean "
            "cross-entropy of every position of a mini-batch of sequences. Metric: cross-entropy in bits per "
            "character over the validation and test windows (each position sees only the characters before it "
            f"in its window). Budget: {steps} steps (quick: {steps}: both presets train the same budget, the quick "
            f"preset with fewer rates and seeds), batch {batch} sequences ({batch * CONTEXT} predicted characters), "
            f"evaluated every {every} steps (20 evaluations). "
            + targets_text(
                "bits/char",
                targets,
                "(both presets: 360 steps) at step 180 optax.adam 2.24, optax.sgd 2.72, sgd 2.87, adagrad 2.65, "
                "rmsprop 2.71 bits/char; steps to reach 2.71: optax.adam 108-126, optax.sgd 180-198, sgd 234-342, "
                "adagrad 144-198, rmsprop 144-216; their final test 1.85 (optax.adam), 2.14 (adagrad), 2.18 "
                "(rmsprop), 2.37 (optax.sgd), 2.72 (sgd) bits/char (char_lm's unigram model scores about 4.1).",
            )
        ),
        data=_data,
        init=_init,
        loss=_loss,
        metric=_bits,
        metric_name="bits/char",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
    )
