"""An MXNet optimizer state in mxopt_jax's layout: MXNet 1.9.1 / 2.0 per-index states -> the rule's fields,
checked against the state mxopt_jax creates for the weight.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

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
    pass


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


def _convert_state(name: str, v1: bool, x: Any, idx: Any, opt: MXNetObject, mp: bool) -> Any:
    """-> ``fields`` or ``(master, fields)``; raises ``_Mismatch`` when ``x`` is not that optimizer's state."""
    if mp and isinstance(x, tuple) and len(x) == 2:
        master, inner = (x[1], x[0]) if (v1 and name in _MASTER_LAST_19) else x
        if _is_arr(master) and master.dtype == np.float32:
            try:
                if name == "lbsgd":
                    raise _Mismatch  # 1.9.1 LBSGD's multi-precision layout is not supported
                return (master, _inner_fields(name, v1, inner, idx, opt))
            except _Mismatch:
                pass
    return _inner_fields(name, v1, x, idx, opt)


class _ShapeCache:
    """What an optimizer creates for a weight shape and dtype, asked once per shape in a load: mxopt_jax's own
    optimizers (``create_state`` not overridden) make the same state for every index of a shape; a class of
    the user's own is asked every time."""

    def __init__(self, opt: Any) -> None:
        from ..facade.rule_backed import CLASSES

        cls = next((k for k in type(opt).__mro__ if k in set(CLASSES.values())), None)
        t = type(opt)
        self.opt = opt
        self.on = cls is not None and all(
            getattr(t, m) is getattr(cls, m) for m in ("create_state", "create_state_multi_precision")
        )
        self.shapes: dict[tuple, list | None] = {}
        self.refs: dict[tuple, tuple] = {}

    def state_shapes(self, idx: Any, shape: tuple, dtype: Any) -> list | None:
        key = (shape, np.dtype(dtype).str)
        if not self.on:
            return _state_shapes(self.opt, idx, shape, dtype)
        if key not in self.shapes:
            self.shapes[key] = _state_shapes(self.opt, idx, shape, dtype)
        return self.shapes[key]

    def ref(self, idx: Any, shape: tuple, dtype: Any) -> tuple:
        import jax.numpy as jnp

        key = (shape, np.dtype(dtype).str)
        if self.on and key in self.refs:
            return self.refs[key]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = tuple(self.opt.create_state(idx, jnp.zeros(shape, dtype)))
        if self.on:
            self.refs[key] = ref
        return ref


def _to_facade(opt: Any, idx: Any, conv: Any, where: str, cache: _ShapeCache | None = None) -> Any:
    """NumPy fields -> JAX arrays, checked against the state mxopt_jax would create for that weight."""
    import jax.numpy as jnp

    cache = _ShapeCache(opt) if cache is None else cache
    is_mp = isinstance(conv, tuple) and len(conv) == 2 and isinstance(conv[1], tuple) and _is_arr(conv[0])
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
        out = []
        for f, r in zip(fields, ref, strict=True):
            if (f is None) != (r is None):
                if f is None:  # e.g. LBSGD before its first accumulation: start from zeros
                    out.append(r)
                    continue
                raise ValueError(
                    f"{where}: the state of index {idx!r} does not fit {type(opt).__name__} as configured "
                    f"(state entries {'present' if r is None else 'missing'} for its hyperparameters)"
                )
            # the dtype mxopt_jax itself keeps for this field (e.g. 1.9.1 LAMB keeps weight-dtype moments)
            out.append(None if f is None else jnp.asarray(f, dtype=f.dtype if r is None else r.dtype))
        fields = tuple(out)
    else:
        fields = tuple(None if f is None else jnp.asarray(f) for f in fields)
    return (jnp.asarray(master, jnp.float32), fields) if is_mp else fields


def _state_shapes(opt: Any, idx: Any, shape: tuple, dtype: Any) -> list | None:
    """The shapes of the state ``opt`` creates for a weight of ``shape`` / ``dtype`` (traced, nothing
    allocated); ``None`` if it cannot tell."""
    import jax

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = jax.eval_shape(
                lambda w: opt.create_state_multi_precision(idx, w), jax.ShapeDtypeStruct(shape, dtype)
            )
    except Exception:  # noqa: BLE001 - a custom create_state that cannot be traced: no check
        return None
    return [tuple(x.shape) for x in jax.tree.leaves(st)]


def _stored_shapes(state: Any) -> list:
    import jax

    return [tuple(x.shape) for x in jax.tree.leaves(state)]


def _fits(opt: Any, idx: Any, state: Any, shape: tuple, dtype: Any, cache: _ShapeCache | None = None) -> bool:
    """Whether ``state`` is what ``opt`` keeps for a weight of this shape and dtype."""
    shape = tuple(shape)
    want = _state_shapes(opt, idx, shape, dtype) if cache is None else cache.state_shapes(idx, shape, dtype)
    return want is None or want == _stored_shapes(state)


def _weight_shape(opt: Any, idx: Any, state: Any, cache: _ShapeCache | None = None) -> tuple | None:
    """The shape of the weight an mxopt_jax state was made for, where the state determines it (its first
    array's shape, unless the state would be the same for another weight shape, as GroupAdaGrad's per-row
    history); ``None`` if it cannot tell (stateless, or such a state)."""
    import jax

    leaves = [x for x in jax.tree.leaves(state) if getattr(x, "ndim", 0) > 0]
    if not leaves:
        return None
    shape = tuple(leaves[0].shape)
    dtype = leaves[0].dtype
    other = (*shape[:-1], shape[-1] + 1)
    if not _fits(opt, idx, state, shape, dtype, cache) or _fits(opt, idx, state, other, dtype, cache):
        return None
    return shape
