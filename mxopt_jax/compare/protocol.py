"""The study's tuning protocol: grids, presets, selection on validation, reporting on test, ranks, profiles.

Everything here reads :class:`~mxopt_jax.compare.records.Records` (plain NumPy arrays) and needs no JAX, so a
saved study can be re-analysed anywhere. The rules, in short (:func:`mxopt_jax.compare.report.text.describe`
prints them in full with the results):

* **grid**: per contender a log-spaced learning-rate grid around its default rate (:data:`PRESETS`);
* **selection** (:func:`select`): the rate with the lowest mean over seeds of the *final validation* metric;
  a seed that diverged (NaN/inf) counts as ``+inf``, so a rate where any seed diverged is never chosen over one
  where none did. Selection reads the validation split only;
* **reporting**: at the chosen rate, the *test* metric per seed, its mean and 95 % Student-t confidence
  interval (:func:`t_quantile`), the best validation value over the run, steps to target, ms/step, whether
  the chosen rate sits on the grid's edge, and how many runs diverged;
* **ranks** (:func:`rank`): 1 + the number of contenders whose 95 % interval lies entirely below one's own;
* **performance profile** (:func:`performance_profile`, :func:`profile_score`): AlgoPerf-style, on the steps
  a contender needs to reach each problem's validation target.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .records import Records, canonical

if TYPE_CHECKING:  # pragma: no cover
    from .problems.base import Problem

__all__ = [
    "CONFIRM_OFFSET",
    "LEVEL",
    "PRESETS",
    "TAU_MAX",
    "Preset",
    "Selection",
    "ci_halfwidth",
    "combine",
    "log_grid",
    "performance_profile",
    "profile_score",
    "profile_taus",
    "rank",
    "select",
    "shift_grid",
    "t_quantile",
    "time_to_target",
]

#: Confidence level of the reported intervals.
LEVEL = 0.95
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

    def selection_seeds(self) -> list[int]:
        """The selection seeds: ``0 .. seeds - 1``."""
        return list(range(self.seeds))

    def confirmation_seeds(self) -> list[int]:
        """The confirmation seeds: ``CONFIRM_OFFSET .. CONFIRM_OFFSET + confirm_seeds - 1``."""
        return list(range(CONFIRM_OFFSET, CONFIRM_OFFSET + self.confirm_seeds))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


PRESETS: dict[str, Preset] = {
    "quick": Preset(
        "quick",
        grid_points=7,
        seeds=5,
        confirm_seeds=10,
        spacing=0.5,
        quick=True,
        description="7 rates half a decade apart (3 decades), 5 selection seeds, 10 confirmation seeds, each "
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
        run_s=run_s,
    )


# --------------------------------------------------------------------------- confidence intervals
def _two_sided(t: float, df: int) -> float:
    """``P(|T| <= t)`` for Student's t with ``df`` (integer) degrees of freedom, exactly.

    Abramowitz & Stegun 26.7.3-4: with ``theta = atan(t / sqrt(df))``, a finite sum in ``cos(theta)``.
    """
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 1:
        if df == 1:
            return 2 * theta / math.pi
        term, total = math.cos(theta), math.cos(theta)
        for k in range(3, df - 1, 2):  # (2*4*...*(k-1)) / (1*3*...*k) cos^k
            term *= c2 * (k - 1) / k
            total += term
        return 2 / math.pi * (theta + s * total)
    term, total = 1.0, 1.0
    for k in range(2, df - 1, 2):  # (1*3*...*(k-1)) / (2*4*...*k) cos^k
        term *= c2 * (k - 1) / k
        total += term
    return s * total


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (no SciPy).

    Exact (bisection on the closed-form distribution function of integer ``df``) up to ``df = 1000``; beyond,
    the Cornish-Fisher expansion around the normal quantile (error below ``1e-9``). ``t_quantile(0.975, 4)``
    is 2.776, ``t_quantile(0.975, 9)`` 2.262, and it tends to 1.960 as ``df`` grows.
    """
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if int(df) != df or df < 1:
        raise ValueError(f"df must be an integer >= 1, got {df!r}")
    df = int(df)
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1 - p, df)
    level = 2 * p - 1  # P(|T| <= t)
    if df > 1000:
        z = statistics.NormalDist().inv_cdf(p)
        g1 = (z**3 + z) / 4
        g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
        g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
        return z + g1 / df + g2 / df**2 + g3 / df**3
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    lo, hi = 0.0, 1.0
    while _two_sided(hi, df) < level:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _two_sided(mid, df) < level:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return 0.5 * (lo + hi)


def ci_halfwidth(values: Sequence[float] | np.ndarray, level: float = LEVEL) -> float:
    """Half-width of the ``level`` Student-t confidence interval of the mean of ``values``.

    ``t_{(1 + level) / 2, n - 1} * s / sqrt(n)`` with ``s`` the sample standard deviation (``ddof=1``). NaN
    for fewer than two values; ``inf`` when a value is not finite.
    """
    v = np.asarray(values, np.float64).ravel()
    if len(v) < 2:
        return math.nan
    if not np.all(np.isfinite(v)):
        return math.inf
    return t_quantile((1 + level) / 2, len(v) - 1) * float(np.std(v, ddof=1)) / math.sqrt(len(v))


# --------------------------------------------------------------------------- selection
def time_to_target(steps_to_target: Sequence[float] | np.ndarray) -> float:
    """Steps by which half of the seeds reached the target: the median over seeds of steps to target (the
    lower median for an even number of seeds), ``inf`` when fewer than half of them reached it."""
    s = np.sort(np.asarray(steps_to_target, np.float64).ravel())
    if len(s) == 0:
        return math.inf
    v = s[math.ceil(len(s) / 2) - 1]
    return float(v) if np.isfinite(v) else math.inf


@dataclasses.dataclass
class Selection:
    """What the protocol reports for one contender on one problem, in one mode (see :func:`select`).

    Attributes:
      contender, problem: names.
      mode: ``"tuned"`` (chosen among several configurations) or ``"one-shot"`` (the default configuration).
      lrs: the learning rates of the configurations tried; ``index``: the chosen one's index; ``lr``: its rate;
        ``config``: the chosen configuration (every tuned hyperparameter, ``"learning_rate"`` included).
      scores: ``(G,)`` the selection score of each configuration: mean over the selection seeds of the final
        validation metric, ``inf`` where a seed diverged.
      val_final: ``(S,)`` final validation metric per selection seed at the chosen configuration;
        ``val_mean``, ``val_ci``: their mean and confidence half-width.
      report_seeds: the seeds the reported numbers come from: the confirmation seeds (fresh, never used to
        choose) when the study ran confirmation runs, else the selection seeds.
      test: ``(R,)`` final test metric per reported seed (the reported result); ``test_mean``, ``test_ci``:
        their mean and confidence half-width (``level``; ``inf`` mean when a seed diverged).
      best_val: ``(R,)`` best (lowest) validation metric over each reported run; ``best_val_mean``.
      steps_to_target: ``(R,)`` first evaluation step reaching the target in each reported run (``inf``: never).
      time_to_target: :func:`time_to_target` of those; ``reached``: how many reported seeds reached the target.
      ms_per_step: the selection runs' :attr:`Records.ms_per_step` (timed with nothing else running).
      on_edge: ``"low"``/``"high"`` when the chosen rate is the grid's smallest/largest (``G > 1``), else None.
      diverged: how many selection runs diverged; ``diverged_chosen``: how many reported seeds diverged.
      seeds: the number of reported seeds ``R``; ``steps``: training steps per run; ``level``: the interval's
        level.
      metric_name, target: the problem's (for tables).
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

    _ARRAYS = ("lrs", "scores", "val_final", "test", "best_val", "steps_to_target")

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
                v = [_enc(x) for x in np.asarray(v, np.float64).ravel().tolist()]
            elif f.name == "report_seeds":
                v = [int(x) for x in np.asarray(v).ravel()]
            elif f.name == "config":
                v = {k: _enc(x) for k, x in v.items()}
            elif isinstance(v, float):
                v = _enc(v)
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
                kw[f.name] = np.array([_dec(x) for x in kw[f.name]], np.float64)
            elif f.name == "report_seeds":
                kw[f.name] = np.asarray(kw[f.name], np.int64)
            elif f.name == "config":
                kw[f.name] = {k: _dec(x) for k, x in kw[f.name].items()}
            elif f.type in ("float", float) or f.name in ("target", "level", "lr"):
                kw[f.name] = _dec(kw[f.name])
        return cls(**kw)


def _enc(x: float) -> float | str | None:
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _dec(x: Any) -> float:
    return math.nan if x is None else float(x)


def _choose(val_final: np.ndarray) -> tuple[int, np.ndarray]:
    """The chosen grid index from the ``(G, S)`` final validation metric alone, and the ``(G,)`` scores.

    Score = mean over seeds, ``inf`` where a seed is not finite. Lowest score wins; among equal scores, the
    smaller rate. If every rate has a diverged seed, the rate with the fewest diverged seeds wins, then the
    lowest mean over its finite seeds.
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
) -> Selection:
    """Apply the protocol to one contender's ``records`` on ``problem``.

    The configuration is chosen from the validation split of ``records`` alone (:func:`_choose` sees only
    ``records.val``): lowest mean over seeds of the final validation metric, a diverged seed counting as
    ``+inf``. The reported numbers (test metric, best validation value, steps to target) then come from
    ``confirmation``, the chosen configuration re-run on fresh seeds, when given (the study always gives it),
    else from ``records`` at the chosen configuration. With one configuration (``G = 1``: the default one, the
    one-shot mode) nothing is chosen and there is no edge flag.
    """
    val = np.asarray(records.val, np.float64)
    if val.ndim != 3:
        raise ValueError(f"records.val must be (G, S, E), got shape {val.shape}")
    G, S, _ = val.shape
    val_final = np.where(
        np.asarray(records.diverged), np.nan, val[:, :, -1]
    )  # diverged: whatever the metric says
    index, scores = _choose(val_final)
    on_edge: str | None = None
    if G > 1 and index == 0:
        on_edge = "low"
    elif G > 1 and index == G - 1:
        on_edge = "high"
    config = records.config(index)
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
        best = np.where(np.isfinite(rep_val), rep_val, np.inf).min(axis=1)
    stt = np.asarray(chosen.steps_to_target, np.float64)[rep_row]
    rep_diverged = np.asarray(chosen.diverged_at, np.float64)[rep_row]
    # reporting: the test split of the reported runs only
    test = np.asarray(chosen.test, np.float64)[rep_row, :, -1]
    test = np.where(np.isfinite(rep_diverged), np.inf, test)
    return Selection(
        contender=records.contender,
        problem=records.problem,
        mode="tuned" if G > 1 else "one-shot",
        lrs=np.asarray(records.lrs, np.float64).copy(),
        index=index,
        lr=float(records.lrs[index]),
        scores=scores,
        val_final=val_final[index].copy(),
        val_mean=_mean(val_final[index]),
        val_ci=ci_halfwidth(val_final[index], level),
        test=test.copy(),
        test_mean=_mean(test),
        test_ci=ci_halfwidth(test, level),
        best_val=best,
        best_val_mean=_mean(best),
        steps_to_target=stt.copy(),
        time_to_target=time_to_target(stt),
        reached=int(np.isfinite(stt).sum()),
        ms_per_step=float(records.ms_per_step),
        on_edge=on_edge,
        diverged=int(np.asarray(records.diverged).sum()),
        diverged_chosen=int(np.isfinite(rep_diverged).sum()),
        seeds=len(test),
        steps=records.steps,
        level=level,
        metric_name=getattr(problem, "metric_name", ""),
        target=float(getattr(problem, "target", math.nan)),
        config=config,
        report_seeds=np.asarray(chosen.seeds, np.int64).copy(),
    )


def _mean(v: np.ndarray) -> float:
    """Mean, ``inf`` when a value is not finite (a diverged seed)."""
    v = np.asarray(v, np.float64)
    return float(v.mean()) if np.all(np.isfinite(v)) else math.inf


# --------------------------------------------------------------------------- ranks
def rank(selections: Sequence[Selection]) -> list[int]:
    """Ranks of ``selections`` (same order), ties shared where results are statistically indistinguishable.

    Rule: a contender's rank is 1 + the number of contenders that are *significantly better*: whose 95 %
    confidence interval of the test metric lies entirely below its own (no overlap: upper end strictly below
    the other's lower end). A contender with a non-finite mean (a seed diverged at its chosen rate) ranks
    last, tied with the others like it (every finite contender counts as better). Identical means always tie.
    With one seed there is no interval and the means are compared as they are.

    Intervals ``[0, 2]``, ``[1, 3]``, ``[4, 5]`` rank ``1, 1, 3``. Ranks need not be consecutive, and a
    contender can tie with two that do not tie with each other (``[0, 1]``, ``[0.9, 2]``, ``[1.5, 3]`` rank
    ``1, 1, 2``). The rule is conservative: two 95 % intervals that do not overlap mean a difference well
    beyond a 5 % two-sample test, so some real differences share a rank.
    """
    lows = [s.test_low for s in selections]
    highs = [s.test_high for s in selections]
    finite = [math.isfinite(s.test_mean) for s in selections]
    n_finite = sum(finite)
    out = []
    for i in range(len(selections)):
        if not finite[i]:
            out.append(1 + n_finite)
            continue
        better = sum(1 for j in range(len(selections)) if j != i and finite[j] and highs[j] < lows[i])
        out.append(1 + better)
    return out


# --------------------------------------------------------------------------- performance profiles
def profile_taus(tau_max: float = TAU_MAX, points: int = 401) -> np.ndarray:
    """Log-spaced ``tau`` values from 1 to ``tau_max`` for :func:`performance_profile`."""
    return np.geomspace(1.0, float(tau_max), int(points))


def performance_profile(
    selections_by_problem: Mapping[str, Sequence[Selection]], taus: Sequence[float] | np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """AlgoPerf-style performance profiles: ``{contender: rho}`` with ``rho[i]`` at ``taus[i]``.

    Per problem, a contender's time is its :attr:`Selection.time_to_target` (median over seeds of the steps
    to reach the validation target at its chosen rate; ``inf`` when fewer than half of the seeds reached
    it); its ratio is that time over the fastest contender's on the problem (``inf`` if it never reached the
    target, or did not run the problem). ``rho(tau)`` = the fraction of problems with ratio ``<= tau``.
    """
    taus = profile_taus() if taus is None else np.asarray(taus, np.float64)
    names = list(dict.fromkeys(s.contender for sels in selections_by_problem.values() for s in sels))
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for sels in selections_by_problem.values():
        times = {s.contender: s.time_to_target for s in sels}
        best = min(times.values(), default=math.inf)
        for n in names:
            t = times.get(n, math.inf)
            ratios[n].append(_ratio(t, best))
    n_problems = max(len(selections_by_problem), 1)
    return {n: (np.asarray(r)[None, :] <= taus[:, None]).sum(axis=1) / n_problems for n, r in ratios.items()}


def _ratio(t: float, best: float) -> float:
    if not (math.isfinite(t) and math.isfinite(best)):
        return math.inf
    if best <= 0:
        return 1.0 if t <= best else math.inf
    return t / best


def profile_score(
    rho: Sequence[float] | np.ndarray, taus: Sequence[float] | np.ndarray | None = None
) -> float:
    """Normalized area under ``rho`` over ``log tau`` from 1 to ``taus[-1]`` (AlgoPerf's benchmark score).

    1: fastest on every problem; 0: never reached a target within ``tau_max`` times the fastest. ``taus``
    must start at 1 (as :func:`profile_taus` does).
    """
    taus = profile_taus() if taus is None else np.asarray(taus, np.float64)
    rho = np.asarray(rho, np.float64)
    if len(taus) < 2 or not math.isclose(taus[0], 1.0) or taus[-1] <= 1:
        raise ValueError("taus must run from 1 to a tau_max > 1")
    x = np.log(taus)
    area = float(np.sum(0.5 * (rho[1:] + rho[:-1]) * np.diff(x)))
    return area / float(x[-1] - x[0])
