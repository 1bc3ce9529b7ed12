"""Hostile input, table-driven, for every constructor, the update call and the MXNet-style facade.

Every bad input must raise ``ValueError``/``TypeError`` with a message that names the argument and what is
allowed -- never a silent NaN, a broadcast, or a raw XLA/NumPy traceback. ``tests/bad_input/test_validation.py`` covers
the common out-of-range values (negative/NaN/inf learning rate, negative ``wd``, ``rescale_grad`` 0,
``clip_gradient`` 0/-1/inf, unknown ``foo=``), integer/boolean parameters, a gradient tree missing a leaf and
``lr_mult`` of the wrong shape for Adam; the cases here extend that: JAX/NumPy/complex/list/bool values,
every optimizer's own hyperparameters generated from its rule (NaN, strings, arrays, both sides of the
range), the update call (state, shapes, dtypes, params), multipliers for every optimizer, the facade's
``create`` and corrupted or pickled ``set_states`` payloads.

The update-time checks (:func:`mxopt_jax._src.validation.check_update_leaf`, ``check_state_leaves``,
``check_state_type``) run in the driver on static shapes and dtypes: free under ``jit``.

Non-finite gradients are documented behaviour, not errors: they propagate into the update as in MXNet
(``optax.apply_if_finite`` skips such steps: ``tests/interop/test_interop.py``).
"""

from __future__ import annotations

import io
import json
import math
import pickle
import warnings
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from interop_common import NAMES, grads_for, make, params_for
from sampling import default_run, share
from test_validation import OWN_BAD

import mxopt_jax
from mxopt_jax import facade
from mxopt_jax._src import rule as _rule
from mxopt_jax._src import validation as _validation

RULES = {n: facade.Optimizer.opt_registry[n]._rule for n in NAMES}
INF, NAN = math.inf, math.nan


def ctor(name, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**kw)


# =========================================================================== constructors: base arguments
# (id, kwargs, exception, message regex); every optimizer. None of these are in test_validation.COMMON_BAD.
CTOR_BAD = [
    ("lr-jax-nan", dict(learning_rate=jnp.float32(NAN)), ValueError, r"`learning_rate` must be in \[0.0, inf\], got NaN"),
    ("lr-numpy-negative", dict(learning_rate=np.float32(-1)), ValueError, r"`learning_rate` must be in \[0.0, inf\], got -1"),
    ("lr-minus-inf", dict(learning_rate=-INF), ValueError, r"`learning_rate` must be in \[0.0, inf\]"),
    ("lr-complex", dict(learning_rate=1j), TypeError, r"`learning_rate` must be a real number"),
    ("lr-list", dict(learning_rate=[0.1]), ValueError, r"`learning_rate` must be a scalar, got shape \(1,\)"),
    ("lr-array", dict(learning_rate=jnp.ones(3)), ValueError, r"`learning_rate` must be a scalar, got shape \(3,\)"),
    ("lr-bool", dict(learning_rate=True), TypeError, r"`learning_rate` must be a number, got bool"),
    ("lr-dict", dict(learning_rate={"w": 0.1}), TypeError, r"`learning_rate` must be a real number, got dtype object"),
    ("wd-none", dict(wd=None), TypeError, r"`wd` must be a number, not None"),
    ("wd-inf", dict(wd=INF), ValueError, r"`wd` must be in \[0.0, inf\], got inf"),
    ("wd-nan", dict(wd=NAN), ValueError, r"`wd` must be in \[0.0, inf\], got NaN"),
    ("wd-jax-negative", dict(wd=jnp.float32(-0.1)), ValueError, r"`wd` must be in \[0.0, inf\]"),
    ("wd-string", dict(wd="0"), TypeError, r"`wd` must be a number, got str"),
    ("rescale-negative", dict(rescale_grad=-1.0), ValueError, r"`rescale_grad` must be in \(0.0, inf\]"),
    ("rescale-inf", dict(rescale_grad=INF), ValueError, r"`rescale_grad` must be in \(0.0, inf\], got inf"),
    ("rescale-none", dict(rescale_grad=None), TypeError, r"`rescale_grad` must be a number, not None"),
    ("clip-string", dict(clip_gradient="1"), TypeError, r"`clip_gradient` must be a number, got str"),
    ("clip-nan", dict(clip_gradient=NAN), ValueError, r"`clip_gradient` must be None \(no clipping\) or a finite number > 0"),
    ("clip-jax-negative", dict(clip_gradient=jnp.float32(-1)), ValueError, r"`clip_gradient` must be None"),
    ("clip-array", dict(clip_gradient=jnp.ones(2)), ValueError, r"`clip_gradient` must be a scalar"),
    ("mp-int", dict(multi_precision=1), TypeError, r"`multi_precision` must be True or False, got 1"),
    ("mp-none", dict(multi_precision=None), TypeError, r"`multi_precision` must be True or False"),
    ("fused-string", dict(use_fused_step="yes"), TypeError, r"`use_fused_step` must be True or False"),
    ("aggregate-float", dict(aggregate_num=1.5), TypeError, r"`aggregate_num` must be an int >= 0 \(0 or 1: no aggregation\) or numpy.inf \(all parameters in one call\), got 1.5"),
    ("aggregate-minus-inf", dict(aggregate_num=-INF), TypeError, r"`aggregate_num` must be an int >= 0"),
    ("aggregate-string", dict(aggregate_num="4"), TypeError, r"`aggregate_num` must be an int >= 0"),
    ("begin-bool", dict(begin_num_update=True), TypeError, r"`begin_num_update` must be an int >= 0, got True"),
    ("begin-too-big", dict(begin_num_update=2**40), ValueError, r"`begin_num_update` must be <= 2147483647"),
    ("begin-numpy-negative", dict(begin_num_update=np.int64(-3)), ValueError, r"`begin_num_update` must be in \[0, inf\]"),
    ("scheduler-string", dict(lr_scheduler="cosine"), TypeError, r"`lr_scheduler` must be an mxopt_jax.lr_scheduler.LRScheduler or a callable"),
    ("scheduler-array", dict(lr_scheduler=jnp.float32(0.1)), TypeError, r"`lr_scheduler` must be .*static_args=\('lr_scheduler',\)"),
    ("schedule-and-scheduler", dict(learning_rate=lambda c: 0.1, lr_scheduler=lambda n: 0.1), TypeError, r"either a schedule as `learning_rate` or an `lr_scheduler`, not both"),
    ("misspelled", dict(learning_rat=0.1), TypeError, r"unexpected keyword argument 'learning_rat'"),
    ("mxnet-1x-lr", dict(lr=0.1), TypeError, r"unexpected keyword argument 'lr'"),
    ("sym", dict(sym=None), TypeError, r"unexpected keyword argument 'sym'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "kw", "exc", "msg"), CTOR_BAD, ids=[c[0] for c in CTOR_BAD])
@pytest.mark.parametrize("name", NAMES)
def test_constructor_rejects_bad_base_arguments(name, case, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        ctor(name, **kw)


# =========================================================================== constructors: own arguments
def _own_cases():
    """Generated from each rule's ``checks`` (ranges) and ``static`` (switches); skips test_validation's."""
    seen = {(n, k, v) for n, cases in OWN_BAD.items() for kw, _ in cases for k, v in kw.items()}
    out = []
    for name in NAMES:
        rule = RULES[name]
        for arg, spec in rule.checks.items():
            lo, hi = spec.get("low"), spec.get("high")
            rng = r"must be in [\[\(]"
            vals = [
                ("nan", NAN, ValueError, rf"`{arg}` {rng}.*got NaN"),
                ("string", "0.5", TypeError, rf"`{arg}` must be a number, got str"),
                ("array", jnp.full((2,), 0.5), ValueError, rf"`{arg}` must be a scalar, got shape \(2,\)"),
                ("complex", 0.5j, TypeError, rf"`{arg}` must be a real number"),
            ]
            if not spec.get("allow_none"):
                vals.append(("none", None, TypeError, rf"`{arg}` must be a number, not None"))
            if lo is not None:
                below = lo if spec.get("low_open") else lo - 0.5
                vals.append(("below", below, ValueError, rf"`{arg}` {rng}{lo}"))
                vals.append(("minus-inf", -INF, ValueError, rf"`{arg}` {rng}"))
            if hi is not None:
                above = hi if spec.get("high_open") else hi + 0.5
                vals.append(("above", above, ValueError, rf"`{arg}` {rng}.*{hi}[\]\)]"))
            vals.append(("plus-inf", INF, ValueError, rf"`{arg}` {rng}.*got inf"))
            for tag, v, exc, msg in vals:
                if isinstance(v, float) and not math.isnan(v) and (name, arg, v) in seen:
                    continue
                out.append(pytest.param(name, {arg: v}, exc, msg, id=f"{name}-{arg}-{tag}"))
        for arg in rule.static:  # test_validation tries rmsprop's centered="no" only
            for tag, v in (("string", "yes"), ("int", 1), ("none", None)):
                msg = rf"`{arg}` must be True or False"
                out.append(pytest.param(name, {arg: v}, TypeError, msg, id=f"{name}-{arg}-{tag}"))
    extra = [
        ("lbsgd", dict(warmup_epochs="5"), TypeError, r"`warmup_epochs` must be an int >= 0"),
        ("lbsgd", dict(updates_per_epoch=1.5), TypeError, r"`updates_per_epoch` must be an int >= 1"),
        ("lbsgd", dict(begin_epoch=True), TypeError, r"`begin_epoch` must be an int >= 0"),
        ("lbsgd", dict(batch_scale=2**40), ValueError, r"`batch_scale` must be <= 2147483647"),
        ("lbsgd", dict(warmup_strategy=None), ValueError, r"`warmup_strategy` must be one of \('linear', 'power2', 'sqrt', 'lars'\)"),
        ("lamb", dict(lower_bound=2.0, upper_bound=1.0), ValueError, r"`lower_bound` must be <= `upper_bound`"),
        ("lans", dict(lower_bound=5.0, upper_bound=0.5), ValueError, r"`lower_bound` must be <= `upper_bound`"),
        ("groupadagrad", dict(wd=jnp.float32(0.1)), ValueError, r"`wd` must be 0 \(GroupAdaGrad has no weight decay"),
        ("sgd", dict(lazy_update=True, multi_precision=True, momentum=0.9), ValueError, r"`lazy_update=True` cannot be combined"),
        ("adam", dict(lazy_update=True, use_fused_step=False, beta1=0.5), ValueError, r"`lazy_update=True` needs `use_fused_step`"),
    ]  # fmt: skip
    for i, (name, kw, exc, msg) in enumerate(extra):
        out.append(pytest.param(name, kw, exc, msg, id=f"{name}-extra{i}"))
    return out


OWN_CASES = _own_cases()


@pytest.mark.parametrize(("name", "kw", "exc", "msg"), OWN_CASES)
def test_constructor_rejects_bad_own_arguments(name, kw, exc, msg):
    with pytest.raises(exc, match=msg):
        ctor(name, **kw)


def test_own_cases_cover_every_checked_argument():
    covered = {(p.values[0], k) for p in OWN_CASES for k in p.values[1]}
    for name in NAMES:
        for arg in (*RULES[name].checks, *RULES[name].static):
            assert (name, arg) in covered, (name, arg)


# =========================================================================== multipliers (init), every optimizer
MULT_BAD = [
    ("lr_mult-array-leaf", dict(lr_mult="ARRAY"), ValueError, r"`lr_mult\['kernel'\]` must be a scalar, got shape \(2,\)"),
    ("lr_mult-nan", dict(lr_mult="NAN"), ValueError, r"`lr_mult\['kernel'\]` must be in \[0.0, inf\], got NaN"),
    ("lr_mult-string", dict(lr_mult="STR"), TypeError, r"`lr_mult\['kernel'\]` must be a number, got str"),
    ("lr_mult-callable-array", dict(lr_mult=lambda p, x: jnp.ones(2)), ValueError, r"`lr_mult\[.*\]` must be a scalar"),
    ("lr_mult-bare-float", dict(lr_mult=2.0), ValueError, r"`lr_mult`.*(must be a pytree with the same structure as the parameters|must match the structure of the parameters)"),
    ("lr_mult-missing-leaf", dict(lr_mult="MISSING"), ValueError, r"`lr_mult`.*(must be a pytree with the same structure|must match the structure of the parameters)"),
    ("wd_mult-negative", dict(wd_mult="NEG"), ValueError, r"`wd_mult\['kernel'\]` must be in \[0.0, inf\], got -1"),
    ("wd_mult-callable-inf", dict(wd_mult=lambda p, x: INF), ValueError, r"`wd_mult\[.*\]` must be in \[0.0, inf\], got inf"),
]  # fmt: skip


def _mult(name, spec):
    params = params_for(name)
    first = "kernel" if "kernel" in params else "emb"
    base = dict.fromkeys(params, 1.0)
    table = {
        "ARRAY": {**base, first: jnp.ones(2)},
        "NAN": {**base, first: NAN},
        "STR": {**base, first: "2"},
        "MISSING": {first: 1.0},
        "NEG": {**base, first: -1.0},
    }
    return params, first, {k: table.get(v, v) if isinstance(v, str) else v for k, v in spec.items()}


@pytest.mark.parametrize(("case", "kw", "exc", "msg"), MULT_BAD, ids=[c[0] for c in MULT_BAD])
@pytest.mark.parametrize("name", NAMES)
def test_bad_multipliers_fail_at_init(name, case, kw, exc, msg):
    params, first, kw = _mult(name, kw)
    msg = msg.replace("kernel", first)
    tx = make(name, **kw)
    with pytest.raises(exc, match=msg):
        tx.init(params)


# =========================================================================== optax.inject_hyperparams
INJECT_BAD = [
    ("lr_mult", dict(lr_mult=lambda path, leaf: 0.5), "lr_mult"),
    ("wd_mult", dict(wd_mult=lambda path, leaf: 0.0 if path.endswith("bias") else 1.0), "wd_mult"),
    ("lr_scheduler", dict(learning_rate=None, lr_scheduler=mxopt_jax.lr_scheduler.FactorScheduler(step=10)), "lr_scheduler"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "kw", "arg"), INJECT_BAD, ids=[c[0] for c in INJECT_BAD])
@pytest.mark.parametrize("name", NAMES)
def test_inject_hyperparams_without_static_args_names_them(name, case, kw, arg):
    """optax.inject_hyperparams calls every callable argument as a schedule of the step count unless it is in
    `static_args`: an lr_mult / wd_mult callable (path, leaf) fails with mxopt_jax's message naming the
    argument and static_args, as an lr_scheduler's does, not with its own missing argument; with static_args
    the same arguments work."""
    params = params_for(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(TypeError, match=rf"mxopt_jax\.\w+: `{arg}` .*static_args=\('{arg}',\)"):
            optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name])(**kw).init(params)
        static = (arg, "seed") if name == "sgld" else (arg,)
        optax.inject_hyperparams(mxopt_jax.OPTIMIZERS[name], static_args=static)(**kw).init(params)


def test_a_negative_learning_rate_is_refused_wherever_it_is_concrete():
    """inject_hyperparams: a negative rate is refused when the transform is made (init) and on every update
    outside jit (the constructor's check runs on the concrete value); inside a jitted step the value is traced
    and cannot be checked: it is used as given, as the docs say (docs/interop.md, the inject_hyperparams row)."""
    params = {"w": jnp.ones(3)}
    g = {"w": jnp.ones(3)}
    refused = r"mxopt_jax.sgd: `learning_rate` must be in \[0.0, inf\], got -1.0"
    with pytest.raises(ValueError, match=refused):
        optax.inject_hyperparams(mxopt_jax.sgd)(learning_rate=-1.0).init(params)
    tx = optax.inject_hyperparams(mxopt_jax.sgd)(learning_rate=0.1)
    state = tx.init(params)
    state.hyperparams["learning_rate"] = jnp.asarray(-1.0, jnp.float32)
    with pytest.raises(ValueError, match=refused):
        tx.update(g, state, params)
    u, _ = jax.jit(tx.update)(g, state, params)  # traced: not checkable; the step ascends
    np.testing.assert_allclose(u["w"], 1.0)


def test_facade_refuses_a_negative_rate_however_it_is_set():
    """The facade's numbers are on the host: its setters check them at once, and every update checks the
    learning rate and weight decay of each index (an attribute written directly, a scheduler's output, a
    param_dict multiplier) before anything runs, leaving the counts, weights and states as they were."""
    opt = mxopt_jax.create("sgd", learning_rate=0.1, momentum=0.9)
    with pytest.raises(
        ValueError, match=r"SGD.set_learning_rate: `lr` must be in \[0.0, inf\], got -1.0 \(MXNet"
    ):
        opt.set_learning_rate(-1.0)
    with pytest.raises(
        ValueError, match=r"SGD.set_lr_mult: `lr_mult\[0\]` must be in \[0.0, inf\], got -2.0"
    ):
        opt.set_lr_mult({0: -2.0})
    with pytest.raises(ValueError, match=r"SGD.set_wd_mult: `wd_mult\['fc_weight'\]` must be in .*got NaN"):
        opt.set_wd_mult({"fc_weight": NAN})
    with pytest.raises(TypeError, match=r"SGD.set_lr_mult: expected a dict of index or name -> multiplier"):
        opt.set_lr_mult([2.0])
    assert opt.lr == 0.1 and opt.lr_mult == {} and opt.wd_mult == {}

    class Mult:
        lr_mult, wd_mult = -1.0, 1.0

    cases = [
        ("lr", -0.5, r"the learning rate \(the rate times its lr_mult\) of index 0 is -0.5; it must be in \[0.0, inf\]"),
        ("wd", -1e-4, r"the weight decay \(wd times its wd_mult\) of index 0 is -0.0001"),
        ("lr", NAN, r"the learning rate .* of index 0 is nan"),
        ("lr_scheduler", lambda n: 0.1 if n <= 1 else -0.25, r"the learning rate .* of index 0 is -0.25"),
        ("param_dict", {0: Mult()}, r"the learning rate .* of index 0 is -0.1"),
    ]  # fmt: skip
    for fused in (True, False):
        for attr, value, msg in cases:
            opt = mxopt_jax.create("sgd", learning_rate=0.1, momentum=0.9, use_fused_step=fused)
            upd = mxopt_jax.get_updater(opt)
            w = upd(0, jnp.ones(3), jnp.ones(3))
            setattr(opt, attr, value)
            states, count = jax.tree.map(np.asarray, dict(upd.states)), opt.num_update
            with pytest.raises(ValueError, match=rf"SGD: {msg}.*MXNet does not check this value"):
                upd(0, jnp.ones(3), w)
            assert opt.num_update == count and opt.index_update_counts == {0: count}
            chex_equal = jax.tree.map(np.array_equal, dict(upd.states), states)
            assert all(jax.tree.leaves(chex_equal))


# =========================================================================== parameters / update call
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("case", "leaf", "msg"),
    [
        ("complex", jnp.ones((2, 2), jnp.complex64), r"parameter w has dtype complex64; .*floating-point"),
        ("uint8", jnp.ones((2, 2), jnp.uint8), r"parameter w has dtype uint8"),
        ("string", "abc", r"parameter w is a str, not an array"),
        ("object", object(), r"parameter w is a object, not an array"),
    ],
    ids=["complex", "uint8", "string", "object"],
)
def test_non_float_parameters_rejected_at_init(name, case, leaf, msg):
    with pytest.raises(TypeError, match=msg):
        make(name).init({"w": leaf})


@pytest.mark.parametrize("name", NAMES)
def test_multi_precision_without_params_says_why(name):
    params = params_for(name, jnp.float16)
    tx = make(name, multi_precision=True)
    state = tx.init(params)
    with pytest.raises(ValueError, match=r"update\(\) needs `params`.*multi_precision also needs them"):
        tx.update(grads_for(params), state)


@pytest.mark.parametrize("name", NAMES)
def test_state_from_other_parameters_structure(name):
    params = params_for(name)
    other = {**params, "extra": jnp.ones_like(params[sorted(params)[0]])}
    tx = make(name)
    state = tx.init(other)
    if not RULES[name].fields:  # SGLD and Test keep no per-parameter state: nothing to mismatch
        tx.update(grads_for(params), state, params)
        return
    with pytest.raises(
        ValueError, match=r"optimizer state `\w+` does not match the gradients' tree structure"
    ):
        tx.update(grads_for(params), state, params)


def _update_case(name, case):
    params = params_for(name)
    key = sorted(params)[0]
    tx = make(name)
    state = tx.init(params)
    g = grads_for(params)
    if case == "grad-shape":
        g[key] = g[key][:1]  # broadcastable: would silently broadcast
    elif case == "grad-int":
        g[key] = g[key].astype(jnp.int32)
    elif case == "grad-complex":
        g[key] = g[key].astype(jnp.complex64)
    elif case == "params-int":
        params = {**params, key: params[key].astype(jnp.int32)}
    elif case == "params-shape":
        params = {**params, key: params[key][:1]}
    elif case == "state-shape":
        state = tx.init({**params, key: jnp.ones((1, *params[key].shape[1:]))})
    elif case == "state-none":
        state = None
    elif case == "state-other-optimizer":
        state = make("ftml" if name != "ftml" else "adam").init(params)
    return tx, g, state, params


UPDATE_BAD = [
    ("grad-shape", ValueError, r"the gradient for parameter \w+ has shape \(1, ?\d*,?.*\) but the parameter has shape"),
    ("grad-int", TypeError, r"the gradient for parameter \w+ has dtype int32; gradients must be floating-point"),
    ("grad-complex", TypeError, r"the gradient for parameter \w+ has dtype complex64"),
    ("params-int", TypeError, r"parameter \w+ has dtype int32; optimizers update floating-point"),
    ("params-shape", ValueError, r"the gradient for parameter \w+ has shape .* but the parameter has shape"),
    ("state-shape", ValueError, r"optimizer state `\w+` of parameter \w+ has shape .*, expected|master copy"),
    ("state-none", TypeError, r"`state` is a NoneType, expected the \w+State returned by this optimizer's init"),
    ("state-other-optimizer", TypeError, r"`state` is a \w+State, expected the \w+State returned by"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "exc", "msg"), UPDATE_BAD, ids=[c[0] for c in UPDATE_BAD])
@pytest.mark.parametrize("name", NAMES)
def test_update_rejects_mismatched_input(name, case, exc, msg):
    if case == "state-shape" and not RULES[name].fields:
        pytest.skip("no per-parameter state")  # counted in the report, not a silent pass
    tx, g, state, params = _update_case(name, case)
    with pytest.raises(exc, match=msg):
        tx.update(g, state, params)


# --------------------------------------------------------------------------- the check helpers themselves
def test_check_update_leaf():
    w = jnp.ones((2, 3))
    _validation.check_update_leaf("o", "w", jnp.ones((2, 3)), w)
    _validation.check_update_leaf("o", "w", jnp.ones((2, 3), jnp.bfloat16), None)
    with pytest.raises(
        ValueError, match=r"o: the gradient for parameter w has shape \(1, 3\) but the parameter"
    ):
        _validation.check_update_leaf("o", "w", jnp.ones((1, 3)), w)
    with pytest.raises(TypeError, match=r"gradient for parameter w has dtype int32"):
        _validation.check_update_leaf("o", "w", jnp.ones((2, 3), jnp.int32), w)
    with pytest.raises(TypeError, match=r"gradient for parameter <root> is a str"):
        _validation.check_update_leaf("o", "", "g", w)
    with pytest.raises(TypeError, match=r"parameter w has dtype int32"):
        _validation.check_update_leaf("o", "w", jnp.ones((2, 3)), w.astype(jnp.int32))
    with pytest.raises(ValueError, match=r"master copy of parameter w has shape \(3,\)"):
        _validation.check_update_leaf("o", "w", jnp.ones((2, 3)), w, master=jnp.ones(3))


def test_check_state_leaves_and_type():
    from mxopt_jax._src.optimizers.adagrad import GROUP_ADAGRAD_RULE
    from mxopt_jax._src.optimizers.adam import ADAM_RULE, AdamState

    w = jnp.ones((4, 3))
    _rule.check_state_leaves("o", "w", ("mean", "var"), (w, w), ADAM_RULE.init, w, {})
    _rule.check_state_leaves("o", "e", ("history",), (jnp.ones((4, 1)),), GROUP_ADAGRAD_RULE.init, w, {})
    with pytest.raises(
        ValueError, match=r"optimizer state `var` of parameter w has shape \(3,\), expected \(4, 3\)"
    ):
        _rule.check_state_leaves("o", "w", ("mean", "var"), (w, jnp.ones(3)), ADAM_RULE.init, w, {})
    with pytest.raises(
        ValueError, match=r"state `history` of parameter e has shape \(3, 1\), expected \(4, 1\)"
    ):
        _rule.check_state_leaves("o", "e", ("history",), (jnp.ones((3, 1)),), GROUP_ADAGRAD_RULE.init, w, {})
    with pytest.raises(ValueError, match=r"optimizer state `mean` of parameter w is missing"):
        _rule.check_state_leaves("o", "w", ("mean", "var"), (None, w), ADAM_RULE.init, w, {})
    _validation.check_state_type("o", mxopt_jax.adam().init({"w": w}), AdamState)
    with pytest.raises(TypeError, match=r"`state` is a SGDState, expected the AdamState"):
        _validation.check_state_type("o", mxopt_jax.sgd().init({"w": w}), AdamState)


# =========================================================================== non-finite gradients (documented)
@pytest.mark.parametrize("bad", [NAN, INF], ids=["nan", "inf"])
@pytest.mark.parametrize("name", default_run(NAMES, {"signum", *share(2)}))  # all of them under slow
def test_non_finite_gradients_propagate_like_mxnet(name, bad):
    """docs/interop.md: "Non-finite gradients are not errors. As in MXNet they propagate" (for every optimizer, NaN and
    inf); the other parameters are untouched by it. Skipping such steps is optax.apply_if_finite's job.
    Signum's update is ``lr * sign(mom)``: an infinite gradient gives finite steps but an infinite momentum
    that stays infinite (documented in docs/interop.md)."""
    params = params_for(name)
    key = sorted(params)[0]
    g = grads_for(params)
    g[key] = g[key].at[(0,) * g[key].ndim].set(bad)
    tx = make(name)
    u, state = tx.update(g, tx.init(params), params)
    if name == "signum" and bad == INF:
        assert bool(jnp.all(jnp.isfinite(u[key]))) and not bool(jnp.all(jnp.isfinite(state.mom[key])))
        u, state = tx.update(grads_for(params, 1), state, optax.apply_updates(params, u))
        assert not bool(jnp.all(jnp.isfinite(state.mom[key])))
    else:
        assert not bool(jnp.all(jnp.isfinite(u[key]))), name
    for k in params:
        if k != key:
            assert bool(jnp.all(jnp.isfinite(u[k]))), (name, k)


def test_a_schedule_returning_nan_propagates():
    """Schedules cannot be checked at construction; their NaN shows in the update, as any NaN hyperparameter."""
    tx = mxopt_jax.sgd(learning_rate=lambda count: jnp.where(count > 0, jnp.nan, 0.1))
    params = {"w": jnp.ones(3)}
    state = tx.init(params)
    u, state = tx.update(params, state, params)
    assert bool(jnp.all(jnp.isfinite(u["w"])))
    u, state = tx.update(params, state, params)
    assert bool(jnp.all(jnp.isnan(u["w"])))


# =========================================================================== facade
FACADE_BAD = [
    ("unknown-kw", dict(foo=1), TypeError, r"unexpected keyword argument 'foo'"),
    ("lr-negative", dict(learning_rate=-1.0), ValueError, r"`learning_rate` must be in \[0.0, inf\]"),
    ("lr-nan", dict(learning_rate=NAN), ValueError, r"`learning_rate` must be in \[0.0, inf\], got NaN"),
    ("wd-negative", dict(wd=-1.0), ValueError, r"`wd` must be in \[0.0, inf\]"),
    ("clip-zero", dict(clip_gradient=0.0), ValueError, r"`clip_gradient` must be None \(no clipping\)"),
    ("rescale-zero", dict(rescale_grad=0.0), ValueError, r"`rescale_grad` must be in \(0.0, inf\]"),
    ("mp-string", dict(multi_precision="yes"), TypeError, r"`multi_precision` must be True or False"),
    ("idx2name-list", dict(param_idx2name=["w"]), TypeError, r"param_idx2name should be a dict"),
    ("lr_mult-kw", dict(lr_mult={0: 2.0}), TypeError, r"unexpected keyword argument 'lr_mult'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "kw", "exc", "msg"), FACADE_BAD, ids=[c[0] for c in FACADE_BAD])
@pytest.mark.parametrize("name", NAMES)
def test_facade_create_rejects_bad_arguments(name, case, kw, exc, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(exc, match=msg):
            mxopt_jax.create(name, **kw)


@pytest.mark.parametrize(
    ("name", "exc", "msg"),
    [
        (3, TypeError, r"create: `name` must be an optimizer name \(str\), one of adabelief, .*got int 3"),
        (None, TypeError, r"`name` must be an optimizer name \(str\).*got NoneType None"),
        (b"adam", TypeError, r"`name` must be an optimizer name \(str\)"),
        (mxopt_jax.adam, TypeError, r"`name` must be an optimizer name \(str\)"),
        (
            "adamz",
            ValueError,
            r"Cannot find optimizer adamz \(did you mean 'adam'\?\); registered optimizers: adabelief, .*test",
        ),
        ("", ValueError, r"Cannot find optimizer ; registered optimizers"),
        ("adam ", ValueError, r"Cannot find optimizer adam  \(did you mean 'adam'\?\); registered"),
    ],
    ids=["int", "none", "bytes", "function", "unknown", "empty", "trailing-space"],
)
def test_facade_create_rejects_bad_names(name, exc, msg):
    with pytest.raises(exc, match=msg):
        mxopt_jax.create(name)


def test_facade_integer_weight():
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    with pytest.raises(TypeError, match=r"parameter 0 has dtype int32; optimizers update floating-point"):
        upd(0, jnp.ones(3), jnp.ones(3, jnp.int32))


def test_facade_gradient_shape_mismatch():
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    with pytest.raises(
        ValueError, match=r"gradient for parameter \S+ has shape \(3,\) but the parameter has shape \(4,\)"
    ):
        upd(0, jnp.ones(3), jnp.ones(4))


# --------------------------------------------------------------------------- set_states payloads
def _blob(name="adam", **kw):
    upd = mxopt_jax.get_updater(mxopt_jax.create(name, **kw))
    for i in range(2):
        upd(i, jnp.full((3,), 0.5), jnp.ones(3))
    return upd.get_states(dump_optimizer=True), upd.get_states()


def _zip(manifest, arrays):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", manifest if isinstance(manifest, str) else json.dumps(manifest))
        for k, v in arrays.items():
            zf.writestr(k, v)
    return buf.getvalue()


def _parts(blob):
    zf = zipfile.ZipFile(io.BytesIO(blob))
    return json.loads(zf.read("manifest.json")), {
        n: zf.read(n) for n in zf.namelist() if n.startswith("arrays/")
    }


def _edit(fn):
    def make_payload():
        manifest, arrays = _parts(_blob()[0])
        out = fn(manifest, arrays)
        return _zip(*out) if out is not None else _zip(manifest, arrays)

    return make_payload


def _first_array(m):
    return m["states"]["dict"][0][1]["tuple"][0]


class _Evil:
    def __reduce__(self):
        return (exec, ("raise SystemExit('unpickled!')",))


PAYLOADS = [
    ("pickle-protocol-5", lambda: pickle.dumps({0: None}, protocol=5), ValueError, r"look like a Python pickle.*never unpickles"),
    ("pickle-evil", lambda: pickle.dumps(_Evil()), ValueError, r"look like a Python pickle"),
    ("pickle-protocol-0", lambda: pickle.dumps({0: None}, protocol=0), ValueError, r"not an mxopt_jax Updater state archive"),
    ("empty", lambda: b"", ValueError, r"not an mxopt_jax Updater state archive \(zip with manifest.json\)"),
    ("truncated", lambda: _blob()[0][:200], ValueError, r"not an mxopt_jax Updater state archive"),
    ("flipped-bytes", lambda: bytes(b ^ 0xFF for b in _blob()[0]), ValueError, r"not an mxopt_jax Updater state archive"),
    ("zip-without-manifest", lambda: _raw_zip({"arrays/0.bin": b"\0" * 4}), ValueError, r"not an mxopt_jax Updater state archive.*manifest.json"),
    ("manifest-not-json", _edit(lambda m, a: ("{not json", a)), ValueError, r"not an mxopt_jax Updater state archive"),
    ("manifest-list", _edit(lambda m, a: ([1, 2], a)), ValueError, r"wrong format tag"),
    ("no-states", _edit(lambda m, a: m.pop("states") and None), ValueError, r"the manifest has no 'states' entry"),
    ("version-2", _edit(lambda m, a: m.update(version=2)), ValueError, r"unsupported state format version 2"),
    ("states-list", _edit(lambda m, a: m.update(states={"list": []})), ValueError, r"the archive's states are not a dict"),
    ("array-bytes-short", _edit(lambda m, a: ({**m}, {**a, "arrays/0.bin": a["arrays/0.bin"][:-4]})), ValueError, r"malformed states.*holds 8 bytes, but float32\[3\] needs 12"),
    ("array-member-missing", _edit(lambda m, a: (m, {})), ValueError, r"malformed states.*malformed array entry"),
    ("array-dtype-object", _edit(lambda m, a: _first_array(m).update(dtype="object")), ValueError, r"malformed array entry"),
    ("array-shape-negative", _edit(lambda m, a: _first_array(m).update(shape=[-1, -3])), ValueError, r"malformed array shape"),
    ("array-shape-string", _edit(lambda m, a: _first_array(m).update(shape="abc")), ValueError, r"malformed array shape"),
    ("array-shape-wrong", _edit(lambda m, a: _first_array(m).update(shape=[5])), ValueError, r"holds 12 bytes, but float32\[5\] needs 20"),
    ("int-not-a-number", _edit(lambda m, a: m["states"].update({"dict": [[{"int": "abc"}, None]]})), ValueError, r"malformed states in the state archive: invalid literal"),
    ("tuple-not-a-list", _edit(lambda m, a: m["states"].update({"dict": [[{"int": 0}, {"tuple": 5}]]})), ValueError, r"malformed states in the state archive"),
    ("unknown-tag", _edit(lambda m, a: m["states"].update({"dict": [[{"int": 0}, {"object": "os.system"}]]})), ValueError, r"malformed state manifest entry"),
    ("optimizer-not-object", _edit(lambda m, a: m.update(optimizer=5)), ValueError, r"'optimizer' must be an object with 'class' and 'attrs'"),
    ("optimizer-attrs-list", _edit(lambda m, a: m["optimizer"].update(attrs=[1])), ValueError, r"'optimizer' must be an object"),
    ("optimizer-class", _edit(lambda m, a: m["optimizer"].update({"class": "SGD"})), ValueError, r"holds a SGD optimizer but this Updater's optimizer is a Adam"),
    ("unknown-attribute", _edit(lambda m, a: m["optimizer"]["attrs"].update(__class__={"str": "x"})), ValueError, r"sets unknown optimizer attributes \['__class__'\]"),
    ("attribute-type", _edit(lambda m, a: m["optimizer"]["attrs"].update(lr={"str": "x"})), ValueError, r"optimizer attribute 'lr' to 'x'; expected a value like the current float"),
    ("attribute-nan", _edit(lambda m, a: m["optimizer"]["attrs"].update(wd={"float": "nan"})), ValueError, r"optimizer attribute 'wd' to nan"),
    ("scheduler-class", _edit(lambda m, a: m["optimizer"]["attrs"].update(lr_scheduler={"scheduler": "os.system", "attrs": {"dict": []}})), ValueError, r"malformed optimizer attribute 'lr_scheduler'.*unknown scheduler class"),
    ("other-optimizer-states", lambda: _blob("sgd", momentum=0.9)[1], ValueError, r"the state of index 0 does not fit Adam: expected a tuple of its 2 state entries \('mean', 'var'\)"),
]  # fmt: skip


def _raw_zip(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


@pytest.mark.parametrize(("case", "payload", "exc", "msg"), PAYLOADS, ids=[c[0] for c in PAYLOADS])
def test_set_states_rejects_corrupted_payloads(case, payload, exc, msg):
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam", learning_rate=0.5))
    upd(0, jnp.full((3,), 0.5), jnp.ones(3))
    states, opt = upd.states, upd.optimizer
    with pytest.raises(exc, match=msg):
        upd.set_states(payload())
    # nothing half-loaded
    assert upd.states is states and set(states) == {0}
    assert (opt.lr, opt.num_update, opt.wd, opt._index_update_count) == (0.5, 1, 0.0, {0: 1})


@pytest.mark.parametrize("bad", ["states", None, 3, ["x"]], ids=["str", "none", "int", "list"])
def test_set_states_rejects_non_bytes(bad):
    with pytest.raises(TypeError, match=r"set_states expects bytes, got"):
        mxopt_jax.get_updater(mxopt_jax.create("sgd")).set_states(bad)


def test_valid_payloads_still_load():
    """The hardened loader accepts what get_states writes (multi-precision pairs, SGLD's key, schedulers)."""
    from mxopt_jax import lr_scheduler

    for name, kw in [
        ("adam", {}),
        ("sgd", {"momentum": 0.9, "multi_precision": True}),
        ("sgld", {"seed": 3}),
        ("test", {}),
        ("nadam", {"learning_rate": None, "lr_scheduler": lr_scheduler.FactorScheduler(step=1, base_lr=0.1)}),
    ]:
        upd = mxopt_jax.get_updater(mxopt_jax.create(name, **kw))
        w = jnp.ones(3, jnp.float16 if kw.get("multi_precision") else jnp.float32)
        upd(0, jnp.full((3,), 0.5, w.dtype), w)
        blob = upd.get_states(dump_optimizer=True)
        other = mxopt_jax.get_updater(mxopt_jax.create(name, **kw))
        other.set_states(blob)
        assert jax.tree.structure(other.states) == jax.tree.structure(upd.states)


def test_apply_if_finite_is_the_documented_way_to_skip():
    params = {"w": jnp.ones(2)}
    safe = optax.apply_if_finite(mxopt_jax.lamb(learning_rate=0.1), max_consecutive_errors=1)
    u, _ = safe.update({"w": jnp.array([jnp.inf, 1.0])}, safe.init(params), params)
    assert bool(jnp.all(u["w"] == 0))
