"""Learning-rate schedules for a study: the same schedule for every contender, its peak the tuned rate.

A study's ``schedule=`` (``mxopt-jax compare --schedule NAME``) names one of :data:`SCHEDULES`; the engine
calls its hook ``(peak, steps) -> learning_rate`` (:data:`mxopt_jax.compare.engine.Schedule`) in every run,
with ``peak`` the configuration's (traced) learning rate and ``steps`` the run's budget, and hands the result
to the contender's factory as its ``learning_rate``. Every schedule here is written with ``jax.numpy`` only: no
Python comparison touches the traced peak (optax's ``warmup_cosine_decay_schedule`` compares its peak with 0
in Python, so it cannot take a traced rate), and the step count is clipped to the budget. Each is an
optax-style schedule ``count -> rate`` (``count`` 0 on the first update), so a contender's own factory can
use one too::

    contender("adam wc", lambda lr, steps: mxopt_jax.adam(learning_rate=warmup_cosine(lr, steps)), 1e-3)

The schedules (``w = round(WARMUP * steps)``, at least 1 step; ``T = steps``):

* ``constant``: ``peak`` throughout (the default; no schedule is traced);
* ``cosine``: ``peak * (1 + cos(pi * t / T)) / 2``, from ``peak`` to 0;
* ``warmup-cosine``: linear from ``peak / w`` to ``peak`` over the first ``w`` steps, then cosine to 0 at
  ``T``;
* ``trapezoidal``: linear warm-up over ``w`` steps, constant, then linear decay to 0 over the last
  ``round(DECAY * steps)`` steps (warm-up, stable, decay).

The Crowded Valley compares constant, cosine, cosine with warm restarts and trapezoidal schedules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

__all__ = [
    "DECAY",
    "SCHEDULES",
    "WARMUP",
    "constant",
    "cosine",
    "describe",
    "resolve",
    "trapezoidal",
    "warmup_cosine",
]

#: The fraction of the budget a warm-up lasts.
WARMUP = 0.1
#: The fraction of the budget the trapezoidal schedule's final linear decay lasts.
DECAY = 0.2

ScheduleFn = Callable[[Any], Any]


def _steps(steps: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"a schedule needs the run's step budget, an int >= 1; got steps={steps!r}")
    return steps


def _part(fraction: float, steps: int) -> int:
    return max(1, round(fraction * steps))


def constant(peak: Any, steps: int) -> ScheduleFn:
    """``count -> peak``."""
    _steps(steps)
    return lambda count: peak * jnp.ones_like(jnp.asarray(count, jnp.float32))


def cosine(peak: Any, steps: int) -> ScheduleFn:
    """Cosine decay from ``peak`` at step 0 to 0 at step ``steps``."""
    total = float(_steps(steps))

    def fn(count: Any) -> Any:
        t = jnp.clip(jnp.asarray(count, jnp.float32), 0.0, total)
        return peak * 0.5 * (1.0 + jnp.cos(jnp.pi * t / total))

    return fn


def warmup_cosine(peak: Any, steps: int, warmup: float = WARMUP) -> ScheduleFn:
    """Linear warm-up over ``round(warmup * steps)`` steps (at least 1) to ``peak``, then cosine decay to 0 at
    ``steps``: ``peak * (t + 1) / w`` for ``t < w``, ``peak * (1 + cos(pi * (t - w) / (steps - w))) / 2``
    after (``t`` counts from 0, so the first update already moves)."""
    total = _steps(steps)
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup must be a fraction in [0, 1), got {warmup!r}")
    w = min(_part(warmup, total), total - 1) if total > 1 else 0
    rest = float(max(total - w, 1))

    def fn(count: Any) -> Any:
        t = jnp.clip(jnp.asarray(count, jnp.float32), 0.0, float(total))
        ramp = (t + 1.0) / max(w, 1)
        decay = 0.5 * (1.0 + jnp.cos(jnp.pi * jnp.clip(t - w, 0.0, rest) / rest))
        return peak * jnp.where(t < w, ramp, decay)

    return fn


def trapezoidal(peak: Any, steps: int, warmup: float = WARMUP, decay: float = DECAY) -> ScheduleFn:
    """Linear warm-up over ``round(warmup * steps)`` steps, ``peak`` until the last ``round(decay * steps)``
    steps, then linear decay to 0 at ``steps``."""
    total = _steps(steps)
    if not (0 <= warmup < 1 and 0 < decay < 1 and warmup + decay <= 1):
        raise ValueError(
            f"need fractions 0 <= warmup, 0 < decay, warmup + decay <= 1; got {warmup!r}, {decay!r}"
        )
    w, d = _part(warmup, total), _part(decay, total)

    def fn(count: Any) -> Any:
        t = jnp.clip(jnp.asarray(count, jnp.float32), 0.0, float(total))
        up = (t + 1.0) / w
        down = (total - t) / d
        return peak * jnp.clip(jnp.minimum(up, down), 0.0, 1.0)

    return fn


def _constant_hook(peak: Any, steps: int) -> Any:
    return peak


#: Name -> the engine's hook ``(peak, steps) -> learning_rate``. ``constant`` returns the traced peak itself
#: (no schedule function), exactly what runs without a schedule.
SCHEDULES: dict[str, Callable[[Any, int], Any]] = {
    "constant": _constant_hook,
    "cosine": cosine,
    "warmup-cosine": warmup_cosine,
    "trapezoidal": trapezoidal,
}


def resolve(schedule: str | Callable[[Any, int], Any] | None) -> tuple[str, Callable[[Any, int], Any] | None]:
    """``(name, hook)`` for a study's ``schedule``: a name of :data:`SCHEDULES` (``None`` and ``"constant"``
    give no hook: a constant rate) or a hook of your own ``(peak, steps) -> learning_rate`` (named after its
    ``__name__``)."""
    if schedule is None or schedule == "constant":
        return "constant", None
    if isinstance(schedule, str):
        if schedule not in SCHEDULES:
            raise ValueError(
                f"schedule must be one of {', '.join(SCHEDULES)} or a callable, got {schedule!r}"
            )
        return schedule, SCHEDULES[schedule]
    if not callable(schedule):
        raise TypeError(
            f"schedule must be a name ({', '.join(SCHEDULES)}) or a callable (peak, steps) -> learning_rate, got "
            f"{type(schedule).__name__}"
        )
    name = getattr(schedule, "__name__", "custom")
    hook = schedule

    def checked(peak: Any, steps: int) -> Any:
        try:
            return hook(peak, steps)
        except (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError) as e:
            raise TypeError(
                f"schedule {name!r}: it uses the traced peak learning rate as a Python value "
                f"({type(e).__name__}); write it with jax.numpy (see mxopt_jax.compare.schedules)"
            ) from e

    return name, checked


def describe(name: str) -> str:
    """One sentence for the printed protocol."""
    return _WORDS.get(name, f"the schedule {name!r} (a user's hook (peak, steps) -> learning rate)")


_WORDS: Mapping[str, str] = {
    "constant": "a constant learning rate",
    "cosine": "cosine decay from the tuned rate (the peak) to 0 at the end of the budget",
    "warmup-cosine": (
        f"a linear warm-up over the first {WARMUP:.0%} of the budget to the tuned rate (the peak), then cosine "
        "decay to 0 at the end"
    ),
    "trapezoidal": (
        f"a linear warm-up over the first {WARMUP:.0%} of the budget to the tuned rate (the peak), constant, then "
        f"linear decay to 0 over the last {DECAY:.0%}"
    ),
}
