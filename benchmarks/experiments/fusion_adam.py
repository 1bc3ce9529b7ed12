"""Question 1 of benchmarks/FUSION.md: which ways of writing Adam's step give XLA:CPU one loop?

Every variant is compiled for one float32 leaf of 2^22 elements, once without and once with
``XLA_FLAGS=--xla_backend_extra_options=xla_cpu_use_multi_output_fusion`` (the script re-runs itself in a
subprocess with the flag: XLA reads XLA_FLAGS once, when the CPU backend starts). For each: top-level kernels
that touch the leaf and bytes moved per parameter (``hlo_count.py``; a multi-output fusion counts every
array it writes), against the 28 B/param one pass needs (read g, w, m, v; write w, m, v). Each variant's
outputs are compared bit for bit with the library's ``mxopt_jax.adam`` step (same inputs, three steps).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/experiments/fusion_adam.py [--log2 22]``. Compiles only.
"""

from __future__ import annotations

import os
import subprocess
import sys

FLAG = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"

if __name__ == "__main__" and "--child" not in sys.argv:
    # parent: run the two configurations in fresh processes
    for env_flag in ("", FLAG):
        env = dict(os.environ, XLA_FLAGS=env_flag)
        subprocess.run([sys.executable, __file__, "--child", *sys.argv[1:]], env=env, check=True)
    sys.exit(0)

import dataclasses  # noqa: E402
import pathlib  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # benchmarks/: hlo_count
import importlib  # noqa: E402

import hlo_count  # noqa: E402

import mxopt_jax  # noqa: E402

adam_mod = importlib.import_module("mxopt_jax._src.optimizers.adam")
from mxopt_jax._src.drivers.tree import transform  # noqa: E402
from mxopt_jax._src.numerics import one_minus_pow, preprocess  # noqa: E402
from mxopt_jax._src.signature import prepare  # noqa: E402


def build(rule, args):
    """The optax transform of ``rule`` with these constructor arguments."""
    return transform(prepare(rule, args))


# --------------------------------------------------------------------------- rule variants (same arithmetic)
def separated(*scalars, dtype=jnp.float32):
    """The same scalar values as new HLO instructions that CSE cannot merge with the originals."""
    return jax.lax.optimization_barrier(tuple(jnp.asarray(s, dtype) for s in scalars))


def adam_step_recompute(g, w, s, hp, opts):
    """``adam_step`` whose weight change re-derives m', v' from the OLD m, v with CSE-proof constants.

    The state outputs are computed exactly as ``adam_step``; the weight change computes the same m', v'
    a second time from (g, m, v) using scalars passed through an optimization barrier, so XLA keeps two
    sibling computations that both read (g, m, v) instead of one consumer reading the producer's outputs.
    Multi-output fusion can merge siblings (not producer -> consumer chains) on XLA:CPU.
    """
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp)
    m1 = adam_mod.ema(m, G, b1)
    v1 = adam_mod.ema(v, G * G, b2)
    sb1, sc1, sb2, sc2, one = separated(b1, 1 - b1, b2, 1 - b2, 1.0, dtype=G.dtype)
    Gs = G * one  # exact; a distinct value so that G*G below is not merged with the one above
    m2 = sb1 * m + sc1 * G
    v2 = sb2 * v + sc2 * (Gs * Gs)
    lr_t = hp["lr"] * jnp.sqrt(one_minus_pow(b2, hp["t"])) / one_minus_pow(b1, hp["t"])
    return -lr_t * m2 / (jnp.sqrt(v2) + hp["epsilon"]), (m1, v1)


def adam_step_recompute_ones(g, w, s, hp, opts):
    """Recompute with the SAME constants, the copy reading ``x * one`` (one = 1.0 behind a barrier).

    ``x * 1.0 == x`` exactly, so the copy computes bit-identical m', v' (and LLVM makes the same FMA
    contraction choices in both, the constants being the same); the products differ as HLO values, so CSE
    cannot merge the two computations and they stay siblings reading (g, m, v).
    """
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp)
    m1 = adam_mod.ema(m, G, b1)
    v1 = adam_mod.ema(v, G * G, b2)
    (one,) = separated(1.0, dtype=G.dtype)
    Gs, ms, vs = G * one, m * one, v * one
    m2 = adam_mod.ema(ms, Gs, b1)
    v2 = adam_mod.ema(vs, Gs * Gs, b2)
    lr_t = hp["lr"] * jnp.sqrt(one_minus_pow(b2, hp["t"])) / one_minus_pow(b1, hp["t"])
    return -lr_t * m2 / (jnp.sqrt(v2) + hp["epsilon"]), (m1, v1)


def adam_step_recompute_shared_square(g, w, s, hp, opts):
    """As ``adam_step_recompute`` but the copy reuses ``G * G`` (CSE merges the two squares)."""
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp)
    m1 = adam_mod.ema(m, G, b1)
    v1 = adam_mod.ema(v, G * G, b2)
    sb1, sc1, sb2, sc2 = separated(b1, 1 - b1, b2, 1 - b2, dtype=G.dtype)
    m2 = sb1 * m + sc1 * G
    v2 = sb2 * v + sc2 * (G * G)
    lr_t = hp["lr"] * jnp.sqrt(one_minus_pow(b2, hp["t"])) / one_minus_pow(b1, hp["t"])
    return -lr_t * m2 / (jnp.sqrt(v2) + hp["epsilon"]), (m1, v1)


def adam_step_commuted(g, w, s, hp, opts):
    """Recompute with the products written in the other order (no barrier): CSE canonicalises it away."""
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp)
    m1 = adam_mod.ema(m, G, b1)
    v1 = adam_mod.ema(v, G * G, b2)
    m2 = G * (1 - b1) + m * b1
    v2 = (G * G) * (1 - b2) + v * b2
    lr_t = hp["lr"] * jnp.sqrt(one_minus_pow(b2, hp["t"])) / one_minus_pow(b1, hp["t"])
    return -lr_t * m2 / (jnp.sqrt(v2) + hp["epsilon"]), (m1, v1)


def adam_with_step(step):
    rule = dataclasses.replace(adam_mod.ADAM_RULE, step=step)
    args = dict(
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-8,
        lazy_update=False,
        wd=0.0,
        rescale_grad=1.0,
        clip_gradient=None,
        lr_scheduler=None,
        multi_precision=False,
        lr_mult=None,
        wd_mult=None,
        begin_num_update=0,
        aggregate_num=None,
        use_fused_step=None,
    )
    return build(rule, args)


# --------------------------------------------------------------------------- driver-level variants
def tx_step(tx, donate=True, apply=True):
    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return (optax.apply_updates(p, u) if apply else u), s

    return jax.jit(step, donate_argnums=(0, 1) if donate else ())


def lib_variants(n):
    yield "library adam, update+apply_updates, donated", tx_step(mxopt_jax.adam()), True
    yield "library adam, not donated", tx_step(mxopt_jax.adam(), donate=False), True
    yield "library adam, update only (apply outside the jit)", tx_step(mxopt_jax.adam(), apply=False), False
    yield (
        "rule: recompute w' from old m,v (barrier constants)",
        tx_step(adam_with_step(adam_step_recompute)),
        True,
    )
    yield "rule: recompute, x*one copies", tx_step(adam_with_step(adam_step_recompute_ones)), True
    yield "rule: recompute, not donated", tx_step(adam_with_step(adam_step_recompute), donate=False), True
    yield (
        "rule: recompute, shared G*G",
        tx_step(adam_with_step(adam_step_recompute_shared_square)),
        True,
    )
    yield "rule: recompute, commuted (no barrier)", tx_step(adam_with_step(adam_step_commuted)), True


# --------------------------------------------------------------------------- raw-layout variants
B1, B2, EPS, LR_T = 0.9, 0.999, 1e-8, 1e-3


def raw_variants(n):
    def base(w, m, v, g):
        m = B1 * m + (1 - B1) * g
        v = B2 * v + (1 - B2) * (g * g)
        return w + (-LR_T * m / (jnp.sqrt(v) + EPS)), m, v

    def outputs_state_first(w, m, v, g):
        w2, m2, v2 = base(w, m, v, g)
        return m2, v2, w2

    def operands_g_first(g, m, v, w):
        return base(w, m, v, g)

    def stacked(w, mv, g):  # m and v in one (2, n) buffer
        m, v = mv[0], mv[1]
        w2, m2, v2 = base(w, m, v, g)
        return w2, jnp.stack([m2, v2])

    def interleaved_mv(w, mv, g):  # (n, 2): m, v side by side
        m, v = mv[:, 0], mv[:, 1]
        w2, m2, v2 = base(w, m, v, g)
        return w2, jnp.stack([m2, v2], axis=-1)

    def interleaved_wmv(wmv, g):  # (n, 3): weight and both moments in one buffer
        w, m, v = wmv[:, 0], wmv[:, 1], wmv[:, 2]
        return jnp.stack(base(w, m, v, g), axis=-1)

    def stacked_wmv(wmv, g):  # (3, n)
        w, m, v = wmv[0], wmv[1], wmv[2]
        return jnp.stack(base(w, m, v, g))

    z = jnp.zeros((n,), jnp.float32)
    yield "raw: w' = w + delta (reference form)", jax.jit(base, donate_argnums=(0, 1, 2)), (z, z, z, z)
    yield "raw: outputs (m', v', w')", jax.jit(outputs_state_first, donate_argnums=(0, 1, 2)), (z, z, z, z)
    yield "raw: operands (g, m, v, w)", jax.jit(operands_g_first, donate_argnums=(1, 2, 3)), (z, z, z, z)
    yield (
        "raw: state m,v stacked (2, n)",
        jax.jit(stacked, donate_argnums=(0, 1)),
        (z, jnp.zeros((2, n), jnp.float32), z),
    )
    yield (
        "raw: state m,v interleaved (n, 2)",
        jax.jit(interleaved_mv, donate_argnums=(0, 1)),
        (z, jnp.zeros((n, 2), jnp.float32), z),
    )
    yield (
        "raw: w,m,v interleaved (n, 3)",
        jax.jit(interleaved_wmv, donate_argnums=(0,)),
        (jnp.zeros((n, 3), jnp.float32), z),
    )
    yield (
        "raw: w,m,v stacked (3, n)",
        jax.jit(stacked_wmv, donate_argnums=(0,)),
        (jnp.zeros((3, n), jnp.float32), z),
    )


def run_steps(fn, p, s, gs):
    outs = []
    p = jax.tree.map(jnp.copy, p)
    for g in gs:
        p, s = fn(p, s, g)
        outs.append([np.asarray(x) for x in jax.tree.leaves((p, s))])
    return outs


def main():
    log2 = int(sys.argv[sys.argv.index("--log2") + 1]) if "--log2" in sys.argv else 22
    n = 2**log2
    flag = os.environ.get("XLA_FLAGS", "")
    print(f"\n=== jax {jax.__version__}, XLA_FLAGS={flag!r}, one float32 leaf of 2^{log2} ===")
    print(f"{'variant':58} {'kernels':>7} {'B/param':>8}  kernels (bytes/param)")
    rng = np.random.default_rng(0)
    small = 4096
    p0 = {"w": jnp.asarray(rng.standard_normal(small), jnp.float32)}
    gs = [{"w": jnp.asarray(rng.standard_normal(small), jnp.float32)} for _ in range(3)]
    ref = None
    for name, fn, check in lib_variants(n):
        tx = None
        params = {"w": jnp.zeros((n,), jnp.float32)}
        # the transform used to build fn is reachable only through its closure; rebuild state from adam()
        state = mxopt_jax.adam().init(params)
        compiled = fn.lower(params, state, params).compile()
        k, bpp, ks = hlo_count.count(compiled.as_text(), n)
        detail = ", ".join(f"{nm.split()[0]} {b / n:.0f}" for nm, b in ks)
        # exactness on a small leaf: three steps from the same start
        exact = ""
        if check:
            outs = run_steps(fn, dict(p0), mxopt_jax.adam().init(p0), gs)
            if ref is None:
                ref = outs
            # leaves: w, count, m, v
            d = [
                max(float(np.max(np.abs(o[i] - r[i]))) for o, r in zip(outs, ref, strict=False))
                for i in (0, 2, 3)
            ]
            exact = "  max|diff| vs library w/m/v = " + "/".join(f"{x:.0e}" for x in d)
        print(f"{name:58} {k:7d} {bpp:8.0f}  {detail}{exact}")
        del tx
    for name, fn, args in raw_variants(n):
        compiled = fn.lower(*args).compile()
        k, bpp, ks = hlo_count.count(compiled.as_text(), n)
        detail = ", ".join(f"{nm.split()[0]} {b / n:.0f}" for nm, b in ks)
        print(f"{name:58} {k:7d} {bpp:8.0f}  {detail}")
    if "--dump" in sys.argv:
        fn = dict((nm, f) for nm, f, _ in lib_variants(n))[
            "rule: recompute w' from old m,v (barrier constants)"
        ]
        params = {"w": jnp.zeros((n,), jnp.float32)}
        print(
            hlo_count.entry_text(fn.lower(params, mxopt_jax.adam().init(params), params).compile().as_text())
        )


if __name__ == "__main__":
    main()
