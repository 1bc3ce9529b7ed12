"""The SGD family: SGD, NAG, Signum/signSGD, SGLD, DCASGD, LBSGD (1.x) and MXNet's ``Test`` optimizer.

Notation (every rule): ``G = clip(rescale_grad * g) + wd * w`` is MXNet 2.0's preprocessed gradient
(:func:`mxopt_jax._src.numerics.preprocess`), ``lr`` and ``wd`` are per-parameter (``lr_mult``, ``wd_mult``).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import preprocess, rate_or_one
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import check_choice, check_int, check_lazy_update, is_python_number, is_static_zero

_UNIT = {"low": 0.0, "high": 1.0}


SGDState = NamedTuple(
    "SGDState",
    [
        ("count", jax.Array),  # number of updates done, int32 scalar
        ("mom", optax.Updates | None),  # momentum buffer per parameter; None when momentum == 0
        ("master", optax.Params | None),  # float32 master copies of 16-bit parameters (multi_precision)
    ],
)
SGDState.__doc__ = """State of :func:`sgd`, :func:`nag` and :func:`lars`."""


def _has_momentum(args: dict) -> dict:
    return {"has_mom": not is_static_zero(args["momentum"])}


def _mom_init(w, dtype, opts):
    return (jnp.zeros_like(w, dtype) if opts["has_mom"] else None,)


def _check_lazy(owner: str, args: dict) -> None:
    check_lazy_update(owner, args, allow_multi_precision=False)


def sgd_step(g, w, s, hp, opts):
    """``mom = momentum * mom - lr * G; w += mom`` (or ``w -= lr * G`` without momentum)."""
    G = preprocess(g, w, hp)
    (mom,) = s
    if mom is None:
        return -hp["lr"] * G, (None,)
    mom = hp["momentum"] * mom - hp["lr"] * G
    return mom, (mom,)


SGD_RULE = Rule(
    name="sgd",
    state_cls=SGDState,
    fields=("mom",),
    init=_mom_init,
    step=sgd_step,
    hyper=("momentum",),
    static=("lazy_update",),
    checks={"momentum": _UNIT},
    prepare=_has_momentum,
    weight_only_for_decay=True,
    validate=_check_lazy,
    sparse="lazy_update",
    one_pass=True,
)


@optimizer(SGD_RULE)
def sgd(
    learning_rate: ScalarOrSchedule | None = 0.1,
    momentum: ScalarOrSchedule = 0.0,
    lazy_update: bool = False,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """MXNet's SGD with optional momentum (``mxnet.optimizer.SGD``)::

        G   = clip(rescale_grad * g) + wd * w
        mom = momentum * mom - lr * G          (momentum > 0)
        w   = w + mom                          (w = w - lr * G without momentum)

    Robbins & Monro, "A Stochastic Approximation Method" (1951); momentum: Polyak (1964).

    Args:
      learning_rate: step size (MXNet 2.0 default 0.1).
      momentum: momentum coefficient in ``[0, 1]``; 0 keeps no momentum state.
      lazy_update: for row-sparse gradients, update only the listed rows (no effect on dense gradients).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.sgd(learning_rate=0.1, momentum=0.9, wd=1e-4)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.95 -1.95  2.9 ]
      >>> print(np.asarray(state.mom["w"]).round(4))
      [-0.05  0.05 -0.1 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# 1.x SGD has no lazy_update/multi_precision restriction.
CCSGD_RULE = dataclasses.replace(SGD_RULE, name="ccsgd", validate=None)


@optimizer(CCSGD_RULE, deprecation="ccsgd is deprecated (as in MXNet 1.x); use mxopt_jax.sgd")
def ccsgd(
    learning_rate: ScalarOrSchedule | None = 0.01,
    momentum: ScalarOrSchedule = 0.0,
    lazy_update: bool = True,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """MXNet 1.x ``ccSGD``: a deprecated alias of SGD with the 1.9.1 defaults (lr 0.01, ``lazy_update=True``)::

        G   = clip(rescale_grad * g) + wd * w
        mom = momentum * mom - lr * G ;  w = w + mom          (w = w - lr * G without momentum)

    Emits a ``DeprecationWarning``; use :func:`sgd`.

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> import warnings
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore", DeprecationWarning)  # ccsgd is deprecated: use sgd
      ...     tx = mxopt_jax.ccsgd(learning_rate=0.1, momentum=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.95 -1.95  2.9 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- NAG
def nag_step(g, w, s, hp, opts):
    """``mom = momentum * mom - lr * G; w += momentum * mom - lr * G``."""
    G = preprocess(g, w, hp)
    (mom,) = s
    if mom is None:
        return -hp["lr"] * G, (None,)
    step = hp["lr"] * G
    mom = hp["momentum"] * mom - step
    return hp["momentum"] * mom - step, (mom,)


NAG_RULE = Rule(
    name="nag",
    state_cls=SGDState,
    fields=("mom",),
    init=_mom_init,
    step=nag_step,
    hyper=("momentum",),
    checks={"momentum": _UNIT},
    prepare=_has_momentum,
    weight_only_for_decay=True,
    one_pass=True,
)


@optimizer(NAG_RULE)
def nag(
    learning_rate: ScalarOrSchedule | None = 0.1,
    momentum: ScalarOrSchedule = 0.9,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Nesterov accelerated gradient (``mxnet.optimizer.NAG``)::

        G   = clip(rescale_grad * g) + wd * w
        mom = momentum * mom - lr * G
        w   = w + momentum * mom - lr * G

    Nesterov, "A method for solving a convex programming problem with convergence rate O(1/k^2)" (1983);
    Sutskever et al., "On the importance of initialization and momentum in deep learning" (ICML 2013).

    Args:
      learning_rate: step size (default 0.1).
      momentum: momentum coefficient in ``[0, 1]`` (default 0.9).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.nag(learning_rate=0.1, momentum=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.905 -1.905  2.81 ]
      >>> print(np.asarray(state.mom["w"]).round(4))
      [-0.05  0.05 -0.1 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- Signum
SignumState = NamedTuple(
    "SignumState",
    [
        ("count", jax.Array),
        ("mom", optax.Updates | None),  # EMA of G (natural sign; MXNet stores its negation); None for signSGD
        ("master", optax.Params | None),
    ],
)
SignumState.__doc__ = """State of :func:`signum`."""


def signum_step(g, w, s, hp, opts):
    """Signum (EMA of G, sign step, decoupled ``wd_lh``) or signSGD when ``momentum == 0``."""
    lr, wd_lh = hp["lr"], hp["wd_lh"]
    (ema,) = s

    def sign_sgd():
        decay = hp["wd"] + wd_lh if not is_static_zero(hp["wd"]) else wd_lh
        return -lr * decay * w - lr * jnp.sign(g)

    if ema is None:
        return sign_sgd(), (None,)
    mu = hp["momentum"]
    G = preprocess(g, w, hp)
    ema_new = mu * ema + (1 - mu) * G
    delta = -lr * jnp.sign(ema_new) - lr * wd_lh * w
    if opts["dynamic_momentum"]:
        delta = jnp.where(mu == 0, sign_sgd(), delta)
    return delta, (ema_new,)


SIGNUM_RULE = Rule(
    name="signum",
    state_cls=SignumState,
    fields=("mom",),
    init=_mom_init,
    step=signum_step,
    hyper=("momentum", "wd_lh"),
    checks={"momentum": _UNIT, "wd_lh": {"low": 0.0}},
    prepare=lambda a: {
        "has_mom": not is_static_zero(a["momentum"]),
        "dynamic_momentum": not is_python_number(a["momentum"]),
    },
    one_pass=True,
)


@optimizer(SIGNUM_RULE)
def signum(
    learning_rate: ScalarOrSchedule | None = 0.01,
    momentum: ScalarOrSchedule = 0.9,
    wd_lh: ScalarOrSchedule = 0.0,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Signum and signSGD (``mxnet.optimizer.Signum``)::

        G   = clip(rescale_grad * g) + wd * w
        m   = momentum * m + (1 - momentum) * G               (momentum > 0: Signum)
        w   = (1 - lr * wd_lh) * w - lr * sign(m)
        w   = (1 - lr * (wd + wd_lh)) * w - lr * sign(g)       (momentum == 0: signSGD)

    Bernstein et al., "signSGD: Compressed Optimisation for Non-Convex Problems" (ICML 2018).
    The state holds the EMA with its natural sign (MXNet stores its negation; the weights are identical).

    Args:
      learning_rate: step size (default 0.01).
      momentum: EMA coefficient in ``[0, 1]`` (default 0.9); 0 selects signSGD.
      wd_lh: decoupled weight decay (Loshchilov & Hutter), ``>= 0``.

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.signum(learning_rate=0.01, momentum=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.99 -1.99  2.99]
      >>> print(np.asarray(state.mom["w"]).round(4))
      [ 0.05 -0.05  0.1 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- SGLD
SGLDState = NamedTuple(
    "SGLDState",
    [
        ("count", jax.Array),
        ("master", optax.Params | None),
        ("key", jax.Array),  # PRNG key for the Langevin noise, advanced every update
    ],
)
SGLDState.__doc__ = """State of :func:`sgld`."""


def sgld_step(g, w, s, hp, opts):
    """``w = w - lr/2 * G + N(0, sqrt(lr))``.

    ``sqrt`` has an infinite slope at 0: at a rate of 0 the noise's scale is the constant 0, so that a
    meta-gradient through a step at rate 0 (a warmup from 0) is 0 there, not ``inf * 0`` (differences #20).
    """
    G = preprocess(g, w, hp)
    zero, lr = rate_or_one(hp["lr"])
    sd = jnp.where(zero, jnp.zeros_like(lr), jnp.sqrt(lr))
    noise = sd * jax.random.normal(hp["key"], g.shape, g.dtype)
    return -(hp["lr"] / 2) * G + noise, ()


SGLD_RULE = Rule(
    name="sgld",
    state_cls=SGLDState,
    fields=(),
    init=lambda w, dtype, opts: (),
    step=sgld_step,
    weight_only_for_decay=True,
    uses_key=True,
)


@optimizer(SGLD_RULE)
def sgld(
    learning_rate: ScalarOrSchedule | None = 0.1,
    seed: int | jax.Array = 0,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Stochastic Gradient Langevin Dynamics (``mxnet.optimizer.SGLD``)::

        G = clip(rescale_grad * g) + wd * w
        w = w - lr / 2 * G + N(0, sqrt(lr))

    Welling & Teh, "Bayesian Learning via Stochastic Gradient Langevin Dynamics" (ICML 2011).

    Args:
      learning_rate: step size (MXNet 2.0 default 0.1).
      seed: an int or a ``jax.random`` key; the state carries the key and advances it every update, so the
        same seed gives the same trajectory. Each parameter draws its own independent noise. The default is
        ``seed=0`` (JAX's explicit-key convention): two ``sgld()`` transforms without a seed draw the same noise,
        so give independent chains different seeds. (The facade's ``create('sgld')`` draws a fresh seed
        instead, as MXNet's global generator never repeats a stream, and keeps it as ``opt.seed``.)

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.sgld(learning_rate=0.01, seed=0)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> again, _ = tx.update(grads, tx.init(params), params)
      >>> bool(jnp.array_equal(updates["w"], again["w"]))  # the same seed draws the same noise
      True
      >>> bool(jnp.array_equal(updates["w"], tx.update(grads, state, params)[0]["w"]))  # the next step draws anew
      False
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- DCASGD
DCASGDState = NamedTuple(
    "DCASGDState",
    [
        ("count", jax.Array),
        ("mom", optax.Updates | None),  # momentum buffer; None when momentum == 0
        ("prev_weight", optax.Params),  # the weight before the previous update (initially the initial weight)
        ("master", optax.Params | None),
    ],
)
DCASGDState.__doc__ = """State of :func:`dcasgd`."""


def dcasgd_step(g, w, s, hp, opts):
    """``D = G + lamda * G^2 * (w - w_prev)``, then SGD-momentum on ``D``."""
    mom, prev = s
    G = preprocess(g, w, hp)
    D = G + hp["lamda"] * G * G * (w - prev)
    if mom is None:
        return -hp["lr"] * D, (None, w)
    mom = hp["momentum"] * mom - hp["lr"] * D
    return mom, (mom, w)


DCASGD_RULE = Rule(
    name="dcasgd",
    state_cls=DCASGDState,
    fields=("mom", "prev_weight"),
    # a copy: the state must not alias the parameter (both are donated in a jitted training step)
    init=lambda w, dtype, opts: (_mom_init(w, dtype, opts)[0], jnp.array(w, dtype=dtype, copy=True)),
    step=dcasgd_step,
    hyper=("momentum", "lamda"),
    checks={"momentum": _UNIT, "lamda": {"low": 0.0}},
    prepare=_has_momentum,
)


@optimizer(DCASGD_RULE)
def dcasgd(
    learning_rate: ScalarOrSchedule | None = 0.1,
    momentum: ScalarOrSchedule = 0.0,
    lamda: ScalarOrSchedule = 0.04,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Delay-compensated asynchronous SGD (``mxnet.optimizer.DCASGD``)::

        G      = clip(rescale_grad * g) + wd * w
        D      = G + lamda * G * G * (w - w_prev)
        mom    = momentum * mom - lr * D ;  w_prev = w ;  w = w + mom     (w = w - lr * D without momentum)

    Zheng et al., "Asynchronous Stochastic Gradient Descent with Delay Compensation" (ICML 2017).

    Args:
      learning_rate: step size (default 0.1).
      momentum: momentum coefficient in ``[0, 1]`` (default 0).
      lamda: delay-compensation strength, ``>= 0`` (default 0.04).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.dcasgd(learning_rate=0.1, momentum=0.9, lamda=0.04)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.95 -1.95  2.9 ]
      >>> print(np.asarray(state.prev_weight["w"]).round(4))
      [ 1. -2.  3.]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- LBSGD (MXNet 1.x)
LBSGDState = NamedTuple(
    "LBSGDState",
    [
        ("count", jax.Array),
        ("mom", optax.Updates | None),  # momentum buffer; None when momentum == 0
        ("cum_grad", optax.Updates),  # gradients accumulated since the last macro-batch update
        (
            "num_cums",
            optax.Updates,
        ),  # per-parameter int32 count of accumulated micro-batches (MXNet's num_cums)
        ("master", optax.Params | None),
    ],
)
LBSGDState.__doc__ = """State of :func:`lbsgd`."""


_WARMUP = ("linear", "power2", "sqrt", "lars")


def _lbsgd_init(w, dtype, opts):
    return (_mom_init(w, dtype, opts)[0], jnp.zeros_like(w, dtype), jnp.zeros([], jnp.int32))


def lbsgd_step(g, w, s, hp, opts):
    """Accumulate ``batch_scale`` gradients, then one SGD step with a warm-up multiplied learning rate."""
    mom, cum, n = s
    B = hp["batch_scale"]  # float, like every resolved hyperparameter
    first = n <= 0
    n = jnp.where(first, hp["init_updates"].astype(jnp.int32) + 1, n + 1)
    cum = jnp.where(first, g, cum + g)
    fire = (n % B.astype(jnp.int32)) == 0
    gbar = cum / B
    if opts["warmup_strategy"] == "lars":
        w2, g2 = jnp.sum(w * w), jnp.sum(gbar * gbar)
        wd = 0.0 if is_static_zero(hp["wd"]) else hp["wd"]
        mult = jnp.clip(jnp.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01, 100.0)
    else:
        nup, nw, maxmult = n.astype(g.dtype), hp["nwup"], B
        # The ramp is used only where nw > 1: it divides by max(nw, 1), so no x / 0 (nwup = 0 when
        # warmup_epochs = 0) sits in the branch the where below leaves out (differences #20).
        nws = jnp.maximum(nw, 1.0)
        ramp = {
            "linear": lambda: 1.0 + (maxmult - 1) * nup / nws,
            "power2": lambda: 1.0 + (maxmult - 1) * (nup * nup) / (nws * nws),
            "sqrt": lambda: 1.0 + (maxmult - 1) * jnp.sqrt(nup / nws),
        }[opts["warmup_strategy"]]()
        mult = jnp.where(nup >= nw, maxmult, jnp.where(nw <= 1, 1.0, ramp))
    lr = hp["lr"] * mult
    G = preprocess(gbar, w, hp)
    if mom is None:
        delta = -lr * G
        new_mom = None
    else:
        new_mom = hp["momentum"] * mom - lr * G
        delta = new_mom
        new_mom = jnp.where(fire, new_mom, mom)
    delta = jnp.where(fire, delta, jnp.zeros_like(delta))
    cum = jnp.where(fire, jnp.zeros_like(cum), cum)
    return delta, (new_mom, cum, n)


def _lbsgd_prepare(args: dict) -> dict:
    return {"has_mom": not is_static_zero(args["momentum"]), "warmup_strategy": args["warmup_strategy"]}


def _lbsgd_validate(owner: str, args: dict) -> None:
    check_choice(owner, "warmup_strategy", args["warmup_strategy"], _WARMUP)
    for name, low in (("batch_scale", 1), ("warmup_epochs", 0), ("updates_per_epoch", 1), ("begin_epoch", 0)):
        check_int(owner, name, args[name], low=low)


LBSGD_RULE = Rule(
    name="lbsgd",
    state_cls=LBSGDState,
    fields=("mom", "cum_grad", "num_cums"),
    init=_lbsgd_init,
    step=lbsgd_step,
    hyper=("momentum", "batch_scale", "init_updates", "nwup"),
    checks={"momentum": _UNIT},
    prepare=_lbsgd_prepare,
    validate=_lbsgd_validate,
    lr_before_count=True,
    derive=lambda a: {
        "init_updates": a["begin_epoch"] * a["updates_per_epoch"],
        "nwup": a["warmup_epochs"] * a["updates_per_epoch"],
    },
    one_pass=True,
)


@optimizer(LBSGD_RULE)
def lbsgd(
    learning_rate: ScalarOrSchedule | None = 0.01,
    momentum: ScalarOrSchedule = 0.0,
    warmup_strategy: str = "linear",
    warmup_epochs: int = 5,
    batch_scale: int = 1,
    updates_per_epoch: int = 32,
    begin_epoch: int = 0,
    num_epochs: int = 60,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """Large-batch SGD emulation of MXNet 1.x (``mxnet.optimizer.LBSGD``, removed in MXNet 2.0)::

        cum += g ; n += 1                                   (the first call starts at n = begin_epoch * upe + 1)
        if n % batch_scale == 0:
            gbar = cum / batch_scale ; cum = 0
            mult = warm-up factor: linear 1 + (B-1) n/N, power2 1 + (B-1) n^2/N^2, sqrt 1 + (B-1) sqrt(n/N)
                   (B once n >= N = warmup_epochs * updates_per_epoch), or for 'lars'
                   clip(sqrt(|w|^2 / (|gbar|^2 + wd |w|^2 + 1e-18)), 0.01, 100)
            SGD(-momentum) step on gbar with learning rate lr * mult
        else: no change

    The learning rate is looked up before the update count is incremented (as in MXNet 1.x).
    Goyal et al., "Accurate, Large Minibatch SGD" (2017); You et al., "Large Batch Training of
    Convolutional Networks" (2017).

    Args:
      learning_rate: step size (1.x default 0.01).
      momentum: momentum coefficient in ``[0, 1]``.
      warmup_strategy: one of ``'linear'``, ``'power2'``, ``'sqrt'``, ``'lars'``.
      warmup_epochs, updates_per_epoch: the warm-up lasts ``warmup_epochs * updates_per_epoch`` updates.
      batch_scale: number of gradients accumulated per update (``>= 1``).
      begin_epoch: starting epoch (the accumulation counter starts at ``begin_epoch * updates_per_epoch``).
      num_epochs: accepted and unused, as in MXNet.

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.lbsgd(learning_rate=0.1, momentum=0.9)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.95 -1.95  2.9 ]
      >>> print(state.num_cums["w"])
      1
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


# --------------------------------------------------------------------------- Test
TestState = NamedTuple(
    "TestState",
    [
        ("count", jax.Array),
        ("master", optax.Params | None),
    ],
)
TestState.__doc__ = (
    """State of :func:`test` (MXNet's ``Test`` optimizer keeps an unused buffer; here none)."""
)


def test_step(g, w, s, hp, opts):
    """``w = w - lr * (rescale_grad * g + wd * w)`` (no clipping)."""
    return -hp["lr"] * preprocess(g, w, hp, clip=False), ()


TEST_RULE = Rule(
    name="test",
    state_cls=TestState,
    fields=(),
    init=lambda w, dtype, opts: (),
    step=test_step,
    weight_only_for_decay=True,
)


@optimizer(TEST_RULE)
def test(
    learning_rate: ScalarOrSchedule | None = 0.01,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """MXNet 2.0's ``Test`` optimizer, a plain gradient step used in MXNet's own tests::

        w = w - lr * (rescale_grad * g + wd * w)          (clip_gradient is ignored, as in MXNet)

    MXNet 1.x's ``Test`` computed ``w += rescale_grad * g``; mxopt_jax follows 2.0 (docs/differences.md #11).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.test(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.95 -1.95  2.9 ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


vars(test)["__test__"] = False  # not a pytest test function (a function attribute the Constructor type lacks)
