"""The optimizers a study compares: :class:`Contender` (a name, a family, its hyperparameters, a factory).

Every mxopt_jax optimizer of the table (:data:`mxopt_jax.OPTIMIZERS`) is a contender with MXNet's defaults,
plus baselines from optax (:data:`OPTAX_BASELINES`) run through the same harness. A user's own contender is
any factory of an ``optax.GradientTransformation`` (:func:`contender`). Hyperparameters arrive as traced JAX
scalars (the engine vmaps over them), and the learning rate as a traced scalar or, under a schedule, as a
schedule ``step -> rate`` built from the traced peak, so a factory must not branch on them in Python.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import optax

from .. import FAMILIES as _FAMILIES
from .. import OPTIMIZERS
from .. import sparse as _sparse
from .checks import canonical_name, printable, unknown_name
from .space import Hyperparameter
from .space import kind as _kind
from .space import names as _names

__all__ = [
    "FAMILY_ORDER",
    "NOT_SEARCHED",
    "OPTAX_BASELINES",
    "OPTAX_FAMILY",
    "RANGES",
    "RATE_RANGES",
    "SEARCH_SPACES",
    "UPDATES",
    "Contender",
    "Factory",
    "Hyperparameter",
    "contender",
    "default_contenders",
    "family_of",
    "group_by_family",
    "mxopt_contender",
    "rate",
    "resolve",
    "search_space",
]

#: A contender's factory in the engine's form: ``(hp, key, steps) -> transform``. ``hp`` maps every
#: hyperparameter of the contender to its value: ``"learning_rate"`` a traced scalar (or a schedule
#: ``step -> rate``), a tuned one a traced scalar, the others their default (a Python float). ``key`` is the
#: run's optimizer key (independent of the initialization and the mini-batches); ``steps`` the run's budget.
Factory = Callable[[Mapping[str, Any], jax.Array, int], optax.GradientTransformation]


def rate(default: float, decades: float = 2.0, *, update: str | None = None) -> Hyperparameter:
    """The learning rate as a hyperparameter with default ``default``. Its range (the random search's) is that of
    its kind of update, :data:`RATE_RANGES` ``[update]``, when ``update`` is given (every built-in contender),
    else ``default`` times ``10**-decades .. 10**decades`` (a user's contender: 4 decades by default, as wide
    as each kind's range)."""
    if update is not None:
        if update not in RATE_RANGES:
            raise ValueError(f"update must be one of {sorted(RATE_RANGES)}, got {update!r}")
        low, high = RATE_RANGES[update]
        return Hyperparameter("learning_rate", float(default), low, high, "log")
    return Hyperparameter(
        "learning_rate", float(default), default * 10**-decades, default * 10**decades, "log"
    )


# --------------------------------------------------------------------------- search spaces
#: The random search's range of the learning rate per kind of update, ``(low, high)``, log-uniform, 4 decades
#: each (the same number of trials per decade for every contender): what the rate multiplies sets its scale,
#: not the contender's name, so contenders that compute the same update search the same rates (docs/study.md,
#: "Random search", gives the measurements behind them).
#:
#: * ``"gradient"``: the step is the rate times the gradient (or a momentum of gradients): SGD and its variants,
#:   LARS (its rate multiplies the layer-wise trust ratio, eta searched apart) and FTRL (with small accumulated
#:   squares its step is the rate over beta times the gradient); MXNet's SGD default 0.1 in the middle;
#: * ``"normalized"``: the step of a coordinate (or a layer's relative step) is about the rate, whatever the
#:   gradient's scale: Adam and its variants, RMSProp, FTML, Signum, LAMB, LANS; Adam's default 1e-3 in the
#:   middle;
#: * ``"accumulated"``: normalized by the root of the sum of every squared gradient so far, so the step shrinks as
#:   1/sqrt(t): AdaGrad and GroupAdaGrad; their default 0.01 in the middle;
#: * ``"unit-corrected"``: AdaDelta, whose update has the parameters' units and whose rate is a plain factor
#:   (MXNet's default 1 in the middle).
RATE_RANGES: dict[str, tuple[float, float]] = {
    "gradient": (1e-3, 10.0),
    "normalized": (1e-5, 0.1),
    "accumulated": (1e-4, 1.0),
    "unit-corrected": (1e-2, 100.0),
}

#: The kind of update of every built-in contender (:data:`RATE_RANGES`).
UPDATES: dict[str, str] = {
    **dict.fromkeys(("sgd", "nag", "sgld", "dcasgd", "lbsgd", "ccsgd", "test", "lars", "ftrl"), "gradient"),
    **dict.fromkeys(
        ("signum", "rmsprop", "ftml", "adam", "adamw", "adamax", "nadam", "adabelief", "lamb", "lans"),
        "normalized",
    ),
    "adagrad": "accumulated",
    "groupadagrad": "accumulated",
    "adadelta": "unit-corrected",
    "optax.sgd": "gradient",
    **dict.fromkeys(("optax.adam", "optax.adamw", "optax.lamb"), "normalized"),
}

#: The random search's range of each other kind of hyperparameter, ``(low, high, scale)`` (:mod:`~.space`): the
#: one table the study draws from (docs/study.md, "Random search", prints it), shared by every contender that has
#: the kind (:func:`~mxopt_jax.compare.space.kind`: optax's ``b1`` is ``beta1``). Decay rates are drawn
#: log-uniformly in ``1 - value`` (``"log1m"``), so ``0.9, 0.99, 0.999`` are equally likely neighbourhoods.
RANGES: dict[str, tuple[float, float, str]] = {
    # momentum, 1 - m log-uniform in [0.01, 1]: median 0.9; 0 (no momentum) is the edge
    "momentum": (0.0, 0.99, "log1m"),
    # first-moment decay (Adam's beta1), 1 - b1 in [0.01, 0.5]: median 0.93; FTML's default 0.6 inside
    "beta1": (0.5, 0.99, "log1m"),
    # second-moment decay (Adam's beta2), 1 - b2 in [1e-4, 0.1]: median 0.997
    "beta2": (0.9, 0.9999, "log1m"),
    # squared-gradient decay of RMSProp and AdaDelta (MXNet's default 0.9), 1 - rho in [1e-3, 0.5]
    "rho": (0.5, 0.999, "log1m"),
    # the denominator's epsilon: from negligible to one that makes an adaptive method SGD-like
    "epsilon": (1e-10, 1e-3, "log"),
    # weight decay (MXNet's wd: L2 added to the gradient; decoupled in AdamW/LAMB/LANS/optax.adamw); the default
    # 0 lies outside a log range: the first trial runs it
    "wd": (1e-6, 1e-2, "log"),
    # Signum's decoupled weight decay (wd_lh)
    "wd_lh": (1e-6, 1e-2, "log"),
    # DCASGD's delay compensation (default 0.04)
    "lamda": (1e-3, 1.0, "log"),
    # Ftrl's L1 strength (default 0.01) and its beta (default 1, added to sqrt(n) in the denominator)
    "lamda1": (1e-6, 0.1, "log"),
    "beta": (0.1, 10.0, "log"),
    # LARS's trust coefficient (default 0.001)
    "eta": (1e-4, 0.1, "log"),
    # NAdam's momentum schedule decay (default 0.004)
    "schedule_decay": (1e-4, 0.1, "log"),
}

_ADAM = ("beta1", "beta2", "epsilon", "wd")

#: Which hyperparameters the random search draws for each contender (besides the learning rate), by their
#: keyword; the range of each is :data:`RANGES` of its kind (optax's ``b1``/``b2``/``eps``/``weight_decay``
#: are ``beta1``/``beta2``/``epsilon``/``wd``). Every float keyword of each constructor is here or in
#: :data:`NOT_SEARCHED` (a test holds the table to the signatures).
SEARCH_SPACES: dict[str, tuple[str, ...]] = {
    "sgd": ("momentum", "wd"),
    "nag": ("momentum", "wd"),
    "signum": ("momentum", "wd_lh", "wd"),
    "sgld": ("wd",),
    "dcasgd": ("momentum", "lamda", "wd"),
    "lbsgd": ("momentum", "wd"),
    "ccsgd": ("momentum", "wd"),
    "test": ("wd",),
    "adagrad": ("epsilon", "wd"),
    "groupadagrad": ("epsilon", "wd"),
    "adadelta": ("rho", "epsilon", "wd"),
    "rmsprop": ("rho", "momentum", "epsilon", "wd"),
    "ftrl": ("lamda1", "beta", "wd"),
    "ftml": _ADAM,
    "adam": _ADAM,
    "adamw": _ADAM,
    "adamax": _ADAM,
    "nadam": (*_ADAM[:3], "schedule_decay", "wd"),
    "adabelief": _ADAM,
    "lars": ("momentum", "eta", "epsilon", "wd"),
    "lamb": _ADAM,
    "lans": _ADAM,
    "optax.sgd": ("momentum",),
    "optax.adam": ("b1", "b2", "eps"),
    "optax.adamw": ("b1", "b2", "eps", "weight_decay"),
    "optax.lamb": ("b1", "b2", "eps", "weight_decay"),
}

#: The keywords with a number (or ``None``) as default that the random search leaves alone, and why.
NOT_SEARCHED: dict[str, str] = {
    "rescale_grad": "a gradient scale, not a setting of the update (1: the losses are means already)",
    "clip_gradient": "None (no clipping); a value would switch clipping on, another algorithm",
    "lower_bound": "None (LAMB/LANS's trust ratio unclipped); a bound is another algorithm",
    "upper_bound": "None (LAMB/LANS's trust ratio unclipped); a bound is another algorithm",
    "clip_weights": "None (RMSProp's weights unclipped); a bound is another algorithm",
    "warmup_epochs": "an integer (LBSGD's warm-up, a no-op at batch_scale 1)",
    "batch_scale": "an integer (LBSGD's gradient accumulation: another number of updates)",
    "updates_per_epoch": "an integer (LBSGD's warm-up length)",
    "begin_epoch": "an integer (LBSGD's starting epoch)",
    "num_epochs": "unused (as in MXNet)",
    "eps_root": "0 (optax's epsilon inside the square root; a value is another algorithm)",
}


def search_space(name: str, default_lr: float, defaults: Mapping[str, float]) -> tuple[Hyperparameter, ...]:
    """The hyperparameters of contender ``name`` (a key of :data:`SEARCH_SPACES`): the learning rate (its
    default ``default_lr``, the range of its kind of update, :data:`UPDATES`, :func:`rate`), then each searched
    keyword with its default (from ``defaults``) and the range of its kind (:data:`RANGES`).

    Raises
    ------
    KeyError
        ``name`` has no row in :data:`UPDATES` or :data:`SEARCH_SPACES` (a built-in contender needs both).
    """
    missing = [
        table for table, rows in (("UPDATES", UPDATES), ("SEARCH_SPACES", SEARCH_SPACES)) if name not in rows
    ]
    if missing:
        raise KeyError(
            f"contender {name!r} has no row in {' and '.join(missing)} (mxopt_jax/compare/contenders.py): a "
            "built-in contender needs its kind of update and its random search's space (docs/architecture.md)"
        )
    out = [rate(default_lr, update=UPDATES[name])]
    for key in SEARCH_SPACES[name]:
        low, high, scale = RANGES[_kind(key)]
        out.append(Hyperparameter(key, float(defaults[key]), low, high, scale))  # type: ignore[arg-type]
    return tuple(out)


#: The family label of the optax baselines (used to group programs and plot panels).
OPTAX_FAMILY = "optax baselines"
#: The families in display order (programs, table sections, plot panels): mxopt_jax's table order, then the
#: optax baselines; other families (a user's) come after, in the order met.
FAMILY_ORDER: tuple[str, ...] = (*_FAMILIES, OPTAX_FAMILY)


def family_of(name: str) -> str:
    """The family of a built-in contender's name: mxopt_jax's table, ``optax.*`` the optax baselines,
    anything else ``"other"``."""
    for family, members in _FAMILIES.items():
        if name in members:
            return family
    return OPTAX_FAMILY if name.startswith("optax.") else "other"


def group_by_family(
    names: Sequence[str], families: Mapping[str, str] | None = None
) -> list[tuple[str, list[str]]]:
    """``names`` grouped by family, families in :data:`FAMILY_ORDER` (others after, in the order met), names
    in the order given. ``families`` (``{name: family}``, e.g. a study's contenders) overrides
    :func:`family_of`."""
    fam = {n: (families or {}).get(n) or family_of(n) for n in dict.fromkeys(names)}
    order = [f for f in FAMILY_ORDER if f in fam.values()]
    order += [f for f in dict.fromkeys(fam.values()) if f not in order]
    return [(f, [n for n in fam if fam[n] == f]) for f in order]


@dataclasses.dataclass(frozen=True)
class Contender:
    """One optimizer in a study.

    Attributes:
      name: how tables name it (``"adam"``; optax baselines ``"optax.adam"``).
      make: the factory, :data:`Factory` (``(hp, key, steps) -> optax.GradientTransformation``).
      hyperparameters: what a study may tune, learning rate first (:class:`~mxopt_jax.compare.space.Hyperparameter`:
        default and search range each). The grid mode tunes the learning rate alone around its default.
      family: groups contenders into one compiled program and one plot panel.
      row_sparse: takes :class:`mxopt_jax.sparse.RowSparse` gradients (on problems with embedding tables,
        gradients come from :func:`mxopt_jax.sparse.value_and_grad`); otherwise gradients are dense.
      sparse_make: ``make`` for problems with embedding tables, when it differs (lazy updates).
      description: one line for the printed protocol (what is not MXNet's/optax's default).
      sparse_fixed: hyperparameters a random search leaves at their default on problems with embedding tables
        (AdaGrad's and GroupAdaGrad's row-sparse kernels take no weight decay, and refuse a traced one).
      settings: every setting of the optimizer that the study does not tune, with its value (printed with the
        protocol, so that defaults that differ between libraries are stated).
    """

    name: str
    make: Factory
    hyperparameters: tuple[Hyperparameter, ...]
    family: str
    row_sparse: bool = False
    sparse_make: Factory | None = None
    description: str = ""
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    sparse_fixed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Contender name must be a non-empty str, got {self.name!r}")
        printable(self.name, "Contender name")  # printed by every report: no terminal escapes
        printable(self.family, f"Contender {self.name!r}: `family`")
        printable(self.description, f"Contender {self.name!r}: `description`", lines=True)
        if not callable(self.make):
            raise TypeError(
                f"Contender {self.name!r}: `make` must be callable, got {type(self.make).__name__}"
            )
        hps = tuple(self.hyperparameters)
        if not hps or not all(isinstance(h, Hyperparameter) for h in hps) or hps[0].name != "learning_rate":
            raise ValueError(
                f"Contender {self.name!r}: `hyperparameters` must be Hyperparameter objects, the learning rate "
                f"first, got {self.hyperparameters!r}"
            )
        if len(set(_names(hps))) != len(hps):
            raise ValueError(f"Contender {self.name!r}: hyperparameter names repeat: {_names(hps)}")
        if not self.default_lr > 0:
            raise ValueError(
                f"Contender {self.name!r}: the default learning rate must be > 0, got {self.default_lr!r}"
            )
        object.__setattr__(self, "hyperparameters", hps)
        unknown = sorted(
            set(self.sparse_fixed) - set(_names(hps)) | ({"learning_rate"} & set(self.sparse_fixed))
        )
        if unknown:
            raise ValueError(
                f"Contender {self.name!r}: `sparse_fixed` names {unknown}, not hyperparameters besides the rate"
            )
        object.__setattr__(self, "sparse_fixed", tuple(self.sparse_fixed))

    @property
    def default_lr(self) -> float:
        """The learning rate of the one-shot mode (MXNet's default for mxopt_jax's optimizers) and the centre of
        the tuning grid."""
        return float(self.hyperparameters[0].default)

    @property
    def defaults(self) -> dict[str, float]:
        """``{name: default}`` of every hyperparameter."""
        return {h.name: float(h.default) for h in self.hyperparameters}

    def factory(self, sparse: bool) -> Factory:
        """The factory for a problem with (``sparse=True``) or without embedding tables."""
        return self.sparse_make if (sparse and self.sparse_make is not None) else self.make

    def build(
        self,
        learning_rate: Any,
        key: jax.Array | None = None,
        steps: int = 0,
        sparse: bool = False,
        **hyperparameters: Any,
    ) -> optax.GradientTransformation:
        """The transform at ``learning_rate`` (and any of its ``hyperparameters``; the others keep their
        defaults), outside the engine: ``key`` defaults to ``PRNGKey(0)``."""
        unknown = sorted(set(hyperparameters) - set(_names(self.hyperparameters)))
        if unknown:
            raise TypeError(
                f"contender {self.name!r} has no hyperparameter(s) {unknown}; known: "
                f"{', '.join(_names(self.hyperparameters))}"
            )
        key = jax.random.PRNGKey(0) if key is None else key
        hp = {**self.defaults, **hyperparameters, "learning_rate": learning_rate}
        return self.factory(sparse)(hp, key, steps)


def _quiet(fn: Callable[..., optax.GradientTransformation], **kwargs: Any) -> optax.GradientTransformation:
    # lbsgd/ccsgd warn that MXNet 2.0 removed them: comparing them is deliberate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(**kwargs)


#: Keywords of mxopt_jax's constructors that are plumbing, not settings of the optimizer (not printed).
_PLUMBING = frozenset(
    {
        "lr_scheduler",
        "lr_mult",
        "wd_mult",
        "begin_num_update",
        "aggregate_num",
        "use_fused_step",
        "axis_name",
        "seed",
    }
)


def _settings(fn: Callable[..., Any], tuned: Sequence[str], **overrides: Any) -> dict[str, Any]:
    """Every keyword of ``fn`` with a plain default (numbers, bools, None) that is not tuned, with its value."""
    out: dict[str, Any] = {}
    for k, p in inspect.signature(fn).parameters.items():
        if k in tuned or k in _PLUMBING or p.default is inspect.Parameter.empty:
            continue
        v = overrides.get(k, p.default)
        if v is None or isinstance(v, bool | int | float | str):
            out[k] = v
    return out


#: Why SGLD's tuned rate is enormous (1e5 and more on digits_mlp), said where the report lists its settings.
#: SGLD steps ``-lr/2 * G + N(0, sqrt(lr))`` (MXNet's rule): its noise is scaled for ``G`` the gradient of a
#: log posterior, a sum over the training set, while a study's losses are means over a batch, so ``G`` is about
#: ``1 / N`` of that and the noise swamps the step at every moderate rate (on digits_mlp, 90 % error at 1e-3,
#: 74 % at 0.1). The step grows as ``lr`` and the noise as ``sqrt(lr)``, so tuning on the error moves the rate
#: up until the step dominates (10 % error at 1e5, weights of norm ~1e8: an error rate, unlike the loss, does not
#: mind their scale). It is SGLD's parametrisation, not a fault of the grid or the metric; as a sampler, SGLD
#: wants ``rescale_grad`` = the number of training examples (on digits_mlp, 1077: 7 % error at rates 1e-4 to
#: 1e-2; docs/study.md).
SGLD_NOTE = (
    "its noise N(0, sqrt(lr)) is scaled for the gradient of a sum over the training set, but the losses here are "
    "batch means, so tuning pushes the rate up (1e5 and beyond) until the step, growing as lr, outweighs the "
    "noise, growing as sqrt(lr): SGLD's parametrisation, not a fault; to sample, use rescale_grad = the number "
    "of training examples"
)


def mxopt_contender(name: str) -> Contender:
    """The contender for ``mxopt_jax.OPTIMIZERS[name]``: MXNet's defaults for everything not tuned.

    GroupAdaGrad keeps one accumulator per row of a 2-D weight; the other leaves (biases, scalars) go to
    AdaGrad with the same rate (a row of one). SGLD draws its noise from the run's optimizer key. On problems
    with embedding tables the optimizers that have MXNet's ``lazy_update`` switch run with
    ``lazy_update=True`` (MXNet's sparse recipe); AdaGrad and GroupAdaGrad update listed rows only anyway
    (their sparse kernels).
    """
    name = canonical_name(name, list(OPTIMIZERS))  # group_adagrad: groupadagrad
    if name not in OPTIMIZERS:
        raise ValueError(unknown_name("optimizer", name, list(OPTIMIZERS)))
    fn = OPTIMIZERS[name]
    params = inspect.signature(fn).parameters
    hyperparameters = search_space(
        name, float(params["learning_rate"].default), {k: p.default for k, p in params.items()}
    )

    def build(
        hp: Mapping[str, Any], key: jax.Array, steps: int, **extra: Any
    ) -> optax.GradientTransformation:
        kwargs: dict[str, Any] = {**hp, **extra}
        if name == "sgld":
            kwargs["seed"] = key
        tx = _quiet(fn, **kwargs)
        if name == "groupadagrad":
            rows = tx
            other = _quiet(
                OPTIMIZERS["adagrad"],
                **{k: v for k, v in hp.items() if k in ("learning_rate", "epsilon", "wd")},
            )
            tx = optax.multi_transform(
                {"rows": rows, "other": other},
                # labels of params and of updates alike: a RowSparse gradient is one leaf (its shape is the table's)
                lambda tree: jax.tree.map(
                    lambda w: "rows" if len(w.shape) == 2 else "other", tree, is_leaf=_sparse.is_row_sparse
                ),
            )
        return tx

    lazy = "lazy_update" in params
    desc = "MXNet's defaults" + ("; lazy_update=True on problems with embedding tables" if lazy else "")
    if name == "groupadagrad":
        desc += "; leaves that are not 2-D go to AdaGrad"
    if name == "sgld":
        desc += "; " + SGLD_NOTE
    return Contender(
        name=name,
        make=build,
        hyperparameters=hyperparameters,
        family=family_of(name),
        row_sparse=True,
        sparse_make=(lambda hp, key, steps: build(hp, key, steps, lazy_update=True)) if lazy else None,
        description=desc,
        settings=_settings(fn, ["learning_rate"]),
        sparse_fixed=("wd",) if name in ("adagrad", "groupadagrad") else (),
    )


def _optax(
    name: str, fn: Callable[..., optax.GradientTransformation], lr: float, desc: str, **kw: Any
) -> Contender:
    defaults = {k: p.default for k, p in inspect.signature(fn).parameters.items()}
    hyperparameters = search_space(f"optax.{name}", lr, {**defaults, **kw})

    def build(hp: Mapping[str, Any], key: jax.Array, steps: int) -> optax.GradientTransformation:
        return fn(**{**kw, **hp})

    return Contender(
        name=f"optax.{name}",
        make=build,
        hyperparameters=hyperparameters,
        family=OPTAX_FAMILY,
        row_sparse=False,
        description=desc,
        settings=_settings(fn, ["learning_rate"], **kw),
    )


#: optax's optimizers that people use today, run through the same harness (dense gradients everywhere). Where
#: optax's defaults differ from MXNet's, the description says so (and the printed settings list every value).
OPTAX_BASELINES: dict[str, Contender] = {
    c.name: c
    for c in (
        _optax("sgd", optax.sgd, 0.1, "optax.sgd(lr, momentum=0.9) (MXNet's sgd: momentum 0)", momentum=0.9),
        _optax("adam", optax.adam, 1e-3, "optax.adam(lr), optax's defaults"),
        _optax(
            "adamw",
            optax.adamw,
            1e-3,
            "optax.adamw(lr), optax's defaults (weight_decay=1e-4; mxopt's adamw: wd 0)",
        ),
        _optax("lamb", optax.lamb, 1e-3, "optax.lamb(lr), optax's defaults (eps=1e-6, as MXNet's lamb)"),
    )
}


#: What JAX raises when Python code needs the value of a traced scalar (``if lr > 0``, ``float(lr)``).
_TRACER_ERRORS: tuple[type[Exception], ...] = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)


def _traced_call(
    name: str, make: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> optax.GradientTransformation:
    """``make(*args, **kwargs)``; a factory (or the transform it returns, at ``init``/``update``) that needs a
    traced value in Python fails with a ``TypeError`` naming the contender."""
    try:
        tx = make(*args, **kwargs)
    except _TRACER_ERRORS as e:
        raise _traced_error(name, "factory", e) from e
    if not isinstance(tx, optax.GradientTransformation | optax.GradientTransformationExtraArgs):
        raise TypeError(
            f"contender {name!r}: its factory must return an optax.GradientTransformation, got {type(tx).__name__}"
        )

    def init(params: Any) -> Any:
        try:
            return tx.init(params)
        except _TRACER_ERRORS as e:
            raise _traced_error(name, "transform's init", e) from e

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
        try:
            return tx.update(updates, state, params, **extra)
        except _TRACER_ERRORS as e:
            raise _traced_error(name, "transform's update", e) from e

    return tx._replace(init=init, update=update)


def _traced_error(name: str, where: str, e: Exception) -> TypeError:
    return TypeError(
        f"contender {name!r}: its {where} uses a traced hyperparameter as a Python value ({type(e).__name__}): "
        "the study passes the learning rate (or the schedule built on it) and every tuned hyperparameter as "
        "traced JAX values, so the factory must not compare them or convert them in Python. Build schedules "
        "with jax.numpy, e.g. mxopt_jax.compare.schedules.warmup_cosine(lr, steps) (take `steps` as a "
        "parameter), or give the study schedule='warmup-cosine'; optax's warmup_cosine_decay_schedule compares "
        "its peak with 0 in Python and cannot take a traced rate."
    )


def contender(
    name: str,
    make: Callable[..., optax.GradientTransformation],
    default_lr: float,
    family: str = "user",
    description: str = "",
    hyperparameters: Sequence[Hyperparameter] = (),
    settings: Mapping[str, Any] | None = None,
) -> Contender:
    """A user's contender from a factory of an optax transform.

    ``make``'s first parameter receives the learning rate (a traced scalar, or a schedule under
    ``schedule=``); a parameter named ``key`` receives the run's optimizer key, one named ``steps`` the run's
    step budget, and one named like a declared hyperparameter its (traced) value. For backward compatibility a
    second positional parameter of another name receives the key. For example::

        contender("optax.lion", lambda lr: optax.lion(lr), 1e-4)
        contender("adam b1", lambda lr, b1: optax.adam(lr, b1=b1), 1e-3,
                  hyperparameters=[Hyperparameter("b1", 0.9, 0.5, 0.999, "log1m")])

    ``hyperparameters`` are the tunable ones besides the learning rate (whose range is ``default_lr`` times
    ``10**-2 .. 10**2``, :func:`rate`; pass a ``Hyperparameter("learning_rate", ...)`` first to set another,
    e.g. ``rate(default_lr, update="normalized")`` for the built-in Adam-like contenders' range,
    :data:`RATE_RANGES`). A random search draws each hyperparameter from the common random numbers of its
    kind (:mod:`mxopt_jax.compare.search`): one named like a built-in kind (``"momentum"``, ``"b1"``) takes
    that kind's draws.
    """
    if isinstance(make, optax.GradientTransformation):
        raise TypeError(
            f"contender {name!r}: `make` must be a factory `learning_rate -> GradientTransformation` (the study "
            "tunes the rate), got a GradientTransformation; e.g. `lambda lr: optax.adam(lr)`"
        )
    if not callable(make):
        raise TypeError(f"contender {name!r}: `make` must be callable, got {type(make).__name__}")
    if (
        isinstance(default_lr, bool)
        or not isinstance(default_lr, int | float)
        or not (math.isfinite(default_lr) and default_lr > 0)
    ):
        raise ValueError(f"contender {name!r}: `default_lr` must be a finite number > 0, got {default_lr!r}")
    hps = list(hyperparameters)
    if not all(isinstance(h, Hyperparameter) for h in hps):
        raise TypeError(f"contender {name!r}: `hyperparameters` must be Hyperparameter objects, got {hps!r}")
    if not hps or hps[0].name != "learning_rate":
        hps.insert(0, rate(float(default_lr)))
    declared = set(_names(hps)) - {"learning_rate"}
    try:
        sig = inspect.signature(make)
    except (TypeError, ValueError):  # a builtin or C callable: (learning_rate, key)
        sig = None
    params = list(sig.parameters.values()) if sig is not None else []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if sig is not None and not positional:
        raise TypeError(f"contender {name!r}: `make` must take the learning rate as its first argument")
    # how each parameter of `make` is filled: "lr", "key", "steps" or a hyperparameter's name
    plan: list[tuple[inspect.Parameter, str]] = []
    for i, p in enumerate(params):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if i == 0:
            plan.append((p, "lr"))
        elif p.name in ("key", "steps") or p.name in declared:
            plan.append((p, p.name))
        elif i == 1 and p.kind != p.KEYWORD_ONLY:
            plan.append((p, "key"))
        elif p.default is inspect.Parameter.empty:
            raise TypeError(
                f"contender {name!r}: `make` takes {p.name!r}, which is neither the learning rate, `key`, `steps` "
                f"nor a declared hyperparameter ({', '.join(sorted(declared)) or 'none declared'})"
            )
    missing = declared - {w for _, w in plan}
    if sig is not None and missing and not any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(
            f"contender {name!r}: `make` takes no parameter for hyperparameter(s) {sorted(missing)}"
        )

    defaults = {h.name: float(h.default) for h in hps}

    def build(hp: Mapping[str, Any], key: jax.Array, steps: int) -> optax.GradientTransformation:
        if sig is None:
            return _traced_call(name, make, (hp["learning_rate"], key), {})
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        values = {"lr": hp["learning_rate"], "key": key, "steps": steps}
        for p, what in plan:
            v = values[what] if what in values else hp.get(what, defaults[what])
            if p.kind == p.KEYWORD_ONLY:
                kwargs[p.name] = v
            else:
                args.append(v)
        return _traced_call(name, make, tuple(args), kwargs)

    return Contender(
        name,
        build,
        tuple(hps),
        family,
        row_sparse=False,
        description=description,
        settings=dict(settings or {}),
    )


def default_contenders() -> list[Contender]:
    """Every mxopt_jax optimizer (table order) followed by the optax baselines."""
    return [mxopt_contender(n) for n in OPTIMIZERS] + list(OPTAX_BASELINES.values())


def resolve(names: Sequence[str | Contender] | str | Contender | None) -> list[Contender]:
    """Contenders from names (``"adam"``, ``"optax.adam"``, ``"all"``, ``"mxopt"``, ``"optax"``) or objects."""
    if names is None:
        return default_contenders()
    if isinstance(names, str | Contender):  # one contender, not a sequence of characters
        names = [names]
    out: list[Contender] = []
    for item in names:
        if isinstance(item, str):
            item = canonical_name(item, list(OPTIMIZERS))  # an optimizer's other spelling: group_adagrad
        if isinstance(item, Contender):
            out.append(item)
        elif item == "all":
            out.extend(default_contenders())
        elif item == "mxopt":
            out.extend(mxopt_contender(n) for n in OPTIMIZERS)
        elif item == "optax":
            out.extend(OPTAX_BASELINES.values())
        elif item in OPTAX_BASELINES:
            out.append(OPTAX_BASELINES[item])
        elif isinstance(item, str) and item in OPTIMIZERS:
            out.append(mxopt_contender(item))
        else:
            raise ValueError(
                unknown_name(
                    "contender", item, [*OPTIMIZERS, *OPTAX_BASELINES], groups=("all", "mxopt", "optax")
                )
            )
    seen: set[str] = set()
    unique = []
    for c in out:
        if c.name not in seen:
            seen.add(c.name)
            unique.append(c)
    if not unique:
        raise ValueError("no contenders given")
    return unique
