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
    """``jax.shard_map`` (newer JAX); ``jax.experimental.shard_map.shard_map`` with ``check_rep`` at the floor."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_vma)
    from jax.experimental.shard_map import shard_map as experimental_shard_map

    return experimental_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check_vma)
