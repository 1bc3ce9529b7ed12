"""The command line: ``mxopt-jax compare`` (the study), ``mxopt-jax tour`` (the 2-D test functions), progress."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TextIO

from .. import OPTIMIZERS
from .checks import positive_int_arg
from .figures import PLOT_HINT


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
    n = positive_int_arg(value)
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
        help="quick: 7 rates x 5 seeds, 10 confirmation seeds, a third of the full budgets: it ranks early "
        "progress (minutes on 2 CPU cores); full: 11 rates x 10 seeds, 20 confirmation seeds, full budgets: the "
        "rankings to cite (default: %(default)s)",
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
    cmp.add_argument(
        "--seeds",
        type=_seeds_arg,
        default=None,
        help="selection seeds per rate, 0, 1, ... (default: the preset's)",
    )
    cmp.add_argument(
        "--confirm-seeds",
        type=_seeds_arg,
        default=None,
        help="fresh seeds the chosen and the default rates are re-run on, 1000, 1001, ...; the reported results "
        "come from these runs (default: the preset's)",
    )
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
    _search_args(cmp)
    _device_args(cmp)
    _launch_args(cmp)

    from .tour.cli import add_tour_parser

    add_tour_parser(sub)
    return parser


def _nonnegative_int_arg(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def _search_args(p: argparse.ArgumentParser) -> None:
    from .schedules import SCHEDULES
    from .search import DEFAULT_TRIALS

    p.add_argument(
        "--search",
        choices=("grid", "random"),
        default="grid",
        help="grid: the learning rate on the preset's grid, everything else at its defaults (the quick mode); "
        "random: --trials configurations of every hyperparameter per optimizer, the same number for each, the "
        "first its defaults (the Crowded Valley's protocol; the research mode) (default: %(default)s)",
    )
    p.add_argument(
        "--trials",
        type=positive_int_arg,
        default=None,
        help=f"configurations per optimizer of a random search (default: {DEFAULT_TRIALS})",
    )
    p.add_argument(
        "--search-seed",
        type=_nonnegative_int_arg,
        default=0,
        help="seed of the random search; an optimizer's trials depend on it and its name only (default: 0)",
    )
    p.add_argument(
        "--schedule",
        choices=tuple(SCHEDULES),
        default="constant",
        help="learning-rate schedule of every run, its peak the tuned rate (default: %(default)s)",
    )
    p.add_argument(
        "--compare-presets",
        nargs=2,
        metavar=("DIR_A", "DIR_B"),
        default=None,
        help="run nothing: print how far two saved studies (their --out folders) agree, per workload: Kendall's "
        "tau of the tuned test means and the top-3 overlap",
    )


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        type=positive_int_arg,
        default=None,
        metavar="N",
        help="devices per process to shard the runs over, of JAX's default backend: on CPU the host device "
        "count (default: one per core, at most 8; set before JAX starts, as "
        "XLA_FLAGS=--xla_force_host_platform_device_count=N); on a GPU or TPU the first N devices (default: "
        "all); more than a process has is refused",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not use JAX's persistent compilation cache (default: ~/.cache/mxopt_jax/jax, or "
        "$MXOPT_JAX_CACHE)",
    )


def _address_arg(value: str) -> str:
    from .distributed import parse_address

    try:
        parse_address(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def _process_id_arg(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def _launch_args(p: argparse.ArgumentParser) -> None:
    """The flags of a study run as several processes (``jax.distributed``; see docs/study.md)."""
    g = p.add_argument_group(
        "many processes (jax.distributed)",
        "Run the same command in every process (one per host, or several on one machine): the runs are "
        "sharded over the devices of all of them; process 0 prints and writes, the others write nothing.",
    )
    g.add_argument(
        "--coordinator",
        type=_address_arg,
        default=None,
        metavar="HOST:PORT",
        help="process 0's address and a free port, the same in every process",
    )
    g.add_argument(
        "--num-processes", type=positive_int_arg, default=None, metavar="N", help="how many processes"
    )
    g.add_argument(
        "--process-id", type=_process_id_arg, default=None, metavar="I", help="this process: 0 .. N-1"
    )
    g.add_argument(
        "--distributed",
        choices=("auto",),
        default=None,
        help="auto: let JAX detect the cluster (SLURM, Open MPI, Cloud TPU, ...) for what is not given; "
        "jax.distributed.initialize() with no arguments",
    )


def _check_launch(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse bad launch flags with a usage error, before JAX starts (and before it waits for processes)."""
    from .distributed import check_launch

    try:
        check_launch(args.coordinator, args.num_processes, args.process_id, auto=args.distributed == "auto")
    except (TypeError, ValueError) as e:
        message = str(e).replace("auto=True; ", "")
        for name in ("num_processes", "process_id", "coordinator"):  # the API's words as the flags
            message = message.replace(name, "--" + name.replace("_", "-"))
        parser.exit(2, f"{parser.prog} compare: error: {message}\n")


def _start_jax(args: argparse.Namespace) -> None:
    """JAX set up for ``compare``: host devices, the compilation cache, then the processes joined."""
    configure_jax(
        args.devices,
        cache=not args.no_cache,
        coordinator=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
        distributed=args.distributed,
    )


@contextlib.contextmanager
def _writer_output() -> Iterator[None]:
    """Standard output as it is in the writing process (:func:`mxopt_jax.compare.distributed.is_writer`);
    discarded in the others, Python's and the native libraries' alike (gloo's connection messages), so the
    report is printed once."""
    from .distributed import is_writer

    if is_writer():
        yield
        return
    sys.stdout.flush()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _devices_text() -> str:
    from .distributed import process_info

    info = process_info()
    where = f" in {info['processes']} processes" if info["processes"] > 1 else ""
    return f"{info['devices']} {info['platform']} device(s){where}"


def configure_jax(
    devices: int | None = None,
    cache: bool = True,
    *,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    distributed: str | None = None,
) -> None:
    """Set up JAX for a study, before its first computation (the command line calls it first thing).

    ``devices``: on CPU, the host device count of this process (default: one per core, at most 8) through
    ``--xla_force_host_platform_device_count``, so the runs are sharded over the cores (flags already in
    ``XLA_FLAGS`` are kept); on a GPU or TPU the hardware decides, and
    :func:`mxopt_jax.compare.distributed.study_devices` picks the first ``devices``.
    ``cache``: JAX's persistent compilation cache in ``$MXOPT_JAX_CACHE`` or ``~/.cache/mxopt_jax/jax``, so a
    second study with the same programs skips compilation.
    ``coordinator``, ``num_processes``, ``process_id``: join a study of several processes
    (:func:`mxopt_jax.compare.distributed.initialize`: process 0's ``HOST:PORT``, the number of processes,
    this one's index); ``distributed="auto"``: JAX detects what is not given from the cluster (SLURM, ...).
    Bad launch arguments raise ``ValueError`` here, before anything starts.
    All of it must happen before JAX initializes its backend; afterwards the device count and the cache have
    no effect and joining raises ``RuntimeError``.
    """
    import os

    from .distributed import check_launch, initialize

    if distributed not in (None, "auto"):
        raise ValueError(f"distributed must be None or 'auto', got {distributed!r}")
    if devices is not None and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 1):
        raise ValueError(f"devices must be an int >= 1 (devices per process), got {devices!r}")
    auto = distributed == "auto"
    check_launch(coordinator, num_processes, process_id, auto=auto)

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
    initialize(coordinator, num_processes, process_id, auto=auto)


class StudyProgress:
    """Progress of a study on stderr, with an ETA (one line per step when not on a terminal); in a study of
    several processes, process 0's only (:func:`mxopt_jax.compare.distributed.is_writer`)."""

    def __init__(self, stream: TextIO | None = None, width: int = 24) -> None:
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.width = width
        self._t0 = time.perf_counter()
        self._shown = 0
        self._quiet: bool | None = None

    def __call__(self, label: str, fraction: float) -> None:
        if self._quiet is None:  # decided at the first call, once JAX runs: the bar is process 0's
            from .distributed import is_writer

            self._quiet = not is_writer()
        if self._quiet:
            return
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tour":
        from .tour.cli import run_tour_command

        return run_tour_command(parser, args)
    if args.compare_presets:
        return _compare_presets(args)
    if args.trials is not None and args.search != "random":
        parser.error("--trials needs --search random")
    _check_launch(parser, args)
    _start_jax(args)
    with _writer_output():
        return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from .distributed import study_devices
    from .problems import PROBLEMS
    from .study import study

    problems = [PROBLEMS[name]() for name in args.problems]
    how = f"{args.search} search" + (
        f", {args.trials or 'default'} trials" if args.search == "random" else ""
    )
    print(
        f"mxopt-jax compare (preset {args.preset}, {how}, {args.schedule} schedule): {', '.join(args.optimizers)} "
        f"on {', '.join(args.problems)}; " + _devices_text(),
        flush=True,
    )
    result = study(
        problems,
        args.optimizers,
        args.preset,
        seeds=args.seeds,
        confirm_seeds=args.confirm_seeds,
        extend=args.extend,
        check_batching=args.batching_check,
        progress=StudyProgress(),
        devices=study_devices(args.devices),
        search=args.search,
        trials=args.trials,
        search_seed=args.search_seed,
        schedule=args.schedule,
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


def _compare_presets(args: argparse.Namespace) -> int:
    """``--compare-presets DIR_A DIR_B``: how far two saved studies agree (no JAX, nothing run)."""
    from .report.agreement import compare_studies

    try:
        print(compare_studies(*args.compare_presets))
    except (FileNotFoundError, ValueError) as e:
        print(f"mxopt-jax compare --compare-presets: {e}", file=sys.stderr)
        return 2
    return 0
