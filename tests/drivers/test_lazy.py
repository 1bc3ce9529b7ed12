"""Row-sparse gradients: lazy and standard updates against MXNet 2.0.0b1, and their properties.

Golden data: ``tests/golden/sparse.npz`` and ``tests/golden/sparse_embedding.npz`` from
``tools/make_sparse_golden.py`` (MXNet ``row_sparse`` gradients, lazy and standard, with repeated and
zero-valued rows; an embedding model trained with lazy Adam).
"""

from __future__ import annotations

import functools
import json
import pathlib
import warnings

import chex
import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from host_random import normal
from sampling import default_run, share

import mxopt_jax
from mxopt_jax import lr_scheduler as lrs
from mxopt_jax.sparse import RowSparse

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
RTOL, ATOL = 1e-4, 1e-5  # MXNet's own sparse SGD/AdaGrad/Ftrl tolerances; Adam's atol is 2e-5
ATOL_BY_OPT = {"adam": 2e-5}


@functools.cache
def golden() -> tuple[dict, dict]:
    with np.load(GOLDEN / "sparse.npz") as z:
        data = {k: z[k] for k in z.files}
    return json.loads(str(data.pop("meta"))), data


def configs() -> list[dict]:
    return golden()[0]["configs"]


def _kwargs(cfg: dict) -> dict:
    kw = dict(cfg["kwargs"])
    if cfg["optimizer"] == "ftrl":  # MXNet: a row_sparse weight makes Ftrl lazy
        kw["lazy_update"] = cfg["weight_stype"] == "row_sparse"
    if cfg["scheduler"]:
        sched = cfg["scheduler"]
        kw["lr_scheduler"] = getattr(lrs, sched["type"])(**sched["args"])
    return kw


def _grads(cfg: dict, data: dict) -> list:
    """Per step: a RowSparse in our input form (repeats, unsorted), or MXNet's densified sum."""
    out = []
    rows, cols = data["w0"].shape
    for s in range(data["idx"].shape[0]):
        if cfg["grad"] == "row_sparse":
            out.append(RowSparse(data["idx"][s], data["val"][s], (rows, cols)))
        else:
            dense = np.zeros((rows, cols), np.float32)
            np.add.at(dense, data["idx"][s], data["val"][s])
            out.append(jnp.asarray(dense))
    return out


def _check(cfg: dict, data: dict, step: int, weight, states: dict) -> None:
    atol = ATOL_BY_OPT.get(cfg["optimizer"], ATOL)
    cid = cfg["id"]
    np.testing.assert_allclose(
        np.asarray(weight),
        data[f"out_{cid}"][step],
        rtol=RTOL,
        atol=atol,
        err_msg=f"{cid} weight step {step}",
    )
    for name in cfg["state_names"]:
        np.testing.assert_allclose(
            np.asarray(states[name]),
            data[f"state_{cid}_{name}"][step],
            rtol=RTOL,
            atol=atol,
            err_msg=f"{cid} state {name} step {step}",
        )


def _default_run_ids() -> set[str]:
    """Per optimizer and kind of config (lazy / standard / dense gradient, row-sparse weight, scheduler), the
    last config (the one with clipping, rescaling and decay): the default run replays these, the ``slow``
    marker the others (each config its own compile)."""
    last: dict[tuple, str] = {}
    for c in configs():
        kind = (c["optimizer"], c["semantics"], c["grad"], c["weight_stype"], bool(c["scheduler"]))
        last[kind] = c["id"]
    return set(last.values())


def _cases(keep=lambda c: True) -> list:
    default = _default_run_ids()
    return [
        pytest.param(c["id"], marks=() if c["id"] in default else (pytest.mark.slow,))
        for c in configs()
        if keep(c)
    ]


def test_default_run_has_every_kind_of_config():
    default = _default_run_ids()
    kinds = {(c["optimizer"], c["semantics"], c["grad"]) for c in configs()}
    assert kinds == {(c["optimizer"], c["semantics"], c["grad"]) for c in configs() if c["id"] in default}
    assert any(c["scheduler"] for c in configs() if c["id"] in default)
    assert any(c["weight_stype"] == "row_sparse" for c in configs() if c["id"] in default)


@pytest.mark.parametrize("cid", _cases())
def test_functional_matches_mxnet(cid):
    meta, data = golden()
    cfg = next(c for c in meta["configs"] if c["id"] == cid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tx = mxopt_jax.OPTIMIZERS[cfg["optimizer"]](**_kwargs(cfg))
    params = {"table": jnp.asarray(data["w0"])}
    state = tx.init(params)

    @jax.jit
    def step(params, state, g):
        updates, state = tx.update({"table": g}, state, params)
        lazy = isinstance(updates["table"], RowSparse)
        return optax.apply_updates(params, updates), state, lazy

    for s, g in enumerate(_grads(cfg, data)):
        params, state, lazy = step(params, state, g)
        assert bool(lazy) == (cfg["semantics"] == "lazy" and cfg["grad"] == "row_sparse"), cid
        states = {n: getattr(state, n)["table"] for n in cfg["state_names"]}
        _check(cfg, data, s, params["table"], states)


def _facade_cases() -> list:
    """Every config; the default run's lazy row-sparse ones in the default run, the rest (the functional test
    covers them) under slow."""
    default = _default_run_ids()
    return [
        pytest.param(
            c["id"],
            marks=()
            if c["id"] in default and c["semantics"] == "lazy" and c["grad"] == "row_sparse"
            else (pytest.mark.slow,),
        )
        for c in configs()
    ]


@pytest.mark.parametrize("cid", _facade_cases())
def test_facade_matches_mxnet(cid):
    meta, data = golden()
    cfg = next(c for c in meta["configs"] if c["id"] == cid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = mxopt_jax.create(cfg["optimizer"], **_kwargs(cfg))
    upd = mxopt_jax.get_updater(opt)
    fields = type(opt)._rule.fields
    w = jnp.asarray(data["w0"])
    for s, g in enumerate(_grads(cfg, data)):
        w = upd(0, g, w)
        states = dict(zip(fields, upd.states[0], strict=True))
        _check(cfg, data, s, w, states)


def _untouched_cases() -> list:
    """Every lazy config; the default run one per optimizer (tests/properties/test_lazy_equals_dense.py checks
    the untouched rows of random updates for each too), the others under ``slow``."""
    first: dict[str, str] = {}
    for c in configs():
        if c["semantics"] == "lazy" and c["id"] in _default_run_ids():
            first.setdefault(c["optimizer"], c["id"])
    return [
        pytest.param(c["id"], marks=() if c["id"] in first.values() else (pytest.mark.slow,))
        for c in configs()
        if c["semantics"] == "lazy"
    ]


@pytest.mark.parametrize("cid", _untouched_cases())
def test_lazy_leaves_untouched_rows_bit_identical(cid):
    """Rows never listed keep the initial weight and zero state exactly (MXNet's lazy row-sparse kernels)."""
    meta, data = golden()
    cfg = next(c for c in meta["configs"] if c["id"] == cid)
    never = meta["never_touched"]
    tx = mxopt_jax.OPTIMIZERS[cfg["optimizer"]](**_kwargs(cfg))
    params = {"table": jnp.asarray(data["w0"])}
    state = tx.init(params)
    init_state = state
    for g in _grads(cfg, data):
        updates, state = tx.update({"table": g}, state, params)
        params = optax.apply_updates(params, updates)
    np.testing.assert_array_equal(np.asarray(params["table"])[never], data["w0"][never])
    for name in cfg["state_names"]:
        before = np.asarray(getattr(init_state, name)["table"])[never]
        np.testing.assert_array_equal(np.asarray(getattr(state, name)["table"])[never], before)


@pytest.mark.parametrize("cid", [c["id"] for c in configs() if c["dense_counterpart"]])
def test_mxnet_standard_equals_its_dense_run(cid):
    """MXNet's own data: the sparse config and its dense counterpart agree (sanity of the golden file)."""
    meta, data = golden()
    cfg = next(c for c in meta["configs"] if c["id"] == cid)
    np.testing.assert_allclose(
        data[f"out_{cid}"], data[f"out_{cfg['dense_counterpart']}"], rtol=1e-6, atol=5e-7
    )


# --------------------------------------------------------------------------- standard == dense, every optimizer
def _table_and_grad(dtype=jnp.float32):
    rng = np.random.default_rng(3)
    w = jnp.asarray(rng.uniform(-1, 1, (12, 4)), dtype)
    idx = jnp.asarray([5, 1, 5, 9, 0, 1], jnp.int32)
    val = jnp.asarray(rng.normal(size=(6, 4)), dtype).at[3].set(0.0)
    return w, RowSparse(idx, val, (12, 4))


# Half of the optimizers in the default run (tests/properties/test_lazy_equals_dense.py draws random tables for
# the other half), all of them under ``slow``.
@pytest.mark.parametrize("name", default_run(sorted(mxopt_jax.OPTIMIZERS), share(2)))
def test_standard_sparse_equals_dense(name):
    """``lazy_update=False`` (and optimizers without a sparse kernel): the dense update, bit for bit."""
    w, g = _table_and_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        kw = {"lazy_update": False} if name in ("sgd", "ccsgd", "adam", "lars", "ftrl") else {}
        tx = mxopt_jax.OPTIMIZERS[name](**kw)
    params = {"t": w}
    state = tx.init(params)
    run = jax.jit(lambda g, s, p: tx.update({"t": g}, s, p))
    for _ in range(3):
        u_sparse, s_sparse = run(g, state, params)
        u_dense, s_dense = run(g.todense(), state, params)
        if name in ("adagrad", "groupadagrad"):  # always row-wise (MXNet's sparse kernels): equal at wd == 0
            assert isinstance(u_sparse["t"], RowSparse)
            chex.assert_trees_all_close(
                params["t"] + u_sparse["t"], params["t"] + u_dense["t"], rtol=1e-6, atol=1e-7
            )
        elif name == "nadam" and jax.__version_info__ < (0, 5):
            # Two programs (the densifying scatter inside one): JAX 0.4.35's XLA fuses Nadam's multiply-adds
            # differently in them, 1 ulp apart on an element; bit for bit from JAX 0.5 on.
            chex.assert_trees_all_close(u_sparse, u_dense, rtol=2.4e-7, atol=0)
            chex.assert_trees_all_close(s_sparse, s_dense, rtol=2.4e-7, atol=0)
        else:
            chex.assert_trees_all_equal(u_sparse, u_dense)
            chex.assert_trees_all_equal(s_sparse, s_dense)
        params = optax.apply_updates(params, u_dense)
        state = s_dense


@pytest.mark.parametrize(
    "name, kw",
    [
        ("sgd", {"momentum": 0.9, "lazy_update": True, "wd": 0.01}),
        ("adam", {"lazy_update": True, "wd": 0.01}),
        ("adagrad", {}),
        ("groupadagrad", {}),
        ("ftrl", {"lazy_update": True}),
        ("lars", {"momentum": 0.9, "lazy_update": True}),
    ],
)
def test_lazy_cost_scales_with_rows(name, kw):
    """The lazy update reads and writes only the listed rows: no table-sized value besides the scatters."""
    tx = mxopt_jax.OPTIMIZERS[name](**kw)
    rows, cols, k = 4096, 16, 32
    params = {"t": jnp.zeros((rows, cols))}
    state = tx.init(params)
    g = RowSparse(jnp.arange(k), jnp.ones((k, cols)), (rows, cols))

    def step(params, state, g):
        updates, state = tx.update({"t": g}, state, params)
        return optax.apply_updates(params, updates), state

    jaxpr = jax.make_jaxpr(step)(params, state, g)
    big = []

    def walk(jx):
        for eqn in jx.eqns:
            for sub in eqn.params.values():
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    walk(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    walk(sub)
            for v in eqn.outvars:
                if getattr(v.aval, "size", 0) >= rows * cols // 2 and not eqn.primitive.name.startswith(
                    "scatter"
                ):
                    big.append(eqn.primitive.name)

    walk(jaxpr.jaxpr)
    if name == "lars":  # the layer-wise rate needs |w| of the whole weight (as MXNet): one fused read
        # x**2 is traced as `square` by newer JAX and as `integer_pow` by JAX 0.4.35: one element-wise op either way
        assert big in (["square"], ["integer_pow"]), big
    else:
        assert not big, f"table-sized intermediates in the lazy path: {big}"


# --------------------------------------------------------------------------- multi-precision, errors
def test_lazy_adam_multi_precision_matches_dense_on_touched_rows():
    w, g = _table_and_grad(jnp.float16)
    tx = mxopt_jax.adam(learning_rate=0.01, lazy_update=True, multi_precision=True)
    params = {"t": w}
    state = tx.init(params)
    u, s = jax.jit(tx.update)({"t": g}, state, params)
    new = optax.apply_updates(params, u)["t"]
    ud, sd = tx.update({"t": g.todense()}, state, params)
    dense_new = optax.apply_updates(params, ud)["t"]
    touched = np.unique(np.asarray(g.indices))
    chex.assert_trees_all_equal(new[touched], dense_new[touched])
    chex.assert_trees_all_equal(s.master["t"][touched], sd.master["t"][touched])
    untouched = np.setdiff1d(np.arange(12), touched)
    chex.assert_trees_all_equal(new[untouched], w[untouched])
    assert new.dtype == jnp.float16 and s.master["t"].dtype == jnp.float32


def test_sparse_adagrad_with_weight_decay_is_rejected_as_mxnet():
    meta, _ = golden()
    assert any(e["config"]["id"] == "adagrad_wd_error" for e in meta["errors"])
    w, g = _table_and_grad()
    tx = mxopt_jax.adagrad(wd=0.1)
    state = tx.init({"t": w})
    with pytest.raises(ValueError, match=r"row-sparse gradient .* needs `wd` == 0"):
        tx.update({"t": g}, state, {"t": w})
    upd = mxopt_jax.get_updater(mxopt_jax.create("adagrad", wd=0.1))
    with pytest.raises(ValueError, match=r"needs `wd` == 0"):
        upd(0, g, w)
    # a dense gradient is fine
    tx.update({"t": g.todense()}, state, {"t": w})


def test_row_sparse_validation():
    with pytest.raises(ValueError, match=r"`indices` must lie in \[0, 12\)"):
        RowSparse(jnp.array([0, 12]), jnp.ones((2, 4)), (12, 4))
    with pytest.raises(ValueError, match=r"`indices` must lie in \[0, 12\)"):
        RowSparse(jnp.array([-1]), jnp.ones((1, 4)), (12, 4))
    with pytest.raises(TypeError, match="`indices` must be a 1-D integer array"):
        RowSparse(jnp.array([0.0]), jnp.ones((1, 4)), (12, 4))
    with pytest.raises(ValueError, match=r"`values` must have shape \(k, \*shape\[1:\]\)"):
        RowSparse(jnp.array([0]), jnp.ones((1, 5)), (12, 4))
    w, g = _table_and_grad()
    tx = mxopt_jax.sgd(lazy_update=True)
    with pytest.raises(
        ValueError, match=r"RowSparse gradient for 't' has shape \(12, 4\), the parameter \(6, 4\)"
    ):
        tx.update({"t": g}, tx.init({"t": w[:6]}), {"t": w[:6]})


def test_out_of_range_rows_under_jit_are_ignored():
    """Traced indices cannot be checked; rows out of range are dropped, never wrapped or clamped."""
    w = jnp.zeros((6, 2))
    tx = mxopt_jax.sgd(learning_rate=1.0, lazy_update=True)
    state = tx.init({"t": w})

    @jax.jit
    def step(idx):
        g = RowSparse(idx, jnp.ones((3, 2)), (6, 2))
        u, _ = tx.update({"t": g}, state, {"t": w})
        return optax.apply_updates({"t": w}, u)["t"]

    out = step(jnp.array([1, 6, -1]))
    expected = np.zeros((6, 2), np.float32)
    expected[1] = -1.0
    np.testing.assert_array_equal(out, expected)


def test_transform_mapped_over_indices_is_a_clear_error():
    w, g = _table_and_grad()
    tx = optax.chain(optax.scale(0.5), mxopt_jax.adam(lazy_update=True))
    state = tx.init({"t": w})
    with pytest.raises(TypeError, match="float32 row indices: an optax transform mapped over them"):
        tx.update({"t": g}, state, {"t": w})


def test_lazy_update_with_multi_precision_rejected_for_sgd_as_mxnet():
    with pytest.raises(ValueError, match="lazy_update=True` cannot be combined with `multi_precision=True"):
        mxopt_jax.sgd(lazy_update=True, multi_precision=True)


# --------------------------------------------------------------------------- the embedding model
@functools.cache
def embedding_golden() -> tuple[dict, dict]:
    with np.load(GOLDEN / "sparse_embedding.npz") as z:
        data = {k: z[k] for k in z.files}
    return json.loads(str(data.pop("meta"))), data


def embedding_loss(params, ids, labels):
    """The MXNet model: ``h = mean(E[ids], axis=1); logits = h @ W + b``; mean softmax cross-entropy."""
    h = mxopt_jax.sparse.lookup(params["E"], ids).mean(axis=1)
    logits = h @ params["W"] + params["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def test_embedding_gradient_is_row_sparse_and_correct():
    _, data = embedding_golden()
    params = {"E": jnp.asarray(data["E0"]), "W": jnp.asarray(data["W0"]), "b": jnp.asarray(data["b0"])}
    ids, labels = jnp.asarray(data["ids"][0]), jnp.asarray(data["labels"][0])
    loss, grads = jax.jit(mxopt_jax.sparse.value_and_grad(embedding_loss, tables="E"))(params, ids, labels)
    assert isinstance(grads["E"], RowSparse) and grads["E"].num_rows == ids.size
    dense_loss, dense = jax.value_and_grad(embedding_loss)(params, ids, labels)
    np.testing.assert_allclose(loss, dense_loss, rtol=1e-6)
    np.testing.assert_allclose(grads["E"].todense(), dense["E"], rtol=1e-5, atol=1e-7)
    expected = np.zeros_like(data["E0"])
    expected[data["grad0_E_idx"]] = data["grad0_E_val"]
    # MXNet sums in another order: fp32 rounding of near-cancelling sums (|grad| ~ 0.15)
    np.testing.assert_allclose(grads["E"].todense(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["W"], data["grad0_W"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["b"], data["grad0_b"], rtol=1e-5, atol=1e-6)


def test_embedding_model_trains_with_lazy_adam_like_mxnet():
    """An embedding table trained with lazy Adam under jit follows MXNet's trajectory step by step."""
    meta, data = embedding_golden()
    params = {"E": jnp.asarray(data["E0"]), "W": jnp.asarray(data["W0"]), "b": jnp.asarray(data["b0"])}
    tx = mxopt_jax.adam(**meta["kwargs"])
    state = tx.init(params)
    grad_fn = mxopt_jax.sparse.value_and_grad(embedding_loss, tables="E")

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_step(params, state, ids, labels):
        loss, grads = grad_fn(params, ids, labels)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    unused = meta["never_used_ids"]
    for s in range(meta["steps"]):
        params, state, loss = train_step(
            params, state, jnp.asarray(data["ids"][s]), jnp.asarray(data["labels"][s])
        )
        np.testing.assert_allclose(loss, data["loss"][s], rtol=1e-5, atol=1e-6, err_msg=f"loss step {s}")
        for k in ("E", "W", "b"):
            np.testing.assert_allclose(params[k], data[k][s], rtol=1e-4, atol=2e-5, err_msg=f"{k} step {s}")
            np.testing.assert_allclose(state.mean[k], data[f"{k}_mean"][s], rtol=1e-4, atol=2e-5)
            np.testing.assert_allclose(state.var[k], data[f"{k}_var"][s], rtol=1e-4, atol=2e-5)
        np.testing.assert_array_equal(np.asarray(params["E"])[unused], data["E0"][unused])
    assert data["loss"][-1] < data["loss"][0] - 0.2


def test_docs_skip_gram_example_runs():
    """docs/sparse.md's skip-gram block, executed: only the looked-up rows of the two tables move."""
    page = (pathlib.Path(__file__).parents[2] / "docs" / "sparse.md").read_text()
    blocks = [b.split("```")[0] for b in page.split("```python\n")[1:]]
    code = next(b for b in blocks if "sparse.value_and_grad" in b)
    ns: dict = {}
    exec(compile(code, "docs/sparse.md", "exec"), ns)
    before = jax.tree.map(np.asarray, ns["params"])
    center, context = jnp.array([1, 5, 99_999], jnp.int32), jnp.array([5, 7, 1], jnp.int32)
    negatives = jnp.array([[3, 3], [8, 1], [0, 2]], jnp.int32)
    loss, grads = ns["grad_fn"](ns["params"], center, context, negatives)
    assert isinstance(grads["in"], RowSparse) and isinstance(grads["out"], RowSparse)
    assert grads["out"].num_rows == context.size + negatives.size
    params, state, loss = ns["train_step"](ns["params"], ns["state"], center, context, negatives)
    assert np.isfinite(float(loss))
    for name, used in (("in", {1, 5, 99_999}), ("out", {0, 1, 2, 3, 5, 7, 8})):
        moved = np.flatnonzero(np.any(np.asarray(params[name]) != before[name], axis=1))
        assert set(moved.tolist()) == used, name


@pytest.mark.parametrize("name", ["sgd", "adam", "adagrad", "ftrl", "lars"])
def test_sorted_unique_rows_skip_the_dedup_and_give_the_same_update(name):
    """``RowSparse(..., sorted_unique=True)`` (MXNet's row_sparse invariant) runs the lazy update without the
    sort + segment-sum, with the same result as the general path (which sorts the ids of a table this big next
    to 5 ids; ``tests/drivers/test_unique_rows.py`` holds the other way, through the table)."""
    kw = {"sgd": dict(momentum=0.9, lazy_update=True), "adam": dict(lazy_update=True), "adagrad": {},
          "ftrl": dict(lazy_update=True), "lars": dict(momentum=0.9, lazy_update=True)}[name]  # fmt: skip
    tx = mxopt_jax.OPTIMIZERS[name](learning_rate=0.05, **kw)
    table = normal(0, (500, 4))
    idx = jnp.asarray([1, 4, 9, 30, 499], jnp.int32)
    vals = normal(1, (5, 4))
    params = {"t": table}

    def step(g):
        u, s = tx.update({"t": g}, tx.init(params), params)
        return optax.apply_updates(params, u)["t"], s

    general = jax.jit(lambda i, v: step(RowSparse(i, v, (500, 4))))
    fast = jax.jit(lambda i, v: step(RowSparse(i, v, (500, 4), sorted_unique=True)))
    chex.assert_trees_all_close(fast(idx, vals), general(idx, vals), rtol=1e-6, atol=1e-7)
    assert "sort" not in _primitives(jax.make_jaxpr(fast)(idx, vals).jaxpr)
    assert "sort" in _primitives(jax.make_jaxpr(general)(idx, vals).jaxpr)


def _primitives(jaxpr) -> set[str]:
    """Names of every primitive in a jaxpr, sub-jaxprs (pjit, cond, ...) included."""
    out = set()
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        for v in eqn.params.values():
            inner = getattr(v, "jaxpr", None)
            if inner is not None:
                out |= _primitives(getattr(inner, "jaxpr", inner))
    return out


def test_sorted_unique_is_checked():
    with pytest.raises(ValueError, match=r"`sorted_unique=True` needs strictly increasing `indices`"):
        RowSparse(jnp.asarray([3, 1]), jnp.ones((2, 2)), (5, 2), sorted_unique=True)
    with pytest.raises(ValueError, match=r"`sorted_unique=True` needs strictly increasing"):
        RowSparse(jnp.asarray([1, 1]), jnp.ones((2, 2)), (5, 2), sorted_unique=True)
    with pytest.raises(TypeError, match=r"`sorted_unique` must be a bool"):
        RowSparse(jnp.asarray([1]), jnp.ones((1, 2)), (5, 2), sorted_unique=1)
    g = RowSparse(jnp.asarray([0, 2]), jnp.ones((2, 2)), (5, 2), sorted_unique=True)
    assert jax.tree.map(lambda x: x, g).unique  # the promise survives tree maps (static aux data)
