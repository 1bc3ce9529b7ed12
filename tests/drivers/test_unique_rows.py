"""The two ways the lazy driver finds a row-sparse gradient's rows: through the table, or by sorting the ids.

``unique_rows`` picks by cost (``dedup_through_table``); both must give the same rows and the same sums, bit
for bit (each row's values added in the order listed), with out-of-range entries (possible under ``jax.jit``)
gathered into row ``shape[0]`` with zero values and the padding zero too. Hypothesis draws the ids (repeats,
out-of-range ones, negative ones) for a few fixed shapes and dtypes, so each shape compiles once per way.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import mxopt_jax
import mxopt_jax.sparse as sp
from mxopt_jax._src import rowsparse

FAST = settings(max_examples=8, deadline=None, database=None, derandomize=True, phases=[Phase.generate],
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
SLOW = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

#: (rows, k, row shape, dtype): fewer ids than rows, more ids than rows, 1-D tables, rows of a matrix, and
#: the low-precision dtypes whose sums round at every addition (where the order of the sum shows).
SHAPES = [
    (7, 12, (3,), jnp.float32),
    (40, 9, (), jnp.float32),
    (20, 16, (2, 3), jnp.float16),
    (12, 24, (4,), jnp.bfloat16),
]


@functools.cache
def _ways(rows: int, k: int, row: tuple, dtype) -> tuple:
    """The jitted ``unique_rows`` through the table and through the sort."""

    def way(through_table: bool):
        return jax.jit(
            lambda ids, v: rowsparse.unique_rows(sp.RowSparse(ids, v, (rows, *row)), through_table)
        )

    return way(True), way(False)


def _reference(ids: np.ndarray, values: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The listed in-range rows, sorted, then ``rows`` once if any id is out of range, padded with ``rows``;
    each row's values summed in float64 (to compare loosely: the ways are compared with each other exactly)."""
    valid = (ids >= 0) & (ids < rows)
    listed = sorted(set(ids[valid].tolist()))
    out_rows = listed + ([rows] if not valid.all() else [])
    out_rows += [rows] * (len(ids) - len(out_rows))
    sums = np.zeros((len(ids), *values.shape[1:]))
    for j, r in enumerate(listed):
        sums[j] = values[ids == r].astype(np.float64).sum(axis=0)
    return np.asarray(out_rows), sums


@st.composite
def _ids(draw, rows: int, k: int) -> np.ndarray:
    kind = draw(st.sampled_from(["in range", "repeats", "out of range"]))
    lo, hi = (-3, rows + 3) if kind == "out of range" else (0, rows - 1)
    pool = (
        list(range(lo, hi + 1))
        if kind != "repeats"
        else draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=3))
    )
    return np.asarray(draw(st.lists(st.sampled_from(pool), min_size=k, max_size=k)), np.int32)  # fmt: skip


def _check(case: int, data) -> None:
    rows, k, row, dtype = SHAPES[case]
    ids = data.draw(_ids(rows, k))
    seed = data.draw(st.integers(0, 2**16))
    values = np.random.default_rng(seed).normal(size=(k, *row)).astype(np.float32)
    values = np.asarray(jnp.asarray(values, dtype))
    table, sort = _ways(rows, k, row, dtype)
    (r1, v1), (r2, v2) = table(ids, values), sort(ids, values)
    np.testing.assert_array_equal(np.asarray(r1), np.asarray(r2))
    assert v1.dtype == v2.dtype == dtype
    np.testing.assert_array_equal(np.asarray(v1).view(np.uint8), np.asarray(v2).view(np.uint8))  # bit for bit
    want_rows, want_sums = _reference(ids, np.asarray(values, np.float64), rows)
    np.testing.assert_array_equal(np.asarray(r1), want_rows)
    tol = 1e-5 if dtype == jnp.float32 else 5e-2
    np.testing.assert_allclose(np.asarray(v1, np.float64), want_sums, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", range(len(SHAPES)))
@FAST
@given(data=st.data())
def test_through_the_table_equals_the_sort_bit_for_bit(case, data):
    _check(case, data)


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(SHAPES)))
@SLOW
@given(data=st.data())
def test_through_the_table_equals_the_sort_bit_for_bit_sweep(case, data):
    _check(case, data)


def test_the_choice_follows_the_cost():
    """The recommender's tables (512 ids a step into 2,000 and 500 rows) go through the table; an embedding of
    a million rows, or a wide table next to few ids, sorts; no ids at all never builds a table."""
    assert rowsparse.dedup_through_table(2_000, 512, 8)
    assert rowsparse.dedup_through_table(500, 512, 1)
    assert not rowsparse.dedup_through_table(1_000_000, 512, 8)
    assert not rowsparse.dedup_through_table(4_096, 32, 16)
    assert not rowsparse.dedup_through_table(16, 0, 3)


@pytest.mark.parametrize("rows", [50, 50_000])
def test_a_lazy_update_takes_the_chosen_way(rows):
    """A small table's lazy update has no sort in its program; a big one's sorts the ids."""
    tx = mxopt_jax.adam(learning_rate=0.1, lazy_update=True)
    params = {"t": jnp.zeros((rows, 4))}
    g = sp.RowSparse(jnp.asarray([3, 1, 3, 7], jnp.int32), jnp.ones((4, 4)), (rows, 4))
    hlo = jax.jit(lambda g: tx.update({"t": g}, tx.init(params), params)).lower(g).as_text()
    assert ("stablehlo.sort" in hlo) == (not rowsparse.dedup_through_table(rows, 4, 4))


def test_out_of_range_ids_count_nowhere_under_jit():
    """Regression: an out-of-range id under ``jax.jit`` was summed into a padding row whose values counted in
    ``sparse.clip_by_global_norm``'s norm (and in LARS's layer-wise gradient norm), though the dense gradient
    it stands for ignores it; the clipped update now equals optax's on the densified gradient."""
    tx = sp.clip_by_global_norm(1.0)

    @jax.jit
    def clipped(ids):
        g = {"t": sp.RowSparse(ids, jnp.full((4, 2), 3.0), (4, 2))}
        return tx.update(g, tx.init(None))[0]["t"].todense()

    dense = {"t": jnp.zeros((4, 2)).at[jnp.asarray([3, 1, 3])].add(3.0)}
    want = optax.clip_by_global_norm(1.0).update(dense, optax.EmptyState())[0]["t"]
    np.testing.assert_allclose(clipped(jnp.asarray([3, 9, 1, 3])), want, rtol=1e-6)
    np.testing.assert_allclose(clipped(jnp.asarray([3, -2, 1, 3])), want, rtol=1e-6)

    lars = mxopt_jax.lars(learning_rate=0.1, momentum=0.9, lazy_update=True)
    w = {"t": jnp.arange(8.0).reshape(4, 2) / 8}

    @jax.jit
    def lars_step(ids, values):
        u, _ = lars.update({"t": sp.RowSparse(ids, values, (4, 2))}, lars.init(w), w)
        return optax.apply_updates(w, u)["t"]

    with_stray = lars_step(jnp.asarray([3, 9, 1]), jnp.asarray([[1.0, 2.0], [50.0, 50.0], [0.5, 0.1]]))
    without = lars_step(jnp.asarray([3, 1, 1]), jnp.asarray([[1.0, 2.0], [0.0, 0.0], [0.5, 0.1]]))
    np.testing.assert_array_equal(with_stray, without)
