"""The command line: ``mxopt-jax compare`` (the study), ``mxopt-jax tour`` (the 2-D test functions), progress."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .. import OPTIMIZERS
from .checks import (
    cpu_devices,
    devices_count,
    expect_host_devices,
    non_negative_int_arg,
    output_dir,
    positive_int_arg,
)
from .figures import PLOT_HINT
from .progress import StudyProgress

__all__ = ["StudyProgress", "build_parser", "configure_jax", "main", "workloads_epilog"]


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


def workloads_epilog() -> str:
    """The built-in workloads, one line each (``mxopt-jax compare --help``'s list): data and model, parameter
    count, metric and target, budget."""
    import re

    from .problems import PROBLEMS

    cols = min(shutil.get_terminal_size().columns, 100) - 2
    lines = ["workloads (nothing is downloaded; --problems NAMES):"]
    width = max(len(n) for n in PROBLEMS)
    for name, factory in PROBLEMS.items():
        p = factory()
        found = re.search(r"([\d,]+) parameters", p.description)
        params = f"{found.group(1)} parameters; " if found else ""
        quick = f" (quick {p.quick_steps})" if p.quick_steps else ""
        entry = (
            f"{name:<{width}}  {p.title}; {params}{p.metric_name} (lower is better), target <= {p.target:g}; "
            f"{p.steps} steps{quick}, batch {p.batch_size}"
        )
        lines.append(textwrap.fill(entry, cols, initial_indent="  ", subsequent_indent=" " * (width + 4)))
    lines += [
        "",
        textwrap.fill(
            "The folder of --out keeps each finished program's records (programs/) and the study's spec, so an "
            "interrupted study (Ctrl-C) loses nothing finished: --resume DIR runs only what is missing, also "
            "problems or optimizers added with --problems/--optimizers.",
            cols,
        ),
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``mxopt-jax`` argument parser: ``compare`` (the study) and ``tour`` (the 2-D test functions)."""
    from .problems import PROBLEMS

    parser = argparse.ArgumentParser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser(
        "compare",
        help="a tuned, multi-seed optimizer study on built-in workloads (no download)",
        description=textwrap.fill(
            "Tune every optimizer's learning rate on a log grid, several seeds per rate, on real workloads; "
            "select on validation, report on test with 95 % confidence intervals; print the protocol and ranked "
            "tables; write report.txt, report.html, runs.csv, summary.csv, study.json and PNG plots.",
            width=min(shutil.get_terminal_size().columns, 100) - 2,
        ),
        epilog=workloads_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "--preset",
        choices=("quick", "full"),
        default=None,
        help="quick: 7 rates x 5 seeds, 10 confirmation seeds, a third of the full budgets: it ranks early "
        "progress (minutes on 2 CPU cores); full: 11 rates x 10 seeds, 20 confirmation seeds, full budgets: the "
        "rankings to cite (default: quick, or the resumed study's)",
    )
    cmp.add_argument(
        "--optimizers",
        type=_contenders_arg,
        default=None,
        metavar="NAMES",
        help="comma-separated MXNet names and optax baselines (optax.sgd, optax.adam, optax.adamw, optax.lamb), "
        "or 'all', 'mxopt', 'optax' (default: all; with --resume, the resumed study's, these added)",
    )
    cmp.add_argument(
        "--problems",
        type=_problems_arg,
        default=None,
        metavar="NAMES",
        help=f"comma-separated workloads from {', '.join(PROBLEMS)} (listed below), or 'all' (default: all; "
        "with --resume, the resumed study's, these added)",
    )
    cmp.add_argument(
        "--seeds",
        type=_seeds_arg,
        default=None,
        help="selection seeds per rate, 0, 1, ... (an integer >= 2; default: the preset's)",
    )
    cmp.add_argument(
        "--confirm-seeds",
        type=_seeds_arg,
        default=None,
        help="fresh seeds the chosen and the default rates are re-run on, 1000, 1001, ...; the reported results "
        "come from these runs (an integer >= 2; default: the preset's)",
    )
    cmp.add_argument(
        "--extend",
        type=non_negative_int_arg,
        default=None,
        help="times a grid may be extended past the edge where its chosen rate sits (an integer >= 0; "
        "default: 2)",
    )
    cmp.add_argument(
        "--batching-check",
        choices=("best", "all", "none"),
        default=None,
        help="re-run chosen rates in every slot of their program, the check that no result depends on the other "
        "rates batched with it: the best optimizer of each family, all of them, or none (default: best)",
    )
    cmp.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="folder for the report, CSV, JSON, HTML and plots, and the records of each program as it finishes "
        "(default: ./mxopt_compare); checked before anything runs",
    )
    cmp.add_argument(
        "--resume",
        default=None,
        metavar="DIR",
        help="continue the study kept in DIR (made with --out DIR, interrupted or finished): run only what is "
        "missing, then write the outputs from everything; refused if DIR was made under another protocol",
    )
    cmp.add_argument("--no-plots", action="store_true", help="write no PNGs")
    _search_args(cmp)
    _device_args(cmp)
    _launch_args(cmp)

    from .tour.cli import add_tour_parser

    add_tour_parser(sub)
    return parser


def _search_args(p: argparse.ArgumentParser) -> None:
    from .schedules import SCHEDULES
    from .search import DEFAULT_TRIALS

    p.add_argument(
        "--search",
        choices=("grid", "random"),
        default=None,
        help="grid: the learning rate on the preset's grid, everything else at its defaults (the quick mode); "
        "random: --trials configurations of every hyperparameter per optimizer, the same number for each, the "
        "first its defaults (the Crowded Valley's protocol; the research mode) (default: grid, or the resumed "
        "study's)",
    )
    p.add_argument(
        "--trials",
        type=positive_int_arg,
        default=None,
        help=f"configurations per optimizer of a random search (default: {DEFAULT_TRIALS})",
    )
    p.add_argument(
        "--search-seed",
        type=non_negative_int_arg,
        default=None,
        help="seed of the random search: common random numbers, the same draws for every optimizer that has a "
        "hyperparameter, so its trials depend on the seed and its search space only, not its name (default: 0, "
        "or the resumed study's)",
    )
    p.add_argument(
        "--schedule",
        choices=tuple(SCHEDULES),
        default=None,
        help="learning-rate schedule of every run, its peak the tuned rate (default: constant, or the resumed "
        "study's)",
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
        "count, from 1 to the number of cores (default: one per core, at most 8; set before JAX starts, as "
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
    no effect and joining raises ``RuntimeError``. JAX offers no public way to tell whether it has started, so
    the host device count is compared once it is known (when :func:`~mxopt_jax.compare.study` starts), and a
    warning says when the request came too late to take effect.
    """
    import warnings

    from .distributed import check_launch, initialize

    if distributed not in (None, "auto"):
        raise ValueError(f"distributed must be None or 'auto', got {distributed!r}")
    if devices is not None and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 1):
        raise ValueError(f"devices must be an int >= 1 (devices per process), got {devices!r}")
    auto = distributed == "auto"
    check_launch(coordinator, num_processes, process_id, auto=auto)

    import jax

    flags = os.environ.get("XLA_FLAGS", "")
    n = devices or min(cpu_devices(), 8)
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = " ".join([flags, f"--xla_force_host_platform_device_count={n}"]).strip()
        expect_host_devices(n, requested=devices is not None)  # checked when the study starts
    elif devices is not None:
        warnings.warn(
            f"configure_jax(devices={devices}): XLA_FLAGS already sets the host device count ({flags!r}); kept",
            RuntimeWarning,
            stacklevel=2,
        )
    if cache:
        path = os.environ.get("MXOPT_JAX_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "mxopt_jax", "jax"
        )
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    initialize(coordinator, num_processes, process_id, auto=auto)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tour":
        from .tour.cli import run_tour_command

        return run_tour_command(parser, args)
    if args.compare_presets:
        return _compare_presets(args)
    if args.trials is not None and args.search != "random" and args.resume is None:
        parser.error("--trials needs --search random")
    _check_launch(parser, args)
    if args.distributed is None and args.process_id in (None, 0):  # the writer: its folder checked at once
        refused = _check_folder(args)
        if refused:
            return refused
    _start_jax(args)
    with _writer_output():
        return _compare(args)


def _fail(message: str) -> int:
    print(f"mxopt-jax compare: error: {message}", file=sys.stderr)
    return 2


def _check_folder(args: argparse.Namespace) -> int:
    """The output folder of ``--out``/``--resume`` checked before JAX starts: 0, or the status of the error
    printed (a folder that cannot be written, a resume of nothing, an --out that holds a study)."""
    from .store import Store

    try:
        if args.resume is not None:
            root = output_dir(args.resume, "--resume", create=False)
            if args.out is not None and Path(args.out).resolve() != root.resolve():
                return _fail(
                    f"give --out or --resume, not both (--resume writes into its folder): {args.out!r}"
                )
            if not Store(root).exists():
                return _fail(
                    f"--resume: {args.resume!r} holds no study to continue (no spec.json); start one with --out"
                )
        else:
            store = Store(output_dir(args.out or "mxopt_compare", "--out"))
            if store.exists() and store.saved():
                return _fail(
                    f"--out: {str(store.root)!r} already holds a study; continue it with --resume "
                    f"{shlex.quote(str(store.root))}, or give another --out (or delete the folder)"
                )
    except ValueError as e:
        return _fail(str(e))
    return 0


def _compare(args: argparse.Namespace) -> int:
    import jax

    from .contenders import resolve
    from .distributed import is_writer, study_devices
    from .preflight import PreflightError
    from .problems import PROBLEMS
    from .protocol import PRESETS, Preset
    from .store import ResumeError, Store
    from .study import study

    fail = _fail
    # every process knows the folder; only the writer (process 0) checked it, creates or writes anything
    writer = is_writer()
    if writer:
        refused = _check_folder(args)  # again: in a study of several processes, now that the writer is known
        if refused:
            return refused
    root = Path(args.resume if args.resume is not None else (args.out or "mxopt_compare")).expanduser()
    store = Store(root)
    stored: dict[str, Any] | None = None
    if args.resume is not None:
        try:
            stored = store.read_spec()
        except (OSError, ValueError) as e:  # another process's view of the folder (no shared file system)
            return fail(f"--resume: {e}")

    # --devices: on CPU, host devices beyond the cores are refused (they would only share the cores); on a GPU
    # or TPU, more than the process has
    platform = jax.default_backend()
    if args.devices is not None and platform == "cpu":
        try:
            devices_count(args.devices, cpu_devices(), platform, "--devices")
        except ValueError as e:
            return fail(str(e))
    try:
        devices = study_devices(args.devices)
    except ValueError as e:
        return fail(str(e).replace("devices:", "--devices:", 1))

    # with --resume: the resumed study's settings, what was given added (a different protocol is refused)
    old = stored or {}
    preset: str | Preset = args.preset or (Preset(**old["preset"]) if old else "quick")
    problem_names = list(
        dict.fromkeys([*old.get("problems", {}), *(args.problems or ([] if old else PROBLEMS))])
    )
    optimizer_names = list(
        dict.fromkeys([*old.get("contenders", {}), *(args.optimizers or ([] if old else ["all"]))])
    )
    options = old.get("options", {})
    kwargs = {
        "seeds": args.seeds if args.seeds is not None else old.get("seeds"),
        "confirm_seeds": args.confirm_seeds if args.confirm_seeds is not None else old.get("confirm_seeds"),
        "extend": args.extend if args.extend is not None else options.get("extend", 2),
        "check_batching": args.batching_check or options.get("check_batching", "best"),
    }
    if "group_by" in options:
        kwargs["group_by"] = options["group_by"]
    search = {
        "search": args.search or options.get("search", "grid"),
        "trials": args.trials if args.trials is not None else options.get("trials"),
        "search_seed": args.search_seed if args.search_seed is not None else options.get("search_seed", 0),
        "schedule": args.schedule or options.get("schedule", "constant"),
    }
    known = {c.name for c in resolve(None)} | {"all", "mxopt", "optax"}
    problems = [PROBLEMS[name]() for name in problem_names if name in PROBLEMS]
    optimizers = [name for name in optimizer_names if name in known]
    plots = not args.no_plots
    if plots:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(PLOT_HINT, file=sys.stderr)
            plots = False
    name = preset if isinstance(preset, str) else preset.name
    how = f"{search['search']} search" + (
        f", {search['trials'] or 'default'} trials" if search["search"] == "random" else ""
    )
    print(
        f"mxopt-jax compare (preset {name}, {how}, {search['schedule']} schedule): {', '.join(optimizer_names)} "
        f"on {', '.join(problem_names)}; {_devices_text()}; "
        + (f"resuming {root}" if stored else f"writing into {root}"),
        flush=True,
    )
    progress = StudyProgress()
    resume_cmd = f"mxopt-jax compare --resume {shlex.quote(str(root))}"
    try:
        result = study(
            problems,
            optimizers,
            preset if not isinstance(preset, str) else PRESETS[preset],
            devices=devices,
            progress=progress,
            out=None if stored else root,
            resume=root if stored else None,
            plots=plots,
            **kwargs,
            **search,
        )
    except KeyboardInterrupt:
        progress.close()
        saved = store.saved()
        kept = (
            f"{saved} finished program(s) are saved in {store.programs_dir}; nothing else was written"
            if saved
            else "no program had finished, so none is saved"
        )
        print(
            f"\nInterrupted: {kept}. Continue the study (only what is missing runs) with:\n  {resume_cmd}",
            file=sys.stderr,
            flush=True,
        )
        return 130
    except (PreflightError, ResumeError) as e:  # refused before anything ran: a contender, the folder
        progress.close()
        print(f"mxopt-jax compare: error: {e}", file=sys.stderr)
        if isinstance(e, PreflightError):
            print("Drop them with --optimizers.", file=sys.stderr)
        return 2
    print()
    print(result.report())
    written = (
        sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith(".")) if writer else []
    )
    print()
    print(
        f"Wrote into {root}: {', '.join(written)}; programs/ (one file per program: --resume {shlex.quote(str(root))} "
        "continues or extends the study)"
    )
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
