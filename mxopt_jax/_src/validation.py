"""Validation: every ``check_*`` helper, with errors that name the argument and its allowed range.

Construction-time checks raise ``TypeError``/``ValueError`` naming the optimizer (``owner``, e.g.
``mxopt_jax.adam``), the argument and what is allowed. Update-time checks (gradient/parameter dtypes and shapes)
run on static shapes and dtypes, so they cost nothing under ``jax.jit``. Parameters are named by their tree
path, keys joined by ``'/'`` (:func:`path_name`). Whether a value can be checked now depends on its kind: Python
numbers and concrete arrays can, schedules and traced values cannot (:func:`concrete_value`).
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

INT32_MAX = 2**31 - 1

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: Appended to the errors of construction-time checks that refuse a value MXNet takes unchecked.
STRICTER_THAN_MXNET = "MXNet does not check this value, mxopt_jax refuses it: docs/differences.md #19"


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the user's line: the first frame outside the mxopt_jax package.

    Whatever the call depth inside the package (constructor -> ``prepare`` -> ..., ``create`` -> class ->
    ``__init__``, a jitted step function), the warning's filename and line are the caller's, so
    ``python -W error`` and warning filters by module point at the user's code.
    """
    frame: types.FrameType | None = sys._getframe(1)
    level = 2  # stacklevel 2 is warn()'s caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


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
    """``clip_gradient``: ``None`` (off) or a positive number (docs/differences.md #1)."""
    if value is None:
        return
    v = concrete_value(value)
    if v is not None and (math.isnan(v) or math.isinf(v) or v <= 0):
        raise ValueError(
            f"{owner}: `clip_gradient` must be None (no clipping) or a finite number > 0, got {v!r}. "
            "MXNet is ambiguous here (its fused kernels treat 0 as 'off' while its Python step zeroes the "
            "gradient); mxopt_jax asks you to say which you mean: use None for no clipping (docs/differences.md #1)."
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


def check_bool(owner: str, name: str, value: Any, allow_none: bool = False) -> None:
    """A switch: ``True`` or ``False`` (NumPy booleans too; ``None`` too with ``allow_none``); MXNet takes any
    truthy value (differences #19)."""
    if allow_none and value is None:
        return
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: `{name}` must be True or False, got {value!r} ({STRICTER_THAN_MXNET})")


def check_choice(owner: str, name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(f"{owner}: `{name}` must be one of {choices}, got {value!r}")


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


def check_state_type(owner: str, state: Any, state_cls: type) -> None:
    """The state passed to ``update`` is this optimizer's (not ``None``, not another optimizer's)."""
    if not isinstance(state, state_cls):
        raise TypeError(
            f"{owner}: `state` is a {type(state).__name__}, expected the {state_cls.__name__} returned by this "
            "optimizer's init() (inside optax wrappers pass the wrapper's own state)"
        )


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


def check_lazy_update(owner: str, args: dict, *, allow_multi_precision: bool) -> None:
    """MXNet's constructor assertions on ``lazy_update`` (SGD, LARS: not with multi_precision)."""
    check_bool(owner, "lazy_update", args["lazy_update"])
    if args["lazy_update"] and args["use_fused_step"] is False:
        raise ValueError(f"{owner}: `lazy_update=True` needs `use_fused_step` True or None (as MXNet)")
    if args["lazy_update"] and args["multi_precision"] and not allow_multi_precision:
        raise ValueError(
            f"{owner}: `lazy_update=True` cannot be combined with `multi_precision=True` (as MXNet)"
        )


def _edit_distance(a: str, b: str) -> int:
    """Edits that turn ``a`` into ``b``: inserting, deleting or replacing a character, or swapping two
    neighbouring ones, each counts 1 (the optimal string alignment distance)."""
    before: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], before[j - 2] + 1)
        before, prev = prev, cur
    return prev[-1]


def close_names(name: str, known: Iterable[str]) -> list[str]:
    """The names of ``known`` that ``name`` most likely meant, best first; empty when none is close.

    Case is ignored. A name of at least 3 characters that begins known names stands for all of them, in
    ``known``'s order (``mnist`` -> ``mnist1d_mlp``, ``mnist1d_cnn``, ``mnist1d_bn``); failing that, one that
    begins a part of known names (parts split at ``_`` and ``.``: ``cnn`` -> ``mnist1d_cnn``). Otherwise the
    nearest names by edit distance, where swapping two neighbouring letters counts as one edit (``adma`` ->
    ``adam``, not ``adamax``), within a third of the name's length (at least one edit); ties go to the name
    more alike by ``difflib``'s ratio (``adamm`` -> ``adam``, not ``adamw``), and names tied on both are all
    given.
    """
    names = list(dict.fromkeys(str(k) for k in known))
    key = str(name).lower()
    if not key or not names:
        return []
    if len(key) >= 3:
        starts = [k for k in names if k.lower().startswith(key) and k.lower() != key]
        if starts:
            return starts
        parts = [k for k in names if any(p.startswith(key) for p in k.lower().replace(".", "_").split("_"))]
        if parts:
            return parts
    scored = []
    for k in names:
        d = _edit_distance(key, k.lower())
        if d <= max(1, len(key) // 3):
            scored.append((d, -difflib.SequenceMatcher(None, key, k.lower()).ratio(), k))
    if not scored:
        return []
    best = min(s[:2] for s in scored)
    return [k for *s, k in scored if tuple(s) == best]


def either(names: Iterable[str], show: Callable[[str], str] = repr) -> str:
    """``'a'``, ``'a' or 'b'``, ``'a', 'b' or 'c'``: the names as ``show`` writes them (quoted by default), for
    a "did you mean" hint."""
    shown = [show(n) for n in names]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


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


def structure_text(tree: Any, is_leaf: Any = None, limit: int = 300) -> str:
    """A tree's structure (node types and keys, ``*`` for each leaf), never its values; cut at ``limit``."""
    text = str(jax.tree_util.tree_structure(tree, is_leaf=is_leaf))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tree_mismatch(what_a: str, a: Any, what_b: str, b: Any, is_leaf: Any = None) -> str:
    """Says how two trees differ by their structures and leaf paths (``a/b``), never by their values."""
    pa = [path_name(p) for p, _ in jax.tree_util.tree_flatten_with_path(a, is_leaf=is_leaf)[0]]
    pb = [path_name(p) for p, _ in jax.tree_util.tree_flatten_with_path(b, is_leaf=is_leaf)[0]]
    only_a, only_b = [p for p in pa if p not in pb], [p for p in pb if p not in pa]
    if only_a or only_b:
        where = f"leaves only in {what_a}: {only_a[:5]}; only in {what_b}: {only_b[:5]}"
    else:
        where = f"the same {len(pa)} leaf paths, in different containers"
    return (
        f"{where}; {what_a} is {structure_text(a, is_leaf)}, {what_b} {structure_text(b, is_leaf)} "
        "(`*` marks a leaf)"
    )
