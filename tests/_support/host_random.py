"""Random test data drawn on the host.

``jax.random.normal`` compiles a program per shape and dtype when called outside ``jit`` (about 0.2 s on
two CPU cores), and so does every ``split`` / ``fold_in`` of a new size: over the suite's many small shapes
that was 15 s of compiling test data. :func:`normal` draws with NumPy instead (no compile), from a seed that
is an integer or a tuple of integers (one NumPy stream per seed, so a seed still names its data). Inside a
traced function, use ``jax.random`` as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def normal(seed: int | Sequence[int], shape: Sequence[int] = (), dtype=jnp.float32) -> jax.Array:
    """Standard normal values of ``shape`` as a JAX array of ``dtype``, determined by ``seed``."""
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.standard_normal(tuple(shape)).astype(np.dtype(dtype)))
