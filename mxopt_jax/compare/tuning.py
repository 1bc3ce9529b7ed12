"""Tuning one contender on one problem: the protocol's selection, extension and report runs, every independent
study of the plan at once (:func:`tune`), and the one place that selects: :func:`tuned_selection` (the tuned
mode's) and :func:`one_shot_selection` (the default configuration's), which :func:`tune` returns with the records
and :meth:`~mxopt_jax.compare.result.StudyResult.assemble` stores as they are (a study read back from its
records, which never stored them, asks :func:`selections` once per problem, contender and study). The
orchestration (:mod:`mxopt_jax.compare.study`) calls :func:`tune` once per contender of a compiled program.

For each study of the plan (its own seeds):

1. **every configuration, both seed sets, in the same calls**: the configurations of the search
   (:func:`mxopt_jax.compare.search.configurations`: the learning-rate grid around the default rate, or the
   random search's trials, the first of them the defaults) run on the selection seeds *and* on the report seeds
   (fresh, disjoint from the selection seeds). Nothing of the report runs is read to choose; they are what the
   tables report (the chosen configuration's row) and what the claims about the optimizers compare against
   (every row: a contender is shown better than another only when it beats it at every configuration the other
   tried, :func:`mxopt_jax.compare.stats.compare_searches`). The test split is evaluated at the end of the runs
   only, and a selection run's test value is dropped (NaN): selection never reads it;
2. **selection** (:func:`tuned_selection`: :func:`mxopt_jax.compare.selection.select`, validation of the selection
   seeds only; a random search's edge flags per hyperparameter); where the chosen rate is on the grid's edge
   (grid search), the grid shifted past that edge runs the same way (both seed sets) and the choice is made again
   on the union, up to ``plan.extend`` times;
3. the chosen configuration's report runs are the tuned mode's; the default configuration's (the grid's centre,
   the random search's first trial) are the one-shot mode's (:func:`one_shot_selection`; :func:`shown`: the rows
   each mode's table shows): no run is made twice.

Every study's runs of a contender go through the same calls (:meth:`~mxopt_jax.compare.engine.CompiledGroup.
run_many` packs them into the program's slots).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import search as _search
from .presets import combine, shift_grid
from .records import Records
from .selection import Selection, select

if TYPE_CHECKING:  # pragma: no cover
    from .contenders import Contender
    from .engine import CompiledGroup
    from .plan import Plan
    from .problems.base import Problem

__all__ = [
    "SHOWN_ROLE",
    "TEST_SPLIT",
    "Tuned",
    "call_runs",
    "check_batching",
    "configurations",
    "default_row",
    "first_pass",
    "one_shot_selection",
    "selections",
    "shown",
    "tune",
    "tuned_selection",
]

#: Which records each mode's table shows (:data:`~mxopt_jax.compare.selection.MODES`): the role of the view
#: :func:`shown` makes of the report runs.
SHOWN_ROLE = {"tuned": "confirmation", "one-shot": "default"}

#: Where the study's calls evaluate the test split (:meth:`~mxopt_jax.compare.engine.CompiledGroup.run_many`'s
#: ``test``): at the final evaluation point only, the one value every record that reads it reads (the other
#: points are NaN; at every point it cost 13 to 21 % of a call, benchmarks/RESULTS.md).
TEST_SPLIT: Any = "final"


@dataclasses.dataclass(frozen=True)
class Tuned:
    """One contender tuned on one problem in one study.

    Attributes:
      records: ``{"selection": ..., "report": ...}``: every configuration tried (the grid with its extensions,
        or the trials), sorted as the selection is, on the selection seeds and on the report seeds; and
        ``"default"`` when the default configuration is not one of them (a contender whose search leaves it
        out), run on the report seeds.
      selection: the tuned mode's :class:`~mxopt_jax.compare.selection.Selection` (:func:`tuned_selection`:
        chosen on the selection runs' validation metric, reported on the chosen row of the report runs, every
        row's final test value in :attr:`~mxopt_jax.compare.selection.Selection.report_grid`).
      one_shot: the one-shot mode's (:func:`one_shot_selection`: the default configuration's report runs).
    """

    records: dict[str, Records]
    selection: Selection
    one_shot: Selection

    @property
    def selections(self) -> dict[str, Selection]:
        """``{mode: Selection}``, as :func:`selections` gives them."""
        return {"tuned": self.selection, "one-shot": self.one_shot}


def configurations(problem: Problem, contender: Contender, plan: Plan) -> dict[str, np.ndarray]:
    """The configurations ``contender``'s search tries on ``problem`` under ``plan`` (before any extension):
    ``{hyperparameter: (G,) values}``, ``G`` = :attr:`Plan.configurations <mxopt_jax.compare.plan.Plan.
    configurations>`."""
    return _search.configurations(
        contender,
        plan.preset,
        plan.search,
        plan.configurations,
        plan.search_seed,
        sparse=bool(problem.tables),
    )


def default_row(records: Records, contender: Contender) -> int | None:
    """The row of ``records`` holding ``contender``'s default configuration (every tuned hyperparameter at its
    default, equal to 1e-9 relative), or ``None`` when none does."""
    defaults = contender.defaults
    cols = {"learning_rate": records.lrs, **records.hparams}
    hit = np.ones(len(records.lrs), bool)
    for name, values in cols.items():
        hit &= np.isclose(np.asarray(values, np.float64), float(defaults[name]), rtol=1e-9, atol=0.0)
    rows = np.flatnonzero(hit)
    return int(rows[0]) if rows.size else None


def tuned_selection(
    roles: Mapping[str, Records], problem: Problem, contender: Contender, search: str
) -> Selection:
    """The tuned selection of ``contender`` on ``problem`` from its records (``roles``): chosen on its selection
    runs, reported on the chosen row of its report runs, every row's final test value kept for the claims about
    the optimizers (:func:`~mxopt_jax.compare.selection.select`; a study saved before the report runs existed
    reports its confirmation runs and compares chosen configurations only); in a random search (``search``) the
    edge flags are the trials' (:func:`mxopt_jax.compare.search.edges`: the index of a trial says nothing about its
    place among the values tried)."""
    rec = roles["selection"]
    if "report" in roles:
        sel = select(rec, problem, report=roles["report"])
    else:
        sel = select(rec, problem, confirmation=roles["confirmation"])
    if search != "random":
        return sel
    edges = _search.edges({"learning_rate": rec.lrs, **rec.hparams}, sel.index, contender.hyperparameters)
    return dataclasses.replace(sel, edges=edges, on_edge=edges.get("learning_rate"))


def shown(roles: Mapping[str, Records], mode: str, contender: Contender, selection: Selection) -> Records:
    """The records ``mode``'s table shows of one contender (``roles``: what its program ran): the tuned mode's
    confirmation runs (the chosen row of the report runs), the one-shot mode's default runs (the default
    configuration's row of the report runs, or the default runs made alone), as records of role
    ``"confirmation"`` or ``"default"`` (:data:`SHOWN_ROLE`). A study saved before the report runs existed stored
    both."""
    role = SHOWN_ROLE[mode]
    if role in roles:
        return roles[role]
    report = roles["report"]
    if mode == "tuned":
        return dataclasses.replace(report.take(selection.index), role=role)
    row = default_row(report, contender)
    if row is None:
        raise ValueError(
            f"{contender.name} on {report.problem}: no default runs, and its report runs do not hold its default "
            "configuration"
        )
    return dataclasses.replace(report.take(row), role=role)


def one_shot_selection(
    roles: Mapping[str, Records], problem: Problem, contender: Contender, tuned: Selection
) -> Selection:
    """The one-shot selection of ``contender`` on ``problem``: its default configuration's report runs
    (:func:`shown`), nothing chosen (``tuned``: its tuned selection, which says where the report runs' rows are)."""
    return select(shown(roles, "one-shot", contender, tuned), problem)


def selections(
    roles: Mapping[str, Records], problem: Problem, contender: Contender, search: str
) -> dict[str, Selection]:
    """``{mode: Selection}`` of ``contender`` on ``problem`` from its records alone (:func:`tuned_selection`,
    :func:`one_shot_selection`): what a study read back from its records holds, one call per problem, contender
    and study."""
    tuned = tuned_selection(roles, problem, contender, search)
    return {"tuned": tuned, "one-shot": one_shot_selection(roles, problem, contender, tuned)}


def call_runs(plan: Plan) -> int:
    """Runs one contender's first pass makes in one study: every configuration on the selection and the report
    seeds (what a compiled program's calls are sized for)."""
    return plan.configurations * (len(plan.seeds) + len(plan.confirm_seeds))


def _columns(names: Sequence[str], *configs: Mapping[str, float]) -> dict[str, np.ndarray]:
    return {n: np.array([float(cfg[n]) for cfg in configs], np.float64) for n in names}


def _drop_test(r: Records) -> Records:
    """A selection record as the protocol keeps it: the test split never read (NaN)."""
    return dataclasses.replace(r, test=np.full_like(np.asarray(r.test, np.float64), np.nan))


def first_pass(prog: CompiledGroup, index: int, studies: Sequence[Plan]) -> list[Records]:
    """Step 1 of the module's docstring for contender ``prog.contenders[index]``: every configuration of its
    search on the selection and the report seeds of every study of ``studies``, in the same calls; per study
    its selection records, then its report records."""
    p, c = prog.problem, prog.contenders[index]
    requests: list[tuple[Any, Sequence[int] | np.ndarray, str]] = []
    for sub in studies:
        cfg = configurations(p, c, sub)
        requests += [(cfg, sub.seeds, "selection"), (cfg, sub.confirm_seeds, "report")]
    return prog.run_many(index, requests, test=TEST_SPLIT)


def tune(
    prog: CompiledGroup,
    index: int,
    studies: Sequence[Plan],
    first: Sequence[Records] | None = None,
    tick: Callable[[str, float], None] | None = None,
) -> list[Tuned]:
    """Tune contender ``prog.contenders[index]`` on ``prog.problem`` in every study of ``studies`` (the plan of
    each: its seeds), as the module's docstring says; one :class:`Tuned` per study, in order. ``first``: what
    :func:`first_pass` returned, when the orchestration ran it already (it times those runs alone)."""
    p, c = prog.problem, prog.contenders[index]
    names = prog.tuned[c.name]
    n = len(studies)
    out = list(first) if first is not None else first_pass(prog, index, studies)
    sel_recs = [_drop_test(out[2 * k]) for k in range(n)]
    rep_recs = [out[2 * k + 1] for k in range(n)]
    search = studies[0].search

    def chosen(k: int) -> Selection:
        return tuned_selection({"selection": sel_recs[k], "report": rep_recs[k]}, p, c, search)

    sels = [chosen(k) for k in range(n)]
    extend = studies[0].extend if search == "grid" else 0  # a random search is not extended
    for _ in range(extend):
        edge = [(k, side) for k in range(n) if (side := sels[k].on_edge) is not None]
        if not edge:
            break
        requests: list[tuple[Any, Sequence[int] | np.ndarray, str]] = []
        for k, side in edge:
            shifted = {"learning_rate": shift_grid(sel_recs[k].lrs, side)}
            requests += [
                (shifted, studies[k].seeds, "selection"),
                (shifted, studies[k].confirm_seeds, "report"),
            ]
        more = prog.run_many(index, requests, test=TEST_SPLIT)
        for m, (k, _) in enumerate(edge):
            sel_recs[k] = combine(sel_recs[k], _drop_test(more[2 * m]))
            rep_recs[k] = combine(rep_recs[k], more[2 * m + 1])
            sels[k] = chosen(k)
    defaults: list[Records | None] = [None] * n
    missing = [k for k in range(n) if default_row(rep_recs[k], c) is None]
    if missing:  # a search without the default configuration: its report runs, made once
        runs = prog.run_many(
            index,
            [(_columns(names, c.defaults), studies[k].confirm_seeds, "default") for k in missing],
            test=TEST_SPLIT,
        )
        for k, r in zip(missing, runs, strict=True):
            defaults[k] = r
    tuned = []
    for k in range(n):
        records = {"selection": sel_recs[k], "report": rep_recs[k]}
        default = defaults[k]
        if default is not None:
            records["default"] = default
        kept = {role: dataclasses.replace(r, study=k) for role, r in records.items()}
        tuned.append(Tuned(kept, sels[k], one_shot_selection(kept, p, c, sels[k])))
        if tick is not None:
            tick(f"{p.name}: {c.name}" + (f" (study {k + 1})" if k else ""), 1)
    return tuned


def check_batching(
    prog: CompiledGroup,
    group: Sequence[Contender],
    chosen: Mapping[str, Mapping[str, Selection]],
    records: Mapping[str, Mapping[str, Records]],
    plan: Plan,
    tick: Callable[[str, float], None] | None = None,
) -> dict[str, float]:
    """The batching check of study 0 (``plan.check_batching``: ``"best"``, the contender with the best selection
    score; ``"all"``; ``"none"``): each checked contender's chosen configuration (``chosen[name]["tuned"]``) run in
    every slot of ``prog``, on the selection seeds, and the largest relative difference of its final validation
    metric from its selection run (``records[name]["selection"]``) at that configuration: ``{contender:
    difference}`` (0.0: the result does not depend on the other runs batched with it)."""
    if plan.check_batching == "none":
        return {}
    p = prog.problem
    targets = (
        list(group)
        if plan.check_batching == "all"
        else [min(group, key=lambda c: float(np.min(p.direction.orient(chosen[c.name]["tuned"].scores))))]
    )
    out: dict[str, float] = {}
    for c in targets:
        i, sel = list(group).index(c), chosen[c.name]["tuned"]
        width = max(1, prog.capacity // len(plan.seeds))  # the chosen configuration in every slot
        alone = prog.run(i, _columns(prog.tuned[c.name], *[sel.config] * width), plan.seeds, test=False)
        out[c.name] = _rel_diff(alone.val[0, :, -1], records[c.name]["selection"].val[sel.index, :, -1])
        if tick is not None:
            tick(f"{p.name}: {c.name} (batching check)", 1)
    return out


def _rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_bad = ~np.isfinite(a) & ~np.isfinite(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    d = np.where(both_bad | (a == b), 0.0, d)
    return float(np.nanmax(np.where(np.isfinite(d), d, 1.0))) if d.size else 0.0
