"""The protocol in words: the text printed with the results and stored with them."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..protocol import LEVEL, TAU_MAX, Preset

if TYPE_CHECKING:  # pragma: no cover
    from ..problems.base import Problem

__all__ = ["describe"]


def _fmt_lr(v: float) -> str:
    return f"{v:.3g}"


def describe(
    preset: Preset | None,
    problems: Sequence[Problem],
    contenders: Sequence[str],
    grids: Mapping[str, Sequence[float]] | None = None,
    one_shot: bool = True,
    level: float = LEVEL,
    tau_max: float = TAU_MAX,
    width: int = 100,
) -> str:
    """The protocol in words, printed with the results and stored with them.

    Args:
      preset: the preset that ran (None: a custom study; the grid sizes come from ``grids``).
      problems: the problems (name, steps, target, metric).
      contenders: the contenders' names.
      grids: ``{contender: rates}``, the grid each one was tuned on (when known).
      one_shot: whether the study also ran the one-shot mode (every contender at its default rate).
      level, tau_max: the interval's level and the profile's largest ratio.
      width: line width of the wrapped paragraphs.
    """
    pct = f"{100 * level:g} %"
    paras = []
    head = "Protocol"
    if preset is not None:
        budget = "each problem's quick step budget" if preset.quick else "each problem's full step budget"
        head += (
            f" (preset '{preset.name}': {preset.grid_points} rates {preset.spacing:g} decade apart, "
            f"{preset.seeds} seeds, {budget})"
        )
    paras.append(head + ".")
    if preset is not None:
        grid = (
            f"Tuning: each contender is trained at {preset.grid_points} learning rates, log-spaced "
            f"{preset.spacing:g} decade(s) apart and centred on its default rate (MXNet's default for mxopt_jax's "
            f"optimizers); every other hyperparameter keeps its default."
        )
        seeds = preset.seeds
    else:
        grid = "Tuning: each contender is trained on a log-spaced learning-rate grid; every other hyperparameter keeps its default."
        seeds = None
    paras.append(grid)
    paras.append(
        f"Seeds: {'each rate is run with ' + str(seeds) + ' seeds' if seeds else 'every rate is run with several seeds'}. "
        "A seed sets the initialization and the order of the mini-batches; the data split (train / validation / "
        "test) is fixed. Every (rate, seed) run of a contender is trained in one compiled program."
    )
    paras.append(
        "Selection (validation only): the chosen rate is the one with the lowest mean over seeds of the final "
        "validation metric; a seed whose run diverged (NaN/inf) counts as +inf, so a rate where any seed "
        "diverged is never chosen over one where none did; equal means: the smaller rate. The test split is "
        "never read to choose."
    )
    paras.append(
        f"Reporting (test): at the chosen rate, the final test metric's mean over seeds and its {pct} "
        "confidence half-width (Student t with S-1 degrees of freedom); also the best validation value over "
        "the run (mean over seeds), steps to target and ms per step (run time over every step of every run, "
        "compilation excluded)."
    )
    paras.append(
        f"Ranks: a contender's rank is 1 + the number of contenders that are significantly better, i.e. whose "
        f"{pct} interval lies entirely below its own (no overlap); identical means tie, so statistically "
        "indistinguishable results share a rank. This is conservative (non-overlapping intervals are a "
        "stricter test than a two-sample test at 5 %), and ranks need not be consecutive. Contenders with a "
        "diverged seed at their chosen rate rank last, tied."
    )
    paras.append(
        "Edge flag: a chosen rate that is the smallest (<) or the largest (>) of its grid is flagged: the best "
        "rate may lie outside the grid."
    )
    if one_shot:
        paras.append(
            "One-shot mode: every contender at its default rate (MXNet's defaults, no tuning), the smallest "
            "tuning budget; its ranks are shown next to the tuned ones."
        )
    paras.append(
        "Target: each problem's validation target (below). Steps to target: the first evaluation step whose "
        "validation metric reaches the target, per seed; tables show the median over seeds (the lower median "
        "for an even count) and how many seeds reached it. Time to target, for the performance profile: that "
        "median, infinite when fewer than half of the seeds reached the target. Profile: rho(tau) = fraction "
        "of problems on which a contender's time to target is at most tau times the fastest contender's; "
        f"score = area under rho over log tau from 1 to {tau_max:g}, normalized (1: fastest everywhere, "
        "0: no target reached)."
    )
    paras.append(
        "Noise: runs at different rates share one batched program; at unstable rates batched arithmetic can "
        "make a run's last bits depend on which other rates share the program, and those bits grow "
        "chaotically. The spread over seeds is the study's measure of noise; differences within it are not "
        "results."
    )
    text = "\n".join(
        textwrap.fill(p, width=width, subsequent_indent="  ", break_on_hyphens=False) for p in paras
    )
    lines = [text, "", "Problems:"]
    for p in problems:
        steps = preset.steps(p) if preset is not None else p.steps
        lines.append(
            f"  {p.name}: {p.title}; {steps} steps, batch {p.batch_size}; metric {p.metric_name} "
            f"(lower is better), target <= {p.target:g}"
        )
    names = list(contenders)
    if grids:
        lines.append("Grids:")
        w = max((len(n) for n in names), default=0)
        for n in names:
            g = np.asarray(grids.get(n, ()), np.float64)
            if len(g) == 0:
                lines.append(f"  {n:<{w}}  (not run)")
            elif len(g) == 1:
                lines.append(f"  {n:<{w}}  1 rate: {_fmt_lr(g[0])}")
            else:
                lines.append(f"  {n:<{w}}  {len(g)} rates {_fmt_lr(g[0])} .. {_fmt_lr(g[-1])}")
    else:
        lines.append("Contenders: " + ", ".join(names))
    return "\n".join(lines)
