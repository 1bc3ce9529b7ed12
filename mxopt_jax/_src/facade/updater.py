"""MXNet's ``Updater``: per-index states, dtype grouping and ``aggregate_num`` chunks over an ``Optimizer``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..numerics import is_low_precision
from ..validation import warn
from . import states as states_format
from .optimizer import Optimizer, _device_id
from .rule_backed import CLASSES, as_array, as_grad

#: What each distinct shape and dtype of a file's state arrays is counted at by a reader that checks states
#: against weights (:class:`ShapeCache` with a budget): the state the optimizer would create for such a weight
#: and for one a column wider, evaluated abstractly (traced, never compiled nor allocated; about 5 kB kept and
#: 0.6 ms each, measured; bytes).
SHAPE_COST = 64 * 2**10


class ShapeCache:
    """What an optimizer creates for a weight shape and dtype, evaluated abstractly (``jax.eval_shape``: no
    program is compiled, nothing allocated) and asked once per shape: mxopt_jax's own optimizers
    (``create_state`` not overridden) make the same state for every index of a shape; a class of the user's
    own is asked every time, each evaluation counted against ``budget`` when one is given (an object with
    ``charge(n, what)``; :data:`SHAPE_COST` each)."""

    def __init__(self, opt: Any, budget: Any = None) -> None:
        cls = next((k for k in type(opt).__mro__ if k in set(CLASSES.values())), None)
        t = type(opt)
        self.opt = opt
        self.budget = budget
        self.on = cls is not None and all(
            getattr(t, m) is getattr(cls, m) for m in ("create_state", "create_state_multi_precision")
        )
        self.refs: dict[tuple, tuple] = {}

    def _charge(self, shape: tuple) -> None:
        if self.budget is not None and not self.on:
            self.budget.charge(SHAPE_COST, f"the optimizer's state for a weight of shape {shape[:8]}")

    def state_shapes(self, idx: Any, shape: tuple, dtype: Any) -> list | None:
        """The shapes of the state ``create_state_multi_precision`` makes for such a weight (``None``: it
        cannot tell)."""
        if not self.on:
            self._charge(shape)
            return state_shapes(self.opt, idx, shape, dtype)
        # mxopt_jax's own create_state_multi_precision: (float32 master, create_state(master)) for a 16-bit
        # weight with multi_precision, else create_state(weight)
        master = bool(self.opt.multi_precision) and is_low_precision(dtype)
        ref = self.ref(idx, shape, np.float32 if master else dtype)
        return ([shape] if master else []) + [tuple(r.shape) for r in jax.tree.leaves(ref)]

    def ref(self, idx: Any, shape: tuple, dtype: Any) -> tuple:
        """The fields ``create_state`` makes for such a weight: ``jax.ShapeDtypeStruct`` or ``None`` each."""
        key = (shape, np.dtype(dtype).str)
        if self.on and key in self.refs:
            return self.refs[key]
        self._charge(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = jax.ShapeDtypeStruct(shape, dtype)
            try:
                ref = tuple(jax.eval_shape(lambda x: tuple(self.opt.create_state(idx, x)), w))
            except Exception:  # noqa: BLE001 - a create_state of the user's own that cannot be traced: run it
                ref = tuple(self.opt.create_state(idx, np.zeros(shape, dtype)))
        if self.on:
            self.refs[key] = ref
        return ref


def state_shapes(opt: Any, idx: Any, shape: tuple, dtype: Any) -> list | None:
    """The shapes of the state ``opt`` creates for a weight of ``shape`` / ``dtype`` (traced, nothing
    allocated); ``None`` if it cannot tell."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = jax.eval_shape(
                lambda w: opt.create_state_multi_precision(idx, w), jax.ShapeDtypeStruct(shape, dtype)
            )
    except Exception:  # noqa: BLE001 - a custom create_state that cannot be traced: no check
        return None
    return [tuple(x.shape) for x in jax.tree.leaves(st)]


def stored_shapes(state: Any) -> list:
    """The shapes of a state's arrays (and scalars), in order."""
    return [tuple(np.shape(x)) for x in jax.tree.leaves(state)]


def fits(opt: Any, idx: Any, state: Any, shape: tuple, dtype: Any, cache: ShapeCache | None = None) -> bool:
    """Whether ``state`` is what ``opt`` keeps for a weight of this shape and dtype (its arrays' shapes are
    those of the state ``opt`` makes for such a weight; always, when that cannot be told)."""
    shape = tuple(shape)
    want = state_shapes(opt, idx, shape, dtype) if cache is None else cache.state_shapes(idx, shape, dtype)
    return want is None or want == stored_shapes(state)


def _sync_state(state: Any, weight: jax.Array) -> Any:
    """MXNet's ``sync_state_context``: a loaded state goes where its weight is.

    A committed weight (placed with ``jax.device_put``) commits its state to its device. An uncommitted
    weight keeps uncommitted states uncommitted (``jax.jit`` places them with the weight) and gets an
    uncommitted copy of a committed one: a state committed beside an uncommitted weight would commit the
    call's outputs, so the second call would compile the step again for committed weights.
    """
    devices = getattr(weight, "devices", None)
    if devices is None:
        return state
    dev = next(iter(devices()))
    committed = getattr(weight, "committed", True)

    def move(x: Any) -> Any:
        if not isinstance(x, jax.Array):
            return x
        if committed:
            return jax.device_put(x, dev)
        if not x.committed:
            return x
        with jax.default_device(dev):
            return jnp.array(np.asarray(x))

    return jax.tree.map(move, state)


class Updater:
    """MXNet's ``Updater``: keeps per-index states and applies an :class:`Optimizer`.

    ``updater(index, grad, weight)`` (note MXNet's argument order) returns the new weight; with lists of
    indices, gradients and weights it returns the list of new weights. States are created lazily on the
    first call for an index (``optimizer.create_state_multi_precision``) and kept in ``states``.

    A list call is all or nothing: when it fails on any index, no state, update count or scheduler position
    has changed (the weights passed in are never modified: JAX arrays are immutable).

    A state is held to its weight, as MXNet's kernels hold it: a state loaded (:meth:`set_states`, a resumed
    file) or met with a weight of another shape or dtype than before is checked against the state the
    optimizer makes for that weight (evaluated abstractly, once per shape), and a state of other shapes is
    refused with a ``ValueError`` naming the index, never broadcast onto the weight.

    An Updater resumed from an MXNet file (:func:`mxopt_jax.mxnet_format.load_updater` /
    :func:`~mxopt_jax.mxnet_format.load_trainer`) knows the file's indices: ``layout`` maps each index to
    ``(name, shape, dtype)`` (what the file says; ``None`` where it cannot tell), ``frozen`` the indices the
    file holds no state for (parameters MXNet never updates, grad_req ``'null'``: BatchNorm's running
    statistics) and ``order_rule`` says how indices map to parameters. A call reaching a frozen or unknown
    index, or a weight / gradient whose shape or dtype disagrees with ``layout``, raises ``ValueError``
    naming the index, the parameter, the stored shape and the order rule, before anything changes. With
    ``layout`` names, ``updater(grads_by_name, weights_by_name)`` (two dicts) updates by name and returns the
    dict of new weights (frozen parameters unchanged, the same objects).
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 1
        self.layout: dict | None = None
        self.frozen: dict = {}
        self.order_rule: str = ""
        # index -> (shape, dtype) of the weight its state was made for or last checked against
        self._checked: dict = {}

    def __call__(self, index: Any, grad: Any, weight: Any = None) -> Any:
        if isinstance(index, Mapping):
            return self._by_name(index, grad)
        if not isinstance(index, (list, tuple)):
            if self.layout is not None or self.frozen:
                self._check(index if not isinstance(index, bytes) else index.decode(), grad, weight)
            return self._one(index, grad, weight)
        indices, grads, weights = list(index), list(grad), list(weight)
        if not (len(indices) == len(grads) == len(weights)):
            raise ValueError(
                f"Updater: got {len(indices)} indices, {len(grads)} gradients and {len(weights)} weights "
                "(one of each per parameter)"
            )
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx.decode()
        if self.layout is not None or self.frozen:
            for idx, g, w in zip(indices, grads, weights, strict=True):
                self._check(idx, g, w)
        weights = [as_array(w) for w in weights]
        grads = [as_grad(g) for g in grads]
        states, synced = dict(self.states), dict(self.states_synced)
        try:
            return self._many(indices, grads, weights)
        except BaseException:
            self.states, self.states_synced = states, synced  # all or nothing
            raise

    def _many(self, indices: list, grads: list, weights: list) -> list:
        opt = self.optimizer
        if weights:
            opt._set_current_device(_device_id(weights[0]))
        cache: list = []
        for i, idx in enumerate(indices):
            self._ensure_state(idx, weights[i], cache)
        new_weights = list(weights)
        if self.aggregate_updates:
            agg = opt.aggregate_num
            if isinstance(agg, float):
                if not math.isinf(agg):  # MXNet's range(0, n, aggregate_num) refuses a float as well
                    raise TypeError(f"aggregate_num must be an int or numpy.inf, got {agg!r}")
                chunks = [list(range(len(indices)))]
            else:
                groups: dict = {}
                for pos, w in enumerate(weights):
                    groups.setdefault(w.dtype, []).append(pos)
                chunks = [g[k : k + agg] for g in groups.values() for k in range(0, len(g), agg)]
        else:
            chunks = [[pos] for pos in range(len(indices))]
        snap = opt._bookkeeping(indices)
        try:
            done: list = []
            for chunk in chunks:
                ci = [indices[p] for p in chunk]
                nw, ns = opt.update_multi_precision(
                    ci, [weights[p] for p in chunk], [grads[p] for p in chunk], [self.states[i] for i in ci]
                )
                done.append((chunk, ci, nw, ns))
        except BaseException:
            opt._restore_bookkeeping(snap)  # the chunks before the failing one counted their updates
            raise
        for chunk, ci, nw, ns in done:
            for p, i, w, s in zip(chunk, ci, nw, ns, strict=True):
                new_weights[p] = w
                self.states[i] = s
        return new_weights

    def _one(self, index: Any, grad: Any, weight: Any) -> Any:
        """``updater(index, grad, weight)`` for one index: the list call's bookkeeping without the lists."""
        weight = as_array(weight)
        grad = as_grad(grad)
        opt = self.optimizer
        opt._set_current_device(_device_id(weight))
        if isinstance(index, bytes):
            index = index.decode()
        self._ensure_state(index, weight, [])
        (new_weight,), (new_state,) = opt.update_multi_precision(
            [index], [weight], [grad], [self.states[index]]
        )
        self.states[index] = new_state
        return new_weight

    # ------------------------------------------------------------------ resumed files: checks and names
    def _describe(self, idx: Any) -> str:
        name, shape, dtype = (self.layout or {}).get(idx) or self.frozen.get(idx) or (None, None, None)
        parts = [f"index {idx!r}"]
        parts.append(f"(parameter {name!r})" if name is not None else "(parameter name unknown)")
        if shape is not None:
            parts.append(f"stored shape {tuple(shape)}" + (f" {dtype}" if dtype is not None else ""))
        return " ".join(parts)

    def _rule(self) -> str:
        return f" Index order: {self.order_rule}" if self.order_rule else ""

    def _check(self, idx: Any, grad: Any, weight: Any) -> None:
        """Refuse, before anything changes, what the resumed file says MXNet would not do."""
        if idx in self.frozen:
            raise ValueError(
                f"Updater: {self._describe(idx)} has no optimizer state in the file: MXNet never updates it "
                "(grad_req 'null', e.g. BatchNorm's running_mean / running_var). Leave it out of the call, or "
                "pass the gradients by name: updater(grads_by_name, weights_by_name)." + self._rule()
            )
        layout = self.layout
        if layout is None:
            return
        if idx not in layout:
            known = sorted(layout, key=str)
            raise ValueError(
                f"Updater: index {idx!r} is not one of the file's indices {known}"
                + (f" (frozen: {sorted(self.frozen, key=str)})" if self.frozen else "")
                + "."
                + self._rule()
            )
        _, shape, dtype = layout[idx]
        for what, x in (("weight", weight), ("gradient", grad)):
            xs = getattr(x, "shape", None)
            if xs is None and x is not None and not hasattr(x, "indices"):
                xs = jnp.shape(x)
            if shape is not None and xs is not None and tuple(xs) != tuple(shape):
                raise ValueError(
                    f"Updater: {self._describe(idx)}: the {what} has shape {tuple(xs)}; the wrong parameter "
                    "for this index?" + self._rule()
                )
            xd = getattr(x, "dtype", None)
            if dtype is not None and xd is not None and jnp.dtype(xd) != jnp.dtype(dtype):
                raise ValueError(
                    f"Updater: {self._describe(idx)}: the {what} has dtype {jnp.dtype(xd)}, the file's "
                    f"parameter is {jnp.dtype(dtype)}." + self._rule()
                )

    def _by_name(self, grads: Mapping, weights: Any) -> dict:
        """``updater(grads_by_name, weights_by_name)``: MXNet's Trainer.step by parameter name."""
        layout = self.layout or {}
        by_name = {v[0]: i for i, v in layout.items() if v[0] is not None}
        frozen = {v[0]: i for i, v in self.frozen.items() if v[0] is not None}
        if not by_name:
            raise ValueError(
                "Updater: gradients by name need the parameter names of a resumed file "
                "(mxopt_jax.mxnet_format.load_trainer); call updater(indices, grads, weights) otherwise"
            )
        if not isinstance(weights, Mapping):
            raise TypeError(
                f"Updater: with gradients by name (a dict), pass the weights by name too, got {type(weights).__name__}"
            )
        unknown = sorted(str(k) for k in grads if k not in by_name and k not in frozen)
        if unknown:
            raise ValueError(
                f"Updater: gradients for {unknown}, which are not parameters of the file "
                f"(its parameters: {sorted(by_name) + sorted(frozen)})"
            )
        missing = sorted(n for n in by_name if n not in grads)
        if missing:
            raise ValueError(
                f"Updater: no gradient for {missing} (MXNet's Trainer.step updates every parameter with a "
                "gradient; pass one for each)"
            )
        no_weight = sorted(n for n in by_name if n not in weights)
        if no_weight:
            raise ValueError(f"Updater: no weight for {no_weight} in the weights by name")
        names = sorted(by_name, key=lambda n: by_name[n])  # the Trainer's index order
        new = self([by_name[n] for n in names], [grads[n] for n in names], [weights[n] for n in names])
        out = dict(weights)  # frozen parameters (and any other entries) unchanged: the same objects
        out.update(zip(names, new, strict=True))
        return out

    def _ensure_state(self, idx: Any, weight: jax.Array, cache: list | None = None) -> None:
        """The state of ``idx`` for ``weight``: created (``create_state_multi_precision``), or the one held,
        checked against the weight the first time it meets one (a loaded state, or a weight of another shape
        or dtype than the last): its arrays must have the shapes the optimizer makes for that weight, as
        MXNet's kernels require (a state of another shape is refused, never broadcast)."""
        key = (tuple(weight.shape), weight.dtype)
        if idx not in self.states:
            self.states[idx] = self.optimizer.create_state_multi_precision(idx, weight)
            self.states_synced[idx] = True
            self._checked[idx] = key
            return
        synced = self.states_synced.get(idx, False)
        if not synced or self._checked.get(idx) != key:
            self._check_state(idx, weight, [] if cache is None else cache)
            self._checked[idx] = key
        if not synced:
            self.states[idx] = _sync_state(self.states[idx], weight)
            self.states_synced[idx] = True

    def _check_state(self, idx: Any, weight: jax.Array, cache: list) -> None:
        """Refuse a held state whose arrays are not what the optimizer keeps for ``weight``."""
        opt = self.optimizer
        if not cache or cache[0].opt is not opt:
            cache[:] = [ShapeCache(opt)]
        state, shape, dtype = self.states[idx], tuple(weight.shape), jnp.dtype(weight.dtype)
        if fits(opt, idx, state, shape, dtype, cache[0]):
            return
        want = cache[0].state_shapes(idx, shape, dtype)
        raise ValueError(
            f"Updater: {self._describe(idx)}: its state holds arrays of shapes {stored_shapes(state)}, but "
            f"{type(opt).__name__} keeps {want} for a weight of shape {shape} {dtype}, the weight passed: the "
            "state was made for another weight (MXNet's kernels refuse a state whose shape is not the "
            "weight's; it is never broadcast)." + self._rule()
        )

    # ------------------------------------------------------------------ serialisation (no pickle)
    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialise the states (and, with ``dump_optimizer``, the optimizer's dynamic attributes) in
        mxopt_jax's safe format (:func:`mxopt_jax._src.facade.states.dump`: zip + JSON manifest, no pickle)."""
        return states_format.dump(self.states, self.optimizer if dump_optimizer else None)

    def set_states(self, states: bytes, *, max_bytes: int | None = None) -> None:
        """Load states written by :meth:`get_states` (optimizer attributes too, when they were dumped).

        Pickled MXNet states and anything else not in this format raise ``ValueError``; nothing is ever
        unpickled. When the bytes carry the optimizer, its attributes are restored into ``self.optimizer``
        (which must be of the same class), so a trajectory continues bit-exactly. The bytes are read as
        safely as an MXNet checkpoint (:mod:`mxopt_jax.mxnet_format`): within ``max_bytes`` of memory
        (default ``max(64 MiB, 32 x their size)``), every attribute checked against what the class accepts,
        a scheduler checked at its position; nothing changes when the archive is refused.

        Each state is checked against its weight at the index's next update (its arrays must have the shapes
        the optimizer makes for that weight; a state of another shape is refused, never broadcast). An
        Updater resumed from an MXNet file (:attr:`layout`) checks them now: a state for an index the file
        does not train, or whose shape does not fit the parameter's, is refused; a parameter the archive
        holds no state for gets a fresh one at its next update, as MXNet's ``Updater`` makes it (a
        ``UserWarning`` names them, as :func:`~mxopt_jax.mxnet_format.load_trainer` does). A state whose
        index has no update count restarts its count at ``begin_num_update``, as MXNet counts (a
        ``UserWarning`` says so: bias corrections then restart while the moments are those of a later step).
        """
        opt = self.optimizer
        before = dict(vars(opt))
        new = states_format.load(states, opt, max_bytes)
        try:
            missing = self._check_archive(new)
        except BaseException:
            vars(opt).clear()  # the archive's optimizer attributes were restored: nothing changes
            vars(opt).update(before)
            raise
        self.states = new
        self.states_synced = dict.fromkeys(new, False)
        self._checked = {}
        if missing:
            warn(
                f"Updater.set_states: the archive holds no state for {self._names(missing)}: as MXNet's "
                "Updater, their state is created fresh at their next update",
                UserWarning,
            )
        self._warn_uncounted("Updater.set_states")

    def _names(self, indices: list) -> str:
        """Indices as messages name them: by parameter name where the resumed file says it."""
        layout = self.layout or {}
        return str([layout[i][0] if i in layout and layout[i][0] is not None else i for i in indices][:16])

    def _check_archive(self, new: dict) -> list:
        """For an Updater resumed from an MXNet file: refuse archived states of indices the file does not train
        and states that do not fit their parameter's shape; ``->`` the trained indices without a state."""
        layout = self.layout
        if layout is None:
            return []
        stray = sorted((i for i in new if i not in layout), key=str)
        if stray:
            frozen = [i for i in stray if i in self.frozen]
            raise ValueError(
                f"Updater.set_states: the archive holds states for indices {stray[:16]}, which the resumed "
                f"file does not train (its indices: {sorted(layout, key=str)[:16]}"
                + (
                    f"; {self._frozen_names(frozen)} have grad_req 'null', MXNet never updates them"
                    if frozen
                    else ""
                )
                + "): not the states of this run?"
                + self._rule()
            )
        cache = ShapeCache(self.optimizer)
        for i, st in new.items():
            _, shape, dtype = layout[i]
            if shape is None or dtype is None or fits(self.optimizer, i, st, shape, dtype, cache):
                continue
            raise ValueError(
                f"Updater.set_states: the archive's state of {self._describe(i)} holds arrays of shapes "
                f"{stored_shapes(st)}, but {type(self.optimizer).__name__} keeps "
                f"{cache.state_shapes(i, tuple(shape), dtype)} for it: the state of another parameter?"
                + self._rule()
            )
        return sorted((i for i in layout if i not in new), key=str)

    def _frozen_names(self, indices: list) -> str:
        return str([self.frozen[i][0] if self.frozen[i][0] is not None else i for i in indices][:16])

    def _warn_uncounted(self, who: str) -> None:
        """Warn when a held state's index has no update count where the next update counts: its count restarts
        at ``begin_num_update``, as MXNet's optimizer counts, while its state is that of a later step."""
        opt = self.optimizer
        table = opt._index_update_count
        lost = sorted((i for i in self.states if i not in table), key=str)
        if lost:
            warn(
                f"{who}: the states of {self._names(lost)} have no update count (device "
                f"{opt._current_device}'s counts: {sorted(table, key=str)[:16]}): as MXNet's optimizer counts, "
                f"their count restarts at begin_num_update = {opt.begin_num_update} at their next update, so "
                "what depends on it (a bias correction) starts again from there while their state is that of "
                "a later step. Restore the counts with the states (get_states(dump_optimizer=True)) or with "
                "optimizer.set_update_counts(...)",
                UserWarning,
            )


def get_updater(optimizer: Optimizer) -> Updater:
    """``Updater(optimizer)`` (MXNet's ``mx.optimizer.get_updater``).

    Examples:
      >>> import jax.numpy as jnp, numpy as np, mxopt_jax
      >>> updater = mxopt_jax.get_updater(mxopt_jax.create("sgd", learning_rate=0.1))
      >>> weight = updater(0, jnp.array([1.0, -1.0]), jnp.array([0.5, 0.5]))  # returns the new weight
      >>> print(np.asarray(weight).round(4))
      [0.4 0.6]
    """
    return Updater(optimizer)
