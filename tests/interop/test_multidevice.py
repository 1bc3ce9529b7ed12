"""Multi-device: every optimizer gives the one-device result under pmap, sharded jit and shard_map.

The 8 CPU devices need ``XLA_FLAGS=--xla_force_host_platform_device_count=8`` before JAX starts, so the
comparison runs in one subprocess (``tests/_support/multidevice_script.py``, all optimizers in a handful of
programs to amortise compiles); a single test launches it (one launch even under pytest-xdist) and checks
its JSON report. The ``axis_name`` keyword's validation and errors are checked in-process.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from interop_common import NAMES

import mxopt_jax
from mxopt_jax import facade

SCRIPT = pathlib.Path(__file__).parents[1] / "_support" / "multidevice_script.py"
AXIS = ("lars", "lamb", "lans", "groupadagrad")
MODES = ("pmap", "jit_sharded", "shard_map")
AXIS_MODES = ("shard_map_2d",)


def _failures(report: dict, names: list[str] = NAMES, extended: bool = False) -> list[str]:
    out = []
    res = report["results"]
    assert sorted(res) == sorted(names), "the script must cover the optimizers asked for"
    axis_modes = AXIS_MODES + (("pmap_sharded",) if extended else ())
    for name in names:
        r = res[name]
        if "error" in r:
            out.append(f"{name}: {r['error']}")
            continue
        modes = MODES + (axis_modes if name in AXIS else ())
        for mode in modes:
            entry = r[mode]
            if name == "sgld" and mode == "shard_map":
                # documented limitation (docs/interop.md): every shard draws noise for its own block from the
                # same key, so the result is not the one-device one. Checked so a fix gets noticed.
                if entry["ratio"] <= 1.0 or not entry["finite"]:
                    out.append(f"sgld/shard_map: expected the documented per-shard noise, got {entry}")
                continue
            if not (entry["ratio"] <= 1.0 and entry["finite"]):
                out.append(f"{name}/{mode}: deviates from one device: {entry}")
        if not r["pmap"]["replicas_equal"]:
            out.append(f"{name}/pmap: replicas diverged")
        js = r["jit_sharded"]
        if not js["shardings_ok"]:
            out.append(
                f"{name}/jit_sharded: output shardings differ from the inputs': {js['sharding_mismatches']}"
            )
        if js["n_sharded_leaves"] < 2:
            out.append(f"{name}/jit_sharded: too few sharded leaves ({js['n_sharded_leaves']})")
        if name in AXIS and r["shard_map_no_axis"]["ratio"] < 100.0:
            out.append(
                f"{name}: without axis_name shard_map should give per-shard norms: {r['shard_map_no_axis']}"
            )
    return out


def _run_script(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=SCRIPT.parent.parent,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in report, report["error"]
    assert report["n_devices"] == 8 and report["platform"] == "cpu"
    return report


# The default run: the optimizers with an ``axis_name`` (whole-tensor norms and LARS's momentum), SGLD (its key)
# and one optimizer of each other kind of state (two moments, Ftrl's returned weights); every optimizer under
# ``slow``.
DEFAULT_RUN = (*AXIS, "sgld", "adam", "ftrl")


def test_optimizers_of_every_kind_match_one_device_on_8_devices():
    names = sorted(DEFAULT_RUN)
    failures = _failures(_run_script(*names), names)
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_optimizer_matches_one_device_on_8_devices():
    failures = _failures(_run_script())
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_pmap_with_sharded_parameters():
    """``jax.pmap`` where each device holds a slice of every parameter (``axis_name`` set): one more pmap."""
    report = _run_script("--extended", *AXIS)
    failures = _failures(report, list(AXIS), extended=True)
    assert not failures, "\n".join(failures)


def test_failure_detection_is_not_a_tautology():
    """The report checker flags deviations, diverged replicas, lost shardings and a missing psum."""
    good = {"ratio": 0.01, "finite": True}
    r = {
        "pmap": {**good, "replicas_equal": True},
        "jit_sharded": {**good, "shardings_ok": True, "sharding_mismatches": [], "n_sharded_leaves": 4},
        "shard_map": dict(good),
    }
    res = {n: json.loads(json.dumps(r)) for n in NAMES}
    for n in AXIS:
        res[n].update(shard_map_2d=good, shard_map_no_axis={"ratio": 1e4, "finite": True})
    res["sgld"]["shard_map"] = {"ratio": 1e4, "finite": True}
    assert _failures({"results": res}) == []
    res["adam"]["shard_map"]["ratio"] = 3.0
    res["lamb"]["shard_map_no_axis"]["ratio"] = 0.5
    res["sgd"]["jit_sharded"]["shardings_ok"] = False
    res["ftml"]["pmap"]["replicas_equal"] = False
    msgs = "\n".join(_failures({"results": res}))
    for frag in ("adam/shard_map", "lamb: without axis_name", "sgd/jit_sharded", "ftml/pmap: replicas"):
        assert frag in msgs


# --------------------------------------------------------------------------- the axis_name keyword
@pytest.mark.parametrize("name", AXIS)
def test_axis_name_is_a_keyword_only_argument(name):
    param = inspect.signature(mxopt_jax.OPTIMIZERS[name]).parameters["axis_name"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
    assert "axis_name" in mxopt_jax.OPTIMIZERS[name].__doc__


@pytest.mark.parametrize("name", AXIS)
@pytest.mark.parametrize("bad", [3, ["x"], ("x", 2), (), "", ("x", "x"), b"x"])
def test_axis_name_validation(name, bad):
    with pytest.raises(TypeError, match=r"`axis_name` must be None, a mesh axis name"):
        mxopt_jax.OPTIMIZERS[name](axis_name=bad)


@pytest.mark.parametrize("name", AXIS)
def test_axis_name_outside_a_mapped_context_is_a_clear_error(name):
    tx = mxopt_jax.OPTIMIZERS[name](axis_name="model")
    params = {"w": jnp.ones((2, 3))}
    state = tx.init(params)
    with pytest.raises(ValueError, match=r"`axis_name`='model': no such mesh axis is bound here"):
        jax.jit(tx.update)(params, state, params)


@pytest.mark.parametrize("name", AXIS)
def test_axis_name_none_or_valid_changes_nothing_on_one_device(name):
    """With a bound axis of size 1 (vmap), psum is the identity: same result as without axis_name."""
    params = {"w": jnp.linspace(-1.0, 1.0, 6).reshape(2, 3)}
    g = {"w": jnp.cos(jnp.arange(6.0)).reshape(2, 3)}
    plain = mxopt_jax.OPTIMIZERS[name](learning_rate=0.1)
    ax = mxopt_jax.OPTIMIZERS[name](learning_rate=0.1, axis_name="d")
    u_plain, _ = plain.update(g, plain.init(params), params)
    batched = jax.vmap(lambda gg, pp: ax.update(gg, ax.init(pp), pp)[0], axis_name="d")
    u_ax = batched(jax.tree.map(lambda x: x[None], g), jax.tree.map(lambda x: x[None], params))
    assert jnp.allclose(u_ax["w"][0], u_plain["w"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cls", ["LARS", "LAMB", "LANS", "GroupAdaGrad"])
def test_facade_picks_up_axis_name(cls):
    """The facade classes are generated from the functional signatures: ``axis_name`` is a keyword-only
    option there too, validated alike. The facade updates whole parameters outside any mapped context, so a
    set axis is refused at construction with an error that points to the functional API (it used to be
    accepted and to fail at the first update)."""
    klass = getattr(facade, cls)
    param = inspect.signature(klass).parameters["axis_name"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is None
    assert klass()._prep.opts["axis_name"] is None
    with pytest.raises(TypeError, match="`axis_name` must be None"):
        klass(axis_name=["a"])
    for axis in ("model", ("a", "b")):
        with pytest.raises(ValueError, match=r"`axis_name` is for the functional API.*shard_map"):
            klass(axis_name=axis)
