"""The update rule: one MXNet optimizer's math, written once, and the per-parameter core every driver runs.

An optimizer is described by a :class:`Rule`: its per-parameter state fields, its hyperparameters, its
capabilities (row-sparse behaviour, flat buffers, a pre-step hook) and two pure functions,
``init(w, state_dtype, opts)`` and ``step(g, w, s, hp, opts)``. Where the rule runs is decided by a driver
(:mod:`mxopt_jax._src.drivers`): over a pytree, over the listed rows of a row-sparse gradient, over the flat
buffers of a ``FlatParams``, or per index in the MXNet-style facade. Every driver goes through the functions
of this module:

* :func:`leaf_init` makes one parameter's state (and its float32 master under multi-precision);
* :func:`hparams` resolves one parameter's hyperparameters for this step from a :class:`StepContext`;
* :func:`pre_step` runs the rule's whole-tensor hook (LARS's layer-wise rate) on the whole parameter;
* :func:`leaf_update` runs the rule on one parameter (or a gathered block of rows, or a flat buffer),
  including the multi-precision master, and returns the update in the parameter's dtype.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from .numerics import compute_dtype, is_low_precision, multi_output_fusion
from .validation import is_python_number, is_static_one, is_static_zero

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
        (plus ``key`` when ``uses_key``). The states are written in the functional ``NamedTuple("...", [...])``
        syntax: their ``count`` field (the update count, optax's name, which users read) shadows
        ``tuple.count``, and a type checker rejects that override in the class syntax only; the functional
        syntax gives the same class and types ``state.count`` as the array it is.
      fields: names of the per-parameter state entries, in the order ``init``/``step`` use them.
      init: ``(w, state_dtype, opts) -> tuple`` of per-parameter state arrays (``None`` for an absent entry);
        entries must be distinct arrays (a jitted step may donate every one of them).
      step: ``(g, w, s, hp, opts) -> (out, new_s)``; ``out`` is the weight change, or the new weight when
        :meth:`gives_weight`. ``hp`` maps names to per-parameter values for this step (``lr``, ``wd``, ``t``,
        ``rescale_grad``, ``clip_gradient`` and the rule's ``hyper`` names).
      hyper: names of the rule's own float hyperparameters (resolved every step, may be schedules).
      static: names of the rule's own boolean switches, fixed at construction.
      checks: ``name -> check_range keyword arguments`` validating the rule's own hyperparameters.
      prepare: ``(args) -> opts``: derive structural options from the constructor arguments.
      fp32_state: MXNet keeps this optimizer's state in float32 whatever the weight dtype.
      returns_weight: ``step`` returns the new weight (FTML, Ftrl) rather than the change: a bool, or
        ``(opts) -> bool`` when it depends on the options (RMSProp with ``clip_weights``).
      weight_only_for_decay: the rule reads the weight only for weight decay, so ``params`` may be omitted
        when ``wd`` is 0.
      uses_key: the rule draws random numbers (SGLD); the state carries a PRNG key.
      lr_before_count: the learning rate is looked up before the update count is incremented (1.x LBSGD).
      validate: extra ``(owner, args) -> None`` checks across arguments.
      leaf_check: ``(owner, path, leaf, opts) -> None`` checks on each parameter at ``init``.
      derive: ``(args) -> dict`` of hyperparameters computed from the constructor arguments.
      sparse: what a :class:`~mxopt_jax.sparse.RowSparse` gradient does (MXNet's kernels):
        ``"standard"`` densifies it and runs the dense rule; ``"lazy_update"`` updates only the listed rows
        when the ``lazy_update`` option is set (standard otherwise); ``"rows"`` always updates only the
        listed rows and needs ``wd == 0`` (MXNet's sparse AdaGrad/GroupAdaGrad kernels).
      no_flat: why the rule cannot run on the flat buffers of a ``FlatParams`` (``aggregate_num``), or ``None``
        when it can (its per-parameter reductions go through :func:`~mxopt_jax._src.numerics.param_sum`).
        GroupAdaGrad's state has a per-row shape, which a flat buffer has not.
      pre_step: ``(g, w, hp, opts) -> hp``, run by every driver on the whole parameter before the rule (for
        rules whose step needs whole-tensor quantities: LARS's layer-wise rate from ``|w|`` and ``|g|``). The
        lazy driver passes the summed listed rows as ``g`` (zero padding), whose norm is the dense gradient's.
      one_pass: the rule's step is element-wise (no reduction, no random numbers) and, measured on XLA:CPU
        with multi-output fusion, its sibling form (:func:`leaf_update` with ``siblings=True``) compiles the
        state update and the weight change into one loop. Only a capability: the dense and flat drivers use
        it when :func:`~mxopt_jax._src.numerics.multi_output_fusion` is on.
      name_key: for rules whose step reads the parameter's name (``hp["name"]``, LARS's exemptions), the part
        of the name that matters; compiled drivers (the facade) key their programs on it, so parameters whose
        names differ only in what the rule ignores share one program. ``None``: the rule ignores names.
      reads_lr_prev: the rule's step reads ``hp["lr_prev"]``, the previous update's learning rate, when
        ``learning_rate`` is a schedule (the tree driver evaluates it at the previous count); ``None`` in every
        other case (a constant or traced rate, MXNet's ``lr_scheduler``, the facade), whose previous value
        is unknown (Ftrl: FTRL-Proximal's per-step rate, docs/differences.md #20).
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
    returns_weight: bool | Callable[[dict], bool] = False
    weight_only_for_decay: bool = False
    uses_key: bool = False
    lr_before_count: bool = False
    validate: Callable[[str, dict], None] | None = None
    leaf_check: Callable[..., None] | None = None
    derive: Callable[[dict], dict] | None = None
    sparse: str = "standard"
    no_flat: str | None = None
    pre_step: Callable[..., dict] | None = None
    name_key: Callable[[str], str] | None = None
    one_pass: bool = False
    reads_lr_prev: bool = False

    def gives_weight(self, opts: dict) -> bool:
        """Whether ``step`` returns the new weight (else the change) under these options."""
        rw = self.returns_weight
        return bool(rw(opts)) if callable(rw) else rw

    def is_lazy(self, opts: dict) -> bool:
        """Whether a row-sparse gradient updates only its listed rows (else: densified, standard update)."""
        return self.sparse == "rows" or (self.sparse == "lazy_update" and bool(opts.get("lazy_update")))


@dataclasses.dataclass(frozen=True)
class StepContext:
    """What one update call shares across its parameters (built once per call by the tree driver or facade).

    Attributes:
      rule: the update rule.
      opts: structural options passed to ``rule.init``/``rule.step``.
      owner: name used in error messages (``mxopt_jax.<name>``).
      hypers: the float hyperparameters resolved for this step (``wd``, ``rescale_grad``, ``clip_gradient``
        and the rule's own), each a Python number, a JAX scalar or ``None``.
      lr: the learning rate for this step.
      t: the update count the rule sees (1 on the first update).
      lr_prev: the previous update's learning rate, for rules with ``reads_lr_prev`` when ``learning_rate``
        is a schedule (at the first update: the current rate); ``None`` otherwise.
      check_state: check each parameter's state entries against ``rule.init`` (the functional API, whose
        state comes from the user; the facade makes its own states).
      wd_checked: row-sparse weight-decay limits were checked on concrete values already (the facade).
      checked: signatures whose state entries were checked in this call (one abstract ``init`` each).
    """

    rule: Rule
    opts: dict
    owner: str
    hypers: dict
    lr: Any
    t: Any
    check_state: bool = True
    wd_checked: bool = False
    checked: set = dataclasses.field(default_factory=set, compare=False)
    lr_prev: Any = None


@dataclasses.dataclass(frozen=True)
class Slot:
    """One parameter as a driver sees it in one update call.

    Attributes:
      path: the parameter's name (tree path, keys joined by ``'/'``; the facade: its index's name).
      grad: the gradient: an array, a :class:`~mxopt_jax.sparse.RowSparse` or a ``FlatParams``.
      weight: the parameter (``None`` when the rule does not read it and it was not given).
      state: the rule's state entries for this parameter, in ``rule.fields`` order.
      master: the float32 master copy under multi-precision, else ``None``.
      lr_mult, wd_mult: this parameter's multipliers (a list per original parameter for a ``FlatParams``).
      key: this parameter's PRNG key (rules with ``uses_key``).
    """

    path: str
    grad: Any
    weight: Any
    state: tuple
    master: Any = None
    lr_mult: Any = 1.0
    wd_mult: Any = 1.0
    key: Any = None


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


def state_dtype(rule: Rule, compute: Any, weight_dtype: Any) -> Any:
    """MXNet keeps fp32 state for some optimizers (wider for float64); the weight's dtype otherwise."""
    return compute if rule.fp32_state else weight_dtype


def leaf_init(rule: Rule, opts: dict, weight: jax.Array, multi_precision: bool) -> tuple[tuple, Any]:
    """Per-parameter state ``(fields, master)`` for one weight."""
    dtype = jnp.result_type(weight)
    cdt = compute_dtype(dtype)
    mp = multi_precision and is_low_precision(dtype)
    w = jnp.asarray(weight, cdt) if mp else jnp.asarray(weight)
    sdt = cdt if mp else state_dtype(rule, cdt, dtype)
    fields = rule.init(jnp.asarray(w, cdt), sdt, opts)
    return tuple(fields), (w if mp else None)


def hparams(
    ctx: StepContext, dtype: Any, lr_mult: Any, wd_mult: Any, name: str = "", key: Any = None
) -> dict:
    """One parameter's hyperparameters in the compute dtype (Python 1.0 / 0.0 kept static where it helps)."""
    hp: dict[str, Any] = {}
    for k, v in ctx.hypers.items():
        if v is None:
            hp[k] = None
        elif k == "rescale_grad" and is_static_one(v):
            hp[k] = v
        elif k != "wd":
            hp[k] = jnp.asarray(v, dtype)
    wd = ctx.hypers["wd"]
    if is_static_zero(wd) or is_static_zero(wd_mult):
        hp["wd"] = 0.0
    else:
        hp["wd"] = jnp.asarray(wd, dtype) * (1.0 if is_static_one(wd_mult) else jnp.asarray(wd_mult, dtype))
    lr_val = jnp.asarray(ctx.lr, dtype)
    hp["lr"] = lr_val if is_static_one(lr_mult) else lr_val * jnp.asarray(lr_mult, dtype)
    if ctx.lr_prev is not None:
        prev = jnp.asarray(ctx.lr_prev, dtype)
        hp["lr_prev"] = prev if is_static_one(lr_mult) else prev * jnp.asarray(lr_mult, dtype)
    else:
        hp["lr_prev"] = None
    hp["t"] = ctx.t
    # Hyperparameters given as Python numbers > 0: quotients by them need no 0 / 0 guard (numerics.div0).
    hp["positive"] = frozenset(k for k, v in ctx.hypers.items() if is_python_number(v) and float(v) > 0)
    # Hyperparameters given as Python numbers, at full (double) precision: what the host computes from them
    # (the bias corrections, numerics.bias_correction) is computed from these, as MXNet does, not from their
    # float32 rounding.
    hp["exact"] = {k: float(v) for k, v in ctx.hypers.items() if is_python_number(v)}
    hp["name"] = name
    hp["key"] = key
    return hp


def one_pass(rule: Rule) -> bool:
    """Whether the drivers run ``rule`` in its sibling (one-pass) form in this process."""
    return rule.one_pass and multi_output_fusion()


def pre_step(rule: Rule, opts: dict, g: jax.Array, w: Any, master: Any, hp: dict) -> dict:
    """The rule's whole-tensor hook (``rule.pre_step``) on the whole parameter, in the compute dtype."""
    if rule.pre_step is None:
        return hp
    cdt = jnp.result_type(hp["lr"])
    src = w if master is None else master
    return rule.pre_step(g.astype(cdt), None if src is None else src.astype(cdt), hp, opts)


def leaf_update(
    rule: Rule,
    opts: dict,
    g: jax.Array,
    w: jax.Array | None,
    s: tuple,
    master: jax.Array | None,
    hp: dict,
    siblings: bool = False,
    whole: bool = False,
) -> tuple[jax.Array, tuple, jax.Array | None]:
    """Run ``rule.step`` on one block (a parameter, gathered rows or a flat buffer): ``(update, new_s, new_master)``.

    ``siblings=True`` (rules with ``one_pass``; 32/64-bit parameters, no master) evaluates the same ``rule.step`` twice: the new
    state from ``(g, w, s)``, the weight change from ``(g * one, w * one, s * one)`` with ``one`` = 1.0 behind
    ``lax.optimization_barrier``. ``x * 1.0 == x`` exactly, so both are the rule's values; but XLA can no
    longer merge the two evaluations, so the weight change (and the ``w + update`` of ``optax.apply_updates``
    after it) is a *sibling* of the state update that reads the old state, instead of a consumer of the new
    one, and XLA:CPU's multi-output fusion puts all of it in one loop: one pass over memory.

    ``whole=True`` (the dense driver: the block is a whole parameter) multiplies a weight change that is one of
    the returned state arrays by the same opaque one, so that the caller's ``w + update`` is never an
    element-wise op alone in its loop fusion (which XLA:CPU emits slowly for small last dimensions).

    ``w`` is the parameter (may be ``None`` when the rule does not read it), ``master`` its float32 master
    copy under multi-precision. Arithmetic runs in float32 (float64 for float64 weights); states are stored
    back in their own dtypes; the update has the parameter's dtype, or float32 under multi-precision so that
    ``optax.apply_updates`` lands on the rounded master. ``hp`` has been through :func:`pre_step`.
    """
    pdtype = jnp.result_type(g if w is None else w)
    cdt = compute_dtype(pdtype)
    src = master if master is not None else w
    wc = None if src is None else src.astype(cdt)
    gc = g.astype(cdt)
    sc = tuple(
        None if x is None else (x.astype(cdt) if jnp.issubdtype(x.dtype, jnp.floating) else x) for x in s
    )
    out, new_s = rule.step(gc, wc, sc, hp, opts)
    raw_s = new_s
    if siblings and master is None and pdtype == cdt and not rule.gives_weight(opts):
        one = jax.lax.optimization_barrier(jnp.ones((), cdt))

        def rep(x):
            return x * one if x is not None and jnp.issubdtype(x.dtype, jnp.floating) else x

        out, _ = rule.step(rep(gc), rep(wc), tuple(rep(x) for x in sc), hp, opts)
    new_s = tuple(
        None if n is None else (n.astype(o.dtype) if o is not None else n)
        for n, o in zip(new_s, s, strict=True)
    )
    gives_weight = rule.gives_weight(opts)
    if master is not None:
        assert w is not None, "a master copy is kept only for a parameter the update is given"
        new_master = (out if gives_weight else wc + out).astype(master.dtype)
        target = new_master.astype(pdtype).astype(jnp.float32)
        return target - w.astype(jnp.float32), new_s, new_master
    update = out - wc if gives_weight else out
    if whole and any(update is n for n in raw_s if n is not None):
        # The weight change of a whole parameter is a state array the step also returns (SGD with momentum:
        # mom'), so the ``w + update`` of ``optax.apply_updates`` would be an add on its own. XLA:CPU emits a
        # lone element-wise op through a row-by-row path, vectorized only along the last dimension: on 3x3
        # and 7x7 convolution kernels it runs ~3.5x slower than the same add fused with anything else.
        # ``update * one`` (exact; ``one`` hidden from the simplifier) makes the add a two-op loop fusion.
        # (Not for gathered rows: there the shared update feeds two scatters, and splitting it costs more.)
        update = update * jax.lax.optimization_barrier(jnp.ones((), update.dtype))
    return update.astype(pdtype), new_s, None


def check_state_leaves(
    owner: str,
    path: str,
    names: tuple[str, ...],
    fields: tuple,
    init: Callable[..., tuple],
    ref: Any,
    opts: dict,
) -> None:
    """One parameter's state entries have the shapes the rule's ``init`` gives for a parameter like ``ref``.

    ``init`` is ``rule.init`` (evaluated abstractly with ``jax.eval_shape``, nothing is computed); a state
    made by ``init`` on differently shaped parameters of the same tree structure fails here with a message
    naming the entry, instead of broadcasting into a silently wrong update.
    """
    cdt = compute_dtype(jnp.result_type(ref))
    expected = jax.eval_shape(lambda w: tuple(init(w, cdt, opts)), jax.ShapeDtypeStruct(jnp.shape(ref), cdt))
    for n, x, e in zip(names, fields, expected, strict=True):
        if x is None or e is None:
            if (x is None) != (e is None):
                what = "missing" if x is None else "unexpected"
                raise ValueError(
                    f"{owner}: optimizer state `{n}` of parameter {path or '<root>'} is {what} (was the state "
                    "created by this optimizer's init() with the same options?)"
                )
            continue
        if tuple(jnp.shape(x)) != tuple(e.shape):
            raise ValueError(
                f"{owner}: optimizer state `{n}` of parameter {path or '<root>'} has shape "
                f"{tuple(jnp.shape(x))}, expected {tuple(e.shape)} (was the state created by init() on these "
                "parameters?)"
            )


def check_state(ctx: StepContext, path: str, s: tuple, ref: Any) -> None:
    """One parameter's state entries have the shapes ``rule.init`` gives for its parameter (static check).

    Checked once per (parameter shape, dtype, state shapes) in a call (``ctx.checked``).
    """
    rule = ctx.rule
    if not ctx.check_state or not rule.fields:
        return
    try:
        sig = (
            tuple(jnp.shape(ref)),
            jnp.result_type(ref),
            tuple(None if x is None else jnp.shape(x) for x in s),
        )
    except (TypeError, ValueError):
        return  # not an array: the driver's leaf check names it
    if sig in ctx.checked:
        return
    check_state_leaves(ctx.owner, path, rule.fields, s, rule.init, ref, ctx.opts)
    ctx.checked.add(sig)
