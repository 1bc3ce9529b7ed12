"""What three published ways of comparing optimizers would claim on the records of one saved study, side by side
with what the study claims (its verdict and its claims about the optimizers under their searches).

* **Dodge et al. 2019, "Show Your Work"** (expected validation performance): for a budget of ``n``
  configurations drawn from a contender's search, the expected test value of the one with the best validation
  value (here: each configuration's mean over the selection seeds' final validation metric chooses, the chosen
  one's mean over the report seeds' final test metric is what it scores, the expectation over draws without
  replacement of ``n`` of the configurations tried, computed exactly). The paper compares the curves and makes
  no test: it would call the contender with the better expected value at the full budget the better one.
* **Bouthillier et al. 2021, "Accounting for Variance in Machine Learning Benchmarks"**: the probability of
  outperforming, ``P(A > B)``, over the sources of variation (here the report seeds at the chosen
  configurations, paired by seed, ties split), with a 95 % percentile bootstrap interval over the seeds (1,000
  resamples, numpy seed 0); A is declared better when ``P(A > B) > 0.75`` and the interval's lower end is
  above 0.5 (their recommended rule, no correction for multiple pairs).
* **AlgoPerf (Dahl et al. 2023, Kasimbeg et al. 2025)**: the benchmark score, the normalized area under the
  performance profile of the time to reach each problem's validation target (its five studies here are the
  selection seeds, as the study's own profile reads them); it ranks, it makes no pairwise claim.

Usage (from the repository root)::

    python tools/anchors.py mxopt_compare      # a folder written by mxopt-jax compare

It prints, per problem, the study's best set and its claims' count, then each anchor's leader and claims.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mxopt_jax.compare.result import StudyResult  # noqa: E402


def expected_best(val: np.ndarray, test: np.ndarray, n: int) -> float:
    """Dodge et al.'s expected test value of the best-of-``n`` configurations (lower is better, oriented): the
    configurations sorted by validation, the ``k``-th best is the best of ``n`` drawn without replacement with
    probability ``C(G - k, n - 1) / C(G, n)``."""
    order = np.argsort(val, kind="stable")
    G = len(val)
    probs = np.array([math.comb(G - 1 - k, n - 1) for k in range(G)], np.float64) / math.comb(G, n)
    t = test[order]
    return float(np.where(probs > 0, probs * np.where(np.isfinite(t), t, np.inf), 0.0).sum())


def p_better(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """Bouthillier et al.'s ``P(A > B)`` (lower is better: A's value below B's; ties split) over paired seeds and
    its 95 % percentile bootstrap interval over the seeds."""
    wins = (a < b).astype(np.float64) + 0.5 * (a == b)
    idx = rng.integers(0, len(a), size=(1000, len(a)))
    boot = wins[idx].mean(axis=1)
    return float(wins.mean()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help="a study folder (its study.json)")
    args = p.parse_args(argv)
    study = StudyResult.from_json(Path(args.folder) / "study.json")
    analysis = study.analysis
    algoperf = analysis.rankings["tuned"].profile if "tuned" in analysis.rankings else None
    totals = {"app": 0, "dodge": 0, "bouthillier": 0}
    for problem in study.problems:
        table = analysis.table(problem.name, "tuned")
        verdict = analysis.verdict(problem.name, "tuned")
        sels = {s.contender: s for s in table.entry_selections}
        d = table.direction
        rng = np.random.default_rng(0)
        # Dodge: the expected best-of-n test value over each contender's configurations
        curves = {}
        for name, s in sels.items():
            if s.report_grid is None:
                continue
            val = d.orient(np.where(np.isfinite(s.scores), s.scores, d.worst))
            grid = d.orient(np.asarray(s.report_grid, np.float64))
            test = np.where(np.isfinite(grid), grid, np.inf).mean(axis=1)
            curves[name] = [expected_best(val, test, n) for n in (1, 3, len(val))]
        dodge = sorted(curves, key=lambda n: curves[n][-1])
        # Bouthillier: P(A > B) > 0.75 with the interval above 0.5, every ordered pair, no correction
        names = list(sels)
        values = {
            n: d.orient(np.where(np.isfinite(s.test), s.test, s.sign * np.inf)) for n, s in sels.items()
        }
        declared = [
            (a, b)
            for a in names
            for b in names
            if a != b and (lambda r: r[0] > 0.75 and r[1] > 0.5)(p_better(values[a], values[b], rng))
        ]
        b_best = [n for n in names if not any(w == n for _, w in declared)]
        app_claims = len(table.shown_claims())
        totals["app"] += app_claims
        totals["dodge"] += len(curves) * (len(curves) - 1) // 2
        totals["bouthillier"] += len(declared)
        print(f"== {problem.name} ({len(names)} entries)")
        print(f"  app: best set {len(verdict.best)} ({', '.join(verdict.best[:6])}{' ...' if len(verdict.best) > 6 else ''}); "
              f"{app_claims} claims about the optimizers under the search")  # fmt: skip
        if dodge:
            print(f"  Dodge et al. 2019: best expected test value at the full budget: {', '.join(dodge[:3])} "
                  f"(every pair ordered by its curve, no test)")  # fmt: skip
        print(f"  Bouthillier et al. 2021: {len(declared)} pairs declared (P(A > B) > 0.75, interval above 0.5); "
              f"never beaten: {len(b_best)} ({', '.join(b_best[:6])}{' ...' if len(b_best) > 6 else ''})")  # fmt: skip
    if algoperf is not None:
        scores = sorted(algoperf.scores, key=lambda n: -algoperf.scores[n])
        print("== AlgoPerf's benchmark score over the problems (a ranking, no pairwise claim): " +
              ", ".join(f"{n} {algoperf.scores[n]:.3f}" for n in scores[:5]))  # fmt: skip
    print(f"== claims over the problems: app {totals['app']}, Bouthillier et al. {totals['bouthillier']}, "
          f"Dodge et al. orders all {totals['dodge']} pairs")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
