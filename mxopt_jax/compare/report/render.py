"""A whole study rendered: the text report (:func:`format_study`), the protocol as it ran
(:func:`describe_study`), ``study.json``'s document (:func:`study_document`), the HTML page and the files of an
output folder (:func:`write_study`). The result (:class:`mxopt_jax.compare.result.StudyResult`) holds the data;
rendering it lives here, and reads the result only."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analysis import AcrossStudies, Claim, TableAnalysis, across_claims
from ..checks import atomic_file
from ..distributed import is_writer
from ..protocol import PRESETS
from ..result import StudyResult
from ..serialize import contender_info, problem_info, write_atomic, write_document
from . import tables
from .export import write_claims_csv, write_csv, write_summary_csv
from .html import html_report, render_images
from .tables import format_report
from .text import describe

__all__ = [
    "across_studies",
    "all_claims",
    "lead_claims",
    "study_tables",
    "table_notes",
    "batching_note",
    "format_across",
    "describe_study",
    "format_study",
    "study_document",
    "study_html",
    "timing_note",
    "write_study",
]

Study = StudyResult  # what every function here renders


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
    """Wall clock, compiled programs, and where they ran: platform, devices, processes; for a resumed study,
    what the time counts (the earlier sessions' programs included)."""
    compile_s = sum(p["compile_s"] for p in study.programs)
    first = study.programs[0] if study.programs else {}
    devices = first.get("devices", 1)
    platform = first.get("platform", "")
    processes = first.get("processes", 1)
    where = f"{devices} {platform} device(s)" if platform else f"{devices} device(s)"
    if processes > 1:
        where += f" in {processes} processes"
    resumed = ""
    if study.resumed:
        n, before = int(study.resumed.get("programs", 0)), float(study.resumed.get("wall_s", 0.0))
        resumed = (
            f" The study was resumed: the time counts every session ({n} of the {len(study.programs)} programs, "
            f"{before:.0f} s, ran before it), so it is the study's whole cost."
        )
    return (
        f"Time: {study.wall_s:.0f} s wall clock, {len(study.programs)} compiled programs ({compile_s:.0f} s of "
        f"compilation, overlapped with running), {where}.{resumed}"
    )


def describe_study(study: Study) -> str:
    """The protocol in words, as ``study`` ran (:func:`mxopt_jax.compare.report.text.describe`): its plan, the
    grids as they ran, every contender's settings besides what was tuned."""
    plan = study.plan
    ran = [
        c for c in study.contenders if any(c.name in study.records.get(p.name, {}) for p in study.problems)
    ]
    searched = {c.name: set(c.defaults) if plan.search == "random" else {"learning_rate"} for c in ran}
    return describe(
        plan.preset,
        study.problems,
        [c.name for c in ran],
        grids={  # each problem's grids as they ran (extensions included)
            p.name: {n: r["selection"].lrs for n, r in study.records.get(p.name, {}).items()}
            for p in study.problems
        }
        if plan.search == "grid"
        else None,
        seeds=list(plan.seeds),
        confirm_seeds=list(plan.confirm_seeds),
        settings={
            c.name: (c.description, {k: v for k, v in c.settings.items() if k not in searched[c.name]})
            for c in ran
        },
        search=plan.search,
        trials=plan.trials,
        search_seed=plan.search_seed,
        spaces={c.name: c.hyperparameters for c in ran} if plan.search == "random" else None,
        schedule=plan.schedule,
        searches=any("report" in roles for per in study.records.values() for roles in per.values()),
    )


def across_studies(study: Study) -> list[AcrossStudies]:
    """Each problem's tables (tuned, then one-shot) read over the plan's independent studies, as the study's
    analysis holds them (:attr:`~mxopt_jax.compare.analysis.StudyAnalysis.across`); empty for a study of
    one."""
    return list(study.analysis.across)


def format_across(study: Study) -> str:
    """The tables across the plan's independent studies (the claims that hold whatever the tuning's luck, and
    the spread it makes), one per problem and mode; empty for a study of one."""
    metrics = {p.name: p.metric_name for p in study.problems}
    parts = [tables.format_across(a, metrics.get(a.problem, "metric")) for a in across_studies(study)]
    if not parts:
        return ""
    head = (
        f"== Across {1 + len(study.repeats)} independent studies (each repeats the whole tuning on its own "
        "seeds and search draws: the claims to cite; the tables after these are the first study's)"
    )
    return "\n\n".join(["\n".join(tables.wrap(head, indent="   ")), _wrapped(lead_claims(study)), *parts])


def study_tables(study: Study) -> list[tuple[int, TableAnalysis]]:
    """Every study's tables as ``(study, table)`` (study 0 first): what ``summary.csv`` holds."""
    return [(k, t) for k, s in enumerate(study.studies()) for t in s.analysis.all_tables()]


def all_claims(study: Study) -> list[Claim]:
    """Every tested pair of every table of every study (``study`` numbering them from 0; where a table's claims
    are about the optimizers under their searches, its chosen configurations' own tests follow them), then, with
    independent studies, every pair of every table across them (``study = None``): what ``claims.csv`` holds."""
    own = [
        dataclasses.replace(c, study=k)
        for k, s in enumerate(study.studies())
        for c in [*s.analysis.claims(), *s.analysis.configuration_claims()]
    ]
    return own + list(study.analysis.across_claims())


def lead_claims(study: Study) -> str:
    """What a report leads with: with independent studies, the claims about the optimizers (every across-studies
    table's claims in sentences, or why there are none); for a study of one, that its claims are about the
    configurations it chose and how to get claims about the optimizers."""
    across = across_studies(study)
    if not across:
        searched = [t for t in study.analysis.tables.values() if t.about == "optimizers"]
        if searched:
            claims = [c for t in searched for c in t.shown_claims()]
            tables_ = f"{len(searched)} tuned table{'s' if len(searched) > 1 else ''}"
            count = f"{len(claims)} in the {tables_}" if claims else f"none shown in the {tables_}"
            return (
                f"Claims about the optimizers under this search and budget: {count} (under each table, the ones "
                "that decide the most first; claims.csv holds every one, with the tests of the chosen "
                "configurations alone). One study makes them: each holds against every configuration the other "
                "contender's search tried. To see whether they carry over to other seeds and search draws, repeat "
                "the tuning: mxopt-jax compare --studies N."
            )
        return (
            "Claims in this report are about the configurations this study chose: each table's tests hold each "
            "contender's chosen configuration fixed, so the tuning's luck is part of every claim (this study did "
            "not run every configuration on the report seeds). Run the study again for claims about the optimizers "
            "under their searches, or repeat the whole tuning: mxopt-jax compare --studies N (the study is then "
            "the unit; N >= 6 can show a difference between 2 contenders, 9 among 5, 14 among 22)."
        )
    metrics = {p.name: p.metric_name for p in study.problems}
    claims = [c for a in across for c in across_claims(a) if c.shown]
    N = across[0].studies
    if claims:
        lines = [f"Claims about the optimizers, over {N} independent tunings ({len(claims)}):"]
        lines += [f"  {c.sentence(metrics.get(c.problem, ''))}." for c in claims]
        return "\n".join(lines)
    short = [a for a in across if a.pairs and not a.can_claim]
    need = sorted({a.min_studies for a in short})
    span = f"{need[0]}" if len(need) == 1 else f"{need[0]}-{need[-1]}"
    why = (
        f" {N} studies cannot support any claim in {len(short)} of the {len(across)} tables (they need {span} "
        "studies at their sizes: --studies)."
        if short
        else ""
    )
    return f"Claims about the optimizers, over {N} independent tunings: none shown.{why}"


def _wrapped(text: str) -> str:
    """``text`` with each of its lines wrapped at the report's width, continuations indented under it."""
    out: list[str] = []
    for line in text.splitlines():
        lead = line[: len(line) - len(line.lstrip())]
        out += tables.wrap(line, indent=lead + "  ")
    return "\n".join(out)


def table_notes(study: Study) -> dict[str, list[str]]:
    """``{problem: sentences}`` printed under each of that problem's tables, in the text and the HTML alike: on
    a problem with embedding tables, which contenders ran lazy updates there
    (:func:`~mxopt_jax.compare.report.tables.sparse_note`)."""
    notes = {p.name: tables.sparse_note(p, study.contenders) for p in study.problems}
    return {p: [n] for p, n in notes.items() if n}


def format_study(study: Study) -> str:
    """The text report: the results first (with independent studies, the tables across them; the overall
    ranking, then each problem's tables), then the batching check and the timings, then the protocol as it
    ran."""
    text = format_report(study.analysis, study.problems, notes=table_notes(study))
    across = format_across(study)
    verdict = tables.verdict_lines(study.analysis, study.problems)
    return "\n\n".join(
        [
            *(["\n".join(verdict)] if verdict else []),
            *([across] if across else [_wrapped(lead_claims(study))]),
            text.rstrip("\n"),
            "\n".join(tables.wrap(batching_note(study), indent="  ")),
            "\n".join(tables.wrap(timing_note(study), indent="  ")),
            describe_study(study),
        ]
    )


def study_document(study: Study) -> dict[str, Any]:
    """What ``study.json`` holds: every record of every study, the selections, the protocol's text, the plan,
    what the report needs of each problem and contender (the file reloads on its own:
    :meth:`~mxopt_jax.compare.result.StudyResult.from_json`), and the timings."""
    return {
        "protocol": describe_study(study),
        "preset": study.preset.name,
        "presets": PRESETS,
        "timings": {"wall_s": study.wall_s, "programs": study.programs, "resumed": study.resumed},
        "meta": {
            "plan": study.plan.to_dict(),
            "identical": study.identical,
            "batching": study.batching,
            "problems": {p.name: problem_info(p) for p in study.problems},
            "contenders": {c.name: contender_info(c) for c in study.contenders},
        },
        "records": [r for s in study.studies() for r in s.all_records()],
        "selections": study.selections() + study.selections("one-shot"),
    }


def study_html(study: Study, standalone: bool = True, images: Mapping[str, bytes] | None = None) -> str:
    """The study as HTML (:func:`mxopt_jax.compare.report.html.html_report`): a whole page (``report.html``)
    or, without ``standalone``, a notebook's display. ``images``: the figures as PNG bytes by file name
    (default: drawn now, when matplotlib is installed)."""
    return html_report(
        study,
        format_study(study),
        describe_study(study),
        [batching_note(study), timing_note(study)],
        lead=lead_claims(study),
        standalone=standalone,
        images=images,
    )


def write_study(study: Study, out_dir: str | Path, plots: bool = True, data: bool = True) -> list[Path]:
    """Write ``report.txt``, ``runs.csv`` (every run), ``summary.csv``, ``claims.csv``, ``study.json``,
    ``report.html`` (one self-contained page: tables, figures, protocol) and, with matplotlib and ``plots``, the
    figures (:func:`~mxopt_jax.compare.report.plots.draw_report`: ``results_<problem>.png`` per problem,
    ``sensitivity.png``, ``curves.png``, ``loss.png`` and, two problems or more, ``ranks.png`` and
    ``profile.png``) into ``out_dir``; returns the paths. Every file is written whole from ``study`` (never one
    left from before beside the new ones), each through :func:`~mxopt_jax.compare.checks.atomic_file` (never
    through a link). Without ``data``, ``study.json`` is left as it is: it is what the others are rendered from
    (``mxopt-jax report``, which read and checked it). In a study of several processes only process 0 writes;
    the others write nothing and return ``[]``."""
    if not is_writer():
        return []
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "report.txt"]
    write_atomic(out / "report.txt", format_study(study) + "\n")
    written.append(write_csv(out / "runs.csv", [r for s in study.studies() for r in s.all_records()]))
    written.append(write_summary_csv(out / "summary.csv", study_tables(study)))
    metrics = {p.name: p.metric_name for p in study.problems}
    written.append(write_claims_csv(out / "claims.csv", all_claims(study), metrics))
    if data:
        written.append(write_document(out / "study.json", study_document(study)))
    images = render_images(study) if plots else {}
    pngs = []
    for name, png in images.items():
        with atomic_file(out / name, "wb") as f:
            f.write(png)
        pngs.append(out / name)
    page = study_html(study, images=images)
    write_atomic(out / "report.html", page)
    return [*written, out / "report.html", *pngs]
