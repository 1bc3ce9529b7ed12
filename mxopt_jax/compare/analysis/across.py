"""One table read over a plan's independent studies: :class:`AcrossStudies`, made by :func:`across_studies`.

Each study repeats the whole tuning (its own selection seeds, confirmation seeds and search draws); a study's
own tests (:func:`mxopt_jax.compare.analysis.comparison.compare_table`) hold its chosen configurations fixed, so they speak
of *configurations*; the across-studies test takes the study as the unit, so its claims speak of the
*optimizers* whatever the tuning's luck. The result keeps one :class:`AcrossStudies` per table
(:attr:`mxopt_jax.compare.analysis.StudyAnalysis.across`); the report prints it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..direction import LOWER, Direction
from ..selection import LEVEL, Selection
from ..stats import distributions, multiple, paired, pairwise, power
from ..stats.distributions import ci_halfwidth
from .comparison import TEST, TEST_LEVEL, compare_table, paired_values, search_table, searchable
from .table import Claim, claim_size

__all__ = ["AcrossStudies", "across_studies", "common_identity", "random_effects"]


@dataclasses.dataclass(frozen=True)
class AcrossStudies:
    """One table (problem and mode) over ``N`` independent studies: each study its own selection seeds,
    confirmation seeds and search draws, so the tuning itself is repeated (:func:`across_studies`). Arrays are
    ``(N, C)`` or ``(C, C)`` in ``names``' order.

    Attributes:
      problem, mode: the table; ``names``: the contenders present in every study; ``studies``: ``N``.
      lr: ``(N, C)`` the chosen learning rate in each study.
      test_mean, test_median: ``(N, C)`` each study's mean and median test value over its report seeds (raw
        units; a diverged seed is the worst value).
      rank_low, rank_high: ``(N, C)`` each study's simultaneous rank set; ``better``: ``(N, C, C)`` each study's
        claims (``[s, i, j]``: in study ``s``, ``i`` shown better than ``j``).
      shown: ``(C, C)`` the claims across studies: ``[i, j]`` when the across-studies test shows ``i`` better
        than ``j`` (:func:`across_studies`); ``p_adjusted``: its Holm-adjusted p-values (symmetric), ``p`` the
        raw ones; ``effects``: ``(N, C, C)`` each study's median over seeds of ``i - j`` (raw units, the
        rounding margin applied), the effect the test reads (:attr:`effect`: their median over the studies);
        ``margin``: the problem's practical margin.
      replicated: ``(C, C)`` the claims made in *every* study; ``contradicted``: ``(C, C)`` ``[i, j]``: ``i``
        shown better than ``j`` in one study and ``j`` better than ``i`` in another.
      study_mean, study_ci: ``(C,)`` the mean over the studies of the per-study mean test value and the
        ``LEVEL`` Student-t half-width over the ``N`` studies (NaN for one study): the spread the tuning's luck
        and the seeds make together, in the metric's units.
      level, test: the tests' level and the per-study test; ``direction``: the metric's
        (:class:`~mxopt_jax.compare.direction.Direction`).
      identical: ``{representative: [others]}``: contenders identical to a representative in *every* study,
        folded into its entry (in no array; a table labels the representative with them).
      family: Holm's family of ``p_adjusted`` when it is not this table's pairs (0): the report-wide family,
        every pair of every table the report claims on (``--family report``).
      model_effect, model_low, model_high: ``(C, C)`` a model-based reading, never a claim: the random-effects
        estimate of ``[i, j]`` (``i`` minus ``j``, raw units) over the studies, each study's mean paired
        difference weighted by its precision and the studies' spread, with the Hartung-Knapp 95 % interval
        (:func:`random_effects`); NaN where fewer than two studies have finite differences.
    """

    problem: str
    mode: str
    names: tuple[str, ...]
    studies: int
    lr: np.ndarray
    test_mean: np.ndarray
    test_median: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    better: np.ndarray
    shown: np.ndarray
    p_adjusted: np.ndarray
    replicated: np.ndarray
    contradicted: np.ndarray
    study_mean: np.ndarray
    study_ci: np.ndarray
    level: float
    test: str
    direction: Direction = LOWER
    identical: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    p: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    effects: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0)))
    margin: float = 0.0
    family: int = 0
    model_effect: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    model_low: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    model_high: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def pairs(self) -> int:
        """Holm's family of the across-studies test: the pairs of entries, ``C (C - 1) / 2``."""
        return len(self.names) * (len(self.names) - 1) // 2

    @property
    def min_studies(self) -> int:
        """The fewest studies on which the across-studies test can show a difference in this table: the
        smallest ``N`` with ``2 / 2^N <= level / pairs`` (:func:`mxopt_jax.compare.stats.min_seeds`, the study
        as the unit): 6 for one pair, 8 for 4 entries, 9 for 5, 14 for 22."""
        return power.min_seeds(max(self.pairs, 1), self.level)

    @property
    def can_claim(self) -> bool:
        """Whether ``studies`` can support any claim at this table's size (:attr:`min_studies`)."""
        return self.pairs > 0 and self.studies >= self.min_studies

    @property
    def effect(self) -> np.ndarray:
        """``(C, C)`` the median over the studies of the per-study median paired differences ``[i, j]`` (``i``
        minus ``j``, raw units; NaN on the diagonal): the across-studies claims' effect size."""
        out = np.median(self.effects, axis=0) if self.effects.size else np.full((0, 0), np.nan)
        np.fill_diagonal(out, np.nan)
        return np.asarray(out)

    @property
    def lr_decades(self) -> np.ndarray:
        """``(C,)`` how far apart the studies' chosen rates lie: ``log10(max / min)`` (0: the same rate)."""
        return np.asarray(np.log10(self.lr.max(axis=0) / self.lr.min(axis=0)))

    @property
    def shown_rank_low(self) -> np.ndarray:
        """``(C,)`` ``1 +`` the number of contenders the across-studies test shows better."""
        return np.asarray(1 + self.shown.sum(axis=0))

    @property
    def shown_rank_high(self) -> np.ndarray:
        """``(C,)`` ``C -`` the number of contenders the across-studies test shows worse."""
        return np.asarray(len(self.names) - self.shown.sum(axis=1))

    def _order(self) -> list[int]:
        lo, hi = self.shown_rank_low, self.shown_rank_high
        return sorted(range(len(self.names)), key=lambda k: (lo[k], hi[k], k))

    def shown_letters(self) -> list[str]:
        """The compact letter display of the across-studies claims (:func:`mxopt_jax.compare.stats.letters`)."""
        return pairwise.letters(self.shown | self.shown.T, self._order())

    def replicated_letters(self) -> list[str]:
        """The compact letter display of the claims made in every study, letters named in the same order."""
        return pairwise.letters(self.replicated | self.replicated.T, self._order())

    def agreement(self) -> dict[str, int]:
        """How far the studies agree on the claims (unordered pairs of contenders):

        * ``pairs``: every pair of ``names``;
        * ``claimed``: pairs shown to differ in at least one study;
        * ``replicated``: pairs shown to differ, the same way, in every study;
        * ``contradicted``: pairs shown to differ one way in a study and the other way in another;
        * ``unreplicated``: pairs shown to differ in some study but not in every one, never contradicted;
        * ``shown``: pairs the across-studies test shows to differ.
        """
        C = len(self.names)
        iu = np.triu_indices(C, 1)
        any_claim = (self.better | self.better.transpose(0, 2, 1)).any(axis=0)[iu]
        rep = (self.replicated | self.replicated.T)[iu]
        con = (self.contradicted | self.contradicted.T)[iu]
        return {
            "pairs": len(iu[0]),
            "claimed": int(any_claim.sum()),
            "replicated": int(rep.sum()),
            "contradicted": int(con.sum()),
            "unreplicated": int((any_claim & ~rep & ~con).sum()),
            "shown": int((self.shown | self.shown.T)[iu].sum()),
        }

    @functools.cached_property
    def claims(self) -> tuple[Claim, ...]:
        """One :class:`~mxopt_jax.compare.analysis.table.Claim` per pair of the entries (``about="optimizers"``, ``study=None``): the
        across-studies test's raw and Holm-adjusted p-values, its statistic (``W+`` of the studies' effects, oriented
        lower-is-better; Student's t of them for the t option), the effect (the median over the studies of each
        study's median paired difference, raw units) with the Hodges-Lehmann estimate and exact interval over the
        studies (:func:`mxopt_jax.compare.stats.paired.effect`: with fewer than 6 studies the interval is the range and its
        coverage below 95 %), and in how many studies the effect went the claim's way."""
        a = self
        out: list[Claim] = []
        C, N = len(a.names), a.studies
        units = tuple(range(N))
        for i in range(C):
            for j in range(i + 1, C):
                eff = a.effects[:, i, j] if a.effects.size else np.zeros(N)
                oriented = a.direction.orient(eff)
                if a.test == "t" and np.isfinite(oriented).all() and N > 1:
                    stat = float(paired.t_statistic(oriented[None])[0])
                else:
                    stat = float(paired.w_plus(oriented[None])[0])
                better = a.names[i] if a.shown[i, j] else a.names[j] if a.shown[j, i] else None
                size = claim_size(eff, a.direction, None if better is None else better == a.names[i])
                p = float(a.p[i, j]) if a.p.size else math.nan
                out.append(
                    Claim(
                        problem=a.problem,
                        mode=a.mode,
                        a=a.names[i],
                        b=a.names[j],
                        test=a.test,
                        statistic=stat,
                        p=p,
                        p_adjusted=float(a.p_adjusted[i, j]),
                        n=N,
                        units=units,
                        about="defaults" if a.mode == "one-shot" else "optimizers",
                        better=better,
                        equal=bool(np.all(eff == 0)),
                        level=a.level,
                        family=a.family or a.pairs,
                        **size,
                        study=None,
                        model=(
                            (float(a.model_effect[i, j]), float(a.model_low[i, j]), float(a.model_high[i, j]))
                            if a.model_effect.size
                            else (math.nan, math.nan, math.nan)
                        ),
                    )
                )
        return tuple(out)


def _study_level(
    effects: np.ndarray, level: float, test: str = TEST, margin: float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The across-studies test of every pair: ``effects`` ``(P, N)`` the per-study effects (each study's median
    over seeds of the pair's paired differences, oriented, the rounding margin applied seed by seed; ``+-inf``
    when a contender diverged on most seeds of a study). The study is the unit and each study's effect a paired
    difference whose sign is a fair coin under the null (the two contenders, tuning included, exchangeable):
    ``test`` ``"wilcoxon"``, the exact signed-rank test over the ``N`` effects (ties and zero effects as the
    single-study test takes them); ``"t"``, the exact sign-flip test of their mean (:func:`paired.paired_t`'s
    p-value). Either way the smallest two-sided p-value is ``2 / 2^N``, whatever the spread: a near-zero spread
    of the studies' effects is no certainty. ``margin``: an effect is evidence only beyond it. Holm over the
    ``P`` pairs at ``level``. Returns the raw and the Holm-adjusted two-sided p-values, the direction (``-1``:
    the first is better, ``1``: the second, ``0``: neither tail smaller) and the significance."""
    P, N = effects.shape
    p = np.ones(P)
    direction = np.zeros(P)
    if N >= 2 and P:
        pl, pg = paired.one_sided(effects, test, margin)
        p = np.minimum(1.0, 2 * np.minimum(pl, pg))
        direction = np.where(pl < pg, -1.0, np.where(pg < pl, 1.0, 0.0))
    adj = multiple.holm_adjusted(p) if P else p
    return p, adj, direction, (adj <= level) & (direction != 0)


def across_studies(
    studies: Sequence[Sequence[Selection]],
    identical: Sequence[Mapping[str, Sequence[str]] | None] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    rtol: float = paired.ROUNDING_RTOL,
) -> AcrossStudies:
    """One table (problem and mode) read over ``N`` independent studies of it: the spread of the tuning's luck,
    and the claims that hold across the studies.

    ``studies[s]`` is study ``s``'s selections of the table (the same problem and mode in every study; each
    study its own selection seeds, confirmation seeds and search draws); ``identical[s]`` its identity map
    (``{representative: [others]}``, as :func:`compare_table`). Each study is tested on its own by
    :func:`compare_table` (Holm over that study's table at ``level``). Then:

    * **spread** (what the tuning's luck does): per contender the chosen rate, the mean and the median test
      value in each study, and the mean over studies with its Student-t interval over the ``N`` studies;
    * **claims across studies** (``shown``): a study's tests hold its *chosen configurations* fixed, so they
      say nothing of the tuning's luck: two contenders identical in distribution whose chosen configurations
      differ by half a paired standard deviation are separated in 37 % of single studies (2 contenders, 10
      seeds). The across-studies test takes the study as the unit: per pair and per study the *effect*, the
      median over seeds of the paired (oriented) differences with the rounding margin applied seed by seed (a
      difference within ``rtol`` x the value is a zero); under the null (the two contenders, their tuning
      included, exchangeable) each study's effect is as likely positive as negative, so the exact test over the
      ``N`` effects is the sign-flip one: the exact signed-rank test of the effects (``test = "wilcoxon"``; ties
      and zero effects as the single-study test takes them) or the sign-flip test of their mean (``"t"``), the
      problem's margin as in a study, Holm over the table's ``C (C - 1) / 2`` pairs at ``level``. Its smallest
      p-value is ``2 / 2^N`` whatever the spread of the effects, so a near-zero spread (a discrete metric, equal
      medians, rounding twins) is never certainty; the price is that ``N`` studies can support a claim only when
      ``2 / 2^N <= level / pairs`` (:attr:`AcrossStudies.min_studies`: 6 studies for one pair, 8 for 4 entries,
      9 for 5, 14 for 22; :attr:`AcrossStudies.can_claim`). Measured (``tests/app/test_error_rates.py``): under
      the null with the tuning's luck, on a discrete metric with rounding twins, no claim at 2, 3 and 5 studies
      and 1.7 % of tables at 8 (the former Student t over the per-study medians: 21 %, 78 %, 100 %, 100 %); a
      1.2-standard-deviation difference is found in 87 % of 4-entry tables at 8 studies, 99 % at 10;
    * **agreement** (descriptive, :meth:`AcrossStudies.agreement`): ``replicated[i, j]`` when ``i`` was shown
      better than ``j`` in *every* study, ``contradicted[i, j]`` when one study shows ``i`` better and another
      ``j``. Requiring every study to agree is not a test: with the tuning's luck at half a paired standard
      deviation, 7 % of null pairs (2 contenders, 2 studies) are still claimed in both (20 % at one standard
      deviation); without tuning luck, 0.07 %.

    Contenders missing from a study are left out (``names`` holds those present in all); contenders that every
    study's ``identical`` map lists as identical to the same representative are folded into it (``identical``).

    Raises
    ------
    ValueError
        no study; a study with no selection; studies of different tables; no contender common to every study;
        ``identical`` of another length than ``studies``; as :func:`compare_table`.
    """
    per = [list(s) for s in studies]
    if not per:
        raise ValueError("across_studies needs at least one study")
    if any(not s for s in per):
        raise ValueError("across_studies: a study has no selection for this table")
    tables = sorted({(s.problem, s.mode) for sels in per for s in sels})
    if len(tables) > 1:
        raise ValueError(
            f"across_studies reads one table (one problem, one mode) in every study, got {tables}"
        )
    idents = list(identical) if identical is not None else [None] * len(per)
    if len(idents) != len(per):
        raise ValueError(f"identical must hold one map per study ({len(per)}), got {len(idents)}")
    common = [
        n
        for n in dict.fromkeys(s.contender for s in per[0])
        if all(any(x.contender == n for x in sels) for sels in per)
    ]
    if not common:
        raise ValueError("across_studies: no contender ran in every study")
    # contenders identical in every study are one entry (a duplicate would count twice in the family)
    everywhere = common_identity(idents, common)
    folded = {o for v in everywhere.values() for o in v}
    common = [n for n in common if n not in folded]
    N, C = len(per), len(common)
    lr, mean, median = np.zeros((N, C)), np.zeros((N, C)), np.zeros((N, C))
    low, high = np.zeros((N, C), np.int64), np.zeros((N, C), np.int64)
    better = np.zeros((N, C, C), bool)
    directions = {s.direction for sels in per for s in sels}
    if len(directions) > 1:
        words = sorted(d.word for d in directions)
        raise ValueError(f"the contenders of one table must share the problem's direction, got {words}")
    direction = directions.pop()
    orient = direction.orient
    i, j = np.triu_indices(C, 1)
    medians = np.zeros((len(i), N))
    within = np.full(
        (len(i), N), np.nan
    )  # each study's mean paired difference and its variance (model-based)
    means = np.full((len(i), N), np.nan)
    for k, (sels, ident) in enumerate(zip(per, idents, strict=True)):
        # a study's own claims: about the optimizers under its search where it ran every configuration on the
        # report seeds, else about its chosen (or default) configurations
        table = (search_table if searchable(sels) else compare_table)(sels, ident, level, test, rtol)
        by = {s.contender: s for s in sels}
        values, _ = paired_values([by[n] for n in common])
        d, _ = paired.rounded_differences(orient(values[i]), orient(values[j]), rtol)
        medians[:, k] = [paired.median_inf(row) for row in d]
        finite = np.isfinite(d).all(axis=-1)
        if d.shape[-1] >= 2:
            means[finite, k] = d[finite].mean(axis=-1)
            within[finite, k] = d[finite].var(axis=-1, ddof=1) / d.shape[-1]
        for a, n in enumerate(common):
            s = by[n]
            lr[k, a] = s.lr
            mean[k, a] = s.test_mean
            median[k, a] = s.test_quartiles[1]
            low[k, a], high[k, a] = table.rank(n), table.rank_high(n)
            for b, m in enumerate(common):
                better[k, a, b] = a != b and table.shown_better(n, m)
    margins = {float(s.margin) for sels in per for s in sels}
    if len(margins) > 1:
        raise ValueError(
            f"the contenders of one table must share the problem's margin, got {sorted(margins)}"
        )
    margin = margins.pop()
    raw, adj, way, significant = _study_level(medians, level, test, margin)
    shown = np.zeros((C, C), bool)
    shown[i, j] = significant & (way < 0)
    shown[j, i] = significant & (way > 0)
    p_adjusted, p_raw = np.full((C, C), np.nan), np.full((C, C), np.nan)
    p_adjusted[i, j] = p_adjusted[j, i] = adj
    p_raw[i, j] = p_raw[j, i] = raw
    effects = np.zeros((N, C, C))  # raw units: [s, a, b] = study s's median of (a - b) over its seeds
    effects[:, i, j] = orient(medians.T)
    effects[:, j, i] = -orient(medians.T)
    est, lo, hi = random_effects(means, within, LEVEL)
    # raw units, [i, j] of i - j: the oriented interval's ends, in raw units, in the raw order
    raw_lo, raw_hi = np.minimum(orient(lo), orient(hi)), np.maximum(orient(lo), orient(hi))
    model = np.full((3, C, C), np.nan)
    model[0, i, j], model[1, i, j], model[2, i, j] = orient(est), raw_lo, raw_hi
    model[0, j, i], model[1, j, i], model[2, j, i] = -orient(est), -raw_hi, -raw_lo
    replicated = np.asarray(better.all(axis=0))
    contradicted = np.asarray(better.any(axis=0) & better.transpose(0, 2, 1).any(axis=0))
    study_ci = np.array([ci_halfwidth(mean[:, a], LEVEL) for a in range(C)])
    return AcrossStudies(
        problem=tables[0][0],
        mode=tables[0][1],
        names=tuple(common),
        studies=N,
        lr=lr,
        test_mean=mean,
        test_median=median,
        rank_low=low,
        rank_high=high,
        better=better,
        shown=shown,
        p_adjusted=p_adjusted,
        p=p_raw,
        effects=effects,
        margin=margin,
        replicated=replicated,
        contradicted=contradicted,
        study_mean=mean.mean(axis=0),
        identical=everywhere,
        study_ci=study_ci,
        level=level,
        test=test,
        direction=direction,
        model_effect=model[0],
        model_low=model[1],
        model_high=model[2],
    )


def random_effects(
    means: np.ndarray, variances: np.ndarray, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random-effects estimate of each row's effect over the studies, with the Hartung-Knapp interval: the
    model-based reading of ``N`` studies, shown as an effect with its interval and never as a claim.

    ``means`` ``(P, N)``: each study's mean paired difference of a pair (oriented), ``variances`` ``(P, N)``
    its squared standard error (the seeds' variance over their count); NaN where a study has none (a diverged
    seed). Per row: DerSimonian and Laird's between-study variance ``tau^2``, the weighted mean with weights
    ``1 / (v_k + tau^2)``, and Hartung and Knapp's (2001) interval: the weighted spread of the studies around
    that mean over ``N - 1``, with Student's t on ``N - 1`` degrees of freedom (IntHout, Ioannidis and Borm
    2014: it keeps its coverage with few studies where the DerSimonian-Laird normal interval does not). Rows with
    fewer than two usable studies are NaN. A study whose seeds all agree exactly (zero variance) is weighted as
    if its variance were a millionth of the largest one's, so it cannot take every weight.

    Returns ``(estimate, low, high)``, each ``(P,)``, oriented as ``means``.
    """
    P, N = means.shape
    est, low, high = np.full(P, np.nan), np.full(P, np.nan), np.full(P, np.nan)
    for r in range(P):
        ok = np.isfinite(means[r]) & np.isfinite(variances[r])
        y, v = means[r][ok], variances[r][ok]
        k = len(y)
        if k < 2:
            continue
        v = np.maximum(v, 1e-6 * v.max() if v.max() > 0 else 1e-300)
        # DerSimonian-Laird's Q and C have the weights 1 / v; both are written with u = min(v) / v (at most 1)
        # and the ratio taken, tau^2 = (Q - (k - 1)) / C, so that tiny variances cannot overflow w^2
        u = v.min() / v
        yw = float((u * y).sum() / u.sum())
        d = float(u.sum() - (u**2).sum() / u.sum())
        tau2 = max(0.0, (float((u * (y - yw) ** 2).sum()) - (k - 1) * v.min()) / d) if d > 0 else 0.0
        ws = 1.0 / (v + tau2)
        mu = float((ws * y).sum() / ws.sum())
        spread = float((ws * (y - mu) ** 2).sum() / (k - 1))
        se = (spread / ws.sum()) ** 0.5
        half = distributions.t_quantile((1 + level) / 2, k - 1) * se
        est[r], low[r], high[r] = mu, mu - half, mu + half
    return est, low, high


def common_identity(
    maps: Sequence[Mapping[str, Sequence[str]] | None], names: Sequence[str] | None = None
) -> dict[str, list[str]]:
    """The contenders identical in *every* one of ``maps`` (each ``{representative: [others]}``: one per problem,
    per mode or per study), as ``{representative: [others]}``.

    Two contenders are one group when every map puts them in the same group, whichever representative each map
    names: a map that folds ``lbsgd`` and ``test`` into ``sgd``'s group and one that keeps ``[sgd, ccsgd]`` and
    ``[lbsgd, test]`` apart give ``{"sgd": ["ccsgd"], "lbsgd": ["test"]}``. Groups and their members come in the
    order met (each map's groups in turn, representative first), the first met the representative; ``names``
    restricts them to those contenders. No map: no group.

    >>> common_identity([{"sgd": ["lbsgd", "ccsgd", "test"]}, {"sgd": ["ccsgd"], "lbsgd": ["test"]}])
    {'sgd': ['ccsgd'], 'lbsgd': ['test']}
    """
    groups_of: list[dict[str, str]] = []
    met: dict[str, None] = {}
    for m in maps:
        group: dict[str, str] = {}
        for rep, others in (m or {}).items():
            for n in (rep, *others):
                group[n] = rep
                met.setdefault(n)
        groups_of.append(group)
    if not groups_of:
        return {}
    allowed = set(met if names is None else names)
    together: dict[tuple[str, ...], list[str]] = {}
    for n in met:
        if n in allowed and all(n in g for g in groups_of):
            together.setdefault(tuple(g[n] for g in groups_of), []).append(n)
    return {g[0]: g[1:] for g in together.values() if len(g) > 1}
