"""The facade's safe state format: a zip of a JSON manifest and raw arrays (no pickle, ever).

``Updater.get_states`` writes it and ``Updater.set_states`` reads it back through a whitelist of value kinds
(numbers, strings, containers, NumPy/JAX arrays, the :mod:`mxopt_jax.lr_scheduler` classes). Foreign formats,
MXNet's pickled ``.states`` files included, are refused with a ``ValueError``.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
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


class _Unencodable(Exception):
    pass


class _Codec:
    """Tagged JSON encoding of states / optimizer attributes; arrays go to separate raw-byte zip members."""

    def __init__(self, arrays: dict | None = None) -> None:
        self.arrays: dict[str, bytes] = {} if arrays is None else arrays

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
            if name not in lr_scheduler.__all__:
                raise ValueError(f"unknown scheduler class in state manifest: {name!r}")
            cls = getattr(lr_scheduler, name)
            obj = cls.__new__(cls)
            obj.__dict__.update(self.dec(x["attrs"]))
            return obj
        raise ValueError(f"malformed state manifest entry: {x!r}")


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
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise ValueError(f"set_states: malformed {what} in the state archive: {exc}") from None


def _check_attr(opt: Optimizer, name: str, value: Any) -> None:
    """A restored attribute has the kind of value the optimizer holds (numbers stay numbers, ...)."""
    old = getattr(opt, name)
    if old is None or value is None or isinstance(old, (jax.Array, np.ndarray)):
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


def load(states: bytes, optimizer: Optimizer) -> dict:
    """The states dict of an archive written by :func:`dump`; optimizer attributes are restored into
    ``optimizer`` (which must be of the archived class) when the archive carries them."""
    if not isinstance(states, (bytes, bytearray, memoryview)):
        raise TypeError(f"set_states expects bytes, got {type(states).__name__}")
    data = bytes(states)
    if data[:1] == b"\x80":
        raise ValueError(
            "set_states: these bytes look like a Python pickle (MXNet's Updater format), which set_states "
            "never unpickles (loading a pickle can execute code). To resume an MXNet .states file use "
            "mxopt_jax.mxnet_format.load_updater(path_or_bytes), which reads it with a whitelist "
            "unpickler and returns an Updater; set_states reads only mxopt_jax's Updater.get_states format."
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        manifest = json.loads(zf.read(_MANIFEST))
        arrays = {n: zf.read(n) for n in zf.namelist() if n.startswith("arrays/")}
    except (zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(
            f"set_states: not an mxopt_jax Updater state archive (zip with {_MANIFEST}): {exc}"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != _FORMAT:
        raise ValueError("set_states: not an mxopt_jax Updater state archive (wrong format tag)")
    if manifest.get("version") != _VERSION:
        raise ValueError(f"set_states: unsupported state format version {manifest.get('version')!r}")
    codec = _Codec(arrays)
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
        unknown = sorted(set(attrs) - set(vars(opt)))
        if unknown:
            raise ValueError(f"set_states: the archive sets unknown optimizer attributes {unknown}")
        for k, v in attrs.items():
            _check_attr(opt, k, v)
        for k, v in attrs.items():
            setattr(opt, k, v)
        counts = opt._all_index_update_counts
        opt._index_update_count = counts.setdefault(opt._current_device, {})
    return new_states
