#!/usr/bin/env python
"""Golden data for the MXNet-style facade (``mxopt_jax.facade``) from real MXNet 2.0.0b1.

Not part of the package and never imported by the tests. Run it in the side virtualenv that has MXNet::

    /tmp/mx20/bin/python tools/make_facade_golden.py --out tests/golden/facade.npz

Output: one ``np.savez_compressed`` file with ``meta`` (0-d unicode array holding JSON with the scalar facts
and each case's settings) and float32 arrays named ``<case>_...`` (documented per case below). Cases:

* ``lookup``: MXNet's documented example (idx2name, param_dict, lr_mult with int and name keys) -> ``_get_lrs``
  and ``_get_wds`` for indices 0..3.
* ``sym``: ``__lr_mult__`` / ``__wd_mult__`` from a duck-typed ``sym`` (``attr_dict``, ``list_arguments``),
  then ``set_lr_mult`` / ``set_wd_mult`` overriding one name -> the dicts and the per-index values.
* ``agg_<opt>_<n>``: list calls ``upd([0, 1, 2, 3], grads, weights)`` for aggregate_num ``n`` in 1, 4, inf
  (``<opt>`` = sgd with momentum; lamb for 1 and 4 only: MXNet's LAMB asserts aggregate_num <= 45); arrays ``agg_<opt>_<n>_<p>`` (steps, *shape).
* ``mixed``: dtypes [f32, f16, f32, f32, f16], multi_precision SGD, aggregate_num 2 (dtype grouping).
* ``freq``: Adam with a FactorScheduler, parameter p updated every (p+1)-th step -> weights after each step,
  final counts, ``num_update``, learning rate.
* ``overwrite``: ``create('adam', lr_scheduler=FactorScheduler(..., base_lr=0.1))`` overwrites ``base_lr``
  with Adam's default 0.001 -> ``base_lr`` and a trajectory; with ``learning_rate=None`` the scheduler's value.
* ``begin``: ``begin_num_update=10``: counts after two updates of index 0 and one of index 1; Adam trajectory.
* ``devices``: index 0 updated twice on cpu(0) and once on cpu(1) -> per-device counts.
"""

import argparse
import json
import os
import warnings

os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
os.environ.pop("MXNET_OPTIMIZER_AGGREGATION_SIZE", None)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

SHAPES = [(3, 4), (5,), (2, 3), (4,)]
STEPS = 4


class _Mult:
    def __init__(self, lr_mult, wd_mult):
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult


class _Sym:
    def __init__(self, attrs, args):
        self._attrs, self._args = attrs, args

    def attr_dict(self):
        return self._attrs

    def list_arguments(self):
        return self._args


def _data(seed, shapes, steps):
    rng = np.random.default_rng(seed)
    w0 = [rng.uniform(-1, 1, size=s).astype(np.float32) for s in shapes]
    grads = [rng.normal(0, 1, size=(steps, *s)).astype(np.float32) for s in shapes]
    return w0, grads


def main():
    import mxnet as mx

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    meta = {"mxnet_version": mx.__version__, "cases": {}}
    arrays = {}

    # ---------------------------------------------------------------- lookup order
    idx2name = {0: "a_weight", 1: "b_bias", 2: "c_weight"}
    mult = {0: 2.0, "a_weight": 3.0, "b_bias": 4.0, "c_weight": 7.0}
    opt = mx.optimizer.Optimizer(
        learning_rate=1.0, wd=1.0, param_idx2name=idx2name, param_dict={2: _Mult(5.0, 6.0)}
    )
    opt.set_lr_mult(mult)
    opt.set_wd_mult(mult)
    meta["cases"]["lookup"] = {
        "idx2name": {str(k): v for k, v in idx2name.items()},
        "param_dict": {"2": [5.0, 6.0]},
        "mult": [[k, v] for k, v in mult.items()],
        "lrs": opt._get_lrs([0, 1, 2, 3]),
        "wds": opt._get_wds([0, 1, 2, 3]),
    }

    # ---------------------------------------------------------------- sym attributes
    attrs = {
        "a_weight": {"__lr_mult__": "2.0", "__wd_mult__": "0.5"},
        "b_bias": {"__lr_mult__": "3.0"},
        "data": {"__lr_mult__": "9.0"},
    }
    args = ["data", "a_weight", "b_bias", "c_weight"]
    opt = mx.optimizer.Optimizer(
        learning_rate=1.0,
        wd=1.0,
        sym=_Sym(attrs, args),
        param_idx2name={0: "a_weight", 1: "b_bias", 2: "c_weight"},
    )
    before = {"lr_mult": dict(opt.lr_mult), "wd_mult": dict(opt.wd_mult)}
    opt.set_lr_mult({"b_bias": 5.0, 2: 11.0})
    opt.set_wd_mult({"c_weight": 0.25})
    meta["cases"]["sym"] = {
        "attrs": attrs,
        "args": args,
        "before": before,
        "lr_mult": [[k, v] for k, v in opt.lr_mult.items()],
        "wd_mult": [[k, v] for k, v in opt.wd_mult.items()],
        "lrs": opt._get_lrs([0, 1, 2, 3]),
        "wds": opt._get_wds([0, 1, 2, 3]),
    }

    # ---------------------------------------------------------------- aggregated list calls
    w0, grads = _data(1, SHAPES, STEPS)
    kw_by_opt = {
        "sgd": {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
        "lamb": {"learning_rate": 0.01, "wd": 0.01},
    }
    for oname, kw in kw_by_opt.items():
        for agg_name, agg in (("1", 1), ("4", 4), ("inf", np.inf)):
            if oname == "lamb" and agg_name == "inf":
                continue  # MXNet: LAMB asserts aggregate_num <= 45
            opt = mx.optimizer.create(oname, aggregate_num=agg, **kw)
            upd = mx.optimizer.get_updater(opt)
            W = [mx.nd.array(w) for w in w0]
            rec = [[] for _ in SHAPES]
            for s in range(STEPS):
                upd(list(range(len(SHAPES))), [mx.nd.array(g[s]) for g in grads], W)
                for p, w in enumerate(W):
                    rec[p].append(w.asnumpy())
            key = f"agg_{oname}_{agg_name}"
            for p in range(len(SHAPES)):
                arrays[f"{key}_{p}"] = np.stack(rec[p]).astype(np.float32)
            meta["cases"][key] = {"optimizer": oname, "kwargs": kw, "aggregate_num": agg_name}
    for p in range(len(SHAPES)):
        arrays[f"agg_w0_{p}"] = w0[p]
        arrays[f"agg_grads_{p}"] = grads[p]

    # ---------------------------------------------------------------- mixed dtypes, grouping by dtype
    shapes5 = [(3,), (4,), (2, 2), (5,), (3,)]
    dtypes = ["float32", "float16", "float32", "float32", "float16"]
    m0, mg = _data(2, shapes5, STEPS)
    kw = {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True}
    opt = mx.optimizer.create("sgd", aggregate_num=2, **kw)
    upd = mx.optimizer.get_updater(opt)
    W = [mx.nd.array(w, dtype=d) for w, d in zip(m0, dtypes, strict=True)]
    rec = [[] for _ in shapes5]
    for s in range(STEPS):
        upd(list(range(5)), [mx.nd.array(g[s], dtype=d) for g, d in zip(mg, dtypes, strict=True)], W)
        for p, w in enumerate(W):
            rec[p].append(w.asnumpy().astype(np.float32))
    for p in range(5):
        arrays[f"mixed_w0_{p}"] = m0[p]
        arrays[f"mixed_grads_{p}"] = mg[p]
        arrays[f"mixed_out_{p}"] = np.stack(rec[p])
    meta["cases"]["mixed"] = {
        "kwargs": kw,
        "aggregate_num": 2,
        "dtypes": dtypes,
        "counts": opt._index_update_count,
    }

    # ---------------------------------------------------------------- different update frequencies
    fsteps = 9
    f0, fg = _data(3, SHAPES[:3], fsteps)
    sched = {"type": "FactorScheduler", "args": {"step": 3, "factor": 0.5, "base_lr": 0.05}}
    opt = mx.optimizer.create(
        "adam", learning_rate=None, lr_scheduler=mx.lr_scheduler.FactorScheduler(**sched["args"])
    )
    upd = mx.optimizer.get_updater(opt)
    W = [mx.nd.array(w) for w in f0]
    rec = [[] for _ in range(3)]
    lrs = []
    for s in range(fsteps):
        for p in range(3):
            if s % (p + 1) == 0:
                upd(p, mx.nd.array(fg[p][s]), W[p])
            rec[p].append(W[p].asnumpy())
        lrs.append(opt.learning_rate)
    for p in range(3):
        arrays[f"freq_w0_{p}"] = f0[p]
        arrays[f"freq_grads_{p}"] = fg[p]
        arrays[f"freq_out_{p}"] = np.stack(rec[p])
    meta["cases"]["freq"] = {
        "scheduler": sched,
        "steps": fsteps,
        "counts": {str(k): v for k, v in opt._index_update_count.items()},
        "num_update": opt.num_update,
        "learning_rates": lrs,
    }

    # ---------------------------------------------------------------- base_lr overwrite
    sched = {"type": "FactorScheduler", "args": {"step": 2, "factor": 0.5, "base_lr": 0.1}}
    o0, og = _data(4, [(6,)], 6)
    res = {}
    for tag, lr_kw in (
        ("default", {}),
        ("none", {"learning_rate": None}),
        ("given", {"learning_rate": 0.05}),
    ):
        s_obj = mx.lr_scheduler.FactorScheduler(**sched["args"])
        opt = mx.optimizer.create("adam", lr_scheduler=s_obj, **lr_kw)
        base_after = s_obj.base_lr
        upd = mx.optimizer.get_updater(opt)
        w = mx.nd.array(o0[0])
        rec = []
        for s in range(6):
            upd(0, mx.nd.array(og[0][s]), w)
            rec.append(w.asnumpy())
        arrays[f"overwrite_{tag}"] = np.stack(rec)
        res[tag] = {"kwargs": lr_kw, "base_lr_after_create": base_after, "lr": opt.lr}
    arrays["overwrite_w0"] = o0[0]
    arrays["overwrite_grads"] = og[0]
    meta["cases"]["overwrite"] = {"scheduler": sched, "runs": res}

    # ---------------------------------------------------------------- begin_num_update
    opt = mx.optimizer.create("sgd", learning_rate=0.1, begin_num_update=10)
    upd = mx.optimizer.get_updater(opt)
    b0, bg = _data(5, [(4,), (3,)], 3)
    W = [mx.nd.array(w) for w in b0]
    upd(0, mx.nd.array(bg[0][0]), W[0])
    upd(0, mx.nd.array(bg[0][1]), W[0])
    upd(1, mx.nd.array(bg[1][0]), W[1])
    counts = {str(k): v for k, v in opt._index_update_count.items()}
    opt = mx.optimizer.create("adam", learning_rate=0.01, begin_num_update=10)
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.array(b0[0])
    rec = []
    for s in range(3):
        upd(0, mx.nd.array(bg[0][s]), w)
        rec.append(w.asnumpy())
    arrays["begin_w0"] = b0[0]
    arrays["begin_grads"] = bg[0]
    arrays["begin_adam"] = np.stack(rec)
    meta["cases"]["begin"] = {"counts": counts, "num_update": 12}

    # ---------------------------------------------------------------- per-device counts
    opt = mx.optimizer.create("sgd", learning_rate=0.1)
    upd = mx.optimizer.get_updater(opt)
    w_a = mx.nd.array(b0[0], ctx=mx.cpu(0))
    w_b = mx.nd.array(b0[0], ctx=mx.cpu(1))
    upd(0, mx.nd.array(bg[0][0], ctx=mx.cpu(0)), w_a)
    upd(0, mx.nd.array(bg[0][1], ctx=mx.cpu(0)), w_a)
    upd(0, mx.nd.array(bg[0][2], ctx=mx.cpu(1)), w_b)
    meta["cases"]["devices"] = {
        "counts": {
            str(d): {str(k): v for k, v in c.items()} for d, c in opt._all_index_update_counts.items()
        },
        "num_update": opt.num_update,
    }

    np.savez_compressed(out, meta=np.array(json.dumps(meta)), **arrays)
    print("wrote", out, len(arrays), "arrays")


if __name__ == "__main__":
    main()
