#!/usr/bin/env python
"""Real MXNet checkpoints (``.params`` + ``.states``) and MXNet's own continuation after resuming them.

Not part of the package and never imported by the tests. Run it once per MXNet version, each in its side
virtualenv (MXNet is never installed into the project's environment)::

    python3 -m venv /tmp/mx19 && /tmp/mx19/bin/pip install mxnet==1.9.1 numpy==1.23.5
    python3 -m venv /tmp/mx20 && /tmp/mx20/bin/pip install mxnet==2.0.0b1 numpy==1.23.5 requests 'graphviz<0.9'
    /tmp/mx19/bin/python tools/make_mxnet_checkpoints.py --out tests/golden/mxnet_ckpt
    /tmp/mx20/bin/python tools/make_mxnet_checkpoints.py --out tests/golden/mxnet_ckpt

For every case ``<v>_<case>`` (``v`` = ``mx19`` or ``mx20``) it writes, exactly as MXNet wrote them:

* ``<v>_<case>.params``: ``net.save_parameters`` of a small Gluon model (Dense(3, tanh) -> Dense(2); for
  GroupAdaGrad, whose weights must be 2-D, Embedding(6, 4) -> bias-free Dense(3, tanh) -> Dense(2)) after
  ``TRAIN`` training steps;
* ``<v>_<case>.states``: the optimizer states at that point: ``trainer.save_states`` (a Gluon ``Trainer``;
  that is ``Updater.get_states(dump_optimizer=True)``), or for the ``upd_*`` cases an ``mx.optimizer``
  ``Updater`` driven directly and saved with ``get_states(dump_optimizer=True)`` (``..._nodump`` also writes
  ``<v>_<case>.nodump.states`` with ``dump_optimizer=False``);

and ``<v>_<case>.npz``: ``meta`` (JSON: optimizer name and kwargs, how it was saved, the parameters'
``lr_mult``/``wd_mult`` for Trainer cases, the batch size), ``loaded_<name>`` (MXNet's own
``load``/``npx.load`` of the ``.params`` file), and the continuation: MXNet resumes from the two files (a new
net with ``load_parameters``, a new Trainer with ``load_states`` / a new Updater with ``set_states``) and
runs ``CONT`` more steps; ``grad_<k>_<i>`` is the gradient of parameter ``i`` at continuation step ``k``
(as MXNet computed it by backprop) and ``weight_<k>_<i>`` the weight after that step (for float16 weights with
multi_precision also ``master_<k>_<i>``, the float32 master). ``rescale_<k>`` is the ``rescale_grad`` the
Trainer used (``adam_2dev``: two devices cpu(0)/cpu(1), ``update_on_kvstore=False``, so one Updater per device
and per-device counts; ``grad_<k>_<i>`` is then the devices' summed gradient, ``weight_<k>_<i>`` cpu(0)'s); ``meta["index_names"]`` names, for each index, the parameter in the ``.params`` file. Also ``<v>_list.params`` (``nd.save`` of an unnamed list of mixed dtypes) and
``<v>_dict.params`` (``nd.save`` of a dict with ``arg:``/``aux:`` names, as ``Module.save_checkpoint``
writes), ``mx19_sparse.params`` (a row_sparse and a csr array), for 2.0 also ``mx20_np.params`` (``npx.save`` of one 0-d array: a ``.npy`` file), ``mx20_npz.params`` / ``mx20_npz_list.params``
(``npx.savez``, named / unnamed), with MXNet's loaded arrays in ``<v>_formats.npz``.
"""

import argparse
import json
import os
import pathlib
import warnings
import zlib

os.environ["MXNET_STORAGE_FALLBACK_LOG_VERBOSE"] = "0"
os.environ.pop("MXNET_OPTIMIZER_AGGREGATION_SIZE", None)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

TRAIN = 3  # steps before the checkpoint
CONT = 4  # steps MXNet runs after resuming
BATCH = 5

# name -> (kwargs for 2.0, kwargs for 1.9.1 or None if the optimizer does not exist there)
_SCHED = ("factor", {"step": 2, "factor": 0.7, "base_lr": 0.05})


def cases(v2):
    """(case, optimizer, kwargs, options) for this MXNet version.

    Hyperparameters are always passed explicitly (defaults differ between versions). ``options``: ``sched``
    (scheduler kind and arguments, given with ``learning_rate=None``), ``fp16`` (float16 net +
    multi_precision), ``mults`` (Parameter lr_mult/wd_mult), ``updater`` (drive an mx.optimizer Updater).
    """
    c = []
    wd = {"wd": 1e-3}
    c.append(("sgd_mom", "sgd", dict(learning_rate=0.05, momentum=0.9, **wd), {}))
    c.append(
        (
            "sgd_sched_mults",
            "sgd",
            dict(learning_rate=None, momentum=0.9, **wd),
            {"sched": _SCHED, "mults": True},
        )
    )
    c.append(
        (
            "sgd_fp16",
            "sgd",
            dict(learning_rate=0.05, momentum=0.9, multi_precision=True, **wd),
            {"fp16": True},
        )
    )
    if v2:
        c.append(("sgd_agg", "sgd", dict(learning_rate=0.05, momentum=0.9, aggregate_num=4, **wd), {}))
    # 1.9.1 NAG uses the updated weight in its momentum when wd != 0: the 1.9.1 case keeps wd = 0
    c.append(("nag", "nag", dict(learning_rate=0.05, momentum=0.9, wd=0.0 if not v2 else 1e-3), {}))
    c.append(
        (
            "adam",
            "adam",
            dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, lazy_update=False, **wd),
            {"sched": ("multifactor", {"step": [4, 6], "factor": 0.5, "base_lr": 0.01})},
        )
    )
    c.append(
        (
            "adam_fp16",
            "adam",
            dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, multi_precision=True, **wd),
            {"fp16": True},
        )
    )
    if v2:
        c.append(
            (
                "adamw",
                "adamw",
                dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True, wd=0.01),
                {},
            )
        )
        c.append(("lans", "lans", dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6, **wd), {}))
        c.append(
            (
                "rmsprop_centered",
                "rmsprop",
                dict(learning_rate=0.01, rho=0.9, momentum=0.9, epsilon=1e-8, centered=True, **wd),
                {},
            )
        )
        c.append(
            (
                "rmsprop_plain",
                "rmsprop",
                dict(learning_rate=0.01, rho=0.9, epsilon=1e-8, centered=False, **wd),
                {},
            )
        )
        c.append(("adagrad", "adagrad", dict(learning_rate=0.05, epsilon=1e-6, **wd), {}))
        c.append(("adadelta", "adadelta", dict(learning_rate=1.0, rho=0.9, epsilon=1e-6, **wd), {}))
        c.append(
            (
                "lars",
                "lars",
                dict(learning_rate=0.5, momentum=0.9, eta=0.01, epsilon=1e-8, **wd),
                {
                    "sched": (
                        "poly",
                        {"max_update": 20, "base_lr": 0.5, "pwr": 2, "final_lr": 0.0, "warmup_steps": 2},
                    )
                },
            )
        )
        c.append(
            ("adamax", "adamax", dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, **wd), {})
        )
    else:
        c.append(
            (
                "rmsprop_centered",
                "rmsprop",
                dict(learning_rate=0.01, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=True, **wd),
                {},
            )
        )
        c.append(
            (
                "rmsprop_plain",
                "rmsprop",
                dict(learning_rate=0.01, gamma1=0.9, epsilon=1e-8, centered=False, **wd),
                {},
            )
        )
        c.append(("adagrad", "adagrad", dict(learning_rate=0.05, eps=1e-6, wd=0.0), {}))
        # 1.9.1 AdaDelta has no learning rate; it agrees with 2.0 for wd = 0
        c.append(("adadelta", "adadelta", dict(rho=0.9, epsilon=1e-6, wd=0.0), {}))
        # 1.9.1 LARS corrects its momentum on lr changes: constant lr here
        c.append(("lars", "lars", dict(learning_rate=0.5, momentum=0.9, eta=0.01, eps=1e-8, **wd), {}))
        c.append(("adamax", "adamax", dict(learning_rate=0.01, beta1=0.9, beta2=0.999, **wd), {}))
        c.append(("ccsgd", "ccsgd", dict(learning_rate=0.05, momentum=0.9, **wd), {}))
        c.append(
            (
                "lbsgd",
                "lbsgd",
                dict(
                    learning_rate=0.05,
                    momentum=0.9,
                    warmup_strategy="linear",
                    warmup_epochs=1,
                    batch_scale=2,
                    updates_per_epoch=4,
                    **wd,
                ),
                {},
            )
        )
    c.append(("ftrl", "ftrl", dict(learning_rate=0.1, lamda1=0.01, beta=1.0, **wd), {}))
    c.append(("ftml", "ftml", dict(learning_rate=0.01, beta1=0.6, beta2=0.999, epsilon=1e-8, **wd), {}))
    c.append(
        (
            "nadam",
            "nadam",
            dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, schedule_decay=0.004, **wd),
            {},
        )
    )
    c.append(
        (
            "lamb",
            "lamb",
            dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True, **wd),
            {
                "sched": (
                    "cosine",
                    {
                        "max_update": 20,
                        "base_lr": 0.01,
                        "final_lr": 0.001,
                        "warmup_steps": 2,
                        "warmup_begin_lr": 0.001,
                    },
                )
            },
        )
    )
    c.append(("signum", "signum", dict(learning_rate=0.01, momentum=0.9, wd_lh=0.0, **wd), {}))
    # 1.9.1 DCASGD: momentum is broken, and wd enters the square term differently
    c.append(
        (
            "dcasgd",
            "dcasgd",
            dict(learning_rate=0.05, momentum=0.0, lamda=0.04, wd=0.0 if not v2 else 1e-3),
            {},
        )
    )
    # two devices (cpu(0), cpu(1)), one Updater per device: per-device update counts in the file
    c.append(
        (
            "adam_2dev",
            "adam",
            dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-8, **wd),
            {"devices": 2},
        )
    )
    # math that mxopt_jax does not continue exactly (load_updater warns): 1.9.1 NAG with wd; 2.0 non-aggregated
    # fused LAMB (counts every update twice)
    if v2:
        c.append(
            (
                "adabelief",
                "adabelief",
                dict(learning_rate=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6, correct_bias=True, **wd),
                {},
            )
        )
        c.append(
            (
                "lamb_noagg",
                "lamb",
                dict(
                    learning_rate=0.01,
                    beta1=0.9,
                    beta2=0.999,
                    epsilon=1e-6,
                    bias_correction=True,
                    aggregate_num=1,
                    wd=0.05,
                ),
                {},
            )
        )
    else:
        c.append(("nag_wd", "nag", dict(learning_rate=0.05, momentum=0.9, wd=0.05), {}))
    # GroupAdaGrad needs 2-D weights (an Embedding and bias-free Dense layers); wd must be 0 (MXNet asserts)
    eps_kw = {"epsilon": 1e-6} if v2 else {"eps": 1e-5}
    c.append(("groupadagrad", "groupadagrad", dict(learning_rate=0.05, wd=0.0, **eps_kw), {"net": "embed"}))
    # Test: MXNet 2.0 w -= lr * (rescale_grad * g + wd * w); 1.9.1 w += rescale_grad * g (not continued)
    c.append(("test", "test", dict(learning_rate=0.05, **wd), {}))
    # SGLD: no state; its noise comes from MXNet's global generator (not reproducible elsewhere)
    c.append(
        (
            "sgld",
            "sgld",
            dict(learning_rate=None, **wd),
            {"sched": ("factor", {"step": 2, "factor": 0.5, "base_lr": 1e-4})},
        )
    )
    # mx.optimizer Updater driven directly: begin_num_update, set_lr_mult/set_wd_mult by index and by name
    c.append(
        (
            "upd_adam_mults",
            "adam",
            dict(
                learning_rate=0.01,
                beta1=0.9,
                beta2=0.999,
                epsilon=1e-8,
                begin_num_update=5,
                param_idx2name={0: "w0_weight", 1: "b0_weight", 2: "w1_weight", 3: "b1_weight"},
                **wd,
            ),
            {"updater": True, "lr_mult": {0: 2.0, "w1_weight": 0.5}, "wd_mult": {"b0_weight": 0.0, 3: 0.0}},
        )
    )
    c.append(
        (
            "upd_sgd_nodump",
            "sgd",
            dict(learning_rate=0.05, momentum=0.9, **wd),
            {"updater": True, "nodump": True},
        )
    )
    return c


def _scheduler(mx, kind, kw):
    cls = {
        "factor": "FactorScheduler",
        "multifactor": "MultiFactorScheduler",
        "poly": "PolyScheduler",
        "cosine": "CosineScheduler",
    }[kind]
    return getattr(mx.lr_scheduler, cls)(**kw)


def _np(a):
    return a.asnumpy()


def run_case(mx, v2, out, tag, opt_name, kwargs, opts):
    from mxnet import autograd, gluon

    rng = np.random.default_rng(zlib.crc32(tag.encode()))
    dtype = "float16" if opts.get("fp16") else "float32"
    embed = opts.get("net") == "embed"
    if embed:  # token ids in [0, 6)
        X = rng.integers(0, 6, size=(TRAIN + CONT, BATCH)).astype(np.float32)
    else:
        X = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, 4)).astype(np.float32)
    Y = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, 2)).astype(np.float32)
    arr = mx.np.array if v2 else mx.nd.array

    def make_net():
        net = gluon.nn.HybridSequential()
        if embed:  # every weight 2-D (GroupAdaGrad)
            net.add(
                gluon.nn.Embedding(6, 4),
                gluon.nn.Dense(3, in_units=4, activation="tanh", use_bias=False),
                gluon.nn.Dense(2, in_units=3, use_bias=False),
            )
        else:
            net.add(gluon.nn.Dense(3, in_units=4, activation="tanh"), gluon.nn.Dense(2, in_units=3))
        return net

    def params_of(net):
        # the Trainer's index order: collect_params() sorted by key
        return [p for _, p in sorted(net.collect_params().items())]

    def set_mults(net):
        if opts.get("mults"):
            ps = params_of(net)
            ps[0].lr_mult = 2.0
            ps[1].wd_mult = 0.0
            ps[3].lr_mult = 0.5

    def make_opt(kw):
        kw = dict(kw)
        if "sched" in opts:
            kw["lr_scheduler"] = _scheduler(mx, *opts["sched"])
        return kw

    def grads_of(net):
        if dtype == "float16":
            # MXNet's CPU Dense has no float16 kernel: backprop through a float32 twin of the float16 net and
            # hand the float16 gradients to the Trainer/Updater as its backward pass would
            twin = make_net()
            twin.initialize()
            for pt, p in zip(params_of(twin), params_of(net), strict=True):
                pt.set_data(p.data().astype("float32"))
            g = grads_of_net(twin, x_cur[0].astype("float32"), x_cur[1].astype("float32"))
            for p, gi in zip(params_of(net), g, strict=True):
                p.grad()[:] = arr(gi, dtype="float16")
                p.data()._fresh_grad = True
            return [_np(p.grad()) for p in params_of(net)]
        return grads_of_net(net, x_cur[0], x_cur[1])

    def grads_of_net(net, x, y):
        if len(ctxs) == 1:
            with autograd.record():
                loss = ((net(x) - y) ** 2).sum()
            loss.backward()
            return [_np(p.grad()) for p in params_of(net)]
        # batch split over the devices; the Trainer's kvstore sums the devices' gradients before updating
        parts = np.array_split(np.arange(BATCH), len(ctxs))
        with autograd.record():
            losses = [
                ((net(x[k[0] : k[-1] + 1].copyto(c)) - y[k[0] : k[-1] + 1].copyto(c)) ** 2).sum()
                for k, c in zip(parts, ctxs, strict=True)
            ]
        for loss in losses:
            loss.backward()
        return [sum(_np(g) for g in p.list_grad()) for p in params_of(net)]

    x_cur = [None, None]
    ctxs = [mx.cpu(k) for k in range(opts.get("devices", 1))]
    tr_kw = {"update_on_kvstore": False} if len(ctxs) > 1 else {}
    meta = {
        "optimizer": opt_name,
        "kwargs": {k: v for k, v in kwargs.items() if k != "param_idx2name"},
        "param_idx2name": {str(k): v for k, v in kwargs.get("param_idx2name", {}).items()} or None,
        "sched": opts.get("sched"),
        "dtype": dtype,
        "batch": BATCH,
        "train": TRAIN,
        "cont": CONT,
        "mxnet": mx.__version__,
        "saved_by": "updater" if opts.get("updater") else "trainer",
        "lr_mult": {str(k): v for k, v in opts.get("lr_mult", {}).items()},
        "wd_mult": {str(k): v for k, v in opts.get("wd_mult", {}).items()},
    }
    data = {}

    # ---------------------------------------------------------------- training up to the checkpoint
    net = make_net()
    net.initialize(mx.init.Uniform(0.5), ctx=ctxs)
    if dtype == "float16":
        net.cast("float16")
    set_mults(net)
    if opts.get("updater"):
        opt = mx.optimizer.create(opt_name, **make_opt(kwargs))
        if "lr_mult" in opts:
            opt.set_lr_mult(opts["lr_mult"])
        if "wd_mult" in opts:
            opt.set_wd_mult(opts["wd_mult"])
        upd = mx.optimizer.get_updater(opt)
    else:
        trainer = gluon.Trainer(net.collect_params(), opt_name, make_opt(kwargs), **tr_kw)

    def one_step(net_, step, updater=None, trainer_=None, record=None):
        x_cur[0] = arr(X[step], dtype=dtype)
        x_cur[1] = arr(Y[step], dtype=dtype)
        g = grads_of(net_)
        if updater is not None:
            ps = params_of(net_)
            updater.optimizer.rescale_grad = 1.0 / BATCH
            updater(list(range(len(ps))), [p.grad() for p in ps], [p.data() for p in ps])
            rescale = updater.optimizer.rescale_grad
        else:
            trainer_.step(BATCH)
            rescale = trainer_.optimizer.rescale_grad
        if record is not None:
            rescale = float(
                np.asarray(rescale.asnumpy() if hasattr(rescale, "asnumpy") else rescale).reshape(-1)[0]
            )
            data[f"rescale_{record}"] = np.float64(rescale)
            for i, (gi, p) in enumerate(zip(g, params_of(net_), strict=True)):
                data[f"grad_{record}_{i}"] = gi
                data[f"weight_{record}_{i}"] = _np(p.data(ctxs[0]))

    for s in range(TRAIN):
        one_step(
            net,
            s,
            updater=upd if opts.get("updater") else None,
            trainer_=None if opts.get("updater") else trainer,
        )
    net.save_parameters(str(out / f"{tag}.params"))
    if opts.get("updater"):
        (out / f"{tag}.states").write_bytes(upd.get_states(dump_optimizer=True))
        if opts.get("nodump"):
            (out / f"{tag}.nodump.states").write_bytes(upd.get_states(dump_optimizer=False))
    else:
        trainer.save_states(str(out / f"{tag}.states"))

    # ---------------------------------------------------------------- MXNet resumes from the files
    loaded = (mx.npx.load if v2 else mx.nd.load)(str(out / f"{tag}.params"))
    for k, a in loaded.items():
        data[f"loaded_{k}"] = _np(a)
    meta["param_names"] = list(loaded.keys())
    net2 = make_net()
    if dtype == "float16":
        net2.cast("float16")
    net2.load_parameters(str(out / f"{tag}.params"), ctx=ctxs)
    set_mults(net2)
    if opts.get("updater"):
        opt2 = mx.optimizer.create(opt_name, **make_opt(kwargs))
        upd2 = mx.optimizer.get_updater(opt2)
        upd2.set_states((out / f"{tag}.states").read_bytes())
        trainer2 = None
    else:
        upd2 = None
        trainer2 = gluon.Trainer(net2.collect_params(), opt_name, make_opt(kwargs), **tr_kw)
        trainer2.load_states(str(out / f"{tag}.states"))
    ps = params_of(net2)
    by_name = net2._collect_params_with_prefix()
    # the Trainer's / Updater's index i is the i-th parameter of collect_params(); the .params file names it
    meta["index_names"] = [next(n for n, q in by_name.items() if q is p) for p in ps]
    meta["param_lr_mult"] = [float(p.lr_mult) for p in ps]
    meta["param_wd_mult"] = [float(p.wd_mult) for p in ps]
    for k in range(CONT):
        one_step(net2, TRAIN + k, updater=upd2, trainer_=trainer2, record=k)
        u = upd2 if upd2 is not None else trainer2._updaters[0]
        if dtype == "float16":
            for i in range(len(ps)):
                st = u.states[i]
                m = st[1] if (not v2 and opt_name in ("sgd", "nag", "lars", "ccsgd")) else st[0]
                data[f"master_{k}_{i}"] = _np(m)
    o = (upd2 if upd2 is not None else trainer2._updaters[0]).optimizer
    meta["final_num_update"] = int(o.num_update)
    meta["final_counts"] = {str(k): int(v) for k, v in o._index_update_count.items()}
    meta["final_all_counts"] = {
        str(d): {str(k): int(v) for k, v in c.items()} for d, c in o._all_index_update_counts.items()
    }
    np.savez_compressed(out / f"{tag}.npz", meta=np.array(json.dumps(meta)), **data)


def formats(mx, v2, out, prefix):
    """nd.save of an unnamed list (mixed dtypes) and of a dict with Module-style arg:/aux: names."""
    rng = np.random.default_rng(7)
    nd = mx.nd
    arrays = [
        nd.array(rng.standard_normal((2, 3)), dtype="float32"),
        nd.array(rng.standard_normal((4,)), dtype="float16"),
        nd.array(rng.standard_normal((2, 2)), dtype="float64"),
        nd.array(rng.integers(-100, 100, (5,)), dtype="int8"),
        nd.array(rng.integers(0, 255, (3,)), dtype="uint8"),
        nd.array(rng.integers(-1000, 1000, (2, 2)), dtype="int32"),
        nd.array(rng.integers(-(2**40), 2**40, (3,)), dtype="int64"),
        nd.array(rng.standard_normal((1, 1, 2)), dtype="float32"),
    ]
    try:
        arrays.append(nd.array(rng.standard_normal((3,)), dtype="float32").astype("bfloat16"))
    except Exception:  # noqa: BLE001 - no bfloat16 in this build
        pass
    nd.save(str(out / f"{prefix}_list.params"), arrays)
    named = {"arg:fc1_weight": arrays[0], "arg:fc1_bias": arrays[1], "aux:bn_moving_mean": arrays[2]}
    nd.save(str(out / f"{prefix}_dict.params"), named)
    if not v2:  # sparse storage (load_params refuses it); MXNet 2.0 cannot save it in numpy mode
        dense = nd.array([[0, 0, 0], [1, 2, 3], [0, 0, 0], [4, 5, 6]], dtype="float32")
        nd.save(
            str(out / "mx19_sparse.params"), {"rsp": dense.tostype("row_sparse"), "csr": dense.tostype("csr")}
        )
    data = {}
    for i, a in enumerate(nd.load(str(out / f"{prefix}_list.params"))):
        data[f"list_{i}"] = a.astype("float32").asnumpy() if a.dtype.__name__ == "bfloat16" else a.asnumpy()
        data[f"list_{i}_dtype"] = np.array(
            str(np.dtype(a.dtype).name) if a.dtype.__name__ != "bfloat16" else "bfloat16"
        )
    for k, a in nd.load(str(out / f"{prefix}_dict.params")).items():
        data[f"dict_{k}"] = a.asnumpy()
    if v2:
        # numpy-mode files: npx.save (one array: a .npy file) and npx.savez (an .npz archive, which is
        # also what Gluon 2.0's save_parameters writes), named and unnamed
        np_arrays = {
            "scalar": mx.np.array(3.5),
            "ints": mx.np.arange(4, dtype="int64"),
            "flags": mx.np.array([True, False, True], dtype="bool"),
            "empty": mx.np.zeros((0, 3)),
        }
        mx.npx.save(str(out / "mx20_np.params"), np_arrays["scalar"])  # one array per file
        mx.npx.savez(str(out / "mx20_npz.params"), **np_arrays)
        mx.npx.savez(str(out / "mx20_npz_list.params"), np_arrays["ints"], np_arrays["scalar"])
        for stem in ("np", "npz", "npz_list"):
            got = mx.npx.load(str(out / f"mx20_{stem}.params"))
            for k, a in got.items() if isinstance(got, dict) else [("0", got)]:
                data[f"{stem}_{k}"] = a.asnumpy()
    np.savez_compressed(out / f"{prefix}_formats.npz", **data)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/golden/mxnet_ckpt")
    ap.add_argument("--only", default=None, help="comma-separated subset of cases")
    args = ap.parse_args(argv)
    import mxnet as mx

    v2 = mx.__version__.startswith("2")
    if v2:
        mx.npx.set_np()
    prefix = "mx20" if v2 else "mx19"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    if not only:
        formats(mx, v2, out, prefix)
    for case, name, kw, opts in cases(v2):
        if only and case not in only:
            continue
        mx.random.seed(0)
        tag = f"{prefix}_{case}"
        try:
            run_case(mx, v2, out, tag, name, kw, opts)
            print("ok", tag)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other cases
            print("FAILED", tag, type(exc).__name__, exc)
            for f in out.glob(f"{tag}.*"):
                f.unlink()


if __name__ == "__main__":
    main()
