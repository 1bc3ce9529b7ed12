"""Every optimizer on 8 simulated CPU devices versus one device; prints one JSON report on stdout.

``tests/interop/test_multidevice.py`` runs this file in a subprocess: the device count
(``--xla_force_host_platform_device_count=8``) must be set before JAX initialises, which a pytest worker that
already imported JAX cannot do. Also runnable by hand: ``python tests/_support/multidevice_script.py [names...]``.

For each optimizer the same 3 training steps (a separable quadratic loss over 8 examples, so every shard's
gradient is exact) run

* ``ref``: on one device (``jax.jit``);
* ``pmap``: ``jax.pmap`` data parallel, replicated parameters and state, one example per device, gradients
  averaged with ``lax.pmean``;
* ``jit_sharded``: ``jax.jit`` with parameters and optimizer state sharded by ``NamedSharding`` over a
  ``Mesh`` (ZeRO-style: each state entry sharded like its parameter); the output shardings are recorded;
* ``shard_map``: ``jax.shard_map`` with sharded parameters, state and data (``axis_name`` set for LARS, LAMB,
  LANS and GroupAdaGrad, whose norms / row means must cover the whole tensor);
* for those four also ``shard_map_2d`` (a 2x4 mesh, parameters sharded over both axes,
  ``axis_name=('a', 'b')``), ``shard_map_no_axis`` (the control: without ``axis_name`` the result must
  differ) and, with ``--extended``, ``pmap_sharded`` (``jax.pmap`` with each device holding a slice of every
  parameter).

Each entry reports the largest deviation from ``ref`` (parameters and state) in units of the tolerance
``atol + rtol * |ref|``; ``ratio <= 1`` means equal up to float32 rounding.
"""

from __future__ import annotations

import os
import sys

# 8 host devices; the CPU backend's optimisation passes off: this is a correctness check, and they would
# double the compile time that dominates this script (every program, the reference included, is built alike).
FLAGS = (
    "--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0 "
    "--xla_llvm_disable_expensive_passes=true"
)
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + FLAGS).strip()
os.environ["JAX_PLATFORMS"] = "cpu"

import json  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402

import compat  # noqa: E402
import interop_common  # noqa: E402 - this folder is on sys.path when run as a script
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import mxopt_jax  # noqa: E402

N = 8
STEPS = 3
RTOL, ATOL = 2e-5, 2e-6
AXIS_OPTIMIZERS = ("lars", "lamb", "lans", "groupadagrad")

# The interop tests' hyperparameters; Adam also clips (clipping must act per element on every shard).
KW = {
    **interop_common.KW,
    "sgld": dict(learning_rate=1e-3, seed=3),
    "adam": dict(learning_rate=0.05, wd=1e-3, clip_gradient=2.0),
}


def make(name: str, **extra) -> optax.GradientTransformation:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return mxopt_jax.OPTIMIZERS[name](**KW[name], **extra)


def problem(name: str, two_d: bool = False):
    """Parameters, their shardings (1-D mesh 'x' or 2-D mesh ('a', 'b')) and 8 examples per parameter."""
    rng = np.random.default_rng(0)
    both = ("a", "b")
    if name == "groupadagrad":  # 2-D parameters, columns sharded
        shapes = {"emb": (4, 16), "table": (3, 8)}
        col = both if two_d else "x"
        specs = {"emb": P(None, col), "table": P(None, col)}
    else:
        shapes = {"kernel": (16, 4), "bias": (16,)}
        if two_d:
            specs = {"kernel": P("a", "b"), "bias": P(both)}
        else:
            specs = {"kernel": P("x", None), "bias": P("x")}
    params = {k: jnp.asarray(rng.normal(size=s), jnp.float32) for k, s in shapes.items()}
    data = {
        "a": {k: jnp.asarray(rng.uniform(0.5, 1.5, size=(N, *s)), jnp.float32) for k, s in shapes.items()},
        "c": {k: jnp.asarray(rng.normal(size=(N, *s)), jnp.float32) for k, s in shapes.items()},
    }
    data_specs = {
        "a": {k: P(None, *v) for k, v in specs.items()},
        "c": {k: P(None, *v) for k, v in specs.items()},
    }
    return params, specs, data, data_specs


def loss(p, d):
    """Mean over the examples (axis 0 of the data) of 0.5 * a * (p - c)^2, summed over entries."""
    per = jax.tree.map(lambda x, a, c: jnp.sum(jnp.mean(0.5 * a * (x - c) ** 2, axis=0)), p, d["a"], d["c"])
    return sum(jax.tree.leaves(per))


def example_loss(p, d):
    """The loss of one example (pmap data parallel: one per device)."""
    per = jax.tree.map(lambda x, a, c: jnp.sum(0.5 * a * (x - c) ** 2), p, d["a"], d["c"])
    return sum(jax.tree.leaves(per))


def train(tx, loss_fn, reduce_grads=None):
    def run(p, s, d):
        def body(_, carry):
            p, s = carry
            g = jax.grad(loss_fn)(p, d)
            if reduce_grads is not None:
                g = reduce_grads(g)
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        return jax.lax.fori_loop(0, STEPS, body, (p, s))

    return run


def state_specs(state, params, pspecs):
    """Each state entry shaped like its parameter is sharded like it (ZeRO); the rest is replicated."""
    ptree = jax.tree.structure(params)

    def spec_for(leaf, pleaf, pspec):
        if leaf.shape == pleaf.shape:
            return pspec
        if leaf.ndim == pleaf.ndim:  # e.g. GroupAdaGrad's (rows, 1) history: keep the matching dims
            return P(*[s if leaf.shape[i] == pleaf.shape[i] else None for i, s in enumerate(pspec)])
        return P()

    out = {}
    for field in state._fields:
        sub = getattr(state, field)
        if sub is not None and jax.tree.structure(sub) == ptree:
            out[field] = jax.tree.map(spec_for, sub, params, pspecs)
        else:
            out[field] = jax.tree.map(lambda _: P(), sub)
    return type(state)(**out)


def leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def compare(got, ref) -> dict:
    g, r = leaves(got), leaves(ref)
    if len(g) != len(r) or any(a.shape != b.shape for a, b in zip(g, r, strict=True)):
        return {"ratio": float("inf"), "max_abs_err": float("inf"), "note": "structure or shape mismatch"}
    ratio = max(
        float(np.max(np.abs(a - b) / (ATOL + RTOL * np.abs(b)), initial=0.0))
        for a, b in zip(g, r, strict=True)
    )
    err = max(float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(g, r, strict=True))
    finite = all(bool(np.all(np.isfinite(a))) for a in g if np.issubdtype(a.dtype, np.floating))
    return {"ratio": ratio, "max_abs_err": err, "finite": finite}


def put(tree, specs, mesh):
    return jax.tree.map(lambda x, s: jax.device_put(x, NamedSharding(mesh, s)), tree, specs)


def split(x, spec, axis_size):
    """Stack the ``axis_size`` shards of ``x`` along the dimension ``spec`` shards (pmap with sharded params)."""
    dims = [i for i, s in enumerate(spec) if s is not None]
    if not dims:
        return jnp.broadcast_to(x, (axis_size, *x.shape))
    return jnp.stack(jnp.split(x, axis_size, axis=dims[0]))


def unsplit(x, spec):
    dims = [i for i, s in enumerate(spec) if s is not None]
    if not dims:
        return x[0]
    return jnp.concatenate(list(x), axis=dims[0])


def train_all(txs: dict, loss_fn, reduce_grads=None):
    """One program training every optimizer of ``txs`` on its own problem (one compile for all of them)."""
    fns = {n: train(t, loss_fn, reduce_grads) for n, t in txs.items()}

    def run(p, s, d):
        return {n: fns[n](p[n], s[n], d[n]) for n in fns}

    return run


def is_spec(x) -> bool:
    return isinstance(x, P)


def check_shardings(out, expect, mesh) -> list[str]:
    bad = []
    for (path, x), spec in zip(
        jax.tree_util.tree_leaves_with_path(out), jax.tree.leaves(expect, is_leaf=is_spec), strict=True
    ):
        if not x.sharding.is_equivalent_to(NamedSharding(mesh, spec), x.ndim):
            bad.append(f"{jax.tree_util.keystr(path)}: {x.sharding.spec} != {spec}")
    return bad


def run_all(names: list[str], mesh1: Mesh, mesh2: Mesh, extended: bool = False) -> tuple[dict, dict]:
    res: dict = {n: {} for n in names}
    timing: dict = {}
    clock = (time.perf_counter(), time.process_time())

    def lap(what):
        nonlocal clock
        now = (time.perf_counter(), time.process_time())
        timing[what] = {"wall": round(now[0] - clock[0], 2), "cpu": round(now[1] - clock[1], 2)}
        clock = now

    txs = {n: make(n) for n in names}
    probs = {n: problem(n) for n in names}
    params = {n: probs[n][0] for n in names}
    pspecs = {n: probs[n][1] for n in names}
    data = {n: probs[n][2] for n in names}
    dspecs = {n: probs[n][3] for n in names}
    state0 = {n: txs[n].init(params[n]) for n in names}
    sspecs = {n: state_specs(state0[n], params[n], pspecs[n]) for n in names}

    ref_fn = jax.jit(train_all(txs, loss))
    ref = jax.block_until_ready(ref_fn(params, state0, data))
    lap("ref")

    # (a) pmap data parallel: replicated params/state, one example per device, pmean'ed gradients.
    rep = jax.tree.map(lambda x: jnp.broadcast_to(x, (N, *x.shape)), (params, state0))
    pm = jax.pmap(train_all(txs, example_loss, lambda g: jax.lax.pmean(g, "batch")), axis_name="batch")(
        *rep, data
    )
    for n in names:
        res[n]["pmap"] = compare(jax.tree.map(lambda x: x[0], pm[n]), ref[n])
        res[n]["pmap"]["replicas_equal"] = all(
            bool(np.all(np.asarray(x) == np.asarray(x)[:1])) for x in jax.tree.leaves(pm[n])
        )
    lap("pmap")

    # (b) jax.jit with NamedSharding: state sharded like its parameter; shardings must survive the update.
    p_sh, s_sh = put(params, pspecs, mesh1), put(state0, sspecs, mesh1)
    d_rep = put(data, jax.tree.map(lambda _: P(), data), mesh1)
    out = jax.block_until_ready(ref_fn(p_sh, s_sh, d_rep))
    for n in names:
        r = res[n]["jit_sharded"] = compare(out[n], ref[n])
        bad = check_shardings(out[n], (pspecs[n], sspecs[n]), mesh1)
        r["shardings_ok"], r["sharding_mismatches"] = not bad, bad
        r["n_sharded_leaves"] = sum(
            1
            for sp in jax.tree.leaves((pspecs[n], sspecs[n]), is_leaf=is_spec)
            if any(e is not None for e in sp)
        )
    lap("jit_sharded")

    # (c) shard_map: sharded params, state and data; axis_name where a norm / mean spans the tensor.
    def shard_mapped(t, mesh, ps, ss, ds, check_vma=True):
        outs = {n: (ps[n], ss[n]) for n in t}
        f = compat.shard_map(
            train_all(t, loss), mesh=mesh, in_specs=(ps, ss, ds), out_specs=outs, check_vma=check_vma
        )
        return jax.jit(f)

    tx_ax = {n: make(n, axis_name="x") if n in AXIS_OPTIMIZERS else txs[n] for n in names}
    d_sh = put(data, dspecs, mesh1)
    sm = shard_mapped(tx_ax, mesh1, pspecs, sspecs, dspecs)(p_sh, s_sh, d_sh)
    for n in names:
        res[n]["shard_map"] = compare(sm[n], ref[n])
    lap("shard_map")

    ax = [n for n in names if n in AXIS_OPTIMIZERS]
    if not ax:
        return res, timing
    sub = lambda tree: {n: tree[n] for n in ax}  # noqa: E731

    # control: without axis_name the norms / means are per shard, so the result must differ
    ctl = shard_mapped(
        {n: txs[n] for n in ax}, mesh1, sub(pspecs), sub(sspecs), sub(dspecs), check_vma=False
    )(sub(p_sh), sub(s_sh), sub(d_sh))
    for n in ax:
        res[n]["shard_map_no_axis"] = compare(ctl[n], ref[n])
    lap("shard_map_no_axis")

    if extended:  # pmap with each device holding a slice of every parameter (and of its state and data)

        def sp(tree, specs):
            return jax.tree.map(lambda x, s: split(x, s, N), tree, specs)

        pms = jax.pmap(train_all({n: tx_ax[n] for n in ax}, loss), axis_name="x")(
            sp(sub(params), sub(pspecs)), sp(sub(state0), sub(sspecs)), sp(sub(data), sub(dspecs))
        )
        for n in ax:
            back = (jax.tree.map(unsplit, pms[n][0], pspecs[n]), jax.tree.map(unsplit, pms[n][1], sspecs[n]))
            res[n]["pmap_sharded"] = compare(back, ref[n])
        lap("pmap_sharded")

    # 2-D mesh, parameters sharded over both axes: axis_name=('a', 'b') (same values as above, other specs)
    pspecs2 = {n: problem(n, two_d=True)[1] for n in ax}
    dspecs2 = {n: problem(n, two_d=True)[3] for n in ax}
    sspecs2 = {n: state_specs(state0[n], params[n], pspecs2[n]) for n in ax}
    sm2 = shard_mapped({n: make(n, axis_name=("a", "b")) for n in ax}, mesh2, pspecs2, sspecs2, dspecs2)(
        put(sub(params), pspecs2, mesh2), put(sub(state0), sspecs2, mesh2), put(sub(data), dspecs2, mesh2)
    )
    for n in ax:
        res[n]["shard_map_2d"] = compare(sm2[n], ref[n])
    lap("shard_map_2d")
    return res, timing


def main(names: list[str], extended: bool = False) -> dict:
    devices = jax.devices()
    report = {"n_devices": len(devices), "platform": devices[0].platform, "rtol": RTOL, "atol": ATOL}
    if len(devices) < N:
        report["error"] = f"expected {N} devices, got {len(devices)}"
        return report
    mesh1 = Mesh(np.array(devices[:N]), ("x",))
    mesh2 = Mesh(np.array(devices[:N]).reshape(2, 4), ("a", "b"))
    t0 = time.perf_counter()
    try:
        report["results"], report["seconds"] = run_all(names, mesh1, mesh2, extended)
    except Exception:  # noqa: BLE001 - reported to the test, which fails showing the traceback
        report["error"] = traceback.format_exc()
    report["total_seconds"] = round(time.perf_counter() - t0, 2)
    return report


if __name__ == "__main__":
    args = sys.argv[1:]
    extended = "--extended" in args  # also pmap with sharded parameters (one more slow pmap compile)
    chosen = [a for a in args if a != "--extended"] or sorted(mxopt_jax.OPTIMIZERS)
    print(json.dumps(main(chosen, extended)))
