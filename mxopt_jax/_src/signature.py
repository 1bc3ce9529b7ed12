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

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import optax

from . import hyperparams
from .drivers import tree
from .rule import Prepared, Rule
from .validation import check_bool, check_clip_gradient, check_int, check_range


def _check_aggregate_num(owner: str, name: str, value: Any) -> None:
    if value is not None and not (isinstance(value, float) and value == np.inf):
        check_int(owner, name, value, low=1)


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
        "Any",
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
        "``None`` or 1: update each parameter on its own; an int > 1 or ``numpy.inf``: keep the state as flat "
        "multi-tensor buffers of that many parameters (MXNet's multi-tensor kernels; see "
        ":mod:`mxopt_jax.multi_tensor`).",
        _check_aggregate_num,
    ),
    Keyword(
        "use_fused_step",
        None,
        "bool | None",
        "accepted for MXNet compatibility; both MXNet paths compute the fused (default) math here.",
        lambda o, n, v: v is None or check_bool(o, n, v),
    ),
)

BASE_NAMES: tuple[str, ...] = tuple(k.name for k in BASE_KEYWORDS)


class BaseKeywords(TypedDict, total=False):
    """MXNet's base keywords (see :data:`BASE_KEYWORDS` for defaults and meaning), for ``**base: Unpack[...]``."""

    wd: hyperparams.ScalarOrSchedule
    rescale_grad: hyperparams.ScalarOrSchedule
    clip_gradient: hyperparams.ScalarOrSchedule | None
    lr_scheduler: Any
    multi_precision: bool
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
    ``hyperparam_dtype=jnp.float32`` for 16-bit parameters.
"""
)


def validate_base(owner: str, args: dict) -> None:
    """Construction-time checks of the base keywords in ``args``."""
    for k in BASE_KEYWORDS:
        if k.check is not None and k.name in args:
            k.check(owner, k.name, args[k.name])


def prepare(rule: Rule, args: dict) -> Prepared:
    """Validate a constructor's arguments and split them into options and hyperparameters."""
    owner = f"mxopt_jax.{rule.name}"
    args = dict(args)
    validate_base(owner, args)
    for name in rule.static:  # structural switches are booleans
        check_bool(owner, name, args[name])
    for name, kw in rule.checks.items():
        check_range(owner, name, args[name], **kw)
    if rule.validate is not None:
        rule.validate(owner, args)
    if rule.derive is not None:
        args.update(rule.derive(args))
    learning_rate, lr_scheduler = hyperparams.resolve_learning_rate(
        owner, args["learning_rate"], args["lr_scheduler"]
    )
    opts = {k: args[k] for k in rule.static}
    if rule.prepare is not None:
        opts.update(rule.prepare(args))
    hypers = {k: args[k] for k in ("wd", "rescale_grad", "clip_gradient", *rule.hyper)}
    return Prepared(rule, owner, args, opts, hypers, learning_rate, lr_scheduler)


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


def optimizer(rule: Rule, *, deprecation: str | None = None) -> Callable[[Callable], Callable]:
    """Make a functional constructor from a declaration: the rule's own arguments, MXNet's defaults and docs.

    The declared function's body is not run: it states the signature and the documentation. The constructor
    binds its arguments against the full signature (own arguments, then the base keywords), validates them
    and returns the tree driver's ``optax.GradientTransformation``. ``deprecation``: a message emitted as a
    ``DeprecationWarning`` at every call (MXNet 1.x's ``ccSGD``).
    """

    def decorate(declared: Callable) -> Callable:
        sig = full_signature(inspect.signature(declared))

        @functools.wraps(declared)
        def constructor(*args: Any, **kwargs: Any) -> optax.GradientTransformation:
            if deprecation is not None:
                warnings.warn(deprecation, DeprecationWarning, stacklevel=2)
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"mxopt_jax.{declared.__name__}: {exc}") from None
            bound.apply_defaults()
            return tree.transform(prepare(rule, bound.arguments))

        constructor.__signature__ = sig
        constructor.__doc__ = (declared.__doc__ or "").rstrip() + "\n" + COMMON_DOC
        constructor.rule = rule
        del constructor.__wrapped__  # the declaration is not the implementation: inspect the constructor
        return constructor

    return decorate
