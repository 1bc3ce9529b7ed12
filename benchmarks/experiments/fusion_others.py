"""Question 1 (continued) of benchmarks/FUSION.md: SGD-momentum, NAG, AdamW and LAMB.

For each optimizer, the library's rule and a "sibling" rewrite of it (the weight change re-derives the new
state from the OLD state, reading ``x * one`` with ``one`` = 1.0 behind an optimization barrier, so that CSE
cannot merge the two copies and XLA sees two siblings reading the same inputs instead of a producer and its
consumer), compiled without and with ``xla_cpu_use_multi_output_fusion``. LAMB also: its norms. Outputs of
each rewrite are compared with the library's (three steps, 4096 elements).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/experiments/fusion_others.py [--log2 22] [--dump NAME]``.
"""

from __future__ import annotations

import os
import subprocess
import sys

FLAG = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"

if __name__ == "__main__" and "--child" not in sys.argv:
    for env_flag in ("", FLAG):
        subprocess.run(
            [sys.executable, __file__, "--child", *sys.argv[1:]],
            env=dict(os.environ, XLA_FLAGS=env_flag),
            check=True,
        )
    sys.exit(0)

import dataclasses  # noqa: E402
import importlib  # noqa: E402
import pathlib  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))  # benchmarks/: hlo_count
import hlo_count  # noqa: E402

from mxopt_jax._src.drivers.tree import transform  # noqa: E402
from mxopt_jax._src.numerics import one_minus_pow, preprocess  # noqa: E402
from mxopt_jax._src.signature import prepare  # noqa: E402


def build(rule, args):
    """The optax transform of ``rule`` with these constructor arguments."""
    return transform(prepare(rule, args))


import mxopt_jax  # noqa: E402

adam_mod = importlib.import_module("mxopt_jax._src.optimizers.adam")
sgd_mod = importlib.import_module("mxopt_jax._src.optimizers.sgd")
lw = importlib.import_module("mxopt_jax._src.optimizers.layerwise")


def _one(dtype):
    (one,) = jax.lax.optimization_barrier((jnp.asarray(1.0, dtype),))
    return one


def sgd_sibling(g, w, s, hp, opts):
    """``sgd_step`` (momentum) with the weight change recomputed from the old momentum."""
    G = preprocess(g, w, hp)
    (mom,) = s
    new = hp["momentum"] * mom - hp["lr"] * G
    one = _one(G.dtype)
    again = hp["momentum"] * (mom * one) - hp["lr"] * (G * one)
    return again, (new,)


def nag_sibling(g, w, s, hp, opts):
    G = preprocess(g, w, hp)
    (mom,) = s
    step = hp["lr"] * G
    new = hp["momentum"] * mom - step
    one = _one(G.dtype)
    step2 = hp["lr"] * (G * one)
    again = hp["momentum"] * (hp["momentum"] * (mom * one) - step2) - step2
    return again, (new,)


def adamw_sibling(g, w, s, hp, opts):
    m, v = s
    b1, b2 = hp["beta1"], hp["beta2"]
    G = preprocess(g, w, hp, decay=False)
    m1 = adam_mod.ema_multi(m, G, b1)
    v1 = adam_mod.ema_multi(v, G * G, b2)
    one = _one(G.dtype)
    Gs, ms, vs = G * one, m * one, v * one
    m2 = adam_mod.ema_multi(ms, Gs, b1)
    v2 = adam_mod.ema_multi(vs, Gs * Gs, b2)
    eta = hp["lr"]
    if opts["correct_bias"]:
        eta = eta * jnp.sqrt(one_minus_pow(b2, hp["t"])) / one_minus_pow(b1, hp["t"])
    direction = m2 / (jnp.sqrt(v2) + hp["epsilon"])
    if not adam_mod.is_static_zero(hp["wd"]):
        direction = direction + hp["wd"] * w
    return -eta * direction, (m1, v1)


def lamb_sibling(g, w, s, hp, opts):
    """LAMB whose final weight change re-derives u from the old m, v (the norm pass reads m', v')."""
    m, v = s
    b1, b2, eps, t = hp["beta1"], hp["beta2"], hp["epsilon"], hp["t"]
    G = preprocess(g, w, hp, decay=False)

    def direction(m, v, G):
        m = adam_mod.ema(m, G, b1)
        v = adam_mod.ema(v, G * G, b2)
        if opts["bias_correction"]:
            u = (m / one_minus_pow(b1, t)) / (jnp.sqrt(v / one_minus_pow(b2, t)) + eps)
        else:
            u = m / (jnp.sqrt(v) + eps)
        return lw._with_decay(u, w, hp), m, v

    u, m1, v1 = direction(m, v, G)
    r = lw.trust_ratio(lw.bounded_weight_norm(w, hp, opts), u, opts)
    one = _one(G.dtype)
    u2, _, _ = direction(m * one, v * one, G * one)
    return -hp["lr"] * r * u2, (m1, v1)


def variants():
    def rule(mod_rule, step):
        return dataclasses.replace(mod_rule, step=step)

    common = dict(
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
    sgd_args = dict(learning_rate=0.1, momentum=0.9, lazy_update=False, **common)
    adamw_args = dict(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True, **common)
    lamb_args = dict(
        learning_rate=0.001,
        beta1=0.9,
        beta2=0.999,
        epsilon=1e-6,
        lower_bound=None,
        upper_bound=None,
        bias_correction=True,
        axis_name=None,
        **common,
    )
    yield "sgd_mom", mxopt_jax.sgd(0.1, momentum=0.9), build(rule(sgd_mod.SGD_RULE, sgd_sibling), sgd_args)
    yield "nag", mxopt_jax.nag(0.1, momentum=0.9), build(rule(sgd_mod.NAG_RULE, nag_sibling), sgd_args)
    yield "adamw", mxopt_jax.adamw(), build(rule(adam_mod.ADAMW_RULE, adamw_sibling), adamw_args)
    yield "lamb", mxopt_jax.lamb(), build(rule(lw.LAMB_RULE, lamb_sibling), lamb_args)


def step_fn(tx):
    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    return jax.jit(step, donate_argnums=(0, 1))


def run(tx, p0, gs):
    f = step_fn(tx)
    p, s = jax.tree.map(jnp.copy, p0), tx.init(p0)
    for g in gs:
        p, s = f(p, s, g)
    return [np.asarray(x) for x in jax.tree.leaves((p, s))]


def main():
    log2 = int(sys.argv[sys.argv.index("--log2") + 1]) if "--log2" in sys.argv else 22
    dump = sys.argv[sys.argv.index("--dump") + 1] if "--dump" in sys.argv else None
    n = 2**log2
    print(f"\n=== XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, one float32 leaf of 2^{log2} ===")
    rng = np.random.default_rng(0)
    p0 = {"w": jnp.asarray(rng.standard_normal(4096), jnp.float32)}
    gs = [{"w": jnp.asarray(rng.standard_normal(4096), jnp.float32)} for _ in range(3)]
    for name, lib_tx, sib_tx in variants():
        for label, tx in (("library", lib_tx), ("sibling", sib_tx)):
            params = {"w": jnp.zeros((n,), jnp.float32)}
            c = step_fn(tx).lower(params, tx.init(params), params).compile()
            k, bpp, ks = hlo_count.count(c.as_text(), n)
            detail = ", ".join(f"{nm.split()[0]} {b / n:.0f}" for nm, b in ks)
            extra = ""
            if label == "sibling":
                a, b = run(lib_tx, p0, gs), run(tx, p0, gs)
                extra = "  max|diff| vs library: " + "/".join(
                    f"{float(np.max(np.abs(x - y))):.0e}" for x, y in zip(a, b, strict=False) if x.size > 1
                )
            print(f"{name:8} {label:8} {k:3d} kernels {bpp:4.0f} B/param  [{detail}]{extra}")
            if dump == f"{name}/{label}":
                print(hlo_count.entry_text(c.as_text()))


if __name__ == "__main__":
    main()
