"""End-to-end training with Equinox: an ``eqx.nn.MLP`` (a PyTree module whose arrays are its parameters and
whose activation is a Python function), the optimizer state made from ``eqx.filter(model, eqx.is_array)``,
gradients from ``eqx.filter_value_and_grad``, updates applied with ``eqx.apply_updates`` under
``eqx.filter_jit``: the loss drops clearly and the trained model equals a plain optax loop on its arrays.

Two optimizers in the default run (one compile and 80 steps each), the other two under ``slow``.
"""

from __future__ import annotations

import warnings

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import optax
import pytest
from host_random import normal

import mxopt_jax

STEPS = 80
OPTS = {
    "adam": dict(learning_rate=0.01),
    "lamb": dict(learning_rate=0.01, wd=1e-4),
    "ftml": dict(learning_rate=0.01),
    "ftrl": dict(learning_rate=0.5, lamda1=0.0),
}
DEFAULT = ("adam", "lamb")


def make(name: str) -> optax.GradientTransformation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**OPTS[name])


def _data():
    x = normal(0, (64, 36))
    y = jnp.tanh(x @ normal(1, (36,)) / 6.0)[:, None]
    return x, y


@pytest.mark.parametrize(
    "name", [n if n in DEFAULT else pytest.param(n, marks=pytest.mark.slow) for n in sorted(OPTS)]
)
def test_equinox_mlp(name):
    x, y = _data()
    model = eqx.nn.MLP(36, 1, width_size=16, depth=1, key=jax.random.PRNGKey(0))
    tx = make(name)
    opt_state = tx.init(eqx.filter(model, eqx.is_array))

    def loss(m):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    @eqx.filter_jit
    def step(m, s):
        value, grads = eqx.filter_value_and_grad(loss)(m)
        updates, s = tx.update(grads, s, eqx.filter(m, eqx.is_array))
        return eqx.apply_updates(m, updates), s, value

    trained, state = model, opt_state
    for _ in range(STEPS):
        trained, state, _ = step(trained, state)
    assert float(loss(trained)) < 0.2 * float(loss(model))
    assert int(state.count) == STEPS

    # the same as a plain optax loop on the model's arrays (the rest of the module held fixed)
    params, static = eqx.partition(model, eqx.is_array)
    ref_tx = make(name)

    def body(_, carry):
        p, s = carry
        u, s = ref_tx.update(jax.grad(lambda q: loss(eqx.combine(q, static)))(p), s, p)
        return optax.apply_updates(p, u), s

    ref, _ = jax.jit(lambda p: jax.lax.fori_loop(0, STEPS, body, (p, ref_tx.init(p))))(params)
    chex.assert_trees_all_close(eqx.filter(trained, eqx.is_array), ref, rtol=1e-5, atol=1e-6)


def test_the_documented_equinox_snippet_runs():
    """docs/interop.md's Equinox block, as it is written (it is self-contained), takes a step."""
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text()
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", page, flags=re.S) if "eqx.apply_updates" in b]
    ns: dict = {}
    exec(compile(code, "docs/interop.md (Equinox)", "exec"), ns)
    assert int(ns["opt_state"].count) == 1 and isinstance(ns["model"], ns["eqx"].nn.MLP)
