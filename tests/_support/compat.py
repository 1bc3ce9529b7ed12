"""The few JAX / optax APIs the tests need that moved or appeared inside the support window (README
"Supported versions"): each helper uses the newest spelling where it exists and the floor's otherwise."""

from __future__ import annotations

import contextlib
from typing import Any

import jax
import optax


def enable_x64() -> contextlib.AbstractContextManager:
    """``jax.enable_x64(True)`` (newer JAX); ``jax.experimental.enable_x64()`` at the floor (JAX 0.4.35)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    from jax.experimental import enable_x64 as experimental_enable_x64

    return experimental_enable_x64(True)


def partition(transforms: dict, labels: Any) -> optax.GradientTransformation:
    """``optax.partition`` (optax >= 0.2.5); its former name ``optax.multi_transform`` at the floor (0.2.4)."""
    fn = getattr(optax, "partition", None) or optax.multi_transform
    return fn(transforms, labels)


def shard_map(f: Any, *, mesh: Any, in_specs: Any, out_specs: Any, check_vma: bool = True) -> Any:
    """``jax.shard_map`` (newer JAX); ``jax.experimental.shard_map.shard_map`` at the floor, with its static
    replication check off: JAX 0.4.35's checker fails inside ``lax.scan`` bodies (a rule returns None). The
    check only verifies ``out_specs``; the computed values are the same."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma)
    from jax.experimental.shard_map import shard_map as experimental_shard_map

    return experimental_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def keystr(path: Any) -> str:
    """``jax.tree_util.keystr(path, simple=True, separator="/")`` (newer JAX): keys joined by ``/``."""
    try:
        return jax.tree_util.keystr(path, simple=True, separator="/")
    except TypeError:  # JAX 0.4.35: keystr has no `simple` / `separator`: the library's own join
        from mxopt_jax._src.validation import path_name

        return path_name(path)


def nnx_optimizer(model: Any, tx: optax.GradientTransformation) -> Any:
    """``nnx.Optimizer(model, tx, wrt=nnx.Param)`` (flax >= 0.11); flax 0.10 (the floor) takes no ``wrt``."""
    from flax import nnx

    try:
        return nnx.Optimizer(model, tx, wrt=nnx.Param)
    except TypeError:
        return nnx.Optimizer(model, tx)


def nnx_update(optimizer: Any, model: Any, grads: Any) -> None:
    """``optimizer.update(model, grads)`` (flax >= 0.11); ``optimizer.update(grads)`` in flax 0.10."""
    import inspect

    params = [p for p in inspect.signature(optimizer.update).parameters.values() if p.kind != p.VAR_KEYWORD]
    if len(params) >= 2:
        optimizer.update(model, grads)
    else:
        optimizer.update(grads)


def nnx_leaves(state: Any) -> list:
    """The arrays of an ``nnx.State``: through ``nnx.to_pure_dict`` in newer flax, its own leaves in flax 0.10.0."""
    from flax import nnx

    to_pure_dict = getattr(nnx, "to_pure_dict", None)
    return jax.tree.leaves(to_pure_dict(state) if to_pure_dict is not None else state)
