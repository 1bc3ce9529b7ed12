#!/usr/bin/env python
"""Real MXNet Gluon runs with BatchNorm, resumed by name: checkpoints and MXNet's own continuation.

Not part of the package and never imported by the tests. Run it once per MXNet version, each in its side
virtualenv (MXNet is never installed into the project's environment)::

    python3 -m venv /tmp/mx19 && /tmp/mx19/bin/pip install mxnet==1.9.1 numpy==1.23.5
    python3 -m venv /tmp/mx20 && /tmp/mx20/bin/pip install mxnet==2.0.0b1 numpy==1.23.5 requests 'graphviz<0.9'
    /tmp/mx19/bin/python tools/make_mxnet_resume.py --out tests/golden/mxnet_resume
    /tmp/mx20/bin/python tools/make_mxnet_resume.py --out tests/golden/mxnet_resume

For every case ``<v>_<case>`` (``v`` = ``mx19`` or ``mx20``) it trains a small Gluon model ``TRAIN`` steps
with a ``Trainer`` (loss summed over the batch, ``trainer.step(BATCH)``), writes ``<v>_<case>.params``
(``net.save_parameters``) and ``<v>_<case>.states`` (``trainer.save_states``), then resumes exactly as an
MXNet user does (a new net with ``load_parameters``, the same Parameter multipliers, a new Trainer with
``load_states``) and records ``CONT`` more steps in ``<v>_<case>.npz``:

* ``meta`` (JSON): the optimizer and its arguments, the batch size, ``file_names`` (the ``.params`` names in
  file order), ``collect_params`` (the resumed model's ``collect_params()`` keys in their own order: MXNet
  1.x's carry the block prefixes), ``trainer_names`` (for each Trainer index, the ``.params`` name of its
  parameter: ground truth from the Trainer's own parameter list), ``grad_req`` per ``.params`` name, the
  Parameter ``lr_mult`` / ``wd_mult`` by ``.params`` name, the final update counts;
* ``grad_<k>/<name>``: the gradient MXNet's backprop gave parameter ``name`` at continuation step ``k`` (of the
  summed loss), ``weight_<k>/<name>`` every parameter after that step (BatchNorm's running statistics
  included: they move by the forward pass in training mode, never by the Trainer, which the generator checks),
  ``before_<k>/<name>`` BatchNorm's statistics right before ``trainer.step`` (after the forward pass), and for
  float16 weights with multi_precision ``master_<k>/<name>`` (the float32 master).

Cases: ``cnn_adam`` (Conv2D -> BatchNorm -> Dense, Adam with a FactorScheduler, Parameter ``lr_mult`` /
``wd_mult``), ``cnn_fp16`` (the same net in float16, SGD momentum with multi_precision; BatchNorm keeps float32
parameters, as Gluon casts it), ``cnn_custom`` (an optimizer subclass and a learning-rate scheduler subclass of
the user's own, pickled by their class names), ``cnn_kvstore`` (FTML, states updated and saved by a ``local``
KVStore: ``update_on_kvstore``), ``twin`` (Dense layers whose parameters all have equal shapes, so a wrong
index order is silent: in 1.x the layers' prefixes sort against their order, in 2.0 eleven layers make
``'10.weight'`` sort before ``'2.weight'``).
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

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

TRAIN = 3
CONT = 4
BATCH = 4
V2 = mx.__version__.startswith("2")


class HoldThenDecay(mx.lr_scheduler.LRScheduler):
    """A learning-rate scheduler of the user's own (pickled as ``__main__.HoldThenDecay``)."""

    def __init__(self, base_lr, hold, decay):
        super().__init__(base_lr)
        self.hold = hold
        self.decay = decay

    def __call__(self, num_update):
        if num_update <= self.hold:
            return self.base_lr
        return self.base_lr * self.decay ** (num_update - self.hold)


class MySGD(mx.optimizer.SGD):
    """An optimizer subclass of the user's own (pickled as ``__main__.MySGD``); SGD's math."""


def cases():
    wd = 1e-3
    return [
        (
            "cnn_adam",
            "adam",
            dict(learning_rate=None, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=wd),
            {"net": "cnn", "sched": "factor", "mults": True},
        ),
        (
            "cnn_fp16",
            "sgd",
            dict(learning_rate=0.05, momentum=0.9, wd=wd, multi_precision=True),
            {"net": "cnn", "fp16": True, "mults": True},
        ),
        (
            "cnn_custom",
            "sgd",
            dict(learning_rate=None, momentum=0.9, wd=wd),
            {"net": "cnn", "sched": "custom", "custom_opt": True},
        ),
        (
            "cnn_kvstore",
            "ftml",
            dict(learning_rate=0.01, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=wd),
            {"net": "cnn", "kvstore": True},
        ),
        ("twin", "sgd", dict(learning_rate=0.1, momentum=0.9, wd=wd), {"net": "twin"}),
    ]


def make_net(kind, dtype):
    from mxnet import gluon

    nn = gluon.nn
    net = nn.HybridSequential()
    if kind == "cnn":
        net.add(
            nn.Conv2D(2, kernel_size=3, in_channels=1),
            nn.BatchNorm(in_channels=2),
            nn.Activation("relu"),
            nn.Dense(2, in_units=18),
        )
    elif V2:  # eleven equal layers: '10.weight' sorts between '1.weight' and '2.bias'
        for _ in range(11):
            net.add(nn.Dense(2, in_units=2, activation="tanh"))
    else:  # prefixes that sort against the layers' order
        net.add(
            nn.Dense(3, in_units=3, activation="tanh", prefix="zeta_"),
            nn.Dense(3, in_units=3, prefix="alpha_"),
        )
    if dtype == "float16":
        net.cast("float16")  # BatchNorm keeps float32 parameters
    return net


def materialise(net, x):
    """Finish MXNet 2.0's deferred initialisation: one float32 forward pass outside ``autograd.record``
    (inference mode: BatchNorm's statistics do not move)."""
    net(x)


def structural(net):
    """.params name -> Parameter (what save_parameters writes)."""
    return dict(net._collect_params_with_prefix())


def run_case(out, tag, opt_name, kwargs, opts):
    from mxnet import autograd, gluon

    rng = np.random.default_rng(zlib.crc32(tag.encode()))
    kind = opts["net"]
    dtype = "float16" if opts.get("fp16") else "float32"
    if kind == "cnn":
        X = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, 1, 5, 5)).astype(np.float32)
        Y = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, 2)).astype(np.float32)
    else:
        width = 2 if V2 else 3
        X = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, width)).astype(np.float32)
        Y = rng.uniform(-1, 1, size=(TRAIN + CONT, BATCH, width)).astype(np.float32)
    arr = mx.np.array if V2 else mx.nd.array

    mults = {}
    if opts.get("mults"):  # by .params name (the structural names are the same in both versions)
        mults = {"3.bias": (2.0, 1.0), "1.gamma": (1.0, 0.0), "1.beta": (1.0, 0.0), "0.weight": (0.5, 1.0)}

    def set_mults(net):
        for name, p in structural(net).items():
            if name in mults:
                p.lr_mult, p.wd_mult = mults[name]

    def make_opt():
        kw = dict(kwargs)
        if opts.get("sched") == "factor":
            kw["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.7, base_lr=0.02)
        elif opts.get("sched") == "custom":
            kw["lr_scheduler"] = HoldThenDecay(base_lr=0.05, hold=4, decay=0.8)
        if opts.get("custom_opt"):
            return MySGD(**kw)
        return opt_name, kw

    def make_trainer(net):
        o = make_opt()
        tr_kw = {}
        if opts.get("kvstore"):
            tr_kw = {"kvstore": mx.kv.create("local"), "update_on_kvstore": True}
        if isinstance(o, tuple):
            return gluon.Trainer(net.collect_params(), o[0], o[1], **tr_kw)
        return gluon.Trainer(net.collect_params(), o, **tr_kw)

    def forward_backward(net, step, twin_of_fp16=False):
        x, y = X[step], Y[step]
        if dtype == "float16" and not twin_of_fp16:
            # MXNet's CPU kernels have no float16 Conv/Dense: backprop through a float32 twin and hand the
            # float16 gradients (and the twin's BatchNorm statistics) to the float16 net
            twin = make_net(kind, "float32")
            twin.initialize()
            materialise(twin, arr(x))
            pt, pn = structural(twin), structural(net)
            for n, p in pn.items():
                pt[n].set_data(p.data().astype("float32"))
            forward_backward(twin, step, twin_of_fp16=True)
            for n, p in pn.items():
                if p.grad_req == "null":
                    p.set_data(pt[n].data().astype(p.dtype))
                else:
                    p.grad()[:] = pt[n].grad().astype(p.dtype)
                    p.data()._fresh_grad = True
            return
        with autograd.record():
            loss = ((net(arr(x)) - arr(y)) ** 2).sum()  # Gluon's habit: the summed loss
        loss.backward()

    def snapshot(net):
        return {n: p.data().asnumpy().copy() for n, p in structural(net).items()}

    # ---------------------------------------------------------------- training up to the checkpoint
    net = make_net(kind, "float32")
    net.initialize(mx.init.Uniform(0.5))
    materialise(net, arr(X[0]))
    if dtype == "float16":
        net.cast("float16")
    set_mults(net)
    trainer = make_trainer(net)
    for s in range(TRAIN):
        forward_backward(net, s)
        trainer.step(BATCH)
    net.save_parameters(str(out / f"{tag}.params"))
    trainer.save_states(str(out / f"{tag}.states"))

    # ---------------------------------------------------------------- MXNet resumes from the files
    net2 = make_net(kind, dtype)
    net2.load_parameters(str(out / f"{tag}.params"))
    set_mults(net2)
    trainer2 = make_trainer(net2)
    trainer2.load_states(str(out / f"{tag}.states"))
    by_name = structural(net2)
    file_names = list((mx.npx.load if V2 else mx.nd.load)(str(out / f"{tag}.params")).keys())
    trainer_names = [next(n for n, q in by_name.items() if q is p) for p in trainer2._params]
    meta = {
        "optimizer": opt_name,
        "kwargs": kwargs,
        "opts": opts,
        "mxnet": mx.__version__,
        "batch": BATCH,
        "train": TRAIN,
        "cont": CONT,
        "dtype": dtype,
        "file_names": file_names,
        "collect_params": list(net2.collect_params().keys()),
        "trainer_names": trainer_names,
        "grad_req": {n: p.grad_req for n, p in by_name.items()},
        "lr_mult": {n: float(p.lr_mult) for n, p in by_name.items()},
        "wd_mult": {n: float(p.wd_mult) for n, p in by_name.items()},
    }
    data = {}
    for k in range(CONT):
        forward_backward(net2, TRAIN + k)
        before = snapshot(net2)
        for n, p in by_name.items():
            if p.grad_req != "null":
                data[f"grad_{k}/{n}"] = p.grad().asnumpy()
            else:
                data[f"before_{k}/{n}"] = before[n]
        trainer2.step(BATCH)
        after = snapshot(net2)
        for n, p in by_name.items():
            data[f"weight_{k}/{n}"] = after[n]
            if p.grad_req == "null":  # the Trainer never touches them
                assert np.array_equal(after[n], before[n], equal_nan=True), n
        if dtype == "float16":
            u = trainer2._updaters[0]
            for i, n in enumerate(trainer_names):
                if by_name[n].grad_req != "null" and np.dtype(by_name[n].dtype) == np.float16:
                    st = u.states[i]
                    m = st[1] if (not V2 and opt_name in ("sgd", "nag", "lars")) else st[0]
                    data[f"master_{k}/{n}"] = m.asnumpy()
    o = trainer2._optimizer
    if opts.get("kvstore"):
        o = trainer2._kvstore._updater.optimizer
    else:
        o = trainer2._updaters[0].optimizer
    meta["final_num_update"] = int(o.num_update)
    meta["final_counts"] = {str(k): int(v) for k, v in o._index_update_count.items()}
    meta["rescale_grad"] = float(
        np.asarray(o.rescale_grad.asnumpy() if hasattr(o.rescale_grad, "asnumpy") else o.rescale_grad)
    )
    np.savez_compressed(out / f"{tag}.npz", meta=np.array(json.dumps(meta)), **data)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/golden/mxnet_resume")
    ap.add_argument("--only", default=None, help="comma-separated subset of cases")
    args = ap.parse_args(argv)
    if V2:
        mx.npx.set_np()
    prefix = "mx20" if V2 else "mx19"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    for case, name, kw, opts in cases():
        if only and case not in only:
            continue
        mx.random.seed(0)
        tag = f"{prefix}_{case}"
        run_case(out, tag, name, kw, opts)
        print("ok", tag)


if __name__ == "__main__":
    main()
