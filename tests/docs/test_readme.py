"""Every ``python`` block of the README runs (with the small stand-ins a snippet assumes, named here)."""

from __future__ import annotations

import pathlib
import re
import warnings

import jax
import jax.numpy as jnp
import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def _standins(i: int) -> dict:
    """What block ``i`` takes from the reader's own code."""
    import flax.linen as nn
    import optax

    import mxopt_jax

    ns: dict = {"jax": jax, "jnp": jnp, "optax": optax, "mxopt_jax": mxopt_jax}
    if "updater(0, grad, weight)" in BLOCKS[i]:
        ns.update(grad=jnp.full((3,), 0.1), weight=jnp.ones((3,)))
    if "FlatParams.from_tree(params)" in BLOCKS[i]:
        ns.update(
            params={"w": jnp.ones((3, 2)), "b": jnp.zeros((2,))},
            loss=lambda p, batch: jnp.sum((batch @ p["w"] + p["b"]) ** 2),
            batch=jnp.ones((4, 3)),
        )
    if "TrainState.create" in BLOCKS[i]:
        model = nn.Dense(2)
        x = jnp.ones((4, 3))
        params = model.init(jax.random.PRNGKey(0), x)
        ns.update(model=model, params=params, loss_fn=lambda p: jnp.sum(model.apply(p, x) ** 2))
    return ns


# Blocks run by other tests or that need a multi-device mesh, and where they are covered.
ELSEWHERE = {
    "load_trainer(": "tests/facade/test_coming_from_mxnet.py runs the resume lines on real MXNet checkpoints",
    "sparse.value_and_grad(loss_fn": "tests/drivers/test_lazy.py runs the skip-gram model",
    "jax.shard_map(": "a fragment over the reader's mesh; tests/interop/test_multidevice.py runs axis_name",
}


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_python_block_runs(i):
    code = BLOCKS[i]
    covered = [why for key, why in ELSEWHERE.items() if key in code]
    if covered:
        assert len(covered) == 1
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, f"README.md block {i}", "exec"), _standins(i))


def test_every_block_is_run_or_accounted_for():
    assert len(BLOCKS) >= 7
    for key in ELSEWHERE:
        assert sum(key in b for b in BLOCKS) == 1, key
