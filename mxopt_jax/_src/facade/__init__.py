"""The MXNet-style facade: ``Optimizer`` and its registry, the rule-backed classes, ``Updater``, the state format."""

from .optimizer import Optimizer, create, register
from .rule_backed import CLASSES
from .updater import Updater, get_updater

__all__ = ["CLASSES", "Optimizer", "Updater", "create", "get_updater", "register"]
