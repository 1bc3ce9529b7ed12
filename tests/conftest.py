import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent / "_support"))

import jax  # noqa: E402

# The same random numbers at both ends of the support window: JAX 0.5 made the partitionable threefry the
# default (the floor, 0.4.35, still draws with the old scheme), and the tests' data come from jax.random.
if not getattr(jax.config, "jax_threefry_partitionable", True):
    jax.config.update("jax_threefry_partitionable", True)
