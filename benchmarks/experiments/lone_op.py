"""A lone element-wise op on XLA:CPU: the slow path behind SGD-momentum on ResNet-50 (workload B).

MXNet's SGD-momentum returns the new momentum buffer as the weight change, so ``optax.apply_updates``' add
``w + mom'`` is alone in its fusion (``wrapped_add``). XLA:CPU emits a one-op fusion through a different
emitter from multi-op loop fusions, vectorized only along the last dimension; on (cout, cin, 3, 3) kernels
that is a 3-wide loop with integer divisions per row. For each shape this compiles the donated step three
ways and prints whether the add is lone, and the median ms/step:

* ``lone``: ``mom' = 0.9 mom - 0.1 g; w' = w + mom'`` (the library before the fix);
* ``one``: the same with ``w + mom' * one``, ``one`` = 1.0 behind ``lax.optimization_barrier`` (the fix in
  ``mxopt_jax/_src/rule.py``: bit for bit the same values);
* ``optax``: ``trace' = g + 0.9 trace; w' = w - 0.1 trace'`` (optax's form: the add fuses with the scale).

    .venv/bin/python benchmarks/experiments/lone_op.py
"""

from __future__ import annotations

import re
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

SHAPES = [(512, 512, 3, 3), (64, 3, 7, 7), (2048, 512, 1, 1), (1000, 2048), (2**21,)]


def one(dtype):
    return lax.optimization_barrier(jnp.ones((), dtype))


FORMS = {
    "lone": (lambda m, g: 0.9 * m - 0.1 * g, lambda w, m: w + m),
    "one": (lambda m, g: 0.9 * m - 0.1 * g, lambda w, m: w + m * one(m.dtype)),
    "optax": (lambda m, g: g + 0.9 * m, lambda w, m: w - 0.1 * m),
}


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'shape':>20} " + " ".join(f"{k:>16}" for k in FORMS))
    for shape in SHAPES:
        reps = max(1, 2**22 // int(np.prod(shape)))
        cells = []
        for fm, fw in FORMS.values():

            def step(w, m, g, fm=fm, fw=fw):
                m = fm(m, g)
                return fw(w, m), m

            f = jax.jit(step, donate_argnums=(0, 1))
            w = jnp.asarray(rng.random(shape, np.float32))
            m = jnp.zeros(shape, jnp.float32)
            g = jnp.asarray(rng.random(shape, np.float32))
            text = f.lower(w, m, g).compile().as_text()
            lone = bool(re.search(r"%wrapped_add\S* = ", text[text.index("ENTRY") :]))
            w, m = f(w, m, g)
            times = []
            for _ in range(9):
                t0 = time.perf_counter()
                for _ in range(reps):
                    w, m = f(w, m, g)
                jax.block_until_ready(w)
                times.append((time.perf_counter() - t0) / reps * 1e3)
            cells.append(f"{np.median(times):7.3f}{' (lone)' if lone else '       '}")
        print(f"{str(shape):>20} " + " ".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
