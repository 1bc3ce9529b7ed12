"""Plain-text tables of a study: one per problem, an overall table, and one-shot against tuned.

Every table is fixed-width text meant to be read at a glance in a terminal; :func:`format_report` puts them
together under the printed protocol (:func:`mxopt_jax.compare.report.text.describe`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..protocol import TAU_MAX, Selection, performance_profile, profile_score, profile_taus, rank

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
    "< / >: chosen rate is the smallest / largest of its grid (random search: within 5% of its range's end); "
    "the best rate may lie beyond it."
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
    representative stands for them, labelled by :func:`label`)."""
    present = {s.contender for s in selections}
    hidden = {o for rep, others in (identical or {}).items() if rep in present for o in others if o != rep}
    return [s for s in selections if s.contender not in hidden]


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
def format_problem(
    selections: Sequence[Selection],
    problem: Problem | None = None,
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> str:
    """One problem's table: rank, contender, test metric (mean ± CI), chosen lr, best val, steps to
    target, ms/step, diverged runs.

    Contenders identical to a present one are folded into its row (``"sgd (= ccsgd, test)"``) and ranks are
    computed over the rows shown (:func:`~mxopt_jax.compare.protocol.rank`).
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
        f"test {metric} (± {pct} CI)",
        "lr",
        f"best val {metric}",
        "steps to target",
        "ms/step",
        "diverged",
    ]
    rows = []
    for i in _order(sels, ranks):
        s = sels[i]
        runs = len(s.lrs) * s.seeds
        rows.append(
            [
                str(ranks[i]),
                label(s.contender, identical),
                fmt_mean_ci(s.test_mean, s.test_ci),
                fmt_lr(s),
                _fmt_num(s.best_val_mean),
                _fmt_target(s),
                _fmt_ms(s.ms_per_step),
                f"{s.diverged}/{runs}" if s.diverged else "",
            ]
        )
    lines = [title, *_table(head, rows, "><><>>>>")]
    if s0.mode == "tuned":
        lines += format_configs([sels[i] for i in _order(sels, ranks)], identical)
    notes = []
    if any(s.on_edge for s in sels):
        notes.append(_EDGE_NOTE)
    if len(set(ranks)) < len(ranks):
        notes.append(f"Shared ranks: {pct} intervals overlap (not significantly different).")
    notes.append(
        "steps to target: median over seeds (k/S: seeds that reached it); diverged: (rate, seed) runs."
    )
    return "\n".join(lines + notes)


def format_configs(
    selections: Sequence[Selection], identical: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """The chosen value of every tuned hyperparameter besides the rate, one line per contender (none when
    only rates were tuned): ``"  adam  beta1=0.931 beta2=0.9987 epsilon=2.1e-09 wd=3.2e-06"``."""
    rows = [(s, {k: v for k, v in s.config.items() if k != "learning_rate"}) for s in selections]
    if not any(extra for _, extra in rows):
        return []
    names = [label(s.contender, identical) for s, _ in rows]
    w = max(len(n) for n in names)
    out = ["chosen configurations (besides lr):"]
    for n, (_, extra) in zip(names, rows, strict=True):
        out.append(f"  {n:<{w}}  " + (" ".join(f"{k}={v:.4g}" for k, v in extra.items()) or "-"))
    return out


def _ranks_by_problem(
    by_problem: Mapping[str, Sequence[Selection]], identical: Mapping[str, Sequence[str]] | None
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for prob, sels in by_problem.items():
        shown = collapse(sels, identical)
        out[prob] = dict(zip((s.contender for s in shown), rank(shown), strict=True))
        for rep, others in (identical or {}).items():  # an entry's members share its rank
            for o in others:
                if rep in out[prob] and any(s.contender == o for s in sels):
                    out[prob][o] = out[prob][rep]
    return out


def _mean_rank(ranks: Mapping[str, Mapping[str, int]], name: str) -> float:
    vals = [r[name] for r in ranks.values() if name in r]
    return float(np.mean(vals)) if vals else math.inf


def format_overall(
    selections: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    identical: Mapping[str, Sequence[str]] | None = None,
    tau_max: float = TAU_MAX,
    title: str | None = None,
) -> str:
    """Across problems: mean rank, rank per problem, problems whose target was reached (time to target
    finite: at least half of the seeds), and the performance-profile score; best mean rank first."""
    by_problem = selections if isinstance(selections, Mapping) else group_by_problem(selections)
    by_problem = {p: collapse(s, identical) for p, s in by_problem.items()}
    ranks = _ranks_by_problem(by_problem, identical)
    taus = profile_taus(tau_max)
    rho = performance_profile(by_problem, taus)
    scores = {n: profile_score(r, taus) for n, r in rho.items()}
    names = list(rho)
    reached = {
        n: sum(
            1
            for sels in by_problem.values()
            for s in sels
            if s.contender == n and math.isfinite(s.time_to_target)
        )
        for n in names
    }
    problems = list(by_problem)
    order = sorted(names, key=lambda n: (_mean_rank(ranks, n), -scores[n], n))
    head = ["contender", "mean rank", *problems, "targets", f"profile score (tau<={tau_max:g})"]
    rows = []
    for n in order:
        cells = [str(ranks[p][n]) if n in ranks[p] else "-" for p in problems]
        rows.append(
            [
                label(n, identical),
                f"{_mean_rank(ranks, n):.2f}",
                *cells,
                f"{reached[n]}/{len(problems)}",
                f"{scores[n]:.3f}",
            ]
        )
    title = title or f"== Overall: {len(problems)} problem(s)"
    lines = [title, *_table(head, rows, "<>" + ">" * len(problems) + ">>")]
    lines.append(
        "targets: problems where at least half of the seeds reached the validation target at the chosen rate; "
        "profile score: normalized area under the performance profile over log tau."
    )
    return "\n".join(lines)


def format_modes(
    tuned: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    one_shot: Sequence[Selection] | Mapping[str, Sequence[Selection]],
    identical: Mapping[str, Sequence[str]] | None = None,
    title: str | None = None,
) -> str:
    """One-shot against tuned: per problem ``one-shot rank -> tuned rank``, the mean rank in each mode and
    its change (negative: tuning helped it more than the others), largest improvement first."""
    t = tuned if isinstance(tuned, Mapping) else group_by_problem(tuned)
    o = one_shot if isinstance(one_shot, Mapping) else group_by_problem(one_shot)
    rt, ro = _ranks_by_problem(t, identical), _ranks_by_problem(o, identical)
    problems = list(dict.fromkeys([*t, *o]))
    names = list(dict.fromkeys([n for r in (*rt.values(), *ro.values()) for n in r]))

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
    """The whole text report: the protocol, one table per problem (tuned, then one-shot), the overall tables
    and the one-shot-against-tuned table.

    Identity is data, per table: ``identical_by_problem[problem][mode]`` (``{representative: [others]}``, mode
    ``"tuned"`` or ``"one-shot"``) folds contenders in that problem's table of that mode; ``identical[mode]``
    folds them in the cross-problem tables (contenders identical on one problem need not be on another, nor in
    the other mode).
    """
    identical = identical or {}
    by_problem = identical_by_problem or {}
    parts = [protocol] if protocol else []
    tb, ob = group_by_problem(tuned), group_by_problem(one_shot)
    known = {p.name: p for p in problems}
    for name in dict.fromkeys([*known, *tb, *ob]):
        for mode, sels in (("tuned", tb.get(name)), ("one-shot", ob.get(name))):
            if sels:
                here = by_problem.get(name, {}).get(mode, identical.get(mode, {}))
                parts.append(format_problem(sels, known.get(name), here))
    if tb:
        parts.append(format_overall(tb, identical.get("tuned"), tau_max))
    if ob:
        parts.append(
            format_overall(
                ob, identical.get("one-shot"), tau_max, title=f"== Overall, one-shot: {len(ob)} problem(s)"
            )
        )
    if tb and ob:
        both = {
            rep: [o for o in others if o in identical.get("one-shot", {}).get(rep, [])]
            for rep, others in identical.get("tuned", {}).items()
        }
        parts.append(format_modes(tb, ob, {k: v for k, v in both.items() if v}))
    return "\n\n".join(parts) + "\n"
