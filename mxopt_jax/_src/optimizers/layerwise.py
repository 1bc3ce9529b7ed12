"""Layer-wise adaptive optimizers: LARS, LAMB and LANS.

Their trust ratios use whole-tensor L2 norms of each parameter (never per row or per shard): with
``axis_name`` set, the norms of parameters sharded inside ``jax.shard_map``/``jax.pmap`` are summed across the
shards (:func:`mxopt_jax._src.numerics.param_sum`).
"""

from __future__ import annotations

from typing import Unpack

import jax.numpy as jnp
import numpy as np
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import div0, l2_norm, name_flag, one_minus_pow, preprocess, scale, static_positive
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import AxisName, check_axis_name, check_lazy_update, concrete_value, is_static_zero
from .adam import AdamState, _two_moments, ema
from .sgd import SGDState, _has_momentum, _mom_init

_BETA = {"low": 0.0, "high": 1.0, "high_open": True}
_LARS_EXEMPT = ("gamma", "beta", "bias")


def _axis_opts(args: dict) -> dict:
    """The mesh axes the parameters are sharded over (norms are then ``psum``-ed over them)."""
    return {"axis_name": args["axis_name"]}


def _check_axis(owner: str, args: dict) -> None:
    check_axis_name(owner, args["axis_name"])


def _lars_validate(owner: str, args: dict) -> None:
    check_lazy_update(owner, args, allow_multi_precision=False)
    _check_axis(owner, args)


def _lars_rate(g, w, hp, opts) -> dict:
    """``hp`` with ``lr`` times the layer-wise factor ``eta * |w| / (|g| + wd |w| + eps)`` (1 when degenerate
    or for gamma/beta/bias parameters), computed from the whole tensors."""
    exempt = name_flag(hp, opts, lambda name: name.endswith(_LARS_EXEMPT))
    if exempt is True:
        return hp
    wn = l2_norm(w, opts)
    gn = l2_norm(scale(g, hp["rescale_grad"]), opts)
    wd = 0.0 if is_static_zero(hp["wd"]) else hp["wd"]
    ok = (wn > 0) & (gn > 0)
    lam = jnp.where(ok, hp["eta"] * wn / jnp.where(ok, gn + wd * wn + hp["epsilon"], 1.0), 1.0)
    if exempt is not False:  # a multi-tensor buffer mixing exempt and scaled parameters
        lam = jnp.where(exempt, 1.0, lam)
    return {**hp, "lr": hp["lr"] * lam}


def lars_step(g, w, s, hp, opts):
    """SGD(-momentum) with the layer-wise rate ``lr * eta * |w| / (|g| + wd |w| + eps)``.

    The rate is the rule's ``pre_step`` hook (:func:`_lars_rate`): every driver computes it from the whole
    weight and gradient before the step (a lazy row-sparse update then runs this step on the listed rows, as
    MXNet does), so ``hp["lr"]`` already holds it here.
    """
    (mom,) = s
    lr = hp["lr"]
    G = preprocess(g, w, hp)
    if mom is None:
        return -lr * G, (None,)
    mom = hp["momentum"] * mom - lr * G
    return mom, (mom,)


LARS_RULE = Rule(
    name="lars",
    state_cls=SGDState,
    fields=("mom",),
    init=_mom_init,
    step=lars_step,
    hyper=("momentum", "eta", "epsilon"),
    static=("lazy_update",),
    checks={"momentum": {"low": 0.0, "high": 1.0}, "eta": {"low": 0.0}, "epsilon": {"low": 0.0}},
    prepare=lambda args: {**_has_momentum(args), **_axis_opts(args)},
    validate=_lars_validate,
    sparse="lazy_update",
    pre_step=_lars_rate,
    name_key=lambda name: "bias" if name.endswith(_LARS_EXEMPT) else "",
)


@optimizer(LARS_RULE)
def lars(
    learning_rate: ScalarOrSchedule | None = 0.1,
    momentum: ScalarOrSchedule = 0.0,
    eta: ScalarOrSchedule = 0.001,
    epsilon: ScalarOrSchedule = 1e-8,
    lazy_update: bool = False,
    *,
    axis_name: AxisName = None,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """LARS, layer-wise adaptive rate scaling (``mxnet.optimizer.LARS``)::

        lam = eta * |w| / (|rescale_grad * g| + wd * |w| + epsilon)    (1 if |w| = 0 or |g| = 0)
        lam = 1 for parameters whose name ends in 'gamma', 'beta' or 'bias'
        G   = clip(rescale_grad * g) + wd * w
        mom = momentum * mom - lr * lam * G ;  w = w + mom             (w = w - lr * lam * G without momentum)

    ``|.|`` is the whole-tensor L2 norm. A parameter's name is its pytree path with keys joined by ``'/'``
    (``{'fc_bias': b}`` -> ``'fc_bias'``, a list's entries -> ``'0'``, ``'1'``, …), the analogue of MXNet's
    ``param_idx2name`` lookup. You et al., "Large Batch Training of Convolutional Networks" (2017).

    Args:
      learning_rate: step size (default 0.1).
      momentum: momentum coefficient in ``[0, 1]`` (default 0).
      eta: trust coefficient, ``>= 0`` (default 0.001).
      epsilon: ``>= 0`` (default 1e-8).
      lazy_update: for row-sparse gradients, update only the listed rows.
      axis_name: ``None`` (default), or the mesh axis name (or tuple of names) over which every parameter
        given to this transform is sharded when ``update`` runs inside ``jax.shard_map`` (or ``jax.pmap``
        with sharded parameters): the whole-tensor norms are then ``lax.psum``-ed over those axes, so the
        result equals the unsharded one. Not needed under ``jax.jit`` with ``NamedSharding``; see
        ``docs/interop.md``. Keyword-only (an mxopt_jax extension, not in the MXNet-style facade).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.lars(learning_rate=0.1, momentum=0.9, eta=0.001)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9998 -1.9998  2.9997]
      >>> print(np.asarray(state.mom["w"]).round(6))
      [-0.000153  0.000153 -0.000306]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


def bounded_weight_norm(w, hp, opts=None):
    """``|w|`` clamped to ``[lower_bound, upper_bound]`` (a bound of None or 0 is off, as MXNet's kernels).

    A bound is on when it is at least the smallest normal float of the compute dtype: XLA's CPU code may flush
    a subnormal bound to zero in one fused kernel and not in another, so "on when > 0" would make jit and
    eager disagree. Concrete subnormal bounds are refused at construction (docs/differences.md #19).
    """
    r1 = l2_norm(w, opts)
    lb, ub = hp["lower_bound"], hp["upper_bound"]
    tiny = jnp.finfo(r1.dtype).tiny
    if lb is not None:
        r1 = jnp.where(lb >= tiny, jnp.maximum(r1, lb), r1)
    if ub is not None:
        r1 = jnp.where(ub >= tiny, jnp.minimum(r1, ub), r1)
    return r1


def trust_ratio(r1, u, opts=None):
    """``r1 / |u|``, or 1 when either is 0."""
    r2 = l2_norm(u, opts)
    ok = (r1 > 0) & (r2 > 0)
    return jnp.where(ok, r1 / jnp.where(ok, r2, 1.0), 1.0)


def _with_decay(u, w, hp):
    return u if is_static_zero(hp["wd"]) else u + hp["wd"] * w


def lamb_step(g, w, s, hp, opts):
    """LAMB: Adam direction plus decay, scaled by the trust ratio ``|w| / |u|``."""
    m, v = s
    b1, b2, eps, t = hp["beta1"], hp["beta2"], hp["epsilon"], hp["t"]
    G = preprocess(g, w, hp, decay=False)
    m = ema(m, G, b1)
    v = ema(v, G * G, b2)
    if opts["bias_correction"]:
        u = div0(
            m / one_minus_pow(b1, t), jnp.sqrt(v / one_minus_pow(b2, t)) + eps, static_positive(hp, "epsilon")
        )
    else:
        u = div0(m, jnp.sqrt(v) + eps, static_positive(hp, "epsilon"))
    u = _with_decay(u, w, hp)
    r = trust_ratio(bounded_weight_norm(w, hp, opts), u, opts)
    return -hp["lr"] * r * u, (m, v)


def _lamb_validate(owner: str, args: dict) -> None:
    """``axis_name``, and ``lower_bound <= upper_bound`` when both are on (else the clamp is a constant)."""
    _check_axis(owner, args)
    lb, ub = concrete_value(args["lower_bound"]), concrete_value(args["upper_bound"])
    for name, v in (("lower_bound", lb), ("upper_bound", ub)):
        if v is not None and 0 < v < _FLOAT32_TINY:
            raise ValueError(
                f"{owner}: `{name}` must be None, 0 (off) or >= {_FLOAT32_TINY:.6g} (the smallest normal "
                f"float32), got {v!r}: a subnormal bound may be flushed to zero by XLA in some compiled code "
                "and not in other code (MXNet would accept it; docs/differences.md #19)"
            )
    if lb is not None and ub is not None and lb > 0 and ub > 0 and lb > ub:
        raise ValueError(
            f"{owner}: `lower_bound` must be <= `upper_bound` when both are set (> 0), got lower_bound={lb!r}, "
            f"upper_bound={ub!r}"
        )


_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


def _bounds_checks() -> dict:
    return {"lower_bound": {"low": 0.0, "allow_none": True}, "upper_bound": {"low": 0.0, "allow_none": True}}


LAMB_RULE = Rule(
    name="lamb",
    state_cls=AdamState,
    fields=("mean", "var"),
    init=_two_moments,
    step=lamb_step,
    hyper=("beta1", "beta2", "epsilon", "lower_bound", "upper_bound"),
    static=("bias_correction",),
    checks={"beta1": _BETA, "beta2": _BETA, "epsilon": {"low": 0.0, "low_open": True}, **_bounds_checks()},
    fp32_state=True,
    prepare=_axis_opts,
    validate=_lamb_validate,
)


@optimizer(LAMB_RULE)
def lamb(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-6,
    lower_bound: ScalarOrSchedule | None = None,
    upper_bound: ScalarOrSchedule | None = None,
    bias_correction: bool = True,
    *,
    axis_name: AxisName = None,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """LAMB (``mxnet.optimizer.LAMB``)::

        G  = clip(rescale_grad * g)                                   (no decay in the moments)
        m  = beta1 * m + (1 - beta1) * G ;  v = beta2 * v + (1 - beta2) * G * G
        u  = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon) + wd * w
             (u = m / (sqrt(v) + epsilon) + wd * w without bias_correction)
        r1 = |w| clamped to [lower_bound, upper_bound] ;  r = r1 / |u|  (1 if either is 0)
        w  = w - lr * r * u

    You et al., "Large Batch Optimization for Deep Learning: Training BERT in 76 minutes" (ICLR 2020).
    ``t`` counts once per update (MXNet's non-aggregated fused path counts twice; docs/differences.md #2).

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-6).
      lower_bound, upper_bound: clamp of ``|w|`` in the trust ratio (None or 0: off).
      bias_correction: use Adam's bias correction (default True).
      axis_name: ``None`` (default), or the mesh axis name (or tuple of names) over which every parameter
        given to this transform is sharded when ``update`` runs inside ``jax.shard_map`` (or ``jax.pmap``
        with sharded parameters): the whole-tensor norms are then ``lax.psum``-ed over those axes, so the
        result equals the unsharded one. Not needed under ``jax.jit`` with ``NamedSharding``; see
        ``docs/interop.md``. Keyword-only (an mxopt_jax extension, not in the MXNet-style facade).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.lamb(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.784 -1.784  2.784]
      >>> print(np.asarray(state.mean["w"]).round(4))
      [ 0.05 -0.05  0.1 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


def lans_step(g, w, s, hp, opts):
    """LANS: LAMB on the normalized gradient, blending a momentum and a gradient term, each trust-scaled."""
    m, v = s
    b1, b2, eps, t = hp["beta1"], hp["beta2"], hp["epsilon"], hp["t"]
    gs = scale(g, hp["rescale_grad"])
    gn = gs / l2_norm(gs, opts)
    c = hp["clip_gradient"]
    G = gn if c is None else jnp.clip(gn, -c, c)
    m = ema(m, G, b1)
    v = ema(v, G * G, b2)
    D = jnp.sqrt(v / one_minus_pow(b2, t)) + eps
    r1 = bounded_weight_norm(w, hp, opts)
    u_m = _with_decay(div0(m / one_minus_pow(b1, t), D, static_positive(hp, "epsilon")), w, hp)
    u_g = _with_decay(div0(G, D, static_positive(hp, "epsilon")), w, hp)
    step = b1 * trust_ratio(r1, u_m, opts) * u_m + (1 - b1) * trust_ratio(r1, u_g, opts) * u_g
    return -hp["lr"] * step, (m, v)


LANS_RULE = Rule(
    name="lans",
    state_cls=AdamState,
    fields=("mean", "var"),
    init=_two_moments,
    step=lans_step,
    hyper=("beta1", "beta2", "epsilon", "lower_bound", "upper_bound"),
    checks=LAMB_RULE.checks,
    fp32_state=True,
    prepare=_axis_opts,
    validate=_lamb_validate,
)


@optimizer(LANS_RULE)
def lans(
    learning_rate: ScalarOrSchedule | None = 0.001,
    beta1: ScalarOrSchedule = 0.9,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-6,
    lower_bound: ScalarOrSchedule | None = None,
    upper_bound: ScalarOrSchedule | None = None,
    *,
    axis_name: AxisName = None,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """LANS (``mxnet.optimizer.LANS``, MXNet 2.0's fused math)::

        G   = clip(rescale_grad * g / |rescale_grad * g|)              (normalized, then clipped)
        m   = beta1 * m + (1 - beta1) * G ;  v = beta2 * v + (1 - beta2) * G * G
        D   = sqrt(v / (1 - beta2^t)) + epsilon ;  r1 = |w| clamped to [lower_bound, upper_bound]
        u_m = (m / (1 - beta1^t)) / D + wd * w ;   r_m = r1 / |u_m|
        u_g = G / D + wd * w ;                     r_g = r1 / |u_g|    (ratios are 1 if a norm is 0)
        w   = w - lr * (beta1 * r_m * u_m + (1 - beta1) * r_g * u_g)

    Zheng et al., "Accelerated Large Batch Optimization of BERT Pretraining in 54 minutes" (2020).
    As in MXNet, an all-zero gradient makes the normalization 0/0 (NaN). MXNet's non-fused ``step`` uses
    the once-updated weight in ``u_g``; mxopt_jax always computes the fused (default) form (docs/differences.md #3).

    Args:
      learning_rate: step size (default 0.001).
      beta1, beta2: decay rates in ``[0, 1)``.
      epsilon: ``> 0`` (default 1e-6).
      lower_bound, upper_bound: clamp of ``|w|`` in the trust ratios (None or 0: off).
      axis_name: ``None`` (default), or the mesh axis name (or tuple of names) over which every parameter
        given to this transform is sharded when ``update`` runs inside ``jax.shard_map`` (or ``jax.pmap``
        with sharded parameters): the whole-tensor norms are then ``lax.psum``-ed over those axes, so the
        result equals the unsharded one. Not needed under ``jax.jit`` with ``NamedSharding``; see
        ``docs/interop.md``. Keyword-only (an mxopt_jax extension, not in the MXNet-style facade).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.lans(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.784 -1.784  2.784]
      >>> print(np.asarray(state.mean["w"]).round(4))
      [ 0.0408 -0.0408  0.0816]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration
