"""The report's sentences: the claims under each table, most deciding first (:func:`claims_sentences`,
:func:`claims_note`), across studies (:func:`across_sentences`), and the verdict that opens the report
(:func:`verdict_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..analysis import AcrossStudies, Claim, StudyAnalysis, TableAnalysis, Verdict
from ..analysis.verdict import SEED_STEPS
from .cells import label_all, span, study_label
from .layout import wrap

if TYPE_CHECKING:  # pragma: no cover
    from ..problems.base import Problem

__all__ = [
    "ABOUT",
    "MAX_SENTENCES",
    "across_about",
    "across_sentences",
    "claims_note",
    "claims_sentences",
    "ordered_claims",
    "sentences",
    "verdict_lines",
]


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


def across_sentences(a: AcrossStudies, metric: str = "metric") -> str:
    """An across-studies table's claims in sentences (about the optimizers; :func:`sentences`), or ``"no
    difference shown among the E entries"``."""
    shown = [c for c in a.claims if c.shown]
    return sentences(f"claims ({across_about(a)})", shown, metric, len(a.names))


def across_about(a: AcrossStudies) -> str:
    """What an across-studies table's claims are about: the optimizers over the tunings (tuned), the default
    configurations over the studies (one-shot: nothing was tuned)."""
    if a.mode == "one-shot":
        return f"about the default configurations, over {a.studies} independent studies"
    return f"about the optimizers, over {a.studies} independent tunings"


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
    tried = span([len(s.lrs) for s in sels])
    selection = span([len(s.val_final) for s in sels])
    steps = span([s.steps for s in sels])
    report = span([v.seeds for v in verdicts])
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
        best = label_all(v.best, v.identical)
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
            f"Over the {P} problems: {label_all(shown, analysis.identical.get('tuned', {}))} "
            f"{'is' if len(shown) == 1 else 'are'} in every problem's best set."
        )
    else:
        top = max(counts.values(), default=0)
        most = [n for n, k in counts.items() if k == top and n not in hidden]
        overall = (
            f"Over the {P} problems: no contender is in every problem's best set; in {top} of {P}: "
            f"{label_all(most, analysis.identical.get('tuned', {}))}."
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
