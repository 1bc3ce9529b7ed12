"""The study's own time: ``mxopt-jax compare`` run as a user runs it, cold and warm, with one study and several.

Each configuration runs the command line in a fresh process (``python -m mxopt_jax compare ... --no-plots``)
with its compilation cache in a folder of its own: first empty (**cold**: every program compiled), then again
with that folder (**warm**: the programs read back from JAX's persistent compilation cache). For every run it
prints the command's wall clock, its CPU seconds (user + sys of the child process, ``resource.getrusage``:
on a shared machine this, not the wall clock, is the comparable figure), and from the study's ``study.json``
the study's own clock, the programs and their compile seconds, and the seconds spent in runs (the records'
``run_s``).

    PYTHONPATH=. .venv/bin/python benchmarks/study_bench.py                      # the quick main job, 1 and 5 studies
    PYTHONPATH=. .venv/bin/python benchmarks/study_bench.py --problems logreg,digits_mlp --contenders adam,sgd,lamb

``--studies 1,5`` and ``--modes cold,warm`` choose what runs; ``--extra`` passes more arguments to ``compare``.
``--grouping problem`` measures a grouping the study does not offer yet: one compiled program per problem, every
contender in its ``lax.switch`` (the child process replaces ``study._groups`` before it starts the command
line; ``benchmarks/compile_groups.py`` compiles the groupings alone), beside the study's own (``family``, the
default; ``--grouping family,problem`` runs both, one after the other, each with a cold cache of its own).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


#: The child's start for ``--grouping problem``: the study's grouping replaced by one group of every contender.
_PER_PROBLEM = (
    "import importlib, sys; study = importlib.import_module('mxopt_jax.compare.study'); "
    "study._groups = lambda contenders, group_by: [list(contenders)]; "
    "from mxopt_jax.compare import cli; sys.exit(cli.main(sys.argv[1:]))"
)


def run_once(args: list[str], cache: Path, out: Path, grouping: str = "family") -> dict[str, float]:
    """One ``compare`` in a child process (its contenders grouped per ``grouping``); its figures."""
    env = {**os.environ, "MXOPT_JAX_CACHE": str(cache)}
    start = ["-m", "mxopt_jax"] if grouping == "family" else ["-c", _PER_PROBLEM]
    cmd = [sys.executable, *start, "compare", *args, "--no-plots", "--out", str(out)]
    c0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if proc.returncode:
        raise SystemExit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    doc = json.loads((out / "study.json").read_text())
    programs = doc["timings"]["programs"]
    return {
        "wall": wall,
        "cpu": cpu,
        "study": float(doc["timings"]["wall_s"]),
        "programs": len(programs),
        "compile": sum(float(p["compile_s"]) for p in programs),
        "runs": sum(float(r.get("run_s") or 0.0) for r in doc.get("records", ())),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default=None, help="default: the quick preset's")
    ap.add_argument("--contenders", default=None, help="default: all")
    ap.add_argument("--studies", default="1,5")
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--extra", default="", help="more arguments for compare (quoted)")
    ap.add_argument("--grouping", default="family", help="family (the study's), problem, or both (comma)")
    args = ap.parse_args()
    base: list[str] = []
    if args.problems:
        base += ["--problems", args.problems]
    if args.contenders:
        base += ["--contenders", args.contenders]
    base += shlex.split(args.extra)
    print(f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; cores: {os.cpu_count()}")
    print(f"load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print(
        "| command | programs per | cache | command s | CPU s | study s | compilation s (programs) | runs s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    groupings = args.grouping.split(",")
    if not set(groupings) <= {"family", "problem"}:
        raise SystemExit(f"--grouping: family, problem or both, got {args.grouping!r}")
    with tempfile.TemporaryDirectory(prefix="study_bench_") as tmp:
        for n in (int(x) for x in args.studies.split(",")):
            for grouping in groupings:
                cache = Path(tmp) / f"cache_{n}_{grouping}"
                cmd = [*base, "--studies", str(n)]
                for mode in args.modes.split(","):
                    out = Path(tmp) / f"out_{n}_{grouping}_{mode}"
                    f = run_once(cmd, cache, out, grouping)
                    shown = shlex.join(["mxopt-jax", "compare", *cmd])
                    print(
                        f"| `{shown}` | {grouping} | {mode} | {f['wall']:.0f} | {f['cpu']:.0f} | {f['study']:.0f} | "
                        f"{f['compile']:.0f} ({f['programs']:.0f}) | {f['runs']:.0f} |",
                        flush=True,
                    )
    print(f"\nload average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
