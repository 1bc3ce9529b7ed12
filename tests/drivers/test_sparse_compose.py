"""Row-sparse embeddings end to end: lookups by construction, one index rule, optax compositions, aggregation.

Includes the two failures of the issue as regression tests: a table looked up twice gave a wrong loss and
gradient; ``optax.clip_by_global_norm`` / ``optax.apply_if_finite`` around a lazy update crashed in JAX.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from compat import partition

import mxopt_jax
import mxopt_jax.sparse as sp
from mxopt_jax.sparse import RowSparse

RNG = np.random.default_rng(0)
TABLE = jnp.asarray(RNG.normal(size=(30, 4)), jnp.float32)
W = jnp.asarray(RNG.normal(size=(4, 3)), jnp.float32)


def skipgram(params, a, b):
    x, y = sp.lookup(params["E"], a), sp.lookup(params["E"], b)
    return -jnp.mean(jax.nn.log_sigmoid(jnp.sum(x * y, -1))) + jnp.mean((x @ params["W"]) ** 2)


def test_table_looked_up_twice_matches_dense_autodiff():
    """Regression: two lookups of one table with different ids (the old API returned the rows of the ids
    given to value_and_grad for both)."""
    params = {"E": TABLE, "W": W}
    a, b = jnp.array([[1, 2, 3], [3, 3, 29]]), jnp.array([[4, 1, 1], [0, 7, 9]])
    loss, g = jax.jit(sp.value_and_grad(skipgram, tables="E"))(params, a, b)
    dloss, dg = jax.jit(jax.value_and_grad(skipgram))(params, a, b)
    assert float(loss) == float(dloss)
    assert isinstance(g["E"], RowSparse) and g["E"].num_rows == a.size + b.size
    np.testing.assert_allclose(g["E"].todense(), dg["E"], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(g["W"], dg["W"])


def test_lookups_inside_vmap_and_scan_are_right():
    def loss(params, a, b):
        v = jax.vmap(lambda i: jnp.sum(sp.lookup(params["E"], i) ** 2))(a).sum()
        s = jax.lax.scan(lambda c, i: (c + jnp.prod(sp.lookup(params["E"], i)), None), 0.0, b)[0]
        return v + s + sp.lookup(params["E"], a).mean()

    params = {"E": TABLE}
    a, b = jnp.array([[1, 2], [2, 5]]), jnp.array([[4, 1], [0, 4]])
    loss_s, g = jax.jit(sp.value_and_grad(loss, tables=("E",)))(params, a, b)
    loss_d, dg = jax.jit(jax.value_and_grad(loss))(params, a, b)
    assert float(loss_s) == float(loss_d)
    np.testing.assert_allclose(g["E"].todense(), dg["E"], rtol=1e-6, atol=1e-6)


def test_one_percent_of_the_rows_looked_up_gives_one_percent_of_the_rows():
    """Regression: on JAX without the (private) trace context every lookup took the dense path, a gradient of
    every row. Row-sparse on every supported JAX: k is the number of ids, eagerly and under jit."""
    rows, n_ids = 100_000, 1_000
    table = jnp.zeros((rows, 2), jnp.float32)
    ids = jnp.asarray(np.random.default_rng(1).choice(rows, n_ids, replace=False), jnp.int32)

    def loss(params, ids):
        return jnp.sum(sp.lookup(params["E"], ids) ** 2 + 1.0)

    for grad_fn in (sp.value_and_grad(loss, "E"), jax.jit(sp.value_and_grad(loss, "E"))):
        _, g = grad_fn({"E": table}, ids)
        assert isinstance(g["E"], RowSparse) and g["E"].num_rows == n_ids == rows // 100
        np.testing.assert_array_equal(np.sort(np.asarray(g["E"].indices)), np.sort(np.asarray(ids)))


def test_nested_lookups_are_dense_and_top_level_ones_stay_sparse():
    """A lookup inside a vmap within `fun` adds the table's dense gradient (every row); the top-level ones
    keep one row per id. The nesting is told by the public trace-state hook."""

    def loss(params, a, b):
        nested = jax.vmap(lambda i: jnp.sum(sp.lookup(params["E"], i)))(b).sum()
        return nested + sp.lookup(params["E"], a).sum()

    a, b = jnp.array([1, 2, 3]), jnp.array([[4], [5]])
    _, g = jax.jit(sp.value_and_grad(loss, "E"))({"E": TABLE}, a, b)
    assert g["E"].num_rows == a.size + TABLE.shape[0]
    np.testing.assert_array_equal(g["E"].todense(), jax.grad(loss)({"E": TABLE}, a, b)["E"])
    _, g = jax.jit(sp.value_and_grad(lambda p, a: sp.lookup(p["E"], a).sum(), "E"))({"E": TABLE}, a)
    assert g["E"].num_rows == a.size


def test_without_the_trace_state_hook_value_and_grad_raises_naming_the_version(monkeypatch):
    """Never degrade silently to table-sized gradients: a JAX without the hook gets an error."""
    from mxopt_jax._src import embedding

    monkeypatch.setattr(embedding, "_opaque_trace_state", None)
    monkeypatch.setattr(embedding, "_probe_ok", None)
    with pytest.raises(RuntimeError, match=rf"get_opaque_trace_state.*JAX {jax.__version__}.*0\.4\.35"):
        sp.value_and_grad(skipgram, "E")({"E": TABLE, "W": W}, jnp.array([1]), jnp.array([2]))


def test_value_and_grad_and_a_lazy_update_inside_scan_inside_vmap_inside_jit():
    """The study engine's shape: value_and_grad + a lazy mxopt_jax optimizer in a lax.scan over steps, in a
    jax.vmap over learning rates and seeds, in jax.jit. Row-sparse inside (k = ids per step, not the table's
    rows) and equal to the unbatched runs."""
    rows, n_ids, steps = 50, 6, 4
    W0 = jnp.asarray(RNG.normal(size=(4, 1)), jnp.float32)

    def loss(params, ids, y):
        e = sp.lookup(params["E"], ids)
        return jnp.mean((e @ params["W"] - y) ** 2)

    grad_fn = sp.value_and_grad(loss, tables="E")
    seen_k = []

    def run(lr, seed):
        tx = optax.inject_hyperparams(mxopt_jax.adam)(learning_rate=lr, lazy_update=True)
        params = {"E": TABLE[:rows], "W": W0}
        key = jax.random.PRNGKey(seed)

        def step(carry, key):
            params, state = carry
            k1, k2 = jax.random.split(key)
            ids = jax.random.randint(k1, (n_ids,), 0, rows)
            y = jax.random.normal(k2, (n_ids, 1))
            value, grads = grad_fn(params, ids, y)
            seen_k.append(grads["E"].num_rows)
            assert isinstance(grads["E"], RowSparse)
            updates, state = tx.update(grads, state, params)
            assert isinstance(updates["E"], RowSparse)
            return (optax.apply_updates(params, updates), state), value

        (params, _), losses = jax.lax.scan(step, (params, tx.init(params)), jax.random.split(key, steps))
        return params, losses

    lrs = jnp.array([0.01, 0.1, 0.3])
    seeds = jnp.array([0, 1])
    batched = jax.jit(jax.vmap(jax.vmap(run, in_axes=(None, 0)), in_axes=(0, None)))(lrs, seeds)
    assert seen_k and set(seen_k) == {n_ids}
    for i, lr in enumerate(lrs):
        for j, seed in enumerate(seeds):
            params, losses = jax.jit(run)(lr, seed)
            np.testing.assert_allclose(batched[1][i, j], losses, rtol=1e-6, atol=1e-7)
            for name in ("E", "W"):
                np.testing.assert_allclose(batched[0][name][i, j], params[name], rtol=1e-6, atol=1e-7)
    assert not np.allclose(batched[0]["E"][0, 0], batched[0]["E"][2, 0])  # the learning rates mattered


def test_dense_use_of_a_named_table_is_a_clear_error():
    def tied(params, a):
        return jnp.sum(sp.lookup(params["E"], a) @ params["E"].T)

    with pytest.raises(TypeError, match=r"table 'E' is named in `tables`.*leave 'E' out of `tables`"):
        sp.value_and_grad(tied, tables="E")({"E": TABLE}, jnp.array([1]))
    # left out of `tables`: the right dense gradient
    g = jax.grad(tied)({"E": TABLE}, jnp.array([1]))
    assert g["E"].shape == TABLE.shape


def test_value_and_grad_arguments_are_checked():
    with pytest.raises(ValueError, match=r"`tables` names \['X'\], which are not parameters"):
        sp.value_and_grad(skipgram, tables="X")({"E": TABLE, "W": W}, jnp.array([1]), jnp.array([2]))
    with pytest.raises(TypeError, match="`tables` must name at least one parameter"):
        sp.value_and_grad(skipgram, tables=())
    with pytest.raises(TypeError, match="`ids` must be an integer array"):
        sp.value_and_grad(skipgram, tables="E")({"E": TABLE, "W": W}, jnp.array([1.0]), jnp.array([2]))


def test_has_aux_and_unused_table():
    def f(params, a):
        return sp.lookup(params["E"], a).sum(), {"n": a.size}

    (loss, aux), g = sp.value_and_grad(f, tables=("E", "F"), has_aux=True)(
        {"E": TABLE, "F": TABLE}, jnp.array([2])
    )
    assert aux == {"n": 1} and g["F"].num_rows == 0 and float(jnp.abs(g["F"].todense()).sum()) == 0.0


# --------------------------------------------------------------------------- the index rule
def test_index_rule_concrete_ids_raise_everywhere():
    for call in (
        lambda: sp.lookup(TABLE, jnp.array([30])),
        lambda: sp.lookup(TABLE, jnp.array([-1])),
        lambda: sp.value_and_grad(lambda p, a: sp.lookup(p["E"], a).sum(), "E")(
            {"E": TABLE}, jnp.array([-1])
        ),
        lambda: RowSparse(jnp.array([30]), jnp.ones((1, 4)), (30, 4)),
    ):
        with pytest.raises(ValueError, match=r"must lie in \[0, 30\)"):
            call()


def test_index_rule_under_jit_ignores_out_of_range_ids_everywhere():
    """Under jit: lookup reads zeros, the gradient row is dropped, todense/apply_updates/lazy ignore it."""
    ids = jnp.array([-1, 30, 3, -30])

    @jax.jit
    def everything(table, ids):
        rows = sp.lookup(table, ids)
        _, g = sp.value_and_grad(lambda p, i: jnp.sum(sp.lookup(p["E"], i) * 2.0), "E")({"E": table}, ids)
        dense = jax.grad(lambda t: jnp.sum(sp.lookup(t, ids) * 2.0))(table)
        applied = optax.apply_updates({"E": table}, {"E": g["E"]})["E"]
        tx = mxopt_jax.sgd(learning_rate=1.0, lazy_update=True)
        u, _ = tx.update(g, tx.init({"E": table}), {"E": table})
        return rows, g["E"].todense(), dense, applied, optax.apply_updates({"E": table}, u)["E"]

    rows, todense, dense, applied, lazy = everything(TABLE, ids)
    np.testing.assert_array_equal(np.asarray(rows)[[0, 1, 3]], 0.0)
    np.testing.assert_array_equal(rows[2], TABLE[3])
    expected = np.zeros((30, 4), np.float32)
    expected[3] = 2.0
    np.testing.assert_array_equal(todense, expected)
    np.testing.assert_array_equal(dense, expected)
    np.testing.assert_array_equal(applied, TABLE + expected)
    np.testing.assert_array_equal(lazy, TABLE - expected)


# --------------------------------------------------------------------------- optax compositions
G = RowSparse(jnp.array([1, 5, 5, 9]), jnp.asarray(RNG.normal(size=(4, 4)), jnp.float32), (30, 4))


def _run(tx, grads, n=1, params=None):
    params = {"t": TABLE} if params is None else params
    state = tx.init(params)
    step = jax.jit(tx.update)
    for g in grads if isinstance(grads, list) else [grads] * n:
        u, state = step({"t": g}, state, params)
        params = optax.apply_updates(params, u)
    return params["t"]


def test_optax_clip_by_global_norm_fails_loudly_on_the_integer_indices():
    """Regression: it must never run silently (it would count the row indices in the norm). The int32 indices
    of the RowSparse make optax's select fail, inside optax, where no mxopt_jax code runs: JAX's own words,
    as docs/sparse.md quotes them; the counterpart in mxopt_jax.sparse is the remedy."""
    for tx in (
        optax.chain(optax.clip_by_global_norm(1.0), mxopt_jax.adam(lazy_update=True)),
        optax.chain(mxopt_jax.adam(lazy_update=True), optax.clip_by_global_norm(1.0)),
    ):
        with pytest.raises(TypeError, match=r"lax.select requires arguments to have the same dtypes.*int32"):
            _run(tx, G)


@pytest.mark.parametrize(
    "foreign",
    [optax.adam(0.1), optax.trace(0.9), optax.add_decayed_weights(1e-4)],
    ids=["optax.adam", "optax.trace", "optax.add_decayed_weights"],
)
def test_optax_transforms_with_dense_state_fail_on_the_tree_structure(foreign):
    """What docs/sparse.md says of optax's transforms whose state (or the parameters) is dense: JAX's
    tree-structure ValueError (its words differ by JAX version), inside optax."""
    tx = optax.chain(foreign, mxopt_jax.sgd(learning_rate=0.1, lazy_update=True))
    with pytest.raises(ValueError, match=r"pytree structure error|Custom node type mismatch"):
        _run(tx, G)


def _mapped(where):
    """The error for a RowSparse whose indices an optax transform turned into floats, raised at ``where``."""
    return (
        rf"{where}.* has float32 row indices: an optax transform mapped over them.*"
        r"mxopt_jax.sparse.clip_by_global_norm for optax.clip_by_global_norm, mxopt_jax.sparse.MultiSteps for "
        r"optax.MultiSteps, mxopt_jax's optimizers \(lazy_update=True for a lazy update\) for optax's"
    )


def test_element_wise_optax_transform_with_a_float_factor_names_the_counterparts():
    """Every place mxopt_jax reads a RowSparse that an optax transform turned into floats says so and names
    the row-sparse-aware counterparts: the lazy update, the sparse clip and MultiSteps, apply_updates,
    todense."""
    for foreign in (optax.scale(0.5), optax.clip(0.5)):
        tx = optax.chain(foreign, mxopt_jax.adam(lazy_update=True))
        with pytest.raises(TypeError, match=_mapped(r"mxopt_jax.adam: the RowSparse gradient for 't'")):
            _run(tx, G)
    tx = optax.chain(optax.scale(0.5), sp.clip_by_global_norm(1.0), mxopt_jax.adam(lazy_update=True))
    with pytest.raises(
        TypeError, match=_mapped("mxopt_jax.sparse.clip_by_global_norm: a RowSparse gradient")
    ):
        _run(tx, G)
    tx = optax.chain(optax.scale(0.5), sp.MultiSteps(mxopt_jax.adam(lazy_update=True), 2, tables="t"))
    with pytest.raises(
        TypeError, match=_mapped("mxopt_jax.sparse.MultiSteps: the RowSparse gradient at 't'")
    ):
        _run(tx, G)
    # after the lazy update, or an optax optimizer on the gradient: optax.apply_updates refuses the float indices
    for tx in (optax.chain(mxopt_jax.adam(lazy_update=True), optax.scale(-1.0)), optax.sgd(0.1)):
        with pytest.raises(TypeError, match=_mapped(r"optax.apply_updates \(dense \+ RowSparse\)")):
            _run(tx, G)
    floated = jax.tree.map(lambda x: x * 0.5, G)
    with pytest.raises(TypeError, match=_mapped(r"RowSparse.todense\(\)")):
        floated.todense()


def test_sparse_clip_by_global_norm_equals_optax_on_the_dense_gradient():
    sgd = mxopt_jax.sgd(learning_rate=1.0)  # standard: the dense update of what clipping gives
    for max_norm in (0.5, 100.0):
        got = _run(optax.chain(sp.clip_by_global_norm(max_norm), sgd), G)
        want = _run(optax.chain(optax.clip_by_global_norm(max_norm), sgd), G.todense())
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # in front of a lazy update: the lazy rule on the clipped rows
    lazy = _run(optax.chain(sp.clip_by_global_norm(0.5), mxopt_jax.adam(lazy_update=True)), G)
    norm = float(jnp.linalg.norm(G.todense()))
    scaled = RowSparse(G.indices, G.values * (0.5 / norm), G.shape)
    np.testing.assert_allclose(lazy, _run(mxopt_jax.adam(lazy_update=True), scaled), rtol=1e-6, atol=1e-7)


def test_optax_apply_if_finite_around_a_lazy_update():
    """Regression: it died in lax.cond (RowSparse metadata differed between the branches)."""
    lazy = mxopt_jax.adam(learning_rate=0.1, lazy_update=True)
    got = _run(optax.apply_if_finite(lazy, 3), G, n=2)
    np.testing.assert_array_equal(got, _run(lazy, G, n=2))
    bad = RowSparse(G.indices, G.values.at[0, 0].set(jnp.nan), G.shape)
    np.testing.assert_array_equal(_run(optax.apply_if_finite(lazy, 3), [G, bad]), _run(lazy, G))


def test_optax_multisteps_fails_loudly():
    """Its dense accumulators do not match a RowSparse gradient's structure: an error, never a silent run."""
    with pytest.raises((ValueError, TypeError), match=r"(?i)type|structure"):
        _run(optax.MultiSteps(mxopt_jax.adam(lazy_update=True), 2), G)


@pytest.mark.parametrize("lazy", [True, False])
def test_sparse_multisteps_equals_one_step_on_the_mean_gradient(lazy):
    g2 = RowSparse(jnp.array([9, 0, 2, 2]), jnp.asarray(RNG.normal(size=(4, 4)), jnp.float32), (30, 4))
    tx = mxopt_jax.adam(learning_rate=0.1, lazy_update=lazy)
    got = _run(sp.MultiSteps(tx, 2, tables="t"), [G, g2])
    mean = RowSparse(
        jnp.concatenate([G.indices, g2.indices]), jnp.concatenate([G.values, g2.values]) / 2, G.shape
    )
    want = _run(tx, mean)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    if not lazy:  # standard: optax.MultiSteps over the dense gradients
        dense = _run(optax.MultiSteps(tx, 2), [G.todense(), g2.todense()])
        np.testing.assert_allclose(got, dense, rtol=1e-6, atol=1e-7)
    # in between: zero updates (the first call alone leaves the table as it was)
    np.testing.assert_array_equal(_run(sp.MultiSteps(tx, 2, tables="t"), [G]), TABLE)


def test_sparse_multisteps_dense_leaves_follow_optax():
    params = {"t": TABLE, "w": W}
    tx = mxopt_jax.adam(learning_rate=0.1, lazy_update=True)
    gw = [jnp.ones_like(W), -2 * jnp.ones_like(W)]
    ms = sp.MultiSteps(tx, 2, tables=["t"])
    state = ms.init(params)
    p = params
    for g in gw:
        u, state = jax.jit(ms.update)({"t": G, "w": g}, state, p)
        p = optax.apply_updates(p, u)
    ref = optax.MultiSteps(mxopt_jax.adam(learning_rate=0.1), 2)
    s, q = ref.init({"w": W}), {"w": W}
    for g in gw:
        u, s = ref.update({"w": g}, s, q)
        q = optax.apply_updates(q, u)
    np.testing.assert_allclose(p["w"], q["w"], rtol=1e-6, atol=1e-7)
    with pytest.raises(TypeError, match=r"gradient at 'w' is a RowSparse; name it in `tables`"):
        ms.update({"t": G, "w": RowSparse(jnp.array([0]), jnp.ones((1, 3)), (4, 3))}, state, p)


@pytest.mark.parametrize("wrap", ["inject_hyperparams", "masked", "partition"])
def test_wrappers_pass_lazy_updates_through(wrap):
    want = _run(mxopt_jax.adam(learning_rate=0.1, lazy_update=True), G, n=2)
    if wrap == "inject_hyperparams":
        tx = optax.inject_hyperparams(mxopt_jax.adam)(learning_rate=0.1, lazy_update=True)
        # inject_hyperparams passes every rate as a float32 array: the bias corrections come from the float32
        # betas, where Python numbers give them in double as MXNet does (numerics.bias_correction); the same
        # float32 numbers passed to the plain optimizer give the same updates, bit for bit
        betas = {"beta1": jnp.float32(0.9), "beta2": jnp.float32(0.999)}
        want = _run(mxopt_jax.adam(learning_rate=0.1, lazy_update=True, **betas), G, n=2)
    elif wrap == "masked":
        tx = optax.masked(mxopt_jax.adam(learning_rate=0.1, lazy_update=True), {"t": True})
    else:
        tx = partition({"a": mxopt_jax.adam(learning_rate=0.1, lazy_update=True)}, {"t": "a"})
    np.testing.assert_array_equal(_run(tx, G, n=2), want)


# --------------------------------------------------------------------------- aggregate_num with row-sparse leaves
@pytest.mark.parametrize(
    "name, kw",
    [
        ("adam", {"lazy_update": True}),  # lazy
        pytest.param("ftrl", {"lazy_update": True}, marks=pytest.mark.slow),  # lazy too: under slow
        ("rmsprop", {}),  # standard (densified)
    ],
)
def test_aggregate_num_lets_row_sparse_leaves_through(name, kw):
    """MXNet's aggregated path updates the sparse entries unaggregated (its tests: Ftrl, RMSProp, Adam)."""
    params = {"E": TABLE, "W": W, "b": jnp.zeros(3)}
    grads = {"E": G, "W": jnp.ones_like(W), "b": jnp.ones(3)}
    agg, one = mxopt_jax.OPTIMIZERS[name](aggregate_num=2, **kw), mxopt_jax.OPTIMIZERS[name](**kw)
    sa, s1, pa, p1 = agg.init(params), one.init(params), params, params
    for _ in range(2):
        ua, sa = jax.jit(agg.update)(grads, sa, pa)
        u1, s1 = one.update(grads, s1, p1)
        assert isinstance(ua["E"], RowSparse) == isinstance(u1["E"], RowSparse)
        pa, p1 = optax.apply_updates(pa, ua), optax.apply_updates(p1, u1)
    for k in params:
        np.testing.assert_allclose(pa[k], p1[k], rtol=1e-6, atol=1e-7)
    # the facade's list call does the same
    upd_a = mxopt_jax.get_updater(mxopt_jax.create(name, aggregate_num=4, **kw))
    upd_1 = mxopt_jax.get_updater(mxopt_jax.create(name, **kw))
    ws, gs = [params["E"], params["W"]], [grads["E"], grads["W"]]
    got = upd_a([0, 1], gs, ws)
    for i, (g, w, x) in enumerate(zip(gs, ws, got, strict=True)):
        np.testing.assert_allclose(x, upd_1(i, g, w), rtol=1e-6, atol=1e-7)
