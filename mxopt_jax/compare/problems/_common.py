"""Helpers shared by the problems: scikit-learn's bundled data, fixed splits, standardization, dense layers.

Nothing here downloads anything: ``load_digits`` and ``load_breast_cancer`` ship inside scikit-learn's wheel.
scikit-learn is imported lazily (it belongs to the app's optional ``study`` extra, never to the library).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "SPLIT_SEED",
    "dense_init",
    "digits_raw",
    "load_sklearn",
    "softmax_cross_entropy",
    "standardize",
    "stratified_split",
    "preset_targets",
    "targets_text",
]

#: Seed of every fixed split (the data never depends on a run's seed).
SPLIT_SEED = 0


def load_sklearn(name: str) -> Any:
    """``sklearn.datasets.<name>``, with an ImportError that names the extra to install when sklearn is missing."""
    try:
        import sklearn.datasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "this problem reads a data set bundled with scikit-learn, which is not installed; install the "
            "study extra: pip install 'mxopt_jax[study]' (or pip install scikit-learn)"
        ) from e
    return getattr(sklearn.datasets, name)


def digits_raw() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits: ``(1797, 64)`` float64 pixel intensities in 0..16 and int labels 0..9."""
    d = load_sklearn("load_digits")()
    return np.asarray(d.data, np.float64), np.asarray(d.target, np.int64)


def stratified_split(y: np.ndarray, sizes: Sequence[int], seed: int = SPLIT_SEED) -> tuple[np.ndarray, ...]:
    """Disjoint index sets of the given ``sizes`` (summing to ``len(y)``), each with ``y``'s class proportions.

    Deterministic in ``seed``: every class's examples are shuffled, then dealt to the splits in proportion to
    their sizes (largest remainders first), and each split's indices are sorted.
    """
    y = np.asarray(y)
    if sum(sizes) != len(y):
        raise ValueError(f"split sizes {tuple(sizes)} must add up to {len(y)}")
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    # quota[c, s]: examples of class c for split s (rows sum to counts, columns to sizes)
    quota = np.zeros((len(classes), len(sizes)), np.int64)
    for s, size in enumerate(sizes[:-1]):
        want = counts * size / len(y)
        q = np.floor(want).astype(np.int64)
        order = np.argsort(-(want - q), kind="stable")
        q[order[: size - q.sum()]] += 1
        quota[:, s] = q
    quota[:, -1] = counts - quota[:, :-1].sum(axis=1)
    parts: list[list[np.ndarray]] = [[] for _ in sizes]
    for c, cls in enumerate(classes):
        idx = rng.permutation(np.flatnonzero(y == cls))
        start = 0
        for s in range(len(sizes)):
            parts[s].append(idx[start : start + quota[c, s]])
            start += quota[c, s]
    return tuple(np.sort(np.concatenate(p)) for p in parts)


def standardize(train: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each feature shifted and scaled by the training split's mean and standard deviation (float32).

    A feature constant on the training split (a digit image's corner pixels) is only shifted.
    """
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std = np.where(std > 1e-8, std, 1.0)
    return tuple(((a - mean) / std).astype(np.float32) for a in (train, *others))


def dense_init(key: jax.Array, sizes: Sequence[int], gain: float = 1.0) -> dict[str, jax.Array]:
    """Weights ``w1 .. wL`` (``sizes[i-1] x sizes[i]``, normal with std ``gain / sqrt(fan_in)``) and zero biases.

    LeCun's normal initialization (``gain=1``), suited to tanh layers.
    """
    params: dict[str, jax.Array] = {}
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:], strict=True), start=1):
        params[f"w{i}"] = gain / math.sqrt(n_in) * jax.random.normal(k, (n_in, n_out), jnp.float32)
        params[f"b{i}"] = jnp.zeros((n_out,), jnp.float32)
    return params


def param_count(sizes: Sequence[int]) -> int:
    """Weights and biases of dense layers ``sizes[0] -> sizes[1] -> ...``."""
    return sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def softmax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Per-example cross-entropy in nats of integer ``labels`` under ``softmax(logits)`` (last axis)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, labels[..., None].astype(jnp.int32), axis=-1)[..., 0]


#: How every problem's targets are calibrated, per preset (the measurements are in each description).
TARGET_RULE = (
    "each is the median, over five optimizers tuned at that preset's budget (optax.adam, optax.sgd with momentum "
    "0.9, MXNet's sgd, adagrad and rmsprop; the rate chosen on validation from 7 half a decade apart around its "
    "default, 3 selection seeds, then 5 fresh seeds), of their mean validation metric halfway through the "
    "budget, rounded up to 3 significant digits: half of them reach it by mid-budget, so the steps to target "
    "measure speed over the whole budget, and a slow or badly tuned optimizer misses it"
)


def preset_targets(quick: float, full: float) -> dict[str, Any]:
    """A built-in problem's targets, one per preset, each calibrated at that preset's budget
    (:data:`TARGET_RULE`), as :class:`~mxopt_jax.compare.problems.base.Problem` takes them:
    ``Problem(..., **preset_targets(quick=q, full=f))`` sets ``targets`` and ``target`` (the full budget's; the
    study reads :meth:`~mxopt_jax.compare.problems.base.Problem.target_for`)."""
    return {"target": float(full), "targets": {"quick": float(quick), "full": float(full)}}


def targets_text(metric: str, targets: Mapping[str, Any], measured: str) -> str:
    """The description's sentence on the targets (``targets``: :func:`preset_targets`'s): ``"Targets:
    validation <metric> <= q (quick preset), <= f (full preset). Why: <rule>. Measured: <measured>"``."""
    per = targets["targets"]
    return (
        f"Targets: validation {metric} <= {per['quick']:g} (quick preset), <= {per['full']:g} (full "
        f"preset). Why: {TARGET_RULE}. Measured: {measured}"
    )
