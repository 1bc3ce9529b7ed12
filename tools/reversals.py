"""Run one study twice on disjoint seeds and count the claims of the first run that the second reverses.

Issue 40's check of the claims: a claim is *reversed* when the second run shows the same pair of the same table
the other way (a pair the second run does not separate is not a reversal, only not replicated). Counted per kind of
claim: from one study (each study of the first run against the study of the same number in the second) about the
optimizers under their searches, about the configurations each study chose and about the default
configurations; and across the independent studies.

The two runs share nothing: run A selects on seeds ``0 ..`` and reports on ``1000 ..`` (study ``k`` adds ``100 k``
and ``1000 k``, as ``--studies`` does), run B on ``50 ..`` and ``1500 ..``; every seed of one run is distinct
from every seed of the other for up to 20 studies of up to 50 selection and 500 confirmation seeds.

Usage (from the repository root; a small run takes minutes on two CPU cores)::

    python tools/reversals.py --problems logreg --contenders adam,sgd,nag,rmsprop --studies 8 \
        --seeds 3 --confirm-seeds 10 --grid-points 3 --out /tmp/reversals

It prints the counts and writes each run's folder (``A/`` and ``B/``: report, ``claims.csv``) under ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mxopt_jax import compare  # noqa: E402
from mxopt_jax.compare.analysis import Claim  # noqa: E402
from mxopt_jax.compare.problems import DEFAULT, PROBLEMS  # noqa: E402
from mxopt_jax.compare.report import render  # noqa: E402


def _key(c: Claim) -> tuple[object, ...]:
    return (c.study, c.problem, c.mode, *sorted((c.a, c.b)))


def reversals(first: list[Claim], second: list[Claim]) -> dict[str, tuple[int, int, int]]:
    """``{kind: (claims, replicated, reversed)}`` for each kind of claim (about the optimizers from one study,
    about the chosen configurations, about the default configurations, across studies): the first run's shown
    claims of that kind, how many the second shows the same way, and how many it shows the other way."""
    again = {(_key(c), c.about): c for c in second}
    out = {}
    for kind, scope in (
        ("about the optimizers, one study", lambda c: c.study is not None and c.about == "optimizers"),
        ("about the chosen configurations", lambda c: c.study is not None and c.about == "configurations"),
        ("about the default configurations", lambda c: c.study is not None and c.about == "defaults"),
        ("across studies", lambda c: c.study is None),
    ):
        shown = [c for c in first if c.shown and scope(c)]
        found = [again.get((_key(c), c.about)) for c in shown]
        same = sum(1 for c, d in zip(shown, found, strict=True) if d is not None and d.better == c.better)
        other = sum(
            1 for c, d in zip(shown, found, strict=True) if d is not None and d.shown and d.better != c.better
        )
        out[kind] = (len(shown), same, other)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--problems",
        default="logreg",
        help="comma-separated built-in problems, or 'default' (default: logreg)",
    )
    p.add_argument(
        "--contenders", default="adam,sgd,nag,rmsprop", help="comma-separated contenders, or 'all'"
    )
    p.add_argument("--studies", type=int, default=8, help="independent studies per run (default: 8)")
    p.add_argument("--seeds", type=int, default=3, help="selection seeds per study (default: 3)")
    p.add_argument("--confirm-seeds", type=int, default=10, help="confirmation seeds per study (default: 10)")
    p.add_argument("--grid-points", type=int, default=3, help="learning rates per grid (default: 3)")
    p.add_argument("--out", default="reversals", help="folder for the two runs (default: ./reversals)")
    args = p.parse_args(argv)
    if not (1 <= args.seeds <= 50 and 2 <= args.confirm_seeds <= 500 and 1 <= args.studies <= 20):
        p.error(
            "--seeds must be in [1, 50], --confirm-seeds in [2, 500], --studies in [1, 20] (disjoint seeds)"
        )
    problems = [
        PROBLEMS[name]() for name in (DEFAULT if args.problems == "default" else args.problems.split(","))
    ]
    names = "all" if args.contenders == "all" else args.contenders.split(",")
    preset = dataclasses.replace(
        compare.PRESETS["quick"],
        grid_points=args.grid_points,
        seeds=args.seeds,
        confirm_seeds=args.confirm_seeds,
    )
    claims = []
    for run, (sel, conf) in (("A", (0, 1000)), ("B", (50, 1500))):
        result = compare.study(
            problems,
            names,
            preset,
            seeds=list(range(sel, sel + args.seeds)),
            confirm_seeds=list(range(conf, conf + args.confirm_seeds)),
            studies=args.studies,
            out=Path(args.out) / run,
            plots=False,
            progress=False,
        )
        claims.append(render.all_claims(result))
    for kind, (n, same, other) in reversals(*claims).items():
        print(f"{kind}: run A made {n} claim(s); run B shows {same} the same way and reverses {other}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
