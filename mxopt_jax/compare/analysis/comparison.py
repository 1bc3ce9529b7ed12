"""One table's tests and what it may claim, from its selections: :func:`compare_table` (the chosen, or default,
configurations compared pair by pair) and :func:`search_table` (under the contenders' searches: the claims about
the optimizers from one study), as a :class:`TableComparison`; identical contenders folded into one entry first
(:func:`fold`), the values paired by seed (:func:`paired_values`), and the report's error control
(:func:`report_family`: a Holm family per table, or every table one family)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..direction import LOWER, Direction
from ..selection import Selection
from ..stats import multiple, paired, pairwise, power

__all__ = [
    "FAMILIES",
    "ROUNDING_RTOL",
    "TEST",
    "TEST_LEVEL",
    "TableComparison",
    "compare_table",
    "fold",
    "paired_values",
    "report_family",
    "search_table",
    "searchable",
]


#: Level of the paired tests behind the ranks (Holm-corrected over a table's pairs).
TEST_LEVEL = 0.05


#: The paired test of the tables (:data:`mxopt_jax.compare.stats.TESTS`): Wilcoxon's signed-rank test, exact.
TEST = paired.TEST


#: Rounding twins (:data:`mxopt_jax.compare.stats.ROUNDING_RTOL`): never separated by a table's tests.
ROUNDING_RTOL = paired.ROUNDING_RTOL


def fold(
    selections: Sequence[Selection], identical: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[Selection], dict[str, str]]:
    """A table's entries: ``selections`` without the contenders that ``identical`` (``{representative:
    [others]}``) lists as identical to a present one; and ``{contender: its entry}`` (a folded contender maps
    to its representative, every other one to itself)."""
    present = {s.contender for s in selections}
    entry = {s.contender: s.contender for s in selections}
    for rep, others in (identical or {}).items():
        if rep in present:
            for o in others:
                if o in present and o != rep:
                    entry[o] = rep
    return [s for s in selections if entry[s.contender] == s.contender], entry


def _seed_list(seeds: np.ndarray) -> str:
    listing = ", ".join(str(int(x)) for x in seeds[:8])
    return f"[{listing}{', ...' if len(seeds) > 8 else ''}]"


def paired_values(selections: Sequence[Selection]) -> tuple[np.ndarray, np.ndarray]:
    """The reported test values of one table's ``selections``, paired by seed: ``(values, seeds)``.

    ``values`` is ``(C, R)``: row ``i`` is ``selections[i].test`` ordered by its report seeds, in the metric's
    raw units, ``seeds`` the ``R`` seeds in that (ascending) order. A non-finite value (a diverged run) becomes
    the worst value: ``+inf`` where lower is better, ``-inf`` where higher is (:attr:`Selection.direction`).

    Raises
    ------
    ValueError
        no selections; selections of more than one table (problem and mode); a contender twice; a selection
        whose test values and report seeds differ in number or whose seeds repeat; contenders that report
        different seeds (the paired comparison needs the same seeds for every contender); fewer than 2 seeds.
    """
    sels = list(selections)
    if not sels:
        raise ValueError("paired_values: no selections")
    tables = sorted({(s.problem, s.mode) for s in sels})
    if len(tables) > 1:
        raise ValueError(f"ranks compare the contenders of one table (one problem, one mode), got {tables}")
    names = [s.contender for s in sels]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"a table lists each contender once, got {dup} more than once")
    ref: np.ndarray | None = None
    ref_name = ""
    rows = []
    for s in sels:
        seeds = np.asarray(s.report_seeds, np.int64).ravel()
        test = np.asarray(s.test, np.float64).ravel()
        where = f"{s.contender} on {s.problem} ({s.mode})"
        if len(seeds) != len(test):
            raise ValueError(
                f"{where}: {len(test)} test values but {len(seeds)} report seeds; ranks pair contenders by seed, "
                "so each test value needs its seed (Selection.report_seeds)"
            )
        if len(set(seeds.tolist())) != len(seeds):
            raise ValueError(f"{where}: report seeds repeat {_seed_list(seeds)}")
        order = np.argsort(seeds, kind="stable")
        if ref is None:
            ref, ref_name = seeds[order], s.contender
        elif not np.array_equal(seeds[order], ref):
            raise ValueError(
                f"ranks compare contenders paired by seed, so every contender of a table must report the same "
                f"seeds: {ref_name} reports {_seed_list(ref)}, {s.contender} reports {_seed_list(seeds[order])} "
                f"({s.problem}, {s.mode})"
            )
        rows.append(np.where(np.isfinite(test[order]), test[order], s.direction.worst))
    assert ref is not None
    if len(ref) < 2:
        raise ValueError(
            f"ranks need at least 2 report seeds (a paired test per pair of contenders), got {len(ref)} "
            f"({tables[0][0]}, {tables[0][1]})"
        )
    return np.stack(rows), ref


@dataclasses.dataclass(frozen=True)
class TableComparison:
    """What one table's tests showed (:func:`compare_table`), by contender: a contender folded into another
    (identical runs) shares its representative's results.

    Attributes:
      problem, mode: the table.
      entries: the table's entries (the representatives), in the selections' order.
      comparison: :class:`mxopt_jax.compare.stats.Comparison` over ``entries`` (its arrays in that order).
      entry: ``{contender: its entry}`` for every contender of the table.
      seeds: report seeds per contender; ``direction``: the metric's
        (:class:`~mxopt_jax.compare.direction.Direction`); ``margin``: the practical margin.
      divergence: :func:`mxopt_jax.compare.stats.compare_divergence` over ``entries``: the seeds each diverged on
        and which diverge on fewer seeds than which (its own Holm family), or None (no entry diverged).
      searches: the claims about the optimizers under their searches (:func:`search_table`,
        :func:`mxopt_jax.compare.stats.compare_searches`: an entry is shown better than another when it beats it
        at every configuration the other's search tried), its ``comparison`` the one above; ``None`` when the
        table compares the chosen (or default) configurations only (:func:`compare_table`).
    """

    problem: str
    mode: str
    entries: tuple[str, ...]
    comparison: pairwise.Comparison
    entry: dict[str, str]
    seeds: int
    direction: Direction = LOWER
    margin: float = 0.0
    divergence: pairwise.DivergenceComparison | None = None
    searches: pairwise.SearchComparison | None = None

    @property
    def about(self) -> str:
        """What the table's claims speak of: ``"optimizers"`` (under their searches and budget,
        :func:`search_table`), ``"configurations"`` (the tuned mode's chosen configurations) or ``"defaults"``
        (the one-shot mode's default configurations)."""
        if self.searches is not None:
            return "optimizers"
        return "defaults" if self.mode == "one-shot" else "configurations"

    def power_note(self) -> str:
        """What this table's seeds can show at its size, in a sentence ('' when nothing to say): the seeds the
        exact signed-rank test needs to show any difference among the entries (:func:`mxopt_jax.compare.stats.
        min_seeds`), and, per entry that diverged on some seeds, the seeds it would need to be shown better than
        an entry that did not (a diverged seed is the largest difference against it)."""
        c = self.comparison
        if c.test != "wilcoxon" or c.pairs == 0:
            return ""
        family = c.family or c.pairs
        parts = []
        need = power.min_seeds(family, c.level)
        if need > self.seeds:
            parts.append(
                f"{self.seeds} seeds cannot show any difference among {len(self.entries)} entries "
                f"({family} tests corrected together need at least {need} seeds)"
            )
        elif self.divergence is not None:
            for k, name in enumerate(self.entries):
                n = int(self.divergence.diverged[k])
                if 0 < n < self.seeds:
                    m = power.min_seeds(family, c.level, diverged=n)
                    if m > self.seeds:
                        parts.append(
                            f"{name} diverged on {n} of {self.seeds} seeds: it cannot be shown better than an entry "
                            f"that did not diverge there (the diverged seeds count as its worst values; {m} seeds "
                            "would be needed)"
                        )
        return "; ".join(parts) + ("." if parts else "")

    def divergence_claims(self) -> list[tuple[str, str, float]]:
        """Every ``(diverges less, diverges more, adjusted p)`` the divergence comparison makes."""
        d = self.divergence
        if d is None:
            return []
        return [
            (self.entries[i], self.entries[j], float(d.pvalue_adjusted[i, j]))
            for i in range(len(self.entries))
            for j in range(len(self.entries))
            if d.fewer[i, j]
        ]

    def _k(self, name: str) -> int:
        return self.entries.index(self.entry[name])

    def rank(self, name: str) -> int:
        """``1 +`` the number of entries shown better than ``name``: the low end of its rank set."""
        return int(self.comparison.rank_low[self._k(name)])

    def rank_high(self, name: str) -> int:
        """The number of entries minus the number shown worse than ``name``: the high end of its rank set."""
        return int(self.comparison.rank_high[self._k(name)])

    def rank_set(self, name: str) -> str:
        """``"2"`` or ``"1-3"``: the simultaneous rank set, as the tables print it."""
        lo, hi = self.rank(name), self.rank_high(name)
        return str(lo) if lo == hi else f"{lo}-{hi}"

    def midpoint(self, name: str) -> float:
        """The middle of the rank set, ``(low + high) / 2``: what the overall mean rank averages."""
        return 0.5 * (self.rank(name) + self.rank_high(name))

    def letters(self, name: str) -> str:
        """The compact letter display's letters of ``name`` (two entries share one exactly when not shown to
        differ)."""
        return self.comparison.letters[self._k(name)]

    def shown_better(self, a: str, b: str) -> bool:
        """Whether ``a``'s entry was shown better than ``b``'s by a test Holm's correction kept."""
        return bool(self.comparison.better[self._k(a), self._k(b)])

    @property
    def order(self) -> list[str]:
        """The entries in display order (rank set, then the median, then the selections' order)."""
        return [self.entries[k] for k in self.comparison.order]

    @property
    def pairs(self) -> int:
        """Holm's family: the pairs of entries."""
        return self.comparison.pairs

    def redecided(self, adjusted: np.ndarray, family: int, level: float | None = None) -> TableComparison:
        """This table with its pairs decided again at the adjusted p-values ``adjusted`` (``(pairs,)``, e.g.
        corrected in a larger Holm family of ``family`` tests; :meth:`mxopt_jax.compare.stats.pairwise.Comparison.
        redecided`), the claims under the searches with them."""
        c = self.comparison.redecided(adjusted, family, level)
        searches = None if self.searches is None else self.searches._replace(comparison=c)
        return dataclasses.replace(self, comparison=c, searches=searches)

    def claims(self) -> list[tuple[str, str, float]]:
        """Every ``(better, worse, adjusted p)`` the table makes, one per rejected test."""
        b, p = self.comparison.better, self.comparison.pvalue_adjusted
        return [
            (self.entries[i], self.entries[j], float(p[i, j]))
            for i in range(len(self.entries))
            for j in range(len(self.entries))
            if b[i, j]
        ]


def _one(selections: Sequence[Selection], attr: str) -> Any:
    values = {getattr(s, attr) for s in selections}
    if len(values) > 1:
        shown = sorted(str(getattr(v, "word", v)) for v in values)
        raise ValueError(f"the contenders of one table must share the problem's {attr}, got {shown}")
    return values.pop()


def compare_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    rtol: float = ROUNDING_RTOL,
) -> TableComparison:
    """The tests of one table and what it may claim: :func:`mxopt_jax.compare.stats.pairwise.compare_configurations` on the reported
    test values of ``selections``, paired by seed (:func:`paired_values`), oriented by the problem's direction
    (``Direction.orient``) and tested with its practical margin (:attr:`Selection.margin`).

    Contenders that ``identical`` (``{representative: [others]}``) lists as identical to a present one are
    folded into it *before* testing (a duplicate would count twice in the family and in the others' rank sets)
    and share its results. The rule (:func:`mxopt_jax.compare.stats.pairwise.compare_configurations`, in full there): rounding twins
    (within ``rtol`` relative on every seed) are never separated; every other pair of entries is tested by
    ``test`` (the exact signed-rank test by default; two-sided); the ``E (E - 1) / 2`` p-values of the table's
    ``E`` entries are corrected together by Holm's method at ``level``; a diverged seed is the worst value on
    its seed. The table prints the letters (shared exactly when not shown to differ) and the simultaneous rank
    sets ``[1 + #shown better, E - #shown worse]``.

    Raises
    ------
    ValueError
        as :func:`paired_values`; contenders that disagree on the direction or the margin; ``test``, ``level``
        or ``rtol`` as :func:`mxopt_jax.compare.stats.pairwise.compare_configurations`.
    """
    sels = list(selections)
    values, seeds = paired_values(sels)  # every contender, folded ones included, must pair
    direction: Direction = _one(sels, "direction")
    margin = float(_one(sels, "margin"))
    shown, entry = fold(sels, identical)
    keep = [i for i, s in enumerate(sels) if entry[s.contender] == s.contender]
    oriented = direction.orient(values[keep])
    comparison = pairwise.compare_configurations(oriented, level, test, margin, rtol)
    diverged = ~np.isfinite(oriented)
    return TableComparison(
        problem=sels[0].problem,
        mode=sels[0].mode,
        entries=tuple(s.contender for s in shown),
        comparison=comparison,
        entry=entry,
        seeds=len(seeds),
        direction=direction,
        margin=margin,
        divergence=pairwise.compare_divergence(oriented, level) if diverged.any() else None,
    )


def searchable(selections: Sequence[Selection]) -> bool:
    """Whether a table's ``selections`` can be compared under their searches (:func:`search_table`): tuned, and
    every one ran every configuration of its search on the report seeds (:attr:`Selection.report_grid`)."""
    sels = list(selections)
    return bool(sels) and all(s.mode == "tuned" and s.report_grid is not None for s in sels)


def search_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    rtol: float = ROUNDING_RTOL,
) -> TableComparison:
    """The claims about the optimizers of one tuned table, under their searches and budget: an entry is shown
    better than another when, at its chosen configuration, it beats the other at *every* configuration the
    other's search tried (:func:`mxopt_jax.compare.stats.compare_searches`: each a one-sided exact signed-rank
    test on the report seeds, paired by seed, the pair's p-value the largest; Holm over the table's pairs;
    rounding twins never separated; the problem's practical margin). Whichever configuration the other's tuning
    would have picked, it would have lost: the claim needs no model of the tuning's luck. Identical contenders
    are folded first, as in :func:`compare_table`; the divergence comparison is :func:`compare_table`'s (the
    chosen configurations').

    Raises
    ------
    ValueError
        a selection without :attr:`Selection.report_grid` (:func:`searchable`); as :func:`compare_table`.
    """
    sels = list(selections)
    if not searchable(sels):
        raise ValueError(
            "search_table needs tuned selections that ran every configuration on the report seeds "
            "(Selection.report_grid)"
        )
    base = compare_table(sels, identical, level, test, rtol)
    keep = [s for s in sels if base.entry[s.contender] == s.contender]
    values, seeds = paired_values(keep)
    direction = base.direction
    grids = []
    for s, row in zip(keep, values, strict=True):
        order = np.argsort(np.asarray(s.report_seeds, np.int64), kind="stable")
        grid = np.asarray(s.report_grid, np.float64)[:, order]
        grids.append(direction.orient(np.where(np.isfinite(grid), grid, direction.worst)))
        if not np.array_equal(direction.orient(row), grids[-1][s.index], equal_nan=True):
            raise ValueError(
                f"{s.contender} on {s.problem}: its report runs' chosen row is not its reported test values"
            )
    searches = pairwise.compare_searches(direction.orient(values), grids, level, test, base.margin, rtol)
    return dataclasses.replace(base, comparison=searches.comparison, searches=searches)


#: How a report controls its error rate: ``"table"`` (the default: each table one Holm family, as the tables
#: have always been read; the chance of some false claim in a report of ``T`` tables is then up to
#: ``1 - (1 - level)^T``) or ``"report"`` (every pair of every table one family: at most ``level`` for the whole
#: report, at the price of power).
FAMILIES = ("table", "report")


def report_family(
    tables: Sequence[TableComparison], family: str = "table", level: float | None = None
) -> list[TableComparison]:
    """``tables`` as the report reads them under ``family`` (:data:`FAMILIES`): unchanged for ``"table"``; for
    ``"report"`` every pair of every table corrected together by Holm's method
    (:func:`mxopt_jax.compare.stats.holm_family`), so that the chance of any false claim in the whole report is
    at most ``level`` (default: the tables' level). A report-wide claim is always a per-table claim too.

    Raises
    ------
    ValueError
        ``family`` not in :data:`FAMILIES`.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    out = list(tables)
    if family == "table" or not out:
        return out
    adjusted, m = multiple.holm_together([t.comparison.pair_pvalues for t in out])
    return [t.redecided(a, m, level) for t, a in zip(out, adjusted, strict=True)]
