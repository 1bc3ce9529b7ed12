"""MXNet's base keywords, defined once, and the decorator that makes a constructor from a rule.

Every MXNet optimizer takes the keywords of ``mxnet.optimizer.Optimizer`` (``wd``, ``rescale_grad``,
``clip_gradient``, ...). They are written here once (:data:`BASE_KEYWORDS`: name, default, type, meaning and
check). A constructor declares only its own arguments and ``**base: Unpack[BaseKeywords]`` (which static type
checkers and IDEs expand, PEP 692); :func:`optimizer` gives it the full signature with MXNet's defaults
(``inspect.signature``, ``help()``, ``optax.inject_hyperparams``), appends the shared documentation, binds the
arguments, validates them (:func:`prepare`) and builds the transform with the tree driver::

    @optimizer(ADAM_RULE)
    def adam(learning_rate=0.001, beta1=0.9, ..., **base: Unpack[BaseKeywords]) -> GradientTransformation:
        \"\"\"Adam ... (the equations, the paper, the own arguments)\"\"\"
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ParamSpec, Protocol, TypedDict, cast

import numpy as np
import optax

from . import hyperparams
from .drivers import tree
from .rule import Prepared, Rule
from .validation import STRICTER_THAN_MXNET, check_bool, check_clip_gradient, check_int, check_range, warn


def _check_aggregate_num(owner: str, name: str, value: Any) -> None:
    """``None``, an int ``>= 0`` (0 and 1: no aggregation, as MXNet) or ``inf``; negative ints are refused
    (MXNet treats them as "no aggregation", other libraries' ``-1`` means "all": differences #19)."""
    if value is None or (isinstance(value, float) and value == np.inf):
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(
            f"{owner}: `{name}` must be an int >= 0 (0 or 1: no aggregation) or numpy.inf (all parameters in "
            f"one call), got {value!r}"
        )
    if value < 0:
        raise ValueError(
            f"{owner}: `{name}` must be an int >= 0 (0 or 1: no aggregation) or numpy.inf, got {value}; MXNet "
            "treats a negative value as 'no aggregation' where other libraries read -1 as 'all': say which you "
            "mean with 1 or numpy.inf (docs/differences.md #19)"
        )
    check_int(owner, name, value, low=0)


@dataclasses.dataclass(frozen=True)
class Keyword:
    """One of MXNet's base keywords: its default, annotation, meaning and construction-time check."""

    name: str
    default: Any
    annotation: str
    doc: str
    check: Callable[[str, str, Any], None] | None = None


#: MXNet's ``Optimizer`` base keywords as the functional constructors take them (keyword-only), in order.
BASE_KEYWORDS: tuple[Keyword, ...] = (
    Keyword(
        "wd",
        0.0,
        "ScalarOrSchedule",
        "weight decay coefficient (L2), ``>= 0``; multiplied per parameter by ``wd_mult``.",
        lambda o, n, v: check_range(o, n, v, low=0.0),
    ),
    Keyword(
        "rescale_grad",
        1.0,
        "ScalarOrSchedule",
        "factor applied to the raw gradient first (MXNet: ``1 / batch_size``), ``> 0``.",
        lambda o, n, v: check_range(o, n, v, low=0.0, low_open=True),
    ),
    Keyword(
        "clip_gradient",
        None,
        "ScalarOrSchedule | None",
        "clip the rescaled gradient to ``[-c, c]``; ``None`` (default) disables clipping.",
        lambda o, n, v: check_clip_gradient(o, v),
    ),
    Keyword(
        "lr_scheduler",
        None,
        "LRSchedulerLike | None",
        "an :mod:`mxopt_jax.lr_scheduler` scheduler (or any jittable ``num_update -> lr``), called with MXNet's "
        "``num_update`` (1 on the first update). When ``learning_rate`` is also given and differs from the "
        "scheduler's ``base_lr``, the scheduler's ``base_lr`` is overwritten (as MXNet does) and a warning is "
        "emitted; pass ``learning_rate=None`` to keep the scheduler's own value.",
    ),
    Keyword(
        "multi_precision",
        False,
        "bool",
        "keep a float32 master copy of float16/bfloat16 parameters in the state, compute in float32 and return "
        "updates that make ``optax.apply_updates`` land on the rounded master.",
        lambda o, n, v: check_bool(o, n, v),
    ),
    Keyword(
        "lr_mult",
        None,
        "Any",
        "per-parameter learning-rate multipliers: a pytree of floats matching the parameters, or a callable "
        "``(path, leaf) -> float`` where ``path`` is the parameter's keys joined by ``'/'`` and ``leaf`` the "
        "parameter (a ``jax.ShapeDtypeStruct`` of it when ``update`` is called without ``params``). Default 1.",
    ),
    Keyword("wd_mult", None, "Any", "per-parameter weight-decay multipliers, given like ``lr_mult``."),
    Keyword(
        "begin_num_update",
        0,
        "int",
        "the update count to start from (shifts ``t`` and the scheduler input).",
        lambda o, n, v: check_int(o, n, v, low=0),
    ),
    Keyword(
        "aggregate_num",
        None,
        "int | float | None",
        "``None``, 0 or 1: update each parameter on its own (MXNet's meaning of 0 and 1); an int > 1 or "
        "``numpy.inf``: keep the state as flat multi-tensor buffers of that many parameters (MXNet's "
        "multi-tensor kernels; see :mod:`mxopt_jax.multi_tensor`).",
        _check_aggregate_num,
    ),
    Keyword(
        "use_fused_step",
        None,
        "bool | None",
        "accepted for MXNet compatibility; both MXNet paths compute the fused (default) math here.",
        lambda o, n, v: check_bool(o, n, v, allow_none=True),
    ),
)

BASE_NAMES: tuple[str, ...] = tuple(k.name for k in BASE_KEYWORDS)


class BaseKeywords(TypedDict, total=False):
    """MXNet's base keywords (see :data:`BASE_KEYWORDS` for defaults and meaning), for ``**base: Unpack[...]``."""

    wd: hyperparams.ScalarOrSchedule
    rescale_grad: hyperparams.ScalarOrSchedule
    clip_gradient: hyperparams.ScalarOrSchedule | None
    lr_scheduler: hyperparams.LRSchedulerLike | None
    multi_precision: bool
    # a pytree of floats (any node type, so no narrower static type) or a callable (path, leaf) -> float
    lr_mult: Any
    wd_mult: Any
    begin_num_update: int
    aggregate_num: int | float | None
    use_fused_step: bool | None


COMMON_DOC = (
    "\n    Common arguments (MXNet's ``Optimizer`` base class, keyword-only here):\n"
    + "".join(f"      {k.name}: {k.doc}\n" for k in BASE_KEYWORDS)
    + """
    All float hyperparameters may be Python floats, JAX scalars or schedules ``count -> value`` (``count``
    is 0 on the first update, optax's convention), so ``optax.inject_hyperparams`` works; pass
    ``static_args=('lr_scheduler', 'lr_mult', 'wd_mult')`` to it when those are given, and
    ``hyperparam_dtype=jnp.float32`` for 16-bit parameters. Values are range-checked where they are concrete
    (construction, and every update outside ``jax.jit``); a traced value or a schedule's output cannot be
    checked and is used as given.
"""
)


@contextlib.contextmanager
def stricter_than_mxnet() -> Iterator[None]:
    """Range checks MXNet does not make: their ``ValueError`` says so (docs/differences.md #19)."""
    try:
        yield
    except ValueError as exc:
        msg = str(exc)
        if "docs/differences.md" in msg:  # already explains its own departure (#1, #19)
            raise
        raise ValueError(f"{msg} ({STRICTER_THAN_MXNET})") from None


def validate_base(owner: str, args: dict) -> None:
    """Construction-time checks of the base keywords in ``args``."""
    for k in BASE_KEYWORDS:
        if k.check is not None and k.name in args:
            with stricter_than_mxnet():
                k.check(owner, k.name, args[k.name])


def prepare(rule: Rule, args: dict) -> Prepared:
    """Validate a constructor's arguments and split them into options and hyperparameters."""
    owner = f"mxopt_jax.{rule.name}"
    args = dict(args)
    validate_base(owner, args)
    if args.get("aggregate_num") == 0:  # MXNet's "no aggregation" (its test suite passes 0)
        args["aggregate_num"] = 1
    for name in rule.static:  # structural switches are booleans
        check_bool(owner, name, args[name])
    with stricter_than_mxnet():
        for name, kw in rule.checks.items():
            check_range(owner, name, args[name], **kw)
    if rule.validate is not None:
        rule.validate(owner, args)
    if rule.derive is not None:
        args.update(rule.derive(args))
    with stricter_than_mxnet():
        learning_rate, lr_scheduler = hyperparams.resolve_learning_rate(
            owner, args["learning_rate"], args["lr_scheduler"]
        )
    opts = {k: args[k] for k in rule.static}
    if rule.prepare is not None:
        opts.update(rule.prepare(args))
    hypers = {k: args[k] for k in ("wd", "rescale_grad", "clip_gradient", *rule.hyper)}
    return Prepared(rule, owner, args, opts, hypers, learning_rate, lr_scheduler)


# --------------------------------------------------------------------------- habits from other libraries
#: Keywords people bring from PyTorch, optax, Keras and MXNet 1.x -> MXNet's keyword (or advice).
HABITS: dict[str, str] = {
    "lr": "learning_rate",
    "learningrate": "learning_rate",
    "learning_rate_fn": "learning_rate",
    "b1": "beta1",
    "beta_1": "beta1",
    "b2": "beta2",
    "beta_2": "beta2",
    "eps": "epsilon",
    "epsilon_root": "epsilon",
    "eps_root": "epsilon",
    "float_stable_eps": "epsilon",
    "weight_decay": "wd",
    "decay_rate": "wd",
    "gamma1": "rho",
    "gamma2": "momentum",
    "mu": "momentum",
    "clipvalue": "clip_gradient",
    "clip_value": "clip_gradient",
    "grad_clip": "clip_gradient",
    "schedule": "lr_scheduler",
    "scheduler": "lr_scheduler",
}
#: Keywords with no one-to-one MXNet name: what to do instead.
ADVICE: dict[str, str] = {
    "nesterov": "Nesterov momentum is MXNet's separate optimizer NAG: use mxopt_jax.nag / create('nag')",
    "betas": "MXNet takes the two coefficients separately: beta1=..., beta2=...",
    "amsgrad": "MXNet has no AMSGrad variant (optax.amsgrad is one)",
    "dampening": "MXNet's momentum has no dampening",
    "maximize": "negate the gradients (or the loss) instead",
    "foreach": "not needed (XLA fuses the update; see aggregate_num for multi-tensor updates)",
    "fused": "MXNet's switch is use_fused_step (both paths compute the same math here)",
    "clipnorm": "clip the global norm with optax.chain(optax.clip_by_global_norm(c), tx); MXNet's "
    "clip_gradient clips each element",
    "global_clipnorm": "use optax.chain(optax.clip_by_global_norm(c), tx)",
    "decay": "Keras' learning-rate decay is an lr_scheduler here (mxopt_jax.lr_scheduler.FactorScheduler, ...)",
    "lr_decay": "learning-rate decay is an lr_scheduler here (mxopt_jax.lr_scheduler.FactorScheduler, ...)",
    "params": "parameters are not given to the constructor",
    "param_groups": "parameters are not given to the constructor",
    "mask": "wrap the transform in optax.masked(tx, mask), or give wd_mult / lr_mult per parameter",
    "param_idx2name": "the functional API names parameters by their pytree paths: give lr_mult / wd_mult as "
    "callables (path, leaf) -> float (the facade, mxopt_jax.create, takes param_idx2name)",
    "param_dict": "give lr_mult / wd_mult (pytrees or callables) to the functional constructor, or use the "
    "facade (mxopt_jax.create), which takes param_dict",
    "sym": "give lr_mult / wd_mult (pytrees or callables) to the functional constructor, or use the facade "
    "(mxopt_jax.create), which takes sym",
}


def _looks_like_parameters(x: Any) -> bool:
    """A model's parameters passed where a learning rate goes: a pytree/dict/list, a generator, an array."""
    if isinstance(x, (Mapping, list, tuple)) or inspect.isgenerator(x) or hasattr(x, "parameters"):
        return True
    shape = getattr(x, "shape", None)
    return shape is not None and len(shape) > 0


def parameters_hint(facade: bool) -> str:
    if facade:
        return (
            "parameters go to the updater, not to the optimizer: updater = mxopt_jax.get_updater(opt); "
            "new_weight = updater(index, grad, weight)"
        )
    return (
        "parameters go to `init`, not to the constructor: tx = mxopt_jax.<name>(learning_rate=...); "
        "state = tx.init(params) (per-group options: lr_mult / wd_mult, or optax.partition)"
    )


def habit_error(
    owner: str, sig: inspect.Signature, exc: TypeError, args: tuple, kwargs: dict, *, facade: bool = False
) -> TypeError:
    """The ``TypeError`` for a call that does not bind: it names the optimizer and, for keywords from other
    libraries (``lr``, ``b1``, ``eps``, ``weight_decay``, ``nesterov``, ...) or parameters passed to the
    constructor (PyTorch's ``Adam(model.parameters(), lr=...)``), the right keyword or what to do."""
    names = set(sig.parameters)
    notes = []
    if args and _looks_like_parameters(args[0]):
        notes.append(parameters_hint(facade).replace("<name>", owner.rsplit(".", 1)[-1]))
    for key in kwargs:
        if key in names:
            continue
        low = key.lower()
        if key in ("params", "param_groups"):
            notes.append(f"`{key}`: " + parameters_hint(facade).replace("<name>", owner.rsplit(".", 1)[-1]))
        elif low in HABITS or key in HABITS:
            right = HABITS.get(key, HABITS.get(low))
            if right in names:
                notes.append(f"`{key}` is spelled `{right}` in MXNet and mxopt_jax")
            else:
                notes.append(f"`{key}` (MXNet's `{right}`) is not an argument of this optimizer")
        elif low in ADVICE:
            notes.append(f"`{key}`: {ADVICE[low]}")
    facade_base = ("self", "param_idx2name", "sym", "param_dict")
    own = [n for n in sig.parameters if n not in BASE_NAMES and n not in facade_base]
    hint = (
        "; ".join(notes)
        if notes
        else (
            f"its own arguments are {', '.join(own) or '(none)'}, plus MXNet's base keywords ({', '.join(BASE_NAMES)})"
        )
    )
    return TypeError(f"{owner}: {exc}; {hint}")


class ConstructorSignature(inspect.Signature):
    """A constructor's signature (what ``inspect.signature`` and ``optax.inject_hyperparams`` read). Binding
    arguments to it keeps a callable ``lr_mult``/``wd_mult`` as a
    :class:`~mxopt_jax._src.hyperparams.PerParameter`: ``optax.inject_hyperparams`` binds the arguments with
    this signature and then calls every callable one as a schedule of the step count, so the multiplier says
    to pass ``static_args`` instead of failing on its own missing argument. Otherwise a plain signature."""

    __slots__ = ("_owner",)
    _owner: str

    @classmethod
    def of(cls, sig: inspect.Signature, owner: str) -> ConstructorSignature:
        out = cls(list(sig.parameters.values()), return_annotation=sig.return_annotation)
        out._owner = owner
        return out

    def bind(self, /, *args: Any, **kwargs: Any) -> inspect.BoundArguments:
        bound = super().bind(*args, **kwargs)
        for name in ("lr_mult", "wd_mult"):
            value = bound.arguments.get(name)
            if callable(value) and not isinstance(value, hyperparams.PerParameter):
                bound.arguments[name] = hyperparams.PerParameter(
                    value, getattr(self, "_owner", "mxopt_jax"), name
                )
        return bound


def full_signature(declared: inspect.Signature) -> inspect.Signature:
    """``declared`` (own arguments and ``**base``) with the base keywords spelled out, keyword-only."""
    params = [p for p in declared.parameters.values() if p.kind != p.VAR_KEYWORD]
    positional = [p for p in params if p.kind != p.KEYWORD_ONLY]
    own_kw = [p for p in params if p.kind == p.KEYWORD_ONLY]
    base = [
        inspect.Parameter(k.name, inspect.Parameter.KEYWORD_ONLY, default=k.default, annotation=k.annotation)
        for k in BASE_KEYWORDS
    ]
    return declared.replace(parameters=[*positional, *base, *own_kw])


P = ParamSpec("P")


class Constructor(Protocol[P]):
    """A functional constructor made by :func:`optimizer`: called as declared, it carries its rule and its
    full signature (``inspect.signature``)."""

    rule: Rule
    __name__: str
    __signature__: inspect.Signature

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> optax.GradientTransformation: ...


def optimizer(
    rule: Rule, *, deprecation: str | None = None
) -> Callable[[Callable[P, optax.GradientTransformation]], Constructor[P]]:
    """Make a functional constructor from a declaration: the rule's own arguments, MXNet's defaults and docs.

    The declared function's body is not run: it states the signature and the documentation. The constructor
    binds its arguments against the full signature (own arguments, then the base keywords), validates them
    and returns the tree driver's ``optax.GradientTransformation``. ``deprecation``: a message emitted as a
    ``DeprecationWarning`` at every call (MXNet 1.x's ``ccSGD``).
    """

    def decorate(declared: Callable[P, optax.GradientTransformation]) -> Constructor[P]:
        sig = ConstructorSignature.of(
            full_signature(inspect.signature(declared)), f"mxopt_jax.{declared.__name__}"
        )

        @functools.wraps(declared)
        def constructor(*args: Any, **kwargs: Any) -> optax.GradientTransformation:
            if deprecation is not None:
                warn(deprecation, DeprecationWarning)
            owner = f"mxopt_jax.{declared.__name__}"
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise habit_error(owner, sig, exc, args, kwargs) from None
            if args and _looks_like_parameters(args[0]):
                raise TypeError(
                    f"{owner}: got {type(args[0]).__name__} as `learning_rate`; {parameters_hint(False)}".replace(
                        "<name>", declared.__name__
                    )
                )
            bound.apply_defaults()
            return tree.transform(prepare(rule, bound.arguments))

        del constructor.__wrapped__  # the declaration is not the implementation: inspect the constructor
        constructor.__doc__ = (declared.__doc__ or "").rstrip() + "\n" + COMMON_DOC
        made = cast("Constructor[P]", constructor)  # a function given the Protocol's attributes here
        made.__signature__ = sig
        made.rule = rule
        return made

    return decorate
