"""Where a study's time goes, program by program: compilation against runs, and what makes a program big.

For each problem (``--problems``) and family (``--families``) under the quick preset, the family's program is
built as a study builds it (``compile_group``, the capacity of the quick preset's selection call) and measured:

* **compile**: seconds and process CPU seconds (user + sys, ``resource.getrusage``: honest on a shared
  machine), the lowered program's size (characters and lines of its StableHLO text), and the XLA compiles
  counted (``jax.monitoring``'s backend-compile events);
* **what is big**: the same program with one branch (the family's first contender alone), and with the
  problem's metric replaced by a constant (no evaluation function in the program), each compiled too;
* **runs**: one call of the program with the test split evaluated and one without (a study's selection runs
  are without; ``train_run``'s ``test``), and one call of the no-evaluation variant: the evaluations' share of
  a run's time.

    PYTHONPATH=. XLA_FLAGS=--xla_force_host_platform_device_count=2 \\
        .venv/bin/python benchmarks/study_profile.py --problems logreg,digits_mlp --families "Adam family"

Prints one Markdown table; every figure includes the machine's load (printed), so compare CPU seconds.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import time

import jax
import jax.numpy as jnp
import numpy as np

from mxopt_jax.compare import contenders as C
from mxopt_jax.compare import engine
from mxopt_jax.compare.presets import PRESETS
from mxopt_jax.compare.problems import PROBLEMS

_compiles = [0, 0.0]


def _listener(event: str, duration: float, **_: object) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        _compiles[0] += 1
        _compiles[1] += duration


jax.monitoring.register_event_duration_secs_listener(_listener)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _measure(fn):
    n0, s0 = _compiles
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, _cpu() - c0, _compiles[0] - n0


def _hlo_size(problem, group, capacity, steps):
    """Characters and lines of the program's StableHLO (lowered, not compiled)."""
    names = engine._tuned_names(group, ("learning_rate",))

    def program(index, test, hp, keys, data):
        def one(row, key):
            return engine.group_run(problem, group, names, index, row, key, data, steps, None, test)

        return jax.vmap(one)(hp, keys)

    data = jax.tree.map(jnp.asarray, engine._host_data(problem))
    width = max(len(v) for v in names.values())
    lowered = jax.jit(program).lower(
        np.int32(0),
        np.bool_(True),
        jax.ShapeDtypeStruct((capacity, width), jnp.float32),
        jax.ShapeDtypeStruct((capacity, 2), jnp.uint32),
        data,
    )
    text = lowered.as_text()
    return len(text), text.count("\n")


def _call_s(prog, test):
    G, S = PRESETS["quick"].grid_points, PRESETS["quick"].seeds
    lrs = prog.contenders[0].default_lr * 10.0 ** (0.5 * (np.arange(G) - G // 2))
    prog.run(0, {"learning_rate": lrs}, list(range(S)), test=test)  # warm (transfers, first call)
    (_, wall, cpu, _) = _measure(lambda: prog.run(0, {"learning_rate": lrs}, list(range(S)), test=test))
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="logreg,digits_mlp")
    ap.add_argument("--families", default="Adam family")
    args = ap.parse_args()
    preset = PRESETS["quick"]
    G, S, K = preset.grid_points, preset.seeds, preset.confirm_seeds
    capacity = max(G * S, 2 * K)
    print(f"devices: {len(jax.devices())} x {jax.devices()[0].platform}; load average {os.getloadavg()}")
    print(f"capacity {capacity} runs per call (quick preset: {G} rates x {S} seeds, {K} confirmation seeds)")
    print()
    print(
        "| problem / family | variant | compile s (CPU s) | XLA compiles | StableHLO chars (lines) "
        "| call s (CPU s), test on | test off | no evaluation |"
    )
    print("|---|---|---|---|---|---|---|---|")
    by_family: dict[str, list[C.Contender]] = {}
    for c in C.default_contenders():
        by_family.setdefault(c.family, []).append(c)
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        steps = preset.steps(problem)
        no_eval = dataclasses.replace(
            problem, metric=(lambda p, b: jnp.float32(0.0)) if not problem.stateful else (lambda p, s, b: 0.0)
        )
        for fam in args.families.split(","):
            group = by_family[fam.strip()]
            for label, prob, members in (
                (f"{len(group)} contenders (switch)", problem, group),
                (f"{group[0].name} alone", problem, group[:1]),
                ("switch, metric a constant", no_eval, group),
            ):
                prog, wall, cpu, n = _measure(
                    lambda prob=prob, members=members, steps=steps: engine.compile_group(
                        prob, members, capacity, steps=steps
                    )
                )
                chars, lines = _hlo_size(prob, members, capacity, steps)
                if prob is problem and len(members) == len(group):
                    on, off = _call_s(prog, True), _call_s(prog, False)
                    calls = f"{on[0]:.2f} ({on[1]:.2f}) | {off[0]:.2f} ({off[1]:.2f}) | "
                elif prob is no_eval:
                    ne = _call_s(prog, False)
                    calls = f"— | — | {ne[0]:.2f} ({ne[1]:.2f})"
                else:
                    calls = "— | — | —"
                print(
                    f"| {pname} / {fam} | {label} | {wall:.1f} ({cpu:.1f}) | {n} | {chars:,} ({lines:,}) | {calls} |",
                    flush=True,
                )
                del prog


if __name__ == "__main__":
    main()
