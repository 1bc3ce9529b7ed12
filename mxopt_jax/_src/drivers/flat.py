"""The multi-tensor driver: the rule once per flat buffer of a ``FlatParams`` (MXNet's ``aggregate_num``).

Each buffer holds many parameters of one dtype. The rule runs on the whole buffer with per-element ``lr``
and ``wd`` (each parameter's multipliers, broadcast over its segment) and with ``opts["segments"]`` set, so
that per-parameter reductions (LARS/LAMB/LANS norms, LARS's name exemptions) are segment sums
(:func:`~mxopt_jax._src.numerics.param_sum`). Rules with ``Rule.no_flat`` set refuse it.

:func:`aggregate` is the functional ``aggregate_num``: it keeps the state flat and groups an ordinary
parameter tree into buffers at every call.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from ..flatparams import FlatParams, Layout, segment_info
from ..numerics import compute_dtype, expand
from ..rowsparse import RowSparse, is_row_sparse
from ..rule import Rule, Slot, StepContext, hparams, leaf_update, one_pass, pre_step
from ..validation import structure_text, tree_mismatch
from . import dense


def check_supported(owner: str, rule: Rule, what: str) -> None:
    if rule.no_flat is not None:
        raise ValueError(
            f"{owner}: {what} is not supported: {rule.no_flat}; use aggregate_num=None and ordinary parameters"
        )


def init(rule: Rule, opts: dict, owner: str, path: str, leaf: FlatParams, multi_precision: bool) -> tuple:
    """The state of a ``FlatParams``: each field a ``FlatParams`` of the same layout (``None`` when absent)."""
    check_supported(owner, rule, "a FlatParams parameter")
    per_unit = [dense.init(rule, opts, owner, path, b, multi_precision) for b in leaf.buffers]
    fields = tuple(
        None
        if all(u[0][j] is None for u in per_unit)
        else FlatParams([u[0][j] for u in per_unit], leaf.layout)
        for j in range(len(rule.fields))
    )
    masters = [u[1] for u in per_unit]  # a master buffer for each 16-bit buffer (None for the others)
    master = None if all(m is None for m in masters) else FlatParams(masters, leaf.layout)
    return fields, master


def _inner_paths(layout: Layout, outer: str) -> list[str]:
    return [f"{outer}/{p}" if outer and p else (outer or p) for p in layout.paths]


def multiplier(owner: str, argname: str, spec: Any, path: str, leaf: FlatParams) -> list:
    """One multiplier per original parameter of the buffers (``spec`` as in :func:`dense.multiplier`, or a
    pytree structured like the parameters the ``FlatParams`` was built from)."""
    layout = leaf.layout
    paths = _inner_paths(layout, path)
    if spec is None:
        return [1.0] * len(paths)
    if callable(spec):
        views = [jax.ShapeDtypeStruct(sh, dt) for sh, dt in zip(layout.shapes, layout.dtypes, strict=True)]
        vals = [spec(p, v) for p, v in zip(paths, views, strict=True)]
    else:
        try:
            vals = layout.treedef.flatten_up_to(spec)
        except (ValueError, TypeError):
            raise ValueError(
                f"{owner}: `{argname}` for the FlatParams at {path or '<root>'!r} must match the structure of "
                f"the parameters it was built from: `{argname}` is {structure_text(spec)}, the parameters "
                f"{layout.treedef}"
            ) from None
    return [dense.check_mult(owner, argname, p, v) for p, v in zip(paths, vals, strict=True)]


def update(ctx: StepContext, slot: Slot) -> tuple[FlatParams, tuple, Any]:
    """The rule once per buffer, with per-segment multipliers and segment-wise reductions."""
    rule, g, w, master = ctx.rule, slot.grad, slot.weight, slot.master
    check_supported(ctx.owner, rule, "a FlatParams gradient")
    layout = g.layout
    for what, x in (("params", w), ("master", master), *zip(rule.fields, slot.state, strict=True)):
        if x is not None and (not isinstance(x, FlatParams) or x.layout != layout):
            raise ValueError(
                f"{ctx.owner}: the gradient at {slot.path or '<root>'!r} is a FlatParams but `{what}` there is "
                "not one with the same layout (build params, gradients and state from the same FlatParams)"
            )
    n = len(g.buffers)
    keys = [None] * n if slot.key is None else list(jax.random.split(slot.key, n))
    outs, new_s, new_m = [], [], []
    for b, gb in enumerate(g.buffers):
        wb = None if w is None else w.buffers[b]
        sb = tuple(None if x is None else x.buffers[b] for x in slot.state)
        mb = None if master is None else master.buffers[b]
        segments = segment_info(layout, b)
        cdt = compute_dtype(jnp.result_type(gb if wb is None else wb))
        members = layout.groups[b]
        lr_m = expand([slot.lr_mult[j] for j in members], segments["sizes"], cdt)
        wd_m = expand([slot.wd_mult[j] for j in members], segments["sizes"], cdt)
        opts = {**ctx.opts, "segments": segments}
        hp = hparams(ctx, cdt, lr_m, wd_m, "", keys[b])
        hp = pre_step(rule, opts, gb, wb, mb, hp)
        u, ns, nm = leaf_update(rule, opts, gb, wb, sb, mb, hp, one_pass(rule))
        outs.append(u)
        new_s.append(ns)
        new_m.append(nm)
    fields = tuple(
        None if slot.state[j] is None else FlatParams([s[j] for s in new_s], layout)
        for j in range(len(rule.fields))
    )
    return FlatParams(outs, layout), fields, (None if master is None else FlatParams(new_m, layout))


def aggregate(
    owner: str, rule: Rule, tx: optax.GradientTransformation, agg: Any
) -> optax.GradientTransformation:
    """``aggregate_num > 1``: state kept as multi-tensor buffers; gradients concatenated, updates split.

    Row-sparse gradients go through unaggregated, as MXNet's aggregated path updates its sparse entries one
    by one: the leaves whose gradient is a ``RowSparse`` are updated by ``tx`` as ordinary parameters (lazy
    or standard as the rule says), the dense leaves in flat buffers. Which leaves those are is decided by
    the first ``update``'s gradients; the state keeps both parts (``init`` cannot know, so it keeps every
    leaf flat and a later call moves the row-sparse leaves out of the buffers, once).
    """
    check_supported(owner, rule, "`aggregate_num` > 1")

    def flat(tree: Any, what: str) -> FlatParams:
        leaves = jax.tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, (RowSparse, FlatParams)))
        if any(isinstance(x, FlatParams) for x in leaves):
            raise ValueError(
                f"{owner}: `aggregate_num` > 1 groups an ordinary parameter tree into buffers; `{what}` holds a "
                "FlatParams (pass FlatParams to a transform built without aggregate_num)"
            )
        if any(isinstance(x, RowSparse) for x in leaves):
            raise ValueError(f"{owner}: `{what}` holds a RowSparse; parameters must be dense")
        return FlatParams.from_tree(tree, agg)

    def split(tree: Any, sparse: list[bool]) -> tuple[list, list]:
        leaves = jax.tree_util.tree_leaves(tree, is_leaf=lambda x: isinstance(x, RowSparse))
        return [x for x, s in zip(leaves, sparse, strict=True) if not s], [
            x for x, s in zip(leaves, sparse, strict=True) if s
        ]

    def init_fn(params):
        return tx.init(flat(params, "params"))

    def update_fn(updates, state, params=None):
        g_leaves, g_def = jax.tree_util.tree_flatten(updates, is_leaf=lambda x: isinstance(x, RowSparse))
        sparse = [isinstance(x, RowSparse) for x in g_leaves]
        if params is not None:
            try:
                p_leaves = g_def.flatten_up_to(params)
            except (ValueError, TypeError):
                raise ValueError(
                    f"{owner}: `params` and the gradients have different tree structures: "
                    + tree_mismatch("`params`", params, "the gradients", updates, is_leaf=is_row_sparse)
                ) from None
            flat(params, "params")
        if not any(sparse):
            if params is None:
                g, p = flat(updates, "updates"), None
            else:
                p = flat(params, "params")
                g = p.like(updates)
            u, state = tx.update(g, state, p)
            return u.to_tree(), state
        if params is None:
            raise ValueError(
                f"{owner}: with `aggregate_num` > 1, row-sparse gradients need `params` (the dense leaves are "
                "aggregated, the row-sparse ones updated one by one)"
            )
        # Dense leaves: one flat update over their buffers; row-sparse leaves: the per-parameter (lazy) path.
        dense_idx = [i for i, s in enumerate(sparse) if not s]
        sparse_idx = [i for i, s in enumerate(sparse) if s]
        u_leaves: list = [None] * len(g_leaves)
        state = _split_state(state, p_leaves, sparse, agg)
        d_state, s_state = state
        if dense_idx:
            p_dense = FlatParams.from_tree([p_leaves[i] for i in dense_idx], agg)
            g_dense = p_dense.like([g_leaves[i] for i in dense_idx])
            u, d_state = tx.update(g_dense, d_state, p_dense)
            for i, x in zip(dense_idx, u.to_tree(), strict=True):
                u_leaves[i] = x
        u, s_state = tx.update([g_leaves[i] for i in sparse_idx], s_state, [p_leaves[i] for i in sparse_idx])
        for i, x in zip(sparse_idx, u, strict=True):
            u_leaves[i] = x
        return g_def.unflatten(u_leaves), (d_state, s_state)

    return optax.GradientTransformation(init_fn, update_fn)


def _regroup(per_leaf: list, layout: Layout) -> FlatParams:
    """Per-parameter arrays laid out as the buffers of ``layout``."""
    return FlatParams(
        [jnp.concatenate([jnp.ravel(per_leaf[j]) for j in group]) for group in layout.groups], layout
    )


def _split_state(state: Any, p_leaves: list, sparse: list[bool], agg: Any) -> tuple:
    """The aggregated state as ``(flat state of the dense leaves, per-leaf state of the row-sparse ones)``.

    ``init`` keeps every parameter in the buffers; the first update with row-sparse gradients splits the
    state once (later calls get the split state back and keep it).
    """
    if isinstance(state, tuple) and len(state) == 2 and not hasattr(state, "_fields"):
        return state
    dense_idx = [i for i, s in enumerate(sparse) if not s]
    sparse_idx = [i for i, s in enumerate(sparse) if s]
    layout = FlatParams.from_tree([p_leaves[i] for i in dense_idx], agg).layout if dense_idx else None
    d_fields, s_fields = {}, {}
    for name in state._fields:
        value = getattr(state, name)
        if isinstance(value, FlatParams):
            leaves = jax.tree_util.tree_leaves(value.to_tree())
            d_fields[name] = None if layout is None else _regroup([leaves[i] for i in dense_idx], layout)
            s_fields[name] = [leaves[i] for i in sparse_idx]
        else:
            d_fields[name] = s_fields[name] = value
    return type(state)(**d_fields), type(state)(**s_fields)
