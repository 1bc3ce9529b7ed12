"""Hyperparameter values: resolution per step, and MXNet's ``learning_rate`` vs ``lr_scheduler`` rules.

A hyperparameter is a Python number (folded into the compiled program, so ``wd=0`` skips work), a JAX scalar or
a schedule ``count -> value`` (traced: changing it never recompiles). :func:`resolve` gives its value for the
current step; :func:`resolve_learning_rate` applies MXNet's rules for ``learning_rate`` vs ``lr_scheduler``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chex
import jax
import numpy as np
import optax

from .validation import check_range, warn

#: A hyperparameter's value: a Python number, a JAX or NumPy array (a scalar), as chex types a number.
Scalar = chex.Numeric
#: A schedule ``count -> value`` (``count`` is 0 on the first update), as optax types it.
Schedule = optax.Schedule
#: What every float hyperparameter of a constructor takes: optax's ``ScalarOrSchedule`` (a float, a
#: ``jax.Array`` or a schedule), widened to chex's numbers so that an int or a NumPy scalar type-checks too.
ScalarOrSchedule = Scalar | Schedule
#: MXNet's ``lr_scheduler``: an :mod:`mxopt_jax.lr_scheduler` scheduler or any callable ``num_update -> lr``.
LRSchedulerLike = Callable[[Any], Any]


def resolve(value: ScalarOrSchedule, count: jax.Array) -> Any:
    """Value of a hyperparameter at step ``count`` (0 on the first update, optax's convention).

    Python numbers are returned unchanged (the driver folds them); arrays are returned as they are;
    callables are schedules and are evaluated at ``count``.
    """
    if callable(value):
        return value(count)
    return value


def resolve_learning_rate(owner: str, learning_rate: Any, lr_scheduler: Any) -> tuple[Any, Any]:
    """MXNet's rules for ``learning_rate`` vs ``lr_scheduler`` (differences #17 in docs/differences.md).

    Returns ``(learning_rate, lr_scheduler)``: with no scheduler and no rate the rate is 0.01; when both are
    given and the scheduler's ``base_lr`` differs, the scheduler's ``base_lr`` is overwritten by the
    optimizer's rate, with a warning (MXNet prints the same sentence).
    """
    if lr_scheduler is None and learning_rate is None:
        learning_rate = 0.01
    if lr_scheduler is not None:
        if not callable(lr_scheduler):
            hint = ""
            if isinstance(lr_scheduler, (jax.Array, np.ndarray)):
                hint = (
                    " (under optax.inject_hyperparams the scheduler is called like a schedule unless you pass "
                    "static_args=('lr_scheduler',))"
                )
            raise TypeError(
                f"{owner}: `lr_scheduler` must be an mxopt_jax.lr_scheduler.LRScheduler or a callable "
                f"num_update -> lr, got {type(lr_scheduler).__name__}{hint}"
            )
        if learning_rate is not None and callable(learning_rate):
            raise TypeError(
                f"{owner}: give either a schedule as `learning_rate` or an `lr_scheduler`, not both"
            )
        base = getattr(lr_scheduler, "base_lr", None)
        if learning_rate is not None and base is not None and base != learning_rate:
            warn(
                f"{owner}: learning rate from ``lr_scheduler`` has been overwritten by ``learning_rate`` in "
                f"optimizer (as MXNet does): learning_rate={learning_rate!r} (given, or the optimizer's default) "
                f"won over the scheduler's base_lr={base!r}, which the scheduler now starts from. Pass "
                f"learning_rate=None to keep base_lr={base!r}."
            )
            lr_scheduler.base_lr = learning_rate
    if learning_rate is not None:
        check_range(owner, "learning_rate", learning_rate, low=0.0)
    return learning_rate, lr_scheduler


class PerParameter:
    """A multiplier given as a callable ``(path, leaf) -> float`` (``lr_mult``, ``wd_mult``), as a constructor
    binds it (:class:`mxopt_jax._src.signature.ConstructorSignature`): called with two arguments it calls the
    function. ``optax.inject_hyperparams`` calls every callable argument not in its ``static_args`` as a
    schedule of the step count, with one argument, which would make the function fail on its own missing
    ``leaf``; called so, this raises a ``TypeError`` that names ``static_args``, as the ``lr_scheduler``
    mistake's does (:func:`resolve_learning_rate`)."""

    __slots__ = ("fn", "name", "owner")

    def __init__(self, fn: Callable[..., Any], owner: str, name: str) -> None:
        self.fn, self.owner, self.name = fn, owner, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) + len(kwargs) == 1:
            raise TypeError(
                f"{self.owner}: `{self.name}` is a callable (path, leaf) -> float and was called with one "
                f"argument, as a schedule of the step count: under optax.inject_hyperparams pass "
                f"static_args=('{self.name}',) to it (as for an lr_scheduler), or give `{self.name}` as a pytree "
                "of floats"
            )
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"PerParameter({self.fn!r})"


def scheduler_fn(lr_scheduler: Any) -> Callable[[jax.Array], jax.Array]:
    """A pure function ``num_update -> lr`` for an MXNet-style scheduler or any jittable callable."""
    as_schedule = getattr(lr_scheduler, "as_schedule", None)
    if as_schedule is not None:
        return as_schedule()
    return lr_scheduler
