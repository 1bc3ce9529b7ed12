"""The study's tuning protocol: grids, presets, selection on validation, reporting on test, ranks, profiles.

Everything here reads :class:`~mxopt_jax.compare.records.Records` (plain NumPy arrays) and needs no JAX, so a
saved study can be re-analysed anywhere; the statistics come from :mod:`mxopt_jax.compare.stats`. The rules, in
short (:func:`mxopt_jax.compare.report.text.describe` prints them in full with the results):

* **direction**: a problem says whether its metric is better lower or higher (``Problem.better``); the one
  place that turns it into arithmetic is ``Direction.orient`` (``sign * value``, lower-is-better), which selection,
  ranks, quartiles and the statistics read; records and tables keep the raw values;
* **grid**: per contender a log-spaced learning-rate grid around its default rate (:data:`PRESETS`);
* **selection** (:func:`select`): the rate with the best mean over seeds of the *final validation* metric;
  a seed that diverged (NaN/inf) counts as the worst value, so a rate where any seed diverged is never chosen
  over one where none did. Selection reads the validation split only;
* **reporting**: the chosen rate re-run on fresh seeds; the *test* metric per seed: its mean and the half-width
  of the 95 % Student-t interval of the mean (:func:`~mxopt_jax.compare.stats.ci_halfwidth`), the median and
  quartiles (a diverged seed counting as the worst value), how many report seeds diverged, the best
  validation value over the run, steps to target (a majority of the seeds), ms/step, whether the chosen rate
  sits on the grid's edge;
* **claims** (:func:`compare_table`, :func:`rank`): :func:`mxopt_jax.compare.stats.compare` on the reported test
  values, paired by seed: the exact signed-rank test of every pair of a table's entries, Holm's correction over
  the table's pairs, level 5 %, rounding twins never separated, the problem's practical margin; a table prints
  the compact letter display and the simultaneous rank sets, nothing the tests did not show; identical
  contenders are folded into one entry first; :func:`rank_uncertainty`: the mean rank over problems with its
  bootstrap interval over problems and P(best), the tests' decisions kept;
* **across studies**: :mod:`mxopt_jax.compare.analysis.across` reads a table over independent repetitions of
  the whole tuning, from the selections made here: the claims about the optimizers come from the exact
  sign-flip (signed-rank) test over the studies' effects, the study as the unit;
* **performance profile** (:func:`profile_times`, :func:`profile_scores`): AlgoPerf's, on the steps the
  fastest trial needs to reach each problem's validation target (:attr:`Selection.fastest_time`), read from the
  *selection* runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import stats
from .direction import Direction
from .floats import decode, encode
from .records import Records, canonical
from .stats import ci_halfwidth

if TYPE_CHECKING:  # pragma: no cover
    from .problems.base import Problem

__all__ = [
    "BOOTSTRAP_REPLICATES",
    "BOOTSTRAP_SEED",
    "CONFIRM_OFFSET",
    "FAMILIES",
    "LEVEL",
    "MIN_PROBLEMS",
    "PRESETS",
    "ROUNDING_RTOL",
    "TAU_MAX",
    "TEST",
    "TEST_LEVEL",
    "Preset",
    "Selection",
    "TableComparison",
    "combine",
    "compare_table",
    "fold",
    "log_grid",
    "midpoint_ranks",
    "paired_values",
    "report_family",
    "profile_scores",
    "profile_times",
    "quartiles",
    "rank",
    "rank_uncertainty",
    "ranking_omitted",
    "search_table",
    "searchable",
    "select",
    "shift_grid",
    "time_to_target",
]

#: Confidence level of the reported intervals.
LEVEL = 0.95
#: Level of the paired tests behind the ranks (Holm-corrected over a table's pairs).
TEST_LEVEL = 0.05
#: The paired test of the tables (:data:`mxopt_jax.compare.stats.TESTS`): Wilcoxon's signed-rank test, exact.
TEST = stats.TEST
#: Rounding twins (:data:`mxopt_jax.compare.stats.ROUNDING_RTOL`): never separated by a table's tests.
ROUNDING_RTOL = stats.ROUNDING_RTOL
#: Bootstrap replicates of the mean rank (:func:`rank_uncertainty`) and the seed they are drawn from.
BOOTSTRAP_REPLICATES = 1000
BOOTSTRAP_SEED = 0
#: Largest ratio to the fastest contender a performance profile looks at (AlgoPerf's ``tau_max``).
TAU_MAX = 4.0

Edge = Literal["low", "high"]


# --------------------------------------------------------------------------- presets and grids
#: Confirmation seeds start here: seeds ``CONFIRM_OFFSET, CONFIRM_OFFSET + 1, ...`` never meet the
#: selection seeds ``0, 1, ...`` (and stay the same when the number of selection seeds changes).
CONFIRM_OFFSET = 1000


@dataclasses.dataclass(frozen=True)
class Preset:
    """How much of the protocol a study runs.

    Attributes:
      name: ``"quick"`` or ``"full"``.
      grid_points: learning rates per contender (a log grid centred on the contender's default rate).
      seeds: selection seeds per configuration (the runs that choose).
      confirm_seeds: fresh seeds the chosen configuration (and, for the one-shot mode, the default one) is
        re-run on; the reported test results come from these runs only.
      spacing: decades between neighbouring rates (0.5: half a decade, a factor of about 3.16).
      quick: whether runs use the problem's ``quick_steps`` (else its ``steps``).
      description: one line for the printed protocol.
    """

    name: str
    grid_points: int
    seeds: int
    confirm_seeds: int = 10
    spacing: float = 0.5
    quick: bool = False
    description: str = ""

    def steps(self, problem: Problem) -> int:
        """Training steps of one run of ``problem`` under this preset."""
        if self.quick and problem.quick_steps is not None:
            return int(problem.quick_steps)
        return int(problem.steps)

    def grid(self, center: float) -> np.ndarray:
        """``grid_points`` rates ``spacing`` decades apart, centred (geometrically) on ``center``.

        The centre is at index ``grid_points // 2`` (with an even number of points the extra point goes
        below it). The quick grid (7 points) is the middle of the full one (11 points): both share the
        spacing, so their rates coincide.
        """
        if not (center > 0 and math.isfinite(center)):
            raise ValueError(f"grid centre must be a positive number, got {center!r}")
        below = self.grid_points // 2
        offsets = (np.arange(self.grid_points) - below) * self.spacing
        return canonical(float(center) * 10.0**offsets)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: dict[str, Preset] = {
    # 16 confirmation seeds: the exact signed-rank test's smallest p-value, 2 / 2^16 = 3.1e-5, is below Holm's
    # first threshold for every pair of all 26 contenders (5 % / 325 = 1.5e-4), so a table of them can show a
    # difference (10 seeds separate at most 7 entries); a 2-standard-deviation difference in a 23-entry table is
    # found 96 % of the time (0 % on 10 seeds, 71 % on 14), measured by simulation
    "quick": Preset(
        "quick",
        grid_points=7,
        seeds=5,
        confirm_seeds=16,
        spacing=0.5,
        quick=True,
        description="7 rates half a decade apart (3 decades), 5 selection seeds, 16 confirmation seeds, each "
        "problem's quick step budget",
    ),
    "full": Preset(
        "full",
        grid_points=11,
        seeds=10,
        confirm_seeds=20,
        spacing=0.5,
        quick=False,
        description="11 rates half a decade apart (5 decades), 10 selection seeds, 20 confirmation seeds, each "
        "problem's full step budget",
    ),
}


def log_grid(low: float, high: float, points: int) -> np.ndarray:
    """``points`` log-spaced rates from ``low`` to ``high``, both included."""
    if not (0 < low <= high) or not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"need 0 < low <= high, got {low!r}, {high!r}")
    if points < 1:
        raise ValueError(f"points must be >= 1, got {points!r}")
    if points == 1:
        return np.array([float(low)])
    return np.geomspace(float(low), float(high), int(points))


def shift_grid(lrs: Sequence[float] | np.ndarray, direction: Edge | str | int) -> np.ndarray:
    """The grid ``lrs`` moved by ``len(lrs) - 1`` points up or down, with the same (log) spacing.

    ``direction`` is ``"high"``/``"up"``/``+1`` or ``"low"``/``"down"``/``-1`` (a :attr:`Selection.on_edge`
    value can be passed as is). The new grid starts where the old one ended: its first point (up) or last
    point (down) is the old edge rate, so the two grids join into one of ``2 * len - 1`` rates
    (:func:`combine`). Same length, so the orchestration re-runs it with the program it has already compiled
    (rates are traced inputs).
    """
    lrs = np.asarray(lrs, np.float64)
    if lrs.ndim != 1 or len(lrs) < 2:
        raise ValueError(f"need a grid of at least 2 rates, got {lrs!r}")
    if direction in ("high", "up", 1):
        sign = 1
    elif direction in ("low", "down", -1):
        sign = -1
    else:
        raise ValueError(f"direction must be 'high'/'up'/+1 or 'low'/'down'/-1, got {direction!r}")
    logs = np.log10(lrs)
    step = (logs[-1] - logs[0]) / (len(lrs) - 1)
    out = 10.0 ** (logs + sign * step * (len(lrs) - 1))
    if sign > 0:  # the shared rate exactly (so the runs of both grids line up in combine())
        out[0] = lrs[-1]
    else:
        out[-1] = lrs[0]
    return out


def combine(a: Records, b: Records) -> Records:
    """One :class:`Records` from two grids of the same contender, problem, seeds and steps (e.g. a grid and
    its :func:`shift_grid`), sorted by rate. A rate present in both (equal within a relative 1e-9) is kept
    once, from ``a``.

    ``run_s`` is the sum, scaled to the runs kept, so :attr:`Records.ms_per_step` stays the per-run average;
    ``compile_s`` is ``a``'s (the shifted grid reuses the compiled program).
    """
    if (a.contender, a.problem, a.role) != (b.contender, b.problem, b.role):
        raise ValueError(
            f"cannot combine {a.contender}/{a.problem} ({a.role}) with {b.contender}/{b.problem} ({b.role})"
        )
    if not (np.array_equal(a.seeds, b.seeds) and np.array_equal(a.eval_steps, b.eval_steps)):
        raise ValueError("cannot combine records with different seeds or evaluation steps")
    if a.hparams or b.hparams:
        raise ValueError(
            "combine() joins learning-rate grids; records with other tuned hyperparameters do not join"
        )
    a_lrs, b_lrs = np.asarray(a.lrs, np.float64), np.asarray(b.lrs, np.float64)
    keep_b = ~np.isclose(b_lrs[:, None], a_lrs[None, :], rtol=1e-9, atol=0).any(axis=1)
    lrs = np.concatenate([a.lrs, np.asarray(b.lrs)[keep_b]])
    order = np.argsort(lrs, kind="stable")

    def cat(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.concatenate([np.asarray(x), np.asarray(y)[keep_b]], axis=0)[order]

    total = len(a.lrs) + len(b.lrs)
    run_s = (a.run_s + b.run_s) * len(lrs) / total
    return dataclasses.replace(
        a,
        lrs=lrs[order],
        train_loss=cat(a.train_loss, b.train_loss),
        val=cat(a.val, b.val),
        test=cat(a.test, b.test),
        steps_to_target=cat(a.steps_to_target, b.steps_to_target),
        diverged_at=cat(np.asarray(a.diverged_at), np.asarray(b.diverged_at)),
        trace=None if a.trace is None or b.trace is None else cat(a.trace, b.trace),
        run_s=run_s,
    )


# --------------------------------------------------------------------------- selection
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


def quartiles(values: Sequence[float] | np.ndarray, better: str = "lower") -> tuple[float, float, float]:
    """``(q1, median, q3)`` of one contender's values over its seeds, in the metric's raw units, a non-finite
    value (a diverged seed) counting as the *worst* value (``+inf`` where lower is better, ``-inf`` where
    higher is). ``q1 <= median <= q3`` (raw order); quantiles by linear interpolation between order statistics
    (``numpy.quantile``'s default), an interpolation that touches an infinite value being that value. DeepOBS
    and the Crowded Valley report median and quartiles: one seed far off moves them by one order statistic.
    NaN for no values."""
    direction = Direction(better)
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
    return (lo_, med, hi_) if direction.sign > 0 else (hi_, med, lo_)


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
      better: the problem's direction, ``"lower"`` or ``"higher"`` (``Direction.orient``); ``margin``: its practical
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
    better: str = "lower"
    margin: float = 0.0
    report_grid: np.ndarray | None = None

    _ARRAYS = ("lrs", "scores", "val_final", "test", "best_val", "steps_to_target", "fastest_steps")

    @property
    def direction(self) -> Direction:
        """The problem's direction (:class:`~mxopt_jax.compare.direction.Direction`), from :attr:`better`."""
        return Direction(self.better)

    @property
    def sign(self) -> float:
        """1.0 where lower is better, -1.0 where higher is (:attr:`direction`'s)."""
        return self.direction.sign

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
        return quartiles(self.test, self.better)

    @property
    def test_low(self) -> float:
        """Lower end of the test metric's interval (the mean when there is no interval)."""
        return self.test_mean - (0.0 if math.isnan(self.test_ci) else self.test_ci)

    @property
    def test_high(self) -> float:
        """Upper end of the test metric's interval (the mean when there is no interval)."""
        return self.test_mean + (0.0 if math.isnan(self.test_ci) else self.test_ci)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: arrays as lists; NaN as ``None``, infinities as ``"inf"``/``"-inf"``."""
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
            elif isinstance(v, float):
                v = encode(float(v))
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Selection:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
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
    better = str(getattr(problem, "better", "lower"))
    direction = Direction(better)
    sign = direction.sign
    val = np.asarray(records.val, np.float64)
    if val.ndim != 3:
        raise ValueError(f"records.val must be (G, S, E), got shape {val.shape}")
    G, S, _ = val.shape
    # diverged: whatever the metric says; selection reads no test value, not even to tell divergence
    val_final = np.where(_diverged(records, ("train_loss", "val")), np.nan, val[:, :, -1])
    index, scores = _choose(sign * val_final)
    scores = sign * scores
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
        best = sign * np.where(np.isfinite(rep_val), sign * rep_val, np.inf).min(axis=1)
    stt = np.asarray(chosen.steps_to_target, np.float64)[rep_row]
    rep_diverged = _diverged(chosen)[rep_row]
    # reporting: the test split of the reported runs only
    test = np.asarray(chosen.test, np.float64)[rep_row, :, -1]
    test = np.where(rep_diverged | ~np.isfinite(test), sign * np.inf, test)
    fastest = np.asarray(records.steps_to_target, np.float64).min(axis=0)  # each seed's fastest trial
    grid: np.ndarray | None = None
    if report is not None:  # every configuration's final test value on the report seeds
        final = np.asarray(report.test, np.float64)[:, :, -1]
        grid = np.where(_diverged(report) | ~np.isfinite(final), sign * np.inf, final)
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
        better=better,
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


# --------------------------------------------------------------------------- ranks
def fold(
    selections: Sequence[Selection], identical: Mapping[str, Sequence[str]] | None = None
) -> tuple[list[Selection], dict[str, str]]:
    """A table's entries: ``selections`` without the contenders that ``identical`` (``{representative:
    [others]}``) lists as identical to a present one; and ``{contender: its entry}`` (a folded contender maps
    to its representative, every other one to itself)."""
    present = {s.contender for s in selections}
    entry = {s.contender: s.contender for s in selections}
    for rep, others in (identical or {}).items():
        if rep in present:
            for o in others:
                if o in present and o != rep:
                    entry[o] = rep
    return [s for s in selections if entry[s.contender] == s.contender], entry


def _seed_list(seeds: np.ndarray) -> str:
    listing = ", ".join(str(int(x)) for x in seeds[:8])
    return f"[{listing}{', ...' if len(seeds) > 8 else ''}]"


def paired_values(selections: Sequence[Selection]) -> tuple[np.ndarray, np.ndarray]:
    """The reported test values of one table's ``selections``, paired by seed: ``(values, seeds)``.

    ``values`` is ``(C, R)``: row ``i`` is ``selections[i].test`` ordered by its report seeds, in the metric's
    raw units, ``seeds`` the ``R`` seeds in that (ascending) order. A non-finite value (a diverged run) becomes
    the worst value: ``+inf`` where lower is better, ``-inf`` where higher is (:attr:`Selection.better`).

    Raises
    ------
    ValueError
        no selections; selections of more than one table (problem and mode); a contender twice; a selection
        whose test values and report seeds differ in number or whose seeds repeat; contenders that report
        different seeds (the paired comparison needs the same seeds for every contender); fewer than 2 seeds.
    """
    sels = list(selections)
    if not sels:
        raise ValueError("paired_values: no selections")
    tables = sorted({(s.problem, s.mode) for s in sels})
    if len(tables) > 1:
        raise ValueError(f"ranks compare the contenders of one table (one problem, one mode), got {tables}")
    names = [s.contender for s in sels]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"a table lists each contender once, got {dup} more than once")
    ref: np.ndarray | None = None
    ref_name = ""
    rows = []
    for s in sels:
        seeds = np.asarray(s.report_seeds, np.int64).ravel()
        test = np.asarray(s.test, np.float64).ravel()
        where = f"{s.contender} on {s.problem} ({s.mode})"
        if len(seeds) != len(test):
            raise ValueError(
                f"{where}: {len(test)} test values but {len(seeds)} report seeds; ranks pair contenders by seed, "
                "so each test value needs its seed (Selection.report_seeds)"
            )
        if len(set(seeds.tolist())) != len(seeds):
            raise ValueError(f"{where}: report seeds repeat {_seed_list(seeds)}")
        order = np.argsort(seeds, kind="stable")
        if ref is None:
            ref, ref_name = seeds[order], s.contender
        elif not np.array_equal(seeds[order], ref):
            raise ValueError(
                f"ranks compare contenders paired by seed, so every contender of a table must report the same "
                f"seeds: {ref_name} reports {_seed_list(ref)}, {s.contender} reports {_seed_list(seeds[order])} "
                f"({s.problem}, {s.mode})"
            )
        rows.append(np.where(np.isfinite(test[order]), test[order], s.sign * np.inf))
    assert ref is not None
    if len(ref) < 2:
        raise ValueError(
            f"ranks need at least 2 report seeds (a paired test per pair of contenders), got {len(ref)} "
            f"({tables[0][0]}, {tables[0][1]})"
        )
    return np.stack(rows), ref


@dataclasses.dataclass(frozen=True)
class TableComparison:
    """What one table's tests showed (:func:`compare_table`), by contender: a contender folded into another
    (identical runs) shares its representative's results.

    Attributes:
      problem, mode: the table.
      entries: the table's entries (the representatives), in the selections' order.
      comparison: :class:`mxopt_jax.compare.stats.Comparison` over ``entries`` (its arrays in that order).
      entry: ``{contender: its entry}`` for every contender of the table.
      seeds: report seeds per contender; ``better``: the metric's direction; ``margin``: the practical margin.
      divergence: :func:`mxopt_jax.compare.stats.compare_divergence` over ``entries``: the seeds each diverged on
        and which diverge on fewer seeds than which (its own Holm family), or None (no entry diverged).
      searches: the claims about the optimizers under their searches (:func:`search_table`,
        :func:`mxopt_jax.compare.stats.compare_searches`: an entry is shown better than another when it beats it
        at every configuration the other's search tried), its ``comparison`` the one above; ``None`` when the
        table compares the chosen (or default) configurations only (:func:`compare_table`).
    """

    problem: str
    mode: str
    entries: tuple[str, ...]
    comparison: stats.Comparison
    entry: dict[str, str]
    seeds: int
    better: str = "lower"
    margin: float = 0.0
    divergence: stats.DivergenceComparison | None = None
    searches: stats.SearchComparison | None = None

    @property
    def about(self) -> str:
        """What the table's claims speak of: ``"optimizers"`` (under their searches and budget,
        :func:`search_table`), ``"configurations"`` (the tuned mode's chosen configurations) or ``"defaults"``
        (the one-shot mode's default configurations)."""
        if self.searches is not None:
            return "optimizers"
        return "defaults" if self.mode == "one-shot" else "configurations"

    def power_note(self) -> str:
        """What this table's seeds can show at its size, in a sentence ('' when nothing to say): the seeds the
        exact signed-rank test needs to show any difference among the entries (:func:`mxopt_jax.compare.stats.
        min_seeds`), and, per entry that diverged on some seeds, the seeds it would need to be shown better than
        an entry that did not (a diverged seed is the largest difference against it)."""
        c = self.comparison
        if c.test != "wilcoxon" or c.pairs == 0:
            return ""
        family = c.family or c.pairs
        parts = []
        need = stats.min_seeds(family, c.level)
        if need > self.seeds:
            parts.append(
                f"{self.seeds} seeds cannot show any difference among {len(self.entries)} entries "
                f"({family} tests corrected together need at least {need} seeds)"
            )
        elif self.divergence is not None:
            for k, name in enumerate(self.entries):
                n = int(self.divergence.diverged[k])
                if 0 < n < self.seeds:
                    m = stats.min_seeds(family, c.level, diverged=n)
                    if m > self.seeds:
                        parts.append(
                            f"{name} diverged on {n} of {self.seeds} seeds: it cannot be shown better than an entry "
                            f"that did not diverge there (the diverged seeds count as its worst values; {m} seeds "
                            "would be needed)"
                        )
        return "; ".join(parts) + ("." if parts else "")

    def divergence_claims(self) -> list[tuple[str, str, float]]:
        """Every ``(diverges less, diverges more, adjusted p)`` the divergence comparison makes."""
        d = self.divergence
        if d is None:
            return []
        return [
            (self.entries[i], self.entries[j], float(d.p_adjusted[i, j]))
            for i in range(len(self.entries))
            for j in range(len(self.entries))
            if d.fewer[i, j]
        ]

    def _k(self, name: str) -> int:
        return self.entries.index(self.entry[name])

    def rank(self, name: str) -> int:
        """``1 +`` the number of entries shown better than ``name``: the low end of its rank set."""
        return int(self.comparison.rank_low[self._k(name)])

    def rank_high(self, name: str) -> int:
        """The number of entries minus the number shown worse than ``name``: the high end of its rank set."""
        return int(self.comparison.rank_high[self._k(name)])

    def rank_set(self, name: str) -> str:
        """``"2"`` or ``"1-3"``: the simultaneous rank set, as the tables print it."""
        lo, hi = self.rank(name), self.rank_high(name)
        return str(lo) if lo == hi else f"{lo}-{hi}"

    def midpoint(self, name: str) -> float:
        """The middle of the rank set, ``(low + high) / 2``: what the overall mean rank averages."""
        return 0.5 * (self.rank(name) + self.rank_high(name))

    def letters(self, name: str) -> str:
        """The compact letter display's letters of ``name`` (two entries share one exactly when not shown to
        differ)."""
        return self.comparison.letters[self._k(name)]

    def shown_better(self, a: str, b: str) -> bool:
        """Whether ``a``'s entry was shown better than ``b``'s by a test Holm's correction kept."""
        return bool(self.comparison.better[self._k(a), self._k(b)])

    @property
    def order(self) -> list[str]:
        """The entries in display order (rank set, then the median, then the selections' order)."""
        return [self.entries[k] for k in self.comparison.order]

    @property
    def pairs(self) -> int:
        """Holm's family: the pairs of entries."""
        return self.comparison.pairs

    def claims(self) -> list[tuple[str, str, float]]:
        """Every ``(better, worse, adjusted p)`` the table makes, one per rejected test."""
        b, p = self.comparison.better, self.comparison.p_adjusted
        return [
            (self.entries[i], self.entries[j], float(p[i, j]))
            for i in range(len(self.entries))
            for j in range(len(self.entries))
            if b[i, j]
        ]


def _one(selections: Sequence[Selection], attr: str) -> Any:
    values = {getattr(s, attr) for s in selections}
    if len(values) > 1:
        raise ValueError(
            f"the contenders of one table must share the problem's {attr}, got {sorted(map(str, values))}"
        )
    return values.pop()


def compare_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    rtol: float = ROUNDING_RTOL,
) -> TableComparison:
    """The tests of one table and what it may claim: :func:`mxopt_jax.compare.stats.compare` on the reported
    test values of ``selections``, paired by seed (:func:`paired_values`), oriented by the problem's direction
    (``Direction.orient``) and tested with its practical margin (:attr:`Selection.margin`).

    Contenders that ``identical`` (``{representative: [others]}``) lists as identical to a present one are
    folded into it *before* testing (a duplicate would count twice in the family and in the others' rank sets)
    and share its results. The rule (:func:`mxopt_jax.compare.stats.compare`, in full there): rounding twins
    (within ``rtol`` relative on every seed) are never separated; every other pair of entries is tested by
    ``test`` (the exact signed-rank test by default; two-sided); the ``E (E - 1) / 2`` p-values of the table's
    ``E`` entries are corrected together by Holm's method at ``level``; a diverged seed is the worst value on
    its seed. The table prints the letters (shared exactly when not shown to differ) and the simultaneous rank
    sets ``[1 + #shown better, E - #shown worse]``.

    Raises
    ------
    ValueError
        as :func:`paired_values`; contenders that disagree on the direction or the margin; ``test``, ``level``
        or ``rtol`` as :func:`mxopt_jax.compare.stats.compare`.
    """
    sels = list(selections)
    values, seeds = paired_values(sels)  # every contender, folded ones included, must pair
    better = str(_one(sels, "better"))
    margin = float(_one(sels, "margin"))
    shown, entry = fold(sels, identical)
    keep = [i for i, s in enumerate(sels) if entry[s.contender] == s.contender]
    oriented = Direction(better).orient(values[keep])
    comparison = stats.compare(oriented, level, test, margin, rtol)
    diverged = ~np.isfinite(oriented)
    return TableComparison(
        problem=sels[0].problem,
        mode=sels[0].mode,
        entries=tuple(s.contender for s in shown),
        comparison=comparison,
        entry=entry,
        seeds=len(seeds),
        better=better,
        margin=margin,
        divergence=stats.compare_divergence(oriented, level) if diverged.any() else None,
    )


def searchable(selections: Sequence[Selection]) -> bool:
    """Whether a table's ``selections`` can be compared under their searches (:func:`search_table`): tuned, and
    every one ran every configuration of its search on the report seeds (:attr:`Selection.report_grid`)."""
    sels = list(selections)
    return bool(sels) and all(s.mode == "tuned" and s.report_grid is not None for s in sels)


def search_table(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
    rtol: float = ROUNDING_RTOL,
) -> TableComparison:
    """The claims about the optimizers of one tuned table, under their searches and budget: an entry is shown
    better than another when, at its chosen configuration, it beats the other at *every* configuration the
    other's search tried (:func:`mxopt_jax.compare.stats.compare_searches`: each a one-sided exact signed-rank
    test on the report seeds, paired by seed, the pair's p-value the largest; Holm over the table's pairs;
    rounding twins never separated; the problem's practical margin). Whichever configuration the other's tuning
    would have picked, it would have lost: the claim needs no model of the tuning's luck. Identical contenders
    are folded first, as in :func:`compare_table`; the divergence comparison is :func:`compare_table`'s (the
    chosen configurations').

    Raises
    ------
    ValueError
        a selection without :attr:`Selection.report_grid` (:func:`searchable`); as :func:`compare_table`.
    """
    sels = list(selections)
    if not searchable(sels):
        raise ValueError(
            "search_table needs tuned selections that ran every configuration on the report seeds "
            "(Selection.report_grid)"
        )
    base = compare_table(sels, identical, level, test, rtol)
    keep = [s for s in sels if base.entry[s.contender] == s.contender]
    values, seeds = paired_values(keep)
    direction = Direction(base.better)
    grids = []
    for s, row in zip(keep, values, strict=True):
        order = np.argsort(np.asarray(s.report_seeds, np.int64), kind="stable")
        grid = np.asarray(s.report_grid, np.float64)[:, order]
        grids.append(direction.orient(np.where(np.isfinite(grid), grid, s.sign * np.inf)))
        if not np.array_equal(direction.orient(row), grids[-1][s.index], equal_nan=True):
            raise ValueError(
                f"{s.contender} on {s.problem}: its report runs' chosen row is not its reported test values"
            )
    searches = stats.compare_searches(direction.orient(values), grids, level, test, base.margin, rtol)
    return dataclasses.replace(base, comparison=searches.comparison, searches=searches)


#: How a report controls its error rate: ``"table"`` (the default: each table one Holm family, as the tables
#: have always been read; the chance of some false claim in a report of ``T`` tables is then up to
#: ``1 - (1 - level)^T``) or ``"report"`` (every pair of every table one family: at most ``level`` for the whole
#: report, at the price of power).
FAMILIES = ("table", "report")


def report_family(
    tables: Sequence[TableComparison], family: str = "table", level: float | None = None
) -> list[TableComparison]:
    """``tables`` as the report reads them under ``family`` (:data:`FAMILIES`): unchanged for ``"table"``; for
    ``"report"`` every pair of every table corrected together by Holm's method
    (:func:`mxopt_jax.compare.stats.holm_family`), so that the chance of any false claim in the whole report is
    at most ``level`` (default: the tables' level). A report-wide claim is always a per-table claim too.

    Raises
    ------
    ValueError
        ``family`` not in :data:`FAMILIES`.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    out = list(tables)
    if family == "table" or not out:
        return out
    joint = stats.holm_family([t.comparison for t in out], level)
    return [
        dataclasses.replace(
            t, comparison=c, searches=None if t.searches is None else t.searches._replace(comparison=c)
        )
        for t, c in zip(out, joint, strict=True)
    ]


def rank(
    selections: Sequence[Selection],
    identical: Mapping[str, Sequence[str]] | None = None,
    level: float = TEST_LEVEL,
    test: str = TEST,
) -> list[int]:
    """Ranks of one table's ``selections`` (same order): ``1 +`` the number of the table's entries shown better
    (:func:`compare_table`; :func:`mxopt_jax.compare.stats.ranks`), the low end of each one's simultaneous
    rank set. A rank stands for tested claims only: rank 3 means two entries were each shown better by a test
    Holm's correction kept; it implies nothing about the entries it was not compared with (ranks 1 and 2 need
    not differ). Folded contenders share their representative's rank. This is ``summary.csv``'s ``rank``; the
    tables print the whole rank set and the letters.

    Raises
    ------
    ValueError
        as :func:`compare_table`.
    """
    sels = list(selections)
    if not sels:
        return []
    table = compare_table(sels, identical, level, test)
    return [table.rank(s.contender) for s in sels]


def rank_uncertainty(
    by_problem: Mapping[str, Sequence[Selection]],
    identical_by_problem: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
    names: Sequence[str] | None = None,
    n_boot: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
    level: float = LEVEL,
    test_level: float = TEST_LEVEL,
    test: str = TEST,
) -> stats.BootstrapRanks:
    """The mean rank over problems of each of ``names``, its bootstrap interval over problems and P(best).

    Per problem (``by_problem[problem]``: one table's selections), :func:`compare_table` (identical contenders
    folded by ``identical_by_problem[problem]``, ``test`` at ``test_level``) gives each contender's simultaneous
    rank set, and its rank there is the set's middle, ``(low + high) / 2`` (:meth:`TableComparison.midpoint`:
    1 for an entry shown better than every other, ``(1 + E) / 2`` for one shown neither better nor worse than
    any); a folded contender takes its representative's. The mean rank is the mean over the problems a
    contender ran on.

    Bootstrap (:func:`mxopt_jax.compare.stats.bootstrap_problems`): the tests are run once, on the data; a
    replicate draws the problems with replacement (``numpy.random.default_rng(seed)``) and averages the ranks
    over them. The interval (``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles) and ``p_first`` (the share
    of replicates with the lowest mean rank, ties split) therefore show how the ranking depends on which
    problems were run, and claim no difference a table's tests did not show. (Resampling seeds and re-running
    the tests, as before, re-tests duplicated seeds as if independent: 16-18 % of null pairs separated at 10-20
    seeds, 53 % at 2.)

    Returns
    -------
    mxopt_jax.compare.stats.BootstrapRanks
        in ``names``' order (default: every contender met, in order).

    Raises
    ------
    ValueError
        as :func:`compare_table`; ``names`` with a contender that ran on no problem is allowed (NaN rank).
    """
    per = {p: list(s) for p, s in by_problem.items() if len(s)}
    if not per:
        raise ValueError("rank_uncertainty: no selections")
    if names is None:
        names = list(dict.fromkeys(s.contender for sels in per.values() for s in sels))
    names = tuple(names)
    tables = [
        compare_table(sels, (identical_by_problem or {}).get(p), test_level, test) for p, sels in per.items()
    ]
    ranks = midpoint_ranks(tables, names)
    if np.isnan(ranks).all():
        raise ValueError("rank_uncertainty: none of names ran on any problem")
    return stats.bootstrap_problems(ranks, names, n_boot, seed, level)


#: The fewest problems whose overall ranking gets its bootstrap interval and P(best) (:func:`ranking_omitted`):
#: the percentile bootstrap over ``P`` problems covers a contender's mean rank over problems at 95 % nominal in
#: only 49-83 % of draws with 2 problems, 86-87 % at 5, 89-92 % at 8 and at least 90 % from 9 on (four shapes of
#: per-problem ranks, ``tests/app/test_error_rates.py``).
MIN_PROBLEMS = 9


def ranking_omitted(problems: int, family: str = "table", level: float = TEST_LEVEL) -> str:
    """Why the overall ranking's interval and P(best) are left out, in a sentence, or ``''`` when they are
    shown: they need at least :data:`MIN_PROBLEMS` problems (fewer cannot support a bootstrap over problems:
    with 2, the interval is the two ranks and P(best) splits ties) *and* the report's claims corrected as one
    family (``family == "report"``, :func:`report_family`): the ranking reads every table's claims at once,
    and with a family per table some table of 9 holds a false claim in about 30 % of studies where no
    contender differs, enough to give someone P(best) >= 0.5 in a quarter of them.

    Raises
    ------
    ValueError
        ``family`` not in :data:`FAMILIES`; ``problems`` negative.
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    if isinstance(problems, bool) or int(problems) != problems or problems < 0:
        raise ValueError(f"problems must be an integer >= 0, got {problems!r}")
    if problems < MIN_PROBLEMS:
        return (
            f"The interval and P(best) are omitted: {problems} problem(s) cannot support a bootstrap over problems "
            f"(it needs at least {MIN_PROBLEMS}: with 2 problems its {100 * LEVEL:g} % interval covers the mean "
            "rank in as few as half of the draws, with 5 to 8 in 86 to 92 % of them)."
        )
    if family != "report":
        return (
            "The interval and P(best) are omitted: the ranking reads every table's claims at once, and with "
            f"Holm's correction per table ({100 * level:g} % for each table) some table of {problems} holds a false "
            "claim far more often than that; run with `--family report` (all tables one family) to get them."
        )
    return ""


def midpoint_ranks(tables: Sequence[TableComparison], names: Sequence[str]) -> np.ndarray:
    """``(P, C)``: ``names[c]``'s rank on table ``p``, the middle of its rank set
    (:meth:`TableComparison.midpoint`; a folded contender its representative's), NaN where it is not in the
    table: what the mean rank over problems averages and the bootstrap over problems resamples."""
    ranks = np.full((len(tables), len(names)), np.nan)
    for k, table in enumerate(tables):
        for c, n in enumerate(names):
            if n in table.entry:
                ranks[k, c] = table.midpoint(n)
    return ranks


# --------------------------------------------------------------------------- time to target, profiles
def profile_times(by_problem: Mapping[str, Sequence[Selection]]) -> dict[str, dict[str, float]]:
    """``{problem: {contender: time}}``: each contender's time to target on each problem, for the performance
    profile: :attr:`Selection.fastest_time`, AlgoPerf's time under external tuning.

    AlgoPerf tunes with 5 studies of 5 trials (hyperparameter settings) each; a study's time is that of its
    fastest trial reaching the validation target, and the workload's time is the median over the studies
    (infinite when a study has no such trial). Here a study is a selection seed: its trials are the
    configurations tried (the grid and its extensions) on that seed, its time the fewest steps any of them
    needed; the time is the steps by which a majority of the seeds got there (:func:`time_to_target`: the
    median for an odd count, the upper median for an even one), ``inf`` unless more than half of the seeds had
    a configuration reaching the target. It reads the *selection* runs (every configuration tried), not the
    report seeds the tables' test values come from. Time is counted in steps (the tables show steps x ms/step
    next to it): every contender of a problem does the same model work per step. Problems with no selection are
    left out.
    """
    return {
        p: {s.contender: float(s.fastest_time) for s in sels} for p, sels in by_problem.items() if len(sels)
    }


def profile_scores(
    by_problem: Mapping[str, Sequence[Selection]], tau_max: float = TAU_MAX
) -> dict[str, float]:
    """AlgoPerf's benchmark score of each contender (:func:`mxopt_jax.compare.stats.profile_score`): the
    normalized area under its performance profile over a linear ``tau`` from 1 to ``tau_max``, on
    :func:`profile_times` (1: fastest on every problem; 0: never within ``tau_max`` of the fastest)."""
    times = profile_times(by_problem)
    if not times:
        return {}
    ratios = stats.performance_ratios(times)
    return {n: stats.profile_score(r, tau_max) for n, r in ratios.items()}
