"""Tuning one contender on one problem: the protocol's selection, extension and report runs, every independent
study of the plan at once (:func:`tune`). The orchestration (:mod:`mxopt_jax.compare.study`) calls it once per
contender of a compiled program and stores what it returns; nothing else selects.

For each study of the plan (its own seeds):

1. **every configuration, both seed sets, in the same calls**: the configurations of the search
   (:func:`mxopt_jax.compare.search.configurations`: the learning-rate grid around the default rate, or the
   random search's trials, the first of them the defaults) run on the selection seeds *and* on the report seeds
   (fresh, disjoint from the selection seeds). Nothing of the report runs is read to choose; they are what the
   tables report (the chosen configuration's row) and what the claims about the optimizers compare against
   (every row: a contender is shown better than another only when it beats it at every configuration the other
   tried, :func:`mxopt_jax.compare.stats.compare_searches`). The test split is evaluated at the end of the runs
   only, and a selection run's test value is dropped (NaN): selection never reads it;
2. **selection** (:func:`mxopt_jax.compare.protocol.select`, validation of the selection seeds only); where the
   chosen rate is on the grid's edge (grid search), the grid shifted past that edge runs the same way (both seed
   sets) and the choice is made again on the union, up to ``plan.extend`` times;
3. the chosen configuration's report runs are the tuned mode's; the default configuration's (the grid's centre,
   the random search's first trial) are the one-shot mode's: no run is made twice.

Every study's runs of a contender go through the same calls (:meth:`~mxopt_jax.compare.engine.CompiledGroup.
run_many` packs them into the program's slots).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import protocol
from . import search as _search
from .records import Records

if TYPE_CHECKING:  # pragma: no cover
    from .contenders import Contender
    from .engine import CompiledGroup
    from .plan import Plan
    from .problems.base import Problem

__all__ = ["TEST_SPLIT", "Tuned", "call_runs", "configurations", "default_row", "first_pass", "tune"]

#: Where the study's calls evaluate the test split (:meth:`~mxopt_jax.compare.engine.CompiledGroup.run_many`'s
#: ``test``): every record that reads it reads the final value.
TEST_SPLIT: Any = True


@dataclasses.dataclass(frozen=True)
class Tuned:
    """One contender tuned on one problem in one study.

    Attributes:
      records: ``{"selection": ..., "report": ...}``: every configuration tried (the grid with its extensions,
        or the trials), sorted as the selection is, on the selection seeds and on the report seeds; and
        ``"default"`` when the default configuration is not one of them (a contender whose search leaves it
        out), run on the report seeds.
      selection: the tuned mode's :class:`~mxopt_jax.compare.protocol.Selection` (chosen on the selection
        runs' validation metric, reported on the chosen row of the report runs, every row's final test value
        in :attr:`~mxopt_jax.compare.protocol.Selection.report_grid`).
    """

    records: dict[str, Records]
    selection: protocol.Selection


def configurations(problem: Problem, contender: Contender, plan: Plan) -> dict[str, np.ndarray]:
    """The configurations ``contender``'s search tries on ``problem`` under ``plan`` (before any extension):
    ``{hyperparameter: (G,) values}``, ``G`` = :attr:`Plan.configurations <mxopt_jax.compare.plan.Plan.
    configurations>`."""
    return _search.configurations(
        contender, plan.preset, plan.search, plan.trials, plan.search_seed, sparse=bool(problem.tables)
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
    sels = [protocol.select(sel_recs[k], p, report=rep_recs[k]) for k in range(n)]
    extend = studies[0].extend if studies[0].search == "grid" else 0  # a random search is not extended
    for _ in range(extend):
        edge = [(k, side) for k in range(n) if (side := sels[k].on_edge) is not None]
        if not edge:
            break
        requests: list[tuple[Any, Sequence[int] | np.ndarray, str]] = []
        for k, side in edge:
            shifted = {"learning_rate": protocol.shift_grid(sel_recs[k].lrs, side)}
            requests += [
                (shifted, studies[k].seeds, "selection"),
                (shifted, studies[k].confirm_seeds, "report"),
            ]
        more = prog.run_many(index, requests, test=TEST_SPLIT)
        for m, (k, _) in enumerate(edge):
            sel_recs[k] = protocol.combine(sel_recs[k], _drop_test(more[2 * m]))
            rep_recs[k] = protocol.combine(rep_recs[k], more[2 * m + 1])
            sels[k] = protocol.select(sel_recs[k], p, report=rep_recs[k])
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
        tuned.append(Tuned({role: dataclasses.replace(r, study=k) for role, r in records.items()}, sels[k]))
        if tick is not None:
            tick(f"{p.name}: {c.name}" + (f" (study {k + 1})" if k else ""), 1)
    return tuned
