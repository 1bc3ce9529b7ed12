#!/usr/bin/env python
"""Generate golden row-sparse (``lazy_update``) trajectories from real Apache MXNet 2.0.0b1.

Like ``tools/make_golden.py`` this script is NOT part of the package and is never imported by the
tests: it drives a real MXNet installation kept in a side virtualenv (never the project's .venv) and
writes two compressed ``.npz`` files that the tests replay through mxopt_jax.

Regenerate::

    # python3 -m venv /tmp/mx20 && /tmp/mx20/bin/pip install mxnet==2.0.0b1 numpy==1.23.5 requests 'graphviz<0.9'
    /tmp/mx20/bin/python tools/make_sparse_golden.py --out tests/golden

writes ``tests/golden/sparse.npz`` and ``tests/golden/sparse_embedding.npz`` (``--only sparse`` or
``--only embedding`` for one of them). The output is deterministic (fixed seeds, no MXNet RNG). After
generating, the script re-checks every trajectory against a float64 numpy re-implementation of
MXNet's lazy / standard row-sparse rules and prints the worst deviations; it exits non-zero if a
check fails.

sparse.npz
==========
One parameter per config: a float32 table of shape (ROWS, COLS) = (20, 6), STEPS = 10 updates, all
configs share the same initial weight and the same gradient stream.

``meta``            0-d unicode array holding JSON::

                        {"mxnet_version": "2.0.0beta1", "seed": int, "rows": 20, "cols": 6,
                         "steps": 10, "k": 8, "never_touched": [4, 11, 17, 19],
                         "configs": [config, ...], "errors": [{"config": config, "error": str}, ...]}

``w0``              float32 (ROWS, COLS), uniform(-1, 1); no all-zero row (needed for row_sparse weights).
``idx``             int32 (STEPS, K): OUR gradient input form, K = 8 row ids per step, unsorted, may repeat.
``val``             float32 (STEPS, K, COLS): the value slice for each entry of ``idx``.
``out_<id>``        float32 (STEPS, ROWS, COLS): the weight after every step (densified).
``state_<id>_<name>`` float32 (STEPS, *state_shape): every optimizer state after every step (densified;
                    shape (ROWS, COLS), except GroupAdaGrad ``history`` (ROWS, 1)).

The gradient of step s is the row-sparse matrix with ``G[idx[s, j]] += val[s, j]`` (duplicates are summed).
MXNet receives it in its own form: ``rows = unique(idx[s])`` (sorted), ``vals`` = per-row sum of the
listed slices computed with ``np.add.at`` into float32 zeros in the order of ``j`` (so three copies of a
row are summed as ``((0 + a) + b) + c`` in float32), and
``mx.nd.sparse.row_sparse_array((vals, rows), shape=(ROWS, COLS), dtype='float32')`` built directly, so a
listed row whose summed value is all-zero STAYS listed (``dense.tostype('row_sparse')`` would drop it).
Properties of the stream (hand-written index table, values from ``default_rng(seed)``):

* rows 4, 11, 17, 19 are never listed in any step;
* duplicates: step 0 (row 2 twice), step 2 (row 7 three times), step 4 (row 5 twice, values ``v`` and
  ``-v``: summed value exactly 0), step 6 (row 13 twice), step 7 (row 8 twice, both slices zero);
  step 1 has 8 distinct rows;
* all-zero listed rows: step 2 row 3 and step 3 row 15 (each listed once, slice exactly zero), step 4
  row 5 and step 7 row 8 (sums to zero); step 5 row 16 has a partially zero slice (first 3 columns 0);
* row 15 is listed only once, at step 3, with an all-zero slice (its first and only "touch" carries no
  gradient: lazy Ftrl then sets w[15] = 0 because z stays 0; lazy SGD/Adam/LARS with wd move it by the
  decay term only); row 13 is first listed at step 6 (checks that lazy Adam uses the per-parameter
  ``t``, not a per-row count); no step's ``idx`` row is sorted.

Dense-gradient configs (``"grad": "default"``) receive ``mx.nd.array(G)`` with G the densified sum.

A config is::

    {"id": "adam03", "optimizer": "adam",          # registry name for mx.optimizer.create
     "kwargs": {...},                               # every hyper-parameter, passed explicitly
     "weight_stype": "default" | "row_sparse",
     "grad": "row_sparse" | "default",
     "state_names": ["mean", "var"],               # names of the recorded state arrays, MXNet's order
     "scheduler": null | {"type": "FactorScheduler", "args": {"step": 3, "factor": 0.5, "base_lr": 0.05}},
     "semantics": "lazy" | "standard" | "dense",   # what MXNet does (verified below)
     "dense_counterpart": null | "<id>"}           # a dense-gradient config with the same hyper-parameters

How MXNet was driven (replay exactly like this), per config::

    opt = mx.optimizer.create(optimizer, **kwargs[, lr_scheduler=FactorScheduler(**args)])  # fresh scheduler
    upd = mx.optimizer.get_updater(opt)
    W = mx.nd.array(w0)                                  # weight_stype "row_sparse": .tostype('row_sparse')
    for s in range(STEPS):                               # (w0 has no zero row, so all 20 rows are stored)
        upd(0, <fresh gradient NDArray of step s>, W)    # (index, grad, weight)
        record W and upd.states[0]                       # states converted with .asnumpy() (densified)

No ``use_fused_step`` / ``aggregate_num`` is passed: every optimizer here runs its default fused kernel
(``sgd_(mom_)update``, ``adam_update``, ``sparse.adagrad_update``, ``contrib.group_adagrad_update``,
``ftrl_update``; LARS: python-side trust ratio + ``sgd_(mom_)update``); dense-gradient AdaGrad /
GroupAdaGrad go through their python ``step``.

MXNet state order / names (``upd.states[0]``):

==============  ==============================  =================================================
optimizer       state (order)                   stype
==============  ==============================  =================================================
sgd, lars       ``mom`` if momentum != 0, else  ``weight.stype`` if lazy_update else default
                None (no state arrays)
adam            ``(mean, var)``                 ``weight.stype`` if lazy_update else default
adagrad         ``history``                     ``weight.stype`` (float32)
groupadagrad    ``history`` shape (ROWS, 1)     ``weight.stype`` (float32)
ftrl            ``(z, n)``                      ``weight.stype`` (float32)
==============  ==============================  =================================================

Configs (P0 = wd 0, rescale_grad 1, clip_gradient None; P1 = wd 0.05, rescale_grad 0.5, clip_gradient 0.3;
AdaGrad / GroupAdaGrad always wd = 0, "P1" there = rescale 0.5, clip 0.3):

* sgd (lr 0.1): sgd00-07 = momentum {0, 0.9} x P {0, 1} x lazy_update {True, False}; sgd08 = momentum 0.9,
  P1, lazy, row_sparse weight; sgd09 / sgd10 = dense gradient, momentum 0 / 0.9, P1.
* adam (lr 0.05, epsilon from the beta set): adam00-07 = betas {(0.9, 0.999, 1e-8), (0.5, 0.9, 1e-3)} x
  P {0, 1} x lazy {True, False}; adam08 = lazy, P1, row_sparse weight; adam09 = lazy, P0, FactorScheduler
  (step 3, factor 0.5, base_lr 0.05; learning_rate 0.05 also passed); adam10 = dense gradient, P1.
* adagrad (lr 0.1): adagrad00-03 = epsilon {1e-6, 1e-3} x {P0, P1}; adagrad04 = row_sparse weight, P1;
  adagrad05 = dense gradient, P1. ``errors``: wd = 0.1 with a row_sparse gradient.
* groupadagrad (lr 0.1): groupadagrad00-02 = (P0, 1e-6), (P1, 1e-6), (P0, 1e-3); groupadagrad03 =
  row_sparse weight, P1; groupadagrad04 = dense gradient, P1. ``errors``: wd = 0.1.
* ftrl (lr 0.1, beta 1): ftrl00-07 = weight stype {row_sparse, default} x lamda1 {0.01, 0.1} x P {0, 1};
  ftrl08 = dense gradient, lamda1 0.01, P1.
* lars (lr 0.5, eta 0.1, epsilon 1e-8): lars00-03 = momentum 0.9 x P {0, 1} x lazy {True, False};
  lars04 = momentum 0, lazy, P1; lars05 = momentum 0.9, lazy, P1, row_sparse weight; lars06 = dense, P1.

Observed MXNet 2.0.0b1 behaviour (all verified by the checks at the end of this script):

* lazy (SGD/Adam/LARS with lazy_update=True; AdaGrad, GroupAdaGrad sparse kernels; Ftrl with a
  row_sparse weight): rows not listed in the step's gradient keep weight AND every state bit-identical;
  listed rows get the dense formula, including wd*w, momentum / EMA decay, and Adam's bias correction with
  the per-parameter count ``t`` (the number of updates of index 0, shared by all rows). A listed row whose
  values are all zero IS updated (momentum decay, EMA decay, wd; Ftrl recomputes w from (z, n)).
* standard (SGD/Adam/LARS with lazy_update=False; Ftrl with a dense weight = dense fallback): identical
  to the dense-gradient config up to float32 rounding (Ftrl standard sets never-touched rows to 0).
* LARS: ``fused_step`` computes the trust ratio in python from ``norm(w)`` (whole weight) and
  ``norm(rescale_grad * g)`` (the row_sparse data, = the densified gradient's norm), then calls
  ``sgd_(mom_)update(..., lazy_update=self.lazy_update)`` - i.e. exactly sparse SGD (lazy or standard) with
  ``lr * eta*|w|/(|g*rs| + wd*|w| + epsilon)``; it neither raises nor densifies.
* AdaGrad / GroupAdaGrad (no lazy_update option): only listed rows are touched, which equals the standard
  rule because wd must be 0. AdaGrad with wd != 0 and a row_sparse gradient raises in the kernel;
  GroupAdaGrad asserts wd == 0 for any gradient.

Numerical notes: against the float64 reference every trajectory agrees within 3.1e-6 absolute (SGD,
AdaGrad, GroupAdaGrad, LARS <= 6e-7; Ftrl <= 2.4e-6; Adam <= 3.1e-6, on weights near 0, from the fp32
``1 - beta2`` of the kernel). An fp32 emulation of Adam (``b = f32(beta)``, ``1 - b`` in fp32, ``lr_t``
computed in float64 then cast) reproduces the lazy and dense Adam trajectories bit-exactly; the standard
sparse kernel differs from dense by <= 1.2e-7 (association). A per-row step count for lazy Adam would be
off by up to 0.23 (MXNet uses the per-parameter ``t``). Standard sparse vs its dense counterpart:
sgd07/sgd10, adagrad01/adagrad05, ftrl05/ftrl08 bit-identical; sgd03/sgd09 1.8e-7; adam03/adam10,
groupadagrad01/groupadagrad04, lars03/lars06 1.2e-7.

sparse_embedding.npz
====================
A tiny classifier trained in MXNet 2.0.0b1 with autograd and lazy Adam. V = 50 (vocabulary), D = 8,
C = 3 classes, B = 16, L = 5, STEPS = 15. Model (float32)::

    e      = E[ids]                      # (B, L, D)  mx.nd.Embedding(ids, E, input_dim=V, output_dim=D,
                                         #            sparse_grad=True), E.attach_grad(stype='row_sparse')
    h      = mean(e, axis=1)             # (B, D)     mx.nd.mean
    logits = h @ W + b                   # (B, C)     mx.nd.dot(h, W) + b
    loss   = mean_b( -log_softmax(logits)[b, labels[b]] )      # mx.nd.log_softmax + mx.nd.pick

``loss.backward()`` gives E.grad as a row_sparse array whose rows are the unique ids of the batch (sorted)
with the summed gradient ``dE[ids[b, l]] += (dlogits[b] @ W.T) / L``, ``dlogits = (softmax - onehot) / B``;
W.grad, b.grad dense. Optimizer: ``mx.optimizer.create('adam', learning_rate=0.05, beta1=0.9,
beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=None, lazy_update=True)``, one
Updater; per step ``upd(0, E.grad, E); upd(1, W.grad, W); upd(2, b.grad, b)`` (E stays a dense NDArray;
its Adam states are dense; lazy => rows of E not in the batch keep E, mean, var). Ids never used in any
batch: 0, 13, 27, 41, 49.

Arrays: ``meta`` (JSON: mxnet_version, seed, V, D, C, B, L, steps, optimizer kwargs, never_used_ids, model
text), ``E0`` (V, D), ``W0`` (D, C), ``b0`` (C,) float32 initial values; ``ids`` int32 (STEPS, B, L);
``labels`` int32 (STEPS, B); ``loss`` float32 (STEPS,) computed before the step's update; ``E`` (STEPS, V, D),
``W`` (STEPS, D, C), ``b`` (STEPS, C): parameters after every step; ``E_mean``, ``E_var`` (STEPS, V, D),
``W_mean``, ``W_var`` (STEPS, D, C), ``b_mean``, ``b_var`` (STEPS, C): Adam states after every step;
``grad0_E_idx`` int64 (n,), ``grad0_E_val`` float32 (n, D) = E.grad.indices / E.grad.data at step 0;
``grad0_W`` (D, C), ``grad0_b`` (C,): dense gradients at step 0. Batches: ids uniform over the 45 allowed
ids (``default_rng(seed)``); label = argmax_c #{l : ids[b, l] % 3 == c} (learnable, so the loss falls).

Only numpy, mxnet and the standard library are used.
"""

import argparse
import json
import math
import os
import sys
import warnings

os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
os.environ.pop("MXNET_OPTIMIZER_AGGREGATION_SIZE", None)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

ROWS, COLS, STEPS, K = 20, 6, 10, 8
SEED = 20240607
NEVER = [4, 11, 17, 19]
# hand-written index stream (see the module docstring for the properties it has)
IDX = [
    [7, 2, 14, 2, 0, 9, 5, 12],
    [3, 16, 1, 8, 10, 6, 18, 5],
    [12, 0, 7, 7, 7, 14, 3, 9],
    [15, 1, 10, 16, 2, 8, 6, 0],
    [18, 5, 5, 12, 9, 1, 3, 14],
    [6, 0, 8, 10, 16, 2, 7, 12],
    [13, 9, 1, 13, 5, 18, 3, 6],
    [2, 14, 0, 10, 8, 8, 16, 7],
    [12, 13, 3, 1, 9, 5, 6, 18],
    [0, 10, 13, 16, 2, 14, 7, 8],
]

P0 = {"wd": 0.0, "rescale_grad": 1.0, "clip_gradient": None}
P1 = {"wd": 0.05, "rescale_grad": 0.5, "clip_gradient": 0.3}
STATE_NAMES = {
    "adam": ["mean", "var"],
    "adagrad": ["history"],
    "groupadagrad": ["history"],
    "ftrl": ["z", "n"],
}

# embedding model
EMB_SEED = 20240608
V, D, C, B, L, EMB_STEPS = 50, 8, 3, 16, 5, 15
EMB_NEVER = [0, 13, 27, 41, 49]
EMB_KW = {
    "learning_rate": 0.05,
    "beta1": 0.9,
    "beta2": 0.999,
    "epsilon": 1e-8,
    "wd": 0.0,
    "rescale_grad": 1.0,
    "clip_gradient": None,
    "lazy_update": True,
}


# ---------------------------------------------------------------------------------------------------------
# gradient stream
def make_stream():
    rng = np.random.default_rng(SEED)
    w0 = rng.uniform(-1.0, 1.0, size=(ROWS, COLS)).astype(np.float32)
    idx = np.array(IDX, dtype=np.int32)
    val = rng.normal(0.0, 1.0, size=(STEPS, K, COLS)).astype(np.float32)
    val[2, 6] = 0.0  # step 2: row 3 listed once with an exactly-zero slice
    val[4, 2] = -val[4, 1]  # step 4: row 5 twice, v and -v -> summed value exactly 0
    val[7, 4] = 0.0  # step 7: row 8 twice, both slices zero
    val[7, 5] = 0.0
    val[5, 4, :3] = 0.0  # step 5: row 16 partially zero
    val[3, 0] = 0.0  # step 3: row 15 (listed only here) with a zero slice: first and only touch is zero
    assert idx.shape == (STEPS, K) and idx[2, 6] == 3 and idx[4, 1] == idx[4, 2] == 5
    assert idx[7, 4] == idx[7, 5] == 8 and idx[5, 4] == 16 and idx[3, 0] == 15
    assert not set(NEVER) & set(idx.ravel().tolist())
    assert all(np.any(np.diff(r) < 0) for r in idx), "every step must be unsorted"
    assert np.all(np.any(w0 != 0, axis=1))
    return w0, idx, val


def mx_form(idx_s, val_s):
    """OUR (idx, val) -> MXNet's (sorted unique rows, summed values)."""
    rows = np.unique(idx_s)
    dense = np.zeros((ROWS, COLS), np.float32)
    np.add.at(dense, idx_s, val_s)
    return rows.astype(np.int64), dense[rows], dense


# ---------------------------------------------------------------------------------------------------------
# configs
def build_configs():
    cfgs = []

    def add(opt, kwargs, wst="default", grad="row_sparse", sched=None, sem=None, state_names=None):
        if state_names is None:
            state_names = STATE_NAMES.get(opt, ["mom"] if kwargs.get("momentum", 0.0) != 0.0 else [])
        if sem is None:
            sem = "dense" if grad == "default" else ("lazy" if kwargs.get("lazy_update") else "standard")
        n = sum(c["optimizer"] == opt for c in cfgs)
        cfg = {
            "id": "%s%02d" % (opt, n),
            "optimizer": opt,
            "kwargs": kwargs,
            "weight_stype": wst,
            "grad": grad,
            "state_names": state_names,
            "scheduler": sched,
            "semantics": sem,
            "dense_counterpart": None,
        }
        cfgs.append(cfg)
        return cfg

    def pair(sparse_cfg, dense_cfg):
        assert sparse_cfg["kwargs"] == dense_cfg["kwargs"]
        sparse_cfg["dense_counterpart"] = dense_cfg["id"]

    # SGD
    std = {}
    for mom in (0.0, 0.9):
        for p in (P0, P1):
            for lazy in (True, False):
                c = add("sgd", dict(learning_rate=0.1, momentum=mom, lazy_update=lazy, **p))
                if not lazy and p is P1:
                    std[mom] = c
    add("sgd", dict(learning_rate=0.1, momentum=0.9, lazy_update=True, **P1), wst="row_sparse")
    for mom in (0.0, 0.9):
        pair(
            std[mom],
            add("sgd", dict(learning_rate=0.1, momentum=mom, lazy_update=False, **P1), grad="default"),
        )

    # Adam
    betas = [
        {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
        {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-3},
    ]
    for bs in betas:
        for p in (P0, P1):
            for lazy in (True, False):
                c = add("adam", dict(learning_rate=0.05, lazy_update=lazy, **bs, **p))
                if not lazy and p is P1 and bs is betas[0]:
                    std_adam = c
    add("adam", dict(learning_rate=0.05, lazy_update=True, **betas[0], **P1), wst="row_sparse")
    sched = {"type": "FactorScheduler", "args": {"step": 3, "factor": 0.5, "base_lr": 0.05}}
    add("adam", dict(learning_rate=0.05, lazy_update=True, **betas[0], **P0), sched=sched)
    pair(std_adam, add("adam", dict(learning_rate=0.05, lazy_update=False, **betas[0], **P1), grad="default"))

    # AdaGrad / GroupAdaGrad (wd must be 0)
    Q0 = {"wd": 0.0, "rescale_grad": 1.0, "clip_gradient": None}
    Q1 = {"wd": 0.0, "rescale_grad": 0.5, "clip_gradient": 0.3}
    for eps in (1e-6, 1e-3):
        for q in (Q0, Q1):
            c = add("adagrad", dict(learning_rate=0.1, epsilon=eps, **q), sem="lazy")
            if eps == 1e-6 and q is Q1:
                std_ada = c
    add("adagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q1), wst="row_sparse", sem="lazy")
    pair(std_ada, add("adagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q1), grad="default"))
    add("groupadagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q0), sem="lazy")
    std_gada = add("groupadagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q1), sem="lazy")
    add("groupadagrad", dict(learning_rate=0.1, epsilon=1e-3, **Q0), sem="lazy")
    add("groupadagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q1), wst="row_sparse", sem="lazy")
    pair(std_gada, add("groupadagrad", dict(learning_rate=0.1, epsilon=1e-6, **Q1), grad="default"))

    # Ftrl: row_sparse weight -> lazy, dense weight -> dense fallback (standard)
    for wst in ("row_sparse", "default"):
        for l1 in (0.01, 0.1):
            for p in (P0, P1):
                c = add(
                    "ftrl",
                    dict(learning_rate=0.1, lamda1=l1, beta=1.0, **p),
                    wst=wst,
                    sem="lazy" if wst == "row_sparse" else "standard",
                )
                if wst == "default" and l1 == 0.01 and p is P1:
                    std_ftrl = c
    pair(std_ftrl, add("ftrl", dict(learning_rate=0.1, lamda1=0.01, beta=1.0, **P1), grad="default"))

    # LARS
    lk = {"learning_rate": 0.5, "eta": 0.1, "epsilon": 1e-8}
    for p in (P0, P1):
        for lazy in (True, False):
            c = add("lars", dict(lk, momentum=0.9, lazy_update=lazy, **p))
            if not lazy and p is P1:
                std_lars = c
    add("lars", dict(lk, momentum=0.0, lazy_update=True, **P1))
    add("lars", dict(lk, momentum=0.9, lazy_update=True, **P1), wst="row_sparse")
    pair(std_lars, add("lars", dict(lk, momentum=0.9, lazy_update=False, **P1), grad="default"))

    # expected failures (recorded in meta["errors"], no arrays)
    bad = [
        add("adagrad", dict(learning_rate=0.1, epsilon=1e-6, wd=0.1, rescale_grad=1.0, clip_gradient=None)),
        add(
            "groupadagrad",
            dict(learning_rate=0.1, epsilon=1e-6, wd=0.1, rescale_grad=1.0, clip_gradient=None),
        ),
    ]
    for c in bad:
        c["id"] = c["id"].rstrip("0123456789") + "_wd_error"
        c["semantics"] = "error"
    return cfgs


# ---------------------------------------------------------------------------------------------------------
# driving MXNet
def _err(e):
    lines = [x.strip() for x in str(e).strip().splitlines()]
    lines = [x for x in lines if x and not x.startswith(("Traceback", "File "))]
    msg = " | ".join(lines)
    name = type(e).__name__
    return (msg if msg.startswith(name + ":") else f"{name}: {msg}")[:400]


def run_config(mx, cfg, w0, idx, val):
    kw = dict(cfg["kwargs"])
    if cfg["scheduler"] is not None:
        kw["lr_scheduler"] = getattr(mx.lr_scheduler, cfg["scheduler"]["type"])(**cfg["scheduler"]["args"])
    opt = mx.optimizer.create(cfg["optimizer"], **kw)
    upd = mx.optimizer.get_updater(opt)
    W = mx.nd.array(w0, dtype="float32")
    if cfg["weight_stype"] == "row_sparse":
        W = W.tostype("row_sparse")
        assert W.indices.shape[0] == ROWS
    out = np.zeros((STEPS, ROWS, COLS), np.float32)
    states = {}
    for s in range(STEPS):
        rows, vals, dense = mx_form(idx[s], val[s])
        if cfg["grad"] == "row_sparse":
            g = mx.nd.sparse.row_sparse_array((vals, rows), shape=(ROWS, COLS), dtype="float32")
        else:
            g = mx.nd.array(dense, dtype="float32")
        upd(0, g, W)
        out[s] = W.asnumpy()
        st = upd.states[0]
        st = [] if st is None else (list(st) if isinstance(st, tuple | list) else [st])
        if len(st) != len(cfg["state_names"]):
            raise RuntimeError("state layout %r != %r" % ([x.shape for x in st], cfg["state_names"]))
        for name, x in zip(cfg["state_names"], st, strict=True):
            a = x.asnumpy()
            states.setdefault(name, np.zeros((STEPS,) + a.shape, np.float32))[s] = a
    if not np.all(np.isfinite(out)):
        raise RuntimeError("non-finite weights")
    return out, states


def generate_sparse(mx, out_dir):
    w0, idx, val = make_stream()
    arrays = {"w0": w0, "idx": idx, "val": val}
    done, errors = [], []
    for cfg in build_configs():
        json.dumps(cfg)
        try:
            out, states = run_config(mx, cfg, w0, idx, val)
        except Exception as e:  # noqa: BLE001 - record every MXNet failure
            errors.append({"config": cfg, "error": _err(e)})
            print("  ERROR %-18s -> %s" % (cfg["id"], errors[-1]["error"][:160]))
            continue
        if cfg["semantics"] == "error":
            errors.append({"config": cfg, "error": "UNEXPECTED: MXNet did not raise"})
            continue
        arrays["out_" + cfg["id"]] = out
        for name, a in states.items():
            arrays["state_%s_%s" % (cfg["id"], name)] = a
        done.append(cfg)
    meta = {
        "mxnet_version": mx.__version__,
        "seed": SEED,
        "rows": ROWS,
        "cols": COLS,
        "steps": STEPS,
        "k": K,
        "never_touched": NEVER,
        "configs": done,
        "errors": errors,
    }
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.path.join(out_dir, "sparse.npz")
    np.savez_compressed(path, **arrays)
    print(
        "sparse: %d configs, %d errors -> %s (%d bytes)"
        % (len(done), len(errors), path, os.path.getsize(path))
    )
    return path


def generate_embedding(mx, out_dir):
    from mxnet import autograd

    rng = np.random.default_rng(EMB_SEED)
    E0 = rng.uniform(-0.5, 0.5, size=(V, D)).astype(np.float32)
    W0 = rng.uniform(-0.5, 0.5, size=(D, C)).astype(np.float32)
    b0 = rng.uniform(-0.1, 0.1, size=(C,)).astype(np.float32)
    allowed = np.array([i for i in range(V) if i not in EMB_NEVER])
    ids = allowed[rng.integers(0, len(allowed), size=(EMB_STEPS, B, L))].astype(np.int32)
    # learnable labels: each id votes for class id % C; label = the class with most votes (ties: lowest)
    votes = np.stack([np.sum(ids % C == c, axis=2) for c in range(C)], axis=-1)
    labels = np.argmax(votes, axis=-1).astype(np.int32)

    opt = mx.optimizer.create("adam", **EMB_KW)
    upd = mx.optimizer.get_updater(opt)
    E = mx.nd.array(E0)
    W = mx.nd.array(W0)
    b = mx.nd.array(b0)
    E.attach_grad(stype="row_sparse")
    W.attach_grad()
    b.attach_grad()
    params = {"E": E, "W": W, "b": b}
    rec = {k: np.zeros((EMB_STEPS,) + p.shape, np.float32) for k, p in params.items()}
    for k, p in params.items():
        for sn in ("mean", "var"):
            rec["%s_%s" % (k, sn)] = np.zeros((EMB_STEPS,) + p.shape, np.float32)
    loss_rec = np.zeros((EMB_STEPS,), np.float32)
    arrays = {}
    for s in range(EMB_STEPS):
        x = mx.nd.array(ids[s], dtype="int32")
        y = mx.nd.array(labels[s], dtype="int32")
        with autograd.record():
            e = mx.nd.Embedding(x, E, input_dim=V, output_dim=D, sparse_grad=True)
            h = mx.nd.mean(e, axis=1)
            logits = mx.nd.dot(h, W) + b
            loss = -mx.nd.mean(mx.nd.pick(mx.nd.log_softmax(logits, axis=-1), y, axis=-1))
        loss.backward()
        assert E.grad.stype == "row_sparse" and W.grad.stype == "default"
        loss_rec[s] = loss.asscalar()
        if s == 0:
            arrays["grad0_E_idx"] = E.grad.indices.asnumpy().astype(np.int64)
            arrays["grad0_E_val"] = E.grad.data.asnumpy()
            arrays["grad0_W"] = W.grad.asnumpy()
            arrays["grad0_b"] = b.grad.asnumpy()
        for i, k in enumerate(("E", "W", "b")):
            upd(i, params[k].grad, params[k])
        for i, k in enumerate(("E", "W", "b")):
            rec[k][s] = params[k].asnumpy()
            m, v = upd.states[i]
            rec[k + "_mean"][s] = m.asnumpy()
            rec[k + "_var"][s] = v.asnumpy()
    arrays.update(E0=E0, W0=W0, b0=b0, ids=ids, labels=labels, loss=loss_rec, **rec)
    meta = {
        "mxnet_version": mx.__version__,
        "seed": EMB_SEED,
        "V": V,
        "D": D,
        "C": C,
        "B": B,
        "L": L,
        "steps": EMB_STEPS,
        "optimizer": "adam",
        "kwargs": EMB_KW,
        "never_used_ids": EMB_NEVER,
        "update_order": ["E (index 0, row_sparse grad)", "W (index 1)", "b (index 2)"],
        "model": "h = mean(E[ids], axis=1); logits = h @ W + b; "
        "loss = mean_b(logsumexp(logits_b) - logits_b[label_b]); loss recorded before the update",
    }
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.path.join(out_dir, "sparse_embedding.npz")
    np.savez_compressed(path, **arrays)
    print(
        "sparse_embedding: loss %.4f -> %.4f -> %s (%d bytes)"
        % (loss_rec[0], loss_rec[-1], path, os.path.getsize(path))
    )
    return path


# ---------------------------------------------------------------------------------------------------------
# float64 numpy reference used only to check the data just written
def _fsched(cfg, t, lr):
    sc = cfg["scheduler"]
    if sc is None:
        return lr
    a = sc["args"]
    return a["base_lr"] * a["factor"] ** ((t - 1) // a["step"])


def reference(cfg, w0, idx, val, touch_zero_rows=True):
    kw = cfg["kwargs"]
    opt = cfg["optimizer"]
    lr0, wd, rs, clip = kw["learning_rate"], kw["wd"], kw["rescale_grad"], kw["clip_gradient"]
    w = w0.astype(np.float64)
    st = {n: np.zeros((ROWS, 1) if opt == "groupadagrad" else (ROWS, COLS)) for n in cfg["state_names"]}
    outs, sts = [], {n: [] for n in st}
    for s in range(STEPS):
        t = s + 1
        lr = _fsched(cfg, t, lr0)
        _, _, dense = mx_form(idx[s], val[s])
        g = dense.astype(np.float64)
        if cfg["semantics"] == "lazy":
            rows = np.unique(idx[s])
            if not touch_zero_rows:
                rows = rows[np.any(dense[rows] != 0, axis=1)]
        else:
            rows = np.arange(ROWS)
        gc = rs * g[rows]
        if clip is not None:
            gc = np.clip(gc, -clip, clip)
        wr = w[rows]
        if opt in ("sgd", "lars"):
            if opt == "lars":
                wn, gn = np.linalg.norm(w), np.linalg.norm(rs * g)
                lr = lr * (kw["eta"] * wn / (gn + wd * wn + kw["epsilon"]) if wn > 0 and gn > 0 else 1.0)
            G = gc + wd * wr
            if kw["momentum"] != 0.0:
                st["mom"][rows] = kw["momentum"] * st["mom"][rows] - lr * G
                w[rows] = wr + st["mom"][rows]
            else:
                w[rows] = wr - lr * G
        elif opt == "adam":
            G = gc + wd * wr
            b1, b2 = kw["beta1"], kw["beta2"]
            m = st["mean"][rows] = b1 * st["mean"][rows] + (1 - b1) * G
            v = st["var"][rows] = b2 * st["var"][rows] + (1 - b2) * G * G
            lr_t = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
            w[rows] = wr - lr_t * m / (np.sqrt(v) + kw["epsilon"])
        elif opt == "adagrad":
            G = gc + wd * wr
            h = st["history"][rows] = st["history"][rows] + G * G
            w[rows] = wr - lr * G / (np.sqrt(h) + kw["epsilon"])
        elif opt == "groupadagrad":
            h = st["history"][rows] = st["history"][rows] + np.mean(gc * gc, axis=1, keepdims=True)
            w[rows] = wr - lr * gc / (np.sqrt(h) + kw["epsilon"])
        elif opt == "ftrl":
            n_old = st["n"][rows]
            n = n_old + gc * gc
            sigma = (np.sqrt(n) - np.sqrt(n_old)) / lr
            z = st["z"][rows] = st["z"][rows] + gc - sigma * wr
            st["n"][rows] = n
            w[rows] = (
                -np.sign(z) * np.maximum(np.abs(z) - kw["lamda1"], 0) / ((kw["beta"] + np.sqrt(n)) / lr + wd)
            )
        outs.append(w.copy())
        for n in st:
            sts[n].append(st[n].copy())
    return np.array(outs), {n: np.array(v) for n, v in sts.items()}


ATOL, RTOL = 1e-5, 1e-4


def _rel(a, b):
    """max |a - b| / (ATOL + RTOL |b|): <= 1 means within tolerance."""
    return float(np.max(np.abs(a.astype(np.float64) - b) / (ATOL + RTOL * np.abs(b))))


def _abs(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b)))


def check_sparse(path):
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    w0, idx, val = z["w0"], z["idx"], z["val"]
    ok = True
    byid = {c["id"]: c for c in meta["configs"]}
    print(
        "check sparse.npz vs float64 numpy (abs = max |mx - ref|, tol = max |mx - ref| / (1e-5 + 1e-4 |ref|)):"
    )
    for cfg in meta["configs"]:
        cid = cfg["id"]
        out = z["out_" + cid]
        sts = {n: z["state_%s_%s" % (cid, n)] for n in cfg["state_names"]}
        ref_out, ref_sts = reference(cfg, w0, idx, val)
        rel = max([_rel(out, ref_out)] + [_rel(sts[n], ref_sts[n]) for n in sts])
        err = max([_abs(out, ref_out)] + [_abs(sts[n], ref_sts[n]) for n in sts])
        notes = []
        # lazy: unlisted rows of weight and states bit-identical to the previous step
        prev_w = np.concatenate([w0[None], out[:-1]])
        moved = np.zeros((STEPS, ROWS), bool)
        moved |= np.any(out != prev_w, axis=2)
        for a in sts.values():
            prev = np.concatenate([np.zeros_like(a[:1]), a[:-1]])
            moved |= np.any(a != prev, axis=2)
        listed = np.zeros((STEPS, ROWS), bool)
        for s in range(STEPS):
            listed[s, idx[s]] = True
        if cfg["semantics"] == "lazy":
            bad = moved & ~listed
            if bad.any():
                ok = False
                notes.append("UNLISTED ROWS MOVED %s" % np.argwhere(bad).tolist()[:5])
            else:
                notes.append("unlisted rows bit-identical")
            if cfg["optimizer"] != "adagrad" and cfg["optimizer"] != "groupadagrad":
                alt, _ = reference(cfg, w0, idx, val, touch_zero_rows=False)
                notes.append("zero-row-skipping ref would be off by %.1e" % _abs(out, alt))
        else:
            never = ~moved[:, NEVER]
            notes.append("never-listed rows moved at %d/%d steps" % ((~never).sum(), never.size))
        if cfg["dense_counterpart"]:
            d = byid[cfg["dense_counterpart"]]["id"]
            diff = float(np.max(np.abs(out - z["out_" + d])))
            notes.append("vs dense %s: max abs %.1e" % (d, diff))
            if diff > 1e-5:
                ok = False
        if rel > 1.0:
            ok = False
            notes.append("REFERENCE MISMATCH")
        print("  %-15s %-8s abs %.1e tol %.2f  %s" % (cid, cfg["semantics"], err, rel, "; ".join(notes)))
    for e in meta["errors"]:
        print("  %-18s error: %s" % (e["config"]["id"], e["error"][:150]))
        if e["config"]["semantics"] != "error":
            ok = False
    return ok


def check_embedding(path):
    z = np.load(path)
    E, W, b = z["E0"].astype(np.float64), z["W0"].astype(np.float64), z["b0"].astype(np.float64)
    st = {k: [np.zeros_like(p), np.zeros_like(p)] for k, p in (("E", E), ("W", W), ("b", b))}
    ok = True
    worst = {"loss": 0.0, "E": 0.0, "W": 0.0, "b": 0.0, "grad0": 0.0, "unused": 0}
    for s in range(EMB_STEPS):
        ids, y = z["ids"][s], z["labels"][s]
        h = E[ids].mean(axis=1)
        logits = h @ W + b
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        loss = np.mean(lse - logits[np.arange(B), y])
        worst["loss"] = max(worst["loss"], abs(loss - z["loss"][s]))
        p = np.exp(logits - lse[:, None])
        dlog = p.copy()
        dlog[np.arange(B), y] -= 1.0
        dlog /= B
        gW, gb = h.T @ dlog, dlog.sum(0)
        gE = np.zeros_like(E)
        np.add.at(gE, ids.ravel(), np.repeat(dlog @ W.T / L, L, axis=0))
        rows = np.unique(ids)
        if s == 0:
            assert np.array_equal(z["grad0_E_idx"], rows)
            worst["grad0"] = max(
                _rel(z["grad0_E_val"], gE[rows]), _rel(z["grad0_W"], gW), _rel(z["grad0_b"], gb)
            )
        t = s + 1
        lr_t = EMB_KW["learning_rate"] * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        for k, g, r in (("E", gE, rows), ("W", gW, slice(None)), ("b", gb, slice(None))):
            m, v = st[k]
            m[r] = 0.9 * m[r] + 0.1 * g[r]
            v[r] = 0.999 * v[r] + 0.001 * g[r] ** 2
        E[rows] -= lr_t * st["E"][0][rows] / (np.sqrt(st["E"][1][rows]) + 1e-8)
        W -= lr_t * st["W"][0] / (np.sqrt(st["W"][1]) + 1e-8)
        b -= lr_t * st["b"][0] / (np.sqrt(st["b"][1]) + 1e-8)
        for k, ref in (("E", E), ("W", W), ("b", b)):
            worst[k] = max(worst[k], _abs(z[k][s], ref))
            worst[k + "_tol"] = max(worst.get(k + "_tol", 0.0), _rel(z[k][s], ref))
        prevE = z["E0"] if s == 0 else z["E"][s - 1]
        unlisted = np.setdiff1d(np.arange(V), rows)
        if np.any(z["E"][s][unlisted] != prevE[unlisted]):
            ok = False
            worst["unused"] += 1
    assert not set(EMB_NEVER) & set(z["ids"].ravel().tolist())
    assert np.array_equal(z["E"][-1][EMB_NEVER], z["E0"][EMB_NEVER])
    print(
        "check sparse_embedding.npz vs float64 numpy: %s"
        % json.dumps({k: float(v) for k, v in worst.items()})
    )
    if max(worst["E_tol"], worst["W_tol"], worst["b_tol"], worst["grad0"]) > 1.0 or worst["loss"] > 1e-5:
        ok = False
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/golden", help="output directory")
    ap.add_argument("--only", choices=["sparse", "embedding"], default=None)
    args = ap.parse_args(argv)

    import mxnet as mx

    if not mx.__version__.startswith("2.0"):
        sys.exit("needs MXNet 2.0.0b1, found %s" % mx.__version__)
    os.makedirs(args.out, exist_ok=True)
    ok = True
    if args.only in (None, "sparse"):
        ok &= check_sparse(generate_sparse(mx, args.out))
    if args.only in (None, "embedding"):
        ok &= check_embedding(generate_embedding(mx, args.out))
    if not ok:
        sys.exit("CHECK FAILED")
    print("all checks passed")


if __name__ == "__main__":
    main()
