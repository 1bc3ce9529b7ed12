"""Checkpoints: optimizer states save and restore with orbax-checkpoint and ``flax.serialization``, and a run
resumed from the checkpoint continues bit for bit like the uninterrupted one -- for every optimizer's
functional state (float32, plus 16-bit multi-precision states with their float32 masters and SGLD's key),
for optax wrappers around them, and for the MXNet-style facade (``get_states``/``set_states`` and msgpack of
its state arrays).

Updates run eagerly (deterministic op by op, no compile per optimizer); all functional states go into one
orbax checkpoint to keep the checkpointer's overhead to a single save/restore.
"""

from __future__ import annotations

import doctest
import pathlib
import re
import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from compat import nnx_leaves, nnx_optimizer, nnx_update
from flax import nnx, serialization
from interop_common import NAMES, make, params_for, run

import mxopt_jax

MID, END = 2, 4
VARIANTS = [(n, "f32") for n in NAMES] + [
    ("adam", "bf16-mp"),
    ("sgld", "bf16-mp"),
    ("lamb", "f16-mp"),
    ("nadam", "bf16-mp"),
    ("lbsgd", "f16-mp"),
    ("ftml", "bf16"),
]
IDS = [f"{n}-{v}" for n, v in VARIANTS]


def _setup(name, variant):
    dtype = {"f32": jnp.float32, "bf16-mp": jnp.bfloat16, "f16-mp": jnp.float16, "bf16": jnp.bfloat16}[
        variant
    ]
    tx = make(name, multi_precision=variant.endswith("mp"))
    return tx, params_for(name, dtype)


@pytest.fixture(scope="module")
def runs():
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # bfloat16 without multi_precision warns, as MXNet
        for (name, variant), key in zip(VARIANTS, IDS, strict=True):
            tx, params = _setup(name, variant)
            p_mid, s_mid = run(tx, params, steps=MID)
            p_end, s_end = run(tx, params, steps=END)  # uninterrupted
            out[key] = dict(tx=tx, params=params, p_mid=p_mid, s_mid=s_mid, p_end=p_end, s_end=s_end)
    return out


def _resume_and_compare(r, params, state):
    assert type(state) is type(r["s_mid"])
    chex.assert_trees_all_equal(state, r["s_mid"])
    chex.assert_trees_all_equal_dtypes(state, r["s_mid"])
    chex.assert_trees_all_equal_dtypes(params, r["p_mid"])
    p_end, s_end = run(r["tx"], params, steps=END - MID, start=MID, state=state)
    chex.assert_trees_all_equal(p_end, r["p_end"])
    chex.assert_trees_all_equal(s_end, r["s_end"])


@pytest.fixture(scope="module")
def orbax_restored(runs, tmp_path_factory):
    tree = {k: {"params": r["p_mid"], "state": r["s_mid"]} for k, r in runs.items()}
    path = tmp_path_factory.mktemp("orbax") / "states"
    with ocp.StandardCheckpointer() as ckptr:
        ckptr.save(path, tree)
        ckptr.wait_until_finished()
        target = jax.tree.map(ocp.utils.to_shape_dtype_struct, tree)
        return ckptr.restore(path, target)


@pytest.mark.parametrize("key", IDS)
def test_orbax_resume_is_bit_exact(runs, orbax_restored, key):
    got = orbax_restored[key]
    _resume_and_compare(runs[key], got["params"], got["state"])


@pytest.mark.parametrize("key", IDS)
def test_flax_serialization_resume_is_bit_exact(runs, key):
    """msgpack bytes, restored into the state of a fresh ``init`` as the target."""
    r = runs[key]
    blob = serialization.to_bytes({"params": r["p_mid"], "state": r["s_mid"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        target = {"params": r["params"], "state": r["tx"].init(r["params"])}
    got = serialization.from_bytes(target, blob)
    _resume_and_compare(r, got["params"], got["state"])


def test_flax_serialization_rejects_a_state_of_another_optimizer():
    params = params_for("adam")
    blob = serialization.to_bytes(make("adam").init(params))
    with pytest.raises(ValueError):
        serialization.from_bytes(make("ftml").init(params), blob)


def _page_recipe() -> dict:
    """docs/interop.md's flax.serialization recipe (``pure``, ``save``, ``restore``), as the page writes it."""
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text()
    block = next(b for b in re.findall(r"^```pycon\n(.*?)^```", page, re.S | re.M) if "def restore(" in b)
    ns: dict = {}
    for example in doctest.DocTestParser().get_examples(block):
        exec(compile(example.source, "docs/interop.md (flax.serialization)", "exec"), ns)
    return ns


class _MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.hidden = nnx.Linear(3, 4, rngs=rngs)
        self.out = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.out(jax.nn.relu(self.hidden(x)))


def test_flax_serialization_recipe_resumes_nnx_and_linen_states_bit_exactly():
    """The page's recipe writes what ``flax.serialization`` alone cannot (an NNX-split state: ``can not
    serialize 'State'``) and resumes bit for bit: a functional optimizer on ``nnx.split`` parameters, an
    ``nnx.Optimizer``, linen's dict parameters; a state of another optimizer is refused. Runs on the newest flax
    and on the floor (0.10.0, where ``nnx.to_pure_dict`` is the ``nnx.State`` method)."""
    recipe = _page_recipe()
    save, restore = recipe["save"], recipe["restore"]
    x = jnp.linspace(-1.0, 1.0, 15).reshape(5, 3)

    # nnx.split parameters (an nnx.State) and a functional optimizer, jitted
    graphdef, params0 = nnx.split(_MLP(nnx.Rngs(0)), nnx.Param)
    tx = mxopt_jax.ftml(learning_rate=0.05, wd=1e-3)

    @jax.jit
    def step(params, state):
        grads = jax.grad(lambda p: jnp.mean(nnx.merge(graphdef, p)(x) ** 2))(params)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    params, state = params0, tx.init(params0)
    for _ in range(2):
        params, state = step(params, state)
    with pytest.raises(TypeError, match="can not serialize 'State'"):
        serialization.to_bytes(state)
    p_mid, s_mid = params, state
    for _ in range(2):
        params, state = step(params, state)
    p_res, s_res = restore(params0, save(p_mid)), restore(tx.init(params0), save(s_mid))
    assert type(s_res) is type(s_mid) and jax.tree.structure(s_res) == jax.tree.structure(s_mid)
    for _ in range(2):
        p_res, s_res = step(p_res, s_res)
    chex.assert_trees_all_equal((p_res, s_res), (params, state))
    with pytest.raises(ValueError):
        restore(mxopt_jax.adam().init(params0), save(s_mid))

    # an nnx.Optimizer's state with its model's, restored into a fresh pair
    def make_opt(seed):
        model = _MLP(nnx.Rngs(seed))
        return model, nnx_optimizer(model, mxopt_jax.adam(learning_rate=0.05))

    def train(model, opt):
        nnx_update(opt, model, nnx.grad(lambda m: jnp.mean(m(x) ** 2))(model))

    model, opt = make_opt(0)
    for _ in range(2):
        train(model, opt)
    blob = save((nnx.state(model), nnx.state(opt)))
    other, fresh = make_opt(1)
    m, o = restore((nnx.state(other), nnx.state(fresh)), blob)
    nnx.update(other, m)
    nnx.update(fresh, o)
    for pair in ((model, opt), (other, fresh)):
        train(*pair)
    chex.assert_trees_all_equal(nnx_leaves(nnx.state(other)), nnx_leaves(nnx.state(model)))
    chex.assert_trees_all_equal(nnx_leaves(nnx.state(fresh)), nnx_leaves(nnx.state(opt)))

    # linen-style dict parameters: the same functions
    lparams = params_for("adam")
    ltx = make("adam")
    lstate = run(ltx, lparams, steps=2)[1]
    chex.assert_trees_all_equal(restore(ltx.init(lparams), save(lstate)), lstate)


def test_optax_wrappers_checkpoint_and_resume(tmp_path):
    """chain + inject_hyperparams (a changed learning rate is part of the state) + MultiSteps, via orbax."""

    def make_tx():
        return optax.MultiSteps(
            optax.chain(
                optax.clip_by_global_norm(1.0), optax.inject_hyperparams(mxopt_jax.lamb)(learning_rate=0.1)
            ),
            every_k_schedule=2,
        )

    params = params_for("lamb")
    tx = make_tx()
    state = tx.init(params)
    update = jax.jit(tx.update)

    def steps(p, s, start, n):
        for i in range(start, start + n):
            if i == 2:
                s.inner_opt_state[1].hyperparams["learning_rate"] = jnp.asarray(0.02)
            u, s = update(jax.tree.map(lambda x, i=i: jnp.cos(x + i), p), s, p)
            p = optax.apply_updates(p, u)
        return p, s

    p_mid, s_mid = steps(params, state, 0, 3)
    p_end, s_end = steps(p_mid, s_mid, 3, 3)
    with ocp.StandardCheckpointer() as ckptr:
        ckptr.save(tmp_path / "ckpt", {"params": p_mid, "opt": s_mid})
        ckptr.wait_until_finished()
        abstract = jax.tree.map(
            ocp.utils.to_shape_dtype_struct, {"params": params, "opt": make_tx().init(params)}
        )
        got = ckptr.restore(tmp_path / "ckpt", abstract)
    assert float(got["opt"].inner_opt_state[1].hyperparams["learning_rate"]) == pytest.approx(0.02)
    p_res, s_res = steps(got["params"], got["opt"], 3, 3)
    chex.assert_trees_all_equal(p_res, p_end)
    chex.assert_trees_all_equal(s_res, s_end)


# --------------------------------------------------------------------------- the facade
def _facade(name, **kw):
    """The eager ``step`` path (no compile per optimizer; test_facade checks ``step == fused_step``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        opt = mxopt_jax.create(
            name,
            learning_rate=0.05,
            param_idx2name={0: "fc_weight", 1: "fc_bias"},
            use_fused_step=False,
            **kw,
            # SGLD's key lives on the optimizer (not in the states): the same seed for every Updater here
            **({"seed": 0} if name == "sgld" else {}),
        )
    return mxopt_jax.get_updater(opt)


def _weights(name, dtype=jnp.float32):
    """Two 2-D weights of one shape (GroupAdaGrad needs 2-D; one shape: one fused_step compile)."""
    return [
        jnp.linspace(-1, 1, 6, dtype=jnp.float32).reshape(2, 3).astype(dtype),
        jnp.full((2, 3), 0.3, dtype),
    ]


def _train(upd, weights, start, n, scale=1.0):
    weights = list(weights)
    for s in range(start, start + n):
        for i, w in enumerate(weights):
            g = (
                (scale * jnp.cos(jnp.arange(w.size, dtype=jnp.float32) + 3 * s + i))
                .reshape(w.shape)
                .astype(w.dtype)
            )
            weights[i] = upd(i, g, w)
    return weights


@pytest.mark.parametrize("name", NAMES)
def test_facade_states_resume_bit_exact(name):
    """``get_states(dump_optimizer=True)``/``set_states`` for every optimizer (test_facade covers five in depth),
    and ``flax.serialization`` of the Updater's state arrays, restored into an Updater that has made the same
    number of calls (the counts live in the optimizer, not in the arrays)."""
    mp = name in ("adam", "sgd", "lamb")  # a few with float16 weights and float32 masters
    dtype = jnp.float16 if mp else jnp.float32
    ref = _facade(name, multi_precision=mp)
    w_mid = _train(ref, _weights(name, dtype), 0, MID)
    blob = ref.get_states(dump_optimizer=True)
    msgpack = serialization.to_bytes(ref.states)
    w_end = _train(ref, w_mid, MID, END - MID)

    other = _facade(name, multi_precision=mp)
    other.set_states(blob)
    w_res = _train(other, w_mid, MID, END - MID)
    for a, b in zip(w_res, w_end, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
    chex.assert_trees_all_equal(other.states, ref.states)

    third = _facade(name, multi_precision=mp)
    _train(third, _weights(name, dtype), 0, MID, scale=-2.0)  # same counts, different states
    third.states = serialization.from_bytes(third.states, msgpack)
    w_res = _train(third, w_mid, MID, END - MID)
    for a, b in zip(w_res, w_end, strict=True):
        np.testing.assert_array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32))
