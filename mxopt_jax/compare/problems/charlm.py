"""Workload ``char_lm``: a character-level language model (Bengio-style MLP) on a generated English-like corpus.

The corpus comes from a small probabilistic grammar drawn with a fixed NumPy seed: sentences with
determiners, adjectives, nouns, prepositional phrases, transitive and intransitive verbs, adverbs and
conjunctions, subject-verb agreement in number (``the cat sees`` / ``the cats see``), Zipf-like word
frequencies. So there is structure at every scale a short context sees: spelling inside words, which word
class follows which, agreement, punctuation.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ._common import preset_targets, softmax_cross_entropy, targets_text
from .base import Batch, Params, Problem, Splits

__all__ = ["CONTEXT", "CORPUS_SPLIT", "VOCAB", "char_lm", "corpus"]

#: The characters, in id order: space, full stop, a..z (28).
VOCAB = " .abcdefghijklmnopqrstuvwxyz"
#: Characters of context the model sees to predict the next one.
CONTEXT = 8
#: Characters of the train / validation / test parts of the corpus (consecutive, in that order).
CORPUS_SPLIT = (44_000, 1_000 + CONTEXT, 1_000 + CONTEXT)
_EMBED, _HIDDEN = 8, 64
_SEED = 1234

_DET_SG = ["the", "a", "every", "this", "one"]
_DET_PL = ["the", "some", "many", "these", "two", "no"]
_ADJ = ["small", "red", "old", "quiet", "happy", "green", "tall", "dark", "young", "brave"]
_NOUN = ["cat", "dog", "bird", "child", "farmer", "river", "house", "tree", "king", "queen", "horse", "fox"]
_NOUN_PL = {"child": "children", "fox": "foxes"}
_VERB_T = ["see", "like", "follow", "find", "chase", "help", "know", "watch"]
_VERB_I = ["sleep", "run", "sing", "wait", "fall", "laugh"]
_VERB_3SG = {"watch": "watches"}
_PREP = ["near", "under", "with", "behind", "above"]
_ADV = ["slowly", "quickly", "often", "never", "quietly", "again"]
_CONJ = ["and", "but", "while", "because"]


def _zipf(n: int) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1)
    return p / p.sum()


class _Grammar:
    """Draws sentences; every choice goes through one ``numpy.random.Generator``."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def pick(self, words: list[str]) -> str:
        return words[self.rng.choice(len(words), p=_zipf(len(words)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def noun_phrase(self, depth: int) -> tuple[list[str], bool]:
        plural = self.chance(0.35)
        words = [self.pick(_DET_PL if plural else _DET_SG)]
        for _ in range(int(self.rng.choice(3, p=[0.5, 0.35, 0.15]))):
            words.append(self.pick(_ADJ))
        noun = self.pick(_NOUN)
        words.append(_NOUN_PL.get(noun, noun + "s") if plural else noun)
        if depth < 1 and self.chance(0.25):
            words += [self.pick(_PREP), *self.noun_phrase(depth + 1)[0]]
        return words, plural

    def verb(self, verbs: list[str], plural: bool) -> str:
        v = self.pick(verbs)
        return v if plural else _VERB_3SG.get(v, v + "s")

    def clause(self, depth: int) -> list[str]:
        subject, plural = self.noun_phrase(0)
        if self.chance(0.6):
            words = [*subject, self.verb(_VERB_T, plural), *self.noun_phrase(0)[0]]
        else:
            words = [*subject, self.verb(_VERB_I, plural)]
        if self.chance(0.3):
            words.append(self.pick(_ADV))
        if depth < 1 and self.chance(0.3):
            words += [self.pick(_CONJ), *self.clause(depth + 1)]
        return words

    def sentence(self) -> str:
        return " ".join(self.clause(0)) + ". "


def corpus(n_chars: int = sum(CORPUS_SPLIT), seed: int = _SEED) -> str:
    """The first ``n_chars`` characters of the grammar's text drawn with ``seed`` (deterministic)."""
    g = _Grammar(seed)
    parts: list[str] = []
    total = 0
    while total < n_chars:
        s = g.sentence()
        parts.append(s)
        total += len(s)
    return "".join(parts)[:n_chars]


def _windows(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``CONTEXT``-character window of ``ids`` and the character that follows it."""
    n = len(ids) - CONTEXT
    x = np.lib.stride_tricks.sliding_window_view(ids, CONTEXT)[:n]
    return np.ascontiguousarray(x, np.int32), ids[CONTEXT:].astype(np.int32)


def _data() -> Splits:
    text = corpus()
    codes = np.frombuffer(text.encode("ascii"), np.uint8)
    table = np.full(256, -1, np.int64)
    table[np.frombuffer(VOCAB.encode("ascii"), np.uint8)] = np.arange(len(VOCAB))
    ids = table[codes]
    bounds = np.cumsum((0, *CORPUS_SPLIT))
    return Splits(*(_windows(ids[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)))


def _init(key: jax.Array) -> Params:
    k1, k2, k3 = jax.random.split(key, 3)
    d_in = CONTEXT * _EMBED
    return {
        "embed": jax.random.normal(k1, (len(VOCAB), _EMBED), jnp.float32),
        "w1": jax.random.normal(k2, (d_in, _HIDDEN), jnp.float32) / math.sqrt(d_in),
        "b1": jnp.zeros((_HIDDEN,), jnp.float32),
        "w2": jax.random.normal(k3, (_HIDDEN, len(VOCAB)), jnp.float32) / math.sqrt(_HIDDEN),
        "b2": jnp.zeros((len(VOCAB),), jnp.float32),
    }


def _logits(params: Params, x: jax.Array) -> jax.Array:
    """Scores of the next character: embeddings of the context concatenated, a tanh layer, a linear layer."""
    e = params["embed"][x].reshape(x.shape[0], CONTEXT * _EMBED)
    h = jnp.tanh(e @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def _loss(params: Params, batch: Batch) -> jax.Array:
    x, y = batch
    return softmax_cross_entropy(_logits(params, x), y).mean()


def _bits(params: Params, batch: Batch) -> jax.Array:
    """Cross-entropy in bits per character."""
    return _loss(params, batch) / math.log(2.0)


def n_params() -> int:
    """Parameters of the model."""
    v = len(VOCAB)
    return v * _EMBED + CONTEXT * _EMBED * _HIDDEN + _HIDDEN + _HIDDEN * v + v


def char_lm() -> Problem:
    """Character-level LM on a generated corpus: context 8, embeddings 28x8, tanh 64; metric: bits/char."""
    steps, quick, batch, every = 1200, 400, 32, 20
    targets = preset_targets(quick=2.01, full=1.41)
    return Problem(
        name="char_lm",
        title=f"characters, MLP language model (context {CONTEXT})",
        description=(
            f"Data: {sum(CORPUS_SPLIT):,} characters of English-like text drawn from a small probabilistic "
            "grammar with a fixed NumPy seed (determiners, adjectives, nouns, prepositional phrases, verbs "
            "agreeing with their subject in number, adverbs, conjunctions; Zipf-like word frequencies), "
            f"vocabulary of {len(VOCAB)} characters (space, full stop, a-z), nothing downloaded; the text is cut "
            f"into consecutive train/validation/test parts and each part into every {CONTEXT}-character window "
            f"and its next character: {CORPUS_SPLIT[0] - CONTEXT:,}/{CORPUS_SPLIT[1] - CONTEXT:,}/"
            f"{CORPUS_SPLIT[2] - CONTEXT:,} examples (no window crosses a part). Model (Bengio et al., 2003): "
            f"an embedding table {len(VOCAB)}x{_EMBED}, the {CONTEXT} context embeddings concatenated "
            f"({CONTEXT * _EMBED}), a tanh layer of {_HIDDEN}, a softmax over the {len(VOCAB)} characters; "
            f"{n_params():,} parameters (dense gradients; no recurrence, so compilation stays quick). "
            "Loss: mean cross-entropy of a mini-batch. Metric: cross-entropy in bits per character on the "
            f"validation and test windows. Budget: {steps} steps (quick: {quick}), batch {batch}, evaluated "
            f"every {every} steps. "
            + targets_text(
                "bits/char",
                targets,
                "(evaluated every 40 steps then) quick (400 steps): at step 200 optax.adam 2.00, optax.sgd 2.07, sgd 2.11, adagrad 1.86, rmsprop 1.98 bits/char; steps to reach 2.01: adagrad 160-200, rmsprop 160-240, optax.adam 200-240, optax.sgd and sgd 200-280; full (1200 steps): at step 600 optax.adam 1.39, optax.sgd 1.59, sgd 1.56, adagrad 1.40, rmsprop 1.41; steps to reach 1.41: optax.adam 520-640, adagrad and rmsprop 520-680, optax.sgd 800-920, sgd 800-880 (a unigram model scores about 4.1 bits/char, uniform guessing 4.8).",
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
        quick_steps=quick,
    )
