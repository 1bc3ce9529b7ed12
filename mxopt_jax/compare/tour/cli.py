"""The tour's command line, ``mxopt-jax tour`` (registered by :func:`mxopt_jax.compare.cli.build_parser`).

Made of the study's command-line pieces: names parsed by :func:`~mxopt_jax.compare.validation.names_arg`, the
output folder checked by :func:`~mxopt_jax.compare.files.output_dir` before anything runs (a refused command
leaves nothing behind), progress shown by :class:`~mxopt_jax.compare.progress.StudyProgress`. ``--optimizers``
is the old spelling of ``--contenders``, still taken (hidden) with the notice of
:data:`mxopt_jax.compare.cli.DEPRECATED`.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ... import OPTIMIZERS
from ..files import output_dir
from ..progress import StudyProgress
from ..style import PLOT_HINT
from ..validation import names_arg, positive_int_arg
from .plots import save_all
from .results import format_overall, format_table, write_csv
from .runner import run
from .tasks import DEFAULT_OPTIMIZERS, TASK_DESCRIPTIONS, TASKS

__all__ = ["add_tour_parser", "run_tour_command"]


def _contenders_arg(value: str) -> list[str]:
    return names_arg(value, list(OPTIMIZERS), "contender", {"all": list(DEFAULT_OPTIMIZERS)})


def _tasks_arg(value: str) -> list[str]:
    return names_arg(value, list(TASKS), "task", {"all": list(TASKS)})


def _lr_arg(value: str) -> dict[str, float]:
    """``--lr adam=0.01,ftml=0.1`` -> ``{"adam": 0.01, "ftml": 0.1}`` (known names, positive finite rates)."""
    rates: dict[str, float] = {}
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected NAME=RATE[,NAME=RATE...], e.g. adam=0.01,ftml=0.1")
    for item in items:
        name, sep, rate = (part.strip() for part in item.partition("="))
        name = name.lower()
        if not sep or not name or not rate:
            raise argparse.ArgumentTypeError(f"expected NAME=RATE, got {item!r} (e.g. adam=0.01,ftml=0.1)")
        if name not in OPTIMIZERS:
            raise argparse.ArgumentTypeError(f"unknown contender {name!r}; known: {', '.join(OPTIMIZERS)}")
        if name in rates:
            raise argparse.ArgumentTypeError(f"learning rate of {name!r} given twice")
        try:
            lr = float(rate)
        except ValueError:
            raise argparse.ArgumentTypeError(f"learning rate of {name!r} is not a number: {rate!r}") from None
        if not (math.isfinite(lr) and lr > 0):
            raise argparse.ArgumentTypeError(
                f"learning rate of {name!r} must be a positive number, got {rate!r}"
            )
        rates[name] = lr
    return rates


def add_tour_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``tour`` sub-command to ``sub`` (an ``add_subparsers`` object)."""
    tour = sub.add_parser(
        "tour",
        help="the visual tour: optimizers on 2-D test functions (Rosenbrock, Beale, a saddle)",
        description="Run optimizers from a fixed start on classic 2-D test functions at hand-tuned rates and "
        "draw their paths over the contours (a picture of each optimizer's character, not a benchmark: "
        "mxopt-jax compare is the study).",
    )
    tour.add_argument(
        "--contenders",
        type=_contenders_arg,
        default=list(DEFAULT_OPTIMIZERS),
        metavar="NAMES",
        help="comma-separated MXNet optimizer names, or 'all' (default: all 22)",
    )
    tour.add_argument("--optimizers", dest="contenders", type=_contenders_arg, help=argparse.SUPPRESS)
    tour.add_argument(
        "--tasks",
        type=_tasks_arg,
        default=[t for t in TASKS if t != "spiral"],
        metavar="TASKS",
        help=f"comma-separated tasks from {', '.join(TASKS)}, or 'all' (default: the three 2-D functions)",
    )
    tour.add_argument(
        "--lr",
        type=_lr_arg,
        default={},
        metavar="NAME=RATE,...",
        help="learning rates overriding the hand-tuned ones on every task, e.g. adam=0.01,ftml=0.1",
    )
    tour.add_argument(
        "--steps", type=positive_int_arg, default=300, help="steps per run (default: %(default)s)"
    )
    tour.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the runs: the MLP's initialization and SGLD's noise (default: %(default)s)",
    )
    tour.add_argument(
        "--out",
        default="mxopt_tour",
        metavar="DIR",
        help="folder for the plots and results.csv (default: ./%(default)s); checked before anything runs",
    )
    tour.add_argument("--no-plots", action="store_true", help="only print the tables (and write results.csv)")
    return tour


def _fail(message: str) -> int:
    print(f"mxopt-jax tour: error: {message}", file=sys.stderr)
    return 2


def run_tour_command(args: argparse.Namespace) -> int:
    """``mxopt-jax tour``: check, run, print the tables, write ``results.csv`` and the plots."""
    names, tasks = args.contenders, args.tasks
    not_run = [n for n in args.lr if n not in names]
    if not_run:
        return _fail(
            f"argument --lr: {', '.join(map(repr, not_run))} not among the contenders "
            f"(--contenders {','.join(names)})"
        )
    try:
        output_dir(args.out, "--out")
    except (TypeError, ValueError) as e:
        return _fail(str(e))
    lrs = "hand-tuned learning rates" + (
        f", except {', '.join(f'{n}={lr:g}' for n, lr in args.lr.items())} (--lr)" if args.lr else ""
    )
    print(
        f"mxopt-jax tour: {len(names)} contender(s) x {len(tasks)} task(s), {args.steps} steps each, "
        f"seed {args.seed} ({lrs}; ms/step excludes compilation)",
        flush=True,
    )
    progress = StudyProgress(desc="tour")
    results = run(names, tasks, steps=args.steps, seed=args.seed, progress=progress, learning_rates=args.lr)
    for task in tasks:
        print()
        print(format_table(results[task], title=f"== {task}: {TASK_DESCRIPTIONS[task]}"))
    if len(tasks) > 1:
        print()
        print(format_overall(results))
    out = output_dir(args.out, "--out", create=True)
    try:
        written = [write_csv(out / "results.csv", results)]
        if not args.no_plots:
            try:
                written += save_all(results, out)
            except ImportError as e:
                if "matplotlib" not in str(e):
                    raise
                print(PLOT_HINT, file=sys.stderr)
    except OSError as e:  # a full disk, say: every file is written whole or not at all
        where = f" ({e.filename})" if e.filename else ""
        print(
            f"mxopt-jax tour: error: cannot write into {out}: {e.strerror or e}{where}; no file was left "
            "half-written (the tables above are the results)",
            file=sys.stderr,
        )
        return 1
    print()
    print("Wrote " + ", ".join(str(p) for p in written))
    return 0
