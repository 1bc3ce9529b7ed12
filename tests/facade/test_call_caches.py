"""The facade's per-call plumbing: the cached call description and packed numbers change nothing.

``_RuleOptimizer`` caches host bookkeeping between calls (the :class:`CallSpec` objects, where each
hyperparameter is read from, the compiled function) and packs a call's numbers in one host array. These
tests check that (1) results are bit for bit those of the previous plumbing (three host arrays and a
positional ``_apply``, reproduced below from the rule's drivers, no math of its own) and (2) every change
a user can make between calls (multipliers, ``idx2name``, ``param_dict``, the scheduler, hyperparameter
attributes, multi-precision) reaches the next call, as on a fresh optimizer.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mxopt_jax import lr_scheduler as lrs
from mxopt_jax._src import drivers
from mxopt_jax._src.facade import rule_backed
from mxopt_jax._src.facade.optimizer import _float_dtype
from mxopt_jax._src.numerics import is_low_precision
from mxopt_jax._src.rule import Slot, StepContext
from mxopt_jax.facade import create, get_updater


# --------------------------------------------------------------------------- the previous plumbing
def _old_apply(rule, opts, names, mp, hkeys, weights, grads, states, scal, ts, hvec, keys):
    hypers, j = {}, 0
    for k, present in hkeys:
        hypers[k] = hvec[j] if present else None
        j += present
    owner = f"mxopt_jax.{rule.name}"
    new_w, new_s = [], []
    for i, (w, g, st) in enumerate(zip(weights, grads, states, strict=True)):
        master, fields = st if mp[i] else (None, st)
        ctx = StepContext(
            rule,
            opts,
            owner,
            {**hypers, "wd": scal[i, 1]},
            scal[i, 0],
            ts[i],
            check_state=False,
            wd_checked=True,
        )
        update, nf, nm = drivers.update(ctx, Slot(names[i], g, w, fields, master, key=keys[i]))
        new_w.append((w + update).astype(w.dtype))
        new_s.append((nm, nf) if mp[i] else nf)
    return new_w, new_s


_OLD_JIT: dict = {}


def _old_update(opt, indices, weights, grads, states, fused):
    """The previous ``_prepare_call`` + ``_run``, verbatim but for the names of things."""
    rule = opt._rule
    if rule.lr_before_count:
        lrs_ = opt._get_lrs(indices)
        opt._update_count(indices)
    else:
        opt._update_count(indices)
        lrs_ = opt._get_lrs(indices)
    wds = opt._get_wds(indices)
    fdt = _float_dtype()
    ts = np.asarray([opt._index_update_count[i] for i in indices], np.int32)
    scal = np.asarray([lrs_, wds], fdt).T.reshape(len(indices), 2)
    names = tuple(str(opt.idx2name.get(i, str(i))) for i in indices)
    mp = tuple(bool(opt.multi_precision and is_low_precision(jnp.result_type(w))) for w in weights)
    keys = [None] * len(indices)
    if rule.uses_key:
        opt._key, sub = jax.random.split(opt._key)
        keys = list(jax.random.split(sub, max(len(indices), 1)))
    hypers = {}
    for k, v in opt._prep.hypers.items():
        if k in ("rescale_grad", "clip_gradient") or k in opt._own:
            v = getattr(opt, k)
        hypers[k] = None if v is None else np.asarray(float(v), fdt)
    hypers.pop("wd")
    hkeys = tuple((k, v is not None) for k, v in hypers.items())
    hvec = np.asarray([v for v in hypers.values() if v is not None], fdt)
    if not fused:
        return _old_apply(
            rule, opt._prep.opts, names, mp, hkeys, weights, grads, states, scal, ts, hvec, keys
        )
    key = rule.name_key
    names = tuple("" if key is None else key(n) for n in names)
    fn = _OLD_JIT.get(id(opt._rule))
    if fn is None:
        opts = opt._prep.opts

        def run(names, mp, hkeys, weights, grads, states, scal, ts, hvec, keys):
            return _old_apply(rule, opts, names, mp, hkeys, weights, grads, states, scal, ts, hvec, keys)

        fn = _OLD_JIT[id(opt._rule)] = jax.jit(run, static_argnums=(0, 1, 2))
    return fn(names, mp, hkeys, weights, grads, states, scal, ts, hvec, keys)


def _bits(tree):
    return [np.asarray(x).tobytes() for x in jax.tree.leaves(tree)]


def _problem(dtype=jnp.float32, n=3):
    rng = np.random.default_rng(7)
    shapes = [(4, 3), (5,), (2, 2, 2)][:n]
    ws = [jnp.asarray(rng.standard_normal(s), dtype) for s in shapes]
    gs = [[jnp.asarray(rng.standard_normal(s), dtype) for s in shapes] for _ in range(4)]
    return ws, gs


CASES = [
    ("adam", dict(learning_rate=0.01, wd=0.01, clip_gradient=0.5)),
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=1e-3)),
    ("lamb", dict(learning_rate=0.01, wd=0.01)),
    ("lars", dict(learning_rate=0.1, momentum=0.9, wd=1e-3)),
    ("rmsprop", dict(learning_rate=0.01, centered=True)),
    ("ftrl", dict(learning_rate=0.1)),
    ("sgld", dict(learning_rate=0.01, seed=3)),
    ("signum", dict(learning_rate=0.01, momentum=0.9)),
]


def _plumbing_cases():
    """Every case x (multi-precision, fused); the default run takes each case once, the four modes in turns
    (each mode for two optimizers), the rest under ``slow``: the packing is the same code for every rule."""
    modes = [(False, True), (True, False), (True, True), (False, False)]  # (mp, fused)
    out = []
    for k, (name, kw) in enumerate(CASES):
        for mp, fused in modes:
            default = (mp, fused) == modes[k % len(modes)]
            out.append(
                pytest.param(
                    name,
                    kw,
                    mp,
                    fused,
                    id=f"{name}-{'fp16-mp' if mp else 'fp32'}-{'fused' if fused else 'eager'}",
                    marks=() if default else (pytest.mark.slow,),
                )
            )
    return out


@pytest.mark.parametrize(("name", "kw", "mp", "fused"), _plumbing_cases())
def test_bit_for_bit_with_the_previous_plumbing(name, kw, mp, fused):
    dtype = jnp.float16 if mp else jnp.float32
    sched = lrs.FactorScheduler(step=2, factor=0.5, base_lr=kw["learning_rate"])
    common = dict(kw, lr_scheduler=sched, multi_precision=mp, use_fused_step=fused)
    idx2name = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
    new = create(name, param_idx2name=idx2name, **common)
    old = create(
        name,
        param_idx2name=idx2name,
        **dict(common, lr_scheduler=lrs.FactorScheduler(step=2, factor=0.5, base_lr=kw["learning_rate"])),
    )
    for o in (new, old):
        o.set_lr_mult({"fc_bias": 2.0, 2: 0.5})
        o.set_wd_mult({"fc_bias": 0.0})
    ws, gs = _problem(dtype)
    idx = [0, 1, 2]
    s_new = [new.create_state_multi_precision(i, w) for i, w in zip(idx, ws, strict=True)]
    s_old = [old.create_state_multi_precision(i, w) for i, w in zip(idx, ws, strict=True)]
    w_new, w_old = list(ws), list(ws)
    for step, g in enumerate(gs):
        if step == 2:
            for o in (new, old):
                o.rescale_grad = 0.5
                o.wd = 0.02
        # the previous plumbing took 32-bit masters and gradients from update_multi_precision's caller
        # (the facade's rule handles the master itself): run both through the same entry point
        w_new, s_new = new.update(idx, w_new, g, s_new)
        w_old, s_old = _old_update(old, idx, w_old, g, s_old, fused)
        assert _bits(w_new) == _bits(w_old), (name, step)
        assert _bits(s_new) == _bits(s_old), (name, step)


def test_per_index_updater_bit_for_bit_with_the_previous_plumbing():
    ws, gs = _problem()
    new, old = create("adam", learning_rate=0.01), create("adam", learning_rate=0.01)
    upd = get_updater(new)
    s_old = {i: old.create_state_multi_precision(i, w) for i, w in enumerate(ws)}
    w_new, w_old = list(ws), list(ws)
    for g in gs:
        for i in range(len(ws)):
            w_new[i] = upd(i, g[i], w_new[i])
            (w_old[i],), (s_old[i],) = _old_update(old, [i], [w_old[i]], [g[i]], [s_old[i]], True)
    assert _bits(w_new) == _bits(w_old)
    assert _bits([upd.states[i] for i in range(len(ws))]) == _bits([s_old[i] for i in range(len(ws))])


# --------------------------------------------------------------------------- cache invalidation
def _change_cases():
    def set_lr_mult(o):
        o.set_lr_mult({1: 3.0})

    def set_wd_mult(o):
        o.set_wd_mult({"w0": 0.0})

    def lr_mult_in_place(o):
        o.lr_mult[0] = 0.25

    def wd_mult_in_place(o):
        o.wd_mult["w2"] = 4.0

    def idx2name_in_place(o):
        o.idx2name[1] = "fc_bias"  # LARS: exempt from now on; and the name now matches lr_mult's key

    def idx2name_replaced(o):
        o.idx2name = {0: "a_bias", 1: "w1", 2: "w2"}

    def param_dict(o):
        class P:
            lr_mult, wd_mult = 0.5, 2.0

        o.param_dict = {2: P()}

    def param_attr(o):
        o.param_dict[0].lr_mult = 7.0

    def scheduler(o):
        o.lr_scheduler = lrs.FactorScheduler(step=1, factor=0.5, base_lr=0.05)

    def scheduler_attr(o):
        o.lr_scheduler.base_lr = 0.003

    def hyper(o):
        o.beta1 = 0.5
        o.rescale_grad = 0.25

    def clip_on(o):
        o.clip_gradient = 0.01

    def lr_and_wd(o):
        o.lr = 0.2
        o.wd = 0.3

    return {
        f.__name__: f
        for f in (
            set_lr_mult,
            set_wd_mult,
            lr_mult_in_place,
            wd_mult_in_place,
            idx2name_in_place,
            idx2name_replaced,
            param_dict,
            param_attr,
            scheduler,
            scheduler_attr,
            hyper,
            clip_on,
            lr_and_wd,
        )
    }


CHANGES = _change_cases()


class _Param:
    lr_mult, wd_mult = 1.0, 1.0


@pytest.mark.parametrize("name", ["adam", "lars"])
@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("per_index", [True, False], ids=["per-index", "list"])
def test_a_change_between_calls_reaches_the_next_call(name, change, per_index):
    kw = dict(learning_rate=0.01, wd=0.01, param_idx2name={0: "w0", 1: "w1", 2: "w2"})
    if name == "lars":
        kw["momentum"] = 0.9
    if change == "scheduler_attr":
        kw = dict(kw, learning_rate=None, lr_scheduler=lrs.FactorScheduler(step=1, factor=0.9, base_lr=0.01))
    if change == "param_attr":
        kw["param_dict"] = {0: _Param()}
    opt = create(name, **kw)
    upd = get_updater(opt)
    ws, gs = _problem()
    idx = list(range(len(ws)))

    def call(u, g, w):
        if per_index:
            return [u(i, g[i], w[i]) for i in idx]
        return u(idx, g, w)

    for g in gs[:2]:  # warm every cache
        ws = call(upd, g, ws)
    CHANGES[change](opt)
    # the fresh optimizer: built after the change, with the changed settings and the same counts/states
    fresh = create(
        name,
        **{k: v for k, v in kw.items() if k not in ("param_idx2name", "param_dict", "lr_scheduler")},
        **({"lr_scheduler": None} if "lr_scheduler" in kw else {}),
    )
    for attr in (
        "lr",
        "wd",
        "rescale_grad",
        "clip_gradient",
        "lr_mult",
        "wd_mult",
        "idx2name",
        "param_dict",
        "lr_scheduler",
    ):
        setattr(fresh, attr, getattr(opt, attr))
    for attr in opt._own:
        setattr(fresh, attr, getattr(opt, attr))
    fresh.set_update_counts(
        opt.all_index_update_counts, current_device=opt.current_device, num_update=opt.num_update
    )
    fresh_upd = get_updater(fresh)
    fresh_upd.states = dict(upd.states)
    fresh_upd.states_synced = dict(upd.states_synced)
    a = call(upd, gs[2], ws)
    b = call(fresh_upd, gs[2], ws)
    assert _bits(a) == _bits(b)
    assert _bits([upd.states[i] for i in idx]) == _bits([fresh_upd.states[i] for i in idx])


def test_a_change_is_not_a_no_op():
    """The invalidation tests compare against a fresh optimizer: make sure the changes do change results."""
    ws, gs = _problem()
    outs = []
    for mult in (1.0, 3.0):
        opt = create("adam", learning_rate=0.01)
        opt.set_lr_mult({1: mult})
        outs.append(_bits(get_updater(opt)(1, gs[0][1], ws[1])))
    assert outs[0] != outs[1]


def test_caches_stay_out_of_the_saved_state():
    opt = create("adam", learning_rate=0.01)
    upd = get_updater(opt)
    ws, gs = _problem()
    upd(0, gs[0][0], ws[0])
    assert "_call_cache" not in vars(opt)
    upd.set_states(upd.get_states(dump_optimizer=True))  # no warning about an unsaveable attribute


def test_one_call_spec_object_per_static_description():
    opt = create("adam", learning_rate=0.01)
    upd = get_updater(opt)
    ws, gs = _problem()
    for g in gs:
        for i in range(len(ws)):
            ws[i] = upd(i, g[i], ws[i])
    assert len(opt._call_cache.specs) == 1
    (spec,) = opt._call_cache.specs.values()
    assert spec == rule_backed.CallSpec(opt._rule, dict(opt._prep.opts), spec.names, spec.mp, spec.hkeys)
    assert hash(spec) == hash(
        rule_backed.CallSpec(opt._rule, opt._prep.opts, spec.names, spec.mp, spec.hkeys)
    )


@pytest.mark.parametrize("x64", [False, True])
def test_pack_round_trip(x64):
    fdt = np.float64 if x64 else np.float32
    lrs_, wds, hv, ts = [0.1, -0.0, 3e-39], [0.0, 1e-8, np.inf], [0.9, 0.999, 1e-8], [1, 2**31 - 1, 7]
    spec = rule_backed.CallSpec(
        None, {}, ("a", "b", "c"), (False,) * 3, (("x", True), ("y", False), ("z", True), ("e", True))
    )
    scal, t, h = rule_backed.unpack(spec, rule_backed.pack(lrs_, wds, hv, ts, fdt))
    assert np.asarray([lrs_, wds], fdt).T.tobytes() == scal.tobytes()
    assert np.asarray(ts, np.int32).tobytes() == t.tobytes() and t.dtype == np.int32
    assert np.asarray(hv, fdt).tobytes() == h.tobytes()
    if not x64:  # without jax_enable_x64 only the 32-bit layout reaches a device
        scal_j, t_j, h_j = rule_backed.unpack(spec, jnp.asarray(rule_backed.pack(lrs_, wds, hv, ts, fdt)))
        assert np.asarray(scal_j).tobytes() == scal.tobytes()
        assert np.asarray(t_j).tobytes() == t.tobytes()
        assert np.asarray(h_j).tobytes() == h.tobytes()


def test_copies_of_an_optimizer_keep_working():
    import copy

    ws, gs = _problem()
    opt = create("adam", learning_rate=0.01)
    get_updater(opt)(0, gs[0][0], ws[0])
    twin = copy.deepcopy(opt)
    a = get_updater(opt)(0, gs[1][0], ws[0])
    b = get_updater(twin)(0, gs[1][0], ws[0])
    assert _bits(a) == _bits(b)


# --------------------------------------------------------------------------- the packed numbers' device copy
def test_packed_device_copy_is_reused_only_for_identical_bits():
    """A sweep ``for i: upd(i, g, w)`` sends the same numbers for every index: the device copy of the packed
    array is reused then, and never once a number changes (here the weight decay, to -0.0: equal as a float
    to 0.0, different bits)."""
    opt = create("sgd", learning_rate=0.1, momentum=0.9, wd=0.0)
    ref = create("sgd", learning_rate=0.1, momentum=0.9, wd=0.0)
    upd, ref_upd = get_updater(opt), get_updater(ref)
    rng = np.random.default_rng(0)
    ws = [jnp.asarray(rng.standard_normal(5), jnp.float32) for _ in range(3)]
    gs = [jnp.asarray(rng.standard_normal(5), jnp.float32) for _ in range(3)]
    ref_ws = list(ws)
    seen = []
    for sweep in range(3):
        if sweep == 2:
            opt.wd = ref.wd = -0.0
        for i in range(3):
            ws[i] = upd(i, gs[i], ws[i])
            seen.append(opt._call_cache.last_packed)
            # the reference never reuses: a fresh copy of its packed array every call
            ref._calls().last_bits = None
            ref_ws[i] = ref_upd(i, gs[i], ref_ws[i])
            np.testing.assert_array_equal(np.asarray(ws[i]), np.asarray(ref_ws[i]))
    assert seen[0] is seen[1] is seen[2]  # one sweep: one transfer
    assert seen[3] is not seen[2]  # the count changed
    assert seen[6] is not seen[5]  # -0.0 has other bits than 0.0
    assert np.signbit(np.asarray(seen[6]).view(np.float32)[1])
