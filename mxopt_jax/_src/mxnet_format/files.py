"""The bytes a reader reads: given as bytes, or read from a path that must name a regular file.

A path is checked before it is opened (``os.stat``: a FIFO would block ``open`` forever, a link to
``/dev/zero`` or ``/dev/urandom`` would read until memory runs out, a directory or a socket is no file), opened
without blocking and checked again on the open descriptor (so a path swapped for a FIFO or a device in between
is refused too), and read up to its size; a file that turns out longer than its size (a pseudo-file, or one
growing while it is read) is read on only within the budget it would have.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from .limits import default_budget

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
)
_CHUNK = 1 << 20


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _not_regular(where: str, mode: int) -> ValueError:
    return ValueError(
        f"{where}: refused: the path is {_kind(mode)}, not a regular file (only regular files are read; a FIFO "
        "or a device such as /dev/zero would block or never end)"
    )


def source(path_or_bytes: Any, what: str, max_bytes: int | None = None) -> tuple[bytes, str]:
    """``(the bytes, how messages name them)`` of a path or of bytes given directly.

    A path must name a regular file (links are followed): anything else is refused with a ``ValueError``
    naming the path, before it is opened. At most ``max(the file's size, max_bytes or the default budget of
    that size)`` bytes are read."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), f"<{what} bytes>"
    if not isinstance(path_or_bytes, (str, os.PathLike)):
        raise TypeError(f"expected a file path or bytes, got {type(path_or_bytes).__name__}")
    where = os.fspath(path_or_bytes)
    where = where if isinstance(where, str) else os.fsdecode(where)
    mode = os.stat(path_or_bytes).st_mode
    if not stat.S_ISREG(mode):
        raise _not_regular(where, mode)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path_or_bytes, flags)
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise _not_regular(where, st.st_mode)
        size = st.st_size
        limit = max(size, default_budget(size) if max_bytes is None else max_bytes)
        return _read(f, size, limit, where), where


def _read(f: Any, size: int, limit: int, where: str) -> bytes:
    """The file's ``size`` bytes, then whatever follows them (a pseudo-file's content, a file growing), up to
    ``limit`` bytes in all."""
    data = f.read(size) if size else b""
    while len(data) < size:  # a short read (over 2 GiB at once, or interrupted)
        more = f.read(size - len(data))
        if not more:
            return data  # the file shrank while it was read: what is there
        data += more
    extra = f.read(min(_CHUNK, limit + 1 - len(data)))
    if not extra:
        return data
    chunks, total = [data, extra], len(data) + len(extra)
    while total <= limit:
        more = f.read(min(_CHUNK, limit + 1 - total))
        if not more:
            return b"".join(chunks)
        chunks.append(more)
        total += len(more)
    raise ValueError(
        f"{where}: refused: the file holds more than {limit} bytes, past the reader's memory budget (it grew "
        f"while it was read, or it is a pseudo-file whose size says {size} bytes); pass a larger max_bytes to "
        "read a file you trust"
    )
