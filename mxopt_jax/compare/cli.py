"""The command line: ``mxopt-jax compare`` (the study), ``mxopt-jax tour`` (the 2-D test functions), progress."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys
import textwrap
from collections.abc import Sequence
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
        help="quick: 7 rates x 5 seeds, 10 confirmation seeds, short budgets (about 5 minutes on 2 CPU cores); "
        "full: 11 rates x 10 seeds, 20 confirmation seeds, full budgets (default: quick, or the resumed study's)",
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
    _device_args(cmp)

    from .tour.cli import add_tour_parser

    add_tour_parser(sub)
    return parser


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        type=positive_int_arg,
        default=None,
        help="devices to shard the runs over: on CPU, host devices, from 1 to the number of cores (default: one "
        "per core, at most 8; set before JAX starts, as XLA_FLAGS=--xla_force_host_platform_device_count=N); "
        "on a GPU or TPU, the first N devices (default: all)",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not use JAX's persistent compilation cache (default: ~/.cache/mxopt_jax/jax, or "
        "$MXOPT_JAX_CACHE)",
    )


def configure_jax(devices: int | None = None, cache: bool = True) -> None:
    """Set up JAX for a study, before its first computation (the command line calls it first thing).

    On CPU: ``devices`` host devices (an integer from 1 to the number of cores; default: one per core, at
    most 8) through ``--xla_force_host_platform_device_count``, so the runs are sharded over the cores. Flags
    already in ``XLA_FLAGS`` are kept (a warning says so when they set another count).
    ``cache``: JAX's persistent compilation cache in ``$MXOPT_JAX_CACHE`` or ``~/.cache/mxopt_jax/jax``, so a
    second study with the same programs skips compilation. Both must happen before JAX initializes its
    backend; afterwards they have no effect: JAX offers no public way to tell whether it has started, so the
    device count is compared once it is known (when :func:`~mxopt_jax.compare.study` starts, or here if JAX
    had already started), and a warning says when the request did not take effect.
    """
    import os
    import warnings

    import jax

    n = devices_count(devices, cpu_devices(), "cpu", "devices") if devices is not None else None
    flags = os.environ.get("XLA_FLAGS", "")
    want = n or min(cpu_devices(), 8)
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = " ".join([flags, f"--xla_force_host_platform_device_count={want}"]).strip()
        expect_host_devices(want, requested=n is not None)
    elif n is not None:
        warnings.warn(
            f"configure_jax(devices={n}): XLA_FLAGS already sets the host device count ({flags!r}); kept",
            RuntimeWarning,
            stacklevel=2,
        )
    if cache:
        path = os.environ.get("MXOPT_JAX_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "mxopt_jax", "jax"
        )
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "tour":
        from .tour.cli import run_tour_command

        return run_tour_command(parser, args)
    return _compare(args)


def _compare(args: argparse.Namespace) -> int:
    from .store import ResumeError, Store

    def fail(message: str) -> int:
        print(f"mxopt-jax compare: error: {message}", file=sys.stderr)
        return 2

    # the output folder first: a bad --out or --resume fails now, not after the study
    stored: dict[str, Any] | None = None
    try:
        if args.resume is not None:
            root = output_dir(args.resume, "--resume", create=False)
            if args.out is not None and output_dir(args.out, "--out").resolve() != root.resolve():
                return fail(
                    f"give --out or --resume, not both (--resume writes into its folder): {args.out!r}"
                )
            store = Store(root)
            if not store.exists():
                return fail(
                    f"--resume: {args.resume!r} holds no study to continue (no spec.json); start one "
                    "with --out"
                )
            stored = store.read_spec()
        else:
            root = output_dir(args.out or "mxopt_compare", "--out")
            store = Store(root)
            if store.exists() and store.saved():
                return fail(
                    f"--out: {str(root)!r} already holds a study; continue it with --resume {shlex.quote(str(root))}, "
                    "or give another --out (or delete the folder)"
                )
    except ValueError as e:
        return fail(str(e))

    # a count beyond the cores is refused below, once the platform is known (on a GPU it counts GPUs)
    configure_jax(
        args.devices if args.devices is None else min(args.devices, cpu_devices()), cache=not args.no_cache
    )
    import jax

    from .contenders import resolve
    from .preflight import PreflightError
    from .problems import PROBLEMS
    from .protocol import PRESETS, Preset
    from .study import study

    devs = jax.devices()
    platform = devs[0].platform
    devices = None
    if args.devices is not None:
        try:
            n = devices_count(
                args.devices, cpu_devices() if platform == "cpu" else len(devs), platform, "--devices"
            )
        except ValueError as e:
            return fail(str(e))
        if n > len(devs):
            return fail(
                f"--devices {n}: JAX has {len(devs)} {platform} device(s) (XLA_FLAGS sets the host count)"
            )
        devices = devs[:n]

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
    print(
        f"mxopt-jax compare (preset {name}): {', '.join(optimizer_names)} on {', '.join(problem_names)}; "
        f"{len(devices or devs)} {platform} device(s); "
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
        )
    except KeyboardInterrupt:
        progress.close()
        saved = store.saved()
        print(
            f"\nInterrupted. {saved} finished program(s) are saved in {store.programs_dir}; nothing else was "
            f"written. Continue the study (only what is missing runs) with:\n  {resume_cmd}",
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
    written = sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    print()
    print(
        f"Wrote into {root}: {', '.join(written)}; programs/ (one file per program: --resume {shlex.quote(str(root))} "
        "continues or extends the study)"
    )
    return 0
