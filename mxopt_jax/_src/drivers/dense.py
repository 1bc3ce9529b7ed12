"""The dense driver: the rule on one whole parameter (an array leaf)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ..numerics import compute_dtype
from ..rule import (
    Rule,
    Slot,
    StepContext,
    check_state,
    hparams,
    leaf_init,
    leaf_update,
    one_pass,
    pre_step,
)
from ..validation import check_float_leaf, check_range, check_update_leaf, is_python_number


def init(
    rule: Rule, opts: dict, owner: str, path: str, leaf: Any, multi_precision: bool
) -> tuple[tuple, Any]:
    """One parameter's state ``(fields, master)``, after checking the parameter."""
    check_float_leaf(owner, path, leaf)
    if rule.leaf_check is not None:
        rule.leaf_check(owner, path, leaf, opts)
    return leaf_init(rule, opts, leaf, multi_precision)


def check_mult(owner: str, argname: str, path: str, value: Any) -> Any:
    """A multiplier: ``None`` (1.0) or a scalar ``>= 0``; Python numbers stay static."""
    if value is None:
        value = 1.0
    check_range(owner, f"{argname}[{path!r}]", value, low=0.0)
    if not is_python_number(value):
        arr = jnp.asarray(value)
        if arr.shape != ():
            raise ValueError(f"{owner}: `{argname}[{path!r}]` must be a scalar, got shape {arr.shape}")
    return float(value) if is_python_number(value) else value


def multiplier(owner: str, argname: str, spec: Any, path: str, leaf: Any) -> Any:
    """This parameter's ``lr_mult``/``wd_mult`` from ``spec``: ``None``, a value, or ``(path, leaf) -> value``.

    ``leaf`` is the parameter, or a ``jax.ShapeDtypeStruct`` of it when ``update`` got no ``params``.
    """
    return check_mult(owner, argname, path, spec(path, leaf) if callable(spec) else spec)


def update(ctx: StepContext, slot: Slot) -> tuple[jax.Array, tuple, Any]:
    """The rule on the whole parameter: ``(update, new_state, new_master)``."""
    g, w, master = slot.grad, slot.weight, slot.master
    check_update_leaf(ctx.owner, slot.path, g, w, master)
    check_state(ctx, slot.path, slot.state, g if w is None else w)
    cdt = compute_dtype(jnp.result_type(g if w is None else w))
    hp = hparams(ctx, cdt, slot.lr_mult, slot.wd_mult, slot.path, slot.key)
    hp = pre_step(ctx.rule, ctx.opts, g, w, master, hp)
    return leaf_update(ctx.rule, ctx.opts, g, w, slot.state, master, hp, one_pass(ctx.rule), whole=True)
