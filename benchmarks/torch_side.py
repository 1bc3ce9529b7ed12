"""torch.optim contenders for the benchmark, run in a SIDE virtualenv (never in the project's .venv).

Set-up (once; the CPU wheel is enough)::

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu

``run.py --torch-python /tmp/torchvenv/bin/python`` starts this script as a worker (``--serve``) and
interleaves its contenders with the JAX ones; standalone it prints JSON on stdout::

    /tmp/torchvenv/bin/python benchmarks/torch_side.py --workloads A,B,C,D --rounds 3 [--quick]

Contenders: ``torch_foreach`` (``foreach=True``), ``torch_fused`` (``fused=True``; skipped where torch has no
CPU fused kernel for the optimizer), and on B/C ``torch_loop`` (``foreach=False``, one tensor at a time).
On D: dense ``torch_fused`` / ``torch_foreach`` and, for Adam, ``torch_sparse_adam`` (``SparseAdam`` with a
sparse COO gradient of the touched rows, torch's lazy Adam). Gradients are fixed tensors assigned to
``p.grad``; CPU ops are synchronous, so no extra synchronisation is needed. Hyperparameters mirror
``bench_configs.py``.
"""

from __future__ import annotations

import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bench_engine as eng  # noqa: E402
import numpy as np  # noqa: E402
import workloads as W  # noqa: E402

try:
    import torch
except ImportError as _exc:
    print(f"torch_side: cannot import torch ({_exc})", file=sys.stderr)
    raise SystemExit(3) from None

torch.set_num_threads(len(os.sched_getaffinity(0)))
warnings.filterwarnings("ignore", message="Sparse invariant checks")

# key -> (torch.optim class name, kwargs); same hyperparameters as bench_configs.py
OPTIMS = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_mom": ("SGD", {"lr": 0.1, "momentum": 0.9}),
    "nag": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    "adagrad": ("Adagrad", {"lr": 0.01, "eps": 1e-6}),
    "adadelta": ("Adadelta", {"lr": 1.0, "rho": 0.9, "eps": 1e-6}),
    "rmsprop": ("RMSprop", {"lr": 0.001, "alpha": 0.9, "eps": 1e-8}),
    "adam": ("Adam", {"lr": 0.001, "eps": 1e-8}),
    "adamw": ("AdamW", {"lr": 0.001, "eps": 1e-6, "weight_decay": 0.01}),
    "adamax": ("Adamax", {"lr": 0.002, "eps": 1e-8}),
    "nadam": ("NAdam", {"lr": 0.001, "eps": 1e-8, "momentum_decay": 0.004}),
}


class TorchOptim(eng.Contender):
    def __init__(self, label: str, wname: str, key: str, quick: bool, impl: str) -> None:
        self.label, self.wname, self.key, self.quick, self.impl = label, wname, key, quick, impl
        cls, kw = OPTIMS[key]
        flag = {"foreach": {"foreach": True}, "fused": {"fused": True}, "loop": {"foreach": False}}[impl]
        self.cls, self.kw = cls, {**kw, **flag}
        self.info = {"note": f"torch.optim.{cls}({', '.join(f'{k}={v}' for k, v in self.kw.items())})"}

    def prepare(self) -> None:
        _, p, g = W.cached(self.wname, self.quick)
        self.params = [torch.nn.Parameter(torch.from_numpy(x.copy())) for x in p]
        for prm, gr in zip(self.params, g, strict=True):
            prm.grad = torch.from_numpy(gr.copy())
        try:
            self.opt = getattr(torch.optim, self.cls)(self.params, **self.kw)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise eng.Skip(f"{self.cls}({self.impl}) not available: {str(exc).splitlines()[0]}") from None

    def first(self) -> None:
        try:
            self.opt.step()
        except RuntimeError as exc:
            raise eng.Skip(f"{self.cls}({self.impl}) not available: {str(exc).splitlines()[0]}") from None

    def run(self, k: int) -> None:
        step = self.opt.step
        with torch.no_grad():
            for _ in range(k):
                step()

    buffers = ("opt", "params")  # dropped by Contender.close


class SparseAdam(eng.Contender):
    """``torch.optim.SparseAdam`` on the D table with a sparse COO gradient of the touched rows."""

    label = "torch_sparse_adam"

    def __init__(self, wname: str, quick: bool) -> None:
        self.wname, self.quick = wname, quick
        self.info = {"note": "torch.optim.SparseAdam(lr=0.001, eps=1e-8), sparse COO gradient"}

    def prepare(self) -> None:
        wl, p, _ = W.cached(self.wname, self.quick)
        idx, vals = W.sparse_rows(wl)
        self.param = torch.nn.Parameter(torch.from_numpy(p[0].copy()))
        self.grad = torch.sparse_coo_tensor(
            torch.from_numpy(idx.astype(np.int64))[None, :], torch.from_numpy(vals), size=p[0].shape
        ).coalesce()
        self.opt = torch.optim.SparseAdam([self.param], lr=0.001, eps=1e-8)

    def run(self, k: int) -> None:
        for _ in range(k):
            self.param.grad = self.grad
            self.opt.step()

    buffers = ("opt", "param", "grad")  # dropped by Contender.close


def make_contenders(wname: str, key: str, quick: bool) -> list[eng.Contender]:
    if key not in OPTIMS:
        return []
    impls = ["foreach", "fused"] + (["loop"] if wname in ("B", "C") else [])
    cs: list[eng.Contender] = [TorchOptim(f"torch_{i}", wname, key, quick, i) for i in impls]
    if wname == "D" and key == "adam":
        cs.append(SparseAdam(wname, quick))
    return cs


def hello() -> dict:
    return {"torch": torch.__version__, "threads": torch.get_num_threads(), "numpy": np.__version__}


if __name__ == "__main__":
    eng.side_main(make_contenders, hello, list(OPTIMS))
