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
