"""A pytest plugin: how much of a test run is JAX preparing programs (tracing, lowering, XLA compiling).

Each pytest process (every xdist worker too) sums JAX's own compile events (``jax.monitoring``: jaxpr
tracing, lowering to MLIR, XLA's backend compile, with the number of backend compiles) and, at exit, writes
them with the process's CPU seconds to ``$COMPILE_METER_DIR/PID.txt`` (default: ``compile_meter`` in the
temporary directory); ``python benchmarks/compile_meter.py`` sums the files and prints one line.

    rm -rf /tmp/compile_meter
    PYTHONPATH=benchmarks .venv/bin/python -m pytest -q -n 2 -p compile_meter tests/drivers tests/facade tests/rules
    .venv/bin/python benchmarks/compile_meter.py
"""

from __future__ import annotations

import atexit
import os
import pathlib
import resource
import tempfile

_DIR = pathlib.Path(
    os.environ.get("COMPILE_METER_DIR", pathlib.Path(tempfile.gettempdir()) / "compile_meter")
)
_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


def _meter() -> None:
    import jax

    totals = {"trace": 0.0, "lower": 0.0, "compile": 0.0, "compiles": 0}

    def listener(event: str, duration: float, **_: object) -> None:
        name = _EVENTS.get(event)
        if name is not None:
            totals[name] += duration
            totals["compiles"] += name == "compile"

    def report() -> None:
        r = resource.getrusage(resource.RUSAGE_SELF)
        _DIR.mkdir(parents=True, exist_ok=True)
        line = " ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in totals.items())
        (_DIR / f"{os.getpid()}.txt").write_text(f"cpu {r.ru_utime + r.ru_stime:.1f} {line}\n")

    jax.monitoring.register_event_duration_secs_listener(listener)
    atexit.register(report)


def _summary() -> str:
    sums: dict[str, float] = {}
    for f in sorted(_DIR.glob("*.txt")):
        words = f.read_text().split()
        for k, v in zip(words[::2], words[1::2], strict=True):
            sums[k] = sums.get(k, 0.0) + float(v)
    if not sums:
        return f"nothing measured in {_DIR}"
    share = (sums["trace"] + sums["lower"] + sums["compile"]) / max(sums["cpu"], 1e-9)
    return (
        f"{sums['cpu']:.0f} CPU s; XLA compiled {sums['compiles']:.0f} programs in {sums['compile']:.0f} s "
        f"({sums['compile'] / max(sums['compiles'], 1):.2f} s each); tracing {sums['trace']:.0f} s, lowering "
        f"{sums['lower']:.0f} s; preparing programs {share:.0%} of the CPU time"
    )


if __name__ == "__main__":
    print(_summary())
else:
    _meter()
