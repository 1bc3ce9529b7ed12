"""Checkpoints from strangers IV (issue 51, items 8-15): the MXNet reader's last pairing gaps. Each test builds its
file from the real MXNet files under ``tests/golden/`` (or by construction) and asserts a ``ValueError`` naming
the file (or the argument), a warning, or a correct load with MXNet's behaviour; each failed on the code before
the fix (the docstring says how).
"""

from __future__ import annotations

import io
import json
import pathlib
import warnings
import zipfile

import jax.numpy as jnp
import pytest
from pickle_bytes import dumps, from_states

import mxopt_jax
from mxopt_jax.mxnet_format import load_trainer, load_updater, read_states

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


# --------------------------------------------------------------------------- 14: fresh states, lost counts
def _trainer(case="mx20_cnn_adam"):
    return _quiet(load_trainer, GOLD / f"{case}.params", GOLD / f"{case}.states", loss="sum", lr_mult={})


def test_set_states_into_a_resumed_updater_says_what_it_creates_fresh_and_refuses_strays():
    """Before: ``set_states`` into a ``load_trainer`` updater without a state for '3.weight' made a zero state
    at the next step without a word (``load_trainer`` warns); states of other indices or shapes loaded."""
    ckpt = _trainer()
    blob = ckpt.updater.get_states(dump_optimizer=True)
    gone = ckpt.index("3.weight")
    states = {i: s for i, s in ckpt.updater.states.items() if i != gone}
    partial = mxopt_jax.get_updater(ckpt.optimizer)
    partial.states = states
    partial_blob = partial.get_states(dump_optimizer=True)
    fresh = _trainer()
    with pytest.warns(UserWarning, match=r"set_states: the archive holds no state for \['3\.weight'\]"):
        fresh.updater.set_states(partial_blob)
    # a state for an index the file does not train (a running statistic), or of another parameter's shape
    for bad, match in [
        ({**ckpt.updater.states, ckpt.index("1.running_mean"): ckpt.updater.states[0]}, r"does not train"),
        ({**ckpt.updater.states, gone: ckpt.updater.states[ckpt.index("3.bias")]}, r"parameter '3\.weight'"),
    ]:
        other = mxopt_jax.get_updater(ckpt.optimizer)
        other.states = bad
        target = _trainer()
        before = target.optimizer.num_update
        with pytest.raises(ValueError, match=rf"^Updater\.set_states: .*{match}"):
            target.updater.set_states(other.get_states(dump_optimizer=True))
        assert target.optimizer.num_update == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _trainer().updater.set_states(blob)  # its own archive: no warning


def test_states_without_update_counts_are_announced():
    """Before: counts keyed to other indices restarted the bias correction at step 1 with step-3 moments,
    silently, in the facade's format and in MXNet's files alike."""
    ref = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    for _ in range(3):
        ref([0, 1], [jnp.ones(2)] * 2, [jnp.ones(2)] * 2)
    archive = zipfile.ZipFile(io.BytesIO(ref.get_states(dump_optimizer=True)))
    manifest = json.loads(archive.read("manifest.json"))
    attrs = manifest["optimizer"]["attrs"]
    other = {"dict": [[{"int": 0}, {"dict": [[{"int": 7}, {"int": 3}], [{"int": 8}, {"int": 3}]]}]]}
    attrs["_all_index_update_counts"] = other
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("manifest.json", json.dumps(manifest))
        for n in archive.namelist():
            if n != "manifest.json":
                out.writestr(n, archive.read(n))
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    with pytest.warns(
        UserWarning, match=r"set_states: the states of \[0, 1\] have no update count .* restarts"
    ):
        upd.set_states(buf.getvalue())
    states, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    counts = {i + 10: 3 for i in range(4)}
    opt.attrs.update(_index_update_count=counts, _all_index_update_counts={0: counts})
    with pytest.warns(
        UserWarning, match=r"<states bytes>: the states of \[0, 1, 2, 3\] have no update count"
    ):
        load_updater(dumps((states, opt)))
