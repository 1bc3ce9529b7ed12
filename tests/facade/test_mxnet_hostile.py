"""Checkpoints from strangers: each attack on ``mxopt_jax.mxnet_format`` found so far, as a small file built here.

Every case must end in a ``ValueError`` naming the file, where in it and what was refused (or in a correct
load), quickly and within memory (measured with ``tracemalloc``), with the process unchanged: a genuine file
still loads afterwards. The first part holds the attacks on the pickle stream; the second, what a file controls
beyond its opcodes (its path, a scheduler's fields, the count of distinct state shapes, empty arrays' shapes,
byte orders, string escapes, member names, state dtypes, the classes it names, a deflated member's size).
The hostile files are written by ``tests/_support/pickle_bytes.py`` (a small opcode writer) and
``tests/_support/mxnet_files.py`` (array files byte by byte), never unpickled.
"""

from __future__ import annotations

import gc
import io
import os
import pathlib
import pickle
import re
import struct
import time
import tracemalloc
import warnings
import zipfile

import numpy as np
import pytest
from guards import no_hang
from mxnet_files import list_file, ndarray_record, np_array, np_dtype, np_scalar_f8, npy, npz, raw_npz
from pickle_bytes import Obj, Raw, dumps, from_states, glob, integer, string

import mxopt_jax
from mxopt_jax.mxnet_format import load_params, load_trainer, load_updater, read_states

CKPT = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_ckpt"
GOLD = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_resume"
MB = 2**20


def _refused(fn, data, match, peak_mb=8.0):
    """``fn(data)`` raises a ValueError matching ``match`` and allocates little; a hang fails the test (a 60 s
    guard, not a speed check: the house never asserts wall time)."""
    tracemalloc.start()
    try:
        with no_hang(60), pytest.raises(ValueError, match=match) as info:
            fn(data)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < peak_mb * MB, f"{peak / MB:.1f} MiB allocated"
    return str(info.value)


def _genuine_still_loads():
    """The process is unchanged: a real file, and a NumPy scalar and dtype, read as before."""
    upd = load_updater(CKPT / "mx20_adam.states")
    assert upd.optimizer.num_update == 3
    states, _ = read_states(dumps({0: Raw(np_scalar_f8(2.5)), 1: None}))
    assert states[0] == 2.5 and isinstance(states[0], np.float64)


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
    fields = b"(" + string("a") + b"t" + b"}" + string("a") + np_dtype("f8") + integer(offset) + b"\x86s"
    evil = b"(" + integer(3) + string("|") + b"N" + fields + integer(8) + integer(1) + integer(16) + b"t"
    for name in ("V8", "f8"):
        array = Raw(np_array(np_dtype(name, evil), (1,), b"\0" * 8))
        states, opt = _adam(rescale_grad=array, m_schedule=array)
        blob = dumps((states, opt))
        msg = _refused(load_updater, blob, r"<states bytes>: refused (numpy\.dtype call|a NumPy dtype state)")
        assert "at byte" in msg
        with pytest.raises(ValueError, match="refused"):
            load_trainer(GOLD / "mx20_cnn_adam.params", blob, loss="sum", lr_mult={})
    _genuine_still_loads()


def test_arrays_are_contiguous_buffers_of_exactly_their_size():
    f4 = np_dtype("f4")
    for shape, raw in [((4,), b"\0" * 8), ((2,), b"\0" * 12), ((10**9,), b"\0" * 4)]:
        _refused(read_states, dumps({0: Raw(np_array(f4, shape, raw))}), r"refused a NumPy array of shape")
    # the zero-stride view: numpy.ndarray called with a buffer and strides
    view = glob("numpy", "ndarray") + dumps(((625_000_000,), "f4", b"\0" * 4, 0, (0,)))[2:-1] + b"R"
    msg = _refused(read_states, dumps({0: Raw(view)}), r"refused to unpickle numpy\.ndarray \(a call")
    assert len(dumps({0: Raw(view)})) < 200 and "at byte" in msg
    # object, void, string dtypes by name
    for name in ("O", "V8", "U4", "S4", "M8", "f16", "c8", "c16"):
        _refused(read_states, dumps({0: Raw(np_dtype(name))}), r"refused numpy\.dtype call")
    # a plain array still reads, in NumPy's own layout
    arr = read_states(dumps({0: Raw(np_array(f4, (2,), struct.pack("<2f", 1.5, -2.0)))}))[0][0]
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
    with pytest.raises(
        ValueError, match=r"converting 4 states \(4 distinct shapes\) to JAX arrays needs 327680 bytes"
    ):
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
    return npz({name: member}, compression)


def test_npz_members_are_stored_or_deflated_and_streamed_against_the_cap():
    """A 1,665-byte .npz with a bzip2 member allocated 4 GB before it was refused (its bound assumed deflate's
    ratio); now: only stored or deflated members, decompressed chunk by chunk against the budget."""
    member = npy((1 << 20,))  # 4 MiB of zeros
    bz = _npz(member, zipfile.ZIP_BZIP2)
    assert len(bz) < 1665
    _refused(load_params, bz, r"member 'w\.npy' is compressed with bzip2: refused")
    _refused(load_params, _npz(member, zipfile.ZIP_LZMA), r"compressed with lzma: refused")
    bomb = _npz(member, zipfile.ZIP_DEFLATED)
    msg = _refused(lambda b: load_params(b, max_bytes=MB), bomb, r"member 'w\.npy', decompressed needs more")
    assert "max_bytes passed" in msg
    assert load_params(bomb)["w"].shape == (1 << 20,)  # within the default budget (64 MiB)
    buf = io.BytesIO()  # 66 MiB of zeros, deflated to 66 kB, written in chunks: past the default budget
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("w.npy", "w") as f:
        f.write(npy((66 << 18,))[:128])
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
        _refused(load_params, npy((2,), descr), rf"refused dtype '{re.escape(descr)}': only plain numeric")
    structured = b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"
    _refused(
        load_params,
        npy((2,)).replace(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", structured),
        "malformed",
    )
    # another byte order is read into the machine's, values unchanged (MXNet refuses such a file)
    got = load_params(npy((2, 3), ">f8", b"\x3f"))["0"]
    assert got.dtype == np.dtype("=f8") and (got == np.frombuffer(b"\x3f" * 48, ">f8").reshape(2, 3)).all()


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
        (
            {"num_update": 2**70},
            r"attribute 'num_update' must be an integer update count in \[0, 2147483646\]",
        ),
        (
            {"num_update": 2**31},
            r"attribute 'num_update' must be an integer update count in \[0, 2147483646\]",
        ),
        ({"begin_num_update": -1}, r"attribute 'begin_num_update' must be an integer update count"),
        ({"_all_index_update_counts": [0]}, r"'_all_index_update_counts' must be a dict of dicts"),
        ({"_index_update_count": {0: None}}, r"'_index_update_count' must be a dict of update counts"),
        ({"_index_update_count": {0: -5}}, r"'_index_update_count' must be a dict of update counts"),
        ({"lr_mult": {0: "x"}}, r"'lr_mult' must be a dict of finite numbers"),
        ({"lr_mult": {0: float("nan")}}, r"'lr_mult' must be a dict of finite numbers"),
        ({"m_schedule": float("inf")}, r"'m_schedule' must be a number in \[0, 1\]"),
        ({"idx2name": [1]}, r"'idx2name' must be a dict of parameter names or None"),
        ({"idx2name": {0: [1]}}, r"'idx2name' must be a dict of parameter names or None"),
        ({"lr_scheduler": 3}, r"'lr_scheduler' must be an MXNet learning-rate scheduler"),
        ({"beta1": "x"}, r"cannot rebuild MXNet's Adam"),
        (
            {"lr_scheduler": _sched("FactorScheduler", factor=0.5)},
            r"the pickled FactorScheduler has no step, stop_factor_lr",
        ),
        (
            {"lr_scheduler": _sched("MultiFactorScheduler", step="ab", factor=0.5)},
            r"MultiFactorScheduler's attribute 'step' must be a list of integers, got a str",
        ),
        (
            {"lr_scheduler": _sched("MultiFactorScheduler", step=[3, 2], factor=0.5)},
            r"cannot rebuild MXNet's MultiFactorScheduler",
        ),
        (
            {
                "lr_scheduler": _sched(
                    "FactorScheduler", step=2, factor=0.5, stop_factor_lr=0.0, base_lr=0.1, count=[1]
                )
            },
            r"FactorScheduler's attribute 'count' must be an integer in \[0, 2\*\*31 - 1\], got a list",
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
    # a file larger than max_bytes is refused from its size, before a byte is read
    with pytest.raises(
        ValueError, match=r"mx19_adam\.params: refused: the file holds 328 bytes, .* nothing was read"
    ):
        load_params(CKPT / "mx19_adam.params", max_bytes=100)
    # each array counted at its data and arrays.RECORD_COST (512 bytes): arrays 0 and 1 fit in 1,200 bytes
    with pytest.raises(
        ValueError, match=r"mx19_adam\.params: refused: array 2 .* needs more than 1200 bytes"
    ):
        load_params(CKPT / "mx19_adam.params", max_bytes=1200)
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


# =========================================================================== what a file controls beyond its
# opcodes: the path, the scheduler's fields, the count of distinct shapes, empty arrays' shapes, byte orders,
# string escapes, member names, state dtypes, the holders of its classes, the growth of a decompressed member
def _readers(path):
    """Every public reader given ``path`` (``load_trainer`` with it as either file)."""
    params, states = GOLD / "mx20_cnn_adam.params", GOLD / "mx20_cnn_adam.states"
    return {
        "load_params": lambda: load_params(path),
        "read_states": lambda: read_states(path),
        "load_updater": lambda: load_updater(path),
        "load_trainer(params)": lambda: load_trainer(path, states, loss="sum", lr_mult={}),
        "load_trainer(states)": lambda: load_trainer(params, path, loss="sum", lr_mult={}),
    }


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_paths_that_are_not_regular_files_are_refused_before_opening(tmp_path):
    """A FIFO blocked open() forever; a link to /dev/zero or /dev/urandom read until memory ran out."""
    os.mkfifo(tmp_path / "fifo.states")
    (tmp_path / "dir.params").mkdir()
    cases = {"fifo.states": "a FIFO", "dir.params": "a directory"}
    for dev in ("/dev/zero", "/dev/urandom"):
        if os.path.exists(dev):
            os.symlink(dev, tmp_path / f"{dev[5:]}.params")
            cases[f"{dev[5:]}.params"] = "a character device"
    for name, kind in cases.items():
        path = tmp_path / name
        for reader, fn in _readers(path).items():
            with no_hang(), pytest.raises(ValueError) as info:
                fn()
            msg = str(info.value)
            assert msg.startswith(f"{path}: refused: the path is {kind}, not a regular file"), (reader, msg)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_path_swapped_for_a_fifo_after_its_check_is_refused(tmp_path, monkeypatch):
    """The path is checked again on the open descriptor, opened without blocking: a FIFO put in place of a
    regular file between the check and the open neither blocks nor is read."""
    from mxopt_jax._src.mxnet_format import files

    os.mkfifo(tmp_path / "swapped.params")
    regular = os.stat(CKPT / "mx20_adam.params")
    monkeypatch.setattr(files.os, "stat", lambda p: regular)  # the check before the open says: regular
    with no_hang(), pytest.raises(ValueError, match=r"swapped\.params: refused: the path is a FIFO"):
        load_params(tmp_path / "swapped.params")


def test_a_file_longer_than_its_size_is_read_only_within_the_budget(tmp_path, monkeypatch):
    """A file longer than its size says (growing while it is read) is refused past the budget; the kernel's
    pseudo-files (regular by their mode, size 0) are refused before they are opened."""
    if os.path.exists("/proc/self/status"):
        with pytest.raises(ValueError, match=r"^/proc/self/status: refused: .* pseudo-filesystems"):
            load_params("/proc/self/status")
    from mxopt_jax._src.mxnet_format import files

    path = tmp_path / "grows.params"
    path.write_bytes(bytes(5000))
    real_fstat = os.fstat

    def small(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 0, *st[7:]))  # st_size 0

    monkeypatch.setattr(files.os, "fstat", small)
    with pytest.raises(ValueError, match=r"grows\.params: refused: the file holds more than 1000 bytes"):
        load_params(path, max_bytes=1000)


_COMPILES: list | None = None  # the names of XLA programs compiled while a count is open; None: none is open


def _on_duration(event, duration, **kw):
    if _COMPILES is not None and event == "/jax/core/compile/backend_compile_duration":
        _COMPILES.append(event)


def _count_compiles():
    """A list that grows by one name for each XLA program compiled until the returned stop() is called.

    One listener is registered for the process (the oldest supported JAX cannot unregister one); it records only
    while a count is open. The count is proven live: a program compiled for the first time is seen."""
    global _COMPILES
    import jax
    from jax import monitoring

    if not getattr(_on_duration, "registered", False):
        monitoring.register_event_duration_secs_listener(_on_duration)
        _on_duration.registered = True
    _COMPILES = []
    fresh = float(time.perf_counter_ns() % 1_000_003)  # a constant in the program: one no cache holds
    jax.jit(lambda x: x * 3.0 + fresh)(np.float32(1))
    assert _COMPILES, "the compile listener saw no compile"
    _COMPILES.clear()
    seen = _COMPILES

    def stop():
        global _COMPILES
        _COMPILES = None

    return seen, stop


def _adam_states(shapes, dtype=np.float32):
    return {i: (np.zeros(s, dtype), np.zeros(s, dtype)) for i, s in enumerate(shapes)}


def test_many_distinct_state_shapes_compile_no_program():
    """400 zero-size states of distinct shapes (a 93 kB file) compiled an XLA program each (1.4 MB kept,
    5.5 s, 564 MB in all). The states are now checked abstractly and built on the host, one transfer."""
    _, opt = _adam()
    blob = dumps((_adam_states([(0, k) for k in range(1, 201)] + [(k % 3, k) for k in range(1, 201)]), opt))
    load_updater(dumps(_adam()))  # what any load compiles, once
    seen, stop = _count_compiles()
    try:
        upd = load_updater(blob)
    finally:
        stop()
    assert seen == [] and len(upd.states) == 400
    assert upd.states[399][0].shape == (2, 200) and upd.layout[5] == (None, (0, 6), np.float32)


def test_distinct_state_shapes_are_counted_against_the_budget():
    """4,000 zero-size states of distinct shapes (a 530 kB file) ended in a MemoryError; each distinct shape
    now counts what checking it takes, so such a small file is refused before any is checked."""
    _, opt = _adam()
    blob = dumps((_adam_states([(0, k) for k in range(1, 4001)]), opt))
    assert len(blob) < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"refused: converting 4000 states \(4000 distinct shapes\)"):
            load_updater(blob)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 64 * MB


def _factor(**over):
    a = dict(base_lr=0.05, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0, warmup_mode="linear", step=2,
             factor=0.5, stop_factor_lr=1e-8, count=2)  # fmt: skip
    return Obj("mxnet.lr_scheduler", "FactorScheduler", {**a, **over})


def _multi(**over):
    a = dict(base_lr=0.05, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0, warmup_mode="linear",
             step=[2, 5], cur_step_ind=1, factor=0.5, count=2)  # fmt: skip
    return Obj("mxnet.lr_scheduler", "MultiFactorScheduler", {**a, **over})


def _poly(name="PolyScheduler", **over):
    a = dict(base_lr=0.08, warmup_steps=0, warmup_final_lr=0.1, warmup_begin_lr=0, warmup_mode="linear",
             base_lr_orig=0.1, max_update=10, final_lr=0, max_steps=10)  # fmt: skip
    return Obj("mxnet.lr_scheduler", name, {**a, **({"power": 2} if name == "PolyScheduler" else {}), **over})


_INT = r"must be an integer in \[0, 2\*\*31 - 1\], got"


@pytest.mark.parametrize(
    "sched, match",
    [
        (_factor(count=float("-inf")), rf"FactorScheduler's attribute 'count' {_INT} -inf"),
        (_factor(count=-(2**61)), rf"FactorScheduler's attribute 'count' {_INT} -2305843009213693952"),
        (_factor(count=0.5), rf"FactorScheduler's attribute 'count' {_INT} 0\.5"),
        (_factor(count=2.0), rf"FactorScheduler's attribute 'count' {_INT} 2\.0"),
        (_factor(count=3), r"FactorScheduler's attribute 'count' = 3 must be a multiple of step = 2 up to"),
        (_factor(count=2**30), r"'count' = 1073741824 must be a multiple of step = 2 up to .* num_update = 3"),
        (_factor(step=0), r"cannot rebuild MXNet's FactorScheduler in mxopt_jax: Schedule step must be"),
        (_factor(base_lr=float("nan")), r"FactorScheduler's attribute 'base_lr' must be a finite number >= 0"),
        (_factor(factor=True), r"FactorScheduler's attribute 'factor' must be a finite number >= 0, got True"),
        (_factor(warmup_mode="cubic"), r"attribute 'warmup_mode' must be 'linear' or 'constant', got a str"),
        (_factor(warmup_begin_lr=0.5), r"cannot rebuild MXNet's FactorScheduler in mxopt_jax: Base lr"),
        (_factor(warmup_final_lr=0.01, base_lr_orig=0.1, warmup_begin_lr=0.05), r"'warmup_begin_lr' = 0\.05"),
        (_multi(cur_step_ind=0.5), rf"MultiFactorScheduler's attribute 'cur_step_ind' {_INT} 0\.5"),
        (_multi(cur_step_ind=-1), rf"MultiFactorScheduler's attribute 'cur_step_ind' {_INT} -1"),
        (_multi(cur_step_ind=5), r"'cur_step_ind' = 5 must be an index in \[0, len\(step\) = 2\]"),
        (_multi(count=3), r"'count' = 3 must be the last step boundary passed, step\[cur_step_ind - 1\] = 2"),
        (_multi(cur_step_ind=2, count=5), r"'cur_step_ind' = 2 must be the number of boundaries below"),
        (_multi(step=[2, 2**40]), r"MultiFactorScheduler's attribute 'step' must be a list of integers"),
        (_poly(max_steps=0), r"PolyScheduler's attribute 'max_steps' = 0 must be max_update - warmup_steps = 10"),
        (_poly(power=0.5, max_steps=2), r"PolyScheduler's attribute 'max_steps' = 2 must be max_update"),
        (_poly(power=-1), r"PolyScheduler's attribute 'power' must be a finite number >= 0, got -1"),
        (_poly(max_update=2.5), rf"PolyScheduler's attribute 'max_update' {_INT} 2\.5"),
        (_poly(warmup_steps=10, max_steps=0), r"cannot rebuild MXNet's PolyScheduler in mxopt_jax: warmup_steps"),
        (_poly("CosineScheduler", base_lr_orig=0.2), r"CosineScheduler's attribute 'base_lr_orig' = 0\.2 must be"),
        (_poly("CosineScheduler", final_lr=float("inf")), r"'final_lr' must be a finite number >= 0, got inf"),
    ],
)  # fmt: skip
def test_scheduler_fields_are_checked_at_load(sched, match):
    """FactorScheduler count = -inf (a 213-byte file) loaded, then its first learning rate never returned;
    Poly max_steps = 0 divided by zero, a fractional power of a negative base gave a complex rate, a float
    count broke to_optax: each field is now checked at load against what MXNet's own scheduler keeps."""
    blob = dumps(_adam(lr_scheduler=sched))
    with no_hang(), pytest.raises(ValueError, match=r"^<states bytes>: .*" + match):
        load_updater(blob)


def test_a_scheduler_far_behind_num_update_is_refused():
    """count = 0 with num_update = 2**30 and step 1: MXNet's own loop would decay 2**30 times at the next
    query. MXNet keeps count within a step of num_update past the warmup: more than 2**20 decays is refused."""
    counts = {i: 2**30 for i in range(4)}
    blob = dumps(_adam(num_update=2**30, _index_update_count=counts, _all_index_update_counts={0: counts},
                       lr_scheduler=_factor(step=1, count=0, base_lr=0.1)))  # fmt: skip
    with no_hang(), pytest.raises(ValueError, match=r"'count' = 0 must be within 1048576 decays of"):
        load_updater(blob)


@pytest.mark.parametrize(
    "sched", [_factor(), _multi(), _poly(), _poly("CosineScheduler"), _factor(count=0, base_lr=0.1)]
)  # count = 0: no decay yet, base_lr is still the constructor's
def test_valid_scheduler_positions_answer_every_later_call(sched):
    """What MXNet could have written loads, and every later call answers: the next learning rate, a facade
    step by name, and to_optax's jitted step."""
    import jax
    import jax.numpy as jnp

    states, opt = from_states(*read_states(GOLD / "mx20_cnn_adam.states"))
    opt.attrs["lr_scheduler"] = sched
    with no_hang():
        ckpt = load_trainer(GOLD / "mx20_cnn_adam.params", dumps((states, opt)), loss="mean", lr_mult={})
        lr = ckpt.optimizer.lr_scheduler(ckpt.optimizer.num_update + 1)
        grads = {n: jnp.ones_like(ckpt.params[n]) for n in ckpt.trainable}
        new = ckpt.updater(grads, dict(ckpt.params))
        tx, st = ckpt.to_optax()
        updates, _ = jax.jit(tx.update)(grads | {n: jnp.zeros_like(ckpt.params[n]) for n in ckpt.frozen}, st,
                                        ckpt.params)  # fmt: skip
    assert 0 <= lr <= 0.1 and all(bool(jnp.isfinite(v).all()) for v in new.values())
    assert all(bool(jnp.isfinite(u).all()) for u in jax.tree.leaves(updates))


def test_empty_arrays_with_overflowing_shapes_are_refused():
    """(0, 2**62) passed the size check (its product is 0) and NumPy's own ValueError named neither the file
    nor the offset, in .params, .npy and .states alike."""
    big = (0, 2**62)
    f4 = np_dtype("f4")
    cases = [
        (load_params, list_file([ndarray_record(big)]), r"^<params bytes>: corrupted header: array 0 declares"),
        (load_params, npy(big), r"^<params bytes>: corrupted header: the \.npy array declares shape \(0, 4611"),
        (load_params, npz({"w.npy": npy(big)}), r"^<params bytes>: corrupted header: member 'w\.npy' declares"),
        (load_updater, dumps({0: Raw(glob("mxnet.ndarray.ndarray", "NDArray") + b"N\x85R"
                                     + dumps({"handle": ndarray_record(big)})[2:-1] + b"b")}),
         r"^<states bytes>: not a readable MXNet \.states pickle: .*corrupted header: pickled NDArray declares"),
        (read_states, dumps({0: Raw(np_array(f4, big, b""))}), r"^<states bytes>: refused a NumPy array of shape"),
    ]  # fmt: skip
    for fn, blob, match in cases:
        msg = _refused(fn, blob, match)
        assert "span more than 2**62 bytes" in msg and "at byte" in msg
    assert load_params(npy((0, 3)))["0"].shape == (0, 3)  # an empty array of a real shape still reads
    assert read_states(dumps({0: Raw(np_array(f4, (0, 3), b""))}))[0][0].shape == (0, 3)


def test_an_npy_descr_ending_in_a_newline_is_refused():
    """'<f4\\n' matched the dtype pattern (its $ matches before a final newline): NumPy raised a TypeError."""
    blob = npy((2,), "<f4").replace(b"'<f4'", b"'<f4\n'").replace(b"   \n", b"  \n", 1)
    _refused(load_params, blob, r"^<params bytes>: the \.npy array: refused dtype '<f4\n'")
    _refused(load_params, npz({"w.npy": blob}), r"^<params bytes>: member 'w\.npy': refused dtype")


def test_big_endian_parameters_load_in_native_byte_order():
    """Big-endian .npz members made load_trainer raise a TypeError from jnp.asarray. They are read into the
    machine's byte order, values unchanged (MXNet itself refuses them; NumPy writes them on a big-endian
    machine), and resume exactly as the same file in native order."""
    native = load_params(GOLD / "mx20_cnn_adam.params")
    swapped = npz({f"{n}.npy": _npy_of(a.astype(a.dtype.newbyteorder(">"))) for n, a in native.items()})
    got = load_params(swapped)
    assert all(got[n].dtype == a.dtype and (got[n] == a).all() for n, a in native.items())
    states = GOLD / "mx20_cnn_adam.states"
    a = load_trainer(GOLD / "mx20_cnn_adam.params", states, loss="sum", lr_mult={})
    b = load_trainer(swapped, states, loss="sum", lr_mult={})
    grads = {n: np.ones(a.params[n].shape, np.float32) for n in a.trainable}
    want = a.updater(grads, a.params)
    for n, w in b.updater(grads, b.params).items():
        assert np.array_equal(np.asarray(w), np.asarray(want[n]))
    # pickled NumPy arrays too: a big-endian rescale_grad or state reads in native order
    f8 = np_dtype("f8", dumps((3, ">", None, None, None, -1, -1, 0))[2:-1])
    arr = read_states(dumps({0: Raw(np_array(f8, (2,), struct.pack(">2d", 1.5, -2.0)))}))[0][0]
    assert arr.dtype == np.dtype("=f8") and arr.tolist() == [1.5, -2.0]


def _npy_of(a):
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_string_escapes_are_decoded_without_warnings():
    """A protocol-0 STRING with an invalid escape raised DeprecationWarning under -W error (the project's
    test filter) and otherwise wrote into the module's warning registry. Escapes are decoded by a table."""
    from mxopt_jax._src.mxnet_format import opcodes

    before = dict(getattr(opcodes, "__warningregistry__", {}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for body in (rb"\q", rb"\x4", rb"\777", b"\\"):
            blob = b"\x80\x02}S'" + body + b"'\nNs."
            _refused(read_states, blob, r"^<states bytes>: not a readable MXNet \.states pickle: STRING with")
        good = rb"a\x41\n\t\'\"\\\101\0z"
        assert read_states(b"\x80\x02}S'" + good + b"'\nNs.")[0] == pickle.loads(b"(dS'" + good + b"'\nNs.")
    assert dict(getattr(opcodes, "__warningregistry__", {})) == before


def test_npz_member_names_are_read_as_mxnet_reads_them():
    """UTF-8 names without the zip UTF-8 flag were decoded as cp437 ('ä.weight' as '├ñ.weight'). MXNet reads
    every member name as UTF-8 (and writes the flag, as NumPy does); a name that is not UTF-8, which NumPy would
    read as cp437 and MXNet cannot read, is refused, and so is a name with a NUL byte."""
    w = npy((3,))
    for flags in (0, 0x800):
        got = load_params(raw_npz([("ä.weight.npy".encode(), w), ("中.weight.npy".encode(), w)], flags))
        assert list(got) == ["ä.weight", "中.weight"]
    assert list(load_params(npz({"ä.weight.npy": w}))) == ["ä.weight"]  # zipfile (and NumPy) set the flag
    _refused(
        load_params, raw_npz([(b"\x84.weight.npy", w)]), r"refused the member name b'\\x84\.weight\.npy'"
    )
    _refused(load_params, raw_npz([(b"a.npy\0b.npy", w)]), r"refused the member name .* it holds a NUL byte")


def test_trainer_indices_follow_the_utf8_names():
    """With cp437 names the sort order flipped and index 0's state went to the other parameter (equal
    shapes, no error). Each state now goes to the parameter MXNet's Trainer numbered."""
    w = npy((3,))
    params = raw_npz([("中.weight.npy".encode(), w), ("ä.weight.npy".encode(), w)])  # no UTF-8 flag
    _, opt = _adam()
    marks = {0: np.full(3, 1.0, np.float32), 1: np.full(3, 2.0, np.float32)}
    blob = dumps(({i: (m, m * 0) for i, m in marks.items()}, opt))
    ckpt = load_trainer(params, blob, loss="sum", lr_mult={})
    assert ckpt.names == ("ä.weight", "中.weight")  # sorted as MXNet sorts collect_params() keys
    assert float(ckpt.updater.states[ckpt.index("ä.weight")][0][0]) == 1.0


def _params_npz(**arrays):
    return npz({f"{n}.npy": _npy_of(a) for n, a in arrays.items()})


def test_state_dtypes_are_checked_against_their_weight():
    """float16 Adam moments were accepted for float32 weights and stayed float16 after an update (MXNet could
    not resume such a file). Each state's dtypes are checked against what MXNet's optimizer makes for its
    weight (its dtype, float32 for AdaGrad & co., a float32 master and state with multi_precision)."""
    _, opt = _adam()
    params = _params_npz(a=np.zeros(3, np.float32), b=np.zeros(3, np.float32))
    half = dumps((_adam_states([(3,), (3,)], np.float16), opt))
    with pytest.raises(ValueError, match=r"index 0 \(parameter 'a'\) has a state for a float16 weight .* but "
                                         r"the parameter is float32"):  # fmt: skip
        load_trainer(params, half, loss="sum", lr_mult={})
    upd = load_updater(half)  # a float16 weight's Adam state, without multi_precision: MXNet's own
    assert upd.layout[0][2] == np.float16
    with pytest.raises(ValueError, match=r"the weight has dtype float32, the file's parameter is float16"):
        upd(0, np.ones(3, np.float32), np.zeros(3, np.float32))
    mixed = {0: (np.zeros(3, np.float16), np.zeros(3, np.float32))}
    with pytest.raises(ValueError, match=r"index 0 .*: state arrays of dtypes float16, float32: MXNet 2\.0 adam "
                                         r"keeps every state array in its weight's dtype"):  # fmt: skip
        load_updater(dumps((mixed, opt)))
    adagrad = from_states(*read_states(CKPT / "mx20_adagrad.states"))
    adagrad[0][0] = adagrad[0][0].astype(np.float16)
    with pytest.raises(
        ValueError, match=r"MXNet 2\.0 adagrad keeps its state in float32 whatever the weight"
    ):
        load_updater(dumps(adagrad))
    fp16 = GOLD / "mx20_cnn_fp16.params"
    as_f32 = _params_npz(**{n: a.astype(np.float32) for n, a in load_params(fp16).items()})
    with pytest.raises(
        ValueError, match=r"has a multi-precision state \(float32 master\) for a float16 weight"
    ):
        load_trainer(as_f32, GOLD / "mx20_cnn_fp16.states", loss="sum", lr_mult={})
    mp = from_states(*read_states(CKPT / "mx20_adam.states"))
    mp[1].attrs["multi_precision"] = True
    with pytest.raises(ValueError, match=r"a float16 state with multi_precision on"):
        load_updater(dumps((_adam_states([(3,)], np.float16), mp[1])))


def test_holders_of_classes_are_never_kept_by_the_process():
    """A 22 kB file added 550 classes to a module-global registry of holders for the life of the process.
    Holders are now instances of fixed classes; the (at most two) stand-ins for a user's classes go with the
    objects read."""
    from mxopt_jax._src.mxnet_format import allowlist

    def classes():
        gc.collect()
        seen, todo = set(), [allowlist.MXNetObject]
        while todo:
            for sub in todo.pop().__subclasses__():
                seen.add(sub)
                todo.append(sub)
        return seen

    zoo = [Obj(m, n) for m in sorted(allowlist._OPTIMIZER_MODULES) for n in sorted(allowlist._MX_OPTIMIZERS)]
    zoo += [Obj("mxnet.lr_scheduler", n) for n in sorted(allowlist._MX_SCHEDULERS)]
    assert len(zoo) > 500
    before = classes()
    _, opt = read_states(dumps(({0: None}, Obj("mxnet.optimizer", "Adam", zoo=zoo))))
    assert len(opt.zoo) == len(zoo) and classes() == before
    _, opt = read_states(dumps(({0: None}, Obj("my.own", "Opt", lr_scheduler=Obj("my.own", "Sched")))))
    assert (opt.mx_class, opt.lr_scheduler.mx_class) == ("Opt", "Sched")
    del opt
    assert classes() == before


@pytest.mark.parametrize("cap_mb", [6, 12, 20, 40])
def test_a_deflate_bomb_stays_within_the_budget(cap_mb):
    """A deflated member peaked 3 MiB past the budget: the output buffer grew uncounted. Its declared size is
    now counted before it is decompressed, into a buffer of exactly that size; the peak stays under the cap."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("w.npy", "w") as f:
        f.write(npy((16 << 18,), data=b""))  # a 16 MiB float32 array of zeros, 16 kB deflated
        for _ in range(16):
            f.write(bytes(MB))
    tracemalloc.start()
    try:
        try:
            assert load_params(buf.getvalue(), max_bytes=cap_mb * MB)["w"].shape == (16 << 18,)
        except ValueError as exc:
            assert "past the reader's memory budget" in str(exc) and cap_mb < 33
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak <= cap_mb * MB, f"{peak / MB:.2f} MiB allocated for a budget of {cap_mb} MiB"


def test_a_scheduler_catching_up_at_the_end_of_its_warmup_is_refused_only_when_it_would_hang():
    """A long warmup (count 0 until it ends, as MXNet keeps it) loads; a warmup ending at the next update with
    2**30 decays to catch up would hang the query after next, and is refused."""
    far = dumps(_adam(lr_scheduler=_factor(step=1, count=0, base_lr=0.1, warmup_steps=10**7)))
    assert load_updater(far).optimizer.lr_scheduler.warmup_steps == 10**7
    n = 2**30
    counts = {i: n for i in range(4)}
    near = _adam(num_update=n, _index_update_count=counts, _all_index_update_counts={0: counts},
                 lr_scheduler=_factor(step=1, count=0, base_lr=0.1, warmup_steps=n + 2))  # fmt: skip
    with (
        no_hang(),
        pytest.raises(ValueError, match=r"'count' = 0 must be within 1048576 decays .* past the warmup"),
    ):
        load_updater(dumps(near))
