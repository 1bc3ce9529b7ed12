"""A small writer of pickle opcode streams, for hand-made (hostile) ``.states`` files in the tests.

``dumps(obj)`` writes protocol-2 opcodes for plain data (None, bools, ints, floats, str, bytes, bytearray,
tuples, lists, dicts), :class:`Obj` (an object of a named class with its attribute dict, as Python pickles an
MXNet optimizer: ``GLOBAL``, ``NEWOBJ``, ``BUILD``), NumPy arrays as MXNet NDArrays (the raw ``NDArray::Save``
record, as MXNet pickles them) and :class:`Raw` (opcodes inserted as they are). Nothing here unpickles.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

_FLAGS = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5, "int64": 6, "bool": 7}


class Raw(bytes):
    """Opcodes written as they are (each must leave exactly one object on the stack)."""


class Obj:
    """An object of the class ``module.name`` with the attributes ``attrs`` (``GLOBAL``, ``NEWOBJ``, ``BUILD``)."""

    def __init__(self, module: str, name: str, attrs: dict | None = None, **kw: Any) -> None:
        self.module, self.name, self.attrs = module, name, {**(attrs or {}), **kw}


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def string(s: str) -> bytes:
    raw = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(raw)) + raw


def integer(i: int) -> bytes:
    if 0 <= i < 256:
        return b"K" + bytes([i])
    if -(2**31) <= i < 2**31:
        return b"J" + struct.pack("<i", i)
    raw = i.to_bytes((i.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def ndarray_record(a: np.ndarray) -> bytes:
    """``NDArray::Save`` of a dense array (V2 magic), as an MXNet pickle's ``handle``."""
    a = np.ascontiguousarray(a)
    head = struct.pack("<Iii", 0xF993FAC9, 0, a.ndim) + struct.pack(f"<{a.ndim}q", *a.shape)
    return (
        head + struct.pack("<iii", 1, 0, _FLAGS[a.dtype.name]) + a.astype(a.dtype.newbyteorder("<")).tobytes()
    )


def dumps(obj: Any) -> bytes:
    return b"\x80\x02" + _body(obj) + b"."


def _body(x: Any) -> bytes:
    if isinstance(x, Raw):
        return bytes(x)
    if x is None:
        return b"N"
    if x is True or x is False:
        return b"\x88" if x else b"\x89"
    if isinstance(x, int):
        return integer(x)
    if isinstance(x, float):
        return b"G" + struct.pack(">d", x)
    if isinstance(x, str):
        return string(x)
    if isinstance(x, bytes):
        return b"C" + bytes([len(x)]) + x if len(x) < 256 else b"B" + struct.pack("<I", len(x)) + x
    if isinstance(x, bytearray):
        return glob("builtins", "bytearray") + _body(bytes(x)) + b"\x85R"
    if isinstance(x, tuple):
        return b"(" + b"".join(_body(v) for v in x) + b"t"
    if isinstance(x, list):
        return b"]" + (b"(" + b"".join(_body(v) for v in x) + b"e" if x else b"")
    if isinstance(x, dict):
        items = b"".join(_body(k) + _body(v) for k, v in x.items())
        return b"}" + (b"(" + items + b"u" if x else b"")
    if isinstance(x, Obj):
        return glob(x.module, x.name) + b")\x81" + _body(x.attrs) + b"b"
    if isinstance(x, np.ndarray):
        state = {"handle": bytearray(ndarray_record(x))}
        return glob("mxnet.ndarray.ndarray", "NDArray") + b"N\x85R" + _body(state) + b"b"
    raise TypeError(f"cannot write a {type(x).__name__}")


def from_states(states: dict, opt: Any) -> tuple[dict, Any]:
    """``read_states``'s result as data for :func:`dumps` (optimizer and scheduler as :class:`Obj`)."""

    def conv(v: Any) -> Any:
        if hasattr(v, "mx_class"):
            return Obj(v.mx_module, v.mx_class, {k: conv(a) for k, a in vars(v).items()})
        if isinstance(v, dict):
            return {k: conv(a) for k, a in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(conv(a) for a in v)
        return v

    return conv(states), conv(opt)
