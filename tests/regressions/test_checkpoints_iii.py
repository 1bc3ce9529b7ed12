"""Checkpoints from strangers III (issue 43): where the reader meets the training that follows it, the facade's
own ``set_states`` format, and what the budgets count. Each test builds its hostile file from the real MXNet
files under ``tests/golden/`` (or by construction) and asserts a ``ValueError`` naming the file, or a correct
load with MXNet's behaviour; each failed on the code before the fix (the docstring says how).
"""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import re
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest
from guards import no_hang
from mxnet_files import list_file
from pickle_bytes import dumps, from_states, integer, ndarray_record

from mxopt_jax import lr_scheduler
from mxopt_jax.mxnet_format import load_params, load_trainer, load_updater, read_states

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, GOLD = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"
MB = 2**20


# --------------------------------------------------------------------------- 11: every read capped
def test_max_bytes_caps_the_read_whatever_the_files_size(tmp_path):
    """Before: a 1 GiB sparse file with max_bytes=1 MiB was read whole (``max(size, max_bytes)``), 1 GiB of
    memory and 22 s before the ValueError; now it is refused from its size, nothing read."""
    path = tmp_path / "sparse.params"
    with open(path, "wb") as f:
        f.truncate(2**30)
    with pytest.raises(
        ValueError, match=r"sparse\.params: refused: the file holds 1073741824 bytes.*nothing was read"
    ):
        load_params(path, max_bytes=MB)


def test_a_file_larger_than_the_machine_is_a_value_error(tmp_path):
    """Before: a 64 GiB sparse file raised MemoryError (its default budget is 32 x its size)."""
    path = tmp_path / "huge.params"
    with open(path, "wb") as f:
        f.truncate(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") + 2**30)
    with pytest.raises(ValueError, match=r"huge\.params: refused: .* more than this machine's memory"):
        load_params(path)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc")
def test_a_link_to_proc_self_mem_is_refused_as_not_regular(tmp_path):
    """Before: ``OSError`` (EIO) reading /proc/self/mem through a symlink (a regular file by its mode)."""
    link = tmp_path / "x.states"
    link.symlink_to("/proc/self/mem")
    with pytest.raises(ValueError, match=r"x\.states: refused: .* pseudo-filesystems"):
        load_params(link)


# --------------------------------------------------------------------------- hand-made .states files
def _edited(path, **attrs):
    """The bytes of a real ``.states`` file with some of its optimizer's attributes replaced."""
    states, opt = from_states(*read_states(path))
    opt.attrs.update(attrs)
    return dumps((states, opt))


# --------------------------------------------------------------------------- 4: duplicate idx2name
def test_duplicate_idx2name_values_are_refused():
    """Before: ``{0: 'b', 1: 'w', 2: 'b', 3: 'w'}`` loaded; by name only indices 2 and 3 were updated, the
    others dropped without an error."""
    blob = _edited(CKPT / "mx20_adam.states", idx2name={0: "b", 1: "w", 2: "b", 3: "w"})
    with pytest.raises(
        ValueError, match=r"<states bytes>: .*'idx2name' names \['b', 'w'\] for more than one"
    ):
        load_updater(blob)
    # distinct names still load, and pair by name
    upd = load_updater(_edited(CKPT / "mx20_adam.states", idx2name={0: "a", 1: "b", 2: "c", 3: "d"}))
    assert [upd.layout[i][0] for i in range(4)] == ["a", "b", "c", "d"]


# --------------------------------------------------------------------------- 5: attributes MXNet lacks
@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_sgld_with_a_seed_is_refused(version):
    """Before: a ``seed`` attribute (MXNet's SGLD has none) chose the noise stream: two loads drew the same
    noise where a genuine file gets a fresh seed."""
    with pytest.raises(
        ValueError, match=r"<states bytes>: the optimizer has an attribute 'seed', which MXNet's SGLD"
    ):
        load_updater(_edited(CKPT / f"{version}_sgld.states", seed=7))
    a, b = (load_updater(CKPT / f"{version}_sgld.states").optimizer for _ in range(2))
    assert not np.array_equal(np.asarray(a._key), np.asarray(b._key))  # a genuine file: a fresh stream each


# --------------------------------------------------------------------------- 6: counts MXNet cannot write
@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        (
            {"_index_update_count": {0: 2**31 - 2, 1: 3, 2: 3, 3: 3}},
            r"update count of index 0 is 2147483646, past",
        ),
        (
            {"_all_index_update_counts": {0: {0: 3, 1: 2**31 - 2}}},
            r"update count of index 1 is 2147483646, past",
        ),
        ({"begin_num_update": 2**31 - 2}, r"'begin_num_update' = 2147483646 is past its num_update = 3"),
    ],
)
def test_counts_past_num_update_are_refused(attrs, match):
    """Before: a real FactorScheduler file with one count at 2**31 - 2 and num_update = 3 loaded; the first
    facade step looped over about 1.07e9 decays (42 min) and to_optax's rate dropped to stop_factor_lr."""
    blob = _edited(CKPT / "mx20_sgd_sched_mults.states", **attrs)
    with (
        no_hang(),
        pytest.raises(ValueError, match=rf"<states bytes>: the {match}|<states bytes>: .*{match}"),
    ):
        load_updater(blob)


def test_a_factor_scheduler_far_behind_its_query_answers_in_bounded_work():
    """Before: MXNet's ``while num_update > count + step`` loop, 2**31 iterations for this query."""
    s = lr_scheduler.FactorScheduler(step=1, factor=0.5, stop_factor_lr=1e-8, base_lr=1.0)
    with no_hang(30):
        assert s(2**31 - 1) == 1e-8
    assert s.count == 2**31 - 2  # where MXNet's loop stops
    s = lr_scheduler.FactorScheduler(step=1, factor=1 - 1e-9, stop_factor_lr=0.0, base_lr=1.0)
    with no_hang(30):
        lr = s(2**31 - 1)
    assert lr == pytest.approx(math.exp((2**31 - 2) * math.log(1 - 1e-9)), rel=1e-6) and s.count == 2**31 - 2
    # the first decays are MXNet's repeated multiplications, exactly
    s = lr_scheduler.FactorScheduler(step=2, factor=0.7, base_lr=0.05)
    ref = 0.05
    for _ in range(9):
        ref *= 0.7
    assert s(20) == ref


# --------------------------------------------------------------------------- 7: lr = None
def test_lr_none_without_a_scheduler_is_read_as_mxnets_constructor_reads_it():
    """Before: ``lr = None`` with no scheduler (MXNet's constructor makes it 0.01, so MXNet never writes it)
    loaded, then the first facade step raised TypeError; to_optax used 0.01."""
    import jax.numpy as jnp
    import optax

    blob = _edited(GOLD / "mx20_cnn_fp16.states", lr=None)
    ckpt = load_trainer(GOLD / "mx20_cnn_fp16.params", blob, loss="sum", lr_mult={})
    assert ckpt.optimizer.lr == 0.01
    tx, state = ckpt.to_optax()
    grads = {n: jnp.ones_like(p) for n, p in ckpt.params.items()}
    upd, _ = tx.update(grads, state, ckpt.params)
    functional = optax.apply_updates(ckpt.params, upd)
    facade = ckpt.updater({n: grads[n] for n in ckpt.trainable}, ckpt.params)
    for n in ckpt.trainable:
        np.testing.assert_array_equal(np.asarray(facade[n]), np.asarray(functional[n]))


# --------------------------------------------------------------------------- 1-3: pairing as MXNet pairs
def _npz_bytes(arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _step(ckpt, scale=1.0):
    """One facade step by name with deterministic gradients: ``{name: new weight}`` (NumPy)."""
    import jax.numpy as jnp

    grads = {n: jnp.full(ckpt.params[n].shape, scale * (1 + k), ckpt.params[n].dtype)
             for k, n in enumerate(sorted(ckpt.trainable))}  # fmt: skip
    return {n: np.asarray(w) for n, w in ckpt.updater(grads, ckpt.params).items()}


def test_gluon2_npz_names_with_legacy_prefixes_are_stripped_as_load_dict_strips_them():
    """Before: ``arg:`` / ``aux:`` prefixed member names were sorted as they are, so most parameters got
    another layer's state (or a shape error)."""
    params = load_params(GOLD / "mx20_twin.params")
    prefixed = {("aux:" if n.endswith("bias") else "arg:") + n: a for n, a in params.items()}
    states = GOLD / "mx20_twin.states"
    ref = load_trainer(GOLD / "mx20_twin.params", states, loss="sum", lr_mult={})
    got = load_trainer(_npz_bytes(prefixed), states, loss="sum", lr_mult={})
    assert got.names == ref.names
    for n in ref.names:
        np.testing.assert_array_equal(np.asarray(got.updater.states[got.index(n)][0]),
                                      np.asarray(ref.updater.states[ref.index(n)][0]))  # fmt: skip
    want, have = _step(ref), _step(got)
    for n in want:
        np.testing.assert_array_equal(have[n], want[n])
    # a name that strips to another one is a name matching two things
    twice = {**prefixed, "0.weight": params["0.weight"]}
    with pytest.raises(ValueError, match=r"<params bytes> holds 'arg:0\.weight' and '0\.weight'.*refused"):
        load_trainer(_npz_bytes(twice), states, loss="sum", lr_mult={})


def test_a_1x_params_file_in_another_record_order_pairs_by_name():
    """Before: the names list was paired with the file's records by position (the leaf suffix alone
    checked): '0.weight' got 'alpha_weight''s state and '1.weight' 'zeta_weight''s, silently."""
    meta = json.loads(str(np.load(GOLD / "mx19_twin.npz")["meta"]))
    names = meta["collect_params"]  # ['zeta_weight', 'zeta_bias', 'alpha_weight', 'alpha_bias']
    params = load_params(GOLD / "mx19_twin.params")
    order = ["1.weight", "1.bias", "0.weight", "0.bias"]  # valid: 1.x load_parameters loads by name
    shuffled = list_file([ndarray_record(params[n]) for n in order], order)
    states = GOLD / "mx19_twin.states"
    ref = load_trainer(GOLD / "mx19_twin.params", states, loss="sum", lr_mult={}, names=names)
    got = load_trainer(shuffled, states, loss="sum", lr_mult={}, names=names)
    assert got.names == ref.names == tuple(meta["trainer_names"])
    assert got.key_of == ref.key_of == dict(zip(meta["file_names"], names, strict=True))
    want, have = _step(ref), _step(got)
    for n in want:
        np.testing.assert_array_equal(have[n], want[n])
    # a key matching nothing, or more keys than parameters of a leaf name, is refused
    with pytest.raises(ValueError, match=r"names\[1\] = 'zeta_gamma' matches no parameter"):
        load_trainer(
            shuffled, states, loss="sum", lr_mult={}, names=["zeta_weight", "zeta_gamma", *names[2:]]
        )
    with pytest.raises(
        ValueError, match=r"names\[3\] = 'beta_weight' ends with 'weight'.*would match two things"
    ):
        load_trainer(shuffled, states, loss="sum", lr_mult={}, names=[*names[:3], "beta_weight"])


def test_a_missing_state_is_created_fresh_as_mxnets_updater_creates_it():
    """Before: a parameter whose index had no state became frozen (its gradients ignored) without a word;
    MXNet's Updater creates a fresh state and trains it."""
    raw, opt = read_states(GOLD / "mx20_cnn_adam.states")
    ref = load_trainer(GOLD / "mx20_cnn_adam.params", GOLD / "mx20_cnn_adam.states", loss="sum", lr_mult={})
    gone = ref.index("3.weight")
    blob = dumps(from_states({i: s for i, s in raw.items() if i != gone}, opt))
    with pytest.warns(UserWarning, match=r"no optimizer state for \['3\.weight'\]: as MXNet's Updater"):
        ckpt = load_trainer(GOLD / "mx20_cnn_adam.params", blob, loss="sum", lr_mult={})
    assert ckpt.fresh == ("3.weight",) and "3.weight" in ckpt.trainable
    assert ckpt.frozen == ("1.running_mean", "1.running_var")  # BatchNorm's statistics: grad_req 'null'
    before = np.asarray(ckpt.params["3.weight"])
    new = _step(ckpt)
    assert not np.array_equal(new["3.weight"], before)  # trained
    st = ckpt.updater.states[gone]  # Adam's fresh state after one update: m = (1 - beta1) * (g + wd * w)
    g = ckpt.optimizer.rescale_grad * np.full(before.shape, 1 + sorted(ckpt.trainable).index("3.weight"))
    g = g + ckpt.optimizer.wd * before
    np.testing.assert_allclose(np.asarray(st[0]), (1 - ckpt.optimizer.beta1) * g, rtol=1e-5)
    assert ckpt.optimizer.index_update_counts[gone] == 4  # the file's count (3) goes on, as MXNet counts
    # a parameter named grad_req 'null' keeps no state and is never updated
    ckpt = load_trainer(GOLD / "mx20_cnn_adam.params", blob, loss="sum", lr_mult={}, frozen=["3.weight"])
    assert ckpt.fresh == () and "3.weight" in ckpt.frozen
    with pytest.raises(ValueError, match=r"has an optimizer state .* grad_req 'null'"):
        load_trainer(GOLD / "mx20_cnn_adam.params", GOLD / "mx20_cnn_adam.states", loss="sum", lr_mult={},
                     frozen=["3.weight"])  # fmt: skip


# --------------------------------------------------------------------------- 7-8: the facade's own format
def _facade_blob(name="sgd", **kw):
    """What ``Updater.get_states(dump_optimizer=True)`` writes after two updates."""
    import jax.numpy as jnp

    import mxopt_jax

    upd = mxopt_jax.get_updater(mxopt_jax.create(name, **kw))
    for i in range(2):
        upd(i, jnp.full((3,), 0.5), jnp.ones(3))
    return upd.get_states(dump_optimizer=True)


def _manifest(blob):
    zf = zipfile.ZipFile(io.BytesIO(blob))
    return json.loads(zf.read("manifest.json")), {
        n: zf.read(n) for n in zf.namelist() if n != "manifest.json"
    }


def _archive(manifest, members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        zf.writestr("manifest.json", manifest if isinstance(manifest, (str, bytes)) else json.dumps(manifest))
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


def _fresh(name="sgd", **kw):
    import mxopt_jax

    return mxopt_jax.get_updater(mxopt_jax.create(name, **kw))


def _with_attrs(**attrs):
    manifest, members = _manifest(_facade_blob())
    manifest["optimizer"]["attrs"].update(attrs)
    return _archive(manifest, members)


@pytest.mark.parametrize(
    ("attrs", "match"),
    [
        ({"lr_scheduler": {"int": 5}}, r"'lr_scheduler' to 5; it must be None or one of mxopt_jax\.lr_scheduler"),
        ({"clip_gradient": {"str": "x"}}, r"do not fit SGD: .*clip_gradient"),
        ({"momentum": {"float": "-1.0"}}, r"do not fit SGD: .*momentum"),
        ({"num_update": {"int": 2**40}}, r"'num_update' to 1099511627776; it must be an update count"),
        ({"begin_num_update": {"int": 9}}, r"begin_num_update = 9 is past its num_update = 1"),
        ({"_all_index_update_counts": {"dict": [[{"int": 0}, {"dict": [[{"int": 0}, {"int": 2**31 - 2}]]}]]}},
         r"update count of index 0 \(device 0\) is 2147483646, past its num_update = 1"),
        ({"idx2name": {"dict": [[{"int": 0}, {"str": "w"}], [{"int": 1}, {"str": "w"}]]}}, r"'idx2name' .* distinct"),
        ({"_prep": {"int": 1}}, r"unknown optimizer attributes \['_prep'\]"),
    ],
)  # fmt: skip
def test_facade_attributes_are_checked_against_what_the_class_accepts(attrs, match):
    """Before: attributes whose current value is None were never checked (``lr_scheduler = 5``,
    ``clip_gradient = "x"`` loaded, then the next update raised TypeError); counts were not checked."""
    upd = _fresh()
    with pytest.raises(ValueError, match=rf"^set_states: .*{match}"):
        upd.set_states(_with_attrs(**attrs))
    assert upd.optimizer.lr_scheduler is None and upd.optimizer.num_update == 0 and upd.states == {}


def test_facade_scheduler_is_checked_as_on_the_mxnet_path():
    """Before: ``lr_scheduler = FactorScheduler(step=0)`` injected into an SGD loaded, then the next update
    hung (``while num_update > count + 0``)."""
    good = {"scheduler": "FactorScheduler", "attrs": {"dict": [
        [{"str": k}, v] for k, v in {
            "base_lr": {"float": "0.1"}, "warmup_steps": {"int": 0}, "warmup_final_lr": {"float": "0.1"},
            "warmup_begin_lr": {"float": "0.0"}, "warmup_mode": {"str": "linear"}, "step": {"int": 1},
            "factor": {"float": "0.5"}, "stop_factor_lr": {"float": "1e-08"}, "count": {"int": 1}}.items()]}}  # fmt: skip
    upd = _fresh()
    upd.set_states(_with_attrs(lr_scheduler=good))
    assert isinstance(upd.optimizer.lr_scheduler, lr_scheduler.FactorScheduler)
    for field, value, match in [
        ("step", {"int": 0}, r"cannot rebuild .*FactorScheduler.*step"),
        ("count", {"int": 2**30}, r"archived FactorScheduler's attribute 'count'"),
        (
            "factor",
            {"float": "nan"},
            r"archived FactorScheduler's attribute 'factor' must be a finite number",
        ),
    ]:
        bad = json.loads(json.dumps(good))
        for pair in bad["attrs"]["dict"]:
            if pair[0]["str"] == field:
                pair[1] = value
        upd = _fresh()
        with no_hang(), pytest.raises(ValueError, match=rf"^set_states: .*{match}"):
            upd.set_states(_with_attrs(lr_scheduler=bad))
        assert upd.optimizer.lr_scheduler is None
    extra = json.loads(json.dumps(good))
    extra["attrs"]["dict"].append([{"str": "__class__"}, {"str": "x"}])
    upd = _fresh()
    upd.set_states(_with_attrs(lr_scheduler=extra))  # attributes the scheduler does not keep are left out
    assert "__class__" not in vars(upd.optimizer.lr_scheduler)


def test_facade_lr_none_without_a_scheduler_reads_as_the_constructor():
    """Before: ``lr = None`` and no scheduler loaded, then the first facade step raised TypeError."""
    import jax.numpy as jnp

    upd = _fresh()
    upd.set_states(_with_attrs(lr=None))
    assert upd.optimizer.lr == 0.01
    np.testing.assert_allclose(np.asarray(upd(0, jnp.ones(3), jnp.ones(3))), 1 - 0.01, rtol=1e-6)


def _patched(blob, method=None, flags=None):
    """``blob`` with every member's compression method and / or general-purpose flags replaced (local and
    central headers)."""
    out = bytearray(blob)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = out.find(sig)
        while pos >= 0:
            if flags is not None:
                out[pos + at : pos + at + 2] = struct.pack("<H", flags)
            if method is not None:
                out[pos + at + 2 : pos + at + 4] = struct.pack("<H", method)
            pos = out.find(sig, pos + 4)
    return bytes(out)


def test_facade_archives_that_break_zip_zlib_or_json_are_value_errors():
    """Before: RecursionError (deep JSON), zlib.error, RuntimeError (an encrypted member),
    NotImplementedError (compression method 99) escaped set_states."""
    manifest, members = _manifest(_facade_blob())
    deep = (
        '{"format": "mxopt_jax.updater_states", "version": 1, "states": '
        + "[" * 100_000
        + "]" * 100_000
        + "}"
    )
    deflated = _archive(manifest, members, zipfile.ZIP_DEFLATED)
    head = deflated.find(b"PK\x03\x04")
    start = head + 30 + struct.unpack("<H", deflated[head + 26 : head + 28])[0]
    corrupt = bytearray(deflated)
    corrupt[start : start + 8] = b"\xff" * 8  # the manifest's deflate stream
    cases = [
        (_archive(deep, members), r"nests arrays and objects deeper than 192"),
        (bytes(corrupt), r"not an mxopt_jax Updater state archive"),
        (_patched(_archive(manifest, members), flags=1), r"not an mxopt_jax Updater state archive"),
        (_patched(_archive(manifest, members), method=99), r"not an mxopt_jax Updater state archive"),
    ]
    for blob, match in cases:
        upd = _fresh()
        with pytest.raises(ValueError, match=rf"^set_states: .*{match}"):
            upd.set_states(blob)
        assert upd.states == {}


def test_facade_archives_are_read_within_the_budget():
    """Before: a 1 MB deflate bomb manifest took 2 GiB and loaded. Now every member's declared size is
    counted before it is decompressed, and the manifest's JSON objects before they are parsed."""
    import tracemalloc

    manifest, members = _manifest(_facade_blob())
    text = json.dumps(manifest)
    bomb = text[:-1] + ", " + " " * (100 * MB) + "}"  # valid JSON: 100 MB of spaces
    blob = _archive(bomb, members, zipfile.ZIP_DEFLATED)
    assert len(blob) < 1 * MB
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"^set_states: refused: member 'manifest\.json', decompressed"):
            _fresh().set_states(blob)
        # JSON that parses into many objects: counted before it is parsed
        many = text[:-1] + ', "pad": [' + ",".join(["[]"] * 600_000) + "]}"
        with pytest.raises(ValueError, match=r"^set_states: refused: the manifest's JSON"):
            _fresh().set_states(_archive(many, members, zipfile.ZIP_DEFLATED))
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 * MB, f"{peak / MB:.0f} MiB"
    _fresh().set_states(_archive(many, members), max_bytes=200 * MB)  # an archive you trust: raise the cap


# --------------------------------------------------------------------------- 9-10: budgets count what is built
def _within(fn, blob, cap):
    """``fn(blob, max_bytes=cap)`` ends in a ValueError naming the bytes or a load, and Python's allocations
    stay within ``cap`` (``tracemalloc``: what the reader's budget stands for)."""
    tracemalloc.start()
    try:
        try:
            fn(blob, max_bytes=cap)
            outcome = "loaded"
        except ValueError as exc:
            assert str(exc).startswith("<states bytes>: "), exc
            outcome = str(exc)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= cap, (
        f"{peak / MB:.1f} MiB allocated against a budget of {cap / MB:.1f} MiB ({outcome[:120]})"
    )
    return outcome


@pytest.mark.parametrize(
    "blob",
    [
        b"\x80\x02}K\x00](" + b"]" * 50_000 + b"es.",  # {0: [[], [], ...]}: the walk's memo per container
        b"\x80\x02}K\x00](" + b"N\x85" * 50_000 + b"es.",  # {0: [(None,), ...]}
        b"\x80\x02}K\x00S'" + b"\\0" * 100_000 + b"'\ns.",  # a protocol-0 STRING of escapes
    ],
    ids=["empty-lists", "tuples", "string-escapes"],
)
def test_the_budget_counts_every_container_memo_entry_and_decoded_string(blob):
    """Before (at 16 times these sizes): 188 and 174 MiB for 64 MiB stated (800k empty lists, 750k tuples:
    the walk's memo, about 155 B a container, was not counted), 179 MiB for 122 MiB (2M STRING escapes,
    decoded through a list of pieces). Here with ``max_bytes`` scaled down alike. (880k MEMOIZE, 82 MiB of
    resident memory for 64 MiB, is a case of the fuzzer's, which measures resident memory in a child.)"""
    cap = max(8 * MB, 32 * len(blob))
    _within(read_states, blob, cap)


def test_filled_in_and_shared_states_are_counted_per_use():
    """Before: Adam states ``{i: (A, None)}`` for 880 indices sharing one 64 KiB array (a 72 kB file) took
    146 MiB: each ``None`` filled with zeros and both fields moved to the device, uncounted."""
    arr = np.zeros(16 * 2**10, np.float32)  # 64 KiB
    _, opt = from_states(*read_states(CKPT / "mx20_adam.states"))
    opt.attrs.update(
        _index_update_count={}, _all_index_update_counts={0: {}}, num_update=0, lr_scheduler=None
    )
    # index i (i >= 1) shares memo entry of the first state tuple
    share = b"".join(integer(i) + b"h\x01s" for i in range(1, 880))
    head = b"\x80\x02}K\x00" + dumps((arr, None))[2:-1] + b"q\x01s" + share
    blob = b"\x80\x02(" + head + dumps(opt)[2:-1] + b"t."
    assert len(blob) < 90_000
    msg = _within(load_updater, blob, 64 * MB)
    assert re.search(r"refused: (the zeros filling in|the state of index \d+ on the device)", msg), msg
    assert (
        load_updater(blob, max_bytes=1024 * MB).optimizer.num_update == 0
    )  # a file you trust: raise the cap
