"""What MXNet users bring: MXNet's accepted values, MXNet 1.x calls, other libraries' keywords, SGLD seeds,
warnings that point at the user's line (docs/migration.md "Coming from MXNet", docs/differences.md #19)."""

from __future__ import annotations

import json
import pathlib
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from golden import TOL
from sampling import default_run, share

import mxopt_jax
from mxopt_jax import facade
from mxopt_jax.facade import create, get_updater
from mxopt_jax.mxnet_format import load_updater

NAMES = sorted(mxopt_jax.OPTIMIZERS)
CKPT = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_ckpt"
_EXTRA = {"groupadagrad": {}, "sgld": {"seed": 0}}


def _params():
    return {"a": jnp.linspace(-1.0, 1.0, 6).reshape(2, 3), "b": jnp.linspace(0.5, -0.5, 8).reshape(4, 2)}


def _grads(k):
    return jax.tree.map(lambda p: jnp.cos(p * (k + 1)), _params())


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ccSGD
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------- aggregate_num=0 (MXNet's tests)
# The same argument handling for every optimizer: a third of them in the default run, the rest under ``slow``.
@pytest.mark.parametrize("name", default_run(NAMES, share(3)))
def test_aggregate_num_zero_means_no_aggregation_in_both_faces(name):
    kw = _EXTRA.get(name, {})
    ctor = mxopt_jax.OPTIMIZERS[name]
    a, b = _quiet(ctor, aggregate_num=0, **kw), _quiet(ctor, aggregate_num=1, **kw)
    params = _params()
    sa, sb = a.init(params), b.init(params)
    assert jax.tree.structure(sa) == jax.tree.structure(sb)  # per-parameter state, not flat buffers
    for k in range(2):
        ua, sa = a.update(_grads(k), sa, params)
        ub, sb = b.update(_grads(k), sb, params)
        for x, y in zip(jax.tree.leaves(ua), jax.tree.leaves(ub), strict=True):
            np.testing.assert_array_equal(x, y)
    opt = _quiet(create, name, aggregate_num=0, **kw)
    assert opt.aggregate_num == 0  # kept as given, as MXNet
    assert not get_updater(opt).aggregate_updates


def test_aggregate_num_zero_list_call_equals_per_index_calls():
    ws = [jnp.ones(3), jnp.full(2, 0.5)]
    gs = [jnp.full(3, 0.1), jnp.full(2, -0.2)]
    u0 = get_updater(create("adam", learning_rate=0.1, aggregate_num=0))
    u1 = get_updater(create("adam", learning_rate=0.1))
    got = u0([0, 1], gs, ws)
    want = [u1(0, gs[0], ws[0]), u1(1, gs[1], ws[1])]
    for x, y in zip(got, want, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    ("kw", "exc", "pattern"),
    [
        (
            dict(aggregate_num=-1),
            ValueError,
            r"`aggregate_num` must be an int >= 0 .*-1 as 'all'.*differences\.md #19",
        ),
        (
            dict(wd=-0.1),
            ValueError,
            r"`wd` must be in \[0.0, inf\], got -0.1 \(MXNet does not check this value",
        ),
        (
            dict(beta1=1.0),
            ValueError,
            r"`beta1` must be in \[0.0, 1.0\), got 1.0 \(MXNet does not check.*#19",
        ),
        (dict(rescale_grad=0.0), ValueError, r"`rescale_grad`.*MXNet does not check this value"),
        (dict(learning_rate=-1.0), ValueError, r"`learning_rate`.*MXNet does not check this value"),
        (dict(multi_precision=1), TypeError, r"`multi_precision` must be True or False.*differences\.md #19"),
        (dict(clip_gradient=0.0), ValueError, r"`clip_gradient`.*differences\.md #1\)"),
    ],
)
def test_refusals_of_values_mxnet_takes_say_so(kw, exc, pattern):
    with pytest.raises(exc, match=pattern):
        mxopt_jax.adam(**kw)
    with pytest.raises(exc, match=pattern):
        create("adam", **kw)


# --------------------------------------------------------------------------- MXNet 1.x single-index calls
@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "ftml", "lamb"])
def test_single_index_update_as_in_mxnet_1x(name):
    w, g = jnp.linspace(-1.0, 1.0, 5), jnp.linspace(0.3, -0.2, 5)
    one, lst = create(name, learning_rate=0.05), create(name, learning_rate=0.05)
    s1, sl = one.create_state(0, w), [lst.create_state(0, w)]
    w1, wl = w, [w]
    for _ in range(3):
        w1, s1 = one.update(0, w1, g, s1)  # MXNet 1.x: opt.update(index, weight, grad, state)
        wl, sl = lst.update([0], wl, [g], sl)
    assert isinstance(w1, jax.Array)
    np.testing.assert_array_equal(w1, wl[0])
    for x, y in zip(jax.tree.leaves(s1), jax.tree.leaves(sl[0]), strict=True):
        np.testing.assert_array_equal(x, y)
    assert one.index_update_counts == {0: 3} and one.num_update == 3


def test_single_index_update_multi_precision_as_in_mxnet_1x():
    w, g = jnp.linspace(-1.0, 1.0, 5).astype(jnp.float16), jnp.full(5, 0.25, jnp.float16)
    opt = create("sgd", learning_rate=0.1, momentum=0.9, multi_precision=True)
    ref = create("sgd", learning_rate=0.1, momentum=0.9, multi_precision=True)
    s, sr = opt.create_state_multi_precision(0, w), [ref.create_state_multi_precision(0, w)]
    w1, wr = w, [w]
    for _ in range(2):
        w1, s = opt.update_multi_precision(0, w1, g, s)
        wr, sr = ref.update_multi_precision([0], wr, [g], sr)
    assert w1.dtype == jnp.float16 and s[0].dtype == jnp.float32  # (fp32 master, momentum)
    np.testing.assert_array_equal(w1, wr[0])
    np.testing.assert_array_equal(s[0], sr[0][0])


def test_single_index_update_on_a_custom_optimizer():
    class Plain(facade.Optimizer):
        def step(self, indices, weights, grads, states):
            self._update_count(indices)
            return [w - self._get_lr(i) * g for i, w, g in zip(indices, weights, grads, strict=True)], states

    opt = Plain(learning_rate=0.5)
    w, s = opt.update("fc_weight", jnp.ones(2), jnp.ones(2), None)
    np.testing.assert_array_equal(w, [0.5, 0.5])
    assert s is None and opt.index_update_counts == {"fc_weight": 1}


# --------------------------------------------------------------------------- SGLD seeds
def _sgld_noise(opt):
    return get_updater(opt)(0, jnp.zeros(500), jnp.zeros(500))


def test_two_sgld_without_seed_draw_different_noise_and_the_seed_reproduces():
    a, b = create("sgld", learning_rate=0.01), create("sgld", learning_rate=0.01)
    assert a.seed != b.seed  # a fresh seed each, as MXNet's global generator never repeats a stream
    na, nb = _sgld_noise(a), _sgld_noise(b)
    assert not np.allclose(na, nb)
    again = _sgld_noise(create("sgld", learning_rate=0.01, seed=a.seed))  # the recorded seed reproduces
    np.testing.assert_array_equal(na, again)
    np.testing.assert_array_equal(
        _sgld_noise(create("sgld", learning_rate=0.01, seed=3)),
        _sgld_noise(create("sgld", learning_rate=0.01, seed=3)),
    )


def test_functional_sgld_is_reproducible_by_default():
    """The functional constructor follows JAX's explicit-key convention: seed=0 unless given (documented)."""
    params = {"w": jnp.zeros(100)}
    draws = []
    for tx in (
        mxopt_jax.sgld(learning_rate=0.01),
        mxopt_jax.sgld(learning_rate=0.01),
        mxopt_jax.sgld(seed=1),
    ):
        u, _ = tx.update({"w": jnp.zeros(100)}, tx.init(params), params)
        draws.append(u["w"])
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.allclose(draws[0], draws[2])
    assert "seed=0" in mxopt_jax.sgld.__doc__ and "same noise" in mxopt_jax.sgld.__doc__


# --------------------------------------------------------------------------- other libraries' habits
HABITS = [
    ("adam", {"lr": 0.1}, "`lr` is spelled `learning_rate`"),
    ("adam", {"b1": 0.9}, "`b1` is spelled `beta1`"),
    ("adam", {"beta_1": 0.9}, "`beta_1` is spelled `beta1`"),
    ("adam", {"beta_2": 0.99}, "`beta_2` is spelled `beta2`"),
    ("adam", {"eps": 1e-8}, "`eps` is spelled `epsilon`"),
    ("adam", {"weight_decay": 1e-4}, "`weight_decay` is spelled `wd`"),
    ("adam", {"betas": (0.9, 0.99)}, "beta1=..., beta2=..."),
    ("adam", {"amsgrad": True}, "no AMSGrad"),
    ("sgd", {"nesterov": True}, "NAG: use mxopt_jax.nag / create('nag')"),
    ("sgd", {"eps": 1e-8}, "`eps` (MXNet's `epsilon`) is not an argument of this optimizer"),
    ("sgd", {"dampening": 0.1}, "no dampening"),
    ("adam", {"clipnorm": 1.0}, "optax.clip_by_global_norm"),
    ("adam", {"clipvalue": 1.0}, "`clipvalue` is spelled `clip_gradient`"),
    ("rmsprop", {"gamma1": 0.9}, "`gamma1` is spelled `rho`"),
    ("adam", {"param_idx2name": {0: "w"}}, "names parameters by their pytree paths"),
    (
        "adam",
        {"foo": 1},
        "its own arguments are learning_rate, beta1, beta2, epsilon, lazy_update, plus MXNet's base",
    ),
]


@pytest.mark.parametrize(("name", "kw", "hint"), HABITS, ids=[f"{n}-{next(iter(k))}" for n, k, _ in HABITS])
def test_keywords_from_other_libraries(name, kw, hint):
    with pytest.raises(TypeError, match=rf"^mxopt_jax\.{name}: .*{re.escape(hint)}"):
        mxopt_jax.OPTIMIZERS[name](**kw)
    if name == "rmsprop" or "param_idx2name" in kw:  # MXNet's renamed keywords: MXNet's DeprecationWarning
        return
    cls = type(create(name)).__name__
    with pytest.raises(TypeError, match=rf"^create\('{name}'\): {cls}: .*{re.escape(hint)}"):
        create(name, **kw)
    with pytest.raises(TypeError, match=rf"^{cls}: .*{re.escape(hint)}"):
        getattr(facade, cls)(**kw)


def _model_parameters():
    yield jnp.zeros(3)


@pytest.mark.parametrize(
    "params",
    [
        {"w": jnp.zeros(3)},
        [jnp.zeros(3), jnp.zeros(2)],
        [{"params": [jnp.zeros(3)], "lr": 0.1}],  # torch-style parameter groups
        jnp.zeros((3, 4)),
        "generator",
    ],
    ids=["dict", "list", "groups", "array", "generator"],
)
def test_parameters_passed_to_a_constructor(params):
    make = _model_parameters if params == "generator" else (lambda: params)
    with pytest.raises(TypeError, match=r"^mxopt_jax\.adam: .*parameters go to `init`.*tx\.init\(params\)"):
        mxopt_jax.adam(make(), learning_rate=0.1) if params != "generator" else mxopt_jax.adam(make())
    with pytest.raises(TypeError, match=r"^Adam: .*parameters go to the updater.*get_updater"):
        facade.Adam(make())
    with pytest.raises(TypeError, match=r"^create\('adam'\): .*parameters go to the updater"):
        create("adam", make())
    with pytest.raises(TypeError, match=r"^create\('adam'\): Adam: .*`params`: parameters go to the updater"):
        create("adam", params=make())
    with pytest.raises(TypeError, match=r"^mxopt_jax\.adam: .*`params`: parameters go to `init`"):
        mxopt_jax.adam(params=make())


def test_custom_optimizer_unknown_keyword_gets_the_hint():
    class Mine(facade.Optimizer):
        pass

    with pytest.raises(
        TypeError, match=r"^Mine: unexpected keyword argument\(s\) \['lr'\].*spelled `learning_rate`"
    ):
        Mine(lr=0.1)


# --------------------------------------------------------------------------- warnings point at the user
def _ours(rec, category=Warning):
    return [w for w in rec if issubclass(w.category, category)]


def _assert_here(fn, category, match):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fn()
    hits = [w for w in _ours(rec, category) if re.search(match, str(w.message))]
    assert hits, [str(w.message) for w in rec]
    for w in hits:
        assert w.filename == __file__, (w.filename, str(w.message))


def test_warnings_point_at_the_users_line():
    sched = mxopt_jax.lr_scheduler.FactorScheduler
    _assert_here(
        lambda: mxopt_jax.adam(learning_rate=0.1, lr_scheduler=sched(step=2, base_lr=0.5)),
        UserWarning,
        "overwritten",
    )
    _assert_here(lambda: create("adam", lr_scheduler=sched(step=2, base_lr=0.5)), UserWarning, "overwritten")
    _assert_here(lambda: facade.Adam(lr_scheduler=sched(step=2, base_lr=0.5)), UserWarning, "overwritten")
    _assert_here(lambda: mxopt_jax.ccsgd(), DeprecationWarning, "ccsgd is deprecated")
    _assert_here(lambda: create("ccsgd"), DeprecationWarning, "ccSGD is deprecated")
    _assert_here(
        lambda: get_updater(create("sgd"))(0, jnp.ones(2, jnp.float16), jnp.ones(2, jnp.float16)),
        UserWarning,
        "Accumulating with float16",
    )
    _assert_here(lambda: create("sgd")._set_current_context(1), DeprecationWarning, "_set_current_context")
    _assert_here(lambda: mxopt_jax.sgd().init({"w": jnp.ones(2, jnp.float16)}), UserWarning, "Accumulating")

    def unsaveable():
        upd = get_updater(create("sgd"))
        upd.optimizer.custom = object()
        upd.get_states(dump_optimizer=True)

    _assert_here(unsaveable, UserWarning, "attribute 'custom'")
    _assert_here(
        lambda: load_updater(CKPT / "mx19_adagrad.states"), UserWarning, "eps inside the square root"
    )
    _assert_here(
        lambda: load_updater(CKPT / "mx20_adam.states", optimizer=create("sgd")),
        UserWarning,
        "replaces the one",
    )


def test_scheduler_overwrite_says_which_value_won():
    s = mxopt_jax.lr_scheduler.FactorScheduler(step=2, base_lr=0.5)
    with pytest.warns(
        UserWarning,
        match=r"learning_rate=0.001 \(given, or the optimizer's default\) won over the "
        r"scheduler's base_lr=0.5.*learning_rate=None to keep base_lr=0.5",
    ):
        opt = create("adam", lr_scheduler=s)
    assert opt.learning_rate == 0.001 == s.base_lr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = create(
            "adam",
            learning_rate=None,
            lr_scheduler=mxopt_jax.lr_scheduler.FactorScheduler(step=2, base_lr=0.5),
        )
    assert opt.learning_rate == 0.5


# --------------------------------------------------------------------------- update counts, public form
def test_update_counts_public_api():
    opt = create("sgd", learning_rate=0.1, begin_num_update=2)
    upd = get_updater(opt)
    upd([0, 1], [jnp.ones(2)] * 2, [jnp.ones(2)] * 2)
    assert opt.index_update_counts == {0: 3, 1: 3} and opt.all_index_update_counts == {0: {0: 3, 1: 3}}
    opt.set_current_device(1)
    assert opt.current_device == 1 and opt.index_update_counts == {}
    opt.set_update_counts({0: {0: 7}, 1: {0: 5, "w": 4}}, current_device=1)
    assert opt.index_update_counts == {0: 5, "w": 4} and opt.num_update == 7
    opt.set_update_counts({0: {0: 1}}, num_update=9)
    assert opt.current_device == 0 and opt.num_update == 9
    # MXNet's private names stay (MXNet code reads them)
    assert opt._index_update_count is opt.index_update_counts
    assert opt._all_index_update_counts is opt.all_index_update_counts


# --------------------------------------------------------------------------- the migration guide
def test_migration_guide_runs_without_warnings(monkeypatch, capsys):
    """Every code block of docs/migration.md, in order, in one namespace, warnings as errors (blocks that
    import mxnet show MXNet code and are skipped)."""
    root = pathlib.Path(__file__).parents[2]
    text = (root / "docs" / "migration.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    runnable = [b for b in blocks if "import mxnet" not in b]
    assert len(blocks) - len(runnable) == 1 and len(runnable) >= 12
    monkeypatch.chdir(root)
    ns: dict = {"__name__": "migration_guide"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, code in enumerate(runnable):
            exec(compile(code, f"docs/migration.md (block {k})", "exec"), ns)  # our own documentation
    printed = capsys.readouterr().out
    assert "SGD 3 {0: 3, 1: 3, 2: 3, 3: 3} 0.035" in printed  # the output the guide shows
    assert ns["opt"].index_update_counts == {i: 5 for i in range(4)}
    mxopt_jax.facade.Optimizer.opt_registry.pop("myopt", None)


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_readme_resume_lines_run_on_a_real_checkpoint(version):
    """The README's resume lines, run on a Gluon BatchNorm checkpoint of either MXNet version (with the
    reader's names, multipliers and gradients filled in): they continue MXNet's run and leave BatchNorm's
    running statistics alone."""
    root = pathlib.Path(__file__).parents[2]
    gold = root / "tests" / "golden" / "mxnet_resume"
    readme = (root / "README.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "load_trainer(" in b)
    with np.load(gold / f"{version}_cnn_adam.npz") as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data.pop("meta")))
    subs = {
        '"net.params"': f'"{gold}/{version}_cnn_adam.params"',
        '"trainer.states"': f'"{gold}/{version}_cnn_adam.states"',
        "names=None,": f"names={meta['collect_params']!r}," if version == "mx19" else "names=None,",
        "lr_mult={},": f"lr_mult={ {n: v for n, v in meta['lr_mult'].items() if v != 1.0}!r},",
        "wd_mult={},": f"wd_mult={ {n: v for n, v in meta['wd_mult'].items() if v != 1.0}!r},",
    }
    for old, new in subs.items():
        assert old in code, old
        code = code.replace(old, new)
    grads = {n: jnp.asarray(data[f"grad_0/{n}"]) for n in meta["trainer_names"] if f"grad_0/{n}" in data}
    ns = {"mxopt_jax": mxopt_jax, "jnp": jnp, "grads": grads}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, "README.md", "exec"), ns)  # our own documentation
    ckpt, params = ns["ckpt"], ns["params"]
    assert ckpt.frozen == ("1.running_mean", "1.running_var") and ckpt.updater.optimizer.num_update == 4
    for n in ckpt.frozen:
        assert params[n] is ckpt.params[n]
    for n in ckpt.trainable:
        rtol, atol = TOL["adam"]
        np.testing.assert_allclose(np.asarray(params[n]), data[f"weight_0/{n}"], rtol=rtol, atol=atol)
    assert "tx" in ns and "opt_state" in ns
