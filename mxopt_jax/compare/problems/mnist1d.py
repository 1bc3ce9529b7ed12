"""Workloads ``mnist1d_mlp``, ``mnist1d_cnn`` and ``mnist1d_bn``: MNIST-1D and the networks of its paper.

MNIST-1D (Greydanus and Kobak, "Scaling Down Deep Learning with MNIST-1D", ICML 2024, arXiv:2011.14439; first
version 2020) is a procedurally generated stand-in for MNIST: ten 1-D templates of 12 points, each padded,
scaled, translated, sheared and noised into a signal of 40 values. The ``mnist1d`` package (Apache-2.0)
builds it on the machine from its templates (``mnist1d.data.make_dataset`` with the package's default
arguments: 5000 examples, 4000 for training and 1000 for testing, seed 42): nothing is downloaded (only
``mnist1d.data.get_dataset`` may download the frozen pickle; it is never called here).

The paper's table of test accuracies on MNIST-1D (its Table 1, also in the README of the package's repository):
logistic regression 32 %, MLP 68 %, CNN 94 %, GRU 91 %, human expert 96 % (the models of the repository's
``notebooks/models.py``, trained with Adam, rate 1e-2, batch 100 for 6000 steps in
``notebooks/mnist1d-classification.ipynb``, whose saved outputs end at 65.1 % for the MLP and 92.3 % for the
CNN). The problems here are those two networks, with PyTorch's default initialization, on the paper's
train/test split with a validation split carved from its training set; their metric is the error rate in %
(lower is better, as for ``digits_mlp``): the paper's 94 % accuracy is a 6 % error.

``mnist1d_bn`` is the paper's CNN with a BatchNorm after each convolution (the convolutions lose their bias):
every convolution's weights are then scale-invariant (multiplying them by any positive number leaves the
network's output unchanged), which is what LARS, LAMB and LANS's layer-wise trust ratios were made for. The
running statistics are the problem's model state (:class:`~mxopt_jax.compare.problems.base.Problem`'s
``init_state``), updated by the forward pass and never by an optimizer.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ._common import SPLIT_SEED, preset_targets, softmax_cross_entropy, stratified_split, targets_text
from .base import Batch, Params, Problem, Splits, State

__all__ = [
    "BN_EPS",
    "BN_MOMENTUM",
    "MNIST1D_SPLIT",
    "PAPER_TEST_ACCURACY",
    "mnist1d_bn",
    "mnist1d_cnn",
    "mnist1d_mlp",
    "mnist1d_raw",
]

#: Train / validation / test sizes: the package's 4000 training examples split 3500/500 (stratified by class,
#: fixed seed), its 1000 test examples as they are.
MNIST1D_SPLIT = (3500, 500, 1000)
#: Test accuracy (%) in the paper's table (Greydanus and Kobak, arXiv:2011.14439, Table 1).
PAPER_TEST_ACCURACY = {"logistic regression": 32.0, "MLP": 68.0, "CNN": 94.0, "GRU": 91.0, "human": 96.0}
#: The signal's length and the number of classes.
LENGTH, CLASSES = 40, 10
#: The paper's MLP (``MLPBase``): 40-100-100-10, ReLU, the second hidden layer residual.
_MLP_HIDDEN = 100
#: The paper's CNN (``ConvBase``): three convolutions of 25 channels (kernel, stride, padding), then linear.
_CHANNELS = 25
_CONVS = ((5, 2, 1), (3, 2, 1), (3, 2, 1))
#: BatchNorm's momentum (MXNet's and Flax's default 0.9: ``running = 0.9 running + 0.1 batch``) and epsilon.
BN_MOMENTUM, BN_EPS = 0.9, 1e-5
#: Examples per chunk of an evaluation (:func:`_error_rate`).
_EVAL_CHUNK = 250


def _conv_lengths() -> list[int]:
    lengths = [LENGTH]
    for k, s, p in _CONVS:
        lengths.append((lengths[-1] + 2 * p - k) // s + 1)
    return lengths  # 40, 19, 10, 5


@functools.cache
def _generated() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``mnist1d.data.make_dataset`` with the package's default arguments (cached; read-only arrays).

    ``make_dataset`` seeds Python's and NumPy's global random generators (``mnist1d.utils.set_seed``); their
    states are restored afterwards, so building the data changes nothing else in the process.
    """
    try:
        from mnist1d.data import get_dataset_args, make_dataset
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the MNIST-1D problems build their data with the mnist1d package, which is not installed; install "
            "the study extra: pip install 'mxopt_jax[study]' (or pip install mnist1d)"
        ) from e
    np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
    try:
        d = make_dataset(get_dataset_args())
    finally:
        np.random.set_state(np_state)  # noqa: NPY002
        random.setstate(py_state)
    out = (
        np.asarray(d["x"], np.float32),
        np.asarray(d["y"], np.int32),
        np.asarray(d["x_test"], np.float32),
        np.asarray(d["y_test"], np.int32),
    )
    for a in out:
        a.setflags(write=False)
    return out


def mnist1d_raw() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The package's default MNIST-1D: ``(x, y, x_test, y_test)``, ``(4000, 40)``, ``(4000,)``, ``(1000, 40)``,
    ``(1000,)`` (signals centred and scaled by the package, float32; labels int32)."""
    x, y, x_test, y_test = _generated()
    return x.copy(), y.copy(), x_test.copy(), y_test.copy()


def _data() -> Splits:
    x, y, x_test, y_test = _generated()
    tr, va = stratified_split(y, MNIST1D_SPLIT[:2], SPLIT_SEED)
    return Splits((x[tr], y[tr]), (x[va], y[va]), (x_test.copy(), y_test.copy()))


def _uniform(key: jax.Array, shape: Sequence[int], fan_in: int) -> jax.Array:
    """PyTorch's default initialization of ``nn.Linear`` and ``nn.Conv1d`` (weights and biases alike):
    uniform on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``."""
    bound = 1.0 / math.sqrt(fan_in)
    return jax.random.uniform(key, tuple(shape), jnp.float32, -bound, bound)


def _conv1d(x: jax.Array, w: jax.Array, stride: int, pad: int) -> jax.Array:
    """A 1-D convolution (cross-correlation, as PyTorch's ``Conv1d``): ``x`` ``(batch, length, c_in)``, ``w``
    ``(kernel, c_in, c_out)``; zero padding ``pad`` on both sides.

    Written as one matrix product of the strided patches (im2col): under ``jax.vmap`` over runs it stays a
    batched matrix product, which XLA's CPU backend runs about twice as fast as the grouped convolution a
    vmapped ``lax.conv_general_dilated`` becomes.
    """
    k, c_in, c_out = w.shape
    n_out = (x.shape[1] + 2 * pad - k) // stride + 1
    xp = jnp.pad(x, ((0, 0), (pad, pad), (0, 0)))
    span = stride * (n_out - 1) + 1
    patches = jnp.concatenate([xp[:, j : j + span : stride, :] for j in range(k)], axis=-1)
    return patches @ w.reshape(k * c_in, c_out)


def _error_rate(logits_fn: Callable[[jax.Array], jax.Array], batch: Batch) -> jax.Array:
    """Error rate in % of ``logits_fn(x)`` on ``batch = (x, y)``, computed over chunks of ``_EVAL_CHUNK``
    examples (``lax.map``): the same number, with intermediates that stay in cache (the evaluation of a
    whole split at once ran two to three times slower under the engine's vmap)."""
    x, y = batch
    n = x.shape[0]
    chunk = math.gcd(n, _EVAL_CHUNK)
    xs = x.reshape(n // chunk, chunk, *x.shape[1:])
    ys = y.reshape(n // chunk, chunk)
    wrong = jax.lax.map(lambda b: jnp.sum(jnp.argmax(logits_fn(b[0]), axis=-1) != b[1]), (xs, ys))
    return 100.0 * jnp.sum(wrong) / n


# --------------------------------------------------------------------------- the paper's MLP
def _mlp_init(key: jax.Array) -> Params:
    ks = jax.random.split(key, 6)
    sizes = ((LENGTH, _MLP_HIDDEN), (_MLP_HIDDEN, _MLP_HIDDEN), (_MLP_HIDDEN, CLASSES))
    params: dict[str, jax.Array] = {}
    for i, (n_in, n_out) in enumerate(sizes):
        params[f"w{i + 1}"] = _uniform(ks[2 * i], (n_in, n_out), n_in)
        params[f"b{i + 1}"] = _uniform(ks[2 * i + 1], (n_out,), n_in)
    return params


def _mlp_logits(params: Params, x: jax.Array) -> jax.Array:
    """``h = relu(x W1 + b1); h = h + relu(h W2 + b2); h W3 + b3`` (the paper's ``MLPBase``)."""
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    h = h + jax.nn.relu(h @ params["w2"] + params["b2"])
    return h @ params["w3"] + params["b3"]


# --------------------------------------------------------------------------- the paper's CNN
def _cnn_init(key: jax.Array, bias: bool = True) -> Params:
    ks = jax.random.split(key, 2 * len(_CONVS) + 2)
    params: dict[str, jax.Array] = {}
    c_in = 1
    for i, (k, _, _) in enumerate(_CONVS):
        params[f"conv{i + 1}"] = _uniform(ks[2 * i], (k, c_in, _CHANNELS), c_in * k)
        if bias:
            params[f"conv{i + 1}_b"] = _uniform(ks[2 * i + 1], (_CHANNELS,), c_in * k)
        c_in = _CHANNELS
    flat = _CHANNELS * _conv_lengths()[-1]
    params["w"] = _uniform(ks[-2], (flat, CLASSES), flat)
    params["b"] = _uniform(ks[-1], (CLASSES,), flat)
    return params


def _cnn_logits(params: Params, x: jax.Array) -> jax.Array:
    """Three strided convolutions with ReLU, flattened, a linear layer (the paper's ``ConvBase``)."""
    h = x[:, :, None]
    for i, (_, s, p) in enumerate(_CONVS):
        h = jax.nn.relu(_conv1d(h, params[f"conv{i + 1}"], s, p) + params[f"conv{i + 1}_b"])
    return h.reshape(h.shape[0], -1) @ params["w"] + params["b"]


# --------------------------------------------------------------------------- the CNN with BatchNorm
def _bn_init(key: jax.Array) -> Params:
    params = _cnn_init(key, bias=False)
    for i in range(len(_CONVS)):
        params[f"bn{i + 1}_scale"] = jnp.ones((_CHANNELS,), jnp.float32)
        params[f"bn{i + 1}_shift"] = jnp.zeros((_CHANNELS,), jnp.float32)
    return params


def _bn_init_state(key: jax.Array) -> State:
    """Running mean 0 and variance 1 per channel of each BatchNorm (the key is not needed)."""
    del key
    return {
        f"bn{i + 1}": {
            "mean": jnp.zeros((_CHANNELS,), jnp.float32),
            "var": jnp.ones((_CHANNELS,), jnp.float32),
        }
        for i in range(len(_CONVS))
    }


def _bn_forward(params: Params, state: State, x: jax.Array, train: bool) -> tuple[jax.Array, State]:
    """Convolution (no bias), BatchNorm, ReLU, three times, then the linear layer.

    Training mode normalizes each channel by its mean and (biased) variance over the mini-batch and the
    signal's positions, and moves the running statistics towards them (``BN_MOMENTUM``; the running variance
    takes the unbiased batch variance, as PyTorch, MXNet and Flax do); evaluation mode normalizes by the
    running statistics.
    """
    h = x[:, :, None]
    new_state = {}
    for i, (_, s, p) in enumerate(_CONVS):
        name = f"bn{i + 1}"
        h = _conv1d(h, params[f"conv{i + 1}"], s, p)
        if train:
            mean = jnp.mean(h, axis=(0, 1))
            var = jnp.mean(jnp.square(h - mean), axis=(0, 1))
            n = h.shape[0] * h.shape[1]
            new_state[name] = {
                "mean": BN_MOMENTUM * state[name]["mean"] + (1 - BN_MOMENTUM) * mean,
                "var": BN_MOMENTUM * state[name]["var"] + (1 - BN_MOMENTUM) * var * (n / (n - 1)),
            }
        else:
            mean, var = state[name]["mean"], state[name]["var"]
            new_state[name] = state[name]
        h = (h - mean) * jax.lax.rsqrt(var + BN_EPS) * params[f"{name}_scale"] + params[f"{name}_shift"]
        h = jax.nn.relu(h)
    return h.reshape(h.shape[0], -1) @ params["w"] + params["b"], jax.lax.stop_gradient(new_state)


def _bn_loss(params: Params, state: State, batch: Batch) -> tuple[jax.Array, State]:
    x, y = batch
    logits, new_state = _bn_forward(params, state, x, train=True)
    return softmax_cross_entropy(logits, y).mean(), new_state


def _bn_metric(params: Params, state: State, batch: Batch) -> jax.Array:
    """Error rate in % in evaluation mode (the running statistics)."""
    return _error_rate(lambda x: _bn_forward(params, state, x, train=False)[0], batch)


def _stateless(
    logits_fn: Callable[[Params, jax.Array], jax.Array],
) -> tuple[Callable[[Params, Batch], jax.Array], Callable[[Params, Batch], jax.Array]]:
    """The loss (mean cross-entropy) and metric (error %) of a classifier without model state."""

    def loss(params: Params, batch: Batch) -> jax.Array:
        x, y = batch
        return softmax_cross_entropy(logits_fn(params, x), y).mean()

    def metric(params: Params, batch: Batch) -> jax.Array:
        """Error rate in %: the share of examples whose highest score is not their label."""
        return _error_rate(functools.partial(logits_fn, params), batch)

    return loss, metric


def _count(init: Callable[[jax.Array], Params]) -> int:
    """Parameters ``init`` makes (from shapes: nothing is computed)."""
    shapes = jax.eval_shape(init, jax.ShapeDtypeStruct((2,), jnp.uint32))
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(shapes))


_DATA_TEXT = (
    "Data: MNIST-1D (Greydanus and Kobak, 'Scaling Down Deep Learning with MNIST-1D', arXiv:2011.14439), "
    "generated on the machine by the mnist1d package's make_dataset with its default arguments (5000 signals "
    "of 40 values, 10 classes, seed 42; nothing downloaded): the paper's 4000 training signals split "
    f"{MNIST1D_SPLIT[0]}/{MNIST1D_SPLIT[1]} (train/validation, stratified by class, fixed seed) and its "
    f"{MNIST1D_SPLIT[2]} test signals as they are. "
)


def _paper_text(model: str) -> str:
    acc = PAPER_TEST_ACCURACY[model]
    return (
        f"The paper's table gives the {model} {acc:g} % test accuracy ({100 - acc:g} % error; its repository's "
        "notebook, Adam at 1e-2, batch 100, 6000 steps, ends at 65.1 % for the MLP and 92.3 % for the CNN). "
    )


def _budget_text(steps: int, batch: int, every: int) -> str:
    return (
        f"Budget: {steps} steps (quick: {steps}: both presets train the same budget, the quick preset with fewer "
        f"rates and seeds), batch {batch}, evaluated every {every} steps (20 evaluations, each of "
        "the 1500 validation and test signals: about a third of a run's work at these budgets for the CNNs, "
        "so there are no more of them). "
    )


def mnist1d_mlp() -> Problem:
    """MNIST-1D, the paper's MLP 40-100-100-10 (ReLU, residual); metric: error %."""
    loss, metric = _stateless(_mlp_logits)
    n = _count(_mlp_init)
    steps, batch, every = 1000, 50, 50
    targets = preset_targets(quick=43.5, full=43.5)
    return Problem(
        name="mnist1d_mlp",
        title="MNIST-1D, MLP 40-100-100-10",
        description=(
            _DATA_TEXT
            + "Model: the paper's MLP (its repository's MLPBase): 40-100-100-10, ReLU, the second hidden layer "
            f"residual (h + relu(h W2 + b2)), PyTorch's default uniform init, {n:,} parameters. Loss: mean "
            "softmax cross-entropy of a mini-batch. Metric: error rate in % (100 - accuracy; lower is better) on "
            "the validation (500 signals: one is 0.2 %) and test (1000: 0.1 %) splits. "
            + _paper_text("MLP")
            + _budget_text(steps, batch, every)
            + targets_text(
                "error (%)",
                targets,
                "(both presets: 1000 steps) at step 500 optax.adam 43.4, optax.sgd 45.9, sgd 44.2, adagrad 41.8, "
                "rmsprop 42.4 %; steps to reach 43.5: optax.adam 400-600, optax.sgd 450-700, sgd 450-700, adagrad "
                "250-400, rmsprop 300-550; their final test errors 39.8 to 40.9 % (59 to 60 % accuracy, after 8 % of "
                "the 600,000 examples its notebook trains on).",
            )
        ),
        data=_data,
        init=_mlp_init,
        loss=loss,
        metric=metric,
        metric_name="error %",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
    )


def mnist1d_cnn() -> Problem:
    """MNIST-1D, the paper's CNN (three strided convolutions of 25 channels, linear); metric: error %."""
    loss, metric = _stateless(_cnn_logits)
    n = _count(_cnn_init)
    steps, batch, every = 440, 50, 22
    targets = preset_targets(quick=42.8, full=42.8)
    return Problem(
        name="mnist1d_cnn",
        title="MNIST-1D, CNN 3x25 channels",
        description=(
            _DATA_TEXT
            + "Model: the paper's CNN (its repository's ConvBase): convolutions 1->25 (kernel 5, stride 2, "
            "padding 1), 25->25 (3, 2, 1), 25->25 (3, 2, 1), each with ReLU (lengths 40, 19, 10, 5), flattened "
            f"(125), a linear layer to 10; PyTorch's default uniform init, {n:,} parameters. Loss: mean softmax "
            "cross-entropy of a mini-batch. Metric: error rate in % (100 - accuracy; lower is better) on the "
            "validation (500 signals: one is 0.2 %) and test (1000: 0.1 %) splits. "
            + _paper_text("CNN")
            + _budget_text(steps, batch, every)
            + targets_text(
                "error (%)",
                targets,
                "(both presets: 440 steps) at step 220 optax.adam 39.1, optax.sgd 38.6, sgd 66.8, adagrad 49.3, "
                "rmsprop 42.7 %; steps to reach 42.8: optax.adam, optax.sgd and rmsprop 176-242, sgd 352-440, "
                "adagrad 286-418; their final test errors 19.5 (optax.adam) to 39.4 % (80.5 to 60.6 % accuracy, "
                "after 3.7 % of the 600,000 examples the paper's notebook trains on).",
            )
        ),
        data=_data,
        init=_cnn_init,
        loss=loss,
        metric=metric,
        metric_name="error %",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
    )


def mnist1d_bn() -> Problem:
    """MNIST-1D, the paper's CNN with BatchNorm after each convolution (model state); metric: error %."""
    n = _count(_bn_init)
    steps, batch, every = 320, 50, 16
    targets = preset_targets(quick=29.4, full=29.4)
    return Problem(
        name="mnist1d_bn",
        title="MNIST-1D, CNN with BatchNorm",
        description=(
            _DATA_TEXT
            + "Model: the paper's CNN with a BatchNorm after each convolution (convolution without bias, "
            f"BatchNorm, ReLU; momentum {BN_MOMENTUM}, epsilon {BN_EPS:g}): each convolution's weights are "
            "scale-invariant, the setting LARS, LAMB and LANS's layer-wise trust ratios were made for. "
            f"{n:,} parameters (the BatchNorm scales and shifts included); the running means and variances "
            f"({2 * len(_CONVS) * _CHANNELS} values) are the model's state, moved by each training step's batch "
            "statistics and never by the optimizer, and the metric reads them (evaluation mode). Loss: mean "
            "softmax cross-entropy of a mini-batch (batch statistics). Metric: error rate in % (100 - accuracy; "
            "lower is better) on the validation (500 signals) and test (1000) splits. "
            + _budget_text(steps, batch, every)
            + targets_text(
                "error (%)",
                targets,
                "(both presets: 320 steps) at step 160 optax.adam 29.3, optax.sgd 32.9, sgd 32.8, adagrad 25.3, "
                "rmsprop 26.9 %; steps to reach 29.4: optax.adam 128-176, optax.sgd 160-208, sgd 176-208, adagrad "
                "128-160, rmsprop 96-144; their final test errors 13.0 (adagrad) to 18.9 % (87.0 to 81.1 % "
                "accuracy: BatchNorm trains the paper's CNN several times faster).",
            )
        ),
        data=_data,
        init=_bn_init,
        init_state=_bn_init_state,
        loss=_bn_loss,
        metric=_bn_metric,
        metric_name="error %",
        **targets,
        steps=steps,
        batch_size=batch,
        eval_every=every,
    )
