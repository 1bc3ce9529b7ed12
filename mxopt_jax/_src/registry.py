"""The one table of optimizers: everything that lists them derives from :data:`TABLE`.

``mxopt_jax.OPTIMIZERS``, the facade's classes (and MXNet's registry names they register under), the
comparison app's families and the tests' parametrizations are all read from here; adding an optimizer is one
rule and its constructor in :mod:`mxopt_jax._src.optimizers`, plus one row below (and its name in the public
``__init__``'s explicit API list, which a test checks against this table).
"""

from __future__ import annotations

import dataclasses

from .optimizers import adagrad, adam, ftrl, layerwise, rmsprop, sgd
from .rule import Rule
from .signature import Constructor

SGD_FAMILY = "SGD family"
ADAPTIVE = "adaptive family"  # AdaGrad, GroupAdaGrad, AdaDelta, RMSProp, Ftrl, FTML
ADAM_FAMILY = "Adam family"
LAYERWISE = "layer-wise family"  # LARS, LAMB, LANS


@dataclasses.dataclass(frozen=True)
class Entry:
    """One optimizer.

    Attributes:
      name: MXNet's registry name (``mxnet.optimizer.create(name)``), the key of ``mxopt_jax.OPTIMIZERS``.
      constructor: the functional constructor (``mxopt_jax.<function>``).
      class_name: the facade class (MXNet's class name).
      mxnet: MXNet's class path, for the documentation.
      family: the group the comparison app draws together.
      fused: the facade's ``use_fused_step`` default (MXNet's class default).
      aggregate: the facade's ``aggregate_num`` default (MXNet's class default).
      deprecated: MXNet's renamed keywords (old -> new), refused by the facade as MXNet does.
      deprecation: a message the facade class emits as a ``DeprecationWarning`` on construction.
      extra_doc: a sentence added to the facade class's documentation.
    """

    name: str
    constructor: Constructor[...]
    class_name: str
    mxnet: str
    family: str
    fused: bool = True
    aggregate: int = 1
    deprecated: dict = dataclasses.field(default_factory=dict)
    deprecation: str | None = None
    extra_doc: str = ""

    @property
    def rule(self) -> Rule:
        return self.constructor.rule


TABLE: tuple[Entry, ...] = (
    Entry("sgd", sgd.sgd, "SGD", "mxnet.optimizer.SGD", SGD_FAMILY),
    Entry("nag", sgd.nag, "NAG", "mxnet.optimizer.NAG", SGD_FAMILY),
    Entry("signum", sgd.signum, "Signum", "mxnet.optimizer.Signum", SGD_FAMILY),
    Entry(
        "sgld",
        sgd.sgld,
        "SGLD",
        "mxnet.optimizer.SGLD",
        SGD_FAMILY,
        fused=False,
        extra_doc="``seed`` (mxopt_jax extension): seed of the optimizer's ``jax.random`` key, split every call.",
    ),
    Entry("dcasgd", sgd.dcasgd, "DCASGD", "mxnet.optimizer.DCASGD", SGD_FAMILY, fused=False),
    Entry("lbsgd", sgd.lbsgd, "LBSGD", "mxnet.optimizer.LBSGD (MXNet 1.x)", SGD_FAMILY, fused=False),
    Entry(
        "ccsgd",
        sgd.ccsgd,
        "ccSGD",
        "mxnet.optimizer.ccSGD (MXNet 1.x)",
        SGD_FAMILY,
        deprecation="ccSGD is deprecated (as in MXNet 1.x); use SGD",
    ),
    Entry(
        "adagrad",
        adagrad.adagrad,
        "AdaGrad",
        "mxnet.optimizer.AdaGrad",
        ADAPTIVE,
        deprecated={"eps": "epsilon"},
    ),
    Entry(
        "groupadagrad",
        adagrad.group_adagrad,
        "GroupAdaGrad",
        "mxnet.optimizer.contrib.GroupAdaGrad",
        ADAPTIVE,
    ),
    Entry("adadelta", adagrad.adadelta, "AdaDelta", "mxnet.optimizer.AdaDelta", ADAPTIVE, fused=False),
    Entry(
        "rmsprop",
        rmsprop.rmsprop,
        "RMSProp",
        "mxnet.optimizer.RMSProp",
        ADAPTIVE,
        deprecated={"gamma1": "rho", "gamma2": "momentum"},
    ),
    Entry("adam", adam.adam, "Adam", "mxnet.optimizer.Adam", ADAM_FAMILY),
    Entry("adamw", adam.adamw, "AdamW", "mxnet.optimizer.AdamW", ADAM_FAMILY, aggregate=4),
    Entry("adamax", adam.adamax, "Adamax", "mxnet.optimizer.Adamax", ADAM_FAMILY, fused=False),
    Entry("nadam", adam.nadam, "Nadam", "mxnet.optimizer.Nadam", ADAM_FAMILY, fused=False),
    Entry("adabelief", adam.adabelief, "AdaBelief", "mxnet.optimizer.AdaBelief", ADAM_FAMILY, aggregate=4),
    Entry("ftrl", ftrl.ftrl, "Ftrl", "mxnet.optimizer.Ftrl", ADAPTIVE),
    Entry("ftml", ftrl.ftml, "FTML", "mxnet.optimizer.FTML", ADAPTIVE),
    Entry("lars", layerwise.lars, "LARS", "mxnet.optimizer.LARS", LAYERWISE),
    Entry("lamb", layerwise.lamb, "LAMB", "mxnet.optimizer.LAMB", LAYERWISE, aggregate=4),
    Entry("lans", layerwise.lans, "LANS", "mxnet.optimizer.LANS", LAYERWISE, aggregate=4),
    Entry("test", sgd.test, "Test", "mxnet.optimizer.Test", SGD_FAMILY, fused=False),
)

#: MXNet registry names, in table order.
NAMES: tuple[str, ...] = tuple(e.name for e in TABLE)

#: Registry name -> entry.
BY_NAME: dict[str, Entry] = {e.name: e for e in TABLE}

#: Other spellings of registry names -> the registry name: each functional constructor's name where it differs
#: (``group_adagrad`` for ``groupadagrad``), so a name written as the function is called is taken too.
ALIASES: dict[str, str] = {e.constructor.__name__: e.name for e in TABLE if e.constructor.__name__ != e.name}

#: Family -> registry names, families in order of first appearance.
FAMILIES: dict[str, tuple[str, ...]] = {}
for _e in TABLE:
    FAMILIES[_e.family] = (*FAMILIES.get(_e.family, ()), _e.name)
del _e
