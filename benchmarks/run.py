#!/usr/bin/env python
"""Optimizer-step benchmark for mxopt_jax (project issue 5, "Performance").

Usage (from the repository root)::

    .venv/bin/python benchmarks/run.py                       # everything, writes benchmarks/RESULTS.md + .png
    .venv/bin/python benchmarks/run.py --quick               # small sizes, 1-2 rounds: does it work?
    .venv/bin/python benchmarks/run.py --workloads A --optimizers adam --rounds 5
    .venv/bin/python benchmarks/run.py --mxnet-python /tmp/mx19/bin/python --torch-python /tmp/torchvenv/bin/python

What is timed: steady-state optimizer steps ``params, state = step(params, state, grads)`` with ``step``
jitted and params and state DONATED, after the first call and a warm-up; gradients are reused. Contenders
of one (workload, optimizer) group are sampled round-robin (see ``bench_engine.py``); ratios are medians of
per-round ratios. The memory bandwidth of the machine is measured in the same run and turned into a
roofline: the bytes a step must move (read w, g and every state array, write w and every state array,
counted from ``tx.init(params)``) divided by the bandwidth.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import hashlib
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import bench_configs as configs  # noqa: E402
import bench_engine as eng  # noqa: E402
import bench_report as report  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import workloads as W  # noqa: E402

import mxopt_jax  # noqa: E402

warnings.filterwarnings("ignore", message="Some donated buffers were not usable")

MiB = 2**20


# =========================================================================== bytes-per-step model
def tree_bytes(tree: Any) -> int:
    """Bytes of every array leaf of ``tree`` (``None`` leaves are empty subtrees)."""
    return int(sum(np.dtype(x.dtype).itemsize * math.prod(x.shape) for x in jax.tree.leaves(tree)))


def traffic_bytes(param_bytes: int, grad_bytes: int, state_bytes: int, fraction: float = 1.0) -> float:
    """Minimum bytes one step moves: read g; read and write w and every state array.

    ``fraction`` < 1 is the lazy (row-sparse) model: only that fraction of the weight and state rows is
    read and written; ``grad_bytes`` is then the size of the sparse gradient (values + indices).
    Examples (float32, dense): SGD without momentum 12 B/param, SGD-momentum 20, Adam 28.
    """
    return fraction * (2 * param_bytes + 2 * state_bytes) + grad_bytes


def model_for(params: Any, state: Any, grads: Any = None, fraction: float = 1.0) -> dict:
    """The traffic model of one contender from its actual buffers."""
    pb = tree_bytes(params)
    gb = pb if grads is None else tree_bytes(grads)
    sb = tree_bytes(state)
    n = sum(math.prod(x.shape) for x in jax.tree.leaves(params))
    total = traffic_bytes(pb, gb, sb, fraction)
    return {"bytes": total, "bytes_per_param": total / max(n, 1), "state_bytes": sb, "num_params": n}


# =========================================================================== data per workload
class Data:
    """Host (NumPy) parameters and gradients of a workload, and device gradients shared by contenders."""

    def __init__(self, wl: W.Workload, seed: int = 0) -> None:
        self.wl = wl
        p, g = W.params_and_grads(wl, seed)
        self.names = [n for n, _ in wl.leaves]
        self.params_np = dict(zip(self.names, p, strict=True))
        self.grads_np = dict(zip(self.names, g, strict=True))
        self._dev: dict = {}
        if wl.sparse:
            self.idx_np, self.vals_np = W.sparse_rows(wl, seed)

    def params(self, layout: str = "tree") -> Any:
        """Fresh device copies of the parameters (each contender donates its own)."""
        return self._layout({k: jnp.array(v) for k, v in self.params_np.items()}, layout)

    def grads(self, layout: str = "tree") -> Any:
        """Device gradients (never donated, so shared by all contenders of this layout)."""
        if layout not in self._dev:
            self._dev[layout] = self._layout({k: jnp.asarray(v) for k, v in self.grads_np.items()}, layout)
        return self._dev[layout]

    @staticmethod
    def _layout(tree: dict, layout: str) -> Any:
        if layout == "tree":
            return tree
        if layout == "2d":
            return {k: v.reshape(W.as_2d(v.shape)) for k, v in tree.items()}
        if layout == "flat":
            return {"flat": jnp.concatenate([v.reshape(-1) for v in tree.values()])}
        if layout == "multi":  # the library's multi-tensor path: parameters kept as FlatParams
            from mxopt_jax.multi_tensor import FlatParams

            return FlatParams.from_tree(tree)
        raise ValueError(layout)


# =========================================================================== JAX contenders
def _sync(*trees: Any) -> None:
    jax.block_until_ready(trees)


def device_peak_bytes() -> int | None:
    """``peak_bytes_in_use`` of the first JAX device where the backend reports it (not on CPU)."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # noqa: BLE001
        return None
    return None if not stats else stats.get("peak_bytes_in_use")


def _make_step(tx: optax.GradientTransformation) -> Callable:
    def step(params, state, grads):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    return step


class JaxStep(eng.Contender):
    """``jax.jit(step, donate_argnums=(0, 1))`` of one optax-style transform.

    ``twin``: another JaxStep whose program this one is compared to (the aggregated variant vs the per-leaf
    one): if both trace to the same jaxpr, ``aggregate_num`` had no effect and this contender is skipped.
    """

    def __init__(
        self,
        label: str,
        make_tx: Callable[[], optax.GradientTransformation],
        data: Data,
        layout: str = "tree",
        twin: JaxStep | None = None,
        sparse_grads: Callable[[], Any] | None = None,
        fraction: float = 1.0,
        note: str = "",
    ) -> None:
        self.label = label
        self.make_tx = make_tx
        self.data = data
        self.layout = layout
        self.twin = twin
        self.sparse_grads = sparse_grads
        self.fraction = fraction
        self.info = {"note": note} if note else {}
        self._jaxpr: str | None = None
        self.want_jaxpr = False
        self.skip_reason: str | None = None  # set by the harness: only trace (for a twin), never run
        if twin is not None:
            twin.want_jaxpr = True

    def prepare(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            self.tx = self.make_tx()
        self.grads = self.sparse_grads() if self.sparse_grads is not None else self.data.grads(self.layout)
        self.params = self.data.params(self.layout)
        self.state = self.tx.init(self.params)
        # a state leaf that IS a parameter array (DCASGD's prev_weight at init) cannot be donated twice
        ids = {id(x) for x in jax.tree.leaves(self.params)}
        aliased = [id(x) in ids for x in jax.tree.leaves(self.state)]
        if any(aliased):
            self.info["note"] = "tx.init returned state aliasing the params; copied so both can be donated"
            self.state = jax.tree.map(lambda x: jnp.copy(x) if id(x) in ids else x, self.state)
        self.step = _make_step(self.tx)
        _sync(self.params, self.state)
        dense_grads = None if self.sparse_grads is None else self.grads
        self.info.update(model_for(self.params, self.state, dense_grads, self.fraction))
        self.fn = jax.jit(self.step, donate_argnums=(0, 1))
        if self.want_jaxpr:
            self.jaxpr()
        if self.skip_reason:
            raise eng.Skip(self.skip_reason)
        if self.twin is not None:
            same = self.twin.jaxpr() == self.jaxpr()
            self.twin._jaxpr = self._jaxpr = None
            if same:
                raise eng.Skip(f"same program as {self.twin.label}: aggregate_num has no effect yet")

    def jaxpr(self) -> str | None:
        """A fingerprint (hash of the jaxpr text) of this contender's step, ``None`` if not prepared.

        Traced through the jitted function, so the first call reuses the trace; the tracing time is
        added to the first-call time (``extra_first_s``).
        """
        if self._jaxpr is None and getattr(self, "fn", None) is not None:
            t0 = time.perf_counter()
            traced = self.fn.trace(self.params, self.state, self.grads)
            self.extra_first_s = time.perf_counter() - t0
            self._jaxpr = hashlib.sha256(str(traced.jaxpr).encode()).hexdigest()
        return self._jaxpr

    def first(self) -> None:
        before = device_peak_bytes()
        self.params, self.state = self.fn(self.params, self.state, self.grads)
        _sync(self.params, self.state)
        after = device_peak_bytes()
        if before is not None and after is not None:  # accelerators only (CPU has no memory_stats)
            self.info["device_peak_growth_bytes"] = after - before

    def run(self, k: int) -> None:
        fn, p, s, g = self.fn, self.params, self.state, self.grads
        for _ in range(k):
            p, s = fn(p, s, g)
        self.params, self.state = p, s
        _sync(p, s)

    buffers = ("params", "state", "grads", "fn", "tx", "step")  # dropped by Contender.close


class FacadeStep(eng.Contender):
    """The MXNet-style facade: ``mxopt_jax.create(name, **kw)`` + ``get_updater``.

    ``mode='loop'``: ``for i: w[i] = upd(i, g[i], w[i])``; ``mode='list'``: ``w = upd(list(range(n)), g, w)``.
    The per-index first step is given ``budget_s``: if the library compiles per index and the first step
    would take longer, it is stopped and the contender skipped (with the observed seconds per index).
    ``after``: a contender that compiles the same per-index programs; if it was skipped for its budget,
    so is this one.
    """

    def __init__(
        self,
        label: str,
        name: str,
        kwargs: dict,
        data: Data,
        mode: str,
        budget_s: float = math.inf,
        after: FacadeStep | None = None,
    ) -> None:
        self.label, self.name, self.kwargs, self.data, self.mode = label, name, kwargs, data, mode
        self.budget_s, self.after = budget_s, after
        self.over_budget: str | None = None
        self.info = {}

    def prepare(self) -> None:
        if self.after is not None and self.after.over_budget:
            raise eng.Skip(f"compiles the same per-index programs as {self.after.label}, which was skipped")
        opt = mxopt_jax.create(self.name, **self.kwargs)
        self.upd = mxopt_jax.get_updater(opt)
        self.ws = list(self.data.params().values())
        self.gs = list(self.data.grads().values())
        self.idx = list(range(len(self.ws)))
        self.info["note"] = f"aggregate_num={opt.aggregate_num}"
        _sync(self.ws)

    def _one(self) -> None:
        if self.mode == "loop":
            upd, ws, gs = self.upd, self.ws, self.gs
            for i in self.idx:
                ws[i] = upd(i, gs[i], ws[i])
        else:
            self.ws = self.upd(self.idx, self.gs, self.ws)

    def first(self) -> None:
        if self.mode == "loop":
            t0 = time.perf_counter()
            upd, ws, gs = self.upd, self.ws, self.gs
            for i in self.idx:
                ws[i] = upd(i, gs[i], ws[i])
                el = time.perf_counter() - t0
                if el > self.budget_s and i + 1 < len(self.idx):
                    jax.block_until_ready(ws)
                    el = time.perf_counter() - t0
                    self.over_budget = (
                        f"first step stopped after {el:.0f} s at index {i + 1} of {len(self.idx)} "
                        f"({el / (i + 1):.2f} s per index: is each index compiled separately?)"
                    )
                    raise eng.Skip(self.over_budget)
        else:
            self._one()
        _sync(self.ws, self.upd.states)
        self.info.update(model_for(self.ws, self.upd.states))

    def run(self, k: int) -> None:
        for _ in range(k):
            self._one()
        _sync(self.ws)

    buffers = ("upd", "ws", "gs")  # dropped by Contender.close


class LazyRef(eng.Contender):
    """Hand-written lazy row update in plain JAX (gather, update the touched rows, scatter back).

    A reference for what a row-sparse path can reach on this machine; not part of mxopt_jax.
    """

    def __init__(self, label: str, key: str, data: Data) -> None:
        self.label, self.key, self.data = label, key, data
        self.info = {"note": "hand-written gather/scatter reference"}

    def prepare(self) -> None:
        w = self.data.params()["table"]
        self.idx = jnp.asarray(self.data.idx_np)
        self.vals = jnp.asarray(self.data.vals_np)
        kw = {"indices_are_sorted": True, "unique_indices": True}
        if self.key == "adam":
            b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
            self.state = (jnp.zeros((), jnp.int32), jnp.zeros_like(w), jnp.zeros_like(w))

            def step(w, s, idx, g):
                t, m, v = s
                t = t + 1
                tf = t.astype(jnp.float32)
                m_r = b1 * m[idx] + (1 - b1) * g
                v_r = b2 * v[idx] + (1 - b2) * g * g
                lr_t = lr * jnp.sqrt(1 - b2**tf) / (1 - b1**tf)
                w = w.at[idx].add(-lr_t * m_r / (jnp.sqrt(v_r) + eps), **kw)
                return w, (t, m.at[idx].set(m_r, **kw), v.at[idx].set(v_r, **kw))
        else:
            lr, mu = 0.1, 0.9
            self.state = (jnp.zeros_like(w),)

            def step(w, s, idx, g):
                (mom,) = s
                mom_r = mu * mom[idx] - lr * g
                return w.at[idx].add(mom_r, **kw), (mom.at[idx].set(mom_r, **kw),)

        self.w = w
        self.fn = jax.jit(step, donate_argnums=(0, 1))
        _sync(self.w, self.state)
        frac = len(self.data.idx_np) / w.shape[0]
        self.info.update(model_for(w, self.state, (self.idx, self.vals), frac))

    def run(self, k: int) -> None:
        fn, w, s, idx, g = self.fn, self.w, self.state, self.idx, self.vals
        for _ in range(k):
            w, s = fn(w, s, idx, g)
        self.w, self.state = w, s
        _sync(w, s)

    def first(self) -> None:
        self.run(1)

    buffers = ("w", "state", "fn", "idx", "vals")  # dropped by Contender.close


def row_sparse_cls() -> tuple[Any, str | None]:
    """``mxopt_jax.sparse.RowSparse`` or ``(None, why)``."""
    try:
        from mxopt_jax.sparse import RowSparse
    except ImportError as exc:
        return None, f"mxopt_jax.sparse.RowSparse not importable ({exc}); lazy rows skipped"
    return RowSparse, None


class _Missing(eng.Contender):
    def __init__(self, label: str, why: str) -> None:
        self.label, self.why, self.info = label, why, {}

    def prepare(self) -> None:
        raise eng.Skip(self.why)


def _mx_tx(cfg: configs.OptConfig, **extra: Any) -> Callable[[], optax.GradientTransformation]:
    return lambda: mxopt_jax.OPTIMIZERS[cfg.mx_name](**{**cfg.kwargs, **extra})


def jax_contenders(
    wl: W.Workload, cfg: configs.OptConfig, data: Data, headline: bool, facade_budget_s: float = math.inf
) -> list[eng.Contender]:
    """The JAX-side contenders of one (workload, optimizer) group."""
    cs: list[eng.Contender] = []
    layout = "2d" if cfg.two_d else "tree"
    if wl.sparse:
        RowSparse, why = row_sparse_cls()
        rows = wl.leaves[0][1][0]
        frac = wl.touched_rows / rows
        if RowSparse is None:
            cs.append(_Missing("mxopt_lazy", why))
        else:

            def sparse_grads() -> Any:
                return {
                    "table": RowSparse(  # MXNet's row_sparse invariant: sorted, unique rows
                        jnp.asarray(data.idx_np),
                        jnp.asarray(data.vals_np),
                        tuple(wl.leaves[0][1]),
                        sorted_unique=True,
                    )
                }

            cs.append(
                JaxStep(
                    "mxopt_lazy",
                    _mx_tx(cfg, lazy_update=True),
                    data,
                    sparse_grads=sparse_grads,
                    fraction=frac,
                    note="RowSparse gradient, lazy_update=True",
                )
            )
        cs.append(JaxStep("mxopt_dense", _mx_tx(cfg), data, note="dense gradient"))
        if cfg.optax is not None:
            cs.append(JaxStep("optax_dense", lambda: cfg.optax(optax), data, note="dense gradient"))
        cs.append(LazyRef("jax_lazy_ref", cfg.key, data))
        return cs
    per_leaf = JaxStep("mxopt", _mx_tx(cfg), data, layout)
    cs.append(per_leaf)
    if wl.num_leaves > 1:
        cs.append(JaxStep("mxopt_agg", _mx_tx(cfg, aggregate_num=np.inf), data, layout, twin=per_leaf))
    if wl.num_leaves > 1 and cfg.key != "groupadagrad":  # GroupAdaGrad needs 2-D parameters
        cs.append(
            JaxStep(
                "mxopt_multi",
                _mx_tx(cfg),
                data,
                "multi",
                note="parameters kept as mxopt_jax.multi_tensor.FlatParams (the multi-tensor path)",
            )
        )
    if cfg.optax is not None:
        cs.append(JaxStep("optax", lambda: cfg.optax(optax), data, layout))
    if headline and wl.num_leaves > 1:
        cs.append(
            JaxStep(
                "mxopt_flat",
                _mx_tx(cfg),
                data,
                "flat",
                note="the same transform on ONE concatenated leaf: the target for aggregate_num",
            )
        )
        loop = FacadeStep("facade_loop", cfg.mx_name, cfg.kwargs, data, "loop", facade_budget_s)
        cs.append(loop)
        cs.append(FacadeStep("facade_list", cfg.mx_name, cfg.kwargs, data, "list", after=loop))
        # the chunk size the MXNet side is given (mxnet_side.py: MXNET_OPTIMIZER_AGGREGATION_SIZE, default 45)
        mx_agg = int(os.environ.get("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))
        mx_kw = {**cfg.kwargs, "aggregate_num": mx_agg}
        cs.append(FacadeStep("facade_list_mx", cfg.mx_name, mx_kw, data, "list"))
        agg_kw = {**cfg.kwargs, "aggregate_num": np.inf}
        cs.append(FacadeStep("facade_list_agg", cfg.mx_name, agg_kw, data, "list"))
    return cs


# =========================================================================== bandwidth
class BwKernel(eng.Contender):
    """A streaming kernel over float32 buffers of ``n`` elements, output donated (written in place)."""

    KERNELS = {
        # name: (arrays, bytes moved per element, function)
        "scale": (2, 8, lambda a, b, c, s: b * s),  # a = s*b (a copy that cannot be elided)
        "triad": (3, 12, lambda a, b, c, s: b + s * c),  # a = b + s*c (STREAM triad)
        "axpy": (2, 12, lambda a, b, c, s: a + s * b),  # a += s*b (the in-place pattern of an optimizer)
    }

    def __init__(self, kind: str, n: int) -> None:
        self.kind, self.n = kind, n
        self.label = f"bw_{kind}"
        arrays, per_elem, _ = self.KERNELS[kind]
        self.bytes = per_elem * n
        self.info = {"bytes": self.bytes, "footprint_bytes": arrays * 4 * n}

    def prepare(self) -> None:
        f = self.KERNELS[self.kind][2]
        self.a = jnp.full((self.n,), 1.0, jnp.float32)
        self.b = jnp.full((self.n,), 0.5, jnp.float32)
        self.c = jnp.full((self.n,), 0.25, jnp.float32) if self.KERNELS[self.kind][0] == 3 else None
        self.s = jnp.asarray(1e-6, jnp.float32)
        # keep_unused: `a` is not read by scale/triad; without it jit would drop the argument and its
        # donation, and every call would write into freshly faulted-in memory
        self.fn = jax.jit(f, donate_argnums=(0,), keep_unused=True)
        _sync(self.a, self.b, self.c)

    def run(self, k: int) -> None:
        a = self.a
        for _ in range(k):
            a = self.fn(a, self.b, self.c, self.s)
        self.a = a
        _sync(a)

    buffers = ("a", "b", "c", "fn")  # dropped by Contender.close


def measure_bandwidth(n: int, rounds: int, sample_s: float, log: Callable[[str], None]) -> dict:
    """GB/s of each kernel (median over interleaved rounds) and the reference (the best median)."""
    slots = [eng.LocalSlot(BwKernel(kind, n), sample_s) for kind in BwKernel.KERNELS]
    res = eng.run_slots(slots, rounds, log)
    out: dict = {"n": n, "kernels": {}}
    for label, rec in res.items():
        if rec.get("ms") is None:
            out["kernels"][label] = {"error": rec["setup"].get("error", "no samples")}
            continue
        b = rec["setup"]["bytes"]
        out["kernels"][label] = {
            "gbps": b / rec["ms"] / 1e6,
            "gbps_q1": b / rec["ms_q3"] / 1e6,
            "gbps_q3": b / rec["ms_q1"] / 1e6,
            "footprint_mib": rec["setup"]["footprint_bytes"] / MiB,
            "faults": rec.get("faults"),
        }
    good = [k["gbps"] for k in out["kernels"].values() if "gbps" in k]
    out["reference_gbps"] = max(good) if good else float("nan")
    return out


# =========================================================================== side-library workers
def start_worker(name: str, python: str, script: str) -> eng.WorkerSlot | None:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    env.pop("PYTHONPATH", None)
    try:
        w = eng.WorkerSlot(name, [python, os.path.join(HERE, script), "--serve"], env=env)
    except Exception as exc:  # noqa: BLE001
        why = f"not available: could not start {python} {script}: {exc}"
        print(f"!! {name}: {why}", file=sys.stderr)
        _emit({"event": "side", "name": name, "hello": {"error": why}})
        return None
    print(f"   {name} worker: {json.dumps(w.hello.get('hello', w.hello))}")
    return w


# =========================================================================== the run
def machine_info() -> dict:
    info: dict = {"date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        with open("/proc/cpuinfo") as f:
            models = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        info["cpu"] = models[0] if models else platform.processor()
        info["logical_cpus"] = len(models) or os.cpu_count()
    except OSError:
        info["cpu"], info["logical_cpus"] = platform.processor(), os.cpu_count()
    info["usable_cpus"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            kb = next(int(ln.split()[1]) for ln in f if ln.startswith("MemTotal"))
        info["ram_gib"] = kb / 2**20
    except (OSError, StopIteration):
        info["ram_gib"] = None
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index3/size") as f:
            info["l3"] = f.read().strip()
    except OSError:
        info["l3"] = "?"
    info["load_avg_start"] = os.getloadavg()
    info["python"] = platform.python_version()
    info["jax"] = jax.__version__
    try:
        import jaxlib

        info["jaxlib"] = jaxlib.__version__
    except Exception:  # noqa: BLE001
        info["jaxlib"] = "?"
    info["optax"] = optax.__version__
    info["numpy"] = np.__version__
    info["mxopt_jax"] = getattr(mxopt_jax, "__version__", "?")
    info["device"] = f"{jax.default_backend()}: {jax.devices()[0].device_kind} x{jax.device_count()}"
    try:
        rev = subprocess.run(
            ["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", HERE, "status", "--porcelain", "--", "../mxopt_jax"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        info["git"] = rev + (" (mxopt_jax/ has uncommitted changes)" if dirty else "")
    except Exception:  # noqa: BLE001
        info["git"] = "?"
    info["memory_method"] = eng.PEAK_METHOD + (
        "; device peak_bytes_in_use growth over the first call is in the JSON (device_peak_growth_bytes)"
        if device_peak_bytes() is not None
        else "; jax.devices()[0].memory_stats() is unavailable on this backend"
    )
    return info


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--workloads", default="A,B,C,D", help="comma-separated subset of A,B,C,D (default all)")
    p.add_argument(
        "--optimizers",
        default="all",
        help="comma-separated keys (MXNet names, plus sgd_mom = SGD with momentum 0.9); default all:\n  "
        + ",".join(c.key for c in configs.CONFIGS),
    )
    p.add_argument(
        "--rounds", type=int, default=None, help="interleaved rounds per group (default 5; quick 1)"
    )
    p.add_argument(
        "--headline-rounds",
        type=int,
        default=None,
        help=f"rounds for the headline optimizer ({configs.HEADLINE}) and for D (default 2*rounds+1; quick 2)",
    )
    p.add_argument(
        "--sample-ms", type=float, default=None, help="target duration of one sample (default 100)"
    )
    p.add_argument(
        "--bandwidth-mib", type=int, default=None, help="size of ONE bandwidth buffer (default 256)"
    )
    p.add_argument(
        "--first-call-timeout",
        type=float,
        default=None,
        help="seconds a contender's set-up + first call may take before it is abandoned (default 60)",
    )
    p.add_argument(
        "--facade-first-budget",
        type=float,
        default=None,
        help="seconds the facade's per-index first step may take before it is skipped (default 60)",
    )
    p.add_argument("--mxnet-python", default=None, help="python of a side venv with mxnet 1.9.1 (optional)")
    p.add_argument("--torch-python", default=None, help="python of a side venv with torch (optional)")
    p.add_argument(
        "--out",
        default=None,
        help="markdown report ('' = none; default benchmarks/RESULTS.md, with --quick a file in the temp dir)",
    )
    p.add_argument(
        "--plot",
        default=None,
        help="bar chart ('' = none; default benchmarks/results.png, with --quick a file in the temp dir)",
    )
    p.add_argument("--json", default="", help="also dump the raw results as JSON to this file")
    p.add_argument("--quick", action="store_true", help="small sizes and 1-2 rounds: check that it works")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--skip", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--bw-gbps", type=float, default=float("nan"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    tmp = tempfile.gettempdir()
    if a.out is None:
        a.out = os.path.join(tmp, "mxopt_jax_bench_quick.md") if a.quick else os.path.join(HERE, "RESULTS.md")
    if a.plot is None:
        a.plot = (
            os.path.join(tmp, "mxopt_jax_bench_quick.png") if a.quick else os.path.join(HERE, "results.png")
        )
    if a.rounds is None:
        a.rounds = 1 if a.quick else 5
    if a.headline_rounds is None:
        a.headline_rounds = 2 if a.quick else 2 * a.rounds + 1
    if a.sample_ms is None:
        a.sample_ms = 2.0 if a.quick else 100.0
    if a.bandwidth_mib is None:
        a.bandwidth_mib = 4 if a.quick else 256
    if a.first_call_timeout is None:
        a.first_call_timeout = 60.0
    if a.facade_first_budget is None:
        a.facade_first_budget = 30.0 if a.quick else 60.0
    a.workload_list = [w.strip().upper() for w in a.workloads.split(",") if w.strip()]
    for w in a.workload_list:
        if w not in W.ALL:
            p.error(f"unknown workload {w!r}; choose from {','.join(W.ALL)}")
    if a.optimizers == "all":
        a.opt_list = [c.key for c in configs.CONFIGS]
    else:
        a.opt_list = [o.strip().lower() for o in a.optimizers.split(",") if o.strip()]
        bad = [o for o in a.opt_list if o not in configs.BY_KEY]
        if bad:
            p.error(f"unknown optimizer(s) {bad}; choose from {','.join(configs.BY_KEY)}")
    return a


def plan(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The (workload, optimizer) groups to run, in order."""
    groups = []
    for w in args.workload_list:
        keys = [k for k in args.opt_list if k in configs.SPARSE_KEYS] if w == "D" else args.opt_list
        groups += [(w, k) for k in keys]
    return groups


# --------------------------------------------------------------------------- child: runs one workload
EVENT = "@@bench "


def _emit(msg: dict) -> None:
    sys.stdout.write(EVENT + json.dumps(msg, default=float) + "\n")
    sys.stdout.flush()


def child_main(args: argparse.Namespace) -> None:
    """Run the groups of ONE workload in this process, reporting through ``@@bench`` JSON lines."""
    (wname,) = args.workload_list
    wl = W.get(wname, args.quick)
    skips: dict[tuple[str, str], dict[str, str]] = {}
    for spec in args.skip:
        key, label, why = spec.split("|", 2)
        skips.setdefault((wname, key), {})[label] = why
    sample_s = args.sample_ms / 1e3
    workers: list[eng.WorkerSlot] = []
    for name, python, script in (
        ("mxnet", args.mxnet_python, "mxnet_side.py"),
        ("torch", args.torch_python, "torch_side.py"),
    ):
        if python:
            w = start_worker(name, python, script)
            if w is not None:
                workers.append(w)
                _emit({"event": "side", "name": name, "hello": w.hello.get("hello", w.hello)})
    print(f"-- workload {wname}: {wl.description}", flush=True)
    data = Data(wl)
    try:
        for _, key in plan(args):
            cfg = configs.BY_KEY[key]
            headline = key == configs.HEADLINE or wl.sparse
            rounds = args.headline_rounds if headline else args.rounds
            _emit({"event": "group_start", "optimizer": key})
            print(f"   [{wname}/{key}] rounds={rounds}", flush=True)
            skip = skips.get((wname, key), {})
            cs = jax_contenders(wl, cfg, data, key == configs.HEADLINE, args.facade_first_budget)
            for i, c in enumerate(cs):
                if c.label in skip:
                    if isinstance(c, JaxStep):  # still traced when its twin needs the fingerprint
                        c.skip_reason = skip[c.label]
                    else:
                        cs[i] = _Missing(c.label, skip[c.label])
            slots: list = [eng.LocalSlot(c, sample_s) for c in cs]
            for w in workers:
                if any(label.startswith(f"{w.name}:") for label in skip):
                    continue
                try:
                    if w.open_group(wname, key, args.quick, sample_s):
                        slots.append(w)
                except Exception as exc:  # noqa: BLE001
                    print(f"!! {w.name} worker failed: {exc}", file=sys.stderr)
            t0 = time.perf_counter()
            res = eng.run_slots(
                slots,
                rounds,
                lambda s: print("   " + s, flush=True),
                lambda labels, key=key: _emit({"event": "setup", "optimizer": key, "labels": labels}),
            )
            group = {
                "workload": wname,
                "optimizer": key,
                "description": wl.description,
                "rounds": rounds,
                "seconds": time.perf_counter() - t0,
                "results": res,
            }
            add_derived(group, args.bw_gbps)
            log_group(group, lambda s: print(s, flush=True))
            print(f"      ({group['seconds']:.0f} s)", flush=True)
            _emit({"event": "group", "group": group})
            jax.clear_caches()
            gc.collect()
    finally:
        for w in workers:
            w.shutdown()


# --------------------------------------------------------------------------- parent: orchestrates
def _child_argv(args: argparse.Namespace, wname: str, keys: list[str], skips: list[str]) -> list[str]:
    argv = [sys.executable, os.path.abspath(__file__), "--child", "--workloads", wname]
    argv += ["--optimizers", ",".join(keys), "--rounds", str(args.rounds)]
    argv += ["--headline-rounds", str(args.headline_rounds), "--sample-ms", str(args.sample_ms)]
    argv += ["--facade-first-budget", str(args.facade_first_budget), "--bw-gbps", str(args.bw_gbps)]
    if args.quick:
        argv.append("--quick")
    if args.mxnet_python:
        argv += ["--mxnet-python", args.mxnet_python]
    if args.torch_python:
        argv += ["--torch-python", args.torch_python]
    for s in skips:
        argv += ["--skip", s]
    return argv


def run_workload(args: argparse.Namespace, wname: str, keys: list[str], results: dict, log: Callable) -> None:
    """Run one workload's groups in child processes, restarting the child past a contender that hangs.

    A contender whose set-up + first call exceeds ``--first-call-timeout`` (e.g. an XLA compilation that
    takes many minutes) is abandoned: the child is killed and restarted with that contender skipped, so a
    pathological case costs a bounded amount of time and never steals CPU from later measurements.
    """
    import queue
    import threading

    skips: list[str] = []
    remaining = list(keys)
    while remaining:
        argv = _child_argv(args, wname, remaining, skips)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=None, text=True, bufsize=1)
        q: queue.Queue = queue.Queue()

        def pump(p=proc, q=q) -> None:
            for line in p.stdout:
                q.put(line)
            q.put(None)

        threading.Thread(target=pump, daemon=True).start()
        current, labels, since = None, [], time.monotonic()
        killed = None
        while True:
            limit = args.first_call_timeout if labels else args.first_call_timeout * 4 + 600
            try:
                line = q.get(timeout=max(1.0, limit - (time.monotonic() - since)))
            except queue.Empty:
                killed = (current, labels)
                proc.kill()
                proc.wait()
                break
            if line is None:
                break
            if not line.startswith(EVENT):
                log(line.rstrip("\n"))
                continue
            ev = json.loads(line[len(EVENT) :])
            kind = ev["event"]
            if kind == "side":
                results.setdefault("side", {})[ev["name"]] = ev["hello"]
            elif kind == "group_start":
                current, labels, since = ev["optimizer"], [], time.monotonic()
            elif kind == "setup":
                labels, since = ev["labels"], time.monotonic()
            elif kind == "group":
                g = ev["group"]
                results["groups"].append(g)
                remaining.remove(g["optimizer"])
                current, labels, since = None, [], time.monotonic()
        rc = proc.wait()
        if killed is not None:
            key, labs = killed
            if key is None:
                log(f"!! child for {wname} produced nothing for too long; giving up on {remaining}")
                _record_failure(results, wname, remaining, "child process silent for too long")
                return
            why = f"abandoned: set-up + first call took more than {args.first_call_timeout:g} s"
            log(f"!! {wname}/{key}: {', '.join(labs) or 'group'} {why}; restarting without it")
            for lab in labs or ["*"]:
                spec = f"{key}|{lab}|{why}"
                if spec in skips:  # the same contender hung twice: give up on the group
                    _record_failure(results, wname, [key], why)
                    remaining.remove(key)
                    break
                skips.append(spec)
            continue
        if remaining:
            key = remaining[0]
            log(f"!! child for {wname} exited (rc={rc}) during {key}; continuing after it")
            _record_failure(results, wname, [key], f"child process died (rc={rc})")
            remaining.pop(0)


def _record_failure(results: dict, wname: str, keys: list[str], why: str) -> None:
    for key in keys:
        results["groups"].append(
            {
                "workload": wname,
                "optimizer": key,
                "rounds": 0,
                "results": {"*": {"setup": {"error": why}, "samples": []}},
            }
        )


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return {}
    t_start = time.perf_counter()
    log = print
    info = machine_info()
    info["command"] = shlex.join(
        [
            ".venv/bin/python",
            os.path.relpath(os.path.abspath(__file__)),
            *(sys.argv[1:] if argv is None else argv),
        ]
    )
    if os.environ.get("XLA_FLAGS"):  # read once by XLA when the process starts: part of what was measured
        info["command"] = f"XLA_FLAGS={shlex.quote(os.environ['XLA_FLAGS'])} {info['command']}"
    log(f"== mxopt_jax optimizer benchmark ({'quick' if args.quick else 'full'}) on {info['cpu']}")
    log(f"   jax {info['jax']}, optax {info['optax']}, mxopt_jax {info['mxopt_jax']} (git {info['git']})")
    sample_s = args.sample_ms / 1e3
    results: dict = {"machine": info, "args": {k: v for k, v in vars(args).items()}, "groups": [], "side": {}}

    n_bw = args.bandwidth_mib * MiB // 4
    log(f"-- bandwidth ({args.bandwidth_mib} MiB per buffer)")
    results["bandwidth"] = measure_bandwidth(n_bw, max(3, args.rounds), sample_s, log)
    for k, v in results["bandwidth"]["kernels"].items():
        log(f"   {k:<10} {v.get('gbps', float('nan')):7.1f} GB/s")
    bw = args.bw_gbps = results["bandwidth"]["reference_gbps"]
    jax.clear_caches()
    gc.collect()

    by_wl: dict[str, list[str]] = {}
    for wname, key in plan(args):
        by_wl.setdefault(wname, []).append(key)
    for wname, keys in by_wl.items():
        run_workload(args, wname, keys, results, log)
    order = {(w, k): i for i, (w, k) in enumerate(plan(args))}
    results["groups"].sort(key=lambda g: order.get((g["workload"], g["optimizer"]), 1e9))
    if not args.quick:
        log("-- bandwidth again (drift check)")
        results["bandwidth_end"] = measure_bandwidth(n_bw, 3, sample_s, None)
        # the roofline uses the better of the two measurements (a noisy start must not flatter the results)
        bw = max(bw, results["bandwidth_end"]["reference_gbps"])
    results["reference_gbps"] = bw
    for g in results["groups"]:
        add_derived(g, bw)
    info["load_avg_end"] = os.getloadavg()
    info["total_s"] = time.perf_counter() - t_start

    md = report.markdown(results)
    log("")
    log(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
        log(f"wrote {args.out}")
    if args.plot:
        try:
            report.plot(results, args.plot)
            log(f"wrote {args.plot}")
        except Exception as exc:  # noqa: BLE001
            log(f"!! plot failed: {exc}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=float)
    log(f"total {info['total_s']:.0f} s")
    return results


def add_derived(group: dict, bw_gbps: float) -> None:
    """Roofline limit, % of it, and paired ratios for every contender of a group.

    Contenders without their own traffic model (other libraries) borrow the model of the mxopt_jax
    contender doing the same work: the lazy one for lazy / sparse labels, else the per-leaf / dense one.
    """
    res = group["results"]
    models = {k: res[k]["setup"] for k in ("mxopt", "mxopt_dense", "mxopt_lazy", "jax_lazy_ref") if k in res}
    for label, rec in res.items():
        setup = rec["setup"]
        if setup.get("bytes") is None:
            lazy = "lazy" in label or "sparse" in label
            donors = ("mxopt_lazy", "jax_lazy_ref") if lazy else ("mxopt", "mxopt_dense")
            donor = next((models[d] for d in donors if models.get(d, {}).get("bytes") is not None), None)
            if donor is not None:
                setup["bytes"] = donor["bytes"]
                setup["bytes_per_param"] = donor.get("bytes_per_param")
                setup["bytes_borrowed"] = True
        b = setup.get("bytes")
        if b is not None and bw_gbps == bw_gbps and bw_gbps > 0:
            rec["limit_ms"] = b / bw_gbps / 1e6
            if rec.get("ms"):
                rec["pct_roofline"] = 100.0 * rec["limit_ms"] / rec["ms"]
    base = "optax" if "optax" in res else ("optax_dense" if "optax_dense" in res else None)
    for label, rec in res.items():
        if base and label != base:
            rec["vs_optax"] = eng.paired_ratio(res, label, base)
        for ref in ("mxopt", "mxopt_dense", "mx_lazy_updater", "jax_lazy_ref"):
            if ref in res and label != ref:
                rec[f"vs_{ref}"] = eng.paired_ratio(res, label, ref)


def log_group(group: dict, log: Callable[[str], None]) -> None:
    for label, rec in group["results"].items():
        if rec.get("ms") is None:
            log(f"      {label:<22} {rec['setup'].get('error', 'no samples')}")
            continue
        pct = rec.get("pct_roofline")
        vs = rec.get("vs_optax")
        log(
            f"      {label:<22} {rec['ms']:10.3f} ms/step"
            + (f"  {pct:5.1f}% roofline" if pct is not None else "")
            + (f"  x{vs:.2f} optax" if vs is not None else "")
        )


if __name__ == "__main__":
    main()
