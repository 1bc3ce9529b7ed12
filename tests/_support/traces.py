"""How many programs JAX traced and XLA compiled inside a ``with`` block, through JAX's public monitoring API
(``jax.monitoring``: the durations JAX records for each jaxpr trace and each backend compile), for the tests
that prove a changed hyperparameter recompiles nothing where no Python side effect can count the traces (a
compiled function inside the library or the app)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import jax
import jax.numpy as jnp

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "traces",
    "/jax/core/compile/backend_compile_duration": "compiles",
}
_TOTALS = {"traces": 0, "compiles": 0}
_LISTENING = False


@dataclasses.dataclass
class Programs:
    """What a ``with counting() as n:`` block made: ``n.traces`` jaxpr traces, ``n.compiles`` XLA compiles."""

    traces: int = 0
    compiles: int = 0


def _listen(event: str, duration: float, **_: object) -> None:
    name = _EVENTS.get(event)
    if name is not None:
        _TOTALS[name] += 1


def _start() -> None:
    """Register the listener once per process, and check that it hears a trace and a compile (were JAX to
    rename its events, every count would read 0 and the tests could not fail)."""
    global _LISTENING
    if _LISTENING:
        return
    jax.monitoring.register_event_duration_secs_listener(_listen)
    _LISTENING = True
    before = dict(_TOTALS)
    jax.jit(lambda x: x * 3 + 1)(jnp.arange(5))  # a new function: one trace, one compile
    if not (_TOTALS["traces"] > before["traces"] and _TOTALS["compiles"] > before["compiles"]):
        raise RuntimeError(f"jax.monitoring no longer reports {sorted(_EVENTS)}: the counts would be blind")


@contextlib.contextmanager
def counting() -> Iterator[Programs]:
    """Count the traces and compiles of the block (any function's, in this process)."""
    _start()
    start = dict(_TOTALS)
    out = Programs()
    try:
        yield out
    finally:
        out.traces = _TOTALS["traces"] - start["traces"]
        out.compiles = _TOTALS["compiles"] - start["compiles"]
