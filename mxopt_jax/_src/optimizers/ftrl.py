"""Follow-the-regularized-leader family: Ftrl (FTRL-Proximal) and FTML."""

from __future__ import annotations

from typing import NamedTuple, Unpack

import jax
import jax.numpy as jnp
import optax

from ..hyperparams import ScalarOrSchedule
from ..numerics import div0, one_minus_pow, preprocess, rate_or_one, static_positive
from ..rule import Rule
from ..signature import BaseKeywords, optimizer
from ..validation import is_static_zero

FtrlState = NamedTuple(
    "FtrlState",
    [
        ("count", jax.Array),
        ("z", optax.Updates),  # accumulated adjusted gradients
        ("n", optax.Updates),  # accumulated squared gradients
        ("master", optax.Params | None),
    ],
)
FtrlState.__doc__ = """State of :func:`ftrl` (float32)."""


def ftrl_step(g, w, s, hp, opts):
    """FTRL-Proximal: the new weight is a closed form of ``(z, n)``.

    At a learning rate of 0 the step is skipped: ``w``, ``z`` and ``n`` are kept (``z`` and the denominator are
    in units of ``1 / lr``; docs/differences.md #20). With ``beta == 0``, ``wd == 0`` and no non-zero gradient
    yet, the denominator is 0 and so is ``z``: the weight is 0 (MXNet: NaN).

    With ``hp["lr_prev"]`` (``learning_rate`` is a schedule) the step is FTRL-Proximal's for a per-step rate
    (:func:`_ftrl_step_scheduled`); otherwise MXNet's formula, which assumes the rate constant.
    """
    z, n = s
    l1 = hp["lamda1"]
    skip, lr = rate_or_one(hp["lr"])
    G = preprocess(g, w, hp, decay=False)
    n_new = n + G * G
    if hp.get("lr_prev") is not None:
        new_w, z_new = _ftrl_step_scheduled(G, w, z, n, n_new, lr, hp)
    else:
        sigma = (jnp.sqrt(n_new) - jnp.sqrt(n)) / lr
        z_new = z + G - sigma * w
        denom = (hp["beta"] + jnp.sqrt(n_new)) / lr
        if not is_static_zero(hp["wd"]):
            denom = denom + hp["wd"]
        new_w = -jnp.sign(z_new) * div0(jnp.maximum(jnp.abs(z_new) - l1, 0), denom)
    return jnp.where(skip, w, new_w), (jnp.where(skip, z, z_new), jnp.where(skip, n, n_new))


def _ftrl_step_scheduled(G, w, z, n, n_new, lr, hp):
    """FTRL-Proximal with a per-step rate: ``(new_w, new_z)`` (``lr`` is the current rate, never 0 here).

    With ``D_t = (beta + sqrt(n_t)) / lr_t + wd`` (``1 / eta_t`` of McMahan et al. plus the L2 term), the
    proximal strengths telescope: ``sigma_t = (beta + sqrt(n_t)) / lr_t - (beta + sqrt(n_{t-1})) / lr_{t-1}``,
    ``z_t = z_{t-1} + G - sigma_t w_t`` and ``w_{t+1} = -sign(z_t) max(|z_t| - lamda1, 0) / D_t``. For a
    weight that the state gives (``w_t = -sign(z) max(|z| - lamda1, 0) / D_{t-1}``) this is, outside the L1
    dead zone and with no change of sign, ``w_{t+1} = w_t - G / D_t``: the step of the current rate (MXNet's
    formula, ``sigma_t = (sqrt(n_t) - sqrt(n_{t-1})) / lr_t``, scales ``w_t`` by ``D_{t-1}' / D_t`` with
    ``D_{t-1}'`` the previous denominator at the current rate; with a constant rate the two are equal).

    Computed without the ``1 / lr_{t-1}``-sized terms (``z_{t-1}`` and ``sigma_t w_t`` cancel to the size of
    ``G``, which float32 loses when the rate grows by orders of magnitude): the weight the state gives,
    ``w_s``, and the drift ``r = w_t - w_s`` (taken as 0 within a few ulps, as FTML's), then
    ``w' = w_t - (G + D_{t-1} r) / D_t``, ``c = sign(z) lamda1`` outside the dead zone (``|z| > lamda1``),
    ``z`` inside it (where ``w_s = 0``), ``z_t = c - D_t w'`` (exactly ``z_{t-1} + G - sigma_t w_t``) and
    ``w_{t+1} = w' - (c - sign(z_t) lamda1) / D_t`` where ``|z_t| > lamda1``, else 0.

    The previous rate is ``lr_prev`` except where it cannot describe the state: where ``n_{t-1} = 0`` (no
    gradient yet: the first step, or a row a lazy update never touched) ``lr_{t-1} := lr_t``, MXNet's first
    step (``sigma = sqrt(n_t) / lr_t``, so a constant schedule equals a constant rate); where
    ``lr_{t-1} = 0`` and ``n_{t-1} > 0`` the step at rate 0 left the state of an earlier rate, unknown here,
    and the weight is taken as the one the state gives (``r := 0``: the step of the current rate, exact
    unless the weights were changed outside the optimizer). The denominators are made safe (``lr_t`` for a
    0 ``lr_{t-1}``, 0 / 0 := 0), so no ``inf`` or NaN appears, in the value or its gradient.
    """
    l1, beta, wd = hp["lamda1"], hp["beta"], hp["wd"]
    prev = hp["lr_prev"]
    prev_zero = prev == 0
    fresh = n == 0
    prev_rate = jnp.where(prev_zero | fresh, lr, prev)
    sq = jnp.sqrt(n)
    d_old = (beta + sq) / prev_rate
    d_new = (beta + jnp.sqrt(n_new)) / lr
    if not is_static_zero(wd):
        d_old = d_old + wd
        d_new = d_new + wd
    outside = jnp.abs(z) > l1
    w_state = -jnp.sign(z) * div0(jnp.maximum(jnp.abs(z) - l1, 0), d_old)
    r = w - w_state
    tol = 8 * jnp.finfo(w.dtype).eps * jnp.maximum(jnp.abs(w), jnp.abs(w_state))
    r = jnp.where((jnp.abs(r) <= tol) | (prev_zero & ~fresh), jnp.zeros_like(r), r)
    w_dir = w - div0(G + d_old * r, d_new)
    c = jnp.where(outside, jnp.sign(z) * l1, z)
    z_new = c - d_new * w_dir
    s_new = jnp.sign(z_new)
    new_w = jnp.where(jnp.abs(z_new) > l1, w_dir - div0(c - s_new * l1, d_new), jnp.zeros_like(w))
    return new_w, z_new


FTRL_RULE = Rule(
    name="ftrl",
    state_cls=FtrlState,
    fields=("z", "n"),
    init=lambda w, dtype, opts: (jnp.zeros_like(w, dtype), jnp.zeros_like(w, dtype)),
    step=ftrl_step,
    hyper=("lamda1", "beta"),
    checks={"lamda1": {"low": 0.0}, "beta": {"low": 0.0}},
    fp32_state=True,
    returns_weight=True,
    static=("lazy_update",),
    sparse="lazy_update",
    reads_lr_prev=True,
)


@optimizer(FTRL_RULE)
def ftrl(
    learning_rate: ScalarOrSchedule | None = 0.1,
    lamda1: ScalarOrSchedule = 0.01,
    beta: ScalarOrSchedule = 1.0,
    *,
    lazy_update: bool = False,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """FTRL-Proximal (``mxnet.optimizer.Ftrl``)::

        G     = clip(rescale_grad * g)                      (no decay in the gradient)
        sigma = (sqrt(n + G * G) - sqrt(n)) / lr
        z     = z + G - sigma * w
        n     = n + G * G
        w     = -sign(z) * max(|z| - lamda1, 0) / ((beta + sqrt(n)) / lr + wd)

    McMahan et al., "Ad Click Prediction: a View from the Trenches" (KDD 2013). Every weight is recomputed
    from ``(z, n)`` (as MXNet's dense path: weights that never received a gradient become 0).

    Args:
      learning_rate: ``alpha`` of the paper (default 0.1). A constant (or traced, under
        ``optax.inject_hyperparams``) rate and ``lr_scheduler`` follow MXNet's formula exactly. A schedule
        ``count -> rate`` follows FTRL-Proximal's per-step rate, ``sigma = (beta + sqrt(n_t)) / lr_t -
        (beta + sqrt(n_{t-1})) / lr_{t-1}`` with ``lr_{t-1} = schedule(count - 1)`` (the current rate where no
        gradient has arrived yet): each step is the step of the current rate, where MXNet's formula scales the
        weights by the ratio of successive rates (a warmup grew them). A constant schedule equals the
        constant rate. A step at rate 0 keeps the weight, ``z`` and ``n`` (docs/differences.md #20).
      lamda1: L1 regularization strength, ``>= 0`` (default 0.01).
      beta: ``>= 0`` (default 1.0).
      lazy_update: for a :class:`~mxopt_jax.sparse.RowSparse` gradient, update only the listed rows of
        ``w``, ``z`` and ``n`` (what MXNet does for a ``row_sparse`` weight); ``False`` (MXNet's dense weight)
        densifies the gradient and recomputes every weight. No effect on dense gradients.

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.ftrl(learning_rate=0.1, lamda1=0.6)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.26   -0.5933  1.42  ]
      >>> print(np.asarray(state.z["w"]).round(4))
      [ -4.5   9.5 -29. ]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration


FTMLState = NamedTuple(
    "FTMLState",
    [
        ("count", jax.Array),
        ("d", optax.Updates),  # d_{t-1}, the previous step's adaptive denominator (d_0 = 0)
        ("v", optax.Updates),  # EMA of G^2
        ("z", optax.Updates),  # FTML's accumulated linear term
        ("master", optax.Params | None),
    ],
)
FTMLState.__doc__ = """State of :func:`ftml`."""


def _drift(w, z, d):
    """``z + d * w``: 0 in exact arithmetic when ``w`` is the weight the last step returned (``w = -z / d``).

    Computed as ``d * (w - (-z / d))``, and 0 where ``w`` differs from ``-z / d`` by no more than the rounding
    of the stored state (a few ulps of the weight); 0 too on a fresh state (``d = z = 0``). A weight changed
    by more than that between two steps keeps MXNet's pull back towards ``-z / d``.
    """
    w_state = -z / jnp.where(d == 0, jnp.ones_like(d), d)
    r = w - w_state
    tol = 8 * jnp.finfo(w.dtype).eps * jnp.maximum(jnp.abs(w), jnp.abs(w_state))
    return d * jnp.where(jnp.abs(r) <= tol, jnp.zeros_like(r), r)


def ftml_step(g, w, s, hp, opts):
    """FTML: ``w = -z / d_t``, computed as ``w - ((1 - beta1) G + beta1 (z + d_{t-1} w)) / d_t``.

    The two are equal in exact arithmetic (expand ``z_t``). MXNet's form divides a ``z_t`` of the size of
    ``d_t * w`` by ``d_t``: when the rate grows by orders of magnitude between steps (a warmup from near 0),
    ``b1 * d_{t-1}`` is far larger than ``d_t`` and the float32 rounding of ``z`` and ``d_{t-1} w`` (~1e-7 of
    ``d_{t-1} w``) comes out multiplied by ``d_{t-1} / d_t``, as a step of either sign. Here the gradient term
    is divided directly and the drift ``z + d_{t-1} w`` (0 up to rounding on every trajectory, see
    :func:`_drift`) is taken as exactly 0 when it is rounding, so a step never goes along the gradient; ``z``
    is stored as ``-d_t * w_t``, its exact-arithmetic value.

    At a learning rate of 0 the weight, ``d`` and ``z`` are kept (they are in units of ``1 / lr``: the limit is
    an infinite ``d_t``) and ``v`` is updated as at any rate (docs/differences.md #20).
    """
    d, v, z = s
    b1, b2, t = hp["beta1"], hp["beta2"], hp["t"]
    skip, lr = rate_or_one(hp["lr"])
    G = preprocess(g, w, hp)
    v = b2 * v + (1 - b2) * G * G
    d_t = one_minus_pow(b1, t) / lr * (jnp.sqrt(v / one_minus_pow(b2, t)) + hp["epsilon"])
    new_w = w - div0((1 - b1) * G + b1 * _drift(w, z, d), d_t, static_positive(hp, "epsilon"))
    z_t = -d_t * new_w
    return jnp.where(skip, w, new_w), (jnp.where(skip, d, d_t), v, jnp.where(skip, z, z_t))


FTML_RULE = Rule(
    name="ftml",
    state_cls=FTMLState,
    fields=("d", "v", "z"),
    init=lambda w, dtype, opts: tuple(jnp.zeros_like(w, dtype) for _ in range(3)),
    step=ftml_step,
    hyper=("beta1", "beta2", "epsilon"),
    checks={
        "beta1": {"low": 0.0, "high": 1.0, "high_open": True},
        "beta2": {"low": 0.0, "high": 1.0, "high_open": True},
        "epsilon": {"low": 0.0, "low_open": True},
    },
    returns_weight=True,
)


@optimizer(FTML_RULE)
def ftml(
    learning_rate: ScalarOrSchedule | None = 0.0025,
    beta1: ScalarOrSchedule = 0.6,
    beta2: ScalarOrSchedule = 0.999,
    epsilon: ScalarOrSchedule = 1e-8,
    **base: Unpack[BaseKeywords],
) -> optax.GradientTransformation:
    """FTML, Follow the Moving Leader (``mxnet.optimizer.FTML``)::

        G   = clip(rescale_grad * g) + wd * w
        v   = beta2 * v + (1 - beta2) * G * G
        d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
        z   = beta1 * z + (1 - beta1) * G - (d_t - beta1 * d_{t-1}) * w
        w   = -z / d_t

    Zheng & Kwok, "Follow the Moving Leader in Deep Learning" (ICML 2017).

    Args:
      learning_rate: step size (MXNet 2.0 default 0.0025). A step at rate 0 keeps the weight, ``d`` and ``z``
        and updates ``v`` (docs/differences.md #20).
      beta1: in ``[0, 1)``, generally close to 0.5 (default 0.6).
      beta2: in ``[0, 1)``, generally close to 1 (default 0.999).
      epsilon: ``> 0`` (default 1e-8).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, optax, mxopt_jax
      >>> params = {"w": jnp.array([1.0, -2.0, 3.0])}
      >>> grads = {"w": jnp.array([0.5, -0.5, 1.0])}
      >>> tx = mxopt_jax.ftml(learning_rate=0.1)
      >>> state = tx.init(params)
      >>> updates, state = tx.update(grads, state, params)
      >>> params = optax.apply_updates(params, updates)
      >>> print(np.asarray(params["w"]).round(4))
      [ 0.9 -1.9  2.9]
      >>> print(np.asarray(state.d["w"]).round(4))
      [2. 2. 4.]
    """
    raise NotImplementedError  # never run: @optimizer makes the constructor from the declaration
