"""benchmarks/passes.py for every optimizer, without and with XLA:CPU multi-output fusion, side by side.

Same step as passes.py (donated ``tx.update`` + ``optax.apply_updates`` on one float32 leaf of 2^k), counted
with ``hlo_count.py`` (which, unlike passes.py, counts multi-output fusions). Each configuration is compiled
in its own process because XLA reads XLA_FLAGS once. Also reports the compile time of each step (seconds,
noisy: shared 2-core machine).

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/experiments/passes_mof.py [--log2 22] [--optax]``.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

FLAG = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"
HERE = pathlib.Path(__file__).parent


def child(log2: int, with_optax: bool) -> None:
    import warnings

    import jax
    import jax.numpy as jnp
    import optax

    sys.path.insert(0, str(HERE.parent))
    sys.path.insert(0, str(HERE))
    import bench_configs
    import hlo_count

    import mxopt_jax

    n = 2**log2
    rows = {}

    def analyse(tx):
        params = {"w": jnp.zeros((n,), jnp.float32)}
        state = tx.init(params)

        def step(p, s, g):
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        t0 = time.perf_counter()
        compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, state, params).compile()
        dt = time.perf_counter() - t0
        k, bpp, _ = hlo_count.count(compiled.as_text(), n)
        state_arrays = sum(1 for x in jax.tree.leaves(state) if getattr(x, "size", 0) == n)
        return {"k": k, "hlo": bpp, "model": 4 * (1 + 2 + 2 * state_arrays), "compile_s": dt}

    for cfg in bench_configs.CONFIGS:
        if cfg.two_d:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx = mxopt_jax.OPTIMIZERS[cfg.mx_name](**cfg.kwargs)
        rows[f"{cfg.key}/mxopt"] = analyse(tx)
        if with_optax and cfg.optax is not None:
            rows[f"{cfg.key}/optax"] = analyse(cfg.optax(optax))
    print(json.dumps(rows))


def main() -> None:
    log2 = int(sys.argv[sys.argv.index("--log2") + 1]) if "--log2" in sys.argv else 22
    with_optax = "--optax" in sys.argv
    res = {}
    for label, flag in (("off", ""), ("mof", FLAG)):
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(log2), str(int(with_optax))],
            env=dict(os.environ, XLA_FLAGS=flag),
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        res[label] = json.loads(out.strip().splitlines()[-1])
    print(f"one float32 leaf of 2^{log2}; kernels / HLO B/param / ceiling (model/HLO); compile s (noisy)")
    print(f"{'optimizer':20} {'model':>5} | {'default':^26} | {'multi-output fusion':^26}")
    for key, a in res["off"].items():
        b = res["mof"][key]

        def fmt(r):
            return (
                f"{r['k']:2d} / {r['hlo']:3.0f} / {100 * r['model'] / r['hlo']:3.0f}% / {r['compile_s']:.2f}s"  # noqa: E731
            )

        mark = "  <-" if (b["k"], round(b["hlo"])) != (a["k"], round(a["hlo"])) else ""
        print(f"{key:20} {a['model']:5d} | {fmt(a):26} | {fmt(b):26}{mark}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        child(int(sys.argv[i + 1]), bool(int(sys.argv[i + 2])))
    else:
        main()
