"""The child process of tests/facade/test_mxnet_fuzz.py: reads checkpoint files under an address-space limit.

Run as ``python fuzz_child.py HEADROOM_BYTES``. After importing mxopt_jax and one warm-up load of each kind,
it limits its address space (``RLIMIT_AS``) to what it uses then plus ``HEADROOM_BYTES`` and answers
requests on stdin, one at a time: a frame ``<u32 meta length><u32 a length><u32 b length>`` then the JSON
meta and the bytes ``a`` and ``b`` (or, for ``{"kind": "path"}``, the path to read in the meta); the answer is
one JSON line on stdout: ``{"ok": true}`` for a correct load, else ``{"error": <exception type>, "msg":
<message>}``, with ``"peak"``, the most resident memory the case added (bytes: the peak RSS, reset before the
case through ``/proc/self/clear_refs``, less the RSS before it; ``null`` where Linux does not tell). After a
correct load the next learning rate is asked (a file must not make a later call hang or fail). A crash or a
hang shows as a dead or silent child to the parent.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import time
import traceback
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import jax  # noqa: E402

import mxopt_jax  # noqa: E402
from mxopt_jax.mxnet_format import load_params, load_trainer, load_updater  # noqa: E402

PLAIN = set("biuf")


def _check_arrays(arrays: dict) -> None:
    assert isinstance(arrays, dict)
    for name, a in arrays.items():
        assert isinstance(name, str) and isinstance(a, np.ndarray), name
        assert a.dtype.kind in PLAIN or a.dtype.name == "bfloat16", a.dtype


def _check_updater(upd: object) -> None:
    assert isinstance(upd, mxopt_jax.Updater)
    for state in upd.states.values():  # the indices may be of several kinds: not one pytree
        for leaf in jax.tree.leaves(state):
            assert isinstance(leaf, jax.Array), type(leaf)
    opt = upd.optimizer
    if opt.lr_scheduler is not None:  # the next query answers, with a learning rate
        lr = opt.lr_scheduler(opt.num_update + 1)
        assert isinstance(lr, float) and lr >= 0, lr


def _optimizer(meta: dict) -> dict:
    kw: dict = {}
    if meta.get("optimizer"):
        kw["optimizer"] = mxopt_jax.create(meta["optimizer"], learning_rate=0.05, momentum=0.9)
    if meta.get("lr_scheduler"):
        kw["lr_scheduler"] = lambda n: 0.05
    return kw


def run(meta: dict, a: bytes, b: bytes) -> None:
    kind = meta["kind"]
    if kind == "selftest":  # the parent checks that it sees what it asserts against
        if meta["do"] == "alloc":
            bytearray(2 * int(sys.argv[1]))
        elif meta["do"] == "crash":
            os.abort()
        else:
            time.sleep(float(meta["seconds"]))
    elif kind == "path":
        path = meta["path"]
        if meta["reader"] == "params":
            _check_arrays(load_params(path))
        else:
            _check_updater(load_updater(path))
    elif kind == "params":
        _check_arrays(load_params(a))
    elif kind == "states":
        _check_updater(load_updater(a, **_optimizer(meta)))
    elif kind == "set_states":  # the facade's own format: loaded, stepped, its learning rate asked
        upd = mxopt_jax.get_updater(mxopt_jax.create("sgd", learning_rate=0.1, momentum=0.9))
        upd.set_states(a)
        upd([0, 1], [jax.numpy.ones(3)] * 2, [jax.numpy.ones(3)] * 2)
        _check_updater(upd)
        lr = upd.optimizer.learning_rate
        assert isinstance(lr, float) and lr >= 0, lr
    else:
        ckpt = load_trainer(a, b, loss="sum", names=meta.get("names"), lr_mult={}, **_optimizer(meta))
        _check_arrays({n: np.asarray(v) for n, v in ckpt.params.items()})
        _check_updater(ckpt.updater)
        if meta.get("step"):  # the first step after the load (fresh states made, schedulers queried)
            grads = {n: jax.numpy.ones_like(ckpt.params[n]) for n in ckpt.trainable}
            ckpt.updater(grads, ckpt.params)


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field}")


def _vm_bytes() -> int:
    return _status("VmSize")


def _reset_peak() -> int | None:
    """Reset the peak RSS to the current RSS (Linux: ``/proc/self/clear_refs``); the RSS, or ``None``."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status("VmRSS")
    except (OSError, RuntimeError):
        return None


def main() -> None:
    headroom = int(sys.argv[1])
    warm = json.loads(sys.argv[2])
    warnings.simplefilter("ignore")
    for meta, a, b in warm:  # compile what a genuine load compiles, before the limit
        run(meta, open(a, "rb").read(), open(b, "rb").read() if b else b"")
    limit = _vm_bytes() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out = sys.stdout
    out.write(json.dumps({"ready": True, "limit": limit}) + "\n")
    out.flush()
    stdin = sys.stdin.buffer
    while True:
        head = stdin.read(12)
        if len(head) < 12:
            return
        n_meta, n_a, n_b = struct.unpack("<III", head)
        meta = json.loads(stdin.read(n_meta))
        a, b = stdin.read(n_a), stdin.read(n_b)
        rss = _reset_peak()
        t0 = time.process_time()
        try:
            run(meta, a, b)
            answer: dict = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - every outcome is reported to the parent
            # a subclass of ValueError (the budget's OverBudget) is the documented ValueError
            kind = "ValueError" if isinstance(exc, ValueError) else type(exc).__name__
            answer = {"error": kind, "type": type(exc).__name__, "msg": str(exc)[:500]}
            if not isinstance(exc, ValueError):
                answer["trace"] = traceback.format_exc()[-2000:]
        answer["cpu"] = time.process_time() - t0
        answer["peak"] = None if rss is None else _status("VmHWM") - rss
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
