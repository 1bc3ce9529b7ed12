"""MXNet's ``Updater``: per-index states, dtype grouping and ``aggregate_num`` chunks over an ``Optimizer``."""

from __future__ import annotations

import math
from typing import Any

import jax

from . import states as states_format
from .optimizer import Optimizer, _device_id
from .rule_backed import as_array, as_grad


def _sync_state(state: Any, weight: jax.Array) -> Any:
    devices = getattr(weight, "devices", None)
    if devices is None:
        return state
    dev = next(iter(devices()))

    def move(x):
        return jax.device_put(x, dev) if isinstance(x, jax.Array) else x

    return jax.tree.map(move, state)


class Updater:
    """MXNet's ``Updater``: keeps per-index states and applies an :class:`Optimizer`.

    ``updater(index, grad, weight)`` (note MXNet's argument order) returns the new weight; with lists of
    indices, gradients and weights it returns the list of new weights. States are created lazily on the
    first call for an index (``optimizer.create_state_multi_precision``) and kept in ``states``.
    """

    def __init__(self, optimizer: Optimizer) -> None:
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 1

    def __call__(self, index: Any, grad: Any, weight: Any) -> Any:
        if not isinstance(index, (list, tuple)):
            return self._one(index, grad, weight)
        indices, grads, weights = list(index), list(grad), list(weight)
        weights = [as_array(w) for w in weights]
        grads = [as_grad(g) for g in grads]
        opt = self.optimizer
        if weights:
            opt._set_current_device(_device_id(weights[0]))
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                idx = idx.decode()
                indices[i] = idx
            self._ensure_state(idx, weights[i])
        new_weights = list(weights)
        if self.aggregate_updates:
            agg = opt.aggregate_num
            if isinstance(agg, float) and math.isinf(agg):
                chunks = [list(range(len(indices)))]
            else:
                groups: dict = {}
                for pos, w in enumerate(weights):
                    groups.setdefault(w.dtype, []).append(pos)
                chunks = [g[k : k + agg] for g in groups.values() for k in range(0, len(g), agg)]
        else:
            chunks = [[pos] for pos in range(len(indices))]
        for chunk in chunks:
            ci = [indices[p] for p in chunk]
            nw, ns = opt.update_multi_precision(
                ci, [weights[p] for p in chunk], [grads[p] for p in chunk], [self.states[i] for i in ci]
            )
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
        self._ensure_state(index, weight)
        (new_weight,), (new_state,) = opt.update_multi_precision(
            [index], [weight], [grad], [self.states[index]]
        )
        self.states[index] = new_state
        return new_weight

    def _ensure_state(self, idx: Any, weight: jax.Array) -> None:
        if idx not in self.states:
            self.states[idx] = self.optimizer.create_state_multi_precision(idx, weight)
            self.states_synced[idx] = True
        elif not self.states_synced[idx]:
            self.states[idx] = _sync_state(self.states[idx], weight)
            self.states_synced[idx] = True

    # ------------------------------------------------------------------ serialisation (no pickle)
    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Serialise the states (and, with ``dump_optimizer``, the optimizer's dynamic attributes) in
        mxopt_jax's safe format (:func:`mxopt_jax._src.facade.states.dump`: zip + JSON manifest, no pickle)."""
        return states_format.dump(self.states, self.optimizer if dump_optimizer else None)

    def set_states(self, states: bytes) -> None:
        """Load states written by :meth:`get_states` (optimizer attributes too, when they were dumped).

        Pickled MXNet states and anything else not in this format raise ``ValueError``; nothing is ever
        unpickled. When the bytes carry the optimizer, its attributes are restored into ``self.optimizer``
        (which must be of the same class), so a trajectory continues bit-exactly.
        """
        self.states = states_format.load(states, self.optimizer)
        self.states_synced = dict.fromkeys(self.states, False)


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
