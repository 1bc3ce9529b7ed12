"""The MXNet-style ``Optimizer`` base class, the registry (``register``/``create``).

Mirrors ``mxnet.optimizer.Optimizer`` (MXNet 2.0): the constructor, learning-rate / scheduler rules, per-index
``lr_mult`` / ``wd_mult`` lookup, per-index (and per-device) update counts and multi-precision handling. It
holds host-side bookkeeping only; the math is in the rule-backed classes (:mod:`.rule_backed`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..hyperparams import resolve_learning_rate
from ..numerics import is_low_precision
from ..registry import ALIASES
from ..rule import FP16_WARNING
from ..signature import habit_error, parameters_hint, stricter_than_mxnet
from ..validation import check_range, close_names, either, warn

Index = int | str


_DEVICE_IDS: dict = {}  # sharding -> lowest device id (per-index facade calls look it up every call)


def _device_id(array: Any) -> int:
    try:
        sharding = array.sharding
        return _DEVICE_IDS[sharding]
    except Exception:  # noqa: BLE001 - not cached yet, no sharding, or unhashable: the slow path below
        pass
    devices = getattr(array, "devices", None)
    if devices is None:
        return 0
    try:
        found = min(d.id for d in devices())
    except Exception:  # noqa: BLE001 - tracers / exotic arrays: treat as the default device
        return 0
    try:
        if len(_DEVICE_IDS) >= 256:
            _DEVICE_IDS.clear()
        _DEVICE_IDS[array.sharding] = found
    except Exception:  # noqa: BLE001 - an unhashable sharding: just not cached
        pass
    return found


def _float_dtype() -> Any:
    return np.float64 if jax.config.read("jax_enable_x64") else np.float32


# =========================================================================== Optimizer base class
class Optimizer:
    """Base class of MXNet-style optimizers (``mxnet.optimizer.Optimizer``, MXNet 2.0 semantics).

    Args:
      rescale_grad: factor applied to every gradient first (mutable attribute, as in MXNet).
      param_idx2name: ``dict`` index -> parameter name (used by the ``lr_mult``/``wd_mult`` name lookup and
        by LARS to exempt ``*gamma``/``*beta``/``*bias``); stored as a copy in ``idx2name``.
      wd: weight decay.
      clip_gradient: clip the rescaled gradient to ``[-c, c]``; ``None`` disables clipping.
      learning_rate: the learning rate; with no scheduler and ``None``, 0.01. When a scheduler is given too
        and its ``base_lr`` differs, the scheduler's ``base_lr`` is overwritten (with a ``UserWarning``).
      lr_scheduler: an :mod:`mxopt_jax.lr_scheduler` scheduler (or any callable ``num_update -> lr``).
      sym: any object with ``attr_dict()`` and ``list_arguments()``; its ``__lr_mult__`` / ``__wd_mult__``
        argument attributes seed the multipliers.
      begin_num_update: the update count every index starts from.
      multi_precision: keep float32 master copies of float16/bfloat16 weights.
      param_dict: index -> object with ``lr_mult`` and ``wd_mult`` attributes (takes precedence).
      aggregate_num: how many parameters the :class:`Updater` updates per call (``None`` -> 1; ``numpy.inf``
        or ``float('inf')``: all at once).
      use_fused_step: ``True`` runs :meth:`fused_step`, else :meth:`step` (``None`` -> ``False``).

    Unknown keyword arguments raise ``TypeError`` (as MXNet).
    """

    #: Registered optimizer classes by lower-cased class name.
    opt_registry: dict[str, type] = {}

    def __init__(
        self,
        rescale_grad: float = 1.0,
        param_idx2name: dict | None = None,
        wd: float = 0.0,
        clip_gradient: float | None = None,
        learning_rate: float | None = None,
        lr_scheduler: Any = None,
        sym: Any = None,
        begin_num_update: int = 0,
        multi_precision: bool = False,
        param_dict: dict | None = None,
        aggregate_num: int | float | None = None,
        use_fused_step: bool | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            exc = TypeError(
                f"unexpected keyword argument(s) {sorted(kwargs)} (as MXNet, unknown optimizer arguments are errors)"
            )
            sig = inspect.signature(type(self).__init__)
            raise habit_error(type(self).__name__, sig, exc, (), kwargs, facade=True)
        self.rescale_grad = rescale_grad
        learning_rate, lr_scheduler = resolve_learning_rate(type(self).__name__, learning_rate, lr_scheduler)
        self.lr = learning_rate
        self.lr_scheduler = lr_scheduler
        self.wd = wd
        self.lr_mult: dict = {}
        self.wd_mult: dict = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts: dict[int, dict] = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self._current_device = 0
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 1 if aggregate_num is None else aggregate_num
        self.use_fused_step = False if use_fused_step is None else use_fused_step
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = dict(param_idx2name)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict is not None else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ------------------------------------------------------------------ registry
    @staticmethod
    def register(klass: type) -> type:
        """Register an optimizer class under its lower-cased name (also usable as a decorator)."""
        return register(klass)

    @staticmethod
    def create_optimizer(name: str, **kwargs: Any) -> Optimizer:
        """Instantiate the optimizer registered as ``name`` (case-insensitive) with ``kwargs``."""
        return create(name, **kwargs)

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self) -> float:
        """The current learning rate: ``lr_scheduler(num_update)`` if a scheduler is set, else ``lr``."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate; raises ``UserWarning`` (as an exception, as MXNet) if a scheduler is set.

        Raises:
          ValueError: ``lr`` is negative or NaN (MXNet takes any value; mxopt_jax refuses it here, as its
            constructors do, and at every update whatever set it: docs/differences.md #19).
        """
        if self.lr_scheduler is not None:
            raise UserWarning(
                "LRScheduler of the optimizer has already been defined. Note that set_learning_rate can "
                "mutate the value of the learning rate of the optimizer only when the LRScheduler of the "
                "optimizer is undefined."
            )
        with stricter_than_mxnet():
            check_range(f"{type(self).__name__}.set_learning_rate", "lr", lr, low=0.0)
        self.lr = lr

    # ------------------------------------------------------------------ multipliers
    def _sym_mults(self, attr_name: str) -> dict:
        out = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and attr_name in attr[name]:
                    out[name] = float(attr[name][attr_name])
        return out

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Replace the learning-rate multipliers (keys: indices or names; ``sym``'s ``__lr_mult__`` first);
        each must be a number ``>= 0`` (``ValueError`` otherwise, as the functional ``lr_mult``)."""
        self._check_mults("set_lr_mult", args_lr_mult)
        self.lr_mult = self._sym_mults("__lr_mult__")
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Replace the weight-decay multipliers (keys: indices or names; ``sym``'s ``__wd_mult__`` first);
        each must be a number ``>= 0`` (``ValueError`` otherwise, as the functional ``wd_mult``)."""
        self._check_mults("set_wd_mult", args_wd_mult)
        self.wd_mult = self._sym_mults("__wd_mult__")
        self.wd_mult.update(args_wd_mult)

    def _check_mults(self, setter: str, mults: Any) -> None:
        if not isinstance(mults, Mapping):
            raise TypeError(
                f"{type(self).__name__}.{setter}: expected a dict of index or name -> multiplier, got "
                f"{type(mults).__name__}"
            )
        with stricter_than_mxnet():
            for key, value in mults.items():
                check_range(f"{type(self).__name__}.{setter}", f"{setter[4:]}[{key!r}]", value, low=0.0)

    def _mult(self, index: Index, table: dict, attr: str) -> float:
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _get_lrs(self, indices: Sequence[Index]) -> list[float]:
        """Learning rate of each index: base rate (scheduler evaluated once) times its ``lr_mult``."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def _get_lr(self, index: Index) -> float:
        return self._get_lrs([index])[0]

    def _get_wds(self, indices: Sequence[Index]) -> list[float]:
        """Weight decay of each index: ``wd`` times its ``wd_mult``."""
        return [self.wd * self._mult(i, self.wd_mult, "wd_mult") for i in indices]

    def _get_wd(self, index: Index) -> float:
        return self._get_wds([index])[0]

    # ------------------------------------------------------------------ counting
    @property
    def index_update_counts(self) -> dict:
        """The current device's update count of every index (``index -> t``; the live dict MXNet calls
        ``_index_update_count``). An index seen for the first time starts from ``begin_num_update``."""
        return self._index_update_count

    @property
    def all_index_update_counts(self) -> dict[int, dict]:
        """Every device's counts, ``device_id -> {index: t}`` (MXNet's ``_all_index_update_counts``): with
        several devices each has its own Updater and its own counts, the Updater switches with
        :meth:`set_current_device`."""
        return self._all_index_update_counts

    @property
    def current_device(self) -> int:
        """The device whose counts :attr:`index_update_counts` shows."""
        return self._current_device

    def set_current_device(self, device_id: int) -> None:
        """Switch the per-index update counts to those of ``device_id`` (created empty when new)."""
        if device_id not in self._all_index_update_counts:
            self._all_index_update_counts[device_id] = {}
        self._index_update_count = self._all_index_update_counts[device_id]
        self._current_device = device_id

    def set_update_counts(
        self,
        counts: Mapping[int, Mapping[Index, int]],
        *,
        current_device: int = 0,
        num_update: int | None = None,
    ) -> None:
        """Restore the update bookkeeping of a saved run (what MXNet pickles with the optimizer).

        Args:
          counts: ``device_id -> {index: count}`` (one entry per device; a single-device run has ``{0: ...}``).
          current_device: the device whose counts the next update uses.
          num_update: the largest count seen (drives the learning-rate scheduler); default: the largest of
            ``counts`` and ``begin_num_update``.
        """
        restored = {int(d): {k: int(v) for k, v in c.items()} for d, c in counts.items()}
        self._all_index_update_counts = restored or {0: {}}
        self.set_current_device(int(current_device))
        if num_update is None:
            num_update = max([self.begin_num_update, *(v for c in restored.values() for v in c.values())])
        self.num_update = int(num_update)

    def _set_current_device(self, device_id: int) -> None:
        """MXNet's name of :meth:`set_current_device`."""
        self.set_current_device(device_id)

    def _set_current_context(self, device_id: int) -> None:
        """Deprecated alias of :meth:`set_current_device` (MXNet 1.x's name; warns)."""
        warn("_set_current_context is deprecated, use _set_current_device instead", DeprecationWarning)
        self.set_current_device(device_id)

    def _update_count(self, index: Index | list[Index] | tuple[Index, ...]) -> None:
        """Increment the update count of each index (starting at ``begin_num_update``) and ``num_update``."""
        if not isinstance(index, (list, tuple)):
            index = [index]
        for idx in index:
            if idx not in self._index_update_count:
                self._index_update_count[idx] = self.begin_num_update
            self._index_update_count[idx] += 1
            self.num_update = max(self._index_update_count[idx], self.num_update)

    # ------------------------------------------------------------------ states
    def create_state(self, index: Index, weight: jax.Array) -> Any:
        """Per-parameter state (``None`` here; subclasses return arrays or tuples)."""
        return None

    def create_state_multi_precision(self, index: Index, weight: jax.Array) -> Any:
        """``(float32 master, create_state(index, master))`` for 16-bit weights with ``multi_precision``."""
        weight = jnp.asarray(weight)
        low = is_low_precision(weight.dtype)
        if self.multi_precision and low:
            w32 = weight.astype(jnp.float32)
            return (w32, self.create_state(index, w32))
        if low and not self.multi_precision:
            warn(FP16_WARNING)
        return self.create_state(index, weight)

    # ------------------------------------------------------------------ updates
    def step(self, indices: list, weights: list, grads: list, states: list) -> tuple[list, list]:
        """Update the parameters; returns ``(new_weights, new_states)``. Subclasses implement it."""
        raise NotImplementedError()

    def fused_step(self, indices: list, weights: list, grads: list, states: list) -> tuple[list, list]:
        """Fused (compiled) update; returns ``(new_weights, new_states)``. Subclasses may implement it."""
        raise NotImplementedError()

    def update(self, indices: Any, weights: Any, grads: Any, states: Any) -> tuple:
        """Run :meth:`fused_step` if ``use_fused_step`` else :meth:`step`; returns new weights and states.

        Lists of indices, weights, gradients and states (MXNet 2.0) return ``(new_weights, new_states)``
        lists; one index with its weight, gradient and state (MXNet 1.x: ``update(0, weight, grad, state)``)
        returns ``(new_weight, new_state)`` (MXNet wrote them in place).

        All or nothing: when the step raises, the update counts, ``num_update``, the scheduler's position and
        the random key are as before the call.

        Raises:
          TypeError: ``step`` / ``fused_step`` did not return ``(new_weights, new_states)`` lists.
        """
        if not isinstance(indices, (list, tuple)):
            (w,), (s,) = self.update([indices], [weights], [grads], [states])
            return w, s
        indices = list(indices)  # step and fused_step take lists (MXNet's Updater passes lists)
        snap = self._bookkeeping(indices)
        try:
            if self.use_fused_step:
                out = self.fused_step(indices, weights, grads, states)
                what = "fused_step"
            else:
                out = self.step(indices, weights, grads, states)
                what = "step"
            return _checked_step_result(type(self).__name__, what, out, len(indices))
        except BaseException:
            self._restore_bookkeeping(snap)
            raise

    def _bookkeeping(self, indices: Sequence[Index]) -> tuple:
        """What an update call changes besides the weights and states (restored when the call fails)."""
        counts = self._index_update_count
        sched = self.lr_scheduler
        sched_vars = dict(vars(sched)) if sched is not None and hasattr(sched, "__dict__") else None
        return (
            self._index_update_count,
            [(i, counts.get(i, _MISSING)) for i in indices],
            self.num_update,
            sched_vars,
            getattr(self, "_key", _MISSING),
        )

    def _restore_bookkeeping(self, snap: tuple) -> None:
        counts, entries, num_update, sched_vars, key = snap
        for i, c in entries:
            if c is _MISSING:
                counts.pop(i, None)
            else:
                counts[i] = c
        self.num_update = num_update
        if sched_vars is not None:
            vars(self.lr_scheduler).clear()
            vars(self.lr_scheduler).update(sched_vars)
        if key is not _MISSING:
            self._key = key

    def _legacy_update(self) -> bool:
        """Whether a subclass overrides ``update`` in MXNet 1.x's single-index form
        ``update(self, index, weight, grad, state)`` (its first parameter is named ``index``)."""
        cls = type(self)
        found = _LEGACY.get(cls)
        if found is None:
            fn = cls.update
            found = False
            if fn is not Optimizer.update:
                try:
                    found = next(iter(list(inspect.signature(fn).parameters)[1:]), None) == "index"
                except (TypeError, ValueError):
                    found = False
            _LEGACY[cls] = found
        return found

    def _run_update(self, indices: list, weights: list, grads: list, states: list) -> tuple[list, list]:
        """``self.update`` on lists; a 1.x-style ``update(index, weight, grad, state)`` override is called
        once per index and must return ``(new_weight, new_state)`` (JAX arrays cannot be written in place)."""
        if not self._legacy_update():
            return self.update(indices, weights, grads, states)
        snap = self._bookkeeping(indices)
        new_w, new_s = [], []
        try:
            for i, w, g, s in zip(indices, weights, grads, states, strict=True):
                out = self.update(i, w, g, s)
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise TypeError(
                        f"{type(self).__name__}.update(index, weight, grad, state) (MXNet 1.x's form) returned "
                        f"{type(out).__name__}: JAX arrays are immutable, so it cannot write the weight and state "
                        "in place; return (new_weight, new_state), or implement MXNet 2.0's "
                        "step(self, indices, weights, grads, states) -> (new_weights, new_states)"
                    )
                new_w.append(out[0])
                new_s.append(out[1])
        except BaseException:
            self._restore_bookkeeping(snap)
            raise
        return new_w, new_s

    def update_multi_precision(self, indices: Any, weights: Any, grads: Any, states: Any) -> tuple:
        """:meth:`update` with the float32 masters of multi-precision entries; returns weights and states.

        For a 16-bit weight with ``multi_precision`` the state is ``(master, inner)``: the update runs on
        ``(master, inner, float32(grad))`` and the new weight is the master cast back to the weight's dtype.
        One index (MXNet 1.x's ``update_multi_precision(0, weight, grad, state)``) returns
        ``(new_weight, new_state)``; lists return lists.
        """
        if not isinstance(indices, (list, tuple)):
            (w,), (s,) = self.update_multi_precision([indices], [weights], [grads], [states])
            return w, s
        mp = [self.multi_precision and is_low_precision(jnp.result_type(w)) for w in weights]
        ws, gs, ss = [], [], []
        for m, w, g, s in zip(mp, weights, grads, states, strict=True):
            if m:
                ws.append(s[0])
                ss.append(s[1])
                gs.append(jnp.asarray(g).astype(jnp.float32))
            else:
                ws.append(w)
                ss.append(s)
                gs.append(g)
        new_w, new_s = self._run_update(list(indices), ws, gs, ss)
        out_w, out_s = [], []
        for m, w, nw, ns in zip(mp, weights, new_w, new_s, strict=True):
            if m:
                out_w.append(nw.astype(jnp.result_type(w)))
                out_s.append((nw, ns))
            else:
                out_w.append(nw)
                out_s.append(ns)
        return out_w, out_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(learning_rate={self.lr!r}, wd={self.wd!r})"


_MISSING = object()
_LEGACY: dict[type, bool] = {}  # class -> overrides update() in MXNet 1.x's single-index form


def _checked_step_result(cls_name: str, what: str, out: Any, n: int) -> tuple:
    """``step`` / ``fused_step`` must return ``(new_weights, new_states)``, one entry per index."""
    if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(x, (list, tuple)) for x in out)):
        got = "nothing (None)" if out is None else type(out).__name__
        raise TypeError(
            f"{cls_name}.{what}(indices, weights, grads, states) returned {got}: it must return the new weights "
            "and the new states, (new_weights, new_states), two lists with one entry per index (JAX arrays are "
            "immutable: MXNet's in-place writes cannot work)"
        )
    if len(out[0]) != n or len(out[1]) != n:
        raise TypeError(
            f"{cls_name}.{what} returned {len(out[0])} weights and {len(out[1])} states for {n} indices"
        )
    return out


# =========================================================================== registry
def register(klass: type) -> type:
    """Register ``klass`` under ``klass.__name__.lower()``; warns when overriding; returns the class."""
    if not isinstance(klass, type):
        raise TypeError(f"register expects a class, got {klass!r}")
    name = klass.__name__.lower()
    old = Optimizer.opt_registry.get(name)
    if old is not None:
        warn(
            f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is overriding existing "
            f"optimizer {old.__module__}.{old.__name__}"
        )
    Optimizer.opt_registry[name] = klass
    return klass


def create(name: str, *args: Any, **kwargs: Any) -> Optimizer:
    """Instantiate the optimizer registered as ``name`` (case-insensitive), e.g. ``create('adam', wd=1e-4)``.

    A functional constructor's name is taken for its registry name where the two differ
    (``create('group_adagrad')`` is ``create('groupadagrad')``: ``mxopt_jax.ALIASES``).

    Raises:
      TypeError: ``name`` is not a string; arguments that are not the optimizer's (the message names the
        optimizer and, for ``lr=``, ``eps=``, ``weight_decay=``, ... MXNet's keyword); positional
        arguments (MXNet's ``create`` takes keywords; parameters go to the :class:`Updater`).
      ValueError: unknown name (the message suggests the closest registered names and lists them all).

    Examples:
      >>> import mxopt_jax
      >>> opt = mxopt_jax.create("adam", learning_rate=1e-3, wd=1e-4)
      >>> type(opt).__name__, opt.learning_rate, opt.wd
      ('Adam', 0.001, 0.0001)
    """
    if not isinstance(name, str):
        raise TypeError(
            f"create: `name` must be an optimizer name (str), one of {', '.join(sorted(Optimizer.opt_registry))}; "
            f"got {type(name).__name__} {name!r}"
        )
    registered = Optimizer.opt_registry
    klass = registered.get(name.lower()) or registered.get(ALIASES.get(name.lower(), ""))
    if klass is None:
        near = close_names(name, sorted(registered))
        hint = f" (did you mean {either(near)}?)" if near else ""
        raise ValueError(
            f"Cannot find optimizer {name}{hint}; registered optimizers: {', '.join(sorted(registered))}"
        )
    if args:
        raise TypeError(
            f"create({name!r}): the optimizer's arguments are keywords (learning_rate=..., wd=...), got "
            f"{len(args)} positional argument(s); {parameters_hint(True)}"
        )
    try:
        return klass(**kwargs)
    except TypeError as exc:
        msg = str(exc)
        if msg.startswith(klass.__name__):  # already names the optimizer
            raise TypeError(f"create({name!r}): {msg}") from None
        raise
