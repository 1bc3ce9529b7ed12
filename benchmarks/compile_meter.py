"""A pytest plugin: what a test run costs in CPU seconds, and how much of it is JAX preparing programs.

Each pytest process (every xdist worker too) sums JAX's own compile events (``jax.monitoring``: jaxpr
tracing, lowering to MLIR, XLA's backend compile, with the number of backend compiles) and the CPU seconds of
each test (setup, call and teardown; ``time.process_time``, all of the process's threads, plus the child
processes the test waited for, so a loaded machine does not inflate it as it does wall time; a child that
outlives its test, such as a module's fixture, counts for the test that ends it). At the end of the session it writes the process's totals to
``$COMPILE_METER_DIR/PID.txt`` and one line per test to ``PID.tests.tsv`` (default: ``compile_meter`` in the
temporary directory). ``python benchmarks/compile_meter.py`` sums the files and prints the totals;
``--tests N`` adds the N most costly tests, ``--files N`` the N most costly test files.

    rm -rf /tmp/compile_meter
    PYTHONPATH=benchmarks .venv/bin/python -m pytest -q -n 2 -p compile_meter tests/drivers tests/facade tests/rules
    .venv/bin/python benchmarks/compile_meter.py --tests 30 --files 20
"""

from __future__ import annotations

import argparse
import os
import pathlib
import resource
import tempfile
import time
from collections.abc import Generator
from typing import Any

import pytest

_DIR = pathlib.Path(
    os.environ.get("COMPILE_METER_DIR", pathlib.Path(tempfile.gettempdir()) / "compile_meter")
)
_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
_TOTALS = {"trace": 0.0, "lower": 0.0, "compile": 0.0, "compiles": 0}
_TESTS: dict[str, list[float]] = {}  # nodeid -> [CPU s, programs compiled, compile s]


def _listener(event: str, duration: float, **_: object) -> None:
    name = _EVENTS.get(event)
    if name is not None:
        _TOTALS[name] += duration
        _TOTALS["compiles"] += name == "compile"


def _meter() -> None:
    import jax

    jax.monitoring.register_event_duration_secs_listener(_listener)


def _cpu() -> float:
    """The CPU seconds of this process (all its threads) and of its children that ended."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Generator[None, None, None]:
    """Each test's CPU seconds (setup, call, teardown) and the programs XLA compiled for it."""
    cpu, compiles, compile_s = _cpu(), _TOTALS["compiles"], _TOTALS["compile"]
    yield
    row = _TESTS.setdefault(item.nodeid, [0.0, 0, 0.0])
    row[0] += _cpu() - cpu
    row[1] += _TOTALS["compiles"] - compiles
    row[2] += _TOTALS["compile"] - compile_s


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    # xdist's controller: its children are the workers, which write their own files
    controller = session.config.pluginmanager.getplugin("dsession") is not None
    whose = (resource.RUSAGE_SELF,) if controller else (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    r = [resource.getrusage(who) for who in whose]
    _DIR.mkdir(parents=True, exist_ok=True)
    line = " ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in _TOTALS.items())
    cpu = sum(u.ru_utime + u.ru_stime for u in r)
    (_DIR / f"{os.getpid()}.txt").write_text(f"cpu {cpu:.1f} {line}\n")
    rows = "".join(f"{c:.3f}\t{n:.0f}\t{s:.3f}\t{nodeid}\n" for nodeid, (c, n, s) in _TESTS.items())
    (_DIR / f"{os.getpid()}.tests.tsv").write_text(rows)


def _summary(tests: int = 0, files: int = 0) -> str:
    sums: dict[str, float] = {}
    for f in sorted(_DIR.glob("*.txt")):
        words = f.read_text().split()
        for k, v in zip(words[::2], words[1::2], strict=True):
            sums[k] = sums.get(k, 0.0) + float(v)
    if not sums:
        return f"nothing measured in {_DIR}"
    share = (sums["trace"] + sums["lower"] + sums["compile"]) / max(sums["cpu"], 1e-9)
    out = [
        f"{sums['cpu']:.0f} CPU s; XLA compiled {sums['compiles']:.0f} programs in {sums['compile']:.0f} s "
        f"({sums['compile'] / max(sums['compiles'], 1):.2f} s each); tracing {sums['trace']:.0f} s, lowering "
        f"{sums['lower']:.0f} s; preparing programs {share:.0%} of the CPU time"
    ]
    rows: list[tuple[float, int, float, str]] = []
    for f in sorted(_DIR.glob("*.tests.tsv")):
        for line in f.read_text().splitlines():
            c, n, s, nodeid = line.split("\t", 3)
            rows.append((float(c), int(n), float(s), nodeid))
    if rows:
        out.append(f"{len(rows)} tests, {sum(r[0] for r in rows):.0f} CPU s in the tests themselves")
    if tests:
        out.append(f"the {tests} most costly tests (CPU s, programs compiled, compile s):")
        out += [
            f"{c:7.2f} {n:5d} {s:7.2f}  {nodeid}" for c, n, s, nodeid in sorted(rows, reverse=True)[:tests]
        ]
    if files:
        by_file: dict[str, list[float]] = {}
        for c, n, s, nodeid in rows:
            acc = by_file.setdefault(nodeid.split("::")[0], [0.0, 0, 0.0, 0])
            acc[0] += c
            acc[1] += n
            acc[2] += s
            acc[3] += 1
        out.append(f"the {files} most costly test files (CPU s, programs compiled, compile s, tests):")
        ranked = sorted(by_file.items(), key=lambda kv: -kv[1][0])[:files]
        out += [f"{c:7.1f} {n:5.0f} {s:7.1f} {k:5.0f}  {path}" for path, (c, n, s, k) in ranked]
    return "\n".join(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Sum the compile meter's files (see the module docstring).")
    parser.add_argument("--tests", type=int, default=0, help="list the N most costly tests")
    parser.add_argument("--files", type=int, default=0, help="list the N most costly test files")
    args = parser.parse_args()
    print(_summary(args.tests, args.files))
else:
    _meter()
