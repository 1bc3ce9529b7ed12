"""Learning-rate schedulers with MXNet's exact behaviour (``mxnet.lr_scheduler``), plus pure JAX forms.

Every scheduler is a callable ``sched(num_update) -> float`` with MXNet's arguments, defaults and quirks, and
``sched.as_schedule()`` gives the pure, jittable ``num_update -> lr`` (an ``optax.Schedule``). See the
implementation's documentation (``help(mxopt_jax.lr_scheduler.FactorScheduler)``) for the details.
"""

from ._src.schedulers import (
    CosineScheduler,
    FactorScheduler,
    LRScheduler,
    MultiFactorScheduler,
    PolyScheduler,
)

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]
