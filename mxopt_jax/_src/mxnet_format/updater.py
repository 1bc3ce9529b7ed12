"""An MXNet ``.states`` file resumed as an :class:`mxopt_jax.Updater`: the optimizer rebuilt from the pickled
one (hyperparameters, scheduler at its position, counts, multipliers), every index's state converted.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import facade
from ..facade.updater import SHAPE_COST, ShapeCache
from ..validation import warn
from .allowlist import MXNetObject, is_unknown
from .attributes import FLOAT32_MAX, check_float32, check_optimizer, file_errors, summary
from .files import source
from .limits import Budget, check_max_bytes
from .scheduler_state import file_scheduler
from .states import (
    _ALIASES_19,
    _MASTER_LAST_19,
    _REGISTRY_NAME,
    _convert_state,
    _Mismatch,
    _weight_shape,
    distinct_shapes,
    to_host,
    weight_dtype,
)
from .unpickler import _read_states

#: What each state index is counted at, besides its arrays: the work and the JAX arrays it becomes (bytes).
STATE_COST = 16 * 2**10


def _warn(msg: str) -> None:
    warn(msg, UserWarning)


def _differences(name: str, v1: bool, o: Any, n_states: int) -> list[str]:
    """The documented ways the resumed run departs from what MXNet would compute next."""
    out = []
    wd = float(getattr(o, "wd", 0.0) or 0.0)
    clip = getattr(o, "clip_gradient", None)
    clip_and_wd = clip is not None and wd != 0.0
    if v1:
        if name == "nag" and wd != 0 and getattr(o, "momentum", 0) != 0:
            out.append("MXNet 1.9.1 NAG updates the momentum with the already-updated weight when wd != 0")
        if name == "dcasgd" and wd != 0 and getattr(o, "lamda", 0) != 0:
            out.append("MXNet 1.9.1 DCASGD leaves wd*w out of its squared-gradient term (wd != 0)")
        if name == "adagrad":
            out.append("MXNet 1.9.1 AdaGrad puts eps inside the square root and applies wd decoupled")
        if name == "groupadagrad":
            out.append("MXNet 1.9.1 GroupAdaGrad puts eps inside the square root")
        if name == "adadelta":
            out.append(
                "MXNet 1.9.1 AdaDelta has no learning rate (continuing with learning_rate=1.0, no scheduler)"
                + (" and applies wd decoupled and unscaled" if wd != 0 else "")
            )
        if name in ("adam", "adamax", "nadam", "ftml", "rmsprop") and clip_and_wd:
            out.append(f"MXNet 1.9.1 {name} adds wd*w before clipping the gradient")
        if name == "adamax":
            out.append(
                "MXNet 1.9.1 Adamax has no epsilon (continuing with epsilon=1e-8, MXNet 2.0's default)"
            )
        if name == "rmsprop" and not getattr(o, "centered", False):
            out.append("MXNet 1.9.1 non-centered RMSProp puts epsilon inside the square root")
        if name == "lars" and getattr(o, "momentum_correction", False) and getattr(o, "lr_scheduler", None):
            out.append("MXNet 1.9.1 LARS rescales its momentum when the scheduled learning rate changes")
        if name == "test":
            out.append("MXNet 1.9.1's Test optimizer computes w += rescale_grad * grad")
    else:
        fused = getattr(o, "use_fused_step", True)
        agg = getattr(o, "aggregate_num", 1) or 1
        if name == "lamb" and fused and agg <= 1:
            out.append("MXNet 2.0's non-aggregated fused LAMB counts every update twice (mxopt_jax: once)")
        if name in ("adamw", "lans") and not fused:
            out.append(f"MXNet 2.0's {name} step (use_fused_step=False) path differs from its fused math")
        if name == "lars" and agg > 1 and getattr(o, "multi_precision", False):
            out.append("MXNet 2.0's aggregated multi-precision LARS pairs states with the wrong parameters")
        if name == "adabelief" and clip_and_wd:
            out.append("MXNet 2.0 AdaBelief adds wd*w before clipping the gradient")
    if name == "nadam" and n_states > 1:
        out.append(
            "MXNet's Nadam shares one momentum schedule (m_schedule) across all parameters; mxopt_jax keeps "
            "one per parameter (each starts from the file's m_schedule)"
        )
    return out


def load_updater(
    path_or_bytes: str | os.PathLike | bytes,
    optimizer: Any = None,
    *,
    param_dict: Mapping[Any, Any] | None = None,
    mxnet_version: str | None = None,
    lr_scheduler: Any = None,
    max_bytes: int | None = None,
) -> Any:
    """Resume an MXNet ``.states`` file as an :class:`mxopt_jax.Updater`.

    Reads what ``Updater.get_states(dump_optimizer=True)`` or a Gluon ``Trainer.save_states`` wrote (MXNet
    1.9.1 or 2.0.0b1) through mxopt_jax's restricted pickle reader (see :func:`read_states`: nothing in the file
    runs, memory stays within ``max_bytes``) and rebuilds the optimizer
    with ``mxopt_jax.create``: its class and every hyperparameter, ``lr``, ``wd``, ``rescale_grad``,
    ``clip_gradient``, ``lr_mult`` / ``wd_mult`` / ``idx2name``, ``begin_num_update``, ``num_update``, the
    per-index and per-device update counts, ``aggregate_num`` / ``use_fused_step``, the learning-rate
    scheduler (an :mod:`mxopt_jax.lr_scheduler` object at the same position) and Nadam's ``m_schedule``;
    every index's state is converted to mxopt_jax's layout (``(float32 master, fields)`` for float16 weights
    saved with ``multi_precision``). The next ``updater(i, grad, weight)`` calls continue as MXNet would.

    Gluon ``Trainer``: ``trainer.save_states`` writes exactly this file (its first device's
    ``Updater.get_states(dump_optimizer=True)``, or the kvstore's with ``update_on_kvstore``), keyed by the
    Trainer's indices (each parameter's position in ``collect_params()`` sorted by name: MXNet's ``Trainer``
    sorts the keys; in MXNet 2.0 they are the ``.params`` names, in 1.x the prefixed ``dense0_weight`` names),
    and holding the ``rescale_grad`` of its last ``step`` (``1 / batch_size``). MXNet's ``load_states`` then
    re-attaches ``param_dict = {index: Parameter}``; a Parameter's ``lr_mult`` / ``wd_mult`` take precedence
    over the optimizer's dicts (they are not in the file). To do the same, pass ``param_dict`` (index -> any
    object with ``lr_mult`` and ``wd_mult``; needed only if you changed a Parameter's multipliers) and, like
    ``Trainer.step(batch_size)``, set ``updater.optimizer.rescale_grad = 1 / batch_size`` if it changes.
    The weights: ``load_params`` of the matching ``.params`` file, ordered by those indices.

    The file's indices are kept in ``updater.layout`` (with the shape of each index's weight, and its dtype
    where the state says it: MXNet makes most states in their weight's dtype): a call with an index the file
    has no state for, or a weight / gradient whose shape or dtype disagrees with the stored state, raises
    ``ValueError`` before anything changes (a Trainer's parameters without gradient, such as
    BatchNorm's running statistics, have no state: MXNet never updates them). :func:`load_trainer` pairs
    the indices with the parameter names and takes gradients by name.

    Args:
      path_or_bytes: the ``.states`` file or its bytes.
      optimizer: for a ``dump_optimizer=False`` file (states only), the :class:`mxopt_jax.Optimizer` to use,
        configured as the MXNet one was. As MXNet's ``set_states``, its own counts and scheduler are kept
        (they are not in such a file). For a file whose optimizer is a class of your own (a subclass of an
        MXNet optimizer, which is never constructed), the optimizer to continue with, configured as your
        class computes: the states, update counts, ``num_update``, multipliers, ``idx2name`` and
        ``rescale_grad`` load from the file (and its scheduler, when it is one of MXNet's). Ignored, with a
        warning, when the file holds one of MXNet's optimizers (MXNet replaces the optimizer by the file's).
      lr_scheduler: the learning-rate scheduler to continue with instead of the file's (required when the
        file's is a class of your own, which is never constructed): an :mod:`mxopt_jax.lr_scheduler` object
        or any callable ``num_update -> learning rate``, at the file's position (it is called with the
        restored ``num_update``).
      param_dict: index -> object with ``lr_mult`` / ``wd_mult`` (Gluon Parameters), as MXNet's
        ``Trainer.load_states`` re-attaches it.
      mxnet_version: ``"1"`` or ``"2"`` to choose the state layout of a ``dump_optimizer=False`` file (1.9.1
        orders multi-precision SGD/NAG/LARS states and RMSProp states differently); default: read from the
        pickled optimizer's module, else MXNet 2.0.
      max_bytes: the most memory reading the file and building its states may take (bytes); default
        ``max(64 MiB, 32 x the file's size)``, each state index counted at 16 KiB besides its arrays and each
        distinct shape of the state arrays at 64 KiB (see :func:`read_states`).

    Returns:
      an :class:`mxopt_jax.Updater` with ``.optimizer`` and ``.states`` restored.

    Raises:
      ValueError: the file is not a readable/safe ``.states`` pickle, an attribute or a state does not fit the
        optimizer or is not what MXNet writes (a scheduler's position or a rate its schedule never holds,
        update counts, a state's dtypes; a hyperparameter or multiplier past float32's range, which MXNet's
        float32 kernels would make infinite; the message names the file and the attribute or index), the
        optimizer is unknown, or ``optimizer`` is missing for a states-only file.
      TypeError: ``optimizer`` is not an mxopt_jax optimizer where one is needed.

    Warns:
      UserWarning: when the run cannot continue with MXNet's exact math, naming the difference: a 1.9.1
        optimizer whose update differs from MXNet 2.0 for the stored hyperparameters (the run continues with
        MXNet 2.0 math), MXNet 2.0 paths mxopt_jax does not reproduce (LAMB's non-aggregated double count,
        ...), and Nadam's shared momentum schedule; states whose index has no update count (a states-only file
        with a fresh optimizer: the count restarts at ``begin_num_update``, as MXNet counts); a
        ``clip_gradient`` past float32's range (infinite in MXNet's kernels: no clipping, continued without).

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.mxnet_format import load_params, load_updater
      >>> d = "tests/golden/mxnet_ckpt/"
      >>> params = load_params(d + "mx20_adam.params")
      >>> weights = [jnp.asarray(params[n]) for n in sorted(params)]   # a 2.0 Trainer's index order
      >>> updater = load_updater(d + "mx20_adam.states")
      >>> opt = updater.optimizer
      >>> type(opt).__name__, opt.num_update, opt.beta2, type(opt.lr_scheduler).__name__
      ('Adam', 3, 0.999, 'MultiFactorScheduler')
      >>> weights = updater([0, 1, 2, 3], [jnp.ones_like(w) for w in weights], weights)
      >>> opt.num_update, opt.index_update_counts
      (4, {0: 4, 1: 4, 2: 4, 3: 4})
    """

    cap = check_max_bytes(max_bytes)
    data, where = source(path_or_bytes, "states", cap)
    budget = Budget(where, len(data), cap)  # reading the file and building its states: one budget
    states, mxo = _read_states(data, where, cap, budget)
    return resume(
        states,
        mxo,
        where,
        budget,
        optimizer,
        param_dict=param_dict,
        mxnet_version=mxnet_version,
        lr_scheduler=lr_scheduler,
    )


def resume(
    states: dict,
    mxo: MXNetObject | None,
    where: str,
    budget: Budget,
    optimizer: Any,
    *,
    param_dict: Mapping[Any, Any] | None,
    mxnet_version: str | None,
    lr_scheduler: Any,
) -> Any:
    """The :class:`mxopt_jax.Updater` of a read ``.states`` file (see :func:`load_updater`)."""
    if mxo is None or is_unknown(mxo):
        if optimizer is None:
            raise ValueError(_needs_optimizer(where, mxo))
        if not isinstance(optimizer, facade.Optimizer):
            raise TypeError(f"optimizer must be an mxopt_jax Optimizer, got {type(optimizer).__name__}")
    params = None if param_dict is None else dict(param_dict)
    shapes = distinct_shapes(states)
    what = f"converting {len(states)} states ({shapes} distinct shapes) to JAX arrays"
    budget.check(len(states) * STATE_COST + shapes * SHAPE_COST, what)
    budget.charge(len(states) * STATE_COST + shapes * SHAPE_COST, what)
    # MXNet 2.0's base class sets use_fused_step, 1.x has no such attribute
    if mxnet_version is None:
        v1 = mxo is not None and not hasattr(mxo, "use_fused_step")
    else:
        v1 = str(mxnet_version).startswith("1")
    diffs: list[str] = []
    with file_errors(where):
        if mxo is not None:
            check_optimizer(mxo, where)
        if mxo is None:
            opt, name, holder, mp = _states_only(optimizer, where, mxnet_version)
            sched = lr_scheduler
        elif is_unknown(mxo):
            opt, name, holder = optimizer, _rule_name(optimizer), mxo
            mp = bool(getattr(mxo, "multi_precision", opt.multi_precision))
            sched = file_scheduler(vars(mxo), where, lr_scheduler)  # checked before the optimizer changes
        else:
            if optimizer is not None:
                _warn(f"{where} holds the optimizer; it replaces the one passed (as MXNet's set_states does)")
            if mxo.mx_class not in _REGISTRY_NAME or mxo.mx_class == "Optimizer":
                raise ValueError(f"{where}: unsupported MXNet optimizer {mxo.mx_module}.{mxo.mx_class}")
            name = _REGISTRY_NAME[mxo.mx_class]
            opt = _build_optimizer(name, v1, mxo, where, lr_scheduler)
            holder, mp = mxo, bool(getattr(mxo, "multi_precision", False))
            diffs = _differences(name, v1, mxo, len(states))
        new_states, layout = _convert_states(
            states, opt, name, v1, holder, mp, where, budget, mxnet_dtypes=not is_unknown(mxo)
        )
        # the states fit: now a passed optimizer changes
        if mxo is None and sched is not None:
            opt.lr_scheduler = sched
        elif mxo is not None and is_unknown(mxo):
            _restore_bookkeeping(opt, mxo, sched, where)
    if params is not None:
        opt.param_dict = params
    updater = facade.Updater(opt)
    updater.states = new_states
    updater.states_synced = dict.fromkeys(new_states, False)
    updater.layout = layout
    updater.order_rule = _ORDER_RULE
    for d in diffs:
        _warn(f"{where}: resumed with MXNet 2.0 / mxopt_jax math; {d}.")
    updater._warn_uncounted(f"load_updater: {where}")
    return updater


def _needs_optimizer(where: str, mxo: MXNetObject | None) -> str:
    if mxo is None:
        return (
            f"{where} holds only the states (saved with dump_optimizer=False): pass the optimizer, "
            "e.g. load_updater(path, optimizer=mxopt_jax.create('sgd', learning_rate=..., momentum=...))"
        )
    return (
        f"{where}: the file's optimizer is {mxo.mx_module}.{mxo.mx_class}, a class of your own (not one of "
        "MXNet's); it is never constructed. Pass the optimizer to continue with, configured as your "
        "class computes, e.g. load_updater(path, optimizer=mxopt_jax.create('sgd', learning_rate=..., "
        "momentum=...)): the states, update counts, multipliers and rescale_grad still load from the "
        f"file (its attributes: {summary(mxo)})"
    )


def _states_only(opt: Any, where: str, mxnet_version: str | None) -> tuple[Any, str, MXNetObject, bool]:
    """A ``dump_optimizer=False`` file: the optimizer passed, its own counts and scheduler kept."""
    name = _rule_name(opt)
    holder = MXNetObject()
    for k in ("m_schedule", "cumgrads"):
        if hasattr(opt, k):
            setattr(holder, k, getattr(opt, k))
    mp = bool(opt.multi_precision)
    ambiguous = (mp and name in _MASTER_LAST_19) or (name == "rmsprop" and getattr(opt, "centered", False))
    if mxnet_version is None and ambiguous:
        _warn(
            f"{where}: a states-only file does not say which MXNet wrote it; reading {name} states in MXNet "
            "2.0's layout (1.9.1 orders them differently): pass mxnet_version='1' for a 1.9.1 file"
        )
    return opt, name, holder, mp


def _convert_states(
    states: dict,
    opt: Any,
    name: str,
    v1: bool,
    holder: MXNetObject,
    mp: bool,
    where: str,
    budget: Budget,
    *,
    mxnet_dtypes: bool = True,
) -> tuple[dict, dict]:
    """Every index's state in mxopt_jax's layout (JAX arrays, moved to the device in one transfer), and the
    layout ``{index: (name, weight shape, weight dtype)}`` (``None`` where the state does not tell). With
    ``mxnet_dtypes``, each state's dtypes are checked against what MXNet's optimizer creates (not for a class
    of the user's own)."""
    import jax

    host: dict = {}
    dtypes: dict = {}
    cache = ShapeCache(opt, budget)
    for idx, st in states.items():
        if isinstance(idx, bytes):
            idx = idx.decode()
        try:
            conv, is_mp = _convert_state(name, v1, st, idx, holder, mp)
            dtypes[idx] = weight_dtype(name, v1, st, is_mp, mp, strict=mxnet_dtypes)
        except _Mismatch as exc:
            why = f": {exc}" if str(exc) else ""
            raise ValueError(
                f"{where}: the state of index {idx!r} does not have the layout of MXNet "
                f"{'1.9.1' if v1 else '2.0'} {name} states{why}"
            ) from None
        host[idx] = to_host(opt, idx, conv, is_mp, where, cache)
        # the device arrays each index's state becomes (an array shared by several indices, once per use)
        budget.charge(
            sum(a.nbytes + 128 for a in jax.tree.leaves(host[idx])),
            f"the state of index {idx!r} on the device",
        )
    idx2name = getattr(opt, "idx2name", {}) or {}
    layout = {
        i: (idx2name.get(i), _weight_shape(opt, i, st, cache, dtypes[i]), dtypes[i]) for i, st in host.items()
    }
    on_device = jax.device_put(list(host.values()))  # a list: the indices may be of several kinds
    return dict(zip(host, on_device, strict=True)), layout


_ORDER_RULE = (
    "a Gluon Trainer's index i is the i-th parameter of sorted(net.collect_params().keys()) (MXNet 2.0: the "
    ".params names, e.g. '0.weight'; MXNet 1.x: the prefixed names, e.g. 'dense0_weight', which "
    "save_parameters does not store); mxopt_jax.mxnet_format.load_trainer pairs them by name."
)


def _rule_name(opt: Any) -> str:
    """The optimizer-table name whose state layout ``opt`` keeps (a subclass of a built-in: the built-in's)."""
    from ..facade.rule_backed import CLASSES

    builtins = set(CLASSES.values())
    for klass in type(opt).__mro__:
        if klass in builtins:
            return klass.__name__.lower()
    return type(opt).__name__.lower()


def _restore_bookkeeping(opt: Any, o: MXNetObject, sched: Any, where: str) -> None:
    """Into a substitute optimizer: the file's counts, multipliers, names, rescale_grad and scheduler."""
    a = vars(o)
    _check_float32s(
        {k: a[k] for k in ("lr_mult", "wd_mult") if k in a}, {}, _rescale(a.get("rescale_grad", 1.0)), where
    )
    if sched is not None:
        opt.lr_scheduler = sched
    opt.rescale_grad = _rescale(a.get("rescale_grad", opt.rescale_grad))
    opt.begin_num_update = int(a.get("begin_num_update", opt.begin_num_update))
    opt.idx2name = dict(a.get("idx2name") or {})
    opt.lr_mult = dict(a.get("lr_mult") or {})
    opt.wd_mult = dict(a.get("wd_mult") or {})
    _restore_counts(opt, a)


def _rescale(v: Any) -> float:
    """``rescale_grad``: MXNet 2.0 AdamW/AdaBelief keep it as a 1-element NDArray."""
    return float(v.reshape(-1)[0]) if isinstance(v, np.ndarray) else float(v)


def _restore_counts(opt: Any, a: Mapping) -> None:
    counts = a.get("_all_index_update_counts")
    current = a.get("_index_update_count", {})
    if not isinstance(counts, dict):
        counts = {0: current}
    dev = next((d for d, c in counts.items() if c is current), None)
    if dev is None:
        dev = next(iter(counts), 0)
    opt.set_update_counts(
        counts, current_device=int(dev), num_update=int(a.get("num_update", opt.begin_num_update))
    )


def _build_optimizer(name: str, v1: bool, o: MXNetObject, where: str, lr_scheduler: Any = None) -> Any:
    """A fresh mxopt_jax optimizer with the pickled optimizer's hyperparameters and bookkeeping."""

    cls = facade.Optimizer.opt_registry.get(name)
    if cls is None:
        raise ValueError(f"{where}: no mxopt_jax optimizer {name!r}")
    a = vars(o)
    kw: dict[str, Any] = {}
    aliases = _ALIASES_19.get(name, {}) if v1 else {}
    for p in sorted(_NOT_MXNET.get(name, set()) & set(a)):
        raise ValueError(
            f"{where}: the optimizer has an attribute {p!r}, which MXNet's {o.mx_class} does not have (it is "
            "mxopt_jax's own constructor argument, never in an MXNet file): refused"
        )
    for p in _own_names(cls):
        src = aliases.get(p, p)
        if src in a:
            kw[p] = a[src]
    if name == "lbsgd" and "init_updates" in a and "updates_per_epoch" in a:
        kw["begin_epoch"] = int(a["init_updates"]) // max(int(a["updates_per_epoch"]), 1)
    if name == "adamax" and v1:
        kw["epsilon"] = 1e-8
    if name in ("sgd", "ccsgd", "lars") and kw.get("lazy_update") and a.get("multi_precision"):
        # MXNet 1.9.1 SGD/LARS default to lazy_update=True and accept it with multi_precision (it only matters
        # for row_sparse gradients); mxopt_jax, as MXNet 2.0, does not
        kw["lazy_update"] = False
        _warn(
            f"{where}: lazy_update=True with multi_precision=True is continued with lazy_update=False (the same "
            "for dense gradients; row_sparse gradients get the standard, non-lazy update)"
        )
    rescale = _rescale(a.get("rescale_grad", 1.0))
    _check_float32s(a, kw, rescale, where)
    clip = a.get("clip_gradient")
    if clip is not None and not clip > 0:
        _warn(
            f"{where}: clip_gradient={clip} turns clipping off in MXNet's fused kernels; continuing without it"
        )
        clip = None
    elif clip is not None and clip > FLOAT32_MAX:
        _warn(
            f"{where}: clip_gradient={clip} is infinite as the float32 MXNet's kernels take: it clips nothing; "
            "continuing without it"
        )
        clip = None
    agg = a.get("aggregate_num", 1)
    agg = 1 if agg is None or (isinstance(agg, (int, float)) and agg < 1) else agg
    if name in ("lamb", "lans"):
        agg = min(agg, 45)
    sched = file_scheduler(a, where, lr_scheduler)
    lr = a.get("lr")
    if lr is None and sched is None:
        lr = 0.01  # MXNet's constructor: learning_rate=None without a scheduler is 0.01
    if name == "adadelta" and v1:
        lr, sched = 1.0, None
    base = dict(
        learning_rate=None if sched is not None else lr,
        lr_scheduler=sched,
        wd=float(a.get("wd", 0.0)),
        rescale_grad=float(rescale),
        clip_gradient=clip,
        begin_num_update=int(a.get("begin_num_update", 0)),
        multi_precision=bool(a.get("multi_precision", False)),
        aggregate_num=agg,
    )
    if "use_fused_step" in a and not v1:
        base["use_fused_step"] = bool(a["use_fused_step"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # ccSGD's deprecation notice
        try:
            opt = cls(**base, **kw)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ValueError(f"{where}: cannot rebuild MXNet's {o.mx_class} in mxopt_jax: {exc}") from None
    opt.lr = lr if not (name == "adadelta" and v1) else 1.0
    opt.idx2name = dict(a.get("idx2name") or {})
    opt.lr_mult = dict(a.get("lr_mult") or {}) if not (name == "adadelta" and v1) else {}
    opt.wd_mult = dict(a.get("wd_mult") or {})
    _restore_counts(opt, a)
    return opt


def _check_float32s(a: Mapping, kw: Mapping, rescale: float, where: str) -> None:
    """Refuse hyperparameters (and multipliers) that float32, MXNet's kernels' type, cannot hold."""
    for p, v in [("'lr'", a.get("lr")), ("'wd'", a.get("wd")), ("'rescale_grad'", rescale), *kw.items()]:
        check_float32(p if p.startswith("'") else repr(p), v, where)
    for table in ("lr_mult", "wd_mult"):
        for k, m in (a.get(table) or {}).items():
            check_float32(f"{table}[{k!r}]", m, where)


#: mxopt_jax's constructor arguments that MXNet's class of that name does not have (a file holding one was not
#: written by MXNet; SGLD's noise stream is seeded afresh, as MXNet draws from its global generator).
_NOT_MXNET = {"sgld": {"seed"}}


def _own_names(cls: type) -> list[str]:
    import inspect

    base = set(inspect.signature(facade.Optimizer.__init__).parameters)
    return [p for p in inspect.signature(cls).parameters if p not in base]
