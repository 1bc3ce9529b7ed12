"""The optimizers a study compares: :class:`Contender` (a name, a family, a default rate, a factory).

Every mxopt_jax optimizer of the table (:data:`mxopt_jax.OPTIMIZERS`) is a contender with MXNet's defaults
for everything but the learning rate, plus baselines from optax (:data:`OPTAX_BASELINES`) run through the
same harness. A user's own contender is any ``(learning_rate, key) -> optax.GradientTransformation``; the
learning rate arrives as a traced JAX scalar (the engine vmaps over it), so the factory must not branch on it
in Python.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import optax

from .. import FAMILIES as _FAMILIES
from .. import OPTIMIZERS
from .. import sparse as _sparse

__all__ = [
    "FAMILY_ORDER",
    "OPTAX_BASELINES",
    "OPTAX_FAMILY",
    "Contender",
    "contender",
    "default_contenders",
    "family_of",
    "group_by_family",
    "mxopt_contender",
    "resolve",
]

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
      make: ``(learning_rate, key) -> optax.GradientTransformation``. ``learning_rate`` is a traced scalar;
        ``key`` is the run's PRNG key (for optimizers that draw random numbers, such as SGLD), the same for
        every contender of a run's seed.
      default_lr: the rate of the "one-shot" mode (MXNet's default for mxopt_jax's optimizers) and the centre
        of the tuning grid.
      family: groups contenders into one compiled program and one plot panel.
      row_sparse: takes :class:`mxopt_jax.sparse.RowSparse` gradients (on problems with embedding tables,
        gradients come from :func:`mxopt_jax.sparse.value_and_grad`); otherwise gradients are dense.
      sparse_make: ``make`` for problems with embedding tables, when it differs (lazy updates).
      description: one line for the printed protocol (what is not MXNet's/optax's default).
    """

    name: str
    make: Callable[[Any, jax.Array], optax.GradientTransformation]
    default_lr: float
    family: str
    row_sparse: bool = False
    sparse_make: Callable[[Any, jax.Array], optax.GradientTransformation] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not callable(self.make):
            raise TypeError(
                f"Contender {self.name!r}: `make` must be callable, got {type(self.make).__name__}"
            )
        if not (isinstance(self.default_lr, float | int) and self.default_lr > 0):
            raise ValueError(
                f"Contender {self.name!r}: `default_lr` must be a number > 0, got {self.default_lr!r}"
            )

    def factory(self, sparse: bool) -> Callable[[Any, jax.Array], optax.GradientTransformation]:
        """The factory for a problem with (``sparse=True``) or without embedding tables."""
        return self.sparse_make if (sparse and self.sparse_make is not None) else self.make


def _quiet(fn: Callable[..., optax.GradientTransformation], **kwargs: Any) -> optax.GradientTransformation:
    # lbsgd/ccsgd warn that MXNet 2.0 removed them: comparing them is deliberate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return fn(**kwargs)


def mxopt_contender(name: str) -> Contender:
    """The contender for ``mxopt_jax.OPTIMIZERS[name]``: MXNet's defaults but for the learning rate.

    GroupAdaGrad keeps one accumulator per row of a 2-D weight; the other leaves (biases, scalars) go to
    AdaGrad with the same rate (a row of one). SGLD draws its noise from the run's key. On problems with
    embedding tables the optimizers that have MXNet's ``lazy_update`` switch run with ``lazy_update=True``
    (MXNet's sparse recipe); AdaGrad and GroupAdaGrad update listed rows only anyway (their sparse kernels).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
    fn = OPTIMIZERS[name]
    params = inspect.signature(fn).parameters
    default_lr = float(params["learning_rate"].default)
    family = family_of(name)

    def build(lr: Any, key: jax.Array, **extra: Any) -> optax.GradientTransformation:
        kwargs: dict[str, Any] = {"learning_rate": lr, **extra}
        if name == "sgld":
            kwargs["seed"] = key
        tx = _quiet(fn, **kwargs)
        if name == "groupadagrad":
            rows = tx
            other = _quiet(OPTIMIZERS["adagrad"], learning_rate=lr)
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
    return Contender(
        name=name,
        make=build,
        default_lr=default_lr,
        family=family,
        row_sparse=True,
        sparse_make=(lambda lr, key: build(lr, key, lazy_update=True)) if lazy else None,
        description=desc,
    )


def _optax(
    name: str, fn: Callable[..., optax.GradientTransformation], lr: float, desc: str, **kw: Any
) -> Contender:
    return Contender(
        name=f"optax.{name}",
        make=lambda rate, key: fn(rate, **kw),
        default_lr=lr,
        family=OPTAX_FAMILY,
        row_sparse=False,
        description=desc,
    )


#: optax's optimizers that people use today, run through the same harness (dense gradients everywhere).
OPTAX_BASELINES: dict[str, Contender] = {
    c.name: c
    for c in (
        _optax("sgd", optax.sgd, 0.1, "optax.sgd(lr, momentum=0.9)", momentum=0.9),
        _optax("adam", optax.adam, 1e-3, "optax.adam(lr), optax's defaults"),
        _optax("adamw", optax.adamw, 1e-3, "optax.adamw(lr), optax's defaults (weight_decay=1e-4)"),
        _optax("lamb", optax.lamb, 1e-3, "optax.lamb(lr), optax's defaults"),
    )
}


def contender(
    name: str,
    make: Callable[[Any, jax.Array], optax.GradientTransformation] | optax.GradientTransformation | Callable,
    default_lr: float,
    family: str = "user",
    description: str = "",
) -> Contender:
    """A user's contender: ``make(learning_rate)`` or ``make(learning_rate, key)`` returning a transform.

    For example ``contender("optax.lion", lambda lr: optax.lion(lr), 1e-4)``.
    """
    if isinstance(make, optax.GradientTransformation):
        raise TypeError(
            f"contender {name!r}: `make` must be a factory `learning_rate -> GradientTransformation` (the study "
            "sweeps the rate), got a GradientTransformation; e.g. `lambda lr: optax.adam(lr)`"
        )
    if not callable(make):
        raise TypeError(f"contender {name!r}: `make` must be callable, got {type(make).__name__}")
    try:
        n_args = len(inspect.signature(make).parameters)
    except (TypeError, ValueError):
        n_args = 2
    fn = make if n_args >= 2 else (lambda lr, key: make(lr))
    return Contender(name, fn, float(default_lr), family, row_sparse=False, description=description)


def default_contenders() -> list[Contender]:
    """Every mxopt_jax optimizer (table order) followed by the optax baselines."""
    return [mxopt_contender(n) for n in OPTIMIZERS] + list(OPTAX_BASELINES.values())


def resolve(names: Sequence[str | Contender] | None) -> list[Contender]:
    """Contenders from names (``"adam"``, ``"optax.adam"``, ``"all"``, ``"mxopt"``, ``"optax"``) or objects."""
    if names is None:
        return default_contenders()
    out: list[Contender] = []
    for item in names:
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
            known = ", ".join([*OPTIMIZERS, *OPTAX_BASELINES, "all", "mxopt", "optax"])
            raise ValueError(f"unknown optimizer {item!r}; known: {known}")
    seen: set[str] = set()
    unique = []
    for c in out:
        if c.name not in seen:
            seen.add(c.name)
            unique.append(c)
    if not unique:
        raise ValueError("no optimizers given")
    return unique
