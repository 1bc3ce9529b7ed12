"""Library-agnostic timing engine, shared by the JAX harness and the side-library workers.

No JAX import: ``mxnet_side.py`` and ``torch_side.py`` run this in their own virtualenvs.

Method (the same in every process):

* A :class:`Contender` is one way of doing an optimizer step. ``prepare()`` allocates its buffers (untimed),
  ``first()`` runs the first step (timed: it includes tracing / compilation / lazy state creation), and
  ``run(k)`` runs ``k`` back-to-back steps followed by one synchronisation, so asynchronous dispatch
  pipelines as in a training loop.
* After the first call each contender is warmed up and *calibrated*: ``k`` is chosen so that one sample
  lasts about ``sample_s`` seconds.
* Samples are then taken round-robin over all contenders of a group (``rounds`` rounds, the starting
  contender rotating every round), so slow drifts and bursts of machine noise hit every contender alike.
  A sample's value is its wall time divided by ``k``.
* Per sample we also read the minor page faults (``getrusage``) and the peak resident set size during the
  sample (``VmHWM`` of ``/proc/self/status`` after resetting it through ``/proc/self/clear_refs``; where
  that is not allowed, the growth of ``ru_maxrss``, which only sees new process-wide peaks).

A *slot* is what a round visits once: a local contender, or a worker process that runs one sample of each
of its own contenders (:class:`WorkerSlot`). Workers speak JSON lines on stdin/stdout (:func:`serve`).
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

# --------------------------------------------------------------------------- process memory


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_bytes() -> int | None:
    """Current resident set size (``VmRSS``), or ``None`` where ``/proc`` is unavailable."""
    kib = _status_kib("VmRSS")
    return None if kib is None else kib * 1024


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS counter (``VmHWM``) to the current RSS; ``False`` if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakMeter:
    """Peak RSS growth over a region: ``with PeakMeter() as m: ...; m.delta`` (bytes, ``None`` if unknown)."""

    def __enter__(self) -> PeakMeter:
        self.exact = reset_peak()
        self.start = rss_bytes() if self.exact else _maxrss_bytes()
        self.faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        return self

    def __exit__(self, *exc: Any) -> None:
        self.faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - self.faults0
        if self.exact:
            peak = _status_kib("VmHWM")
            self.delta = None if peak is None or self.start is None else max(0, peak * 1024 - self.start)
        else:
            self.delta = max(0, _maxrss_bytes() - self.start)


PEAK_METHOD = (
    "peak RSS growth: VmHWM (reset via /proc/self/clear_refs) minus VmRSS at the start of the region"
    if reset_peak()
    else "peak RSS growth: ru_maxrss growth (process-wide high-water mark; 0 unless a new peak is reached)"
)


# --------------------------------------------------------------------------- contenders and slots


class Contender:
    """One way of running an optimizer step. Subclasses implement the four methods."""

    label: str = "?"
    #: extra facts reported with the results (bytes per step, notes, ...); filled by subclasses
    info: dict

    def prepare(self) -> None:  # allocate buffers, build state (untimed)
        pass

    def first(self) -> None:  # first step, synchronised (timed: includes compilation)
        self.run(1)

    def run(self, k: int) -> None:  # k steps, then synchronise
        raise NotImplementedError

    #: attributes holding buffers, programs or optimizer objects; ``close`` drops them
    buffers: tuple[str, ...] = ()

    def close(self) -> None:  # free buffers
        for name in self.buffers:
            if hasattr(self, name):
                delattr(self, name)


class Skip(Exception):
    """Raised by ``prepare``/``first`` when a contender does not apply; its message is reported."""


def _err(exc: BaseException) -> str:
    if isinstance(exc, Skip):
        return f"skipped: {exc}"
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({os.path.basename(last[0].filename)}:{last[0].lineno})" if last else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"error: {type(exc).__name__}: {msg[:300]}{where}"


class LocalSlot:
    """A contender in this process."""

    def __init__(self, contender: Contender, sample_s: float, warmup: int = 2, max_k: int = 1000) -> None:
        self.c = contender
        self.sample_s = sample_s
        self.warmup = warmup
        self.max_k = max_k
        self.k = 1
        self.ok = False

    @property
    def labels(self) -> list[str]:
        return [self.c.label]

    def setup(self) -> dict[str, dict]:
        """Prepare, time the first call, warm up and calibrate ``k``. Returns ``{label: setup facts}``."""
        c = self.c
        facts: dict[str, Any] = {}
        try:
            with PeakMeter() as mem:
                c.prepare()
                t0 = time.perf_counter()
                c.first()
                # work done for the first call during prepare (e.g. a trace that the first call reuses)
                facts["first_call_s"] = time.perf_counter() - t0 + getattr(c, "extra_first_s", 0.0)
            facts["setup_peak_bytes"] = mem.delta
            if self.warmup:
                c.run(self.warmup)
            t0 = time.perf_counter()
            c.run(1)
            one = max(time.perf_counter() - t0, 1e-7)
            self.k = int(min(self.max_k, max(1, math.ceil(self.sample_s / one))))
            facts["k"] = self.k
            self.ok = True
        except Exception as exc:  # noqa: BLE001 - reported, never fatal: the library may be mid-change
            facts["error"] = _err(exc)
            self.close()
        facts.update(getattr(c, "info", {}) or {})
        return {c.label: facts}

    def sample(self) -> dict[str, dict]:
        if not self.ok:
            return {}
        try:
            with PeakMeter() as mem:
                t0 = time.perf_counter()
                self.c.run(self.k)
                dt = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            self.ok = False
            return {self.c.label: {"error": _err(exc)}}
        return {self.c.label: {"ms": 1e3 * dt / self.k, "faults": mem.faults / self.k, "peak": mem.delta}}

    def close(self) -> None:
        try:
            self.c.close()
        except Exception:  # noqa: BLE001
            pass


def run_slots(
    slots: list,
    rounds: int,
    log: Callable[[str], None] | None = None,
    on_setup: Callable[[list[str]], None] | None = None,
) -> dict[str, dict]:
    """Set up every slot, then sample them round-robin for ``rounds`` rounds; close them all.

    Returns ``{label: {"setup": {...}, "samples": [per-round dicts], ...}}``; per-round dicts hold
    ``ms``, ``faults``, ``peak`` (or ``error``). Round ``r`` visits the slots starting at ``r mod n``.
    ``on_setup(labels)`` is called before each slot is set up (the harness uses it for time limits).
    """
    out: dict[str, dict] = {}
    try:
        for s in slots:
            if on_setup:
                on_setup(s.labels)
            for label, facts in s.setup().items():
                out[label] = {"setup": facts, "samples": []}
                if log:
                    fc = facts.get("first_call_s")
                    log(
                        f"    {label:<24} "
                        + (f"first call {fc:.2f} s" if fc is not None else facts.get("error", ""))
                    )
        if on_setup:
            on_setup([])
        n = len(slots)
        for r in range(rounds):
            for j in range(n):
                s = slots[(r + j) % n]
                for label, smp in s.sample().items():
                    smp["round"] = r
                    out.setdefault(label, {"setup": {}, "samples": []})["samples"].append(smp)
    finally:
        for s in slots:
            s.close()
    for rec in out.values():
        summarize(rec)
    return out


def summarize(rec: dict) -> None:
    """Add ``ms`` (median), ``ms_q1``/``ms_q3``, ``faults`` (median per step), ``peak`` (max) to ``rec``."""
    ms = [s["ms"] for s in rec["samples"] if "ms" in s]
    errs = [s["error"] for s in rec["samples"] if "error" in s]
    if errs and "error" not in rec["setup"]:
        rec["setup"]["error"] = errs[0]
    if not ms:
        rec["ms"] = None
        return
    rec["ms"] = statistics.median(ms)
    if len(ms) >= 2:
        q = statistics.quantiles(ms, n=4, method="inclusive")
        rec["ms_q1"], rec["ms_q3"] = q[0], q[2]
    else:
        rec["ms_q1"] = rec["ms_q3"] = ms[0]
    rec["faults"] = statistics.median(s["faults"] for s in rec["samples"] if "ms" in s)
    peaks = [s["peak"] for s in rec["samples"] if s.get("peak") is not None]
    rec["peak"] = max(peaks) if peaks else None
    rec["n"] = len(ms)


def paired_ratio(results: dict, num: str, den: str) -> float | None:
    """Median over rounds of ``t_num / t_den`` measured in the same round (``None`` if not available)."""
    a = {s["round"]: s["ms"] for s in results.get(num, {}).get("samples", []) if "ms" in s}
    b = {s["round"]: s["ms"] for s in results.get(den, {}).get("samples", []) if "ms" in s}
    rs = [a[r] / b[r] for r in a if r in b and b[r] > 0]
    return statistics.median(rs) if rs else None


# --------------------------------------------------------------------------- worker protocol


class WorkerSlot:
    """A side-library worker process: one slot whose sample is one round of the worker's own contenders.

    The worker is started once (``argv``) and asked, per group, to ``setup`` the contenders it has for
    ``(workload, optimizer)``; if it has none, the slot is left out of the group.
    """

    def __init__(self, name: str, argv: list[str], env: dict | None = None, timeout_s: float = 1800) -> None:
        import subprocess

        self.name = name
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            bufsize=1,
            env=env,
        )
        self.hello = self._recv()
        self.round = 0

    def _send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def _recv(self) -> dict:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                try:
                    rc = self.proc.wait(timeout=10)
                except Exception:  # noqa: BLE001
                    rc = None
                raise RuntimeError(f"{self.name} worker exited (rc={rc})")
            line = line.strip()
            if line.startswith("{"):
                return json.loads(line)
            # anything else a library prints on stdout is passed to our stderr
            print(f"[{self.name}] {line}", file=sys.stderr)

    def request(self, msg: dict) -> dict:
        self._send(msg)
        return self._recv()

    # slot interface, for one group at a time
    def open_group(self, workload: str, optimizer: str, quick: bool, sample_s: float) -> bool:
        """Ask whether the worker has contenders for this group (cheap); ``setup`` builds them."""
        self.round = 0
        self._group = {"workload": workload, "optimizer": optimizer, "quick": quick, "sample_s": sample_s}
        self._labels = list(self.request({"cmd": "has", **self._group}).get("labels", []))
        return bool(self._labels)

    @property
    def labels(self) -> list[str]:
        return [f"{self.name}:{x}" for x in self._labels] or [f"{self.name}:*"]

    def setup(self) -> dict[str, dict]:
        try:
            return self.request({"cmd": "setup", **self._group}).get("setup", {})
        except Exception as exc:  # noqa: BLE001
            return {f"{self.name}_worker": {"error": _err(exc)}}

    def sample(self) -> dict[str, dict]:
        try:
            rep = self.request({"cmd": "round", "round": self.round})
        except Exception as exc:  # noqa: BLE001
            return {f"{self.name}_worker": {"error": _err(exc)}}
        self.round += 1
        return rep.get("samples", {})

    def close(self) -> None:  # end of group
        try:
            self.request({"cmd": "close"})
        except Exception:  # noqa: BLE001
            pass

    def shutdown(self) -> None:
        try:
            self._send({"cmd": "exit"})
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def serve(make_contenders: Callable[[str, str, bool], list[Contender]], hello: dict) -> None:
    """Worker main loop: JSON commands on stdin, one JSON reply per line on stdout.

    ``make_contenders(workload, optimizer, quick)`` returns this library's contenders for a group (may be
    empty). Library chatter on stdout is harmless: the harness only parses lines that start with ``{``.
    """
    out = sys.stdout
    slots: list[LocalSlot] = []

    def reply(msg: dict) -> None:
        out.write(json.dumps(msg) + "\n")
        out.flush()

    reply({"hello": hello})
    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg.get("cmd")
        if cmd == "has":
            try:
                cs = make_contenders(msg["workload"], msg["optimizer"], bool(msg.get("quick")))
                reply({"labels": [c.label for c in cs]})
            except Exception as exc:  # noqa: BLE001
                reply({"labels": [], "error": _err(exc)})
        elif cmd == "setup":
            for s in slots:
                s.close()
            try:
                cs = make_contenders(msg["workload"], msg["optimizer"], bool(msg.get("quick")))
            except Exception as exc:  # noqa: BLE001
                reply({"setup": {"?": {"error": _err(exc)}}})
                slots = []
                continue
            slots = [LocalSlot(c, float(msg.get("sample_s", 0.1))) for c in cs]
            setup: dict[str, dict] = {}
            for s in slots:
                setup.update(s.setup())
            reply({"setup": setup})
        elif cmd == "round":
            r = int(msg.get("round", 0))
            samples: dict[str, dict] = {}
            n = len(slots)
            for j in range(n):
                samples.update(slots[(r + j) % n].sample())
            reply({"samples": samples})
        elif cmd == "close":
            for s in slots:
                s.close()
            slots = []
            import gc

            gc.collect()
            reply({"ok": True})
        elif cmd == "exit":
            break
        else:
            reply({"error": f"unknown command {cmd!r}"})


def standalone(
    make_contenders: Callable[[str, str, bool], list[Contender]],
    groups: list[tuple[str, str]],
    rounds: int,
    quick: bool,
    sample_s: float,
    hello: dict,
) -> dict:
    """Run ``groups`` in this process (no harness) and return the JSON-able results."""
    res: dict = {"hello": hello, "groups": []}
    for wl, opt in groups:
        cs = make_contenders(wl, opt, quick)
        if not cs:
            continue
        print(f"  {wl}/{opt}", file=sys.stderr)
        slots = [LocalSlot(c, sample_s) for c in cs]
        res["groups"].append({"workload": wl, "optimizer": opt, "results": run_slots(slots, rounds)})
    return res


def side_main(
    make_contenders: Callable[[str, str, bool], list[Contender]], hello: Callable[[], dict], keys: list[str]
) -> None:
    """Command line of a side-library script: ``--serve`` (worker for run.py) or a standalone run (JSON out)."""
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--serve", action="store_true", help="JSON-lines worker for benchmarks/run.py")
    p.add_argument("--workloads", default="A,B,C,D")
    p.add_argument("--optimizers", default=",".join(keys))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sample-ms", type=float, default=100.0)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.serve:
        serve(make_contenders, hello())
        return
    groups = [
        (w, k)
        for w in a.workloads.split(",")
        for k in a.optimizers.split(",")
        if w != "D" or k in ("sgd_mom", "adam")  # run.py times D for these two only
    ]
    res = standalone(make_contenders, groups, a.rounds, a.quick, a.sample_ms / 1e3, hello())
    json.dump(res, sys.stdout, indent=1)
    sys.stdout.write("\n")
