"""The result of :func:`~mxopt_jax.mxnet_format.load_trainer`: a Gluon ``Trainer`` run resumed by parameter
name, and its functional (``to_optax``) form for ``jax.jit``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from .. import facade


class TrainerCheckpoint:
    """A Gluon ``Trainer`` run resumed by parameter name (made by :func:`load_trainer`).

    Attributes:
      names: the ``.params`` name of each Trainer index (``names[i]`` is index ``i``).
      trainable: the parameters MXNet updates, in index order: those the file holds optimizer states for,
        and the :attr:`fresh` ones.
      frozen: the names without optimizer state that MXNet never updates, in index order: parameters with
        grad_req ``'null'`` (BatchNorm's ``running_mean`` / ``running_var``, or the ``frozen`` names passed),
        which nothing here updates either (:attr:`updater` refuses them by index and leaves them
        bit-unchanged by name).
      fresh: the other names without optimizer state, in index order: as MXNet's ``Updater``, their state is
        created fresh (``create_state``) at their first update, their count starting at
        ``begin_num_update``.
      params: every parameter of the ``.params`` file, ``{name: jax.Array}``, in index order.
      updater: the :class:`mxopt_jax.Updater` continuing the run; ``updater(grads, params)`` with two dicts
        keyed by name returns the new ``{name: weight}`` (frozen entries unchanged, the same objects).
      mxnet_version: ``"1"`` or ``"2"``.
      rescale_grad_in_file: the ``rescale_grad`` of the Trainer's last ``step(batch_size)``:
        ``1 / batch_size``, because Gluon's ``backward()`` differentiates the loss summed over the batch.
      batch_size_in_file: ``1 / rescale_grad_in_file`` when that is a whole number, else ``None``.
      loss: ``"sum"`` or ``"mean"``: the convention of the gradients you feed.
      gradient_scale: a sentence saying what the file holds, why, and what the resumed run applies.
    """

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)

    names: tuple[str, ...]
    trainable: tuple[str, ...]
    frozen: tuple[str, ...]
    fresh: tuple[str, ...]
    params: dict
    updater: Any
    mxnet_version: str
    rescale_grad_in_file: float
    batch_size_in_file: int | None
    loss: str
    gradient_scale: str

    @property
    def optimizer(self) -> Any:
        """The facade optimizer (``updater.optimizer``)."""
        return self.updater.optimizer

    def index(self, name: str) -> int:
        """The Trainer index of parameter ``name``."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(
                f"no parameter {name!r} in the checkpoint (its names: {list(self.names)})"
            ) from None

    def to_optax(
        self, params: Any = None, *, paths: Mapping[str, str] | Callable[[str], str] | None = None
    ) -> tuple[Any, Any]:
        """``(tx, opt_state)``: the functional (jittable) form of the resumed run for a parameter pytree.

        ``tx`` is an ``optax.GradientTransformation`` over the whole tree: the optimizer of the file (its
        functional constructor, same hyperparameters, scheduler at the file's position, the Parameter
        multipliers per leaf, ``rescale_grad`` for :attr:`loss`) on the trainable leaves, and an update of
        ``-0.0`` on the frozen ones, so ``optax.apply_updates`` leaves them bit-unchanged; ``opt_state`` holds
        the file's states and count. ``tx.update(grads, opt_state, params)`` under ``jax.jit`` continues
        MXNet's run. The state is the :class:`updater`'s current one (call it before or after facade steps).
        The transform sees each parameter under the name MXNet's optimizer (and the facade) gives index ``i``,
        ``idx2name[i]``, else ``str(i)`` (a Trainer's files have no ``idx2name``): the name LARS's exemptions
        read, and the key of the parameter's entries in ``opt_state``.

        Args:
          params: the parameter pytree (default: :attr:`params`, a dict keyed by ``.params`` name).
          paths: ``.params`` name -> the leaf's path in ``params`` (keys joined by ``'/'``, e.g.
            ``'conv/kernel'``), as a dict or a callable ``name -> path``; default: the name itself. Every
            leaf of ``params`` must be one of the checkpoint's parameters, with its shape.

        Raises:
          ValueError: a name without a leaf, a leaf without a name, a shape that differs, per-index update
            counts that differ (the functional state has one count), two parameters of one MXNet name, or an
            optimizer with no functional form.
        """
        import jax
        import jax.numpy as jnp
        import optax

        from ..facade.rule_backed import CLASSES, param_name
        from ..validation import path_name

        opt = self.updater.optimizer
        cls: Any = next((k for k in type(opt).__mro__ if k in set(CLASSES.values())), None)
        if cls is None or type(opt).step is not cls.step or type(opt).update is not facade.Optimizer.update:
            raise ValueError(
                f"to_optax: {type(opt).__name__} has no functional form (only mxopt_jax's own optimizers, "
                "unmodified, have one); continue with the facade updater"
            )
        params = self.params if params is None else params
        if paths is None:
            path_of = {n: n for n in self.names}
        elif callable(paths):
            path_of = {n: str(paths(n)) for n in self.names}
        elif isinstance(paths, Mapping):
            missing = [n for n in self.names if n not in paths]
            if missing:
                raise ValueError(f"to_optax: `paths` has no entry for {missing}")
            path_of = {n: str(paths[n]) for n in self.names}
        else:
            raise TypeError(f"to_optax: `paths` must be a dict or a callable, got {type(paths).__name__}")
        flat, _ = jax.tree_util.tree_flatten_with_path(params)
        leaf_of = {path_name(p): leaf for p, leaf in flat}
        name_of = {v: k for k, v in path_of.items()}
        stray = sorted(set(leaf_of) - set(name_of))
        if stray:
            raise ValueError(f"to_optax: leaves {stray} of `params` are not parameters of the checkpoint")
        for n in self.names:
            p = path_of[n]
            if p not in leaf_of:
                raise ValueError(f"to_optax: no leaf at path {p!r} for parameter {n!r} in `params`")
            if tuple(jnp.shape(leaf_of[p])) != tuple(self.params[n].shape):
                raise ValueError(
                    f"to_optax: the leaf at {p!r} has shape {tuple(jnp.shape(leaf_of[p]))}, parameter {n!r} "
                    f"{tuple(self.params[n].shape)} in the checkpoint"
                )
        trainable = list(self.trainable)
        idx = {n: self.index(n) for n in trainable}
        counts = {opt.index_update_counts.get(idx[n], opt.begin_num_update) for n in trainable}
        if len(counts) > 1:
            raise ValueError(
                f"to_optax: the parameters' update counts differ ({sorted(counts)}); the functional state keeps "
                "one count: continue with the facade updater"
            )
        count = counts.pop() if counts else opt.begin_num_update
        # the transform sees each parameter under the name the facade's rule sees (LARS's exemptions read it):
        # idx2name's, else str(index), as MXNet names it; never the .params name
        key = {n: param_name(opt.idx2name, idx[n]) for n in trainable}
        if len(set(key.values())) != len(key):
            twice = sorted({k for k in key.values() if list(key.values()).count(k) > 1})
            raise ValueError(
                f"to_optax: parameters share the name {twice} (idx2name, or str(index) where it names none), "
                "which the functional state keys them by: continue with the facade updater"
            )
        kw = {p: getattr(opt, p) for p in opt._own}
        kw.update(
            learning_rate=None if opt.lr_scheduler is not None else opt.lr,
            lr_scheduler=opt.lr_scheduler,
            wd=opt.wd,
            rescale_grad=opt.rescale_grad,
            clip_gradient=opt.clip_gradient,
            multi_precision=opt.multi_precision,
            begin_num_update=int(count),
            lr_mult={key[n]: float(opt._mult(idx[n], opt.lr_mult, "lr_mult")) for n in trainable},
            wd_mult={key[n]: float(opt._mult(idx[n], opt.wd_mult, "wd_mult")) for n in trainable},
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            inner = cls._ctor(**kw)
        frozen_paths = {path_of[n] for n in self.frozen}
        train_paths = {path_of[n]: n for n in trainable}

        def pick(tree: Any) -> dict:
            leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
            by_path = {path_name(p): x for p, x in leaves}
            return {key[n]: by_path[p] for p, n in train_paths.items()}

        def init_fn(params: optax.Params) -> optax.OptState:
            return inner.init(pick(params))

        def update_fn(
            updates: optax.Updates, state: optax.OptState, params: optax.Params | None = None
        ) -> tuple[optax.Updates, optax.OptState]:
            new, state = inner.update(pick(updates), state, None if params is None else pick(params))
            leaves, treedef = jax.tree_util.tree_flatten_with_path(updates if params is None else params)
            out = []
            for p, x in leaves:
                at = path_name(p)
                out.append(jnp.full_like(x, -0.0) if at in frozen_paths else new[key[train_paths[at]]])
            return jax.tree_util.tree_unflatten(treedef, out), state

        tx = optax.GradientTransformation(init_fn, update_fn)
        sub = {key[n]: jnp.asarray(leaf_of[path_of[n]]) for n in trainable}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            template = inner.init(sub)
        rule = cls._rule
        fields: dict[str, dict] = {f: {} for f in rule.fields}
        masters: dict = {}
        for n in trainable:
            if idx[n] not in self.updater.states:  # fresh: the state create_state makes, as the template's
                tm = getattr(template, "master", None)
                masters[n] = None if tm is None else tm[key[n]]
                for fname in rule.fields:
                    tmpl = getattr(template, fname)
                    fields[fname][n] = None if tmpl is None or tmpl[key[n]] is None else tmpl[key[n]]
                continue
            st = self.updater.states[idx[n]]
            mp = opt.multi_precision and jnp.dtype(self.params[n].dtype).itemsize < 4
            master, f = (st[0], st[1]) if mp else (None, st)
            for j, fname in enumerate(rule.fields):
                fields[fname][n] = f[j]
            masters[n] = master
        repl: dict[str, Any] = {"count": jnp.zeros([], jnp.int32)}
        for fname in rule.fields:
            tmpl = getattr(template, fname)
            if tmpl is None:
                continue
            repl[fname] = {
                key[n]: (None if tmpl[key[n]] is None else jnp.asarray(fields[fname][n], tmpl[key[n]].dtype))
                for n in trainable
            }
        if getattr(template, "master", None) is not None:
            repl["master"] = {
                key[n]: (None if template.master[key[n]] is None else jnp.asarray(masters[n], jnp.float32))
                for n in trainable
            }
        if rule.uses_key:
            repl["key"] = opt._key
        return tx, template._replace(**repl)
