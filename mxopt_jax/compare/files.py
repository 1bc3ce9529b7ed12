"""The app's rules for the file system: an output folder is probed before anything runs (:func:`output_dir`),
every file is written whole or not at all and never through a link (:func:`atomic_file`), a file is read only
when it is a regular file (:func:`read_regular`); and the command that continues a study's folder
(:func:`resume_command`)."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_file",
    "output_dir",
    "program_command",
    "read_regular",
    "resume_command",
]


def atomic_file(
    path: str | os.PathLike[str],
    mode: str = "w",
    newline: str | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> contextlib.AbstractContextManager[IO[Any]]:
    """A file to write ``path`` through, whole or not at all, and never through a link: the one way the app
    writes a file.

    What is written goes to a temporary file in the same folder, created exclusively (``O_CREAT | O_EXCL |
    O_NOFOLLOW``, a random name ``.NAME.<random>.tmp``: a file or link planted under any name is never opened,
    and a name taken is drawn again), which replaces ``path`` (``os.replace``) once the block ends without an
    error and the data is on disk. ``path`` itself is replaced, never written through: a link planted at
    ``path`` is replaced by the file, not followed. When anything fails (a full disk, ``OSError: [Errno 28]``;
    Ctrl-C) the temporary file is removed and the error raised: ``path`` is as it was (absent, or its previous
    whole version), never truncated. The file gets the usual permissions (the umask's).

    ``root``: the folder the user named (a link to a folder is taken as the user's choice); the folders between
    it and ``path`` (``programs/``) are made when missing and must be real folders: one that is a link (or a
    file) is refused with an ``OSError`` naming it, so a planted link cannot redirect the write. Without
    ``root``, ``path``'s folder is the one the user named. Every operation is relative to the opened folder
    (``dir_fd``), so a folder swapped for a link while the file is written changes nothing.

    ``mode``: ``"w"`` (UTF-8 text; ``newline`` as for ``open``, ``""`` for CSV) or ``"wb"``."""
    return _atomic_file(Path(path), mode, newline, None if root is None else Path(root))


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


#: Whether this platform takes folder descriptors (Linux, macOS); elsewhere paths are used, links checked first.
_DIR_FD = {os.open, os.mkdir, os.unlink, os.stat} <= os.supports_dir_fd and bool(_O_DIRECTORY)


def _not_a_folder(path: Path, link: bool) -> OSError:
    what = "is a link" if link else "is not a folder"
    return OSError(
        errno.ENOTDIR,
        f"{path.name!r} {what}; the app writes only into real folders of its own, never through a link (remove "
        "it, or give another folder)",
        str(path),
    )


def _open_folder(folder: Path, root: Path | None) -> int | None:
    """A descriptor of ``folder`` (None where the platform has no folder descriptors): the folder the user named
    as it is; below ``root``, every folder on the way made when missing and opened without following a link."""
    if not _DIR_FD:
        below = [] if root is None else list(folder.relative_to(root).parts)
        at = root if root is not None else folder
        for part in below:
            at = at / part
            if at.is_symlink() or (at.exists() and not at.is_dir()):
                raise _not_a_folder(at, at.is_symlink())
            at.mkdir(exist_ok=True)
        return None
    parts = [] if root is None else list(folder.relative_to(root).parts)
    fd = os.open(root if root is not None else folder, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        at = root if root is not None else folder
        for part in parts:
            at = at / part
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            try:
                sub = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
            except (NotADirectoryError, OSError) as e:
                if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                link = stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode)
                raise _not_a_folder(at, link) from None
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def _exclusive(name: str, folder: Path, dir_fd: int | None) -> tuple[int, str]:
    """A new file ``.NAME.<random>.tmp`` in the folder, created exclusively (never an existing file or link)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_BINARY", 0)
    for _ in range(64):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            if dir_fd is None:
                return os.open(folder / tmp, flags, 0o666), tmp
            return os.open(tmp, flags, 0o666, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", str(folder / f".{name}.*.tmp"))


@contextlib.contextmanager
def _atomic_file(path: Path, mode: str, newline: str | None, root: Path | None) -> Iterator[IO[Any]]:
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    dir_fd = _open_folder(path.parent, root)
    tmp: str | None = None
    try:
        fd, tmp = _exclusive(path.name, path.parent, dir_fd)
        f: IO[Any] = (
            os.fdopen(fd, "w", encoding="utf-8", newline=newline) if mode == "w" else os.fdopen(fd, "wb")
        )
        with f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if dir_fd is None:
            os.replace(path.parent / tmp, path)
        else:
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(path.parent / tmp) if dir_fd is None else os.unlink(tmp, dir_fd=dir_fd)
        if isinstance(e, OSError) and e.filename in (None, tmp, str(path.parent / (tmp or ""))):
            e.filename = str(path)  # the file the user knows (a failed write names none)
        raise
    finally:
        if dir_fd is not None:
            os.close(dir_fd)


def read_regular(path: str | os.PathLike[str], follow: bool = True) -> bytes:
    """The bytes of ``path``, a regular file (a folder, a device such as ``/dev/zero``, a FIFO or a socket is
    refused with a ``ValueError`` naming it, before anything is read, so a planted one cannot hang or exhaust
    the reader). ``follow=False``: a link is refused too (a file the app wrote itself is never one)."""
    flags = os.O_RDONLY | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if not follow and e.errno == errno.ELOOP:
            raise ValueError(f"{os.fspath(path)} is a link; a study's own files are never links") from None
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{os.fspath(path)} is not a regular file; refused unread")
        return f.read()


def output_dir(
    path: str | os.PathLike[str], what: str = "out", create: bool = False, exists: bool = False
) -> Path:
    """An output folder that can be written, checked without leaving anything behind: refused, with the reason,
    when it names a file, lies under a file, or cannot be written (a read-only place, ``/proc``, no
    permission); with ``exists``, a missing folder is refused too. The folder (a missing one made for the
    probe) is probed with a file written and removed; what the probe made is removed again unless ``create``
    (the study makes the folder when it writes its first file)."""
    if isinstance(path, bool) or not isinstance(path, str | os.PathLike):
        raise TypeError(f"{what} must be a folder path, got {path!r}")
    p = Path(path).expanduser()
    if not str(path).strip():
        raise ValueError(f"{what} must be a folder path, got an empty string")
    if exists and not p.exists():
        raise ValueError(f"{what}: {str(path)!r} does not exist")
    if p.exists() and not p.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is a file, not a folder; give a folder for the outputs")
    missing = [q for q in (p.absolute(), *p.absolute().parents) if not q.exists()]
    above = p.absolute().parents[len(missing) - 1] if missing else p.absolute()
    if not above.is_dir():
        raise ValueError(f"{what}: {str(path)!r} lies under {str(above)!r}, which is a file")
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".mxopt_probe_", dir=p)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise ValueError(
            f"{what}: cannot write into {str(path)!r} ({reason}); give a writable folder"
        ) from None
    finally:
        if not create:
            for q in missing:  # the deepest first: what the probe made, and nothing else
                with contextlib.suppress(OSError):
                    q.rmdir()
    return p


def program_command() -> str:
    """This program as a shell command that runs as printed, for the commands the app tells a user to type
    (``... compare --resume DIR``): ``mxopt-jax`` when that name on the ``PATH`` is this very program; the
    script's own path when it was started as ``mxopt-jax`` from elsewhere (``.venv/bin/mxopt-jax``, the
    README's set-up, which puts nothing on the ``PATH``); otherwise (``python -m mxopt_jax``, a notebook, a
    script) this interpreter's path with ``-m mxopt_jax``."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "mxopt-jax" and os.path.isfile(argv0):
        found = shutil.which("mxopt-jax")
        if found and os.path.realpath(found) == os.path.realpath(argv0):
            return "mxopt-jax"
        return shlex.quote(os.path.abspath(argv0))
    return f"{shlex.quote(sys.executable or 'python3')} -m mxopt_jax"


def resume_command(folder: str | os.PathLike[str]) -> str:
    """The command that continues the study kept in ``folder``, as it runs when pasted into a shell."""
    return f"{program_command()} compare --resume {shlex.quote(str(folder))}"
