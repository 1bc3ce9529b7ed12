"""A Gluon ``Trainer`` run resumed by parameter name (``load_trainer``): ``.params`` + ``.states``, MXNet's index
order rule, frozen parameters, the gradient scale made explicit.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ..facade.updater import ShapeCache, fits, stored_shapes
from .arrays import _read_params
from .attributes import file_errors
from .checkpoint import TrainerCheckpoint
from .files import source
from .limits import Budget, check_max_bytes
from .unpickler import _read_states
from .updater import _warn, resume

#: What each parameter of a ``.params`` file is counted at by ``load_trainer``, besides its array: the JAX
#: array it becomes (bytes).
PARAM_COST = 4 * 2**10


class _Mults:
    """What MXNet's ``Trainer`` re-attaches as ``param_dict``: a Parameter's ``lr_mult`` / ``wd_mult``."""

    __slots__ = ("lr_mult", "wd_mult")

    def __init__(self, lr_mult: float, wd_mult: float) -> None:
        self.lr_mult, self.wd_mult = lr_mult, wd_mult

    def __repr__(self) -> str:
        return f"(lr_mult={self.lr_mult}, wd_mult={self.wd_mult})"


_LOSS = ("sum", "mean")


def load_trainer(
    params: str | os.PathLike | bytes,
    states: str | os.PathLike | bytes,
    *,
    loss: Literal["sum", "mean"],
    names: Sequence[str] | Mapping[str, str] | None = None,
    batch_size: int | None = None,
    lr_mult: Mapping[str, float] | None = None,
    wd_mult: Mapping[str, float] | None = None,
    optimizer: Any = None,
    lr_scheduler: Any = None,
    mxnet_version: str | None = None,
    max_bytes: int | None = None,
    frozen: Sequence[str] | None = None,
) -> TrainerCheckpoint:
    """Resume a Gluon ``Trainer`` run by parameter name: ``net.save_parameters`` + ``trainer.save_states``.

    Parameters are paired by name, as MXNet loads them. The ``.params`` names are read as ``load_parameters``
    / ``Block.load_dict`` reads them: MXNet's legacy ``arg:`` / ``aux:`` prefixes are stripped (two names that
    strip to one are refused), and a name held twice keeps its last array (as MXNet's ``nd.load``, with a
    ``UserWarning``). The order rule, one for
    both MXNet versions: MXNet's ``Trainer`` numbers the parameters in the order of
    ``sorted(net.collect_params().keys())``. In MXNet 2.0 those keys are the ``.params`` names
    (``'0.weight'``, string-sorted: ``'10.weight'`` before ``'2.weight'``), so the files tell everything. In
    MXNet 1.x they carry the block prefixes (``'conv0_weight'``, ``'batchnorm0_gamma'``), which
    ``save_parameters`` drops: pass ``names=list(net.collect_params().keys())`` or a dict
    ``{params_name: collect_params_key}``. A list is paired with the file's names by name: each key with the
    parameter whose leaf name (``'weight'``, ``'alpha_weight'``: the longest that ends the key) it ends with;
    among parameters of one leaf name, in the net's order, ``collect_params()``'s: blocks depth first, a
    block's own parameters first, its children in the order they were registered. A Sequential's numbered
    child ``'k'`` (``add()`` names it ``str(k)``, in ASCII digits) was registered k-th, whatever the records'
    order; a named child (``net.head = ...``) sits where the records put it among its siblings, as
    ``save_parameters`` writes them in registration order. Records whose numbered children are out of order
    cannot say where a named sibling sat: refused when that decides a pairing (pass a dict). A key that
    matches no parameter, or more keys than parameters of a leaf name, is refused.

    Parameters the file holds no optimizer state for are :attr:`~TrainerCheckpoint.frozen` when MXNet never
    updates them (grad_req ``'null'``: BatchNorm's running statistics, or the names passed as ``frozen``):
    refused by index, left bit-unchanged by name. Any other is :attr:`~TrainerCheckpoint.fresh`: as MXNet's
    ``Updater``, its state is created fresh at its first update (a ``UserWarning`` names them).

    Args:
      params: the ``.params`` file (or bytes) of ``net.save_parameters``.
      states: the ``.states`` file (or bytes) of ``trainer.save_states``.
      loss: the convention of the gradients you will feed: ``"sum"`` (the gradient of the loss summed over
        the batch, Gluon's habit: the file's ``rescale_grad = 1 / batch_size`` is kept, as
        ``trainer.step(batch_size)`` applies it) or ``"mean"`` (the gradient of the batch-mean loss,
        ``jax.grad``'s usual habit: already divided by the batch size, so ``rescale_grad = 1``). Required, so
        gradients are scaled exactly once.
      names: the model's ``collect_params()`` keys: required for MXNet 1.x files (see above); optional for
        2.0 (checked against the file).
      batch_size: with ``loss="sum"``, the batch size of the coming steps (``rescale_grad = 1 / batch_size``,
        as ``trainer.step(batch_size)``); default: the file's.
      lr_mult, wd_mult: the Gluon Parameters' multipliers by name (``.params`` or ``collect_params()``
        name), as MXNet's ``Trainer`` re-attaches them; they are not in MXNet's files. Without either, a
        ``UserWarning`` says so (pass ``lr_mult={}`` when no Parameter has a multiplier).
      optimizer, lr_scheduler: substitutes for an optimizer / scheduler class of your own in the file (see
        :func:`load_updater`).
      mxnet_version: ``"1"`` or ``"2"``; default: read from the ``.states`` file.
      max_bytes: the most memory reading each file may take (bytes); default ``max(64 MiB, 32 x the file's
        size)`` (see :func:`load_params` and :func:`read_states`).
      frozen: the names (``.params`` or ``collect_params()``) of parameters with grad_req ``'null'`` besides
        BatchNorm's running statistics (default: those alone); each must have no state in the file.

    Returns:
      a :class:`TrainerCheckpoint`.

    Raises:
      ValueError: a 1.x file without ``names``; names that do not pair with the file's; an optimizer state
        whose shape differs from its parameter (the message names the index, the parameter, both shapes and
        the order rule); a bad ``loss``; unknown names in ``lr_mult`` / ``wd_mult``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from mxopt_jax.mxnet_format import load_trainer
      >>> d = "tests/golden/mxnet_resume/"
      >>> ckpt = load_trainer(d + "mx20_cnn_adam.params", d + "mx20_cnn_adam.states", loss="sum",
      ...                     lr_mult={"3.bias": 2.0, "0.weight": 0.5}, wd_mult={"1.gamma": 0.0, "1.beta": 0.0})
      >>> ckpt.frozen
      ('1.running_mean', '1.running_var')
      >>> ckpt.names[:4]
      ('0.bias', '0.weight', '1.beta', '1.gamma')
      >>> print(ckpt.gradient_scale)  # doctest: +ELLIPSIS
      The file holds rescale_grad = 0.25 = 1/4: trainer.step(4) sets it, because Gluon's backward() ...
      >>> grads = {n: jnp.zeros_like(ckpt.params[n]) for n in ckpt.trainable}
      >>> new = ckpt.updater(grads, ckpt.params)
      >>> new["1.running_mean"] is ckpt.params["1.running_mean"]
      True
    """
    import jax

    _check_loss(loss, batch_size)
    cap = check_max_bytes(max_bytes)
    pdata, pwhere = source(params, "params", cap)
    pbudget = Budget(pwhere, len(pdata), cap)
    arrays = _strip_prefixes(_read_params(pdata, pwhere, pbudget), pwhere)
    pbudget.charge(len(arrays) * PARAM_COST, f"converting {len(arrays)} parameters to JAX arrays")
    sdata, swhere = source(states, "states", cap)
    sbudget = Budget(swhere, len(sdata), cap)  # reading the file and building its states: one budget
    raw_states, mxo = _read_states(sdata, swhere, cap, sbudget)
    if mxnet_version is None:
        version = "1" if (mxo is not None and not hasattr(mxo, "use_fused_step")) else "2"
    else:
        version = "1" if str(mxnet_version).startswith("1") else "2"
    file_names = list(arrays)
    key_of = _trainer_keys(names, file_names, version, pwhere, swhere)
    order = sorted(file_names, key=lambda n: key_of[n])
    index_of = {n: i for i, n in enumerate(order)}
    # multipliers by name (.params or collect_params() names)
    alias = {**{v: k for k, v in key_of.items()}, **{n: n for n in file_names}}
    lrm = _multipliers("lr_mult", lr_mult, alias, file_names, pwhere)
    wdm = _multipliers("wd_mult", wd_mult, alias, file_names, pwhere)
    if lr_mult is None and wd_mult is None:
        _warn(
            f"load_trainer: {swhere}: multipliers set on Gluon Parameters (lr_mult / wd_mult) are not in MXNet's "
            "files; pass them by name, load_trainer(..., lr_mult={'dense0_bias': 2.0}, wd_mult={...}), or "
            "lr_mult={} if no Parameter has one"
        )
    param_dict = {index_of[n]: _Mults(lrm.get(n, 1.0), wdm.get(n, 1.0)) for n in order}
    updater = resume(
        raw_states,
        mxo,
        swhere,
        sbudget,
        optimizer,
        param_dict=param_dict,
        mxnet_version=mxnet_version,
        lr_scheduler=lr_scheduler,
    )
    rule = (
        "a Gluon Trainer's index i is the i-th parameter of sorted(net.collect_params().keys())"
        + (" (MXNet 2.0: the .params names)" if names is None else " (the names passed to load_trainer)")
        + f": {', '.join(f'{i}={key_of[n]!r}' for i, n in enumerate(order))}"
    )
    null = _frozen_names(frozen, alias, file_names, pwhere)
    with file_errors(swhere):
        layout, still, fresh = _pair_states(updater, order, arrays, swhere, rule, null)
        updater.layout, updater.frozen, updater.order_rule = layout, still, rule
        r_file, b_file, why = _gradient_scale(updater.optimizer, loss, batch_size)
    if fresh:
        _warn(
            f"load_trainer: {swhere} holds no optimizer state for {[order[i] for i in sorted(fresh)]}: as MXNet's "
            "Updater, their state is created fresh at their first update (pass frozen=[...] for parameters with "
            "grad_req 'null', which MXNet never updates)"
        )
    return TrainerCheckpoint(
        names=tuple(order),
        trainable=tuple(n for i, n in enumerate(order) if i in layout),
        frozen=tuple(n for i, n in enumerate(order) if i in still),
        fresh=tuple(n for i, n in enumerate(order) if i in fresh),
        params=dict(zip(order, jax.device_put([arrays[n] for n in order]), strict=True)),
        updater=updater,
        mxnet_version=version,
        rescale_grad_in_file=r_file,
        batch_size_in_file=b_file,
        loss=loss,
        gradient_scale=why,
        key_of=key_of,
    )


def _check_loss(loss: Any, batch_size: Any) -> None:
    if loss not in _LOSS:
        raise ValueError(
            f"load_trainer: `loss` must be 'sum' (gradients of the loss summed over the batch, as Gluon's "
            f"backward()) or 'mean' (gradients of the batch-mean loss), got {loss!r}"
        )
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise ValueError(f"load_trainer: `batch_size` must be a positive int, got {batch_size!r}")


def _trainer_keys(
    names: Any, file_names: list[str], version: str, pwhere: str, swhere: str
) -> dict[str, str]:
    """``{.params name: collect_params() key}``: the keys whose sorted order is the Trainer's index order."""
    if isinstance(names, (str, bytes)) or not (names is None or isinstance(names, (Mapping, Sequence))):
        raise TypeError(
            "load_trainer: `names` must be the model's collect_params() keys, a list in collect_params() order "
            f"or a dict {{params_name: collect_params_key}}, got {type(names).__name__}"
        )
    if names is None:
        if version == "1":
            raise ValueError(
                f"load_trainer: {swhere} was written by MXNet 1.x, whose Trainer numbers the parameters by "
                "sorted(net.collect_params().keys()): prefixed names ('batchnorm0_gamma', 'conv0_weight') that "
                "save_parameters does not store. Pass names=list(net.collect_params().keys()) (in "
                "collect_params() order, which is the .params file's order) or names={params_name: "
                "collect_params_key}."
            )
        key_of = {n: n for n in file_names}
    elif isinstance(names, Mapping):
        key_of = {str(k): str(v) for k, v in names.items()}
        if set(key_of) != set(file_names):
            raise ValueError(
                f"load_trainer: `names` must map every name of {pwhere} {file_names} to its collect_params() key; "
                f"missing {sorted(set(file_names) - set(key_of))}, unknown {sorted(set(key_of) - set(file_names))}"
            )
    else:
        keys = [str(k) for k in names]
        if len(keys) != len(file_names):
            raise ValueError(
                f"load_trainer: `names` has {len(keys)} keys, the .params file {pwhere} {len(file_names)} parameters"
            )
        if set(keys) == set(file_names):
            key_of = {n: n for n in file_names}
        else:
            key_of = _pair_by_name(keys, file_names, pwhere)
    if len(set(key_of.values())) != len(key_of):
        raise ValueError("load_trainer: `names` holds a key twice")
    return key_of


_PREFIXES = ("arg:", "aux:")


def _strip_prefixes(arrays: dict[str, np.ndarray], pwhere: str) -> dict[str, np.ndarray]:
    """The file's arrays by the names MXNet loads them by: ``load_parameters`` / ``Block.load_dict`` strip the
    legacy ``arg:`` / ``aux:`` prefixes of ``Module.save_checkpoint`` files. Two names that strip to one are
    refused (a name that would match two parameters)."""
    out: dict[str, np.ndarray] = {}
    seen: dict[str, str] = {}
    for name, a in arrays.items():
        key = name[4:] if name.startswith(_PREFIXES) else name
        if key in seen:
            raise ValueError(
                f"load_trainer: {pwhere} holds {seen[key]!r} and {name!r}, which MXNet both loads as parameter "
                f"{key!r} (load_parameters strips the legacy arg: / aux: prefixes): refused"
            )
        seen[key] = name
        out[key] = a
    return out


#: The name MXNet gives a Sequential's child in ``add()``: ``str(len(self._children))``, ASCII digits without a
#: leading zero (``'²'`` or ``'٣'`` are names a user gave: named children).
_NUMBERED = re.compile(r"0|[1-9][0-9]*")


def _net_order(file_names: list[str], pwhere: str) -> list[str]:
    """The file's names in the net's order (``collect_params()``'s): depth first, a block's own parameters
    before its children, children in the order they were registered.

    A Sequential's numbered child ``'k'`` was registered k-th (``add()`` names it ``str(len(children))``), so
    numbered children follow their numbers; a named child (``net.head = ...``, ``register_child``) sits where
    the file's records put it among its siblings, as ``save_parameters`` writes them in ``collect_params()``
    order; a block's own parameters, and named children among themselves, in the order the file first names
    them. Records whose numbered children are out of their order (a file rewritten by name, which
    ``load_parameters`` accepts) do not say where a named child sat among the numbered ones: refused when it
    matters (a leaf name both have), since MXNet pairs in registration order."""
    first: dict[tuple, int] = {}
    kids: dict[tuple, list[str]] = {}
    leaves: dict[tuple, set[str]] = {}
    for n in file_names:
        parts = tuple(n.split("."))
        for k in range(1, len(parts) + 1):
            first.setdefault(parts[:k], len(first))
        for k in range(len(parts) - 1):
            sibs = kids.setdefault(parts[:k], [])
            if parts[k] not in sibs:
                sibs.append(parts[k])
            leaves.setdefault(parts[: k + 1], set()).add(parts[-1])
    rank: dict[tuple, dict[str, int]] = {}
    for parent, sibs in kids.items():
        numbered = [c for c in sibs if _NUMBERED.fullmatch(c)]
        order = sibs
        if numbered != sorted(numbered, key=int):
            named = [c for c in sibs if not _NUMBERED.fullmatch(c)]
            shared = sorted(
                set().union(*(leaves[(*parent, c)] for c in named))
                & set().union(*(leaves[(*parent, c)] for c in numbered))
            )
            if shared:
                raise ValueError(
                    f"load_trainer: the records of {pwhere} are not in the net's order (under "
                    f"{'.'.join(parent) or 'the net'!r}, the numbered children come as {numbered[:8]}), so where "
                    f"the named children {named[:8]} sat among the numbered ones cannot be told, and both hold "
                    f"parameters named {shared[:8]}: MXNet pairs them in registration order. Pass names as a "
                    "dict {params_name: collect_params_key}"
                )
            slots = iter(sorted(numbered, key=int))
            order = [next(slots) if _NUMBERED.fullmatch(c) else c for c in sibs]
        rank[parent] = {c: r for r, c in enumerate(order)}

    def key(n: str) -> tuple:
        parts = tuple(n.split("."))
        out = [(1, rank[parts[:k]][parts[k]]) for k in range(len(parts) - 1)]
        out.append((0, first[parts]))  # a block's own parameters before its children
        return tuple(out)

    return sorted(file_names, key=key)


def _leaf_of(key: str, leaves: set[str]) -> str | None:
    """The longest leaf name that ends ``key`` (``key`` itself, or after a ``_`` or a ``.``)."""
    hits = [x for x in leaves if key == x or key.endswith("_" + x) or key.endswith("." + x)]
    return max(hits, key=len) if hits else None


def _pair_by_name(keys: list[str], file_names: list[str], pwhere: str) -> dict[str, str]:
    """``{.params name: collect_params() key}`` for ``keys`` in ``collect_params()`` order (MXNet 1.x): each key
    with a parameter of the leaf name it ends with, in the net's order among those (:func:`_net_order`)."""
    groups: dict[str, list[str]] = {}
    for n in _net_order(file_names, pwhere):
        groups.setdefault(n.rsplit(".", 1)[-1], []).append(n)
    leaves = set(groups)
    key_of: dict[str, str] = {}
    for pos, k in enumerate(keys):
        leaf = _leaf_of(k, leaves)
        if leaf is None:
            raise ValueError(
                f"load_trainer: names[{pos}] = {k!r} matches no parameter of the .params file {pwhere} (it ends "
                f"with none of their leaf names {sorted(leaves)}): pass list(net.collect_params().keys()) or a "
                "dict {params_name: collect_params_key}"
            )
        if not groups[leaf]:
            taken = [c for c, n in key_of.items() if n.rsplit(".", 1)[-1] == leaf]
            raise ValueError(
                f"load_trainer: names[{pos}] = {k!r} ends with {leaf!r}, like {taken}: more keys than the "
                f".params file {pwhere} has parameters named {leaf!r}, so a name would match two things: pass a "
                "dict {params_name: collect_params_key}"
            )
        key_of[k] = groups[leaf].pop(0)
    return {n: k for k, n in key_of.items()}


_RUNNING = ("running_mean", "running_var", "moving_mean", "moving_var")


def _frozen_names(frozen: Any, alias: Mapping[str, str], file_names: list[str], pwhere: str) -> set[str]:
    """The ``.params`` names of the parameters with grad_req ``'null'``: ``frozen`` (by ``.params`` or
    ``collect_params()`` name), and BatchNorm's running statistics."""
    if frozen is None:
        frozen = ()
    if isinstance(frozen, (str, bytes)) or not isinstance(frozen, (Sequence, set, frozenset)):
        raise TypeError(
            f"load_trainer: `frozen` must be a list of parameter names, got {type(frozen).__name__}"
        )
    out = set()
    for k in frozen:
        if k not in alias:
            raise ValueError(f"load_trainer: `frozen` names {k!r}, not a parameter of {pwhere} {file_names}")
        out.add(alias[k])
    out.update(n for n in file_names if n.rsplit(".", 1)[-1].endswith(_RUNNING))
    return out


def _multipliers(
    arg: str, table: Any, alias: Mapping[str, str], file_names: list[str], pwhere: str
) -> dict[str, float]:
    """``lr_mult`` / ``wd_mult`` by ``.params`` name (given by ``.params`` or ``collect_params()`` name)."""
    if table is not None and not isinstance(table, Mapping):
        raise TypeError(
            f"load_trainer: `{arg}` must be a dict {{parameter name: multiplier}}, got {type(table).__name__}"
        )
    out = {}
    for k, v in (table or {}).items():
        if k not in alias:
            raise ValueError(f"load_trainer: `{arg}` names {k!r}, not a parameter of {pwhere} {file_names}")
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float, np.floating, np.integer))
            or not math.isfinite(v)
        ):
            raise ValueError(f"load_trainer: `{arg}[{k!r}]` must be a finite number, got {v!r}")
        out[alias[k]] = float(v)
    return out


def _pair_states(
    updater: Any, order: list[str], arrays: Mapping[str, np.ndarray], swhere: str, rule: str, null: set[str]
) -> tuple[dict, dict, set]:
    """``(layout, frozen, fresh)``: each index with a state paired with its parameter (shapes checked); the
    others frozen when their name is in ``null`` (grad_req ``'null'``: MXNet never updates them), else in the
    layout too and ``fresh`` (MXNet's Updater creates their state at their first update)."""
    opt = updater.optimizer
    stray = sorted((i for i in updater.states if not (isinstance(i, int) and 0 <= i < len(order))), key=str)
    if stray:
        raise ValueError(
            f"load_trainer: {swhere} holds states for indices {stray}, but the .params file has {len(order)} "
            f"parameters (indices 0..{len(order) - 1}): not the files of one run? Index order: {rule}"
        )
    layout, frozen, fresh = {}, {}, set()
    cache = ShapeCache(opt)
    for i, n in enumerate(order):
        a = arrays[n]
        if n in null and i in updater.states:
            raise ValueError(
                f"load_trainer: index {i} (parameter {n!r}) has an optimizer state in {swhere}, but it has "
                "grad_req 'null' (a running statistic, or named in `frozen`), which MXNet never updates: refused"
            )
        if i in updater.states:
            st = updater.states[i]
            _check_dtype(opt, i, n, a.dtype, updater.layout[i][2], swhere)
            if not fits(opt, i, st, tuple(a.shape), a.dtype, cache):
                shape = updater.layout[i][1] or stored_shapes(st)[0]
                raise ValueError(
                    f"load_trainer: index {i} (parameter {n!r}) has a state of shape {tuple(shape)} in {swhere}, "
                    f"but the parameter has shape {tuple(a.shape)}: the wrong order or the wrong names? "
                    f"Index order: {rule}"
                )
            layout[i] = (n, tuple(a.shape), a.dtype)
        elif n in null:
            frozen[i] = (n, tuple(a.shape), a.dtype)
        else:
            layout[i] = (n, tuple(a.shape), a.dtype)
            fresh.add(i)
    return layout, frozen, fresh


def _check_dtype(opt: Any, i: int, n: str, dtype: np.dtype, made_for: Any, swhere: str) -> None:
    """Refuse a state MXNet did not make for a weight of the parameter's dtype: ``made_for``, the weight dtype
    the state says (``None`` where it does not tell)."""
    mp_master = opt.multi_precision and np.dtype(dtype) == np.float16
    if made_for is not None and np.dtype(made_for) != np.dtype(dtype):
        # with multi_precision, a state made for a float16 weight is a (float32 master, state) pair
        is_mp = opt.multi_precision and np.dtype(made_for) == np.float16
        what = "a multi-precision state (float32 master)" if is_mp else "a state"
        raise ValueError(
            f"load_trainer: index {i} (parameter {n!r}) has {what} for a {np.dtype(made_for).name} weight in "
            f"{swhere}, but the parameter is {np.dtype(dtype).name}: MXNet makes the state in its weight's dtype "
            "(from a float32 master copy for a float16 weight with multi_precision): refused"
        )
    if made_for is None and mp_master:
        raise ValueError(
            f"load_trainer: index {i} (parameter {n!r}) is float16 and the optimizer has multi_precision on, but "
            f"its state in {swhere} has no float32 master copy (MXNet keeps one for such a weight): refused"
        )


def _gradient_scale(opt: Any, loss: str, batch_size: int | None) -> tuple[float, int | None, str]:
    """Set ``opt.rescale_grad`` for the gradients' convention; ``(the file's rescale_grad, its batch size,
    a sentence saying what the file holds and what the resumed run applies)``."""
    r_file = float(opt.rescale_grad)
    inv = 1.0 / r_file if r_file > 0 else math.inf
    b_file = round(inv) if math.isfinite(inv) and abs(inv - round(inv)) < 1e-6 else None
    why = f"The file holds rescale_grad = {r_file:.6g}" + (
        f" = 1/{b_file}: trainer.step({b_file}) sets it, because Gluon's backward() differentiates the loss "
        "summed over the batch."
        if b_file
        else " (the last trainer.step's scale / batch_size)."
    )
    if loss == "sum":
        if batch_size is not None:
            opt.rescale_grad = 1.0 / batch_size
        why += (
            f" loss='sum': your gradients are of the summed loss; the resumed run applies rescale_grad = "
            f"{opt.rescale_grad:.6g}"
            + (f" (1/{batch_size})" if batch_size is not None else " (the file's)")
            + "."
        )
    else:
        opt.rescale_grad = 1.0
        why += (
            " loss='mean': your gradients are of the batch-mean loss, already divided by the batch size; the "
            "resumed run applies rescale_grad = 1."
        )
    return r_file, b_file, why
