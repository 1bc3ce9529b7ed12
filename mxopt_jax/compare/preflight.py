"""Before the first compile: every contender traced on every problem, so a contender that cannot run is named
within seconds instead of failing a compile after other programs have run.

:func:`trace_all` traces (``jax.eval_shape``: nothing is compiled or computed) one whole training run of each
(problem, contender) pair: the problem's ``init``, ``loss`` and ``metric``, the contender's factory at traced
hyperparameters, ``init`` and ``update`` of its transform, exactly as the engine's program would
(:func:`mxopt_jax.compare.engine.train_run`). A factory that branches in Python on a traced value (an optax
schedule that checks its peak, say) fails here. The study refuses up front, listing every failure
(:class:`TraceFailure`), since tracing is cheap and a study without that contender is a different study.
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .contenders import Contender
from .engine import Schedule, train_run
from .problems.base import Problem

__all__ = ["PreflightError", "TraceFailure", "abstract_data", "check_direction", "trace_all"]


@dataclasses.dataclass(frozen=True)
class TraceFailure:
    """A (problem, contender) pair that could not be traced: ``error`` is ``"Type: message"``, ``where`` the
    innermost frame outside JAX and optax (``file:line in function``), when there is one."""

    problem: str
    contender: str | None  # None: the problem itself failed (its data, init, loss or metric)
    error: str
    where: str = ""

    def __str__(self) -> str:
        who = f"{self.contender} on {self.problem}" if self.contender else f"problem {self.problem}"
        return f"{who}: {self.error}" + (f" (at {self.where})" if self.where else "")


class PreflightError(ValueError):
    """Contenders (or problems) that cannot be traced; ``failures`` lists them (:class:`TraceFailure`)."""

    def __init__(self, failures: Sequence[TraceFailure]) -> None:
        self.failures = list(failures)
        contenders = list(dict.fromkeys(f.contender for f in self.failures if f.contender))
        problems = list(dict.fromkeys(f.problem for f in self.failures if f.contender is None))
        what = []
        if contenders:
            what.append(f"contender(s) {', '.join(contenders)}")
        if problems:
            what.append(f"problem(s) {', '.join(problems)}")
        lines = [
            f"study: {' and '.join(what)} cannot be traced (checked before compiling anything; nothing ran). "
            "A factory, loss or metric must not branch in Python on traced values (the learning rate arrives "
            "as a traced scalar). Fix or drop them:"
        ]
        lines += [f"  {f}" for f in self.failures]
        super().__init__("\n".join(lines))


def abstract_data(problem: Problem, data: Any = None) -> Any:
    """The shapes and dtypes of ``problem``'s splits as the engine places them (``jnp.asarray``)."""
    splits = tuple(problem.data() if data is None else data)

    def spec(a: Any) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(np.shape(a), jnp.asarray(np.asarray(a).ravel()[:1]).dtype)

    return jax.tree.map(spec, splits)


_LIBRARIES = ("/jax/", "/jaxlib/", "/optax/", "/chex/", "/flax/", "/haiku/", "/mxopt_jax/", "/contextlib")


def _where(e: BaseException) -> str:
    """The innermost frame outside JAX, optax and mxopt_jax (the user's code) of ``e``'s traceback, or of its
    causes' (an error re-raised with the contender's name keeps the user's frame in its cause)."""
    chain: list[BaseException] = []
    cause: BaseException | None = e
    while cause is not None and cause not in chain:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for exc in reversed(chain):  # innermost first
        tb = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in tb if not any(s in f.filename for s in _LIBRARIES)]
        if frames:
            f = frames[-1]
            return f"{f.filename}:{f.lineno} in {f.name}"
    return ""


def _failure(problem: str, contender: str | None, e: BaseException) -> TraceFailure:
    message = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return TraceFailure(problem, contender, f"{type(e).__name__}: {message}".rstrip(": "), _where(e))


def trace_all(
    problems: Sequence[Problem],
    contenders: Sequence[Contender] | Mapping[str, Sequence[Contender]],
    steps: Callable[[Problem], int],
    tuned: Sequence[str] | Callable[[Problem, Contender], Sequence[str]] = ("learning_rate",),
    schedule: Schedule | None = None,
    data: Mapping[str, Any] | None = None,
    tick: Callable[[str], None] | None = None,
) -> list[TraceFailure]:
    """Trace a training run of every contender on every problem; returns the failures (empty: all fine).

    ``contenders`` is one list for every problem or ``{problem name: contenders}``; ``steps(problem)`` the
    run's budget; ``tuned`` the hyperparameters traced as inputs (the others at their defaults, as in the
    engine), or ``(problem, contender) -> names``; ``schedule`` the study's learning-rate schedule hook; ``data`` the problems' splits where already loaded (``{name: Splits}``); ``tick(label)`` is
    called after each problem.
    """
    failures: list[TraceFailure] = []
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    for p in problems:
        cs = contenders.get(p.name, ()) if isinstance(contenders, Mapping) else contenders
        if not cs:
            continue
        try:
            spec = abstract_data(p, (data or {}).get(p.name))
        except Exception as e:  # noqa: BLE001 - a user's data() may raise anything: report it
            failures.append(_failure(p.name, None, e))
            continue
        n = steps(p)
        for c in cs:
            traced = tuned(p, c) if callable(tuned) else tuned
            names = [h.name for h in c.hyperparameters if h.name in traced]
            hp = {name: jax.ShapeDtypeStruct((), jnp.float32) for name in names}

            def run(hp: Any, key: Any, data: Any, p: Problem = p, c: Contender = c, n: int = n) -> Any:
                return train_run(p, c, hp, key, data, n, schedule)

            try:
                jax.eval_shape(run, hp, key, spec)
            except Exception as e:  # noqa: BLE001 - a user's factory may raise anything: report it
                failures.append(_failure(p.name, c.name, e))
        if tick is not None:
            tick(p.name)
    # a problem whose own functions fail, fails with every contender: say it once, as the problem's
    out: list[TraceFailure] = []
    for p in problems:
        mine = [f for f in failures if f.problem == p.name]
        cs = contenders.get(p.name, ()) if isinstance(contenders, Mapping) else contenders
        if len(cs) > 1 and len(mine) == len(cs) and len({f.error for f in mine}) == 1:
            out.append(dataclasses.replace(mine[0], contender=None))
        else:
            out += mine
    return out


def check_direction(problem: Problem, target: float | None = None, data: Any = None, seed: int = 0) -> float:
    """The validation metric of ``problem``'s *untrained* model; refuses a problem whose untrained model already
    meets its target: the direction (``Problem.better``) or the target is wrong.

    The model is initialized as a run of seed ``seed`` is (``init_key`` of ``split(PRNGKey(seed), 3)``, as
    :func:`mxopt_jax.compare.engine.train_run`; a problem with model state starts from ``init_state``) and its
    metric evaluated once on the validation split (eagerly:
    nothing is compiled for the study). An error rate where higher is said to be better, or an accuracy where
    lower is, or a target a random model reaches, would rank every contender backwards or count every run as
    having reached the target from step 0.

    Args:
      problem: the problem.
      target: the validation target to check (the preset's, ``Problem.target_for``); default ``problem.target``.
      data: the problem's splits where already loaded; default ``problem.data()``.
      seed: the seed whose initialization is evaluated.

    Returns:
      The untrained model's validation metric.

    Raises:
      ValueError: the untrained model meets the target (``metric <= target`` where lower is better, ``>=``
        where higher is), naming the problem, the metric, its value, the target and the direction; or its
        metric is not a finite number.
    """
    target = float(problem.target if target is None else target)
    splits = tuple(problem.data() if data is None else data)
    init_key = jax.random.split(jax.random.PRNGKey(int(seed)), 3)[0]
    params, model_state = problem.init(init_key), problem.initial_state(init_key)
    value = float(np.asarray(problem.evaluate(params, model_state, jax.tree.map(jnp.asarray, splits[1]))))
    relation = problem.direction.symbol
    if not np.isfinite(value):
        raise ValueError(
            f"problem {problem.name!r}: the untrained model's validation {problem.metric_name} is {value!r}, "
            "not a finite number; the metric must return a finite value for a model that has not diverged"
        )
    if problem.direction.meets(value, target):
        raise ValueError(
            f"problem {problem.name!r}: the untrained model's validation {problem.metric_name} is {value:.6g}, "
            f"which already meets the target ({relation} {target:g}, {problem.better} is better): the direction "
            f"(better={problem.better!r}) or the target is wrong. An accuracy is better higher "
            "(better='higher'), an error rate or a loss lower."
        )
    return value
