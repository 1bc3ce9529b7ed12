""" "How to read these tables": each column explained once, the parts a report's tables need (:func:`guide_sections`,
:func:`how_to_read`), and the reference each table makes to its part (:func:`see`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis import AcrossStudies, Ranking, StudyAnalysis
from ..analysis.comparison import ROUNDING_RTOL, TEST
from .cells import EDGE_NOTE
from .layout import WIDTH, wrap
from .sentences import MAX_SENTENCES

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = [
    "GUIDES",
    "guide_sections",
    "how_to_read",
    "see",
    "test_words",
]


#: The parts of "How to read these tables", in the order printed, by :attr:`Table.guide` key.
GUIDES = {
    "across": "across-studies tables",
    "overall": "overall tables",
    "problem": "problem tables",
    "modes": "one-shot -> tuned",
}


def see(guide: str) -> str:
    """The reference to the part of "How to read these tables" that explains a table's columns."""
    return f'See "How to read these tables" ({GUIDES[guide]}).'


def test_words(test: str = TEST) -> str:
    """The paired test's name as the report prints it."""
    return {
        "wilcoxon": "Wilcoxon's signed-rank test (exact, two-sided)",
        "t": "Student's paired t statistic with its exact sign-flip p-value (two-sided; smallest p 2/2^R; a pair "
        "with a diverged seed: the signed-rank test)",
    }[test]


def _guide_problem(
    test: str, level: float, rtol: float, pct: str, edges: bool, configs: bool, searches: bool = True
) -> list[str]:
    """The columns of a problem's table, explained once."""
    if searches:
        decided = (
            "group: two entries that share a letter were not shown to differ; two with no letter in common were. "
            "In a tuned table the claims are about the optimizers under this search and budget: an entry is shown "
            "better than another when, at its chosen configuration, it beats the other at every configuration the "
            f"other's search tried ({test_words(test)}, one-sided, per configuration, paired by seed; the pair's "
            "p-value the largest of them): whichever configuration the other's tuning had picked, it would have "
            "lost. A one-shot table compares the default configurations. Holm's correction over the table's pairs "
            f"(the line under the table says how many), level {100 * level:g} %"
        )
    else:
        decided = (
            "group: two entries that share a letter were not shown to differ; two with no letter in common were: "
            f"{test_words(test)}, paired by seed, at the chosen (or default) configurations, Holm's correction over "
            f"the table's pairs (the line under the table says how many), level {100 * level:g} %"
        )
    out = [
        "rank: the simultaneous rank set [1 + entries shown better, E - entries shown worse] (E entries; each "
        "bound counts rejected tests only; 1-E: not shown to differ from any, which is not equal). The entries "
        "whose set starts at 1 could be the best: the verdict lists them.",
        f"{decided}; differences within the problem's practical margin (under the table) are not claimed; a "
        f"difference within {rtol:g} relative of the value on a seed is treated as none on that seed (two entries "
        "within it on every seed are never separated); a diverged seed is the worst value on its seed.",
        'contender: contenders identical in the table (the same runs) are one entry, "sgd (= ccsgd, test)".',
        f"test: mean over the report seeds ± the half-width of the {pct} Student-t interval of the mean "
        "(symmetric, so it can reach past the metric's range, e.g. below 0; with diverged report seeds: over "
        "the finite ones, k/R finite); the claims do not read the interval.",
        "median [quartiles]: over every report seed, a diverged seed counting as the worst value.",
        "lr: the chosen rate; best val: the best validation value over the run (mean over seeds).",
        "claims: each in a sentence under its table, naming what it is about (the optimizers under this search "
        "and budget, the configurations this study chose, or the default configurations), the claims that "
        f"decide the most first (the first {MAX_SENTENCES}; claims.csv holds every one, and the tests of the "
        "chosen configurations alone).",
    ]
    if edges:
        out.append(EDGE_NOTE)
    if configs:
        out.append(
            "chosen configurations (random search): the chosen value of every hyperparameter besides the rate."
        )
    out += [
        "steps to target: the steps by which a majority of the report seeds reached the validation target "
        "(k/R: seeds that reached it); time to target: those steps x ms/step.",
        "fastest trial: the performance profile's time: per selection seed the fewest steps any rate tried "
        "needed, then the steps by which a majority of seeds got there.",
        "ms/step: one run's time per step, amortized over the runs batched together; div. report: the report "
        "seeds that diverged (k/R); div. selection: the selection runs that diverged (of rate x seed runs).",
        "Report seeds (the chosen rate's report runs): test, median, best val, steps to target, time to "
        "target, div. report; rank and group: the report runs of every rate tried (tuned) or of the default "
        "(one-shot). Selection runs (every rate tried on the selection seeds): fastest trial, ms/step, div. "
        "selection.",
    ]
    return out


def _guide_overall(ranking: Ranking) -> list[str]:
    """The columns of the overall tables, explained once."""
    boot = ranking.bootstrap
    pct = f"{100 * boot.level:g}%"
    return [
        "mean rank: the mean over the problems of the middle of the contender's rank set on each (its table's "
        "'rank' column, (low + high) / 2: 1 when shown better than every other entry, the middle when shown "
        "neither better nor worse than any).",
        f"{pct} bootstrap (problems): the {(1 - boot.level) / 2:.1%} and {(1 + boot.level) / 2:.1%} percentiles "
        f"of the mean rank over {boot.replicates.shape[0]} resamples of the problems (numpy seed {ranking.seed}), "
        "each problem's tests kept as they are (nothing re-tested): how much the ranking depends on which "
        "problems were run; a table of one problem has no such column. P(best): share of the resamples in which "
        "it has the lowest mean rank (ties split). Neither claims a difference that no table's test showed.",
        "targets: problems where a majority of the selection seeds had a rate reaching the validation target; "
        "profile score: AlgoPerf's, the normalized area under the performance profile (linear tau from 1 to "
        f"{ranking.profile.tau_max:g}) of the fastest trial's steps to target, both read from the selection runs "
        "(1: fastest everywhere).",
        "one column per problem: the table's rank set; -: not run there.",
    ]


def _guide_modes() -> list[str]:
    return [
        "rank sets: each table's (one-shot -> tuned); up / down: the problems where the tuned rank set lies wholly "
        "before / after the one-shot one (every rank the tuned table allows is better / worse than every rank "
        "the one-shot table allows). The two tables are tested on their own; a move is read from their sets, it "
        "is not itself a test, and a set that overlaps the other's counts as no move."
    ]


def _guide_across(across: AcrossStudies) -> list[str]:
    N = across.studies
    return [
        "claims about the optimizers, over the independent tunings. rank, group: the across-studies test, the "
        "study as the unit: per pair and study the median paired difference over the seeds (a difference within "
        f"{ROUNDING_RTOL:g} relative of the value is none), then the exact sign-flip test over the studies "
        f"({test_words(across.test).split(' (')[0]} of the studies' effects: a study's effect is as likely "
        "positive as negative when the optimizers do not differ), Holm over the table's pairs, level "
        f"{100 * across.level:g} %: its claims hold whatever the tuning's luck, and its smallest p-value is "
        f"2/2^N ({2.0 ** (1 - N):.2g} at N = {N}) however alike the studies are.",
        f"in every study: the letters of the claims each study made on its own ({test_words(across.test)}, Holm "
        "over its table), kept where all studies agree; agreement is not a test (with tuning luck, identical "
        "contenders are still claimed different in every study).",
        "lr spread: log10(largest / smallest chosen rate) over the studies, in decades (0: the same rate every "
        "time); test medians: the median over each study's report seeds, per study; mean ± 95% t: the mean over "
        "the studies with its Student-t interval over the studies (the tuning's luck and the seeds together).",
    ]


def guide_sections(analysis: StudyAnalysis) -> list[tuple[str, list[str]]]:
    """The parts of "How to read these tables" that ``analysis``'s tables need, in :data:`GUIDES`' order:
    ``[(part name, [explanation, ...]), ...]`` (what :func:`how_to_read` prints and the HTML page lists)."""
    out: list[tuple[str, list[str]]] = []
    if analysis.across:
        out.append((GUIDES["across"], _guide_across(analysis.across[0])))
    ranking = next(iter(analysis.rankings.values()), None)
    if ranking is not None:
        out.append((GUIDES["overall"], _guide_overall(ranking)))
    tables = analysis.all_tables()
    if tables:
        t0, s0 = tables[0], tables[0].selections[0]
        sels = [s for t in tables for s in t.selections]
        out.append(
            (
                GUIDES["problem"],
                _guide_problem(
                    t0.test,
                    t0.level,
                    t0.rtol,
                    f"{100 * s0.level:g}%",
                    any(s.on_edge or s.edges for s in sels),
                    any(k != "learning_rate" for s in sels if s.mode == "tuned" for k in s.config),
                    any(t.about == "optimizers" for t in tables),
                ),
            )
        )
    if len(analysis.rankings) == 2:
        out.append((GUIDES["modes"], _guide_modes()))
    return out


def how_to_read(analysis: StudyAnalysis, width: int = WIDTH) -> str:
    """ "How to read these tables": every column of the report's tables explained once, per kind of table
    (each table's reference line names its part); empty when there is no table."""
    sections = guide_sections(analysis)
    if not sections:
        return ""
    lines = ["== How to read these tables"]
    for name, items in sections:
        lines.append(f"{name[0].upper()}{name[1:]}:")
        lines += [line for item in items for line in wrap(f"  {item}", width, "    ")]
    return "\n".join(lines)
