"""Plain-text tables of a study: one per problem, an overall table, one-shot against tuned, across studies.

Every table is fixed-width text meant to be read at a glance in a terminal; :func:`format_report` puts them
together under the printed protocol (:func:`mxopt_jax.compare.report.text.describe`). The cells come from
:func:`problem_table` and :func:`overall_table` (:class:`Table`: a title, a header, rows of text, notes), which
the HTML page renders too (:mod:`mxopt_jax.compare.report.html`): the page and the text say the same.

What the tables claim: a table prints, for its contenders, the compact letter display and the simultaneous rank
sets of its analysis (:class:`~mxopt_jax.compare.analysis.TableAnalysis`), so every "better" a reader can read in
it is a test that Holm's correction kept. The tables read the analysis and compute none of it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..analysis import AcrossStudies, Claim, Ranking, StudyAnalysis, TableAnalysis, Verdict, across_claims
from ..analysis.verdict import SEED_STEPS
from ..protocol import ROUNDING_RTOL, TEST, Selection

if TYPE_CHECKING:  # pragma: no cover
    from ..contenders import Contender
    from ..problems.base import Problem

__all__ = [
    "EDGE_MARKS",
    "GUIDES",
    "WIDTH",
    "Table",
    "across_table",
    "claims_note",
    "fmt_lr",
    "fmt_mean_ci",
    "format_across",
    "format_configs",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "guide_sections",
    "how_to_read",
    "label",
    "modes_table",
    "overall_table",
    "problem_table",
    "reference_lines",
    "sparse_note",
    "study_label",
    "table_body",
    "test_words",
    "text_table",
    "wrap",
]

#: Marks appended to a chosen rate on the grid's edge.
EDGE_MARKS = {"low": "<", "high": ">"}
_EDGE_NOTE = (
    "< / > after a rate: the chosen rate is the smallest / largest of its grid (random search: a chosen value, the rate or "
    "another hyperparameter, that is the lowest / highest of that hyperparameter among the trials); the best "
    "value may lie beyond it."
)
_DASH = "—"


# --------------------------------------------------------------------------- identical contenders
def label(name: str, identical: Mapping[str, Sequence[str]] | None = None) -> str:
    """``name``, or ``"sgd (= ccsgd, test, lbsgd)"`` when ``identical`` lists contenders identical to it."""
    others = (identical or {}).get(name)
    return f"{name} (= {', '.join(others)})" if others else name


# --------------------------------------------------------------------------- numbers
def fmt_lr(s: Selection) -> str:
    """The chosen rate with 3 significant digits and its edge mark (``"0.0316"``, ``"1e-05<"``)."""
    return f"{s.lr:.3g}{EDGE_MARKS.get(s.on_edge or '', '')}"


def _decimals(ci: float) -> int:
    """Decimals that show ``ci`` with two significant digits (0 to 6)."""
    if not math.isfinite(ci) or ci <= 0:
        return -1
    return int(min(6, max(0, 1 - math.floor(math.log10(ci)))))


def fmt_mean_ci(mean: float, ci: float) -> str:
    """``"3.42 ± 0.31"``: the interval with two significant digits, the mean to the same decimals;
    ``"diverged"`` for a non-finite mean, the mean alone (4 significant digits) without an interval."""
    if not math.isfinite(mean):
        return "diverged"
    d = _decimals(ci)
    if d < 0:
        return f"{mean:.4g}" + (" ± 0" if ci == 0 else "")
    if round(ci, d) == 0:  # a spread below the shown decimals (rounding): as none
        return f"{mean:.4g} ± 0"
    return f"{mean:.{d}f} ± {ci:.{d}f}"


def _fmt_num(v: float) -> str:
    return f"{v:#.4g}".rstrip(".") if math.isfinite(v) else "diverged"


def _fmt_target(s: Selection) -> str:
    k = f"({s.reached}/{s.seeds})"
    if math.isfinite(s.time_to_target):
        return f"{s.time_to_target:.0f} {k}"
    return f"{_DASH} {k}" if s.reached else _DASH


def _fmt_seconds(steps: float, ms_per_step: float) -> str:
    """``steps x ms_per_step`` with its unit, 2 significant digits (``"0.29 ms"``, ``"1.2 s"``; a dash when
    either is unknown)."""
    if not (math.isfinite(steps) and math.isfinite(ms_per_step)):
        return _DASH
    v, unit = steps * ms_per_step, "ms"
    if v >= 1e3:
        v, unit = v / 1e3, "s"
    if v == 0:
        return "0 s"
    v = float(f"{v:.2g}")
    return f"{v:.{max(0, 1 - math.floor(math.log10(abs(v))))}f} {unit}"


def _fmt_steps(v: float) -> str:
    return f"{v:.0f}" if math.isfinite(v) else _DASH


def fmt_ms(v: float) -> str:
    if not math.isfinite(v):
        return _DASH
    if v == 0:
        return "0"
    v = float(f"{v:.3g}")
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


#: The widest line the text report prints (a terminal's width): wider tables are split into parts, longer
#: paragraphs wrapped. Only a word longer than this, or a table whose repeated columns and one more column are
#: wider, can pass it.
WIDTH = 120


def text_table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    align: str,
    width: int = WIDTH,
    keep: Sequence[int] = (),
    groups: Sequence[Sequence[int]] = (),
) -> list[str]:
    """Fixed-width lines: ``align`` has one ``<`` or ``>`` per column. A table wider than ``width`` is split
    into parts, one after another (each with its header and rule): each part repeats the ``keep`` columns (the
    contender) and takes, in order, as many of the ``groups`` of the other columns (default: one group per
    column; a group is never split unless it alone is too wide) as fit."""
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h) for c, h in enumerate(head)]

    def lines(cols: Sequence[int]) -> list[str]:
        def line(cells: Sequence[str]) -> str:
            return "  ".join(f"{cells[c]:{align[c]}{widths[c]}}" for c in cols).rstrip()

        first = line(head)
        return [first, "-" * len(first), *(line(r) for r in rows)]

    def span(cols: Sequence[int]) -> int:
        return sum(widths[k] + 2 for k in cols) - 2

    kept = [c for c in keep if 0 <= c < len(head)]
    if span(range(len(head))) <= width or len(kept) == len(head):
        return lines(range(len(head)))
    units = [[c for c in g if c not in kept] for g in groups] or [
        [c] for c in range(len(head)) if c not in kept
    ]
    units = [u for g in units for u in ([g] if span([*kept, *g]) <= width else [[c] for c in g]) if u]
    parts: list[list[int]] = []
    for unit in units:
        if parts and span([*kept, *parts[-1], *unit]) <= width:
            parts[-1] += unit
        else:
            parts.append(list(unit))
    return [line for part in parts for line in lines(sorted({*kept, *part}))]


def wrap(text: str, width: int = WIDTH, indent: str = "") -> list[str]:
    """``text`` as lines of at most ``width`` characters (continuations indented by ``indent``); a word is
    never broken, so only a word longer than ``width`` passes it."""
    return textwrap.wrap(
        text, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    ) or [""]


class Table(NamedTuple):
    """A table's contents, for text (:func:`format_problem`, :func:`format_overall`) and HTML alike.

    Attributes:
      title: the heading line.
      head: the column names.
      rows: the cells, one list of text per row, in display order.
      align: one ``<`` or ``>`` per column.
      notes: the table's short reference: what is particular to it (its pairs, its margin, a power warning)
        and which part of "How to read these tables" (:func:`how_to_read`) explains its columns.
      extra: lines printed between the rows and the notes (the chosen configurations of a random search).
      keep: the columns every part repeats when the text splits a wide table (:func:`text_table`); ``groups``:
        the columns kept together in a part.
      guide: the part of "How to read these tables" that explains the columns (a key of :data:`GUIDES`).
    """

    title: str
    head: list[str]
    rows: list[list[str]]
    align: str
    notes: list[str]
    extra: tuple[str, ...] = ()
    keep: tuple[int, ...] = ()
    guide: str = ""
    groups: tuple[tuple[int, ...], ...] = ()


def table_body(t: Table, width: int = WIDTH) -> list[str]:
    """A table's title (wrapped), its rows (split into parts where wider than ``width``) and its extra lines."""
    return [
        *wrap(t.title, width, "   "),
        *text_table(t.head, t.rows, t.align, width, t.keep, t.groups),
        *t.extra,
    ]


def reference_lines(t: Table, width: int = WIDTH) -> list[str]:
    """The short reference under a table (:attr:`Table.notes`), each line of a note wrapped to ``width``
    (continuations indented two more than the line)."""
    return [
        line
        for note in t.notes
        for part in note.split("\n")
        for line in wrap(part, width, " " * (len(part) - len(part.lstrip()) + 2))
    ]


def _render(t: Table, width: int = WIDTH) -> str:
    return "\n".join([*table_body(t, width), *reference_lines(t, width)])


#: The parts of "How to read these tables", in the order printed, by :attr:`Table.guide` key.
GUIDES = {
    "across": "across-studies tables",
    "overall": "overall tables",
    "problem": "problem tables",
    "modes": "one-shot -> tuned",
}


def _see(guide: str) -> str:
    """The reference to the part of "How to read these tables" that explains a table's columns."""
    return f'See "How to read these tables" ({GUIDES[guide]}).'


# --------------------------------------------------------------------------- tables
def test_words(test: str = TEST) -> str:
    """The paired test's name as the report prints it."""
    return {
        "wilcoxon": "Wilcoxon's signed-rank test (exact, two-sided)",
        "t": "Student's paired t statistic with its exact sign-flip p-value (two-sided; smallest p 2/2^R; a pair "
        "with a diverged seed: the signed-rank test)",
    }[test]


def claims_note(table: TableAnalysis, metric: str = "metric") -> list[str]:
    """What is particular to a table's claims (its pairs, its level, its practical margin; how they are
    decided is in :func:`how_to_read`), and a warning when the table cannot separate anything (the exact test's
    smallest p-value above Holm's first threshold)."""
    c = table
    margin = f"practical margin {table.margin:g} {metric}" if table.margin else "no practical margin"
    family = table.comparison.comparison.family or c.pairs
    over = f" over the report's {family} tests (--family report)" if family != c.pairs else ""
    out = [f"This table: {c.pairs} pair(s), Holm at {100 * c.level:g} %{over}; {margin}."]
    if c.test == "wilcoxon" and c.pairs and table.needed_seeds > table.seeds:
        need = table.needed_seeds
        out.append(
            f"power: on {table.seeds} seeds the signed-rank test's smallest p-value is 2/2^{table.seeds} = "
            f"{2.0 ** (1 - table.seeds):.2g}, above Holm's first threshold {100 * c.level:g} %/{c.pairs} = "
            f"{c.level / c.pairs:.2g}: no pair of this table can be shown to differ. {c.pairs} pairs need at "
            f"least {need} report seeds (--confirm-seeds {need}), or fewer contenders."
        )
    elif c.test == "wilcoxon" and c.pairs:
        diverged = table.comparison.power_note()
        if diverged:
            out.append(f"power: {diverged}")
    for better, worse, p in table.comparison.divergence_claims():
        d = table.comparison.divergence
        assert d is not None
        k, m = d.diverged[table.entries.index(better)], d.diverged[table.entries.index(worse)]
        out.append(
            f"divergence: {better} diverged on fewer report seeds than {worse} ({k} against {m} of {table.seeds}; "
            f"exact sign test on the seeds where only one diverged, Holm over the pairs that differ there, p_adj "
            f"{p:.2g})."
        )
    out.append(claims_sentences(table, metric))
    return out


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
        out.append(_EDGE_NOTE)
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


#: The most claims printed in sentences under a table; ``claims.csv`` holds every one.
MAX_SENTENCES = 10


def sentences(
    head: str,
    claims: Sequence[Claim],
    metric: str,
    entries: int,
    summary: Sequence[str] = (),
    total: int | None = None,
) -> str:
    """``head``, then the shown ``claims`` one sentence a line (``Claim.sentence``; the first
    :data:`MAX_SENTENCES`, then how many more ``claims.csv`` holds), then the ``summary`` lines (claims summed up,
    e.g. against a contender that diverged everywhere; ``total``: every claim, those summed up included);
    ``"no difference shown among the E entries"`` where there is none."""
    if not claims and not summary:
        return f"{head}: no difference shown among the {entries} entries."
    lines = [f"{head}, {total if total is not None else len(claims)}:"]
    lines += [f"  {c.sentence(metric)}." for c in claims[:MAX_SENTENCES]]
    if len(claims) > MAX_SENTENCES:
        lines.append(f"  ... and {len(claims) - MAX_SENTENCES} more (claims.csv holds every claim).")
    lines += [f"  {line}" for line in summary]
    return "\n".join(lines)


#: What a table's claims are about, as the sentences' heading says it (``TableAnalysis.about``).
ABOUT = {
    "optimizers": "about the optimizers under this search and budget",
    "configurations": "about the configurations this study chose",
    "defaults": "about the default configurations",
}


def ordered_claims(table: TableAnalysis) -> tuple[list[Claim], list[str]]:
    """The table's shown claims in the order a reader wants them, and the lines that sum up the trivial ones.

    Claims that decide the most come first: by the worse entry's place in the table (a claim against an entry
    near the top says more than one against the last), then by the better one's place;
    claims against an entry that diverged at every configuration on every seed (:attr:`TableAnalysis.hopeless`) are summed up in one line each."""
    place = {n: k for k, n in enumerate(table.order)}
    shown = table.shown_claims()
    trivial = [c for c in shown if c.worse in table.hopeless]
    rest = [c for c in shown if c.worse not in table.hopeless]
    rest.sort(key=lambda c: (place[c.worse or ""], place[c.better or ""]))
    summary = []
    for name in table.hopeless:
        against = [c for c in trivial if c.worse == name]
        if against:
            configs = len(table.selection(name).lrs)
            summary.append(
                f"{name} diverged on every report seed at every one of its {configs} configuration(s): "
                f"{len(against)} of the {len(table.entries) - 1} other entries are shown better than it "
                "(claims.csv holds each)."
            )
    return rest, summary


def claims_sentences(table: TableAnalysis, metric: str = "metric") -> str:
    """The table's claims as a reader would cite them (:func:`sentences`, in :func:`ordered_claims`' order),
    headed with what they are about (:data:`ABOUT`); ``"no difference shown among the E entries"`` where the
    tests showed none."""
    claims, summary = ordered_claims(table)
    head = f"claims ({ABOUT[table.about]})"
    return sentences(head, claims, metric, len(table.entries), summary, len(table.shown_claims()))


def _fmt_test(s: Selection) -> str:
    """Mean ± interval over the report seeds; with diverged seeds, over the finite ones, saying how many."""
    if s.finite == len(np.asarray(s.test)):
        return fmt_mean_ci(s.test_mean, s.test_ci)
    if s.finite == 0:
        return "diverged"
    return f"{fmt_mean_ci(s.finite_mean, s.finite_ci)} ({s.finite}/{s.seeds} finite)"


def _fmt_quartiles(s: Selection, quartiles: tuple[float, float, float]) -> str:
    """``"2.75 [2.50, 3.06]"``: median and quartiles over every report seed (a diverged seed the worst value),
    with the interval's decimals (4 significant digits without one)."""
    q1, med, q3 = quartiles
    ci = s.test_ci if math.isfinite(s.test_ci) else s.finite_ci
    d = _decimals(ci)

    def one(v: float) -> str:
        if not math.isfinite(v):
            return "diverged"
        return f"{v:.{d}f}" if d >= 0 else f"{v:.4g}"

    return f"{one(med)} [{one(q1)}, {one(q3)}]"


def problem_table(
    table: TableAnalysis, problem: Problem | None = None, title: str | None = None, notes: Sequence[str] = ()
) -> Table:
    """The cells of one problem's table (:func:`format_problem` prints them; the HTML page renders them), read
    from its analysis.

    Columns: the rank set and the letters (:class:`~mxopt_jax.compare.analysis.TableAnalysis`: every "better"
    they imply is a rejected test), the contender, the test metric's mean ± interval (over the finite seeds,
    saying how many, when some diverged), its median and quartiles over every report seed (a diverged seed the
    worst value), the chosen rate, the best validation value, steps and seconds to target at the chosen rate,
    the fastest trial's steps to target (the profile's time, from the selection runs), ms/step and the diverged
    runs (report seeds, then selection runs). Rows in the rank sets' order (then the median). Contenders
    identical to a present one are folded into its row (``"sgd (= ccsgd, test)"``) before testing. ``notes``:
    sentences printed right under the rows, before the claims (:func:`sparse_note`).
    """
    notes_given = list(notes)
    sels = table.entry_selections
    identical = table.identical
    by = {s.contender: s for s in sels}
    s0 = sels[0]
    metric = (problem.metric_name if problem is not None else s0.metric_name) or "metric"
    target = problem.target if problem is not None else s0.target
    relation = s0.direction.symbol
    pct = f"{100 * s0.level:g}%"
    mode = {"tuned": "tuned", "one-shot": "one-shot (default rate)"}.get(s0.mode, s0.mode)
    if title is None:
        name = f"{problem.name}: {problem.title}" if problem is not None else s0.problem
        higher = "; higher is better" if s0.better == "higher" else ""
        title = f"== {name} [{mode}; {s0.seeds} seeds, {s0.steps} steps; target {metric} {relation} {target:g}{higher}]"
    head = [
        "rank",
        "group",
        "contender",
        f"test {metric} (mean ± {pct} t)",
        "median [quartiles]",
        "lr",
        f"best val {metric}",
        "steps to target",
        "time to target",
        "fastest trial",
        "ms/step",
        "div. report",
        "div. selection",
    ]
    rows = []
    for n in table.order:
        s = by[n]
        runs = len(s.lrs) * len(s.val_final)
        bad = s.seeds - s.finite
        rows.append(
            [
                table.rank_set(n),
                table.letters(n),
                label(n, identical),
                _fmt_test(s),
                _fmt_quartiles(s, table.quartiles[n]),
                fmt_lr(s),
                _fmt_num(s.best_val_mean),
                _fmt_target(s),
                _fmt_seconds(s.time_to_target, s.ms_per_step),
                _fmt_steps(s.fastest_time),
                fmt_ms(s.ms_per_step),
                f"{bad}/{s.seeds}" if bad else "",
                f"{s.diverged}/{runs}" if s.diverged else "",
            ]
        )
    extra = tuple(format_configs([by[n] for n in table.order], identical)) if s0.mode == "tuned" else ()
    notes = [*claims_note(table, metric)]
    notes[0] += " " + _see("problem")
    notes[1:1] = [n for n in notes_given if n]  # right under the rows, before the claims
    groups = ((0, 1, 3, 4, 5, 6), (7, 8, 9), (10, 11, 12))  # the test values; the targets; time, divergence
    return Table(title, head, rows, ">><" + ">" * 10, notes, extra, (2,), "problem", groups)


def format_problem(
    table: TableAnalysis, problem: Problem | None = None, title: str | None = None, notes: Sequence[str] = ()
) -> str:
    """One problem's table as text (:func:`problem_table`: the columns and what they claim are described
    there)."""
    return _render(problem_table(table, problem, title, notes))


def sparse_note(problem: Problem, contenders: Sequence[Contender]) -> str:
    """What a reader of ``problem``'s tables must know when it has embedding tables (``problem.tables``): which
    contenders ran MXNet's lazy update there (those with a sparse factory: ``lazy_update=True``, which they do not
    on other problems), which take dense gradients and update every row, and which pairs of the same name are
    therefore different updates there (``adam`` and ``optax.adam``); ``""`` for a problem without tables."""
    if not getattr(problem, "tables", ()):
        return ""
    names = {c.name for c in contenders}
    lazy = [c.name for c in contenders if c.sparse_make is not None]
    dense = [c.name for c in contenders if not c.row_sparse]
    if not lazy:
        return ""
    text = (
        f"Embedding tables ({', '.join(problem.tables)}): {', '.join(lazy)} ran with lazy_update=True here (each "
        "step updates only the table rows the mini-batch reads, and only their optimizer state: MXNet's sparse "
        "recipe; on a problem without tables every gradient is dense and the switch changes nothing)"
    )
    if dense:
        text += f"; {', '.join(dense)} take dense gradients and update every row"
    pairs = [f"{n} and optax.{n}" for n in lazy if f"optax.{n}" in names]
    if pairs:
        text += f": {'; '.join(pairs)} are different updates on this problem"
    return text + "."


def format_configs(
    selections: Sequence[Selection], identical: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """The chosen value of every tuned hyperparameter besides the rate, one line per contender (none when
    only rates were tuned): ``"  adam  beta1=0.931 beta2=0.9987< epsilon=2.1e-09 wd=3.2e-06"`` (``<``/``>``:
    the lowest/highest value of that hyperparameter among the trials, :attr:`Selection.edges`)."""
    rows = [(s, {k: v for k, v in s.config.items() if k != "learning_rate"}) for s in selections]
    if not any(extra for _, extra in rows):
        return []
    names = [label(s.contender, identical) for s, _ in rows]
    w = max(len(n) for n in names)
    out = ["chosen configurations (besides lr):"]
    for n, (s, extra) in zip(names, rows, strict=True):
        cells = [f"{k}={v:.4g}{EDGE_MARKS.get(s.edges.get(k, ''), '')}" for k, v in extra.items()]
        out.append(f"  {n:<{w}}  " + (" ".join(cells) or "-"))
    return out


def overall_table(ranking: Ranking, title: str | None = None) -> Table:
    """The cells of the overall table (:func:`format_overall` prints them; the HTML page renders them), read
    from the mode's :class:`~mxopt_jax.compare.analysis.Ranking`: per contender its mean rank (the mean over
    problems of the middle of its rank set on each), the bootstrap interval of that mean over resamples of the
    *problems* and P(best) (the tables' tests run once, nothing re-tested), its rank set on each problem, the
    problems whose target its fastest trial reached, and AlgoPerf's profile score; best mean rank first.

    Rows are the contenders left after folding those identical on every problem (``ranking.identical``); each
    problem's rank sets are its table's.
    """
    boot = ranking.bootstrap
    tables = ranking.tables
    identical = ranking.identical
    tau_max = ranking.profile.tau_max
    problems = ranking.problems
    row = {n: i for i, n in enumerate(ranking.names)}
    pct = f"{100 * boot.level:g}%"
    several = len(problems) > 1  # one problem: no interval (the bootstrap resamples the problems)
    head = [
        "contender",
        "mean rank",
        *([f"{pct} bootstrap (problems)"] if several else []),
        "P(best)",
        "targets",
        f"profile score (tau<={tau_max:g})",
        *problems,
    ]
    rows = []
    for n in ranking.order:
        i = row[n]
        cells = [tables[p].rank_set(n) if n in tables[p].entry else "-" for p in problems]
        rows.append(
            [
                label(n, identical),
                f"{ranking.mean_rank(n):.2f}",
                *(
                    [f"[{boot.low[i]:.2f}, {boot.high[i]:.2f}]" if math.isfinite(boot.low[i]) else "-"]
                    if several
                    else []
                ),
                f"{boot.p_first[i]:.2f}",
                f"{ranking.reached[n]}/{len(problems)}",
                f"{ranking.score(n):.3f}",
                *cells,
            ]
        )
    omitted = ranking.omitted
    if omitted:  # the interval and P(best) need the problems (and the report-wide family) to support them
        kept = [
            i
            for i, h in enumerate(head)
            if i == 0 or i > 0 and h not in (f"{pct} bootstrap (problems)", "P(best)")
        ]
        head = [head[i] for i in kept]
        rows = [[r[i] for i in kept] for r in rows]
    title = title or f"== Overall: {len(problems)} problem(s)"
    notes = [
        _see("overall")
        + (
            f" {omitted}"
            if omitted
            else ""
            if several
            else " One problem: no bootstrap interval (it resamples the problems)."
        )
    ]
    first = len(head) - len(problems)  # the summary columns; the problems' rank sets
    groups = (tuple(range(1, first)), tuple(range(first, len(head))))
    return Table(
        title, head, rows, "<" + ">" * (len(head) - 1), notes, keep=(0,), guide="overall", groups=groups
    )


def format_overall(ranking: Ranking, title: str | None = None) -> str:
    """The overall table as text: :func:`overall_table`'s cells (the columns and what they read are described
    there)."""
    return _render(overall_table(ranking, title))


def format_modes(
    tuned: Ranking,
    one_shot: Ranking,
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> str:
    """The one-shot-against-tuned table as text (:func:`modes_table`'s cells)."""
    return _render(modes_table(tuned, one_shot, identical, title))


def modes_table(
    tuned: Ranking,
    one_shot: Ranking,
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> Table:
    """One-shot against tuned: per problem ``one-shot rank set -> tuned rank set``, and on how many problems the
    tuned rank set lies wholly before the one-shot one (``up``: every rank it could have tuned is better than
    every rank it could have at its defaults) or wholly after it (``down``); most ups (less downs) first, then
    the tuned mean rank.

    Averaging the sets' middles (as the overall table does) would mix how sure a table is with how good an entry
    is: a set 1-22 and a set 11-12 have the same middle. Disjoint sets say a move the tests support in both
    tables. Rank sets are the tables' (each mode's :class:`~mxopt_jax.compare.analysis.Ranking`); rows fold
    ``identical`` (contenders identical in both modes on every problem)."""
    rt, ro = tuned.tables, one_shot.tables
    problems = list(dict.fromkeys([*rt, *ro]))
    hidden = {m for rep, others in (identical or {}).items() for m in others if m != rep}
    names = [
        n
        for n in dict.fromkeys([n for r in (*rt.values(), *ro.values()) for n in r.entry])
        if n not in hidden
    ]

    def cell(p: str, n: str) -> str:
        a = ro[p].rank_set(n) if p in ro and n in ro[p].entry else "-"
        b = rt[p].rank_set(n) if p in rt and n in rt[p].entry else "-"
        return f"{a}->{b}"

    def moves(n: str) -> tuple[int, int]:
        up = down = 0
        for p in problems:
            if p in ro and p in rt and n in ro[p].entry and n in rt[p].entry:
                up += int(rt[p].rank_high(n) < ro[p].rank(n))
                down += int(rt[p].rank(n) > ro[p].rank_high(n))
        return up, down

    def key(n: str) -> tuple[int, float, str]:
        up, down = moves(n)
        m = tuned.mean_rank(n)
        return (down - up, m if math.isfinite(m) else math.inf, n)

    head = ["contender", "up", "down", *problems]
    rows = []
    for n in sorted(names, key=key):
        up, down = moves(n)
        rows.append([label(n, identical), str(up), str(down), *(cell(p, n) for p in problems)])
    title = (
        title
        or "== One-shot (default rate) -> tuned: rank set per problem (most clear gains from tuning first)"
    )
    groups = ((1, 2), tuple(range(3, len(head))))  # the counts; the problems' rank sets
    return Table(
        title,
        head,
        rows,
        "<" + ">" * (len(head) - 1),
        [_see("modes")],
        keep=(0,),
        guide="modes",
        groups=groups,
    )


def _fmt_rank(v: float) -> str:
    return f"{v:.2f}" if math.isfinite(v) else "-"


def _fmt_value(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "diverged"


def format_across(across: AcrossStudies, metric: str = "metric", title: str | None = None) -> str:
    """One table over ``N`` independent studies as text (:func:`across_table`'s cells)."""
    return _render(across_table(across, metric, title))


def across_table(across: AcrossStudies, metric: str = "metric", title: str | None = None) -> Table:
    """The cells of one table over ``N`` independent studies (:func:`~mxopt_jax.compare.protocol.across_studies`): per
    contender the rank set and letters of the across-studies test (the claims that hold whatever the tuning's
    luck), the letters of the claims made in every study, the chosen rate in each study and how many decades
    apart they lie, the median test value in each study and the mean over studies with its Student-t interval
    over the studies (the tuning's luck and the seeds together); then how far the studies agree."""
    a = across
    N = a.studies
    lo, hi = a.shown_rank_low, a.shown_rank_high
    groups, every = a.shown_letters(), a.replicated_letters()
    order = sorted(range(len(a.names)), key=lambda k: (lo[k], hi[k], a.study_mean[k], a.names[k]))
    head = [
        "rank",
        "group",
        "in every study",
        "contender",
        "lr per study",
        "lr spread",
        f"test {metric} medians",
        "mean ± 95% t",
    ]
    rows = []
    for k in order:
        rows.append(
            [
                str(lo[k]) if lo[k] == hi[k] else f"{lo[k]}-{hi[k]}",
                groups[k],
                every[k],
                label(a.names[k], a.identical),
                ", ".join(f"{x:.3g}" for x in a.lr[:, k]),
                f"{a.lr_decades[k]:.2f}",
                ", ".join(_fmt_value(x) for x in a.test_median[:, k]),
                fmt_mean_ci(a.study_mean[k], a.study_ci[k]) if N > 1 else _fmt_value(a.study_mean[k]),
            ]
        )
    agree = a.agreement()
    title = title or f"== {a.problem} [{a.mode}] across {N} independent studies"
    notes = [
        f"claims {_across_about(a)}: the exact sign-flip test over the studies, Holm over {agree['pairs']} pair(s) "
        f"at {100 * a.level:g} %. " + _see("across"),
        f"agreement over {agree['pairs']} pair(s): {agree['claimed']} shown to differ in at least one study, "
        f"{agree['replicated']} in every study the same way, {agree['contradicted']} one way in a study and the "
        f"other way in another, {agree['unreplicated']} in some studies only; {agree['shown']} shown by the "
        "across-studies test.",
    ]
    if agree["pairs"] and not a.can_claim:
        notes.append(
            f"power: {N} studies cannot support any claim {_across_about(a).split(',')[0]} in a table of "
            f"{len(a.names)} "
            f"entries: the smallest p-value, 2/2^{N} = {2.0 ** (1 - N):.2g}, is above Holm's first threshold "
            f"{100 * a.level:g} %/{agree['pairs']} = {a.level / agree['pairs']:.2g}; it needs at least "
            f"{a.min_studies} studies (--studies {a.min_studies}), or fewer contenders."
        )
    notes.append(across_sentences(a, metric))
    model = _model_line(a, [a.names[k] for k in order], metric)
    if model:
        notes.append(model)
    return Table(title, head, rows, ">>><<>>>", notes, keep=(3,), guide="across")


def _model_line(a: AcrossStudies, order: Sequence[str], metric: str) -> str:
    """The model-based reading of the first entry against the next ones (at most 3): each a random-effects
    estimate over the studies with its Hartung-Knapp 95 % interval, labelled as a model's and never a claim."""
    if not a.model_effect.size or len(order) < 2:
        return ""
    k = {n: i for i, n in enumerate(a.names)}
    first = order[0]
    parts = []
    for other in order[1:4]:
        est, lo, hi = (float(x[k[first], k[other]]) for x in (a.model_effect, a.model_low, a.model_high))
        if math.isfinite(est):
            parts.append(f"{first} - {other} {est:.3g} [{lo:.3g}, {hi:.3g}]")
    if not parts:
        return ""
    return (
        f"model-based (a random-effects model over the {a.studies} studies, Hartung-Knapp 95 % intervals; an "
        f"estimate under the model's assumptions, not a claim), {metric}: " + "; ".join(parts) + "."
    )


def study_label(analysis: StudyAnalysis) -> str:
    """``"study 1 of 3"`` when the analysis holds several independent studies (its tables are the first
    study's), else ``""``."""
    return f"study 1 of {analysis.across[0].studies}" if analysis.across else ""


def across_sentences(a: AcrossStudies, metric: str = "metric") -> str:
    """An across-studies table's claims in sentences (about the optimizers; :func:`sentences`), or ``"no
    difference shown among the E entries"``."""
    shown = [c for c in across_claims(a) if c.shown]
    return sentences(f"claims ({_across_about(a)})", shown, metric, len(a.names))


def _across_about(a: AcrossStudies) -> str:
    """What an across-studies table's claims are about: the optimizers over the tunings (tuned), the default
    configurations over the studies (one-shot: nothing was tuned)."""
    if a.mode == "one-shot":
        return f"about the default configurations, over {a.studies} independent studies"
    return f"about the optimizers, over {a.studies} independent tunings"


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _names(names: Sequence[str], identical: Mapping[str, Sequence[str]]) -> str:
    return ", ".join(label(n, identical) for n in names)


def verdict_lines(analysis: StudyAnalysis, problems: Sequence[Problem] = ()) -> list[str]:
    """The verdict, first in the report: per problem, the contenders that could be the best under this search
    and budget (:attr:`~mxopt_jax.compare.analysis.StudyAnalysis.verdicts`, the tuned tables) and what
    narrowing that set would cost; then the contenders in every problem's best set. Empty without a tuned
    table."""
    verdicts = [v for (_, mode), v in analysis.verdicts.items() if mode == "tuned"]
    if not verdicts:
        return []
    tables = [analysis.table(v.problem) for v in verdicts]
    sels = [s for t in tables for s in t.selections]
    tried = _span([len(s.lrs) for s in sels])
    selection = _span([len(s.val_final) for s in sels])
    steps = _span([s.steps for s in sels])
    report = _span([v.seeds for v in verdicts])
    random = any(s.edges for s in sels) or any(len(s.config) > 1 for s in sels)
    what = "configuration" if random else "rate"
    searched = all(v.about == "optimizers" for v in verdicts)
    which = study_label(analysis)
    head = f"== Verdict: which optimizer could be the best on each problem{f' ({which})' if which else ''}"
    if searched:
        intro = (
            f"Under this search and budget: each contender's {what} chosen from {tried} {what}s on {selection} "
            f"selection seeds, {steps} steps, compared on {report} fresh report seeds. A contender is out when "
            f"another, at its chosen {what}, beat it at every one of the {what}s it tried (Holm at "
            f"{100 * verdicts[0].level:g} % per table): whichever its tuning had picked, it would have lost. The "
            "others could be the best."
        )
    else:
        intro = (
            "At the configurations this study chose (it did not run every configuration on the report seeds, so "
            "the tuning's luck is inside these sets): a contender is out when another was shown better at their "
            "chosen configurations."
        )
    lines = [head, *wrap(intro, indent="  ")]
    known = {p.name: p for p in problems}
    width = max(len(v.problem) for v in verdicts)
    for v in verdicts:
        n = len(v.best)
        best = _names(v.best, v.identical)
        if n == 1:
            text = f"{best} (the only one of {v.entries} entries no other was shown better than)"
        elif n > v.entries / 2:  # most of the table: name the ones that are out
            out = [e for e in analysis.table(v.problem).order if e not in v.best]
            text = (
                f"{n} of {v.entries} could be the best: every entry but {', '.join(out)}; "
                f"{_narrowing(v, known.get(v.problem))}"
            )
        else:
            text = f"{n} of {v.entries} could be the best: {best}; {_narrowing(v, known.get(v.problem))}"
        lines += wrap(f"  {v.problem:<{width}}  {text}", indent=" " * (width + 4))
    counts = analysis.in_best_sets("tuned")
    P = len(verdicts)
    if P < 2:
        return lines
    everywhere = [n for n, k in counts.items() if k == P]
    hidden = {o for others in analysis.identical.get("tuned", {}).values() for o in others}
    if everywhere:
        shown = [n for n in everywhere if n not in hidden]
        overall = (
            f"Over the {P} problems: {_names(shown, analysis.identical.get('tuned', {}))} "
            f"{'is' if len(shown) == 1 else 'are'} in every problem's best set."
        )
    else:
        top = max(counts.values(), default=0)
        most = [n for n, k in counts.items() if k == top and n not in hidden]
        overall = (
            f"Over the {P} problems: no contender is in every problem's best set; in {top} of {P}: "
            f"{_names(most, analysis.identical.get('tuned', {}))}."
        )
    lines += wrap(overall, indent="  ")
    return lines


def _narrowing(v: Verdict, problem: Problem | None = None) -> str:
    """What narrowing a best set of several to its leader would take, in words."""
    stuck = [n for n in v.narrowing if n.seeds is None and n.wins <= 0.5]
    far = [n for n in v.narrowing if n.seeds is None and n.wins > 0.5]
    if stuck:
        first = min(stuck, key=lambda n: n.wins)
        who = f"{len(stuck)} of them" if len(stuck) > 1 else first.name
        return (
            f"more report seeds would not narrow it: at some rate they tried, {who} beat {v.leader} on at least half "
            f"the seeds ({first.name} at {first.versus}: {v.leader} wins {100 * first.wins:.0f} % of them)"
        )
    if far:
        return f"telling {v.leader} from {far[0].name} would take more than {max(SEED_STEPS)} report seeds"
    need = v.seeds_to_narrow
    return (
        f"narrowing it to {v.leader} would take about {need} report seeds (--confirm-seeds {need}; estimated from "
        "these runs)"
    )


def format_report(
    analysis: StudyAnalysis,
    problems: Sequence[Problem] = (),
    protocol: str = "",
    notes: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The whole text report of a study's analysis, results first: the overall tables (what won where, and how
    sure), one table per problem (tuned, then one-shot), the one-shot-against-tuned table, "How to read these
    tables" (:func:`how_to_read`: every column explained once), then ``protocol``. With several independent
    studies these are the first study's, under a heading that says so, the overall tables labelled with it.

    Identity is the analysis's, per table: each table folds the contenders identical in it, the overall tables
    those identical on every problem in that mode, the one-shot-against-tuned table those identical in both.
    ``notes``: ``{problem: sentences}`` printed under each of that problem's tables (:func:`sparse_note`).
    """
    known = {p.name: p for p in problems}
    tables = [
        format_problem(t, known.get(t.problem), notes=(notes or {}).get(t.problem, ()))
        for t in analysis.tables.values()
    ]
    which = study_label(analysis)
    of = f" ({which})" if which else ""
    overall = []
    for mode, ranking in analysis.rankings.items():
        kind = "Overall" if mode == "tuned" else "Overall, one-shot"
        overall.append(format_overall(ranking, f"== {kind}{of}: {len(ranking.tables)} problem(s)"))
    if len(analysis.rankings) == 2:
        tables.append(
            format_modes(analysis.rankings["tuned"], analysis.rankings["one-shot"], analysis.identical_both)
        )
    head = []
    if which:
        head = [
            "\n".join(
                wrap(
                    f"== {which[0].upper()}{which[1:]}: its overall ranking and each problem's tables (the other "
                    "studies enter only the tables across studies)"
                )
            )
        ]
    guide = how_to_read(analysis)
    parts = head + overall + tables + ([guide] if guide else []) + ([protocol] if protocol else [])
    return "\n\n".join(parts) + "\n"
