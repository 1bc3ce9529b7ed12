"""The pickled optimizer's and scheduler's attributes, checked before anything is built from them.

A ``.states`` file can hold any plain data under any attribute name: what the resume reads is checked here by
type (and integers by range), so a file that does not fit is refused with a ``ValueError`` naming the file and
the attribute, never a ``TypeError`` from deep inside.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .. import schedulers
from .allowlist import MXNetObject, is_scheduler, is_unknown

_COUNT_MAX = 2**62


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating))


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and -_COUNT_MAX < int(v) < _COUNT_MAX


def _is_flag(v: Any) -> bool:
    return isinstance(v, (bool, np.bool_, int, np.integer))


def _counts(v: Any) -> bool:
    return type(v) is dict and all(_is_count(c) for c in v.values())


def _mults(v: Any) -> bool:
    return v is None or (type(v) is dict and all(_is_num(m) for m in v.values()))


# what the resume reads of a pickled optimizer: attribute -> (what it must be, the check)
_OPTIMIZER: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "lr": ("a number or None", lambda v: v is None or _is_num(v)),
    "wd": ("a number", _is_num),
    "rescale_grad": (
        "a number or a one-element array",
        lambda v: _is_num(v) or (isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "fiu"),
    ),
    "clip_gradient": ("a number or None", lambda v: v is None or _is_num(v)),
    "begin_num_update": ("an integer within 2**62", _is_count),
    "num_update": ("an integer within 2**62", _is_count),
    "aggregate_num": ("an integer or None", lambda v: v is None or _is_count(v)),
    "multi_precision": ("a bool", _is_flag),
    "use_fused_step": ("a bool", _is_flag),
    "centered": ("a bool", _is_flag),
    "momentum_correction": ("a bool", _is_flag),
    "momentum": ("a number", _is_num),
    "lamda": ("a number", _is_num),
    "m_schedule": ("a number", _is_num),
    "init_updates": ("an integer within 2**62", _is_count),
    "updates_per_epoch": ("an integer within 2**62", _is_count),
    "idx2name": ("a dict or None", lambda v: v is None or type(v) is dict),
    "lr_mult": ("a dict of numbers or None", _mults),
    "wd_mult": ("a dict of numbers or None", _mults),
    "_index_update_count": ("a dict of integer counts", _counts),
    "_all_index_update_counts": (
        "a dict of dicts of integer counts",
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


def _kind(v: Any) -> str:
    if isinstance(v, MXNetObject):
        return f"a {v.mx_module}.{v.mx_class} object"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} {v.dtype}"
    if isinstance(v, (int, float, bool, np.generic)) or v is None:
        return repr(v)[:40]
    return f"a {type(v).__name__}"


def check_optimizer(o: MXNetObject, where: str) -> None:
    """Refuse a pickled optimizer whose attributes the resume reads are not of the kind MXNet writes."""
    a = vars(o)
    for name, (want, ok) in _OPTIMIZER.items():
        if name in a and not ok(a[name]):
            raise ValueError(
                f"{where}: the optimizer's attribute {name!r} must be {want}, got {_kind(a[name])}: refused"
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


_SCHEDULER_NEEDS = {
    "FactorScheduler": ("step", "factor", "stop_factor_lr"),
    "MultiFactorScheduler": ("step", "factor"),
    "PolyScheduler": ("max_update", "power", "final_lr"),
    "CosineScheduler": ("max_update", "final_lr"),
}


def scheduler(obj: Any, where: str) -> Any:
    """The mxopt_jax scheduler of a pickled MXNet one, at its position (``None`` for none)."""
    lrs = schedulers
    if obj is None:
        return None
    if not is_scheduler(obj) or obj.mx_class not in _SCHEDULER_NEEDS:
        raise ValueError(f"{where}: unsupported learning-rate scheduler {obj!r}")
    a = dict(vars(obj))
    cls = obj.mx_class
    missing = [k for k in _SCHEDULER_NEEDS[cls] if k not in a]
    if missing:
        raise ValueError(f"{where}: the pickled {cls} has no {', '.join(missing)}: refused")
    base = a.get("base_lr_orig", a.get("warmup_final_lr", a.get("base_lr")))
    common = {
        "base_lr": base,
        "warmup_steps": a.get("warmup_steps", 0),
        "warmup_begin_lr": a.get("warmup_begin_lr", 0),
        "warmup_mode": a.get("warmup_mode", "linear"),
    }
    s: lrs.LRScheduler
    try:
        if cls == "FactorScheduler":
            s = lrs.FactorScheduler(
                step=a["step"], factor=a["factor"], stop_factor_lr=a["stop_factor_lr"], **common
            )
        elif cls == "MultiFactorScheduler":
            if type(a["step"]) not in (list, tuple):
                raise ValueError(f"step must be a list, got {_kind(a['step'])}")
            s = lrs.MultiFactorScheduler(step=list(a["step"]), factor=a["factor"], **common)
        elif cls == "PolyScheduler":
            s = lrs.PolyScheduler(
                max_update=a["max_update"], pwr=a["power"], final_lr=a["final_lr"], **common
            )
        else:
            s = lrs.CosineScheduler(max_update=a["max_update"], final_lr=a["final_lr"], **common)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ValueError(f"{where}: cannot rebuild MXNet's {cls} in mxopt_jax: {exc}") from None
    # the scheduler's position: every attribute MXNet keeps (base_lr decayed so far, count, cur_step_ind ...),
    # each of the kind the fresh scheduler keeps there
    mine = vars(s)
    for k, v in a.items():
        if k in mine:
            if not _same_kind(mine[k], v):
                raise ValueError(
                    f"{where}: the {cls}'s attribute {k!r} must be like {_kind(mine[k])}, got {_kind(v)}: refused"
                )
            setattr(s, k, list(v) if isinstance(v, list) else v)
    return s


def _same_kind(mine: Any, v: Any) -> bool:
    if isinstance(mine, str):
        return isinstance(v, str)
    if isinstance(mine, list):
        return isinstance(v, list) and all(_is_num(x) for x in v)
    if mine is None or _is_num(mine):
        return v is None or _is_num(v)
    return type(v) is type(mine)


def file_scheduler(a: Mapping, where: str, lr_scheduler: Any) -> Any:
    """The scheduler to continue with: the one passed, else the file's (an MXNet class, at its position)."""
    if lr_scheduler is not None:
        return lr_scheduler
    obj = a.get("lr_scheduler")
    if is_unknown(obj):
        raise ValueError(
            f"{where}: the file's learning-rate scheduler is {obj.mx_module}.{obj.mx_class}, a class of your own "
            "(not one of MXNet's); it is never constructed. Pass the scheduler to continue with: "
            "load_updater(path, lr_scheduler=...) (an mxopt_jax.lr_scheduler object, or any callable "
            f"num_update -> learning rate, called with the restored num_update {_kind(a.get('num_update'))}); "
            f"the optimizer, states and counts still load from the file (the scheduler's attributes: "
            f"{summary(obj)})"
        )
    return scheduler(obj, where)
