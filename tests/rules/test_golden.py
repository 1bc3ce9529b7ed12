"""Every optimizer against real MXNet trajectories (2.0.0b1; 1.9.1 for lbsgd/ccsgd).

Each golden config is 12 steps of 3 parameters of different shapes, driven through MXNet's Updater; the
grids sweep rescale_grad, clip_gradient, wd, each optimizer's own options, lr_mult/wd_mult, schedulers,
begin_num_update and float16 with multi_precision (see tools/make_golden.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from golden import (
    OPTIMIZER_FILES,
    STATIC_TOL,
    TOL,
    _float_keys,
    config,
    expected,
    groups,
    inputs,
    load,
    replay,
    replay_many,
)

import mxopt_jax

# (rtol, atol) per optimizer, float32 weights / fp32 masters. MXNet's own tests (test_optimizer.py) use, for
# one step: default (1e-4, 1e-5); NAG (1e-3, 1e-4); FTML (1e-3, 1e-4); Adam (1e-4, 2e-5); Ftrl (1e-4, 1e-4);
# RMSProp (1e-2, 1e-2); LARS/LAMB/LANS (1e-3, 1e-3); AdamW/AdaBelief (1e-3, 2e-3). Ours are never looser,
# over 12 steps.
MXNET_TOL = {
    "nag": (1e-3, 1e-4),
    "ftml": (1e-3, 1e-4),
    "adam": (1e-4, 2e-5),
    "ftrl": (1e-4, 1e-4),
    "rmsprop": (1e-2, 1e-2),
    "lars": (1e-3, 1e-3),
    "lamb": (1e-3, 1e-3),
    "lans": (1e-3, 1e-3),
    "adamw": (1e-3, 2e-3),
    "adabelief": (1e-3, 2e-3),
}


def _departs(name: str, cfg: dict) -> bool:
    """Configs where mxopt_jax departs from MXNet on purpose (docs/differences.md), tested against a reference."""
    kw = cfg["kwargs"]
    return name == "adabelief" and kw.get("clip_gradient") is not None and kw.get("wd", 0.0) != 0.0


# The default run replays, per optimizer, the largest grid group with traced hyperparameters; the last
# float16 group and a group of a base-class feature (multipliers, schedulers, begin_num_update) take turns:
# the float16 group for every other optimizer (the facade's golden tests replay the float16 config of the
# others, tests/facade/test_facade.py), a base-class feature for the others, each feature in turn.
_ROTATING = ("mult", "sched", "begin")


def _default_run_groups(name: str) -> set[int]:
    """Indices (into ``groups(name)``) of the traced-hyperparameter groups the default run replays: the largest
    grid group (the optimizer's own options; ties: the later, clipped one), and either the last float16 group
    (multi-precision with clipping, decay and rescaling) or one group of a base-class feature, taking turns
    (LBSGD has no scheduler or begin_num_update configs: its multipliers); and the defaults config (no float
    hyperparameter: MXNet's defaults as Python numbers, jitted)."""
    gs = groups(name)
    kinds = [g[0]["group"] for g in gs]
    grid = max((k for k, kind in enumerate(kinds) if kind == "grid"), key=lambda k: (len(gs[k]), k))
    index = OPTIMIZER_FILES.index(name)
    defaults = kinds.index("defaults")
    if index % 2 == 0:
        return {defaults, grid, max(k for k, kind in enumerate(kinds) if kind == "fp16")}
    turn = (index // 2) % len(_ROTATING)
    present = [kind for kind in _ROTATING if kind in kinds]
    feature = _ROTATING[turn] if _ROTATING[turn] in present else present[0]
    return {defaults, grid, kinds.index(feature)}


# One config each of Adam, AdamW and AdaBelief replayed with Python numbers in the default run (the rest under
# ``slow``): configs where the bias correction computed as MXNet does, in double from the numbers given, shows
# (a float32 one, from the float32 rounding of beta2, misses STATIC_TOL on them).
STATIC_DEFAULT = {("adam", "c0001"), ("adamw", "c0001"), ("adabelief", "c0025")}


def _cases():
    """Per optimizer, each group of configs that share a compiled program with traced hyperparameters (one
    vmapped run per group; the default run takes :func:`_default_run_groups`, the ``slow`` marker the rest);
    with Python-number hyperparameters, op by op, every config under ``slow``. Every config is replayed in CI,
    in both modes."""
    out = []
    for name in OPTIMIZER_FILES:
        if name == "sgld":
            continue
        sampled = _default_run_groups(name)
        for k, group in enumerate(groups(name)):
            ids = [c["id"] for c in group if not _departs(name, c)]
            if ids:
                marks = () if k in sampled else (pytest.mark.slow,)
                out.append(
                    pytest.param(name, tuple(ids), "dynamic", id=f"{name}-g{k:02d}-dynamic", marks=marks)
                )
        meta, _ = load(name)
        for cfg in meta["configs"]:
            if _departs(name, cfg):
                continue
            marks = () if (name, cfg["id"]) in STATIC_DEFAULT else (pytest.mark.slow,)
            out.append(
                pytest.param(name, (cfg["id"],), "static", id=f"{name}-{cfg['id']}-static", marks=marks)
            )
    return out


def test_default_run_replays_every_optimizer_and_feature():
    """The default run's share: each optimizer's own grid and defaults; multi-precision and every base-class
    feature for several optimizers (the ``slow`` marker replays every config)."""
    default = [p for p in _cases() if not p.marks]
    features: dict[str, set[str]] = {}
    for p in default:
        name, cids, mode = p.values
        for cid in cids:
            features.setdefault(config(name, cid)["group"], set()).add(name)
    replayed = set(OPTIMIZER_FILES) - {"sgld"}
    for kind in ("defaults", "grid"):
        assert features[kind] == replayed, kind
    assert len(features["fp16"]) >= 10
    for kind in _ROTATING:
        assert len(features[kind]) >= 3, (kind, features[kind])


def test_every_config_is_replayed():
    for mode in ("dynamic", "static"):
        covered = {(p.values[0], cid) for p in _cases() if p.values[2] == mode for cid in p.values[1]}
        for name in OPTIMIZER_FILES:
            if name == "sgld":
                continue  # tests below (noise-free part teacher-forced on MXNet's trajectory)
            meta, _ = load(name)
            want = {(name, c["id"]) for c in meta["configs"] if not _departs(name, c)}
            assert want <= covered, (mode, sorted(want - covered))


def test_tolerances_no_looser_than_mxnet():
    for name, (rtol, atol) in TOL.items():
        mr, ma = MXNET_TOL.get(name, (1e-4, 1e-5))
        assert rtol <= mr and atol <= ma, name
        sr, sa = STATIC_TOL[name]  # Python-number hyperparameters: never looser than the traced ones
        assert sr <= rtol and sa <= atol, name
    # the Adam family's bias corrections, computed as MXNet does (in double from the numbers given)
    for name in ("adam", "adamw", "adabelief"):
        rtol, atol = STATIC_TOL[name]
        assert rtol <= 1e-5 and atol <= 1e-7, name


def test_every_optimizer_has_golden_data():
    expected_names = set(mxopt_jax.OPTIMIZERS)
    assert expected_names == set(OPTIMIZER_FILES), expected_names ^ set(OPTIMIZER_FILES)
    for name in OPTIMIZER_FILES:
        meta, _ = load(name)
        groups = {c["group"] for c in meta["configs"]}
        assert {"defaults", "grid", "mult", "fp16"} <= groups, (name, groups)
        assert meta["steps"] >= 10 and len(meta["shapes"]) >= 3
        assert not meta["skipped"], (name, meta["skipped"])


def _check(name: str, cfg: dict, ours: list, our_masters: list | None, mode: str = "dynamic") -> None:
    """Our trajectory against MXNet's: :data:`STATIC_TOL` where every hyperparameter was a Python number (static
    mode, and the defaults configs, which have no float hyperparameter to trace), :data:`TOL` otherwise."""
    python_numbers = mode == "static" or not _float_keys(cfg, mode)
    rtol, atol = (STATIC_TOL if python_numbers else TOL)[name]
    ref, ref_masters = expected(name, cfg)
    where = f"{name} config {cfg['id']} {cfg['kwargs']}"
    if cfg["dtype"] == "float16":
        for p, (m, rm, w, rw) in enumerate(zip(our_masters, ref_masters, ours, ref, strict=True)):
            np.testing.assert_allclose(m, rm, rtol=rtol, atol=atol, err_msg=f"{where}: master of param {p}")
            # The 16-bit weight is exactly the rounded master ...
            np.testing.assert_array_equal(w, m.astype(np.float16).astype(np.float32), err_msg=where)
            # ... and MXNet's is its rounded master: they agree to the master tolerance plus one ulp of rounding.
            ulp = np.spacing(np.abs(rw).astype(np.float16)).astype(np.float32)
            assert np.all(np.abs(w - rw) <= atol + rtol * np.abs(rw) + ulp), f"{where}: fp16 param {p}"
    else:
        for p, (w, rw) in enumerate(zip(ours, ref, strict=True)):
            np.testing.assert_allclose(w, rw, rtol=rtol, atol=atol, err_msg=f"{where}: param {p}")


@pytest.mark.parametrize(("name", "cids", "mode"), _cases())
def test_matches_mxnet(name, cids, mode):
    cfgs = [config(name, cid) for cid in cids]
    for cfg, (ours, our_masters) in zip(cfgs, replay_many(name, cfgs, mode), strict=True):
        _check(name, cfg, ours, our_masters, mode)


# --------------------------------------------------------------------------- AdaBelief (docs/differences.md #7)
def _adabelief_reference(w, grads, kw):
    """Float64 NumPy AdaBelief from the spec with mxopt_jax's clip-then-decay preamble."""
    b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
    eps, lr, wd = kw.get("epsilon", 1e-6), kw["learning_rate"], kw.get("wd", 0.0)
    rs, c = kw.get("rescale_grad", 1.0), kw.get("clip_gradient")
    w = w.astype(np.float64)
    m = np.zeros_like(w)
    s = np.zeros_like(w)
    out = []
    for t, g in enumerate(grads.astype(np.float64), start=1):
        G = rs * g
        if c is not None:
            G = np.clip(G, -c, c)
        G = G + wd * w
        m = b1 * m + (1 - b1) * G
        s = b2 * s + (1 - b2) * (G - m) ** 2 + eps
        eta = lr * np.sqrt(1 - b2**t) / (1 - b1**t) if kw.get("correct_bias", True) else lr
        w = w - eta * m / (np.sqrt(s) + eps)
        out.append(w)
    return np.stack(out)


def test_adabelief_clips_before_decay():
    meta, _ = load("adabelief")
    departing = [c for c in meta["configs"] if _departs("adabelief", c) and c["dtype"] == "float32"]
    departing = [c for c in departing if not c["lr_mult"] and not c["wd_mult"] and not c["scheduler"]]
    assert len(departing) >= 8
    for cfg in departing:
        ours, _ = replay("adabelief", cfg)
        mx, _ = expected("adabelief", cfg)
        w0, grads = inputs("adabelief", cfg)
        for p in range(len(w0)):
            ref = _adabelief_reference(w0[p], grads[p], cfg["kwargs"])
            np.testing.assert_allclose(ours[p], ref, rtol=1e-4, atol=1e-5)
        # MXNet's kernel adds decay before clipping, so it really differs here.
        assert max(np.max(np.abs(o - m)) for o, m in zip(ours, mx, strict=True)) > 1e-4


# --------------------------------------------------------------------------- SGLD
def _sgld_det(w, g, kw):
    lr, wd, rs, c = kw["learning_rate"], kw["wd"], kw["rescale_grad"], kw["clip_gradient"]
    G = rs * g.astype(np.float64)
    if c is not None:
        G = np.clip(G, -c, c)
    return w - lr / 2 * (G + wd * w)


def _sgld_configs():
    meta, _ = load("sgld")
    return [c for c in meta["configs"] if c["group"] in ("grid", "mult") and c["dtype"] == "float32"]


def test_sgld_mxnet_noise_is_langevin():
    """MXNet's weight minus the spec's deterministic step is N(0, sqrt(lr)) noise (validates the formula)."""
    z = []
    for cfg in _sgld_configs():
        if cfg["lr_mult"] or cfg["wd_mult"]:
            continue
        mx, _ = expected("sgld", cfg)
        w0, grads = inputs("sgld", cfg)
        lr = cfg["kwargs"]["learning_rate"]
        for p in range(len(w0)):
            prev = np.concatenate([w0[p][None], mx[p][:-1]]).astype(np.float64)
            noise = mx[p] - np.stack(
                [_sgld_det(prev[s], grads[p][s], cfg["kwargs"]) for s in range(len(prev))]
            )
            z.append((noise / np.sqrt(lr)).ravel())
    z = np.concatenate(z)
    assert z.size > 1000
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    assert abs(z.std() - 1) < 0.05


def _sgld_cases():
    """Every config; the default run the first of each kind (clipping or not, multipliers), the rest under
    ``slow`` (each config compiles its own update)."""
    seen, out = set(), []
    for c in _sgld_configs():
        kind = (c["group"], c["kwargs"]["clip_gradient"] is None, bool(c["lr_mult"]), bool(c["wd_mult"]))
        out.append(pytest.param(c["id"], marks=() if kind not in seen else (pytest.mark.slow,)))
        seen.add(kind)
    return out


@pytest.mark.parametrize("cid", _sgld_cases())
def test_sgld_deterministic_part_matches_mxnet(cid):
    """Teacher-forced on MXNet's trajectory: our update minus our noise is MXNet's deterministic step."""
    cfg = config("sgld", cid)
    kw = dict(cfg["kwargs"])
    mx, _ = expected("sgld", cfg)
    w0, grads = inputs("sgld", cfg)
    n = len(w0)
    for key in ("lr_mult", "wd_mult"):
        if cfg[key]:
            kw[key] = [cfg[key].get(str(i), 1.0) for i in range(n)]
    tx = mxopt_jax.sgld(**kw, seed=7)
    update = jax.jit(tx.update)
    state = tx.init([jnp.asarray(w) for w in w0])
    prev = [w.astype(np.float32) for w in w0]
    for s in range(grads[0].shape[0]):
        params = [jnp.asarray(w) for w in prev]
        u, new_state = update([jnp.asarray(g[s]) for g in grads], state, params)
        u0, _ = update([jnp.zeros_like(jnp.asarray(g[s])) for g in grads], state, params)  # same key
        for p in range(n):
            k = {**cfg["kwargs"]}
            k["learning_rate"] = kw["learning_rate"] * (kw.get("lr_mult") or [1.0] * n)[p]
            k["wd"] = kw["wd"] * (kw.get("wd_mult") or [1.0] * n)[p]
            det = _sgld_det(prev[p].astype(np.float64), grads[p][s], k)
            det0 = _sgld_det(prev[p].astype(np.float64), 0 * grads[p][s], k)
            np.testing.assert_allclose(np.asarray(u[p]) - np.asarray(u0[p]), det - det0, rtol=1e-5, atol=1e-6)
        state = new_state
        prev = [m[s] for m in mx]


def test_sgld_noise_distribution_and_reproducibility():
    params = {"w": jnp.zeros((200, 100)), "b": jnp.zeros((300,))}
    grads = jax.tree.map(jnp.zeros_like, params)
    lr = 0.04
    tx = mxopt_jax.sgld(learning_rate=lr, seed=3)
    s0 = tx.init(params)
    u1, s1 = tx.update(grads, s0, params)
    u1b, _ = tx.update(grads, s0, params)
    u2, _ = tx.update(grads, s1, params)
    np.testing.assert_array_equal(u1["w"], u1b["w"])  # same key, same noise
    assert not np.allclose(u1["w"], u2["w"])  # the key advances
    assert not np.allclose(u1["w"].ravel()[:300], u1["b"])  # leaves draw independent noise
    z = np.concatenate([np.ravel(u1["w"]), np.ravel(u1["b"])]) / np.sqrt(lr)
    assert abs(z.mean()) < 4 / np.sqrt(z.size)
    assert abs(z.std() - 1) < 0.02
    other = mxopt_jax.sgld(learning_rate=lr, seed=4)
    u3, _ = other.update(grads, other.init(params), params)
    assert not np.allclose(u1["w"], u3["w"])
