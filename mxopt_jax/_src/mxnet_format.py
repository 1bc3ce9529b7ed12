"""Read MXNet checkpoints: ``.params`` files (NDArray lists) and ``.states`` files (pickled ``Updater`` states).

Two readers, neither of which needs MXNet:

* :func:`load_params` reads MXNet's binary NDArray-list format, as written by ``mx.nd.save``,
  ``net.save_parameters`` / ``Module.save_checkpoint`` (MXNet 1.x), and MXNet 2.0's ``.npy`` / ``.npz``
  files (``mx.npx.save``, ``mx.npx.savez``, Gluon 2.0 ``save_parameters``), into NumPy arrays.
* :func:`load_updater` reads the ``.states`` file written by ``Updater.get_states(dump_optimizer=True)`` or a
  Gluon ``Trainer.save_states`` (MXNet 1.9.1 and 2.0.0b1; also ``dump_optimizer=False`` files) and returns an
  :class:`mxopt_jax.Updater` whose next calls continue the MXNet run: optimizer class and hyperparameters,
  ``rescale_grad``, multipliers, ``idx2name``, the learning-rate scheduler and its position, ``num_update``,
  the per-index (and per-device) update counts and every index's state (multi-precision masters included).

A ``.states`` file is a Python pickle. It is read by a **whitelist** unpickler: only MXNet NDArray payloads
(decoded from their raw bytes into NumPy, never through MXNet), NumPy array / dtype / scalar reconstruction,
plain containers and numbers, and MXNet's optimizer and learning-rate-scheduler classes are accepted, the
latter mapped onto inert data holders (the real classes are never looked up). Any other global named in the
pickle raises ``ValueError`` naming it, before it could be called. Nothing else in mxopt_jax unpickles.

Examples (run from the repository root; the files are real MXNet 2.0 output):
  >>> import jax.numpy as jnp
  >>> from mxopt_jax.mxnet_format import load_params, load_updater
  >>> params = load_params("tests/golden/mxnet_ckpt/mx20_adam.params")
  >>> updater = load_updater("tests/golden/mxnet_ckpt/mx20_adam.states")
  >>> weights = [jnp.asarray(params[n]) for n in sorted(params)]
  >>> weights = updater([0, 1, 2, 3], [jnp.zeros_like(w) for w in weights], weights)
"""

from __future__ import annotations

import io
import math
import os
import pickle
import struct
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from . import facade, registry, schedulers
from .validation import warn

__all__ = ["TrainerCheckpoint", "load_params", "load_trainer", "load_updater", "read_states"]

# --------------------------------------------------------------------------- NDArray binary format
_LIST_MAGIC = 0x112  # kMXAPINDArrayListMagic
_V1_MAGIC = 0xF993FAC8
_V2_MAGIC = 0xF993FAC9
_V3_MAGIC = 0xF993FACA  # MXNet 2.0 numpy-shape semantics (0-d arrays allowed)
_MAX_NDIM = 32
_STYPES = {0: "default", 1: "row_sparse", 2: "csr"}
# mshadow type flags
_TYPE_FLAGS: dict[int, str] = {
    0: "float32",
    1: "float64",
    2: "float16",
    3: "uint8",
    4: "int32",
    5: "int8",
    6: "int64",
    7: "bool",
    8: "int16",
    9: "uint16",
    10: "uint32",
    11: "uint64",
    12: "bfloat16",
}


def _np_dtype(name: str) -> np.dtype:
    if name == "bfloat16":
        import ml_dtypes  # a JAX dependency

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name).newbyteorder("<")


class _Reader:
    """Bounds-checked little-endian reader over a bytes buffer; every error names ``where``."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.where = where

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, what: str) -> ValueError:
        return ValueError(f"{self.where}: {what} (at byte {self.pos} of {len(self.data)})")

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or n > self.left:
            raise self.fail(f"truncated file: {what} needs {n} bytes, only {self.left} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> Any:
        size = struct.calcsize("<" + fmt)
        vals = struct.unpack("<" + fmt, self.take(size, what))
        return vals[0] if len(vals) == 1 else vals


def _read_shape(r: _Reader, legacy_ndim: int | None = None) -> tuple[int, ...] | None:
    """A TShape (int32 ndim, int64 dims), or the pre-V1 form (ndim given by the magic, uint32 dims).

    Returns ``None`` for MXNet's "unknown shape" (ndim < 0)."""
    if legacy_ndim is not None:
        ndim, fmt, size = legacy_ndim, "I", 4
    else:
        ndim, fmt, size = r.unpack("i", "shape ndim"), "q", 8
    if ndim < 0:
        return None
    if ndim > _MAX_NDIM or ndim * size > r.left:
        raise r.fail(f"corrupted array header: ndim {ndim}")
    dims = r.unpack(f"{ndim}{fmt}", "shape") if ndim else ()
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if any(d < 0 for d in dims):
        raise r.fail(f"corrupted array header: negative dimension in shape {dims}")
    return dims


def _read_ndarray(r: _Reader, label: str) -> np.ndarray:
    """One ``NDArray::Save`` record -> a NumPy array (dense storage only)."""
    magic = r.unpack("I", f"{label}: array magic")
    legacy = None
    if magic in (_V2_MAGIC, _V3_MAGIC):
        stype = r.unpack("i", f"{label}: storage type")
        if stype != 0:
            kind = _STYPES.get(stype, f"unknown storage type {stype}")
            raise r.fail(
                f"{label} has {kind} storage; only dense arrays are supported (convert it with "
                "`.tostype('default')` in MXNet before saving)"
            )
    elif magic == _V1_MAGIC:
        pass
    elif magic <= _MAX_NDIM:
        legacy = magic  # oldest format: the first word is ndim
    else:
        raise r.fail(f"{label}: wrong array magic 0x{magic:08x} (not an MXNet NDArray record)")
    shape = _read_shape(r, legacy)
    # Before MXNet 2.0's numpy semantics (V3), ndim 0 meant "no array" (an uninitialised NDArray)
    if shape is None or (magic != _V3_MAGIC and len(shape) == 0):
        raise r.fail(f"{label} is an uninitialised (shapeless) NDArray")
    r.unpack("ii", f"{label}: context")
    flag = r.unpack("i", f"{label}: dtype flag")
    if flag not in _TYPE_FLAGS:
        raise r.fail(f"{label}: unknown dtype flag {flag}")
    dtype = _np_dtype(_TYPE_FLAGS[flag])
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > r.left:  # checked before anything is allocated
        raise r.fail(
            f"truncated file or corrupted header: {label} declares shape {shape} {dtype.name} "
            f"({nbytes} bytes) but only {r.left} bytes are left"
        )
    raw = r.take(nbytes, label)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _source(path_or_bytes: Any, what: str) -> tuple[bytes, str]:
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), f"<{what} bytes>"
    if isinstance(path_or_bytes, (str, os.PathLike)):
        with open(path_or_bytes, "rb") as f:
            return f.read(), os.fspath(path_or_bytes)
    raise TypeError(f"expected a file path or bytes, got {type(path_or_bytes).__name__}")


def load_params(path: str | os.PathLike | bytes) -> dict[str, np.ndarray]:
    """Read an MXNet ``.params`` / ``nd.save`` file into a dict of NumPy arrays.

    Reads the binary NDArray-list format of ``mx.nd.save``, ``gluon.Block.save_parameters`` and
    ``Module.save_checkpoint`` (MXNet 1.x; ``mx.nd.save`` in 2.0 too), with float16/32/64, bfloat16 (as
    ``ml_dtypes.bfloat16``), bool and (u)int8/16/32/64 arrays, and MXNet 2.0's NumPy-format files:
    ``mx.npx.save`` (one ``.npy`` array) and ``mx.npx.savez`` / Gluon 2.0 ``save_parameters`` (an ``.npz``
    archive of ``.npy`` members; object arrays refused). MXNet is not needed.

    Args:
      path: the file, or its content as bytes.

    Returns:
      ``{name: array}`` with the names exactly as MXNet stored them (``'0.weight'`` for Gluon's
      ``save_parameters``, ``'arg:fc1_weight'`` / ``'aux:bn_moving_mean'`` for ``Module`` checkpoints, …),
      in file order. A file saved from an unnamed list (``mx.nd.save(f, [a, b])``) gives the keys ``'0'``,
      ``'1'``, … (list order); a ``.npy`` file (``npx.save``) the single key ``'0'``; an ``.npz`` archive its
      member names without ``.npy`` (``'arr_0'``, … for ``npx.savez(f, a, b)``). As MXNet's own ``load``, a
      repeated name keeps the last array.

    Raises:
      ValueError: naming the file and the problem: wrong magic (not an MXNet NDArray file), truncated file,
        declared sizes larger than the file (checked before any allocation), ``row_sparse`` / ``csr``
        storage, unknown dtype flags, trailing garbage.

    Examples:
      >>> from mxopt_jax.mxnet_format import load_params
      >>> params = load_params("tests/golden/mxnet_ckpt/mx20_adam.params")   # Gluon 2.0 save_parameters
      >>> sorted(params)
      ['0.bias', '0.weight', '1.bias', '1.weight']
      >>> params["0.weight"].shape, params["0.weight"].dtype
      ((3, 4), dtype('float32'))
      >>> sorted(load_params("tests/golden/mxnet_ckpt/mx19_dict.params"))  # mx.nd.save of a Module-style dict
      ['arg:fc1_bias', 'arg:fc1_weight', 'aux:bn_moving_mean']
    """
    data, where = _source(path, "params")
    if data.startswith(_NPY_MAGIC):
        return {"0": _read_npy(_Reader(data, where), len(data), "the .npy array")}
    if data.startswith(b"PK"):
        return _read_npz(data, where)
    r = _Reader(data, where)
    if len(data) < 16:
        raise r.fail("truncated file: shorter than the 16-byte NDArray-list header")
    magic, _reserved = r.unpack("QQ", "header")
    if magic != _LIST_MAGIC:
        raise r.fail(
            f"wrong magic 0x{magic:x} (expected 0x{_LIST_MAGIC:x}): not an MXNet NDArray file "
            "(nd.save / save_parameters)"
        )
    n = r.unpack("Q", "array count")
    if n > r.left // 16:  # every record takes at least 16 bytes
        raise r.fail(f"corrupted header: declares {n} arrays, more than the file can hold")
    arrays = [_read_ndarray(r, f"array {k}") for k in range(n)]
    n_names = r.unpack("Q", "name count")
    if n_names not in (0, n):
        raise r.fail(f"corrupted file: {n} arrays but {n_names} names")
    names = []
    for k in range(n_names):
        length = r.unpack("Q", f"length of name {k}")
        if length > r.left:
            raise r.fail(f"truncated file or corrupted header: name {k} declares {length} bytes")
        try:
            names.append(bytes(r.take(length, f"name {k}")).decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {k} is not UTF-8") from None
    if r.left:
        raise r.fail(f"{r.left} unexpected trailing bytes after the last name")
    if not names:
        names = [str(k) for k in range(n)]
    return dict(zip(names, arrays, strict=True))


_NPY_MAGIC = b"\x93NUMPY"
_MAX_DEFLATE_RATIO = 1100  # deflate cannot expand data by more than ~1032x


def _read_npy(r: _Reader, limit: int, label: str) -> np.ndarray:
    """One ``.npy`` record (MXNet 2.0's ``npx.save`` / ``npx.savez`` members): header checked, no pickle.

    ``limit`` bounds the data size the header may declare (checked before anything is allocated)."""
    import ast

    if bytes(r.take(6, f"{label}: magic")) != _NPY_MAGIC:
        raise r.fail(f"{label}: wrong magic (not a .npy array)")
    major, _minor = r.unpack("BB", f"{label}: version")
    if major == 1:
        hlen = r.unpack("H", f"{label}: header length")
    elif major in (2, 3):
        hlen = r.unpack("I", f"{label}: header length")
    else:
        raise r.fail(f"{label}: unsupported .npy version {major}")
    if hlen > 1 << 20:
        raise r.fail(f"{label}: corrupted .npy header length {hlen}")
    try:
        header = ast.literal_eval(bytes(r.take(hlen, f"{label}: header")).decode("latin1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], tuple(header["shape"])
        if not isinstance(descr, str) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError
        if len(shape) > _MAX_NDIM:
            raise ValueError
        dtype = np.dtype(descr)
    except ValueError as exc:
        if str(exc).startswith(r.where):
            raise
        raise r.fail(f"{label}: malformed .npy header") from None
    except (SyntaxError, KeyError, TypeError, UnicodeDecodeError):
        raise r.fail(f"{label}: malformed .npy header") from None
    if dtype.hasobject:
        raise r.fail(f"{label}: object arrays are refused (they need pickle)")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > min(r.left, limit):
        raise r.fail(
            f"truncated file or corrupted header: {label} declares shape {shape} {dtype} ({nbytes} bytes) "
            f"but at most {min(r.left, limit)} bytes can follow"
        )
    raw = r.take(nbytes, label)
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape[::-1] if fortran else shape)
    return (arr.T if fortran else arr).copy()


def _read_npz(data: bytes, where: str) -> dict[str, np.ndarray]:
    """An ``.npz`` archive (MXNet 2.0's ``npx.savez`` / Gluon 2.0 ``save_parameters``) of ``.npy`` members."""
    import zipfile

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ValueError(f"{where}: truncated or corrupted .npz archive ({exc})") from None
    out = {}
    for info in infos:
        name = info.filename
        label = f"member {name!r}"
        if not name.endswith(".npy"):
            raise ValueError(f"{where}: unexpected {label} in an MXNet .npz parameter file")
        if info.compress_size > len(data):
            raise ValueError(f"{where}: truncated .npz archive: {label} is cut off")
        # an upper bound on what the member can decompress to; only real bytes are ever read
        bound = info.compress_size * (1 if info.compress_type == zipfile.ZIP_STORED else _MAX_DEFLATE_RATIO)
        try:
            with zf.open(info) as f:
                raw = f.read(min(info.file_size, bound))
        except (zipfile.BadZipFile, EOFError, OSError, zlib_error()) as exc:
            raise ValueError(f"{where}: truncated or corrupted {label} ({exc})") from None
        limit = len(raw)
        r = _Reader(raw, where)
        arr = _read_npy(r, limit, label)
        if r.left:
            raise r.fail(f"{r.left} unexpected trailing bytes")
        out[name[: -len(".npy")]] = arr
    return out


def zlib_error() -> type:
    import zlib

    return zlib.error


def _ndarray_from_raw(raw: bytes, where: str) -> np.ndarray:
    """An NDArray pickled by MXNet: its ``handle`` is ``MXNDArraySaveRawBytes`` = one NDArray record."""
    r = _Reader(raw, where)
    arr = _read_ndarray(r, "pickled NDArray")
    if r.left:
        raise r.fail(f"{r.left} unexpected trailing bytes in a pickled NDArray")
    return arr


# --------------------------------------------------------------------------- whitelist unpickler
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
        raise _Refused(f"{cls.mx_module}.{cls.mx_class}")


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


def is_unknown(obj: Any) -> bool:
    """Whether ``obj`` stands for a pickled object of a class outside the whitelist (a user's own class)."""
    return isinstance(obj, MXNetObject) and getattr(obj, "mx_unknown", False)


class _WhitelistUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only whitelisted globals (cf. ``torch.load(weights_only=True)``).

    Any other global becomes an inert stand-in that cannot be called (see :func:`_unknown`)."""

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
    unpickler.first_unknown = None
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


# --------------------------------------------------------------------------- states -> mxopt_jax
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
    return isinstance(x, np.ndarray)


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


def _scheduler(obj: Any, where: str) -> Any:
    lrs = schedulers

    if obj is None:
        return None
    if (
        not isinstance(obj, MXNetObject)
        or obj.mx_class not in _MX_SCHEDULERS
        or obj.mx_class == "LRScheduler"
    ):
        raise ValueError(f"{where}: unsupported learning-rate scheduler {obj!r}")
    a = dict(vars(obj))
    base = a.get("base_lr_orig", a.get("warmup_final_lr", a.get("base_lr")))
    common = {
        "base_lr": base,
        "warmup_steps": a.get("warmup_steps", 0),
        "warmup_begin_lr": a.get("warmup_begin_lr", 0),
        "warmup_mode": a.get("warmup_mode", "linear"),
    }
    cls = obj.mx_class
    if cls == "FactorScheduler":
        s = lrs.FactorScheduler(
            step=a["step"], factor=a["factor"], stop_factor_lr=a["stop_factor_lr"], **common
        )
    elif cls == "MultiFactorScheduler":
        s = lrs.MultiFactorScheduler(step=list(a["step"]), factor=a["factor"], **common)
    elif cls == "PolyScheduler":
        s = lrs.PolyScheduler(max_update=a["max_update"], pwr=a["power"], final_lr=a["final_lr"], **common)
    else:
        s = lrs.CosineScheduler(max_update=a["max_update"], final_lr=a["final_lr"], **common)
    # the scheduler's position: every attribute MXNet keeps (base_lr decayed so far, count, cur_step_ind ...)
    for k, v in a.items():
        if k in vars(s):
            setattr(s, k, list(v) if isinstance(v, list) else v)
    return s


def _warn(msg: str) -> None:
    warn(msg, UserWarning)


def _differences(name: str, v1: bool, o: Any, n_states: int) -> list[str]:
    """The documented ways the resumed run departs from what MXNet would compute next."""
    out = []
    wd = float(getattr(o, "wd", 0.0) or 0.0)
    clip = getattr(o, "clip_gradient", None)
    clip_and_wd = clip is not None and wd != 0.0
    if v1:
        if name == "nag" and wd != 0 and getattr(o, "momentum", 0) != 0:
            out.append("MXNet 1.9.1 NAG updates the momentum with the already-updated weight when wd != 0")
        if name == "dcasgd" and wd != 0 and getattr(o, "lamda", 0) != 0:
            out.append("MXNet 1.9.1 DCASGD leaves wd*w out of its squared-gradient term (wd != 0)")
        if name == "adagrad":
            out.append("MXNet 1.9.1 AdaGrad puts eps inside the square root and applies wd decoupled")
        if name == "groupadagrad":
            out.append("MXNet 1.9.1 GroupAdaGrad puts eps inside the square root")
        if name == "adadelta":
            out.append(
                "MXNet 1.9.1 AdaDelta has no learning rate (continuing with learning_rate=1.0, no scheduler)"
                + (" and applies wd decoupled and unscaled" if wd != 0 else "")
            )
        if name in ("adam", "adamax", "nadam", "ftml", "rmsprop") and clip_and_wd:
            out.append(f"MXNet 1.9.1 {name} adds wd*w before clipping the gradient")
        if name == "adamax":
            out.append(
                "MXNet 1.9.1 Adamax has no epsilon (continuing with epsilon=1e-8, MXNet 2.0's default)"
            )
        if name == "rmsprop" and not getattr(o, "centered", False):
            out.append("MXNet 1.9.1 non-centered RMSProp puts epsilon inside the square root")
        if name == "lars" and getattr(o, "momentum_correction", False) and getattr(o, "lr_scheduler", None):
            out.append("MXNet 1.9.1 LARS rescales its momentum when the scheduled learning rate changes")
        if name == "test":
            out.append("MXNet 1.9.1's Test optimizer computes w += rescale_grad * grad")
    else:
        fused = getattr(o, "use_fused_step", True)
        agg = getattr(o, "aggregate_num", 1) or 1
        if name == "lamb" and fused and agg <= 1:
            out.append("MXNet 2.0's non-aggregated fused LAMB counts every update twice (mxopt_jax: once)")
        if name in ("adamw", "lans") and not fused:
            out.append(f"MXNet 2.0's {name} step (use_fused_step=False) path differs from its fused math")
        if name == "lars" and agg > 1 and getattr(o, "multi_precision", False):
            out.append("MXNet 2.0's aggregated multi-precision LARS pairs states with the wrong parameters")
        if name == "adabelief" and clip_and_wd:
            out.append("MXNet 2.0 AdaBelief adds wd*w before clipping the gradient")
    if name == "nadam" and n_states > 1:
        out.append(
            "MXNet's Nadam shares one momentum schedule (m_schedule) across all parameters; mxopt_jax keeps "
            "one per parameter (each starts from the file's m_schedule)"
        )
    return out


def load_updater(
    path_or_bytes: str | os.PathLike | bytes,
    optimizer: Any = None,
    *,
    param_dict: Mapping[Any, Any] | None = None,
    mxnet_version: str | None = None,
    lr_scheduler: Any = None,
) -> Any:
    """Resume an MXNet ``.states`` file as an :class:`mxopt_jax.Updater`.

    Reads what ``Updater.get_states(dump_optimizer=True)`` or a Gluon ``Trainer.save_states`` wrote (MXNet
    1.9.1 or 2.0.0b1) through a whitelist unpickler (see :func:`read_states`) and rebuilds the optimizer
    with ``mxopt_jax.create``: its class and every hyperparameter, ``lr``, ``wd``, ``rescale_grad``,
    ``clip_gradient``, ``lr_mult`` / ``wd_mult`` / ``idx2name``, ``begin_num_update``, ``num_update``, the
    per-index and per-device update counts, ``aggregate_num`` / ``use_fused_step``, the learning-rate
    scheduler (an :mod:`mxopt_jax.lr_scheduler` object at the same position) and Nadam's ``m_schedule``;
    every index's state is converted to mxopt_jax's layout (``(float32 master, fields)`` for float16 weights
    saved with ``multi_precision``). The next ``updater(i, grad, weight)`` calls continue as MXNet would.

    Gluon ``Trainer``: ``trainer.save_states`` writes exactly this file (its first device's
    ``Updater.get_states(dump_optimizer=True)``, or the kvstore's with ``update_on_kvstore``), keyed by the
    Trainer's indices (each parameter's position in ``collect_params()`` sorted by name: MXNet's ``Trainer``
    sorts the keys; in MXNet 2.0 they are the ``.params`` names, in 1.x the prefixed ``dense0_weight`` names),
    and holding the ``rescale_grad`` of its last ``step`` (``1 / batch_size``). MXNet's ``load_states`` then
    re-attaches ``param_dict = {index: Parameter}``; a Parameter's ``lr_mult`` / ``wd_mult`` take precedence
    over the optimizer's dicts (they are not in the file). To do the same, pass ``param_dict`` (index -> any
    object with ``lr_mult`` and ``wd_mult``; needed only if you changed a Parameter's multipliers) and, like
    ``Trainer.step(batch_size)``, set ``updater.optimizer.rescale_grad = 1 / batch_size`` if it changes.
    The weights: ``load_params`` of the matching ``.params`` file, ordered by those indices.

    The file's indices are kept in ``updater.layout`` (with the shape of each index's state): a call with
    an index the file has no state for, or a weight / gradient whose shape disagrees with the stored state,
    raises ``ValueError`` before anything changes (a Trainer's parameters without gradient, such as
    BatchNorm's running statistics, have no state: MXNet never updates them). :func:`load_trainer` pairs
    the indices with the parameter names and takes gradients by name.

    Args:
      path_or_bytes: the ``.states`` file or its bytes.
      optimizer: for a ``dump_optimizer=False`` file (states only), the :class:`mxopt_jax.Optimizer` to use,
        configured as the MXNet one was. As MXNet's ``set_states``, its own counts and scheduler are kept
        (they are not in such a file). For a file whose optimizer is a class of your own (a subclass of an
        MXNet optimizer, which is never constructed), the optimizer to continue with, configured as your
        class computes: the states, update counts, ``num_update``, multipliers, ``idx2name`` and
        ``rescale_grad`` load from the file (and its scheduler, when it is one of MXNet's). Ignored, with a
        warning, when the file holds one of MXNet's optimizers (MXNet replaces the optimizer by the file's).
      lr_scheduler: the learning-rate scheduler to continue with instead of the file's (required when the
        file's is a class of your own, which is never constructed): an :mod:`mxopt_jax.lr_scheduler` object
        or any callable ``num_update -> learning rate``, at the file's position (it is called with the
        restored ``num_update``).
      param_dict: index -> object with ``lr_mult`` / ``wd_mult`` (Gluon Parameters), as MXNet's
        ``Trainer.load_states`` re-attaches it.
      mxnet_version: ``"1"`` or ``"2"`` to choose the state layout of a ``dump_optimizer=False`` file (1.9.1
        orders multi-precision SGD/NAG/LARS states and RMSProp states differently); default: read from the
        pickled optimizer's module, else MXNet 2.0.

    Returns:
      an :class:`mxopt_jax.Updater` with ``.optimizer`` and ``.states`` restored.

    Raises:
      ValueError: the file is not a readable/safe ``.states`` pickle, a state does not fit the optimizer,
        the optimizer is unknown, or ``optimizer`` is missing for a states-only file.

    Warns:
      UserWarning: when the run cannot continue with MXNet's exact math, naming the difference: a 1.9.1
        optimizer whose update differs from MXNet 2.0 for the stored hyperparameters (the run continues with
        MXNet 2.0 math), MXNet 2.0 paths mxopt_jax does not reproduce (LAMB's non-aggregated double count,
        ...), and Nadam's shared momentum schedule.

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.mxnet_format import load_params, load_updater
      >>> d = "tests/golden/mxnet_ckpt/"
      >>> params = load_params(d + "mx20_adam.params")
      >>> weights = [jnp.asarray(params[n]) for n in sorted(params)]   # a 2.0 Trainer's index order
      >>> updater = load_updater(d + "mx20_adam.states")
      >>> opt = updater.optimizer
      >>> type(opt).__name__, opt.num_update, opt.beta2, type(opt.lr_scheduler).__name__
      ('Adam', 3, 0.999, 'MultiFactorScheduler')
      >>> weights = updater([0, 1, 2, 3], [jnp.ones_like(w) for w in weights], weights)
      >>> opt.num_update, opt.index_update_counts
      (4, {0: 4, 1: 4, 2: 4, 3: 4})
    """

    data, where = _source(path_or_bytes, "states")
    states, mxo = _read_states(data, where)
    if mxo is not None and is_unknown(mxo):
        if optimizer is None:
            raise ValueError(
                f"{where}: the file's optimizer is {mxo.mx_module}.{mxo.mx_class}, a class of your own (not one of "
                "MXNet's); it is never constructed. Pass the optimizer to continue with, configured as your "
                "class computes, e.g. load_updater(path, optimizer=mxopt_jax.create('sgd', learning_rate=..., "
                "momentum=...)): the states, update counts, multipliers and rescale_grad still load from the "
                f"file (its attributes: {_summary(mxo)})"
            )
        if not isinstance(optimizer, facade.Optimizer):
            raise TypeError(f"optimizer must be an mxopt_jax Optimizer, got {type(optimizer).__name__}")
        opt = optimizer
        name = _rule_name(opt)
        v1 = not hasattr(mxo, "use_fused_step")
        if mxnet_version is not None:
            v1 = str(mxnet_version).startswith("1")
        _restore_bookkeeping(opt, mxo, where, lr_scheduler)
        holder = mxo
        mp = bool(getattr(mxo, "multi_precision", opt.multi_precision))
        diffs = []
    elif mxo is None:
        if optimizer is None:
            raise ValueError(
                f"{where} holds only the states (saved with dump_optimizer=False): pass the optimizer, "
                "e.g. load_updater(path, optimizer=mxopt_jax.create('sgd', learning_rate=..., momentum=...))"
            )
        if not isinstance(optimizer, facade.Optimizer):
            raise TypeError(f"optimizer must be an mxopt_jax Optimizer, got {type(optimizer).__name__}")
        opt = optimizer
        name = _rule_name(opt)
        v1 = mxnet_version is not None and str(mxnet_version).startswith("1")
        if lr_scheduler is not None:
            opt.lr_scheduler = lr_scheduler
        holder = MXNetObject()
        for k in ("m_schedule", "cumgrads"):
            if hasattr(opt, k):
                setattr(holder, k, getattr(opt, k))
        mp = bool(opt.multi_precision)
        diffs = []
        ambiguous = (mp and name in _MASTER_LAST_19) or (
            name == "rmsprop" and getattr(opt, "centered", False)
        )
        if mxnet_version is None and ambiguous:
            _warn(
                f"{where}: a states-only file does not say which MXNet wrote it; reading {name} states in MXNet "
                "2.0's layout (1.9.1 orders them differently): pass mxnet_version='1' for a 1.9.1 file"
            )
    else:
        if optimizer is not None:
            _warn(f"{where} holds the optimizer; it replaces the one passed (as MXNet's set_states does)")
        if mxo.mx_class not in _REGISTRY_NAME or mxo.mx_class == "Optimizer":
            raise ValueError(f"{where}: unsupported MXNet optimizer {mxo.mx_module}.{mxo.mx_class}")
        name = _REGISTRY_NAME[mxo.mx_class]
        v1 = not hasattr(mxo, "use_fused_step")  # MXNet 2.0's base class sets it, 1.x has no such attribute
        if mxnet_version is not None:
            v1 = str(mxnet_version).startswith("1")
        opt = _build_optimizer(name, v1, mxo, where, lr_scheduler)
        holder = mxo
        mp = bool(getattr(mxo, "multi_precision", False))
        diffs = _differences(name, v1, mxo, len(states))
    if param_dict is not None:
        opt.param_dict = dict(param_dict)

    new_states = {}
    for idx, st in states.items():
        if isinstance(idx, bytes):
            idx = idx.decode()
        try:
            conv = _convert_state(name, v1, st, idx, holder, mp)
        except _Mismatch:
            raise ValueError(
                f"{where}: the state of index {idx!r} does not have the layout of MXNet "
                f"{'1.9.1' if v1 else '2.0'} {name} states"
            ) from None
        new_states[idx] = _to_facade(opt, idx, conv, where)
    updater = facade.Updater(opt)
    updater.states = new_states
    updater.states_synced = dict.fromkeys(new_states, False)
    idx2name = getattr(opt, "idx2name", {}) or {}
    updater.layout = {i: (idx2name.get(i), _weight_shape(opt, i, st), None) for i, st in new_states.items()}
    updater.order_rule = _ORDER_RULE
    for d in diffs:
        _warn(f"{where}: resumed with MXNet 2.0 / mxopt_jax math; {d}.")
    return updater


def _to_facade(opt: Any, idx: Any, conv: Any, where: str) -> Any:
    """NumPy fields -> JAX arrays, checked against the state mxopt_jax would create for that weight."""
    import jax.numpy as jnp

    is_mp = isinstance(conv, tuple) and len(conv) == 2 and isinstance(conv[1], tuple) and _is_arr(conv[0])
    master, fields = conv if is_mp else (None, conv)
    shapes = [f.shape for f in fields if _is_arr(f) and f.ndim > 0] + ([master.shape] if is_mp else [])
    if shapes:
        shape = shapes[0]
        if any(s != shape for s in shapes):
            raise ValueError(f"{where}: the state arrays of index {idx!r} have different shapes {shapes}")
        proto = np.float32 if is_mp else next(f.dtype for f in fields if _is_arr(f) and f.ndim > 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = opt.create_state(idx, jnp.zeros(shape, proto))
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


_ORDER_RULE = (
    "a Gluon Trainer's index i is the i-th parameter of sorted(net.collect_params().keys()) (MXNet 2.0: the "
    ".params names, e.g. '0.weight'; MXNet 1.x: the prefixed names, e.g. 'dense0_weight', which "
    "save_parameters does not store); mxopt_jax.mxnet_format.load_trainer pairs them by name."
)


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


def _fits(opt: Any, idx: Any, state: Any, shape: tuple, dtype: Any) -> bool:
    """Whether ``state`` is what ``opt`` keeps for a weight of this shape and dtype."""
    want = _state_shapes(opt, idx, tuple(shape), dtype)
    return want is None or want == _stored_shapes(state)


def _weight_shape(opt: Any, idx: Any, state: Any) -> tuple | None:
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
    if not _fits(opt, idx, state, shape, dtype) or _fits(opt, idx, state, other, dtype):
        return None
    return shape


def _summary(o: MXNetObject, limit: int = 12) -> str:
    """A short listing of a pickled object's plain attributes (for messages)."""
    out = []
    for k, v in vars(o).items():
        if isinstance(v, (int, float, str, bool)) or v is None:
            out.append(f"{k}={v!r}")
        elif isinstance(v, MXNetObject):
            out.append(f"{k}=<{v.mx_module}.{v.mx_class}>")
    return ", ".join(out[:limit]) + (", ..." if len(out) > limit else "")


def _rule_name(opt: Any) -> str:
    """The optimizer-table name whose state layout ``opt`` keeps (a subclass of a built-in: the built-in's)."""
    from .facade.rule_backed import CLASSES

    builtins = set(CLASSES.values())
    for klass in type(opt).__mro__:
        if klass in builtins:
            return klass.__name__.lower()
    return type(opt).__name__.lower()


def _file_scheduler(a: Mapping, where: str, lr_scheduler: Any) -> Any:
    """The scheduler to continue with: the one passed, else the file's (an MXNet class, at its position)."""
    if lr_scheduler is not None:
        return lr_scheduler
    obj = a.get("lr_scheduler")
    if is_unknown(obj):
        raise ValueError(
            f"{where}: the file's learning-rate scheduler is {obj.mx_module}.{obj.mx_class}, a class of your own "
            "(not one of MXNet's); it is never constructed. Pass the scheduler to continue with: "
            "load_updater(path, lr_scheduler=...) (an mxopt_jax.lr_scheduler object, or any callable "
            f"num_update -> learning rate, called with the restored num_update {a.get('num_update')}); "
            f"the optimizer, states and counts still load from the file (the scheduler's attributes: "
            f"{_summary(obj)})"
        )
    return _scheduler(obj, where)


def _restore_bookkeeping(opt: Any, o: MXNetObject, where: str, lr_scheduler: Any) -> None:
    """Into a substitute optimizer: the file's counts, multipliers, names, rescale_grad and scheduler."""
    a = vars(o)
    sched = _file_scheduler(a, where, lr_scheduler)
    if sched is not None:
        opt.lr_scheduler = sched
    rescale = a.get("rescale_grad", opt.rescale_grad)
    if isinstance(rescale, np.ndarray):
        rescale = float(rescale.reshape(-1)[0])
    opt.rescale_grad = float(rescale)
    opt.begin_num_update = int(a.get("begin_num_update", opt.begin_num_update))
    opt.idx2name = dict(a.get("idx2name") or {})
    opt.lr_mult = dict(a.get("lr_mult") or {})
    opt.wd_mult = dict(a.get("wd_mult") or {})
    _restore_counts(opt, a)


def _restore_counts(opt: Any, a: Mapping) -> None:
    counts = a.get("_all_index_update_counts")
    current = a.get("_index_update_count", {})
    if not isinstance(counts, dict):
        counts = {0: current}
    dev = next((d for d, c in counts.items() if c is current), None)
    if dev is None:
        dev = next(iter(counts), 0)
    opt.set_update_counts(
        counts, current_device=int(dev), num_update=int(a.get("num_update", opt.begin_num_update))
    )


def _build_optimizer(name: str, v1: bool, o: MXNetObject, where: str, lr_scheduler: Any = None) -> Any:
    """A fresh mxopt_jax optimizer with the pickled optimizer's hyperparameters and bookkeeping."""

    cls = facade.Optimizer.opt_registry.get(name)
    if cls is None:
        raise ValueError(f"{where}: no mxopt_jax optimizer {name!r}")
    a = vars(o)
    kw: dict[str, Any] = {}
    aliases = _ALIASES_19.get(name, {}) if v1 else {}
    for p in _own_names(cls):
        src = aliases.get(p, p)
        if src in a:
            kw[p] = a[src]
    if name == "lbsgd" and "init_updates" in a and "updates_per_epoch" in a:
        kw["begin_epoch"] = int(a["init_updates"]) // max(int(a["updates_per_epoch"]), 1)
    if name == "adamax" and v1:
        kw["epsilon"] = 1e-8
    if name in ("sgd", "ccsgd", "lars") and kw.get("lazy_update") and a.get("multi_precision"):
        # MXNet 1.9.1 SGD/LARS default to lazy_update=True and accept it with multi_precision (it only matters
        # for row_sparse gradients); mxopt_jax, as MXNet 2.0, does not
        kw["lazy_update"] = False
        _warn(
            f"{where}: lazy_update=True with multi_precision=True is continued with lazy_update=False (the same "
            "for dense gradients; row_sparse gradients get the standard, non-lazy update)"
        )
    rescale = a.get("rescale_grad", 1.0)
    if isinstance(rescale, np.ndarray):  # MXNet 2.0 AdamW/AdaBelief keep it as a 1-element NDArray
        rescale = float(rescale.reshape(-1)[0])
    clip = a.get("clip_gradient")
    if clip is not None and not clip > 0:
        _warn(
            f"{where}: clip_gradient={clip} turns clipping off in MXNet's fused kernels; continuing without it"
        )
        clip = None
    agg = a.get("aggregate_num", 1)
    agg = 1 if agg is None or (isinstance(agg, (int, float)) and agg < 1) else agg
    if name in ("lamb", "lans"):
        agg = min(agg, 45)
    sched = _file_scheduler(a, where, lr_scheduler)
    lr = a.get("lr")
    if name == "adadelta" and v1:
        lr, sched = 1.0, None
    base = dict(
        learning_rate=None if sched is not None else lr,
        lr_scheduler=sched,
        wd=float(a.get("wd", 0.0)),
        rescale_grad=float(rescale),
        clip_gradient=clip,
        begin_num_update=int(a.get("begin_num_update", 0)),
        multi_precision=bool(a.get("multi_precision", False)),
        aggregate_num=agg,
    )
    if "use_fused_step" in a and not v1:
        base["use_fused_step"] = bool(a["use_fused_step"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ccSGD's deprecation notice
        try:
            opt = cls(**base, **kw)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: cannot rebuild MXNet's {o.mx_class} in mxopt_jax: {exc}") from None
    opt.lr = lr if not (name == "adadelta" and v1) else 1.0
    opt.idx2name = dict(a.get("idx2name") or {})
    opt.lr_mult = dict(a.get("lr_mult") or {}) if not (name == "adadelta" and v1) else {}
    opt.wd_mult = dict(a.get("wd_mult") or {})
    _restore_counts(opt, a)
    return opt


def _own_names(cls: type) -> list[str]:
    import inspect

    base = set(inspect.signature(facade.Optimizer.__init__).parameters)
    return [p for p in inspect.signature(cls).parameters if p not in base]


# --------------------------------------------------------------------------- a Gluon Trainer resumed by name
class _Mults:
    """What MXNet's ``Trainer`` re-attaches as ``param_dict``: a Parameter's ``lr_mult`` / ``wd_mult``."""

    __slots__ = ("lr_mult", "wd_mult")

    def __init__(self, lr_mult: float, wd_mult: float) -> None:
        self.lr_mult, self.wd_mult = lr_mult, wd_mult

    def __repr__(self) -> str:
        return f"(lr_mult={self.lr_mult}, wd_mult={self.wd_mult})"


class TrainerCheckpoint:
    """A Gluon ``Trainer`` run resumed by parameter name (made by :func:`load_trainer`).

    Attributes:
      names: the ``.params`` name of each Trainer index (``names[i]`` is index ``i``).
      trainable: the names the file holds optimizer states for, in index order (the parameters MXNet updates).
      frozen: the names without optimizer state, in index order: parameters with grad_req ``'null'``
        (BatchNorm's ``running_mean`` / ``running_var``), which MXNet never updates and neither does anything
        here (:attr:`updater` refuses them by index and leaves them bit-unchanged by name).
      params: every parameter of the ``.params`` file, ``{name: jax.Array}``, in index order.
      updater: the :class:`mxopt_jax.Updater` continuing the run; ``updater(grads, params)`` with two dicts
        keyed by name returns the new ``{name: weight}`` (frozen entries unchanged, the same objects).
      mxnet_version: ``"1"`` or ``"2"``.
      rescale_grad_in_file: the ``rescale_grad`` of the Trainer's last ``step(batch_size)``:
        ``1 / batch_size``, because Gluon's ``backward()`` differentiates the loss summed over the batch.
      batch_size_in_file: ``1 / rescale_grad_in_file`` when that is a whole number, else ``None``.
      loss: ``"sum"`` or ``"mean"``: the convention of the gradients you feed.
      gradient_scale: a sentence saying what the file holds, why, and what the resumed run applies.
    """

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    names: tuple[str, ...]
    trainable: tuple[str, ...]
    frozen: tuple[str, ...]
    params: dict
    updater: Any
    mxnet_version: str
    rescale_grad_in_file: float
    batch_size_in_file: int | None
    loss: str
    gradient_scale: str

    @property
    def optimizer(self) -> Any:
        """The facade optimizer (``updater.optimizer``)."""
        return self.updater.optimizer

    def index(self, name: str) -> int:
        """The Trainer index of parameter ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(
                f"no parameter {name!r} in the checkpoint (its names: {list(self.names)})"
            ) from None

    def to_optax(
        self, params: Any = None, *, paths: Mapping[str, str] | Callable[[str], str] | None = None
    ) -> tuple[Any, Any]:
        """``(tx, opt_state)``: the functional (jittable) form of the resumed run for a parameter pytree.

        ``tx`` is an ``optax.GradientTransformation`` over the whole tree: the optimizer of the file (its
        functional constructor, same hyperparameters, scheduler at the file's position, the Parameter
        multipliers per leaf, ``rescale_grad`` for :attr:`loss`) on the trainable leaves, and an update of
        ``-0.0`` on the frozen ones, so ``optax.apply_updates`` leaves them bit-unchanged; ``opt_state`` holds
        the file's states and count. ``tx.update(grads, opt_state, params)`` under ``jax.jit`` continues
        MXNet's run. The state is the :class:`updater`'s current one (call it before or after facade steps).

        Args:
          params: the parameter pytree (default: :attr:`params`, a dict keyed by ``.params`` name).
          paths: ``.params`` name -> the leaf's path in ``params`` (keys joined by ``'/'``, e.g.
            ``'conv/kernel'``), as a dict or a callable ``name -> path``; default: the name itself. Every
            leaf of ``params`` must be one of the checkpoint's parameters, with its shape.

        Raises:
          ValueError: a name without a leaf, a leaf without a name, a shape that differs, per-index update
            counts that differ (the functional state has one count), or an optimizer with no functional form.
        """
        import jax
        import jax.numpy as jnp
        import optax

        from .facade.rule_backed import CLASSES
        from .validation import path_name

        opt = self.updater.optimizer
        cls = next((k for k in type(opt).__mro__ if k in set(CLASSES.values())), None)
        if cls is None or type(opt).step is not cls.step or type(opt).update is not facade.Optimizer.update:
            raise ValueError(
                f"to_optax: {type(opt).__name__} has no functional form (only mxopt_jax's own optimizers, "
                "unmodified, have one); continue with the facade updater"
            )
        params = self.params if params is None else params
        if paths is None:
            path_of = {n: n for n in self.names}
        elif callable(paths):
            path_of = {n: str(paths(n)) for n in self.names}
        elif isinstance(paths, Mapping):
            missing = [n for n in self.names if n not in paths]
            if missing:
                raise ValueError(f"to_optax: `paths` has no entry for {missing}")
            path_of = {n: str(paths[n]) for n in self.names}
        else:
            raise TypeError(f"to_optax: `paths` must be a dict or a callable, got {type(paths).__name__}")
        flat, _ = jax.tree_util.tree_flatten_with_path(params)
        leaf_of = {path_name(p): leaf for p, leaf in flat}
        name_of = {v: k for k, v in path_of.items()}
        stray = sorted(set(leaf_of) - set(name_of))
        if stray:
            raise ValueError(f"to_optax: leaves {stray} of `params` are not parameters of the checkpoint")
        for n in self.names:
            p = path_of[n]
            if p not in leaf_of:
                raise ValueError(f"to_optax: no leaf at path {p!r} for parameter {n!r} in `params`")
            if tuple(jnp.shape(leaf_of[p])) != tuple(self.params[n].shape):
                raise ValueError(
                    f"to_optax: the leaf at {p!r} has shape {tuple(jnp.shape(leaf_of[p]))}, parameter {n!r} "
                    f"{tuple(self.params[n].shape)} in the checkpoint"
                )
        trainable = list(self.trainable)
        idx = {n: self.index(n) for n in trainable}
        counts = {opt.index_update_counts.get(idx[n], opt.begin_num_update) for n in trainable}
        if len(counts) > 1:
            raise ValueError(
                f"to_optax: the parameters' update counts differ ({sorted(counts)}); the functional state keeps "
                "one count: continue with the facade updater"
            )
        count = counts.pop() if counts else opt.begin_num_update
        kw = {p: getattr(opt, p) for p in opt._own}
        kw.update(
            learning_rate=None if opt.lr_scheduler is not None else opt.lr,
            lr_scheduler=opt.lr_scheduler,
            wd=opt.wd,
            rescale_grad=opt.rescale_grad,
            clip_gradient=opt.clip_gradient,
            multi_precision=opt.multi_precision,
            begin_num_update=int(count),
            lr_mult={n: float(opt._mult(idx[n], opt.lr_mult, "lr_mult")) for n in trainable},
            wd_mult={n: float(opt._mult(idx[n], opt.wd_mult, "wd_mult")) for n in trainable},
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            inner = cls._ctor(**kw)
        frozen_paths = {path_of[n] for n in self.frozen}
        train_paths = {path_of[n]: n for n in trainable}

        def pick(tree: Any) -> dict:
            leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
            by_path = {path_name(p): x for p, x in leaves}
            return {n: by_path[p] for p, n in train_paths.items()}

        def init_fn(tree: Any) -> Any:
            return inner.init(pick(tree))

        def update_fn(updates: Any, state: Any, tree: Any = None) -> tuple[Any, Any]:
            new, state = inner.update(pick(updates), state, None if tree is None else pick(tree))
            leaves, treedef = jax.tree_util.tree_flatten_with_path(updates if tree is None else tree)
            out = []
            for p, x in leaves:
                key = path_name(p)
                out.append(jnp.full_like(x, -0.0) if key in frozen_paths else new[train_paths[key]])
            return jax.tree_util.tree_unflatten(treedef, out), state

        tx = optax.GradientTransformation(init_fn, update_fn)
        sub = {n: jnp.asarray(leaf_of[path_of[n]]) for n in trainable}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            template = inner.init(sub)
        rule = cls._rule
        fields: dict[str, dict] = {f: {} for f in rule.fields}
        masters: dict = {}
        for n in trainable:
            st = self.updater.states[idx[n]]
            mp = opt.multi_precision and jnp.dtype(self.params[n].dtype).itemsize < 4
            master, f = (st[0], st[1]) if mp else (None, st)
            for j, fname in enumerate(rule.fields):
                fields[fname][n] = f[j]
            masters[n] = master
        repl: dict[str, Any] = {"count": jnp.zeros([], jnp.int32)}
        for fname in rule.fields:
            tmpl = getattr(template, fname)
            if tmpl is None:
                continue
            repl[fname] = {
                n: (None if tmpl[n] is None else jnp.asarray(fields[fname][n], tmpl[n].dtype))
                for n in trainable
            }
        if getattr(template, "master", None) is not None:
            repl["master"] = {
                n: (None if template.master[n] is None else jnp.asarray(masters[n], jnp.float32))
                for n in trainable
            }
        if rule.uses_key:
            repl["key"] = opt._key
        return tx, template._replace(**repl)


_LOSS = ("sum", "mean")


def load_trainer(
    params: str | os.PathLike | bytes,
    states: str | os.PathLike | bytes,
    *,
    loss: Literal["sum", "mean"],
    names: Sequence[str] | Mapping[str, str] | None = None,
    batch_size: int | None = None,
    lr_mult: Mapping[str, float] | None = None,
    wd_mult: Mapping[str, float] | None = None,
    optimizer: Any = None,
    lr_scheduler: Any = None,
    mxnet_version: str | None = None,
) -> TrainerCheckpoint:
    """Resume a Gluon ``Trainer`` run by parameter name: ``net.save_parameters`` + ``trainer.save_states``.

    The order rule, one for both MXNet versions: MXNet's ``Trainer`` numbers the parameters in the order of
    ``sorted(net.collect_params().keys())``. In MXNet 2.0 those keys are the ``.params`` names
    (``'0.weight'``, string-sorted: ``'10.weight'`` before ``'2.weight'``), so the files tell everything. In
    MXNet 1.x they carry the block prefixes (``'conv0_weight'``, ``'batchnorm0_gamma'``), which
    ``save_parameters`` drops: pass ``names=list(net.collect_params().keys())`` (1.x's ``collect_params()``
    order is the order of the ``.params`` file, so the keys pair with the file's names by position; or a dict
    ``{params_name: collect_params_key}``).

    Parameters the file holds no optimizer state for (grad_req ``'null'``: BatchNorm's running statistics)
    are :attr:`~TrainerCheckpoint.frozen`: never updated (refused by index, left bit-unchanged by name).

    Args:
      params: the ``.params`` file (or bytes) of ``net.save_parameters``.
      states: the ``.states`` file (or bytes) of ``trainer.save_states``.
      loss: the convention of the gradients you will feed: ``"sum"`` (the gradient of the loss summed over
        the batch, Gluon's habit: the file's ``rescale_grad = 1 / batch_size`` is kept, as
        ``trainer.step(batch_size)`` applies it) or ``"mean"`` (the gradient of the batch-mean loss,
        ``jax.grad``'s usual habit: already divided by the batch size, so ``rescale_grad = 1``). Required, so
        gradients are scaled exactly once.
      names: the model's ``collect_params()`` keys: required for MXNet 1.x files (see above); optional for
        2.0 (checked against the file).
      batch_size: with ``loss="sum"``, the batch size of the coming steps (``rescale_grad = 1 / batch_size``,
        as ``trainer.step(batch_size)``); default: the file's.
      lr_mult, wd_mult: the Gluon Parameters' multipliers by name (``.params`` or ``collect_params()``
        name), as MXNet's ``Trainer`` re-attaches them; they are not in MXNet's files. Without either, a
        ``UserWarning`` says so (pass ``lr_mult={}`` when no Parameter has a multiplier).
      optimizer, lr_scheduler: substitutes for an optimizer / scheduler class of your own in the file (see
        :func:`load_updater`).
      mxnet_version: ``"1"`` or ``"2"``; default: read from the ``.states`` file.

    Returns:
      a :class:`TrainerCheckpoint`.

    Raises:
      ValueError: a 1.x file without ``names``; names that do not pair with the file's; an optimizer state
        whose shape differs from its parameter (the message names the index, the parameter, both shapes and
        the order rule); a bad ``loss``; unknown names in ``lr_mult`` / ``wd_mult``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.mxnet_format import load_trainer
      >>> d = "tests/golden/mxnet_resume/"
      >>> ckpt = load_trainer(d + "mx20_cnn_adam.params", d + "mx20_cnn_adam.states", loss="sum",
      ...                     lr_mult={"3.bias": 2.0, "0.weight": 0.5}, wd_mult={"1.gamma": 0.0, "1.beta": 0.0})
      >>> ckpt.frozen
      ('1.running_mean', '1.running_var')
      >>> ckpt.names[:4]
      ('0.bias', '0.weight', '1.beta', '1.gamma')
      >>> print(ckpt.gradient_scale)  # doctest: +ELLIPSIS
      The file holds rescale_grad = 0.25 = 1/4: trainer.step(4) sets it, because Gluon's backward() ...
      >>> grads = {n: jnp.zeros_like(ckpt.params[n]) for n in ckpt.trainable}
      >>> new = ckpt.updater(grads, ckpt.params)
      >>> new["1.running_mean"] is ckpt.params["1.running_mean"]
      True
    """
    import jax.numpy as jnp

    if loss not in _LOSS:
        raise ValueError(
            f"load_trainer: `loss` must be 'sum' (gradients of the loss summed over the batch, as Gluon's "
            f"backward()) or 'mean' (gradients of the batch-mean loss), got {loss!r}"
        )
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise ValueError(f"load_trainer: `batch_size` must be a positive int, got {batch_size!r}")
    arrays = load_params(params)
    sdata, swhere = _source(states, "states")
    raw_states, mxo = _read_states(sdata, swhere)
    if mxnet_version is None:
        version = "1" if (mxo is not None and not hasattr(mxo, "use_fused_step")) else "2"
    else:
        version = "1" if str(mxnet_version).startswith("1") else "2"
    file_names = list(arrays)
    if isinstance(names, (str, bytes)) or not (names is None or isinstance(names, (Mapping, Sequence))):
        raise TypeError(
            "load_trainer: `names` must be the model's collect_params() keys, a list in collect_params() order "
            f"or a dict {{params_name: collect_params_key}}, got {type(names).__name__}"
        )
    # --- the Trainer's order: sorted collect_params() keys
    if names is None:
        if version == "1":
            raise ValueError(
                f"load_trainer: {swhere} was written by MXNet 1.x, whose Trainer numbers the parameters by "
                "sorted(net.collect_params().keys()): prefixed names ('batchnorm0_gamma', 'conv0_weight') that "
                "save_parameters does not store. Pass names=list(net.collect_params().keys()) (in "
                "collect_params() order, which is the .params file's order) or names={params_name: "
                "collect_params_key}."
            )
        key_of = {n: n for n in file_names}
    elif isinstance(names, Mapping):
        key_of = {str(k): str(v) for k, v in names.items()}
        if set(key_of) != set(file_names):
            raise ValueError(
                f"load_trainer: `names` must map every .params name {file_names} to its collect_params() key; "
                f"missing {sorted(set(file_names) - set(key_of))}, unknown {sorted(set(key_of) - set(file_names))}"
            )
    else:
        keys = [str(k) for k in names]
        if len(keys) != len(file_names):
            raise ValueError(
                f"load_trainer: `names` has {len(keys)} keys, the .params file {len(file_names)} parameters"
            )
        if version == "2" and set(keys) == set(file_names):
            key_of = {n: n for n in file_names}
        else:
            for pos, (f, k) in enumerate(zip(file_names, keys, strict=True)):
                leaf = f.rsplit(".", 1)[-1]
                if not (k == leaf or k.endswith("_" + leaf) or k.endswith("." + leaf)):
                    raise ValueError(
                        f"load_trainer: names[{pos}] = {k!r} does not pair with the .params file's parameter "
                        f"{pos}, {f!r} (it should end with {leaf!r}): pass list(net.collect_params().keys()) in "
                        "collect_params() order (the order save_parameters writes)"
                    )
            key_of = dict(zip(file_names, keys, strict=True))
    if len(set(key_of.values())) != len(key_of):
        raise ValueError("load_trainer: `names` holds a key twice")
    order = sorted(file_names, key=lambda n: key_of[n])
    index_of = {n: i for i, n in enumerate(order)}
    # --- multipliers by name (.params or collect_params() names)
    alias = {**{v: k for k, v in key_of.items()}, **{n: n for n in file_names}}

    def by_name(arg: str, table: Mapping | None) -> dict:
        if table is not None and not isinstance(table, Mapping):
            raise TypeError(
                f"load_trainer: `{arg}` must be a dict {{parameter name: multiplier}}, got {type(table).__name__}"
            )
        out = {}
        for k, v in (table or {}).items():
            if k not in alias:
                raise ValueError(
                    f"load_trainer: `{arg}` names {k!r}, not a parameter of the file {file_names}"
                )
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float, np.floating, np.integer))
                or not math.isfinite(v)
            ):
                raise ValueError(f"load_trainer: `{arg}[{k!r}]` must be a finite number, got {v!r}")
            out[alias[k]] = float(v)
        return out

    lrm, wdm = by_name("lr_mult", lr_mult), by_name("wd_mult", wd_mult)
    if lr_mult is None and wd_mult is None:
        _warn(
            f"load_trainer: {swhere}: multipliers set on Gluon Parameters (lr_mult / wd_mult) are not in MXNet's "
            "files; pass them by name, load_trainer(..., lr_mult={'dense0_bias': 2.0}, wd_mult={...}), or "
            "lr_mult={} if no Parameter has one"
        )
    param_dict = {index_of[n]: _Mults(lrm.get(n, 1.0), wdm.get(n, 1.0)) for n in order}
    updater = load_updater(
        sdata if not isinstance(states, (str, os.PathLike)) else states,
        optimizer,
        param_dict=param_dict,
        mxnet_version=mxnet_version,
        lr_scheduler=lr_scheduler,
    )
    opt = updater.optimizer
    rule = (
        "a Gluon Trainer's index i is the i-th parameter of sorted(net.collect_params().keys())"
        + (" (MXNet 2.0: the .params names)" if names is None else " (the names passed to load_trainer)")
        + f": {', '.join(f'{i}={key_of[n]!r}' for i, n in enumerate(order))}"
    )
    # --- pair the states with the parameters; no state: frozen
    stray = sorted((i for i in updater.states if not (isinstance(i, int) and 0 <= i < len(order))), key=str)
    if stray:
        raise ValueError(
            f"load_trainer: {swhere} holds states for indices {stray}, but the .params file has {len(order)} "
            f"parameters (indices 0..{len(order) - 1}): not the files of one run? Index order: {rule}"
        )
    layout, frozen = {}, {}
    for i, n in enumerate(order):
        a = arrays[n]
        if i in updater.states:
            st = updater.states[i]
            if not _fits(opt, i, st, tuple(a.shape), a.dtype):
                shape = updater.layout[i][1] or _stored_shapes(st)[0]
                raise ValueError(
                    f"load_trainer: index {i} (parameter {n!r}) has a state of shape {tuple(shape)} in {swhere}, "
                    f"but the parameter has shape {tuple(a.shape)}: the wrong order or the wrong names? "
                    f"Index order: {rule}"
                )
            layout[i] = (n, tuple(a.shape), a.dtype)
        else:
            frozen[i] = (n, tuple(a.shape), a.dtype)
    updater.layout, updater.frozen, updater.order_rule = layout, frozen, rule
    # --- the gradient scale
    r_file = float(opt.rescale_grad)
    b_file = round(1.0 / r_file) if r_file > 0 and abs(1.0 / r_file - round(1.0 / r_file)) < 1e-6 else None
    why = f"The file holds rescale_grad = {r_file:.6g}" + (
        f" = 1/{b_file}: trainer.step({b_file}) sets it, because Gluon's backward() differentiates the loss "
        "summed over the batch."
        if b_file
        else " (the last trainer.step's scale / batch_size)."
    )
    if loss == "sum":
        if batch_size is not None:
            opt.rescale_grad = 1.0 / batch_size
        why += (
            f" loss='sum': your gradients are of the summed loss; the resumed run applies rescale_grad = "
            f"{opt.rescale_grad:.6g}"
            + (f" (1/{batch_size})" if batch_size is not None else " (the file's)")
            + "."
        )
    else:
        opt.rescale_grad = 1.0
        why += (
            " loss='mean': your gradients are of the batch-mean loss, already divided by the batch size; the "
            "resumed run applies rescale_grad = 1."
        )
    return TrainerCheckpoint(
        names=tuple(order),
        trainable=tuple(n for i, n in enumerate(order) if i in layout),
        frozen=tuple(n for i, n in enumerate(order) if i in frozen),
        params={n: jnp.asarray(arrays[n]) for n in order},
        updater=updater,
        mxnet_version=version,
        rescale_grad_in_file=r_file,
        batch_size_in_file=b_file,
        loss=loss,
        gradient_scale=why,
        key_of=key_of,
    )
