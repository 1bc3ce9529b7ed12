"""The functional driver: one update rule, mapped over a pytree as an ``optax.GradientTransformation``.

An optimizer is described once by a :class:`Rule`: its per-parameter state fields, its hyperparameters, and
two pure functions, ``init(w, state_dtype, opts)`` and ``step(g, w, s, hp, opts)``. This module turns a rule
into an ``optax`` transform:

* ``init(params)`` builds the named state (``count``, the rule's fields as trees shaped like ``params``, and the
  float32 master copy of 16-bit leaves when ``multi_precision=True``);
* ``update(grads, state, params)`` resolves the hyperparameters for this step (Python floats, JAX scalars or
  schedules; the MXNet ``lr_scheduler``; per-leaf ``lr_mult``/``wd_mult``), runs the rule on every leaf, and
  returns the updates.

:func:`leaf_update` is the per-parameter core shared with the MXNet-style facade, so the facade never carries a
second copy of any update rule.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import _base, multi_tensor
from ._base import check_clip_gradient, check_range, is_python_number, is_static_one, is_static_zero
from .multi_tensor import FlatParams
from .sparse import RowSparse, gather_rows, scatter_rows, unique_rows


def _is_unit(x: Any) -> bool:
    """Leaves of a gradient tree as the driver sees them: arrays, ``RowSparse`` and ``FlatParams``."""
    return isinstance(x, (RowSparse, FlatParams))


FP16_WARNING = (
    "Accumulating with float16 in optimizer can lead to poor accuracy or slow convergence. "
    "Consider using multi_precision=True option of the optimizer"
)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One MXNet optimizer's math and metadata, independent of where it runs.

    Attributes:
      name: MXNet registry name (``'adam'``) used in error messages.
      state_cls: the ``NamedTuple`` of the functional state: ``count``, then ``fields``, then ``master``
        (plus ``key`` when ``uses_key``).
      fields: names of the per-parameter state entries, in the order ``init``/``step`` use them.
      init: ``(w, state_dtype, opts) -> tuple`` of per-parameter state arrays (``None`` for an absent entry).
      step: ``(g, w, s, hp, opts) -> (out, new_s)``; ``out`` is the weight change, or the new weight when
        ``returns_weight``. ``hp`` maps names to per-parameter values for this step (``lr``, ``wd``, ``t``,
        ``rescale_grad``, ``clip_gradient`` and the rule's ``hyper`` names).
      hyper: names of the rule's own float hyperparameters (resolved every step, may be schedules).
      static: names of the rule's own boolean switches, fixed at construction.
      checks: ``name -> check_range keyword arguments`` validating the rule's own hyperparameters.
      prepare: ``(args) -> opts``: derive structural options from the constructor arguments.
      fp32_state: MXNet keeps this optimizer's state in float32 whatever the weight dtype.
      returns_weight: ``step`` returns the new weight (FTML, Ftrl) rather than the change.
      weight_only_for_decay: the rule reads the weight only for weight decay, so ``params`` may be omitted
        when ``wd`` is 0.
      uses_key: the rule draws random numbers (SGLD); the state carries a PRNG key.
      lr_before_count: the learning rate is looked up before the update count is incremented (1.x LBSGD).
      validate: extra ``(owner, args) -> None`` checks across arguments.
      leaf_check: ``(owner, path, leaf, opts) -> None`` checks on each parameter at ``init``.
      derive: ``(args) -> dict`` of hyperparameters computed from the constructor arguments.
      sparse: what a :class:`~mxopt_jax.sparse.RowSparse` gradient does (MXNet's kernels, spec §0.6):
        ``"standard"`` densifies it and runs the dense rule; ``"lazy_update"`` updates only the listed rows
        when the ``lazy_update`` option is set (standard otherwise); ``"rows"`` always updates only the
        listed rows and needs ``wd == 0`` (MXNet's sparse AdaGrad/GroupAdaGrad kernels).
      sparse_hparams: ``(g_rows, w, hp, opts) -> hp`` run by the lazy path before it gathers rows, for rules
        whose step needs whole-tensor quantities (LARS's layer-wise rate from ``|w|`` and ``|g|``); ``g_rows``
        holds the summed listed rows (zero padding), whose norm is the dense gradient's.
      name_key: for rules whose step reads the parameter's name (``hp["name"]``, LARS's exemptions), the part
        of the name that matters; compiled drivers (the facade) key their programs on it, so parameters whose
        names differ only in what the rule ignores share one program. ``None``: the rule ignores names.
    """

    name: str
    state_cls: type
    fields: tuple[str, ...]
    init: Callable[..., tuple]
    step: Callable[..., tuple]
    hyper: tuple[str, ...] = ()
    static: tuple[str, ...] = ()
    checks: dict = dataclasses.field(default_factory=dict)
    prepare: Callable[[dict], dict] | None = None
    fp32_state: bool = False
    returns_weight: bool = False
    weight_only_for_decay: bool = False
    uses_key: bool = False
    lr_before_count: bool = False
    validate: Callable[[str, dict], None] | None = None
    leaf_check: Callable[..., None] | None = None
    derive: Callable[[dict], dict] | None = None
    sparse: str = "standard"
    sparse_hparams: Callable[..., dict] | None = None
    name_key: Callable[[str], str] | None = None


# --------------------------------------------------------------------------- per-parameter core
def state_dtype(rule: Rule, compute_dtype: Any, weight_dtype: Any) -> Any:
    """MXNet keeps fp32 state for some optimizers (wider for float64); the weight's dtype otherwise."""
    return compute_dtype if rule.fp32_state else weight_dtype


def leaf_init(rule: Rule, opts: dict, weight: jax.Array, multi_precision: bool) -> tuple[tuple, Any]:
    """Per-parameter state ``(fields, master)`` for one weight."""
    dtype = jnp.result_type(weight)
    cdt = _base.compute_dtype(dtype)
    mp = multi_precision and _base.is_low_precision(dtype)
    w = jnp.asarray(weight, cdt) if mp else jnp.asarray(weight)
    sdt = cdt if mp else state_dtype(rule, cdt, dtype)
    fields = rule.init(jnp.asarray(w, cdt), sdt, opts)
    return tuple(fields), (w if mp else None)


def leaf_update(
    rule: Rule,
    opts: dict,
    g: jax.Array,
    w: jax.Array | None,
    s: tuple,
    master: jax.Array | None,
    hp: dict,
) -> tuple[jax.Array, tuple, jax.Array | None]:
    """Run ``rule`` on one parameter: returns ``(update, new_fields, new_master)``.

    ``w`` is the parameter (may be ``None`` when the rule does not read it), ``master`` its float32 master
    copy under multi-precision. Arithmetic runs in float32 (float64 for float64 weights); states are stored
    back in their own dtypes; the update has the parameter's dtype, or float32 under multi-precision so that
    ``optax.apply_updates`` lands on the rounded master.
    """
    pdtype = jnp.result_type(g if w is None else w)
    cdt = _base.compute_dtype(pdtype)
    src = master if master is not None else w
    wc = None if src is None else src.astype(cdt)
    gc = g.astype(cdt)
    sc = tuple(
        None if x is None else (x.astype(cdt) if jnp.issubdtype(x.dtype, jnp.floating) else x) for x in s
    )
    out, new_s = rule.step(gc, wc, sc, hp, opts)
    new_s = tuple(
        None if n is None else (n.astype(o.dtype) if o is not None else n)
        for n, o in zip(new_s, s, strict=True)
    )
    returns_weight = opts.get("returns_weight", rule.returns_weight)
    if master is not None:
        new_master = out if returns_weight else wc + out
        new_master = new_master.astype(master.dtype)
        target = new_master.astype(pdtype).astype(jnp.float32)
        update = target - w.astype(jnp.float32)
        return update, new_s, new_master
    if returns_weight:
        update = out - wc
    else:
        update = out
    return update.astype(pdtype), new_s, None


def is_lazy(rule: Rule, opts: dict) -> bool:
    """Whether a row-sparse gradient updates only its listed rows (else: densified, standard update)."""
    return rule.sparse == "rows" or (rule.sparse == "lazy_update" and bool(opts.get("lazy_update")))


def check_sparse_wd(owner: str, rule: Rule, wd: Any, path: str) -> None:
    """MXNet's sparse AdaGrad/GroupAdaGrad kernels reject weight decay; so do we (``wd`` must be 0)."""
    if rule.sparse != "rows":
        return
    value = 0.0 if is_static_zero(wd) else _base.concrete_value(wd)
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


def apply_leaf(
    rule: Rule,
    opts: dict,
    g: Any,
    w: jax.Array | None,
    s: tuple,
    master: jax.Array | None,
    hp: dict,
    owner: str = "",
    path: str = "",
    wd_checked: bool = False,
) -> tuple[Any, tuple, jax.Array | None]:
    """:func:`leaf_update` for a dense or :class:`~mxopt_jax.sparse.RowSparse` gradient.

    A row-sparse gradient runs the lazy path (gather the listed rows of the weight, the states and the master,
    run the rule on those rows, scatter them back; the update is a ``RowSparse``) when :func:`is_lazy`, and the
    dense rule on the densified gradient otherwise. ``wd_checked``: the caller already ran
    :func:`check_sparse_wd` on concrete values (the facade, whose ``wd`` is traced here).
    """
    if not isinstance(g, RowSparse):
        _base.check_update_leaf(owner, path, g, w, master)
        return leaf_update(rule, opts, g, w, s, master, hp)
    if not jnp.issubdtype(g.indices.dtype, jnp.integer):
        raise TypeError(
            f"{owner}: the RowSparse gradient for {path!r} has {g.indices.dtype} indices: a transform earlier "
            "in the chain mapped over its indices. Element-wise optax transforms (scale, clip_by_global_norm, "
            "...) must not precede or follow a row-sparse update; apply lazy updates with optax.apply_updates"
        )
    ref = w if w is not None else master
    if ref is not None and tuple(ref.shape) != tuple(g.shape):
        raise ValueError(
            f"{owner}: the RowSparse gradient for {path!r} has shape {g.shape}, the parameter {tuple(ref.shape)}"
        )
    if not is_lazy(rule, opts):
        return leaf_update(rule, opts, g.todense(), w, s, master, hp)
    if not wd_checked:
        check_sparse_wd(owner, rule, hp["wd"], path)
    rows, values = unique_rows(g)
    if rule.sparse_hparams is not None:
        cdt = jnp.result_type(hp["lr"])
        src = w if master is None else master
        hp = rule.sparse_hparams(values.astype(cdt), None if src is None else src.astype(cdt), hp, opts)
    w_rows = None if w is None else gather_rows(w, rows)
    s_rows = tuple(None if x is None else gather_rows(x, rows) for x in s)
    m_rows = None if master is None else gather_rows(master, rows)
    update, new_rows, new_m_rows = leaf_update(rule, opts, values, w_rows, s_rows, m_rows, hp)
    new_s = tuple(None if x is None else scatter_rows(x, rows, r) for x, r in zip(s, new_rows, strict=True))
    new_master = None if master is None else scatter_rows(master, rows, new_m_rows)
    return RowSparse._unique_rows(g.shape, rows, update), new_s, new_master


def leaf_hparams(
    common: dict,
    lr: Any,
    lr_mult: Any,
    wd_mult: Any,
    t: jax.Array,
    dtype: Any,
    name: str = "",
    key: jax.Array | None = None,
) -> dict:
    """Per-parameter hyperparameters in the compute dtype (Python 1.0 / 0.0 kept static where it helps)."""
    hp = {}
    for k, v in common.items():
        if v is None:
            hp[k] = None
        elif k == "rescale_grad" and is_static_one(v):
            hp[k] = v
        elif k == "wd":
            continue
        else:
            hp[k] = jnp.asarray(v, dtype)
    wd = common["wd"]
    if is_static_zero(wd) or is_static_zero(wd_mult):
        hp["wd"] = 0.0
    else:
        hp["wd"] = jnp.asarray(wd, dtype) * (1.0 if is_static_one(wd_mult) else jnp.asarray(wd_mult, dtype))
    lr_val = jnp.asarray(lr, dtype)
    hp["lr"] = lr_val if is_static_one(lr_mult) else lr_val * jnp.asarray(lr_mult, dtype)
    hp["t"] = t
    hp["name"] = name
    hp["key"] = key
    return hp


# --------------------------------------------------------------------------- multipliers
def _mult_leaves(
    owner: str,
    argname: str,
    mult: Any,
    params: Any,
    treedef: Any,
    paths: list[str],
    units: list | None = None,
) -> list:
    """Per-leaf multipliers from ``None``, a pytree matching params, or ``(path, leaf) -> float``.

    For a :class:`~mxopt_jax.multi_tensor.FlatParams` leaf (of ``params``, or of ``units``, the gradients,
    when ``params`` is absent) the entry is the list of its original parameters' multipliers.
    """
    leaves = treedef.flatten_up_to(params) if params is not None else [None] * treedef.num_leaves
    if units is not None:
        leaves = [
            u if isinstance(u, FlatParams) and leaf is None else leaf
            for u, leaf in zip(units, leaves, strict=True)
        ]
    if mult is None:
        return [[1.0] * len(x.layout.paths) if isinstance(x, FlatParams) else 1.0 for x in leaves]
    if callable(mult):
        vals = [
            None if isinstance(leaf, FlatParams) else mult(p, leaf)
            for p, leaf in zip(paths, leaves, strict=True)
        ]
    else:
        try:
            vals = treedef.flatten_up_to(mult)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{owner}: `{argname}` must be a pytree with the same structure as the parameters "
                f"(one float per parameter) or a callable (path, leaf) -> float; structure mismatch: {exc}"
            ) from None
    out = []
    for p, v, leaf in zip(paths, vals, leaves, strict=True):
        if isinstance(leaf, FlatParams):  # one multiplier per original parameter of the buffers
            out.append(_flat_mults(owner, argname, mult, v, leaf.layout, p))
            continue
        out.append(_check_mult(owner, argname, p, v))
    return out


def _check_mult(owner: str, argname: str, p: str, v: Any) -> Any:
    if v is None:
        v = 1.0
    check_range(owner, f"{argname}[{p!r}]", v, low=0.0)
    if not is_python_number(v):
        arr = jnp.asarray(v)
        if arr.shape != ():
            raise ValueError(f"{owner}: `{argname}[{p!r}]` must be a scalar, got shape {arr.shape}")
    return float(v) if is_python_number(v) else v


def _inner_paths(layout: multi_tensor.Layout, outer: str) -> list[str]:
    return [f"{outer}/{p}" if outer and p else (outer or p) for p in layout.paths]


def _flat_mults(
    owner: str, argname: str, mult: Any, sub: Any, layout: multi_tensor.Layout, outer: str
) -> list:
    paths = _inner_paths(layout, outer)
    if mult is None:
        return [1.0] * len(paths)
    if callable(mult):
        leaves = [jax.ShapeDtypeStruct(sh, dt) for sh, dt in zip(layout.shapes, layout.dtypes, strict=True)]
        vals = [mult(p, leaf) for p, leaf in zip(paths, leaves, strict=True)]
    else:
        try:
            vals = layout.treedef.flatten_up_to(sub)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"{owner}: `{argname}` for the FlatParams at {outer or '<root>'!r} must match the structure of "
                f"the parameters it was built from: {exc}"
            ) from None
    return [_check_mult(owner, argname, p, v) for p, v in zip(paths, vals, strict=True)]


# --------------------------------------------------------------------------- the transform
def _validate(owner: str, rule: Rule, args: dict) -> None:
    check_range(owner, "wd", args["wd"], low=0.0)
    check_range(owner, "rescale_grad", args["rescale_grad"], low=0.0, low_open=True)
    check_clip_gradient(owner, args["clip_gradient"])
    _base.check_bool(owner, "multi_precision", args["multi_precision"])
    _base.check_int(owner, "begin_num_update", args["begin_num_update"], low=0)
    agg = args["aggregate_num"]
    if agg is not None and not (isinstance(agg, float) and agg == np.inf):
        _base.check_int(owner, "aggregate_num", agg, low=1)
    fused = args["use_fused_step"]
    if fused is not None:
        _base.check_bool(owner, "use_fused_step", fused)
    for name in rule.static:  # structural switches are booleans
        _base.check_bool(owner, name, args[name])
    for name, kw in rule.checks.items():
        check_range(owner, name, args[name], **kw)
    if rule.validate is not None:
        rule.validate(owner, args)


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A rule with validated constructor arguments: what every driver (functional, facade) needs.

    Attributes:
      rule: the update rule.
      owner: name used in error messages (``mxopt_jax.<name>``).
      args: the constructor arguments, with derived values added.
      opts: structural options passed to ``rule.init``/``rule.step``.
      hypers: ``name -> value`` of the per-step float hyperparameters (``wd``, ``rescale_grad``,
        ``clip_gradient`` and the rule's own), each a Python number, JAX scalar, schedule or ``None``.
      learning_rate: the resolved learning rate (``None`` when a scheduler gives it).
      lr_scheduler: the scheduler object, after MXNet's ``base_lr`` overwrite, or ``None``.
    """

    rule: Rule
    owner: str
    args: dict
    opts: dict
    hypers: dict
    learning_rate: Any
    lr_scheduler: Any


def prepare(rule: Rule, args: dict) -> Prepared:
    """Validate a constructor's arguments and split them into options and hyperparameters."""
    owner = f"mxopt_jax.{rule.name}"
    args = dict(args)
    _validate(owner, rule, args)
    if rule.derive is not None:
        args.update(rule.derive(args))
    learning_rate, lr_scheduler = _base.resolve_learning_rate(
        owner, args["learning_rate"], args["lr_scheduler"]
    )
    opts = {k: args[k] for k in rule.static}
    if rule.prepare is not None:
        opts.update(rule.prepare(args))
    hypers = {k: args[k] for k in ("wd", "rescale_grad", "clip_gradient", *rule.hyper)}
    return Prepared(rule, owner, args, opts, hypers, learning_rate, lr_scheduler)


def build(rule: Rule, args: dict) -> optax.GradientTransformation:
    """Make the ``optax`` transform for ``rule`` from a constructor's arguments (its ``locals()``)."""
    prep = prepare(rule, args)
    owner, opts, hypers = prep.owner, prep.opts, prep.hypers
    learning_rate, lr_scheduler = prep.learning_rate, prep.lr_scheduler
    args = prep.args
    sched = None if lr_scheduler is None else _base.scheduler_fn(lr_scheduler)
    multi_precision = bool(args["multi_precision"])
    begin = args["begin_num_update"]
    lr_mult, wd_mult = args["lr_mult"], args["wd_mult"]
    seed = args.get("seed", 0)

    def init_fn(params):
        leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(params, is_leaf=_is_unit)
        paths = [_base.path_name(p) for p, _ in leaves_with_path]
        leaves = [leaf for _, leaf in leaves_with_path]
        warned = False
        fields_per_leaf, masters = [], []
        for path, leaf in zip(paths, leaves, strict=True):
            if isinstance(leaf, RowSparse):
                raise TypeError(
                    f"{owner}: parameter {path or '<root>'} is a RowSparse; parameters must be dense"
                )
            units = leaf.buffers if isinstance(leaf, FlatParams) else (leaf,)
            per_unit = []
            for unit in units:
                _base.check_float_leaf(owner, path, unit)
                if rule.leaf_check is not None:
                    rule.leaf_check(owner, path, unit, opts)
                if _base.is_low_precision(jnp.result_type(unit)) and not multi_precision and not warned:
                    warnings.warn(FP16_WARNING, UserWarning, stacklevel=3)
                    warned = True
                per_unit.append(leaf_init(rule, opts, unit, multi_precision))
            if isinstance(leaf, FlatParams):
                f = tuple(
                    None
                    if all(u[0][j] is None for u in per_unit)
                    else FlatParams([u[0][j] for u in per_unit], leaf.layout)
                    for j in range(len(rule.fields))
                )
                # a master buffer for each 16-bit buffer (None for the others)
                masters_b = [u[1] for u in per_unit]
                m = None if all(x is None for x in masters_b) else FlatParams(masters_b, leaf.layout)
            else:
                f, m = per_unit[0]
            fields_per_leaf.append(f)
            masters.append(m)
        # Multipliers are checked now so a bad tree fails at init, not inside a trace.
        _mult_leaves(owner, "lr_mult", lr_mult, params, treedef, paths)
        _mult_leaves(owner, "wd_mult", wd_mult, params, treedef, paths)
        state = {"count": jnp.zeros([], jnp.int32)}
        for i, name in enumerate(rule.fields):
            col = [f[i] for f in fields_per_leaf]
            state[name] = None if all(c is None for c in col) else treedef.unflatten(col)
        state["master"] = None if all(m is None for m in masters) else treedef.unflatten(masters)
        if rule.uses_key:
            state["key"] = _make_key(owner, seed)
        return rule.state_cls(**state)

    def update_fn(updates, state, params=None):
        _base.check_state_type(owner, state, rule.state_cls)
        leaves_with_path, treedef = jax.tree_util.tree_flatten_with_path(updates, is_leaf=_is_unit)
        paths = [_base.path_name(p) for p, _ in leaves_with_path]
        g_leaves = [leaf for _, leaf in leaves_with_path]
        count = state.count
        common = {k: _base.resolve(v, count) for k, v in hypers.items()}
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
        else:
            try:
                p_leaves = treedef.flatten_up_to(params)
            except (ValueError, TypeError) as exc:
                raise ValueError(
                    f"{owner}: `params` and the gradients have different tree structures: {exc}"
                ) from None
        fields = {}
        for name in rule.fields:
            tree = getattr(state, name)
            fields[name] = None if tree is None else _flatten_state(owner, name, treedef, tree)
        masters = (
            [None] * len(g_leaves)
            if state.master is None
            else _flatten_state(owner, "master", treedef, state.master)
        )
        lr_mults = _mult_leaves(owner, "lr_mult", lr_mult, params, treedef, paths, g_leaves)
        wd_mults = _mult_leaves(owner, "wd_mult", wd_mult, params, treedef, paths, g_leaves)
        num_update = begin + count + (0 if rule.lr_before_count else 1)
        t = begin + count + 1
        lr = sched(num_update) if sched is not None else _base.resolve(learning_rate, count)
        new_key, leaf_keys = None, [None] * len(g_leaves)
        if rule.uses_key:
            new_key, sub = jax.random.split(state.key)
            leaf_keys = list(jax.random.split(sub, max(len(g_leaves), 1)))
        outs, new_fields, new_masters = [], [], []
        checked: set = set()  # state shapes checked per (parameter shape, dtype): one eval_shape each
        for i, g in enumerate(g_leaves):
            s = tuple(None if fields[n] is None else fields[n][i] for n in rule.fields)
            if not isinstance(g, (FlatParams, RowSparse)):
                _base.check_update_leaf(owner, paths[i], g, p_leaves[i], masters[i])
            if not isinstance(g, FlatParams):
                ref = p_leaves[i]
                if ref is None:
                    ref = jax.ShapeDtypeStruct(g.shape, g.values.dtype) if isinstance(g, RowSparse) else g
                _check_state(owner, rule, opts, paths[i], s, ref, checked)
            if isinstance(g, FlatParams):
                u, ns, nm = _flat_update(
                    rule,
                    opts,
                    owner,
                    common,
                    lr,
                    t,
                    paths[i],
                    g,
                    p_leaves[i],
                    s,
                    masters[i],
                    lr_mults[i],
                    wd_mults[i],
                    leaf_keys[i],
                )
            else:
                ref = g if p_leaves[i] is None else p_leaves[i]
                cdt = _base.compute_dtype(jnp.result_type(ref))
                hp = leaf_hparams(common, lr, lr_mults[i], wd_mults[i], t, cdt, paths[i], leaf_keys[i])
                u, ns, nm = apply_leaf(rule, opts, g, p_leaves[i], s, masters[i], hp, owner, paths[i])
            outs.append(u)
            new_fields.append(ns)
            new_masters.append(nm)
        new_state = {"count": optax.safe_int32_increment(count)}
        for j, name in enumerate(rule.fields):
            new_state[name] = None if fields[name] is None else treedef.unflatten([f[j] for f in new_fields])
        new_state["master"] = None if state.master is None else treedef.unflatten(new_masters)
        if rule.uses_key:
            new_state["key"] = new_key
        return treedef.unflatten(outs), rule.state_cls(**new_state)

    tx = optax.GradientTransformation(init_fn, update_fn)
    agg = args["aggregate_num"]
    if agg is None or (not isinstance(agg, float) and agg == 1):
        return tx
    if rule.name == "group_adagrad":
        raise ValueError(
            f"{owner}: `aggregate_num` > 1 is not supported: GroupAdaGrad keeps one accumulator per row of a 2-D "
            "parameter, which a flat multi-tensor buffer has not; use aggregate_num=None"
        )
    return _aggregated(owner, tx, agg)


def _aggregated(owner: str, tx: optax.GradientTransformation, agg: Any) -> optax.GradientTransformation:
    """``aggregate_num > 1``: state kept as multi-tensor buffers; gradients concatenated, updates split."""

    def flat(tree: Any, what: str) -> FlatParams:
        leaves = jax.tree_util.tree_leaves(tree, is_leaf=_is_unit)
        if any(isinstance(x, (RowSparse, FlatParams)) for x in leaves):
            raise ValueError(
                f"{owner}: `aggregate_num` > 1 groups an ordinary parameter tree into buffers; `{what}` holds a "
                "RowSparse or FlatParams (use aggregate_num=None for row-sparse gradients; pass FlatParams to a "
                "transform built without aggregate_num)"
            )
        return FlatParams.from_tree(tree, agg)

    def init_fn(params):
        return tx.init(flat(params, "params"))

    def update_fn(updates, state, params=None):
        if params is None:
            g, p = flat(updates, "updates"), None
        else:
            p = flat(params, "params")
            try:
                p.layout.treedef.flatten_up_to(updates)
            except (ValueError, TypeError) as exc:
                raise ValueError(
                    f"{owner}: `params` and the gradients have different tree structures: {exc}"
                ) from None
            flat(updates, "updates")
            g = p.like(updates)
        u, state = tx.update(g, state, p)
        return u.to_tree(), state

    return optax.GradientTransformation(init_fn, update_fn)


def _flat_update(rule, opts, owner, common, lr, t, path, g, w, s, master, lr_mults, wd_mults, key):
    """The multi-tensor path: the rule once per buffer of a :class:`~mxopt_jax.multi_tensor.FlatParams`."""
    layout = g.layout
    for what, x in (("params", w), ("master", master), *zip(rule.fields, s, strict=True)):
        if x is not None and (not isinstance(x, FlatParams) or x.layout != layout):
            raise ValueError(
                f"{owner}: the gradient at {path or '<root>'!r} is a FlatParams but `{what}` there is not one "
                "with the same layout (build params, gradients and state from the same FlatParams)"
            )
    keys = [None] * len(g.buffers) if key is None else list(jax.random.split(key, len(g.buffers)))
    outs, new_s, new_m = [], [], []
    for b, gb in enumerate(g.buffers):
        wb = None if w is None else w.buffers[b]
        sb = tuple(None if x is None else x.buffers[b] for x in s)
        mb = None if master is None else master.buffers[b]
        segments = multi_tensor.segment_info(layout, b)
        cdt = _base.compute_dtype(jnp.result_type(gb if wb is None else wb))
        members = layout.groups[b]
        lr_m = multi_tensor.expand([lr_mults[j] for j in members], segments["sizes"], cdt)
        wd_m = multi_tensor.expand([wd_mults[j] for j in members], segments["sizes"], cdt)
        hp = leaf_hparams(common, lr, lr_m, wd_m, t, cdt, "", keys[b])
        u, ns, nm = leaf_update(rule, {**opts, "segments": segments}, gb, wb, sb, mb, hp)
        outs.append(u)
        new_s.append(ns)
        new_m.append(nm)
    fields = tuple(
        None if s[j] is None else FlatParams([n[j] for n in new_s], layout) for j in range(len(rule.fields))
    )
    return FlatParams(outs, layout), fields, (None if master is None else FlatParams(new_m, layout))


def _check_state(owner: str, rule: Rule, opts: dict, path: str, s: tuple, ref: Any, checked: set) -> None:
    """One parameter's state entries have the shapes ``rule.init`` gives for its parameter (static check)."""
    if not rule.fields:
        return
    try:
        sig = (
            tuple(jnp.shape(ref)),
            jnp.result_type(ref),
            tuple(None if x is None else jnp.shape(x) for x in s),
        )
    except (TypeError, ValueError):
        return  # not an array: check_update_leaf names it
    if sig in checked:
        return
    _base.check_state_leaves(owner, path, rule.fields, s, rule.init, ref, opts)
    checked.add(sig)


def _flatten_state(owner: str, name: str, treedef: Any, tree: Any) -> list:
    try:
        return treedef.flatten_up_to(tree)
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"{owner}: optimizer state `{name}` does not match the gradients' tree structure "
            f"(was the state created by init() on these parameters?): {exc}"
        ) from None


def _make_key(owner: str, seed: Any) -> jax.Array:
    if isinstance(seed, jax.Array) and seed.shape == (2,) and seed.dtype == jnp.uint32:
        return seed
    if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(seed)
    if isinstance(seed, bool) or not (
        isinstance(seed, (int, np.integer)) or _base.concrete_value(seed) is not None
    ):
        raise TypeError(f"{owner}: `seed` must be an int or a jax.random key, got {seed!r}")
    return jax.random.PRNGKey(int(_base.concrete_value(seed)))


COMMON_DOC = """
    Common arguments (MXNet's ``Optimizer`` base class, keyword-only here):
      wd: weight decay coefficient (L2), ``>= 0``; multiplied per parameter by ``wd_mult``.
      rescale_grad: factor applied to the raw gradient first (MXNet: ``1 / batch_size``), ``> 0``.
      clip_gradient: clip the rescaled gradient to ``[-c, c]``; ``None`` (default) disables clipping.
      lr_scheduler: an :mod:`mxopt_jax.lr_scheduler` scheduler (or any jittable ``num_update -> lr``),
        called with MXNet's ``num_update`` (1 on the first update). When ``learning_rate`` is also given and
        differs from the scheduler's ``base_lr``, the scheduler's ``base_lr`` is overwritten (as MXNet does)
        and a warning is emitted; pass ``learning_rate=None`` to keep the scheduler's own value.
      multi_precision: keep a float32 master copy of float16/bfloat16 parameters in the state, compute in
        float32 and return updates that make ``optax.apply_updates`` land on the rounded master.
      lr_mult, wd_mult: per-parameter multipliers: a pytree of floats matching the parameters, or a callable
        ``(path, leaf) -> float`` where ``path`` is the parameter's keys joined by ``'/'``. Default 1.
      begin_num_update: the update count to start from (shifts ``t`` and the scheduler input).
      aggregate_num, use_fused_step: accepted for MXNet compatibility; both MXNet paths compute the fused
        (default) math here (see "Differences from MXNet").

    All float hyperparameters may be Python floats, JAX scalars or schedules ``count -> value`` (``count``
    is 0 on the first update, optax's convention), so ``optax.inject_hyperparams`` works; pass
    ``static_args=('lr_scheduler', 'lr_mult', 'wd_mult')`` to it when those are given, and
    ``hyperparam_dtype=jnp.float32`` for 16-bit parameters.
"""


def with_common_doc(fn: Callable) -> Callable:
    """Append the shared description of MXNet's base arguments to a constructor's docstring."""
    fn.__doc__ = (fn.__doc__ or "").rstrip() + "\n" + COMMON_DOC
    return fn
