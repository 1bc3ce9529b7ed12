"""The study's workloads (:mod:`mxopt_jax.compare.problems`): data, splits, init, loss, metric, training."""

from __future__ import annotations

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
from mxopt_jax.compare.problems import PROBLEMS, Problem, Splits, charlm, ratings
from mxopt_jax.sparse import RowSparse, is_row_sparse

pytest.importorskip("sklearn")  # digits_mlp, logreg and autoencoder read scikit-learn's bundled data

NAMES = list(PROBLEMS)
SIZES = {
    "digits_mlp": (1077, 360, 360),
    "char_lm": tuple(n - charlm.CONTEXT for n in charlm.CORPUS_SPLIT),
    "recommender": ratings.RATINGS_SPLIT,
    "logreg": (341, 114, 114),
    "autoencoder": (1077, 360, 360),
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


def _fast(f, *args):
    """``jax.jit(f)(*args)`` compiled at XLA's optimization level 0 (a few times less compile time)."""
    return jax.jit(f).lower(*args).compile(compiler_options=_FAST_COMPILE)(*args)


def test_registry() -> None:
    assert NAMES == ["digits_mlp", "char_lm", "recommender", "logreg", "autoencoder"]
    assert set(problems.__all__) >= {"PROBLEMS", *NAMES}
    for name, factory in PROBLEMS.items():
        p = factory()
        assert isinstance(p, Problem) and p.name == name
        assert p.quick_steps is not None and p.quick_steps < p.steps
        # evaluation points of the quick preset: enough that times to target are not stuck at ratios
        # 1.5, 2, 3 of each other (the performance profile), few enough that the records stay small
        assert 20 <= p.quick_steps // p.eval_every <= 50


@pytest.mark.parametrize("name", NAMES)
def test_description(name: str) -> None:
    p = _problem(name)
    d = p.description
    assert f"{p.steps} steps" in d and f"(quick: {p.quick_steps})" in d
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
    init = jax.jit(p.init)  # as the engine calls it (eagerly, each random op would compile on its own)
    a, b, c = init(k0), init(k0), init(k1)
    assert jax.tree.structure(a) == jax.tree.structure(c)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(c), strict=True))
    for t in p.tables:
        assert t in a and a[t].ndim >= 1
    batch = jax.tree.map(lambda x: x[: p.batch_size], s.train)
    assert math.isfinite(float(_fast(p.loss, a, batch)))
    for split in (s.val, s.test):
        assert math.isfinite(float(_fast(p.metric, a, split)))


def _train(p: Problem, make_opt, lrs, seeds, steps: int, sparse: bool = False):
    """The engine's pattern: jit(vmap(run)) over (rate, seed), randint mini-batches, lax.scan over steps.

    Returns the training loss on the first 512 training examples at init and after ``steps``, per run.
    """
    train = jax.tree.map(jnp.asarray, _splits(p.name).train)
    fixed = jax.tree.map(lambda x: x[:512], train)
    n = len(jax.tree.leaves(train)[0])
    vg = mxopt_jax.sparse.value_and_grad(p.loss, tables=p.tables) if sparse else jax.value_and_grad(p.loss)

    def run(lr, seed):
        k_init, k_data = jax.random.split(jax.random.PRNGKey(seed))
        params = p.init(k_init)
        opt = make_opt(lr)

        def step(carry, k):
            params, state = carry
            batch = jax.tree.map(lambda a: a[jax.random.randint(k, (p.batch_size,), 0, n)], train)
            _, grads = vg(params, batch)
            updates, state = opt.update(grads, state, params)
            return (optax.apply_updates(params, updates), state), None

        (final, _), _ = jax.lax.scan(step, (params, opt.init(params)), jax.random.split(k_data, steps))
        return p.loss(params, fixed), p.loss(final, fixed)

    lr, seed = np.meshgrid(np.asarray(lrs, np.float32), np.asarray(seeds, np.uint32), indexing="ij")
    args = (jnp.asarray(lr.ravel()), jnp.asarray(seed.ravel()))
    return _fast(jax.vmap(run), *args)


#: A rate at which Adam trains each problem well (see the problems' descriptions).
GOOD_LR = {"digits_mlp": 0.01, "char_lm": 0.01, "recommender": 0.03, "logreg": 0.01, "autoencoder": 0.003}


# The default run trains an image classifier (digits_mlp) and the character-level language model (embeddings);
# the recommender trains lazily below, every workload's init, loss and metric run above, and -m slow trains
# the other three as well.
@pytest.mark.parametrize("name", default_run(NAMES, ("digits_mlp", "char_lm")))
def test_adam_under_vmap_lowers_the_loss(name: str) -> None:
    p = _problem(name)
    lr = GOOD_LR[name]
    before, after = _train(p, lambda r: optax.adam(r), [lr, lr / 3], [0, 1], steps=20)
    assert np.all(np.isfinite(after)) and np.all(after < before), (before, after)


def test_recommender_sparse_gradient_and_lazy_adam_under_vmap() -> None:
    p = _problem("recommender")
    assert p.tables == ("users", "items", "user_bias", "item_bias")
    params = p.init(jax.random.PRNGKey(0))
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
