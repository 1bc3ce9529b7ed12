"""The lazy row-sparse driver: the rule on the listed rows of a ``RowSparse`` gradient, scattered back.

What a row-sparse gradient does follows MXNet's kernels (``Rule.sparse``): the *lazy* path gathers the listed
rows (each once, duplicates summed) of the weight, of every state entry and of the master, runs the very same
rule on those rows and scatters them back, returning the update as a ``RowSparse``; the *standard* path
densifies the gradient and runs the dense driver. Whole-tensor quantities (LARS's layer-wise rate) come from
the rule's ``pre_step`` hook on the summed rows and the whole weight, before the gather.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from ..numerics import compute_dtype
from ..rowsparse import RowSparse, check_indices, gather_rows, scatter_rows, unique_rows
from ..rule import Rule, Slot, StepContext, check_state, hparams, leaf_update, pre_step
from ..validation import concrete_value, is_static_zero
from . import dense


def init(
    rule: Rule, opts: dict, owner: str, path: str, leaf: Any, multi_precision: bool
) -> tuple[tuple, Any]:
    raise TypeError(f"{owner}: parameter {path or '<root>'} is a RowSparse; parameters must be dense")


multiplier = dense.multiplier


def check_sparse_wd(owner: str, rule: Rule, wd: Any, path: str) -> None:
    """MXNet's sparse AdaGrad/GroupAdaGrad kernels reject weight decay; so do we (``wd`` must be 0)."""
    if rule.sparse != "rows":
        return
    value = 0.0 if is_static_zero(wd) else concrete_value(wd)
    if value is None:
        raise ValueError(
            f"{owner}: a row-sparse gradient for {path!r} needs `wd` == 0 given as a number, not a traced "
            "value (MXNet's sparse kernel has no weight decay)"
        )
    if float(value) != 0.0:
        raise ValueError(
            f"{owner}: a row-sparse gradient for {path!r} needs `wd` == 0 (MXNet's sparse {rule.name} "
            f"kernel has no weight decay), got wd = {float(value)!r} for this parameter; pass a dense gradient "
            "or set wd=0"
        )


def update(ctx: StepContext, slot: Slot) -> tuple[Any, tuple, Any]:
    """The rule on the listed rows (lazy) or on the densified gradient (standard)."""
    rule, opts, owner, path = ctx.rule, ctx.opts, ctx.owner, slot.path
    g, w, s, master = slot.grad, slot.weight, slot.state, slot.master
    check_indices(g, owner, f"the RowSparse gradient for {path!r}")  # what an optax transform made of one
    ref = w if w is not None else master
    if ref is not None and tuple(ref.shape) != tuple(g.shape):
        raise ValueError(
            f"{owner}: the RowSparse gradient for {path!r} has shape {g.shape}, the parameter {tuple(ref.shape)}"
        )
    if not rule.is_lazy(opts):
        return dense.update(ctx, dataclasses.replace(slot, grad=g.todense()))
    check_state(ctx, path, s, jax.ShapeDtypeStruct(g.shape, g.dtype) if w is None else w)
    cdt = compute_dtype(g.dtype if w is None else jnp.result_type(w))
    hp = hparams(ctx, cdt, slot.lr_mult, slot.wd_mult, path, slot.key)
    if not ctx.wd_checked:
        check_sparse_wd(owner, rule, hp["wd"], path)
    rows, values = unique_rows(g)
    hp = pre_step(rule, opts, values, w, master, hp)
    w_rows = None if w is None else gather_rows(w, rows)
    s_rows = tuple(None if x is None else gather_rows(x, rows) for x in s)
    m_rows = None if master is None else gather_rows(master, rows)
    upd, new_rows, new_m_rows = leaf_update(rule, opts, values, w_rows, s_rows, m_rows, hp)
    new_s = tuple(None if x is None else scatter_rows(x, rows, r) for x, r in zip(s, new_rows, strict=True))
    new_master = None if new_m_rows is None else scatter_rows(master, rows, new_m_rows)
    # The update keeps the gradient's static metadata (shape, sorted_unique promise), so a ``lax.cond``
    # choosing between it and a zero-valued copy of the gradient (``optax.apply_if_finite``) type-checks.
    return RowSparse.tree_unflatten((g.shape, g.unique), (upd, rows)), new_s, new_master
