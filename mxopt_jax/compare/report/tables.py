"""Plain-text tables of a study: one per problem, an overall table, one-shot against tuned, across studies
(their text laid out by :mod:`.layout`, their cells by :mod:`.cells`, their sentences by :mod:`.sentences`).

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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..analysis import AcrossStudies, Ranking, StudyAnalysis, TableAnalysis
from ..selection import Selection
from .cells import (
    EDGE_MARKS,
    fmt_lr,
    fmt_mean_ci,
    fmt_ms,
    fmt_num,
    fmt_quartiles,
    fmt_seconds,
    fmt_steps,
    fmt_target,
    fmt_test,
    fmt_value,
    label,
    study_label,
)
from .guides import how_to_read, see
from .layout import Table, render_table, wrap
from .sentences import across_about, across_sentences, claims_note

if TYPE_CHECKING:  # pragma: no cover
    from ..contenders import Contender
    from ..problems.base import Problem

__all__ = [
    "across_table",
    "format_across_table",
    "format_configs",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "modes_table",
    "overall_table",
    "problem_table",
    "sparse_note",
]


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
        higher = "" if s0.direction.lower_is_better else f"; {s0.direction.word} is better"
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
                fmt_test(s),
                fmt_quartiles(s, table.quartiles[n]),
                fmt_lr(s),
                fmt_num(s.best_val_mean),
                fmt_target(s),
                fmt_seconds(s.time_to_target, s.ms_per_step),
                fmt_steps(s.fastest_time),
                fmt_ms(s.ms_per_step),
                f"{bad}/{s.seeds}" if bad else "",
                f"{s.diverged}/{runs}" if s.diverged else "",
            ]
        )
    extra = tuple(format_configs([by[n] for n in table.order], identical)) if s0.mode == "tuned" else ()
    notes = [*claims_note(table, metric)]
    notes[0] += " " + see("problem")
    notes[1:1] = [n for n in notes_given if n]  # right under the rows, before the claims
    groups = ((0, 1, 3, 4, 5, 6), (7, 8, 9), (10, 11, 12))  # the test values; the targets; time, divergence
    return Table(title, head, rows, ">><" + ">" * 10, notes, extra, (2,), "problem", groups)


def format_problem(
    table: TableAnalysis, problem: Problem | None = None, title: str | None = None, notes: Sequence[str] = ()
) -> str:
    """One problem's table as text (:func:`problem_table`: the columns and what they claim are described
    there)."""
    return render_table(problem_table(table, problem, title, notes))


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
        see("overall")
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
    return render_table(overall_table(ranking, title))


def format_modes(
    tuned: Ranking,
    one_shot: Ranking,
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> str:
    """The one-shot-against-tuned table as text (:func:`modes_table`'s cells)."""
    return render_table(modes_table(tuned, one_shot, identical, title))


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
        [see("modes")],
        keep=(0,),
        guide="modes",
        groups=groups,
    )


def format_across_table(across: AcrossStudies, metric: str = "metric", title: str | None = None) -> str:
    """One table over ``N`` independent studies as text (:func:`across_table`'s cells)."""
    return render_table(across_table(across, metric, title))


def across_table(across: AcrossStudies, metric: str = "metric", title: str | None = None) -> Table:
    """The cells of one table over ``N`` independent studies (:func:`~mxopt_jax.compare.analysis.across.across_studies`): per
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
                ", ".join(fmt_value(x) for x in a.test_median[:, k]),
                fmt_mean_ci(a.study_mean[k], a.study_ci[k]) if N > 1 else fmt_value(a.study_mean[k]),
            ]
        )
    agree = a.agreement()
    title = title or f"== {a.problem} [{a.mode}] across {N} independent studies"
    notes = [
        f"claims {across_about(a)}: the exact sign-flip test over the studies, Holm over {agree['pairs']} pair(s) "
        f"at {100 * a.level:g} %. " + see("across"),
        f"agreement over {agree['pairs']} pair(s): {agree['claimed']} shown to differ in at least one study, "
        f"{agree['replicated']} in every study the same way, {agree['contradicted']} one way in a study and the "
        f"other way in another, {agree['unreplicated']} in some studies only; {agree['shown']} shown by the "
        "across-studies test.",
    ]
    if agree["pairs"] and not a.can_claim:
        notes.append(
            f"power: {N} studies cannot support any claim {across_about(a).split(',')[0]} in a table of "
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
