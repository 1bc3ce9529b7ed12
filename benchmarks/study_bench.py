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
``--what-if`` measures settings the study does not offer (yet), each a comma-separated list of changes the child
process makes before it starts the command line, the variants separated by ``;`` (an empty one: the study as
it is), run one after the other, each with a cold cache of its own:

* ``group=problem``: one compiled program per problem, every contender in its ``lax.switch`` (``study._groups``
  replaced; ``benchmarks/compile_groups.py`` compiles the groupings alone);
* ``test=final``: the study's calls evaluate the test split at the final point only (``tuning.TEST_SPLIT``);
* ``capacity=auto``: each program's capacity from ``engine.call_capacity`` for its first pass and an
  extension's six configurations (``runs``, ``runs * 6 // 7``), given ``engine.run_bytes`` of its contenders.

The records of every variant are then held against the first variant's, per field: bit for bit, or the largest
relative difference where both are finite and the first below 10 (a run blowing up amplifies a last-bit
difference without bound); the test split at the final point only (where it is NaN elsewhere by design).

    PYTHONPATH=. .venv/bin/python benchmarks/study_bench.py --studies 1 --modes cold \\
        --what-if ";test=final,capacity=auto,group=problem"
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


#: What the child process changes for each ``--what-if`` item (Python statements, run before the command line).
_WHAT_IF = {
    "group=problem": "study._groups = lambda contenders, group_by: [list(contenders)]",
    "test=final": "tuning.TEST_SPLIT = 'final'",
    "capacity=auto": (
        "_compile = study.compile_group\n"
        "def _capacity(problem, group, runs, **kw):\n"
        "    n = len(kw.get('devices') or jax.devices())\n"
        "    runs = engine.call_capacity((runs, runs * 6 // 7), n, jax.devices()[0].platform, "
        "engine.run_bytes(problem, group))\n"
        "    return _compile(problem, group, runs, **kw)\n"
        "study.compile_group = _capacity"
    ),
}


def _start(what_if: str) -> list[str]:
    """The child's interpreter arguments for one ``--what-if`` variant (``-m mxopt_jax`` for none)."""
    items = [w for w in what_if.split(",") if w]
    unknown = [w for w in items if w not in _WHAT_IF]
    if unknown:
        raise SystemExit(f"--what-if: unknown {unknown}; known: {', '.join(_WHAT_IF)}")
    if not items:
        return ["-m", "mxopt_jax"]
    code = "\n".join(
        [
            "import importlib, sys, jax",
            "study = importlib.import_module('mxopt_jax.compare.study')",
            "tuning = importlib.import_module('mxopt_jax.compare.tuning')",
            "engine = importlib.import_module('mxopt_jax.compare.engine')",
            *(_WHAT_IF[w] for w in items),
            "from mxopt_jax.compare import cli",
            "sys.exit(cli.main(sys.argv[1:]))",
        ]
    )
    return ["-c", code]


def compare_records(a: Path, b: Path) -> str:
    """How the records of study ``b`` (its ``study.json``) differ from those of ``a``, in words."""
    import numpy as np

    def load(path: Path) -> dict[tuple[str, ...], dict[str, object]]:
        doc = json.loads((path / "study.json").read_text())
        return {(r["problem"], r["contender"], r["role"], str(r.get("study", 0))): r for r in doc["records"]}

    def arr(v: object) -> np.ndarray:
        return np.array(v, dtype=object).astype(float)

    ra, rb = load(a), load(b)
    if ra.keys() != rb.keys():
        return f"different records ({len(ra)} against {len(rb)})"
    out = []
    for field in ("train_loss", "val", "test"):
        same, worst = 0, 0.0
        for key, rec in ra.items():
            x, y = arr(rec[field]), arr(rb[key][field])
            if field == "test":
                x, y = x[..., -1:], y[..., -1:]
            if x.shape == y.shape and np.array_equal(x, y, equal_nan=True):
                same += 1
                continue
            tame = np.isfinite(x) & np.isfinite(y) & (np.abs(x) < 10) if x.shape == y.shape else None
            if tame is None or not tame.any():
                worst = float("inf")
                continue
            worst = max(worst, float(np.max(np.abs(x[tame] - y[tame]) / np.maximum(np.abs(x[tame]), 1e-30))))
        out.append(
            f"{field}: {same} of {len(ra)} bit for bit"
            + (f", else within {worst:.1e}" if same < len(ra) else "")
        )
    return "; ".join(out)


def run_once(args: list[str], cache: Path, out: Path, what_if: str = "") -> dict[str, float]:
    """One ``compare`` in a child process (with the ``what_if`` changes); its figures."""
    env = {**os.environ, "MXOPT_JAX_CACHE": str(cache)}
    cmd = [sys.executable, *_start(what_if), "compare", *args, "--no-plots", "--out", str(out)]
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
    ap.add_argument("--what-if", default="", help="variants, ';'-separated (see the docstring)")
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
    print("| command | what if | cache | command s | CPU s | study s | compilation s (programs) | runs s |")
    print("|---|---|---|---|---|---|---|---|")
    variants = args.what_if.split(";")
    for v in variants:
        _start(v)  # refused before anything runs
    with tempfile.TemporaryDirectory(prefix="study_bench_") as tmp:
        for n in (int(x) for x in args.studies.split(",")):
            outs = []
            for k, what_if in enumerate(variants):
                cache = Path(tmp) / f"cache_{n}_{k}"
                cmd = [*base, "--studies", str(n)]
                for mode in args.modes.split(","):
                    out = Path(tmp) / f"out_{n}_{k}_{mode}"
                    f = run_once(cmd, cache, out, what_if)
                    shown = shlex.join(["mxopt-jax", "compare", *cmd])
                    print(
                        f"| `{shown}` | {what_if or '(the study)'} | {mode} | {f['wall']:.0f} | {f['cpu']:.0f} | "
                        f"{f['study']:.0f} | {f['compile']:.0f} ({f['programs']:.0f}) | {f['runs']:.0f} |",
                        flush=True,
                    )
                    outs.append((what_if, mode, out))
            for what_if, mode, out in outs[1:]:
                print(f"\nrecords, {what_if or '(the study)'} ({mode}) against {outs[0][0] or '(the study)'} "
                      f"({outs[0][1]}): {compare_records(outs[0][2], out)}")  # fmt: skip
    print(f"\nload average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
