"""The AdaGrad family: AdaGrad, GroupAdaGrad and AdaDelta (MXNet keeps their state in float32)."""

from __future__ import annotations

from typing import Any, NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import div0, param_mean, preprocess, static_positive
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import AxisName, check_axis_name, concrete_value

_POSITIVE = {"low": 0.0, "low_open": True}


AdaGradState = NamedTuple(
    "AdaGradState",
    [
        ("count", jax.Array),
        (
            "history",
            optax.Updates,
        ),  # sum of squared gradients (group_adagrad: per row, shape (rows, 1)); float32
        ("master", optax.Params | None),
    ],
)
AdaGradState.__doc__ = """State of :func:`adagrad` and :func:`group_adagrad`."""


def adagrad_step(g, w, s, hp, opts):
    """``h += G^2 ; w -= lr * G / (sqrt(h) + epsilon)``."""
    (h,) = s
    G = preprocess(g, w, hp)
    h = h + G * G
    return div0(-hp["lr"] * G, jnp.sqrt(h) + hp["epsilon"], static_positive(hp, "epsilon")), (h,)


ADAGRAD_RULE = Rule(
    name="adagrad",
    state_cls=AdaGradState,
    fields=("history",),
    init=lambda w, dtype, opts: (jnp.zeros_like(w, dtype),),
    step=adagrad_step,
    hyper=("epsilon",),
    checks={"epsilon": _POSITIVE},
    fp32_state=True,
    weight_only_for_decay=True,
    sparse="rows",
    one_pass=True,
)


@optimizer(ADAGRAD_RULE)
def adagrad(
    learning_rate: ScalarOrSchedule | None = 0.01,
    epsilon: ScalarOrSchedule = 1e-6,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """AdaGrad (``mxnet.optimizer.AdaGrad``)::

        G = clip(rescale_grad * g) + wd * w
        h = h + G * G
        w = w - lr * G / (sqrt(h) + epsilon)

    Duchi, Hazan & Singer, "Adaptive Subgradient Methods for Online Learning and Stochastic Optimization"
    (JMLR 2011). MXNet 1.x's ``eps`` keyword is not accepted (MXNet 2.0 raises too); use ``epsilon``.

    Args:
      learning_rate: step size (default 0.01).
      epsilon: added to the denominator, ``> 0`` (default 1e-6).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adagrad(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9 -1.9  2.9]
      >>> print(np.asarray(state.history["w"]).round(4))
      [0.25 0.25 1.  ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


def group_adagrad_step(g, w, s, hp, opts):
    """Row-wise AdaGrad: ``h += mean(G^2, axis=1) ; w -= lr * G / (sqrt(h) + epsilon)``.

    The mean runs over all the columns, across shards when the columns are sharded (``axis_name``).
    """
    (h,) = s
    G = preprocess(g, w, hp, decay=False)
    h = h + param_mean(G * G, opts, axis=1, keepdims=True)
    return div0(-hp["lr"] * G, jnp.sqrt(h) + hp["epsilon"], static_positive(hp, "epsilon")), (h,)


def _group_adagrad_leaf(owner: str, path: str, leaf: Any, opts: dict) -> None:
    if jnp.ndim(leaf) != 2:
        raise ValueError(
            f"{owner}: parameter {path or '<root>'} has shape {jnp.shape(leaf)}; GroupAdaGrad keeps one "
            "accumulator per row and needs 2-D parameters (rows, features), as MXNet"
        )


def _group_adagrad_validate(owner: str, args: dict) -> None:
    wd = concrete_value(args["wd"])
    if wd is not None and wd != 0.0:
        raise ValueError(
            f"{owner}: `wd` must be 0 (GroupAdaGrad has no weight decay in MXNet), got {args['wd']!r}"
        )
    check_axis_name(owner, args["axis_name"])


GROUP_ADAGRAD_RULE = Rule(
    name="group_adagrad",
    no_flat="GroupAdaGrad keeps one accumulator per row of a 2-D parameter, which a flat multi-tensor buffer has not",
    state_cls=AdaGradState,
    fields=("history",),
    init=lambda w, dtype, opts: (jnp.zeros((w.shape[0], 1), dtype),),
    step=group_adagrad_step,
    hyper=("epsilon",),
    checks={"epsilon": _POSITIVE},
    fp32_state=True,
    weight_only_for_decay=True,
    validate=_group_adagrad_validate,
    prepare=lambda args: {"axis_name": args["axis_name"]},
    leaf_check=_group_adagrad_leaf,
    sparse="rows",
)


@optimizer(GROUP_ADAGRAD_RULE)
def group_adagrad(
    learning_rate: ScalarOrSchedule | None = 0.01,
    epsilon: ScalarOrSchedule = 1e-6,
    *,
    axis_name: AxisName = None,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Group AdaGrad with one accumulator per row (``mxnet.optimizer.contrib.GroupAdaGrad``)::

        G = clip(rescale_grad * g)
        h = h + mean(G * G, axis=1)            (h has shape (rows, 1))
        w = w - lr * G / (sqrt(h) + epsilon)

    Meant for embedding tables: parameters must be 2-D, and ``wd`` must be 0 (as in MXNet).
    Duchi et al. (2011); the row-wise variant follows MXNet's ``contrib.GroupAdaGrad``.

    Args:
      learning_rate: step size (default 0.01).
      epsilon: added to the denominator, ``> 0`` (default 1e-6).
      axis_name: ``None`` (default), or the mesh axis name (or tuple of names) over which the parameters'
        *columns* (axis 1) are sharded when ``update`` runs inside ``jax.shard_map`` (or ``jax.pmap`` with
        sharded parameters): the per-row mean over the columns is then ``lax.psum``-ed over those axes.
        Sharding the rows needs no ``axis_name`` (each row's mean is local), nor does ``jax.jit`` with
        ``NamedSharding``; see ``docs/interop.md``. Keyword-only (not in the MXNet-style facade).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([[1.0, -2.0], [3.0, 0.5]])}
      >>> grads = {"w": jnp.array([[0.5, -0.5], [1.0, 0.0]])}
      >>> tx = mxopt_jax.group_adagrad(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [[ 0.9    -1.9   ]
       [ 2.8586  0.5   ]]
      >>> print(state.history["w"].shape)  # one accumulator per row
      (2, 1)
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


AdaDeltaState = NamedTuple(
    "AdaDeltaState",
    [
        ("count", jax.Array),
        ("acc_g", optax.Updates),  # running average of G^2
        ("acc_delta", optax.Updates),  # running average of delta^2
        ("master", optax.Params | None),
    ],
)
AdaDeltaState.__doc__ = """State of :func:`adadelta` (float32)."""


def adadelta_step(g, w, s, hp, opts):
    """AdaDelta: the ratio of running RMS of updates and gradients scales the step."""
    acc_g, acc_delta = s
    rho, eps = hp["rho"], hp["epsilon"]
    G = preprocess(g, w, hp)
    acc_g = rho * acc_g + (1 - rho) * G * G
    delta = div0(jnp.sqrt(acc_delta + eps), jnp.sqrt(acc_g + eps), static_positive(hp, "epsilon")) * G
    acc_delta = rho * acc_delta + (1 - rho) * delta * delta
    return -hp["lr"] * delta, (acc_g, acc_delta)


ADADELTA_RULE = Rule(
    name="adadelta",
    state_cls=AdaDeltaState,
    fields=("acc_g", "acc_delta"),
    init=lambda w, dtype, opts: (jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype)),
    step=adadelta_step,
    hyper=("rho", "epsilon"),
    checks={"rho": {"low": 0.0, "high": 1.0}, "epsilon": _POSITIVE},
    fp32_state=True,
    weight_only_for_decay=True,
)


@optimizer(ADADELTA_RULE)
def adadelta(
    learning_rate: ScalarOrSchedule | None = 1.0,
    rho: ScalarOrSchedule = 0.9,
    epsilon: ScalarOrSchedule = 1e-6,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """AdaDelta (``mxnet.optimizer.AdaDelta``, MXNet 2.0 semantics)::

        G         = clip(rescale_grad * g) + wd * w
        acc_g     = rho * acc_g + (1 - rho) * G * G
        delta     = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * G
        acc_delta = rho * acc_delta + (1 - rho) * delta * delta
        w         = w - lr * delta

    Zeiler, "ADADELTA: An Adaptive Learning Rate Method" (2012).

    Args:
      learning_rate: scale of the step (default 1.0; MXNet 1.x had none).
      rho: decay rate in ``[0, 1]`` (default 0.9).
      epsilon: ``> 0`` (default 1e-6).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.adadelta(rho=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9968 -1.9968  2.9968]
      >>> print(np.asarray(state.acc_g["w"]).round(4))
      [0.025 0.025 0.1  ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration
