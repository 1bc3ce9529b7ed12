"""Which configurations a study tries: the learning-rate grid (the quick mode) or a random search over every
hyperparameter (the research mode, the Crowded Valley's protocol).

* ``search="grid"`` (default): each contender's learning rate on the preset's log grid around its default
  (:meth:`~mxopt_jax.compare.protocol.Preset.grid`); every other hyperparameter keeps its default. A chosen
  rate on the grid's edge extends the grid.
* ``search="random"``: ``trials`` configurations per contender, the same number for every contender (equal
  budgets), each hyperparameter drawn independently from its declared range and scale
  (:class:`~mxopt_jax.compare.space.Hyperparameter`; the built-in ranges are
  :data:`mxopt_jax.compare.contenders.RANGES`). **The first trial is the contender's default configuration**
  (MXNet's or optax's defaults), so the search always contains the one-shot configuration; the other
  ``trials - 1`` are drawn. The draws come from a NumPy ``Generator`` seeded by the search seed and the
  contender's name alone: a contender gets the same trials whichever other contenders run, on every problem.

Every hyperparameter the search draws is a traced input of the compiled program
(:func:`mxopt_jax.compare.engine.compile_group`'s ``tuned=``): trials are inputs, never recompiles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .records import canonical
from .space import Hyperparameter
from .space import names as _names

if TYPE_CHECKING:  # pragma: no cover
    from .contenders import Contender
    from .protocol import Preset

__all__ = [
    "DEFAULT_TRIALS",
    "EDGE_MARGIN",
    "SEARCHES",
    "check_search",
    "configurations",
    "draw",
    "edges",
    "generator",
    "tuned",
]

#: The ways a study chooses configurations.
SEARCHES = ("grid", "random")
#: Trials per contender of a random search when none are given.
DEFAULT_TRIALS = 20
#: A chosen value within this fraction of its range's width (on its scale) from an end is flagged
#: (:func:`edges`): the best value may lie beyond the range.
EDGE_MARGIN = 0.05


def check_search(search: str, trials: int | None) -> int | None:
    """``trials`` checked for ``search`` (``None`` for the grid; :data:`DEFAULT_TRIALS` when not given)."""
    if search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {search!r}")
    if search == "grid":
        if trials is not None:
            raise ValueError("trials: only a random search takes a number of trials (search='random')")
        return None
    trials = DEFAULT_TRIALS if trials is None else trials
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    return int(trials)


def generator(seed: int, name: str) -> np.random.Generator:
    """The random stream of contender ``name`` under search seed ``seed``: it depends on these two only (the
    name's bytes join the seed in a ``SeedSequence``; no process-dependent hash)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"search seed must be an int >= 0, got {seed!r}")
    return np.random.default_rng(np.random.SeedSequence([int(seed), *name.encode("utf-8")]))


def draw(
    hyperparameters: Sequence[Hyperparameter],
    trials: int,
    rng: np.random.Generator,
    include_default: bool = True,
) -> dict[str, np.ndarray]:
    """``trials`` configurations as columns ``{name: (trials,)}``: the defaults first (``include_default``),
    then independent draws, each hyperparameter from its range on its scale (stored values,
    :func:`~mxopt_jax.compare.records.canonical`)."""
    hps = list(hyperparameters)
    n_drawn = trials - 1 if include_default else trials
    u = rng.random((max(n_drawn, 0), len(hps)))
    cols: dict[str, np.ndarray] = {}
    for j, h in enumerate(hps):
        values = h.from_unit(u[:, j])
        if include_default:
            values = np.concatenate([[float(h.default)], values])
        cols[h.name] = canonical(values)
    return cols


def configurations(
    contender: Contender,
    preset: Preset,
    search: str = "grid",
    trials: int | None = None,
    seed: int = 0,
    sparse: bool = False,
) -> dict[str, np.ndarray]:
    """The selection configurations of ``contender``: the preset's rate grid (``search="grid"``) or
    ``trials`` random configurations of every hyperparameter it declares (``search="random"``, the first
    one its defaults). On a problem with embedding tables (``sparse``) the contender's ``sparse_fixed``
    hyperparameters are left out (they keep their defaults); the others' draws are the same."""
    trials = check_search(search, trials)
    if search == "grid":
        return {"learning_rate": preset.grid(contender.default_lr)}
    assert trials is not None
    cols = draw(contender.hyperparameters, trials, generator(seed, contender.name))
    keep = tuned([contender], search, sparse)[contender.name]
    return {k: v for k, v in cols.items() if k in keep}


def tuned(
    contenders: Sequence[Contender], search: str = "grid", sparse: bool = False
) -> dict[str, tuple[str, ...]]:
    """``{contender: names}`` of the hyperparameters the compiled program traces: the learning rate (grid),
    every declared hyperparameter (random; on a problem with embedding tables, ``sparse``, those of a
    contender's ``sparse_fixed`` excepted)."""
    check_search(search, 1 if search == "random" else None)
    if search == "grid":
        return {c.name: ("learning_rate",) for c in contenders}
    return {
        c.name: tuple(n for n in _names(c.hyperparameters) if not (sparse and n in c.sparse_fixed))
        for c in contenders
    }


def edges(
    hyperparameters: Sequence[Hyperparameter], config: Mapping[str, float], margin: float = EDGE_MARGIN
) -> dict[str, str]:
    """``{name: "low" | "high"}`` for the values of ``config`` within ``margin`` of their range's ends (on
    the hyperparameter's scale, the range's width being 1); the default of a value outside its range (a weight
    decay of 0) is not flagged."""
    out: dict[str, str] = {}
    for h in hyperparameters:
        if h.name not in config or h.high == h.low:
            continue
        u = float(h.to_unit(config[h.name]))
        if not math.isfinite(u) or u < -1e-9 or u > 1 + 1e-9:
            continue
        if u <= margin:
            out[h.name] = "low"
        elif u >= 1 - margin:
            out[h.name] = "high"
    return out
