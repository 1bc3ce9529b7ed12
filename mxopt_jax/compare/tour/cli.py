"""The tour's command line, ``mxopt-jax tour`` (registered by :func:`mxopt_jax.compare.cli.build_parser`)."""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..checks import positive_int_arg
from ..figures import PLOT_HINT
from .plots import save_all
from .results import format_overall, format_table, write_csv
from .runner import progress_total
from .runner import run as run_tour
from .tasks import DEFAULT_OPTIMIZERS, OPTIMIZERS, TASK_DESCRIPTIONS, TASKS

__all__ = ["Progress", "add_tour_parser", "run_tour_command"]


class Progress:
    """A tiny progress bar on stderr (no dependency).

    On a terminal it redraws one ``\\r``-updated line; otherwise (logs, CI) it prints one line per finished
    item, so progress stays visible without control characters.
    """

    def __init__(self, total: int, stream: TextIO | None = None, width: int = 24) -> None:
        self.total, self.width, self.done = total, width, 0
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self._t0 = time.perf_counter()
        self._shown = 0

    def _draw(self, label: str) -> None:
        filled = round(self.width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {self.done}/{self.total} {time.perf_counter() - self._t0:5.1f}s {label}"
        line = line[: shutil.get_terminal_size().columns - 1]  # a wrapped line could not be redrawn
        self.stream.write("\r" + line.ljust(self._shown))
        self._shown = len(line)
        self.stream.flush()

    def status(self, label: str) -> None:
        """Show what is running now (terminal only)."""
        if self.tty:
            self._draw(label)

    def advance(self, label: str) -> None:
        """Mark one item finished."""
        self.done += 1
        if self.tty:
            self._draw(label)
            if self.done >= self.total:
                self.stream.write("\n")
                self.stream.flush()
        else:
            elapsed = time.perf_counter() - self._t0
            print(
                f"[{self.done:>{len(str(self.total))}}/{self.total}] {elapsed:6.1f}s {label}",
                file=self.stream,
            )
            self.stream.flush()


def _names_arg(value: str) -> list[str]:
    if value.strip().lower() == "all":
        return list(DEFAULT_OPTIMIZERS)
    names = [n.strip().lower() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in OPTIMIZERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown optimizer(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(OPTIMIZERS)} or 'all'"
        )
    return list(dict.fromkeys(names))


def _tasks_arg(value: str) -> list[str]:
    if value.strip().lower() == "all":
        return list(TASKS)
    tasks = [t.strip().lower() for t in value.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASKS]
    if not tasks or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown task(s) {', '.join(map(repr, unknown)) or '(none given)'}; known: {', '.join(TASKS)} or 'all'"
        )
    return list(dict.fromkeys(tasks))


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
            raise argparse.ArgumentTypeError(f"unknown optimizer {name!r}; known: {', '.join(OPTIMIZERS)}")
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
        "--optimizers",
        type=_names_arg,
        default=list(DEFAULT_OPTIMIZERS),
        metavar="NAMES",
        help="comma-separated MXNet names, or 'all' (default: all 22)",
    )
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
    tour.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    tour.add_argument(
        "--out", default="mxopt_tour", help="folder for the plots and results.csv (default: ./%(default)s)"
    )
    tour.add_argument("--no-plots", action="store_true", help="only print the tables (and write results.csv)")
    return tour


def run_tour_command(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``mxopt-jax tour``: run, print the tables, write ``results.csv`` and the plots."""
    names, tasks = args.optimizers, args.tasks
    not_run = [n for n in args.lr if n not in names]
    if not_run:
        parser.error(
            f"argument --lr: {', '.join(map(repr, not_run))} not among the optimizers compared "
            f"(--optimizers {','.join(names)})"
        )
    lrs = "hand-tuned learning rates" + (
        f", except {', '.join(f'{n}={lr:g}' for n, lr in args.lr.items())} (--lr)" if args.lr else ""
    )
    print(
        f"mxopt-jax tour: {len(names)} optimizer(s) x {len(tasks)} task(s), {args.steps} steps each, "
        f"seed {args.seed} ({lrs}; ms/step excludes compilation)",
        flush=True,
    )
    progress = Progress(progress_total(names, tasks))
    results = run_tour(
        names, tasks, steps=args.steps, seed=args.seed, progress=progress, learning_rates=args.lr
    )
    for task in tasks:
        print()
        print(format_table(results[task], title=f"== {task}: {TASK_DESCRIPTIONS[task]}"))
    if len(tasks) > 1:
        print()
        print(format_overall(results))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = [write_csv(out / "results.csv", results)]
    if not args.no_plots:
        try:
            written += save_all(results, out)
        except ImportError as e:
            if "matplotlib" not in str(e):
                raise
            print(PLOT_HINT, file=sys.stderr)
    print()
    print("Wrote " + ", ".join(str(p) for p in written))
    return 0
