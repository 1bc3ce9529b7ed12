"""MXNet's array files: the binary NDArray-list format (``mx.nd.save``, MXNet 1.x ``save_parameters``) and
MXNet 2.0's ``.npy`` / ``.npz`` files, read into NumPy with every size checked before anything is allocated.
"""

from __future__ import annotations

import io
import math
import os
import re
import struct
import zipfile
from typing import Any

import numpy as np

from ..validation import warn
from .files import source
from .limits import Budget, check_max_bytes, shape_refusal

_LIST_MAGIC = 0x112  # kMXAPINDArrayListMagic
_V1_MAGIC = 0xF993FAC8
_V2_MAGIC = 0xF993FAC9
_V3_MAGIC = 0xF993FACA  # MXNet 2.0 numpy-shape semantics (0-d arrays allowed)
_MAX_NDIM = 32
_STYPES = {0: "default", 1: "row_sparse", 2: "csr"}
#: What each array read is counted at besides its data (bytes): the NumPy array object and its shape, its
#: slots in the lists and dicts the reading builds, allocation rounding. Measured with ``tracemalloc`` on files
#: of 50,000 one-element float32 arrays named by 12 bytes: 372 bytes allocated per array and name in an NDArray
#: list (counted at 592), 884 per member of an ``.npz`` (counted at 1,138); about 500 resident per array and
#: name in an NDArray list.
RECORD_COST = 512
#: What each parameter name is counted at besides its UTF-8 bytes: the ``str`` and its slots (bytes).
NAME_COST = 64
#: What each member of an ``.npz`` archive is counted at besides its name (twice: ``zipfile`` keeps it in its
#: directory entry) and its data: the directory entry (bytes).
MEMBER_COST = 512
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
        import jax.numpy as jnp  # JAX's bfloat16 (ml_dtypes' type, which NumPy reads and writes)

        return np.dtype(jnp.bfloat16)
    return np.dtype(name).newbyteorder("<")


class _Reader:
    """Bounds-checked little-endian reader over a bytes buffer; every error names ``where``."""

    def __init__(self, data: bytes | bytearray, where: str) -> None:
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


def _read_ndarray(r: _Reader, label: str, budget: Budget) -> np.ndarray:
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
    refusal = shape_refusal(shape, dtype.itemsize)
    if refusal is not None:
        raise r.fail(f"corrupted header: {label} declares {refusal}")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > r.left:  # checked before anything is allocated
        raise r.fail(
            f"truncated file or corrupted header: {label} declares shape {shape} {dtype.name} "
            f"({nbytes} bytes) but only {r.left} bytes are left"
        )
    budget.charge(nbytes + RECORD_COST, f"{label} ({nbytes} bytes)", f"at byte {r.pos}")
    raw = r.take(nbytes, label)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def load_params(path: str | os.PathLike | bytes, *, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    """Read an MXNet ``.params`` / ``nd.save`` file into a dict of NumPy arrays.

    Reads the binary NDArray-list format of ``mx.nd.save``, ``gluon.Block.save_parameters`` and
    ``Module.save_checkpoint`` (MXNet 1.x; ``mx.nd.save`` in 2.0 too), with float16/32/64, bfloat16 (as
    ``ml_dtypes.bfloat16``), bool and (u)int8/16/32/64 arrays, and MXNet 2.0's NumPy-format files:
    ``mx.npx.save`` (one ``.npy`` array) and ``mx.npx.savez`` / Gluon 2.0 ``save_parameters`` (an ``.npz``
    archive of ``.npy`` members, stored or deflated; bool, (u)int8-64 and float16/32/64 arrays). MXNet
    is not needed, and nothing in the file is executed: every size and offset is checked against the file
    before anything is allocated. Arrays come back in the machine's byte order (a big-endian ``.npy``, which
    MXNet itself refuses, is converted, values unchanged); ``.npz`` member names are read as MXNet reads them,
    as UTF-8 with or without the zip UTF-8 flag.

    Args:
      path: the file (a regular file: a FIFO, a device, a directory is refused), or its content as bytes.
      max_bytes: the most memory reading the file may take (bytes), each array counted at its data plus
        :data:`RECORD_COST` and each name at its length plus :data:`NAME_COST`; default ``max(64 MiB, 32 x the file's size)``. An ``.npz`` archive whose members decompress past it is
        refused: raise it for a file you trust that compresses very well.

    Returns:
      ``{name: array}`` with the names exactly as MXNet stored them (``'0.weight'`` for Gluon's
      ``save_parameters``, ``'arg:fc1_weight'`` / ``'aux:bn_moving_mean'`` for ``Module`` checkpoints, …),
      in file order. A file saved from an unnamed list (``mx.nd.save(f, [a, b])``) gives the keys ``'0'``,
      ``'1'``, … (list order); a ``.npy`` file (``npx.save``) the single key ``'0'``; an ``.npz`` archive its
      member names without ``.npy`` (``'arr_0'``, … for ``npx.savez(f, a, b)``). As MXNet's own ``load``, a
      repeated name keeps the last array (the others are dropped; a ``UserWarning`` names them).

    Raises:
      ValueError: naming the file, the offset or member and the problem: a path that is not a regular file,
        wrong magic (not an MXNet NDArray file), truncated file, declared sizes larger than the file (checked
        before any allocation), shapes spanning more than 2**62 bytes (empty ones too), ``row_sparse`` /
        ``csr`` storage, unknown dtype flags, structured / object / void dtypes, compression other than stored
        or deflate, member names that are not UTF-8, more memory than ``max_bytes``, trailing garbage.

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
    cap = check_max_bytes(max_bytes)
    data, where = source(path, "params", cap)
    return _read_params(data, where, Budget(where, len(data), cap))


def _read_params(data: bytes, where: str, budget: Budget) -> dict[str, np.ndarray]:
    if data.startswith(_NPY_MAGIC):
        r = _Reader(data, where)
        arr = _read_npy(r, "the .npy array", budget)
        if r.left:
            raise r.fail(f"{r.left} unexpected trailing bytes after the .npy array")
        return {"0": arr}
    if data.startswith(b"PK"):
        return _read_npz(data, where, budget)
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
    arrays = [_read_ndarray(r, f"array {k}", budget) for k in range(n)]
    n_names = r.unpack("Q", "name count")
    if n_names not in (0, n):
        raise r.fail(f"corrupted file: {n} arrays but {n_names} names")
    names = []
    for k in range(n_names):
        length = r.unpack("Q", f"length of name {k}")
        if length > r.left:
            raise r.fail(f"truncated file or corrupted header: name {k} declares {length} bytes")
        budget.charge(length + NAME_COST, f"name {k}", f"at byte {r.pos}")
        try:
            names.append(bytes(r.take(length, f"name {k}")).decode("utf-8"))
        except UnicodeDecodeError:
            raise r.fail(f"name {k} is not UTF-8") from None
    if r.left:
        raise r.fail(f"{r.left} unexpected trailing bytes after the last name")
    if not names:
        budget.charge(n * (NAME_COST + len(str(n))), f"the names of {n} unnamed arrays")
        names = [str(k) for k in range(n)]
    return _by_name(names, arrays, where)


def _by_name(names: list[str], arrays: list[np.ndarray], where: str) -> dict[str, np.ndarray]:
    """``{name: array}`` in file order. A name held twice keeps its last array, as MXNet's ``nd.load`` /
    ``npx.load`` build their dict (and ``load_parameters`` reads it): the others are dropped, with a
    ``UserWarning`` naming them (MXNet's own writers never repeat a name)."""
    out = dict(zip(names, arrays, strict=True))
    if len(out) < len(names):
        seen: dict[str, list[int]] = {}
        for k, n in enumerate(names):
            seen.setdefault(n, []).append(k)
        twice = {n: at for n, at in seen.items() if len(at) > 1}
        shown = ", ".join(f"{n[:80]!r} (arrays {at[:4]})" for n, at in list(twice.items())[:4])
        warn(
            f"load_params: {where} holds {len(twice)} name(s) more than once: {shown}; as MXNet's nd.load, the "
            "last array of each name is kept and the others are dropped",
            UserWarning,
        )
    return out


_NPY_MAGIC = b"\x93NUMPY"
_NPY_HEADER_MAX = 10_000  # NumPy's own default bound on a .npy header (numpy.lib.format)
# The plain numeric dtypes of MXNet's NumPy-format files: no structured, object, void, string or date types.
_NPY_DESCR = re.compile(r"(?:[<>=]?(?:[iu][248]|f[248])|[<>=|]?(?:b1|i1|u1))")  # fullmatch only
_NPY_ITEM = r"'(descr|fortran_order|shape)':\s*('[^']{0,16}'|True|False|\((?:\s*\d{1,20}L?\s*,)*\s*(?:\d{1,20}L?)?\s*\))"
_NPY_HEADER = re.compile(rf"\{{\s*(?:{_NPY_ITEM}\s*,\s*){{2}}{_NPY_ITEM}\s*,?\s*\}}\s*")


def _npy_header(r: _Reader, hlen: int, label: str) -> tuple[np.dtype, bool, tuple[int, ...]]:
    """The ``.npy`` header, a dict ``{'descr': ..., 'fortran_order': ..., 'shape': ...}``, matched by a fixed
    pattern (nothing is evaluated): a plain numeric dtype, a bool, a tuple of at most 32 sizes."""
    text = bytes(r.take(hlen, f"{label}: header")).decode("latin1")
    items = dict(re.findall(_NPY_ITEM, text)) if _NPY_HEADER.fullmatch(text) else {}
    descr, fortran, shape = items.get("descr", ""), items.get("fortran_order"), items.get("shape", "")
    if len(items) != 3 or descr[:1] != "'" or fortran not in ("True", "False") or shape[:1] != "(":
        raise r.fail(f"{label}: malformed .npy header")
    if not _NPY_DESCR.fullmatch(descr[1:-1]):
        raise r.fail(
            f"{label}: refused dtype {descr}: only plain numeric arrays (bool, int, uint, float) are read; "
            "object arrays are refused (they need pickle), and so are complex, structured, void, string and "
            "date dtypes"
        )
    dims = tuple(int(d.strip().rstrip("L")) for d in shape[1:-1].split(",") if d.strip())
    if len(dims) > _MAX_NDIM:
        raise r.fail(f"{label}: malformed .npy header ({len(dims)} dimensions)")
    return np.dtype(descr[1:-1]), fortran == "True", dims


def _read_npy(r: _Reader, label: str, budget: Budget) -> np.ndarray:
    """One ``.npy`` record (MXNet 2.0's ``npx.save`` / ``npx.savez`` members): header checked, no pickle."""
    if bytes(r.take(6, f"{label}: magic")) != _NPY_MAGIC:
        raise r.fail(f"{label}: wrong magic (not a .npy array)")
    major, _minor = r.unpack("BB", f"{label}: version")
    if major == 1:
        hlen = r.unpack("H", f"{label}: header length")
    elif major in (2, 3):
        hlen = r.unpack("I", f"{label}: header length")
    else:
        raise r.fail(f"{label}: unsupported .npy version {major}")
    if hlen > _NPY_HEADER_MAX:
        raise r.fail(f"{label}: corrupted .npy header length {hlen}")
    dtype, fortran, shape = _npy_header(r, hlen, label)
    refusal = shape_refusal(shape, dtype.itemsize)
    if refusal is not None:
        raise r.fail(f"corrupted header: {label} declares {refusal}")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > r.left:
        raise r.fail(
            f"truncated file or corrupted header: {label} declares shape {shape} {dtype} ({nbytes} bytes) "
            f"but at most {r.left} bytes can follow"
        )
    budget.charge(nbytes + RECORD_COST, f"{label} ({nbytes} bytes)", f"at byte {r.pos}")
    raw = r.take(nbytes, label)
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape[::-1] if fortran else shape)
    # one copy, in C order and in the machine's byte order (NumPy on a big-endian machine writes '>f4'; MXNet
    # itself refuses to load it, mxopt_jax converts it, values unchanged)
    return (arr.T if fortran else arr).astype(dtype.newbyteorder("="), order="C")


_CHUNK = 1 << 18
_ZLIB = 1 << 16  # zlib's window and state (bytes)
_UTF8_FLAG = 0x800  # zip's general-purpose bit 11: the name is UTF-8


def _member_name(info: zipfile.ZipInfo, where: str) -> str:
    """A member's name as MXNet reads it: its raw bytes as UTF-8, whatever the zip flags say (MXNet 2.0 and
    NumPy write UTF-8 with the flag; ``zipfile`` alone would decode a name without it as cp437)."""
    raw = info.orig_filename.encode("utf-8" if info.flag_bits & _UTF8_FLAG else "cp437")
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"{where}: refused the member name {raw[:200]!r}: not UTF-8 (MXNet reads member names as UTF-8, "
            "and NumPy would read this one as cp437: which parameter it names is ambiguous)"
        ) from None
    if "\0" in name:
        raise ValueError(f"{where}: refused the member name {raw[:200]!r}: it holds a NUL byte")
    return name


def _read_npz(data: bytes, where: str, budget: Budget) -> dict[str, np.ndarray]:
    """An ``.npz`` archive (MXNet 2.0's ``npx.savez`` / Gluon 2.0 ``save_parameters``) of ``.npy`` members,
    each stored or deflated, decompressed against the budget."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile's parser: any failure is a corrupted archive
        raise ValueError(
            f"{where}: truncated or corrupted .npz archive ({type(exc).__name__}: {exc})"
        ) from None
    budget.charge(
        sum(MEMBER_COST + 2 * len(i.orig_filename) for i in infos),
        f"the archive's directory ({len(infos)} members)",
    )
    deflated = [info.file_size for info in infos if info.compress_type == zipfile.ZIP_DEFLATED]
    if deflated:  # what decompressing takes besides the members' bytes: two chunks and zlib, once
        budget.charge(2 * min(_CHUNK, max(deflated) + 1) + _ZLIB, "decompressing the archive")
    names, arrays = [], []
    for info in infos:
        name = _member_name(info, where)
        label = f"member {name[:200]!r}"
        if not name.endswith(".npy"):
            raise ValueError(f"{where}: unexpected {label} in an MXNet .npz parameter file")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma"}.get(
                info.compress_type, f"method {info.compress_type}"
            )
            raise ValueError(
                f"{where}: {label} is compressed with {method}: refused (an MXNet .npz member is stored or "
                "deflated)"
            )
        if info.flag_bits & 0x1:
            raise ValueError(f"{where}: {label} is encrypted: refused")
        if info.compress_size > len(data):
            raise ValueError(f"{where}: truncated .npz archive: {label} is cut off")
        raw = _member_bytes(zf, info, where, label, budget)
        r = _Reader(raw, where)
        arr = _read_npy(r, label, budget)
        if r.left:
            raise r.fail(f"{r.left} unexpected trailing bytes")
        names.append(name[: -len(".npy")])
        arrays.append(arr)
    return _by_name(names, arrays, where)


def _corrupted(where: str, label: str, exc: BaseException) -> ValueError:
    return ValueError(f"{where}: truncated or corrupted {label} ({type(exc).__name__}: {exc})")


def _member_bytes(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, label: str, budget: Budget
) -> bytearray:
    """A member's bytes: its declared size counted (and refused past the budget) before anything is
    decompressed, then decompressed chunk by chunk into a buffer of exactly that size, which never grows
    (``zipfile`` stops at the declared size and checks the CRC)."""
    size = info.file_size
    budget.charge(size, f"{label}, decompressed", f"{size} bytes declared")
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    try:
        f = zf.open(info)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile's parser: any failure is a corrupted member
        raise _corrupted(where, label, exc) from None
    with f, view:
        while True:
            try:
                chunk = f.read(min(_CHUNK, size - got + 1))
            except MemoryError:
                raise
            except Exception as exc:  # noqa: BLE001 - zipfile / zlib: any failure is a corrupted member
                raise _corrupted(where, label, exc) from None
            if not chunk:
                break
            if len(chunk) > size - got:
                raise ValueError(
                    f"{where}: corrupted {label}: it decompresses past its declared {size} bytes"
                )
            view[got : got + len(chunk)] = chunk
            got += len(chunk)
    if got != size:
        raise ValueError(f"{where}: truncated {label}: {got} of its declared {size} bytes")
    return buf


def _ndarray_from_raw(raw: bytes, where: str, budget: Budget) -> np.ndarray:
    """An NDArray pickled by MXNet: its ``handle`` is ``MXNDArraySaveRawBytes`` = one NDArray record."""
    r = _Reader(raw, where)
    arr = _read_ndarray(r, "pickled NDArray", budget)
    if r.left:
        raise r.fail(f"{r.left} unexpected trailing bytes in a pickled NDArray")
    return arr
