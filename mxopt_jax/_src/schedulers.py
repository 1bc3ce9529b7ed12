"""Learning-rate schedulers with MXNet's exact behaviour (``mxnet.lr_scheduler``), plus pure JAX forms.

Two views of the same schedule
------------------------------
**Stateful (MXNet-compatible).** Every scheduler is a callable object, ``sched(num_update) -> float``,
with MXNet's argument names, defaults, public mutable attributes and quirks. Calling it may *mutate* the
scheduler (``FactorScheduler`` / ``MultiFactorScheduler`` decay ``base_lr`` in place and never undo a
decay; ``PolyScheduler`` / ``CosineScheduler`` cache the last in-range value in ``base_lr``). An MXNet
optimizer calls it with its global ``num_update`` *after* incrementing it, so the first update uses
``sched(1)``. This form is plain Python (float64) and cannot be traced by ``jax.jit``.

**Pure (JAX).** ``sched.as_schedule()`` returns a side-effect-free, jittable function
``schedule(num_update) -> float32 jax.Array`` (an ``optax.Schedule``). It snapshots the scheduler's *current*
attributes when ``as_schedule()`` is called (later mutations of the object do not affect it) and returns, for
every integer ``num_update`` (a Python int, or a traced/concrete integer scalar or array), the value the
stateful scheduler returns when it is called with non-decreasing ``num_update`` starting from its current
state (a fresh state for a freshly built scheduler). It uses only ``jnp.where``-style selection, so
``jax.jit`` compiles it once for all ``num_update`` values and ``jax.vmap`` works over ``num_update``.

The optimizer's ``base_lr`` overwrite
-------------------------------------
When an MXNet optimizer receives both ``learning_rate`` and ``lr_scheduler`` and
``lr_scheduler.base_lr != learning_rate``, it sets ``lr_scheduler.base_lr = learning_rate`` (and announces it;
mxopt_jax warns). That logic lives in the optimizer, not here. Its effect on the schedules reproduced here:

* ``FactorScheduler`` / ``MultiFactorScheduler``: the new ``base_lr`` is the starting point of the decays, but
  ``warmup_final_lr`` is not updated, so the warmup still ramps to the *constructor's* ``base_lr``.
* ``PolyScheduler`` / ``CosineScheduler``: the formula uses ``base_lr_orig`` (frozen at construction), so the
  overwrite has no effect, except that it is what MXNet returns for ``num_update > max_update`` when the
  scheduler was never called in range (the pure form returns the value at ``max_update`` instead).

Call ``as_schedule()`` *after* the optimizer has overwritten ``base_lr``.

Validation departs from MXNet only in the exception types (``TypeError`` / ``ValueError`` instead of
``assert``) and in rejecting values MXNet silently accepts but which make no sense (non-finite or negative
learning rates, negative ``factor`` / ``pwr``, ``warmup_steps >= max_update`` for Poly/Cosine, which MXNet
turns into a ``ZeroDivisionError`` or a never-decaying schedule). Messages quote MXNet's own text.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

__all__ = [
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
]

_logger = logging.getLogger(__name__)

Schedule = Callable[[ArrayLike], jax.Array]

# Most exactly-precomputed decay values kept by the pure FactorScheduler (beyond: exp(j * log(factor))).
_MAX_FACTOR_TABLE = 4096

_WARMUP_MODES = ("linear", "constant")


# --------------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------------
def _int(name: str, value: Any) -> int:
    """``value`` as a Python int; ``TypeError`` unless it is a (numpy or Python) integer, not a bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int (got {value!r})")
    return int(value)


def _real(name: str, value: Any) -> float:
    """``value`` as a Python float; ``TypeError`` for bools, strings, complex numbers and non-scalars."""
    if isinstance(value, bool | str | bytes | complex) or getattr(value, "ndim", 0) != 0:
        raise TypeError(f"{name} must be a real number (got {value!r})")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number (got {value!r})") from None


def _lr(name: str, value: Any) -> float:
    """A learning-rate-like value: a finite real number ``>= 0``."""
    x = _real(name, value)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0 (got {value!r})")
    return x


def _factor(value: Any) -> float:
    x = _real("factor", value)
    if x > 1.0:
        raise ValueError(
            f"Factor must be no more than 1 to make lr reduce: factor must be in [0, 1] (got {value!r})"
        )
    if not (x >= 0.0):  # also catches NaN
        raise ValueError(f"factor must be in [0, 1] (got {value!r})")
    return x


def _max_update(value: Any, warmup_steps: int) -> int:
    m = _int("max_update", value)
    if m < 1:
        raise ValueError(
            "maximum number of updates must be strictly positive: max_update must be an int >= 1 "
            f"(got {value!r})"
        )
    if warmup_steps >= m:
        raise ValueError(
            "warmup_steps must be smaller than max_update "
            f"(got warmup_steps={warmup_steps}, max_update={m}): "
            "the decay runs over max_update - warmup_steps updates (MXNet divides by it)"
        )
    return m


def _as_num_update(num_update: ArrayLike) -> jax.Array:
    n = jnp.asarray(num_update)
    if not jnp.issubdtype(n.dtype, jnp.integer):
        raise TypeError(f"num_update must be an integer scalar or array (got dtype {n.dtype})")
    return n


# --------------------------------------------------------------------------------------------------------
# base class
# --------------------------------------------------------------------------------------------------------
class LRScheduler:
    """Base class of a learning-rate scheduler (``mxnet.lr_scheduler.LRScheduler``).

    A scheduler returns a learning rate from the number of updates performed so far. Subclasses first
    apply the warmup: for ``num_update < warmup_steps`` they return :meth:`get_warmup_lr` (no state change)::

        linear:   warmup_begin_lr + (warmup_final_lr - warmup_begin_lr) * num_update / warmup_steps
        constant: warmup_begin_lr

    ``warmup_final_lr`` is the constructor's ``base_lr``, frozen at construction: when an optimizer later
    overwrites ``base_lr`` the warmup still ramps to the original value (MXNet quirk).

    Parameters
    ----------
    base_lr : float
        The initial learning rate (finite, ``>= 0``). Public and mutable; optimizers overwrite it.
    warmup_steps : int
        Number of warmup updates (``>= 0``). Warmup updates are counted in ``num_update``: decay boundaries
        of the subclasses are absolute, not shifted by the warmup.
    warmup_begin_lr : float
        Learning rate the warmup starts from; must not exceed ``base_lr``.
    warmup_mode : {'linear', 'constant'}
        ``'linear'`` ramps in equal increments, ``'constant'`` holds ``warmup_begin_lr``.

    Raises
    ------
    TypeError
        ``warmup_steps`` not an int (MXNet: ``AssertionError``), or a learning rate not a real number.
    ValueError
        ``warmup_begin_lr > base_lr`` ("Base lr has to be higher than warmup_begin_lr"), ``warmup_steps < 0``
        ("Warmup steps has to be positive or 0"), unknown ``warmup_mode`` ("Supports only linear and
        constant modes of warmup"), or a negative / non-finite learning rate.
    """

    def __init__(
        self,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        self.base_lr: float = _lr("base_lr", base_lr)
        self.warmup_steps: int = _int("warmup_steps", warmup_steps)
        self.warmup_final_lr: float = self.base_lr
        self.warmup_begin_lr: float = _lr("warmup_begin_lr", warmup_begin_lr)
        self.warmup_mode: str = warmup_mode
        self._check_warmup()

    # -- validation ---------------------------------------------------------------------------------------
    def _check_warmup(self) -> None:
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError(
                "Base lr has to be higher than warmup_begin_lr: warmup_begin_lr must be <= base_lr "
                f"(got warmup_begin_lr={self.warmup_begin_lr!r}, base_lr={self.warmup_final_lr!r})"
            )
        if self.warmup_steps < 0:
            raise ValueError(
                f"Warmup steps has to be positive or 0: warmup_steps must be >= 0 (got {self.warmup_steps!r})"
            )
        if self.warmup_mode not in _WARMUP_MODES:
            raise ValueError(
                "Supports only linear and constant modes of warmup: warmup_mode must be 'linear' or "
                f"'constant' (got {self.warmup_mode!r})"
            )

    def _check_current(self) -> None:
        """Re-validate the (public, mutable) attributes before building a pure schedule."""
        _lr("base_lr", self.base_lr)
        _lr("warmup_final_lr", self.warmup_final_lr)
        _lr("warmup_begin_lr", self.warmup_begin_lr)
        _int("warmup_steps", self.warmup_steps)
        self._check_warmup()

    # -- stateful API -------------------------------------------------------------------------------------
    def get_warmup_lr(self, num_update: int) -> float:
        """Warmup learning rate for ``num_update < warmup_steps`` (``ValueError`` otherwise)."""
        if not num_update < self.warmup_steps:
            raise ValueError(
                f"get_warmup_lr needs num_update < warmup_steps (got num_update={num_update!r}, "
                f"warmup_steps={self.warmup_steps!r})"
            )
        if self.warmup_mode == "linear":
            increase = (
                (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / float(self.warmup_steps)
            )
            return self.warmup_begin_lr + increase
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        raise ValueError(f"Invalid warmup mode {self.warmup_mode}")

    def __call__(self, num_update: int) -> float:
        """Return the learning rate for ``num_update`` (may update the scheduler's state)."""
        raise NotImplementedError("must override this")

    # -- pure API -----------------------------------------------------------------------------------------
    def as_schedule(self) -> Schedule:
        """Pure, jittable ``schedule(num_update) -> float32`` built from the current attributes."""
        raise NotImplementedError("must override this")

    def _pure(self, core: Callable[[jax.Array], jax.Array]) -> Schedule:
        """Wrap ``core`` (post-warmup lr, float32) with the warmup, snapshotting the warmup attributes."""
        self._check_current()
        w = self.warmup_steps
        begin = self.warmup_begin_lr
        if self.warmup_mode == "linear" and w > 0:
            slope = (self.warmup_final_lr - begin) / w
        else:
            slope = 0.0

        def schedule(num_update: ArrayLike) -> jax.Array:
            n = _as_num_update(num_update)
            lr = core(n).astype(jnp.float32)
            if w > 0:
                warm = jnp.float32(begin) + jnp.float32(slope) * n.astype(jnp.float32)
                lr = jnp.where(n < w, warm, lr)
            return lr

        return schedule


# --------------------------------------------------------------------------------------------------------
# FactorScheduler
# --------------------------------------------------------------------------------------------------------
class FactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` every ``step`` updates
    (``mxnet.lr_scheduler.FactorScheduler``).

    After the warmup, for a fresh scheduler called with non-decreasing ``num_update = n``::

        k(n) = max(0, ceil(n / step) - 1)                 # number of decays so far
        lr   = base_lr                                   if k(n) == 0
        lr   = max(stop_factor_lr, base_lr * factor**k)  otherwise

    MXNet quirks reproduced:

    * Decays use a strict ``>``: the first decay happens when ``n`` first *exceeds* ``step`` (the lr at
      ``n == step`` is still undecayed; MXNet's docstring's ``floor(n / step)`` is off by one), then when it
      exceeds ``2 * step``, ... Warmup updates are counted in ``n``.
    * State (``count``, ``base_lr``) is mutated in place and monotone: calling with a smaller ``n`` later does
      not undo decays (``s(10)`` then ``s(1)`` returns the decayed value twice).
    * ``stop_factor_lr`` is applied only after a multiplication, so a ``base_lr`` below it is returned
      unchanged until the first decay (which then *raises* the lr to ``stop_factor_lr``).
    * ``base_lr`` overwritten by an optimizer is the start of the decays; the warmup still ramps to the
      constructor's ``base_lr`` (``warmup_final_lr``).

    Parameters
    ----------
    step : int
        Decay period, an int ``>= 1`` ("Schedule step must be greater or equal than 1 round").
    factor : float
        Decay factor in ``[0, 1]`` ("Factor must be no more than 1 to make lr reduce").
    stop_factor_lr : float
        Lower clamp applied after each decay (finite, ``>= 0``).
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from mxopt_jax.lr_scheduler import FactorScheduler
    >>> sched = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    >>> [sched(n) for n in range(1, 7)]
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    >>> import mxopt_jax
    >>> tx = mxopt_jax.sgd(learning_rate=None, lr_scheduler=FactorScheduler(step=100, factor=0.9, base_lr=0.1))
    """

    def __init__(
        self,
        step: int,
        factor: float = 1,
        stop_factor_lr: float = 1e-8,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.step: int = self._check_step(step)
        self.factor: float = _factor(factor)
        self.stop_factor_lr: float = _lr("stop_factor_lr", stop_factor_lr)
        self.count: int = 0

    @staticmethod
    def _check_step(step: Any) -> int:
        s = _int("step", step)
        if s < 1:
            raise ValueError(
                "Schedule step must be greater or equal than 1 round: "
                f"step must be an int >= 1 (got {step!r})"
            )
        return s

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)

        # MXNet loops ``while num_update > count + step`` (to continue training via load_epoch): the decays
        # pending, k = ceil((num_update - count) / step) - 1, are applied one by one as MXNet multiplies (up to
        # _MAX_FACTOR_TABLE of them, or until the rate stops changing), any further ones in closed form, so
        # a query far ahead of the scheduler's position (a resumed file) is bounded in work.
        pending = (num_update - self.count - 1) // self.step if num_update > self.count + self.step else 0
        done = 0
        while done < pending:
            if done == _MAX_FACTOR_TABLE:
                rest = pending - done
                decayed = self.base_lr * math.exp(rest * math.log(self.factor)) if self.factor > 0 else 0.0
                self.base_lr = max(self.stop_factor_lr, decayed)
                self.count += rest * self.step
                break
            before = self.base_lr
            self.count += self.step
            done += 1
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                _logger.info(
                    "Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                    num_update,
                    self.base_lr,
                )
            else:
                _logger.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            if self.base_lr == before:  # a fixed point: every later decay gives the same rate
                self.count += (pending - done) * self.step
                break
        return float(self.base_lr)

    def as_schedule(self) -> Schedule:
        """Pure form: ``k = max(0, ceil((n - count) / step) - 1)`` decays from the current ``base_lr``.

        For a fresh scheduler (``count == 0``) this is the closed form in the class docstring. The decayed
        values are precomputed in float64 exactly as MXNet computes them (repeated multiplication and
        clamping) for up to 4096 decays, then rounded once to float32; further decays use
        ``exp(j * log(factor))``.
        """
        step = self._check_step(self.step)
        factor = _factor(self.factor)
        stop = _lr("stop_factor_lr", self.stop_factor_lr)
        count = _int("count", self.count)
        base = _lr("base_lr", self.base_lr)

        table = [base]
        while len(table) < _MAX_FACTOR_TABLE:
            nxt = table[-1] * factor
            if nxt < stop:
                nxt = stop
            if nxt == table[-1]:  # fixed point: every later decay gives the same value
                break
            table.append(nxt)
        last = len(table) - 1
        # The tail is only reached when the table did not hit a fixed point, hence 0 < factor < 1.
        log_factor = math.log(factor) if factor > 0 else 0.0

        def core(n: jax.Array) -> jax.Array:
            d = n - count
            k = jnp.maximum(-jnp.floor_divide(-d, step) - 1, 0)  # max(0, ceil(d / step) - 1), integers
            values = jnp.asarray(table, dtype=jnp.float32)
            exact = values[jnp.minimum(k, last)]
            extra = jnp.maximum(k - last, 0).astype(jnp.float32)
            # factor ** extra via a float64-rounded log: float32(factor) ** extra would lose ~extra ulps
            tail = jnp.maximum(jnp.float32(stop), values[last] * jnp.exp(extra * jnp.float32(log_factor)))
            return jnp.where(k > last, tail, exact)

        return self._pure(core)


# --------------------------------------------------------------------------------------------------------
# MultiFactorScheduler
# --------------------------------------------------------------------------------------------------------
class MultiFactorScheduler(LRScheduler):
    """Multiply the learning rate by ``factor`` at each update count in ``step``
    (``mxnet.lr_scheduler.MultiFactorScheduler``).

    After the warmup, for a fresh scheduler called with non-decreasing ``num_update = n``::

        lr = base_lr * factor ** #{k : n > step[k]}

    MXNet quirks reproduced:

    * Strict ``>``: the lr at ``n == step[k]`` is not yet decayed (MXNet's docstring says ``<=``).
    * State (``cur_step_ind``, ``count`` = last boundary passed, ``base_lr``) is mutated in place and
      monotone: a later call with a smaller ``n`` does not undo decays. There is no ``stop_factor_lr``.
    * ``base_lr`` overwritten by an optimizer is the start of the decays; the warmup still ramps to the
      constructor's ``base_lr`` (``warmup_final_lr``).

    Parameters
    ----------
    step : list of int
        Non-empty, strictly increasing ints ``>= 1`` ("Schedule step must be an increasing integer list",
        "Schedule step must be greater or equal than 1 round"). A tuple is accepted and stored as a list.
    factor : float
        Decay factor in ``[0, 1]`` ("Factor must be no more than 1 to make lr reduce").
    base_lr, warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from mxopt_jax.lr_scheduler import MultiFactorScheduler
    >>> sched = MultiFactorScheduler(step=[2, 4], factor=0.1, base_lr=1.0)
    >>> [round(sched(n), 4) for n in range(1, 7)]
    [1.0, 1.0, 0.1, 0.1, 0.01, 0.01]
    """

    def __init__(
        self,
        step: Sequence[int],
        factor: float = 1,
        base_lr: float = 0.01,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.step: list[int] = self._check_steps(step)
        self.cur_step_ind: int = 0
        self.factor: float = _factor(factor)
        self.count: int = 0

    @staticmethod
    def _check_steps(step: Any) -> list[int]:
        expected = "step must be a non-empty list of increasing ints >= 1"
        if not isinstance(step, list | tuple):
            raise TypeError(f"{expected} (got {step!r})")
        if len(step) < 1:
            raise ValueError(f"{expected} (got an empty list)")
        if any(isinstance(s, bool) or not isinstance(s, numbers.Integral) for s in step):
            raise TypeError(f"{expected} (got {step!r})")
        steps = [int(s) for s in step]
        for i, s in enumerate(steps):
            if i != 0 and s <= steps[i - 1]:
                raise ValueError(
                    f"Schedule step must be an increasing integer list: {expected} (got {step!r})"
                )
            if s < 1:
                raise ValueError(
                    f"Schedule step must be greater or equal than 1 round: {expected} (got {step!r})"
                )
        return steps

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)

        # NOTE: while rather than if (for continuing training via load_epoch), as MXNet.
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                _logger.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return float(self.base_lr)
        return float(self.base_lr)

    def as_schedule(self) -> Schedule:
        """Pure form: ``base_lr * factor ** #{k >= cur_step_ind : n > step[k]}`` from the current state.

        The ``len(step) + 1`` possible values are precomputed in float64 by repeated multiplication (as MXNet)
        and rounded once to float32.
        """
        steps = self._check_steps(self.step)
        factor = _factor(self.factor)
        base = _lr("base_lr", self.base_lr)
        cur = _int("cur_step_ind", self.cur_step_ind)
        if not 0 <= cur <= len(steps):
            raise ValueError(f"cur_step_ind must be in [0, len(step)] (got {cur})")
        remaining = steps[cur:]
        table = [base]
        for _ in remaining:
            table.append(table[-1] * factor)

        def core(n: jax.Array) -> jax.Array:
            values = jnp.asarray(table, dtype=jnp.float32)
            if not remaining:
                return jnp.broadcast_to(values[0], n.shape)
            bounds = jnp.asarray(remaining, dtype=n.dtype)
            passed = jnp.sum(n[..., None] > bounds, axis=-1)
            return values[passed]

        return self._pure(core)


# --------------------------------------------------------------------------------------------------------
# PolyScheduler and CosineScheduler: a decay from base_lr_orig to final_lr over max_update updates
# --------------------------------------------------------------------------------------------------------
class _DecayToFinal(LRScheduler):
    """What :class:`PolyScheduler` and :class:`CosineScheduler` share: after the warmup (``W =
    warmup_steps``, ``max_steps = max_update - W``), for ``n <= max_update``::

        lr = final_lr + (base_lr_orig - final_lr) * decay(n)

    with ``decay`` going from 1 at ``n = W`` to 0 at ``n = max_update`` (:meth:`_decay`, and
    :meth:`_pure_decay` for the pure form). ``base_lr`` caches the last in-range value and is returned
    unchanged for ``n > max_update``; the pure form evaluates the formula at ``min(n, max_update)``.
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float,
        final_lr: float,
        warmup_steps: int,
        warmup_begin_lr: float,
        warmup_mode: str,
        **shape: float,
    ) -> None:
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.max_update: int = _max_update(max_update, self.warmup_steps)
        for name, value in shape.items():  # the subclass's own attributes, in MXNet's attribute order
            setattr(self, name, value)
        self.base_lr_orig: float = self.base_lr
        self.final_lr: float = _lr("final_lr", final_lr)
        self.max_steps: int = self.max_update - self.warmup_steps

    def _decay(self, num_update: int) -> float:
        """``decay(num_update)`` for ``warmup_steps <= num_update <= max_update`` (Python floats, as MXNet)."""
        raise NotImplementedError("must override this")

    def _pure_decay(self, max_steps: int) -> Callable[[jax.Array], jax.Array]:
        """``left -> decay`` in float32, ``left = max_update - min(n, max_update)`` (an exact float32 integer)."""
        raise NotImplementedError("must override this")

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._decay(num_update)
        return float(self.base_lr)

    def as_schedule(self) -> Schedule:
        """Pure form: the formula at ``min(n, max_update)`` (uses ``base_lr_orig``, not ``base_lr``)."""
        w = _int("warmup_steps", self.warmup_steps)
        max_update = _max_update(self.max_update, w)
        max_steps = _int("max_steps", self.max_steps)
        if max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1 (got {max_steps})")
        decay = self._pure_decay(max_steps)
        final = _lr("final_lr", self.final_lr)
        delta = _lr("base_lr_orig", self.base_lr_orig) - final

        def core(n: jax.Array) -> jax.Array:
            m = jnp.clip(n, w, max_update)
            left = (max_steps - (m - w)).astype(jnp.float32)  # max_steps * (1 - (m - W) / max_steps), exact
            return jnp.float32(final) + jnp.float32(delta) * decay(left)

        return self._pure(core)


class PolyScheduler(_DecayToFinal):
    """Polynomial decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates
    (``mxnet.lr_scheduler.PolyScheduler``).

    After the warmup (``W = warmup_steps``, ``max_steps = max_update - W``), for ``n <= max_update``::

        lr = final_lr + (base_lr_orig - final_lr) * (1 - (n - W) / max_steps) ** pwr

    MXNet quirks reproduced:

    * The formula uses ``base_lr_orig`` (the constructor's ``base_lr``, frozen), so an optimizer's overwrite
      of ``base_lr`` does not change the schedule.
    * ``base_lr`` is a cache: each in-range call stores its result there, and for ``n > max_update`` the
      scheduler returns ``base_lr`` unchanged, i.e. the last in-range value (normally ``final_lr``), or the
      constructor's / optimizer-written ``base_lr`` if it was never called with ``n <= max_update``
      (``PolyScheduler(10, base_lr=1)(15) == 1.0``). The pure form uses ``min(n, max_update)`` instead,
      which agrees whenever the calls pass through ``max_update``.
    * The power is stored as ``power`` (the argument is ``pwr``).

    Parameters
    ----------
    max_update : int
        Number of updates at which the decay reaches ``final_lr`` (int ``>= 1``, "maximum number of updates
        must be strictly positive"); must exceed ``warmup_steps`` (not checked by MXNet, which then divides
        by zero or never decays).
    base_lr : float
        Learning rate at the end of the warmup.
    pwr : float
        Power of the decay, finite and ``>= 0``.
    final_lr : float
        Learning rate reached at ``max_update`` (finite, ``>= 0``).
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from mxopt_jax.lr_scheduler import PolyScheduler
    >>> sched = PolyScheduler(max_update=10, base_lr=1.0, pwr=2, final_lr=0.0)
    >>> [round(sched(n), 4) for n in (0, 5, 10, 20)]
    [1.0, 0.25, 0.0, 0.0]
    >>> schedule = sched.as_schedule()  # the pure, jittable form
    >>> round(float(schedule(5)), 4)
    0.25
    """

    power: float

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        pwr: float = 2,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(
            max_update,
            base_lr,
            final_lr,
            warmup_steps,
            warmup_begin_lr,
            warmup_mode,
            power=self._check_power(pwr),
        )

    @staticmethod
    def _check_power(pwr: Any) -> float:
        p = _real("pwr", pwr)
        if not math.isfinite(p) or p < 0:
            raise ValueError(f"pwr must be a finite number >= 0 (got {pwr!r})")
        return pwr if isinstance(pwr, int) else p

    def _decay(self, num_update: int) -> float:
        return pow(1 - float(num_update - self.warmup_steps) / float(self.max_steps), self.power)

    def _pure_decay(self, max_steps: int) -> Callable[[jax.Array], jax.Array]:
        power = self._check_power(self.power)
        int_power = int(power) if float(power).is_integer() else None

        def decay(left: jax.Array) -> jax.Array:
            u = left / jnp.float32(max_steps)  # 1 - (m - W) / max_steps
            return u**int_power if int_power is not None else jnp.power(u, jnp.float32(power))

        return decay


class CosineScheduler(_DecayToFinal):
    """Cosine decay from ``base_lr`` to ``final_lr`` over ``max_update`` updates
    (``mxnet.lr_scheduler.CosineScheduler``).

    After the warmup (``W = warmup_steps``, ``max_steps = max_update - W``), for ``n <= max_update``::

        lr = final_lr + (base_lr_orig - final_lr) * (1 + cos(pi * (n - W) / max_steps)) / 2

    MXNet quirks reproduced (as :class:`PolyScheduler`): the formula uses ``base_lr_orig`` so an optimizer's
    overwrite of ``base_lr`` has no effect; ``base_lr`` caches the last in-range value and is returned
    unchanged for ``n > max_update`` (the constructor's / optimizer-written ``base_lr`` if never called in
    range). The pure form uses ``min(n, max_update)`` and evaluates the same quantity as
    ``sin(pi / 2 * (1 - (n - W) / max_steps)) ** 2`` to stay accurate in float32 near ``final_lr``.

    Parameters
    ----------
    max_update : int
        Number of updates at which the decay reaches ``final_lr`` (int ``>= 1``, "maximum number of updates
        must be strictly positive"); must exceed ``warmup_steps``.
    base_lr : float
        Learning rate at the end of the warmup.
    final_lr : float
        Learning rate reached at ``max_update`` (finite, ``>= 0``).
    warmup_steps, warmup_begin_lr, warmup_mode
        See :class:`LRScheduler`.

    Examples
    --------
    >>> from mxopt_jax.lr_scheduler import CosineScheduler
    >>> sched = CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.0)
    >>> [round(sched(n), 4) for n in (0, 5, 10)]
    [1.0, 0.5, 0.0]
    """

    def __init__(
        self,
        max_update: int,
        base_lr: float = 0.01,
        final_lr: float = 0,
        warmup_steps: int = 0,
        warmup_begin_lr: float = 0,
        warmup_mode: str = "linear",
    ) -> None:
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _decay(self, num_update: int) -> float:
        return (1 + math.cos(math.pi * (num_update - self.warmup_steps) / self.max_steps)) / 2

    def _pure_decay(self, max_steps: int) -> Callable[[jax.Array], jax.Array]:
        scale = math.pi / (2.0 * max_steps)

        def decay(left: jax.Array) -> jax.Array:
            # (1 + cos(pi * t)) / 2 == sin(pi / 2 * (1 - t)) ** 2, without cancellation near t = 1
            return jnp.sin(left * jnp.float32(scale)) ** 2

        return decay


# ---------------------------------------------------------------------------------------------------------------
# A scheduler restored from a file (MXNet's pickled ones, the facade's own state format), every field checked.


def kind_of(v: Any) -> str:
    """A short description of a value read from a file (for messages; the MXNet reader's and the facade
    format's: an MXNet object read from a pickle is described by its class)."""
    if hasattr(v, "mx_class") and hasattr(v, "mx_module"):
        return f"a {v.mx_module}.{v.mx_class} object"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} {v.dtype}"
    if isinstance(v, (int, float, bool, np.generic)) or v is None:
        return repr(v)[:40]
    return f"a {type(v).__name__}"


#: The most decays a FactorScheduler may have to catch up with at its next query past the warmup, besides one
#: per update until then (MXNet's own keeps ``count`` within one ``step`` of the optimizer's ``num_update``
#: once past the warmup, and catches up with the warmup's decays at its end; the catch-up is a Python loop).
MAX_CATCH_UP = 2**20
_RESTORE_INT_MAX = 2**31 - 1  # mxopt_jax's schedules take int32 update counts (as_schedule, to_optax)

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
# the learning rates among them: the optimizer's kernels take them as float32, in which a larger value is infinite
_RATES = _REALS - {"factor", "power"}
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_RATE_MUST = f"a rate float32 holds (at most {_FLOAT32_MAX:.4g}: the kernels take it as a float32, in which it is infinite)"


def _fail(where: str, cls: str, k: str, must: str, v: Any, what: str = "pickled") -> ValueError:
    return ValueError(
        f"{where}: the {what} {cls}'s attribute {k!r} must be {must}, got {kind_of(v)}: refused"
    )


def _restore_int(v: Any) -> int | None:
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v) if 0 <= int(v) <= _RESTORE_INT_MAX else None
    return None


def _restore_real(v: Any) -> float | None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    if isinstance(v, (int, np.integer)) and not -(2**1023) < int(v) < 2**1023:
        return None  # float() of it would overflow
    x = float(v)
    return x if math.isfinite(x) and x >= 0 else None


def _fields(a: Mapping, cls: str, where: str, what: str) -> dict:
    """The file's scheduler attributes, each of its kind, as Python ints, floats, str, list (refused with the
    attribute's name otherwise); attributes MXNet does not keep are left out."""
    out: dict[str, Any] = {}
    for k, v in a.items():
        if k in _INTS or (k == "step" and cls == "FactorScheduler"):
            n = _restore_int(v)
            if n is None:
                raise _fail(where, cls, k, "an integer in [0, 2**31 - 1]", v, what)
            out[k] = n
        elif k in _REALS:
            x = _restore_real(v)
            if x is None:
                raise _fail(where, cls, k, "a finite number >= 0", v, what)
            if k in _RATES and x > _FLOAT32_MAX:
                raise _fail(where, cls, k, _RATE_MUST, v, what)
            out[k] = v if type(v) is int else x  # an int stays an int (MXNet's default power is 2)
        elif k == "warmup_mode":
            if v not in ("linear", "constant") or type(v) is not str:
                raise _fail(where, cls, k, "'linear' or 'constant'", v, what)
            out[k] = v
        elif k == "step":  # MultiFactorScheduler
            steps = [_restore_int(s) for s in v] if type(v) in (list, tuple) and len(v) <= 2**16 else None
            if steps is None or any(s is None for s in steps):
                raise _fail(where, cls, k, "a list of integers", v, what)
            out[k] = steps
    return out


def restore(
    cls: str,
    attrs: Mapping[str, Any],
    where: str,
    num_update: int,
    what: str = "archived",
    lr: Any = None,
) -> LRScheduler:
    """The scheduler of class ``cls`` (one of :data:`RESTORABLE`) at the position its attributes ``attrs`` say
    (MXNet's and mxopt_jax's schedulers keep the same ones), every attribute checked by type and against what
    the scheduler's own code could have written with the optimizer at ``num_update`` (its next query is
    ``num_update + 1``) and the optimizer's learning rate ``lr`` (``None``: none; an optimizer given both a
    rate and a scheduler writes the rate into the scheduler's ``base_lr``, which the decays start from): a
    ``ValueError`` naming ``where`` and the attribute otherwise, so no later query can hang, fail or return a
    rate the schedule never reaches. Used for MXNet's pickled schedulers and for the facade's own state format
    alike."""
    if cls not in _NEEDS:
        raise ValueError(f"{where}: unsupported learning-rate scheduler {cls!r}")
    missing = [k for k in _NEEDS[cls] if k not in attrs]
    if missing:
        raise ValueError(f"{where}: the {what} {cls} has no {', '.join(missing)}: refused")
    a = _fields(attrs, cls, where, what)
    base = a.get("base_lr_orig", a.get("warmup_final_lr", a.get("base_lr", 0.01)))
    common = {
        "base_lr": base,
        "warmup_steps": a.get("warmup_steps", 0),
        "warmup_begin_lr": a.get("warmup_begin_lr", 0),
        "warmup_mode": a.get("warmup_mode", "linear"),
    }
    s: LRScheduler
    try:
        if cls == "FactorScheduler":
            s = FactorScheduler(
                step=a["step"], factor=a["factor"], stop_factor_lr=a["stop_factor_lr"], **common
            )
        elif cls == "MultiFactorScheduler":
            s = MultiFactorScheduler(step=a["step"], factor=a["factor"], **common)
        elif cls == "PolyScheduler":
            s = PolyScheduler(max_update=a["max_update"], pwr=a["power"], final_lr=a["final_lr"], **common)
        else:
            s = CosineScheduler(max_update=a["max_update"], final_lr=a["final_lr"], **common)
    except (TypeError, ValueError, ArithmeticError) as exc:
        raise ValueError(f"{where}: cannot rebuild MXNet's {cls} in mxopt_jax: {exc}") from None
    # the scheduler's position: every attribute MXNet keeps (base_lr decayed so far, count, cur_step_ind ...)
    mine = vars(s)
    for k, v in a.items():
        if k in mine:
            setattr(s, k, v)
    _check_position(s, cls, where, num_update, what)
    _check_rate(s, cls, where, what, lr)
    return s


#: The relative slack of :func:`_check_rate`'s bounds: MXNet decays by repeated multiplication, the bounds
#: are computed with one power (at most about 2**31 roundings of 2**-53 apart).
_RATE_SLACK = 1e-6


def _check_rate(s: Any, cls: str, where: str, what: str, lr: Any) -> None:
    """Refuse a ``base_lr`` the schedule never holds from its stored settings. It starts at the constructor's
    ``base_lr`` (``warmup_final_lr``) or the optimizer's rate written over it, and only decays: Factor and
    MultiFactor multiply it by ``factor`` once per decay done (``count / step``, ``cur_step_ind``; at most that
    many since the optimizer's write), Factor's clamped at ``stop_factor_lr``; Poly and Cosine cache a value
    between ``final_lr`` and ``base_lr_orig``. A start (no decay yet) must be one of those rates exactly."""
    starts = {float(s.warmup_final_lr)}
    x = _restore_real(lr) if lr is not None else None
    if x is not None:
        starts.add(x)
    rate = float(s.base_lr)
    if rate in starts:
        return
    if cls == "FactorScheduler":
        decays, floor = s.count // s.step, float(s.stop_factor_lr)
    elif cls == "MultiFactorScheduler":
        decays, floor = s.cur_step_ind, 0.0
    else:
        decays, floor = -1, 0.0
    if decays == -1:
        lo, hi = sorted((float(s.final_lr), float(s.base_lr_orig)))
        must = f"between final_lr = {s.final_lr} and base_lr_orig = {s.base_lr_orig}, or the optimizer's rate"
    elif decays == 0:
        lo, hi = math.inf, -math.inf
        must = (
            "its start before any decay: the constructor's base_lr (warmup_final_lr) or the optimizer's rate"
        )
    else:
        factor = float(s.factor)
        most = min(starts) * (math.exp(decays * math.log(factor)) if factor > 0 else 0.0)
        lo, hi = max(floor, most), max(*starts, floor)
        must = (
            f"within [{lo:.6g}, {hi:.6g}]: its start ({', '.join(f'{v:.6g}' for v in sorted(starts))}) after at most "
            f"{decays} decays by factor = {s.factor}"
            + (f", clamped at stop_factor_lr = {s.stop_factor_lr}" if floor else "")
        )
    if lo * (1 - _RATE_SLACK) <= rate <= hi * (1 + _RATE_SLACK):
        return
    raise ValueError(
        f"{where}: the {what} {cls}'s attribute 'base_lr' = {kind_of(s.base_lr)} is a rate the schedule never "
        f"holds: it must be {must} (as MXNet's {cls} and its optimizer write it): refused"
    )


def _check_position(s: Any, cls: str, where: str, num_update: int, what: str) -> None:
    """Refuse a position MXNet's own scheduler cannot be in (naming the attribute)."""

    def bad(k: str, must: str) -> ValueError:
        return ValueError(
            f"{where}: the {what} {cls}'s attribute {k!r} = {kind_of(getattr(s, k))} must be {must} (as MXNet's "
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


#: The scheduler classes :func:`restore` rebuilds.
RESTORABLE = tuple(_NEEDS)
