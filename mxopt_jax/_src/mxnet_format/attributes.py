"""The pickled optimizer's and scheduler's attributes, checked before anything is built from them.

A ``.states`` file can hold any plain data under any attribute name: what the resume reads is checked here by
type (and integers by range), so a file that does not fit is refused with a ``ValueError`` naming the file and
the attribute, never a ``TypeError`` from deep inside.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..schedulers import kind_of
from .allowlist import MXNetObject

_COUNT_MAX = 2**62
#: The largest update count a file may hold: mxopt_jax counts updates in int32, and the next update must fit.
UPDATE_COUNT_MAX = 2**31 - 2


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating))


def _is_finite(v: Any) -> bool:
    return _is_num(v) and not isinstance(v, bool) and abs(v) < 2**1023 and math.isfinite(v)


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and -_COUNT_MAX < int(v) < _COUNT_MAX


def _is_update_count(v: Any) -> bool:
    return _is_count(v) and 0 <= int(v) <= UPDATE_COUNT_MAX


def _is_flag(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_, int, np.integer))


def _counts(v: Any) -> bool:
    return type(v) is dict and all(_is_update_count(c) for c in v.values())


def _mults(v: Any) -> bool:
    return v is None or (type(v) is dict and all(_is_finite(m) for m in v.values()))


_COUNT = f"an integer update count in [0, {UPDATE_COUNT_MAX}] (mxopt_jax counts updates in int32)"


# what the resume reads of a pickled optimizer: attribute -> (what it must be, the check)
_OPTIMIZER: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "lr": ("a number or None", lambda v: v is None or _is_num(v)),
    "wd": ("a number", _is_num),
    "rescale_grad": (
        "a number or a one-element array",
        lambda v: _is_num(v) or (isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "fiu"),
    ),
    "clip_gradient": ("a number or None", lambda v: v is None or _is_num(v)),
    "begin_num_update": (_COUNT, _is_update_count),
    "num_update": (_COUNT, _is_update_count),
    "aggregate_num": ("an integer or None", lambda v: v is None or _is_count(v)),
    "multi_precision": ("a bool", _is_flag),
    "use_fused_step": ("a bool", _is_flag),
    "centered": ("a bool", _is_flag),
    "momentum_correction": ("a bool", _is_flag),
    "momentum": ("a number", _is_num),
    "lamda": ("a number", _is_num),
    "m_schedule": ("a number in [0, 1]", lambda v: _is_finite(v) and 0 <= v <= 1),
    "init_updates": ("an integer within 2**62", _is_count),
    "updates_per_epoch": ("an integer within 2**62", _is_count),
    "idx2name": (
        "a dict of parameter names or None",
        lambda v: v is None or (type(v) is dict and all(type(n) is str for n in v.values())),
    ),
    "lr_mult": ("a dict of finite numbers or None", _mults),
    "wd_mult": ("a dict of finite numbers or None", _mults),
    "_index_update_count": (f"a dict of update counts, each {_COUNT}", _counts),
    "_all_index_update_counts": (
        f"a dict of dicts of update counts, each {_COUNT}",
        lambda v: type(v) is dict and all(_counts(c) for c in v.values()),
    ),
    "cumgrads": (
        "a dict of dicts or None",
        lambda v: v is None or (type(v) is dict and all(type(r) is dict for r in v.values())),
    ),
    "lr_scheduler": (
        "an MXNet learning-rate scheduler or None",
        lambda v: v is None or isinstance(v, MXNetObject),
    ),
}


def check_optimizer(o: MXNetObject, where: str) -> None:
    """Refuse a pickled optimizer whose attributes the resume reads are not of the kind MXNet writes, or
    that no MXNet run could have written together (:func:`check_counts`, duplicate ``idx2name`` values)."""
    a = vars(o)
    for name, (want, ok) in _OPTIMIZER.items():
        if name in a and not ok(a[name]):
            raise ValueError(
                f"{where}: the optimizer's attribute {name!r} must be {want}, got {kind_of(a[name])}: refused"
            )
    names = list((a.get("idx2name") or {}).values())
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})[:8]
        raise ValueError(
            f"{where}: the optimizer's attribute 'idx2name' names {twice} for more than one index: a parameter "
            "name that matches two indices cannot pair a state with its parameter: refused"
        )
    check_counts(a, where)


def check_counts(a: dict, where: str) -> None:
    """MXNet's counting invariants: ``num_update`` starts at ``begin_num_update`` and each update sets it to
    ``max(num_update, the index's count)``, so it is at least ``begin_num_update`` and every index's count on
    every device. A file that breaks them is refused (the scheduler's position is checked against the same
    ``num_update``)."""
    if "num_update" not in a:
        return
    num = int(a["num_update"])
    begin = a.get("begin_num_update")
    if begin is not None and int(begin) > num:
        raise ValueError(
            f"{where}: the optimizer's attribute 'begin_num_update' = {int(begin)} is past its num_update = "
            f"{num} (MXNet starts num_update at begin_num_update and only raises it): refused"
        )
    tables = [a.get("_index_update_count") or {}]
    tables += list((a.get("_all_index_update_counts") or {}).values())
    for table in tables:
        for idx, c in table.items():
            if int(c) > num:
                raise ValueError(
                    f"{where}: the update count of index {idx!r} is {int(c)}, past the optimizer's num_update = "
                    f"{num} (MXNet keeps num_update at least every index's count): refused"
                )


#: The largest magnitude a float32 holds: MXNet's kernels take every hyperparameter as a float32, in which a
#: larger value is infinite (the first step's weights non-finite).
FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_float32(name: str, v: Any, where: str) -> None:
    """Refuse a number read from the file that float32 cannot hold (``name``: the attribute, for the message);
    anything else (``None``, a bool, an array) passes."""
    if not _is_num(v) or isinstance(v, (bool, np.bool_)) or abs(v) <= FLOAT32_MAX:
        return
    raise ValueError(
        f"{where}: the optimizer's attribute {name} = {kind_of(v)} is past float32's largest value "
        f"({FLOAT32_MAX:.4g}): MXNet's kernels take it as a float32, in which it is infinite, and an update "
        "made with it is non-finite (or not the one meant): refused"
    )


@contextlib.contextmanager
def file_errors(where: str) -> Iterator[None]:
    """Inside: an error raised on the file's data becomes a ``ValueError`` naming the file (the documented
    error), whatever its type."""
    try:
        yield
    except ValueError as exc:
        if str(exc).startswith(where):
            raise
        raise ValueError(f"{where}: {exc}") from None
    except (TypeError, KeyError, AttributeError, IndexError, ArithmeticError) as exc:
        raise ValueError(f"{where}: the file's data does not fit ({type(exc).__name__}: {exc})") from None


def summary(o: MXNetObject, limit: int = 12) -> str:
    """A short listing of a pickled object's plain attributes (for messages)."""
    out = []
    for k, v in vars(o).items():
        if isinstance(v, (int, float, bool)) or v is None:
            out.append(f"{k}={v!r}")
        elif isinstance(v, str):
            out.append(f"{k}={v[:40]!r}")
        elif isinstance(v, MXNetObject):
            out.append(f"{k}=<{v.mx_module}.{v.mx_class}>")
    return ", ".join(out[:limit]) + (", ..." if len(out) > limit else "")
