"""Resuming real MXNet checkpoints: ``mxopt_jax.mxnet_format`` against MXNet 1.9.1 and 2.0.0b1.

The files under ``tests/golden/mxnet_ckpt/`` were written by real MXNet (``tools/make_mxnet_checkpoints.py``):
a small Gluon model trained a few steps, ``save_parameters`` + ``Trainer.save_states`` (or an
``mx.optimizer.Updater``'s ``get_states``), then MXNet's own continuation after resuming from those files.
Here the same files are resumed with :func:`load_params` / :func:`load_updater`, fed MXNet's recorded
gradients, and every step is compared with MXNet's weights at tests/rules/test_golden.py's tolerances.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import pickle
import struct
import warnings
import zipfile

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from golden import TOL
from sampling import default_run

import mxopt_jax
from mxopt_jax.mxnet_format import MXNetObject, load_params, load_updater, read_states

CKPT = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_ckpt"
CASES = sorted(p.stem for p in CKPT.glob("mx*_*.npz") if not p.stem.endswith("_formats"))

# The differences the resume must announce (substring of the UserWarning); every other case must resume
# without any warning of ours.
EXPECTED_WARNINGS = {
    "mx19_adagrad": "AdaGrad puts eps inside the square root",
    "mx19_adadelta": "AdaDelta has no learning rate",
    "mx19_adamax": "Adamax has no epsilon",
    "mx19_rmsprop_plain": "non-centered RMSProp puts epsilon inside",
    "mx19_nadam": "shares one momentum schedule",
    "mx20_nadam": "shares one momentum schedule",
    "mx19_sgd_fp16": "lazy_update=True with multi_precision=True",
    "mx19_nag_wd": "NAG updates the momentum with the already-updated weight",
    "mx20_lamb_noagg": "counts every update twice",
    "mx19_groupadagrad": "GroupAdaGrad puts eps inside the square root",
    "mx19_test": "Test optimizer computes w += rescale_grad * grad",
}
# Cases that continue with MXNet 2.0 / mxopt_jax math instead of the file's (announced above): the largest
# absolute difference from MXNet's continuation stays below this bound (measured: 3.6e-4, 8.8e-6, 4.1e-5).
APPROX = {"mx19_nag_wd": 1e-3, "mx20_lamb_noagg": 2e-5, "mx19_groupadagrad": 1e-4}
# MXNet 1.9.1's Test optimizer computes another function altogether (w += rescale_grad * g): its file loads
# (hyperparameters, counts) and the run continues with MXNet 2.0's Test, announced; nothing to compare.
DIFFERENT = {"mx19_test"}
# SGLD draws MXNet's noise from MXNet's global generator: the resume restores everything deterministic
# (hyperparameters, scheduler position, counts) and the continuation is compared in distribution.
NOISY = {"mx19_sgld", "mx20_sgld"}


def _meta(case: str) -> tuple[dict, dict]:
    with np.load(CKPT / f"{case}.npz") as z:
        data = {k: z[k] for k in z.files}
    return json.loads(str(data.pop("meta"))), data


class _Param:
    """What MXNet's Trainer.load_states re-attaches as param_dict: objects with lr_mult / wd_mult."""

    def __init__(self, lr_mult: float, wd_mult: float) -> None:
        self.lr_mult, self.wd_mult = lr_mult, wd_mult


def _resume(case: str, meta: dict):
    """load_updater as a user would call it for this file; returns (updater, our warnings)."""
    kw = {}
    if meta["saved_by"] == "trainer":
        kw["param_dict"] = {
            i: _Param(lr, wd)
            for i, (lr, wd) in enumerate(zip(meta["param_lr_mult"], meta["param_wd_mult"], strict=True))
        }
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        upd = load_updater(CKPT / f"{case}.states", **kw)
    ours = [
        str(w.message) for w in rec if issubclass(w.category, UserWarning) and "mxnet_ckpt" in str(w.message)
    ]
    return upd, ours


# --------------------------------------------------------------------------- load_params
def test_cases_cover_the_optimizers():
    names = {_meta(c)[0]["optimizer"] for c in CASES}
    want = {"sgd", "nag", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "ftrl", "ftml", "nadam", "lamb"}
    want |= {"lans", "lars", "signum", "adamax", "dcasgd", "ccsgd", "lbsgd", "groupadagrad", "test", "sgld"}
    assert want <= names, want - names
    assert {c[:4] for c in CASES} == {"mx19", "mx20"}
    assert sum(f.stat().st_size for f in CKPT.iterdir()) < 2_000_000


@pytest.mark.parametrize("case", CASES)
def test_load_params_equals_mxnet_load(case):
    meta, data = _meta(case)
    params = load_params(CKPT / f"{case}.params")
    assert sorted(params) == sorted(meta["param_names"])
    for name in meta["param_names"]:
        ref = data[f"loaded_{name}"]
        assert params[name].dtype == ref.dtype and params[name].shape == ref.shape
        np.testing.assert_array_equal(params[name], ref)


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_load_params_formats_equal_mxnet_load(version):
    with np.load(CKPT / f"{version}_formats.npz") as z:
        ref = {k: z[k] for k in z.files}
    lst = load_params(CKPT / f"{version}_list.params")  # nd.save of an unnamed list: keys '0', '1', ...
    n = len([k for k in ref if k.startswith("list_") and not k.endswith("_dtype")])
    assert list(lst) == [str(i) for i in range(n)]
    for i in range(n):
        assert lst[str(i)].dtype.name == str(ref[f"list_{i}_dtype"])
        np.testing.assert_array_equal(lst[str(i)], ref[f"list_{i}"])
    dct = load_params((CKPT / f"{version}_dict.params").read_bytes())  # bytes work too
    assert list(dct) == ["arg:fc1_weight", "arg:fc1_bias", "aux:bn_moving_mean"]
    for k, a in dct.items():
        assert a.dtype == ref[f"dict_{k}"].dtype
        np.testing.assert_array_equal(a, ref[f"dict_{k}"])
    if (
        version == "mx20"
    ):  # numpy-mode files: npx.save (.npy) and npx.savez / Gluon 2.0 save_parameters (.npz)
        for stem in ("np", "npz", "npz_list"):
            got = load_params(CKPT / f"mx20_{stem}.params")
            pre = stem + "_"
            want = {k[len(pre) :]: v for k, v in ref.items() if k.startswith(pre)}
            if stem == "npz":
                want = {k: v for k, v in want.items() if not k.startswith("list_")}
            assert set(got) == set(want), (stem, set(got), set(want))
            for k, v in want.items():
                assert got[k].dtype == v.dtype and got[k].shape == v.shape, (stem, k)
                np.testing.assert_array_equal(got[k], v)


def test_load_params_refuses_sparse_storage():
    with pytest.raises(ValueError, match=r"mx19_sparse\.params.*row_sparse storage; only dense"):
        load_params(CKPT / "mx19_sparse.params")


# --------------------------------------------------------------------------- resuming
# The default run: every MXNet 2.0 file and every 1.9.1 file the resume treats apart (a warning, an approximate or
# another continuation, two devices, float16, multipliers, a states-only file, the 1.x-only optimizers); the
# 1.9.1 twins of 2.0 files that resume with the same math run under -m slow.
SAME_AS_MX20 = {
    c
    for c in CASES
    if c.startswith("mx19_")
    and "mx20" + c[4:] in CASES
    and c not in {*EXPECTED_WARNINGS, *APPROX, *DIFFERENT, *NOISY}
    and not c.endswith(("_2dev", "_fp16", "_mults", "_nodump"))
}


@pytest.mark.parametrize("case", default_run(CASES, set(CASES) - SAME_AS_MX20))
def test_resume_matches_mxnet_continuation(case):
    meta, data = _meta(case)
    name = meta["optimizer"]
    rtol, atol = TOL.get(name, (1e-4, 1e-5))
    params = load_params(CKPT / f"{case}.params")
    weights = [jnp.asarray(params[n]) for n in meta["index_names"]]
    if case.endswith("_nodump"):
        # states only: the caller passes the optimizer (MXNet's set_states keeps the optimizer's own counts)
        with pytest.raises(ValueError, match=r"dump_optimizer=False.*pass the optimizer"):
            load_updater(CKPT / f"{case}.nodump.states")
        upd = load_updater(CKPT / f"{case}.nodump.states", optimizer=mxopt_jax.create(name, **meta["kwargs"]))
        ours = []
    else:
        upd, ours = _resume(case, meta)
    if case in EXPECTED_WARNINGS:
        assert any(EXPECTED_WARNINGS[case] in m for m in ours), ours
    else:
        assert ours == [], ours
    opt = upd.optimizer
    assert type(opt).__name__.lower() == name
    n = len(weights)
    if case in DIFFERENT:
        _, mx = read_states(CKPT / f"{case}.states")
        assert opt.num_update == mx.num_update and opt.lr == mx.lr and opt.wd == mx.wd
        return
    if case in NOISY:
        _check_sgld_continuation(upd, {**meta, "case": case}, data, weights)
        return
    if case in APPROX:
        err = 0.0
        for k in range(meta["cont"]):
            opt.rescale_grad = float(data[f"rescale_{k}"])
            weights = upd(list(range(n)), [jnp.asarray(data[f"grad_{k}_{i}"]) for i in range(n)], weights)
            err = max(
                err,
                *(float(np.max(np.abs(np.asarray(weights[i]) - data[f"weight_{k}_{i}"]))) for i in range(n)),
            )
        assert 0 < err < APPROX[case], err
        return
    for k in range(meta["cont"]):
        opt.rescale_grad = float(data[f"rescale_{k}"])  # Trainer.step(batch_size) sets 1 / batch_size
        grads = [jnp.asarray(data[f"grad_{k}_{i}"]) for i in range(n)]
        weights = upd(list(range(n)), grads, weights)
        for i in range(n):
            where = f"{case}: step {k} param {i}"
            ref = data[f"weight_{k}_{i}"]
            if meta["dtype"] == "float16":
                master = np.asarray(upd.states[i][0])
                np.testing.assert_allclose(
                    master, data[f"master_{k}_{i}"], rtol=rtol, atol=atol, err_msg=where
                )
                w = np.asarray(weights[i]).astype(np.float32)
                assert weights[i].dtype == jnp.float16
                np.testing.assert_array_equal(w, master.astype(np.float16).astype(np.float32), err_msg=where)
                rw = ref.astype(np.float32)
                ulp = np.spacing(np.abs(ref)).astype(np.float32)
                assert np.all(np.abs(w - rw) <= atol + rtol * np.abs(rw) + ulp), where
            else:
                assert weights[i].dtype == ref.dtype
                np.testing.assert_allclose(np.asarray(weights[i]), ref, rtol=rtol, atol=atol, err_msg=where)
    if not case.endswith("_nodump"):
        assert opt.num_update == meta["final_num_update"]
        assert {str(k): v for k, v in opt.index_update_counts.items()} == meta["final_counts"]
    if "_2dev" in case:  # per-device counts: device 1's come back from the file; we continued on device 0
        _, mx = read_states(CKPT / f"{case}.states")
        assert set(opt.all_index_update_counts) == {0, 1}
        assert opt.all_index_update_counts[1] == mx._all_index_update_counts[1] == {i: 3 for i in range(4)}
        assert meta["final_all_counts"]["0"] == {str(i): 7 for i in range(4)}


def _check_sgld_continuation(upd, meta, data, weights):
    """Each step from MXNet's weights: ours - MXNet's = our noise - MXNet's noise, N(0, 2 lr) per element when
    the deterministic part (scheduled lr at the restored position, counts, rescale_grad, wd) matches."""
    opt, n = upd.optimizer, len(weights)
    assert opt.lr is None and opt.lr_scheduler is not None
    _, mx = read_states(CKPT / f"{meta['case']}.states")
    assert vars(opt.lr_scheduler) == vars(mx.lr_scheduler)  # the scheduler at MXNet's position
    z = []
    for k in range(meta["cont"]):
        opt.rescale_grad = float(data[f"rescale_{k}"])
        lr = opt.lr_scheduler(opt.num_update + 1)  # the rate of the coming update (MXNet counts first)
        grads = [jnp.asarray(data[f"grad_{k}_{i}"]) for i in range(n)]
        new = upd(list(range(n)), grads, weights)
        for i in range(n):
            z.append((np.asarray(new[i]) - data[f"weight_{k}_{i}"]).ravel() / np.sqrt(2 * lr))
        weights = [jnp.asarray(data[f"weight_{k}_{i}"]) for i in range(n)]
    z = np.concatenate(z)
    assert z.size > 80 and abs(z.mean()) < 0.3 and 0.8 < z.std() < 1.2, (z.mean(), z.std())
    assert opt.num_update == meta["final_num_update"]
    assert {str(k): v for k, v in opt.index_update_counts.items()} == meta["final_counts"]


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_restores_optimizer_attributes(version):
    states, mx = read_states(CKPT / f"{version}_upd_adam_mults.states")
    assert isinstance(mx, MXNetObject) and mx.mx_class == "Adam"
    opt = load_updater(CKPT / f"{version}_upd_adam_mults.states").optimizer
    assert type(opt) is type(mxopt_jax.create("adam"))
    for k in (
        "beta1",
        "beta2",
        "epsilon",
        "wd",
        "begin_num_update",
        "num_update",
        "lr",
        "lr_mult",
        "wd_mult",
        "idx2name",
    ):
        assert getattr(opt, k) == getattr(mx, k), k
    assert opt.rescale_grad == mx.rescale_grad
    assert opt.lr_mult == {0: 2.0, "w1_weight": 0.5}
    assert opt.idx2name[1] == "b0_weight"
    assert opt.all_index_update_counts == {0: {i: 8 for i in range(4)}}
    # a scheduler comes back as the mxopt_jax class at MXNet's position
    _, mx = read_states(CKPT / f"{version}_sgd_sched_mults.states")
    opt = load_updater(CKPT / f"{version}_sgd_sched_mults.states").optimizer
    sched = opt.lr_scheduler
    assert isinstance(sched, mxopt_jax.lr_scheduler.FactorScheduler)
    assert vars(sched) == {k: v for k, v in vars(mx.lr_scheduler).items()}
    assert opt.lr is None and opt.learning_rate == mx.lr_scheduler.base_lr


def test_nadam_schedule_and_signum_sign():
    _, mx = read_states(CKPT / "mx20_nadam.states")
    upd, _ = _resume("mx20_nadam", _meta("mx20_nadam")[0])
    for st in upd.states.values():
        assert float(st[2]) == pytest.approx(mx.m_schedule, rel=1e-6)
    states, _ = read_states(CKPT / "mx20_signum.states")
    upd = load_updater(CKPT / "mx20_signum.states")
    for i, st in states.items():  # MXNet keeps the negated EMA
        np.testing.assert_array_equal(np.asarray(upd.states[i][0]), -st)


def test_multi_precision_layouts():
    """1.9.1 SGD keeps (momentum, master), 2.0 (master, momentum): both load as mxopt_jax's (master, fields)."""
    for version in ("mx19", "mx20"):
        states, _ = read_states(CKPT / f"{version}_sgd_fp16.states")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            upd = load_updater(CKPT / f"{version}_sgd_fp16.states")
        for i, st in states.items():
            master = st[1] if version == "mx19" else st[0]
            mom = st[0] if version == "mx19" else st[1]
            np.testing.assert_array_equal(np.asarray(upd.states[i][0]), master)
            np.testing.assert_array_equal(np.asarray(upd.states[i][1][0]), mom)


def test_optimizer_argument_with_a_full_file_warns_and_file_wins():
    with pytest.warns(UserWarning, match="replaces the one passed"):
        upd = load_updater(CKPT / "mx20_adam.states", optimizer=mxopt_jax.create("sgd"))
    assert type(upd.optimizer) is type(mxopt_jax.create("adam"))


def test_state_not_fitting_the_optimizer():
    with pytest.raises(ValueError, match=r"index 0 does not have the layout of MXNet 2.0 adam"):
        load_updater(CKPT / "mx20_upd_sgd_nodump.nodump.states", optimizer=mxopt_jax.create("adam"))


def test_set_states_points_to_load_updater():
    upd = mxopt_jax.get_updater(mxopt_jax.create("adam"))
    with pytest.raises(ValueError, match=r"mxopt_jax\.mxnet_format\.load_updater"):
        upd.set_states((CKPT / "mx20_adam.states").read_bytes())


# --------------------------------------------------------------------------- hostile files
def _ndarray_record(shape, flag=0, data=b"", stype=0, magic=0xF993FAC9):
    out = (
        struct.pack("<Ii", magic, stype)
        + struct.pack("<i", len(shape))
        + struct.pack(f"<{len(shape)}q", *shape)
    )
    return out + struct.pack("<iii", 1, 0, flag) + data


def _list_file(records, names=()):
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records) + struct.pack("<Q", len(names))
    for n in names:
        out += struct.pack("<Q", len(n)) + n.encode()
    return out


def test_bfloat16_records():
    vals = np.array([1.5, -2.0, 0.25], dtype=ml_dtypes.bfloat16)
    got = load_params(_list_file([_ndarray_record((3,), flag=12, data=vals.tobytes())], ["b"]))
    assert got["b"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got["b"].astype(np.float32), [1.5, -2.0, 0.25])


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_truncated_params(version):
    for stem in ("dict", "list"):
        data = (CKPT / f"{version}_{stem}.params").read_bytes()
        for cut in (0, 7, 16, 24, 30, 45, len(data) // 2, len(data) - 1):
            with pytest.raises(ValueError, match=r"<params bytes>: (truncated|corrupted|wrong)"):
                load_params(data[:cut])
    data = (CKPT / f"{version}_adam.params").read_bytes()
    for cut in (10, len(data) // 2, len(data) - 3):
        with pytest.raises(ValueError, match="truncated|corrupted"):
            load_params(data[:cut])


def test_wrong_magic(tmp_path):
    p = tmp_path / "bad.params"
    p.write_bytes(b"\x13\x01" + b"\0" * 30)
    with pytest.raises(ValueError, match=r"bad\.params: wrong magic 0x113"):
        load_params(p)
    rec = _ndarray_record((2,), data=b"\0" * 8, magic=0xDEADBEEF)
    with pytest.raises(ValueError, match=r"wrong array magic 0xdeadbeef"):
        load_params(_list_file([rec]))
    with pytest.raises(ValueError, match=r"unknown dtype flag 99"):
        load_params(_list_file([_ndarray_record((2,), flag=99, data=b"\0" * 8)]))
    with pytest.raises(ValueError, match=r"csr storage"):
        load_params(_list_file([_ndarray_record((2,), stype=2)]))


def test_huge_declared_sizes_are_checked_before_allocating():
    huge = [
        struct.pack("<QQQ", 0x112, 0, 2**62),  # array count
        _list_file([_ndarray_record((2**31, 2**31), data=b"\0" * 64)]),  # 2**62 elements
        _list_file([_ndarray_record((2**40,), flag=1)]),
        _list_file([_ndarray_record((2,), data=b"\0" * 8)])[:-8]
        + struct.pack("<QQ", 1, 2**60),  # name length
        struct.pack("<QQQ", 0x112, 0, 1) + struct.pack("<Iii", 0xF993FAC9, 0, 2**30),  # ndim
    ]
    for blob in huge:
        with pytest.raises(ValueError, match="corrupted|truncated"):
            load_params(blob)
    # .npy / .npz with a huge declared shape
    hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1024), }"
    npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\0" * 16
    with pytest.raises(ValueError, match="declares shape"):
        load_params(npy)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("w.npy", npy)
    with pytest.raises(ValueError, match="declares shape"):
        load_params(buf.getvalue())
    obj = b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    with pytest.raises(ValueError, match="object arrays are refused"):
        load_params(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(obj)) + obj + b"\0" * 8)


def _write_sentinel(path):  # what a malicious pickle would call
    pathlib.Path(path).write_text("pwned")
    return {}


class _SystemCall:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class _PythonCall:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_write_sentinel, (self.path,))


@pytest.mark.parametrize("kind", ["os.system", "function", "inside-states", "protocol-0"])
def test_pickle_that_would_run_code_is_refused(tmp_path, kind):
    sentinel = tmp_path / "sentinel"
    if kind == "os.system":
        blob, refused = pickle.dumps(_SystemCall(sentinel)), r"(posix|os)\.system"
    elif kind == "function":
        blob, refused = pickle.dumps(_PythonCall(sentinel)), r"test_mxnet_format\._write_sentinel"
    elif kind == "inside-states":
        # a states dict that looks genuine, with the call hidden in one entry
        payload = ({0: None, 1: _PythonCall(sentinel)}, {"lr": 0.1})
        blob, refused = pickle.dumps(payload), r"test_mxnet_format\._write_sentinel"
    else:
        blob, refused = pickle.dumps(_SystemCall(sentinel), protocol=0), r"(posix|os)\.system"
    path = tmp_path / "evil.states"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=rf"evil\.states: refused to unpickle {refused}"):
        load_updater(path)
    with pytest.raises(ValueError, match="refused to unpickle"):
        read_states(blob)
    assert not sentinel.exists()


def test_pickle_naming_an_unknown_class_is_refused():
    class_names = [
        (b"mxnet.optimizer.optimizer", b"EvilOptimizer"),
        (b"collections", b"OrderedDict"),
        (b"mxnet.lr_scheduler", b"os"),
        (b"builtins", b"eval"),
        (b"numpy", b"load"),
    ]
    for module, name in class_names:
        blob = b"\x80\x04c" + module + b"\n" + name + b"\n)\x81."  # GLOBAL, EMPTY_TUPLE, NEWOBJ, STOP
        with pytest.raises(ValueError, match=rf"refused to unpickle {module.decode()}\.{name.decode()}"):
            read_states(blob)


def test_not_a_states_file():
    with pytest.raises(
        ValueError, match=r"mx20_adam\.params: not an MXNet \.states file \(this is a parameter file"
    ):
        load_updater(CKPT / "mx20_adam.params")
    with pytest.raises(ValueError, match=r"not a readable MXNet \.states pickle"):
        load_updater((CKPT / "mx20_adam.states").read_bytes()[:100])
    with pytest.raises(ValueError, match=r"does not hold an Updater's states dict"):
        load_updater(pickle.dumps([1, 2, 3]))
    with pytest.raises(ValueError, match=r"pickled NDArray.*truncated"):
        good = (CKPT / "mx20_sgd_mom.states").read_bytes()
        # shorten the first NDArray payload's declared element count mismatch: corrupt its shape
        i = good.index(b"\xca\xfa\x93\xf9")
        bad = good[: i + 12] + struct.pack("<q", 10**6) + good[i + 20 :]
        load_updater(bad)


def test_migration_guide_example_runs(monkeypatch):
    """The first "Resuming an MXNet checkpoint" example in docs/migration.md, run as written from the repo root:
    a BatchNorm checkpoint resumed by name, the running statistics untouched."""
    root = pathlib.Path(__file__).parents[2]
    section = (root / "docs" / "migration.md").read_text().split("## 6. Resuming an MXNet checkpoint", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(root)
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, "docs/migration.md", "exec"), ns)  # our own documentation
    ckpt = ns["ckpt"]
    assert ckpt.names == (
        "0.bias",
        "0.weight",
        "1.beta",
        "1.gamma",
        "1.running_mean",
        "1.running_var",
        "3.bias",
        "3.weight",
    )
    assert ckpt.frozen == ("1.running_mean", "1.running_var")
    assert ckpt.updater.optimizer.num_update == 4
    assert all(ns["params"][n] is ckpt.params[n] for n in ckpt.frozen)


def test_docstring_examples_run(monkeypatch):
    import doctest

    from mxopt_jax._src import mxnet_format  # the implementation holds the examples

    monkeypatch.chdir(pathlib.Path(__file__).parents[2])
    result = doctest.testmod(mxnet_format, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 15 and result.failed == 0, result


def test_pickle_bombs_stay_cheap():
    """Shared references nested deeply (exponential if walked naively), cycles, and a NumPy array
    reconstruction asking for a huge allocation."""
    x: object = None
    for _ in range(60):
        x = (x, x)
    states, _ = read_states(pickle.dumps({0: x}))
    assert states[0][0] is states[0][1]
    cyc: list = []
    cyc.append(cyc)
    with pytest.raises(ValueError, match="nesting too deep"):
        read_states(pickle.dumps({0: cyc}))
    blob = b"\x80\x04cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nJ\x00\x00\x00\x40\x85c_codecs\nencode\n"
    blob += b"X\x01\x00\x00\x00bX\x06\x00\x00\x00latin1\x86R\x87R."
    with pytest.raises(ValueError, match="refused numpy array reconstruction"):
        read_states(blob)
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)  # genuine NumPy pickles still load
    states, _ = read_states(pickle.dumps({0: arr, 1: np.float64(2.5), 2: np.dtype("int8")}))
    np.testing.assert_array_equal(states[0], arr)
    assert states[1] == 2.5 and states[2] == np.dtype("int8")


def test_states_only_file_with_a_version_dependent_layout():
    """A dump_optimizer=False file does not name its MXNet version: 1.9.1's (momentum, master) order needs
    mxnet_version='1' (load_updater warns when the layout is ambiguous)."""
    states, mx = read_states(CKPT / "mx19_sgd_fp16.states")
    blob = pickle.dumps(states)  # the states dict alone, as get_states(dump_optimizer=False) pickles it

    def make():
        return mxopt_jax.create("sgd", learning_rate=0.05, momentum=0.9, wd=1e-3, multi_precision=True)

    with pytest.warns(UserWarning, match="pass mxnet_version='1'"):
        load_updater(blob, optimizer=make())
    upd = load_updater(blob, optimizer=make(), mxnet_version="1")
    for i, (mom, master) in states.items():
        np.testing.assert_array_equal(np.asarray(upd.states[i][0]), master)
        np.testing.assert_array_equal(np.asarray(upd.states[i][1][0]), mom)
    assert mx.multi_precision
