"""The tree driver: a rule mapped over a pytree as an ``optax.GradientTransformation``.

* ``init(params)`` builds the named state: ``count``, the rule's fields as trees shaped like ``params``, the
  float32 master copy of 16-bit leaves when ``multi_precision=True`` and, for rules that draw random numbers,
  a PRNG key;
* ``update(grads, state, params)`` resolves the hyperparameters for this step once (:class:`StepContext`),
  resolves each leaf's multipliers, and hands every leaf to the driver of its kind
  (:func:`mxopt_jax._src.drivers.update`: dense array, ``RowSparse``, ``FlatParams``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import hyperparams
from ..numerics import is_low_precision
from ..rule import FP16_WARNING, Prepared, Slot, StepContext
from ..validation import (
    check_state_type,
    concrete_value,
    is_static_zero,
    path_name,
    structure_text,
    tree_mismatch,
    warn,
)
from . import flat, is_unit, kind_of
from . import update as update_leaf


def _flatten(tree: Any) -> tuple[list[str], list, Any]:
    leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_unit)
    return [path_name(p) for p, _ in leaves_with_path], [leaf for _, leaf in leaves_with_path], treedef


def _view(leaf: Any) -> Any:
    """What a multiplier callable sees for a parameter it was not given: its gradient's shape and dtype."""
    if kind_of(leaf) is flat:
        return leaf
    return jax.ShapeDtypeStruct(tuple(jnp.shape(leaf)), leaf.dtype)


def multipliers(owner: str, argname: str, mult: Any, treedef: Any, paths: list[str], refs: list) -> list:
    """Per-leaf multipliers from ``None``, a pytree matching the parameters, or ``(path, leaf) -> float``.

    ``refs`` are the parameters (or views of the gradients when ``update`` got no ``params``); each leaf's
    kind turns its entry into what its driver takes (a list per original parameter for a ``FlatParams``).
    """
    if mult is None or callable(mult):
        specs = [mult] * len(paths)
    else:
        try:
            specs = treedef.flatten_up_to(mult)
        except (ValueError, TypeError):
            raise ValueError(
                f"{owner}: `{argname}` must be a pytree with the same structure as the parameters "
                f"(one float per parameter) or a callable (path, leaf) -> float; `{argname}` is "
                f"{structure_text(mult)}, the parameters {treedef}"
            ) from None
    return [
        kind_of(ref).multiplier(owner, argname, spec, path, ref)
        for spec, path, ref in zip(specs, paths, refs, strict=True)
    ]


def _flatten_state(owner: str, name: str, treedef: Any, tree: Any) -> list:
    try:
        return treedef.flatten_up_to(tree)
    except (ValueError, TypeError):
        raise ValueError(
            f"{owner}: optimizer state `{name}` does not match the gradients' tree structure "
            f"(was the state created by init() on these parameters?): `{name}` is {structure_text(tree)}, the "
            f"gradients {treedef}"
        ) from None


def make_key(owner: str, seed: Any) -> jax.Array:
    """The PRNG key of a rule that draws random numbers, from an int seed or a ``jax.random`` key."""
    if isinstance(seed, jax.Array) and seed.shape == (2,) and seed.dtype == jnp.uint32:
        return seed
    if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(seed)
    value = seed if isinstance(seed, (int, np.integer)) else concrete_value(seed)
    if isinstance(seed, bool) or value is None:
        raise TypeError(f"{owner}: `seed` must be an int or a jax.random key, got {seed!r}")
    return jax.random.PRNGKey(int(value))


def transform(prep: Prepared) -> optax.GradientTransformation:
    """The ``optax`` transform of a prepared rule (``aggregate_num > 1``: through the flat driver)."""
    rule, owner, opts, args = prep.rule, prep.owner, prep.opts, prep.args
    sched = None if prep.lr_scheduler is None else hyperparams.scheduler_fn(prep.lr_scheduler)
    multi_precision = bool(args["multi_precision"])
    begin = args["begin_num_update"]
    lr_mult, wd_mult = args["lr_mult"], args["wd_mult"]

    def init_fn(params):
        paths, leaves, treedef = _flatten(params)
        per_leaf = [
            kind_of(leaf).init(rule, opts, owner, path, leaf, multi_precision)
            for path, leaf in zip(paths, leaves, strict=True)
        ]
        units = [u for leaf in leaves for u in (leaf.buffers if kind_of(leaf) is flat else (leaf,))]
        if not multi_precision and any(is_low_precision(jnp.result_type(u)) for u in units):
            warn(FP16_WARNING)  # attributed to the user's line
        # Multipliers are checked now so a bad tree fails at init, not inside a trace.
        multipliers(owner, "lr_mult", lr_mult, treedef, paths, leaves)
        multipliers(owner, "wd_mult", wd_mult, treedef, paths, leaves)
        state = {"count": jnp.zeros([], jnp.int32)}
        for i, name in enumerate(rule.fields):
            col = [f[i] for f, _ in per_leaf]
            state[name] = None if all(c is None for c in col) else treedef.unflatten(col)
        masters = [m for _, m in per_leaf]
        state["master"] = None if all(m is None for m in masters) else treedef.unflatten(masters)
        if rule.uses_key:
            state["key"] = make_key(owner, args.get("seed", 0))
        return rule.state_cls(**state)

    def update_fn(updates, state, params=None):
        check_state_type(owner, state, rule.state_cls)
        paths, g_leaves, treedef = _flatten(updates)
        count = state.count
        common = {k: hyperparams.resolve(v, count) for k, v in prep.hypers.items()}
        if params is None:
            p_leaves = [None] * len(g_leaves)
            needs = not rule.weight_only_for_decay or not is_static_zero(common["wd"])
            if needs or state.master is not None:
                why = "its update rule reads the weights" if not rule.weight_only_for_decay else "wd != 0"
                raise ValueError(
                    f"{owner}: update() needs `params` (the current parameters) because {why}"
                    + ("; multi_precision also needs them" if state.master is not None else "")
                    + ". Call update(grads, state, params)."
                )
            refs = [_view(g) for g in g_leaves]
        else:
            try:
                p_leaves = treedef.flatten_up_to(params)
            except (ValueError, TypeError):
                raise ValueError(
                    f"{owner}: `params` and the gradients have different tree structures: "
                    + tree_mismatch("`params`", params, "the gradients", updates, is_leaf=is_unit)
                ) from None
            refs = p_leaves
        fields = [
            [None] * len(g_leaves)
            if getattr(state, n) is None
            else _flatten_state(owner, n, treedef, getattr(state, n))
            for n in rule.fields
        ]
        masters = (
            [None] * len(g_leaves)
            if state.master is None
            else _flatten_state(owner, "master", treedef, state.master)
        )
        lr_mults = multipliers(owner, "lr_mult", lr_mult, treedef, paths, refs)
        wd_mults = multipliers(owner, "wd_mult", wd_mult, treedef, paths, refs)
        num_update = begin + count + (0 if rule.lr_before_count else 1)
        lr = sched(num_update) if sched is not None else hyperparams.resolve(prep.learning_rate, count)
        lr_prev = None
        if rule.reads_lr_prev and sched is None and callable(prep.learning_rate):
            # The rate of the previous update (optax's count from 0); at the first update, the current one.
            lr_prev = prep.learning_rate(jnp.maximum(count - 1, 0))
        ctx = StepContext(rule, opts, owner, common, lr, begin + count + 1, lr_prev=lr_prev)
        new_key, keys = None, [None] * len(g_leaves)
        if rule.uses_key:
            new_key, sub = jax.random.split(state.key)
            keys = list(jax.random.split(sub, max(len(g_leaves), 1)))
        results = [
            update_leaf(
                ctx,
                Slot(
                    paths[i],
                    g,
                    p_leaves[i],
                    tuple(f[i] for f in fields),
                    masters[i],
                    lr_mults[i],
                    wd_mults[i],
                    keys[i],
                ),
            )
            for i, g in enumerate(g_leaves)
        ]
        new_state = {"count": optax.safe_int32_increment(count)}
        for j, name in enumerate(rule.fields):
            new_state[name] = (
                None if getattr(state, name) is None else treedef.unflatten([r[1][j] for r in results])
            )
        new_state["master"] = None if state.master is None else treedef.unflatten([r[2] for r in results])
        if rule.uses_key:
            new_state["key"] = new_key
        return treedef.unflatten([r[0] for r in results]), rule.state_cls(**new_state)

    tx = optax.GradientTransformation(init_fn, update_fn)
    agg = args["aggregate_num"]
    if agg is None or (not isinstance(agg, float) and agg == 1):
        return tx
    return flat.aggregate(owner, rule, tx, agg)
