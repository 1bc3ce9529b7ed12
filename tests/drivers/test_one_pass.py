"""The one-pass (sibling) form of the dense and flat drivers equals the rule.

Rules with ``Rule.one_pass`` run in a sibling form when XLA:CPU's multi-output fusion is on (``XLA_FLAGS``):
the weight change is the same ``rule.step`` evaluated a second time on ``x * one`` (``one`` = 1.0 behind an
optimization barrier), so that XLA fuses the whole step into one loop. These tests run MXNet's golden
trajectories through that form: bit for bit equal to the rule in a process without the flag; with the flag
(a child process, since XLA reads ``XLA_FLAGS`` once) within the golden tolerances of MXNet and within float32
rounding of the rule.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import subprocess
import sys

import golden
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxopt_jax
from mxopt_jax._src import numerics
from mxopt_jax._src import rule as rule_mod
from mxopt_jax._src.registry import BY_NAME

FLAG = "--xla_backend_extra_options=" + numerics.MULTI_OUTPUT_FUSION
ONE_PASS = sorted(n for n in golden.OPTIMIZER_FILES if BY_NAME[n].rule.one_pass)


#: Grid groups of one optimizer the sibling form replays at most: LBSGD's 16 sampled grid groups (its four warmup
#: strategies with other epochs and scales: the same sibling code under the same static branches) were a quarter
#: of the flag's compiles; the first of each warmup strategy are kept.
MAX_GRID_GROUPS = 4


def _sampled_indices(name: str) -> list[int]:
    """Every other group of configs (and the defaults), as the golden tests' default run used to take them,
    without the float16 groups: the sibling form applies to 32/64-bit parameters without a master only, so
    their replays are the rule as written (tests/rules/test_golden.py replays them). Past
    :data:`MAX_GRID_GROUPS` grid groups, the first of each set of string options (LBSGD's warmup strategy)."""
    groups = golden.groups(name)
    picked = [
        k
        for k, g in enumerate(groups)
        if (k % 2 == 0 or g[0]["group"] == "defaults") and g[0]["dtype"] != "float16"
    ]
    grid = [k for k in picked if groups[k][0]["group"] == "grid"]
    if len(grid) > MAX_GRID_GROUPS:
        first: dict[tuple, int] = {}
        for k in grid:
            kw = groups[k][0]["kwargs"]
            first.setdefault(tuple(sorted((o, v) for o, v in kw.items() if isinstance(v, str))), k)
        keep = sorted(first.values())[:MAX_GRID_GROUPS]
        picked = [k for k in picked if k not in grid or k in keep]
    return picked


def _sampled_groups(name: str) -> list[list[dict]]:
    groups = golden.groups(name)
    return [groups[k] for k in _sampled_indices(name)]


def _split_groups(name: str) -> tuple[list[list[dict]], list[list[dict]]]:
    """The sampled groups as (the default run's share, the rest, run under ``slow``).

    The sibling form is opt-in (an XLA flag), so the default run takes one group per optimizer: the largest
    float32 group (the most configs of the rule's own options per compile). The defaults (Python-number
    hyperparameters) and the other groups (multipliers, schedulers, ``begin_num_update``) run under ``slow``.
    """
    sampled = _sampled_groups(name)
    f32 = [k for k, g in enumerate(sampled) if g[0]["group"] != "defaults"]
    largest = max(f32, key=lambda k: (len(sampled[k]), k))
    return [sampled[largest]], [g for k, g in enumerate(sampled) if k != largest]


def _replay(name: str, groups: list[list[dict]], forced: bool, monkeypatch) -> list:
    monkeypatch.setattr(rule_mod, "multi_output_fusion", lambda: forced)
    golden._trajectory_fn.cache_clear()
    try:
        return [golden.replay_many(name, g) for g in groups]
    finally:
        golden._trajectory_fn.cache_clear()


def test_one_pass_rules_are_the_measured_ones():
    # benchmarks/experiments/one_pass.py: these reach one loop (kernels 1, 20 or 28 B/param) in sibling form.
    want = {
        "sgd",
        "ccsgd",
        "nag",
        "signum",
        "lbsgd",
        "adagrad",
        "rmsprop",
        "adam",
        "adamw",
        "adamax",
        "nadam",
    }
    assert {n for n in mxopt_jax.OPTIMIZERS if BY_NAME[n].rule.one_pass} == want
    assert not any(BY_NAME[n].rule.uses_key for n in want)


def _assert_close(name: str, cfgs: list[dict], fast: list, ref: list | None) -> None:
    """The fast trajectory within float32 rounding of the rule's (when ``ref`` is given), and within the golden
    tolerance of MXNet's."""
    rtol, atol = golden.TOL[name]
    for k, (cfg, (w_fast, _)) in enumerate(zip(cfgs, fast, strict=True)):
        want, _ = golden.expected(name, cfg)
        for p, (f, e) in enumerate(zip(w_fast, want, strict=True)):
            f = np.asarray(f, np.float32).reshape(np.shape(e))
            where = f"{name} {cfg['id']} param {p}"
            if ref is not None:
                # LLVM contracts a*b+c into FMAs per loop; the sibling copy's loop may contract elsewhere (ulps)
                r = np.asarray(ref[k][0][p]).reshape(f.shape)
                np.testing.assert_allclose(f, r, rtol=1e-5, atol=1e-7, err_msg=where)
            if (
                cfg["dtype"] == "float32"
            ):  # 16-bit weights keep the rule as written (the golden tests check them)
                np.testing.assert_allclose(f, np.asarray(e), rtol=rtol, atol=atol, err_msg=where)


def _check_sibling_form(name: str, groups: list[list[dict]], monkeypatch, against_rule: bool = True) -> None:
    ref = _replay(name, groups, False, monkeypatch) if against_rule else [None] * len(groups)
    fast = _replay(name, groups, True, monkeypatch)
    for cfgs, group_fast, group_ref in zip(groups, fast, ref, strict=True):
        _assert_close(name, cfgs, group_fast, group_ref)


@pytest.mark.parametrize("name", ONE_PASS)
def test_sibling_form_matches_mxnet(name, monkeypatch):
    """The default run: the sibling form of one group per optimizer against MXNet's trajectories (the rule's own
    replay of the group is tests/rules/test_golden.py's; ``-m slow`` compares the two within rounding)."""
    _check_sibling_form(name, _split_groups(name)[0], monkeypatch, against_rule=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ONE_PASS)
def test_sibling_form_is_the_rule(name, monkeypatch):
    first, other = _split_groups(name)
    _check_sibling_form(name, first + other, monkeypatch)


def test_default_and_slow_share_the_sampled_groups():
    for name in ONE_PASS:
        first, other = _split_groups(name)
        assert len(first) == 1 and first[0][0]["group"] == "grid", name
        ids = sorted(c["id"] for g in first + other for c in g)
        assert ids == sorted(c["id"] for g in _sampled_groups(name) for c in g), name


def test_sibling_form_on_flat_params_is_the_rule(monkeypatch):
    params = {"a": jnp.linspace(-1.0, 1.0, 300), "b": jnp.linspace(0.5, 2.0, 40).reshape(8, 5)}
    grads = jax.tree.map(lambda x: jnp.cos(3.0 * x), params)

    def run(forced):
        monkeypatch.setattr(rule_mod, "multi_output_fusion", lambda: forced)
        tx = mxopt_jax.adam(learning_rate=0.01, wd=1e-3, clip_gradient=0.5, lr_mult={"a": 1.0, "b": 0.5})
        p = mxopt_jax.FlatParams.from_tree(params)
        g = p.like(grads)
        s = tx.init(p)

        @jax.jit
        def step(p, s):
            u, s = tx.update(g, s, p)
            return optax.apply_updates(p, u), s

        for _ in range(5):
            p, s = step(p, s)
        return p.to_tree(), s

    ref, fast = run(False), run(True)
    for a, b in zip(jax.tree.leaves(ref), jax.tree.leaves(fast), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-8)


_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import golden
from mxopt_jax._src import numerics
indices = json.loads(sys.argv[2])  # {name: [group index, ...]}
out = {"detected": numerics.multi_output_fusion(), "runs": {}}
for name, ks in indices.items():
    groups = [golden.groups(name)[k] for k in ks]
    out["runs"][name] = [[[w.tolist() for w in ws] for ws, _ in golden.replay_many(name, g)] for g in groups]
print(json.dumps(out))
"""


def _child(one_pass: str) -> dict:
    support = str(pathlib.Path(golden.__file__).parent)
    env = dict(os.environ, XLA_FLAGS=FLAG, MXOPT_JAX_ONE_PASS=one_pass)
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, support, json.dumps({n: _sampled_indices(n) for n in ONE_PASS})],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


_XFAIL_FLAG = {
    # Under the flag, AdamW's sibling form drifts 1.8e-5 (relative) from the flagged rule by step 12 of golden
    # config c0012 (within the golden tolerance of MXNet, outside float32 rounding): not yet understood.
    "adamw": "under multi-output fusion AdamW's sibling form drifts beyond float32 rounding (FUSION.md section 5)",
}


@functools.cache
def _flag_runs() -> tuple[dict, dict]:
    return _child(""), _child("0")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=_XFAIL_FLAG[n])) if n in _XFAIL_FLAG else n
        for n in ONE_PASS
    ],
)
def test_sibling_form_under_multi_output_fusion_is_the_rule(name):
    """With the flag, the sibling form against the rule as written (both compiled with the flag).

    The flag itself changes XLA's loops for the rule as written too; what this driver adds is compared here.
    """
    fast, ref = _flag_runs()
    assert fast["detected"] and not ref["detected"]
    for cfgs, group_fast, group_ref in zip(
        _sampled_groups(name), fast["runs"][name], ref["runs"][name], strict=True
    ):
        for cfg, ws_fast, ws_ref in zip(cfgs, group_fast, group_ref, strict=True):
            for p, (f, r) in enumerate(zip(ws_fast, ws_ref, strict=True)):
                np.testing.assert_allclose(
                    np.asarray(f, np.float32),
                    np.asarray(r, np.float32),
                    rtol=1e-5,
                    atol=1e-7,
                    err_msg=f"{name} {cfg['id']} param {p}",
                )
