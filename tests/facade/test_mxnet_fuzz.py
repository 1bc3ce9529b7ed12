"""Fuzzing the MXNet checkpoint readers with mutations of the real MXNet files under tests/golden/, and with
hostile files of the kinds a file controls beyond its opcodes.

Each mutation case mutates one real file (bit flips, bytes set to pickle opcodes or to extreme integers,
inserts, deletions, duplicated spans, truncation); each hostile case builds a file around the real ones
(tests/_support/hostile_strategies.py: scheduler fields, many distinct state shapes, empty arrays of
overflowing shapes, byte orders, member names, state dtypes; floods of tiny containers, memo entries and string
escapes, states sharing one array, pairings MXNet defines by name, and the facade's own ``set_states`` format
made hostile), and the paths that are no regular file are read too. Each is read as a user would:
``load_params``, ``load_updater``, ``load_trainer`` (then stepped once) or ``Updater.set_states`` (then stepped). The reading runs in a
child process (tests/_support/fuzz_child.py) under an address-space limit (``RLIMIT_AS``: what it uses after a
warm-up plus ``HEADROOM``) with a time limit per case, and reports the most resident memory the case added.
Asserted: a ``ValueError`` naming the file or a correct load (after which the next learning rate answers);
never another exception, a crash, a hang, an allocation past the limit, or a peak past the reader's stated
budget, ``max(64 MiB, 32 x the file's size)`` for each file read. Hypothesis draws the cases, derandomized: a
few hundred in the default run, a few thousand under ``-m slow``.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import pickletools
import select
import struct
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest
from hostile_strategies import (
    byte_orders,
    container_floods,
    empty_shapes,
    facade_archives,
    many_shapes,
    member_names,
    pairings,
    scheduler_fields,
    shared_states,
    state_dtypes,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, RESUME = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"
CHILD = pathlib.Path(__file__).parents[1] / "_support" / "fuzz_child.py"
HEADROOM = 768 * 2**20  # above the reader's default budget (64 MiB for these files) and the JAX arrays made
CASE_SECONDS = 20.0  # a case that takes longer is a hang (the machine may be shared)

FEW = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
)
MANY = settings(FEW, max_examples=1500)


def _meta_of(path: pathlib.Path) -> dict:
    """How a user loads this .states file (a substitute for a class of one's own, an optimizer for a
    states-only file)."""
    stem = path.name.split(".")[0]
    meta: dict = {"kind": "states"}
    if path.name.endswith(".nodump.states"):
        meta["optimizer"] = "sgd"
    if "custom" in stem:
        meta.update(optimizer="sgd", lr_scheduler=True)
    return meta


STATES = sorted(p for d in (CKPT, RESUME) for p in d.glob("*.states"))
PARAMS = sorted(p for d in (CKPT, RESUME) for p in d.glob("*.params"))
TRAINERS = sorted(p.with_suffix("") for p in RESUME.glob("*.states"))


def _trainer_meta(stem: pathlib.Path) -> dict:
    with np.load(stem.with_suffix(".npz")) as z:
        meta = json.loads(str(z["meta"]))
    out: dict = {"kind": "trainer", "names": meta["collect_params"] if stem.name.startswith("mx19") else None}
    if "custom" in stem.name:
        out.update(optimizer="sgd", lr_scheduler=True)
    return out


class Child:
    """The reading process; restarted after a crash or a hang."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        warm = [
            [{"kind": "params"}, str(CKPT / "mx19_adam.params"), ""],
            [{"kind": "params"}, str(CKPT / "mx20_adam.params"), ""],
            [_meta_of(CKPT / "mx20_adam_fp16.states"), str(CKPT / "mx20_adam_fp16.states"), ""],
            [_trainer_meta(RESUME / "mx20_cnn_adam"), str(RESUME / "mx20_cnn_adam.params"),
             str(RESUME / "mx20_cnn_adam.states")],
        ]  # fmt: skip
        env = {**os.environ, "JAX_PLATFORMS": "cpu"}
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD), str(HEADROOM), json.dumps(warm)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        ready = self._answer(300.0)
        assert ready is not None and ready.get("ready"), f"the fuzz child did not start: {ready}"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def _answer(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"eof": True}

    def read(self, meta: dict, a: bytes, b: bytes = b"", timeout: float = CASE_SECONDS) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        head = json.dumps(meta).encode()
        t0 = time.monotonic()
        try:
            self.proc.stdin.write(struct.pack("<III", len(head), len(a), len(b)) + head + a + b)
            self.proc.stdin.flush()
            answer = self._answer(timeout)
        except BrokenPipeError:
            answer = {"eof": True}
        if answer is None or "eof" in answer:
            rc = self.proc.wait(5) if answer is not None else None
            self.stop()
            return {"dead": f"hung for {timeout} s" if answer is None else f"died (exit status {rc})"}
        answer["seconds"] = time.monotonic() - t0
        return answer


@pytest.fixture(scope="module")
def child():
    c = Child()
    yield c
    c.stop()


# --------------------------------------------------------------------------- mutations
_OPCODES = sorted(set(b"().0123NIJKLMFGSTUVXBCabcdeghijlopqrstu}]") | set(range(0x80, 0x99)))
_EXTREMES = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 2**63 - 1, 2**64 - 1]
# whole opcodes (with their argument) put in place of one opcode of a genuine pickle: the stream stays
# well formed, so the values reach the allow-list and the resume's checks
_VALUES = [
    b"N", b"\x88", b"\x89", b"K\xff", b"J\xff\xff\xff\x7f", b"J\x00\x00\x00\x80", b"\x8a\x09" + b"\xff" * 8 + b"\x7f",
    b"G\x7f\xf8\x00\x00\x00\x00\x00\x00", b"G\x7f\xf0\x00\x00\x00\x00\x00\x00", b"G\xc0\x00\x00\x00\x00\x00\x00\x00",
    b")", b"}", b"]", b"\x8c\x00", b"\x8c\x04step", b"\x8c\x02lr", b"C\x00", b"C\x04\xca\xfa\x93\xf9",
    b"\x8c\x05numpy\x8c\x05dtype\x93", b"\x8c\x08builtins\x8c\x06object\x93", b"\x8c\x03foo\x8c\x03Bar\x93",
]  # fmt: skip

position = st.integers(0, 2**32)
mutation = st.one_of(
    st.tuples(st.just("flip"), position, st.integers(0, 7)),
    st.tuples(st.just("byte"), position, st.integers(0, 255)),
    st.tuples(st.just("opcode"), position, st.sampled_from(_OPCODES)),
    st.tuples(st.just("int"), position, st.sampled_from([1, 2, 4, 8]), st.sampled_from(_EXTREMES)),
    st.tuples(st.just("insert"), position, st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), position, st.integers(1, 16)),
    st.tuples(st.just("repeat"), position, st.integers(1, 64), st.integers(1, 64)),
    st.tuples(st.just("truncate"), position),
)
value = st.tuples(st.just("value"), position, st.sampled_from(_VALUES))
# byte-level mutations (the stream breaks), or whole values swapped (the stream stays well formed)
mutations = st.lists(mutation, min_size=1, max_size=4) | st.lists(value, min_size=1, max_size=3)


def _opcode_spans(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each opcode of a genuine pickle whose argument is a value (not a memo index)."""
    ops = list(pickletools.genops(data))
    spans = [(pos, ops[k + 1][2]) for k, (op, _, pos) in enumerate(ops[:-1])]
    return [sp for sp, (op, _, _) in zip(spans, ops, strict=False) if op.name not in _STRUCTURE]


_STRUCTURE = {"PROTO", "FRAME", "MARK", "STOP", "MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT"}


def mutate(data: bytes, muts: list) -> bytes:
    values = [m for m in muts if m[0] == "value"]
    if values and data[:1] == b"\x80":  # whole opcodes of the genuine pickle first, from the end
        spans = _opcode_spans(data)
        b = bytearray(data)
        for start, end, new in sorted(((*spans[m[1] % len(spans)], m[2]) for m in values), reverse=True):
            b[start:end] = new
        if b[2:3] == b"\x95":  # protocol 4's one frame (the files are small): its length follows the swaps
            b[3:11] = struct.pack("<Q", len(b) - 11)
        data = bytes(b)
    b = bytearray(data)
    for m in muts:
        if not b or m[0] == "value":
            continue
        kind, p = m[0], m[1] % len(b)
        if kind == "flip":
            b[p] ^= 1 << m[2]
        elif kind in ("byte", "opcode"):
            b[p] = m[2]
        elif kind == "int":
            width, value = m[2], m[3] % (1 << (8 * m[2]))
            b[p : p + width] = value.to_bytes(width, "little")
        elif kind == "insert":
            b[p:p] = m[2]
        elif kind == "delete":
            del b[p : p + m[2]]
        elif kind == "repeat":  # a span repeated: lengths, frames and memo references go out of step
            b[p:p] = bytes(b[p : p + m[2]]) * m[3]
        else:
            del b[p:]
    return bytes(b)


def mutate_params(data: bytes, muts: list, member: int | None) -> bytes:
    """For an .npz archive and ``member`` given: mutate that member's bytes and write a valid archive again
    (stored, as MXNet writes it), so the mutations reach the .npy reader past the CRC."""
    if member is None or not data.startswith(b"PK"):
        return mutate(data, muts)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = [(i.filename, zf.read(i)) for i in zf.infolist()]
    k = member % len(members)
    members[k] = (members[k][0], mutate(members[k][1], muts))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, raw in members:
            zf.writestr(name, raw)
    return buf.getvalue()


def _budget(size: int) -> int:
    """The reader's stated budget of a file of ``size`` bytes."""
    return max(64 * 2**20, 32 * size)


def _check(answer: dict, what: str, sizes: tuple[int, ...] = (0,), names: tuple[str, ...] = ()) -> None:
    """A correct load, or a ValueError whose message names the file (the readers name bytes ``<... bytes>``,
    a path by itself, ``names``); the case's peak resident memory within the budget of the files read."""
    assert "dead" not in answer, f"{what}: the reader {answer['dead']}"
    if "error" in answer:
        assert answer["error"] == "ValueError", (
            f"{what}: {answer['error']}: {answer['msg']}\n{answer.get('trace')}"
        )
        msg = answer["msg"]
        named = ("<states bytes>", "<params bytes>", "set_states", *names)
        assert any(n in msg for n in named), f"{what}: the message names no file: {msg}"
    else:
        assert answer.get("ok") is True, answer
    peak, limit = answer.get("peak"), sum(_budget(n) for n in sizes)
    assert peak is None or peak <= limit, (
        f"{what}: peak {peak / 2**20:.1f} MiB, past the budget {limit} bytes"
    )


def _states_case(child, path, muts):
    data = mutate(path.read_bytes(), muts)
    _check(child.read(_meta_of(path), data), f"{path.name} {muts}", (len(data),))


def _params_case(child, path, muts, member):
    data = mutate_params(path.read_bytes(), muts, member)
    _check(child.read({"kind": "params"}, data), f"{path.name} {muts} member {member}", (len(data),))


def _trainer_case(child, stem, which, muts):
    params, states = stem.with_suffix(".params").read_bytes(), stem.with_suffix(".states").read_bytes()
    if which == "params":
        params = mutate_params(params, muts, 0)
    else:
        states = mutate(states, muts)
    _check(
        child.read(_trainer_meta(stem), params, states),
        f"{stem.name} {which} {muts}",
        (len(params), len(states)),
    )


@FEW
@given(path=st.sampled_from(STATES), muts=mutations)
def test_fuzz_states(child, path, muts):
    _states_case(child, path, muts)


members = st.none() | st.integers(0, 64)


@settings(FEW, max_examples=100)
@given(path=st.sampled_from(PARAMS), muts=mutations, member=members)
def test_fuzz_params(child, path, muts, member):
    _params_case(child, path, muts, member)


@settings(FEW, max_examples=50)
@given(stem=st.sampled_from(TRAINERS), which=st.sampled_from(["params", "states"]), muts=mutations)
def test_fuzz_trainer(child, stem, which, muts):
    _trainer_case(child, stem, which, muts)


@pytest.mark.slow
@MANY
@given(path=st.sampled_from(STATES), muts=mutations)
def test_fuzz_states_many(child, path, muts):
    _states_case(child, path, muts)


@pytest.mark.slow
@MANY
@given(path=st.sampled_from(PARAMS), muts=mutations, member=members)
def test_fuzz_params_many(child, path, muts, member):
    _params_case(child, path, muts, member)


@pytest.mark.slow
@settings(MANY, max_examples=500)
@given(stem=st.sampled_from(TRAINERS), which=st.sampled_from(["params", "states"]), muts=mutations)
def test_fuzz_trainer_many(child, stem, which, muts):
    _trainer_case(child, stem, which, muts)


def test_the_child_reports_what_the_fuzz_asserts(child):
    """The harness can fail: a correct load, a refusal, an allocation past the limit, a crash and a hang each
    come back as such."""
    assert child.read({"kind": "params"}, (CKPT / "mx20_adam.params").read_bytes()).get("ok") is True
    assert child.read(_meta_of(CKPT / "mx20_adam.states"), (CKPT / "mx20_adam.states").read_bytes())["ok"]
    refused = child.read({"kind": "params"}, b"\x13\x01" + b"\0" * 30)
    assert refused["error"] == "ValueError" and refused["msg"].startswith("<params bytes>: wrong magic")
    assert child.read({"kind": "selftest", "do": "alloc"}, b"")["error"] == "MemoryError"
    assert child.read({"kind": "selftest", "do": "crash"}, b"")["dead"].startswith("died")
    assert (
        child.read({"kind": "selftest", "do": "sleep", "seconds": 60}, b"", timeout=1.0)["dead"]
        == "hung for 1.0 s"
    )


# --------------------------------------------------------------------------- what a file controls beyond opcodes
def _hostile_case(child, case):
    meta, a, b = case
    meta = {**meta, "step": True}
    sizes = (len(a), len(b)) if meta["kind"] == "trainer" else (len(a),)
    _check(child.read(meta, a, b), f"{meta} of {len(a)} + {len(b)} bytes", sizes)


HOSTILE = {  # strategy: (default run, -m slow)
    "scheduler_fields": (scheduler_fields(), 60, 600),
    "many_shapes": (many_shapes(), 8, 80),
    "empty_shapes": (empty_shapes(), 40, 400),
    "byte_orders": (byte_orders(), 10, 100),
    "member_names": (member_names(), 40, 400),
    "state_dtypes": (state_dtypes(), 40, 400),
    # issue 43: what the budgets must count, pairing by name, the facade's own format (each case stepped)
    "container_floods": (container_floods(), 4, 100),
    "shared_states": (shared_states(), 8, 60),
    "pairings": (pairings(), 30, 300),
    "facade_archives": (facade_archives(), 8, 400),
}


def _fuzz_hostile(child, strategy, n):
    @settings(FEW, max_examples=n)
    @given(case=strategy)
    def cases(case):
        _hostile_case(child, case)

    cases()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_fuzz_hostile(child, kind):
    strategy, n, _ = HOSTILE[kind]
    _fuzz_hostile(child, strategy, n)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_fuzz_hostile_many(child, kind):
    strategy, _, n = HOSTILE[kind]
    _fuzz_hostile(child, strategy, n)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_paths_that_are_no_regular_file(child, tmp_path):
    """FIFOs, devices, directories, sockets and the kernel's pseudo-files (/proc/self/status,
    /proc/self/mem: regular by their mode) are refused naming the path, before they are opened; a link to a
    real file is read."""
    import socket

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    links = {"zero": "/dev/zero", "urandom": "/dev/urandom", "status": "/proc/self/status",
             "mem": "/proc/self/mem", "real": str(CKPT / "mx20_adam.states")}  # fmt: skip
    for name, target in links.items():
        if os.path.exists(target):
            os.symlink(target, tmp_path / name)
    try:
        for name in sorted(os.listdir(tmp_path)):
            path = str(tmp_path / name)
            for reader in ("params", "states"):
                answer = child.read({"kind": "path", "reader": reader, "path": path}, b"", timeout=60.0)
                _check(answer, f"{reader} of {name}", (os.stat(path).st_size if name in ("real", "status") else 0,),
                       (path,))  # fmt: skip
                if name in ("fifo", "dir", "sock", "zero", "urandom", "status", "mem"):
                    assert "not a regular file" in answer["msg"], answer
                if name == "real" and reader == "states":
                    assert answer.get("ok") is True, answer
    finally:
        sock.close()
