"""The bytes a reader reads: given as bytes, or read from a path that must name a regular file.

A path is checked before it is opened (``os.stat``: a FIFO would block ``open`` forever, a link to
``/dev/zero`` or ``/dev/urandom`` would read until memory runs out, a directory or a socket is no file), opened
without blocking and checked again on the open descriptor (so a path swapped for a FIFO or a device in between
is refused too), and read up to its size; a file that turns out longer than its size (a pseudo-file, or one
growing while it is read) is read on only within the budget it would have. Every read is capped: a file larger
than ``max_bytes`` is refused from its size, before a byte is read. Files of the kernel's pseudo-filesystems
(anything under ``/proc`` or ``/sys``, and any mount of the types in :data:`PSEUDO_TYPES`, such as cgroup files
under ``/sys/fs/cgroup``: ``/proc/self/mem`` is a regular file by its mode, whose size says nothing) are refused
as not regular before they are opened, and a read that fails (``EIO``) or cannot be held in memory is a
``ValueError`` naming the file.
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


_PSEUDO = ("/proc", "/sys")
#: The kernel's pseudo-filesystems: files whose size says nothing of their content, which read the kernel's
#: state (or change it), never a checkpoint.
PSEUDO_TYPES = frozenset(
    {"proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "bpf", "configfs", "pstore",
     "efivarfs", "fusectl", "binfmt_misc", "mqueue", "devpts", "selinuxfs", "smackfs", "hugetlbfs", "nsfs",
     "rpc_pipefs", "autofs"}
)  # fmt: skip


def _root_devices() -> frozenset[int]:
    """The devices of ``/proc`` and ``/sys`` themselves."""
    out = set()
    for root in _PSEUDO:
        try:
            out.add(os.stat(root).st_dev)
        except OSError:
            pass
    return frozenset(out)


#: The devices of /proc and /sys, found once when the module is imported.
_ROOT_DEVICES = _root_devices()


def _pseudo_devices() -> frozenset[int]:
    """The devices of the kernel's pseudo-filesystems mounted here, read from this process's mount table
    (``/proc/self/mountinfo``: a cgroup, debugfs or tracefs mount under ``/sys`` is a device of its own, and
    one may be mounted elsewhere), and of ``/proc`` and ``/sys`` themselves. The table is read at every call:
    mounts come and go."""
    out = set(_ROOT_DEVICES)
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                head, sep, tail = line.partition(" - ")
                fields, fstype = head.split(), tail.split()[:1]
                if sep and len(fields) > 2 and fstype and fstype[0] in PSEUDO_TYPES:
                    major, _, minor = fields[2].partition(":")
                    if major.isdecimal() and minor.isdecimal():
                        out.add(os.makedev(int(major), int(minor)))
    except OSError:
        pass
    return frozenset(out)


def _in_pseudo_tree(path: str) -> bool:
    """Whether ``path`` (links followed) lies under ``/proc`` or ``/sys``, whatever is mounted there."""
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + "/") for root in _PSEUDO)


def _pseudo(where: str) -> ValueError:
    return ValueError(
        f"{where}: refused: the path is a file of the kernel's pseudo-filesystems (/proc, /sys, cgroup, "
        "debugfs, ...), not a regular file (its size says nothing of its content; /proc/self/mem reads the "
        "process's own memory); nothing was read"
    )


def source(path_or_bytes: Any, what: str, max_bytes: int | None = None) -> tuple[bytes, str]:
    """``(the bytes, how messages name them)`` of a path or of bytes given directly.

    A path must name a regular file (links are followed) outside the kernel's pseudo-filesystems (``/proc``,
    ``/sys``, cgroup, ...): anything else is refused with a ``ValueError`` naming the path, before it is
    opened. At most ``max_bytes`` bytes are read
    (default: the default budget of the file's size, :func:`~.limits.default_budget`); a file whose size is
    already past ``max_bytes``, or that cannot be held in memory, is refused with a ``ValueError``; bytes given
    directly longer than ``max_bytes`` likewise."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        n = memoryview(path_or_bytes).nbytes
        if max_bytes is not None and n > max_bytes:
            raise _too_big(f"<{what} bytes>", n, max_bytes)
        return bytes(path_or_bytes), f"<{what} bytes>"
    if not isinstance(path_or_bytes, (str, os.PathLike)):
        raise TypeError(f"expected a file path or bytes, got {type(path_or_bytes).__name__}")
    where = os.fspath(path_or_bytes)
    where = where if isinstance(where, str) else os.fsdecode(where)
    st = os.stat(path_or_bytes)
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(where, st.st_mode)
    pseudo = _pseudo_devices()
    if st.st_dev in pseudo or _in_pseudo_tree(where):
        raise _pseudo(where)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path_or_bytes, flags)
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise _not_regular(where, st.st_mode)
        if st.st_dev in pseudo:
            raise _pseudo(where)
        size = st.st_size
        limit = default_budget(size) if max_bytes is None else max_bytes
        if size > limit:
            raise _too_big(where, size, limit)
        if size > _physical_memory():
            raise ValueError(
                f"{where}: refused: the file holds {size} bytes, more than this machine's memory "
                f"({_physical_memory()} bytes); nothing was read"
            )
        try:
            return _read(f, size, limit, where), where
        except MemoryError:
            raise ValueError(
                f"{where}: refused: the file's {size} bytes cannot be held in this process's memory"
            ) from None
        except OSError as exc:
            raise ValueError(f"{where}: the file cannot be read ({exc.strerror or exc})") from None


def _physical_memory() -> int:
    """The machine's physical memory (bytes), or 2**62 where the system does not tell."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 2**62


def _too_big(where: str, size: int, limit: int) -> ValueError:
    return ValueError(
        f"{where}: refused: the file holds {size} bytes, past the reader's memory budget of {limit} bytes "
        "(max_bytes); nothing was read. Pass a larger max_bytes to read a file you trust"
    )


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
