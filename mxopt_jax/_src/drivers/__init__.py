"""Drivers: where a rule runs. One module per kind of leaf, and the one table that picks between them.

A leaf of a gradient tree is one of three kinds, each handled by its own driver module:

=================  =========================================  ==========================================
leaf               driver                                     what it does with the rule
=================  =========================================  ==========================================
array              :mod:`~mxopt_jax._src.drivers.dense`        the rule on the whole parameter
``RowSparse``      :mod:`~mxopt_jax._src.drivers.lazy`         the rule on the listed rows, scattered back
                                                              (or on the densified gradient: standard)
``FlatParams``     :mod:`~mxopt_jax._src.drivers.flat`         the rule once per flat buffer, with
                                                              per-segment hyperparameters
=================  =========================================  ==========================================

:mod:`~mxopt_jax._src.drivers.tree` maps these over a pytree as an ``optax.GradientTransformation``; the
MXNet-style facade calls :func:`update` per index. A fourth kind of leaf joins by adding a module with the
same three functions (``init``, ``multiplier``, ``update``) and one row to :data:`KINDS`; nothing else
changes.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..flatparams import FlatParams
from ..rowsparse import RowSparse
from . import dense, flat, lazy

#: Leaf type -> driver module (``init``, ``multiplier``, ``update``); any other leaf is a dense array.
KINDS: dict[type, ModuleType] = {RowSparse: lazy, FlatParams: flat}


def kind_of(leaf: Any) -> ModuleType:
    """The driver module for a leaf of a gradient (or parameter) tree."""
    return KINDS.get(type(leaf), dense)


def is_unit(x: Any) -> bool:
    """Leaves of a tree as the drivers see them: arrays and every registered kind (``is_leaf`` for flattening)."""
    return type(x) in KINDS


def update(ctx: Any, slot: Any) -> tuple[Any, tuple, Any]:
    """Run the rule on one parameter with the driver of its gradient's kind: ``(update, new_state, new_master)``."""
    return kind_of(slot.grad).update(ctx, slot)
