"""Bad input is rejected at construction (or init) with an error naming the argument and its allowed range."""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import mxopt_jax

NAMES = sorted(mxopt_jax.OPTIMIZERS)


def build(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**kw)


# (kwargs, exception, message regex) valid for every optimizer
COMMON_BAD = [
    (dict(learning_rate=-0.1), ValueError, r"`learning_rate` must be in \[0.0, inf\]"),
    (dict(learning_rate=math.nan), ValueError, r"`learning_rate`.*NaN"),
    (dict(learning_rate=math.inf), ValueError, r"`learning_rate`"),
    (dict(learning_rate="0.1"), TypeError, r"`learning_rate` must be a number"),
    (dict(wd=-1e-4), ValueError, r"`wd` must be in \[0.0, inf\]"),
    (dict(rescale_grad=0.0), ValueError, r"`rescale_grad` must be in \(0.0, inf\]"),
    (dict(rescale_grad=math.nan), ValueError, r"`rescale_grad`.*NaN"),
    (
        dict(clip_gradient=0.0),
        ValueError,
        r"`clip_gradient` must be None \(no clipping\) or a finite number > 0",
    ),
    (dict(clip_gradient=-1.0), ValueError, r"`clip_gradient` must be None"),
    (dict(clip_gradient=math.inf), ValueError, r"`clip_gradient`"),
    (dict(multi_precision="yes"), TypeError, r"`multi_precision` must be True or False"),
    (dict(begin_num_update=-1), ValueError, r"`begin_num_update` must be in \[0, inf\]"),
    (dict(begin_num_update=1.5), TypeError, r"`begin_num_update` must be an int"),
    (dict(aggregate_num=-1), ValueError, r"`aggregate_num` must be an int >= 0 .*docs/differences.md #19"),
    (dict(lr_scheduler=3.0), TypeError, r"`lr_scheduler` must be"),
    (dict(foo=1), TypeError, r"unexpected keyword argument 'foo'"),
    (dict(param_idx2name={0: "w"}), TypeError, r"unexpected keyword argument 'param_idx2name'"),
]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("kw", "exc", "msg"), COMMON_BAD, ids=[str(sorted(k)) + str(i) for i, (k, _, _) in enumerate(COMMON_BAD)]
)
def test_common_bad_arguments(name, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        build(name, **kw)


# Optimizer-specific out-of-range values: name -> [(kwargs, message regex)]
OWN_BAD = {
    "sgd": [(dict(momentum=-0.1), r"`momentum` must be in \[0.0, 1.0\]"), (dict(momentum=1.5), "momentum")],
    "nag": [(dict(momentum=2.0), "`momentum`")],
    "signum": [(dict(momentum=-0.5), "`momentum`"), (dict(wd_lh=-0.1), r"`wd_lh` must be in \[0.0, inf\]")],
    "dcasgd": [(dict(lamda=-1.0), "`lamda`"), (dict(momentum=1.1), "`momentum`")],
    "lbsgd": [
        (dict(warmup_strategy="cubic"), r"`warmup_strategy` must be one of"),
        (dict(batch_scale=0), r"`batch_scale` must be in \[1, inf\]"),
        (dict(batch_scale=2.5), r"`batch_scale` must be an int"),
        (dict(updates_per_epoch=0), "`updates_per_epoch`"),
        (dict(begin_epoch=-1), "`begin_epoch`"),
        (dict(momentum=-1.0), "`momentum`"),
    ],
    "ccsgd": [(dict(momentum=-1.0), "`momentum`")],
    "adagrad": [
        (dict(epsilon=0.0), r"`epsilon` must be in \(0.0, inf\]"),
        (dict(epsilon=-1e-8), "`epsilon`"),
    ],
    "groupadagrad": [(dict(epsilon=0.0), "`epsilon`"), (dict(wd=0.1), r"`wd` must be 0")],
    "adadelta": [(dict(rho=1.5), r"`rho` must be in \[0.0, 1.0\]"), (dict(epsilon=0.0), "`epsilon`")],
    "rmsprop": [
        (dict(rho=1.0), r"`rho` must be in \[0.0, 1.0\)"),
        (dict(momentum=-0.1), "`momentum`"),
        (dict(epsilon=0.0), "`epsilon`"),
        (dict(clip_weights=-1.0), "`clip_weights`"),
        (dict(centered="no"), None),
    ],
    "adam": [
        (dict(beta1=1.0), r"`beta1` must be in \[0.0, 1.0\)"),
        (dict(beta1=-0.1), "`beta1`"),
        (dict(beta2=1.2), r"`beta2` must be in \[0.0, 1.0\)"),
        (dict(epsilon=0.0), r"`epsilon` must be in \(0.0, inf\]"),
        (dict(lazy_update=True, use_fused_step=False), "`lazy_update=True` needs `use_fused_step`"),
    ],
    "adamw": [(dict(beta1=1.0), "`beta1`"), (dict(beta2=-0.5), "`beta2`"), (dict(epsilon=-1.0), "`epsilon`")],
    "adamax": [(dict(beta1=1.0), "`beta1`"), (dict(beta2=1.0), "`beta2`"), (dict(epsilon=0.0), "`epsilon`")],
    "nadam": [(dict(beta1=1.0), "`beta1`"), (dict(schedule_decay=-0.1), "`schedule_decay`")],
    "adabelief": [(dict(beta1=1.5), "`beta1`"), (dict(epsilon=0.0), "`epsilon`")],
    "ftrl": [(dict(lamda1=-0.1), r"`lamda1` must be in \[0.0, inf\]"), (dict(beta=-1.0), "`beta`")],
    "ftml": [(dict(beta1=1.0), "`beta1`"), (dict(beta2=1.0), "`beta2`"), (dict(epsilon=0.0), "`epsilon`")],
    "lars": [
        (dict(eta=-0.1), "`eta`"),
        (dict(momentum=1.5), "`momentum`"),
        (dict(lazy_update=True, multi_precision=True), "cannot be combined with `multi_precision=True`"),
    ],
    "lamb": [
        (dict(beta1=1.0), "`beta1`"),
        (dict(lower_bound=-1.0), r"`lower_bound` must be in \[0.0, inf\]"),
        (dict(upper_bound=-1.0), "`upper_bound`"),
        (dict(epsilon=0.0), "`epsilon`"),
    ],
    "lans": [(dict(beta2=1.0), "`beta2`"), (dict(upper_bound=-2.0), "`upper_bound`")],
    "sgld": [(dict(seed="x"), "`seed`")],
    "test": [(dict(learning_rate=-1.0), "`learning_rate`")],
}


def _own_cases():
    out = []
    for name in NAMES:
        for i, (kw, msg) in enumerate(OWN_BAD[name]):
            out.append(pytest.param(name, kw, msg, id=f"{name}-{i}"))
    return out


@pytest.mark.parametrize(("name", "kw", "msg"), _own_cases())
def test_own_bad_arguments(name, kw, msg):
    if name == "sgld":  # the seed is read when the state is created
        tx = build(name, **kw)
        with pytest.raises(TypeError, match=msg):
            tx.init({"w": jnp.ones(2)})
        return
    if msg is None:
        with pytest.raises(TypeError, match="must be True or False"):
            build(name, **kw)
        return
    with pytest.raises((ValueError, TypeError), match=msg):
        build(name, **kw)


def test_every_optimizer_has_own_bad_cases():
    assert set(OWN_BAD) == set(NAMES)


def test_sgd_lazy_update_with_multi_precision():
    with pytest.raises(ValueError, match="cannot be combined with `multi_precision=True`"):
        mxopt_jax.sgd(lazy_update=True, multi_precision=True)
    mxopt_jax.adam(lazy_update=True, multi_precision=True)  # allowed for Adam, as MXNet
    with pytest.warns(DeprecationWarning):
        mxopt_jax.ccsgd(multi_precision=True)  # 1.x SGD has no such restriction


@pytest.mark.parametrize("name", NAMES)
def test_integer_and_boolean_parameters_rejected(name):
    tx = build(name)
    for bad in (jnp.arange(4).reshape(2, 2), jnp.ones((2, 2), bool)):
        with pytest.raises(TypeError, match=r"parameter w has dtype .*floating-point"):
            tx.init({"w": bad})


def test_group_adagrad_needs_2d_parameters():
    tx = mxopt_jax.group_adagrad()
    with pytest.raises(ValueError, match=r"parameter b has shape \(3,\).*2-D"):
        tx.init({"w": jnp.ones((2, 3)), "b": jnp.ones(3)})


@pytest.mark.parametrize("name", NAMES)
def test_tree_mismatch_is_a_clear_error(name):
    params = {"w": jnp.ones((2, 2)), "v": jnp.ones((2, 2))}
    tx = build(name)
    state = tx.init(params)
    grads = {"w": jnp.ones((2, 2))}
    with pytest.raises(ValueError, match="tree structure"):
        tx.update(grads, state, params)


def test_lr_mult_wrong_shape():
    tx = mxopt_jax.adam(lr_mult={"w": np.ones(3)})
    with pytest.raises(ValueError, match=r"`lr_mult\['w'\]` must be a scalar"):
        tx.init({"w": jnp.ones(3)})


def test_lr_given_as_array_with_shape():
    with pytest.raises(ValueError, match="`learning_rate` must be a scalar"):
        mxopt_jax.sgd(learning_rate=jnp.ones(3))


def test_non_finite_gradients_propagate_like_mxnet():
    """Documented behaviour: NaN in a gradient reaches the weights (skip it with optax.apply_if_finite)."""
    import optax

    params = {"w": jnp.ones(3)}
    grads = {"w": jnp.array([1.0, jnp.nan, 1.0])}
    tx = mxopt_jax.adam(learning_rate=0.1)
    u, _ = tx.update(grads, tx.init(params), params)
    assert np.isnan(u["w"][1]) and np.isfinite(u["w"][0])
    safe = optax.apply_if_finite(mxopt_jax.adam(learning_rate=0.1), max_consecutive_errors=3)
    u, _ = safe.update(grads, safe.init(params), params)
    np.testing.assert_array_equal(u["w"], np.zeros(3))
