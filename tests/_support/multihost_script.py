"""One process of a 2-process (multi-host) run on localhost; ``tests/interop/test_multihost.py`` starts two.

Run as ``python multihost_script.py PROCESS_ID NUM_PROCESSES PORT OUT``. Each process has 2 CPU devices
(``--xla_force_host_platform_device_count=2``); ``jax.distributed.initialize`` joins them through a
coordinator on ``localhost:PORT`` with gloo CPU collectives, so the mesh spans 4 devices in 2 processes. For
each optimizer of :data:`NAMES`, the parameters and the optimizer state are sharded over all 4 devices
(``NamedSharding``, each state entry like its parameter) and :data:`STEPS` training steps run in one
``jax.jit`` program. Process 0 writes the gathered parameters and state (``OUT``, ``.npz``) and a summary of
the shardings; the test compares them with :func:`reference`, the same steps in one process on one device.

This is the recipe of docs/interop.md ("Many hosts") on one machine.
"""

from __future__ import annotations

import os
import sys

import numpy as np

NAMES = ("adam", "lamb", "lars", "lans", "ftml", "sgd")
STEPS = 3
N_EXAMPLES = 8
KW = {
    "adam": dict(learning_rate=0.05, wd=1e-3),
    "lamb": dict(learning_rate=0.05, wd=0.01),
    "lars": dict(learning_rate=1.0, momentum=0.9, eta=0.01, wd=1e-3),
    "lans": dict(learning_rate=0.05, wd=0.01),
    "ftml": dict(learning_rate=0.05),
    "sgd": dict(learning_rate=0.05, momentum=0.9, wd=1e-3),
}
SHAPES = {"kernel": (16, 4), "bias": (16,)}


def host_problem() -> tuple[dict, dict]:
    """Parameters and data as NumPy arrays, the same in every process."""
    rng = np.random.default_rng(0)
    params = {k: rng.normal(size=s).astype(np.float32) for k, s in SHAPES.items()}
    data = {
        "a": {k: rng.uniform(0.5, 1.5, size=(N_EXAMPLES, *s)).astype(np.float32) for k, s in SHAPES.items()},
        "c": {k: rng.normal(size=(N_EXAMPLES, *s)).astype(np.float32) for k, s in SHAPES.items()},
    }
    return params, data


def train_all():
    """``run(params, data) -> {name: (params, state)}``: :data:`STEPS` steps of every optimizer of
    :data:`NAMES` from ``init``, in one program (one compile for all)."""
    import jax
    import jax.numpy as jnp
    import optax

    import mxopt_jax

    txs = {name: mxopt_jax.OPTIMIZERS[name](**KW[name]) for name in NAMES}

    def loss(p, d):
        per = jax.tree.map(
            lambda x, a, c: jnp.sum(jnp.mean(0.5 * a * (x - c) ** 2, axis=0)), p, d["a"], d["c"]
        )
        return sum(jax.tree.leaves(per))

    def one(tx, p, d):
        def body(_, carry):
            p, s = carry
            u, s = tx.update(jax.grad(loss)(p, d), s, p)
            return optax.apply_updates(p, u), s

        return jax.lax.fori_loop(0, STEPS, body, (p, tx.init(p)))

    def run(p, d):
        return {name: one(tx, p, d) for name, tx in txs.items()}

    return run


def flat_result(tree) -> dict[str, np.ndarray]:
    import jax

    from mxopt_jax._src.validation import path_name

    return {path_name(p): np.asarray(x) for p, x in jax.tree_util.tree_flatten_with_path(tree)[0]}


def reference() -> dict[str, np.ndarray]:
    """The same steps in this (single) process on one device."""
    import jax

    params, data = host_problem()
    return flat_result(jax.jit(train_all())(params, data))


def main(process_id: int, num_processes: int, port: int, out: str) -> None:
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    ).strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"localhost:{port}",
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=60,
    )
    devices = jax.devices()
    mesh = Mesh(np.array(devices), ("x",))
    specs = {"kernel": P("x", None), "bias": P("x")}
    data_specs = {
        "a": {k: P(None, *v) for k, v in specs.items()},
        "c": {k: P(None, *v) for k, v in specs.items()},
    }

    def global_array(x: np.ndarray, spec: P) -> jax.Array:
        # every process holds the same host data and hands in the shards its own devices hold
        return jax.make_array_from_callback(x.shape, NamedSharding(mesh, spec), lambda idx: x[idx])

    params, data = host_problem()
    g_params = jax.tree.map(global_array, params, specs)
    g_data = jax.tree.map(global_array, data, data_specs)
    out_tree = jax.jit(train_all())(g_params, g_data)
    summary = {}
    for name, tree in out_tree.items():
        sharded = [
            x
            for x in jax.tree.leaves(tree)
            if x.ndim >= 1 and x.shape[0] == 16 and not x.sharding.is_fully_replicated
        ]
        summary[name] = {
            "sharded_leaves": len(sharded),
            "devices_per_leaf": sorted({len(x.sharding.device_set) for x in sharded}),
        }
    results = flat_result(multihost_utils.process_allgather(out_tree, tiled=True))
    if process_id == 0:
        np.savez(out, **results)
        import json

        with open(out + ".json", "w") as f:
            json.dump(
                {
                    "process_count": jax.process_count(),
                    "device_count": jax.device_count(),
                    "local_device_count": jax.local_device_count(),
                    "summary": summary,
                },
                f,
            )
    jax.distributed.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
