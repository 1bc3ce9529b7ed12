"""The study's workloads (:mod:`mxopt_jax.compare.problems`): data, splits, init, loss, metric, training."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sampling import default_run

import mxopt_jax
from mxopt_jax.compare import problems
from mxopt_jax.compare.problems import (
    DEFAULT,
    PROBLEMS,
    Problem,
    Splits,
    charlm,
    mnist1d,
    ratings,
    transformer,
)
from mxopt_jax.sparse import RowSparse, is_row_sparse

pytest.importorskip("sklearn")  # digits_mlp, logreg and autoencoder read scikit-learn's bundled data

NAMES = list(PROBLEMS)
SIZES = {
    "digits_mlp": (1077, 360, 360),
    "char_lm": tuple(n - charlm.CONTEXT for n in charlm.CORPUS_SPLIT),
    "recommender": ratings.RATINGS_SPLIT,
    "logreg": (341, 114, 114),
    "autoencoder": (1077, 360, 360),
    "mnist1d_mlp": (3500, 500, 1000),
    "mnist1d_cnn": (3500, 500, 1000),
    "mnist1d_bn": (3500, 500, 1000),
    "char_transformer": (
        charlm.CORPUS_SPLIT[0] - transformer.CONTEXT,
        (charlm.CORPUS_SPLIT[1] - 1) // transformer.CONTEXT,
        (charlm.CORPUS_SPLIT[2] - 1) // transformer.CONTEXT,
    ),
}


@functools.cache
def _problem(name: str) -> Problem:
    return PROBLEMS[name]()


@functools.cache
def _splits(name: str) -> Splits:
    return _problem(name).data()


def _rows(batch) -> list[bytes]:
    """One byte string per example: every leaf's row, concatenated."""
    leaves = [np.asarray(a).reshape(len(a), -1) for a in jax.tree.leaves(batch)]
    return [b"".join(leaf[i].tobytes() for leaf in leaves) for i in range(len(leaves[0]))]


_FAST_COMPILE = {"xla_backend_optimization_level": 0}


def _compiled(f, *args):
    """``jax.jit(f)`` compiled for ``args``' shapes at XLA's optimization level 0 (a few times less compile
    time; an init's random draws included: 1-2.5 s against 3.5-6 s): one executable, for several calls."""
    return jax.jit(f).lower(*args).compile(compiler_options=_FAST_COMPILE)


def _fast(f, *args):
    """``jax.jit(f)(*args)`` compiled at XLA's optimization level 0 (:func:`_compiled`)."""
    return _compiled(f, *args)(*args)


def test_registry() -> None:
    assert NAMES == [
        "digits_mlp",
        "char_lm",
        "recommender",
        "logreg",
        "autoencoder",
        "mnist1d_mlp",
        "mnist1d_cnn",
        "mnist1d_bn",
        "char_transformer",
    ]
    assert DEFAULT == ("digits_mlp", "char_lm", "recommender", "logreg", "autoencoder")
    assert set(problems.__all__) >= {"PROBLEMS", "DEFAULT", *NAMES}
    for name, factory in PROBLEMS.items():
        p = factory()
        assert isinstance(p, Problem) and p.name == name
        if name in DEFAULT:  # the quick preset ranks early progress
            assert p.quick_steps is not None and p.quick_steps < p.steps
        else:  # the heavier four train one budget in both presets (their evaluations cost as much as training)
            assert p.quick_steps is None
        # evaluation points of the quick preset: enough that times to target are not stuck at ratios
        # 1.5, 2, 3 of each other (the performance profile), few enough that the records stay small
        assert 20 <= (p.quick_steps or p.steps) // p.eval_every <= 50


@pytest.mark.parametrize("name", NAMES)
def test_description(name: str) -> None:
    p = _problem(name)
    d = p.description
    assert f"{p.steps} steps" in d and f"(quick: {p.quick_steps or p.steps}" in d
    assert f"batch {p.batch_size}" in d
    assert f"<= {p.target:g}" in d and "Why:" in d
    assert "parameters" in d


@pytest.mark.parametrize("name", NAMES)
def test_data_deterministic_disjoint_sized(name: str) -> None:
    a, b = _splits(name), _problem(name).data()
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    sizes = tuple(len(jax.tree.leaves(s)[0]) for s in a)
    assert sizes == SIZES[name]
    for s in a:  # every leaf of a split has the same number of examples
        assert {len(leaf) for leaf in jax.tree.leaves(s)} == {len(jax.tree.leaves(s)[0])}
    if name == "char_lm":  # windows may repeat as text; the parts of the corpus they come from may not
        text = charlm.corpus()
        ids = np.array([charlm.VOCAB.index(c) for c in text])
        start = 0
        for (x, y), n in zip(a, charlm.CORPUS_SPLIT, strict=True):
            np.testing.assert_array_equal(np.concatenate([x[0], y]), ids[start : start + n])
            start += n
        return
    if name == "char_transformer":  # char_lm's parts: every window of the training part, the others cut
        text = charlm.corpus()
        ids = np.array([charlm.VOCAB.index(c) for c in text])
        bounds = np.cumsum((0, *charlm.CORPUS_SPLIT))
        t = transformer.CONTEXT
        train, val, test = a
        np.testing.assert_array_equal(train[:, 0], ids[: len(train)])
        np.testing.assert_array_equal(train[-1], ids[bounds[1] - t - 1 : bounds[1]])
        for split, start in ((val, bounds[1]), (test, bounds[2])):
            assert split.shape[1] == t + 1
            np.testing.assert_array_equal(split[:, :-1].ravel(), ids[start : start + t * len(split)])
            np.testing.assert_array_equal(split[:, -1], split[1:, 0].tolist() + [ids[start + t * len(split)]])
        return
    if name == "recommender":  # distinct (user, item) pairs
        rows = [set(zip(s[0].tolist(), s[1].tolist(), strict=True)) for s in a]
    else:
        rows = [set(_rows(s)) for s in a]
    assert sum(len(r) for r in rows) == sum(sizes)  # no example repeats, within or across splits
    assert not (rows[0] & rows[1] or rows[0] & rows[2] or rows[1] & rows[2])


@pytest.mark.parametrize("name", NAMES)
def test_init_loss_metric(name: str) -> None:
    p, s = _problem(name), _splits(name)
    k0, k1 = jax.random.PRNGKey(0), jax.random.PRNGKey(1)
    init = _compiled(p.init, k0)  # jitted as the engine calls it (eagerly, each random op compiles alone)
    a, b, c = init(k0), init(k0), init(k1)
    assert jax.tree.structure(a) == jax.tree.structure(c)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(c), strict=True))
    for t in p.tables:
        assert t in a and a[t].ndim >= 1
    batch = jax.tree.map(lambda x: x[: p.batch_size], s.train)
    state = p.initial_state(k0)  # () without model state
    loss, new_state = _fast(p.train_loss, a, state, batch)
    assert math.isfinite(float(loss)) and jax.tree.structure(new_state) == jax.tree.structure(state)
    for split in (s.val, s.test):
        assert math.isfinite(float(_fast(p.evaluate, a, state, split)))


def _train(p: Problem, make_opt, lrs, seeds, steps: int, sparse: bool = False):
    """The engine's pattern: jit(vmap(run)) over (rate, seed), randint mini-batches, lax.scan over steps.

    Returns the training loss on the first 512 training examples at init and after ``steps``, per run.
    """
    train = jax.tree.map(jnp.asarray, _splits(p.name).train)
    fixed = jax.tree.map(lambda x: x[:512], train)
    n = len(jax.tree.leaves(train)[0])
    f = p.train_loss
    vg = (
        mxopt_jax.sparse.value_and_grad(f, tables=p.tables, has_aux=True)
        if sparse
        else jax.value_and_grad(f, has_aux=True)
    )

    def run(lr, seed):
        k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
        params, model = p.init(k_init), p.initial_state(k_init)
        opt = make_opt(lr)

        def step(carry, k):
            params, state, model = carry
            batch = jax.tree.map(lambda a: a[jax.random.randint(k, (p.batch_size,), 0, n)], train)
            (_, model), grads = vg(params, model, batch)
            updates, state = opt.update(grads, state, params)
            return (optax.apply_updates(params, updates), state, model), None

        carry = (params, opt.init(params), model)
        (final, _, final_model), _ = jax.lax.scan(step, carry, jax.random.split(k_data, steps))
        return f(params, model, fixed)[0], f(final, final_model, fixed)[0]

    lr, seed = np.meshgrid(np.asarray(lrs, np.float32), np.asarray(seeds, np.uint32), indexing="ij")
    args = (jnp.asarray(lr.ravel()), jnp.asarray(seed.ravel()))
    return _fast(jax.vmap(run), *args)


#: A rate at which Adam trains each problem well (see the problems' descriptions).
GOOD_LR = {
    "digits_mlp": 0.01,
    "char_lm": 0.01,
    "recommender": 0.03,
    "logreg": 0.01,
    "autoencoder": 0.003,
    "mnist1d_mlp": 0.01,
    "mnist1d_cnn": 0.01,
    "mnist1d_bn": 0.01,
    "char_transformer": 0.003,
}


# The default run trains an image classifier (digits_mlp) and the character-level language model (embeddings);
# the recommender trains lazily below, every workload's init, loss and metric run above, and -m slow trains
# the others as well (the model state's path through the engine is held to runs made alone in
# test_model_state.py).
@pytest.mark.parametrize("name", default_run(NAMES, ("digits_mlp", "char_lm")))
def test_adam_under_vmap_lowers_the_loss(name: str) -> None:
    p = _problem(name)
    lr = GOOD_LR[name]
    before, after = _train(p, lambda r: optax.adam(r), [lr, lr / 3], [0, 1], steps=20)
    assert np.all(np.isfinite(after)) and np.all(after < before), (before, after)


def test_recommender_sparse_gradient_and_lazy_adam_under_vmap() -> None:
    p = _problem("recommender")
    assert p.tables == ("users", "items", "user_bias", "item_bias")
    params = _fast(p.init, jax.random.PRNGKey(0))
    batch = jax.tree.map(lambda x: x[: p.batch_size], _splits(p.name).train)
    loss, grads = _fast(mxopt_jax.sparse.value_and_grad(p.loss, tables=p.tables), params, batch)
    dense_loss, dense = _fast(jax.value_and_grad(p.loss), params, batch)
    np.testing.assert_allclose(loss, dense_loss, rtol=1e-6)
    for t in p.tables:
        g = grads[t]
        assert isinstance(g, RowSparse) and is_row_sparse(g)
        assert g.indices.shape == (p.batch_size,)  # one row per id looked up in the batch
        assert g.shape == params[t].shape
        if t.startswith("user"):  # a mini-batch reads a small part of the user tables
            assert len(np.unique(g.indices)) < params[t].shape[0] / 3
        np.testing.assert_allclose(g.todense(), dense[t], rtol=1e-5, atol=1e-7)
    assert not is_row_sparse(grads["mu"])
    before, after = _train(
        p, lambda r: mxopt_jax.adam(learning_rate=r, lazy_update=True), [0.03, 0.01], [0, 1], 20, sparse=True
    )
    assert np.all(np.isfinite(after)) and np.all(after < before), (before, after)


def test_missing_sklearn_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # makes `import sklearn.datasets` fail
    with pytest.raises(ImportError, match=r"mxopt_jax\[study\]"):
        PROBLEMS["digits_mlp"]().data()
    charlm.corpus(100)  # the generated workloads need no scikit-learn


# --------------------------------------------------------------------------- MNIST-1D and the transformer
#: The paper's frozen data set (its repository's ``mnist1d_data.pkl``): a few of its values, which the package's
#: generator reproduces to float32 rounding.
_FROZEN = {
    "x[0, :6]": [-0.33200567, -0.47191037, -0.77869708, -1.00974083, -0.88235257, 0.10393481],
    "x_test[-1, -4:]": [0.44723289, 0.65987565, 0.87773435, 1.19315184],
    "y[:12]": [2, 6, 4, 5, 6, 6, 6, 0, 3, 1, 6, 9],
    "y_test[:12]": [2, 6, 3, 9, 4, 3, 1, 9, 5, 2, 0, 7],
    "x.sum()": -51.78746787509559,
    "abs(x_test).sum()": 29977.877540866408,
}


def _check_frozen(x, y, x_test, y_test) -> None:
    np.testing.assert_allclose(x[0, :6], _FROZEN["x[0, :6]"], atol=1e-6)
    np.testing.assert_allclose(x_test[-1, -4:], _FROZEN["x_test[-1, -4:]"], atol=1e-6)
    assert y[:12].tolist() == _FROZEN["y[:12]"] and y_test[:12].tolist() == _FROZEN["y_test[:12]"]
    np.testing.assert_allclose(x.astype(np.float64).sum(), _FROZEN["x.sum()"], atol=0.05)
    np.testing.assert_allclose(
        np.abs(x_test.astype(np.float64)).sum(), _FROZEN["abs(x_test).sum()"], rtol=1e-6
    )


def test_mnist1d_is_the_papers_data_and_its_split() -> None:
    x, y, x_test, y_test = mnist1d.mnist1d_raw()
    assert x.shape == (4000, 40) and x_test.shape == (1000, 40) and x.dtype == np.float32
    _check_frozen(x, y, x_test, y_test)
    train, val, test = _splits("mnist1d_cnn")
    np.testing.assert_array_equal(test[0], x_test)  # the paper's test split as it is
    assert np.bincount(val[1]).min() >= 49  # validation carved from its training set, stratified
    both = np.concatenate([train[0], val[0]])
    assert sorted(map(bytes, both)) == sorted(map(bytes, x))


@pytest.mark.slow  # builds the data set again (about 3 s)
def test_mnist1d_generated_without_network_and_global_rngs_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    import random
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("MNIST-1D tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    # the package seeds the legacy global generators (NumPy's and Python's): their states must come back
    np_before, py_before = np.random.get_state(), random.getstate()  # noqa: NPY002
    mnist1d._generated.cache_clear()
    try:
        fresh = mnist1d.mnist1d_raw()
    finally:
        mnist1d._generated.cache_clear()
    np_after = np.random.get_state()  # noqa: NPY002
    assert random.getstate() == py_before and np_after[2:] == np_before[2:]
    np.testing.assert_array_equal(np_after[1], np_before[1])
    _check_frozen(*fresh)
    for a, b in zip(fresh, mnist1d.mnist1d_raw(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_mnist1d_networks_are_the_papers() -> None:
    """Parameter counts of the paper's MLPBase (15,210) and ConvBase (5,210); the convolution equals XLA's."""
    assert mnist1d._count(mnist1d._mlp_init) == 15_210
    assert mnist1d._count(mnist1d._cnn_init) == 5_210
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(3, 19, 4)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(3, 4, 5)), jnp.float32)
    want = jax.lax.conv_general_dilated(x, w, (2,), [(1, 1)], dimension_numbers=("NWC", "WIO", "NWC"))
    np.testing.assert_allclose(mnist1d._conv1d(x, w, 2, 1), want, rtol=1e-5, atol=1e-5)
    assert mnist1d._conv_lengths() == [40, 19, 10, 5]


def test_mnist1d_bn_is_scale_invariant_and_keeps_its_statistics_in_the_state() -> None:
    """Scaling a convolution's weights leaves the loss unchanged (BatchNorm; what LARS/LAMB were made for);
    the training step moves the running statistics, the metric reads them."""
    p = _problem("mnist1d_bn")
    assert p.stateful
    key = jax.random.PRNGKey(0)
    params, state = _fast(p.init, key), p.initial_state(key)
    batch = jax.tree.map(lambda a: a[:64], _splits(p.name).train)
    train_loss = _compiled(p.train_loss, params, state, batch)
    loss, new = train_loss(params, state, batch)
    scaled = {**params, "conv2": 7.0 * params["conv2"]}
    np.testing.assert_allclose(train_loss(scaled, state, batch)[0], loss, rtol=1e-4)
    assert set(new) == {"bn1", "bn2", "bn3"} and not np.allclose(new["bn1"]["mean"], state["bn1"]["mean"])
    val = _splits(p.name).val
    evaluate = _compiled(p.evaluate, params, state, val)
    assert float(evaluate(params, state, val)) != float(evaluate(params, new, val))


def test_transformer_is_causal() -> None:
    """A character never sees the ones after it: changing the last input leaves the earlier scores alone."""
    p = _problem("char_transformer")
    params = _fast(p.init, jax.random.PRNGKey(0))
    x = jnp.asarray(_splits(p.name).val[:2, :-1])
    y = x.at[:, -1].set((x[:, -1] + 1) % len(charlm.VOCAB))
    logits = _compiled(transformer._logits, params, x)
    a, b = logits(params, x), logits(params, y)
    np.testing.assert_allclose(a[:, :-1], b[:, :-1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(a[:, -1], b[:, -1])
    assert transformer.n_params() == sum(int(np.prod(v.shape)) for v in jax.tree.leaves(params))


@pytest.mark.slow  # 6000 steps of the CNN (about 30 s of CPU)
def test_mnist1d_cnn_trained_as_the_paper_meets_its_table() -> None:
    """The paper's CNN trained as its notebook does (Adam at 1e-2, batch 100, 6000 steps) reaches the paper's
    accuracy within a few points (its table: 94 %; its notebook's saved run: 92.3 %)."""
    from mxopt_jax.compare import contenders, engine

    p = dataclasses.replace(_problem("mnist1d_cnn"), steps=6000, batch_size=100, eval_every=6000)
    adam = contenders.resolve(["optax.adam"])[0]
    _, _, test, alive, _ = engine.run_one(p, adam, 1e-2, seed=0)
    assert alive[-1] and 100.0 - test[-1] > 90.0, test
