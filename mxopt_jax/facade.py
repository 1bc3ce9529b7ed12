"""The MXNet-style facade: ``Optimizer`` classes, the registry and the ``Updater`` (MXNet 2.0 semantics).

``create('adam', learning_rate=...)`` returns an object with MXNet's constructor, learning-rate / scheduler
rules, per-index ``lr_mult`` / ``wd_mult`` lookup, per-index update counts and multi-precision handling, and
:class:`Updater` drives it with MXNet's ``updater(index, grad, weight)`` calling convention. JAX arrays are
immutable, so nothing is updated in place: ``Updater.__call__`` returns the new weight(s) and
``Optimizer.update`` / ``update_multi_precision`` / ``step`` / ``fused_step`` return
``(new_weights, new_states)``. ``Updater.get_states`` / ``set_states`` use a documented zip format (JSON
manifest + raw arrays), never pickle. See ``docs/differences.md`` for every departure from MXNet.
"""

from typing import TYPE_CHECKING

from ._src.facade import Optimizer, Updater, create, get_updater, register
from ._src.facade.rule_backed import CLASSES

# The classes of the optimizer table (``SGD`` ... ``Test``), each registered under MXNet's name.
globals().update(CLASSES)

if TYPE_CHECKING:  # the same names, spelled out for type checkers (they are made from the table above)
    SGD = NAG = Signum = SGLD = DCASGD = LBSGD = ccSGD = AdaGrad = GroupAdaGrad = AdaDelta = Optimizer
    RMSProp = Adam = AdamW = Adamax = Nadam = AdaBelief = Ftrl = FTML = LARS = LAMB = LANS = Test = Optimizer

__all__ = ["Optimizer", "Updater", "create", "get_updater", "register", *CLASSES]
