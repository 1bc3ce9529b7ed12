"""Numerics shared by the update rules: MXNet's gradient preamble, dtypes, bias corrections and norms.

* :func:`preprocess` is MXNet's gradient preamble ``G = clip(rescale_grad * g) + wd * w`` in MXNet 2.0's
  order (clip first, then add decay), with switches for the optimizers that leave out decay or clipping.
* :func:`param_sum` is the one reduction over a whole parameter: the driver says, through ``opts``, whether
  the parameter is a run of segments of a multi-tensor buffer (``opts["segments"]``) and whether it is sharded
  over mesh axes (``opts["axis_name"]``); :func:`l2_norm` and :func:`param_mean` are built on it.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .validation import is_static_one, is_static_zero

LOW_PRECISION = (jnp.dtype(jnp.float16), jnp.dtype(jnp.bfloat16))


#: The XLA:CPU option that lets sibling element-wise loops share one loop with several outputs.
MULTI_OUTPUT_FUSION = "xla_cpu_use_multi_output_fusion"


@functools.cache
def multi_output_fusion() -> bool:
    """Whether XLA:CPU merges sibling loops into multi-output fusions in this process.

    True when ``XLA_FLAGS`` holds ``--xla_backend_extra_options=xla_cpu_use_multi_output_fusion`` and the
    default backend is the CPU. XLA reads ``XLA_FLAGS`` once, when its CPU client starts, so the value is read
    once too (at the first trace of an update); set the variable before the first JAX computation.
    ``MXOPT_JAX_ONE_PASS=0`` turns the one-pass form off (``=1`` forces it, for tests).
    """
    forced = os.environ.get("MXOPT_JAX_ONE_PASS")
    if forced in ("0", "1"):
        return forced == "1"
    if MULTI_OUTPUT_FUSION not in os.environ.get("XLA_FLAGS", ""):
        return False
    return jax.default_backend() == "cpu"


def compute_dtype(dtype: Any) -> jnp.dtype:
    """Arithmetic dtype for a parameter of ``dtype``: float32 for 16-bit and 32-bit, float64 for float64."""
    return jnp.promote_types(dtype, jnp.float32)


def is_low_precision(dtype: Any) -> bool:
    return jnp.dtype(dtype) in LOW_PRECISION


def scale(x: jax.Array, factor: Any) -> jax.Array:
    """``x * factor``, skipped when ``factor`` is the Python number 1."""
    return x if is_static_one(factor) else x * factor


def preprocess(
    g: jax.Array,
    w: jax.Array | None,
    hp: dict,
    *,
    clip: bool = True,
    decay: bool = True,
) -> jax.Array:
    """MXNet 2.0's gradient preamble ``G = clip(rescale_grad * g) + wd * w``.

    ``clip=False`` leaves out clipping (the ``Test`` optimizer); ``decay=False`` leaves out the weight decay
    term (optimizers that apply decay elsewhere: AdamW, LAMB, LANS, Ftrl, GroupAdaGrad). Decay is skipped when
    ``wd`` is the Python number 0, so such rules never read the weight.
    """
    G = scale(g, hp["rescale_grad"])
    c = hp["clip_gradient"]
    if clip and c is not None:
        G = jnp.clip(G, -c, c)
    if decay and not is_static_zero(hp["wd"]):
        G = G + hp["wd"] * w
    return G


def div0(num: jax.Array, den: jax.Array, positive: bool = False) -> jax.Array:
    """``num / den`` with ``0 / 0`` taken as 0, for quotients whose denominator can be 0 only with a
    hyperparameter that may be 0 when traced (an ``epsilon`` given as a schedule or under
    ``optax.inject_hyperparams``; a concrete 0 is refused at construction) and a numerator that is then 0
    too (an all-zero gradient history). Where both are 0 the division sees a denominator of 1, so neither
    the value nor its gradient under ``jax.grad`` is NaN; a non-zero numerator over 0 is still ``±inf``, as
    the formula says (docs/differences.md #20). ``positive=True`` (the denominator's hyperparameter is a
    Python number, checked ``> 0`` at construction) divides plainly.
    """
    if positive:
        return num / den
    return num / jnp.where((den == 0) & (num == 0), jnp.ones_like(den), den)


def static_positive(hp: dict, name: str) -> bool:
    """Whether hyperparameter ``name`` was a Python number ``> 0`` (``hp["positive"]``, set by the drivers)."""
    return name in hp.get("positive", ())


def rate_or_one(lr: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(lr == 0, lr with 0 replaced by 1)`` for the rules that divide by the learning rate (FTML, Ftrl) or
    take its square root (SGLD's noise).

    Such a rule computes its step with the safe rate and then selects, where the rate is 0, what a step at
    rate 0 does (docs/differences.md #20): no ``x / 0`` and no ``sqrt`` slope at 0 is ever evaluated, so a
    schedule that starts at 0 (optax counts from 0) gives neither a NaN nor a NaN gradient.
    """
    zero = lr == 0
    return zero, jnp.where(zero, jnp.ones_like(lr), lr)


def one_minus_pow(beta: Any, t: jax.Array, exact: float | None = None) -> jax.Array:
    """``1 - beta**t`` for bias corrections, accurate for beta near 1 (``-expm1(t * log(beta))``).

    ``exact``: ``beta`` as the Python number it was given as. Its logarithm is then taken in double precision
    on the host, as MXNet computes its bias corrections (in Python, in double): the float32 rounding of
    ``beta``, which changes ``1 - beta`` by up to ``2**-24 / (1 - beta)`` of itself (1.3e-5 for 0.999,
    1.7e-4 for 0.9999), never enters. Without it (a traced ``beta``: a schedule, ``optax.inject_hyperparams``)
    the logarithm is taken in ``beta``'s dtype.
    """
    if exact is not None:
        log_beta = math.log(exact) if exact > 0 else -math.inf
        return -jnp.expm1(jnp.asarray(t, jnp.result_type(beta)) * log_beta)
    beta = jnp.asarray(beta)
    return -jnp.expm1(jnp.asarray(t, beta.dtype) * jnp.log(beta))


def complement(hp: dict, name: str) -> Any:
    """``1 - hp[name]``; from the Python number the user gave when there is one (``hp["exact"]``), computed in
    double and rounded once, as MXNet's optimizers written in Python compute it (Nadam), rather than from the
    float32 rounding of the rate (which changes ``1 - 0.999`` by 1.3e-5 of itself)."""
    exact = hp.get("exact", {}).get(name)
    if exact is None:
        return 1 - hp[name]
    return jnp.asarray(1.0 - exact, jnp.result_type(hp[name]))


def bias_correction(hp: dict, name: str) -> jax.Array:
    """``1 - hp[name]**hp["t"]``, the bias correction of a decay rate (``beta1``, ``beta2``) after ``t``
    updates; from the Python number the user gave when there is one (``hp["exact"]``, set by the drivers), so
    it matches MXNet's double-precision value to float32 rounding (:func:`one_minus_pow`)."""
    return one_minus_pow(hp[name], hp["t"], hp.get("exact", {}).get(name))


def param_sum(x: jax.Array, opts: dict | None = None, axis: Any = None, keepdims: bool = False) -> jax.Array:
    """Sum of ``x`` over ``axis`` of a parameter (all axes by default), across shards when it is sharded.

    When ``opts["axis_name"]`` is set, the parameter is a shard of a larger tensor inside ``jax.shard_map``
    (or ``jax.pmap`` with sharded parameters), split over those mesh axes: the local sum is followed by a
    ``lax.psum`` over them, so the result is the sum over the whole tensor, identical on every shard.
    Every reduction of an update rule that must see the whole parameter goes through here.
    """
    segments = None if opts is None else opts.get("segments")
    if segments is not None and axis is None:  # a multi-tensor buffer: one sum per original parameter
        s = segment_sum(x, segments)
    else:
        s = jnp.sum(x, axis=axis, keepdims=keepdims)
    name = None if opts is None else opts.get("axis_name")
    if name is None:
        return s
    try:
        return jax.lax.psum(s, name)
    except NameError as exc:
        raise ValueError(
            f"`axis_name`={name!r}: no such mesh axis is bound here ({exc}). Call the update inside "
            "jax.shard_map / jax.pmap over that axis, or pass axis_name=None when the parameters are not "
            "sharded (jax.jit with NamedSharding needs no axis_name)"
        ) from None


def param_mean(x: jax.Array, opts: dict | None = None, axis: int = 1, keepdims: bool = True) -> jax.Array:
    """Mean of ``x`` over ``axis`` of a parameter, across shards like :func:`param_sum`."""
    count = param_sum(jnp.asarray(x.shape[axis], x.dtype), opts)
    return param_sum(x, opts, axis=axis, keepdims=keepdims) / count


def name_flag(hp: dict, opts: dict | None, predicate: Callable[[str], bool]) -> Any:
    """``predicate(parameter name)``: a Python bool, or a per-element mask on a multi-tensor buffer."""
    segments = None if opts is None else opts.get("segments")
    if segments is None:
        return bool(predicate(hp["name"]))
    return name_mask(segments, predicate)


def l2_norm(x: jax.Array, opts: dict | None = None) -> jax.Array:
    """Whole-tensor L2 norm (in the dtype of ``x``, float32 or wider), across shards like :func:`param_sum`."""
    return jnp.sqrt(param_sum(jnp.square(x), opts))


# --------------------------------------------------------------------------- multi-tensor segments
def _per_element(values: list, sizes: tuple[int, ...]) -> jax.Array:
    """One value per parameter, broadcast over its elements (no index constant of the buffer's size)."""
    if len(set(sizes)) == 1:
        vec = jnp.stack(values)
        return jnp.broadcast_to(vec[:, None], (len(sizes), sizes[0])).reshape(-1)
    return jnp.concatenate([jnp.broadcast_to(v, (n,)) for v, n in zip(values, sizes, strict=True)])


def expand(values: list, sizes: tuple[int, ...], dtype: Any) -> Any:
    """Per-parameter values as a per-element vector (a scalar when they are all the same number)."""
    if all(isinstance(v, float) for v in values) and len(set(values)) == 1:
        return values[0]
    return _per_element([jnp.asarray(v, dtype) for v in values], sizes)


def segment_sum(x: jax.Array, segments: dict) -> jax.Array:
    """Per-parameter sums of a buffer, broadcast back to every element of the parameter."""
    sizes = segments["sizes"]
    if len(sizes) == 1:
        return jnp.sum(x)
    if len(set(sizes)) == 1:
        k, n = len(sizes), sizes[0]
        return jnp.broadcast_to(jnp.sum(x.reshape(k, n), axis=1, keepdims=True), (k, n)).reshape(-1)
    offsets = np.cumsum((0, *sizes))
    sums = [
        jnp.sum(jax.lax.slice_in_dim(x, int(a), int(b)))
        for a, b in zip(offsets[:-1], offsets[1:], strict=True)
    ]
    return _per_element(sums, sizes)


def name_mask(segments: dict, predicate: Any) -> Any:
    """Per-element boolean mask of the parameters whose name satisfies ``predicate`` (Python bool if uniform)."""
    flags = [bool(predicate(n)) for n in segments["names"]]
    if len(set(flags)) == 1:
        return flags[0]
    return _per_element([jnp.asarray(f) for f in flags], segments["sizes"])
