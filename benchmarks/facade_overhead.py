"""Host overhead of the MXNet-style facade on workload C (2000 parameters of 256 float32, Adam).

Prints the median microseconds per ``updater(i, grad, weight)`` call in a Python loop over the indices
(per-index) and per parameter of one ``updater(indices, grads, weights)`` list call with ``aggregate_num``
chunks. Each sweep ends with ``block_until_ready`` on its last weight; process CPU time (all threads) is printed too,
as it is less sensitive to other processes on a shared machine. Figures are NOISY
(shared machine, CPU backend): compare runs taken back to back on the same machine only.

    PYTHONPATH=. python benchmarks/facade_overhead.py [--params 2000] [--size 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

import mxopt_jax


def _sweep_per_index(updater, grads, weights):
    n = len(weights)
    for i in range(n):
        weights[i] = updater(i, grads[i], weights[i])
    jax.block_until_ready(weights[-1])


def _sweep_list(updater, grads, weights):
    new = updater(list(range(len(weights))), grads, weights)
    jax.block_until_ready(new[-1])
    weights[:] = new


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--params", type=int, default=2000)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--aggregate", type=int, default=4, help="aggregate_num of the list call")
    p.add_argument("--skip-list", action="store_true")
    p.add_argument(
        "--sync-cpu",
        action="store_true",
        help="jax_cpu_enable_async_dispatch=False: run each small CPU program in the calling thread",
    )
    a = p.parse_args()
    if a.sync_cpu:
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    rng = np.random.default_rng(0)
    w0 = [jax.numpy.asarray(rng.standard_normal(a.size, dtype=np.float32)) for _ in range(a.params)]
    g = [jax.numpy.asarray(rng.standard_normal(a.size, dtype=np.float32)) for _ in range(a.params)]
    print(
        f"mxopt_jax {mxopt_jax.__file__}; jax {jax.__version__}; backend {jax.default_backend()}; "
        f"cpu async dispatch {jax.config.values['jax_cpu_enable_async_dispatch']}"
    )
    modes = [("per-index updater(i, g, w)", 1, _sweep_per_index)]
    if not a.skip_list:
        modes.append((f"list updater(idx, gs, ws), aggregate_num={a.aggregate}", a.aggregate, _sweep_list))
    for label, agg, sweep in modes:
        upd = mxopt_jax.get_updater(mxopt_jax.create("adam", learning_rate=1e-3, aggregate_num=agg))
        weights = list(w0)
        sweep(upd, g, weights)  # warm-up: states, compilation
        times, cpu = [], []
        for _ in range(a.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            sweep(upd, g, weights)
            times.append((time.perf_counter() - t0) / a.params * 1e6)
            cpu.append((time.process_time() - c0) / a.params * 1e6)
        print(
            f"{label}: median {statistics.median(times):.1f} us/parameter wall "
            f"(min {min(times):.1f}, max {max(times):.1f}), {statistics.median(cpu):.1f} us process CPU; "
            f"{a.repeats} sweeps of {a.params}; noisy"
        )


if __name__ == "__main__":
    main()
