"""What one training step of a study's run costs, and what in it: the runs' side of a study's time.

A study's runs are ``engine.train_run`` vmapped over the runs of a call, sharded over the host devices (one
per core, as the command line sets them up). This measures that, one contender at a time, ``--runs`` runs a
call (the quick preset's 36): process CPU seconds of a call (``resource.getrusage``: honest on a shared
machine) divided by runs x steps, with
the problem's evaluations and with its metric replaced by a constant (the evaluations' share). ``--pieces``
adds what a step of the ``recommender`` problem spends outside the model: the mini-batch draw (``randint`` of
512 ids), summing repeated rows of a row-sparse gradient both ways ``unique_rows`` knows (through the table,
by sorting the ids), and JAX's threefry hash as lowered for the CPU against the same hash written out in
``jax.numpy`` (checked bit for bit against ``jax.extend.random.threefry_2x32``).

    PYTHONPATH=. .venv/bin/python benchmarks/step_profile.py --cases logreg:adam,recommender:adam --pieces

Every program is compiled as the study compiles it on the CPU (``engine.CPU_COMPILER_OPTIONS``). Prints one
Markdown table per part.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mxopt_jax._src import rowsparse
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine
from mxopt_jax.compare.distributed import configure_jax
from mxopt_jax.compare.presets import PRESETS
from mxopt_jax.compare.problems import PROBLEMS
from mxopt_jax.sparse import RowSparse

DEFAULT_CASES = (
    "logreg:adam,digits_mlp:adam,digits_mlp:sgld,char_lm:adam,autoencoder:adam,"
    "recommender:adam,recommender:optax.adam,recommender:sgld"
)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _sharded(*arrays: jax.Array) -> tuple[jax.Array, ...]:
    """The arrays with their first axis (the runs) sharded over every device, as the study shards its calls."""
    mesh = jax.sharding.Mesh(np.asarray(jax.devices()), ("runs",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("runs"))
    return tuple(jax.device_put(a, spec) for a in arrays)


def _per_element_us(
    fn: Callable[..., Any], args: tuple, elements: int, repeats: int = 3
) -> tuple[float, float]:
    """Compile ``fn`` as the study does; ``(compile CPU s, best call CPU us per element)``."""
    lowered = jax.jit(fn).lower(*args)
    c0 = _cpu()
    compiled = lowered.compile(dict(engine.CPU_COMPILER_OPTIONS))
    compile_s = _cpu() - c0
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(repeats):
        c0 = _cpu()
        jax.block_until_ready(compiled(*args))
        best = min(best, _cpu() - c0)
    return compile_s, best / elements * 1e6


def _run_cost(pname: str, cname: str, runs: int, evaluate: bool) -> tuple[float, float]:
    problem = PROBLEMS[pname]()
    if not evaluate:
        constant = (
            (lambda p, b: jnp.float32(0.0)) if not problem.stateful else (lambda p, s, b: jnp.float32(0.0))
        )
        problem = dataclasses.replace(problem, metric=constant)
    steps = PRESETS["quick"].steps(problem)
    contender = {c.name: c for c in C.default_contenders()}[cname]
    data = jax.tree.map(jnp.asarray, problem.data())

    def call(lrs, keys):
        def one(lr, key):
            return engine.train_run(problem, contender, {"learning_rate": lr}, key, data, steps, test=False)

        return jax.vmap(one)(lrs, keys)

    lrs = jnp.full((runs,), contender.default_lr, jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    return _per_element_us(call, _sharded(lrs, keys), runs * steps)


def _threefry_jnp(key: jax.Array, count: jax.Array) -> jax.Array:
    """Threefry-2x32 (Salmon et al. 2011, 20 rounds), the hash of ``jax.extend.random.threefry_2x32``, in
    ``jax.numpy``: what XLA makes of the hash when it is written out rather than lowered as JAX lowers it."""
    k0, k1 = key[0], key[1]
    ks = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    half = count.shape[0] // 2
    x0, x1 = count[:half] + ks[0], count[half:] + ks[1]
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    for i in range(5):
        for r in rotations[i % 2]:
            x0 = x0 + x1
            x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return jnp.concatenate([x0, x1])


def _pieces(runs: int) -> list[tuple[str, float]]:
    problem = PROBLEMS["recommender"]()
    train = jax.tree.map(jnp.asarray, problem.data()[0])
    n_train, batch, steps = train[0].shape[0], problem.batch_size, 50
    (keys,) = _sharded(jax.random.split(jax.random.PRNGKey(0), runs))
    out = []

    def draw(keys):
        def run(key):
            def step(acc, k):
                return acc + jnp.sum(jax.random.randint(k, (batch,), 0, n_train)).astype(jnp.float32), None

            return jax.lax.scan(step, jnp.float32(0), jax.random.split(key, steps))[0]

        return jax.vmap(run)(keys)

    out.append(
        (
            f"the mini-batch draw ({batch} ids, jax.random.randint)",
            _per_element_us(draw, (keys,), runs * steps)[1],
        )
    )
    for rows, width in ((2_000, 8), (500, 1)):
        ids = jax.random.randint(jax.random.PRNGKey(1), (runs, steps, batch), 0, rows)
        vals = jax.random.normal(
            jax.random.PRNGKey(2), (runs, steps, batch) + ((width,) if width > 1 else ())
        )
        shape = (rows, width) if width > 1 else (rows,)
        for through_table in (True, False):

            def dedup(ids, vals, through_table=through_table, shape=shape):
                def run(ix, v):
                    def step(acc, a):
                        r, s = rowsparse.unique_rows(RowSparse(a[0], a[1], shape), through_table)
                        return acc + jnp.sum(s) + jnp.sum(r), None

                    return jax.lax.scan(step, jnp.float32(0), (ix, v))[0]

                return jax.vmap(run)(ids, vals)

            way = "through the table" if through_table else "sorting the ids"
            label = f"repeated rows summed, {batch} ids into {rows:,} x {width}: {way}"
            out.append((label, _per_element_us(dedup, _sharded(ids, vals), runs * steps)[1]))
    return out


def _threefry() -> list[tuple[str, float]]:
    n = 1 << 20
    count = jnp.arange(2 * n, dtype=jnp.uint32)
    key = jnp.asarray([123, 456], jnp.uint32)
    public = jax.jit(jax.extend.random.threefry_2x32)
    assert np.array_equal(np.asarray(public(key, count)), np.asarray(jax.jit(_threefry_jnp)(key, count)))
    return [
        ("threefry_2x32 as JAX lowers it for the CPU", _per_element_us(jax.extend.random.threefry_2x32, (key, count), n)[1] * 1e3),
        ("the same hash written in jax.numpy (equal bit for bit)", _per_element_us(_threefry_jnp, (key, count), n)[1] * 1e3),
        ("jax.random.bits, per pair of 32-bit words", _per_element_us(lambda k: jax.random.bits(k, (2 * n,)), (jax.random.PRNGKey(0),), n)[1] * 1e3),
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="problem:contender,... (default: %(default)s)")
    ap.add_argument("--runs", type=int, default=36, help="runs vmapped in one call (default: %(default)s)")
    ap.add_argument(
        "--pieces", action="store_true", help="also the recommender's pieces and the threefry hash"
    )
    args = ap.parse_args()
    configure_jax(cache=False)  # one host device per core, as the command line sets up a study
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; load average {os.getloadavg()}; "
          f"{args.runs} runs a call; compiler options {dict(engine.CPU_COMPILER_OPTIONS)}\n")  # fmt: skip
    print("| problem | contender | steps | compile CPU s | CPU us per run and step | without evaluation |")
    print("|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        pname, cname = case.split(":")
        compile_s, with_eval = _run_cost(pname, cname, args.runs, True)
        _, without = _run_cost(pname, cname, args.runs, False)
        steps = PRESETS["quick"].steps(PROBLEMS[pname]())
        print(
            f"| {pname} | {cname} | {steps} | {compile_s:.1f} | {with_eval:.0f} | {without:.0f} |", flush=True
        )
    if args.pieces:
        print("\n| piece of a recommender step | CPU us per run and step |\n|---|---|")
        for label, us in _pieces(args.runs):
            print(f"| {label} | {us:.1f} |", flush=True)
        print("\n| threefry-2x32 on the CPU | CPU ns per hash (two 32-bit words) |\n|---|---|")
        for label, ns in _threefry():
            print(f"| {label} | {ns:.2f} |", flush=True)


if __name__ == "__main__":
    main()
