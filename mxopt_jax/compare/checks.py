"""Checks of arguments at the app's boundary (the command line and the API): one place for each rule, so
that ``mxopt-jax compare`` and :func:`mxopt_jax.compare.study` refuse the same things with the same words;
the app's rules for the file system: an output folder is probed before anything runs (:func:`output_dir`),
every file is written whole or not at all and never through a link (:func:`atomic_file`), and a file is read
only when it is a regular file (:func:`read_regular`); and its rule for the terminal: a name is printable text
where it is made (:func:`printable`), and what the command line prints is escaped (:func:`terminal`).

Each rule is a function raising ``ValueError`` or ``TypeError`` that names the argument and its allowed range;
:func:`argparse_type` turns one into an ``argparse`` type (its message becomes argparse's error).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import numbers
import os
import secrets
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal, TypeVar, overload

from .. import ALIASES
from .._src.validation import close_names, either

__all__ = [
    "NameTable",
    "argparse_type",
    "atomic_file",
    "canonical_name",
    "close_match",
    "close_matches",
    "did_you_mean",
    "check_host_devices",
    "cpu_devices",
    "devices_count",
    "expect_host_devices",
    "extend_count",
    "finite_number",
    "names_arg",
    "non_negative_int_arg",
    "output_dir",
    "positive_int_arg",
    "printable",
    "problem_object",
    "read_regular",
    "program_command",
    "resume_command",
    "terminal",
    "unknown_name",
]

T = TypeVar("T")


def argparse_type(rule: Callable[[str], T]) -> Callable[[str], T]:
    """``rule`` as an argparse type: its ``ValueError``/``TypeError`` becomes argparse's clean error."""

    def parse(value: str) -> T:
        try:
            return rule(value)
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    parse.__name__ = getattr(rule, "__name__", "value")
    return parse


def _int(value: Any, what: str, low: int, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]`` (a str is parsed, as from the command line)."""
    allowed = f">= {low}" if high is None else f"between {low} and {high}"
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValueError(f"{what} must be an integer {allowed}, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer {allowed}, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        raise ValueError(f"{what} must be an integer {allowed}, got {value}")
    return value


def _count_arg(value: str, low: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value!r}") from None
    if n < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {n}")
    return n


def close_match(name: str, known: Sequence[str]) -> str | None:
    """The known name ``name`` is most likely a misspelling of (the first of :func:`close_matches`), or None."""
    found = close_matches(name, known)
    return found[0] if found else None


def close_matches(name: str, known: Sequence[str]) -> list[str]:
    """The known names ``name`` most likely meant, best first (the library's ranking, the one ``mxopt_jax.create``
    uses): the names it begins (``mnist`` -> the three ``mnist1d_*`` problems), else the nearest by edit
    distance, a swap of two neighbouring letters counting one (``adma`` -> ``adam``); empty when none is close."""
    return close_names(str(name), known)


def canonical_name(name: str, known: Sequence[str]) -> str:
    """``name``, or the registry name it spells another way (``group_adagrad`` -> ``groupadagrad``:
    ``mxopt_jax.ALIASES``) when that one is among ``known``."""
    alias = ALIASES.get(name)
    return alias if alias is not None and alias in known else name


def unknown_name(what: str, name: Any, known: Sequence[str], groups: Sequence[str] = ()) -> str:
    """The message for an unknown ``what`` (``"problem"``, ``"contender"``): the name, the close matches when
    there are any (:func:`close_matches`), and every known name (and group names such as ``'all'``)."""
    near = close_matches(name, [*known, *groups]) if isinstance(name, str) else []
    hint = f" (did you mean {either(near)}?)" if near else ""
    also = f", or {', '.join(map(repr, groups))}" if groups else ""
    return f"unknown {what} {name!r}{hint}; known: {', '.join(known)}{also}"


def did_you_mean(near: Mapping[str, str | Sequence[str] | None], show: Callable[[str], str] = str) -> str:
    """`` (did you mean X?)`` for one misspelt name with close matches (``near``: given -> a match, a list of
    them or None; several read ``X, Y or Z``); `` (did you mean X for A, Y for B?)`` for several misspelt
    names; ``""`` when none has one."""
    found = {g: [m] if isinstance(m, str) else list(m) for g, m in near.items() if m}
    if not found:
        return ""
    if len(near) == 1:
        return f" (did you mean {either(next(iter(found.values())), show)}?)"
    return f" (did you mean {', '.join(f'{either(m, show)} for {show(g)}' for g, m in found.items())}?)"


class NameTable(dict[str, T]):
    """A dict by name (such as :data:`mxopt_jax.compare.problems.PROBLEMS`) whose missing name is a
    ``KeyError`` that says what it is, suggests the close match and lists the names (:func:`unknown_name`)."""

    def __init__(self, what: str, entries: Mapping[str, T]) -> None:
        super().__init__(entries)
        self.what = what

    def __missing__(self, key: str) -> T:
        raise KeyError(unknown_name(self.what, key, list(self)))


def _shown(value: str, limit: int = 60) -> str:
    """``value``'s ``repr`` (escapes included), cut to about ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def printable(value: Any, what: str, lines: bool = False) -> str:
    """``value``, a str a terminal shows as it is: no control character (an escape sequence in a name could set
    the window's title, write the clipboard (OSC 52) or clear the screen of whoever prints it) nor any other
    character Python calls unprintable (``str.isprintable``: format characters such as bidirectional overrides,
    line and paragraph separators); with ``lines``, line breaks are allowed. Otherwise a ``TypeError`` or a
    ``ValueError`` naming ``what`` and the first such character (escaped)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    bad = next((c for c in value if not c.isprintable() and not (lines and c == "\n")), None)
    if bad is not None:
        raise ValueError(
            f"{what} must be printable text (no control characters such as terminal escapes), got "
            f"{_shown(value)}, which holds {bad!r}"
        )
    return value


def terminal(text: str) -> str:
    """``text`` as it may reach a terminal: every character :func:`printable` refuses (line breaks apart) is
    written as its Python escape (``\\x1b``), so nothing printed can act on the terminal. What the command line
    prints goes through it, whatever it comes from."""
    if text.replace("\n", "").isprintable():
        return text
    return "".join(
        c if c == "\n" or c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def names_arg(
    value: str, known: Sequence[str], what: str, groups: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """A comma-separated list of ``known`` names (lower case, duplicates dropped, in order) for the command
    line; a name of ``groups`` (``{"all": [...]}``) stands for its members, and an optimizer's other spelling
    (:func:`canonical_name`) for its name. Unknown or no names: an ``argparse`` error naming them, the close
    matches (:func:`close_matches`) and what is known."""
    groups = groups or {}
    names = [canonical_name(n.strip().lower(), known) for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known and n not in groups]
    if not names or unknown:
        also = f", or {', '.join(map(repr, groups))}" if groups else ""
        hint = did_you_mean({n: close_matches(n, [*known, *groups]) for n in unknown}, repr)
        raise argparse.ArgumentTypeError(
            f"unknown {what}(s) {', '.join(map(repr, unknown)) or '(none given)'}{hint}; known: "
            f"{', '.join(known)}{also}"
        )
    return list(dict.fromkeys(m for n in names for m in groups.get(n, [n])))


def positive_int_arg(value: str) -> int:
    """argparse type: an integer >= 1."""
    return _count_arg(value, 1)


def non_negative_int_arg(value: str) -> int:
    """argparse type: an integer >= 0."""
    return _count_arg(value, 0)


def extend_count(value: Any, what: str = "extend") -> int:
    """How many times a grid may be extended past its edge: an integer >= 0."""
    return _int(value, what, 0)


def cpu_devices() -> int:
    """The CPU cores this process may use (the most host devices worth sharding over)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def devices_count(value: Any, available: int, platform: str = "cpu", what: str = "devices") -> int:
    """A device count the platform offers: between 1 and ``available`` (on CPU: the cores; else the devices
    JAX sees)."""
    unit = "CPU cores of this machine" if platform == "cpu" else f"{platform} devices JAX sees"
    try:
        return _int(value, what, 1, available)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{e} (the {unit})") from None


def finite_number(value: Any, what: str, low: float = -math.inf, strict: bool = False) -> float:
    """``value`` as a finite float ``>= low`` (``> low`` with ``strict``)."""
    bound = "" if low == -math.inf else f" {'>' if strict else '>='} {low:g}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a finite number{bound}, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < low or (strict and v == low):
        raise ValueError(f"{what} must be a finite number{bound}, got {value!r}")
    return v


def problem_object(
    value: Any, problem_type: type, factories: Mapping[str, Callable[[], Any]], what: str = "problems"
) -> Any:
    """``value`` if it is a ``problem_type`` (:class:`~mxopt_jax.compare.problems.base.Problem`); a factory
    (such as ``PROBLEMS["logreg"]``, one of ``factories``) is refused with the call that makes the problem."""
    if isinstance(value, problem_type):
        return value
    if callable(value):
        name = next((k for k, f in factories.items() if f is value), None)
        call = f'PROBLEMS["{name}"]()' if name else f"{getattr(value, '__name__', 'factory')}()"
        raise TypeError(
            f"{what}: got the factory {getattr(value, '__name__', value)!r}, not a Problem; call it: {call}"
        )
    raise TypeError(
        f"{what} must be Problem objects or built-in problems' names (see mxopt_jax.compare.problems), got "
        f"{type(value).__name__}"
    )


@overload
def atomic_file(
    path: str | os.PathLike[str],
    mode: Literal["w"] = "w",
    newline: str | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def atomic_file(
    path: str | os.PathLike[str],
    mode: Literal["wb"],
    newline: None = None,
    *,
    root: str | os.PathLike[str] | None = None,
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
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


#: The CPU host devices :func:`mxopt_jax.compare.configure_jax` asked for (None: it was not called, or the
#: count came from the user's own XLA_FLAGS), and whether the caller named it.
_HOST_DEVICES: tuple[int, bool] | None = None


def expect_host_devices(n: int, requested: bool = True) -> None:
    """Record that ``n`` CPU host devices were asked for (checked by :func:`check_host_devices`)."""
    global _HOST_DEVICES
    _HOST_DEVICES = (int(n), bool(requested))


def check_host_devices() -> None:
    """Warn when the CPU host devices asked for (:func:`expect_host_devices`) did not take effect: JAX had
    started before (it reads ``XLA_FLAGS`` once). JAX offers no public way to tell whether its backend has
    started, so the count is compared once known. Starts JAX's backend: call it when the study starts."""
    global _HOST_DEVICES
    if _HOST_DEVICES is None:
        return
    n, requested = _HOST_DEVICES
    _HOST_DEVICES = None  # warn once
    import warnings

    import jax

    try:
        got = len(jax.devices("cpu"))
    except RuntimeError:  # no CPU backend (JAX_PLATFORMS excludes it): nothing to compare
        return
    if got != n:
        what = f"configure_jax(devices={n})" if requested else f"configure_jax() (one device per core: {n})"
        warnings.warn(
            f"{what} had no effect: JAX had already started, with {got} CPU device(s). Call configure_jax "
            "before anything uses JAX (first thing in the notebook or script), or start Python with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n}",
            RuntimeWarning,
            stacklevel=3,
        )
