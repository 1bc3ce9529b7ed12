"""The MXNet-style facade (``mxopt_jax.facade``): registry, base-class rules, Updater, states, golden data.

Golden trajectories: the per-optimizer MXNet files (``tests/golden/<name>.npz``, see tools/make_golden.py)
replayed through ``create(name, ...)`` + ``Updater`` with MXNet's per-index calls, and the facade-specific
MXNet 2.0.0b1 data in ``tests/golden/facade.npz`` (tools/make_facade_golden.py).
"""

from __future__ import annotations

import io
import json
import pickle
import warnings
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from golden import GOLDEN, TOL, config, expected, inputs, load
from sampling import default_run, share
from traces import counting

import mxopt_jax
from mxopt_jax import facade
from mxopt_jax import lr_scheduler as lrs
from mxopt_jax.facade import Optimizer, Updater, create, get_updater, register

NAMES = sorted(mxopt_jax.OPTIMIZERS)


# =========================================================================== golden replay (per optimizer)
def _departs(name: str, cfg: dict) -> bool:
    kw = cfg["kwargs"]
    return name == "adabelief" and kw.get("clip_gradient") is not None and kw.get("wd", 0.0) != 0.0


def _golden_cases():
    """Per optimizer: defaults, sched, begin, two mult configs, the fp16 config with the optimizer's main
    option (multi_precision), and a few grid configs (one with
    ``param_idx2name`` for LARS). The functional API's tests replay every config; here the point is the
    facade's bookkeeping (multipliers, schedulers, counts, multi-precision states) on the shared rules. The
    default run takes one scheduler / begin_num_update config of each optimizer, taking turns across the
    optimizers (every kind of scheduler and begin_num_update for several optimizers), and either its fp16
    config (for the optimizers whose float16 group the functional golden tests leave to ``slow``) or its
    defaults (the functional golden tests replay every optimizer's defaults); the others run under the
    ``slow`` marker."""
    out = []
    for k, name in enumerate(NAMES):
        if name == "sgld":
            continue
        meta, _ = load(name)
        seen: dict[str, int] = {}
        last_fp16 = [c for c in meta["configs"] if c["group"] == "fp16" and not _departs(name, c)][-1]
        turns = [c["id"] for c in meta["configs"] if c["group"] in ("sched", "begin")]
        turn = turns[k % len(turns)] if turns else None
        for i, cfg in enumerate(meta["configs"]):
            group = cfg["group"]
            if _departs(name, cfg):
                continue
            if group == "grid":
                named = bool(cfg.get("param_idx2name"))
                if not (i % 16 == 1 or (named and not seen.get("named"))):
                    continue
                if named:
                    seen["named"] = 1
            elif group == "mult" and seen.get(group, 0) >= 2:
                continue
            elif group == "fp16" and cfg is not last_fp16:
                continue
            seen[group] = seen.get(group, 0) + 1
            # fp16 for the optimizers whose float16 golden group the functional tests leave to -m slow
            default = cfg["id"] == turn or group == ("fp16" if k % 2 else "defaults")
            marks = () if default else (pytest.mark.slow,)
            out.append(pytest.param(name, cfg["id"], id=f"{name}-{cfg['id']}-{group}", marks=marks))
    return out


def _make_updater(name: str, cfg: dict) -> Updater:
    kw = dict(cfg["kwargs"])
    if cfg.get("scheduler"):
        sc = cfg["scheduler"]
        kw["lr_scheduler"] = getattr(lrs, sc["type"])(**sc["args"])
    if cfg.get("param_idx2name"):
        kw["param_idx2name"] = {int(k): v for k, v in cfg["param_idx2name"].items()}
    opt = create(name, **kw)
    if cfg["lr_mult"]:
        opt.set_lr_mult({int(k): v for k, v in cfg["lr_mult"].items()})
    if cfg["wd_mult"]:
        opt.set_wd_mult({int(k): v for k, v in cfg["wd_mult"].items()})
    return get_updater(opt)


def _replay(name: str, cfg: dict):
    w0, grads = inputs(name, cfg)
    n = len(w0)
    dt = jnp.float16 if cfg["dtype"] == "float16" else jnp.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shared = _make_updater(name, cfg)
        upds = (
            [_make_updater(name, cfg) for _ in range(n)] if cfg.get("per_param_instances") else [shared] * n
        )
    W = [jnp.asarray(w, dt) for w in w0]
    ws = [[] for _ in range(n)]
    masters = [[] for _ in range(n)]
    for s in range(grads[0].shape[0]):
        for p in range(n):
            W[p] = upds[p](p, jnp.asarray(grads[p][s], dt), W[p])
            ws[p].append(np.asarray(W[p], np.float32))
            if cfg["dtype"] == "float16":
                masters[p].append(np.asarray(upds[p].states[p][0]))
    return [np.stack(x) for x in ws], [np.stack(x) for x in masters] if cfg["dtype"] == "float16" else None


@pytest.mark.parametrize(("name", "cid"), _golden_cases())
def test_updater_matches_mxnet_golden(name, cid):
    cfg = config(name, cid)
    rtol, atol = TOL[name]
    ours, our_masters = _replay(name, cfg)
    ref, ref_masters = expected(name, cfg)
    if cfg["dtype"] == "float16":
        for p, (m, rm, w) in enumerate(zip(our_masters, ref_masters, ours, strict=True)):
            assert m.dtype == np.float32
            np.testing.assert_allclose(m, rm, rtol=rtol, atol=atol, err_msg=f"master of param {p}")
            np.testing.assert_array_equal(w, m.astype(np.float16).astype(np.float32))
    else:
        for p, (w, rw) in enumerate(zip(ours, ref, strict=True)):
            np.testing.assert_allclose(w, rw, rtol=rtol, atol=atol, err_msg=f"param {p}")


def test_golden_cases_cover_every_group():
    covered = {}
    for p in _golden_cases():
        name, cid = p.values
        covered.setdefault(name, set()).add(config(name, cid)["group"])
    assert set(covered) == set(NAMES) - {"sgld"}
    for name, groups in covered.items():
        # every group the golden file has (LBSGD's has no sched/begin), except deliberate departures
        need = {c["group"] for c in load(name)[0]["configs"] if not _departs(name, c)}
        assert need <= groups, (name, groups)
    # the default run: every optimizer's defaults and fp16 configs, schedulers and begin_num_update in turns
    default: dict[str, set] = {}
    for p in _golden_cases():
        if not p.marks:
            name, cid = p.values
            default.setdefault(config(name, cid)["group"], set()).add(name)
    assert len(default["fp16"]) >= 10 and len(default["defaults"]) >= 10
    assert len(default["sched"]) >= 10 and len(default["begin"]) >= 4, default


# =========================================================================== facade golden (MXNet 2.0.0b1)
def _fg():
    return load("facade")


def _meta(case: str) -> dict:
    return _fg()[0]["cases"][case]


class _Mult:
    def __init__(self, lr_mult, wd_mult):
        self.lr_mult, self.wd_mult = lr_mult, wd_mult


class _Sym:
    def __init__(self, attrs, args):
        self._attrs, self._args = attrs, args

    def attr_dict(self):
        return self._attrs

    def list_arguments(self):
        return self._args


def test_lookup_order_matches_mxnet():
    m = _meta("lookup")
    idx2name = {int(k): v for k, v in m["idx2name"].items()}
    pd = {int(k): _Mult(*v) for k, v in m["param_dict"].items()}
    opt = Optimizer(learning_rate=1.0, wd=1.0, param_idx2name=idx2name, param_dict=pd)
    mult = {k: v for k, v in m["mult"]}
    opt.set_lr_mult(mult)
    opt.set_wd_mult(mult)
    assert opt._get_lrs([0, 1, 2, 3]) == m["lrs"] == [2.0, 4.0, 5.0, 1.0]
    assert opt._get_wds([0, 1, 2, 3]) == m["wds"]
    assert [opt._get_lr(i) for i in range(4)] == m["lrs"]
    assert [opt._get_wd(i) for i in range(4)] == m["wds"]


def test_sym_attributes_match_mxnet():
    m = _meta("sym")
    opt = Optimizer(
        learning_rate=1.0,
        wd=1.0,
        sym=_Sym(m["attrs"], m["args"]),
        param_idx2name={0: "a_weight", 1: "b_bias", 2: "c_weight"},
    )
    assert opt.lr_mult == m["before"]["lr_mult"] and opt.wd_mult == m["before"]["wd_mult"]
    opt.set_lr_mult({"b_bias": 5.0, 2: 11.0})
    opt.set_wd_mult({"c_weight": 0.25})
    assert list(opt.lr_mult.items()) == [tuple(x) for x in m["lr_mult"]]
    assert list(opt.wd_mult.items()) == [tuple(x) for x in m["wd_mult"]]
    assert opt._get_lrs([0, 1, 2, 3]) == m["lrs"]
    assert opt._get_wds([0, 1, 2, 3]) == m["wds"]


def test_set_mult_replaces_previous_entries():
    opt = create("sgd")
    opt.set_lr_mult({0: 2.0})
    opt.set_lr_mult({1: 3.0})
    assert opt.lr_mult == {1: 3.0}
    assert opt._get_lrs([0, 1]) == [0.1, pytest.approx(0.3)]


@pytest.mark.parametrize("case", ["agg_sgd_1", "agg_sgd_4", "agg_sgd_inf", "agg_lamb_1", "agg_lamb_4"])
def test_list_calls_and_aggregate_num_match_mxnet(case):
    meta, data = _fg()
    m = _meta(case)
    # MXNet's non-aggregated fused LAMB counts t twice per update (docs/differences.md #2); mxopt_jax counts once, which
    # is MXNet's aggregated result: compare aggregate_num=1 against MXNet's aggregate_num=4 run, and check
    # that MXNet's own aggregate_num=1 run really differs.
    ref_case = "agg_lamb_4" if case == "agg_lamb_1" else case
    agg = {"1": 1, "4": 4, "inf": np.inf}[m["aggregate_num"]]
    n = 4
    opt = create(m["optimizer"], aggregate_num=agg, **m["kwargs"])
    upd = get_updater(opt)
    assert upd.aggregate_updates == (agg > 1)
    W = [jnp.asarray(data[f"agg_w0_{p}"]) for p in range(n)]
    for s in range(data["agg_grads_0"].shape[0]):
        W = upd(list(range(n)), [jnp.asarray(data[f"agg_grads_{p}"][s]) for p in range(n)], W)
        for p in range(n):
            np.testing.assert_allclose(
                W[p], data[f"{ref_case}_{p}"][s], rtol=1e-5, atol=1e-6, err_msg=f"{s} {p}"
            )
    if case == "agg_lamb_1":
        assert np.max(np.abs(np.asarray(W[0]) - data["agg_lamb_1_0"][-1])) > 1e-5


def test_aggregate_num_one_four_inf_identical():
    _, data = _fg()
    results = []
    for agg, fused in ((1, True), (4, True), (np.inf, True), (float("inf"), False)):
        upd = get_updater(create("adam", learning_rate=0.01, aggregate_num=agg, use_fused_step=fused))
        W = [jnp.asarray(data[f"agg_w0_{p}"]) for p in range(4)]
        for s in range(3):
            W = upd([0, 1, 2, 3], [jnp.asarray(data[f"agg_grads_{p}"][s]) for p in range(4)], W)
        results.append(W)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_dtype_grouping_matches_mxnet():
    _, data = _fg()
    m = _meta("mixed")
    calls = []

    class Spy(facade.SGD):
        def update_multi_precision(self, indices, weights, grads, states):
            calls.append(tuple(indices))
            return super().update_multi_precision(indices, weights, grads, states)

    opt = Spy(aggregate_num=m["aggregate_num"], **m["kwargs"])
    upd = Updater(opt)
    dts = [jnp.dtype(d) for d in m["dtypes"]]
    W = [jnp.asarray(data[f"mixed_w0_{p}"], d) for p, d in enumerate(dts)]
    for s in range(data["mixed_grads_0"].shape[0]):
        W = upd(list(range(5)), [jnp.asarray(data[f"mixed_grads_{p}"][s], d) for p, d in enumerate(dts)], W)
        for p, d in enumerate(dts):
            assert W[p].dtype == d
            ref = data[f"mixed_out_{p}"][s]
            np.testing.assert_allclose(
                np.asarray(W[p], np.float32), ref, rtol=1e-3 if d == jnp.float16 else 1e-5
            )
    assert calls[:3] == [(0, 2), (3,), (1, 4)]  # MXNet's Updater groups by dtype, in MXNet's order
    assert list(opt._index_update_count) == [int(k) for k in m["counts"]]
    assert opt._index_update_count == {int(k): v for k, v in m["counts"].items()}


def test_different_update_frequencies_match_mxnet():
    _, data = _fg()
    m = _meta("freq")
    sc = m["scheduler"]
    opt = create("adam", learning_rate=None, lr_scheduler=getattr(lrs, sc["type"])(**sc["args"]))
    upd = get_updater(opt)
    W = [jnp.asarray(data[f"freq_w0_{p}"]) for p in range(3)]
    seen_lrs = []
    for s in range(m["steps"]):
        for p in range(3):
            if s % (p + 1) == 0:
                W[p] = upd(p, jnp.asarray(data[f"freq_grads_{p}"][s]), W[p])
            np.testing.assert_allclose(W[p], data[f"freq_out_{p}"][s], rtol=1e-5, atol=1e-6)
        seen_lrs.append(opt.learning_rate)
    assert opt._index_update_count == {int(k): v for k, v in m["counts"].items()}
    assert opt.num_update == m["num_update"]
    np.testing.assert_allclose(seen_lrs, m["learning_rates"])


@pytest.mark.parametrize("tag", ["default", "none", "given"])
def test_scheduler_base_lr_overwrite_matches_mxnet(tag):
    _, data = _fg()
    m = _meta("overwrite")
    run = m["runs"][tag]
    sched = getattr(lrs, m["scheduler"]["type"])(**m["scheduler"]["args"])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        opt = create("adam", lr_scheduler=sched, **run["kwargs"])
    overwritten = run["base_lr_after_create"] != m["scheduler"]["args"]["base_lr"]
    assert any("has been overwritten" in str(w.message) for w in rec) == overwritten
    assert sched.base_lr == run["base_lr_after_create"]
    assert opt.lr == run["lr"]
    upd = get_updater(opt)
    w = jnp.asarray(data["overwrite_w0"])
    for s in range(6):
        w = upd(0, jnp.asarray(data["overwrite_grads"][s]), w)
        np.testing.assert_allclose(w, data[f"overwrite_{tag}"][s], rtol=1e-5, atol=1e-6)


def test_begin_num_update_counts_match_mxnet():
    _, data = _fg()
    m = _meta("begin")
    opt = create("sgd", learning_rate=0.1, begin_num_update=10)
    upd = get_updater(opt)
    w0, w1 = jnp.zeros(4), jnp.zeros(3)
    w0 = upd(0, jnp.ones(4), w0)
    w0 = upd(0, jnp.ones(4), w0)
    upd(1, jnp.ones(3), w1)
    assert opt._index_update_count == {int(k): v for k, v in m["counts"].items()} == {0: 12, 1: 11}
    assert opt.num_update == m["num_update"] == 12
    opt = create("adam", learning_rate=0.01, begin_num_update=10)
    upd = get_updater(opt)
    w = jnp.asarray(data["begin_w0"])
    for s in range(3):
        w = upd(0, jnp.asarray(data["begin_grads"][s]), w)
        np.testing.assert_allclose(w, data["begin_adam"][s], rtol=1e-5, atol=1e-6)


def test_device_counts_match_mxnet():
    m = _meta("devices")
    opt = create("sgd", learning_rate=0.1)
    st = opt.create_state(0, jnp.zeros(4))
    w = jnp.zeros(4)
    opt._set_current_device(0)
    for _ in range(2):
        (w,), (st,) = opt.update([0], [w], [jnp.ones(4)], [st])
    with pytest.warns(DeprecationWarning):
        opt._set_current_context(1)
    opt.update([0], [w], [jnp.ones(4)], [st])
    expect = {int(d): {int(k): v for k, v in c.items()} for d, c in m["counts"].items()}
    assert opt._all_index_update_counts == expect == {0: {0: 2}, 1: {0: 1}}
    assert opt.num_update == m["num_update"] == 2
    assert opt._index_update_count is opt._all_index_update_counts[1]


# =========================================================================== base-class facts (recorded from MXNet)
def test_mxnet_base_class_tests():
    opt = Optimizer(learning_rate=0.01)
    opt.set_learning_rate(0.2)
    assert opt.learning_rate == 0.2
    with pytest.warns(UserWarning, match="has been overwritten by ``learning_rate``"):
        opt = Optimizer(lr_scheduler=lrs.FactorScheduler(step=1), learning_rate=0.3)
    assert opt.learning_rate == 0.3
    opt.lr_scheduler.base_lr = 0.4
    assert opt.learning_rate == 0.4
    opt = Optimizer(lr_scheduler=lrs.FactorScheduler(step=1, base_lr=1024))
    assert opt.learning_rate == 1024
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already been defined"):
        opt.set_learning_rate(0.5)


def test_learning_rate_property_is_read_only_and_defaults():
    opt = Optimizer()
    assert opt.learning_rate == 0.01 and opt.lr == 0.01
    with pytest.raises(AttributeError):
        opt.learning_rate = 0.5
    opt = create("adam", learning_rate=0.02)
    opt.set_learning_rate(0.03)
    assert opt.learning_rate == 0.03
    assert Optimizer(lr_scheduler=lrs.FactorScheduler(step=1, base_lr=0.5)).lr is None


def test_constructor_attributes_and_errors():
    opt = Optimizer()
    assert (opt.rescale_grad, opt.wd, opt.clip_gradient, opt.num_update, opt.begin_num_update) == (
        1.0,
        0.0,
        None,
        0,
        0,
    )
    assert (opt.aggregate_num, opt.use_fused_step, opt.multi_precision) == (1, False, False)
    assert opt.idx2name == {} and opt.param_dict == {} and opt.sym_info == ()
    assert (
        opt._all_index_update_counts == {0: {}} and opt._index_update_count is opt._all_index_update_counts[0]
    )
    names = {0: "w"}
    opt = create("sgd", param_idx2name=names)
    assert opt.idx2name == names and opt.idx2name is not names
    with pytest.raises(TypeError, match="param_idx2name should be a dict"):
        Optimizer(param_idx2name=["w"])
    with pytest.raises(TypeError):
        Optimizer(foo=1)
    with pytest.raises(TypeError):
        create("adam", foo=1)
    with pytest.raises(TypeError):
        create("adam", lr_mult={0: 1.0})  # not a constructor argument in MXNet
    with pytest.raises(ValueError, match="wd"):
        create("adam", wd=-1.0)  # the functional constructor's validation
    with pytest.raises(ValueError, match="clip_gradient"):
        create("sgd", clip_gradient=0.0)


def test_defaults_and_attributes_follow_mxnet():
    assert create("adam").lr == 0.001 and create("sgd").lr == 0.1 and create("test").lr == 0.01
    adam_opt = create("adam")
    assert (adam_opt.beta1, adam_opt.beta2, adam_opt.epsilon, adam_opt.lazy_update) == (
        0.9,
        0.999,
        1e-8,
        False,
    )
    assert create("sgd").use_fused_step is True and create("nadam").use_fused_step is False
    assert (
        create("lamb").aggregate_num == 4
        and create("lans").aggregate_num == 4
        and create("sgd").aggregate_num == 1
    )
    assert create("adamw", aggregate_num=2).aggregate_num == 2  # docs/differences.md #4: the constructor wins
    assert create("rmsprop", rho=0.5).rho == 0.5


def test_signatures_are_mxnets():
    import inspect

    sig = inspect.signature(facade.SGD)
    assert list(sig.parameters)[:3] == ["learning_rate", "momentum", "lazy_update"]
    assert sig.parameters["learning_rate"].default == 0.1
    assert sig.parameters["use_fused_step"].default is True
    assert inspect.signature(facade.LAMB).parameters["aggregate_num"].default == 4
    assert inspect.signature(facade.ccSGD).parameters["learning_rate"].default == 0.01
    assert "mxnet.optimizer.Adam" in facade.Adam.__doc__
    opt = facade.SGD(0.5, 0.9)  # positional, as MXNet
    assert (opt.lr, opt.momentum) == (0.5, 0.9)


def test_deprecated_names():
    with pytest.warns(DeprecationWarning, match="deprecated"):
        opt = create("ccsgd", learning_rate=0.1)
    assert type(opt) is facade.ccSGD and opt.lazy_update is True
    with pytest.raises(DeprecationWarning, match="epsilon"):
        create("adagrad", eps=1e-7)
    with pytest.raises(DeprecationWarning, match="rho"):
        create("rmsprop", gamma1=0.9)


# =========================================================================== registry
def test_registry_contents_and_shared_rules():
    import importlib

    assert set(NAMES) <= set(Optimizer.opt_registry)
    rules = {
        "sgd": ("sgd", "SGD_RULE"),
        "adam": ("adam", "ADAM_RULE"),
        "lars": ("layerwise", "LARS_RULE"),
        "ftml": ("ftrl", "FTML_RULE"),
        "rmsprop": ("rmsprop", "RMSPROP_RULE"),
        "groupadagrad": ("adagrad", "GROUP_ADAGRAD_RULE"),
        "ccsgd": ("sgd", "CCSGD_RULE"),
    }
    for name in NAMES:
        cls = Optimizer.opt_registry[name]
        assert cls.__name__.lower() == name
        assert cls._ctor is mxopt_jax.OPTIMIZERS[name]  # the functional API's constructor, hence its rule
    for name, (mod, attr) in rules.items():
        assert Optimizer.opt_registry[name]._rule is getattr(
            importlib.import_module(f"mxopt_jax._src.optimizers.{mod}"), attr
        )


def test_create_is_case_insensitive_and_unknown_lists_names():
    assert type(create("AdaM")) is facade.Adam
    assert type(Optimizer.create_optimizer("GroupAdaGrad")) is facade.GroupAdaGrad
    with pytest.raises(ValueError, match="Cannot find optimizer NoSuch.*adam"):
        create("NoSuch")


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("adma", "'adam'"), ("adamm", "'adam'"), ("nadm", "'nadam'"), ("Sdg", "'sgd'"), ("ftlm", "'ftml'")],
)
def test_create_suggests_the_closest_name(typo, meant):
    """A misspelt name gets the registered name it most likely meant (a swap of two letters is one edit:
    'adma' is 'adam', not 'adamax'), and still the list of every name."""
    with pytest.raises(
        ValueError, match=rf"Cannot find optimizer {typo} \(did you mean {meant}\?\); registered"
    ):
        create(typo)


def test_create_takes_the_constructors_spelling():
    """``mxopt_jax.group_adagrad`` is registered as ``groupadagrad``; either spelling creates it, from the one
    alias table (derived from the optimizer table)."""
    assert mxopt_jax.ALIASES == {"group_adagrad": "groupadagrad"}
    assert type(create("group_adagrad", learning_rate=0.1)) is facade.GroupAdaGrad
    assert type(create("Group_AdaGrad")) is facade.GroupAdaGrad
    for alias, name in mxopt_jax.ALIASES.items():
        assert mxopt_jax.OPTIMIZERS[name].__name__ == alias and type(create(alias)) is type(create(name))


def test_register_warns_on_override_and_returns_class():
    saved = dict(Optimizer.opt_registry)
    try:

        class MyOpt(Optimizer):
            pass

        assert register(MyOpt) is MyOpt
        assert Optimizer.opt_registry["myopt"] is MyOpt

        class Adam(Optimizer):  # noqa: F811 - deliberately the same name
            pass

        with pytest.warns(UserWarning, match="is overriding existing optimizer mxopt_jax.facade.Adam"):
            assert Optimizer.register(Adam) is Adam
        assert create("adam").__class__ is Adam
        with pytest.raises(TypeError):
            register(object())
    finally:
        Optimizer.opt_registry.clear()
        Optimizer.opt_registry.update(saved)


def test_user_registered_optimizer_end_to_end():
    saved = dict(Optimizer.opt_registry)
    try:

        @register
        class HeavyBall(Optimizer):
            """w -= lr * (v = beta * v + g + wd * w), in its own JAX math."""

            def __init__(self, learning_rate=0.1, beta=0.5, **kwargs):
                super().__init__(learning_rate=learning_rate, **kwargs)
                self.beta = beta

            def create_state(self, index, weight):
                return jnp.zeros_like(weight)

            def step(self, indices, weights, grads, states):
                self._update_count(indices)
                lrs_, wds = self._get_lrs(indices), self._get_wds(indices)
                new_w, new_s = [], []
                for w, g, v, lr, wd in zip(weights, grads, states, lrs_, wds, strict=True):
                    v = self.beta * v + self.rescale_grad * g + wd * w
                    new_w.append(w - lr * v)
                    new_s.append(v)
                return new_w, new_s

        opt = create("HEAVYBALL", learning_rate=0.5, wd=0.1, multi_precision=True)
        opt.set_lr_mult({1: 2.0})
        upd = get_updater(opt)
        w = [jnp.ones(3), jnp.ones(2, jnp.float16)]
        for _ in range(3):
            w = upd([0, 1], [jnp.ones(3), jnp.ones(2, jnp.float16)], w)
        ref = [np.ones(3), np.ones(2)]
        v = [np.zeros(3), np.zeros(2)]
        for _ in range(3):
            for p, lr in ((0, 0.5), (1, 1.0)):
                v[p] = 0.5 * v[p] + 1.0 + 0.1 * ref[p]
                ref[p] = ref[p] - lr * v[p]
        np.testing.assert_allclose(w[0], ref[0], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(upd.states[1][0]), ref[1], rtol=1e-6)  # fp32 master
        assert w[1].dtype == jnp.float16
        np.testing.assert_array_equal(w[1], upd.states[1][0].astype(jnp.float16))
        # states round-trip with the custom optimizer too
        blob = upd.get_states(dump_optimizer=True)
        upd2 = get_updater(create("heavyball", learning_rate=0.5, wd=0.1, multi_precision=True))
        upd2.set_states(blob)
        assert upd2.optimizer.lr_mult == {1: 2.0} and upd2.optimizer.num_update == 3
        np.testing.assert_array_equal(upd2.states[0], upd.states[0])
        opt2 = create("heavyball", use_fused_step=True)
        with pytest.raises(NotImplementedError):
            get_updater(opt2)(0, jnp.ones(2), jnp.ones(2))
    finally:
        Optimizer.opt_registry.clear()
        Optimizer.opt_registry.update(saved)


# =========================================================================== step / fused_step / compilation
def _run_direct(name: str, fused: bool, kw: dict, dtype=jnp.float32, steps: int = 3):
    shapes = [(3, 2), (4, 2)]  # 2-D for GroupAdaGrad
    rng = np.random.default_rng(0)
    w = [jnp.asarray(rng.uniform(-1, 1, s), dtype) for s in shapes]
    grads = [[jnp.asarray(rng.normal(size=s), dtype) for s in shapes] for _ in range(steps)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = create(name, use_fused_step=fused, param_idx2name={1: "fc_bias"}, **kw)
    opt.set_lr_mult({0: 0.5})
    opt.set_wd_mult({1: 2.0})
    states = [opt.create_state_multi_precision(i, x) for i, x in enumerate(w)]
    for g in grads:
        w, states = opt.update_multi_precision([0, 1], w, g, states)
    return w, states


# The other half of the optimizers: tests/properties/test_drivers_agree.py compares step with fused_step.
@pytest.mark.parametrize("name", default_run(NAMES, share(2, 1)))
def test_step_equals_fused_step(name):
    kw = {"wd": 0.01, "clip_gradient": 2.0, "rescale_grad": 0.5}
    if name == "groupadagrad":
        kw["wd"] = 0.0
    if name == "sgld":
        kw["seed"] = 3
    a, sa = _run_direct(name, False, kw)
    b, sb = _run_direct(name, True, kw)
    for x, y in zip(jax.tree.leaves((a, sa)), jax.tree.leaves((b, sb)), strict=True):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["sgd", "adam", "lamb", "lans", "nadam"])
def test_multi_precision_states_and_fp16_weights(name):
    kw = {"multi_precision": True, "wd": 0.01}
    w, states = _run_direct(name, True, kw, dtype=jnp.float16)
    for x, st in zip(w, states, strict=True):
        master, inner = st
        assert x.dtype == jnp.float16 and master.dtype == jnp.float32
        np.testing.assert_array_equal(x, master.astype(jnp.float16))
        assert all(leaf.dtype != jnp.float16 for leaf in jax.tree.leaves(inner))


def test_fp16_without_multi_precision_warns():
    opt = create("sgd", momentum=0.9)
    with pytest.warns(UserWarning, match="Accumulating with float16 in optimizer"):
        st = opt.create_state_multi_precision(0, jnp.ones(3, jnp.float16))
    assert st[0].dtype == jnp.float16
    with pytest.warns(UserWarning, match="multi_precision=True"):
        opt.create_state_multi_precision(1, jnp.ones(3, jnp.bfloat16))


def test_fused_step_never_recompiles_for_new_hyperparameter_values():
    sched = lrs.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    opt = create("adam", learning_rate=None, lr_scheduler=sched, wd=0.01)
    upd = get_updater(opt)
    w = [jnp.ones((5, 3)), jnp.ones((4,))]
    g = [jnp.full((5, 3), 0.3), jnp.full((4,), -0.2)]
    w = upd([0, 1], g, w)
    with counting() as n:  # JAX's own counts (jax.monitoring)
        w = upd([0, 1], g, w)  # scheduler output changes (step=2)
        opt.set_lr_mult({0: 3.0})
        opt.set_wd_mult({1: 0.0})
        opt.rescale_grad = 0.25  # Gluon's Trainer mutates it every step
        opt.wd = 0.5
        opt.beta1 = 0.8
        for _ in range(3):
            w = upd([0, 1], g, w)
        opt2 = create(
            "adam", learning_rate=0.3, beta2=0.9
        )  # another instance, same structure: shared program
        upd2 = get_updater(opt2)
        upd2([0, 1], g, w)
    assert n.traces == 0 and n.compiles == 0, n


#: Every way the facade changes a hyperparameter, as (optimizer, scale of the new value) -> None.
_CHANGES = [
    lambda opt, k: opt.set_learning_rate(0.05 * k),
    lambda opt, k: setattr(opt, "lr", 0.02 * k),
    lambda opt, k: opt.set_lr_mult({0: 3.0 * k}),
    lambda opt, k: opt.set_wd_mult({1: 0.1 * k}),
    lambda opt, k: setattr(opt, "wd", 0.5 * k),
    lambda opt, k: setattr(opt, "rescale_grad", 0.25 * k),
    lambda opt, k: setattr(opt, "beta1", 0.8 * k),
]


@pytest.mark.parametrize("fused", [True, False], ids=["fused_step", "step"])
def test_every_way_to_change_a_hyperparameter_traces_and_compiles_nothing(fused):
    """The facade's setters (set_learning_rate, set_lr_mult, set_wd_mult), its attributes (lr, wd,
    rescale_grad, an optimizer's own such as beta1) and a scheduler's next rate change the numbers of the next
    update, never its program: JAX traces and compiles nothing (its own counts, through jax.monitoring), and
    the changes reach the updates. ``fused_step`` runs one compiled program from the first change on; the
    eager ``step`` runs op by op, and a value that takes another branch there (``rescale_grad`` leaving 1)
    compiles its operations once, so it is counted on a second round of new values."""
    sched = lrs.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    g = [jnp.full((5, 3), 0.3), jnp.full((4,), -0.2)]
    for opt in (
        create("adam", learning_rate=0.1, wd=0.01, use_fused_step=fused),
        create("adam", learning_rate=None, lr_scheduler=sched, use_fused_step=fused),
    ):
        upd = get_updater(opt)
        seen = [upd([0, 1], g, [jnp.ones((5, 3)), jnp.ones((4,))])]  # the first call prepares the programs
        for r, scale in enumerate((1.0, 0.5)):
            with counting() as n:
                for change in _CHANGES[2 if opt.lr_scheduler is not None else 0 :]:  # a scheduler sets lr
                    change(opt, scale)
                    seen.append(upd([0, 1], g, seen[-1]))
            if fused or r:
                assert n.traces == 0 and n.compiles == 0, (n, opt.lr_scheduler, r)
        steps = np.diff([float(x[1][0]) for x in seen])
        assert len(set(np.round(steps, 7))) > len(steps) // 2, steps  # the changes reached the updates


@pytest.mark.parametrize("mp", [False, True], ids=["float32", "float16-multi_precision"])
@pytest.mark.parametrize("committed", [False, True])
def test_restored_states_compile_the_step_once(committed, mp):
    """Restored states follow their weights as MXNet's ``sync_state_context`` does, without committing the
    states of uncommitted weights: a committed state beside an uncommitted weight made the first call's
    outputs committed, so the second call compiled the step again (every resumed run paid it twice)."""

    dtype = np.float16 if mp else np.float32

    def make():
        return get_updater(create("ftml", learning_rate=0.02, wd=1e-3, multi_precision=mp))

    def place(x):
        return jax.device_put(x, jax.devices()[0]) if committed else jnp.asarray(x)

    ref = make()
    w = [place(np.ones((3, 5), dtype)), place(np.ones((6,), dtype))]
    g = [jnp.full((3, 5), 0.5, dtype), jnp.full((6,), -0.25, dtype)]
    ref([0, 1], g, w)
    blob = ref.get_states(dump_optimizer=True)
    upd = make()
    upd.set_states(blob)
    # states someone placed on the device: an uncommitted weight still gets them uncommitted
    if not committed:
        upd.states = jax.tree.map(lambda x: jax.device_put(x, jax.devices()[0]), upd.states)
    w = upd([0, 1], g, w)
    assert all(s.committed == committed for s in jax.tree.leaves(upd.states))
    with counting() as n:  # JAX's own counts (jax.monitoring)
        for _ in range(2):
            w = upd([0, 1], g, w)
    assert n.traces == 0 and n.compiles == 0, n
    assert all(x.committed == committed and x.dtype == dtype for x in w)


def test_update_returns_new_arrays_and_does_not_mutate():
    opt = create("sgd", momentum=0.9, learning_rate=0.1)
    w = jnp.ones(3)
    st = opt.create_state(0, w)
    (nw,), (ns,) = opt.update([0], [w], [jnp.ones(3)], [st])
    np.testing.assert_array_equal(w, np.ones(3))
    np.testing.assert_allclose(nw, 0.9 * np.ones(3))
    np.testing.assert_allclose(ns[0], -0.1 * np.ones(3))
    upd = get_updater(create("sgd", learning_rate=0.1))
    out = upd(0, np.ones(2, np.float32), np.ones(2, np.float32))  # numpy input accepted
    assert isinstance(out, jax.Array)
    assert upd.states_synced == {0: True}
    assert upd(b"name", jnp.ones(2), jnp.ones(2)).shape == (2,)
    assert "name" in upd.states


def test_lars_uses_param_idx2name_for_exemptions():
    w, g = jnp.full((4,), 2.0), jnp.full((4,), 0.5)
    outs = {}
    for names in ({}, {0: "fc_bias"}):
        opt = create("lars", learning_rate=0.1, eta=0.01, param_idx2name=names)
        outs[bool(names)] = get_updater(opt)(0, g, w)
    np.testing.assert_allclose(outs[True], 2.0 - 0.1 * 0.5)  # exempt: plain SGD step
    assert not np.allclose(outs[False], outs[True])


def test_lbsgd_looks_up_lr_before_counting():
    seen = []

    def sched(n):
        seen.append(n)
        return 0.1

    opt = create("lbsgd", learning_rate=None, lr_scheduler=sched)
    upd = get_updater(opt)
    w = jnp.ones(2)
    for _ in range(2):
        w = upd(0, jnp.ones(2), w)
    assert seen == [0, 1]
    seen.clear()
    opt = create("sgd", learning_rate=None, lr_scheduler=sched)
    w = get_updater(opt)(0, jnp.ones(2), jnp.ones(2))
    assert seen == [1]


def test_sgld_key_advances_and_is_reproducible():
    def run(seed):
        upd = get_updater(create("sgld", learning_rate=0.01, seed=seed))
        w = jnp.zeros(1000)
        ws = []
        for _ in range(2):
            w = upd(0, jnp.zeros(1000), w)
            ws.append(w)
        return ws

    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.allclose(a[0], c[0])
    assert not np.allclose(a[1] - a[0], a[0])
    assert abs(float(jnp.std(a[0])) - 0.1) < 0.01


# =========================================================================== states serialisation
def _train(upd, steps, start=0, n=3):
    rng = np.random.default_rng(11)
    grads = [[rng.normal(size=(n + p,)).astype(np.float32) for p in range(3)] for _ in range(start + steps)]
    W = getattr(upd, "_W", [jnp.asarray(np.linspace(-1, 1, n + p), jnp.float32) for p in range(3)])
    for s in range(start, start + steps):
        for p in range(3):
            W[p] = upd(p, jnp.asarray(grads[s][p]), W[p])
    upd._W = W
    return W


@pytest.mark.parametrize(
    ("name", "kw"),
    [
        ("adam", {"learning_rate": None}),
        ("nadam", {"wd": 0.01}),
        ("sgld", {"seed": 5, "learning_rate": 0.01}),
        ("lbsgd", {"batch_scale": 2, "momentum": 0.9, "warmup_epochs": 1, "updates_per_epoch": 2}),
        ("sgd", {"momentum": 0.9, "multi_precision": True}),
    ],
)
def test_states_round_trip_continues_bit_exactly(name, kw):
    def make():
        k = dict(kw)
        if name == "adam":
            k["lr_scheduler"] = lrs.MultiFactorScheduler(step=[3, 5], factor=0.5, base_lr=0.05)
        opt = create(name, param_idx2name={0: "a"}, **k)
        opt.set_lr_mult({1: 0.5, "a": 2.0})
        return get_updater(opt)

    ref = make()
    _train(ref, 4)
    blob = ref.get_states(dump_optimizer=True)
    assert isinstance(blob, bytes) and blob[:2] == b"PK"
    W_mid = list(ref._W)
    full = _train(ref, 4, start=4)
    other = make()
    other.set_states(blob)
    assert other.states_synced == dict.fromkeys(other.states, False)
    assert other.optimizer.num_update == 4 and other.optimizer._index_update_count == {0: 4, 1: 4, 2: 4}
    assert other.optimizer.lr_mult == {1: 0.5, "a": 2.0}
    other._W = W_mid
    resumed = _train(other, 4, start=4)
    for a, b in zip(full, resumed, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(jax.tree.leaves(ref.states), jax.tree.leaves(other.states), strict=True):
        np.testing.assert_array_equal(a, b)


def test_states_only_leave_optimizer_untouched():
    upd = get_updater(create("adam"))
    _train(upd, 2)
    blob = upd.get_states()
    fresh = get_updater(create("adam"))
    fresh.set_states(blob)
    assert fresh.optimizer.num_update == 0
    assert set(fresh.states) == {0, 1, 2}
    for a, b in zip(jax.tree.leaves(upd.states), jax.tree.leaves(fresh.states), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(blob)).read("manifest.json"))
    assert manifest["format"] == "mxopt_jax.updater_states" and manifest["optimizer"] is None
    with pytest.raises(ValueError, match="holds a Adam optimizer"):
        get_updater(create("sgd")).set_states(upd.get_states(dump_optimizer=True))


class _Boom:
    def __reduce__(self):
        return (exec, ("raise SystemExit('unpickled!')",))


def test_set_states_rejects_pickle_and_garbage_without_unpickling():
    upd = get_updater(create("sgd"))
    for payload in (pickle.dumps({0: None}), pickle.dumps(_Boom()), pickle.dumps(({}, None), protocol=2)):
        with pytest.raises(ValueError, match="pickle"):
            upd.set_states(payload)
    with pytest.raises(ValueError, match="not an mxopt_jax"):
        upd.set_states(b"hello")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("manifest.json", json.dumps({"format": "other"}))
    with pytest.raises(ValueError, match="wrong format"):
        upd.set_states(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            "manifest.json",
            json.dumps(
                {"format": "mxopt_jax.updater_states", "version": 1, "states": {"object": "os.system"}}
            ),
        )
    with pytest.raises(ValueError, match="malformed"):
        upd.set_states(buf.getvalue())
    with pytest.raises(TypeError):
        upd.set_states("not bytes")
    upd.states[0] = object()
    with pytest.raises(TypeError, match="safe state format"):
        upd.get_states()


def test_golden_facade_file_is_tiny():
    assert (GOLDEN / "facade.npz").stat().st_size < 64 * 1024


@pytest.mark.parametrize("name", default_run(NAMES, share(2)))
def test_bfloat16_multi_precision_matches_functional_api(name):
    """bfloat16 weights: the facade's master equals the functional transform's, and the weight is its rounding."""
    shape = (4, 3)
    w0 = jnp.linspace(-1.0, 1.0, 12).reshape(shape).astype(jnp.bfloat16)
    kw = {"learning_rate": 0.05, "multi_precision": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        opt = create(name, **kw)
        tx = mxopt_jax.OPTIMIZERS[name](**kw, **({"seed": 0} if name == "sgld" else {}))
    upd = get_updater(opt)
    w_f, st_f = [w0], tx.init([w0])
    w = w0
    for s in range(3):
        g = (jnp.cos(jnp.arange(12.0) + s).reshape(shape)).astype(jnp.bfloat16)
        w = upd(0, g, w)
        u, st_f = tx.update([g], st_f, w_f)
        w_f = optax.apply_updates(w_f, u)
    master = upd.states[0][0]
    assert w.dtype == jnp.bfloat16 and master.dtype == jnp.float32
    np.testing.assert_array_equal(
        np.asarray(w, np.float32), np.asarray(master.astype(jnp.bfloat16), np.float32)
    )
    if name != "sgld":  # different noise streams
        # jitted (facade fused_step) vs eager functional update: float32 rounding (FMA contraction) only
        np.testing.assert_allclose(master, st_f.master[0], rtol=2e-5, atol=1e-6)


def test_fused_step_with_array_valued_options():
    """Options derived from array hyperparameters stay hashable for the compile cache."""
    opt = create("rmsprop", learning_rate=0.01, clip_weights=jnp.float32(0.5))
    upd = get_updater(opt)
    w = upd(0, jnp.full((3,), -1.0), jnp.full((3,), 0.45))
    assert np.all(np.asarray(w) <= 0.5)
