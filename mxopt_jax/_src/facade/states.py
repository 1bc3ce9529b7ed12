"""The facade's safe state format: a zip of a JSON manifest and raw arrays (no pickle, ever).

``Updater.get_states`` writes it and ``Updater.set_states`` reads it back through a whitelist of value kinds
(numbers, strings, containers, NumPy/JAX arrays, the :mod:`mxopt_jax.lr_scheduler` classes). Foreign formats,
MXNet's pickled ``.states`` files included, are refused with a ``ValueError``.

Reading is held to the contract of the MXNet reader (:mod:`mxopt_jax.mxnet_format`): the same memory budget,
``max(64 MiB, 32 x the archive's size)`` unless ``max_bytes`` is passed, counted before anything is made (each
member's declared size before it is decompressed, the archive's directory, the manifest's JSON objects and the
arrays decoded from it), the manifest's nesting bounded (:data:`MAX_JSON_DEPTH`), only ``ValueError`` for a bad
archive (whatever zip, zlib or JSON raise), every restored optimizer attribute checked against what the class
accepts (through its own constructor; counts and ``num_update`` as MXNet keeps them) and a scheduler rebuilt at
its position and checked as on the MXNet path (:func:`mxopt_jax._src.schedulers.restore`).
"""

from __future__ import annotations

import inspect
import io
import json
import math
import re
import struct
import warnings
import zipfile
import zlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import schedulers as lr_scheduler
from ..validation import warn
from .optimizer import Optimizer

_FORMAT = "mxopt_jax.updater_states"
_VERSION = 1
_MANIFEST = "manifest.json"
_DTYPES = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
}
_SKIP_ATTRS = {"param_dict", "_prep", "_own", "_index_update_count"}

#: The budget of any file mxopt_jax reads, however small (bytes); the MXNet reader uses it too
#: (``mxnet_format.limits.FLOOR_BYTES``).
FLOOR_BYTES = 64 * 2**20
#: The budget of a file in multiples of its size (the larger of the two applies); the MXNet reader uses it
#: too (``mxnet_format.limits.RATIO``).
RATIO = 32
#: The deepest nesting of the manifest's JSON (arrays and objects); the tagged encoding takes three levels
#: per level of data, MXNet's reader allows 64 levels of data.
MAX_JSON_DEPTH = 3 * 64
#: What each byte of the manifest is counted at: the JSON objects parsed from it and the values decoded from
#: those (at most about 24 + 8 bytes each per byte of JSON, CPython 64-bit, measured).
JSON_COST = 40
#: What each member of the archive is counted at, besides its bytes: its directory entry.
MEMBER_COST = 512
_UPDATE_COUNT_MAX = 2**31 - 2  # mxopt_jax counts updates in int32, and the next update must fit
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    KeyError,
    ValueError,
    UnicodeDecodeError,
    RuntimeError,  # an encrypted member
    NotImplementedError,  # an unknown compression method
    zlib.error,
    EOFError,
    OSError,
    OverflowError,
    struct.error,
    IndexError,
    TypeError,
)


class _Budget:
    """What reading one archive may allocate: a running count, refused past ``cap`` (bytes)."""

    def __init__(self, size: int, max_bytes: int | None) -> None:
        self.user = max_bytes is not None
        self.cap = max(FLOOR_BYTES, RATIO * size) if max_bytes is None else max_bytes
        self.used = 0

    def charge(self, n: int, what: str) -> None:
        self.used += n
        if self.used > self.cap:
            how = (
                "the max_bytes passed"
                if self.user
                else f"max({FLOOR_BYTES >> 20} MiB, {RATIO} x the archive's size)"
            )
            raise ValueError(
                f"set_states: refused: {what} needs more than {self.cap} bytes, past the reader's memory budget "
                f"({how}); pass a larger max_bytes to read an archive you trust"
            )


class _Unencodable(Exception):
    pass


class _Codec:
    """Tagged JSON encoding of states / optimizer attributes; arrays go to separate raw-byte zip members."""

    def __init__(self, arrays: dict | None = None, budget: _Budget | None = None) -> None:
        self.arrays: dict[str, bytes] = {} if arrays is None else arrays
        self.budget = budget

    def enc(self, x: Any) -> Any:
        if x is None:
            return None
        if isinstance(x, (bool, np.bool_)):
            return {"bool": bool(x)}
        if isinstance(x, (int, np.integer)):
            return {"int": int(x)}
        if isinstance(x, (float, np.floating)) and not isinstance(x, np.ndarray):
            return {"float": repr(float(x))}
        if isinstance(x, str):
            return {"str": x}
        if isinstance(x, (jax.Array, np.ndarray)):
            arr = np.asarray(x)
            if arr.dtype.name not in _DTYPES:
                raise _Unencodable(f"array dtype {arr.dtype}")
            name = f"arrays/{len(self.arrays)}.bin"
            self.arrays[name] = np.ascontiguousarray(arr).tobytes()
            return {
                "array": name,
                "dtype": arr.dtype.name,
                "shape": list(arr.shape),
                "jax": isinstance(x, jax.Array),
            }
        if isinstance(x, tuple):
            return {"tuple": [self.enc(v) for v in x]}
        if isinstance(x, list):
            return {"list": [self.enc(v) for v in x]}
        if isinstance(x, dict):
            return {"dict": [[self.enc(k), self.enc(v)] for k, v in x.items()]}
        if isinstance(x, lr_scheduler.LRScheduler) and type(x).__name__ in lr_scheduler.__all__:
            return {"scheduler": type(x).__name__, "attrs": self.enc(dict(vars(x)))}
        raise _Unencodable(type(x).__name__)

    def dec(self, x: Any) -> Any:
        if x is None:
            return None
        if not isinstance(x, dict) or len(x) == 0:
            raise ValueError(f"malformed state manifest entry: {x!r}")
        if "bool" in x:
            return bool(x["bool"])
        if "int" in x:
            return int(x["int"])
        if "float" in x:
            return float(x["float"])
        if "str" in x:
            return str(x["str"])
        if "array" in x:
            if x["dtype"] not in _DTYPES or x["array"] not in self.arrays:
                raise ValueError(f"malformed array entry in state manifest: {x!r}")
            shape = x["shape"]
            if not isinstance(shape, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape
            ):
                raise ValueError(f"malformed array shape in state manifest: {x!r}")
            dtype = jnp.dtype(x["dtype"])
            raw = self.arrays[x["array"]]
            if len(raw) != math.prod(shape) * dtype.itemsize:
                raise ValueError(
                    f"array member {x['array']!r} holds {len(raw)} bytes, but {x['dtype']}{shape} needs "
                    f"{math.prod(shape) * dtype.itemsize} (truncated or corrupted archive)"
                )
            if self.budget is not None:  # the copy (or device array) made from the member's bytes
                self.budget.charge(len(raw) + 128, f"array member {x['array']!r} ({len(raw)} bytes)")
            arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
            return jnp.asarray(arr) if x["jax"] else arr.copy()
        if "tuple" in x:
            return tuple(self.dec(v) for v in x["tuple"])
        if "list" in x:
            return [self.dec(v) for v in x["list"]]
        if "dict" in x:
            return {self.dec(k): self.dec(v) for k, v in x["dict"]}
        if "scheduler" in x:
            name = x["scheduler"]
            if name not in lr_scheduler.__all__ or name not in lr_scheduler.RESTORABLE:
                raise ValueError(f"unknown scheduler class in state manifest: {name!r}")
            attrs = self.dec(x["attrs"])
            if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
                raise ValueError(f"malformed {name} attributes in state manifest")
            return _PendingScheduler(name, attrs)  # rebuilt, checked, once num_update is known
        raise ValueError(f"malformed state manifest entry: {x!r}")


class _PendingScheduler:
    """An archived scheduler's class name and attributes, rebuilt by :func:`_scheduler` once the optimizer's
    ``num_update`` is known."""

    def __init__(self, name: str, attrs: dict) -> None:
        self.name, self.attrs = name, attrs


def _scheduler(value: Any, num_update: int, lr: Any) -> Any:
    if not isinstance(value, _PendingScheduler):
        return value
    try:
        return lr_scheduler.restore(value.name, value.attrs, "set_states", num_update, what="archived", lr=lr)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if msg.startswith("set_states") else f"set_states: {msg}") from None


def _optimizer_attrs(opt: Optimizer, codec: _Codec) -> dict:
    attrs = {}
    for k, v in vars(opt).items():
        if k in _SKIP_ATTRS:
            continue
        try:
            attrs[k] = codec.enc(v)
        except _Unencodable as exc:
            warn(
                f"Updater.get_states: optimizer attribute {k!r} ({exc}) cannot be saved in the safe state "
                "format and is left out; set_states keeps the optimizer's current value.",
            )
    return attrs


def _decode(codec: _Codec, entry: Any, what: str) -> Any:
    """``codec.dec`` with any malformation reported as a ``ValueError`` naming the entry."""
    try:
        return codec.dec(entry)
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        IndexError,
        OverflowError,
        RecursionError,
    ) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith("set_states: refused"):
            raise
        raise ValueError(f"set_states: malformed {what} in the state archive: {exc}") from None


def _check_attr(opt: Optimizer, name: str, value: Any) -> None:
    """A restored attribute has the kind of value the optimizer holds (numbers stay numbers, ...); an
    attribute whose value is ``None`` now is checked against what the class accepts
    (:func:`_check_against_class`)."""
    old = getattr(opt, name)
    if isinstance(old, (jax.Array, np.ndarray)):
        if not (
            isinstance(value, (jax.Array, np.ndarray))
            and value.shape == old.shape
            and value.dtype == old.dtype
        ):
            raise ValueError(
                f"set_states: the archive sets optimizer attribute {name!r} to {_kind(value)}; expected an "
                f"array of shape {tuple(old.shape)} {old.dtype}"
            )
        return
    if old is None or value is None:
        return
    if isinstance(old, bool):
        ok = isinstance(value, bool)
    elif isinstance(old, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    elif isinstance(old, (dict, list, tuple, str)):
        ok = isinstance(value, type(old))
    else:
        return
    if not ok:
        raise ValueError(
            f"set_states: the archive sets optimizer attribute {name!r} to {value!r}; expected a value like "
            f"the current {type(old).__name__} {old!r}"
        )


def _kind(v: Any) -> str:
    if isinstance(v, (jax.Array, np.ndarray)):
        return f"an array of shape {tuple(v.shape)} {v.dtype}"
    if isinstance(v, (int, float, bool, str)) or v is None:
        return repr(v)[:60]
    return f"a {type(v).__name__}"


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= _UPDATE_COUNT_MAX


def _is_finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# the base attributes that are not constructor arguments: (what each must be, the check)
_BOOKKEEPING: dict[str, tuple[str, Any]] = {
    "num_update": (f"an update count in [0, {_UPDATE_COUNT_MAX}]", _is_count),
    "begin_num_update": (f"an update count in [0, {_UPDATE_COUNT_MAX}]", _is_count),
    "_current_device": (
        "a device id (an int >= 0)",
        lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31,
    ),
    "_all_index_update_counts": (
        f"a dict of device id -> {{index: update count in [0, {_UPDATE_COUNT_MAX}]}}",
        lambda v: (
            isinstance(v, dict)
            and all(
                isinstance(d, int) and isinstance(c, dict) and all(_is_count(n) for n in c.values())
                for d, c in v.items()
            )
        ),
    ),
    "lr_mult": (
        "a dict of finite numbers",
        lambda v: isinstance(v, dict) and all(_is_finite(m) for m in v.values()),
    ),
    "wd_mult": (
        "a dict of finite numbers",
        lambda v: isinstance(v, dict) and all(_is_finite(m) for m in v.values()),
    ),
    "idx2name": (
        "a dict of distinct parameter names",
        lambda v: (
            isinstance(v, dict)
            and all(isinstance(n, str) for n in v.values())
            and len(set(v.values())) == len(v)
        ),
    ),
    "sym_info": ("a tuple", lambda v: isinstance(v, tuple)),
    "lr_scheduler": (
        "None or one of mxopt_jax.lr_scheduler's schedulers",
        lambda v: v is None or isinstance(v, _PendingScheduler),
    ),
}
# constructor argument -> attribute, for the base class
_CTOR_OF = {
    "rescale_grad": "rescale_grad",
    "wd": "wd",
    "clip_gradient": "clip_gradient",
    "learning_rate": "lr",
    "multi_precision": "multi_precision",
    "aggregate_num": "aggregate_num",
    "use_fused_step": "use_fused_step",
}


def _check_against_class(opt: Optimizer, attrs: dict) -> None:
    """Every archived attribute is one the class accepts: the bookkeeping by kind and range, with MXNet's
    counting invariants (``num_update`` at least ``begin_num_update`` and every count); the others through
    the class's own constructor (a fresh instance is made from them and thrown away), so ``lr_scheduler = 5``
    or ``clip_gradient = "x"`` is refused at load, not at the next update."""
    for k, (want, ok) in _BOOKKEEPING.items():
        if k in attrs and not ok(attrs[k]):
            raise ValueError(
                f"set_states: the archive sets optimizer attribute {k!r} to {_kind(attrs[k])}; it must be {want}"
            )
    num = attrs.get("num_update", opt.num_update)
    begin = attrs.get("begin_num_update", opt.begin_num_update)
    if begin > num:
        raise ValueError(
            f"set_states: the archive's begin_num_update = {begin} is past its num_update = {num} (num_update "
            "starts at begin_num_update and only grows): refused"
        )
    counts = attrs.get("_all_index_update_counts", opt._all_index_update_counts)
    for dev, table in counts.items():
        for idx, c in table.items():
            if c > num:
                raise ValueError(
                    f"set_states: the archive's update count of index {idx!r} (device {dev}) is {c}, past its "
                    f"num_update = {num} (num_update is at least every index's count): refused"
                )
    sig = inspect.signature(type(opt))
    kw: dict[str, Any] = {}
    for p, a in _CTOR_OF.items():
        if p in sig.parameters:
            kw[p] = attrs.get(a, getattr(opt, a))
    for p in getattr(opt, "_own", ()):
        if p in sig.parameters:
            kw[p] = attrs.get(p, getattr(opt, p))
    if attrs.get("lr_scheduler", opt.lr_scheduler) is not None:
        kw["learning_rate"] = None  # the scheduler gives the rate (its own attributes are checked apart)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            type(opt)(**kw)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ValueError(
            f"set_states: the archive's optimizer attributes do not fit {type(opt).__name__}: {exc}"
        ) from None


def _check_rule_states(opt: Optimizer, states: dict) -> None:
    """Each state fits the optimizer's rule: its state entries, or ``(master, entries)`` (multi-precision)."""
    rule = getattr(opt, "_rule", None)
    if rule is None:
        return
    fields = rule.fields

    def entries(t: Any) -> bool:
        return (
            isinstance(t, tuple)
            and len(t) == len(fields)
            and all(x is None or isinstance(x, (jax.Array, np.ndarray)) for x in t)
        )

    for idx, st in states.items():
        master_pair = isinstance(st, tuple) and len(st) == 2 and isinstance(st[0], (jax.Array, np.ndarray))
        if entries(st) or (master_pair and entries(st[1])):
            continue
        raise ValueError(
            f"set_states: the state of index {idx!r} does not fit {type(opt).__name__}: expected a tuple of its "
            f"{len(fields)} state entries {fields} (or (float32 master, entries) with multi_precision); was it "
            "saved from another optimizer?"
        )


def dump(states: dict, optimizer: Optimizer | None = None) -> bytes:
    """The zip archive of ``states`` (and of ``optimizer``'s attributes when given).

    ``manifest.json`` (tagged JSON: the states dict, and the optimizer's class name and attributes — counts,
    ``num_update``, ``lr``, multipliers, ``idx2name``, the scheduler's attributes, SGLD's key ...) plus one raw
    little-endian ``arrays/<n>.bin`` member per array (dtype and shape in the manifest). ``param_dict`` is left
    out, as MXNet does. No pickle is used.
    """
    codec = _Codec()
    try:
        enc_states = codec.enc(states)
    except _Unencodable as exc:
        raise TypeError(
            f"Updater.get_states: the states hold a value of type {exc} that the safe state format cannot "
            "store (supported: None, bool, int, float, str, arrays, and tuples/lists/dicts of them)"
        ) from None
    manifest = {"format": _FORMAT, "version": _VERSION, "states": enc_states, "optimizer": None}
    if optimizer is not None:
        manifest["optimizer"] = {
            "class": type(optimizer).__name__,
            "attrs": _optimizer_attrs(optimizer, codec),
        }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_MANIFEST, json.dumps(manifest))
        for name, data in codec.arrays.items():
            zf.writestr(name, data)
    return buf.getvalue()


def load(states: bytes, optimizer: Optimizer, max_bytes: int | None = None) -> dict:
    """The states dict of an archive written by :func:`dump`; optimizer attributes are restored into
    ``optimizer`` (which must be of the archived class) when the archive carries them, after every one is
    checked (nothing changes when one does not fit). ``max_bytes``: the most memory reading the archive may
    take (default ``max(64 MiB, 32 x its size)``). Anything that is not such an archive, or that passes the
    budget, raises ``ValueError`` starting ``set_states:``."""
    if not isinstance(states, (bytes, bytearray, memoryview)):
        raise TypeError(f"set_states expects bytes, got {type(states).__name__}")
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
    ):
        raise ValueError(f"set_states: max_bytes must be a positive int or None, got {max_bytes!r}")
    data = bytes(states)
    if data[:1] == b"\x80":
        raise ValueError(
            "set_states: these bytes look like a Python pickle (MXNet's Updater format), which set_states "
            "never unpickles (loading a pickle can execute code). To resume an MXNet .states file use "
            "mxopt_jax.mxnet_format.load_updater(path_or_bytes), which reads it with a whitelist "
            "unpickler and returns an Updater; set_states reads only mxopt_jax's Updater.get_states format."
        )
    budget = _Budget(len(data), max_bytes)
    if max_bytes is not None and len(data) > max_bytes:
        budget.charge(len(data), f"the archive's {len(data)} bytes")
    manifest, arrays = _read_archive(data, budget)
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise ValueError("set_states: not an mxopt_jax Updater state archive (wrong format tag)")
    if manifest.get("version") != _VERSION:
        raise ValueError(f"set_states: unsupported state format version {manifest.get('version')!r}")
    codec = _Codec(arrays, budget)
    if "states" not in manifest:
        raise ValueError("set_states: malformed state archive: the manifest has no 'states' entry")
    new_states = _decode(codec, manifest["states"], "states")
    if not isinstance(new_states, dict):
        raise ValueError("set_states: the archive's states are not a dict")
    opt_entry = manifest.get("optimizer")
    if opt_entry is not None:
        opt = optimizer
        if not isinstance(opt_entry, dict) or not isinstance(opt_entry.get("attrs"), dict):
            raise ValueError(
                "set_states: malformed state archive: 'optimizer' must be an object with 'class' and 'attrs'"
            )
        if opt_entry.get("class") != type(opt).__name__:
            raise ValueError(
                f"set_states: the archive holds a {opt_entry.get('class')} optimizer but this Updater's "
                f"optimizer is a {type(opt).__name__}"
            )
    _check_rule_states(optimizer, new_states)
    if opt_entry is not None:
        attrs = {k: _decode(codec, v, f"optimizer attribute {k!r}") for k, v in opt_entry["attrs"].items()}
        unknown = sorted(set(attrs) - (set(vars(opt)) - _SKIP_ATTRS))
        if unknown:
            raise ValueError(f"set_states: the archive sets unknown optimizer attributes {unknown}")
        for k, v in attrs.items():
            if not isinstance(v, _PendingScheduler):
                _check_attr(opt, k, v)
        _check_against_class(opt, attrs)
        if "lr_scheduler" in attrs:
            attrs["lr_scheduler"] = _scheduler(
                attrs["lr_scheduler"], attrs.get("num_update", opt.num_update), attrs.get("lr", opt.lr)
            )
        if attrs.get("lr_scheduler", opt.lr_scheduler) is None and "lr" in attrs and attrs["lr"] is None:
            attrs["lr"] = 0.01  # as the constructor reads learning_rate=None without a scheduler
        for k, v in attrs.items():
            setattr(opt, k, v)
        counts = opt._all_index_update_counts
        opt._index_update_count = counts.setdefault(opt._current_device, {})
    return new_states


def _read_archive(data: bytes, budget: _Budget) -> tuple[Any, dict[str, bytes]]:
    """``(the manifest, {array member name: its bytes})``: every member's declared size counted before it is
    decompressed, the manifest's nesting checked before it is parsed and its objects counted."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
        budget.charge(MEMBER_COST * len(infos), f"the archive's directory ({len(infos)} members)")
        by_name = {i.filename: i for i in infos}
        if _MANIFEST not in by_name:
            raise KeyError(f"There is no item named {_MANIFEST!r} in the archive")
        raw = _member(zf, by_name[_MANIFEST], budget)
        text = raw.decode("utf-8")
        del raw
        budget.charge(JSON_COST * len(text), f"the manifest's JSON ({len(text)} characters)")
        _check_depth(text)
        manifest = json.loads(text)
        arrays = {n: _member(zf, i, budget) for n, i in by_name.items() if n.startswith("arrays/")}
    except ValueError as exc:
        if str(exc).startswith("set_states:"):
            raise
        raise ValueError(
            f"set_states: not an mxopt_jax Updater state archive (zip with {_MANIFEST}): {exc}"
        ) from None
    except _ZIP_ERRORS as exc:
        raise ValueError(
            f"set_states: not an mxopt_jax Updater state archive (zip with {_MANIFEST}): "
            f"{type(exc).__name__}: {exc}"
        ) from None
    return manifest, arrays


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: _Budget) -> bytes:
    """A member's bytes, its declared size counted first (``zipfile`` stops at the declared size)."""
    budget.charge(
        info.file_size + 64, f"member {info.filename[:60]!r}, decompressed ({info.file_size} bytes declared)"
    )
    with zf.open(info) as f:
        out = f.read(info.file_size + 1)
    if len(out) != info.file_size:
        raise ValueError(
            f"member {info.filename[:60]!r} holds {len(out)} bytes, its header says {info.file_size}"
        )
    return out


_BRACKETS = bytes(range(256)).translate(None, b"[]{}")  # every byte but the brackets


def _check_depth(text: str) -> None:
    """Refuse a manifest nested deeper than :data:`MAX_JSON_DEPTH` before it is parsed (``json`` recurses):
    the brackets outside strings are counted, a megabyte at a time."""

    depth = 0
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', "", text).encode("utf-8", "replace").translate(None, _BRACKETS)
    for start in range(0, len(stripped), 1 << 20):
        step = np.frombuffer(stripped, np.uint8, count=min(1 << 20, len(stripped) - start), offset=start)
        delta = np.where((step == ord("[")) | (step == ord("{")), 1, -1).astype(np.int64)
        levels = np.cumsum(delta) + depth
        if levels.size and int(levels.max()) > MAX_JSON_DEPTH:
            raise ValueError(
                f"set_states: refused: the manifest nests arrays and objects deeper than {MAX_JSON_DEPTH}"
            )
        depth = int(levels[-1]) if levels.size else depth
