"""Checks of arguments at the app's boundary (the command line and the API): one place for each rule, so
that ``mxopt-jax compare`` and :func:`mxopt_jax.compare.study` refuse the same things with the same words; and
the app's rule for the terminal: a name is printable text where it is made (:func:`printable`), and what the
command line prints is escaped (:func:`terminal`); JAX's host devices set up before JAX starts
(:func:`expect_host_devices`, :func:`check_host_devices`).

Each rule is a function raising ``ValueError`` or ``TypeError`` that names the argument and its allowed range;
:func:`argparse_type` turns one into an ``argparse`` type (its message becomes argparse's error). The files the
app writes and reads follow :mod:`mxopt_jax.compare.files`.
"""

from __future__ import annotations

import argparse
import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .. import ALIASES
from .._src.validation import close_names, either

__all__ = [
    "NameTable",
    "argparse_type",
    "canonical_name",
    "check_host_devices",
    "close_match",
    "close_matches",
    "cpu_devices",
    "devices_count",
    "did_you_mean",
    "expect_host_devices",
    "extend_count",
    "finite_number",
    "names_arg",
    "non_negative_int_arg",
    "positive_int_arg",
    "printable",
    "problem_object",
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
