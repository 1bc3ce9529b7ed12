"""The study's runs against the machine: arithmetic intensity and achieved FLOP/s of a call, per problem.

For each problem (``--problems``; the quick preset's five by default) one contender's program (``--contender``,
``adam``) is compiled as the study compiles it (``engine.compile_group``, the study's CPU options, the run axis
sharded over the host devices) with ``--capacities`` runs a call, and timed: process CPU seconds
(``resource.getrusage``: honest on a shared machine) and wall seconds of a call, the best of ``--repeats``,
with the test split off (a selection call), at the final point (``test="final"``) and at every point.

What a call computes comes from XLA's cost analysis (``Compiled.cost_analysis()``: FLOPs and bytes accessed
of the optimized program). XLA counts the body of a loop once, whatever its trip count, so the program is
counted in its pieces, each the engine's own code vmapped over the call's runs and compiled alone: one
training step (``engine._steps``, one step), an interval's mini-batch draw (``engine._draw``; JAX's threefry
is itself a loop on the CPU, counted once: the draw's integer work is under-counted, a few percent of a step)
and one evaluation of the validation (and test) split; a call is ``steps`` steps and ``steps // eval_every``
draws and evaluations. Intensity is FLOPs per byte accessed (bytes each fused operation reads and writes,
mostly in cache here, not DRAM traffic).

The peak is measured in the same process: a large float32 matmul on every host device at once (one per core,
as a study runs), a large float32 sum for the memory's bandwidth and an element-wise update of 512 KiB repeated
for the L2's (most of a call's bytes accessed are served by the caches: the L2's bandwidth is their roof).

    PYTHONPATH=. .venv/bin/python benchmarks/roofline.py
    PYTHONPATH=. .venv/bin/python benchmarks/roofline.py --problems digits_mlp --capacities 18,36,74,148

Prints Markdown tables (the load average at the start and the end: compare CPU seconds).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine
from mxopt_jax.compare.distributed import configure_jax
from mxopt_jax.compare.presets import PRESETS
from mxopt_jax.compare.problems import DEFAULT, PROBLEMS


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """``(wall s, CPU s)`` of ``fn()``, each the best of ``repeats`` (after one call to warm up)."""
    jax.block_until_ready(fn())
    wall = cpu = float("inf")
    for _ in range(repeats):
        c0, t0 = _cpu(), time.perf_counter()
        jax.block_until_ready(fn())
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, _cpu() - c0)
    return wall, cpu


def _call(group: engine.CompiledGroup, lrs: dict[str, np.ndarray], test: engine.Test) -> Callable[[], Any]:
    return lambda: group.run(0, lrs, [0], test=test)


def peak(n: int = 2048, repeats: int = 5) -> dict[str, float]:
    """Float32 matmul FLOP/s with every host device multiplying its own ``n x n`` matrices at once, and the
    bandwidth of a float32 sum over 256 MiB on every device (memory read once), and of an element-wise update
    of 512 KiB (in each core's L2) repeated (read and written)."""
    devices = jax.devices()
    k = len(devices)
    mesh = jax.sharding.Mesh(np.asarray(devices), ("d",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
    a = jax.device_put(np.random.default_rng(0).standard_normal((k, n, n), np.float32), spec)
    mm = jax.jit(lambda a: jnp.einsum("kij,kjl->kil", a, a), out_shardings=spec)
    wall, cpu = _best(lambda: mm(a), repeats)
    flops = 2.0 * n**3 * k
    m = 64 << 20  # 256 MiB of float32 per device
    x = jax.device_put(np.ones((k, m), np.float32), spec)
    total = jax.jit(lambda x: jnp.sum(x, axis=1), out_shardings=spec)
    bw_wall, _ = _best(lambda: total(x), repeats)
    small, times = (
        128 << 10,
        400,
    )  # 512 KiB of float32 per device (in its core's L2), read and written 400 times

    def scaled(y: jax.Array) -> jax.Array:
        return jax.lax.fori_loop(0, times, lambda i, y: y * 1.0001 + 1e-3, y)

    y = jax.device_put(np.ones((k, small), np.float32), spec)
    cached = jax.jit(scaled, out_shardings=spec)
    cache_wall, _ = _best(lambda: cached(y), repeats)
    return {
        "devices": k,
        "flops_wall": flops / wall,
        "flops_cpu": flops / cpu,
        "bytes_wall": 4.0 * m * k / bw_wall,
        "cache_wall": 2 * 4.0 * small * k * times / cache_wall,
    }


def _cost(fn: Callable[..., Any], *args: Any) -> tuple[float, float]:
    """``(FLOPs, bytes accessed)`` of ``fn(*args)`` as XLA counts the compiled program (loops' bodies once)."""
    compiled = jax.jit(fn).lower(*args).compile(dict(engine.CPU_COMPILER_OPTIONS))
    ca = compiled.cost_analysis()
    ca = ca[0] if isinstance(ca, list | tuple) else ca
    return float(ca.get("flops", 0.0)), float(ca.get("bytes accessed", 0.0))


def call_cost(problem: Any, contender: Any, runs: int, steps: int, tests: int) -> tuple[float, float]:
    """``(FLOPs, bytes accessed)`` of a call of ``runs`` runs of ``steps`` steps that evaluates the test split
    at ``tests`` evaluation points per run (the validation split at every one), from its pieces' costs."""
    train, val, test = jax.tree.map(jnp.asarray, engine._host_data(problem))
    n_train = jax.tree.leaves(train)[0].shape[0]
    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    lrs = jnp.full((runs,), contender.default_lr, jnp.float32)

    def start(lr, key):
        init_key, _, opt_key = jax.random.split(key, 3)
        params = problem.init(init_key)
        tx = contender.factory(bool(problem.tables))(
            {**contender.defaults, "learning_rate": lr}, opt_key, steps
        )
        return params, tx.init(params), problem.initial_state(init_key)

    p, s, m = jax.vmap(start)(lrs, keys)
    rows = jnp.zeros((runs, 1, problem.batch_size), jnp.int32)

    def one_step(lr, key, p, s, m, rows):
        tx = contender.factory(bool(problem.tables))({**contender.defaults, "learning_rate": lr}, key, steps)
        return engine._steps(problem, contender, tx, train)(p, s, m, rows)

    step = _cost(jax.vmap(one_step), lrs, keys, p, s, m, rows)
    every = problem.eval_every
    interval_keys = jax.random.split(jax.random.PRNGKey(1), runs * every).reshape(runs, every, -1)
    draw = _cost(jax.vmap(lambda k: engine._draw(k, problem.batch_size, n_train)), interval_keys)
    ev_val = _cost(jax.vmap(lambda p, m: problem.evaluate(p, m, val)), p, m)
    ev_test = _cost(jax.vmap(lambda p, m: problem.evaluate(p, m, test)), p, m)
    n_evals = steps // every
    flops = steps * step[0] + n_evals * (draw[0] + ev_val[0]) + tests * ev_test[0]
    nbytes = steps * step[1] + n_evals * (draw[1] + ev_val[1]) + tests * ev_test[1]
    return flops, nbytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default=",".join(DEFAULT), help="default: %(default)s")
    ap.add_argument("--contender", default="adam", help="default: %(default)s")
    ap.add_argument("--capacities", default="36", help="runs a call, comma-separated (default: %(default)s)")
    ap.add_argument(
        "--repeats", type=int, default=3, help="calls timed, the best kept (default: %(default)s)"
    )
    args = ap.parse_args()
    configure_jax(cache=False)  # one host device per core, as the command line sets up a study
    top = peak()
    print(
        f"devices: {top['devices']} x {jax.devices()[0].platform}; load average {os.getloadavg()}; compiler "
        f"options {dict(engine.CPU_COMPILER_OPTIONS)}\n\npeak: float32 matmul {top['flops_wall'] / 1e9:.0f} "
        f"GFLOP/s on all devices ({top['flops_cpu'] / 1e9:.0f} GFLOP per CPU s); float32 sum "
        f"{top['bytes_wall'] / 1e9:.1f} GB/s from memory, {top['cache_wall'] / 1e9:.0f} GB/s from L2; ridge "
        f"{top['flops_wall'] / top['bytes_wall']:.1f} FLOP/byte (memory), {top['flops_wall'] / top['cache_wall']:.1f} (L2)\n"
    )
    print(
        "| problem | runs a call | call: test off, CPU s (wall s) | test final | test every point | "
        "GFLOP a call (test off) | FLOP/byte | GFLOP/s (wall) | GFLOP per CPU s | % of peak: wall, CPU s | "
        "GB/s accessed (wall) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    contender = C.resolve([args.contender])[0]
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        steps = PRESETS["quick"].steps(problem)
        for runs in (int(r) for r in args.capacities.split(",")):
            group = engine.compile_group(problem, [contender], runs, steps=steps)
            lrs = {"learning_rate": np.full(group.capacity, contender.default_lr)}
            timed = [_best(_call(group, lrs, t), args.repeats) for t in (False, "final", True)]
            flops, nbytes = call_cost(problem, contender, group.capacity, steps, tests=0)
            wall, cpu = timed[0]
            print(
                f"| {pname} | {group.capacity} | {cpu:.3f} ({wall:.3f}) | {timed[1][1]:.3f} ({timed[1][0]:.3f}) | "
                f"{timed[2][1]:.3f} ({timed[2][0]:.3f}) | {flops / 1e9:.2f} | {flops / nbytes:.2f} | "
                f"{flops / wall / 1e9:.1f} | {flops / cpu / 1e9:.1f} | {100 * flops / wall / top['flops_wall']:.0f}, {100 * flops / cpu / top['flops_cpu']:.0f} | {nbytes / wall / 1e9:.0f} |",
                flush=True,
            )  # fmt: skip
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
