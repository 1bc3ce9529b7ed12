"""mxopt_jax: Apache MXNet's optimizers as JAX/optax gradient transformations.

Every constructor returns an ``optax.GradientTransformation`` with MXNet's keyword arguments and MXNet 2.0's
defaults (``lbsgd`` and ``ccsgd`` follow MXNet 1.9.1, where they live)::

    tx = mxopt_jax.ftml(learning_rate=0.01, wd=1e-4)
    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    params = optax.apply_updates(params, updates)
"""

from . import lr_scheduler
from . import mxnet_format as mxnet_format
from . import sparse as sparse
from .adagrad import AdaDeltaState, AdaGradState, adadelta, adagrad, group_adagrad
from .adam import AdamaxState, AdamState, NadamState, adabelief, adam, adamax, adamw, nadam
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
from .ftrl import FTMLState, FtrlState, ftml, ftrl
from .layerwise import lamb, lans, lars
from .rmsprop import RMSPropState, rmsprop
from .sgd import (
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
from .sparse import RowSparse as RowSparse

__version__ = "0.1.0"

#: Constructor of every optimizer, by MXNet registry name.
OPTIMIZERS = {
    "sgd": sgd,
    "nag": nag,
    "signum": signum,
    "sgld": sgld,
    "dcasgd": dcasgd,
    "lbsgd": lbsgd,
    "ccsgd": ccsgd,
    "adagrad": adagrad,
    "groupadagrad": group_adagrad,
    "adadelta": adadelta,
    "rmsprop": rmsprop,
    "adam": adam,
    "adamw": adamw,
    "adamax": adamax,
    "nadam": nadam,
    "adabelief": adabelief,
    "ftrl": ftrl,
    "ftml": ftml,
    "lars": lars,
    "lamb": lamb,
    "lans": lans,
    "test": test,
}

__all__ = [
    "OPTIMIZERS",
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
    # functional API
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
    "adabelief",
    "adadelta",
    "adagrad",
    "adam",
    "adamax",
    "adamw",
    "ccsgd",
    "dcasgd",
    "ftml",
    "ftrl",
    "group_adagrad",
    "lamb",
    "lans",
    "lars",
    "lbsgd",
    "lr_scheduler",
    "nadam",
    "nag",
    "rmsprop",
    "sgd",
    "sgld",
    "signum",
    "test",
]
