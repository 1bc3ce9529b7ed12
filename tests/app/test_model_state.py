"""Model state through the engine (``Problem.init_state``): carried next to the parameters, never handed to the
optimizer, read by the metric; the vmapped program equals runs made alone; a non-finite state is a diverged
run; the target test honours which way the metric improves."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from tiny_problems import bn_problem, mlp_problem

import mxopt_jax
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine, preflight
from mxopt_jax.compare.direction import HIGHER


@pytest.fixture(scope="module")
def tiny_bn():
    return bn_problem()


def _data(p):
    return jax.tree.map(jnp.asarray, tuple(p.data()))


@pytest.fixture(scope="module")
def bn_group(tiny_bn):
    """One compiled program of the stateful tiny problem (NAG: a small program; the state's path is the same for
    every contender), shared by the tests below."""
    return engine.compile_group(tiny_bn, C.resolve(["nag"]), 4)


def test_vmapped_runs_equal_runs_made_alone(tiny_bn, bn_group):
    lrs, seeds = np.array([1e-3, 3e-2]), [0, 3]
    rec = bn_group.run(0, {"learning_rate": lrs}, seeds)
    assert np.all(np.isfinite(rec.val)) and rec.val.shape == (2, 2, tiny_bn.steps // tiny_bn.eval_every)
    alone_fn = engine.single_run(tiny_bn, bn_group.contenders[0])
    for g, lr in enumerate(lrs):
        for s, seed in enumerate(seeds):
            alone = alone_fn(lr, seed)
            for got, want in zip((rec.train_loss, rec.val, rec.test), alone[:3], strict=True):
                np.testing.assert_allclose(got[g, s], want, rtol=2e-5, atol=1e-7, err_msg=f"lr={lr}")


def test_state_is_carried_read_by_the_metric_and_never_given_to_the_optimizer(tiny_bn):
    """The optimizer's init, gradients and updates cover the parameters only; the state moves every step; the
    metric reads it (the same parameters with the initial state evaluate differently)."""
    seen = {}

    def spy(lr):
        inner = optax.sgd(lr)

        def init(params):
            seen["init"] = jax.tree.structure(params)
            return inner.init(params)

        def update(grads, state, params=None):
            seen["grads"] = jax.tree.structure(grads)
            return inner.update(grads, state, params)

        return optax.GradientTransformation(init, update)

    c = C.contender("spy", spy, 0.05)
    data = _data(tiny_bn)
    key = jax.random.PRNGKey(0)
    params = tiny_bn.init(key)
    jax.eval_shape(lambda k: engine.train_run(tiny_bn, c, {"learning_rate": 0.05}, k, data, 5), key)
    assert seen["init"] == seen["grads"] == jax.tree.structure(params)
    assert "mean" not in str(seen["grads"])

    state0 = tiny_bn.initial_state(key)
    _, state1 = jax.jit(tiny_bn.train_loss)(params, state0, data[0])
    assert not np.allclose(state1["mean"], state0["mean"])
    assert float(tiny_bn.evaluate(params, state0, data[1])) != float(
        tiny_bn.evaluate(params, state1, data[1])
    )


def test_the_state_starts_from_inits_key():
    """``init_state`` gets the key ``init`` gets (a Flax model's ``init`` can serve both)."""
    keys = {}
    base = bn_problem()

    def init_state(key):
        keys["state"] = key
        return base.init_state(key)

    def init(key):
        keys["params"] = key
        return base.init(key)

    p = dataclasses.replace(base, init=init, init_state=init_state)
    c = C.resolve(["sgd"])[0]
    jax.eval_shape(
        lambda k: engine.train_run(p, c, {"learning_rate": 0.1}, k, _data(p), 5), jax.random.PRNGKey(4)
    )
    assert keys["state"] is keys["params"]  # the same traced key


def test_a_non_finite_state_is_a_diverged_run():
    """A state that turns NaN (the parameters finite: the metric would still give a number) ends the run."""
    base = bn_problem()

    def loss(p, s, b):
        value, new = base.loss(p, s, b)
        return value, {**new, "var": jnp.where(s["var"][0] < 0.5, jnp.nan, new["var"])}

    def metric(p, s, b):
        return jnp.nan_to_num(base.metric(p, s, b), nan=1.0)

    p = dataclasses.replace(base, loss=loss, metric=metric)
    _, val, _, alive, _ = engine.run_one(p, C.resolve(["sgd"])[0], 0.1, 0)
    assert not alive[-1] and np.isnan(val[-1])


@pytest.mark.slow  # compiles two programs; the default run checks the row-sparse gradient with state below
def test_row_sparse_tables_with_state_run_lazily_and_equal_runs_alone():
    """A problem with both tables and state: lazy Adam gets row-sparse gradients through ``has_aux``."""
    p = bn_problem(tables=("w1",))
    c = C.resolve(["adam"])[0]
    assert c.row_sparse
    rec = engine.compile_group(p, [c], 2).run(0, {"learning_rate": [0.01]}, [0, 1])
    np.testing.assert_allclose(rec.val[0, 1], engine.run_one(p, c, 0.01, 1)[1], rtol=2e-5)


def test_preflight_traces_a_stateful_problem_and_names_a_loss_without_its_state(tiny_bn):
    cs = C.resolve(["adam", "lamb"])
    assert preflight.trace_all([tiny_bn], cs, lambda p: p.steps) == []
    bad = dataclasses.replace(tiny_bn, loss=lambda p, s, b: tiny_bn.loss(p, s, b)[0])
    failures = preflight.trace_all([bad], cs, lambda p: p.steps)
    assert len(failures) == 1 and failures[0].contender is None
    assert "must return `(loss, new_state)`" in failures[0].error


def test_stateless_problems_pass_through():
    p = mlp_problem()
    params = p.init(jax.random.PRNGKey(0))
    batch = p.data().train
    assert not p.stateful and p.initial_state(jax.random.PRNGKey(0)) == ()
    loss, state = p.train_loss(params, (), batch)
    assert state == () and float(loss) == float(p.loss(params, batch))
    assert float(p.evaluate(params, (), batch)) == float(p.metric(params, batch))


def test_init_state_must_be_callable(tiny_bn):
    with pytest.raises(TypeError, match="`init_state` must be None or callable"):
        dataclasses.replace(tiny_bn, init_state={"mean": 0.0})


def test_steps_to_target_honours_the_direction():
    val = np.array([[30.0, 60.0, 80.0], [np.nan, 90.0, 90.0], [10.0, 20.0, 40.0]])
    steps = np.array([5, 10, 15])
    np.testing.assert_array_equal(engine.steps_to_target(val, steps, 50.0, HIGHER), [10.0, 10.0, np.inf])
    np.testing.assert_array_equal(engine.steps_to_target(val, steps, 50.0), [5.0, np.inf, 5.0])
    with pytest.raises(TypeError, match="`direction` must be a Direction"):
        engine.steps_to_target(val, steps, 50.0, -1.0)


def test_records_count_steps_to_a_higher_is_better_target(bn_group):
    """The engine's records read ``problem.direction``: with ``better="higher"`` a target is reached from below (the
    same compiled program; only the records' reading of its metric changes)."""
    lower = bn_group.run(0, {"learning_rate": [0.03]}, [0, 1])
    target = float(np.median(lower.val))
    higher = dataclasses.replace(
        bn_group, problem=dataclasses.replace(bn_group.problem, better="higher", target=target)
    )
    rec = higher.run(0, {"learning_rate": [0.03]}, [0, 1])
    np.testing.assert_array_equal(rec.val, lower.val)
    np.testing.assert_array_equal(
        rec.steps_to_target, engine.steps_to_target(rec.val, rec.eval_steps, target, HIGHER)
    )
    assert not np.array_equal(rec.steps_to_target, engine.steps_to_target(rec.val, rec.eval_steps, target))


def test_sparse_value_and_grad_keeps_the_state_out_of_the_gradient():
    p = bn_problem(tables=("w1",))
    params, state = p.init(jax.random.PRNGKey(0)), p.initial_state(jax.random.PRNGKey(0))
    batch = jax.tree.map(lambda a: a[:16], p.data().train)
    (loss, new), grads = jax.jit(engine._grad_fn(p, C.resolve(["adam"])[0]))(params, state, batch)
    assert isinstance(grads["w1"], mxopt_jax.sparse.RowSparse) and set(new) == {"mean", "var"}
    assert set(grads) == set(params)


def test_the_study_fingerprint_holds_the_model_state_shapes():
    """A resumed study is refused when the model state changed shape (spec.json fingerprints it); a problem
    without state keeps the fingerprint it always had."""
    from mxopt_jax.compare.store import problem_fingerprint

    with_state = problem_fingerprint(bn_problem())
    assert with_state["state"] and all(":" in line for line in with_state["state"])
    assert "state" not in problem_fingerprint(mlp_problem())


def test_the_direction_check_evaluates_a_model_with_state():
    """The untrained model's metric of a problem with model state reads its initial state (the check ran the
    stateless metric call and failed on every stateful problem: found by the full preset)."""
    from mxopt_jax.compare.preflight import check_direction

    p = bn_problem()
    assert np.isfinite(check_direction(p))
    with pytest.raises(ValueError, match="already meets the target"):
        check_direction(dataclasses.replace(p, target=1e9))
