"""A pickled MXNet learning-rate scheduler rebuilt as mxopt_jax's, at its position, every field checked.

MXNet's schedulers keep their position in plain attributes (``count``, ``cur_step_ind``, ``base_lr`` decayed so
far, ...), and the next learning-rate query trusts them: a ``FactorScheduler`` whose ``count`` is ``-inf`` never
returns, a ``PolyScheduler`` whose ``max_steps`` is 0 divides by it. Every attribute the resume takes from a file
is checked here first, by type and against what MXNet's own code could have written (1.9.1 and 2.0 keep the same
attributes, measured), so that a file that does not fit is a ``ValueError`` naming the file and the attribute,
at load, and no later query can hang or fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import schedulers
from .allowlist import is_scheduler, is_unknown
from .attributes import summary

#: The most decays a FactorScheduler may have to catch up with (see :func:`mxopt_jax._src.schedulers.restore`).
MAX_CATCH_UP = schedulers.MAX_CATCH_UP


def scheduler(obj: Any, where: str, num_update: int, lr: Any = None) -> Any:
    """The mxopt_jax scheduler of a pickled MXNet one, at its position (``None`` for none); ``num_update``: the
    optimizer's restored count (the scheduler's next query is ``num_update + 1``); ``lr``: the optimizer's
    ``lr``, which MXNet's optimizer writes into the scheduler's ``base_lr``. Every field is checked by
    :func:`mxopt_jax._src.schedulers.restore` (the facade's own state format is checked by the same code)."""
    if obj is None:
        return None
    if not is_scheduler(obj) or obj.mx_class not in schedulers.RESTORABLE:
        raise ValueError(f"{where}: unsupported learning-rate scheduler {obj!r}")
    return schedulers.restore(obj.mx_class, vars(obj), where, num_update, what="pickled", lr=lr)


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
            f"num_update -> learning rate, called with the restored num_update {schedulers.kind_of(a.get('num_update'))}); "
            f"the optimizer, states and counts still load from the file (the scheduler's attributes: "
            f"{summary(obj)})"
        )
    return scheduler(obj, where, int(a.get("num_update", a.get("begin_num_update", 0)) or 0), a.get("lr"))
