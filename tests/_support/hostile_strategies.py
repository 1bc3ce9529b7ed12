"""Hypothesis strategies of hostile MXNet checkpoints for tests/facade/test_mxnet_fuzz.py: what a file controls
beyond its opcodes. Each draws ``(meta, a, b)`` for the fuzz child (tests/_support/fuzz_child.py): scheduler
fields, many distinct state shapes, empty arrays of overflowing shapes, byte orders, member names and state
dtypes, built on the real MXNet files of tests/golden/ by tests/_support/pickle_bytes.py and mxnet_files.py.
"""

from __future__ import annotations

import io
import pathlib
import zipfile

import numpy as np
from hypothesis import strategies as st
from mxnet_files import list_file, ndarray_record, np_array, np_dtype, npy, npz, raw_npz
from pickle_bytes import Obj, Raw, dumps, from_states, glob

from mxopt_jax.mxnet_format import load_params, read_states

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, RESUME = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"

_ADAM = from_states(*read_states(CKPT / "mx20_adam.states"))
_CNN_PARAMS = load_params(RESUME / "mx20_cnn_adam.params")
_CNN = from_states(*read_states(RESUME / "mx20_cnn_adam.states"))


def _opt(base: Obj, **attrs: object) -> Obj:
    return Obj(base.module, base.name, {**base.attrs, **attrs})


# --------------------------------------------------------------------------- scheduler fields
_VALID = {
    "FactorScheduler": dict(base_lr=0.05, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0,
                            warmup_mode="linear", step=2, factor=0.5, stop_factor_lr=1e-8, count=2),
    "MultiFactorScheduler": dict(base_lr=0.05, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0,
                                 warmup_mode="linear", step=[2, 5], cur_step_ind=1, factor=0.5, count=2),
    "PolyScheduler": dict(base_lr=0.08, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0,
                          warmup_mode="linear", power=2, base_lr_orig=0.1, max_update=10, final_lr=0, max_steps=10),
    "CosineScheduler": dict(base_lr=0.08, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0,
                            warmup_mode="linear", base_lr_orig=0.1, max_update=10, final_lr=0, max_steps=10),
}  # fmt: skip
_FIELD_VALUES = [
    float("-inf"), float("inf"), float("nan"), -(2**61), 2**61, 2**31, 2**31 - 1, -1, 0, 1, 2, 3, 5, 10, 0.5, 2.0,
    -0.0, 1e308, True, None, "x", "constant", [1, 2], [], [3, 2], [2, 2**40], (2, 5),
]  # fmt: skip
_NUM_UPDATES = [0, 1, 3, 9, 2**20, 2**30, 2**31 - 2]


@st.composite
def scheduler_fields(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """A trainer (mx20_cnn_adam) or an updater file (mx20_adam) whose scheduler has 1 to 3 fields replaced by
    extreme values, and the optimizer's num_update drawn."""
    cls = draw(st.sampled_from(sorted(_VALID)))
    attrs = dict(_VALID[cls])
    for field in draw(st.lists(st.sampled_from(sorted(attrs) + ["extra"]), min_size=1, max_size=3)):
        attrs[field] = draw(st.sampled_from(_FIELD_VALUES))
    n = draw(st.sampled_from(_NUM_UPDATES))
    sched = Obj("mxnet.lr_scheduler", cls, attrs)
    if draw(st.booleans()):
        states, opt = _CNN
        counts = {i: n for i in opt.attrs["_index_update_count"]}
        o = _opt(opt, lr_scheduler=sched, num_update=n, _index_update_count=counts,
                 _all_index_update_counts={0: counts})  # fmt: skip
        return (
            {"kind": "trainer", "names": None},
            (RESUME / "mx20_cnn_adam.params").read_bytes(),
            dumps((states, o)),
        )
    states, opt = _ADAM
    return {"kind": "states"}, dumps((states, _opt(opt, lr_scheduler=sched, num_update=n))), b""


# --------------------------------------------------------------------------- many shapes, empty shapes
_DIMS = [0, 0, 0, 1, 2, 3, 5, 7, 64, 2**31, 2**62, 2**63 - 1]


@st.composite
def shape(draw: st.DrawFn, max_elements: int = 16) -> tuple[int, ...]:
    dims = draw(st.lists(st.sampled_from(_DIMS), max_size=5))
    if dims and np.prod([float(d) for d in dims]) > max_elements:
        dims[draw(st.integers(0, len(dims) - 1))] = 0  # empty: the size fits, the shape may not
    return tuple(dims)


@st.composite
def many_shapes(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """An Adam updater file of 1 to 1,200 states, mostly of distinct (and empty) shapes."""
    n = draw(st.integers(1, 1200))
    base = draw(
        st.lists(
            st.lists(st.sampled_from([0, 1, 2, 3, 5]), min_size=1, max_size=4).map(tuple),
            min_size=1,
            max_size=8,
        )
    )
    if draw(st.integers(0, 4)) == 0:
        base.append(draw(shape()))  # now and then one of any shape, overflowing ones included
    flag = draw(st.sampled_from([0, 2]))  # float32, float16
    states = {}
    for i in range(n):
        s = base[i % len(base)]
        s = (0, i + 1) if draw(st.integers(0, 9)) else s  # mostly distinct empty shapes
        nd = _ndarray(s, flag)
        states[i] = (nd, nd)
    return {"kind": "states"}, dumps((states, _ADAM[1])), b""


def _ndarray(s: tuple, flag: int = 0) -> Raw:
    """A pickled MXNet NDArray of any declared shape (its data: zeros of that size, up to 1,024 elements)."""
    n = 0 if 0 in s else int(np.prod([float(d) for d in s]))
    record = ndarray_record(s, flag=flag, data=bytes((2 if flag == 2 else 4) * min(n, 1024)))
    return Raw(glob("mxnet.ndarray.ndarray", "NDArray") + b"N\x85R" + dumps({"handle": record})[2:-1] + b"b")


@st.composite
def empty_shapes(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """One array of a drawn (often empty, often overflowing) shape in each container a file can hold one."""
    s = draw(shape())
    n = int(np.prod([float(d) for d in s])) if s else 1
    where = draw(st.sampled_from(["list", "npy", "npz", "ndarray", "numpy"]))
    if where == "list":
        return {"kind": "params"}, list_file([ndarray_record(s, data=bytes(4 * n))]), b""
    if where == "npy":
        return {"kind": "params"}, npy(s, data=bytes(4 * n)), b""
    if where == "npz":
        return {"kind": "params"}, npz({"w.npy": npy(s, data=bytes(4 * n))}), b""
    if where == "ndarray":
        return {"kind": "states"}, dumps(({0: (_ndarray(s), _ndarray(s))}, _ADAM[1])), b""
    arr = Raw(np_array(np_dtype("f4"), s, bytes(4 * n)))
    return {"kind": "states"}, dumps(({0: (arr, arr)}, _ADAM[1])), b""


# --------------------------------------------------------------------------- byte orders, names, dtypes
def _npy_of(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


@st.composite
def byte_orders(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """mx20_cnn_adam's parameters as an .npz with some members in another byte order or dtype, resumed."""
    members = {}
    other = draw(
        st.sampled_from([None, None, None, *sorted(_CNN_PARAMS)])
    )  # now and then one of another dtype
    for name, a in _CNN_PARAMS.items():
        dt = draw(st.sampled_from([">f8", ">f2", "<f8", ">i4"] if name == other else ["<f4", ">f4"]))
        members[f"{name}.npy"] = _npy_of(a.astype(dt))
    params = npz(members, draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])))
    return {"kind": "trainer", "names": None}, params, (RESUME / "mx20_cnn_adam.states").read_bytes()


_NAME_TEXT = st.text(st.sampled_from(list("ab.0_äß中\x00/\\ \n") + ["\U0001f600"]), min_size=0, max_size=6)


@st.composite
def member_names(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """An .npz of 1 to 4 members whose names are drawn as text (UTF-8) or raw bytes, with or without the zip
    UTF-8 flag; read by itself or as a trainer's parameters."""
    names = []
    for _ in range(draw(st.integers(1, 4))):
        raw = draw(_NAME_TEXT).encode() if draw(st.booleans()) else draw(st.binary(max_size=6))
        names.append(raw + (b".npy" if draw(st.integers(0, 9)) else b""))
    w = npy((2,))
    params = raw_npz([(n, w) for n in names], draw(st.sampled_from([0, 0x800])))
    return {"kind": "params"}, params, b""


_OPTIMIZERS = ["mx20_adam", "mx20_adagrad", "mx20_sgd_mom", "mx20_lamb", "mx19_lamb", "mx20_adam_fp16",
               "mx19_sgd_fp16", "mx20_rmsprop_centered"]  # fmt: skip


def _cast(x: object, dts: list) -> object:
    if isinstance(x, np.ndarray):
        return x.astype(dts.pop(0) if dts else x.dtype)
    if isinstance(x, tuple):
        return tuple(_cast(v, dts) for v in x)
    return x


@st.composite
def state_dtypes(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """A real updater file whose state arrays are cast to drawn dtypes (multi_precision drawn too), read as an
    updater file, or with parameters of drawn dtypes as a trainer."""
    case = draw(st.sampled_from(_OPTIMIZERS))
    states, opt = from_states(*read_states(CKPT / f"{case}.states"))
    dtypes = st.sampled_from([np.float16, np.float32, np.float64])
    states = {i: _cast(x, draw(st.lists(dtypes, max_size=4))) for i, x in states.items()}
    opt = _opt(opt, multi_precision=draw(st.booleans()))
    blob = dumps((states, opt))
    if draw(st.booleans()):
        return {"kind": "states"}, blob, b""
    params = load_params(CKPT / f"{case}.params")
    members = {f"{n}.npy": _npy_of(a.astype(draw(dtypes))) for n, a in params.items()}
    # MXNet 1.x: the collect_params() keys, in the .params file's order ('0.weight' -> 'dense0_weight')
    names = ["dense" + n.replace(".", "_") for n in params] if case.startswith("mx19") else None
    return {"kind": "trainer", "names": names}, npz(members), blob


# --------------------------------------------------------------------------- budgets that count what is built
_FLOOD_COUNTS = [1_000, 50_000, 200_000, 750_000, 880_000]


@st.composite
def container_floods(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """A ``.states`` pickle of many tiny objects, each a few bytes of the file and far more in memory: empty
    lists, ``(None,)`` tuples, empty dicts, MEMOIZE on every value, or a protocol-0 STRING of ``\\0``
    escapes (issue 43's inputs are among the counts drawn)."""
    kind = draw(st.sampled_from(["lists", "tuples", "dicts", "memoize", "escapes"]))
    n = draw(st.sampled_from(_FLOOD_COUNTS))
    if kind == "escapes":
        return {"kind": "states"}, b"\x80\x02}K\x00S'" + b"\\0" * (2 * n) + b"'\ns.", b""
    item = {"lists": b"]", "tuples": b"N\x85", "dicts": b"}", "memoize": b"N\x94"}[kind]
    proto = b"\x80\x04" if kind == "memoize" else b"\x80\x02"
    return {"kind": "states"}, proto + b"}K\x00](" + item * n + b"es.", b""


@st.composite
def shared_states(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """Adam states ``{i: (A, None)}`` for many indices sharing one array (memoised once): each ``None`` is
    filled with zeros and every index's state goes to the device."""
    n = draw(st.sampled_from([2, 100, 880, 4000]))
    size = draw(st.sampled_from([4, 1024, 16 * 1024]))
    _, opt = _ADAM
    opt = _opt(opt, _index_update_count={}, _all_index_update_counts={0: {}}, num_update=0, lr_scheduler=None)
    first = dumps((np.zeros(size, np.float32), None))[2:-1]
    share = b"".join((b"K" + bytes([i]) if i < 256 else b"J" + i.to_bytes(4, "little")) + b"h\x01s"
                     for i in range(1, n))  # fmt: skip
    blob = b"\x80\x02(}K\x00" + first + b"q\x01s" + share + dumps(opt)[2:-1] + b"t."
    return {"kind": "states"}, blob, b""


_TWIN19 = load_params(RESUME / "mx19_twin.params")
_TWIN20 = load_params(RESUME / "mx20_twin.params")
_TWIN_KEYS = ["zeta_weight", "zeta_bias", "alpha_weight", "alpha_bias"]


@st.composite
def pairings(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """Trainer files whose pairing MXNet defines by name: ``arg:`` / ``aux:`` prefixed names (some colliding),
    1.x records in any order with the collect_params() keys (some not matching), states missing, duplicate
    ``idx2name``, an SGLD-only ``seed``, update counts or ``begin_num_update`` past ``num_update``."""
    which = draw(st.sampled_from(["prefix", "order", "states"]))
    if which == "prefix":
        params = dict(_TWIN20)
        members = {}
        for n, a in params.items():
            members[draw(st.sampled_from(["", "arg:", "aux:"])) + n + ".npy"] = _npy_of(a)
        if draw(st.booleans()):
            members["0.weight.npy"] = _npy_of(params["0.weight"])
        return {"kind": "trainer", "names": None}, npz(members), (RESUME / "mx20_twin.states").read_bytes()
    if which == "order":
        order = draw(st.permutations(list(_TWIN19)))
        keys = list(_TWIN_KEYS)
        if draw(st.booleans()):
            keys[draw(st.integers(0, 3))] = draw(
                st.sampled_from(["zeta_gamma", "beta_weight", "weight", "x"])
            )
        params = list_file([_raw_record(_TWIN19[n]) for n in order], order)
        return {"kind": "trainer", "names": keys}, params, (RESUME / "mx19_twin.states").read_bytes()
    states, opt = _CNN
    states = dict(states)
    for i in draw(st.lists(st.sampled_from(sorted(states)), max_size=3)):
        states.pop(i, None)
    attrs = {}
    extra = draw(st.sampled_from(["none", "idx2name", "seed", "count", "begin"]))
    if extra == "idx2name":
        attrs["idx2name"] = {i: ("a" if i % 2 else "b") for i in range(8)}
    elif extra == "seed":
        attrs["seed"] = 7
    elif extra == "count":
        attrs["_index_update_count"] = {i: 2**31 - 2 for i in opt.attrs["_index_update_count"]}
    elif extra == "begin":
        attrs["begin_num_update"] = 2**31 - 2
    return (
        {"kind": "trainer", "names": None},
        (RESUME / "mx20_cnn_adam.params").read_bytes(),
        dumps((states, _opt(opt, **attrs))),
    )


def _raw_record(a: np.ndarray) -> bytes:
    from pickle_bytes import ndarray_record as record

    return record(a)


# --------------------------------------------------------------------------- the facade's own format
def _facade_archive() -> tuple[dict, dict[str, bytes]]:
    import json

    import jax.numpy as jnp

    import mxopt_jax

    upd = mxopt_jax.get_updater(mxopt_jax.create("sgd", learning_rate=0.1, momentum=0.9))
    upd([0, 1], [jnp.full((3,), 0.5)] * 2, [jnp.ones(3)] * 2)
    zf = zipfile.ZipFile(io.BytesIO(upd.get_states(dump_optimizer=True)))
    return json.loads(zf.read("manifest.json")), {
        n: zf.read(n) for n in zf.namelist() if n != "manifest.json"
    }


_ENCODED = [
    None, {"int": 5}, {"int": -1}, {"int": 2**31 - 2}, {"int": 2**40}, {"float": "nan"}, {"float": "inf"},
    {"float": "-1.0"}, {"float": "0.5"}, {"str": "x"}, {"bool": True}, {"list": []}, {"tuple": []},
    {"dict": []}, {"dict": [[{"int": 0}, {"str": "w"}], [{"int": 1}, {"str": "w"}]]},
    {"dict": [[{"int": 0}, {"dict": [[{"int": 0}, {"int": 2**31 - 2}]]}]]},
    {"scheduler": "FactorScheduler", "attrs": {"dict": [[{"str": "step"}, {"int": 0}]]}},
    {"scheduler": "LRScheduler", "attrs": {"dict": []}},
    {"array": "arrays/0.bin", "dtype": "float32", "shape": [3], "jax": True},
]  # fmt: skip
_ATTRS = ["lr", "lr_scheduler", "clip_gradient", "wd", "rescale_grad", "momentum", "num_update",
          "begin_num_update", "_all_index_update_counts", "_current_device", "idx2name", "lr_mult",
          "multi_precision", "aggregate_num", "sym_info", "_prep", "lazy_update"]  # fmt: skip


def _zip_of(manifest: object, members: dict[str, bytes], compression: int) -> bytes:
    import json

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        zf.writestr("manifest.json", manifest if isinstance(manifest, str) else json.dumps(manifest))
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


@st.composite
def facade_archives(draw: st.DrawFn) -> tuple[dict, bytes, bytes]:
    """``Updater.get_states`` archives of an SGD with attributes replaced by drawn values, or made hostile:
    deep JSON, a deflate bomb manifest, JSON of many objects, many members, headers patched (encrypted, an
    unknown compression method), bytes flipped; read by ``set_states``, then stepped."""
    import json

    manifest, members = _facade_archive()
    compression = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    kind = draw(st.sampled_from(["attrs", "deep", "bomb", "objects", "members", "patch", "flip"]))
    if kind == "attrs":
        for a in draw(st.lists(st.sampled_from(_ATTRS), min_size=1, max_size=3)):
            manifest["optimizer"]["attrs"][a] = draw(st.sampled_from(_ENCODED))
        blob = _zip_of(manifest, members, compression)
    elif kind == "deep":
        depth = draw(st.sampled_from([100, 193, 1000, 100_000]))
        text = json.dumps(manifest)[:-1] + ', "pad": ' + "[" * depth + "]" * depth + "}"
        blob = _zip_of(text, members, compression)
    elif kind == "bomb":
        text = json.dumps(manifest)[:-1] + ", " + " " * draw(st.sampled_from([2**20, 2**27, 2**30])) + "}"
        blob = _zip_of(text, members, zipfile.ZIP_DEFLATED)
    elif kind == "objects":
        n = draw(st.sampled_from([1000, 300_000, 1_000_000]))
        item = draw(st.sampled_from(["[]", "{}", '{"a":0}', "0.5"]))
        text = json.dumps(manifest)[:-1] + ', "pad": [' + ",".join([item] * n) + "]}"
        blob = _zip_of(text, members, compression)
    elif kind == "members":
        n = draw(st.sampled_from([10, 10_000, 60_000]))
        blob = _zip_of(manifest, {**members, **{f"pad/{i}": b"" for i in range(n)}}, zipfile.ZIP_STORED)
    elif kind == "patch":
        out = bytearray(_zip_of(manifest, members, compression))
        flags, method = draw(st.sampled_from([(1, None), (None, 99), (None, 12), (None, 14), (8, None)]))
        for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            pos = out.find(sig)
            while pos >= 0:
                if flags is not None:
                    out[pos + at : pos + at + 2] = flags.to_bytes(2, "little")
                if method is not None:
                    out[pos + at + 2 : pos + at + 4] = method.to_bytes(2, "little")
                pos = out.find(sig, pos + 4)
        blob = bytes(out)
    else:
        out = bytearray(_zip_of(manifest, members, compression))
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(out) - 1))] ^= 1 << draw(st.integers(0, 7))
        blob = bytes(out)
    return {"kind": "set_states"}, blob, b""
