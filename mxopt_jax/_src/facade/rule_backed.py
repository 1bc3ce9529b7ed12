"""Optimizers whose math is a functional rule: the facade classes, generated from the optimizer table.

Every built-in class (``SGD`` ... ``Test``) is a thin :class:`RuleOptimizer` over the rule of the functional
constructor in :data:`mxopt_jax._src.registry.TABLE`: there is one copy of each update rule in the package.
``step`` evaluates the rule eagerly and ``fused_step`` runs one ``jax.jit``-compiled call per list of
parameters; both build one :class:`~mxopt_jax._src.rule.StepContext` per call and hand each index to the
driver of its gradient's kind, exactly as the functional API does. ``lr``, ``wd``, ``t`` and the float
hyperparameters are passed as traced values (changing them never recompiles).
"""

from __future__ import annotations

import dataclasses
import inspect
import secrets
from collections.abc import Callable
from typing import Any, ClassVar, NoReturn

import jax
import jax.numpy as jnp
import numpy as np

from .. import drivers, registry
from ..drivers import lazy
from ..drivers.tree import make_key
from ..numerics import is_low_precision
from ..rowsparse import RowSparse
from ..rule import Rule, Slot, StepContext, leaf_init
from ..signature import _looks_like_parameters, habit_error, parameters_hint, prepare
from ..validation import STRICTER_THAN_MXNET, check_float_leaf, warn
from .optimizer import Index, Optimizer, _float_dtype, register

_BASE_ONLY = ("param_idx2name", "sym", "param_dict")
_JIT_CACHE: dict[tuple, Callable] = {}


def _opts_key(opts: dict) -> tuple:
    return tuple(sorted(opts.items()))


@dataclasses.dataclass(frozen=True, eq=False)
class CallSpec:
    """The static description of one facade update call: what its compiled program depends on.

    Attributes:
      rule: the update rule.
      opts: the rule's structural options.
      names: each index's name (for ``fused_step``: only the part the rule reads, ``rule.name_key``).
      mp: per index, whether its state is ``(float32 master, fields)`` (multi-precision).
      hkeys: the float hyperparameters of the call as ``(name, present)`` pairs, in packing order (absent
        ones, e.g. ``clip_gradient=None``, are ``None`` in the step and take no slot in the packed array).

    Equality and hash go by ``(id(rule), opts, names, mp, hkeys)``; the hash is computed once, so a cached
    spec costs ``jax.jit`` one identity check per call.
    """

    rule: Rule
    opts: dict
    names: tuple
    mp: tuple
    hkeys: tuple
    _key: tuple = dataclasses.field(init=False, repr=False)
    _hash: int = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        key = (id(self.rule), _opts_key(self.opts), self.names, self.mp, self.hkeys)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, CallSpec) and self._hash == other._hash and self._key == other._key
        )

    @property
    def n_hypers(self) -> int:
        return sum(present for _, present in self.hkeys)


_INT_LIKE = {np.float32: np.int32, np.float64: np.int64}


def pack(lrs: list, wds: list, hvals: list, ts: list, fdt: Any) -> np.ndarray:
    """Every per-call number in ONE host integer array (one transfer per call, whatever the count):
    the bits of ``lr_0, wd_0, lr_1, wd_1, ..., hyperparameters`` as ``fdt``, then the update counts."""
    n = len(lrs)
    itype = _INT_LIKE[fdt]
    out = np.empty(2 * n + len(hvals) + n, itype)
    floats = out[: 2 * n + len(hvals)].view(fdt)
    floats[0 : 2 * n : 2] = lrs
    floats[1 : 2 * n : 2] = wds
    floats[2 * n :] = hvals
    out[2 * n + len(hvals) :] = ts
    return out


def unpack(spec: CallSpec, packed: Any) -> tuple:
    """``(scal, ts, hvec)`` of :func:`pack`'s array: ``scal[i] = (lr_i, wd_i)`` (host arrays stay on the
    host: the eager ``step`` sees NumPy scalars, as before packing)."""
    n, h = len(spec.names), spec.n_hypers
    fdt = np.float64 if packed.dtype == np.int64 else np.float32
    floats: np.ndarray | jax.Array
    ts: np.ndarray | jax.Array
    if isinstance(packed, np.ndarray):
        floats = packed[: 2 * n + h].view(fdt)
        ts = packed[2 * n + h :].astype(np.int32)
    else:
        floats = jax.lax.bitcast_convert_type(packed[: 2 * n + h], fdt)
        ts = packed[2 * n + h :].astype(jnp.int32)
    return floats[: 2 * n].reshape(n, 2), ts, floats[2 * n :]


def _apply(spec: CallSpec, weights: list, grads: list, states: list, packed: Any, keys: list):
    """The rule on a list of parameters (shared by ``step`` (eager) and ``fused_step`` (jitted)).

    ``spec`` is the static part of the call; the per-call numbers travel in ``packed`` (see :func:`pack`).
    Each index gets its own :class:`StepContext` (its lr, wd and count) and goes to the driver of its
    gradient's kind, as in the functional API.
    """
    rule, opts, names, mp = spec.rule, spec.opts, spec.names, spec.mp
    scal, ts, hvec = unpack(spec, packed)
    hypers, j = {}, 0
    for k, present in spec.hkeys:
        hypers[k] = hvec[j] if present else None
        j += present
    owner = f"mxopt_jax.{rule.name}"
    new_w, new_s = [], []
    for i, (w, g, st) in enumerate(zip(weights, grads, states, strict=True)):
        master, fields = st if mp[i] else (None, st)
        ctx = StepContext(
            rule,
            opts,
            owner,
            {**hypers, "wd": scal[i, 1]},
            scal[i, 0],
            ts[i],
            check_state=False,
            wd_checked=True,
        )
        update, nf, nm = drivers.update(ctx, Slot(names[i], g, w, fields, master, key=keys[i]))
        new_w.append((w + update).astype(w.dtype))
        new_s.append((nm, nf) if mp[i] else nf)
    return new_w, new_s


def param_name(idx2name: dict, index: Any) -> str:
    """The name a rule sees for parameter ``index`` (LARS's exemptions read it): ``idx2name[index]``, else
    ``str(index)``, as MXNet names it."""
    return str(idx2name.get(index, str(index)))


def as_array(x: Any) -> Any:
    return x if isinstance(x, jax.Array) else jnp.asarray(x)


def as_grad(g: Any) -> Any:
    """A gradient as the rules take it: a JAX array, or a :class:`~mxopt_jax.sparse.RowSparse` as is."""
    return g if isinstance(g, (RowSparse, jax.Array)) else jnp.asarray(g)


def _jitted(rule: Rule, opts: dict) -> Callable:
    """One compiled driver per (rule, structural options); jit caches by the :class:`CallSpec` (names,
    multi-precision flags, hyperparameter keys) and the shapes/dtypes of the arrays."""
    key = (id(rule), _opts_key(opts))
    fn = _JIT_CACHE.get(key)
    if fn is None:
        fn = jax.jit(_apply, static_argnums=0)
        _JIT_CACHE[key] = fn
    return fn


class _CallCache:
    """Per-optimizer host bookkeeping that does not change between calls (kept out of ``vars(opt)``, so
    ``Updater.get_states`` never sees it): where each float hyperparameter is read from, the
    :class:`CallSpec` objects by ``(names, mp, hkeys, fused)`` and the compiled function of the optimizer's
    (rule, options). Everything a call's numbers depend on (lr, wd, multipliers, counts, hyperparameter
    values, names) is still read afresh on every call."""

    __slots__ = ("fn", "hsrc", "last_bits", "last_packed", "specs")

    def __init__(self, opt: _RuleOptimizer) -> None:
        # (hyperparameter, attribute read every call or None, constant value)
        self.hsrc = tuple(
            (k, k if (k in ("rescale_grad", "clip_gradient") or k in opt._own) else None, v)
            for k, v in opt._prep.hypers.items()
            if k != "wd"
        )
        self.specs: dict = {}
        self.fn: Callable | None = None
        self.last_bits: tuple | None = None  # (dtype, bytes) of the last packed array sent to the device
        self.last_packed: Any = None  # its device copy


class _RuleOptimizer(Optimizer):
    """An optimizer whose math is a functional :class:`~mxopt_jax._src.rule.Rule` (no math here)."""

    __signature__: ClassVar[inspect.Signature]  # each table row's class: its own arguments and defaults
    _rule: Rule
    _ctor: Callable
    _call_cache: _CallCache
    _fused_default: bool = True
    _aggregate_default: int = 1
    _deprecated: dict[str, str] = {}
    _deprecation: str | None = None
    __slots__ = ("_call_cache",)  # host caches: not in vars(self), so never in Updater.get_states

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self._deprecation:
            warn(self._deprecation, DeprecationWarning)
        for old, new in self._deprecated.items():
            if old in kwargs:
                raise DeprecationWarning(f"parameter '{old}' is deprecated. Please use '{new}' instead.")
        cls_name, sig = type(self).__name__, type(self).__signature__
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise habit_error(cls_name, sig, exc, args, kwargs, facade=True) from None
        if args and _looks_like_parameters(args[0]):
            raise TypeError(
                f"{cls_name}: got {type(args[0]).__name__} as `{next(iter(sig.parameters))}`; "
                + parameters_hint(True)
            )
        bound.apply_defaults()
        given = dict(bound.arguments)
        if self._rule.uses_key and given.get("seed") is None:
            # MXNet draws SGLD's noise from its global generator, so two optimizers never share a stream:
            # a fresh seed, kept as ``self.seed`` (pass seed=... to reproduce a run)
            given["seed"] = secrets.randbits(31)
        base_only = {k: given.pop(k) for k in _BASE_ONLY}
        if given["aggregate_num"] is None:
            given["aggregate_num"] = self._aggregate_default
        if given["use_fused_step"] is None:
            given["use_fused_step"] = self._fused_default
        fargs = inspect.signature(self._ctor).bind(**given, lr_mult=None, wd_mult=None)
        fargs.apply_defaults()
        prep = prepare(self._rule, fargs.arguments)
        if given.get("axis_name") is not None:
            raise ValueError(
                f"{type(self).__name__}: `axis_name` is for the functional API inside jax.shard_map / jax.pmap "
                "(mxopt_jax.{name}(..., axis_name=...)); the facade updates whole parameters outside any mapped "
                "context, so it takes axis_name=None only".replace("{name}", self._ctor.__name__)
            )
        self._prep = prep
        self._own = tuple(
            p.name
            for p in inspect.signature(self._ctor).parameters.values()
            if p.kind != p.KEYWORD_ONLY and p.name != "learning_rate"
        )
        super().__init__(
            rescale_grad=given["rescale_grad"],
            wd=given["wd"],
            clip_gradient=given["clip_gradient"],
            learning_rate=prep.learning_rate,
            lr_scheduler=prep.lr_scheduler,
            begin_num_update=given["begin_num_update"],
            multi_precision=given["multi_precision"],
            aggregate_num=given["aggregate_num"],
            use_fused_step=given["use_fused_step"],
            **base_only,
        )
        for name in self._own:
            setattr(self, name, given[name])
        if self._rule.uses_key:
            self.seed = given["seed"]
            self._key = make_key(prep.owner, given["seed"])

    # ------------------------------------------------------------------ states
    def create_state(self, index: Index, weight: jax.Array) -> tuple:
        """The rule's per-parameter state fields (``None`` for absent ones), in the rule's field order."""
        weight = jnp.asarray(weight)
        check_float_leaf(self._prep.owner, str(index), weight)
        if self._rule.leaf_check is not None:
            self._rule.leaf_check(self._prep.owner, str(index), weight, self._prep.opts)
        fields, _ = leaf_init(self._rule, self._prep.opts, weight, False)
        return fields

    # ------------------------------------------------------------------ updates
    def _calls(self) -> _CallCache:
        try:
            return self._call_cache
        except AttributeError:
            cache = self._call_cache = _CallCache(self)
            return cache

    def _hyper_raw(self) -> list:
        """Current float hyperparameters (attributes are read every call, as MXNet reads ``self.wd`` ...)."""
        return [v if a is None else getattr(self, a) for _, a, v in self._calls().hsrc]

    def _prepare_call(
        self, indices: list, weights: list, grads: list, fused: bool = True
    ) -> tuple[CallSpec, Any, list]:
        """The host side of one call: counts, learning rates, weight decays and hyperparameters packed in
        one array (:func:`pack`), and the call's :class:`CallSpec` (cached: one object per distinct static
        description, so the compiled-program lookup is an identity check)."""
        rule, calls = self._rule, self._calls()
        if rule.lr_before_count:
            lrs = self._get_lrs(indices)
            self._update_count(indices)
        else:
            self._update_count(indices)
            lrs = self._get_lrs(indices)
        wds = self._get_wds(indices)
        if not (all(v >= 0 for v in lrs) and all(v >= 0 for v in wds)):  # NaN fails too
            self._refuse_rate(indices, lrs, wds)  # whatever set them: the numbers entering the step
        counts = self._index_update_count
        ts = [counts[i] for i in indices]
        idx2name = self.idx2name
        names = tuple([param_name(idx2name, i) for i in indices])
        if self.multi_precision:
            mp = tuple([bool(is_low_precision(w.dtype)) for w in weights])
        else:
            mp = (False,) * len(indices)
        keys = [None] * len(indices)
        if rule.uses_key:
            self._key, sub = jax.random.split(self._key)
            keys = list(jax.random.split(sub, max(len(indices), 1)))
        raw = self._hyper_raw()
        hkeys = tuple([(k, v is not None) for (k, _, _), v in zip(calls.hsrc, raw, strict=True)])
        hvals = [float(v) for v in raw if v is not None]
        fdt = _float_dtype()
        packed = pack(lrs, wds, hvals, ts, fdt)
        if rule.sparse is not None and rule.is_lazy(self._prep.opts):
            for g, wd, name in zip(grads, wds, names, strict=True):
                if isinstance(g, RowSparse):
                    lazy.check_sparse_wd(self._prep.owner, rule, float(fdt(wd)), name)
        if fused:
            # names are static in the compiled program: keep only what the rule reads (one program per
            # shape signature, not per parameter name)
            name_key = rule.name_key
            names = tuple(["" if name_key is None else name_key(n) for n in names])
        skey = (names, mp, hkeys, fused)
        spec = calls.specs.get(skey)
        if spec is None:
            if len(calls.specs) >= 4096:
                calls.specs.clear()
            spec = calls.specs[skey] = CallSpec(rule, self._prep.opts, names, mp, hkeys)
        return spec, packed, keys

    def _refuse_rate(self, indices: list, lrs: list, wds: list) -> NoReturn:
        """The ``ValueError`` for the first index whose learning rate or weight decay is negative or NaN (called
        only when one is)."""
        index, what, value = next(
            (i, what, v)
            for i, lr, wd in zip(indices, lrs, wds, strict=True)
            for what, v in (
                ("learning rate (the rate times its lr_mult)", lr),
                ("weight decay (wd times its wd_mult)", wd),
            )
            if not v >= 0
        )
        raise ValueError(
            f"{type(self).__name__}: the {what} of index {index!r} is {float(value)!r}; it must be in [0.0, inf], "
            "however it was set (set_learning_rate, the lr or wd attribute, the lr_scheduler, set_lr_mult / "
            f"set_wd_mult, param_dict) ({STRICTER_THAN_MXNET})"
        )

    def _run(self, fused: bool, indices, weights, grads, states) -> tuple[list, list]:
        indices = list(indices)
        weights = [as_array(w) for w in weights]
        grads = [as_grad(g) for g in grads]
        states = list(states)
        spec, packed, keys = self._prepare_call(indices, weights, grads, fused)
        if fused:
            calls = self._call_cache
            fn = calls.fn
            if fn is None:
                fn = calls.fn = _jitted(self._rule, self._prep.opts)
            # A loop over the indices sends the same numbers (lr, wd, count) for every index of one sweep:
            # reuse the device copy of the last packed array when its bits are unchanged (saves a transfer).
            bits = (packed.dtype.char, packed.tobytes())
            if bits == calls.last_bits:
                packed = calls.last_packed
            else:
                packed = calls.last_packed = jax.device_put(packed)
                calls.last_bits = bits
            return fn(spec, weights, grads, states, packed, keys)
        return _apply(spec, weights, grads, states, packed, keys)

    def step(self, indices: list, weights: list, grads: list, states: list) -> tuple[list, list]:
        """Eager (un-jitted) evaluation of the rule on each parameter; returns new weights and states.

        A multi-precision entry (16-bit weight with ``multi_precision=True``) has state ``(master, inner)``.
        """
        return self._run(False, indices, weights, grads, states)

    def fused_step(self, indices: list, weights: list, grads: list, states: list) -> tuple[list, list]:
        """One ``jax.jit`` call over all the parameters (same math as :meth:`step`)."""
        return self._run(True, indices, weights, grads, states)

    def update_multi_precision(
        self, indices: list, weights: list, grads: list, states: list
    ) -> tuple[list, list]:
        """Like MXNet's fused multi-precision kernels: the rule updates the master and the 16-bit weight."""
        if not isinstance(indices, (list, tuple)):
            (w,), (s,) = self.update_multi_precision([indices], [weights], [grads], [states])
            return w, s
        return self._run_update(list(indices), list(weights), list(grads), list(states))


def make_class(entry: registry.Entry) -> type[_RuleOptimizer]:
    """The registered :class:`_RuleOptimizer` subclass of one optimizer-table row: the functional
    constructor's own arguments, MXNet's base arguments with the class's defaults, MXNet's name."""
    cls_name, reg_name, rule, ctor = entry.class_name, entry.name, entry.rule, entry.constructor
    fused, aggregate, mxnet_path = entry.fused, entry.aggregate, entry.mxnet
    extra_doc = f"    {entry.extra_doc}\n" if entry.extra_doc else ""
    own = [
        p.replace(kind=p.POSITIONAL_OR_KEYWORD)
        for p in inspect.signature(ctor).parameters.values()
        if p.kind != p.KEYWORD_ONLY
    ]
    if rule.uses_key:  # SGLD: no seed -> a fresh one per optimizer (MXNet's global generator never repeats)
        own = [p.replace(default=None) if p.name == "seed" else p for p in own]
    base = inspect.signature(Optimizer.__init__).parameters
    kw = []
    for name, p in base.items():
        if name in ("self", "kwargs", "learning_rate"):
            continue
        default = p.default
        if name == "use_fused_step":
            default = fused
        elif name == "aggregate_num":
            default = aggregate
        kw.append(p.replace(kind=p.KEYWORD_ONLY, default=default))
    # The constructor's own keyword-only options (e.g. Ftrl's ``lazy_update``) stay keyword-only here.
    kw += [
        p
        for p in inspect.signature(ctor).parameters.values()
        if p.kind == p.KEYWORD_ONLY and p.name not in base and p.name not in ("lr_mult", "wd_mult")
    ]
    self_p = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    sig = inspect.Signature([self_p, *own, *kw])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _RuleOptimizer.__init__(self, *args, **kwargs)

    vars(__init__)["__signature__"] = sig  # for help(cls.__init__) (a function attribute functions lack)
    # The constructor's equations, paper and own arguments; its example is of the functional API: not here.
    first = (ctor.__doc__ or "").strip().split("\n\n    Common arguments")[0].split("\n\n    Examples:")[0]
    doc = (
        f"MXNet's ``{mxnet_path}`` (registry name ``'{reg_name}'``) on the shared update rule of "
        f":func:`mxopt_jax.{ctor.__name__}`.\n\n    {first}\n{extra_doc}\n"
        "    Base arguments: see :class:`Optimizer`. ``update``/``step``/``fused_step`` return "
        "``(new_weights, new_states)``.\n"
    )
    __init__.__doc__ = doc
    __init__.__qualname__ = f"{cls_name}.__init__"
    namespace = {
        "__init__": __init__,
        "__doc__": doc,
        "__module__": "mxopt_jax.facade",  # where users find it
        "__signature__": sig.replace(parameters=list(sig.parameters.values())[1:]),
        "_rule": rule,
        "_ctor": staticmethod(ctor),
        "_fused_default": fused,
        "_aggregate_default": aggregate,
        "_deprecated": dict(entry.deprecated),
        "_deprecation": entry.deprecation,
    }
    if cls_name.startswith("Test"):
        namespace["__test__"] = False  # not a pytest test class
    cls = type(cls_name, (_RuleOptimizer,), namespace)
    register(cls)
    return cls


#: The facade class of every optimizer in the table, by class name (registered under MXNet's names).
CLASSES: dict[str, type[_RuleOptimizer]] = {e.class_name: make_class(e) for e in registry.TABLE}
