"""This checkout's engine against another version of it, call for call, in one process.

The other version is an ``engine.py`` file (``--baseline``; e.g. ``git show REV:mxopt_jax/compare/engine.py >
/tmp/engine_old.py``), imported beside this checkout's as a module of the same package (so both use this
checkout's problems, contenders and records). For each problem (``--problems``) and contender group
(``--groups``: ``+``-joined names, comma-separated), both engines compile the group's program as the study does
(the study's CPU options, the run axis sharded over the host devices, ``--capacity`` runs a call); then the
two programs' calls alternate, ``--rounds`` times, with the test split off (a selection call) and on (every
point; the baseline's only other setting): process CPU seconds of each call (``resource.getrusage``), the best
and the median, so a shared machine's load falls on both alike. The records of the two are compared bit for
bit (train loss, validation and test metrics, divergence).

    git show main:mxopt_jax/compare/engine.py > /tmp/engine_main.py
    PYTHONPATH=. .venv/bin/python benchmarks/engine_ab.py --baseline /tmp/engine_main.py

Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import sys
from typing import Any

import numpy as np

from mxopt_jax.compare.distributed import configure_jax


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_engine(path: str) -> Any:
    """``path`` (an ``engine.py``) imported as ``mxopt_jax.compare._engine_baseline``."""
    name = "mxopt_jax.compare._engine_baseline"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _same(a: Any, b: Any) -> bool:
    fields = ("train_loss", "val", "test", "diverged_at")
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in fields)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", required=True, help="an engine.py to compare with")
    ap.add_argument("--problems", default="logreg,digits_mlp,char_lm,recommender,autoencoder")
    ap.add_argument(
        "--groups", default="adam", help="contender groups, e.g. adam,sgd+nag (default: %(default)s)"
    )
    ap.add_argument("--capacity", type=int, default=36, help="runs a call (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=5, help="calls of each program (default: %(default)s)")
    args = ap.parse_args()
    configure_jax(cache=False)

    from mxopt_jax.compare import contenders as C
    from mxopt_jax.compare import engine
    from mxopt_jax.compare.presets import PRESETS
    from mxopt_jax.compare.problems import PROBLEMS

    old = load_engine(args.baseline)
    print(
        f"load average {os.getloadavg()}; {args.capacity} runs a call; {args.rounds} calls each, alternated\n"
    )
    print(
        "| problem | group | test | baseline: CPU s a call, best (median) | this: best (median) | "
        "this / baseline (medians) | records |"
    )
    print("|---|---|---|---|---|---|---|")
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        steps = PRESETS["quick"].steps(problem)
        for names in args.groups.split(","):
            cs = C.resolve(names.split("+"))
            progs = [e.compile_group(problem, cs, args.capacity, steps=steps) for e in (old, engine)]
            cap = progs[0].capacity
            for test in (False, True):
                for i, c in enumerate(cs):
                    lrs = {"learning_rate": c.default_lr * 10.0 ** (0.5 * (np.arange(cap) - cap // 2) / 6)}
                    times: list[list[float]] = [[], []]
                    recs = [prog.run(i, lrs, [0], test=test) for prog in progs]  # warm up
                    for _ in range(args.rounds):
                        for k, prog in enumerate(progs):
                            c0 = _cpu()
                            recs[k] = prog.run(i, lrs, [0], test=test)
                            times[k].append(_cpu() - c0)
                    med = [statistics.median(t) for t in times]
                    print(
                        f"| {pname} | {c.name} ({names}) | {'every point' if test else 'off'} | "
                        f"{min(times[0]):.3f} ({med[0]:.3f}) | {min(times[1]):.3f} ({med[1]:.3f}) | "
                        f"{med[1] / med[0]:.2f} | {'bit for bit' if _same(*recs) else 'DIFFER'} |",
                        flush=True,
                    )
            del progs
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
