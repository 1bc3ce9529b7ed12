"""How many passes over memory a compiled optimizer step makes: the evidence behind benchmarks/ANALYSIS.md.

For one float32 leaf of ``2**k`` elements (default k = 22), each optimizer's donated step
``(params, state) -> (params, state)`` (``tx.update`` + ``optax.apply_updates``, as in ``run.py``) is compiled
and its optimized HLO inspected:

* ``fusions``: kernels at the top level of the entry computation that touch whole arrays (loop fusions,
  reductions, copies). XLA:CPU runs each as its own loop over memory;
* ``model B/p``: bytes per parameter the algorithm must move (gradient read, weight and every state array
  read and written once: Adam 28);
* ``HLO B/p``: bytes per parameter the compiled program moves: for each top-level fusion, the size of its
  array operands and results (a parameter read by three fusions counts three times);
* ``temp B/p``: XLA's temporary buffers (``memory_analysis().temp_size_in_bytes``) per parameter;
* ``ceiling``: model / HLO bytes, the fraction of the memory-bandwidth limit this program can reach at best.

Run: ``.venv/bin/python benchmarks/passes.py [--log2 22] [--optimizers adam,lamb] [--optax]``
(``--optax`` adds optax's counterparts from ``bench_configs.py``). Compiles only; no timing. With
``XLA_FLAGS=--xla_backend_extra_options=xla_cpu_use_multi_output_fusion`` in the environment it shows the
one-pass (sibling) form of the rules with ``Rule.one_pass`` (multi-output fusions are counted).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench_configs  # noqa: E402
import hlo_count  # noqa: E402

import mxopt_jax  # noqa: E402


def _kernels(hlo: str, n: int) -> list[tuple[str, int]]:
    """Top-level kernels of the entry computation that touch n-element arrays, with the bytes each moves
    (its n-element results, every element of a multi-output fusion's tuple included, and its operands; a
    value read by three kernels counts three times). See ``hlo_count.py``."""
    _, per_param, kernels = hlo_count.count(hlo, n)
    return kernels


def analyse(tx: optax.GradientTransformation, n: int) -> dict:
    params = {"w": jnp.zeros((n,), jnp.float32)}
    grads = {"w": jnp.ones((n,), jnp.float32)}
    state = tx.init(params)

    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    compiled = jax.jit(step, donate_argnums=(0, 1)).lower(params, state, grads).compile()
    kernels = _kernels(compiled.as_text(), n)
    state_arrays = sum(1 for x in jax.tree.leaves(state) if getattr(x, "size", 0) == n)
    model = 4 * (1 + 2 + 2 * state_arrays)
    moved = sum(b for _, b in kernels)
    temp = compiled.memory_analysis().temp_size_in_bytes
    return {
        "fusions": len(kernels),
        "model": model,
        "hlo": moved / n,
        "temp": temp / n,
        "ceiling": model / (moved / n) if moved else float("nan"),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, default=22, help="leaf size 2**k (default 22)")
    ap.add_argument("--optimizers", default="", help="comma-separated keys of bench_configs (default all)")
    ap.add_argument("--optax", action="store_true", help="also optax's counterparts")
    args = ap.parse_args(argv)
    n = 2**args.log2
    keys = [k for k in args.optimizers.split(",") if k]
    rows = []
    for cfg in bench_configs.CONFIGS:
        if cfg.two_d or (keys and cfg.key not in keys):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx = mxopt_jax.OPTIMIZERS[cfg.mx_name](**cfg.kwargs)
        rows.append((cfg.key, "mxopt", analyse(tx, n)))
        if args.optax and cfg.optax is not None:
            rows.append((cfg.key, "optax", analyse(cfg.optax(optax), n)))
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, one float32 leaf of 2^{args.log2}")
    print(
        f"{'opt':12} {'lib':6} {'fusions':>7} {'model B/p':>9} {'HLO B/p':>8} {'temp B/p':>8} {'ceiling':>8}"
    )
    for key, lib, r in rows:
        print(
            f"{key:12} {lib:6} {r['fusions']:7d} {r['model']:9d} {r['hlo']:8.0f} {r['temp']:8.1f} "
            f"{np.round(100 * r['ceiling']):7.0f}%"
        )


if __name__ == "__main__":
    main()
