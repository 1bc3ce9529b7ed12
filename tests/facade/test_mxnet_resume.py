"""Resuming a Gluon Trainer run by parameter name (``load_trainer``) against real MXNet 1.9.1 and 2.0.0b1.

The files under ``tests/golden/mxnet_resume/`` were written by real MXNet (``tools/make_mxnet_resume.py``):
Gluon models with BatchNorm (Conv2D -> BatchNorm -> Dense; Adam with a scheduler and Parameter multipliers,
float16 SGD with multi_precision, a user's optimizer and scheduler subclasses, FTML updated by a KVStore) and
a model whose parameters all have equal shapes, saved after 3 steps, then MXNet's own continuation (4 steps)
after ``load_parameters`` + ``Trainer.load_states``. Here the same files are resumed by name, fed MXNet's
recorded gradients, and every step is compared with MXNet's weights at the golden tolerances, through the
facade updater and through ``to_optax`` under ``jax.jit``; BatchNorm's running statistics must come back
bit-unchanged.
"""

from __future__ import annotations

import json
import pathlib
import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from golden import TOL

import mxopt_jax
from mxopt_jax.mxnet_format import load_trainer, load_updater, read_states

GOLD = pathlib.Path(__file__).parents[1] / "golden" / "mxnet_resume"
CASES = sorted(p.stem for p in GOLD.glob("mx*_*.npz"))


def _case(case: str) -> tuple[dict, dict]:
    with np.load(GOLD / f"{case}.npz") as z:
        data = {k: z[k] for k in z.files}
    return json.loads(str(data.pop("meta"))), data


def _substitutes(case: str) -> dict:
    """What a user passes for the classes of their own in the cnn_custom files (same math as theirs)."""
    if "custom" not in case:
        return {}

    def hold_then_decay(num_update):  # the user's HoldThenDecay(base_lr=0.05, hold=4, decay=0.8)
        return jnp.where(num_update <= 4, 0.05, 0.05 * 0.8 ** (num_update - 4.0))

    return {
        "optimizer": mxopt_jax.create("sgd", learning_rate=0.05, momentum=0.9, wd=1e-3),
        "lr_scheduler": hold_then_decay,
    }


def _load(case: str, meta: dict, loss: str = "sum", quiet: bool = True, **kw):
    names = meta["collect_params"] if case.startswith("mx19") else None
    args = dict(
        loss=loss,
        names=names,
        lr_mult={n: v for n, v in meta["lr_mult"].items() if v != 1.0},
        wd_mult={n: v for n, v in meta["wd_mult"].items() if v != 1.0},
        **_substitutes(case),
    )
    args.update(kw)
    if not quiet:
        return load_trainer(GOLD / f"{case}.params", GOLD / f"{case}.states", **args)
    with warnings.catch_warnings():
        # 1.9.1 SGD's lazy_update with multi_precision: announced, tested elsewhere
        warnings.simplefilter("ignore")
        return load_trainer(GOLD / f"{case}.params", GOLD / f"{case}.states", **args)


def _check_step(case, meta, data, k, name, got, master=None):
    rtol, atol = TOL.get(meta["optimizer"], (1e-4, 1e-5))
    ref = data[f"weight_{k}/{name}"]
    where = f"{case}: step {k} {name}"
    got = np.asarray(got)
    assert got.dtype == ref.dtype, where
    if ref.dtype == np.float16:
        np.testing.assert_allclose(master, data[f"master_{k}/{name}"], rtol=rtol, atol=atol, err_msg=where)
        w, rw = got.astype(np.float32), ref.astype(np.float32)
        ulp = np.spacing(np.abs(ref)).astype(np.float32)
        assert np.all(np.abs(w - rw) <= atol + rtol * np.abs(rw) + ulp), where
    else:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol, err_msg=where)
    return float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))


def test_cases_cover_the_issue():
    metas = {c: _case(c)[0] for c in CASES}
    assert {c[:4] for c in CASES} == {"mx19", "mx20"} and len(CASES) == 10
    assert all("1.running_mean" in m["file_names"] for c, m in metas.items() if "cnn" in c)
    assert {m["mxnet"] for m in metas.values()} == {"1.9.1", "2.0.0beta1"}
    assert sum(f.stat().st_size for f in GOLD.iterdir()) < 400_000


# --------------------------------------------------------------------------- the order rule
@pytest.mark.parametrize("case", CASES)
def test_index_order_is_the_trainers(case):
    """Every index pairs with the parameter MXNet's own Trainer gave it (recorded from trainer._params)."""
    meta, _ = _case(case)
    ckpt = _load(case, meta)
    assert list(ckpt.names) == meta["trainer_names"]
    assert ckpt.frozen == tuple(n for n in meta["trainer_names"] if meta["grad_req"][n] == "null")
    assert ckpt.mxnet_version == case[2]
    assert ckpt.updater.optimizer.num_update == 3


def test_1x_order_is_not_the_files():
    """1.9.1 sorts the prefixed names: BatchNorm first; sorted(.params names) or the file order are wrong."""
    meta, _ = _case("mx19_cnn_adam")
    assert meta["trainer_names"][:4] == ["1.beta", "1.gamma", "1.running_mean", "1.running_var"]
    assert meta["trainer_names"] != sorted(meta["file_names"]) != meta["file_names"]
    with pytest.raises(ValueError, match=r"MXNet 1\.x.*names=list\(net\.collect_params\(\)\.keys\(\)\)"):
        load_trainer(GOLD / "mx19_cnn_adam.params", GOLD / "mx19_cnn_adam.states", loss="sum", lr_mult={})
    # keys not in collect_params() order: paired by leaf name in the net's order, the states do not fit
    bad = list(reversed(meta["collect_params"]))
    with pytest.raises(
        ValueError, match=r"\(parameter '3\.weight'\) has a state of shape \(2, 1, 3, 3\).*wrong order"
    ):
        _load("mx19_cnn_adam", meta, names=bad)
    # as a dict {params name: collect_params key}
    ckpt = _load(
        "mx19_cnn_adam", meta, names=dict(zip(meta["file_names"], meta["collect_params"], strict=False))
    )
    assert list(ckpt.names) == meta["trainer_names"]


def test_a_wrong_order_is_caught_with_index_name_shape_and_rule():
    meta, _ = _case("mx20_cnn_adam")
    wrong = {n: f"z{k}" for k, n in enumerate(meta["file_names"])}  # an arbitrary order
    wrong["0.weight"], wrong["3.weight"] = "a", "b"
    with pytest.raises(ValueError) as exc:
        _load("mx20_cnn_adam", meta, names=wrong)
    msg = str(exc.value)
    assert "index 0 (parameter '0.weight') has a state of shape (2,)" in msg
    assert "shape (2, 1, 3, 3)" in msg and "sorted(net.collect_params().keys())" in msg


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_equal_shapes_cannot_be_swapped_by_name(version):
    """Every parameter of the twin model has the same shape: a wrong index order runs silently with the index
    API (and drifts from MXNet), the name-keyed API cannot get it wrong (any dict order)."""
    case = f"{version}_twin"
    meta, data = _case(case)
    trainer = meta["trainer_names"]
    # the order a user would guess: the sorted .params names for 1.x (the prefixes sort the layers the other
    # way), the layers in numeric order for 2.0
    guess = sorted(trainer) if version == "mx19" else sorted(trainer, key=lambda n: (int(n.split(".")[0]), n))
    assert guess != trainer
    assert len({data[f"weight_0/{n}"].shape for n in trainer if n.endswith("weight")}) == 1
    ckpt = _load(case, meta)
    wrong = ckpt.updater(
        list(range(len(guess))),
        [jnp.asarray(data[f"grad_0/{n}"]) for n in guess],
        [ckpt.params[n] for n in guess],
    )
    err = max(
        float(np.max(np.abs(np.asarray(w) - data[f"weight_0/{n}"])))
        for w, n in zip(wrong, guess, strict=False)
    )
    assert err > 1e-2  # silently wrong: the states of other parameters were used
    ckpt = _load(case, meta)
    params = ckpt.params
    for k in range(meta["cont"]):
        grads = {n: jnp.asarray(data[f"grad_{k}/{n}"]) for n in reversed(guess)}
        params = ckpt.updater(grads, dict(reversed(list(params.items()))))
        for n in trainer:
            _check_step(case, meta, data, k, n, params[n])


# --------------------------------------------------------------------------- continuing MXNet's run
@pytest.mark.parametrize("loss", ["sum", "mean"])
@pytest.mark.parametrize("case", CASES)
def test_resume_by_name_continues_mxnet(case, loss):
    meta, data = _case(case)
    ckpt = _load(case, meta, loss=loss)
    scale = 1.0 if loss == "sum" else 1.0 / meta["batch"]
    params = dict(ckpt.params)
    for k in range(meta["cont"]):
        for n in ckpt.frozen:  # the model's forward pass moved them (MXNet's recorded values)
            params[n] = jnp.asarray(data[f"before_{k}/{n}"])
        grads = {n: jnp.asarray(data[f"grad_{k}/{n}"]) * scale for n in ckpt.trainable}
        new = ckpt.updater(grads, params)
        for n in ckpt.frozen:
            assert new[n] is params[n]
        for n in ckpt.trainable:
            st = ckpt.updater.states[ckpt.index(n)]
            master = np.asarray(st[0]) if new[n].dtype == jnp.float16 else None
            _check_step(case, meta, data, k, n, new[n], master)
        params = new
    opt = ckpt.updater.optimizer
    assert opt.num_update == 7
    assert {str(i): c for i, c in opt.index_update_counts.items()} == meta["final_counts"]


@pytest.mark.parametrize("case", CASES)
def test_resume_under_jit_continues_mxnet(case):
    """to_optax for a nested pytree (names mapped to paths), batch-mean gradients, jitted steps."""
    meta, data = _case(case)
    ckpt = _load(case, meta, loss="mean")

    def path(n):
        layer, leaf = n.rsplit(".", 1)
        return f"layer{layer}/{leaf}"

    tree: dict = {}
    for n in ckpt.names:
        layer, leaf = path(n).split("/")
        tree.setdefault(layer, {})[leaf] = ckpt.params[n]
    tx, state = ckpt.to_optax(tree, paths=path)

    @jax.jit
    def step(p, g, s):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    errs = []
    for k in range(meta["cont"]):
        grads: dict = {}
        for n in ckpt.names:
            layer, leaf = path(n).split("/")
            if n in ckpt.frozen:
                tree[layer][leaf] = jnp.asarray(data[f"before_{k}/{n}"])
                g = jnp.full_like(tree[layer][leaf], 3.0)  # whatever comes: never applied
            else:
                g = jnp.asarray(data[f"grad_{k}/{n}"]) / meta["batch"]
            grads.setdefault(layer, {})[leaf] = g
        before = {n: np.asarray(tree[path(n).split("/")[0]][path(n).split("/")[1]]) for n in ckpt.frozen}
        tree, state = step(tree, grads, state)
        for n in ckpt.names:
            layer, leaf = path(n).split("/")
            if n in ckpt.frozen:
                assert np.asarray(tree[layer][leaf]).tobytes() == before[n].tobytes()  # bit-unchanged
            else:
                master = None
                if tree[layer][leaf].dtype == jnp.float16:
                    i = ckpt.index(n)  # the state is keyed by MXNet's name of index i
                    master = np.asarray(state.master[ckpt.optimizer.idx2name.get(i, str(i))])
                errs.append(_check_step(case, meta, data, k, n, tree[layer][leaf], master))
    assert int(state.count) == meta["cont"]


def test_to_optax_refuses_what_does_not_fit():
    meta, _ = _case("mx20_cnn_adam")
    ckpt = _load("mx20_cnn_adam", meta)
    with pytest.raises(ValueError, match=r"leaves \['extra'\] of `params` are not parameters"):
        ckpt.to_optax({**ckpt.params, "extra": jnp.zeros(2)})
    with pytest.raises(ValueError, match=r"no leaf at path '3\.bias'"):
        ckpt.to_optax({k: v for k, v in ckpt.params.items() if k != "3.bias"})
    swapped = dict(ckpt.params)
    swapped["0.weight"], swapped["3.weight"] = swapped["3.weight"], swapped["0.weight"]
    with pytest.raises(ValueError, match=r"'0\.weight' has shape \(2, 18\).*\(2, 1, 3, 3\)"):
        ckpt.to_optax(swapped)


# --------------------------------------------------------------------------- BatchNorm and the index API
def test_index_calls_refuse_parameters_without_state():
    meta, data = _case("mx19_cnn_adam")
    ckpt = _load("mx19_cnn_adam", meta)
    upd, opt = ckpt.updater, ckpt.updater.optimizer
    weights = [ckpt.params[n] for n in ckpt.names]
    grads = [jnp.ones_like(w) for w in weights]
    counts, states = dict(opt.index_update_counts), dict(upd.states)
    with pytest.raises(ValueError) as exc:
        upd(list(range(len(weights))), grads, weights)  # the old README's list call over every index
    msg = str(exc.value)
    assert "index 2 (parameter '1.running_mean') stored shape (2,) float32" in msg
    assert "grad_req 'null'" in msg and "sorted(net.collect_params().keys())" in msg
    assert "2='batchnorm1_running_mean'" in msg
    assert opt.index_update_counts == counts and upd.states == states  # nothing changed
    with pytest.raises(ValueError, match=r"index 3 \(parameter '1\.running_var'\)"):
        upd(3, grads[3], weights[3])
    with pytest.raises(ValueError, match=r"index 8 is not one of the file's indices"):
        upd(8, grads[3], weights[3])
    # shape / dtype that disagree with the file
    with pytest.raises(
        ValueError, match=r"index 4 \(parameter '0\.bias'\) stored shape \(2,\).*gradient has shape \(3,\)"
    ):
        upd(4, jnp.ones(3), weights[4])
    with pytest.raises(ValueError, match=r"index 5 \(parameter '0\.weight'\).*weight has dtype float16"):
        upd(5, grads[5], weights[5].astype(jnp.float16))
    assert opt.index_update_counts == counts
    # the trainable indices alone work, as MXNet's Trainer.step
    train = [i for i, n in enumerate(ckpt.names) if n in ckpt.trainable]
    new = upd(train, [grads[i] for i in train], [weights[i] for i in train])
    assert len(new) == 6 and opt.num_update == 4


def test_plain_load_updater_refuses_indices_without_state():
    """load_updater alone (no names): a Trainer file's gap (BatchNorm) is refused too, with the order rule."""
    upd = load_updater(GOLD / "mx20_cnn_adam.states")
    assert sorted(upd.states) == [0, 1, 2, 3, 6, 7]
    with pytest.raises(ValueError, match=r"index 4 is not one of the file's indices.*load_trainer"):
        upd(4, jnp.zeros(2), jnp.zeros(2))
    with pytest.raises(
        ValueError, match=r"index 0 \(parameter name unknown\) stored shape \(2,\).*weight has shape"
    ):
        upd(0, jnp.zeros((2, 1, 3, 3)), jnp.zeros((2, 1, 3, 3)))


def test_by_name_errors():
    meta, _ = _case("mx20_cnn_adam")
    ckpt = _load("mx20_cnn_adam", meta)
    grads = {n: jnp.zeros_like(ckpt.params[n]) for n in ckpt.trainable}
    with pytest.raises(ValueError, match=r"no gradient for \['3\.weight'\]"):
        ckpt.updater({k: v for k, v in grads.items() if k != "3.weight"}, ckpt.params)
    with pytest.raises(ValueError, match=r"gradients for \['dense0_bias'\], which are not parameters"):
        ckpt.updater({**grads, "dense0_bias": jnp.zeros(2)}, ckpt.params)
    with pytest.raises(TypeError, match="pass the weights by name too"):
        ckpt.updater(grads, list(ckpt.params.values()))
    # a gradient given for a frozen parameter is ignored, as MXNet has none (grad_req 'null')
    new = ckpt.updater({**grads, "1.running_var": jnp.ones(2)}, ckpt.params)
    assert new["1.running_var"] is ckpt.params["1.running_var"]
    assert ckpt.index("1.running_var") == 5
    with pytest.raises(ValueError, match="no parameter 'x'"):
        ckpt.index("x")


# --------------------------------------------------------------------------- gradient scale, multipliers
def test_gradient_scale_is_explicit():
    meta, _ = _case("mx20_cnn_adam")
    ckpt = _load("mx20_cnn_adam", meta)
    assert ckpt.rescale_grad_in_file == 0.25 and ckpt.batch_size_in_file == 4
    assert (
        "1/4: trainer.step(4) sets it" in ckpt.gradient_scale
        and "summed over the batch" in ckpt.gradient_scale
    )
    assert ckpt.optimizer.rescale_grad == 0.25
    ckpt = _load("mx20_cnn_adam", meta, loss="mean")
    assert ckpt.optimizer.rescale_grad == 1.0 and "already divided by the batch size" in ckpt.gradient_scale
    assert _load("mx20_cnn_adam", meta, batch_size=8).optimizer.rescale_grad == 0.125
    with pytest.raises(ValueError, match=r"`loss` must be 'sum'.*or 'mean'"):
        _load("mx20_cnn_adam", meta, loss="avg")
    with pytest.raises(TypeError, match="loss"):
        load_trainer(GOLD / "mx20_cnn_adam.params", GOLD / "mx20_cnn_adam.states")
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        _load("mx20_cnn_adam", meta, batch_size=0)


@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_multipliers_by_name(version):
    case = f"{version}_cnn_adam"
    meta, data = _case(case)
    assert meta["lr_mult"]["3.bias"] == 2.0 and meta["wd_mult"]["1.gamma"] == 0.0
    with pytest.warns(UserWarning, match="lr_mult / wd_mult.*are not in MXNet's files"):
        ckpt = _load(case, meta, quiet=False, lr_mult=None, wd_mult=None)
    new = ckpt.updater({n: jnp.asarray(data[f"grad_0/{n}"]) for n in ckpt.trainable}, ckpt.params)
    ref = data["weight_0/3.bias"]
    assert float(np.max(np.abs(np.asarray(new["3.bias"]) - ref))) > 1e-4  # without them: off from step 1
    if version == "mx19":  # the keys may be the collect_params() names too
        key = dict(zip(meta["file_names"], meta["collect_params"], strict=False))
        ckpt = _load(
            case,
            meta,
            lr_mult={key["3.bias"]: 2.0, key["0.weight"]: 0.5},
            wd_mult={key["1.gamma"]: 0.0, key["1.beta"]: 0.0},
        )
        new = ckpt.updater({n: jnp.asarray(data[f"grad_0/{n}"]) for n in ckpt.trainable}, ckpt.params)
        _check_step(case, meta, data, 0, "3.bias", new["3.bias"])
    with pytest.raises(TypeError, match=r"`wd_mult` must be a dict \{parameter name: multiplier\}, got list"):
        _load(case, meta, wd_mult=[0.0])
    with pytest.raises(ValueError, match=r"`lr_mult\['3\.bias'\]` must be a finite number"):
        _load(case, meta, lr_mult={"3.bias": float("nan")})
    with pytest.raises(TypeError, match=r"`names` must be the model's collect_params\(\) keys"):
        _load(case, meta, names="conv0_weight")
    with pytest.raises(ValueError, match=r"`lr_mult` names 'nope', not a parameter"):
        _load(case, meta, lr_mult={"nope": 2.0})
    with warnings.catch_warnings():  # lr_mult={} says there are none: no warning
        warnings.simplefilter("error")
        names = meta["collect_params"] if version == "mx19" else None
        load_trainer(GOLD / f"{case}.params", GOLD / f"{case}.states", loss="sum", lr_mult={}, names=names)


# --------------------------------------------------------------------------- classes of the user's own
@pytest.mark.parametrize("version", ["mx19", "mx20"])
def test_user_classes_are_substituted_never_constructed(version):
    path = GOLD / f"{version}_cnn_custom.states"
    states, opt = read_states(path)  # inert stand-ins with the pickled attributes
    assert (opt.mx_module, opt.mx_class) == ("__main__", "MySGD") and opt.momentum == 0.9
    sched = opt.lr_scheduler
    assert (sched.mx_class, sched.hold, sched.decay) == ("HoldThenDecay", 4, 0.8)
    with pytest.raises(pickle.UnpicklingError, match=r"__main__\.MySGD"):
        type(opt)()  # the stand-in class cannot be called
    with pytest.raises(
        ValueError, match=r"optimizer is __main__\.MySGD, a class of your own.*optimizer=mxopt_jax\.create"
    ):
        load_updater(path)
    sgd = mxopt_jax.create("sgd", learning_rate=0.05, momentum=0.9, wd=1e-3)
    with pytest.raises(ValueError, match=r"scheduler is __main__\.HoldThenDecay.*lr_scheduler=.*hold=4"):
        load_updater(path, optimizer=sgd)
    upd = load_updater(path, optimizer=sgd, lr_scheduler=lambda n: 0.05)
    assert upd.optimizer is sgd and sgd.num_update == 3 and sgd.rescale_grad == 0.25
    assert sorted(upd.states) == sorted(states)


class MyThing:
    """A class of the user's own (pickled by its name, never looked up by the reader)."""

    def __init__(self):
        self.momentum = 0.9


def test_unknown_classes_elsewhere_are_refused():
    _, opt = read_states(pickle.dumps(({0: None}, MyThing())))  # the optimizer position: a stand-in
    assert (opt.mx_module, opt.mx_class, opt.momentum) == (__name__, "MyThing", 0.9)
    for payload in (({0: MyThing()}, MyThing()), ({0: None}, {"x": MyThing()}), MyThing(), [MyThing]):
        with pytest.raises(ValueError, match=rf"refused to unpickle {__name__}\.MyThing"):
            read_states(pickle.dumps(payload))


# --------------------------------------------------------------------------- all or nothing
def _bad_list(n=4):
    weights = [jnp.ones((3,)) for _ in range(n)]
    grads = [jnp.ones((3,)) for _ in range(n)]
    grads[2] = jnp.ones((5,))  # fails midway
    return weights, grads


@pytest.mark.parametrize("aggregate", [1, 2])
def test_failed_list_call_changes_nothing(aggregate):
    opt = mxopt_jax.create(
        "adam",
        learning_rate=0.1,
        aggregate_num=aggregate,
        lr_scheduler=mxopt_jax.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1),
    )
    upd = mxopt_jax.get_updater(opt)
    weights = [jnp.ones((3,)) for _ in range(4)]
    upd(list(range(4)), [jnp.ones((3,))] * 4, weights)
    counts, states, num, sched = (
        dict(opt.index_update_counts),
        dict(upd.states),
        opt.num_update,
        dict(vars(opt.lr_scheduler)),
    )
    weights, grads = _bad_list()
    with pytest.raises((TypeError, ValueError)):
        upd(list(range(4)) + [9], grads + [jnp.ones(3)], weights + [jnp.ones(3)])
    assert opt.index_update_counts == counts and upd.states == states and 9 not in upd.states
    assert opt.num_update == num and vars(opt.lr_scheduler) == sched
    # Optimizer.update's list path
    with pytest.raises((TypeError, ValueError)):
        opt.update(list(range(4)), weights, grads, [states[i] for i in range(4)])
    assert opt.index_update_counts == counts and opt.num_update == num
    # and the retry continues from the same place
    new = upd(list(range(4)), [jnp.ones((3,))] * 4, weights)
    assert opt.index_update_counts == {i: 2 for i in range(4)} and len(new) == 4


# --------------------------------------------------------------------------- MXNet 1.x custom optimizers
class _OneX(mxopt_jax.Optimizer):
    """MXNet 1.x's extension point: update(index, weight, grad, state) for one index."""

    def create_state(self, index, weight):
        return jnp.zeros_like(weight)

    def update(self, index, weight, grad, state):
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        mom = 0.5 * state - lr * (grad * self.rescale_grad + wd * weight)
        return weight + mom, mom


class _OneXInPlace(_OneX):
    def update(self, index, weight, grad, state):
        super().update(index, weight, grad, state)  # 1.x wrote weight[:] = ...; returns nothing


class _TwoNoReturn(mxopt_jax.Optimizer):
    def step(self, indices, weights, grads, states):
        for _ in indices:
            pass


def test_1x_update_override_works_as_in_1x():
    opt = _OneX(learning_rate=0.1, wd=0.01)
    opt.set_lr_mult({1: 2.0})
    upd = mxopt_jax.get_updater(opt)
    w = [jnp.ones(2), jnp.ones(2)]
    new = upd([0, 1], [jnp.ones(2), jnp.ones(2)], w)
    np.testing.assert_allclose(np.asarray(new[0]), 1 - 0.1 * 1.01, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new[1]), 1 - 0.2 * 1.01, rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(upd(0, jnp.ones(2), new[0])),
        np.asarray(new[0]) - 0.5 * 0.1 * 1.01 - 0.1 * (1 + 0.01 * float(new[0][0])),
        rtol=1e-5,
    )
    assert opt.index_update_counts == {0: 2, 1: 1}
    upd = mxopt_jax.get_updater(_OneXInPlace(learning_rate=0.1))
    with pytest.raises(
        TypeError,
        match=r"MXNet 1\.x's form\) returned NoneType.*step\(self, indices, weights, grads, states\)",
    ):
        upd([0], [jnp.ones(2)], [jnp.ones(2)])
    assert upd.optimizer.index_update_counts == {}
    upd = mxopt_jax.get_updater(_TwoNoReturn())
    with pytest.raises(
        TypeError,
        match=r"step\(indices, weights, grads, states\) returned nothing \(None\): it must return the new weights and the new states",
    ):
        upd(0, jnp.ones(2), jnp.ones(2))
