"""Plain-text tables of a study: one per problem, an overall table, and one-shot against tuned.

Every table is fixed-width text meant to be read at a glance in a terminal; :func:`format_report` puts them
together under the printed protocol (:func:`mxopt_jax.compare.report.text.describe`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..protocol import (
    BOOTSTRAP_REPLICATES,
    BOOTSTRAP_SEED,
    TAU_MAX,
    TEST_LEVEL,
    Selection,
    fold,
    profile_scores,
    rank,
    rank_uncertainty,
)
from ..stats import MIN_EFFECT

if TYPE_CHECKING:  # pragma: no cover
    from ..problems.base import Problem

__all__ = [
    "EDGE_MARKS",
    "collapse",
    "fmt_lr",
    "fmt_mean_ci",
    "format_configs",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "group_by_problem",
    "label",
]

#: Marks appended to a chosen rate on the grid's edge.
EDGE_MARKS = {"low": "<", "high": ">"}
_EDGE_NOTE = (
    "< / >: chosen rate is the smallest / largest of its grid (random search: a chosen value, the rate or "
    "another hyperparameter, that is the lowest / highest of that hyperparameter among the trials); the best "
    "value may lie beyond it."
)
_DASH = "—"


# --------------------------------------------------------------------------- identical contenders
def label(name: str, identical: Mapping[str, Sequence[str]] | None = None) -> str:
    """``name``, or ``"sgd (= ccsgd, test, lbsgd)"`` when ``identical`` lists contenders identical to it."""
    others = (identical or {}).get(name)
    return f"{name} (= {', '.join(others)})" if others else name


def collapse(
    selections: Sequence[Selection], identical: Mapping[str, Sequence[str]] | None = None
) -> list[Selection]:
    """``selections`` without the contenders listed as identical to another one that is present (the
    representative stands for them, labelled by :func:`label`; :func:`~mxopt_jax.compare.protocol.fold`)."""
    return fold(selections, identical)[0]


def group_by_problem(selections: Iterable[Selection]) -> dict[str, list[Selection]]:
    """``{problem: [selections]}``, problems and contenders in the order met."""
    out: dict[str, list[Selection]] = {}
    for s in selections:
        out.setdefault(s.problem, []).append(s)
    return out


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


def _fmt_ms(v: float) -> str:
    if not math.isfinite(v):
        return _DASH
    if v == 0:
        return "0"
    v = float(f"{v:.3g}")
    return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}"


def _order(selections: Sequence[Selection], ranks: Sequence[int]) -> list[int]:
    """Display order: rank, then mean test metric, then name."""
    return sorted(
        range(len(selections)),
        key=lambda i: (ranks[i], selections[i].test_mean, selections[i].contender),
    )


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> list[str]:
    """Fixed-width lines: ``align`` has one ``<`` or ``>`` per column."""
    widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h) for c, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths, strict=True)).rstrip()

    out = [line(head)]
    out.append("-" * len(out[0]))
    out += [line(r) for r in rows]
    return out


# --------------------------------------------------------------------------- tables
def _rank_note(sels: Sequence[Selection], pct: str) -> list[str]:
    """What the interval and the ranks of a table are."""
    n = len(sels)
    pairs = n * (n - 1) // 2
    return [
        f"test: mean over the {sels[0].seeds} report seeds ± the half-width of the {pct} Student-t interval of "
        "the mean (symmetric, so it can reach past the metric's range, e.g. below 0); ranks do not read it.",
        f"rank: contenders paired by seed, Student's paired t-test (two-sided) of every pair, Holm's correction "
        f"over the table's {pairs} pair(s), level {100 * TEST_LEVEL:g} %, differences below {MIN_EFFECT:g} seed "
        "standard deviation ignored; ranks never decrease with the mean; a shared rank means not shown to "
        "differ; diverged: after every finite one.",
    ]


def format_problem(
    selections: Sequence[Selection],
    problem: Problem | None = None,
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> str:
    """One problem's table: rank, contender, test metric (mean ± CI), chosen lr, best val, steps and seconds to
    target at the chosen rate, the fastest trial's steps to target (the profile's time), ms/step, diverged runs.

    Contenders identical to a present one are folded into its row (``"sgd (= ccsgd, test)"``) before ranking
    (:func:`~mxopt_jax.compare.protocol.rank`: paired t-tests by seed, Holm, ranks monotone in the mean).
    """
    sels = collapse(selections, identical)
    if not sels:
        return title or ""
    ranks = rank(sels)
    s0 = sels[0]
    metric = (problem.metric_name if problem is not None else s0.metric_name) or "metric"
    target = problem.target if problem is not None else s0.target
    pct = f"{100 * s0.level:g}%"
    mode = {"tuned": "tuned", "one-shot": "one-shot (default rate)"}.get(s0.mode, s0.mode)
    if title is None:
        name = f"{problem.name}: {problem.title}" if problem is not None else s0.problem
        title = f"== {name} [{mode}; {s0.seeds} seeds, {s0.steps} steps; target {metric} <= {target:g}]"
    head = [
        "rank",
        "contender",
        f"test {metric} (mean ± {pct} t)",
        "lr",
        f"best val {metric}",
        "steps to target",
        "time to target",
        "fastest trial",
        "ms/step",
        "diverged",
    ]
    rows = []
    for i in _order(sels, ranks):
        s = sels[i]
        runs = len(s.lrs) * len(s.val_final)
        rows.append(
            [
                str(ranks[i]),
                label(s.contender, identical),
                fmt_mean_ci(s.test_mean, s.test_ci),
                fmt_lr(s),
                _fmt_num(s.best_val_mean),
                _fmt_target(s),
                _fmt_seconds(s.time_to_target, s.ms_per_step),
                _fmt_steps(s.fastest_time),
                _fmt_ms(s.ms_per_step),
                f"{s.diverged}/{runs}" if s.diverged else "",
            ]
        )
    lines = [title, *_table(head, rows, "><><>>>>>>")]
    if s0.mode == "tuned":
        lines += format_configs([sels[i] for i in _order(sels, ranks)], identical)
    notes = _rank_note(sels, pct)
    if any(s.on_edge or s.edges for s in sels):
        notes.append(_EDGE_NOTE)
    notes.append(
        "steps to target: median over the report seeds at the chosen rate (k/S: seeds that reached it); time to "
        "target: those steps x ms/step (ms/step: one run's time per step, amortized over the runs batched "
        "together); fastest trial: the profile's time (per seed the fewest steps any rate tried needed, median "
        "over seeds); diverged: (rate, seed) runs."
    )
    return "\n".join(lines + notes)


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


def _ranks_by_problem(
    by_problem: Mapping[str, Sequence[Selection]],
    identical: Mapping[str, Mapping[str, Sequence[str]]] | None,
) -> dict[str, dict[str, int]]:
    """``{problem: {contender: rank}}``, each problem's identical contenders (``identical[problem]``) folded
    before ranking and sharing their representative's rank."""
    out: dict[str, dict[str, int]] = {}
    for prob, sels in by_problem.items():
        if sels:
            out[prob] = dict(
                zip((s.contender for s in sels), rank(sels, (identical or {}).get(prob)), strict=True)
            )
    return out


def _mean_rank(ranks: Mapping[str, Mapping[str, int]], name: str) -> float:
    vals = [r[name] for r in ranks.values() if name in r]
    return float(np.mean(vals)) if vals else math.inf


def _per_problem(
    problems: Iterable[str],
    identical: Mapping[str, Sequence[str]] | None,
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None,
) -> dict[str, Mapping[str, Sequence[str]]]:
    """Each problem's identity map: ``identical_by_problem[problem]`` where given, else ``identical``."""
    return {p: (identical_by_problem or {}).get(p, identical or {}) for p in problems}


def format_overall(
    selections: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    identical: Mapping[str, Sequence[str]] | None = None,
    tau_max: float = TAU_MAX,
    title: str | None = None,
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    n_boot: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
) -> str:
    """Across problems: mean rank with its bootstrap interval and P(best), the rank on each problem, problems
    whose target was reached, and the performance-profile score; best mean rank first.

    Rows are the contenders left after folding those ``identical`` on every problem; each problem's ranks fold
    that problem's identical contenders (``identical_by_problem[problem]``, default ``identical``) as its own
    table does. The interval and P(best) come from
    :func:`~mxopt_jax.compare.protocol.rank_uncertainty` (``n_boot`` resamples of the report seeds, numpy
    seed ``seed + k`` for the ``k``-th problem).
    """
    by_problem = dict(selections) if isinstance(selections, Mapping) else group_by_problem(selections)
    by_problem = {p: list(s) for p, s in by_problem.items() if len(s)}
    idents = _per_problem(by_problem, identical, identical_by_problem)
    ranks = _ranks_by_problem(by_problem, idents)
    names = list(
        dict.fromkeys(s.contender for sels in by_problem.values() for s in collapse(sels, identical))
    )
    boot = rank_uncertainty(by_problem, idents, names, n_boot=n_boot, seed=seed)
    scores = profile_scores(by_problem, tau_max)
    reached = {
        n: sum(
            1
            for sels in by_problem.values()
            for s in sels
            if s.contender == n and math.isfinite(s.fastest_time)
        )
        for n in names
    }
    problems = list(by_problem)
    row = {n: i for i, n in enumerate(names)}
    order = sorted(names, key=lambda n: (_mean_rank(ranks, n), -scores.get(n, 0.0), n))
    pct = f"{100 * boot.level:g}%"
    head = [
        "contender",
        "mean rank",
        f"{pct} bootstrap",
        "P(best)",
        *problems,
        "targets",
        f"profile score (tau<={tau_max:g})",
    ]
    rows = []
    for n in order:
        i = row[n]
        cells = [str(ranks[p][n]) if n in ranks[p] else "-" for p in problems]
        rows.append(
            [
                label(n, identical),
                f"{_mean_rank(ranks, n):.2f}",
                f"[{boot.low[i]:.2f}, {boot.high[i]:.2f}]" if math.isfinite(boot.low[i]) else "-",
                f"{boot.p_first[i]:.2f}",
                *cells,
                f"{reached[n]}/{len(problems)}",
                f"{scores.get(n, 0.0):.3f}",
            ]
        )
    title = title or f"== Overall: {len(problems)} problem(s)"
    lines = [title, *_table(head, rows, "<>>>" + ">" * len(problems) + ">>")]
    lines += [
        f"mean rank: mean of the table ranks over the problems; {pct} bootstrap: the {(1 - boot.level) / 2:.1%} "
        f"and {(1 + boot.level) / 2:.1%} percentiles of the mean rank over {boot.replicates.shape[0]} resamples "
        f"of the report seeds (the same seeds for every contender of a problem; numpy seed {seed} + the "
        "problem's index), how much the ranking moves when the seeds are resampled, not a calibrated "
        "confidence interval; P(best): share of the resamples in which it has the lowest mean rank (ties split).",
        "targets: problems where at least half of the selection seeds had a rate reaching the validation "
        f"target; profile score: AlgoPerf's, the normalized area under the performance profile (linear tau from "
        f"1 to {tau_max:g}) of the fastest trial's steps to target (1: fastest everywhere).",
    ]
    return "\n".join(lines)


def format_modes(
    tuned: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    one_shot: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
) -> str:
    """One-shot against tuned: per problem ``one-shot rank -> tuned rank``, the mean rank in each mode and
    its change (negative: tuning helped it more than the others), largest improvement first.

    Ranks are the tables' (``identical_by_problem[problem][mode]`` folded, default ``identical``); rows fold
    ``identical``."""
    t = tuned if isinstance(tuned, Mapping) else group_by_problem(tuned)
    o = one_shot if isinstance(one_shot, Mapping) else group_by_problem(one_shot)
    by = identical_by_problem or {}
    rt = _ranks_by_problem(t, {p: by.get(p, {}).get("tuned", identical or {}) for p in t})
    ro = _ranks_by_problem(o, {p: by.get(p, {}).get("one-shot", identical or {}) for p in o})
    problems = list(dict.fromkeys([*t, *o]))
    hidden = {m for rep, others in (identical or {}).items() for m in others if m != rep}
    names = [
        n for n in dict.fromkeys([n for r in (*rt.values(), *ro.values()) for n in r]) if n not in hidden
    ]

    def cell(p: str, n: str) -> str:
        a = ro.get(p, {}).get(n)
        b = rt.get(p, {}).get(n)
        return f"{'-' if a is None else a}->{'-' if b is None else b}"

    def change(n: str) -> float:
        return _mean_rank(rt, n) - _mean_rank(ro, n)

    def key(n: str) -> tuple[float, float, str]:
        c = change(n)
        return (c if math.isfinite(c) else math.inf, _mean_rank(rt, n), n)

    head = ["contender", *problems, "one-shot mean", "tuned mean", "change"]
    rows = []
    for n in sorted(names, key=key):
        c = change(n)
        rows.append(
            [
                label(n, identical),
                *(cell(p, n) for p in problems),
                _fmt_rank(_mean_rank(ro, n)),
                _fmt_rank(_mean_rank(rt, n)),
                f"{c:+.2f}" if math.isfinite(c) else "-",
            ]
        )
    title = title or (
        "== One-shot (default rate) -> tuned: rank per problem and mean rank (largest gain from tuning first)"
    )
    lines = [title, *_table(head, rows, "<" + ">" * (len(problems) + 3))]
    lines.append("change: tuned mean rank minus one-shot mean rank (negative: moved up with tuning).")
    return "\n".join(lines)


def _fmt_rank(v: float) -> str:
    return f"{v:.2f}" if math.isfinite(v) else "-"


def format_report(
    problems: Sequence[Problem],
    tuned: Sequence[Selection],
    one_shot: Sequence[Selection] = (),
    protocol: str = "",
    identical: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    tau_max: float = TAU_MAX,
    identical_by_problem: Mapping[str, Mapping[str, Mapping[str, Sequence[str]]]] | None = None,
) -> str:
    """The whole text report, results first: the overall tables (what won where, and how sure), one table per
    problem (tuned, then one-shot), the one-shot-against-tuned table, then the protocol.

    Identity is data, per table: ``identical_by_problem[problem][mode]`` (``{representative: [others]}``, mode
    ``"tuned"`` or ``"one-shot"``) folds contenders in that problem's table of that mode; ``identical[mode]``
    folds them in the cross-problem tables (contenders identical on one problem need not be on another, nor in
    the other mode).
    """
    identical = identical or {}
    by_problem = identical_by_problem or {}
    overall: list[str] = []
    tables: list[str] = []
    tb, ob = group_by_problem(tuned), group_by_problem(one_shot)
    known = {p.name: p for p in problems}
    for name in dict.fromkeys([*known, *tb, *ob]):
        for mode, sels in (("tuned", tb.get(name)), ("one-shot", ob.get(name))):
            if sels:
                here = by_problem.get(name, {}).get(mode, identical.get(mode, {}))
                tables.append(format_problem(sels, known.get(name), here))

    def per_problem(mode: str, names: Iterable[str]) -> dict[str, Mapping[str, Sequence[str]]]:
        return {p: by_problem.get(p, {}).get(mode, identical.get(mode, {})) for p in names}

    if tb:
        overall.append(format_overall(tb, identical.get("tuned"), tau_max, None, per_problem("tuned", tb)))
    if ob:
        overall.append(
            format_overall(
                ob,
                identical.get("one-shot"),
                tau_max,
                f"== Overall, one-shot: {len(ob)} problem(s)",
                per_problem("one-shot", ob),
            )
        )
    if tb and ob:
        both = {
            rep: [o for o in others if o in identical.get("one-shot", {}).get(rep, [])]
            for rep, others in identical.get("tuned", {}).items()
        }
        modes = {
            p: {"tuned": per_problem("tuned", [p])[p], "one-shot": per_problem("one-shot", [p])[p]}
            for p in dict.fromkeys([*tb, *ob])
        }
        tables.append(format_modes(tb, ob, {k: v for k, v in both.items() if v}, None, modes))
    parts = overall + tables + ([protocol] if protocol else [])
    return "\n\n".join(parts) + "\n"
