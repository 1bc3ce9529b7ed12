"""Selection on validation, reporting on test: :func:`select` chooses one contender's configuration on one problem
from the validation split of its selection runs and reports the chosen configuration's runs on fresh seeds, as a
:class:`Selection` (what every table, claim and figure reads). Also the two modes a study reports
(:data:`MODES`), the median and quartiles over seeds (:func:`quartiles`) and the steps by which a majority of the
seeds reached the target (:func:`time_to_target`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .direction import LOWER, Direction
from .floats import decode, encode
from .records import Records
from .stats.distributions import ci_halfwidth

if TYPE_CHECKING:  # pragma: no cover
    from .problems.base import Problem

__all__ = [
    "LEVEL",
    "MODES",
    "Selection",
    "quartiles",
    "select",
    "time_to_target",
]

#: The two modes a study reports, in the order the report shows them: ``"tuned"`` (each contender's configuration
#: chosen among those its search tried) and ``"one-shot"`` (its default configuration).
MODES = ("tuned", "one-shot")


#: Confidence level of the reported intervals.
LEVEL = 0.95


def time_to_target(steps_to_target: Sequence[float] | np.ndarray) -> float:
    """Steps by which a majority of the seeds reached the target: the ``(floor(n/2) + 1)``-th smallest of the
    ``n`` seeds' steps to target (the median for an odd ``n``, the upper median for an even one), ``inf`` when
    no more than half of them reached it. AlgoPerf asks a majority of its studies to reach a target; half (5 of
    10) does not count."""
    s = np.sort(np.asarray(steps_to_target, np.float64).ravel())
    if len(s) == 0:
        return math.inf
    v = s[len(s) // 2]
    return float(v) if np.isfinite(v) else math.inf


def quartiles(
    values: Sequence[float] | np.ndarray, direction: Direction = LOWER
) -> tuple[float, float, float]:
    """``(q1, median, q3)`` of one contender's values over its seeds, in the metric's raw units, a non-finite
    value (a diverged seed) counting as the *worst* value (``+inf`` where lower is better, ``-inf`` where
    higher is). ``q1 <= median <= q3`` (raw order); quantiles by linear interpolation between order statistics
    (``numpy.quantile``'s default), an interpolation that touches an infinite value being that value. DeepOBS
    and the Crowded Valley report median and quartiles: one seed far off moves them by one order statistic.
    NaN for no values."""
    v = direction.orient(values)
    v = np.sort(np.where(np.isfinite(v), v, np.inf).ravel())
    if len(v) == 0:
        return (math.nan, math.nan, math.nan)
    out = []
    for q in (0.25, 0.5, 0.75):
        h = (len(v) - 1) * q
        lo, frac = int(math.floor(h)), h - math.floor(h)
        a, b = v[lo], v[min(lo + 1, len(v) - 1)]
        if frac == 0:
            x = a
        elif not (math.isfinite(a) and math.isfinite(b)):
            x = math.inf
        else:
            x = a + frac * (b - a)
        out.append(float(direction.orient(x)))
    lo_, med, hi_ = out
    q1, q3 = sorted((lo_, hi_))  # the raw order (the oriented ends swap where higher is better)
    return (q1, med, q3)


@dataclasses.dataclass
class Selection:
    """What the protocol reports for one contender on one problem, in one mode (see :func:`select`).

    Attributes:
      contender, problem: names.
      mode: ``"tuned"`` (chosen among several configurations) or ``"one-shot"`` (the default configuration).
      lrs: the learning rates of the configurations tried; ``index``: the chosen one's index; ``lr``: its rate;
        ``config``: the chosen configuration (every tuned hyperparameter, ``"learning_rate"`` included).
      scores: ``(G,)`` the selection score of each configuration: mean over the selection seeds of the final
        validation metric (raw units), the worst value (``+inf`` where lower is better, ``-inf`` where higher
        is) where a seed diverged.
      val_final: ``(S,)`` final validation metric per selection seed at the chosen configuration;
        ``val_mean``, ``val_ci``: their mean and confidence half-width.
      report_seeds: the seeds the reported numbers come from: the confirmation seeds (fresh, never used to
        choose) when the study ran confirmation runs, else the selection seeds.
      test: ``(R,)`` final test metric per reported seed (the reported result; a diverged seed is the worst
        value, ``+inf`` where lower is better, ``-inf`` where higher is); ``test_mean``, ``test_ci``: their mean
        and confidence half-width (``level``; the mean is that infinite value when a seed diverged: see
        :attr:`finite_mean` and :attr:`test_quartiles` for what the other seeds did).
      best_val: ``(R,)`` best validation metric (lowest, or highest where higher is better) over each reported
        run; ``best_val_mean``.
      steps_to_target: ``(R,)`` first evaluation step reaching the target in each reported run (``inf``: never).
      time_to_target: :func:`time_to_target` of those (a majority of the seeds); ``reached``: how many reported
        seeds reached the target.
      fastest_steps: ``(S,)`` per selection seed (per seed of ``records`` in :func:`select`), the fewest steps
        any configuration tried needed to reach the target (``inf``: none did): each seed's fastest trial.
      fastest_time: :func:`time_to_target` of ``fastest_steps`` (``inf`` unless a majority of the seeds had a
        configuration reaching the target): AlgoPerf's time to target under external tuning, which the
        performance profile reads (:func:`profile_times`). It reads the *selection* runs, not the report seeds.
      ms_per_step: the selection runs' :attr:`Records.ms_per_step` (timed with nothing else running).
      on_edge: ``"low"``/``"high"`` when the chosen rate is the grid's smallest/largest (``G > 1``), else None
        (a random search: when it is the lowest/highest rate among the trials).
      edges: a random search's edge flags, ``{hyperparameter: "low" | "high"}`` for each chosen value that is the
        lowest/highest of its hyperparameter among the trials (:func:`mxopt_jax.compare.search.edges`); empty
        for the grid (``on_edge`` says it).
      diverged: how many selection runs diverged; ``diverged_chosen``: how many reported seeds diverged.
      seeds: the number of reported seeds ``R``; ``steps``: training steps per run; ``level``: the interval's
        level.
      metric_name, target: the problem's (for tables).
      direction: the problem's :class:`~mxopt_jax.compare.direction.Direction` (saved as its word, ``"better"``:
        ``"lower"`` or ``"higher"``); ``margin``: its practical
        margin in the metric's units (two contenders are shown to differ only by more than it; 0: none).
      report_grid: ``(G, R)`` the final test metric of *every* configuration tried (in :attr:`lrs`' order) on the
        report seeds (a diverged seed the worst value), what the claims about the optimizers compare against
        (:func:`mxopt_jax.compare.stats.compare_searches`); ``None`` when the study did not run them (the
        one-shot mode, or a study saved before they were run), and then only the chosen configurations are
        compared.
    """

    contender: str
    problem: str
    mode: str
    lrs: np.ndarray
    index: int
    lr: float
    scores: np.ndarray
    val_final: np.ndarray
    val_mean: float
    val_ci: float
    test: np.ndarray
    test_mean: float
    test_ci: float
    best_val: np.ndarray
    best_val_mean: float
    steps_to_target: np.ndarray
    time_to_target: float
    reached: int
    ms_per_step: float
    on_edge: str | None
    diverged: int
    diverged_chosen: int
    seeds: int
    steps: int
    level: float = LEVEL
    metric_name: str = ""
    target: float = math.nan
    config: dict[str, float] = dataclasses.field(default_factory=dict)
    report_seeds: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    fastest_steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.float64))
    fastest_time: float = math.inf
    edges: dict[str, str] = dataclasses.field(default_factory=dict)
    direction: Direction = LOWER
    margin: float = 0.0
    report_grid: np.ndarray | None = None

    _ARRAYS = ("lrs", "scores", "val_final", "test", "best_val", "steps_to_target", "fastest_steps")

    @property
    def finite(self) -> int:
        """How many report seeds stayed finite (``seeds - diverged_chosen`` when the records flagged every
        diverged run)."""
        return int(np.isfinite(np.asarray(self.test, np.float64)).sum())

    @property
    def finite_mean(self) -> float:
        """Mean test value over the report seeds that stayed finite (NaN when none did)."""
        v = np.asarray(self.test, np.float64)
        v = v[np.isfinite(v)]
        return float(v.mean()) if len(v) else math.nan

    @property
    def finite_ci(self) -> float:
        """The ``level`` Student-t half-width of :attr:`finite_mean` (NaN below two finite seeds)."""
        v = np.asarray(self.test, np.float64)
        return ci_halfwidth(v[np.isfinite(v)], self.level)

    @property
    def test_quartiles(self) -> tuple[float, float, float]:
        """``(q1, median, q3)`` of the test values over every report seed, a diverged seed counting as the
        worst value (:func:`quartiles`)."""
        return quartiles(self.test, self.direction)

    @property
    def test_low(self) -> float:
        """Lower end of the test metric's interval (the mean when there is no interval)."""
        return self.test_mean - (0.0 if math.isnan(self.test_ci) else self.test_ci)

    @property
    def test_high(self) -> float:
        """Upper end of the test metric's interval (the mean when there is no interval)."""
        return self.test_mean + (0.0 if math.isnan(self.test_ci) else self.test_ci)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as lists; NaN as ``None``, infinities as ``"inf"``/``"-inf"``; the direction as its
        word (``"better"``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name in self._ARRAYS:
                v = [encode(float(x)) for x in np.asarray(v, np.float64).ravel().tolist()]
            elif f.name == "report_seeds":
                v = [int(x) for x in np.asarray(v).ravel()]
            elif f.name == "config":
                v = {k: encode(float(x)) for k, x in v.items()}
            elif f.name == "report_grid":
                v = None if v is None else encode(np.asarray(v, np.float64).tolist())
            elif f.name == "direction":  # saved as its word, as the problem says it
                out["better"] = v.word
                continue
            elif isinstance(v, float):
                v = encode(float(v))
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Selection:
        names = {f.name for f in dataclasses.fields(cls)} - {"direction"}
        kw = {k: v for k, v in d.items() if k in names}
        if "better" in d:
            kw["direction"] = Direction(d["better"])
        for f in dataclasses.fields(cls):
            if f.name not in kw:
                continue
            if f.name in cls._ARRAYS:
                kw[f.name] = np.array([decode(x) for x in kw[f.name]], np.float64)
            elif f.name == "report_seeds":
                kw[f.name] = np.asarray(kw[f.name], np.int64)
            elif f.name == "config":
                kw[f.name] = {k: decode(x) for k, x in kw[f.name].items()}
            elif f.name == "report_grid":
                kw[f.name] = None if kw[f.name] is None else np.array(decode(kw[f.name]), np.float64)
            elif f.type in ("float", float) or f.name in ("target", "level", "lr", "fastest_time", "margin"):
                kw[f.name] = decode(kw[f.name])
        return cls(**kw)


def _choose(val_final: np.ndarray) -> tuple[int, np.ndarray]:
    """The chosen grid index from the ``(G, S)`` final validation metric alone (oriented: lower is better,
    ``Direction.orient``), and the ``(G,)`` oriented scores.

    Score = mean over seeds, ``inf`` where a seed is not finite. Lowest score wins; among equal scores, the
    lower index (on a grid sorted by rate: the smaller rate; in a random search: the earlier trial). If every
    configuration has a diverged seed, the one with the fewest diverged seeds wins, then the lowest mean over
    its finite seeds.
    """
    finite = np.isfinite(val_final)
    n_bad = (~finite).sum(axis=1)
    scores = np.where(n_bad == 0, np.where(finite, val_final, 0.0).mean(axis=1), np.inf)
    if np.isfinite(scores).any():
        return int(np.argmin(scores)), scores
    with np.errstate(invalid="ignore"):
        partial = np.where(
            n_bad < val_final.shape[1],
            np.where(finite, val_final, 0.0).sum(axis=1) / np.maximum(finite.sum(axis=1), 1),
            np.inf,
        )
    order = np.lexsort((np.arange(len(scores)), partial, n_bad))
    return int(order[0]), scores


def select(
    records: Records,
    problem: Problem | None = None,
    level: float = LEVEL,
    confirmation: Records | None = None,
    report: Records | None = None,
) -> Selection:
    """Apply the protocol to one contender's ``records`` on ``problem``.

    The configuration is chosen from the validation split of ``records`` alone (:func:`_choose` sees only
    ``records.val``): the best mean over seeds of the final validation metric (lowest, or highest where
    ``problem.better`` is ``"higher"``: ``Direction.orient``), a diverged seed counting as the worst value. The reported numbers (test metric, best validation value, steps to target) then come from
    ``confirmation``, the chosen configuration re-run on fresh seeds, when given (the study always gives it),
    else from ``records`` at the chosen configuration. With one configuration (``G = 1``: the default one, the
    one-shot mode) nothing is chosen and there is no edge flag.

    A run counts as diverged when :attr:`Records.diverged_at` says so *or* any of its training losses or
    validation metrics is not finite (a NaN anywhere in a run; for the reported runs, a test metric too): a
    diverged selection run scores the worst value, a diverged reported run's test value is the worst value
    (``+inf`` where lower is better, ``-inf`` where higher is): it loses that seed in every paired comparison,
    and the other seeds still count. Selection never reads the test split, not even to tell divergence.

    The time to target of the performance profile (:attr:`Selection.fastest_time`) reads every configuration of
    ``records``: per seed the fewest steps any of them needed to reach the target, then the steps by which a
    majority of the seeds got there (:func:`time_to_target`).

    ``report``: every configuration of ``records`` (the same ones, in the same order) run on the report seeds
    (the study runs them); the chosen one's row is then the confirmation (``confirmation`` must not be given
    too), and every row's final test value goes into :attr:`Selection.report_grid`, what the claims about the
    optimizers compare against.
    """
    if report is not None:
        if confirmation is not None:
            raise ValueError("select: give the report runs or the confirmation runs, not both")
        same = (
            report.val.shape[0] == records.val.shape[0]
            and (report.contender, report.problem) == (records.contender, records.problem)
            and np.allclose(report.lrs, records.lrs, rtol=1e-9, atol=0)
            and set(report.hparams) == set(records.hparams)
            and all(
                np.allclose(report.hparams[k], records.hparams[k], rtol=1e-9, atol=0) for k in records.hparams
            )
        )
        if not same:
            raise ValueError(
                f"report runs of {report.contender}/{report.problem} must hold the selection's configurations "
                "in the same order"
            )
    direction: Direction = problem.direction if problem is not None else LOWER
    val = np.asarray(records.val, np.float64)
    if val.ndim != 3:
        raise ValueError(f"records.val must be (G, S, E), got shape {val.shape}")
    G, S, _ = val.shape
    # diverged: whatever the metric says; selection reads no test value, not even to tell divergence
    val_final = np.where(_diverged(records, ("train_loss", "val")), np.nan, val[:, :, -1])
    index, scores = _choose(direction.orient(val_final))
    scores = direction.orient(scores)
    on_edge: str | None = None
    if G > 1 and index == 0:
        on_edge = "low"
    elif G > 1 and index == G - 1:
        on_edge = "high"
    config = records.config(index)
    if report is not None:
        confirmation = dataclasses.replace(report.take(index), role="confirmation")
    if confirmation is not None:
        if confirmation.val.shape[0] != 1 or (confirmation.contender, confirmation.problem) != (
            records.contender,
            records.problem,
        ):
            raise ValueError("confirmation must be one configuration of the same contender and problem")
        chosen, rep_row = confirmation, 0
        if not np.isclose(confirmation.lrs[0], config["learning_rate"], rtol=1e-6):
            raise ValueError(
                f"confirmation runs at learning rate {confirmation.lrs[0]:g}, but the chosen one is "
                f"{config['learning_rate']:g}"
            )
    else:
        chosen, rep_row = records, index
    rep_val = np.asarray(chosen.val, np.float64)[rep_row]
    with np.errstate(invalid="ignore"):
        best = direction.best(rep_val, axis=1)
    stt = np.asarray(chosen.steps_to_target, np.float64)[rep_row]
    rep_diverged = _diverged(chosen)[rep_row]
    # reporting: the test split of the reported runs only
    test = np.asarray(chosen.test, np.float64)[rep_row, :, -1]
    test = np.where(rep_diverged | ~np.isfinite(test), direction.worst, test)
    fastest = np.asarray(records.steps_to_target, np.float64).min(axis=0)  # each seed's fastest trial
    grid: np.ndarray | None = None
    if report is not None:  # every configuration's final test value on the report seeds
        final = np.asarray(report.test, np.float64)[:, :, -1]
        grid = np.where(_diverged(report) | ~np.isfinite(final), direction.worst, final)
    return Selection(
        contender=records.contender,
        problem=records.problem,
        mode="tuned" if G > 1 else "one-shot",
        lrs=np.asarray(records.lrs, np.float64).copy(),
        index=index,
        lr=float(records.lrs[index]),
        scores=scores,
        val_final=val_final[index].copy(),
        val_mean=_mean(val_final[index], direction.worst),
        val_ci=ci_halfwidth(val_final[index], level),
        test=test.copy(),
        test_mean=_mean(test, direction.worst),
        test_ci=ci_halfwidth(test, level),
        best_val=best,
        best_val_mean=_mean(best, direction.worst),
        steps_to_target=stt.copy(),
        time_to_target=time_to_target(stt),
        reached=int(np.isfinite(stt).sum()),
        ms_per_step=float(records.ms_per_step),
        on_edge=on_edge,
        diverged=int(_diverged(records, ("train_loss", "val")).sum()),
        diverged_chosen=int(rep_diverged.sum()),
        seeds=len(test),
        steps=records.steps,
        level=level,
        metric_name=getattr(problem, "metric_name", ""),
        target=float(getattr(problem, "target", math.nan)),
        config=config,
        report_seeds=np.asarray(chosen.seeds, np.int64).copy(),
        fastest_steps=fastest,
        fastest_time=time_to_target(fastest),
        direction=direction,
        margin=float(getattr(problem, "margin", 0.0)),
        report_grid=grid,
    )


def _diverged(records: Records, fields: Sequence[str] = ("train_loss", "val", "test")) -> np.ndarray:
    """``(G, S)``: whether each run diverged: :attr:`Records.diverged` or a non-finite value anywhere in its
    ``fields`` (training loss, validation metric; the test metric at the final point, the one always
    evaluated in a reported run; selection leaves the test metric out)."""
    bad = np.asarray(records.diverged, bool).copy()
    for name in fields:
        values = np.asarray(getattr(records, name), np.float64)
        if (
            name == "test"
        ):  # evaluated where a record needs it, at least at the end (NaN elsewhere is no sign)
            values = values[..., -1:]
        bad |= ~np.all(np.isfinite(values), axis=-1)
    return bad


def _mean(v: np.ndarray, worst: float = math.inf) -> float:
    """Mean, the ``worst`` value (:attr:`Direction.worst <mxopt_jax.compare.direction.Direction.worst>`) when
    a value is not finite (a diverged seed)."""
    v = np.asarray(v, np.float64)
    return float(v.mean()) if np.all(np.isfinite(v)) else worst
