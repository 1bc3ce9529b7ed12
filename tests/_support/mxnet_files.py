"""Hand-made MXNet parameter files for the hostile-file tests: NDArray-list records, ``.npy`` arrays and ``.npz``
archives written byte by byte (any shape, dtype, byte order or member name, flags included), and the NumPy
pieces of a pickle (``numpy.dtype``, ``_reconstruct``, scalars) as opcodes. Nothing here reads a file.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np
from pickle_bytes import dumps, glob, integer, string

_LIST_MAGIC = 0x112


def ndarray_record(
    shape: tuple, flag: int = 0, data: bytes = b"", stype: int = 0, magic: int = 0xF993FAC9
) -> bytes:
    """One ``NDArray::Save`` record (V2 magic by default) of any declared shape, dtype flag and data."""
    out = (
        struct.pack("<Ii", magic, stype)
        + struct.pack("<i", len(shape))
        + struct.pack(f"<{len(shape)}q", *shape)
    )
    return out + struct.pack("<iii", 1, 0, flag) + data


def list_file(records: list[bytes], names: tuple | list = ()) -> bytes:
    """An ``mx.nd.save`` file of ``records``, named or not."""
    out = (
        struct.pack("<QQQ", _LIST_MAGIC, 0, len(records)) + b"".join(records) + struct.pack("<Q", len(names))
    )
    for n in names:
        raw = n.encode()
        out += struct.pack("<Q", len(raw)) + raw
    return out


def npy(shape: tuple, descr: str = "<f4", fill: bytes | None = None, data: bytes | None = None) -> bytes:
    """A ``.npy`` array of any declared ``shape`` and ``descr``: ``data`` as given, else ``fill`` repeated to the
    declared size (zeros by default)."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (63 - len(header) % 64) + b"\n"
    if data is None:
        n = int(np.prod(shape)) * np.dtype(descr.strip()).itemsize
        data = (fill or b"\0") * n
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def npz(members: dict[str, bytes] | dict[bytes, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    """An ``.npz`` archive written by ``zipfile`` (names UTF-8, with the flag when they are not ASCII)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, raw in members.items():
            zf.writestr(name if isinstance(name, str) else name.decode("latin1"), raw)
    return buf.getvalue()


def raw_npz(members: list[tuple[bytes, bytes]], flags: int = 0) -> bytes:
    """A stored ``.npz`` archive whose member names are the raw bytes given, with the general-purpose ``flags``
    given (0x800: the name is UTF-8), as another zip writer could have written it."""
    out, central = b"", b""
    for name, data in members:
        crc = zlib.crc32(data)
        head = struct.pack("<HHHHHIIIHH", 20, flags, 0, 0, 0, crc, len(data), len(data), len(name), 0)
        central += (
            b"PK\x01\x02" + struct.pack("<H", 20) + head + struct.pack("<HHHII", 0, 0, 0, 0, len(out)) + name
        )
        out += b"PK\x03\x04" + head + name + data
    end = struct.pack("<HHHHIIH", 0, 0, len(members), len(members), len(central), len(out), 0)
    return out + central + b"PK\x05\x06" + end


# --------------------------------------------------------------------------- NumPy objects as pickle opcodes
def np_dtype(name: str, state: bytes | None = None) -> bytes:
    """``numpy.dtype(name, False, True)`` then BUILD ``state`` (opcodes; NumPy's plain state by default)."""
    state = dumps((3, "<", None, None, None, -1, -1, 0))[2:-1] if state is None else state
    return glob("numpy", "dtype") + string(name) + b"\x89\x88\x87R" + state + b"b"


def np_scalar_f8(v: float) -> bytes:
    data = struct.pack("<d", v)
    return glob("numpy._core.multiarray", "scalar") + np_dtype("f8") + b"C\x08" + data + b"\x86R"


def np_array(dtype: bytes, shape: tuple, raw: bytes) -> bytes:
    """``_reconstruct(ndarray, (0,), b'b')`` then BUILD ``(1, shape, dtype, False, raw)``, as NumPy pickles."""
    make = glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + b"K\x00\x85C\x01b\x87R"
    state = b"(" + integer(1) + dumps(shape)[2:-1] + dtype + b"\x89" + dumps(raw)[2:-1] + b"tb"
    return make + state
