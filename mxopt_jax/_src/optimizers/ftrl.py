"""Follow-the-regularized-leader family: Ftrl (FTRL-Proximal) and FTML."""

from __future__ import annotations

from typing import Any, NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..numerics import one_minus_pow, preprocess
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import is_static_zero


class FtrlState(NamedTuple):
    """State of :func:`ftrl` (float32)."""

    count: jax.Array
    z: optax.Updates  # accumulated adjusted gradients
    n: optax.Updates  # accumulated squared gradients
    master: optax.Params | None


def ftrl_step(g, w, s, hp, opts):
    """FTRL-Proximal: the new weight is a closed form of ``(z, n)``."""
    z, n = s
    lr, l1 = hp["lr"], hp["lamda1"]
    G = preprocess(g, w, hp, decay=False)
    n_new = n + G * G
    sigma = (jnp.sqrt(n_new) - jnp.sqrt(n)) / lr
    z = z + G - sigma * w
    denom = (hp["beta"] + jnp.sqrt(n_new)) / lr
    if not is_static_zero(hp["wd"]):
        denom = denom + hp["wd"]
    new_w = -jnp.sign(z) * jnp.maximum(jnp.abs(z) - l1, 0) / denom
    return new_w, (z, n_new)


FTRL_RULE = Rule(
    name="ftrl",
    state_cls=FtrlState,
    fields=("z", "n"),
    init=lambda w, dtype, opts: (jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype)),
    step=ftrl_step,
    hyper=("lamda1", "beta"),
    checks={"lamda1": {"low": 0.0}, "beta": {"low": 0.0}},
    fp32_state=True,
    returns_weight=True,
    static=("lazy_update",),
    sparse="lazy_update",
)


@optimizer(FTRL_RULE)
def ftrl(
    learning_rate: Any = 0.1,
    lamda1: Any = 0.01,
    beta: Any = 1.0,
    *,
    lazy_update: bool = False,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """FTRL-Proximal (``mxnet.optimizer.Ftrl``)::

        G     = clip(rescale_grad * g)                      (no decay in the gradient)
        sigma = (sqrt(n + G * G) - sqrt(n)) / lr
        z     = z + G - sigma * w
        n     = n + G * G
        w     = -sign(z) * max(|z| - lamda1, 0) / ((beta + sqrt(n)) / lr + wd)

    McMahan et al., "Ad Click Prediction: a View from the Trenches" (KDD 2013). Every weight is recomputed
    from ``(z, n)`` (as MXNet's dense path: weights that never received a gradient become 0).

    Args:
      learning_rate: ``alpha`` of the paper (default 0.1).
      lamda1: L1 regularization strength, ``>= 0`` (default 0.01).
      beta: ``>= 0`` (default 1.0).
      lazy_update: for a :class:`~mxopt_jax.sparse.RowSparse` gradient, update only the listed rows of
        ``w``, ``z`` and ``n`` (what MXNet does for a ``row_sparse`` weight); ``False`` (MXNet's dense weight)
        densifies the gradient and recomputes every weight. No effect on dense gradients.

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.ftrl(learning_rate=0.1, lamda1=0.6)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.26   -0.5933  1.42  ]
      >>> print(np.asarray(state.z["w"]).round(4))
      [ -4.5   9.5 -29. ]
    """


class FTMLState(NamedTuple):
    """State of :func:`ftml`."""

    count: jax.Array
    d: optax.Updates  # d_{t-1}, the previous step's adaptive denominator (d_0 = 0)
    v: optax.Updates  # EMA of G^2
    z: optax.Updates  # FTML's accumulated linear term
    master: optax.Params | None


def ftml_step(g, w, s, hp, opts):
    """FTML: ``w = -z / d_t``."""
    d, v, z = s
    b1, b2, t = hp["beta1"], hp["beta2"], hp["t"]
    G = preprocess(g, w, hp)
    v = b2 * v + (1 - b2) * G * G
    d_t = one_minus_pow(b1, t) / hp["lr"] * (jnp.sqrt(v / one_minus_pow(b2, t)) + hp["epsilon"])
    z = b1 * z + (1 - b1) * G - (d_t - b1 * d) * w
    return -z / d_t, (d_t, v, z)


FTML_RULE = Rule(
    name="ftml",
    state_cls=FTMLState,
    fields=("d", "v", "z"),
    init=lambda w, dtype, opts: tuple(jnp.zeros_like(w, dtype) for _ in range(3)),
    step=ftml_step,
    hyper=("beta1", "beta2", "epsilon"),
    checks={
        "beta1": {"low": 0.0, "high": 1.0, "high_open": True},
        "beta2": {"low": 0.0, "high": 1.0, "high_open": True},
        "epsilon": {"low": 0.0, "low_open": True},
    },
    returns_weight=True,
)


@optimizer(FTML_RULE)
def ftml(
    learning_rate: Any = 0.0025,
    beta1: Any = 0.6,
    beta2: Any = 0.999,
    epsilon: Any = 1e-8,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """FTML, Follow the Moving Leader (``mxnet.optimizer.FTML``)::

        G   = clip(rescale_grad * g) + wd * w
        v   = beta2 * v + (1 - beta2) * G * G
        d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
        z   = beta1 * z + (1 - beta1) * G - (d_t - beta1 * d_{t-1}) * w
        w   = -z / d_t

    Zheng & Kwok, "Follow the Moving Leader in Deep Learning" (ICML 2017).

    Args:
      learning_rate: step size (MXNet 2.0 default 0.0025).
      beta1: in ``[0, 1)``, generally close to 0.5 (default 0.6).
      beta2: in ``[0, 1)``, generally close to 1 (default 0.999).
      epsilon: ``> 0`` (default 1e-8).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.ftml(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9 -1.9  2.9]
      >>> print(np.asarray(state.d["w"]).round(4))
      [2. 2. 4.]
    """
