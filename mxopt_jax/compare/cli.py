"""The command line: ``mxopt-jax compare`` (the study), ``mxopt-jax tour`` (the 2-D test functions), progress."""

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


def _contenders_arg(value: str) -> list[str]:
    from .contenders import OPTAX_BASELINES

    known = [*OPTIMIZERS, *OPTAX_BASELINES]
    names = [n.strip() for n in value.split(",") if n.strip()]
    groups = {"all", "mxopt", "optax"}
    unknown = [n for n in names if n.lower() not in known and n.lower() not in groups]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown optimizer(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(known)}, or 'all', 'mxopt', 'optax'"
        )
    return list(dict.fromkeys(n.lower() for n in names))


def _problems_arg(value: str) -> list[str]:
    from .problems import PROBLEMS

    if value.strip().lower() == "all":
        return list(PROBLEMS)
    names = [t.strip().lower() for t in value.split(",") if t.strip()]
    unknown = [t for t in names if t not in PROBLEMS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown problem(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"known: {', '.join(PROBLEMS)} or 'all'"
        )
    return list(dict.fromkeys(names))


def _seeds_arg(value: str) -> int:
    n = _positive_int(value)
    if n < 2:
        raise argparse.ArgumentTypeError(f"need at least 2 seeds for confidence intervals, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    """The ``mxopt-jax`` argument parser: ``compare`` (the study) and ``tour`` (the 2-D test functions)."""
    from .problems import PROBLEMS

    parser = argparse.ArgumentParser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare",
        help="a tuned, multi-seed optimizer study on built-in workloads (no download)",
        description="Tune every optimizer's learning rate on a log grid, several seeds per rate, on real "
        "workloads; select on validation, report on test with 95%% confidence intervals; print the protocol "
        "and ranked tables; write report.txt, runs.csv, summary.csv, study.json and PNG plots.",
    )
    cmp.add_argument(
        "--preset",
        choices=("quick", "full"),
        default="quick",
        help="quick: 7 rates x 5 seeds, short budgets (about 5 minutes on 2 CPU cores); full: 11 rates x "
        "10 seeds, full budgets (default: %(default)s)",
    )
    cmp.add_argument(
        "--optimizers",
        type=_contenders_arg,
        default=["all"],
        metavar="NAMES",
        help="comma-separated MXNet names and optax baselines (optax.sgd, optax.adam, optax.adamw, optax.lamb), "
        "or 'all', 'mxopt', 'optax' (default: all)",
    )
    cmp.add_argument(
        "--problems",
        type=_problems_arg,
        default=list(PROBLEMS),
        metavar="NAMES",
        help=f"comma-separated workloads from {', '.join(PROBLEMS)}, or 'all' (default: all)",
    )
    cmp.add_argument("--seeds", type=_seeds_arg, default=None, help="seeds per rate (default: the preset's)")
    cmp.add_argument(
        "--extend",
        type=int,
        default=2,
        help="times a grid may be extended past the edge where its chosen rate sits (default: %(default)s)",
    )
    cmp.add_argument(
        "--batching-check",
        choices=("best", "all", "none"),
        default="best",
        help="re-run chosen rates in every slot of their program, the check that no result depends on the other "
        "rates batched with it: the best optimizer of each family, all of them, or none (default: %(default)s)",
    )
    cmp.add_argument(
        "--out",
        default="mxopt_compare",
        help="folder for the report, CSV, JSON and plots (default: ./%(default)s)",
    )
    cmp.add_argument("--no-plots", action="store_true", help="write no PNGs")
    _device_args(cmp)

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
    tour.add_argument("--steps", type=_positive_int, default=300, help="steps per run (default: %(default)s)")
    tour.add_argument("--seed", type=int, default=0, help="seed (default: %(default)s)")
    tour.add_argument(
        "--out", default="mxopt_tour", help="folder for the plots and results.csv (default: ./%(default)s)"
    )
    tour.add_argument("--no-plots", action="store_true", help="only print the tables (and write results.csv)")
    return parser


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        type=_positive_int,
        default=None,
        help="CPU only: host devices to shard the runs over (default: one per core, at most 8); set before "
        "JAX starts, as XLA_FLAGS=--xla_force_host_platform_device_count=N",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not use JAX's persistent compilation cache (default: ~/.cache/mxopt_jax/jax, or "
        "$MXOPT_JAX_CACHE)",
    )


def configure_jax(devices: int | None = None, cache: bool = True) -> None:
    """Set up JAX for a study, before its first computation (the command line calls it first thing).

    On CPU: ``devices`` host devices (default: one per core, at most 8) through
    ``--xla_force_host_platform_device_count``, so the runs are sharded over the cores. Flags already in
    ``XLA_FLAGS`` are kept.
    ``cache``: JAX's persistent compilation cache in ``$MXOPT_JAX_CACHE`` or ``~/.cache/mxopt_jax/jax``, so a
    second study with the same programs skips compilation. Both must happen before JAX initializes its
    backend; afterwards they have no effect (a warning says so).
    """
    import os

    import jax

    flags = os.environ.get("XLA_FLAGS", "")
    n = devices or min(os.cpu_count() or 1, 8)
    extra = []
    if "xla_force_host_platform_device_count" not in flags:
        extra.append(f"--xla_force_host_platform_device_count={n}")
    if extra:
        os.environ["XLA_FLAGS"] = " ".join([flags, *extra]).strip()
    if cache:
        path = os.environ.get("MXOPT_JAX_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "mxopt_jax", "jax"
        )
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


class StudyProgress:
    """Progress of a study on stderr, with an ETA (one line per step when not on a terminal)."""

    def __init__(self, stream: TextIO | None = None, width: int = 24) -> None:
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.width = width
        self._t0 = time.perf_counter()
        self._shown = 0

    def __call__(self, label: str, fraction: float) -> None:
        elapsed = time.perf_counter() - self._t0
        eta = f"ETA {elapsed * (1 - fraction) / fraction:4.0f}s" if fraction > 0.02 else "ETA    ?"
        filled = round(self.width * fraction)
        bar = "#" * filled + "-" * (self.width - filled)
        line = f"[{bar}] {100 * fraction:3.0f}% {elapsed:5.0f}s {eta} {label}"
        if self.tty:
            line = line[: shutil.get_terminal_size().columns - 1]
            self.stream.write("\r" + line.ljust(self._shown))
            self._shown = len(line)
            if fraction >= 1.0:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


PLOT_HINT = (
    "matplotlib is not installed, so no plots were written; install it with: pip install 'mxopt_jax[plot]'"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tour":
        return _tour(parser, args)
    return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    configure_jax(args.devices, cache=not args.no_cache)
    import jax

    from .problems import PROBLEMS
    from .study import study

    problems = [PROBLEMS[name]() for name in args.problems]
    print(
        f"mxopt-jax compare (preset {args.preset}): {', '.join(args.optimizers)} on {', '.join(args.problems)}; "
        f"{len(jax.devices())} {jax.devices()[0].platform} device(s)",
        flush=True,
    )
    result = study(
        problems,
        args.optimizers,
        args.preset,
        seeds=args.seeds,
        extend=args.extend,
        check_batching=args.batching_check,
        progress=StudyProgress(),
    )
    print()
    print(result.report())
    plots = not args.no_plots
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(PLOT_HINT, file=sys.stderr)
            plots = False
    written = result.write(args.out, plots=plots)
    print()
    print("Wrote " + ", ".join(str(p) for p in written))
    return 0


def _tour(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
