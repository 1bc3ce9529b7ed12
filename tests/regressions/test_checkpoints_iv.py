"""Checkpoints from strangers IV (issue 51, items 8-15): the MXNet reader's last pairing gaps. Each test builds its
file from the real MXNet files under ``tests/golden/`` (or by construction) and asserts a ``ValueError`` naming
the file (or the argument), a warning, or a correct load with MXNet's behaviour; each failed on the code before
the fix (the docstring says how).
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import struct
import tracemalloc
import warnings
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from golden import TOL
from mxnet_files import list_file, npy, raw_npz
from pickle_bytes import Obj, dumps, from_states, ndarray_record

import mxopt_jax
from mxopt_jax.mxnet_format import load_params, load_trainer, load_updater, read_states

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, GOLD = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"
MB = 2**20


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# --------------------------------------------------------------------------- 8: 1.x names in registration order
def _net_files(children: list[str]):
    """A 1.x Sequential-like net whose root children are ``children`` (each a Dense: ``weight`` (3, 3), ``bias``
    (3,)), registered and saved in that order; its collect_params() keys ``dense{k}_*`` in that order; an SGD
    ``.states`` file whose index i holds the value 100 + i (i: the Trainer's index, sorted keys)."""
    raw, opt = read_states(GOLD / "mx19_twin.states")  # MXNet 1.9.1 SGD with momentum, a Trainer's file
    file_names = [f"{c}.{leaf}" for c in children for leaf in ("weight", "bias")]
    keys = [f"dense{k}_{leaf}" for k in range(len(children)) for leaf in ("weight", "bias")]
    params = list_file(
        [ndarray_record(np.zeros((3, 3) if n.endswith("weight") else (3,), np.float32)) for n in file_names],
        file_names,
    )
    shape = {k: (3, 3) if k.endswith("weight") else (3,) for k in keys}
    states = {i: np.full(shape[k], 100 + i, np.float32) for i, k in enumerate(sorted(keys))}
    _, o = from_states(raw, opt)
    counts = dict.fromkeys(range(len(keys)), 3)
    o.attrs.update(_index_update_count=counts, _all_index_update_counts={0: dict(counts)})
    return params, dumps((states, o)), file_names, keys


def _with_manifest(blob: bytes, edit) -> bytes:
    """The facade's archive ``blob`` with its manifest changed in place by ``edit`` (the members as they are)."""
    archive = zipfile.ZipFile(io.BytesIO(blob))
    manifest = json.loads(archive.read("manifest.json"))
    edit(manifest)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        out.writestr("manifest.json", json.dumps(manifest))
        for n in archive.namelist():
            if n != "manifest.json":
                out.writestr(n, archive.read(n))
    return buf.getvalue()


@pytest.mark.parametrize(
    "children",
    [["0", "head", "2"], ["head", "1", "2"], ["0", "²", "2"], ["0", "٣", "2"], ["0", "1", "tail", "3", "4"]],
    ids=["named-between", "named-first", "superscript-two", "arabic-indic-three", "named-among-four"],
)
def test_1x_names_pair_in_registration_order(children):
    """Before: numbered children were sorted first ('0', '2', 'head'), so 'head' took the third Dense's
    states and '2' the second's, silently; a child named '²' raised a bare ``int()`` error without the file's
    name, and '٣' was ordered as child 3. MXNet names a Sequential's k-th added child ``str(k)`` (ASCII) and
    saves the children in registration order: a named child sits where the file's records put it."""
    params, blob, file_names, keys = _net_files(children)
    ckpt = load_trainer(params, blob, loss="sum", lr_mult={}, names=keys)
    assert ckpt.key_of == dict(zip(file_names, keys, strict=True))
    order = sorted(keys)
    for n, k in zip(file_names, keys, strict=True):
        i = ckpt.index(n)
        assert order[i] == k
        assert float(np.asarray(ckpt.updater.states[i][0]).ravel()[0]) == 100 + i


def test_1x_records_out_of_order_with_named_children_are_refused_when_it_matters():
    """Records rewritten by name ('2' before '0') say nothing of where 'head' sat among the numbered children:
    before, the reader put it last and paired silently; now refused when it matters (a leaf name in both)."""
    params, blob, file_names, keys = _net_files(["0", "head", "2"])
    arrays = load_params(params)
    order = ["2.weight", "2.bias", "head.weight", "head.bias", "0.weight", "0.bias"]
    shuffled = list_file([ndarray_record(arrays[n]) for n in order], order)
    with pytest.raises(
        ValueError,
        match=r"load_trainer: the records of <params bytes> are not in the net's order .* named children "
        r"\['head'\] .* Pass names as a dict",
    ):
        load_trainer(shuffled, blob, loss="sum", lr_mult={}, names=keys)
    # a dict says it all
    ckpt = load_trainer(
        shuffled, blob, loss="sum", lr_mult={}, names=dict(zip(file_names, keys, strict=True))
    )
    assert float(np.asarray(ckpt.updater.states[ckpt.index("head.weight")][0]).ravel()[0]) == 103


# --------------------------------------------------------------------------- 9: to_optax names as MXNet names
@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_to_optax_names_parameters_as_mxnet_and_the_facade(version):
    """Before: to_optax gave LARS the ``.params`` names, so '0.bias' and '1.bias' were exempted from the
    layer-wise rate, while MXNet (and the facade) name index i ``str(i)`` when ``idx2name`` is empty: the first
    jitted step differed from MXNet by 1.01 (the facade by 3e-8)."""
    case = f"{version}_lars"
    with np.load(CKPT / f"{case}.npz") as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data.pop("meta")))
    names = meta["index_names"]
    ckpt = _quiet(
        load_trainer, CKPT / f"{case}.params", CKPT / f"{case}.states", loss="sum", lr_mult={}, names=names
    )
    tx, state = ckpt.to_optax()
    step = jax.jit(tx.update)
    rtol, atol = TOL["lars"]
    params = ckpt.params
    for k in range(meta["cont"]):
        assert float(data[f"rescale_{k}"]) == ckpt.optimizer.rescale_grad
        grads = {n: jnp.asarray(data[f"grad_{k}_{i}"]) for i, n in enumerate(names)}
        updates, state = step(grads, state, params)
        params = optax.apply_updates(params, updates)
        for i, n in enumerate(names):
            np.testing.assert_allclose(
                np.asarray(params[n]), data[f"weight_{k}_{i}"], rtol=rtol, atol=atol, err_msg=f"{n} step {k}"
            )
    assert set(state.mom) == {str(i) for i in range(len(names))}  # keyed by MXNet's names


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


# --------------------------------------------------------------------------- 12: schedulers' impossible rates
def _with_sched(path, **over):
    states, opt = from_states(*read_states(path))
    opt.attrs["lr_scheduler"].attrs.update(over)
    return dumps((states, opt))


@pytest.mark.parametrize("base_lr", [1e30, 5.0, 0.0])
@pytest.mark.parametrize("case", ["mx20_sgd_sched_mults", "mx19_sgd_sched_mults", "mx20_adam"])
def test_a_scheduler_rate_its_schedule_never_holds_is_refused(case, base_lr):
    """Before: FactorScheduler / MultiFactorScheduler ``base_lr`` of 1e30, 5.0 or 0.0 loaded (0 froze the run
    silently). Their rate starts at the constructor's base_lr (or the optimizer's rate written over it) and
    only decays, once per decay their position counts, Factor's clamped at stop_factor_lr."""
    with pytest.raises(
        ValueError,
        match=r"^<states bytes>: the pickled (Multi)?FactorScheduler's attribute 'base_lr' = .* never",
    ):
        load_updater(_with_sched(CKPT / f"{case}.states", base_lr=base_lr))
    _quiet(load_updater, CKPT / f"{case}.states")  # what MXNet wrote loads


def test_scheduler_rates_are_checked_in_the_facade_format_and_for_poly():
    """The same rule for the facade's own archives, and Poly / Cosine (a cached rate between final_lr and
    base_lr_orig, or the start): before, an archived base_lr of 1e30 loaded."""
    upd = mxopt_jax.get_updater(
        mxopt_jax.create(
            "sgd",
            learning_rate=None,
            lr_scheduler=mxopt_jax.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1),
        )  # fmt: skip
    )
    for i in range(3):
        upd(i % 2, jnp.ones(2), jnp.ones(2))
    blob = upd.get_states(dump_optimizer=True)

    def huge_base_lr(manifest: dict) -> None:
        for pair in manifest["optimizer"]["attrs"]["lr_scheduler"]["attrs"]["dict"]:
            if pair[0]["str"] == "base_lr":
                pair[1] = {"float": "1e30"}

    edited = _with_manifest(blob, huge_base_lr)
    fresh = mxopt_jax.get_updater(
        mxopt_jax.create(
            "sgd", learning_rate=None, lr_scheduler=mxopt_jax.lr_scheduler.FactorScheduler(step=1)
        )
    )
    with pytest.raises(ValueError, match=r"^set_states: the archived FactorScheduler's attribute 'base_lr'"):
        fresh.set_states(edited)
    fresh.set_states(blob)  # as written
    poly = dict(base_lr=5.0, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0, warmup_mode="linear",
                base_lr_orig=0.1, max_update=10, final_lr=0, max_steps=10, power=2)  # fmt: skip
    states, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    opt.attrs["lr_scheduler"] = Obj("mxnet.lr_scheduler", "PolyScheduler", poly)
    with pytest.raises(ValueError, match=r"PolyScheduler's attribute 'base_lr' = 5\.0 .* between final_lr"):
        load_updater(dumps((states, opt)))


# --------------------------------------------------------------------------- 13: the params budget
def test_the_params_budget_counts_what_reading_allocates():
    """Before (at 4 times this size: 200k arrays, 40 MiB): one-element arrays were counted at about 190 bytes
    each while reading them allocated about 370 (the array objects, names, list and dict slots), so a 2.5 MiB
    file loaded against a 10 MiB cap with 17.6 MiB allocated. Now each array counts 512 bytes besides its data."""
    n = 50_000
    rec = (
        struct.pack("<Iii", 0xF993FAC9, 0, 1) + struct.pack("<q", 1) + struct.pack("<iii", 1, 0, 0) + bytes(4)
    )
    names = [f"p{i:06d}.w".encode() for i in range(n)]
    blob = (
        struct.pack("<QQQ", 0x112, 0, n)
        + rec * n
        + struct.pack("<Q", n)
        + b"".join(struct.pack("<Q", len(k)) + k for k in names)
    )
    cap = 10 * MB
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"^<params bytes>: refused: array \d+ .*budget of 10485760"):
            load_params(blob, max_bytes=cap)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= cap, f"{peak / MB:.1f} MiB allocated against a cap of {cap / MB:.0f} MiB"
    assert len(load_params(blob, max_bytes=64 * MB)) == n  # a file you trust: raise the cap


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
    other = {"dict": [[{"int": 0}, {"dict": [[{"int": 7}, {"int": 3}], [{"int": 8}, {"int": 3}]]}]]}
    edited = _with_manifest(
        ref.get_states(dump_optimizer=True),
        lambda manifest: manifest["optimizer"]["attrs"].update(_all_index_update_counts=other),
    )
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    with pytest.warns(
        UserWarning, match=r"set_states: the states of \[0, 1\] have no update count .* restarts"
    ):
        upd.set_states(edited)
    states, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    counts = {i + 10: 3 for i in range(4)}
    opt.attrs.update(_index_update_count=counts, _all_index_update_counts={0: counts})
    with pytest.warns(
        UserWarning, match=r"<states bytes>: the states of \[0, 1, 2, 3\] have no update count"
    ):
        load_updater(dumps((states, opt)))


# --------------------------------------------------------------------------- 15: the smaller ones
def _cgroup_file() -> str | None:
    """A regular file on a cgroup mount, or None."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = [ln.split(" - ")[0].split()[4] for ln in f if " - cgroup" in ln]
    except OSError:
        return None
    for m in mounts:
        try:
            for e in os.scandir(m):
                if e.is_file(follow_symlinks=False):
                    return e.path
        except OSError:
            continue
    return None


def test_cgroup_files_are_refused_before_they_are_read(tmp_path):
    """Before: a cgroup mount under /sys/fs/cgroup is a device other than /sys's, so its files were read as
    regular files (and refused only for their content)."""
    path = _cgroup_file()
    if path is None:
        pytest.skip("no cgroup file here")
    with pytest.raises(ValueError, match=r"refused: the path is a file of the kernel's pseudo-filesystems"):
        load_params(path)
    link = tmp_path / "x.params"
    link.symlink_to(path)
    with pytest.raises(ValueError, match=r"x\.params: refused: the path is a file of the kernel's pseudo"):
        load_params(link)


def test_a_repeated_name_keeps_the_last_array_as_mxnet_and_says_so():
    """MXNet's nd.load builds a dict, so a repeated name keeps its last array; before, the first one was
    dropped without a word."""
    a, b = np.zeros(2, np.float32), np.ones(2, np.float32)
    blob = list_file([ndarray_record(a), ndarray_record(b)], ["w", "w"])
    with pytest.warns(
        UserWarning, match=r"<params bytes> holds 1 name\(s\) more than once: 'w' \(arrays \[0, 1\]\)"
    ):
        got = load_params(blob)
    assert list(got) == ["w"] and (got["w"] == 1).all()
    members = [(b"w.npy", npy((2,))), (b"w.npy", npy((3,)))]  # an .npz archive naming a member twice
    with pytest.warns(UserWarning, match=r"holds 1 name\(s\) more than once: 'w'"):
        got = load_params(raw_npz(members))
    assert got["w"].shape == (3,)


@pytest.mark.parametrize(
    "attrs",
    [{"lr": 1e300}, {"wd": 1e300}, {"rescale_grad": 1e300}, {"epsilon": 1e300}, {"lr_mult": {0: 1e300}}],
    ids=["lr", "wd", "rescale_grad", "epsilon", "lr_mult"],
)
def test_hyperparameters_float32_cannot_hold_are_refused(attrs):
    """Before: lr = 1e300 loaded and the first step's weights were infinite (as MXNet's float32 kernels would
    make them): refused now, naming the attribute."""
    states, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    opt.attrs.update(attrs)
    name = next(iter(attrs))
    with pytest.raises(ValueError, match=rf"^<states bytes>: the optimizer's attribute '?{name}.* float32"):
        load_updater(dumps((states, opt)))


def test_a_clip_float32_cannot_hold_clips_nothing_as_in_mxnet():
    """clip_gradient = 1e300 is infinite in MXNet's float32 kernels, which then clip nothing: continued
    without clipping, with a warning (before: silently)."""
    states, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    opt.attrs.update(clip_gradient=1e300)
    with pytest.warns(UserWarning, match=r"clip_gradient=1e\+300 is infinite .* continuing without it"):
        upd = load_updater(dumps((states, opt)))
    assert upd.optimizer.clip_gradient is None
