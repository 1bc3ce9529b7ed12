"""Checkpoints from strangers IV (issue 51, items 8-15): the MXNet reader's last pairing gaps. Each test builds its
file from the real MXNet files under ``tests/golden/`` (or by construction) and asserts a ``ValueError`` naming
the file (or the argument), a warning, or a correct load with MXNet's behaviour; each failed on the code before
the fix (the docstring says how).
"""

from __future__ import annotations

import pathlib
import warnings

import jax.numpy as jnp
import pytest

import mxopt_jax
from mxopt_jax.mxnet_format import load_updater

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, GOLD = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"
MB = 2**20


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# --------------------------------------------------------------------------- 10: state shapes against weights
def test_set_states_never_broadcasts_a_state_onto_another_weight():
    """Before: Adam states made for (1,) weights were broadcast onto a (4,) weight and a (2,) bias at the next
    update (the weight silently became the result). MXNet's kernels refuse a state of another shape."""
    ref = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    for i in range(2):
        ref(i, jnp.ones(1), jnp.ones(1))
    blob = ref.get_states(dump_optimizer=True)
    for idx, shape in [(0, (4,)), (1, (2,))]:
        upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
        upd.set_states(blob)
        with pytest.raises(
            ValueError, match=rf"^Updater: index {idx} .*shapes \[\(1,\), \(1,\)\], but Adam keeps .*{shape}"
        ):
            upd(idx, jnp.ones(shape), jnp.ones(shape))
        with pytest.raises(ValueError, match=r"made for another weight"):
            upd([0, 1], [jnp.ones(1), jnp.ones(shape)], [jnp.ones(1), jnp.ones(shape)])
        assert upd.optimizer.index_update_counts == {0: 1, 1: 1}  # nothing changed
        assert upd.states_synced == {0: False, 1: False}
        assert upd(idx, jnp.ones(1), jnp.ones(1)).shape == (1,)  # its own weight: continues
    # a state the Updater made is held to its weight too; a stateless optimizer takes any shape, as MXNet
    with pytest.raises(ValueError, match=r"made for another weight"):
        ref(0, jnp.ones(4), jnp.ones(4))
    sgd = mxopt_jax.get_updater(mxopt_jax.create("sgd", learning_rate=0.1))
    assert sgd(0, jnp.ones(1), jnp.ones(1)).shape == (1,) and sgd(0, jnp.ones(4), jnp.ones(4)).shape == (4,)


# --------------------------------------------------------------------------- 11: GroupAdaGrad's row count
@pytest.mark.parametrize("rows", [12, 1])
def test_groupadagrad_states_refuse_a_weight_of_another_row_count(rows):
    """Before: index 0's history is (6, 1); a (12, 4) weight raised TypeError (broadcasting), a (1, 4) one
    became (6, 4), silently (GroupAdaGrad's state does not say its weight's column count, so its layout has
    no shape)."""
    upd = _quiet(load_updater, CKPT / "mx20_groupadagrad.states")
    w = jnp.ones((rows, 4))
    with pytest.raises(ValueError, match=r"^Updater: index 0 .*\[\(6, 1\)\], but GroupAdaGrad keeps"):
        upd(0, w, w)
    w = jnp.ones((6, 4))
    assert upd(0, w, w).shape == (6, 4)
    with pytest.raises(ValueError, match=r"made for another weight"):  # after a step as well
        upd(0, jnp.ones((1, 4)), jnp.ones((1, 4)))
