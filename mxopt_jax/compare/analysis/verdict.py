"""The verdict of a table: which contenders could be the best (:class:`Verdict`, made by :func:`verdict`), and
what it would cost to narrow that set (:class:`Narrowing`).

A contender is *out* of a table's best set when another entry was shown better than it by the table's tests (a
rejected test that Holm's correction kept): for a tuned table whose contenders ran every configuration on the
report seeds, a claim about the optimizers under their searches (the other, at its chosen configuration, beat it
at every configuration it tried); else a claim about the chosen (or default) configurations. The best set is
every entry not out: its rank set starts at 1. If every claim of the table's family is true (probability at
least ``1 - level``), the best contender is in it.

Narrowing the set means showing its leader (the entry of the best set with the best median) better than each
other member. Per member, :func:`narrowing_seeds` estimates the report seeds that would take, by resampling the
observed paired differences (the seeds drawn with replacement, jointly for every configuration of the member's
search, so the seeds' shared effects stay paired) and asking how often the table's test would reject at
Holm's first threshold (``level / family``): the fewest seeds of :data:`SEED_STEPS` at which it does in
:data:`POWER` of :data:`RESAMPLES` draws, from ``numpy.random.default_rng(0)``. A computed estimate from this
study's own numbers, not a guarantee; ``None`` when the leader does not beat the member on most seeds at some
configuration (more seeds would not separate them) or not within the largest count tried.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .. import stats
from ..direction import Direction
from ..protocol import Selection
from ..stats import most_entries
from .table import TableAnalysis

__all__ = [
    "POWER",
    "RESAMPLES",
    "SEED_STEPS",
    "Narrowing",
    "Verdict",
    "most_entries",
    "narrowing_seeds",
    "verdict",
]

#: Report seed counts tried when estimating what narrowing a best set costs.
SEED_STEPS = (16, 24, 32, 48, 64, 96, 128, 192, 256)
#: Resampled tables per seed count, and the share of them that must reject.
RESAMPLES = 100
POWER = 0.8
#: Configurations of a member's search held against the leader in the estimate: the ones the leader beats on
#: the fewest seeds (the others are beaten on nearly every seed and do not move the intersection-union test).
_CLOSEST = 3


@dataclasses.dataclass(frozen=True)
class Narrowing:
    """What showing the leader better than one other member of the best set would take.

    Attributes:
      name: the member.
      seeds: the estimated report seeds (:func:`narrowing_seeds`), or ``None``.
      wins: the share of the report seeds on which the leader beat the member's closest configuration (ties
        split), the lowest over the member's configurations: at or below one half, more seeds would not help.
      versus: that configuration, in words (``"lr 0.01"``).
    """

    name: str
    seeds: int | None
    wins: float
    versus: str


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One table's verdict.

    Attributes:
      problem, mode: the table; ``about``: what its claims speak of (``"optimizers"`` under their searches,
        ``"configurations"``, ``"defaults"``).
      best: the entries no other entry was shown better than, in the table's display order.
      entries: how many entries the table has; ``seeds``: its report seeds; ``family``, ``level``: the Holm
        family and level its claims were decided at.
      identical: ``{entry: [contenders folded into it]}`` for the best set's entries.
      leader: the best set's first entry (the best median among them).
      narrowing: per other member of the best set, what showing the leader better would take.
    """

    problem: str
    mode: str
    about: str
    best: tuple[str, ...]
    entries: int
    seeds: int
    family: int
    level: float
    identical: dict[str, list[str]]
    leader: str
    narrowing: tuple[Narrowing, ...]

    @property
    def settled(self) -> bool:
        """Whether one entry is the best (the set has one member)."""
        return len(self.best) == 1

    @property
    def seeds_to_narrow(self) -> int | None:
        """The report seeds the estimate says would narrow the set to its leader: the largest member's count;
        ``None`` when some member cannot be separated within :data:`SEED_STEPS` (or the set is one entry)."""
        counts = [n.seeds for n in self.narrowing]
        if not counts or any(c is None for c in counts):
            return None
        return max(c for c in counts if c is not None)


def narrowing_seeds(
    leader: np.ndarray,
    member: np.ndarray,
    threshold: float,
    rtol: float = stats.ROUNDING_RTOL,
    margin: float = 0.0,
    steps: Sequence[int] = SEED_STEPS,
    resamples: int = RESAMPLES,
    power: float = POWER,
) -> tuple[int | None, float, int]:
    """The report seeds at which the leader would be shown better than the member (module docstring).

    ``leader`` ``(R,)``: the leader's report values at its chosen configuration, oriented (lower is better,
    ``+inf`` diverged); ``member`` ``(G, R)``: the member's at every configuration its claim must cover, on the
    same seeds. ``threshold``: the p-value a claim must reach (Holm's first: ``level / family``). Returns
    ``(seeds or None, wins, closest configuration's row)``.
    """
    leader = np.asarray(leader, np.float64)
    member = np.atleast_2d(np.asarray(member, np.float64))
    d, twins = stats._rounded(np.broadcast_to(leader, member.shape), member, rtol)
    d = d + margin
    wins = ((d < 0).sum(axis=-1) + 0.5 * (d == 0).sum(axis=-1)) / d.shape[-1]
    closest = int(np.argmin(wins))
    if twins.any() or wins.min() <= 0.5:
        return None, float(wins.min()), closest
    rows = np.argsort(wins, kind="stable")[:_CLOSEST]
    rng = np.random.default_rng(0)
    R = d.shape[-1]
    for n in steps:
        if n < R:
            continue
        idx = rng.integers(0, R, size=(resamples, n))
        drawn = d[rows][:, idx]  # (k, B, n)
        # the intersection-union test: every configuration must reject (the signed-rank test's normal form:
        # the resampled tables reach 256 seeds, where the exact distribution costs too much thousands of times)
        p = stats.signed_rank_normal_less(drawn).max(axis=0)
        if float((p <= threshold).mean()) >= power:
            return int(n), float(wins.min()), closest
    return None, float(wins.min()), closest


def verdict(table: TableAnalysis) -> Verdict:
    """The verdict of ``table`` (module docstring)."""
    comp = table.comparison
    c = comp.comparison
    best = table.best
    by = {s.contender: s for s in table.selections}
    direction = Direction(comp.better)
    narrowing: list[Narrowing] = []
    leader = best[0] if best else ""
    family = int(c.family or c.pairs)
    if len(best) > 1:
        threshold = c.level / max(family, 1)
        lead = _oriented(by[leader].test, by[leader], direction)
        for name in best[1:]:
            s = by[name]
            rows = s.report_grid if comp.searches is not None and s.report_grid is not None else [s.test]
            grid = np.stack([_oriented(r, s, direction) for r in np.atleast_2d(rows)])
            seeds, wins, k = narrowing_seeds(lead, grid, threshold, c.rtol, comp.margin)
            versus = (
                f"lr {float(np.asarray(s.lrs)[k]):.3g}" if comp.searches is not None else f"lr {s.lr:.3g}"
            )
            narrowing.append(Narrowing(name, seeds, wins, versus))
    return Verdict(
        problem=table.problem,
        mode=table.mode,
        about=table.about,
        best=best,
        entries=len(comp.entries),
        seeds=table.seeds,
        family=family,
        level=float(c.level),
        identical={n: list(table.identical.get(n, [])) for n in best},
        leader=leader,
        narrowing=tuple(narrowing),
    )


def _oriented(values: np.ndarray, s: Selection, direction: Direction) -> np.ndarray:
    """One row of ``s``'s report values in seed order, oriented (lower is better), a diverged seed ``+inf``."""
    order = np.argsort(np.asarray(s.report_seeds, np.int64), kind="stable")
    v = np.asarray(values, np.float64)[order]
    return np.asarray(direction.orient(np.where(np.isfinite(v), v, s.sign * np.inf)))
