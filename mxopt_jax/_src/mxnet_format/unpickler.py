"""MXNet's ``.states`` files read by mxopt_jax's own pickle interpreter (:mod:`.opcodes`) under the allow-list
(:mod:`.allowlist`), then finished by one walk bounded in depth, which replaces the reader's holders by their
values and counts arrays, lists, dicts and objects at every reference against the file's budget (so a value
shared a million times is counted a million times).
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np

from .allowlist import (
    _ALLOWED_ONLY,
    MXNetObject,
    _ArrayHolder,
    _DtypeHolder,
    _label,
    _NDArrayHolder,
    _Policy,
    is_optimizer,
    is_scheduler,
    is_unknown,
)
from .arrays import _LIST_MAGIC, _NPY_MAGIC
from .files import source
from .limits import MAX_DEPTH, Budget, check_max_bytes
from .opcodes import Global, Refused, read_pickle


def read_states(
    path_or_bytes: str | os.PathLike | bytes, *, max_bytes: int | None = None
) -> tuple[dict, MXNetObject | None]:
    """Safely read an MXNet ``.states`` pickle into plain data, without MXNet.

    Returns ``(states, optimizer)``: ``states`` maps each index to its MXNet state with every NDArray as a
    NumPy array (``None``, an array or nested tuples, in MXNet's own layout); ``optimizer`` is an
    :class:`MXNetObject` holding the pickled optimizer's attributes (its scheduler, if any, another
    :class:`MXNetObject`), or ``None`` for a ``dump_optimizer=False`` file. Used by :func:`load_updater`;
    useful to inspect a file.

    The pickle is read by mxopt_jax's own interpreter of the opcode stream, never by ``pickle``: nothing
    named in the file is looked up or called, only the allowed constructors with the exact arguments MXNet's
    and NumPy's pickles use make objects, and the reading stays within a memory budget (see ``max_bytes``),
    a nesting depth of 64 and dictionary keys that are strings, numbers or short flat tuples.

    Args:
      path_or_bytes: the ``.states`` file or its bytes.
      max_bytes: the most memory reading the file may take (bytes); default ``max(64 MiB, 32 x the file's
        size)``. Arrays, lists, dicts and objects are counted at every reference to them.

    Raises:
      ValueError: the bytes are not such a pickle, or they use anything outside the allow-list: the message
        names the file, the byte offset or the path inside it, and what was refused (a global outside the
        list as ``refused to unpickle module.name``; nothing named in the file is ever called).

    Examples:
      >>> from mxopt_jax.mxnet_format import read_states
      >>> states, opt = read_states("tests/golden/mxnet_ckpt/mx20_adam.states")
      >>> opt.mx_class, opt.beta1, opt.num_update
      ('Adam', 0.9, 3)
      >>> [a.shape for a in states[0]]   # MXNet's Adam state: (mean, var)
      [(3,), (3,)]
    """
    cap = check_max_bytes(max_bytes)
    data, where = source(path_or_bytes, "states", cap)
    return _read_states(data, where, cap)


def _read_states(
    data: bytes, where: str, max_bytes: int | None = None, budget: Budget | None = None
) -> tuple[dict, MXNetObject | None]:
    """``read_states`` of bytes, counted against ``budget`` (default: a fresh one of the file's); a resume
    passes its own, so that reading the file and building its states share one budget."""
    if data.startswith((struct.pack("<Q", _LIST_MAGIC), _NPY_MAGIC, b"PK")) or not data:
        raise ValueError(f"{where}: not an MXNet .states file (this is a parameter file or empty)")
    if budget is None:
        budget = Budget(where, len(data), max_bytes)
    try:
        root = read_pickle(data, _Policy(budget), budget)
        states, opt = _finish(root, budget)
    except Refused as exc:
        raise ValueError(_message(where, exc)) from None
    if not isinstance(states, dict):
        raise ValueError(f"{where}: the pickle does not hold an Updater's states dict")
    if is_scheduler(opt):
        raise ValueError(f"{where}: the pickled object is a scheduler, not an optimizer")
    return states, opt


def _message(where: str, exc: Refused) -> str:
    at = "" if exc.pos is None else f" at byte {exc.pos}"
    if exc.name is not None:
        return f"{where}: refused to unpickle {exc.name} ({exc.what}{at}): {_ALLOWED_ONLY}"
    if exc.malformed:
        return f"{where}: not a readable MXNet .states pickle: {exc.what} ({at.strip()})"
    return f"{where}: {exc.what}" + (f" ({at.strip()})" if at else "")


def _finish(root: Any, budget: Budget) -> tuple[Any, MXNetObject | None]:
    """``(states, optimizer)`` with every holder replaced by its value, walked once (depth <= 64), counting
    arrays, lists, dicts and objects at every reference against the budget; a class outside the allow-list
    only as the optimizer or its ``lr_scheduler``, no bare global anywhere."""
    pair = type(root) is tuple and len(root) == 2 and isinstance(root[1], MXNetObject)
    opt = root[1] if pair else None
    allowed = set()
    if is_unknown(opt) or is_optimizer(opt):
        allowed.add(id(opt))
        if is_unknown(vars(opt).get("lr_scheduler")):
            allowed.add(id(vars(opt)["lr_scheduler"]))
    walk = _Walk(allowed, budget)
    if pair:
        states, cost = walk.value(root[0], 1, ("states",))
        _, opt_cost = walk.value(opt, 1, ("optimizer",))
        cost += opt_cost
    else:
        states, cost = walk.value(root, 1, ("states",))
    if cost > budget.cap:
        budget.check(cost, "the data, counting every reference to a shared array, list, dict or object")
    return states, opt


_PLAIN = (type(None), bool, int, float, str, bytes, bytearray, np.generic)


#: What the walk keeps for each container or object it finishes, counted before it is kept (bytes): its memo
#: entry (the dict slot, the id, a 3-tuple, the size) and the list of its items' results (CPython 64-bit,
#: measured at about 155 bytes).
WALK_COST = 192


class _Walk:
    def __init__(self, allowed: set[int], budget: Budget) -> None:
        self.allowed = allowed
        self.budget = budget
        self.memo: dict[int, tuple[Any, Any, int]] = {}

    def value(self, x: Any, depth: int, path: tuple) -> tuple[Any, int]:
        """``(the finished value, its size counted at every reference)``."""
        if isinstance(x, _PLAIN):
            return x, 0
        hit = self.memo.get(id(x))
        if hit is not None:
            return hit[1], hit[2]
        if depth > MAX_DEPTH:
            raise Refused(f"refused nesting too deep (or a reference cycle) at {_path(path)}", None)
        n = len(x) if isinstance(x, (tuple, list, dict)) else 0
        self.budget.charge(WALK_COST + 16 * n, "finishing the data (each container and object)", _path(path))
        out, cost = self._finish(x, depth, path)
        self.memo[id(x)] = (x, out, cost)  # keeps x alive so its id is not reused during the walk
        return out, cost

    def _finish(self, x: Any, depth: int, path: tuple) -> tuple[Any, int]:
        t = type(x)
        if t is tuple:
            done = [self.value(v, depth + 1, (path, i)) for i, v in enumerate(x)]
            out = tuple(v for v, _ in done)
            return (x if all(a is b for a, b in zip(out, x, strict=True)) else out), sum(c for _, c in done)
        if t is list:
            cost = 56 + 16 * len(x)
            for i, v in enumerate(x):
                x[i], c = self.value(v, depth + 1, (path, i))
                cost += c
            return x, cost
        if t is dict:
            cost = 64 + 64 * len(x)
            for k, v in x.items():
                x[k], c = self.value(v, depth + 1, (path, k))
                cost += c
            return x, cost
        if t in (set, frozenset):
            return x, 216 + 64 * len(x)
        if isinstance(x, MXNetObject):
            if is_unknown(x) and id(x) not in self.allowed:
                raise Refused(
                    f"an object of a class outside the allow-list at {_path(path)}; a class of your own is "
                    "accepted only as the optimizer or its lr_scheduler, to be substituted: see load_updater",
                    None,
                    name=f"{x.mx_module}.{x.mx_class}",
                )
            attrs = vars(x)
            cost = 256 + 64 * len(attrs)
            for k, v in attrs.items():
                attrs[k], c = self.value(v, depth + 1, (path, "." + k))
                cost += c
            return x, cost
        if t is _NDArrayHolder or t is _ArrayHolder:
            if (t is _NDArrayHolder and not x.built) or (t is _ArrayHolder and x.array is None):
                raise Refused(f"refused a {_label(x)} without its data at {_path(path)}", None)
            return x.array, 0 if x.array is None else x.array.nbytes + 112
        if t is _DtypeHolder:
            return x.dtype, 0
        if t is Global:
            raise Refused(f"a bare reference to a global at {_path(path)}", -1, name=x.qualname)
        raise Refused(f"refused a {t.__name__} at {_path(path)}", None)


def _path(path: tuple) -> str:
    """``("states", 3, 1)`` as nested pairs -> ``states[3][1]``; attribute steps as ``.name``."""
    parts = []
    while len(path) == 2:
        path, step = path
        parts.append(step if isinstance(step, str) and step.startswith(".") else f"[{repr(step)[:40]}]")
    parts.append(path[0])
    return "".join(reversed(parts))
