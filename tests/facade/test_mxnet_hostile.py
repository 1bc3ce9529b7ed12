"""Checkpoints from strangers: each attack on ``mxopt_jax.mxnet_format`` found so far, as a small file built here.

Every case must end in a ``ValueError`` naming the file, where in it and what was refused, quickly and within
memory (measured with ``tracemalloc``), with the process unchanged: a genuine file still loads afterwards.
The hostile files are written by ``tests/_support/pickle_bytes.py`` (a small opcode writer), never unpickled.
"""

from __future__ import annotations

import io
import pathlib
import re
import struct
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from pickle_bytes import Obj, Raw, dumps, from_states, glob, integer, string

import mxopt_jax
from mxopt_jax.mxnet_format import load_params, load_trainer, load_updater, read_states

CKPT = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_ckpt"
GOLD = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_resume"
MB = 2**20


def _refused(fn, data, match, peak_mb=8.0, seconds=5.0):
    """``fn(data)`` raises a ValueError matching ``match``, fast and allocating little."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=match) as info:
            fn(data)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - t0 < seconds
    assert peak < peak_mb * MB, f"{peak / MB:.1f} MiB allocated"
    return str(info.value)


def _genuine_still_loads():
    """The process is unchanged: a real file, and a NumPy scalar and dtype, read as before."""
    upd = load_updater(CKPT / "mx20_adam.states")
    assert upd.optimizer.num_update == 3
    states, _ = read_states(dumps({0: Raw(_np_scalar_f8(2.5)), 1: None}))
    assert states[0] == 2.5 and isinstance(states[0], np.float64)


def _np_dtype(name: str, state: bytes | None = None) -> bytes:
    """``numpy.dtype(name, False, True)`` then BUILD ``state`` (opcodes; NumPy's plain state by default)."""
    state = dumps((3, "<", None, None, None, -1, -1, 0))[2:-1] if state is None else state
    return glob("numpy", "dtype") + string(name) + b"\x89\x88\x87R" + state + b"b"


def _np_scalar_f8(v: float) -> bytes:
    data = struct.pack("<d", v)
    return glob("numpy._core.multiarray", "scalar") + _np_dtype("f8") + b"C\x08" + data + b"\x86R"


def _np_array(dtype: bytes, shape: tuple, raw: bytes) -> bytes:
    """``_reconstruct(ndarray, (0,), b'b')`` then BUILD ``(1, shape, dtype, False, raw)``, as NumPy pickles."""
    make = glob("numpy._core.multiarray", "_reconstruct") + glob("numpy", "ndarray") + b"K\x00\x85C\x01b\x87R"
    state = b"(" + integer(1) + dumps(shape)[2:-1] + dtype + b"\x89" + dumps(raw)[2:-1] + b"tb"
    return make + state


def _adam(**attrs):
    """The optimizer of mx20_adam.states with some attributes replaced (as a hand-made file)."""
    states, opt = read_states(CKPT / "mx20_adam.states")
    states, opt = from_states(states, opt)
    opt.attrs.update(attrs)
    return states, opt


# --------------------------------------------------------------------------- memory safety
@pytest.mark.parametrize("offset", [10**9, 16])
def test_structured_dtype_with_a_field_outside_the_item_is_refused(offset):
    """The 404-byte SIGSEGV: a whitelisted numpy.dtype given a structured state (a field far past the item) by
    BUILD, then an array of it read as rescale_grad. Both the dtype name and the state are refused now."""
    # NumPy's state of a structured dtype: (3, '|', None, ('a',), {'a': (dtype('<f8'), offset)}, 8, 1, 16)
    fields = b"(" + string("a") + b"t" + b"}" + string("a") + _np_dtype("f8") + integer(offset) + b"\x86s"
    evil = b"(" + integer(3) + string("|") + b"N" + fields + integer(8) + integer(1) + integer(16) + b"t"
    for name in ("V8", "f8"):
        array = Raw(_np_array(_np_dtype(name, evil), (1,), b"\0" * 8))
        states, opt = _adam(rescale_grad=array, m_schedule=array)
        blob = dumps((states, opt))
        msg = _refused(load_updater, blob, r"<states bytes>: refused (numpy\.dtype call|a NumPy dtype state)")
        assert "at byte" in msg
        with pytest.raises(ValueError, match="refused"):
            load_trainer(GOLD / "mx20_cnn_adam.params", blob, loss="sum", lr_mult={})
    _genuine_still_loads()


def test_arrays_are_contiguous_buffers_of_exactly_their_size():
    f4 = _np_dtype("f4")
    for shape, raw in [((4,), b"\0" * 8), ((2,), b"\0" * 12), ((10**9,), b"\0" * 4)]:
        _refused(read_states, dumps({0: Raw(_np_array(f4, shape, raw))}), r"refused a NumPy array of shape")
    # the zero-stride view: numpy.ndarray called with a buffer and strides
    view = glob("numpy", "ndarray") + dumps(((625_000_000,), "f4", b"\0" * 4, 0, (0,)))[2:-1] + b"R"
    msg = _refused(read_states, dumps({0: Raw(view)}), r"refused to unpickle numpy\.ndarray \(a call")
    assert len(dumps({0: Raw(view)})) < 200 and "at byte" in msg
    # object, void, string dtypes by name
    for name in ("O", "V8", "U4", "S4", "M8", "f16", "c8", "c16"):
        _refused(read_states, dumps({0: Raw(_np_dtype(name))}), r"refused numpy\.dtype call")
    # a plain array still reads, in NumPy's own layout
    arr = read_states(dumps({0: Raw(_np_array(f4, (2,), struct.pack("<2f", 1.5, -2.0)))}))[0][0]
    assert arr.dtype == np.float32 and arr.tolist() == [1.5, -2.0]


# --------------------------------------------------------------------------- the process cannot be altered
def test_build_on_a_global_is_refused():
    """52 bytes set the safe dtype wrapper's __defaults__ = () through BUILD on a whitelisted global."""
    for module, name in [("numpy", "dtype"), ("copyreg", "_reconstructor"), ("builtins", "bytearray")]:
        blob = b"\x80\x02" + glob(module, name) + b"N}" + string("__defaults__") + b")s\x86b."
        msg = _refused(read_states, blob, rf"refused to unpickle {module}\.{name} \(setting attributes")
        assert "at byte" in msg
    _genuine_still_loads()


def test_class_identity_comes_from_the_global_alone():
    states, _ = _adam()
    # a class outside the allow-list cannot pass for MXNet's SGD by its attributes
    for key in ("mx_unknown", "mx_module", "mx_class", "__class__", "__dict__"):
        opt = Obj("evil.module", "Adam", {key: "mxnet.optimizer"})
        _refused(read_states, dumps((states, opt)), rf"refused the attribute '{key}'")
    # exact module names: mxnet.optimizer_evil is not mxnet.optimizer
    blob = dumps((states, Obj("mxnet.optimizer_evil", "Adam", lr=0.1)))
    _, opt = read_states(blob)
    assert (opt.mx_module, opt.mx_class) == ("mxnet.optimizer_evil", "Adam")
    with pytest.raises(ValueError, match=r"mxnet\.optimizer_evil\.Adam, a class of your own"):
        load_updater(blob)
    # a third class of one's own is refused where it is named
    blob = dumps(({0: None}, Obj("a", "A", x=Obj("b", "B"), y=Obj("c", "C"))))
    _refused(read_states, blob, r"refused to unpickle c\.C \(a third class outside the allow-list at byte")


# --------------------------------------------------------------------------- denial of service
def test_bytearray_of_a_size_is_refused():
    """48 bytes asked for bytearray(3e9)."""
    blob = b"\x80\x02" + glob("builtins", "bytearray") + integer(3 * 10**9) + b"\x85R."
    assert len(blob) < 48
    _refused(read_states, blob, r"refused builtins\.bytearray call: only the form bytearray\(\)")


def test_memo_index_is_not_an_allocation():
    """16 bytes with a memo index of 2**32 - 1 made the C unpickler allocate 2.2 GB."""
    for put in (b"r\xff\xff\xff\xff", b"p4294967295\n", b"q\xff"):
        _refused(read_states, b"\x80\x02N" + put + b".", r"does not hold an Updater's states dict")
    _refused(
        read_states, b"\x80\x02}r\xff\xff\xff\xff0j\xfe\xff\xff\xff.", r"memo entry 4294967294 not found"
    )


def test_tuple_keys_that_would_recurse_or_hang_when_hashed():
    """A key nested 150,000 deep crashed the interpreter (recursion in hashing); a 554-byte key of depth 60
    sharing its halves hung (2**60 hashes). Keys are strings, numbers and flat tuples of at most 8 of them."""
    deep = b"\x80\x02}" + b")" + b"\x85" * 150_000 + b"Ns."
    _refused(read_states, deep, r"refused a dictionary key .* that is a tuple of 1 items or holding more", 16)
    shared = b"\x80\x02}" + b")" + b"2\x86" * 60 + b"Ns."
    assert len(shared) < 554
    _refused(read_states, shared, r"refused a dictionary key")
    flat = b"\x80\x02}" + b"(" + b"K\x01" * 9 + b"tNs."
    _refused(read_states, flat, r"tuple of 9 items")
    _refused(read_states, b"\x80\x02}" + integer(2**61) + b"Ns.", r"an integer beyond 2\*\*61")
    many = b"\x80\x02}(" + b"".join(integer(i) + b"\x85N" for i in range(1025)) + b"u."
    _refused(read_states, many, r"more than 1024 tuples")
    ok = read_states(b"\x80\x02}" + string("a") + b"K\x01\x86Ns.")[0]  # a short flat tuple key
    assert ok == {("a", 1): None}


def test_deep_values_and_cycles_stop_at_depth_64():
    deep = b"\x80\x02}K\x00" + b"]" * 100_000 + b"a" * 99_999 + b"s."
    _refused(read_states, deep, r"refused nesting too deep \(or a reference cycle\) at states\[0\]", 32)
    marks = b"\x80\x02" + b"(" * 65
    _refused(read_states, marks + b".", r"refused MARKs nested deeper than 64")


def test_shared_values_are_counted_at_every_reference():
    """A value referenced many times is counted each time: an array shared by 100,000 indices, or a dict of
    counts shared by many devices, would be copied that often by the resume."""
    arr = dumps(np.zeros(1000, np.float32))[2:-1]  # an NDArray of 4,000 bytes, memoised as entry 0
    refs = b"".join(integer(i) + b"h\x00s" for i in range(1, 20_000))
    blob = b"\x80\x02}K\x00" + arr + b"q\x00s" + refs + b"."
    msg = _refused(read_states, blob, r"refused: the data, counting every reference", 16)
    assert "past the reader's memory budget" in msg and "max_bytes" in msg
    read_states(blob, max_bytes=200 * MB)  # a file you trust: raise the cap


def test_state_entries_are_counted():
    states, opt = _adam()
    blob = dumps((states, opt))
    with pytest.raises(ValueError, match=r"converting 4 states to JAX arrays needs 65536 bytes"):
        load_updater(blob, max_bytes=60_000)
    assert load_updater(blob, max_bytes=10 * MB).optimizer.num_update == 3
    # load_trainer: each parameter becomes a JAX array (17,000 one-element arrays in 600 kB)
    record = (
        struct.pack("<Iii", 0xF993FAC9, 0, 1)
        + struct.pack("<q", 1)
        + struct.pack("<iii", 1, 0, 0)
        + b"\0" * 4
    )
    params = struct.pack("<QQQ", 0x112, 0, 17_000) + record * 17_000 + struct.pack("<Q", 0)
    t0 = time.perf_counter()
    with pytest.raises(
        ValueError, match=r"^<params bytes>: refused: converting 17000 parameters to JAX arrays"
    ):
        load_trainer(params, blob, loss="sum", lr_mult={})
    assert time.perf_counter() - t0 < 5.0


def _npz(member: bytes, compression: int, name: str = "w.npy") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        zf.writestr(name, member)
    return buf.getvalue()


def _npy(shape: tuple, descr: str = "<f4", fill: bytes = b"\0") -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (63 - len(header) % 64) + b"\n"
    n = int(np.prod(shape)) * np.dtype(descr).itemsize
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + fill * n


def test_npz_members_are_stored_or_deflated_and_streamed_against_the_cap():
    """A 1,665-byte .npz with a bzip2 member allocated 4 GB before it was refused (its bound assumed deflate's
    ratio); now: only stored or deflated members, decompressed chunk by chunk against the budget."""
    npy = _npy((1 << 20,))  # 4 MiB of zeros
    bz = _npz(npy, zipfile.ZIP_BZIP2)
    assert len(bz) < 1665
    _refused(load_params, bz, r"member 'w\.npy' is compressed with bzip2: refused")
    _refused(load_params, _npz(npy, zipfile.ZIP_LZMA), r"compressed with lzma: refused")
    bomb = _npz(npy, zipfile.ZIP_DEFLATED)
    msg = _refused(lambda b: load_params(b, max_bytes=MB), bomb, r"member 'w\.npy', decompressed needs more")
    assert "max_bytes passed" in msg
    assert load_params(bomb)["w"].shape == (1 << 20,)  # within the default budget (64 MiB)
    buf = io.BytesIO()  # 66 MiB of zeros, deflated to 66 kB, written in chunks: past the default budget
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("w.npy", "w") as f:
        f.write(_npy((66 << 18,))[:128])
        for _ in range(66):
            f.write(bytes(MB))
    _refused(load_params, buf.getvalue(), r"decompressed needs more than 67108864 bytes", 80)
    unknown = bytearray(bomb)
    unknown[8:10] = struct.pack("<H", 99)  # the local header's method
    central = bomb.rindex(b"PK\x01\x02")
    unknown[central + 10 : central + 12] = struct.pack("<H", 99)
    _refused(load_params, bytes(unknown), r"compressed with method 99: refused")


def test_npy_headers_are_matched_not_evaluated():
    for header in [b"{'descr': '<f4', 'fortran_order': False, 'shape': (" + b"(" * 200 + b")}", b"[1]" * 30]:
        blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
        _refused(load_params, blob, r"malformed \.npy header")
    for descr in ("|O", "|V8", "<U2", "|S3", "<M8[s]", "<c8"):
        _refused(load_params, _npy((2,), descr), rf"refused dtype '{re.escape(descr)}': only plain numeric")
    structured = b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"
    _refused(
        load_params,
        _npy((2,)).replace(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", structured),
        "malformed",
    )
    assert load_params(_npy((2, 3), ">f8", b"\x3f"))["0"].dtype == np.dtype(">f8")


# --------------------------------------------------------------------------- errors of the right kind
def _sched(name, **attrs):
    return Obj("mxnet.lr_scheduler", name, attrs)


@pytest.mark.parametrize(
    "attrs, match",
    [
        (
            {"rescale_grad": [1, 2]},
            r"attribute 'rescale_grad' must be a number or a one-element array, got a list",
        ),
        ({"num_update": "3"}, r"attribute 'num_update' must be an integer"),
        ({"num_update": 2**70}, r"attribute 'num_update' must be an integer within 2\*\*62"),
        ({"_all_index_update_counts": [0]}, r"'_all_index_update_counts' must be a dict of dicts"),
        ({"_index_update_count": {0: None}}, r"'_index_update_count' must be a dict of integer counts"),
        ({"lr_mult": {0: "x"}}, r"'lr_mult' must be a dict of numbers"),
        ({"idx2name": [1]}, r"'idx2name' must be a dict or None"),
        ({"lr_scheduler": 3}, r"'lr_scheduler' must be an MXNet learning-rate scheduler"),
        ({"beta1": "x"}, r"cannot rebuild MXNet's Adam"),
        (
            {"lr_scheduler": _sched("FactorScheduler", factor=0.5)},
            r"the pickled FactorScheduler has no step, stop_factor_lr",
        ),
        (
            {"lr_scheduler": _sched("MultiFactorScheduler", step="ab", factor=0.5)},
            r"cannot rebuild MXNet's MultiFactorScheduler",
        ),
        (
            {
                "lr_scheduler": _sched(
                    "FactorScheduler", step=2, factor=0.5, stop_factor_lr=0.0, base_lr=0.1, count=[1]
                )
            },
            r"FactorScheduler's attribute 'count' must be like 0, got a list",
        ),
        ({"lr_scheduler": _sched("LRScheduler")}, r"unsupported learning-rate scheduler"),
    ],
)
def test_attributes_that_do_not_fit_are_value_errors_naming_them(attrs, match):
    blob = dumps(_adam(**attrs))
    with pytest.raises(ValueError, match=r"^<states bytes>: .*" + match):
        load_updater(blob)


def test_states_that_do_not_fit_are_value_errors():
    states, opt = _adam()
    for bad in ({0: "x"}, {0: (np.zeros(3, np.int32), np.zeros(3, np.int32))}, {b"\xff": None}, {0: (1, 2)}):
        with pytest.raises(ValueError, match=r"^<states bytes>: "):
            load_updater(dumps((bad, opt)))
    signum = from_states(*read_states(CKPT / "mx20_signum.states"))
    signum[0][0] = np.array([True, False])  # MXNet's negated EMA as a bool array: no state of Signum's
    with pytest.raises(ValueError, match=r"index 0 does not have the layout of MXNet 2\.0 signum states"):
        load_updater(dumps(signum))
    # a states-only file: the optimizer passed is not changed by a file that fails
    sgd = mxopt_jax.create("sgd", learning_rate=0.1, momentum=0.9)
    sched = mxopt_jax.lr_scheduler.FactorScheduler(step=2, base_lr=0.1)
    with pytest.raises(ValueError):
        load_updater(dumps({0: "x"}), optimizer=sgd, lr_scheduler=sched)
    assert sgd.lr_scheduler is None


def test_max_bytes_is_checked():
    with pytest.raises(TypeError, match="max_bytes must be an int"):
        load_params(CKPT / "mx20_adam.params", max_bytes=1.5)
    with pytest.raises(ValueError, match="max_bytes must be positive"):
        read_states(CKPT / "mx20_adam.states", max_bytes=0)
    with pytest.raises(ValueError, match=r"mx19_adam\.params: refused: array 0 .* needs more than 100 bytes"):
        load_params(CKPT / "mx19_adam.params", max_bytes=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"mx20_cnn_adam\.(params|states): refused"):
            load_trainer(
                GOLD / "mx20_cnn_adam.params", GOLD / "mx20_cnn_adam.states", loss="sum", max_bytes=5000
            )


def test_refused_opcodes():
    for op, name in [
        (b"P1\n", "PERSID"),
        (b"N\x82\x01", "EXT1"),
        (b"(i__main__\nX\n", "INST"),
        (b"\x97", "NEXT_BUFFER"),
    ]:
        _refused(read_states, b"\x80\x05" + op + b".", rf"refused opcode {name}")
    _refused(read_states, b"\x80\x06N.", r"not a readable MXNet \.states pickle: pickle protocol 6")
    _refused(read_states, b"\x80\x02}N.", r"STOP with 2 objects on the stack")
    _refused(read_states, b"\x80\x02}.junk", r"4 trailing bytes after STOP")
    _refused(read_states, b"\x80\x02N]a.", r"refused APPEND on a NoneType|APPEND on a stack")
