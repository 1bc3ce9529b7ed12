"""Running the tour: every contender on every task through the study's engine (:mod:`mxopt_jax.compare.engine`).

Each task is a :class:`~mxopt_jax.compare.problems.base.Problem` (:func:`mxopt_jax.compare.tour.tasks.problem`)
and each optimizer the study's contender (:func:`mxopt_jax.compare.contenders.mxopt_contender`: MXNet's defaults
but for the learning rate). :func:`run` compiles one program per task and optimizer family
(:func:`~mxopt_jax.compare.engine.compile_group`), then runs each contender of the family in it at its rate and
the seed: the rate is an input of the program, so another rate (``learning_rates``) or seed runs without
compiling. The programs are kept for the process (the last :data:`KEPT_PROGRAMS`), so running the tour again
with other rates or seeds, or a family again, compiles nothing. Each run comes back as the engine's
:class:`~mxopt_jax.compare.records.Records`, read through :class:`~mxopt_jax.compare.tour.results.Result`;
its time per step is the records' (:attr:`Records.ms_per_step`: the run without compilation, as the study
reports it).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence

import jax

from ... import OPTIMIZERS
from ..contenders import group_by_family, mxopt_contender
from ..engine import CompiledGroup, compile_group
from .results import Result, fmt_loss
from .tasks import DEFAULT_OPTIMIZERS, TASKS, learning_rate, problem

__all__ = ["KEPT_PROGRAMS", "run"]

#: How many compiled programs (task x group of contenders x steps) the process keeps for another run.
KEPT_PROGRAMS = 64
_programs: dict[tuple[str, tuple[str, ...], int], CompiledGroup] = {}


def _program(task: str, family: str, members: tuple[str, ...], steps: int) -> tuple[CompiledGroup, bool]:
    """The compiled program of ``members`` on ``task`` for ``steps`` steps (one run per call, on one device),
    and whether it was compiled now (else it was kept from an earlier run)."""
    key = (task, members, steps)
    if key in _programs:
        return _programs[key], False
    prog = compile_group(
        problem(task),
        [mxopt_contender(n) for n in members],
        1,
        steps=steps,
        devices=jax.devices()[:1],
        name=f"{task}/{family}",
    )
    _programs[key] = prog
    while len(_programs) > KEPT_PROGRAMS:
        del _programs[next(iter(_programs))]
    return prog, True


def _names(given: Sequence[str], known: Sequence[str], what: str) -> list[str]:
    names = [given] if isinstance(given, str) else list(given)
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise ValueError(
            f"{what}: unknown {', '.join(map(repr, unknown)) or '(none given)'}; known: {', '.join(known)}"
        )
    return list(dict.fromkeys(names))


def run(
    contenders: Sequence[str] = DEFAULT_OPTIMIZERS,
    tasks: Sequence[str] = TASKS,
    steps: int = 300,
    seed: int = 0,
    progress: Callable[[str, float], None] | None = None,
    learning_rates: Mapping[str, float] | None = None,
) -> dict[str, list[Result]]:
    """Run every contender (names of ``mxopt_jax.OPTIMIZERS``) on every task; returns ``{task: [Result, ...]}``,
    tasks and contenders in the order given.

    ``learning_rates`` (``{contender: rate}``, the command line's ``--lr``) overrides the tuned rate of those
    contenders on every task; the others keep :func:`~mxopt_jax.compare.tour.tasks.learning_rate`. ``seed``
    sets the MLP's initialization and SGLD's noise. ``progress`` (``(label, fraction_done)``, e.g.
    :class:`mxopt_jax.compare.progress.StudyProgress`) is called once per program.
    """
    names = _names(contenders, list(OPTIMIZERS), "contenders")
    tasks = _names(tasks, TASKS, "tasks")
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r}")
    overrides = dict(learning_rates or {})
    for name, lr in overrides.items():
        if name not in names:
            raise ValueError(f"learning_rates: {name!r} is not among the contenders {names}")
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"learning_rates: the rate of {name!r} must be a finite number > 0, got {lr!r}")
    groups = group_by_family(names)
    results: dict[str, list[Result]] = {t: [] for t in tasks}
    done, total = 0, len(tasks) * len(groups)
    for task in tasks:
        for family, members in groups:
            prog, compiled = _program(task, family, tuple(members), int(steps))
            runs = [
                Result(prog.run(i, {"learning_rate": [overrides.get(n) or learning_rate(task, n)]}, [seed]))
                for i, n in enumerate(members)
            ]
            results[task] += runs
            done += 1
            if progress is not None:
                how = f"compiled in {prog.compile_s:.1f} s" if compiled else "compiled before"
                finals = ", ".join(f"{r.name} {fmt_loss(r.final_loss)}" for r in runs)
                progress(f"{prog.name} ({how}): {finals}", done / total)
    order = {n: i for i, n in enumerate(names)}
    return {t: sorted(rs, key=lambda r: order[r.name]) for t, rs in results.items()}
