"""Which rules reach one loop in their sibling form (``Rule.one_pass``), and what it costs in time on A.

For every element-wise optimizer of the library, compiles ``apply_updates(p, tx.update(g, s, p))`` (donated)
on one float32 leaf of 2^22 elements three ways, each in a fresh process (XLA reads ``XLA_FLAGS`` once):
default flags; with ``--xla_backend_extra_options=xla_cpu_use_multi_output_fusion`` (rule as written);
with the flag and the sibling form forced on every rule. Prints kernels / bytes per parameter (hlo_count).
``--time`` also times Adam, AdamW, SGD-momentum and NAG on 2^24 (median and min of interleaved rounds).

    PYTHONPATH=. python benchmarks/experiments/one_pass.py [--time]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

FLAG = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"
NAMES = [
    "sgd_mom", "nag", "adam", "adamw", "adamax", "nadam", "rmsprop", "adagrad", "signum", "adadelta",
    "adabelief", "ftml", "ftrl", "dcasgd", "lbsgd", "lamb", "lars",
]  # fmt: skip


def child(mode: str, do_time: bool) -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hlo_count
    import jax
    import jax.numpy as jnp
    import optax

    import mxopt_jax
    from mxopt_jax._src import numerics

    if mode == "forced":
        from mxopt_jax._src import rule as rule_mod
        from mxopt_jax._src.drivers import dense

        dense.one_pass = lambda rule: numerics.multi_output_fusion() and not rule.uses_key
        del rule_mod
    out = {"one_pass_detected": numerics.multi_output_fusion()}

    def make(name):
        if name == "sgd_mom":
            return mxopt_jax.sgd(learning_rate=0.01, momentum=0.9)
        if name == "lbsgd":
            return mxopt_jax.lbsgd(learning_rate=0.01, momentum=0.9)
        return getattr(mxopt_jax, name)(learning_rate=0.01)

    def program(tx, n):
        p = jnp.ones((n,), jnp.float32)
        g = jnp.full((n,), 0.1, jnp.float32)
        s = tx.init(p)

        @jax.jit
        def step(p, s, g):
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        return jax.jit(step, donate_argnums=(0, 1)), p, s, g

    n = 2**22
    for name in NAMES:
        f, p, s, g = program(make(name), n)
        text = f.lower(p, s, g).compile().as_text()
        k, b, _ = hlo_count.count(text, n)
        out[name] = [k, round(b, 1)]
    if do_time:
        n = 2**24
        for name in ("adam", "adamw", "sgd_mom", "nag"):
            f, p, s, g = program(make(name), n)
            p, s = f(p, s, g)
            jax.block_until_ready(p)
            ts = []
            for _ in range(15):
                t0 = time.perf_counter()
                for _ in range(3):
                    p, s = f(p, s, g)
                jax.block_until_ready(p)
                ts.append((time.perf_counter() - t0) / 3 * 1e3)
            ts.sort()
            out["ms_" + name] = [round(ts[len(ts) // 2], 2), round(ts[0], 2)]
    print(json.dumps(out))


def main() -> None:
    do_time = "--time" in sys.argv
    rows = {}
    for mode, flags in (("default", ""), ("flag", FLAG), ("forced", FLAG)):
        env = dict(os.environ, XLA_FLAGS=flags, MXOPT_JAX_ONE_PASS="")
        if mode == "flag":
            env["MXOPT_JAX_ONE_PASS"] = "0"
        args = [sys.executable, __file__, "--child", mode] + (["--time"] if do_time else [])
        res = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
        rows[mode] = json.loads(res.stdout.strip().splitlines()[-1])
    print("mode: default = no flag; flag = flag, rule as written; forced = flag + sibling form on every rule")
    print(f"{'optimizer':10s} {'default':>12s} {'flag':>12s} {'flag+sibling':>14s}")
    for name in NAMES:
        cells = [f"{rows[m][name][0]} / {rows[m][name][1]}" for m in ("default", "flag", "forced")]
        print(f"{name:10s} {cells[0]:>12s} {cells[1]:>12s} {cells[2]:>14s}")
    if do_time:
        print("ms/step on 2^24, median (min) of 15 samples of 3 steps")
        for name in ("adam", "adamw", "sgd_mom", "nag"):
            cells = [
                f"{rows[m]['ms_' + name][0]} ({rows[m]['ms_' + name][1]})"
                for m in ("default", "flag", "forced")
            ]
            print(f"{name:10s} " + "  ".join(f"{c:>16s}" for c in cells))


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[sys.argv.index("--child") + 1], "--time" in sys.argv)
    else:
        main()
