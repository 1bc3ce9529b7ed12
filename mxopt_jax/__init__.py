"""mxopt_jax: Apache MXNet's optimizers as JAX/optax gradient transformations.

Every constructor returns an ``optax.GradientTransformation`` with MXNet's keyword arguments and MXNet 2.0's
defaults (``lbsgd`` and ``ccsgd`` follow MXNet 1.9.1, where they live)::

    tx = mxopt_jax.ftml(learning_rate=0.01, wd=1e-4)
    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    params = optax.apply_updates(params, updates)

This module is the public API, as an explicit list. The implementation lives in ``mxopt_jax._src``: the update
rules (``_src/optimizers``), the drivers that run them over pytrees, row-sparse gradients and flat buffers
(``_src/drivers``), the one table of optimizers (``_src/registry.py``) and the MXNet-style facade
(``_src/facade``). The comparison app (``mxopt_jax.compare``) is built on this API; the library never imports
it.
"""

from . import facade, lr_scheduler, multi_tensor, mxnet_format, sparse
from ._src.optimizers.adagrad import AdaDeltaState, AdaGradState, adadelta, adagrad, group_adagrad
from ._src.optimizers.adam import AdamaxState, AdamState, NadamState, adabelief, adam, adamax, adamw, nadam
from ._src.optimizers.ftrl import FTMLState, FtrlState, ftml, ftrl
from ._src.optimizers.layerwise import lamb, lans, lars
from ._src.optimizers.rmsprop import RMSPropState, rmsprop
from ._src.optimizers.sgd import (
    DCASGDState,
    LBSGDState,
    SGDState,
    SGLDState,
    SignumState,
    TestState,
    ccsgd,
    dcasgd,
    lbsgd,
    nag,
    sgd,
    sgld,
    signum,
    test,
)
from ._src.registry import ALIASES as _ALIASES
from ._src.registry import FAMILIES as _FAMILIES
from ._src.registry import TABLE as _TABLE
from .facade import (
    DCASGD,
    FTML,
    LAMB,
    LANS,
    LARS,
    LBSGD,
    NAG,
    SGD,
    SGLD,
    AdaBelief,
    AdaDelta,
    AdaGrad,
    Adam,
    Adamax,
    AdamW,
    Ftrl,
    GroupAdaGrad,
    Nadam,
    Optimizer,
    RMSProp,
    Signum,
    Test,
    Updater,
    ccSGD,
    create,
    get_updater,
    register,
)
from .multi_tensor import FlatParams
from .sparse import RowSparse

__version__ = "0.1.0"

#: Constructor of every optimizer, by MXNet registry name (from the optimizer table).
OPTIMIZERS = {e.name: e.constructor for e in _TABLE}

#: Optimizer families (label -> registry names, from the optimizer table), e.g. for grouping comparisons.
FAMILIES: dict[str, tuple[str, ...]] = dict(_FAMILIES)
#: Other spellings of optimizer names -> registry names: a constructor's name where it differs from the registry
#: name (``"group_adagrad"`` -> ``"groupadagrad"``), from the optimizer table; ``create`` and the study take them.
ALIASES: dict[str, str] = dict(_ALIASES)

__all__ = [
    "OPTIMIZERS",
    "FAMILIES",
    "ALIASES",
    # modules
    "facade",
    "lr_scheduler",
    "multi_tensor",
    "mxnet_format",
    "sparse",
    # types
    "FlatParams",
    "RowSparse",
    # MXNet-style facade
    "Optimizer",
    "Updater",
    "create",
    "get_updater",
    "register",
    "SGD",
    "NAG",
    "Signum",
    "SGLD",
    "DCASGD",
    "LBSGD",
    "ccSGD",
    "AdaGrad",
    "GroupAdaGrad",
    "AdaDelta",
    "RMSProp",
    "Adam",
    "AdamW",
    "Adamax",
    "Nadam",
    "AdaBelief",
    "Ftrl",
    "FTML",
    "LARS",
    "LAMB",
    "LANS",
    "Test",
    # functional API: constructors and their states
    "sgd",
    "nag",
    "signum",
    "sgld",
    "dcasgd",
    "lbsgd",
    "ccsgd",
    "adagrad",
    "group_adagrad",
    "adadelta",
    "rmsprop",
    "adam",
    "adamw",
    "adamax",
    "nadam",
    "adabelief",
    "ftrl",
    "ftml",
    "lars",
    "lamb",
    "lans",
    "test",
    "AdaDeltaState",
    "AdaGradState",
    "AdamState",
    "AdamaxState",
    "DCASGDState",
    "FTMLState",
    "FtrlState",
    "LBSGDState",
    "NadamState",
    "RMSPropState",
    "SGDState",
    "SGLDState",
    "SignumState",
    "TestState",
]
