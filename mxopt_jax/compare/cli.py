"""The command line: ``mxopt-jax compare`` (also ``python -m mxopt_jax compare``) and its progress bar."""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from . import plotting
from .results import format_overall, format_table, write_csv
from .runner import compare, progress_total
from .tasks import DEFAULT_OPTIMIZERS, OPTIMIZERS, TASK_DESCRIPTIONS, TASKS


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


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n


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


def build_parser() -> argparse.ArgumentParser:
    """The ``mxopt-jax`` argument parser (one sub-command: ``compare``)."""
    parser = argparse.ArgumentParser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare",
        help="compare optimizers on built-in tasks (no download)",
        description="Run optimizers on a spiral classification task and on 2-D test functions (Rosenbrock, "
        "Beale, a saddle); print ranked tables and write PNG plots and a CSV.",
    )
    cmp.add_argument(
        "--optimizers",
        type=_names_arg,
        default=list(DEFAULT_OPTIMIZERS),
        metavar="NAMES",
        help="comma-separated MXNet names, or 'all' (default: all 22)",
    )
    cmp.add_argument(
        "--tasks",
        type=_tasks_arg,
        default=list(TASKS),
        metavar="TASKS",
        help=f"comma-separated tasks from {', '.join(TASKS)}, or 'all' (default: all)",
    )
    cmp.add_argument(
        "--lr",
        type=_lr_arg,
        default={},
        metavar="NAME=RATE,...",
        help="learning rates overriding the tuned ones on every task, e.g. adam=0.01,ftml=0.1 "
        "(default: the tuned tables, TUNED_LR and testfns.LEARNING_RATES)",
    )
    cmp.add_argument("--steps", type=_positive_int, default=300, help="steps per run (default: %(default)s)")
    cmp.add_argument(
        "--seed", type=int, default=0, help="data, initialization and SGLD noise seed (default: %(default)s)"
    )
    cmp.add_argument(
        "--out", default="mxopt_compare", help="folder for the plots and results.csv (default: ./%(default)s)"
    )
    cmp.add_argument("--no-plots", action="store_true", help="only print the tables (and write results.csv)")
    return parser


PLOT_HINT = (
    "matplotlib is not installed, so no plots were written; install it with: pip install 'mxopt_jax[plot]'"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    names, tasks = args.optimizers, args.tasks
    not_run = [n for n in args.lr if n not in names]
    if not_run:
        parser.error(
            f"argument --lr: {', '.join(map(repr, not_run))} not among the optimizers compared "
            f"(--optimizers {','.join(names)})"
        )
    lrs = "tuned learning rates" + (
        f", except {', '.join(f'{n}={lr:g}' for n, lr in args.lr.items())} (--lr)" if args.lr else ""
    )
    print(
        f"mxopt-jax compare: {len(names)} optimizer(s) x {len(tasks)} task(s), {args.steps} steps each, "
        f"seed {args.seed} ({lrs}; ms/step excludes compilation)",
        flush=True,
    )
    progress = Progress(progress_total(names, tasks))
    results = compare(
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
    written = [write_csv(results, out / "results.csv")]
    if not args.no_plots:
        try:
            written += plotting.save_all(results, out)
        except ImportError as e:
            if "matplotlib" not in str(e):
                raise
            print(PLOT_HINT, file=sys.stderr)
    print()
    print("Wrote " + ", ".join(str(p) for p in written))
    return 0
