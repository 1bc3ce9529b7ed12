"""The command line, one verb per job: ``mxopt-jax compare`` (run a study), ``mxopt-jax report DIR``
(re-render a saved study), ``mxopt-jax agree DIR_A DIR_B`` (how far two saved studies agree) and
``mxopt-jax tour`` (the 2-D test functions).

The study's settings are the :class:`~mxopt_jax.compare.plan.Plan`'s, one flag each; a command that is
refused (a usage error, a folder that cannot be used, a resumed study's changed setting, too many devices)
says so in one line and leaves nothing behind. Old spellings keep working with a deprecation notice:
``--optimizers`` (now ``--contenders``), ``--batching-check`` (now ``--check-batching``),
``compare --compare-presets A B`` (now ``agree A B``).
"""

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
from typing import Any, NoReturn

from .. import OPTIMIZERS
from .distributed import configure_jax
from .files import resume_command
from .plan import MAX_STUDIES
from .style import PLOT_HINT
from .validation import (
    close_match,
    cpu_devices,
    devices_count,
    did_you_mean,
    names_arg,
    positive_int_arg,
    terminal,
)

__all__ = ["DEPRECATED", "build_parser", "main", "problems_epilog"]

#: Old spellings still taken, with a notice: old flag -> new flag.
DEPRECATED = {"--optimizers": "--contenders", "--batching-check": "--check-batching"}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors: ``mxopt-jax compare: error: argument --seeds: ...`` and where to
    read more, not the usage block; and one spelling per flag (an abbreviation, ``--problem`` for
    ``--problems``, is refused, not guessed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    #: The command's parsers by name (``compare``, ...), set on the top-level parser by :func:`build_parser`.
    commands: dict[str, argparse.ArgumentParser] | None = None

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's, with an unknown flag said by the command it was given to: the close match of that
        command's flags (``--problem``: did you mean ``--problems``?) and its own ``--help``."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            command = (self.commands or {}).get(getattr(ns, "command", None) or "")
            where = command if command is not None else self
            flags = [
                f
                for a in where._actions
                if a.help != argparse.SUPPRESS
                for f in a.option_strings
                if f.startswith("--")
            ]
            given = [e.split("=")[0] for e in extras if e.startswith("--")]
            hint = did_you_mean({g: close_match(g, flags) for g in given})
            where.exit(
                2,
                f"{where.prog}: error: unrecognized arguments: {' '.join(extras)}{hint} (see {where.prog} --help)\n",
            )
        return ns


def _contenders_arg(value: str) -> list[str]:
    from .contenders import OPTAX_BASELINES

    groups = {g: [g] for g in ("all", "mxopt", "optax")}  # resolved by the study (contenders.resolve)
    return names_arg(value, [*OPTIMIZERS, *OPTAX_BASELINES], "contender", groups)


def _problems_arg(value: str) -> list[str]:
    from .problems import PROBLEMS

    return names_arg(value, list(PROBLEMS), "problem", {"all": list(PROBLEMS)})


def problems_epilog() -> str:
    """The built-in problems, one line each (``mxopt-jax compare --help``'s list): data and model, parameter
    count, metric and its direction, target, budget."""
    import re

    from .problems import DEFAULT, PROBLEMS

    cols = min(shutil.get_terminal_size().columns, 100) - 2
    lines = [
        textwrap.fill(
            "problems (nothing is downloaded; --problems NAMES; *: the quick preset's default set, the full preset "
            "runs all; each preset has its own target and budget):",
            cols,
        )
    ]
    width = max(len(n) for n in PROBLEMS)
    for name, factory in PROBLEMS.items():
        p = factory()
        found = re.search(r"([\d,]+) parameters", p.description)
        params = f"{found.group(1)} parameters; " if found else ""
        quick = f" (quick {p.quick_steps})" if p.quick_steps else ""
        reach = p.direction.symbol
        quick_t, full_t = p.target_for("quick"), p.target_for("full")
        targets = (
            f"target {reach} {full_t:g}"
            if quick_t == full_t
            else f"target {reach} {quick_t:g} (quick), {full_t:g} (full)"
        )
        entry = (
            f"{name + ('*' if name in DEFAULT else ''):<{width + 1}}  {p.title}; {params}{p.metric_name} ({p.direction.word} is better), {targets}; "
            f"{p.steps} steps{quick}, batch {p.batch_size}"
        )
        lines.append(textwrap.fill(entry, cols, initial_indent="  ", subsequent_indent=" " * (width + 5)))
    lines += [
        "",
        textwrap.fill(
            "The folder of --out keeps each finished program's records (programs/) and the study's plan, so an "
            "interrupted study (Ctrl-C) loses nothing finished: --resume DIR runs only what is missing, also "
            "problems or contenders added with --problems/--contenders. mxopt-jax report DIR re-renders a saved "
            "study; mxopt-jax agree DIR_A DIR_B says how far two agree.",
            cols,
        ),
    ]
    return "\n".join(lines)


def _wrap(text: str) -> str:
    return textwrap.fill(text, width=min(shutil.get_terminal_size().columns, 100) - 2)


def build_parser() -> argparse.ArgumentParser:
    """The ``mxopt-jax`` argument parser: ``compare``, ``report``, ``agree`` and ``tour``."""
    from .problems import DEFAULT, PROBLEMS

    parser = _Parser(prog="mxopt-jax", description="mxopt_jax: MXNet's optimizers in JAX")
    sub = parser.add_subparsers(dest="command", metavar="{compare,report,agree,tour}", parser_class=_Parser)
    cmp = sub.add_parser(
        "compare",
        help="run a tuned, multi-seed optimizer study on built-in problems (no download)",
        description=_wrap(
            "Tune every contender's learning rate on a log grid (or every hyperparameter by random search), "
            "several seeds per configuration, on real problems; select on validation, report on fresh seeds with 95 % "
            "confidence intervals; "
            "print the ranked tables and the protocol; write report.txt, report.html, runs.csv, summary.csv, "
            "study.json and PNG plots."
        ),
        epilog=problems_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmp.add_argument(
        "--problems",
        type=_problems_arg,
        default=None,
        metavar="NAMES",
        help=f"comma-separated problems from {', '.join(PROBLEMS)} (listed below), or 'all' (default: the quick "
        f"preset runs {', '.join(DEFAULT)}, the full preset all of them; with --resume, the resumed study's, these "
        "added)",
    )
    cmp.add_argument(
        "--contenders",
        type=_contenders_arg,
        default=None,
        metavar="NAMES",
        help="comma-separated MXNet names and optax baselines (optax.sgd, optax.adam, optax.adamw, optax.lamb), "
        "or 'all', 'mxopt', 'optax' (default: all; with --resume, the resumed study's, these added)",
    )
    cmp.add_argument("--optimizers", dest="contenders", type=_contenders_arg, help=argparse.SUPPRESS)
    _plan_args(cmp)
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
        help="continue the study kept in DIR (made with --out DIR, interrupted or finished) under its stored "
        "settings: run only what is missing, then write the outputs from everything; a setting given with "
        "another value than the stored one is refused",
    )
    cmp.add_argument("--no-plots", action="store_true", help="write no PNGs")
    cmp.add_argument("--family", **_FAMILY_ARG)
    cmp.add_argument(
        "--compare-presets",
        nargs=2,
        metavar=("DIR_A", "DIR_B"),
        default=None,
        help=argparse.SUPPRESS,  # deprecated: mxopt-jax agree DIR_A DIR_B (a notice says so when it is used)
    )
    _device_args(cmp)
    _launch_args(cmp)

    rep = sub.add_parser(
        "report",
        help="re-render a saved study (text, HTML, summary, plots) from its study.json; runs nothing",
        description=_wrap(
            "Read DIR/study.json (written by mxopt-jax compare; every field checked, the selections held to the "
            "records), print the report and write report.txt, report.html, runs.csv, summary.csv, claims.csv "
            "and the PNG plots again from its records (into DIR, or --out). study.json is not changed; nothing "
            "is trained or compiled."
        ),
    )
    rep.add_argument("dir", metavar="DIR", help="a study's folder (holding study.json) or the file itself")
    rep.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="write the rendered files here (default: DIR itself, whose report.txt, runs.csv, summary.csv, "
        "claims.csv, report.html and PNGs are then replaced, rendered again from its study.json, which is never "
        "touched)",
    )
    rep.add_argument("--no-plots", action="store_true", help="write no PNGs")
    rep.add_argument("--family", **_FAMILY_ARG)

    agr = sub.add_parser(
        "agree",
        help="how far two saved studies agree: Kendall's tau and the top-k overlap per problem",
        description=_wrap(
            "Compare the tuned test means of two saved studies (their folders or study.json files, each read and "
            "checked as mxopt-jax report reads it), problem by problem: Kendall's tau-b over the contenders both "
            "ran with its p-value and what tau can show at that size, and the overlap of the top k. Runs nothing."
        ),
    )
    agr.add_argument("dir_a", metavar="DIR_A")
    agr.add_argument("dir_b", metavar="DIR_B")
    agr.add_argument(
        "--top", type=positive_int_arg, default=3, metavar="K", help="k of the top-k overlap (default: 3)"
    )
    for side in ("a", "b"):
        agr.add_argument(
            f"--study-{side}",
            type=positive_int_arg,
            default=1,
            metavar="N",
            help=f"which of DIR_{side.upper()}'s independent studies (--studies) to compare, numbered as the report "
            "numbers them: 1 the first (default), 2 the second, ... (summary.csv's study column counts from 0)",
        )

    from .tour.cli import add_tour_parser

    add_tour_parser(sub)
    parser.commands = dict(sub.choices)
    return parser


def _preset_words(name: str) -> str:
    from .presets import PRESETS

    p = PRESETS[name]
    return f"{p.grid_points} rates x {p.seeds} seeds, {p.confirm_seeds} confirmation seeds"


def _setting_arg(name: str) -> Any:
    """The flag type of integer setting ``name``: the number, checked by the plan
    (:func:`mxopt_jax.compare.plan.check_setting`), its words the usage error."""
    from .plan import check_setting

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {value!r}") from None
        try:
            check_setting(name, n)
        except (ValueError, TypeError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return n

    return parse


def _setting_help() -> dict[str, str]:
    """What each setting's flag adds to the plan's words (:data:`mxopt_jax.compare.plan.SETTINGS`)."""
    from .search import DEFAULT_TRIALS

    return {
        "preset": f" (quick: {_preset_words('quick')}, short budgets: it ranks early progress, minutes on 2 CPU "
        f"cores; full: {_preset_words('full')}, full budgets: the rankings to cite; default: quick)",
        "seeds": ": how many, 0, 1, ... (default: the preset's)",
        "confirm_seeds": ": how many, 1000, 1001, ... (default: the preset's)",
        "search": " (default: grid)",
        "trials": f" (needs --search random; default: {DEFAULT_TRIALS})",
        "search_seed": " (default: 0)",
        "schedule": " (default: constant)",
        "studies": f" (1 to {MAX_STUDIES}; default: 1): the report gives the spread across them",
        "extend": " (default: 2)",
        "check_batching": ": the check that no result depends on the other runs batched with it (default: best)",
        "group_by": " (default: problem)",
    }


def _plan_args(p: argparse.ArgumentParser) -> None:
    """One flag per setting of the plan, made from :data:`mxopt_jax.compare.plan.SETTINGS` (``--confirm-seeds``
    for ``confirm_seeds``): a named setting's choices are the plan's (:data:`~mxopt_jax.compare.plan.CHOICES`),
    an integer one is checked by the plan (:func:`~mxopt_jax.compare.plan.check_setting`); every default is "not
    given": the preset's, or the resumed study's."""
    from .plan import CHOICES, SETTINGS

    more = _setting_help()
    g = p.add_argument_group("the study's settings (default: the preset's, or the resumed study's)")
    for key, words in SETTINGS.items():
        flag, choices = "--" + key.replace("_", "-"), CHOICES.get(key)
        if choices:
            g.add_argument(flag, dest=key, choices=choices, default=None, help=words + more[key])
        else:
            g.add_argument(
                flag, dest=key, type=_setting_arg(key), default=None, metavar="N", help=words + more[key]
            )
    g.add_argument(
        "--batching-check", dest="check_batching", choices=CHOICES["check_batching"], help=argparse.SUPPRESS
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


def _check_launch(args: argparse.Namespace) -> str | None:
    """Bad launch flags, said before JAX starts (and before it waits for processes): the message, or None."""
    from .distributed import check_launch

    try:
        check_launch(args.coordinator, args.num_processes, args.process_id, auto=args.distributed == "auto")
    except (TypeError, ValueError) as e:
        message = str(e).replace("auto=True; ", "")
        for name in ("num_processes", "process_id", "coordinator"):  # the API's words as the flags
            message = message.replace(name, "--" + name.replace("_", "-"))
        return message
    return None


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


def _fill(text: str) -> str:
    """A line the command prints, wrapped at the report's 120 columns (continuations indented; a word, such as
    a path, never broken)."""
    return textwrap.fill(text, 120, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)


def _devices_text() -> str:
    from .distributed import process_info

    info = process_info()
    where = f" in {info['processes']} processes" if info["processes"] > 1 else ""
    return f"{info['devices']} {info['platform']} device(s){where}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mxopt-jax`` and ``python -m mxopt_jax``.

    Output piped into a reader that stops early (``mxopt-jax report DIR | head``) ends the command quietly, as
    Python's documentation recommends for SIGPIPE: the rest of standard output goes to ``os.devnull`` and the
    status is 1, with no ``BrokenPipeError`` traceback. What a study or a report writes into its folder is
    written before the report is printed, so it is complete either way.
    """
    try:
        code = _main(argv)
        sys.stdout.flush()  # a broken pipe shows here at the latest, not at the interpreter's exit
    except BrokenPipeError:
        _silence_stdout()
        return 1
    return code


def _silence_stdout() -> None:
    """Standard output sent to ``os.devnull`` (its file descriptor too, so nothing fails at exit)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not argv:
        parser.error("give a command: compare, report, agree or tour")
    for old, new in DEPRECATED.items():
        if any(a == old or a.startswith(old + "=") for a in argv):
            print(f"mxopt-jax: {old} is deprecated; it is now {new} (same meaning)", file=sys.stderr)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("give a command: compare, report, agree or tour")
    if args.command == "tour":
        from .tour.cli import run_tour_command

        return run_tour_command(args)
    if args.command == "report":
        return _report_command(args)
    if args.command == "agree":
        return _agree_command(args.dir_a, args.dir_b, args.top, args.study_a, args.study_b)
    if args.compare_presets:
        print(
            "mxopt-jax: compare --compare-presets is deprecated; it is now mxopt-jax agree DIR_A DIR_B",
            file=sys.stderr,
        )
        dir_a, dir_b = args.compare_presets
        return _agree_command(dir_a, dir_b, 3)
    return _compare_command(args)


def _fail(message: str, command: str = "compare", code: int = 2) -> int:
    """One line on stderr (escaped: a message may quote a folder's contents) and the status ``code``."""
    print(terminal(f"mxopt-jax {command}: error: {message}"), file=sys.stderr)
    return code


def _say(text: str = "", **kwargs: Any) -> None:
    """``print`` for what the command line prints of a study: escaped (:func:`~mxopt_jax.compare.CHECKSMOD.
    terminal`), so nothing read from a folder can act on the terminal."""
    print(terminal(text), **kwargs)


def _unwritable(e: OSError, folder: Path) -> str:
    """What went wrong writing into ``folder`` (a full disk: ``No space left on device``), in words."""
    where = f" ({e.filename})" if e.filename else ""
    return f"cannot write into {folder}: {e.strerror or e}{where}"


def _plots(no_plots: bool) -> bool:
    """Whether to draw the PNGs: asked for and matplotlib installed (else the hint, once, on stderr)."""
    if no_plots:
        return False
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(PLOT_HINT, file=sys.stderr)
        return False
    return True


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The plan's settings given on the command line (None: not given)."""
    from .plan import SETTINGS

    return {k: getattr(args, k) for k in SETTINGS if hasattr(args, k)}


#: ``--family`` of ``compare`` and ``report``: the report's error control.
_FAMILY_ARG: dict[str, Any] = dict(
    choices=("table", "report"),
    default="table",
    help="the report's error control: 'table' (default) corrects each table's pairs by Holm on their own (each "
    "table's chance of any false claim is at most 5 %%; a report of many tables can hold one more often); "
    "'report' makes every pair of every table one Holm family (at most 5 %% for the whole report, less power), "
    "and shows the overall ranking's interval and P(best) from 9 problems on",
)


def _compare_command(args: argparse.Namespace) -> int:
    """``mxopt-jax compare``: every check first (the flags, the folder, a resumed study's settings, the
    launch), then JAX, the devices, the study."""
    from .plan import Plan, PlanError
    from .store import open_folder

    given = _given(args)
    problem = _check_launch(args)
    if problem:
        return _fail(problem)
    writer = args.distributed is None and args.process_id in (None, 0)  # the writer checks its folder at once
    root = Path(args.resume if args.resume is not None else (args.out or "mxopt_compare")).expanduser()
    if (
        args.resume is not None
        and args.out is not None
        and Path(args.out).expanduser().resolve() != root.resolve()
    ):
        return _fail(f"give --out or --resume, not both (--resume writes into its folder): {args.out!r}")
    stored: dict[str, Any] | None = None
    plan: Plan | None = None
    try:
        if args.resume is None:  # every setting checked, by the plan, before the folder is touched
            plan = Plan.make(**{k: v for k, v in given.items() if v is not None})
        if writer:
            store = open_folder(
                root, resume=args.resume is not None, what="--resume" if args.resume else "--out"
            )
            if args.resume is not None:
                stored = store.read_spec()
                plan = Plan.from_dict(stored["plan"]).resumed(**given)  # refused before anything starts
    except PlanError as e:
        return _fail(f"--resume {shlex.quote(str(root))}: {e}")
    except (ValueError, TypeError) as e:
        return _fail(str(e))
    _start_jax(args)
    with _writer_output():
        return _compare(args, root, stored, plan, given)


def _compare(
    args: argparse.Namespace, root: Path, stored: dict[str, Any] | None, plan: Any, given: dict[str, Any]
) -> int:
    import jax

    from .contenders import resolve
    from .distributed import is_writer, study_devices
    from .plan import PlanError
    from .preflight import PreflightError
    from .problems import DEFAULT, PROBLEMS
    from .progress import StudyProgress
    from .store import ResumeError, Store
    from .study import study

    writer = is_writer()
    store = Store(root)
    if args.resume is not None and stored is None:
        try:  # a process that did not check the folder (several processes): its own view of it
            stored = store.read_spec()
        except (OSError, ValueError) as e:
            return _fail(f"--resume: {e}")

    # --devices: on CPU, host devices beyond the cores are refused (they would only share the cores); on a GPU
    # or TPU, more than the process has
    platform = jax.default_backend()
    try:
        if args.devices is not None and platform == "cpu":
            devices_count(args.devices, cpu_devices(), platform, "--devices")
        devices = study_devices(args.devices)
    except ValueError as e:
        return _fail(str(e).replace("devices:", "--devices:", 1))

    settings = {k: v for k, v in given.items() if v is not None}
    if plan is None:  # a process that did not check the folder: the stored plan, as study() will take it
        from .plan import Plan

        plan = Plan.from_dict(stored["plan"]) if stored else Plan.make(**settings)
    shown = plan
    # with --resume: the resumed study's problems and contenders, what was given added; no problems named: the
    # quick preset runs the representative ones (problems.DEFAULT), the full preset all of them
    old = stored or {}
    default = list(PROBLEMS) if plan.preset.name == "full" else list(DEFAULT)
    problem_names = list(
        dict.fromkeys([*old.get("problems", {}), *(args.problems or ([] if old else default))])
    )
    contender_names = list(
        dict.fromkeys([*old.get("contenders", {}), *(args.contenders or ([] if old else ["all"]))])
    )
    known = {c.name for c in resolve(None)} | {"all", "mxopt", "optax"}
    problems = [PROBLEMS[name]() for name in problem_names if name in PROBLEMS]
    contenders = [name for name in contender_names if name in known]
    plots = _plots(args.no_plots)
    how = f"{shown.search} search" + (f", {shown.trials} trials" if shown.search == "random" else "")
    studies = f", {shown.studies} independent studies" if shown.studies > 1 else ""
    _say(
        _fill(
            f"mxopt-jax compare (preset {shown.preset.name}, {how}, {shown.schedule} schedule{studies}): "
            f"{', '.join(contender_names)} on {', '.join(problem_names)}; {_devices_text()}; "
            + (f"resuming {root}" if stored else f"writing into {root}")
        ),
        flush=True,
    )
    progress = StudyProgress()
    resume_cmd = resume_command(root)
    try:
        result = study(
            problems,
            contenders,
            devices=devices,
            progress=progress,
            out=None if stored else root,
            resume=root if stored else None,
            plots=plots,
            **settings,
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
    except BrokenPipeError:  # a reader that stopped early: main() ends quietly
        raise
    except OSError as e:  # a full disk, say: what finished is kept, and no file is left half-written
        progress.close()
        if not writer:
            raise
        saved = store.saved()
        if store.exists():
            kept = (
                f"{saved} finished program(s) are kept in {store.programs_dir}"
                if saved
                else "none had finished"
            )
            then = f"make room, then continue (only what is missing runs, then the outputs): {resume_command(root)}"
        else:
            kept, then = "nothing was saved", "make room and run it again"
        return _fail(f"{_unwritable(e, root)}; {kept}, and no file was left half-written; {then}", code=1)
    except (
        PreflightError,
        ResumeError,
        PlanError,
    ) as e:  # refused before anything ran: a contender, the folder
        progress.close()
        message = str(e)
        if isinstance(e, PreflightError):
            message += "\nDrop them with --contenders."
        return _fail(message)
    if args.family != "table":  # the report-wide family: the rendered outputs written again under it
        from .report import write_study

        write_study(result, root, plots=plots, data=False, family=args.family)
    _say()
    _say(result.report(args.family))
    written = (
        sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith(".")) if writer else []
    )
    _say()
    _say(_fill(f"Wrote into {root}: {', '.join(written)}; programs/ (one file per program)."))
    _say(f"To continue or extend the study: {resume_command(root)}")
    return 0


def _report_command(args: argparse.Namespace) -> int:
    """``mxopt-jax report DIR``: a saved study re-rendered from its records (nothing trained or compiled); a
    ``study.json`` that cannot be read as a study (a field of the wrong type, records that are not its plan's,
    selections that are not its records') is refused in one line naming the file and the field."""
    from .files import output_dir
    from .report import write_study
    from .study import Study

    path = Path(args.dir).expanduser()
    source = path / "study.json" if path.is_dir() else path
    if not source.is_file():
        return _fail(
            f"no study.json at {str(source)!r} (write one with mxopt-jax compare --out DIR)", "report"
        )
    try:
        out = output_dir(args.out if args.out is not None else source.parent, "--out", create=True)
        result = Study.from_json(source)
    except (OSError, ValueError, TypeError) as e:
        return _fail(str(e), "report")
    plots = _plots(args.no_plots)
    text = result.report(args.family)
    try:  # written first: a reader that stops early (| head) loses nothing
        written = write_study(result, out, plots=plots, data=False, family=args.family)
    except OSError as e:  # a full disk, a link where the app writes a folder of its own
        return _fail(
            f"{_unwritable(e, out)}; no file was left half-written (study.json is unchanged)", "report", 1
        )
    _say(text)
    _say()
    files = ", ".join(p.name for p in written)
    if out.resolve() == source.parent.resolve():  # the saved study's own folder: its rendered files replaced
        done = (
            f"Replaced the rendered files of {out} ({files}) with this report (--family {args.family}), from the "
            f"records of {source}, which is unchanged. To keep the folder's report as it was, write elsewhere "
            "with --out DIR."
        )
    else:
        done = f"Wrote into {out}: {files} (--family {args.family}), from the records of {source}, which is unchanged"
    _say(_fill(done))
    return 0


def _agree_command(a: str, b: str, k: int, study_a: int = 1, study_b: int = 1) -> int:
    """``mxopt-jax agree DIR_A DIR_B [--study-a N] [--study-b N]``: how far two saved studies agree (no JAX,
    nothing run), each read as ``mxopt-jax report`` reads it; it names the studies compared (numbered from 1, as
    the report numbers them: ``study_a``, ``study_b``) and warns when they share seeds."""
    from .report.agreement import compare_studies

    try:
        agreement = compare_studies(a, b, k=k, study_a=study_a, study_b=study_b)
    except (OSError, ValueError, TypeError) as e:
        return _fail(str(e), "agree")
    _say(str(agreement))
    return 0
