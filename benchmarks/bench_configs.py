"""Which optimizers are benchmarked, with which hyperparameters, against which optax transform.

Every mxopt_jax optimizer runs with MXNet's defaults except where a row says otherwise. An optax counterpart
is given only where optax has the same algorithm; its hyperparameters are set to match (MXNet's eps values,
no implicit weight decay, ...). ``note`` says where the two still differ in arithmetic (never in the amount
of memory traffic the algorithm needs, unless stated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class OptConfig:
    """One benchmarked optimizer.

    Attributes:
      key: row name (an MXNet registry name, or ``sgd_mom`` for SGD with momentum 0.9).
      mx_name: key of ``mxopt_jax.OPTIMIZERS``.
      kwargs: constructor arguments for ``mxopt_jax.OPTIMIZERS[mx_name]``.
      optax: ``optax module -> GradientTransformation`` with equivalent hyperparameters, or ``None``.
      note: how the optax counterpart differs (or why there is none).
      two_d: the optimizer needs 2-D parameters (GroupAdaGrad): leaves are benchmarked as 2-D views.
    """

    key: str
    mx_name: str
    kwargs: dict
    optax: Callable[[Any], Any] | None = None
    note: str = ""
    two_d: bool = False


def _signum_optax(optax: Any) -> Any:
    # MXNet Signum: mom = 0.9 mom + 0.1 G (natural sign); w -= lr * sign(mom). An EMA without debiasing
    # followed by sign and -lr is exactly that. (optax.lion is a different rule: sign of an interpolation.)
    return optax.chain(optax.ema(0.9, debias=False), optax.scale_by_sign(), optax.scale(-0.01))


CONFIGS: tuple[OptConfig, ...] = (
    OptConfig("sgd", "sgd", {"learning_rate": 0.1}, lambda o: o.sgd(0.1), "equivalent"),
    OptConfig(
        "sgd_mom",
        "sgd",
        {"learning_rate": 0.1, "momentum": 0.9},
        lambda o: o.sgd(0.1, momentum=0.9),
        "equivalent (MXNet folds lr into the momentum buffer)",
    ),
    OptConfig(
        "nag",
        "nag",
        {"learning_rate": 0.1, "momentum": 0.9},
        lambda o: o.sgd(0.1, momentum=0.9, nesterov=True),
        "equivalent (MXNet folds lr into the momentum buffer)",
    ),
    OptConfig(
        "signum",
        "signum",
        {"learning_rate": 0.01, "momentum": 0.9},
        _signum_optax,
        "optax has no Signum: chain(ema(0.9, debias=False), scale_by_sign(), scale(-lr)) is the same rule",
    ),
    OptConfig("sgld", "sgld", {"learning_rate": 0.1}, None, "no optax counterpart"),
    OptConfig("dcasgd", "dcasgd", {"learning_rate": 0.1}, None, "no optax counterpart"),
    OptConfig("lbsgd", "lbsgd", {}, None, "no optax counterpart"),
    OptConfig("ccsgd", "ccsgd", {}, None, "no optax counterpart (deprecated in MXNet)"),
    OptConfig(
        "adagrad",
        "adagrad",
        {"learning_rate": 0.01, "epsilon": 1e-6},
        lambda o: o.adagrad(0.01, initial_accumulator_value=0.0, eps=1e-6),
        "optax puts eps inside the sqrt (rsqrt(h + eps)) and masks h == 0",
    ),
    OptConfig(
        "groupadagrad",
        "groupadagrad",
        {"learning_rate": 0.01},
        None,
        "no optax counterpart; needs 2-D weights, so every leaf is viewed as (d0, rest) ((n,) as (n, 1))",
        two_d=True,
    ),
    OptConfig(
        "adadelta",
        "adadelta",
        {"learning_rate": 1.0, "rho": 0.9, "epsilon": 1e-6},
        lambda o: o.adadelta(1.0, rho=0.9, eps=1e-6),
        "equivalent",
    ),
    OptConfig(
        "rmsprop",
        "rmsprop",
        {"learning_rate": 0.001, "rho": 0.9, "epsilon": 1e-8},
        lambda o: o.rmsprop(0.001, decay=0.9, eps=1e-8, eps_in_sqrt=False),
        "equivalent (non-centered; MXNet ignores momentum unless centered)",
    ),
    OptConfig(
        "adam",
        "adam",
        {"learning_rate": 0.001, "epsilon": 1e-8},
        lambda o: o.adam(0.001, eps=1e-8),
        "optax adds eps to the bias-corrected sqrt(v_hat), MXNet to sqrt(v)",
    ),
    OptConfig(
        "adamw",
        "adamw",
        {"learning_rate": 0.001, "epsilon": 1e-6, "wd": 0.01},
        lambda o: o.adamw(0.001, eps=1e-6, weight_decay=0.01),
        "wd 0.01 on both; MXNet scales decay by the bias-corrected rate, optax by lr; eps placement as Adam",
    ),
    OptConfig(
        "adamax",
        "adamax",
        {"learning_rate": 0.002, "epsilon": 1e-8},
        lambda o: o.adamax(0.002, eps=1e-8),
        "equivalent",
    ),
    OptConfig(
        "nadam",
        "nadam",
        {"learning_rate": 0.001, "epsilon": 1e-8},
        lambda o: o.nadam(0.001, eps=1e-8),
        "optax.nadam has no momentum schedule (MXNet: Dozat's schedule_decay, one scalar state per leaf)",
    ),
    OptConfig(
        "adabelief",
        "adabelief",
        {"learning_rate": 0.001, "epsilon": 1e-6},
        lambda o: o.adabelief(0.001, eps=1e-6, eps_root=1e-6),
        "eps 1e-6 and eps_root 1e-6 on the optax side; optax bias-corrects s before the sqrt",
    ),
    OptConfig("ftrl", "ftrl", {}, None, "no optax counterpart"),
    OptConfig("ftml", "ftml", {}, None, "no optax counterpart"),
    OptConfig(
        "lars",
        "lars",
        {"learning_rate": 0.1, "momentum": 0.9},
        lambda o: o.lars(0.1, trust_coefficient=0.001, eps=1e-8, momentum=0.9),
        "momentum 0.9 on both; optax applies the trust ratio to every leaf (MXNet exempts bias/gamma/beta)",
    ),
    OptConfig(
        "lamb",
        "lamb",
        {"learning_rate": 0.001, "epsilon": 1e-6},
        lambda o: o.lamb(0.001, eps=1e-6, weight_decay=0.0),
        "equivalent up to eps placement",
    ),
    OptConfig("lans", "lans", {}, None, "no optax counterpart"),
    OptConfig("test", "test", {}, None, "no optax counterpart"),
)

BY_KEY = {c.key: c for c in CONFIGS}

#: the optimizer that gets more rounds, the peer contenders (facade, flat reference, side libraries)
HEADLINE = "adam"

#: optimizers timed on workload D (lazy row-sparse update vs dense)
SPARSE_KEYS = ("sgd_mom", "adam")
