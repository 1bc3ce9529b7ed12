"""A pickled MXNet learning-rate scheduler rebuilt as mxopt_jax's, at its position, every field checked.

MXNet's schedulers keep their position in plain attributes (``count``, ``cur_step_ind``, ``base_lr`` decayed so
far, ...), and the next learning-rate query trusts them: a ``FactorScheduler`` whose ``count`` is ``-inf`` never
returns, a ``PolyScheduler`` whose ``max_steps`` is 0 divides by it. Every attribute the resume takes from a file
is checked here first, by type and against what MXNet's own code could have written (1.9.1 and 2.0 keep the same
attributes, measured), so that a file that does not fit is a ``ValueError`` naming the file and the attribute,
at load, and no later query can hang or fail.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import schedulers
from .allowlist import is_scheduler, is_unknown
from .attributes import kind_of, summary

#: The most decays a FactorScheduler may have to catch up with at its next query past the warmup, besides one
#: per update until then (MXNet's own keeps ``count`` within one ``step`` of the optimizer's ``num_update``
#: once past the warmup, and catches up with the warmup's decays at its end; the catch-up is a Python loop).
MAX_CATCH_UP = 2**20
_INT_MAX = 2**31 - 1  # mxopt_jax's schedules take int32 update counts (as_schedule, to_optax)

_NEEDS = {
    "FactorScheduler": ("step", "factor", "stop_factor_lr"),
    "MultiFactorScheduler": ("step", "factor"),
    "PolyScheduler": ("max_update", "power", "final_lr"),
    "CosineScheduler": ("max_update", "final_lr"),
}
# every attribute MXNet's schedulers keep, by kind: an integer count, a finite number >= 0 (a learning rate, a
# factor, a power), the warmup mode, FactorScheduler's step (an int) or MultiFactorScheduler's (a list)
_INTS = {"warmup_steps", "count", "cur_step_ind", "max_update", "max_steps"}
_REALS = {"base_lr", "warmup_final_lr", "warmup_begin_lr", "factor", "stop_factor_lr", "power", "base_lr_orig",
          "final_lr"}  # fmt: skip


def _fail(where: str, cls: str, k: str, must: str, v: Any) -> ValueError:
    return ValueError(
        f"{where}: the pickled {cls}'s attribute {k!r} must be {must}, got {kind_of(v)}: refused"
    )


def _int(v: Any) -> int | None:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v) if 0 <= int(v) <= _INT_MAX else None
    return None


def _real(v: Any) -> float | None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    if isinstance(v, (int, np.integer)) and not -(2**1023) < int(v) < 2**1023:
        return None  # float() of it would overflow
    x = float(v)
    return x if math.isfinite(x) and x >= 0 else None


def _fields(a: Mapping, cls: str, where: str) -> dict:
    """The file's scheduler attributes, each of its kind, as Python ints, floats, str, list (refused with the
    attribute's name otherwise); attributes MXNet does not keep are left out."""
    out: dict[str, Any] = {}
    for k, v in a.items():
        if k in _INTS or (k == "step" and cls == "FactorScheduler"):
            n = _int(v)
            if n is None:
                raise _fail(where, cls, k, "an integer in [0, 2**31 - 1]", v)
            out[k] = n
        elif k in _REALS:
            x = _real(v)
            if x is None:
                raise _fail(where, cls, k, "a finite number >= 0", v)
            out[k] = v if type(v) is int else x  # an int stays an int (MXNet's default power is 2)
        elif k == "warmup_mode":
            if v not in ("linear", "constant") or type(v) is not str:
                raise _fail(where, cls, k, "'linear' or 'constant'", v)
            out[k] = v
        elif k == "step":  # MultiFactorScheduler
            steps = [_int(s) for s in v] if type(v) in (list, tuple) and len(v) <= 2**16 else None
            if steps is None or any(s is None for s in steps):
                raise _fail(where, cls, k, "a list of integers", v)
            out[k] = steps
    return out


def scheduler(obj: Any, where: str, num_update: int) -> Any:
    """The mxopt_jax scheduler of a pickled MXNet one, at its position (``None`` for none); ``num_update``: the
    optimizer's restored count (the scheduler's next query is ``num_update + 1``)."""
    if obj is None:
        return None
    if not is_scheduler(obj) or obj.mx_class not in _NEEDS:
        raise ValueError(f"{where}: unsupported learning-rate scheduler {obj!r}")
    cls = obj.mx_class
    missing = [k for k in _NEEDS[cls] if k not in vars(obj)]
    if missing:
        raise ValueError(f"{where}: the pickled {cls} has no {', '.join(missing)}: refused")
    a = _fields(vars(obj), cls, where)
    base = a.get("base_lr_orig", a.get("warmup_final_lr", a.get("base_lr", 0.01)))
    common = {
        "base_lr": base,
        "warmup_steps": a.get("warmup_steps", 0),
        "warmup_begin_lr": a.get("warmup_begin_lr", 0),
        "warmup_mode": a.get("warmup_mode", "linear"),
    }
    lrs = schedulers
    s: lrs.LRScheduler
    try:
        if cls == "FactorScheduler":
            s = lrs.FactorScheduler(
                step=a["step"], factor=a["factor"], stop_factor_lr=a["stop_factor_lr"], **common
            )
        elif cls == "MultiFactorScheduler":
            s = lrs.MultiFactorScheduler(step=a["step"], factor=a["factor"], **common)
        elif cls == "PolyScheduler":
            s = lrs.PolyScheduler(
                max_update=a["max_update"], pwr=a["power"], final_lr=a["final_lr"], **common
            )
        else:
            s = lrs.CosineScheduler(max_update=a["max_update"], final_lr=a["final_lr"], **common)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ValueError(f"{where}: cannot rebuild MXNet's {cls} in mxopt_jax: {exc}") from None
    # the scheduler's position: every attribute MXNet keeps (base_lr decayed so far, count, cur_step_ind ...)
    mine = vars(s)
    for k, v in a.items():
        if k in mine:
            setattr(s, k, v)
    _check_position(s, cls, where, num_update)
    return s


def _check_position(s: Any, cls: str, where: str, num_update: int) -> None:
    """Refuse a position MXNet's own scheduler cannot be in (naming the attribute)."""

    def bad(k: str, must: str) -> ValueError:
        return ValueError(
            f"{where}: the pickled {cls}'s attribute {k!r} = {kind_of(getattr(s, k))} must be {must} (as MXNet's "
            f"{cls} keeps it): refused"
        )

    if s.warmup_begin_lr > s.warmup_final_lr:
        raise bad("warmup_begin_lr", f"at most warmup_final_lr = {s.warmup_final_lr}")
    if cls == "FactorScheduler":
        if s.count % s.step or s.count > max(num_update, 0):
            raise bad(
                "count", f"a multiple of step = {s.step} up to the optimizer's num_update = {num_update}"
            )
        # the decays its next query past the warmup loops over, and the updates before that query
        pending = (max(num_update, s.warmup_steps) - s.count) // s.step
        if pending > MAX_CATCH_UP + max(0, s.warmup_steps - num_update):
            raise bad(
                "count",
                f"within {MAX_CATCH_UP} decays of the optimizer's num_update = {num_update} past the warmup "
                f"(its next learning rate would loop over {pending} decays)",
            )
    elif cls == "MultiFactorScheduler":
        if not 0 <= s.cur_step_ind <= len(s.step):
            raise bad("cur_step_ind", f"an index in [0, len(step) = {len(s.step)}]")
        passed = s.step[s.cur_step_ind - 1] if s.cur_step_ind else 0
        if s.count != passed:
            raise bad("count", f"the last step boundary passed, step[cur_step_ind - 1] = {passed}")
        if passed and passed >= num_update:
            raise bad(
                "cur_step_ind", f"the number of boundaries below the optimizer's num_update = {num_update}"
            )
    else:
        if s.max_steps != s.max_update - s.warmup_steps:
            raise bad("max_steps", f"max_update - warmup_steps = {s.max_update - s.warmup_steps}")
        if s.base_lr_orig != s.warmup_final_lr:
            raise bad("base_lr_orig", f"the constructor's base_lr, warmup_final_lr = {s.warmup_final_lr}")


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
            f"num_update -> learning rate, called with the restored num_update {kind_of(a.get('num_update'))}); "
            f"the optimizer, states and counts still load from the file (the scheduler's attributes: "
            f"{summary(obj)})"
        )
    return scheduler(obj, where, int(a.get("num_update", a.get("begin_num_update", 0)) or 0))
