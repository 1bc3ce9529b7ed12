"""How a study's contenders are grouped into compiled programs, and what the groupings cost to compile.

For each problem (``--problems``; the quick preset's five by default), every contender of the study (the
default set, or ``--contenders``) is compiled as the study compiles it (``engine.compile_group``: the study's CPU
options, the quick preset's steps and capacity, the run axis sharded over the host devices), grouped each way
of ``--groupings``:

* ``family``: one program per family (what the study does today, ``Plan.group_by="family"``);
* ``problem``: one program holding every contender (one ``lax.switch`` of all of them);
* ``halves``: the families in two programs of about equal numbers of contenders;
* ``none``: one program per contender (``group_by="none"``).

Each program is traced, lowered and compiled in the process (``jax.jit(...).lower(...).compile()``, as
``compile_group``): process CPU seconds (``resource.getrusage``: the load of a shared machine inflates them
less than the wall clock), summed per grouping and problem. ``--calls`` then times one call of each
contender of the first ``--calls`` families in the ``problem`` program against the same contender in its
``family`` program (alternated, CPU seconds, the best of 3) and compares their records bit for bit: whether a
bigger switch costs anything at run time.

    PYTHONPATH=. .venv/bin/python benchmarks/compile_groups.py
    PYTHONPATH=. .venv/bin/python benchmarks/compile_groups.py --problems logreg --groupings family,problem,none

Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import resource
from typing import Any

import numpy as np

from mxopt_jax.compare.distributed import configure_jax


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def groupings(contenders: list[Any], ways: list[str]) -> dict[str, list[list[Any]]]:
    """The contenders grouped each way of ``ways`` (see the module's docstring)."""
    from mxopt_jax.compare.contenders import group_by_family

    by_name = {c.name: c for c in contenders}
    families = [
        [by_name[n] for n in members]
        for _, members in group_by_family(list(by_name), {c.name: c.family for c in contenders})
    ]
    out: dict[str, list[list[Any]]] = {}
    for way in ways:
        if way == "family":
            out[way] = families
        elif way == "problem":
            out[way] = [list(contenders)]
        elif way == "none":
            out[way] = [[c] for c in contenders]
        elif way == "halves":
            first: list[Any] = []
            for fam in families:
                if len(first) + len(fam) / 2 <= len(contenders) / 2:
                    first += fam
            out[way] = [first, [c for c in contenders if c not in first]]
        else:
            raise SystemExit(f"unknown grouping {way!r}: family, problem, halves or none")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", default="logreg,digits_mlp,char_lm,recommender,autoencoder")
    ap.add_argument("--contenders", default=None, help="default: every default contender")
    ap.add_argument("--groupings", default="family,problem,halves", help="default: %(default)s")
    ap.add_argument("--calls", type=int, default=0, help="families whose calls are timed (default: none)")
    args = ap.parse_args()
    configure_jax(cache=False)

    from mxopt_jax.compare import contenders as C
    from mxopt_jax.compare import engine
    from mxopt_jax.compare.presets import PRESETS
    from mxopt_jax.compare.problems import PROBLEMS

    preset = PRESETS["quick"]
    capacity = max(preset.grid_points * preset.seeds, 2 * preset.confirm_seeds)
    cs = C.resolve(args.contenders.split(",")) if args.contenders else C.default_contenders()
    ways = args.groupings.split(",")
    print(f"load average {os.getloadavg()}; {len(cs)} contenders; {capacity} runs a call\n")
    print("| problem | grouping | programs | compile CPU s, summed | largest program, CPU s |")
    print("|---|---|---|---|---|")
    totals = dict.fromkeys(ways, 0.0)
    timings = []
    for pname in args.problems.split(","):
        problem = PROBLEMS[pname]()
        steps = preset.steps(problem)
        kept: dict[str, list[engine.CompiledGroup]] = {}
        for way, groups in groupings(cs, ways).items():
            seconds = []
            progs = []
            for group in groups:
                c0 = _cpu()
                progs.append(engine.compile_group(problem, group, capacity, steps=steps))
                seconds.append(_cpu() - c0)
            totals[way] += sum(seconds)
            print(
                f"| {pname} | {way} | {len(groups)} | {sum(seconds):.1f} | {max(seconds):.1f} |", flush=True
            )
            if args.calls and way in ("family", "problem"):
                kept[way] = progs
        if args.calls and {"family", "problem"} <= set(kept):
            big = kept["problem"][0]
            for fam in kept["family"][: args.calls]:
                for i, c in enumerate(fam.contenders):
                    lrs = {"learning_rate": c.default_lr * 10.0 ** (0.5 * (np.arange(capacity) - 17) / 6)}
                    j = big.contenders.index(c)
                    best = [float("inf"), float("inf")]
                    recs: list[Any] = [fam.run(i, lrs, [0], test=False), big.run(j, lrs, [0], test=False)]
                    for _ in range(3):
                        for k, (prog, idx) in enumerate(((fam, i), (big, j))):
                            c0 = _cpu()
                            recs[k] = prog.run(idx, lrs, [0], test=False)
                            best[k] = min(best[k], _cpu() - c0)
                    same = all(
                        np.array_equal(getattr(recs[0], f), getattr(recs[1], f), equal_nan=True)
                        for f in ("train_loss", "val", "diverged_at")
                    )
                    timings.append((pname, c.name, best[0], best[1], same))
        del kept
    print("\n| grouping | compile CPU s, every problem |\n|---|---|")
    for way, total in totals.items():
        print(f"| {way} | {total:.1f} |")
    if timings:
        print(
            "\n| problem | contender | call CPU s: family program | problem program | records |\n|---|---|---|---|---|"
        )
        for pname, name, a, b, same in timings:
            print(f"| {pname} | {name} | {a:.3f} | {b:.3f} | {'bit for bit' if same else 'differ'} |")
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
