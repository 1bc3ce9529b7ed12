"""What a run costs against how many runs a call holds, per problem: the measurements behind
``engine.call_capacity``.

For each problem (``--problems``; the quick preset's five by default) one contender's program (``--contender``)
is compiled as the study compiles it for each capacity of ``--capacities`` (runs a call, the run axis sharded
over the host devices); then the programs' calls alternate (``--rounds`` rounds; a shared machine's load falls
on every capacity alike), the test split off, and each call's process CPU seconds (``resource.getrusage``)
divided by its runs gives the CPU milliseconds a run costs (the best round; the wall clock is printed beside
it, and means something only on a quiet machine). The last columns put each capacity against the quick
preset's (36).

    PYTHONPATH=. .venv/bin/python benchmarks/call_capacity.py
    PYTHONPATH=. .venv/bin/python benchmarks/call_capacity.py --problems logreg --capacities 36,74,148,296

Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from mxopt_jax.compare.distributed import configure_jax


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="logreg,digits_mlp,char_lm,recommender,autoencoder")
    ap.add_argument("--contender", default="adam", help="default: %(default)s")
    ap.add_argument("--capacities", default="18,36,74,148", help="default: %(default)s")
    ap.add_argument("--rounds", type=int, default=4, help="default: %(default)s")
    args = ap.parse_args()
    configure_jax(cache=False)

    import jax

    from mxopt_jax.compare import contenders as C
    from mxopt_jax.compare import engine
    from mxopt_jax.compare.presets import PRESETS
    from mxopt_jax.compare.problems import PROBLEMS

    caps = [int(c) for c in args.capacities.split(",")]
    contender = C.resolve([args.contender])[0]
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; load average {os.getloadavg()}\n")
    print(
        "| problem | runs a call | CPU ms a run (best round) | wall ms a run | CPU a run against 36 runs a call |"
    )
    print("|---|---|---|---|---|")
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        steps = PRESETS["quick"].steps(problem)
        progs = [engine.compile_group(problem, [contender], n, steps=steps) for n in caps]
        rates = [{"learning_rate": np.full(p.capacity, contender.default_lr)} for p in progs]
        for prog, lrs in zip(progs, rates, strict=True):
            prog.run(0, lrs, [0], test=False)  # warm up
        cpu = [float("inf")] * len(progs)
        wall = [float("inf")] * len(progs)
        for _ in range(args.rounds):
            for k, (prog, lrs) in enumerate(zip(progs, rates, strict=True)):
                c0, t0 = _cpu(), time.perf_counter()
                prog.run(0, lrs, [0], test=False)
                cpu[k] = min(cpu[k], (_cpu() - c0) / prog.capacity)
                wall[k] = min(wall[k], (time.perf_counter() - t0) / prog.capacity)
        ref = cpu[caps.index(36)] if 36 in caps else cpu[0]
        for k, prog in enumerate(progs):
            print(
                f"| {pname} | {prog.capacity} | {1e3 * cpu[k]:.2f} | {1e3 * wall[k]:.2f} | {cpu[k] / ref:.2f} |",
                flush=True,
            )
        del progs
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
