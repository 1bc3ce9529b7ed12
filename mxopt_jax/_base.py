"""Shared machinery: hyperparameter values, validation, MXNet's gradient preamble, dtypes.

Everything an update rule needs besides its own math lives here, written once:

* :func:`resolve` turns a hyperparameter given as a Python float, a JAX scalar or a schedule
  ``count -> value`` into the value for the current step (never a recompile when it changes).
* :func:`preprocess` is MXNet's gradient preamble ``G = clip(rescale_grad * g) + wd * w`` in MXNet 2.0's
  order (clip first, then add decay), with switches for the optimizers that leave out decay or clipping.
* The ``check_*`` helpers validate hyperparameters at construction with errors that name the argument and
  its allowed range.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Scalar = float | int | jax.Array | np.ndarray
ScalarOrSchedule = Scalar | Callable[[jax.Array], Any]

LOW_PRECISION = (jnp.dtype(jnp.float16), jnp.dtype(jnp.bfloat16))
INT32_MAX = 2**31 - 1


# --------------------------------------------------------------------------- static vs dynamic values
def is_python_number(x: Any) -> bool:
    """True for Python (non-bool) numbers: values that may be folded into the compiled program."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def concrete_value(x: Any) -> float | None:
    """The value of ``x`` when it can be read on the host now (Python number or a concrete scalar array)."""
    if is_python_number(x):
        return float(x)
    if isinstance(x, jax.core.Tracer) or callable(x):
        return None
    try:
        arr = np.asarray(x)
    except Exception:  # noqa: BLE001 - anything that is not array-like is checked elsewhere
        return None
    if arr.shape == () and np.issubdtype(arr.dtype, np.number):
        return float(arr)
    return None


def is_static_zero(x: Any) -> bool:
    return is_python_number(x) and float(x) == 0.0


def is_static_one(x: Any) -> bool:
    return is_python_number(x) and float(x) == 1.0


def resolve(value: ScalarOrSchedule, count: jax.Array) -> Any:
    """Value of a hyperparameter at step ``count`` (0 on the first update, optax's convention).

    Python numbers are returned unchanged (the driver folds them); arrays are returned as they are;
    callables are schedules and are evaluated at ``count``.
    """
    if callable(value):
        return value(count)
    return value


# --------------------------------------------------------------------------- validation
def _describe(x: Any) -> str:
    return repr(x) if is_python_number(x) else f"{x!r}"


def check_range(
    owner: str,
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
) -> None:
    """Validate a scalar hyperparameter when its value is known at construction.

    Schedules and traced values cannot be checked here and are accepted.
    """
    if value is None:
        if allow_none:
            return
        raise TypeError(f"{owner}: `{name}` must be a number, not None")
    if isinstance(value, bool) or isinstance(value, str):
        raise TypeError(f"{owner}: `{name}` must be a number, got {type(value).__name__} {value!r}")
    if callable(value):
        return
    if not is_python_number(value):
        if not isinstance(value, jax.core.Tracer):
            try:
                arr = np.asarray(value) if not isinstance(value, jax.Array) else value
            except Exception as exc:  # noqa: BLE001
                raise TypeError(f"{owner}: `{name}` must be a number, got {type(value).__name__}") from exc
            if getattr(arr, "shape", ()) != ():
                raise ValueError(f"{owner}: `{name}` must be a scalar, got shape {tuple(arr.shape)}")
            if not jnp.issubdtype(arr.dtype, jnp.number) or jnp.issubdtype(arr.dtype, jnp.complexfloating):
                raise TypeError(f"{owner}: `{name}` must be a real number, got dtype {arr.dtype}")
    v = concrete_value(value)
    if v is None:
        return
    lo = "(" if low_open else "["
    hi = ")" if high_open else "]"
    rng = f"{lo}{'-inf' if low is None else low}, {'inf' if high is None else high}{hi}"
    if math.isnan(v):
        raise ValueError(f"{owner}: `{name}` must be in {rng}, got NaN")
    bad = (
        (low is not None and (v < low or (low_open and v == low)))
        or (high is not None and (v > high or (high_open and v == high)))
        or (high is None and math.isinf(v) and v > 0)
        or (low is None and math.isinf(v) and v < 0)
    )
    if bad:
        raise ValueError(f"{owner}: `{name}` must be in {rng}, got {_describe(v)}")


def check_clip_gradient(owner: str, value: Any) -> None:
    """``clip_gradient``: ``None`` (off) or a positive number (DECISIONS.md #1)."""
    if value is None:
        return
    v = concrete_value(value)
    if v is not None and (math.isnan(v) or math.isinf(v) or v <= 0):
        raise ValueError(
            f"{owner}: `clip_gradient` must be None (no clipping) or a finite number > 0, got {v!r}. "
            "MXNet is ambiguous here (its fused kernels treat 0 as 'off' while its Python step zeroes the "
            "gradient); mxopt_jax asks you to say which you mean: use None for no clipping."
        )
    check_range(owner, "clip_gradient", value, low=0.0, low_open=True)


def check_int(owner: str, name: str, value: Any, *, low: int) -> None:
    """An integer argument (Python int or integer JAX/NumPy scalar) that is ``>= low``."""
    dtype = getattr(value, "dtype", None)
    ok = isinstance(value, (int, np.integer)) or (dtype is not None and jnp.issubdtype(dtype, jnp.integer))
    if isinstance(value, bool) or not ok:
        raise TypeError(f"{owner}: `{name}` must be an int >= {low}, got {value!r}")
    check_range(owner, name, value, low=low)
    v = concrete_value(value)  # None when traced (optax.inject_hyperparams injects int arguments too)
    if v is not None and v > INT32_MAX:
        raise ValueError(f"{owner}: `{name}` must be <= {INT32_MAX} (update counts are int32), got {int(v)}")


def check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: `{name}` must be True or False, got {value!r}")


def check_choice(owner: str, name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{owner}: `{name}` must be one of {choices}, got {value!r}")


# --------------------------------------------------------------------------- learning rate vs scheduler
def resolve_learning_rate(owner: str, learning_rate: Any, lr_scheduler: Any) -> tuple[Any, Any]:
    """MXNet's rules for ``learning_rate`` vs ``lr_scheduler`` (facade.md §2, DECISIONS.md #17).

    Returns ``(learning_rate, lr_scheduler)``: with no scheduler and no rate the rate is 0.01; when both are
    given and the scheduler's ``base_lr`` differs, the scheduler's ``base_lr`` is overwritten by the
    optimizer's rate, with a warning (MXNet prints the same sentence).
    """
    if lr_scheduler is None and learning_rate is None:
        learning_rate = 0.01
    if lr_scheduler is not None:
        if not callable(lr_scheduler):
            hint = ""
            if isinstance(lr_scheduler, (jax.Array, np.ndarray)):
                hint = (
                    " (under optax.inject_hyperparams the scheduler is called like a schedule unless you pass "
                    "static_args=('lr_scheduler',))"
                )
            raise TypeError(
                f"{owner}: `lr_scheduler` must be an mxopt_jax.lr_scheduler.LRScheduler or a callable "
                f"num_update -> lr, got {type(lr_scheduler).__name__}{hint}"
            )
        if learning_rate is not None and callable(learning_rate):
            raise TypeError(
                f"{owner}: give either a schedule as `learning_rate` or an `lr_scheduler`, not both"
            )
        base = getattr(lr_scheduler, "base_lr", None)
        if learning_rate is not None and base is not None and base != learning_rate:
            warnings.warn(
                "learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in optimizer.",
                UserWarning,
                stacklevel=3,
            )
            lr_scheduler.base_lr = learning_rate
    if learning_rate is not None:
        check_range(owner, "learning_rate", learning_rate, low=0.0)
    return learning_rate, lr_scheduler


def scheduler_fn(lr_scheduler: Any) -> Callable[[jax.Array], jax.Array]:
    """A pure function ``num_update -> lr`` for an MXNet-style scheduler or any jittable callable."""
    as_schedule = getattr(lr_scheduler, "as_schedule", None)
    if as_schedule is not None:
        return as_schedule()
    return lr_scheduler


# --------------------------------------------------------------------------- dtypes
def check_float_leaf(owner: str, path: str, leaf: Any) -> None:
    try:
        dtype = jnp.result_type(leaf)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: parameter {path or '<root>'} is a {type(leaf).__name__}, not an array; optimizers "
            "update floating-point arrays only (float16, bfloat16, float32, float64)"
        ) from None
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(
            f"{owner}: parameter {path or '<root>'} has dtype {dtype}; optimizers update floating-point "
            "parameters only (float16, bfloat16, float32, float64)"
        )


def check_update_leaf(owner: str, path: str, g: Any, w: Any = None, master: Any = None) -> None:
    """Checks on one parameter at ``update`` time, before its rule runs (static shapes/dtypes: free under jit).

    The gradient must be a floating-point array of the parameter's shape (NumPy/JAX broadcasting would
    otherwise turn a wrong-shaped gradient into a silently wrong update, and ``astype`` an integer or complex
    one into garbage); the parameter, when given, must be floating-point (an integer parameter would get its
    update truncated to 0); the multi-precision master must have the parameter's shape.
    """
    name = path or "<root>"
    try:
        gdt = jnp.result_type(g)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: the gradient for parameter {name} is a {type(g).__name__}, not an array"
        ) from None
    if not jnp.issubdtype(gdt, jnp.floating):
        raise TypeError(
            f"{owner}: the gradient for parameter {name} has dtype {gdt}; gradients must be floating-point "
            "(float16, bfloat16, float32, float64)"
        )
    if w is not None:
        check_float_leaf(owner, path, w)
        if tuple(jnp.shape(g)) != tuple(jnp.shape(w)):
            raise ValueError(
                f"{owner}: the gradient for parameter {name} has shape {tuple(jnp.shape(g))} but the parameter "
                f"has shape {tuple(jnp.shape(w))}; they must be equal"
            )
    if master is not None and tuple(jnp.shape(master)) != tuple(jnp.shape(g)):
        raise ValueError(
            f"{owner}: the optimizer state's float32 master copy of parameter {name} has shape "
            f"{tuple(jnp.shape(master))}, the gradient {tuple(jnp.shape(g))} (was the state created by init() "
            "on these parameters?)"
        )


def check_state_leaves(
    owner: str,
    path: str,
    names: tuple[str, ...],
    fields: tuple,
    init: Callable[..., tuple],
    ref: Any,
    opts: dict,
) -> None:
    """One parameter's state entries have the shapes the rule's ``init`` gives for a parameter like ``ref``.

    ``init`` is ``rule.init`` (evaluated abstractly with ``jax.eval_shape``, nothing is computed); a state
    made by ``init`` on differently shaped parameters of the same tree structure fails here with a message
    naming the entry, instead of broadcasting into a silently wrong update.
    """
    cdt = compute_dtype(jnp.result_type(ref))
    expected = jax.eval_shape(lambda w: tuple(init(w, cdt, opts)), jax.ShapeDtypeStruct(jnp.shape(ref), cdt))
    for n, x, e in zip(names, fields, expected, strict=True):
        if x is None or e is None:
            if (x is None) != (e is None):
                what = "missing" if x is None else "unexpected"
                raise ValueError(
                    f"{owner}: optimizer state `{n}` of parameter {path or '<root>'} is {what} (was the state "
                    "created by this optimizer's init() with the same options?)"
                )
            continue
        if tuple(jnp.shape(x)) != tuple(e.shape):
            raise ValueError(
                f"{owner}: optimizer state `{n}` of parameter {path or '<root>'} has shape "
                f"{tuple(jnp.shape(x))}, expected {tuple(e.shape)} (was the state created by init() on these "
                "parameters?)"
            )


def check_state_type(owner: str, state: Any, state_cls: type) -> None:
    """The state passed to ``update`` is this optimizer's (not ``None``, not another optimizer's)."""
    if not isinstance(state, state_cls):
        raise TypeError(
            f"{owner}: `state` is a {type(state).__name__}, expected the {state_cls.__name__} returned by this "
            "optimizer's init() (inside optax wrappers pass the wrapper's own state)"
        )


def compute_dtype(dtype: Any) -> jnp.dtype:
    """Arithmetic dtype for a parameter of ``dtype``: float32 for 16-bit and 32-bit, float64 for float64."""
    return jnp.promote_types(dtype, jnp.float32)


def is_low_precision(dtype: Any) -> bool:
    return jnp.dtype(dtype) in LOW_PRECISION


# --------------------------------------------------------------------------- pytree paths
def path_name(path: tuple) -> str:
    """A readable name for a pytree key path: keys joined by '/' (``{'fc': {'bias': x}}`` -> ``fc/bias``)."""
    parts = []
    for k in path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "/".join(parts)


# --------------------------------------------------------------------------- the preamble
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


AxisName = str | tuple[str, ...] | None


def check_axis_name(owner: str, value: Any) -> None:
    """``axis_name``: ``None``, a mesh axis name, or a non-empty tuple of distinct axis names."""
    ok = value is None or (isinstance(value, str) and value != "")
    if isinstance(value, tuple) and value and all(isinstance(v, str) and v for v in value):
        ok = len(set(value)) == len(value)
    if not ok:
        raise TypeError(
            f"{owner}: `axis_name` must be None, a mesh axis name (non-empty str) or a non-empty tuple of "
            f"distinct axis names (the axes the parameters are sharded over inside shard_map/pmap), "
            f"got {value!r}"
        )


def param_sum(x: jax.Array, opts: dict | None = None, axis: Any = None, keepdims: bool = False) -> jax.Array:
    """Sum of ``x`` over ``axis`` of a parameter (all axes by default), across shards when it is sharded.

    When ``opts["axis_name"]`` is set, the parameter is a shard of a larger tensor inside ``jax.shard_map``
    (or ``jax.pmap`` with sharded parameters), split over those mesh axes: the local sum is followed by a
    ``lax.psum`` over them, so the result is the sum over the whole tensor, identical on every shard.
    Every reduction of an update rule that must see the whole parameter goes through here.
    """
    segments = None if opts is None else opts.get("segments")
    if segments is not None and axis is None:  # a multi-tensor buffer: one sum per original parameter
        from .multi_tensor import segment_sum

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
    from .multi_tensor import name_mask

    return name_mask(segments, predicate)


def l2_norm(x: jax.Array, opts: dict | None = None) -> jax.Array:
    """Whole-tensor L2 norm (in the dtype of ``x``, float32 or wider), across shards like :func:`param_sum`."""
    return jnp.sqrt(param_sum(jnp.square(x), opts))


def one_minus_pow(beta: jax.Array, t: jax.Array) -> jax.Array:
    """``1 - beta**t`` for bias corrections, accurate for beta near 1 (``-expm1(t * log(beta))``)."""
    beta = jnp.asarray(beta)
    return -jnp.expm1(jnp.asarray(t, beta.dtype) * jnp.log(beta))


def check_lazy_update(owner: str, args: dict, *, allow_multi_precision: bool) -> None:
    """MXNet's constructor assertions on ``lazy_update`` (SGD, LARS: not with multi_precision)."""
    check_bool(owner, "lazy_update", args["lazy_update"])
    if args["lazy_update"] and args["use_fused_step"] is False:
        raise ValueError(f"{owner}: `lazy_update=True` needs `use_fused_step` True or None (as MXNet)")
    if args["lazy_update"] and args["multi_precision"] and not allow_multi_precision:
        raise ValueError(
            f"{owner}: `lazy_update=True` cannot be combined with `multi_precision=True` (as MXNet)"
        )
