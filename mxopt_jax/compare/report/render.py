"""A whole study rendered: the text report (:func:`format_study`) and the files of an output folder
(:func:`write_study`). The study object (:class:`mxopt_jax.compare.study.Study`) holds the data; rendering it
lives here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..contenders import Contender
from ..distributed import is_writer
from ..problems.base import Problem
from ..protocol import Preset, Selection
from ..records import Records
from .export import contender_info, problem_info, write_csv, write_json, write_summary_csv
from .html import html_report
from .plots import save_all
from .tables import format_report


class Study(Protocol):
    """What rendering reads of a study (:class:`mxopt_jax.compare.study.Study` is one; the report sits below
    the orchestration, so it names the fields it needs instead of importing it)."""

    preset: Preset
    problems: list[Problem]
    contenders: list[Contender]
    identical: dict[str, dict[str, list[list[str]]]]
    batching: dict[str, dict[str, float]]
    programs: list[dict[str, Any]]
    seeds: list[int]
    confirm_seeds: list[int]
    wall_s: float
    protocol: str

    @property
    def families(self) -> dict[str, str]: ...

    def identical_map(self, problem: str, mode: str = ...) -> dict[str, list[str]]: ...

    def identical_everywhere(self, mode: str = ...) -> dict[str, list[str]]: ...

    def selections(self, mode: str = ...) -> list[Selection]: ...

    def all_records(self, role: str | None = ...) -> list[Records]: ...


__all__ = [
    "Study",
    "batching_note",
    "format_study",
    "identical_by_problem",
    "study_document",
    "study_html",
    "timing_note",
    "write_study",
]


def batching_note(study: Study) -> str:
    """Whether any result depends on the other runs batched with it (the batching check)."""
    worst = [(d, p, c) for p, per in study.batching.items() for c, d in per.items()]
    if not worst:
        return "Batching check: not run."
    d, p, c = max(worst)
    if d == 0.0:
        return (
            "Batching check: every chosen configuration, run in every slot of its program, gave bit-identical "
            "final validation metrics: no result depends on which other runs shared the program."
        )
    moved = sorted((p, c, d) for d, p, c in worst if d > 0)
    listing = ", ".join(f"{c} on {p} ({d:.2g})" for p, c, d in moved[:12])
    return (
        f"Batching check: {len(moved)} of {len(worst)} chosen configurations gave a different final validation "
        f"metric when run with copies of themselves instead of the grid (largest relative difference {d:.2g}: "
        f"{c} on {p}); batched arithmetic rounds differently, and at unstable rates the difference grows. "
        f"Compare such gaps with the seed spread (the confidence intervals): {listing}."
    )


def timing_note(study: Study) -> str:
    """Wall clock, compiled programs, and where they ran: platform, devices, processes."""
    compile_s = sum(p["compile_s"] for p in study.programs)
    first = study.programs[0] if study.programs else {}
    devices = first.get("devices", 1)
    platform = first.get("platform", "")
    processes = first.get("processes", 1)
    where = f"{devices} {platform} device(s)" if platform else f"{devices} device(s)"
    if processes > 1:
        where += f" in {processes} processes"
    return (
        f"Time: {study.wall_s:.0f} s wall clock, {len(study.programs)} compiled programs ({compile_s:.0f} s of "
        f"compilation, overlapped with running), {where}."
    )


def format_study(study: Study) -> str:
    """The text report: the protocol as it ran, a table per problem (tuned and one-shot), the overall tables,
    the batching check and the timings."""
    text = format_report(
        study.problems,
        study.selections("tuned"),
        study.selections("one-shot"),
        study.protocol,
        identical={m: study.identical_everywhere(m) for m in ("tuned", "one-shot")},
        identical_by_problem={
            p.name: {m: study.identical_map(p.name, m) for m in ("tuned", "one-shot")} for p in study.problems
        },
    )
    return text + "\n\n" + batching_note(study) + "\n\n" + timing_note(study)


def study_document(study: Study) -> dict[str, Any]:
    """What ``study.json`` holds (see :func:`mxopt_jax.compare.report.export.write_json`)."""
    return {
        "records": study.all_records(),
        "selections": study.selections() + study.selections("one-shot"),
        "protocol": study.protocol,
        "preset": study.preset,
        "timings": {"wall_s": study.wall_s, "programs": study.programs},
        "meta": {
            "seeds": study.seeds,
            "confirm_seeds": study.confirm_seeds,
            "identical": study.identical,
            "batching": study.batching,
            # what the report needs of each problem and contender: the file reloads on its own
            # (mxopt_jax.compare.Study.from_json)
            "preset": study.preset.to_dict(),
            "problems": {p.name: problem_info(p) for p in study.problems},
            "contenders": {c.name: contender_info(c) for c in study.contenders},
            "search": getattr(study, "search", "grid"),
            "trials": getattr(study, "trials", None),
            "search_seed": getattr(study, "search_seed", 0),
            "schedule": getattr(study, "schedule", "constant"),
        },
    }


def identical_by_problem(study: Study) -> dict[str, dict[str, dict[str, list[str]]]]:
    """``{problem: {mode: {representative: [identical contenders]}}}``: how each table folds (the summary's
    ranks are computed over the folded table, as the text's)."""
    return {
        p.name: {m: study.identical_map(p.name, m) for m in ("tuned", "one-shot")} for p in study.problems
    }


def study_html(study: Study, standalone: bool = True, images: Mapping[str, bytes] | None = None) -> str:
    """The study as HTML (:func:`mxopt_jax.compare.report.html.html_report`): a whole page (``report.html``)
    or, without ``standalone``, a notebook's display. ``images``: the figures as PNG bytes by file name
    (default: drawn now, when matplotlib is installed)."""
    return html_report(
        study,  # type: ignore[arg-type]
        format_study(study),
        [batching_note(study), timing_note(study)],
        standalone=standalone,
        images=images,
    )


def write_study(study: Study, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """Write ``report.txt``, ``runs.csv`` (every run), ``summary.csv``, ``study.json``, ``report.html`` (one
    self-contained page: tables, figures, protocol) and, with matplotlib and ``plots``, ``sensitivity.png``,
    ``curves.png`` and (two problems or more) ``profile.png`` into ``out_dir``; returns the paths.
    In a study of several processes only process 0 writes; the others write nothing and return ``[]``."""
    if not is_writer():
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.txt"]
    (out / "report.txt").write_text(format_study(study) + "\n")
    written.append(write_csv(out / "runs.csv", study.all_records()))
    written.append(
        write_summary_csv(
            out / "summary.csv",
            study.selections() + study.selections("one-shot"),
            identical_by_problem(study),
        )
    )
    written.append(write_json(out / "study.json", study_document(study)))
    pngs: list[Path] = []
    if plots:
        pngs = save_all(
            out,
            study.problems,
            study.all_records("selection") + study.all_records("confirmation"),
            study.selections(),
            study.families,
            study.identical_everywhere("tuned"),
        )
    page = study_html(study, images={p.name: p.read_bytes() for p in pngs})
    (out / "report.html").write_text(page, encoding="utf-8")
    return [*written, out / "report.html", *pngs]
