"""An MXNet optimizer state in mxopt_jax's layout: MXNet 1.9.1 / 2.0 per-index states -> the rule's fields,
checked against the state mxopt_jax creates for the weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..facade.updater import ShapeCache, fits
from .allowlist import _MX_OPTIMIZERS, MXNetObject

_REGISTRY_NAME = {n: n.lower() for n in _MX_OPTIMIZERS}
# 1.9.1 attribute names of our constructor arguments
_ALIASES_19 = {
    "rmsprop": {"rho": "gamma1", "momentum": "gamma2"},
    "adagrad": {"epsilon": "float_stable_eps"},
    "groupadagrad": {"epsilon": "float_stable_eps"},
    "lars": {"epsilon": "eps"},
}
# MXNet SGD, NAG, LARS (and ccSGD, a subclass of SGD) keep (inner, master) in 1.9.1
_MASTER_LAST_19 = {"sgd", "nag", "lars", "ccsgd"}


class _Mismatch(Exception):
    """A state that is not the file's optimizer's (its message, if any, says why)."""


def _is_arr(x: Any) -> bool:
    """A state array: MXNet keeps its states in floating-point arrays (bfloat16 included)."""
    return isinstance(x, np.ndarray) and (x.dtype.kind == "f" or x.dtype.name == "bfloat16")


def _arr_or_none(x: Any) -> Any:
    if x is None or _is_arr(x):
        return x
    raise _Mismatch


def _tuple(x: Any, n: int) -> tuple:
    if not isinstance(x, tuple) or len(x) != n:
        raise _Mismatch
    return tuple(_arr_or_none(v) for v in x)


def _inner_fields(name: str, v1: bool, x: Any, idx: Any, opt: MXNetObject) -> tuple:
    """MXNet's (non-multi-precision) state of one index -> the mxopt_jax rule's field tuple (NumPy)."""
    if name in ("sgd", "nag", "lars", "ccsgd", "adagrad", "groupadagrad"):
        return (_arr_or_none(x),)
    if name == "signum":
        x = _arr_or_none(x)
        return (None if x is None else -x,)  # MXNet keeps the negated EMA
    if name in ("sgld", "test"):
        if x is not None and not _is_arr(x):
            raise _Mismatch
        return ()
    if name in ("dcasgd", "adadelta", "adam", "adamw", "adamax", "lamb", "lans", "adabelief", "ftrl"):
        return _tuple(x, 2)
    if name == "nadam":
        m, v = _tuple(x, 2)
        return (m, v, np.asarray(getattr(opt, "m_schedule", 1.0), np.float32))
    if name == "ftml":
        return _tuple(x, 3)
    if name == "rmsprop":
        if v1:
            if isinstance(x, tuple) and len(x) == 1:
                return (None, _arr_or_none(x[0]), None)
            n, g, delta = _tuple(x, 3)
            return (g, n, delta)
        if isinstance(x, tuple):
            return _tuple(x, 3)
        return (None, _arr_or_none(x), None)
    if name == "lbsgd":
        mom = _arr_or_none(x)
        rec = (getattr(opt, "cumgrads", None) or {}).get(idx)
        if rec is None:
            return (mom, None, None)  # filled with zeros once the weight's shape is known
        cum = rec.get("cum_grad")
        if not _is_arr(cum):
            raise _Mismatch
        return (mom, cum, np.asarray(int(rec.get("num_cums", 0)), np.int32))
    raise _Mismatch


def _convert_state(name: str, v1: bool, x: Any, idx: Any, opt: MXNetObject, mp: bool) -> tuple[Any, bool]:
    """-> ``(fields, False)`` or ``((master, fields), True)``; raises ``_Mismatch`` when ``x`` is not that
    optimizer's state."""
    if mp and isinstance(x, tuple) and len(x) == 2:
        master, inner = (x[1], x[0]) if (v1 and name in _MASTER_LAST_19) else x
        if _is_arr(master) and master.dtype == np.float32:
            try:
                if name == "lbsgd":
                    raise _Mismatch  # 1.9.1 LBSGD's multi-precision layout is not supported
                return (master, _inner_fields(name, v1, inner, idx, opt)), True
            except _Mismatch:
                pass
    return _inner_fields(name, v1, x, idx, opt), False


# MXNet's optimizers whose state is float32 whatever the weight's dtype (``zeros`` without a dtype, or float32
# explicitly); every other one keeps its state in the weight's dtype. Measured on MXNet 1.9.1 and 2.0.0b1
# (``create_state_multi_precision`` for float16, float32 and float64 weights, with and without
# ``multi_precision``); with ``multi_precision``, a float16 weight's state is made from its float32 master.
_FLOAT32_STATE_19 = {"adadelta", "adagrad", "groupadagrad", "ftrl", "rmsprop", "test"}
_FLOAT32_STATE_20 = _FLOAT32_STATE_19 | {"lamb", "lans"}
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _arrays(x: Any) -> list[np.ndarray]:
    if isinstance(x, np.ndarray):
        return [x]
    return [a for v in x for a in _arrays(v)] if isinstance(x, tuple) else []


def weight_dtype(name: str, v1: bool, x: Any, is_mp: bool, mp: bool, strict: bool = True) -> np.dtype | None:
    """The dtype of the weight MXNet made the state ``x`` for (``None`` where its state does not tell: a
    float32 state of AdaGrad & co., or no state), checked: raises ``_Mismatch`` with the reason when no MXNet
    optimizer ``name`` creates these dtypes for any weight. ``is_mp``: ``x`` is a ``(master, state)`` pair;
    ``mp``: the optimizer's ``multi_precision``. Not ``strict`` (a class of the user's own, whose
    ``create_state`` may differ from MXNet's): only a multi-precision pair says its weight is float16."""
    dts = {a.dtype for a in _arrays(x)}
    version = "1.9.1" if v1 else "2.0"
    if not strict:
        return _F16 if is_mp else None
    if is_mp:  # MXNet makes a float32 master, and the state from it, for a float16 weight
        if dts != {_F32}:
            raise _Mismatch(
                f"a multi-precision state of dtypes {_names(dts)}: MXNet keeps the float32 master of a float16 "
                "weight and makes the state from it, all float32"
            )
        return _F16
    if not dts:
        return None
    if name in (_FLOAT32_STATE_19 if v1 else _FLOAT32_STATE_20):
        if dts != {_F32}:
            raise _Mismatch(
                f"state arrays of dtypes {_names(dts)}: MXNet {version} {name} keeps its state in float32 "
                "whatever the weight's dtype"
            )
        return None
    if len(dts) > 1:
        raise _Mismatch(
            f"state arrays of dtypes {_names(dts)}: MXNet {version} {name} keeps every state array in its "
            "weight's dtype"
        )
    d = dts.pop()
    if mp and d == _F16:
        raise _Mismatch(
            "a float16 state with multi_precision on: MXNet keeps a float32 master copy of a float16 weight, "
            "and its state in float32"
        )
    return d


def _names(dts: set) -> str:
    return ", ".join(sorted(np.dtype(d).name for d in dts))


def distinct_shapes(states: dict) -> int:
    """How many distinct (shape, dtype) the state arrays of a file hold."""
    return len({(a.shape, a.dtype.str) for st in states.values() for a in _arrays(st)})


def to_host(opt: Any, idx: Any, conv: Any, is_mp: bool, where: str, cache: ShapeCache) -> Any:
    """The converted fields (``conv``, NumPy) checked against the state mxopt_jax would create for that
    weight and cast to its dtypes, still on the host (one transfer moves every index's state at the end)."""
    master, fields = conv if is_mp else (None, conv)
    shapes = [f.shape for f in fields if _is_arr(f) and f.ndim > 0]
    if isinstance(master, np.ndarray):
        shapes.append(master.shape)
    if shapes:
        shape = shapes[0]
        if any(s != shape for s in shapes):
            raise ValueError(f"{where}: the state arrays of index {idx!r} have different shapes {shapes}")
        proto = np.float32 if is_mp else next(f.dtype for f in fields if _is_arr(f) and f.ndim > 0)
        ref = cache.ref(idx, shape, proto)
        if len(ref) != len(fields):
            raise ValueError(f"{where}: the state of index {idx!r} does not fit {type(opt).__name__}")
        out: list[np.ndarray | None] = []
        for f, r in zip(fields, ref, strict=True):
            if (f is None) != (r is None):
                if f is None:  # e.g. LBSGD before its first accumulation: start from zeros
                    if cache.budget is not None:  # counted before it is made
                        n = int(np.prod(r.shape, dtype=object)) * np.dtype(r.dtype).itemsize
                        cache.budget.charge(n + 128, f"the zeros filling in the state of index {idx!r}")
                    out.append(np.zeros(r.shape, r.dtype))
                    continue
                raise ValueError(
                    f"{where}: the state of index {idx!r} does not fit {type(opt).__name__} as configured "
                    f"(state entries {'present' if r is None else 'missing'} for its hyperparameters)"
                )
            # the dtype mxopt_jax itself keeps for this field (e.g. 1.9.1 LAMB keeps weight-dtype moments)
            if f is not None and r is not None and f.dtype != r.dtype and cache.budget is not None:
                cache.budget.charge(
                    f.size * np.dtype(r.dtype).itemsize + 128, f"casting the state of index {idx!r}"
                )
            out.append(None if f is None else np.asarray(f, dtype=f.dtype if r is None else r.dtype))
        fields = tuple(out)
    else:
        fields = tuple(None if f is None else np.asarray(f) for f in fields)
    return (np.asarray(master, np.float32), fields) if is_mp else fields


def _weight_shape(
    opt: Any, idx: Any, state: Any, cache: ShapeCache | None = None, dtype: Any = None
) -> tuple | None:
    """The shape of the weight (of ``dtype``, default: the state's first array's) an mxopt_jax state was made
    for, where the state determines it (its first array's shape, unless the state would be the same for
    another weight shape, as GroupAdaGrad's per-row history); ``None`` if it cannot tell (stateless, or such a
    state)."""
    import jax

    leaves = [x for x in jax.tree.leaves(state) if getattr(x, "ndim", 0) > 0]
    if not leaves:
        return None
    shape = tuple(leaves[0].shape)
    dtype = leaves[0].dtype if dtype is None else dtype
    other = (*shape[:-1], shape[-1] + 1)
    if not fits(opt, idx, state, shape, dtype, cache) or fits(opt, idx, state, other, dtype, cache):
        return None
    return shape
