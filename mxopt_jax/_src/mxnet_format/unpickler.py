"""The whitelist unpickler of MXNet's ``.states`` files: MXNet NDArray payloads, NumPy arrays and dtypes, plain
containers and numbers, MXNet's optimizer and scheduler classes mapped onto inert data holders.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
from typing import Any, TypeGuard

import numpy as np

from .. import registry
from .arrays import _LIST_MAGIC, _NPY_MAGIC, _ndarray_from_raw, _source

#: MXNet's optimizer classes a pickle may name: the base class and every class of the optimizer table (their
#: names are MXNet's). They are mapped onto inert data holders, never looked up.
_MX_OPTIMIZERS = {"Optimizer", *(e.class_name for e in registry.TABLE)}
_MX_SCHEDULERS = {
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
}


class MXNetObject:
    """Inert stand-in for a pickled MXNet optimizer / scheduler: its class name, module and attributes.

    ``mx_module`` / ``mx_class`` name the MXNet class; the pickled attributes become instance attributes
    (readable with ``vars(obj)``). No MXNet code is involved.
    """

    mx_module: str = ""
    mx_class: str = ""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
            state = state[0]
        if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
            raise pickle.UnpicklingError(f"unexpected pickled state for {self.mx_module}.{self.mx_class}")
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"<MXNet {self.mx_module}.{self.mx_class} (data only)>"


class _PickledNDArray:
    """Stand-in for ``mxnet.ndarray.NDArray`` / ``mxnet.numpy.ndarray`` while unpickling."""

    def __init__(self, *args: Any) -> None:
        self.array: np.ndarray | None = None

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"handle"}:
            raise pickle.UnpicklingError("unexpected pickled NDArray state")
        handle = state["handle"]
        if handle is None:
            self.array = None
        elif isinstance(handle, (bytes, bytearray)):
            self.array = _ndarray_from_raw(bytes(handle), "pickled NDArray")
        else:
            raise pickle.UnpicklingError("pickled NDArray handle is not bytes")


_HOLDERS: dict[tuple[str, str], type] = {}


def _holder(module: str, name: str) -> type:
    key = (module, name)
    if key not in _HOLDERS:
        _HOLDERS[key] = type(name, (MXNetObject,), {"mx_module": module, "mx_class": name})
    return _HOLDERS[key]


def _safe_dtype(obj: Any, align: bool = False, copy: bool = True) -> np.dtype:
    dt = np.dtype(obj, align=align, copy=copy) if not isinstance(obj, np.dtype) else obj
    if dt.hasobject:
        raise pickle.UnpicklingError("refused numpy dtype with Python objects")
    return dt


def _safe_reconstruct(cls: Any, shape: Any, dtype: Any) -> np.ndarray:
    # NumPy pickles an array as _reconstruct(ndarray, (0,), b'b') followed by its state: the shape is
    # always (0,), so nothing large is ever allocated here
    if cls is not np.ndarray or tuple(shape) != (0,):
        raise pickle.UnpicklingError("refused numpy array reconstruction")
    return np.ndarray.__new__(np.ndarray, (0,), _safe_dtype(dtype))


def _safe_scalar(dtype: Any, data: Any = None) -> Any:
    dt = _safe_dtype(dtype)
    if not isinstance(data, bytes) or len(data) != dt.itemsize:
        raise pickle.UnpicklingError("malformed pickled numpy scalar")
    return np.frombuffer(data, dtype=dt)[0]


def _safe_codecs_encode(obj: Any, encoding: str = "latin1") -> bytes:
    # Python 2 pickles of bytearray/bytes go through _codecs.encode(str, 'latin1')
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("refused _codecs.encode call")
    return obj.encode("latin1")


def _safe_reconstructor(cls: Any, base: Any, state: Any = None) -> Any:
    # protocol 0/1 form of object creation (copyreg._reconstructor), for the holder classes only
    if (
        not (isinstance(cls, type) and issubclass(cls, MXNetObject))
        or base is not object
        or state is not None
    ):
        raise pickle.UnpicklingError("refused copyreg._reconstructor call")
    return cls.__new__(cls)


_NUMPY_MODULES = ("numpy.core.multiarray", "numpy._core.multiarray")
_SAFE_GLOBALS: dict[tuple[str, str], Any] = {
    ("builtins", "bytearray"): bytearray,
    ("builtins", "object"): object,
    ("__builtin__", "bytearray"): bytearray,
    ("__builtin__", "object"): object,
    ("_codecs", "encode"): _safe_codecs_encode,
    ("copyreg", "_reconstructor"): _safe_reconstructor,
    ("copy_reg", "_reconstructor"): _safe_reconstructor,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _safe_dtype,
    ("mxnet.ndarray.ndarray", "NDArray"): _PickledNDArray,
    ("mxnet.ndarray", "NDArray"): _PickledNDArray,
    ("mxnet.numpy.multiarray", "ndarray"): _PickledNDArray,
    ("mxnet.numpy", "ndarray"): _PickledNDArray,
}
for _m in _NUMPY_MODULES:
    _SAFE_GLOBALS[(_m, "_reconstruct")] = _safe_reconstruct
    _SAFE_GLOBALS[(_m, "scalar")] = _safe_scalar


class _NotCallable(type):
    """Metaclass of the stand-ins for classes outside the whitelist: calling one (pickle's REDUCE, the way
    a pickle runs code) is refused; only an inert instance can be made (NEWOBJ + its attribute dict)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise _Refused(f"{getattr(cls, 'mx_module', '')}.{getattr(cls, 'mx_class', '')}")


_UNKNOWN: dict[tuple[str, str], type] = {}


def _unknown(module: str, name: str) -> type:
    """An inert stand-in for a class outside the whitelist (the real one is never looked up). Its instances
    are accepted only where a user's own optimizer or scheduler subclass is pickled (the file's optimizer and
    its ``lr_scheduler``), so that they can be substituted; anywhere else the file is refused."""
    key = (module, name)
    if key not in _UNKNOWN:
        _UNKNOWN[key] = _NotCallable(
            name, (MXNetObject,), {"mx_module": module, "mx_class": name, "mx_unknown": True}
        )
    return _UNKNOWN[key]


def is_unknown(obj: Any) -> TypeGuard[MXNetObject]:
    """Whether ``obj`` stands for a pickled object of a class outside the whitelist (a user's own class)."""
    return isinstance(obj, MXNetObject) and bool(getattr(obj, "mx_unknown", False))


class _WhitelistUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only whitelisted globals (cf. ``torch.load(weights_only=True)``).

    Any other global becomes an inert stand-in that cannot be called (see :func:`_unknown`)."""

    first_unknown: str | None = None

    def find_class(self, module: str, name: str) -> Any:
        fn = _SAFE_GLOBALS.get((module, name))
        if fn is not None:
            return fn
        if module.startswith("mxnet.optimizer") and name in _MX_OPTIMIZERS:
            return _holder(module, name)
        if module == "mxnet.lr_scheduler" and name in _MX_SCHEDULERS:
            return _holder(module, name)
        if self.first_unknown is None:
            self.first_unknown = f"{module}.{name}"
        return _unknown(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("persistent id")


class _Refused(pickle.UnpicklingError):
    pass


def _materialise(x: Any, depth: int = 0, memo: dict | None = None) -> Any:
    """Replace NDArray stand-ins by NumPy arrays (recursively through containers and holders).

    Shared sub-objects are converted once (``memo``), so a pickle of nested shared references cannot make
    this walk exponentially long; cycles and deep nesting stop at depth 64."""
    memo = {} if memo is None else memo
    if depth > 64:
        raise ValueError("nesting too deep (or a reference cycle) in the pickle")
    key = id(x)
    if key in memo:
        return memo[key][1]
    out: Any
    if isinstance(x, _PickledNDArray):
        out = x.array
    elif isinstance(x, tuple):
        out = tuple(_materialise(v, depth + 1, memo) for v in x)
    elif isinstance(x, list):
        out = [_materialise(v, depth + 1, memo) for v in x]
    elif isinstance(x, dict):
        out = {k: _materialise(v, depth + 1, memo) for k, v in x.items()}
    elif isinstance(x, MXNetObject):
        for k, v in list(vars(x).items()):
            setattr(x, k, _materialise(v, depth + 1, memo))
        out = x
    else:
        return x
    memo[key] = (x, out)  # keeps x alive so its id is not reused during the walk
    return out


def read_states(path_or_bytes: str | os.PathLike | bytes) -> tuple[dict, MXNetObject | None]:
    """Safely read an MXNet ``.states`` pickle into plain data, without MXNet.

    Returns ``(states, optimizer)``: ``states`` maps each index to its MXNet state with every NDArray as a
    NumPy array (``None``, an array or nested tuples, in MXNet's own layout); ``optimizer`` is an
    :class:`MXNetObject` holding the pickled optimizer's attributes (its scheduler, if any, another
    :class:`MXNetObject`), or ``None`` for a ``dump_optimizer=False`` file. Used by :func:`load_updater`;
    useful to inspect a file.

    Raises:
      ValueError: the bytes are not such a pickle, or they name any global outside the whitelist (the
        message names the refused ``module.name``; nothing named in the file is ever called).

    Examples:
      >>> from mxopt_jax.mxnet_format import read_states
      >>> states, opt = read_states("tests/golden/mxnet_ckpt/mx20_adam.states")
      >>> opt.mx_class, opt.beta1, opt.num_update
      ('Adam', 0.9, 3)
      >>> [a.shape for a in states[0]]   # MXNet's Adam state: (mean, var)
      [(3,), (3,)]
    """
    data, where = _source(path_or_bytes, "states")
    return _read_states(data, where)


def _read_states(data: bytes, where: str) -> tuple[dict, MXNetObject | None]:
    if data.startswith((struct.pack("<Q", _LIST_MAGIC), _NPY_MAGIC, b"PK")) or not data:
        raise ValueError(f"{where}: not an MXNet .states file (this is a parameter file or empty)")
    unpickler = _WhitelistUnpickler(io.BytesIO(data))
    try:
        obj = unpickler.load()
    except _Refused as exc:
        # a call was attempted: name the first global outside the whitelist (the one a malicious pickle loads
        # first), else the called one
        raise ValueError(
            f"{where}: refused to unpickle {unpickler.first_unknown or exc}: only MXNet NDArrays, optimizers, learning-rate schedulers, "
            "NumPy arrays and plain containers/numbers are allowed in a .states file"
        ) from None
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any malformed pickle
        raise ValueError(
            f"{where}: not a readable MXNet .states pickle ({type(exc).__name__}: {exc})"
        ) from None
    try:
        obj = _materialise(obj)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], MXNetObject):
        states, opt = obj
    else:
        states, opt = obj, None
    allowed = set()
    if opt is not None and (is_unknown(opt) or opt.mx_module.startswith("mxnet.optimizer")):
        allowed.add(id(opt))
        if is_unknown(getattr(opt, "lr_scheduler", None)):
            allowed.add(id(opt.lr_scheduler))
    bad = _find_unknown(obj, allowed)
    if bad is not None:
        raise ValueError(
            f"{where}: refused to unpickle {bad}: only MXNet NDArrays, optimizers, learning-rate schedulers, "
            "NumPy arrays and plain containers/numbers are allowed in a .states file (a class of your own is "
            "accepted only as the optimizer or its lr_scheduler, to be substituted: see load_updater)"
        )
    if not isinstance(states, dict):
        raise ValueError(f"{where}: the pickle does not hold an Updater's states dict")
    if opt is not None and opt.mx_module.startswith("mxnet.lr_scheduler"):
        raise ValueError(f"{where}: the pickled object is a scheduler, not an optimizer")
    return states, opt


def _find_unknown(x: Any, allowed: set, depth: int = 0, seen: set | None = None) -> str | None:
    """The first stand-in for a non-whitelisted class in ``x`` that is not one of ``allowed`` (ids)."""
    seen = set() if seen is None else seen
    if depth > 64 or id(x) in seen:
        return None
    seen.add(id(x))
    if isinstance(x, type) and issubclass(x, MXNetObject):
        return f"{x.mx_module}.{x.mx_class}" if getattr(x, "mx_unknown", False) else None
    if isinstance(x, MXNetObject):
        if is_unknown(x) and id(x) not in allowed:
            return f"{x.mx_module}.{x.mx_class}"
        items: Any = list(vars(x).values())
    elif isinstance(x, dict):
        items = [*x.keys(), *x.values()]
    elif isinstance(x, (list, tuple, set, frozenset)):
        items = list(x)
    else:
        return None
    for v in items:
        found = _find_unknown(v, allowed, depth + 1, seen)
        if found is not None:
            return found
    return None
