"""Dtypes of states and updates, as docs/interop.md ("Dtypes") and docs/differences.md (#10) promise, for
every optimizer: float32, bfloat16 and float16 with and without ``multi_precision``, and float64 (and
float32/bfloat16 next to it) under ``jax_enable_x64``, enabled only inside ``enable_x64()`` blocks.

The dtype checks evaluate ``init``/``update`` abstractly (``jax.eval_shape``: traced, never compiled);
tests/drivers/test_tree.py already runs the numbers (weights stay finite, masters land exactly).

* ``count`` is int32; SGLD's key uint32; LBSGD's ``num_cums`` int32.
* Float state entries: float32 with ``multi_precision`` on 16-bit parameters; otherwise MXNet's dtype: float32
  (float64 for float64 weights) for the optimizers MXNet keeps in float32 (:data:`FP32_STATE`), the
  parameter's dtype for the others.
* ``master`` is a float32 copy of 16-bit parameters under ``multi_precision``, ``None`` otherwise.
* Updates have the parameter's dtype, float32 for 16-bit parameters under ``multi_precision`` (so that
  ``optax.apply_updates`` lands on the rounded master); applied, the parameters keep their dtype.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from compat import enable_x64
from interop_common import NAMES, grads_for, make, params_for

import mxopt_jax
from mxopt_jax import facade

# MXNet keeps these optimizers' state in float32 whatever the weight dtype (float64 for float64 weights).
FP32_STATE = {"adagrad", "groupadagrad", "adadelta", "rmsprop", "ftrl", "lamb", "lans"}
INT_FIELDS = {("lbsgd", "num_cums")}
# Nadam's momentum-schedule product is a scalar kept in the compute dtype (float32, float64 for float64).
COMPUTE_FIELDS = {("nadam", "m_schedule")}
CASES = [
    ("float32", jnp.float32, False),
    ("float32-mp", jnp.float32, True),  # multi_precision is a no-op for float32
    ("bfloat16", jnp.bfloat16, False),
    ("bfloat16-mp", jnp.bfloat16, True),
    ("float16", jnp.float16, False),
    ("float16-mp", jnp.float16, True),
]


def test_fp32_state_table_matches_the_rules():
    rules = {n for n in NAMES if facade.Optimizer.opt_registry[n]._rule.fp32_state}
    assert rules == FP32_STATE


def expected(name, field, pdtype, mp):
    pdtype = jnp.dtype(pdtype)
    if (name, field) in INT_FIELDS:
        return jnp.dtype(jnp.int32)
    low = pdtype in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
    if mp and low:
        return jnp.dtype(jnp.float32)
    if name in FP32_STATE or (name, field) in COMPUTE_FIELDS:
        return jnp.promote_types(pdtype, jnp.float32)
    return pdtype


def check_dtypes(name, tx, params, pdtype, mp):
    state = jax.eval_shape(tx.init, params)
    grads = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), params)
    updates, new_state = jax.eval_shape(tx.update, grads, state, params)
    low = jnp.dtype(pdtype) in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
    for s in (state, new_state):
        assert s.count.dtype == jnp.int32
        for field in s._fields:
            sub = getattr(s, field)
            if field == "count" or sub is None:
                continue
            if field == "key":
                assert sub.dtype == jnp.uint32
            elif field == "master":
                assert mp and low, "a master copy only for 16-bit parameters under multi_precision"
                for x in jax.tree.leaves(sub):
                    assert x.dtype == jnp.float32
            else:
                for x in jax.tree.leaves(sub):
                    assert x.dtype == expected(name, field, pdtype, mp), (field, x.dtype)
        assert (s.master is not None) == (mp and low)
    want = jnp.float32 if (mp and low) else pdtype
    for u in jax.tree.leaves(updates):
        assert u.dtype == want
    applied = jax.eval_shape(optax.apply_updates, params, updates)
    for a, p in zip(jax.tree.leaves(applied), jax.tree.leaves(params), strict=True):
        assert a.dtype == p.dtype


@pytest.mark.filterwarnings("ignore:Accumulating with float16:UserWarning")
@pytest.mark.parametrize(("case", "dtype", "mp"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("name", NAMES)
def test_state_and_update_dtypes(name, case, dtype, mp):
    check_dtypes(name, make(name, multi_precision=mp), params_for(name, dtype), dtype, mp)


def test_sixteen_bit_without_multi_precision_warns_once_per_init():
    params = params_for("adam", jnp.float16)
    with pytest.warns(UserWarning, match="multi_precision=True") as caught:
        make("adam").init(params)
    assert len([w for w in caught if "multi_precision" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make("adam", multi_precision=True).init(params)  # no warning with multi_precision


# --------------------------------------------------------------------------- x64
X64_CASES = [
    ("float64", jnp.float64, False),
    ("float64-mp", jnp.float64, True),  # float64 is not low precision: no master
    ("float32", jnp.float32, False),  # Python-float hyperparameters must not promote float32 to float64
    ("bfloat16-mp", jnp.bfloat16, True),  # the master stays float32 under x64
]


@pytest.mark.filterwarnings("ignore:Accumulating with float16:UserWarning")
@pytest.mark.parametrize("name", NAMES)
def test_dtypes_under_x64(name):
    with enable_x64():
        for _, dtype, mp in X64_CASES:
            check_dtypes(name, make(name, multi_precision=mp), params_for(name, dtype), dtype, mp)
    assert not jax.config.jax_enable_x64  # the context did not leak


@pytest.mark.filterwarnings("ignore:ccsgd is deprecated:DeprecationWarning")
@pytest.mark.parametrize("name", NAMES)
def test_float64_injected_hyperparameters_keep_float32_parameters(name):
    """float64 hyperparameters (inject_hyperparams with hyperparam_dtype=float64 under x64) do not promote
    float32 parameters, updates or state to float64."""
    static = ("seed",) if name == "sgld" else ()
    with enable_x64():
        params = params_for(name, jnp.float32)
        inject = optax.inject_hyperparams(
            mxopt_jax.OPTIMIZERS[name], static_args=static, hyperparam_dtype=jnp.float64
        )
        tx = inject(learning_rate=0.05)
        state = jax.eval_shape(tx.init, params)
        assert state.hyperparams["learning_rate"].dtype == jnp.float64
        updates, new_state = jax.eval_shape(tx.update, params, state, params)
        assert all(u.dtype == jnp.float32 for u in jax.tree.leaves(updates))
        floats = [x for x in jax.tree.leaves(new_state.inner_state) if jnp.issubdtype(x.dtype, jnp.floating)]
        assert all(x.dtype == jnp.float32 for x in floats)


def test_float64_numbers_under_x64():
    """A float64 run computes in float64: Adam's first step matches a NumPy float64 evaluation of MXNet's
    formula to 1e-13 (float32 arithmetic is off by ~1e-7 here)."""
    with enable_x64():
        params = {"w": jnp.asarray([0.3, -1.2, 2.5], jnp.float64)}
        g = {"w": jnp.asarray([1e-3, 2.0, -0.7], jnp.float64)}
        tx = mxopt_jax.adam(learning_rate=0.1, epsilon=1e-12)
        u, state = tx.update(g, tx.init(params), params)
        assert u["w"].dtype == jnp.float64 and state.mean["w"].dtype == jnp.float64
        gw = np.asarray(g["w"])
        m, v = 0.1 * gw, 0.001 * gw * gw
        ref = -0.1 * np.sqrt(1 - 0.999) / (1 - 0.9) * m / (np.sqrt(v) + 1e-12)  # MXNet: bias-corrected lr
        np.testing.assert_allclose(np.asarray(u["w"]), ref, rtol=1e-13)


@pytest.mark.parametrize("name", ["adam", "lamb", "sgd", "ftml"])
def test_facade_sixteen_bit_weights_and_masters(name):
    """The facade under multi_precision keeps (float32 master, float32 state) and returns 16-bit weights."""
    upd = mxopt_jax.get_updater(mxopt_jax.create(name, multi_precision=True))
    w = upd(0, grads_for({"w": jnp.ones((2, 3), jnp.float16)})["w"], jnp.ones((2, 3), jnp.float16))
    assert w.dtype == jnp.float16
    master, inner = upd.states[0]
    assert master.dtype == jnp.float32
    assert all(
        x.dtype == jnp.float32 for x in jax.tree.leaves(inner) if jnp.issubdtype(x.dtype, jnp.floating)
    )
