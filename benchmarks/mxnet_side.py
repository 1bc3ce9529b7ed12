"""MXNet 1.9.1 contenders for the benchmark, run in a SIDE virtualenv (never in the project's .venv).

Set-up (once)::

    python3 -m venv /tmp/mx19 && /tmp/mx19/bin/pip install mxnet==1.9.1 numpy==1.23.5 requests 'graphviz<0.9'

``run.py --mxnet-python /tmp/mx19/bin/python`` starts this script as a worker (``--serve``) and interleaves
its contenders with the JAX ones. It can also run on its own and print JSON on stdout::

    /tmp/mx19/bin/python benchmarks/mxnet_side.py --workloads A,B,C,D --rounds 3 [--quick]

Contenders (labels):

* ``mx_op`` (A): the fused per-parameter operator, ``mx.nd.adam_update`` / ``mx.nd.sgd_mom_update`` with
  ``out=weight``.
* ``mx_updater_loop`` (B, C): ``upd = mx.optimizer.get_updater(mx.optimizer.create(...))`` and
  ``for i: upd(i, g[i], w[i])``.
* ``mx_updater_list`` (B, C): ``upd(list(range(n)), grads, weights)``. MXNet 1.9.1 aggregates such calls
  only for SGD (``multi_sgd_mom_update``, chunks of ``MXNET_OPTIMIZER_AGGREGATION_SIZE``) and LAMB; Adam
  loops internally. This script sets ``MXNET_OPTIMIZER_AGGREGATION_SIZE=45`` unless it is already set
  (MXNet's default is 4; ``multi_sgd_*`` crashes above 60 tensors per call).
* ``mx_lazy_updater`` (D): Updater with ``lazy_update=True`` and a ``row_sparse`` gradient holding the 10,000
  touched rows; ``mx_dense_updater`` (D): the same optimizer with the dense gradient.

Timing synchronises with ``mx.nd.waitall()``. ``OMP_NUM_THREADS`` defaults to the number of usable CPUs
(MXNet would otherwise use one thread per operator on small machines).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45")
os.environ.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))

import bench_engine as eng  # noqa: E402
import numpy as np  # noqa: E402
import workloads as W  # noqa: E402

try:
    import mxnet as mx
except ImportError as _exc:  # the harness reports this line and carries on without MXNet
    print(f"mxnet_side: cannot import mxnet ({_exc})", file=sys.stderr)
    raise SystemExit(3) from None

# MXNet 1.9.1 spellings of the configurations in bench_configs.py (same values)
KWARGS = {
    "adam": ("adam", {"learning_rate": 0.001, "epsilon": 1e-8}),
    "sgd_mom": ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
}


def _sync() -> None:
    mx.nd.waitall()


class Updater(eng.Contender):
    def __init__(
        self, label: str, wname: str, key: str, quick: bool, mode: str, sparse: bool = False
    ) -> None:
        self.label, self.wname, self.key, self.quick, self.mode, self.sparse = (
            label,
            wname,
            key,
            quick,
            mode,
            sparse,
        )
        name, kw = KWARGS[key]
        self.name = name
        self.kw = dict(kw, lazy_update=sparse)
        self.info = {"note": f"create({name!r}, {', '.join(f'{k}={v}' for k, v in self.kw.items())})"}
        if mode == "list":
            self.info["note"] += (
                f"; MXNET_OPTIMIZER_AGGREGATION_SIZE={os.environ['MXNET_OPTIMIZER_AGGREGATION_SIZE']}"
            )

    def prepare(self) -> None:
        wl, p, g = W.cached(self.wname, self.quick)
        self.opt = mx.optimizer.create(self.name, **self.kw)
        self.upd = mx.optimizer.get_updater(self.opt)
        self.ws = [mx.nd.array(x, dtype=np.float32) for x in p]
        if self.sparse:
            idx, vals = W.sparse_rows(wl)
            self.gs = [mx.nd.sparse.row_sparse_array((vals, idx), shape=wl.leaves[0][1], dtype=np.float32)]
        else:
            self.gs = [mx.nd.array(x, dtype=np.float32) for x in g]
        self.idx = list(range(len(self.ws)))
        _sync()

    def run(self, k: int) -> None:
        upd, ws, gs = self.upd, self.ws, self.gs
        for _ in range(k):
            if self.mode == "loop":
                for i in self.idx:
                    upd(i, gs[i], ws[i])
            else:
                upd(self.idx, gs, ws)
        _sync()

    buffers = ("upd", "opt", "ws", "gs")  # dropped by Contender.close


class FusedOp(eng.Contender):
    """``mx.nd.adam_update`` / ``mx.nd.sgd_mom_update`` on one weight, written in place (``out=w``)."""

    def __init__(self, wname: str, key: str, quick: bool) -> None:
        self.label, self.wname, self.key, self.quick = "mx_op", wname, key, quick
        self.info = {"note": f"mx.nd.{'adam_update' if key == 'adam' else 'sgd_mom_update'}(out=weight)"}

    def prepare(self) -> None:
        _, p, g = W.cached(self.wname, self.quick)
        self.w = mx.nd.array(p[0], dtype=np.float32)
        self.g = mx.nd.array(g[0], dtype=np.float32)
        self.s = [mx.nd.zeros(self.w.shape, dtype=np.float32) for _ in range(2 if self.key == "adam" else 1)]
        _sync()

    def run(self, k: int) -> None:
        w, g, s = self.w, self.g, self.s
        for _ in range(k):
            if self.key == "adam":
                mx.nd.adam_update(w, g, s[0], s[1], out=w, lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8)
            else:
                mx.nd.sgd_mom_update(w, g, s[0], out=w, lr=0.1, momentum=0.9)
        _sync()

    buffers = ("w", "g", "s")  # dropped by Contender.close


def make_contenders(wname: str, key: str, quick: bool) -> list[eng.Contender]:
    if key not in KWARGS:
        return []
    if wname == "A":
        return [FusedOp(wname, key, quick)]
    if wname in ("B", "C"):
        return [
            Updater("mx_updater_loop", wname, key, quick, "loop"),
            Updater("mx_updater_list", wname, key, quick, "list"),
        ]
    if wname == "D":
        return [
            Updater("mx_lazy_updater", wname, key, quick, "loop", sparse=True),
            Updater("mx_dense_updater", wname, key, quick, "loop"),
        ]
    return []


def hello() -> dict:
    feats = mx.runtime.Features()
    known = {f.name for f in feats.values()} if hasattr(feats, "values") else set()
    simd = [
        f
        for f in ("AVX2", "AVX", "SSE4_2", "SSE3", "SSE2")
        if f"CPU_{f}" in known and feats.is_enabled(f"CPU_{f}")
    ]
    return {
        "mxnet": mx.__version__,
        "numpy": np.__version__,
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "MXNET_OPTIMIZER_AGGREGATION_SIZE": os.environ.get("MXNET_OPTIMIZER_AGGREGATION_SIZE"),
        "engine": os.environ.get("MXNET_ENGINE_TYPE", "ThreadedEnginePerDevice"),
        "simd": simd[0] if simd else "none",
    }


if __name__ == "__main__":
    eng.side_main(make_contenders, hello, list(KWARGS))
