"""Which configurations a study tries: the learning-rate grid (the quick mode) or a random search over every
hyperparameter (the research mode, the Crowded Valley's protocol).

* ``search="grid"`` (default): each contender's learning rate on the preset's log grid around its default
  (:meth:`~mxopt_jax.compare.presets.Preset.grid`); every other hyperparameter keeps its default. A chosen
  rate on the grid's edge extends the grid.
* ``search="random"``: ``trials`` configurations per contender, the same number for every contender (equal
  budgets), each hyperparameter drawn independently from its declared range and scale
  (:class:`~mxopt_jax.compare.space.Hyperparameter`; the built-in ranges are
  :data:`mxopt_jax.compare.contenders.RANGES` and, for the learning rate,
  :data:`mxopt_jax.compare.contenders.RATE_RANGES`, one range per kind of update). **The first trial is the
  contender's default configuration** (MXNet's or optax's defaults), so the search always contains the one-shot
  configuration; the other ``trials - 1`` are drawn.

**Common random numbers** (:func:`unit_draws`): the draws come from the search seed alone, one stream of
uniform numbers per *kind* of hyperparameter (:func:`~mxopt_jax.compare.space.kind`: the learning rate,
momentum, beta1 = optax's ``b1``, ...), mapped through each contender's range on its scale. Every contender that
has a kind takes the same column of that kind, so

* two contenders with the same space get the same trials, whatever their names (identical updates under two
  names run the same configurations, have the same records and are one table entry);
* a contender's trials do not depend on the other contenders, nor on the hyperparameters it does not have
  (adding or removing one hyperparameter of a contender moves no other column), and are the same on every
  problem;
* contenders with different spaces are compared on matched draws: trial ``k`` of every contender sits at the
  same relative place of its learning-rate range (the same quantile), which removes the luck of the draw from
  their difference (variance reduction by common random numbers);
* ``trials`` draws are the first ``trials - 1`` numbers of each stream: a search of 8 trials is the start of a
  search of 20 under the same seed.

``search_seed`` changes every stream at once (a new independent search for every contender).
:data:`DRAWS` names this meaning of the seed; a random study saves it in its spec, and a study saved under
another meaning is refused on resume.

**Edge flag** (:func:`edges`): a chosen value that is the lowest or the highest value tried of its
hyperparameter (among the trials) is flagged, per hyperparameter: nothing on that side of it was tried, so the
best value may lie beyond it.

Every hyperparameter the search draws is a traced input of the compiled program
(:func:`mxopt_jax.compare.engine.compile_group`'s ``tuned=``): trials are inputs, never recompiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .records import canonical
from .space import Hyperparameter, kind
from .space import names as _names

if TYPE_CHECKING:  # pragma: no cover
    from .contenders import Contender
    from .presets import Preset

__all__ = [
    "DEFAULT_TRIALS",
    "DRAWS",
    "SEARCHES",
    "check_search",
    "configurations",
    "draw",
    "edges",
    "generator",
    "tuned",
    "unit_draws",
]

#: The ways a study chooses configurations.
SEARCHES = ("grid", "random")
#: Trials per contender of a random search when none are given.
DEFAULT_TRIALS = 20
#: What the search seed means: saved with a random study's options (``spec.json``), so that a study whose trials
#: were drawn another way (before common random numbers, each contender drew from a stream seeded by its name)
#: is refused on resume instead of being continued with other draws.
DRAWS = "common random numbers per kind of hyperparameter (v2; v1 drew per name)"


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


def generator(seed: int, stream: str) -> np.random.Generator:
    """The random stream ``stream`` (a kind of hyperparameter, :func:`~mxopt_jax.compare.space.kind`) under
    search seed ``seed``: it depends on these two only (the name's bytes join the seed in a ``SeedSequence``; no
    process-dependent hash). The seed is checked: an int >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"search seed must be an int >= 0, got {seed!r}")
    return np.random.default_rng(np.random.SeedSequence([int(seed), *stream.encode("utf-8")]))


def unit_draws(seed: int, kinds: Iterable[str], n: int) -> dict[str, np.ndarray]:
    """``{kind: (n,) uniform numbers in [0, 1)}``: the common random numbers of a random search, the first ``n``
    numbers of each kind's stream (:func:`generator`), the same for every contender."""
    return {k: generator(seed, k).random(max(int(n), 0)) for k in dict.fromkeys(kinds)}


def draw(
    hyperparameters: Sequence[Hyperparameter],
    count: int,
    seed: int = 0,
    include_default: bool = True,
) -> dict[str, np.ndarray]:
    """``count`` configurations as columns ``{name: (count,)}``: the defaults first (``include_default``), then the
    drawn ones, each hyperparameter's column the common random numbers of its kind (:func:`unit_draws`) mapped
    through its range on its scale (stored values, :func:`~mxopt_jax.compare.records.canonical`)."""
    hps = list(hyperparameters)
    u = unit_draws(seed, (kind(h.name) for h in hps), count - 1 if include_default else count)
    cols: dict[str, np.ndarray] = {}
    for h in hps:
        values = h.from_unit(u[kind(h.name)])
        if include_default:
            values = np.concatenate([[float(h.default)], values])
        cols[h.name] = canonical(values)
    return cols


def configurations(
    contender: Contender,
    preset: Preset,
    search: str = "grid",
    count: int | None = None,
    seed: int = 0,
    sparse: bool = False,
) -> dict[str, np.ndarray]:
    """The selection configurations of ``contender``, ``count`` of them (:attr:`Plan.configurations
    <mxopt_jax.compare.plan.Plan.configurations>`): the preset's rate grid (``search="grid"``; ``count`` its
    points, or None) or ``count`` random configurations of every hyperparameter it declares (``search="random"``,
    the first one its defaults; :func:`draw`: they depend on the seed and on the contender's space, not on its
    name; None: :data:`DEFAULT_TRIALS`). On a problem with embedding tables (``sparse``) the contender's
    ``sparse_fixed`` hyperparameters are left out (they keep their defaults); the others' draws are the same.

    Raises
    ------
    ValueError
        ``count`` not the preset's points for the grid, or not an int >= 1 for a random search.
    """
    if search == "grid":
        check_search(search, None)
        if count is not None and count != preset.grid_points:
            raise ValueError(
                f"count: the grid of preset {preset.name!r} has {preset.grid_points} points, got {count!r}"
            )
        return {"learning_rate": preset.grid(contender.default_lr)}
    count = check_search(search, count)
    assert count is not None
    cols = draw(contender.hyperparameters, count, seed)
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
    trials: Mapping[str, Sequence[float] | np.ndarray],
    index: int,
    hyperparameters: Sequence[Hyperparameter] = (),
) -> dict[str, str]:
    """``{name: "low" | "high"}`` for each hyperparameter whose value at trial ``index`` is the lowest
    (``"low"``) or the highest (``"high"``) of its column in ``trials`` (``{name: (G,) values}``, every trial
    that ran): no trial tried a value beyond it on that side, so the best value may lie there.

    A column with fewer than two distinct values says nothing and is not flagged. Where ``hyperparameters``
    declare the column's range, a value the scale has no place for (a weight decay of 0 on a log scale) or a
    value on an end of the range (SGD's default momentum 0) is not flagged: only the default trial holds such a
    value (a draw lands inside the range), and nothing lies beyond it that the range could offer."""
    declared = {h.name: h for h in hyperparameters}
    out: dict[str, str] = {}
    for name, column in trials.items():
        v = np.asarray(column, np.float64)
        if not 0 <= index < len(v) or not math.isfinite(v[index]) or len(np.unique(v)) < 2:
            continue
        h = declared.get(name)
        if h is not None and h.high > h.low:
            u = float(h.to_unit(v[index]))
            if not math.isfinite(u) or u == 0.0 or u == 1.0:
                continue
        if v[index] <= np.min(v):
            out[name] = "low"
        elif v[index] >= np.max(v):
            out[name] = "high"
    return out
