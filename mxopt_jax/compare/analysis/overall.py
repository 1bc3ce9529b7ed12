"""The readings over problems: :class:`Ranking` (the overall ranking of one mode: the mean rank over the
problems, its bootstrap over problems, P(best), targets reached, the profile score) and :class:`Profile`
(AlgoPerf's performance profile), made once from the tables' analyses by :func:`analyse_ranking`.

Nothing here re-tests: a contender's rank on a problem is the middle of its rank set in that problem's table
(:class:`~mxopt_jax.compare.analysis.table.TableAnalysis`), and the bootstrap resamples problems
(:func:`mxopt_jax.compare.stats.bootstrap_problems`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..selection import LEVEL, Selection
from ..stats import profiles, ranking
from .comparison import FAMILIES, TEST_LEVEL, TableComparison
from .table import TableAnalysis

__all__ = [
    "BOOTSTRAP_REPLICATES",
    "BOOTSTRAP_SEED",
    "MIN_PROBLEMS",
    "TAU_MAX",
    "Profile",
    "Ranking",
    "analyse_profile",
    "analyse_ranking",
    "midpoint_ranks",
    "profile_times",
    "ranking_omitted",
]

#: Bootstrap replicates of the mean rank (:func:`analyse_ranking`) and the seed they are drawn from.
BOOTSTRAP_REPLICATES = 1000


BOOTSTRAP_SEED = 0


#: Largest ratio to the fastest contender a performance profile looks at (AlgoPerf's ``tau_max``).
TAU_MAX = 4.0


#: The fewest problems whose overall ranking gets its bootstrap interval and P(best) (:func:`ranking_omitted`):
#: the percentile bootstrap over ``P`` problems covers a contender's mean rank over problems at 95 % nominal in
#: only 49-83 % of draws with 2 problems, 86-87 % at 5, 89-92 % at 8 and at least 90 % from 9 on (four shapes of
#: per-problem ranks, ``tests/app/test_error_rates.py``).
MIN_PROBLEMS = 9


def ranking_omitted(problems: int, family: str = "table", level: float = TEST_LEVEL) -> str:
    """Why the overall ranking's interval and P(best) are left out, in a sentence, or ``''`` when they are
    shown: they need at least :data:`MIN_PROBLEMS` problems (fewer cannot support a bootstrap over problems:
    with 2, the interval is the two ranks and P(best) splits ties) *and* the report's claims corrected as one
    family (``family == "report"``, :func:`report_family`): the ranking reads every table's claims at once,
    and with a family per table some table of 9 holds a false claim in about 30 % of studies where no
    contender differs, enough to give someone P(best) >= 0.5 in a quarter of them.

    Raises
    ------
    ValueError
        ``family`` not in :data:`FAMILIES`; ``problems`` negative.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    if isinstance(problems, bool) or int(problems) != problems or problems < 0:
        raise ValueError(f"problems must be an integer >= 0, got {problems!r}")
    if problems < MIN_PROBLEMS:
        return (
            f"The interval and P(best) are omitted: {problems} problem(s) cannot support a bootstrap over problems "
            f"(it needs at least {MIN_PROBLEMS}: with 2 problems its {100 * LEVEL:g} % interval covers the mean "
            "rank in as few as half of the draws, with 5 to 8 in 86 to 92 % of them)."
        )
    if family != "report":
        return (
            "The interval and P(best) are omitted: the ranking reads every table's claims at once, and with "
            f"Holm's correction per table ({100 * level:g} % for each table) some table of {problems} holds a false "
            "claim far more often than that; run with `--family report` (all tables one family) to get them."
        )
    return ""


def midpoint_ranks(tables: Sequence[TableComparison], names: Sequence[str]) -> np.ndarray:
    """``(P, C)``: ``names[c]``'s rank on table ``p``, the middle of its rank set
    (:meth:`TableComparison.midpoint`; a folded contender its representative's), NaN where it is not in the
    table: what the mean rank over problems averages and the bootstrap over problems resamples."""
    ranks = np.full((len(tables), len(names)), np.nan)
    for k, table in enumerate(tables):
        for c, n in enumerate(names):
            if n in table.entry:
                ranks[k, c] = table.midpoint(n)
    return ranks


def profile_times(by_problem: Mapping[str, Sequence[Selection]]) -> dict[str, dict[str, float]]:
    """``{problem: {contender: time}}``: each contender's time to target on each problem, for the performance
    profile: :attr:`Selection.fastest_time`, AlgoPerf's time under external tuning.

    AlgoPerf tunes with 5 studies of 5 trials (hyperparameter settings) each; a study's time is that of its
    fastest trial reaching the validation target, and the workload's time is the median over the studies
    (infinite when a study has no such trial). Here a study is a selection seed: its trials are the
    configurations tried (the grid and its extensions) on that seed, its time the fewest steps any of them
    needed; the time is the steps by which a majority of the seeds got there (:func:`time_to_target`: the
    median for an odd count, the upper median for an even one), ``inf`` unless more than half of the seeds had
    a configuration reaching the target. It reads the *selection* runs (every configuration tried), not the
    report seeds the tables' test values come from. Time is counted in steps (the tables show steps x ms/step
    next to it): every contender of a problem does the same model work per step. Problems with no selection are
    left out.
    """
    return {
        p: {s.contender: float(s.fastest_time) for s in sels} for p, sels in by_problem.items() if len(sels)
    }


@dataclasses.dataclass(frozen=True)
class Profile:
    """AlgoPerf's performance profile of one mode's contenders over the problems.

    Attributes:
      times: ``{problem: {contender: time}}``, the fastest trial's steps to target
        (:func:`profile_times`), identical contenders folded.
      tau_max: the largest ratio looked at; ``taus``: the ``tau`` grid from 1 to it; ``rho``: ``{contender:
        rho(taus)}`` (:func:`mxopt_jax.compare.stats.performance_profile`).
      scores: ``{contender: AlgoPerf's score}``, the normalized area under its profile
        (:func:`mxopt_jax.compare.stats.profile_score`).
    """

    times: dict[str, dict[str, float]]
    tau_max: float
    taus: np.ndarray
    rho: dict[str, np.ndarray]
    scores: dict[str, float]

    @property
    def problems(self) -> int:
        return len(self.times)


def analyse_profile(by_problem: Mapping[str, Sequence[Selection]], tau_max: float = TAU_MAX) -> Profile:
    """The performance profile of ``by_problem``'s selections (one mode; identical contenders already
    folded)."""
    times = profile_times(by_problem)
    if not times:
        return Profile({}, tau_max, np.zeros(0), {}, {})
    taus, rho = profiles.performance_profile(times, tau_max)
    ratios = profiles.performance_ratios(times)
    scores = {n: profiles.profile_score(r, tau_max) for n, r in ratios.items()}
    return Profile(times, tau_max, taus, rho, scores)


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The overall ranking of one mode over the problems.

    Attributes:
      mode: ``"tuned"`` or ``"one-shot"``.
      tables: ``{problem: TableAnalysis}`` of this mode, problems in the study's order (those with a table).
      identical: ``{representative: [others]}``: contenders identical on every problem, one row.
      names: the rows (contenders left after folding ``identical``), in the order met.
      bootstrap: :class:`~mxopt_jax.compare.stats.BootstrapRanks` over ``names``: mean rank, its bootstrap
        interval over problems, P(best).
      profile: the performance profile (:class:`Profile`).
      reached: ``{name: problems whose target its fastest trial reached}``.
      seed: the bootstrap's seed.
      family: how the report's claims were corrected (:data:`mxopt_jax.compare.analysis.comparison.FAMILIES`): the
        bootstrap interval and P(best) are shown only where :attr:`omitted` is empty.
    """

    mode: str
    tables: dict[str, TableAnalysis]
    identical: dict[str, list[str]]
    names: tuple[str, ...]
    bootstrap: ranking.BootstrapRanks
    profile: Profile
    reached: dict[str, int]
    seed: int = BOOTSTRAP_SEED
    family: str = "table"

    @property
    def omitted(self) -> str:
        """Why the bootstrap interval and P(best) are left out of the report, or ``''`` when they are shown
        (:func:`ranking_omitted`: at least 9 problems and one Holm family over the
        report)."""
        return ranking_omitted(len(self.tables), self.family)

    @property
    def problems(self) -> list[str]:
        return list(self.tables)

    def mean_rank(self, name: str) -> float:
        """Mean over the problems ``name`` ran of the middle of its rank set (``inf``: it ran none)."""
        vals = [t.midpoint(name) for t in self.tables.values() if name in t.entry]
        return float(np.mean(vals)) if vals else math.inf

    def score(self, name: str) -> float:
        """``name``'s profile score (0 when it reached no target)."""
        return self.profile.scores.get(name, 0.0)

    @property
    def order(self) -> list[str]:
        """The rows, best mean rank first (then the profile score, then the name)."""
        return sorted(self.names, key=lambda n: (self.mean_rank(n), -self.score(n), n))


def analyse_ranking(
    tables: Mapping[str, TableAnalysis],
    identical: Mapping[str, Sequence[str]] | None = None,
    tau_max: float = TAU_MAX,
    n_boot: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
    family: str = "table",
) -> Ranking:
    """The overall ranking of one mode from its tables (``{problem: TableAnalysis}``, each with its own
    identity map folded), rows folding ``identical`` (contenders identical on every problem).

    Raises
    ------
    ValueError
        no table; as :func:`mxopt_jax.compare.stats.bootstrap_problems`.
    """
    tables = {p: t for p, t in tables.items() if t.selections}
    if not tables:
        raise ValueError("analyse_ranking: no table")
    modes = {t.mode for t in tables.values()}
    if len(modes) > 1:
        raise ValueError(f"analyse_ranking reads the tables of one mode, got {sorted(modes)}")
    ident = {k: list(v) for k, v in (identical or {}).items()}
    reps: dict[str, set[str]] = {}
    for rep, others in ident.items():
        for o in others:
            if o != rep:
                reps.setdefault(o, set()).add(rep)

    def entries(t: TableAnalysis) -> list[Selection]:
        """``t``'s selections less the contenders folded into a present representative (as ``fold``)."""
        present = {s.contender for s in t.selections}
        return [s for s in t.selections if not reps.get(s.contender, set()) & present]

    folded = {p: entries(t) for p, t in tables.items()}
    names = list(dict.fromkeys(s.contender for sels in folded.values() for s in sels))
    ranks = midpoint_ranks([t.comparison for t in tables.values()], names)
    boot = ranking.bootstrap_problems(ranks, names, n_boot, seed, level)
    reached = {
        n: sum(
            1
            for t in tables.values()
            for s in t.selections
            if s.contender == n and math.isfinite(s.fastest_time)
        )
        for n in names
    }
    return Ranking(
        mode=next(iter(modes)),
        tables=dict(tables),
        identical=ident,
        names=tuple(names),
        bootstrap=boot,
        profile=analyse_profile(folded, tau_max),
        reached=reached,
        seed=seed,
        family=family,
    )
