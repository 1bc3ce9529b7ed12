"""Running a study: problems x contenders under a preset of the protocol (the orchestration).

:func:`study` compiles one program per problem and group of contenders (:func:`engine.compile_group`; a group is
a family by default), in a background thread while the previous program runs, then for every contender:

1. runs its grid (:meth:`protocol.Preset.grid`, centred on its default rate) x the preset's seeds;
2. selects on validation (:func:`protocol.select`); where the chosen rate is on the grid's edge, runs the grid
   shifted past that edge with the same compiled program (rates are inputs) and selects again on the union,
   up to ``extend`` times; a rate still on the edge stays flagged;
3. checks that the chosen rate's result does not depend on the other rates batched with it: the same program
   runs the chosen rate in every slot, and the largest relative difference of the final validation metric
   from the grid run is recorded (``Study.batching``);
4. takes the grid's centre (the default rate) as the one-shot result (the Crowded Valley's smallest budget:
   MXNet's defaults, no tuning).

Contenders whose records agree at every rate their grids share (the same update at these settings, e.g. SGD,
ccSGD and Test at MXNet's defaults) are reported as one entry (``Study.identical``).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from . import protocol
from . import report as _report
from .contenders import Contender, resolve
from .engine import CompiledGroup, compile_group
from .problems.base import Problem
from .records import Records

__all__ = ["Study", "study", "identical_groups"]

Progress = Callable[[str, float], None]


@dataclasses.dataclass
class Study:
    """Everything a study produced (reports read it; :mod:`mxopt_jax.compare.report` writes it out).

    Attributes:
      preset: the protocol preset used.
      problems: the problems, in order; ``contenders``: the contenders, in order.
      records: ``problem -> contender -> Records`` of the tuned grid (extensions merged).
      tuned / one_shot: ``problem -> contender -> Selection`` (the protocol's results in each mode).
      identical: ``problem -> [[name, name, ...], ...]``: contenders whose records agree exactly at every rate
        their grids share (reported as one entry, the first name).
      batching: ``problem -> contender ->`` the largest relative difference of the final validation metric
        at the chosen rate between the grid run and a run where every slot holds the chosen rate (0.0: the
        result does not depend on the other rates in the program).
      programs: one dict per compiled program: problem, name, contenders, compile_s, devices.
      wall_s: wall-clock seconds of the whole study.
      protocol: the protocol in words (:func:`mxopt_jax.compare.report.text.describe`).
    """

    preset: protocol.Preset
    problems: list[Problem]
    contenders: list[Contender]
    records: dict[str, dict[str, Records]]
    tuned: dict[str, dict[str, protocol.Selection]]
    one_shot: dict[str, dict[str, protocol.Selection]]
    identical: dict[str, list[list[str]]]
    batching: dict[str, dict[str, float]]
    programs: list[dict[str, Any]]
    wall_s: float
    protocol: str

    @property
    def families(self) -> dict[str, str]:
        return {c.name: c.family for c in self.contenders}

    def identical_map(self, problem: str) -> dict[str, list[str]]:
        """``{representative: [the contenders identical to it]}`` on ``problem``."""
        return {g[0]: g[1:] for g in self.identical.get(problem, [])}

    def selections(self, mode: str = "tuned") -> list[protocol.Selection]:
        """Every selection of ``mode`` (``"tuned"`` or ``"one-shot"``), problem by problem."""
        table = self.tuned if mode == "tuned" else self.one_shot
        return [sel for p in self.problems for sel in table[p.name].values()]

    def all_records(self) -> list[Records]:
        return [r for p in self.problems for r in self.records[p.name].values()]

    def identical_everywhere(self) -> dict[str, list[str]]:
        """``{representative: [others]}`` for contenders identical on every problem (folded across problems)."""
        maps = [self.identical_map(p.name) for p in self.problems]
        out: dict[str, list[str]] = {}
        for rep, others in maps[0].items() if maps else ():
            common = [o for o in others if all(o in m.get(rep, []) for m in maps[1:])]
            if common:
                out[rep] = common
        return out

    def report(self) -> str:
        """The text report: the protocol, a table per problem (tuned and one-shot), overall, modes."""
        text = _report.format_report(
            self.problems,
            self.selections("tuned"),
            self.selections("one-shot"),
            self.protocol,
            self.identical_everywhere(),
            identical_by_problem={p.name: self.identical_map(p.name) for p in self.problems},
        )
        return text + "\n\n" + self.batching_note() + "\n\n" + self.timing_note()

    def batching_note(self) -> str:
        """Whether any result depends on the other rates batched with it (the batching check)."""
        worst = [(d, p, c) for p, per in self.batching.items() for c, d in per.items()]
        if not worst:
            return "Batching check: not run."
        d, p, c = max(worst)
        if d == 0.0:
            return (
                "Batching check: every chosen rate, run in every slot of its program, gave bit-identical final "
                "validation metrics: no result depends on which other rates shared the program."
            )
        moved = sorted((p, c, d) for d, p, c in worst if d > 0)
        listing = ", ".join(f"{c} on {p} ({d:.2g})" for p, c, d in moved[:12])
        return (
            f"Batching check: {len(moved)} of {len(worst)} chosen rates gave a different final validation metric "
            f"when run with copies of themselves instead of the grid (largest relative difference {d:.2g}: {c} on "
            f"{p}); batched arithmetic rounds differently, and at unstable rates the difference grows. Compare "
            f"such gaps with the seed spread (the confidence intervals): {listing}."
        )

    def timing_note(self) -> str:
        compile_s = sum(p["compile_s"] for p in self.programs)
        return (
            f"Time: {self.wall_s:.0f} s wall clock, {len(self.programs)} compiled programs ({compile_s:.0f} s of "
            f"compilation, overlapped with running), {self.programs[0]['devices'] if self.programs else 1} device(s)."
        )

    def write(self, out_dir: str | Path, plots: bool = True) -> list[Path]:
        """Write ``report.txt``, ``runs.csv`` (every run's record), ``summary.csv``, ``study.json`` and, with
        matplotlib and ``plots``, ``sensitivity.png``, ``curves.png`` and ``profile.png``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        records = self.all_records()
        written = [out / "report.txt"]
        (out / "report.txt").write_text(self.report() + "\n")
        written.append(_report.write_csv(out / "runs.csv", records))
        written.append(
            _report.write_summary_csv(out / "summary.csv", self.selections() + self.selections("one-shot"))
        )
        doc = {
            "records": records,
            "selections": self.selections() + self.selections("one-shot"),
            "protocol": self.protocol,
            "preset": self.preset,
            "timings": {"wall_s": self.wall_s, "programs": self.programs},
            "meta": {
                "identical": self.identical,
                "batching": self.batching,
                "problems": {p.name: p.description for p in self.problems},
                "contenders": {c.name: c.description for c in self.contenders},
            },
        }
        written.append(_report.write_json(out / "study.json", doc))
        if plots:
            written += _report.save_all(
                out, self.problems, records, self.selections(), self.families, self.identical_everywhere()
            )
        return written

    def reported(self, problem: str) -> list[str]:
        """The contenders reported as entries of ``problem`` (one per group of identical ones)."""
        hidden = {n for group in self.identical.get(problem, []) for n in group[1:]}
        return [c.name for c in self.contenders if c.name in self.tuned[problem] and c.name not in hidden]


def _groups(contenders: Sequence[Contender], group_by: str) -> list[list[Contender]]:
    if group_by == "none":
        return [[c] for c in contenders]
    if group_by != "family":
        raise ValueError(f"group_by must be 'family' or 'none', got {group_by!r}")
    out: dict[str, list[Contender]] = {}
    for c in contenders:
        out.setdefault(c.family, []).append(c)
    return list(out.values())


def identical_groups(records: Mapping[str, Records], rtol: float = 0.0) -> list[list[str]]:
    """Groups (of two or more) of contenders whose records agree at every rate their grids share (3 or more).

    Agreement is exact by default (``rtol=0``; NaN equals NaN): same training losses, validation and test
    metrics at every evaluation point and seed.
    """
    names = list(records)
    parent = {n: n for n in names}

    def same(a: Records, b: Records) -> bool:
        ia, ib = [], []
        for i, lr in enumerate(a.lrs):
            j = np.flatnonzero(np.isclose(b.lrs, lr, rtol=1e-6, atol=0.0))
            if j.size:
                ia.append(i)
                ib.append(int(j[0]))
        if len(ia) < 3 or not np.array_equal(a.seeds, b.seeds) or a.val.shape[2:] != b.val.shape[2:]:
            return False
        return all(
            np.allclose(getattr(a, f)[ia], getattr(b, f)[ib], rtol=rtol, atol=0.0, equal_nan=True)
            for f in ("train_loss", "val", "test")
        )

    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if parent[b] == b and parent[a] == a and same(records[a], records[b]):
                parent[b] = a
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(parent[n], []).append(n)
    return [g for g in groups.values() if len(g) > 1]


def _rel_diff(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    both_bad = ~np.isfinite(a) & ~np.isfinite(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    d = np.where(both_bad | (a == b), 0.0, d)
    return float(np.nanmax(np.where(np.isfinite(d), d, 1.0))) if d.size else 0.0


def study(
    problems: Sequence[Problem] | Problem,
    contenders: Sequence[str | Contender] | None = None,
    preset: str | protocol.Preset = "quick",
    *,
    seeds: int | Sequence[int] | None = None,
    extend: int = 2,
    check_batching: str = "best",
    group_by: str = "family",
    devices: Sequence[jax.Device] | None = None,
    progress: Progress | None = None,
) -> Study:
    """Run the protocol on ``problems`` for ``contenders`` (names, :class:`Contender` objects, or ``None``: all).

    Args:
      problems: one :class:`~mxopt_jax.compare.problems.base.Problem` or several (a user's own included).
      contenders: names (``"adam"``, ``"optax.adam"``, ``"all"``, ``"mxopt"``, ``"optax"``) or contenders
        (:func:`mxopt_jax.compare.contenders.contender` wraps any optax optimizer factory).
      preset: ``"quick"``, ``"full"`` or a :class:`protocol.Preset`.
      seeds: how many seeds (``0, 1, ...``) or which; defaults to the preset's.
      extend: how many times a grid may be extended past an edge where the chosen rate sits.
      check_batching: ``"all"``, ``"best"`` (default: the best contender of each compiled program, i.e. of
        each family) or ``"none"``: run the chosen rate in every slot of the program and record the largest
        relative difference of the final validation metric from the grid run.
      group_by: ``"family"`` (one compiled program per problem and family) or ``"none"`` (one per contender).
      devices: the devices to shard the runs over (default: all).
      progress: ``(label, fraction_done)`` callback (the command line draws a bar with an ETA).
    """
    t_start = time.perf_counter()
    problems = [problems] if isinstance(problems, Problem) else list(problems)
    if not problems:
        raise ValueError("study: no problems given")
    if not all(isinstance(p, Problem) for p in problems):
        raise TypeError("study: `problems` must be Problem objects (see mxopt_jax.compare.problems)")
    names = [p.name for p in problems]
    if len(set(names)) != len(names):
        raise ValueError(f"study: problem names must be unique, got {names}")
    if isinstance(preset, str):
        if preset not in protocol.PRESETS:
            raise ValueError(f"preset must be one of {sorted(protocol.PRESETS)} or a Preset, got {preset!r}")
        preset = protocol.PRESETS[preset]
    if seeds is None:
        seeds = preset.seeds
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if len(seed_list) < 2:
        raise ValueError(f"study: need at least 2 seeds for confidence intervals, got {seed_list}")
    if not isinstance(extend, int) or extend < 0:
        raise ValueError(f"extend must be an int >= 0, got {extend!r}")
    check = check_batching
    if check not in ("all", "best", "none"):
        raise ValueError(f"check_batching must be 'all', 'best' or 'none', got {check_batching!r}")
    cs = resolve(contenders)
    G, S = preset.grid_points, len(seed_list)

    jobs = [(p, g) for p in problems for g in _groups(cs, group_by)]
    # work units for the progress bar: a compile ~ 4 units, a contender's runs ~ 1 unit (measured on CPU)
    checks = {"all": lambda g: len(g), "best": lambda g: 1, "none": lambda g: 0}[check]
    total = sum(4 + len(g) + checks(g) for _, g in jobs)
    done = 0.0

    def tick(label: str, units: float) -> None:
        nonlocal done
        done += units
        if progress is not None:
            progress(label, min(done / total, 1.0))

    def build(p: Problem, group: list[Contender]) -> CompiledGroup:
        return compile_group(
            p, group, G, S, steps=preset.steps(p), devices=devices, name=f"{p.name}/{group[0].family}"
        )

    records: dict[str, dict[str, Records]] = {p.name: {} for p in problems}
    tuned: dict[str, dict[str, protocol.Selection]] = {p.name: {} for p in problems}
    one_shot: dict[str, dict[str, protocol.Selection]] = {p.name: {} for p in problems}
    batching: dict[str, dict[str, float]] = {p.name: {} for p in problems}
    programs: list[dict[str, Any]] = []
    if progress is not None:
        progress(f"compiling {jobs[0][0].name}/{jobs[0][1][0].family}", 0.0)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        futures = [pool.submit(build, p, g) for p, g in jobs]
        for (p, group), fut in zip(jobs, futures, strict=True):
            prog = fut.result()
            programs.append(
                {
                    "problem": p.name,
                    "name": prog.name,
                    "contenders": [c.name for c in group],
                    "compile_s": prog.compile_s,
                    "devices": prog.n_devices,
                    "runs": G * S,
                    "steps": prog.steps,
                }
            )
            tick(f"compiled {prog.name} ({prog.compile_s:.1f} s)", 4)
            for i, c in enumerate(group):
                grid = preset.grid(c.default_lr)
                rec = prog.run(i, grid, seed_list)
                one_shot[p.name][c.name] = protocol.select(_column(rec, G // 2), p)
                sel = protocol.select(rec, p)
                for _ in range(extend):
                    if sel.on_edge is None:
                        break
                    more = prog.run(i, protocol.shift_grid(grid, sel.on_edge), seed_list)
                    grid = more.lrs
                    rec = protocol.combine(rec, more)
                    sel = protocol.select(rec, p)
                records[p.name][c.name] = rec
                tuned[p.name][c.name] = sel
                tick(f"{p.name}: {c.name}", 1)
            if check != "none":
                chosen = group if check == "all" else [_best(group, tuned[p.name])]
                for c in chosen:
                    i, sel = group.index(c), tuned[p.name][c.name]
                    alone = prog.run(i, np.full(G, sel.lr), seed_list)
                    batching[p.name][c.name] = _rel_diff(
                        alone.val[0, :, -1], records[p.name][c.name].val[sel.index, :, -1]
                    )
                    tick(f"{p.name}: {c.name} (batching check)", 1)
            del prog
    identical = {name: identical_groups(records[name]) for name in records}
    for name, groups in identical.items():
        for group in groups:
            for member in group[1:]:
                records[name][member].note = f"identical to {group[0]} (same records at every shared rate)"
    grids = {c.name: records[problems[0].name][c.name].lrs for c in cs}
    text = _report.describe(preset, problems, [c.name for c in cs], grids=grids)
    return Study(
        preset=preset,
        problems=problems,
        contenders=cs,
        records=records,
        tuned=tuned,
        one_shot=one_shot,
        identical=identical,
        batching=batching,
        programs=programs,
        wall_s=time.perf_counter() - t_start,
        protocol=text,
    )


def _best(group: Sequence[Contender], sels: Mapping[str, protocol.Selection]) -> Contender:
    """The contender of ``group`` with the lowest mean selection score (final validation metric)."""
    return min(group, key=lambda c: float(np.min(sels[c.name].scores)))


def _column(rec: Records, index: int) -> Records:
    """The records of one rate of the grid (the one-shot view of the default rate)."""
    sl = slice(index, index + 1)
    return dataclasses.replace(
        rec,
        lrs=rec.lrs[sl],
        train_loss=rec.train_loss[sl],
        val=rec.val[sl],
        test=rec.test[sl],
        steps_to_target=rec.steps_to_target[sl],
        run_s=rec.run_s / len(rec.lrs),  # the time of one rate's runs: ms/step stays per run
    )
