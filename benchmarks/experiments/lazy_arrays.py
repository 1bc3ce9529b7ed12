"""What bounds the lazy row-sparse step on workload D (1M x 64 float32 table, 10,000 sorted unique rows).

Hand-written JAX gather/update/scatter steps on one, two and three tables of the same shape (weight only;
weight + one state, as SGD-momentum; weight + two states, as Adam), with element-wise arithmetic only (no
division or square root), then Adam's arithmetic with and without ``lax.optimization_barrier`` around the
gathered and computed rows. Prints the median ms/step.

    .venv/bin/python benchmarks/experiments/lazy_arrays.py
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

R, C, K = 1_000_000, 64, 10_000
KW = {"indices_are_sorted": True, "unique_indices": True}


def tables1(ws, idx, g):
    (w,) = ws
    return (w.at[idx].add(g, **KW),)


def tables2(ws, idx, g):
    w, m = ws
    m2 = 0.9 * m[idx] - 0.1 * g
    return w.at[idx].add(m2, **KW), m.at[idx].set(m2, **KW)


def tables3(ws, idx, g):
    w, m, v = ws
    m2 = 0.9 * m[idx] - 0.1 * g
    v2 = 0.9 * v[idx] + g
    return w.at[idx].add(m2 + v2, **KW), m.at[idx].set(m2, **KW), v.at[idx].set(v2, **KW)


def adam(barrier: bool):
    def step(ws, idx, g):
        w, m, v = ws
        mr, vr = m[idx], v[idx]
        if barrier:
            mr, vr, g = lax.optimization_barrier((mr, vr, g))
        m2 = 0.9 * mr + 0.1 * g
        v2 = 0.999 * vr + 0.001 * g * g
        u = -0.001 * m2 / (jnp.sqrt(v2) + 1e-8)
        if barrier:
            u, m2, v2 = lax.optimization_barrier((u, m2, v2))
        return w.at[idx].add(u, **KW), m.at[idx].set(m2, **KW), v.at[idx].set(v2, **KW)

    return step


def main() -> None:
    rng = np.random.default_rng(0)
    idx = jnp.asarray(np.sort(rng.choice(R, K, replace=False)).astype(np.int32))
    g = jnp.asarray(rng.standard_normal((K, C)).astype(np.float32))
    cases = [
        ("1 table (w)", tables1, 1),
        ("2 tables (w, mom)", tables2, 2),
        ("3 tables (w, m, v)", tables3, 3),
        ("Adam, 3 tables", adam(False), 3),
        ("Adam, 3 tables, barriers", adam(True), 3),
    ]
    for name, fn, n in cases:
        ws = tuple(jnp.asarray(rng.standard_normal((R, C)).astype(np.float32)) for _ in range(n))
        f = jax.jit(fn, donate_argnums=(0,))
        ws = f(ws, idx, g)
        times = []
        for _ in range(9):
            t0 = time.perf_counter()
            for _ in range(10):
                ws = f(ws, idx, g)
            jax.block_until_ready(ws)
            times.append((time.perf_counter() - t0) / 10 * 1e3)
        print(f"{name:>28}: {np.median(times):7.3f} ms/step", flush=True)
        del ws


if __name__ == "__main__":
    main()
