#!/usr/bin/env python
"""Generate golden optimizer trajectories from real Apache MXNet for the mxopt_jax tests.

This script is NOT part of the package and is never imported by the tests: it drives a real MXNet
installation (kept in a side virtualenv, never in the project's own environment) and writes one
compressed ``.npz`` file per optimizer under ``tests/golden/``. The tests replay the same inputs
through mxopt_jax and compare.

Regenerate (MXNet 2.0.0b1 = exact oracle for the 2.0 semantics; MXNet 1.9.1 for the 1.x-only
optimizers)::

    # side virtualenvs (CPython 3.11, CPU wheels), never the project's .venv:
    #   python -m venv /tmp/mx20 && /tmp/mx20/bin/pip install numpy==1.23.5 mxnet==2.0.0b1
    #   python -m venv /tmp/mx19 && /tmp/mx19/bin/pip install numpy==1.23.5 mxnet==1.9.1
    /tmp/mx20/bin/python tools/make_golden.py --mxnet 2.0 --out tests/golden
    /tmp/mx19/bin/python tools/make_golden.py --mxnet 1.9.1 --out tests/golden

``--mxnet 2.0`` writes: sgd nag signum sgld dcasgd adagrad groupadagrad adadelta rmsprop adam adamw
adamax nadam adabelief ftrl ftml lars lamb lans test.  ``--mxnet 1.9.1`` writes: lbsgd ccsgd.
``--only a,b`` restricts to some optimizers. The output is deterministic (fixed seeds; SGLD runs after
``mx.random.seed(42)``).

File layout (``tests/golden/<name>.npz``, written with ``np.savez_compressed``)
-------------------------------------------------------------------------------
``meta``            0-d unicode array holding JSON::

                        {"optimizer": name, "mxnet_version": mx.__version__, "seed": int,
                         "shapes": [[4, 5], [7], [2, 3, 2]], "steps": 12,
                         "configs": [config, ...], "skipped": [config + {"error": str}, ...]}

``w0_<p>``          float32 initial weight of parameter p (p = 0..P-1).
``grads_<p>``       float32 (STEPS, *shape) gradients of parameter p.
``out_<cid>_<p>``   float32 (STEPS, *shape): MXNet weight p after each step (float16 weights are stored
                    widened to float32).
``master_<cid>_<p>`` float32 (STEPS, *shape): the fp32 master weight, only for float16
                    ``multi_precision=True`` configs (MXNet's fp16 weight always equals float16(master)).

A config is::

    {"id": "c0007", "group": "grid",          # defaults | grid | mult | sched | begin | fp16
     "kwargs": {...},                          # JSON-able keyword arguments given to mx.optimizer.create
     "dtype": "float32" | "float16",
     "lr_mult": {"0": 2.0, ...} or {},         # -> opt.set_lr_mult({int(k): v})
     "wd_mult": {...} or {},                   # -> opt.set_wd_mult({int(k): v})
     "scheduler": null | {"type": "FactorScheduler", "args": {...}},
     "per_param_instances": false,
     "param_idx2name": null | {"0": "fc_weight", ...}}

How MXNet was driven (replay it exactly like this):

* ``opt = mx.optimizer.create(name, **kwargs, [lr_scheduler=getattr(mx.lr_scheduler, type)(**args)],
  [param_idx2name={int(k): v}])`` — the scheduler object and ``param_idx2name`` (int keys) are *not* in
  ``kwargs``; they come from the ``scheduler`` / ``param_idx2name`` fields. A fresh scheduler object per
  config (and per instance). When a scheduler is used ``kwargs["learning_rate"]`` is what was passed
  (``null`` keeps the scheduler's ``base_lr``; a number overwrites ``base_lr``, MXNet's rule).
* then ``opt.set_lr_mult(...)`` / ``opt.set_wd_mult(...)`` if non-empty; ``upd = mx.optimizer.get_updater(opt)``.
* weights ``W[p] = mx.nd.array(w0_p, dtype=dtype)``; per step s, for p = 0..P-1 in order:
  ``upd(p, mx.nd.array(grads_p[s], dtype=dtype), W[p])`` with a fresh gradient array each call; after the
  step every ``W[p]`` is recorded. For float16 configs both weights and gradients are the float32 data
  rounded to float16.
* ``per_param_instances`` (Nadam only): one optimizer + Updater per parameter (parameter p is index p of
  its own instance), so every parameter has its own ``m_schedule`` — the project's decision (docs/differences.md #5);
  MXNet's shared schedule is not what mxopt_jax reproduces.
* ``aggregate_num`` / ``use_fused_step`` are never passed (MXNet's default code paths; LAMB/LANS/AdamW/
  AdaBelief therefore run their aggregated fused kernels, which count ``t`` once per update).
  ``MXNET_OPTIMIZER_AGGREGATION_SIZE`` is removed from the environment so its default (4) applies.
* SGLD: ``mx.random.seed(42)`` immediately before each config; the noise cannot be reproduced in JAX,
  test the deterministic part (recover the noise as ``w_new - (w - lr/2*G)``) and the noise statistics.

Config groups per optimizer: ``defaults`` (``kwargs == {}``), ``grid`` (Cartesian product of the
optimizer's own options x rescale_grad {1, 0.5} x clip_gradient {None, 0.3} x wd {0, 0.05}, own options
outermost; an evenly spaced subset of 48, including the first, when larger — every combination of own
options stays represented; LARS: half of the grid passes ``param_idx2name``; LBSGD: ``begin_epoch``
alternates 0/1), ``mult`` (lr/wd multipliers), ``sched`` (Factor / MultiFactor / Cosine
schedulers), ``begin`` (``begin_num_update=5``), ``fp16`` (``multi_precision=True``). Configs on which
MXNet raises are listed under ``skipped`` with the error text.

Numerical notes (checked against /work/shared/spec/reference_impl.py, float64): all optimizers agree to
<~1e-5 relative / ~1e-6 absolute, except AdamW and AdaBelief (abs up to ~4e-5, relative-to-(1e-3+|w|)
up to ~1.5e-2 with ``correct_bias=False``). Their default path is the aggregated ``_multi_*`` kernel, which
computes ``m = b1*(m-G)+G``, ``v = b2*(v-G*G)+G*G`` in float32 (cancellation when ``b2`` is 0.999); an fp32
emulation of that form reproduces the grid trajectories bit-exactly. LANS fp16 configs use the fp16 weight
norm (not the master's) for ``r1``.

Only numpy, mxnet and the standard library are used.
"""

import argparse
import itertools
import json
import os
import sys
import warnings
import zlib

os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
os.environ.pop("MXNET_OPTIMIZER_AGGREGATION_SIZE", None)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

STEPS = 12
SHAPES = [(4, 5), (7,), (2, 3, 2)]
SHAPES_2D = [(4, 5), (6, 3), (3, 2)]  # GroupAdaGrad needs 2-D weights
MAX_GRID = 48
SGLD_SEED = 42

OPTS_20 = [
    "sgd",
    "nag",
    "signum",
    "sgld",
    "dcasgd",
    "adagrad",
    "groupadagrad",
    "adadelta",
    "rmsprop",
    "adam",
    "adamw",
    "adamax",
    "nadam",
    "adabelief",
    "ftrl",
    "ftml",
    "lars",
    "lamb",
    "lans",
    "test",
]
OPTS_19 = ["lbsgd", "ccsgd"]

LARS_NAMES = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}

# Per optimizer:
#   lr     learning rate used everywhere it is passed explicitly (also the schedulers' LR)
#   fixed  hyper-parameters always passed with their (2.0) default value
#   axes   own grid options [(kwarg, [values...])]; the first value of each axis is the "base" value
#   variant the optimizer's main non-default option (fp16 config 3 and the second multiplier config)
_B12 = [("beta1", [0.9, 0.5]), ("beta2", [0.999, 0.8])]
SPEC = {
    "sgd": dict(lr=0.1, fixed={}, axes=[("momentum", [0.0, 0.9])], variant={"momentum": 0.9}),
    "ccsgd": dict(lr=0.1, fixed={}, axes=[("momentum", [0.0, 0.9])], variant={"momentum": 0.9}),
    "nag": dict(lr=0.1, fixed={}, axes=[("momentum", [0.0, 0.9])], variant={"momentum": 0.9}),
    "signum": dict(
        lr=0.01,
        fixed={},
        axes=[("momentum", [0.0, 0.9]), ("wd_lh", [0.0, 0.015])],
        variant={"momentum": 0.9, "wd_lh": 0.015},
    ),
    "sgld": dict(lr=0.1, fixed={}, axes=[], variant={"clip_gradient": 0.3}),
    "dcasgd": dict(
        lr=0.1,
        fixed={},
        axes=[("momentum", [0.0, 0.9]), ("lamda", [0.04, 0.1])],
        variant={"momentum": 0.9, "lamda": 0.1},
    ),
    "adagrad": dict(lr=0.1, fixed={}, axes=[("epsilon", [1e-6, 1e-8])], variant={"epsilon": 1e-8}),
    "groupadagrad": dict(lr=0.1, fixed={}, axes=[("epsilon", [1e-6, 1e-8])], variant={"epsilon": 1e-8}),
    "adadelta": dict(
        lr=1.0,
        fixed={},
        axes=[("rho", [0.9, 0.5]), ("epsilon", [1e-6, 1e-8]), ("learning_rate", [1.0, 0.5])],
        variant={"rho": 0.5},
    ),
    "rmsprop": dict(
        lr=0.01,
        fixed={"epsilon": 1e-8},
        axes=[
            ("centered", [False, True]),
            ("momentum", [0.0, 0.9]),
            ("rho", [0.9, 0.5]),
            ("clip_weights", [None, 0.8]),
        ],
        variant={"centered": True, "momentum": 0.9},
    ),
    "adam": dict(lr=0.01, fixed={"epsilon": 1e-8}, axes=list(_B12), variant={"beta1": 0.5, "beta2": 0.8}),
    "adamax": dict(lr=0.01, fixed={"epsilon": 1e-8}, axes=list(_B12), variant={"beta1": 0.5, "beta2": 0.8}),
    "ftml": dict(
        lr=0.01,
        fixed={"epsilon": 1e-8},
        axes=[("beta1", [0.6, 0.5]), ("beta2", [0.999, 0.8])],
        variant={"beta1": 0.5, "beta2": 0.8},
    ),
    "nadam": dict(
        lr=0.01,
        fixed={"epsilon": 1e-8},
        axes=_B12 + [("schedule_decay", [0.004, 0.008])],
        variant={"schedule_decay": 0.008},
    ),
    "adamw": dict(
        lr=0.01,
        fixed={"epsilon": 1e-6},
        axes=_B12 + [("correct_bias", [True, False])],
        variant={"correct_bias": False},
    ),
    "adabelief": dict(
        lr=0.01,
        fixed={"epsilon": 1e-6},
        axes=_B12 + [("correct_bias", [True, False])],
        variant={"correct_bias": False},
    ),
    "ftrl": dict(
        lr=0.1, fixed={}, axes=[("lamda1", [0.0, 0.01, 0.1]), ("beta", [1.0, 0.5])], variant={"lamda1": 0.01}
    ),
    "lars": dict(
        lr=0.1,
        fixed={"epsilon": 1e-8},
        axes=[("momentum", [0.0, 0.9]), ("eta", [0.001, 0.01])],
        variant={"momentum": 0.9, "eta": 0.01, "__names__": True},
    ),
    "lamb": dict(
        lr=0.01,
        fixed={"beta2": 0.999, "epsilon": 1e-6},
        axes=[
            ("beta1", [0.9, 0.5]),
            ("bias_correction", [True, False]),
            ("lower_bound", [None, 1e-3]),
            ("upper_bound", [None, 10.0]),
        ],
        variant={"bias_correction": False, "lower_bound": 1e-3, "upper_bound": 10.0},
    ),
    "lans": dict(
        lr=0.01,
        fixed={"beta2": 0.999, "epsilon": 1e-6},
        axes=[("beta1", [0.9, 0.5]), ("lower_bound", [None, 1e-3]), ("upper_bound", [None, 10.0])],
        variant={"lower_bound": 1e-3, "upper_bound": 10.0},
    ),
    "test": dict(lr=0.1, fixed={}, axes=[], variant={"learning_rate": 0.05}),
    "lbsgd": dict(
        lr=0.1,
        fixed={"warmup_epochs": 1, "updates_per_epoch": 4},
        axes=[
            ("momentum", [0.0, 0.9]),
            ("batch_scale", [1, 3]),
            ("warmup_strategy", ["linear", "power2", "sqrt", "lars"]),
        ],
        variant={"momentum": 0.9, "batch_scale": 3, "warmup_strategy": "sqrt"},
    ),
}


def _seed(name):
    return zlib.crc32(name.encode("ascii")) & 0xFFFFFFFF


def make_data(name):
    rng = np.random.default_rng(_seed(name))
    shapes = SHAPES_2D if name == "groupadagrad" else SHAPES
    w0 = [rng.uniform(-1.0, 1.0, size=s).astype(np.float32) for s in shapes]
    grads = [rng.normal(0.0, 1.0, size=(STEPS,) + tuple(s)).astype(np.float32) for s in shapes]
    return shapes, w0, grads


def _cfg(
    group, kwargs, dtype="float32", lr_mult=None, wd_mult=None, scheduler=None, names=False, per_param=False
):
    return {
        "group": group,
        "kwargs": kwargs,
        "dtype": dtype,
        "lr_mult": {str(k): float(v) for k, v in (lr_mult or {}).items()},
        "wd_mult": {str(k): float(v) for k, v in (wd_mult or {}).items()},
        "scheduler": scheduler,
        "per_param_instances": per_param,
        "param_idx2name": {str(k): v for k, v in LARS_NAMES.items()} if names else None,
    }


def build_configs(name):
    sp = SPEC[name]
    lr = sp["lr"]
    no_wd = name == "groupadagrad"  # GroupAdaGrad asserts wd == 0
    per_param = name == "nadam"
    mk = lambda *a, **k: _cfg(*a, per_param=per_param, **k)  # noqa: E731

    def full(common, own):
        kw = {"learning_rate": lr}
        kw.update(common)
        kw.update(sp["fixed"])
        kw.update(own)
        return kw

    base_own = {k: v[0] for k, v in sp["axes"]}
    variant = dict(sp["variant"])
    var_names = variant.pop("__names__", False)
    var_own = dict(base_own, **variant)
    plain = {"rescale_grad": 1.0, "clip_gradient": None, "wd": 0.0}

    configs = [mk("defaults", {})]

    # ---- main grid
    common_axes = [("rescale_grad", [1.0, 0.5]), ("clip_gradient", [None, 0.3])]
    if not no_wd:
        common_axes.append(("wd", [0.0, 0.05]))
    axes = sp["axes"] + common_axes  # own options outermost: a subset keeps every own combo
    keys = [k for k, _ in axes]
    combos = list(itertools.product(*[v for _, v in axes]))
    if len(combos) > MAX_GRID:
        idx = np.round(np.linspace(0, len(combos) - 1, MAX_GRID)).astype(int)
        assert len(set(idx.tolist())) == MAX_GRID and idx[0] == 0
        combos = [combos[i] for i in idx]
    for j, combo in enumerate(combos):
        d = dict(zip(keys, combo, strict=False))
        common = {k: d.pop(k) for k in ("rescale_grad", "clip_gradient", "wd") if k in d}
        if no_wd:
            common["wd"] = 0.0
        kw = full(common, d)
        names = False
        if name == "lars":
            # half of the grid passes param_idx2name (exercises the gamma/beta/bias exemption); Thue-Morse
            # parity of the grid index, so that it is balanced against every (binary) grid axis
            names = bin(j).count("1") % 2 == 1
        if name == "lbsgd":
            kw["begin_epoch"] = j % 2
        configs.append(mk("grid", kw, names=names))

    # ---- multipliers
    wd_m = 0.0 if no_wd else 0.05
    mcommon = {"rescale_grad": 1.0, "clip_gradient": 0.3, "wd": wd_m}
    lr_mult = {0: 2.0, 2: 0.5}
    wd_mult = None if no_wd else {1: 0.0, 2: 3.0}
    configs.append(mk("mult", full(mcommon, base_own), lr_mult=lr_mult, wd_mult=wd_mult))
    configs.append(mk("mult", full(mcommon, var_own), lr_mult=lr_mult, wd_mult=wd_mult, names=var_names))
    configs.append(mk("mult", full(mcommon, base_own), lr_mult={1: 0.25}))

    # ---- schedulers and begin_num_update (not for LBSGD)
    if name != "lbsgd":
        scommon = {"rescale_grad": 1.0, "clip_gradient": None, "wd": wd_m}
        scheds = [
            (
                None,
                {
                    "type": "FactorScheduler",
                    "args": {
                        "step": 4,
                        "factor": 0.5,
                        "base_lr": lr,
                        "warmup_steps": 2,
                        "warmup_begin_lr": lr / 10,
                        "warmup_mode": "linear",
                    },
                },
            ),
            (
                lr,
                {"type": "MultiFactorScheduler", "args": {"step": [3, 7], "factor": 0.3, "base_lr": 2 * lr}},
            ),
            (
                None,
                {
                    "type": "CosineScheduler",
                    "args": {
                        "max_update": 10,
                        "base_lr": lr,
                        "final_lr": lr / 20,
                        "warmup_steps": 2,
                        "warmup_begin_lr": 0.0,
                    },
                },
            ),
        ]
        for sched_lr, sched in scheds:
            kw = full(scommon, base_own)
            kw["learning_rate"] = sched_lr
            configs.append(mk("sched", kw, scheduler=sched))
        kw = full(scommon, base_own)
        kw["begin_num_update"] = 5
        configs.append(mk("begin", kw))

    # ---- float16 + multi_precision
    fcommon = {"rescale_grad": 0.5, "clip_gradient": 0.3, "wd": wd_m}
    for common, own, names in (
        (plain, base_own, False),
        (fcommon, base_own, False),
        (plain, var_own, var_names),
    ):
        kw = full(common, own)
        kw["multi_precision"] = True
        configs.append(mk("fp16", kw, dtype="float16", names=names))

    for i, c in enumerate(configs):
        c["id"] = "c%04d" % i
    return [dict(id=c.pop("id"), **c) for c in configs]


def _master_index(mx, name):
    if mx.__version__.startswith("1.") and name in ("sgd", "ccsgd", "nag", "lars"):
        return 1  # 1.9.1 stores (inner_state, w32) for these
    return 0  # (w32, inner_state) everywhere else


def run_config(mx, name, cfg, w0, grads):
    """Drive MXNet for one config; returns (outs, masters) lists of (STEPS, *shape) float32 arrays."""
    P = len(w0)
    dtype = cfg["dtype"]

    def make_opt():
        kw = dict(cfg["kwargs"])
        if cfg["scheduler"] is not None:
            kw["lr_scheduler"] = getattr(mx.lr_scheduler, cfg["scheduler"]["type"])(
                **cfg["scheduler"]["args"]
            )
        if cfg["param_idx2name"] is not None:
            kw["param_idx2name"] = {int(k): v for k, v in cfg["param_idx2name"].items()}
        opt = mx.optimizer.create(name, **kw)
        if cfg["lr_mult"]:
            opt.set_lr_mult({int(k): v for k, v in cfg["lr_mult"].items()})
        if cfg["wd_mult"]:
            opt.set_wd_mult({int(k): v for k, v in cfg["wd_mult"].items()})
        return mx.optimizer.get_updater(opt)

    if cfg["per_param_instances"]:
        upds = [make_opt() for _ in range(P)]
    else:
        upds = [make_opt()] * P
    if name == "sgld":
        mx.random.seed(SGLD_SEED)
    W = [mx.nd.array(w, dtype=dtype) for w in w0]
    mp = dtype == "float16" and cfg["kwargs"].get("multi_precision", False)
    mi = _master_index(mx, name)
    outs = [np.zeros((STEPS,) + w.shape, np.float32) for w in w0]
    masters = [np.zeros((STEPS,) + w.shape, np.float32) for w in w0] if mp else None
    for s in range(STEPS):
        for p in range(P):
            upds[p](p, mx.nd.array(grads[p][s], dtype=dtype), W[p])
        for p in range(P):
            wp = W[p].asnumpy()
            outs[p][s] = wp.astype(np.float32)
            if mp:
                m = upds[p].states[p][mi].asnumpy()
                if m.dtype != np.float32 or not np.array_equal(m.astype(np.float16), wp):
                    raise RuntimeError("fp32 master not found at states[%d][%d]" % (p, mi))
                masters[p][s] = m
    for p in range(P):
        if not np.all(np.isfinite(outs[p])):
            print("  WARNING %s %s: non-finite values in parameter %d" % (name, cfg["id"], p))
    return outs, masters


def generate(mx, name, out_dir):
    shapes, w0, grads = make_data(name)
    arrays = {}
    for p in range(len(shapes)):
        arrays["w0_%d" % p] = w0[p]
        arrays["grads_%d" % p] = grads[p]
    done, skipped = [], []
    for cfg in build_configs(name):
        json.dumps(cfg)  # must be JSON-able
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs, masters = run_config(mx, name, cfg, w0, grads)
        except Exception as e:  # noqa: BLE001 - record every MXNet failure
            err = "{}: {}".format(
                type(e).__name__, str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
            )
            print(
                "  SKIP {} {} {} kwargs={} -> {}".format(
                    name, cfg["id"], cfg["group"], json.dumps(cfg["kwargs"]), err
                )
            )
            skipped.append(dict(cfg, error=err))
            continue
        for p in range(len(shapes)):
            arrays["out_%s_%d" % (cfg["id"], p)] = outs[p]
            if masters is not None:
                arrays["master_%s_%d" % (cfg["id"], p)] = masters[p]
        done.append(cfg)
    meta = {
        "optimizer": name,
        "mxnet_version": mx.__version__,
        "seed": _seed(name),
        "shapes": [list(s) for s in shapes],
        "steps": STEPS,
        "configs": done,
        "skipped": skipped,
    }
    arrays["meta"] = np.array(json.dumps(meta, sort_keys=True))
    path = os.path.join(out_dir, name + ".npz")
    np.savez_compressed(path, **arrays)
    print(
        "%-13s %3d configs, %d skipped -> %s (%d bytes)"
        % (name, len(done), len(skipped), path, os.path.getsize(path))
    )
    return len(done), len(skipped)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--mxnet",
        required=True,
        choices=["2.0", "1.9.1"],
        help="MXNet version of the running interpreter (checked against mx.__version__)",
    )
    ap.add_argument("--out", default="tests/golden", help="output directory")
    ap.add_argument("--only", default=None, help="comma-separated subset of optimizers")
    args = ap.parse_args(argv)

    import mxnet as mx

    if not mx.__version__.startswith(args.mxnet):
        sys.exit(f"mx.__version__ is {mx.__version__!r} but --mxnet {args.mxnet} was given")
    names = OPTS_20 if args.mxnet == "2.0" else OPTS_19
    if args.only:
        wanted = args.only.split(",")
        bad = [n for n in wanted if n not in names]
        if bad:
            sys.exit("not generated with --mxnet {}: {}".format(args.mxnet, ", ".join(bad)))
        names = [n for n in names if n in wanted]
    os.makedirs(args.out, exist_ok=True)
    total_skipped = 0
    for name in names:
        total_skipped += generate(mx, name, args.out)[1]
    print("done: %d optimizers, %d skipped configs" % (len(names), total_skipped))


if __name__ == "__main__":
    main()
