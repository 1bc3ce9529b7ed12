"""The Adam family: Adam, AdamW, Adamax, Nadam and AdaBelief.

Bias corrections use ``1 - beta**t`` with ``t`` the per-parameter update count (1 on the first update,
``begin_num_update + k`` in general). MXNet computes them in Python, in double, from the numbers given, so
these rules do too where the numbers are Python numbers (:func:`~mxopt_jax._src.numerics.bias_correction`).
LAMB, LANS (``layerwise``) and FTML (``ftrl``) compute theirs inside their MXNet kernels, in float32 from the
float32 decay rates, and keep :func:`~mxopt_jax._src.numerics.one_minus_pow` on the traced values.
"""

from __future__ import annotations

from typing import NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import bias_correction, complement, div0, preprocess, static_positive
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import check_lazy_update, is_static_zero

_BETA = {"low": 0.0, "high": 1.0, "high_open": True}
_POSITIVE = {"low": 0.0, "low_open": True}


AdamState = NamedTuple(
    "AdamState",
    [
        ("count", jax.Array),
        ("mean", optax.Updates),  # first moment m
        ("var", optax.Updates),  # second moment v (AdaBelief: s, the EMA of (G - m)^2 + epsilon)
        ("master", optax.Params | None),
    ],
)
AdamState.__doc__ = (
    """State of :func:`adam`, :func:`adamw`, :func:`adabelief`, :func:`lamb` and :func:`lans`."""
)


def _two_moments(w, dtype, opts):
    return jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype)


def ema(old, new, beta):
    """``beta * old + (1 - beta) * new``."""
    return beta * old + (1 - beta) * new


def ema_multi(old, new, beta):
    """The same EMA in the association of MXNet's multi-tensor kernels, ``beta * (old - new) + new``.

    AdamW and AdaBelief run through those kernels by default in MXNet 2.0; using their association keeps
    trajectories bit-compatible (the two forms differ by float32 rounding when ``beta`` is near 1).
    """
    return beta * (old - new) + new


def adam_step(g, w, s, hp, opts):
    """``w -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + epsilon)``."""
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp)
    m = ema(m, G, b1)
    v = ema(v, G * G, b2)
    lr_t = hp["lr"] * jnp.sqrt(bias_correction(hp, "beta2")) / bias_correction(hp, "beta1")
    return div0(-lr_t * m, jnp.sqrt(v) + hp["epsilon"], static_positive(hp, "epsilon")), (m, v)


_ADAM_CHECKS = {"beta1": _BETA, "beta2": _BETA, "epsilon": _POSITIVE}

ADAM_RULE = Rule(
    name="adam",
    state_cls=AdamState,
    fields=("mean", "var"),
    init=_two_moments,
    step=adam_step,
    hyper=("beta1", "beta2", "epsilon"),
    static=("lazy_update",),
    checks=_ADAM_CHECKS,
    weight_only_for_decay=True,
    validate=lambda owner, args: check_lazy_update(owner, args, allow_multi_precision=True),
    sparse="lazy_update",
    one_pass=True,
)


@optimizer(ADAM_RULE)
def adam(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-8,
    lazy_update: bool = False,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Adam (``mxnet.optimizer.Adam``)::

        G    = clip(rescale_grad * g) + wd * w
        m    = beta1 * m + (1 - beta1) * G
        v    = beta2 * v + (1 - beta2) * G * G
        lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
        w    = w - lr_t * m / (sqrt(v) + epsilon)          (epsilon is not bias-corrected)

    Kingma & Ba, "Adam: A Method for Stochastic Optimization" (ICLR 2015).

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: moment decay rates in ``[0, 1)`` (defaults 0.9, 0.999).
      epsilon: ``> 0`` (default 1e-8).
      lazy_update: for row-sparse gradients, update only the listed rows (no effect on dense gradients).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adam(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9 -1.9  2.9]
      >>> print(np.asarray(state.mean["w"]).round(4))
      [ 0.05 -0.05  0.1 ]
      >>> print(np.asarray(state.var["w"]).round(4))
      [0.0002 0.0002 0.001 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


def adamw_step(g, w, s, hp, opts):
    """``w -= eta * (m / (sqrt(v) + epsilon) + wd * w)`` with ``eta`` the (bias-corrected) lr."""
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp, decay=False)
    m = ema_multi(m, G, b1)
    v = ema_multi(v, G * G, b2)
    eta = hp["lr"]
    if opts["correct_bias"]:
        eta = eta * jnp.sqrt(bias_correction(hp, "beta2")) / bias_correction(hp, "beta1")
    direction = div0(m, jnp.sqrt(v) + hp["epsilon"], static_positive(hp, "epsilon"))
    if not is_static_zero(hp["wd"]):
        direction = direction + hp["wd"] * w
    return -eta * direction, (m, v)


ADAMW_RULE = Rule(
    name="adamw",
    state_cls=AdamState,
    fields=("mean", "var"),
    init=_two_moments,
    step=adamw_step,
    hyper=("beta1", "beta2", "epsilon"),
    static=("correct_bias",),
    checks=_ADAM_CHECKS,
    weight_only_for_decay=True,
    one_pass=True,
)


@optimizer(ADAMW_RULE)
def adamw(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-6,
    correct_bias: bool = True,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """AdamW, Adam with decoupled weight decay (``mxnet.optimizer.AdamW``, MXNet 2.0's fused math)::

        G   = clip(rescale_grad * g)                          (no decay in the moments)
        m   = beta1 * m + (1 - beta1) * G
        v   = beta2 * v + (1 - beta2) * G * G
        eta = lr * sqrt(1 - beta2^t) / (1 - beta1^t)          (eta = lr when correct_bias=False)
        w   = w - eta * (m / (sqrt(v) + epsilon) + wd * w)

    Loshchilov & Hutter, "Decoupled Weight Decay Regularization" (ICLR 2019). MXNet's non-fused ``step``
    computes a slightly different decay; mxopt_jax always computes the fused (default) form (docs/differences.md #3),
    and never skips an update silently on a non-finite ``rescale_grad`` (docs/differences.md #4).

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: moment decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-6).
      correct_bias: apply Adam's bias correction to the step size (default True).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adamw(learning_rate=0.1, wd=0.01)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.8997 -1.8994  2.8991]
      >>> print(np.asarray(state.var["w"]).round(4))
      [0.0002 0.0002 0.001 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


AdamaxState = NamedTuple(
    "AdamaxState",
    [
        ("count", jax.Array),
        ("mean", optax.Updates),  # first moment m
        ("u", optax.Updates),  # exponentially weighted infinity norm
        ("master", optax.Params | None),
    ],
)
AdamaxState.__doc__ = """State of :func:`adamax`."""


def adamax_step(g, w, s, hp, opts):
    """``u = max(beta2 * u, |G|) ; w -= lr / (1 - beta1^t) * m / (u + epsilon)``."""
    m, u = s
    G = preprocess(g, w, hp)
    m = ema(m, G, hp["beta1"])
    u = jnp.maximum(hp["beta2"] * u, jnp.abs(G))
    lr_t = hp["lr"] / bias_correction(hp, "beta1")
    return div0(-lr_t * m, u + hp["epsilon"], static_positive(hp, "epsilon")), (m, u)


ADAMAX_RULE = Rule(
    name="adamax",
    state_cls=AdamaxState,
    fields=("mean", "u"),
    init=_two_moments,
    step=adamax_step,
    hyper=("beta1", "beta2", "epsilon"),
    checks=_ADAM_CHECKS,
    weight_only_for_decay=True,
    one_pass=True,
)


@optimizer(ADAMAX_RULE)
def adamax(
    learning_rate: ScalarOrSchedule | None = 0.002,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-8,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """AdaMax, Adam with the infinity norm (``mxnet.optimizer.Adamax``)::

        G = clip(rescale_grad * g) + wd * w
        m = beta1 * m + (1 - beta1) * G
        u = max(beta2 * u, |G|)
        w = w - lr / (1 - beta1^t) * m / (u + epsilon)

    Kingma & Ba, "Adam: A Method for Stochastic Optimization" (ICLR 2015), section 7.

    Args:
      learning_rate: step size (default 0.002).
      beta1, beta2: decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-8; MXNet 1.x had none and produced NaN on zero gradients).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adamax(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9 -1.9  2.9]
      >>> print(np.asarray(state.u["w"]).round(4))
      [0.5 0.5 1. ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


NadamState = NamedTuple(
    "NadamState",
    [
        ("count", jax.Array),
        ("mean", optax.Updates),
        ("var", optax.Updates),
        (
            "m_schedule",
            optax.Updates,
        ),  # per-parameter product of the momentum schedule mu_1 ... mu_t (scalars)
        ("master", optax.Params | None),
    ],
)
NadamState.__doc__ = """State of :func:`nadam`."""


def nadam_step(g, w, s, hp, opts):
    """Nesterov-accelerated Adam with Dozat's momentum schedule, kept per parameter.

    MXNet's Nadam is Python arithmetic on the host: ``1 - beta1``, ``1 - beta2`` and the bias correction are
    computed in double from the numbers given and rounded once (:func:`complement`, :func:`bias_correction`).
    """
    m, v, M = s
    b1, b2, sd, t = hp["beta1"], hp["beta2"], hp["schedule_decay"], hp["t"]
    tf = jnp.asarray(t, g.dtype)
    G = preprocess(g, w, hp)
    mu_t = b1 * (1 - 0.5 * jnp.power(0.96, tf * sd))
    mu_t1 = b1 * (1 - 0.5 * jnp.power(0.96, (tf + 1) * sd))
    M = M * mu_t
    M_next = M * mu_t1
    m = b1 * m + complement(hp, "beta1") * G
    v = b2 * v + complement(hp, "beta2") * (G * G)
    g_hat = G / (1 - M)
    m_hat = m / (1 - M_next)
    v_hat = v / bias_correction(hp, "beta2")
    m_bar = (1 - mu_t) * g_hat + mu_t1 * m_hat
    return div0(-hp["lr"] * m_bar, jnp.sqrt(v_hat) + hp["epsilon"], static_positive(hp, "epsilon")), (m, v, M)


NADAM_RULE = Rule(
    name="nadam",
    state_cls=NadamState,
    fields=("mean", "var", "m_schedule"),
    init=lambda w, dtype, opts: (*_two_moments(w, dtype, opts), jnp.ones([], w.dtype)),
    step=nadam_step,
    hyper=("beta1", "beta2", "epsilon", "schedule_decay"),
    checks={**_ADAM_CHECKS, "schedule_decay": {"low": 0.0}},
    weight_only_for_decay=True,
    one_pass=True,
)


@optimizer(NADAM_RULE)
def nadam(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-8,
    schedule_decay: ScalarOrSchedule = 0.004,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Nadam (``mxnet.optimizer.Nadam``)::

        G      = clip(rescale_grad * g) + wd * w
        mu_t   = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay)),  mu_t1 likewise at t + 1
        M      = M * mu_t ;  M_next = M * mu_t1                   (M: the momentum schedule, starts at 1)
        m      = beta1 * m + (1 - beta1) * G ;  v = beta2 * v + (1 - beta2) * G * G
        m_bar  = (1 - mu_t) * G / (1 - M) + mu_t1 * m / (1 - M_next)
        w      = w - lr * m_bar / (sqrt(v / (1 - beta2^t)) + epsilon)

    Dozat, "Incorporating Nesterov Momentum into Adam" (ICLR 2016 workshop). MXNet shares one ``M`` across
    all parameters (so results depend on how many there are); here each parameter has its own ``M``, advanced
    once per update of that parameter (docs/differences.md #5) — identical to MXNet for a single parameter.

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-8).
      schedule_decay: momentum schedule decay, ``>= 0`` (default 0.004).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.nadam(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.8944 -1.8944  2.8944]
      >>> print(np.asarray(state.m_schedule["w"]).round(4))
      0.4501
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


def adabelief_step(g, w, s, hp, opts):
    """``s = beta2 * s + (1 - beta2) * (G - m)^2 + epsilon ; w -= eta * m / (sqrt(s) + epsilon)``."""
    m, sv = s
    b1, b2, eps = hp["beta1"], hp["beta2"], hp["epsilon"]
    G = preprocess(g, w, hp)
    m = ema_multi(m, G, b1)
    d = G - m
    sv = ema_multi(sv, d * d, b2) + eps
    eta = hp["lr"]
    if opts["correct_bias"]:
        eta = eta * jnp.sqrt(bias_correction(hp, "beta2")) / bias_correction(hp, "beta1")
    return div0(-eta * m, jnp.sqrt(sv) + eps, static_positive(hp, "epsilon")), (m, sv)


ADABELIEF_RULE = Rule(
    name="adabelief",
    state_cls=AdamState,
    fields=("mean", "var"),
    init=_two_moments,
    step=adabelief_step,
    hyper=("beta1", "beta2", "epsilon"),
    static=("correct_bias",),
    checks=_ADAM_CHECKS,
    weight_only_for_decay=True,
)


@optimizer(ADABELIEF_RULE)
def adabelief(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-6,
    correct_bias: bool = True,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """AdaBelief (``mxnet.optimizer.AdaBelief``)::

        G   = clip(rescale_grad * g) + wd * w
        m   = beta1 * m + (1 - beta1) * G
        s   = beta2 * s + (1 - beta2) * (G - m)^2 + epsilon
        eta = lr * sqrt(1 - beta2^t) / (1 - beta1^t)          (eta = lr when correct_bias=False)
        w   = w - eta * m / (sqrt(s) + epsilon)

    Zhuang et al., "AdaBelief Optimizer: Adapting Stepsizes by the Belief in Observed Gradients"
    (NeurIPS 2020). The preamble clips before adding decay, as MXNet's documentation and every other
    optimizer do (MXNet's kernel adds decay before clipping; docs/differences.md #7).

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-6).
      correct_bias: apply the bias correction to the step size (default True).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adabelief(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.8892 -1.8892  2.889 ]
      >>> print(np.asarray(state.var["w"]).round(4))
      [0.0002 0.0002 0.0008]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration
