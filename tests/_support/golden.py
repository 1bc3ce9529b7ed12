"""Replaying the MXNet golden trajectories (``tests/golden/<name>.npz``, made by ``tools/make_golden.py``).

A config is replayed by constructing the mxopt_jax optimizer with the same keyword arguments MXNet got and
running its steps. Two modes:

* ``"dynamic"``: all steps inside one jitted ``lax.scan``; float hyperparameters are passed as traced JAX
  scalars, so configs that differ only in their values share one compiled program (this is also how
  ``optax.inject_hyperparams`` drives us): :func:`replay_many` runs such a group at once, vmapped over the
  configs' values. A config without float hyperparameters (MXNet's defaults) runs on Python numbers here.
* ``"static"``: every hyperparameter is the Python value from the config (what users usually pass), one
  ``update`` call after another (op by op: the configs of an optimizer reuse the compiled operations, where a
  jitted trajectory would compile a program for every config). Python numbers take the same branches in the
  library (static zeros, ones and positive values) whether the update is jitted or not.
"""

from __future__ import annotations

import functools
import json
import pathlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax

import mxopt_jax
from mxopt_jax import lr_scheduler as lrs

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
OPTIMIZER_FILES = sorted(p.stem for p in GOLDEN.glob("*.npz") if p.stem in mxopt_jax.OPTIMIZERS)


@functools.cache
def load(name: str) -> tuple[dict, dict]:
    with np.load(GOLDEN / f"{name}.npz") as z:
        data = {k: z[k] for k in z.files}
    return json.loads(str(data.pop("meta"))), data


def config(name: str, cid: str) -> dict:
    meta, _ = load(name)
    return next(c for c in meta["configs"] if c["id"] == cid)


def _tree(cfg: dict, values: list):
    names = cfg.get("param_idx2name")
    if names:
        return {names[str(i)]: v for i, v in enumerate(values)}
    return list(values)


def _leaves(cfg: dict, tree) -> list:
    names = cfg.get("param_idx2name")
    if names:
        return [tree[names[str(i)]] for i in range(len(names))]
    return list(tree)


def _dtype(cfg: dict):
    return jnp.float16 if cfg["dtype"] == "float16" else jnp.float32


def _float_keys(cfg: dict, mode: str) -> tuple[str, ...]:
    if mode == "static":
        return ()
    keys = [k for k, v in cfg["kwargs"].items() if type(v) is float]
    if cfg.get("scheduler"):
        keys = [k for k in keys if k != "learning_rate"]
    return tuple(sorted(keys))


def _make_kwargs(cfg: dict, n_params: int, dynamic: dict) -> dict:
    kw = {**cfg["kwargs"], **dynamic}
    if cfg.get("scheduler"):
        sc = cfg["scheduler"]
        kw["lr_scheduler"] = getattr(lrs, sc["type"])(**sc["args"])
    for key in ("lr_mult", "wd_mult"):
        if cfg[key]:
            kw[key] = _tree(cfg, [cfg[key].get(str(i), 1.0) for i in range(n_params)])
    return kw


@functools.cache
def _trajectory_fn(name: str, signature: str):
    """A jitted ``(floats, w0, grads) -> (weights per step, masters per step)`` shared by alike configs, vmapped
    over a leading config axis of ``floats``."""
    cfg = json.loads(signature)
    ctor = mxopt_jax.OPTIMIZERS[name]
    n_params = cfg["n_params"]

    def run(floats, w0, grads):
        floats = {
            k: v for k, v in floats.items() if k != "_config"
        }  # "_config": the vmapped axis, always there
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx = ctor(**_make_kwargs(cfg, n_params, floats))
        state = tx.init(w0)

        def body(carry, g):
            w, st = carry
            u, st = tx.update(g, st, w)
            w = optax.apply_updates(w, u)
            return (w, st), (w, st.master)

        _, (ws, masters) = jax.lax.scan(body, (w0, state), grads)
        return ws, masters

    return jax.jit(jax.vmap(run, in_axes=(0, None, None)))


def signature(name: str, cfg: dict, mode: str = "dynamic") -> str:
    """What a config's compiled program depends on: everything but its float hyperparameters (dynamic mode)."""
    meta, _ = load(name)
    fkeys = _float_keys(cfg, mode)
    static_cfg = {k: v for k, v in cfg.items() if k not in ("id", "group")}
    static_cfg["kwargs"] = {k: v for k, v in cfg["kwargs"].items() if k not in fkeys}
    static_cfg["n_params"] = len(meta["shapes"])
    static_cfg["float_keys"] = fkeys
    return json.dumps(static_cfg, sort_keys=True)


def groups(name: str) -> list[list[dict]]:
    """The configs of ``name`` grouped by :func:`signature` (dynamic mode), in file order."""
    meta, _ = load(name)
    out: dict[str, list[dict]] = {}
    for cfg in meta["configs"]:
        out.setdefault(signature(name, cfg), []).append(cfg)
    return list(out.values())


def replay(name: str, cfg: dict, mode: str = "dynamic") -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Our trajectory for a golden config: per parameter, arrays (steps, *shape) of weights and masters."""
    return replay_many(name, [cfg], mode)[0]


def _replay_op_by_op(name: str, cfg: dict) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """Static mode: the config's Python numbers, one ``update`` call per step (not jitted)."""
    meta, data = load(name)
    n = len(meta["shapes"])
    dt = _dtype(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx = mxopt_jax.OPTIMIZERS[name](**_make_kwargs(cfg, n, {}))
    w = _tree(cfg, [jnp.asarray(np.asarray(data[f"w0_{p}"], dt)) for p in range(n)])
    state = tx.init(w)
    ws, masters = [], []
    for k in range(data["grads_0"].shape[0]):
        g = _tree(cfg, [jnp.asarray(np.asarray(data[f"grads_{p}"][k], dt)) for p in range(n)])
        u, state = tx.update(g, state, w)
        w = optax.apply_updates(w, u)
        ws.append([np.asarray(x, np.float32) for x in _leaves(cfg, w)])
        masters.append(None if state.master is None else [np.asarray(x) for x in _leaves(cfg, state.master)])
    weights = [np.stack([step[p] for step in ws]) for p in range(n)]
    if masters[0] is None:
        return weights, None
    return weights, [np.stack([step[p] for step in masters]) for p in range(n)]


def replay_many(
    name: str, cfgs: list[dict], mode: str = "dynamic"
) -> list[tuple[list[np.ndarray], list[np.ndarray] | None]]:
    """:func:`replay` for configs of one :func:`signature`: one compiled program, vmapped over their float
    hyperparameters (the traced values every config of the group differs in); in static mode, each config op
    by op."""
    if mode == "static":
        return [_replay_op_by_op(name, cfg) for cfg in cfgs]
    meta, data = load(name)
    n = len(meta["shapes"])
    cfg = cfgs[0]
    sig = signature(name, cfg, mode)
    assert all(signature(name, c, mode) == sig for c in cfgs), "replay_many takes configs of one signature"
    dt = _dtype(cfg)
    fkeys = _float_keys(cfg, mode)
    fn = _trajectory_fn(name, sig)
    # NumPy in and out: jnp.asarray / indexing a jax.Array would compile a small program per shape and dtype
    floats = {k: np.asarray([c["kwargs"][k] for c in cfgs], np.float32) for k in fkeys}
    floats["_config"] = np.arange(len(cfgs))
    w0 = _tree(cfg, [np.asarray(data[f"w0_{p}"], dt) for p in range(n)])
    grads = _tree(cfg, [np.asarray(data[f"grads_{p}"], dt) for p in range(n)])
    ws, masters = jax.device_get(fn(floats, w0, grads))
    out = []
    for i in range(len(cfgs)):
        w_i = [np.asarray(x[i], np.float32) for x in _leaves(cfg, ws)]
        m_i = None if masters is None else [np.asarray(x[i]) for x in _leaves(cfg, masters)]
        out.append((w_i, m_i))
    return out


def expected(name: str, cfg: dict) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    meta, data = load(name)
    n = len(meta["shapes"])
    ws = [data[f"out_{cfg['id']}_{p}"] for p in range(n)]
    masters = [data[f"master_{cfg['id']}_{p}"] for p in range(n)] if cfg["dtype"] == "float16" else None
    return ws, masters


def inputs(name: str, cfg: dict) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Initial weights and gradients (float32, as stored) per parameter."""
    meta, data = load(name)
    n = len(meta["shapes"])
    return [data[f"w0_{p}"] for p in range(n)], [data[f"grads_{p}"] for p in range(n)]


#: (rtol, atol) of the golden replays per optimizer: float32 weights / fp32 masters over 12 steps, never
#: looser than MXNet's own tests.
TOL = {name: (1e-4, 1e-5) for name in OPTIMIZER_FILES}
TOL.update({"nag": (1e-4, 5e-5), "adam": (1e-4, 2e-5), "ftrl": (1e-4, 2e-5), "lars": (1e-4, 5e-5)})
# AdamW/AdaBelief with correct_bias=False and beta2=0.999 take steps of ~16 * lr from a second moment that
# MXNet's kernel forms with float32 cancellation; 12 such steps differ by up to ~2e-5 in absolute terms.
TOL.update({"adamw": (1e-4, 5e-5), "adabelief": (1e-4, 5e-5)})

#: (rtol, atol) of the replays with Python-number hyperparameters (``"static"`` mode, what users usually pass),
#: where tighter than :data:`TOL`. Adam, AdamW and AdaBelief compute their bias corrections from the numbers as
#: given, in double, as MXNet does on the host (numerics.bias_correction), so they follow MXNet to float32
#: rounding: at most 6e-8 (Adam), 1.2e-7 (AdamW) and 3.6e-7 (AdaBelief) apart over every config, where the
#: float32 correction (from 0.999 rounded to float32: 1 - beta2 off by 1.3e-5 of itself) left 1.3e-6 and needed
#: an atol of 4.6e-7, 1.4e-7 and 1e-6 at an rtol of 1e-5. Traced hyperparameters (``"dynamic"``) are float32
#: by then, so :data:`TOL` holds there.
STATIC_TOL = dict(TOL)
STATIC_TOL.update({"adam": (1e-5, 1e-7), "adamw": (1e-5, 1e-7), "adabelief": (1e-5, 1e-7)})
