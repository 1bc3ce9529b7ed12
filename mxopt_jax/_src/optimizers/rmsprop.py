"""RMSProp, plain (Tieleman & Hinton) and centered (Graves), as MXNet 2.0 computes them."""

from __future__ import annotations

from typing import NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import div0, preprocess, static_positive
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import is_python_number

RMSPropState = NamedTuple(
    "RMSPropState",
    [
        ("count", jax.Array),
        ("mean", optax.Updates | None),  # EMA of G (centered only)
        ("var", optax.Updates),  # EMA of G^2
        ("mom", optax.Updates | None),  # momentum of the centered variant
        ("master", optax.Params | None),
    ],
)
RMSPropState.__doc__ = """State of :func:`rmsprop` (float32)."""


def _init(w, dtype, opts):
    if opts["centered"]:  # three distinct buffers: a jitted step may donate each of them
        return jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype)
    return None, jnp.zeros_like(w, dtype), None


def rmsprop_step(g, w, s, hp, opts):
    """Plain: ``w -= lr * G / (sqrt(var) + eps)``; centered: momentum on ``G / sqrt(var - mean^2 + eps)``."""
    mean, var, mom = s
    rho, eps, lr = hp["rho"], hp["epsilon"], hp["lr"]
    G = preprocess(g, w, hp)
    var = rho * var + (1 - rho) * G * G
    if opts["centered"]:
        mean = rho * mean + (1 - rho) * G
        # var >= mean^2 in exact arithmetic (both EMAs start at 0); where float32 rounding makes the
        # difference negative (a gradient that stays constant, rho = 0) MXNet's sqrt gives NaN: 0 instead
        # (differences #22)
        centered_var = jnp.maximum(var - mean * mean, 0)
        mom = hp["momentum"] * mom - div0(
            lr * G, jnp.sqrt(centered_var + eps), static_positive(hp, "epsilon")
        )
        delta = mom
    else:
        delta = div0(-lr * G, jnp.sqrt(var) + eps, static_positive(hp, "epsilon"))
    cw = hp["clip_weights"]
    if opts["clip_weights"]:
        new_w = w + delta
        if opts["clip_weights_dynamic"]:  # a traced value: 0 means off, as MXNet
            return jnp.where(cw > 0, jnp.clip(new_w, -cw, cw), new_w), (mean, var, mom)
        return jnp.clip(new_w, -cw, cw), (mean, var, mom)
    return delta, (mean, var, mom)


def _prepare(args: dict) -> dict:
    cw = args["clip_weights"]
    active = cw is not None and not (is_python_number(cw) and float(cw) == 0.0)
    # Options hold only hashable structure (drivers cache compiled code by them), never the value itself.
    return {
        "clip_weights": active,
        "clip_weights_dynamic": not is_python_number(cw),
    }


RMSPROP_RULE = Rule(
    name="rmsprop",
    state_cls=RMSPropState,
    fields=("mean", "var", "mom"),
    init=_init,
    step=rmsprop_step,
    hyper=("rho", "momentum", "epsilon", "clip_weights"),
    static=("centered",),
    checks={
        "rho": {"low": 0.0, "high": 1.0, "high_open": True},
        "momentum": {"low": 0.0, "high": 1.0},
        "epsilon": {"low": 0.0, "low_open": True},
        "clip_weights": {"low": 0.0, "allow_none": True},
    },
    prepare=_prepare,
    returns_weight=lambda opts: opts["clip_weights"],  # then the step returns the clipped new weight
    fp32_state=True,
    one_pass=True,
)


@optimizer(RMSPROP_RULE)
def rmsprop(
    learning_rate: ScalarOrSchedule | None = 0.001,
    rho: ScalarOrSchedule = 0.9,
    momentum: ScalarOrSchedule = 0.9,
    epsilon: ScalarOrSchedule = 1e-8,
    centered: bool = False,
    clip_weights: ScalarOrSchedule | None = None,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """RMSProp (``mxnet.optimizer.RMSProp``)::

        G = clip(rescale_grad * g) + wd * w
        plain:     var  = rho * var + (1 - rho) * G * G
                   w    = w - lr * G / (sqrt(var) + epsilon)
        centered:  mean = rho * mean + (1 - rho) * G
                   var  = rho * var + (1 - rho) * G * G
                   mom  = momentum * mom - lr * G / sqrt(max(var - mean * mean, 0) + epsilon)
                   w    = w + mom
        then, if clip_weights: w = clip(w, -clip_weights, clip_weights)

    Tieleman & Hinton, Lecture 6.5 (COURSERA, 2012); centered: Graves, "Generating Sequences With
    Recurrent Neural Networks" (2013), eq. 38–45. ``momentum`` is used by the centered variant only.
    ``var - mean * mean`` is never negative in exact arithmetic; the ``max(., 0)`` keeps float32 rounding
    from making it so, where MXNet's step is NaN (a gradient that stays constant; ``rho = 0``).
    MXNet 1.x's ``gamma1``/``gamma2`` keywords are spelled ``rho``/``momentum`` (as in MXNet 2.0).

    Args:
      learning_rate: step size (default 0.001).
      rho: decay rate in ``[0, 1)`` (default 0.9).
      momentum: momentum of the centered variant in ``[0, 1]`` (default 0.9).
      epsilon: ``> 0`` (default 1e-8).
      centered: use Graves' centered form (default False).
      clip_weights: clip the weights to ``[-clip_weights, clip_weights]`` after the update (None or 0: off).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.rmsprop(learning_rate=0.01, centered=True, momentum=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9667 -1.9667  2.9667]
      >>> print(type(state).__name__, [f for f in state._fields if getattr(state, f) is not None])
      RMSPropState ['count', 'mean', 'var', 'mom']
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration
