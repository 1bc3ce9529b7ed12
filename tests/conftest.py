import os
import pathlib
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent / "_support"))

import jax  # noqa: E402

# The same random numbers at both ends of the support window: JAX 0.5 made the partitionable threefry the
# default (the floor, 0.4.35, still draws with the old scheme), and the tests' data come from jax.random.
if not getattr(jax.config, "jax_threefry_partitionable", True):
    jax.config.update("jax_threefry_partitionable", True)

# One compilation cache for the whole session: a program compiled once (by either pytest-xdist worker, or by an
# earlier test building the same program through another function object, such as the same operation on the
# same shapes op by op) is read back instead of compiled again. It starts empty in a fresh directory each run
# and is removed at the end, so a run's time is that of a fresh machine; MXOPT_JAX_TEST_XLA_CACHE=0 turns it
# off. Compiling is most of the suite's time on CPU.
_CACHE_ENV = "MXOPT_JAX_TEST_XLA_CACHE"
_OWNED = []


def pytest_configure(config):
    where = os.environ.get(_CACHE_ENV)
    if where == "0":
        return
    if not where:  # the controller (or a run without workers): the workers inherit the variable
        where = tempfile.mkdtemp(prefix="mxopt_jax_test_xla_cache_")
        os.environ[_CACHE_ENV] = where
        _OWNED.append(where)
    jax.config.update("jax_compilation_cache_dir", where)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    for where in _OWNED:
        shutil.rmtree(where, ignore_errors=True)
