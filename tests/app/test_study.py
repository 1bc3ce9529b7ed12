"""The study engine and orchestration: vmapped runs equal runs made alone, the protocol's guarantees end to end.

A tiny problem (a 2-layer MLP on generated data, and a row-sparse variant with an embedding table) keeps the
compiles short; the real workloads are checked in ``test_problems.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxopt_jax
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine, protocol
from mxopt_jax.compare.problems.base import Problem, Splits
from mxopt_jax.compare.study import identical_groups, study


def _mlp_problem(steps: int = 20, eval_every: int = 5, target: float = 0.5) -> Problem:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 1))
    x = rng.normal(size=(300, 6)).astype(np.float32)
    y = (np.tanh(x @ w) + 0.1 * rng.normal(size=(300, 1))).astype(np.float32)

    def data() -> Splits:
        return Splits((x[:200], y[:200]), (x[200:250], y[200:250]), (x[250:], y[250:]))

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "w1": jax.random.normal(k1, (6, 8)) / 3.0,
            "b1": jnp.zeros(8),
            "w2": jax.random.normal(k2, (8, 1)) / 3.0,
        }

    def predict(p, x):
        return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"]

    def loss(p, b):
        return jnp.mean((predict(p, b[0]) - b[1]) ** 2)

    return Problem(
        "tiny",
        "tiny MLP",
        "a tiny MLP on generated data",
        data,
        init,
        loss,
        loss,
        "mse",
        target,
        steps,
        16,
        eval_every,
    )


def _sparse_problem(steps: int = 10) -> Problem:
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 500, size=(400, 3)).astype(np.int32)
    y = rng.normal(size=(400,)).astype(np.float32)

    def data() -> Splits:
        return Splits((ids[:300], y[:300]), (ids[300:350], y[300:350]), (ids[350:], y[350:]))

    def init(key):
        k1, k2 = jax.random.split(key)
        return {
            "emb": 0.1 * jax.random.normal(k1, (500, 4)),
            "bias": jnp.zeros((500,)),
            "w": 0.1 * jax.random.normal(k2, (4,)),
        }

    def loss(p, b):
        e = mxopt_jax.sparse.lookup(p["emb"], b[0]).sum(axis=1)
        bias = mxopt_jax.sparse.lookup(p["bias"], b[0]).sum(axis=1)
        return jnp.mean((e @ p["w"] + bias - b[1]) ** 2)

    return Problem(
        "tiny_sparse",
        "tiny embedding",
        "a tiny embedding model",
        data,
        init,
        loss,
        loss,
        "mse",
        0.5,
        steps,
        8,
        5,
        tables=("emb", "bias"),
    )


@pytest.fixture(scope="module")
def tiny() -> Problem:
    return _mlp_problem()


# --------------------------------------------------------------------------- the engine equals runs made alone
@pytest.mark.parametrize(
    "names",
    [("adam", "ftml", "sgld", "groupadagrad"), pytest.param(("optax.adam", "lamb"), marks=pytest.mark.slow)],
)
def test_vmapped_runs_equal_runs_made_alone(tiny, names):
    cs = C.resolve(names)
    lrs = np.array([1e-3, 3e-2])
    seeds = [0, 3]
    group = engine.compile_group(tiny, cs, len(lrs), len(seeds))
    for i, c in enumerate(cs):
        rec = group.run(i, lrs, seeds)
        assert rec.val.shape == (2, 2, tiny.steps // tiny.eval_every)
        alone_fn = engine.single_run(tiny, c)
        for g, lr in enumerate(lrs):
            for s, seed in enumerate(seeds):
                alone = alone_fn(lr, seed)
                for got, want in zip((rec.train_loss, rec.val, rec.test), alone, strict=True):
                    np.testing.assert_allclose(
                        got[g, s], want, rtol=2e-5, atol=1e-7, err_msg=f"{c.name} lr={lr}"
                    )


def test_row_sparse_problem_runs_lazily_and_equals_runs_alone():
    prob = _sparse_problem()
    cs = [
        C.mxopt_contender("adam"),
        C.mxopt_contender("adagrad"),
        # GroupAdaGrad: the 2-D table by rows, the 1-D bias to AdaGrad (RowSparse gradients through optax's masks)
        C.mxopt_contender("groupadagrad"),
        C.OPTAX_BASELINES["optax.adam"],
    ]
    # mxopt_jax's Adam gets lazy_update=True on a problem with tables, and a RowSparse gradient
    tx = cs[0].factory(True)(0.1, jax.random.PRNGKey(0))
    params = prob.init(jax.random.PRNGKey(0))
    batch = jax.tree.map(lambda a: a[:8], prob.data().train)
    _, grads = engine._grad_fn(prob, cs[0])(params, batch)
    assert isinstance(grads["emb"], mxopt_jax.sparse.RowSparse) and grads["emb"].indices.size == 24
    updates, _ = tx.update(grads, tx.init(params), params)
    assert isinstance(updates["emb"], mxopt_jax.sparse.RowSparse)
    group = engine.compile_group(prob, cs, 2, 2)
    for i, c in enumerate(cs):
        rec = group.run(i, [0.01, 0.1], [0, 1])
        alone_fn = engine.single_run(prob, c)
        for g, lr in enumerate((0.01, 0.1)):
            alone = alone_fn(lr, 1)
            np.testing.assert_allclose(rec.val[g, 1], alone[1], rtol=2e-5, err_msg=c.name)


@pytest.mark.slow  # a few seconds of compiling: the default run keeps the equality tests above
def test_rates_and_seeds_are_inputs_not_constants(tiny):
    group = engine.compile_group(tiny, [C.mxopt_contender("adam")], 2, 2)
    a = group.run(0, [1e-3, 1e-2], [0, 1])
    b = group.run(0, [1e-2, 1e-3], [1, 0])  # the same runs, permuted: no recompile, same numbers
    np.testing.assert_array_equal(a.val, b.val[::-1, ::-1])
    with pytest.raises(ValueError, match="compiled for 2 rates x 2 seeds"):
        group.run(0, [1e-3, 1e-2, 1e-1], [0, 1])


@pytest.mark.slow  # a few seconds of compiling: the default run keeps the equality tests above
def test_seeds_change_init_and_batches_but_not_data(tiny):
    group = engine.compile_group(tiny, [C.mxopt_contender("sgd")], 1, 2)
    rec = group.run(0, [0.05], [0, 1])
    assert not np.array_equal(rec.train_loss[0, 0], rec.train_loss[0, 1])
    first, second = tiny.data(), tiny.data()
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True):
        np.testing.assert_array_equal(a, b)


def test_steps_to_target():
    val = np.array([[3.0, 0.4, 0.2], [np.nan, 0.1, 0.1], [2.0, 2.0, 2.0]])
    got = engine.steps_to_target(val, np.array([5, 10, 15]), 0.5)
    np.testing.assert_array_equal(got, [10.0, 10.0, np.inf])


# --------------------------------------------------------------------------- the study end to end
@pytest.fixture(scope="module")
def small_study(tiny):
    preset = dataclasses.replace(protocol.PRESETS["quick"], grid_points=3, seeds=2)
    slow = C.contender(
        "slowpoke", lambda lr: optax.sgd(lr), 1e-6, family="user"
    )  # optimum far above its grid
    return study(tiny, ["sgd", "ccsgd", "test", "adam", slow], preset, extend=1, check_batching="all")


def test_identical_updates_are_one_entry(small_study):
    assert small_study.identical["tiny"] == [["sgd", "ccsgd", "test"]]
    assert small_study.reported("tiny") == ["sgd", "adam", "slowpoke"]
    assert small_study.records["tiny"]["ccsgd"].note.startswith("identical to sgd")
    report = small_study.report()
    assert "sgd (= ccsgd, test)" in report


def test_edge_of_grid_extends_then_flags(small_study):
    sel = small_study.tuned["tiny"]["slowpoke"]
    rec = small_study.records["tiny"]["slowpoke"]
    assert len(rec.lrs) == 5  # the grid (3 rates) and one extension past its top edge, joined
    assert rec.lrs.max() == pytest.approx(1e-6 * 10**1.5)
    assert sel.on_edge == "high"  # still the largest rate tried: flagged
    adam = small_study.tuned["tiny"]["adam"]
    assert adam.on_edge is None or len(small_study.records["tiny"]["adam"].lrs) > 3


def test_one_shot_is_the_default_rate(small_study):
    for name, sel in small_study.one_shot["tiny"].items():
        assert sel.lr == pytest.approx(C.resolve([name])[0].default_lr if name != "slowpoke" else 1e-6)


def test_batching_check_recorded(small_study):
    assert set(small_study.batching["tiny"]) == {"sgd", "ccsgd", "test", "adam", "slowpoke"}
    assert all(d >= 0 for d in small_study.batching["tiny"].values())
    assert "Batching check" in small_study.report()


def test_selection_never_reads_test(tiny):
    def poisoned(p, b):
        return jnp.nan * jnp.sum(b[0]) + jnp.mean(b[1])

    preset = dataclasses.replace(protocol.PRESETS["quick"], grid_points=3, seeds=2)
    clean = study(tiny, ["adam"], preset, extend=0, check_batching="none")

    def metric(p, b):  # NaN on the test split only (it has 50 rows, validation has 50 too: tell by content)
        is_test = jnp.allclose(b[0][0], tiny.data().test[0][0])
        return jnp.where(is_test, jnp.nan, tiny.metric(p, b))

    other = study(dataclasses.replace(tiny, metric=metric), ["adam"], preset, extend=0, check_batching="none")
    a, b = clean.tuned["tiny"]["adam"], other.tuned["tiny"]["adam"]
    assert a.lr == b.lr and a.index == b.index
    np.testing.assert_array_equal(a.scores, b.scores)
    assert not np.isfinite(b.test_mean)  # the poisoned test split shows in the report, never in the choice


def test_study_writes_csv_json_and_report(small_study, tmp_path):
    written = small_study.write(tmp_path, plots=False)
    names = {p.name for p in written}
    assert {"report.txt", "runs.csv", "summary.csv", "study.json"} <= names
    doc = json.loads((tmp_path / "study.json").read_text())
    assert "Protocol" in doc["protocol"] and doc["records"]
    rows = (tmp_path / "runs.csv").read_text().splitlines()
    n_runs = sum(r.val.size for r in small_study.all_records())
    assert len(rows) == 1 + n_runs


def test_bad_arguments(tiny):
    with pytest.raises(ValueError, match="at least 2 seeds"):
        study(tiny, ["adam"], seeds=1)
    with pytest.raises(ValueError, match="unknown optimizer 'adamm'"):
        study(tiny, ["adamm"])
    with pytest.raises(ValueError, match="check_batching must be"):
        study(tiny, ["adam"], check_batching=True)
    with pytest.raises(ValueError, match="preset must be one of"):
        study(tiny, ["adam"], "medium")
    with pytest.raises(TypeError, match="factory"):
        C.contender("x", optax.adam(1e-3), 1e-3)
    with pytest.raises(ValueError, match="multiple of `eval_every`"):
        dataclasses.replace(tiny, steps=22)


@pytest.mark.slow  # a few seconds of compiling: the default run keeps the equality tests above
def test_sharded_over_two_devices_equals_one(tmp_path):
    """The (rate, seed) axis sharded over 2 host devices gives the same records as one device."""
    script = textwrap.dedent(
        f"""
        import sys, numpy as np, jax
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_study import _mlp_problem
        from mxopt_jax.compare import contenders as C, engine
        assert len(jax.devices()) == 2
        p = _mlp_problem()
        cs = [C.mxopt_contender("adam")]
        two = engine.compile_group(p, cs, 3, 3).run(0, [1e-3, 1e-2, 3e-2], [0, 1, 2])
        one = engine.compile_group(p, cs, 3, 3, devices=jax.devices()[:1]).run(0, [1e-3, 1e-2, 3e-2], [0, 1, 2])
        assert two.devices == 2 and one.devices == 1
        np.testing.assert_allclose(two.val, one.val, rtol=2e-5)
        print("ok")
        """
    )
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_identical_groups_needs_three_shared_rates():
    from mxopt_jax.compare.records import Records

    def rec(name, lrs, val):
        val = np.asarray(val, float)
        return Records(
            name, "p", np.asarray(lrs, float), np.array([0]), np.array([5]), val, val, val, val[..., 0]
        )

    a = rec("a", [1, 2, 3], np.ones((3, 1, 1)))
    b = rec("b", [2, 3, 4], np.ones((3, 1, 1)))
    c = rec("c", [1, 2, 3, 4], np.ones((4, 1, 1)))
    assert identical_groups({"a": a, "b": b}) == []  # two shared rates are not enough evidence
    assert identical_groups({"a": a, "c": c}) == [["a", "c"]]
    d = rec("d", [1, 2, 3], [[[1.0]], [[1.0]], [[1.0 + 1e-7]]])
    assert identical_groups({"a": a, "d": d}) == []


def _renamed(selections, problem):
    return {n: dataclasses.replace(sel, problem=problem) for n, sel in selections.items()}


def test_identical_on_one_problem_is_folded_only_there(small_study, tiny):
    """Contenders identical on one problem keep their own rows on another (and in the cross-problem tables)."""
    other = dataclasses.replace(tiny, name="other")
    s = dataclasses.replace(
        small_study,
        problems=[tiny, other],
        identical={"tiny": [["sgd", "ccsgd", "test"]], "other": [["sgd", "test"]]},
        tuned={"tiny": small_study.tuned["tiny"], "other": _renamed(small_study.tuned["tiny"], "other")},
        one_shot={
            "tiny": small_study.one_shot["tiny"],
            "other": _renamed(small_study.one_shot["tiny"], "other"),
        },
    )
    assert s.identical_everywhere() == {"sgd": ["test"]}
    report = s.report()
    tiny_part, other_part = report.split("== other", 1)
    assert "sgd (= ccsgd, test)" in tiny_part
    assert (
        "sgd (= test)" in other_part.split("== Overall")[0] and "ccsgd" in other_part.split("== Overall")[0]
    )
