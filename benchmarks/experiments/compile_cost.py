"""Question 3 of benchmarks/FUSION.md: compile time of a ResNet-50-shaped tree update, without and with
``xla_cpu_use_multi_output_fusion`` (each in a fresh process; XLA reads XLA_FLAGS once).

The tree is workloads.py's B (161 float32 leaves, 25.6M values); each optimizer's donated
``tx.update + optax.apply_updates`` step is lowered and compiled ``--repeat`` times (a distinct module name
each time, so jax's in-memory cache never answers); the minimum and median are printed, with the total kernel count over all leaves.
Shared 2-core machine: compile times are noisy (run under ``nice``).

Run: ``PYTHONPATH=. nice .venv/bin/python benchmarks/experiments/compile_cost.py [--repeat 3]``.
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
OPTS = ("sgd_mom", "adam", "adamw", "lamb", "adadelta", "nag")


def child(repeat):
    import statistics
    import warnings

    import jax
    import jax.numpy as jnp
    import optax

    sys.path.insert(0, str(HERE.parent))
    import bench_configs
    import workloads

    import mxopt_jax

    shapes = workloads.resnet_param_shapes()
    params = {name: jnp.zeros(s, jnp.float32) for name, s in shapes}
    out = {}
    for cfg in bench_configs.CONFIGS:
        if cfg.key not in OPTS:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx = mxopt_jax.OPTIMIZERS[cfg.mx_name](**cfg.kwargs)

        def step(p, s, g, tx=tx):
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        state = tx.init(params)
        times = []
        for i in range(repeat):
            step.__name__ = f"step_{cfg.key}_{i}"  # a distinct module name: no in-memory cache hit
            lowered = jax.jit(step, donate_argnums=(0, 1)).lower(params, state, params)
            t0 = time.perf_counter()
            compiled = lowered.compile()
            times.append(time.perf_counter() - t0)
        text = compiled.as_text()
        entry = text[text.index("\nENTRY") :]
        kernels = entry.count(" fusion(") + entry.count(") fusion(") + entry.count(" copy(")
        out[cfg.key] = {"min": min(times), "median": statistics.median(times), "kernels": kernels}
    print(json.dumps(out))


def main():
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    res = {}
    for label, flag in (("default", ""), ("mof", FLAG)):
        r = subprocess.run(
            [sys.executable, __file__, "--child", str(repeat)],
            env=dict(os.environ, XLA_FLAGS=flag),
            check=True,
            capture_output=True,
            text=True,
        )
        res[label] = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"ResNet-50 tree (161 leaves), compile seconds min / median of {repeat} (noisy), top-level kernels")
    print(f"{'optimizer':10} | {'default':^24} | {'multi-output fusion':^24}")
    for k, a in res["default"].items():
        b = res["mof"][k]
        f = lambda r: f"{r['min']:5.2f} / {r['median']:5.2f} s, {r['kernels']:4d} k"  # noqa: E731
        print(f"{k:10} | {f(a):24} | {f(b):24}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(int(sys.argv[sys.argv.index("--child") + 1]))
    else:
        main()
