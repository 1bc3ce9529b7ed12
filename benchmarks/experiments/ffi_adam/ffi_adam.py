"""Question 4 of benchmarks/FUSION.md: a one-pass Adam step as a jax.ffi CPU custom call (prototype).

Builds adam_fused.cc with the machine's g++ (into a temporary directory), registers it with
``jax.ffi.register_ffi_target``, checks on one float32 leaf of 2^k elements (default 24) that several steps
give exactly what the library's jitted step gives (``mxopt_jax.adam()`` + ``optax.apply_updates``, donated),
then times both (ms/step, median of repeated runs, each run timing ``--steps`` steps with donation; the
machine is shared: the numbers are NOISY, run under ``nice``).

Run: ``PYTHONPATH=. nice .venv/bin/python benchmarks/experiments/ffi_adam/ffi_adam.py [--log2 24]``.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import mxopt_jax
from mxopt_jax._src.numerics import one_minus_pow

HERE = pathlib.Path(__file__).parent


def build_and_register(threads: int) -> None:
    out = pathlib.Path(tempfile.mkdtemp()) / "libadam_fused.so"
    cmd = [
        "g++",
        "-O3",
        "-march=native",
        "-ffp-contract=off",
        "-fno-math-errno",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-pthread",
        f"-I{jax.ffi.include_dir()}",
        str(HERE / "adam_fused.cc"),
        "-o",
        str(out),
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    print(f"built {out.name} in {time.perf_counter() - t0:.1f} s: {' '.join(cmd[:6])} ...")
    lib = ctypes.cdll.LoadLibrary(str(out))
    jax.ffi.register_ffi_target("mxopt_adam_fused", jax.ffi.pycapsule(lib.AdamFused), platform="cpu")


def adam_ffi(lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, threads=2):
    """``(w, m, v, count, g) -> (w', m', v', count + 1)``, hyperparameters resolved as the library does."""

    def step(w, m, v, count, g):
        t = count + 1
        b1 = jnp.asarray(beta1, jnp.float32)
        b2 = jnp.asarray(beta2, jnp.float32)
        lr_t = jnp.asarray(lr, jnp.float32) * jnp.sqrt(one_minus_pow(b2, t)) / one_minus_pow(b1, t)
        hp = jnp.stack([b1, 1 - b1, b2, 1 - b2, -lr_t, jnp.asarray(epsilon, jnp.float32)])
        out = jax.ShapeDtypeStruct(w.shape, w.dtype)
        w2, m2, v2 = jax.ffi.ffi_call(
            "mxopt_adam_fused", (out, out, out), input_output_aliases={1: 0, 2: 1, 3: 2}
        )(g, w, m, v, hp, threads=np.int64(threads))
        return w2, m2, v2, t

    return jax.jit(step, donate_argnums=(0, 1, 2))


def library_step():
    tx = mxopt_jax.adam()

    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    return tx, jax.jit(step, donate_argnums=(0, 1))


def sibling_step():
    """The sibling-rewritten rule (fusion_adam.adam_step_recompute_ones): one loop only under the XLA flag."""
    sys.path.insert(0, str(HERE.parent))
    import fusion_adam

    tx = fusion_adam.adam_with_step(fusion_adam.adam_step_recompute_ones)

    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    return tx, jax.jit(step, donate_argnums=(0, 1))


def main():
    log2 = int(sys.argv[sys.argv.index("--log2") + 1]) if "--log2" in sys.argv else 24
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 10
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 7
    threads = os.cpu_count() or 1
    n = 2**log2
    build_and_register(threads)
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(n).astype(np.float32)
    gs = [rng.standard_normal(n).astype(np.float32) * s for s in (1.0, 1e-3, 10.0, 0.5, 1e-6)]

    # exactness: 5 steps with gradients of different scales
    tx, lib = library_step()
    p = {"w": jnp.asarray(w0)}
    s = tx.init(p)
    ffi = adam_ffi(threads=threads)
    w, m, v, c = (
        jnp.asarray(w0),
        jnp.zeros(n, jnp.float32),
        jnp.zeros(n, jnp.float32),
        jnp.zeros([], jnp.int32),
    )
    for g in gs:
        p, s = lib(p, s, {"w": jnp.asarray(g)})
        w, m, v, c = ffi(w, m, v, c, jnp.asarray(g))
    diffs = {
        k: float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for k, a, b in (("w", p["w"], w), ("m", s.mean["w"], m), ("v", s.var["w"], v))
    }
    ndiff = {
        k: int(np.sum(np.asarray(a) != np.asarray(b)))
        for k, a, b in (("w", p["w"], w), ("m", s.mean["w"], m), ("v", s.var["w"], v))
    }
    print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print(f"2^{log2} float32, 5 steps: max|ffi - library| {diffs}, differing elements {ndiff}")
    hlo = ffi.lower(w, m, v, c, jnp.asarray(gs[0])).compile().as_text()
    entry = hlo[hlo.index("\nENTRY") :]
    print(
        "ffi program's top-level kernels touching the leaf:",
        sum(
            1
            for ln in entry.splitlines()
            if f"f32[{n}]" in ln and ("fusion(" in ln or "custom-call(" in ln or " copy(" in ln)
        ),
    )

    # timing (noisy)
    g = jnp.asarray(gs[0])
    stx, sib = sibling_step()
    sp = {"w": jnp.asarray(w0)}
    ss = stx.init(sp)
    res = {"library (XLA)": [], "sibling rule (XLA)": [], "ffi one-pass kernel": []}
    for _ in range(rounds):
        for name in res:
            if name.startswith("sibling"):
                jax.block_until_ready((sp, ss))
                t0 = time.perf_counter()
                for _ in range(steps):
                    sp, ss = sib(sp, ss, {"w": g})
                jax.block_until_ready(sp)
            elif name.startswith("library"):
                jax.block_until_ready((p, s))
                t0 = time.perf_counter()
                for _ in range(steps):
                    p, s = lib(p, s, {"w": g})
                jax.block_until_ready(p)
            else:
                jax.block_until_ready(w)
                t0 = time.perf_counter()
                for _ in range(steps):
                    w, m, v, c = ffi(w, m, v, c, g)
                jax.block_until_ready(w)
            res[name].append(1e3 * (time.perf_counter() - t0) / steps)
    roof = 28 * n / 1e6  # MB per step at 28 B/param
    for name, ts in res.items():
        med = statistics.median(ts)
        print(
            f"{name:24} median {med:7.2f} ms/step  (min {min(ts):.2f}, max {max(ts):.2f}; "
            f"{roof / med:.1f} GB/s at 28 B/param)  NOISY"
        )


if __name__ == "__main__":
    main()
