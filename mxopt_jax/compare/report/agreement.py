"""How far two saved studies agree, rendered (``mxopt-jax agree DIR_A DIR_B``; it names the studies it compares,
and ``--study-a``/``--study-b`` pick them in a folder of several independent studies, numbered from 1 as the
report numbers them).

The quick preset's budget is a fraction of the full one's, so its tables rank early progress; whether a
ranking survives a longer budget (or another search, schedule or seed set) is a measurement, not an
assumption. :func:`compare_studies` reads each study exactly as ``mxopt-jax report`` does
(:meth:`mxopt_jax.compare.result.StudyResult.from_json`: every field checked, the result recomputed from its
records, stored selections that disagree with them refused), and renders the agreement the analysis computes
(:mod:`mxopt_jax.compare.analysis.agreement`: per problem, Kendall's tau-b of the tuned test means with its
p-value, what tau can show at that size, and the overlap of the top ``k``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.agreement import ProblemAgreement, agree, mean_tau, smallest_p, tuned_means
from ..result import StudyResult

__all__ = ["Agreement", "compare_studies"]


@dataclasses.dataclass
class Agreement:
    """How far two studies agree, problem by problem (:func:`compare_studies`); ``str()`` is the table."""

    a: str
    b: str
    k: int
    problems: list[ProblemAgreement]
    only_a: list[str] = dataclasses.field(default_factory=list)
    only_b: list[str] = dataclasses.field(default_factory=list)
    shared_seeds: list[int] = dataclasses.field(default_factory=list)

    @property
    def mean_tau(self) -> float:
        """The mean of the problems' taus (those defined): descriptive, not a test."""
        return mean_tau(self.problems)

    def format(self) -> str:
        """The comparison as text: one row per problem, what tau can show at the sizes compared, then what only
        one study ran."""
        lines = [
            f"Agreement of the tuned test means: A = {self.a}, B = {self.b}",
            "(Kendall's tau-b over the contenders both ran, 1 = the same order, -1 = reversed; p: its two-sided "
            "p-value, the chance of a tau this far from 0 if the two orders were unrelated; top-k overlap, k = "
            f"{self.k})",
        ]
        head = [
            "problem",
            "contenders",
            "tau",
            "p",
            f"top-{self.k} overlap",
            f"top-{self.k} A",
            f"top-{self.k} B",
        ]
        rows = [
            [
                w.problem,
                str(len(w.common)),
                f"{w.tau:+.2f}" if math.isfinite(w.tau) else "-",
                f"{w.p:.2g}" if math.isfinite(w.p) else "-",
                f"{w.overlap}/{min(self.k, len(w.common))}",
                ", ".join(w.top_a),
                ", ".join(w.top_b),
            ]
            for w in self.problems
        ]
        widths = [max(len(h), *(len(r[c]) for r in rows)) if rows else len(h) for c, h in enumerate(head)]
        lines.append("  ".join(f"{h:<{w}}" for h, w in zip(head, widths, strict=True)).rstrip())
        lines.append("-" * len(lines[-1]))
        lines += ["  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        mean = self.mean_tau
        lines.append(
            f"mean tau: {mean:+.2f} (descriptive, not a test)" if math.isfinite(mean) else "mean tau: -"
        )
        lines += _what_tau_shows(sorted({len(w.common) for w in self.problems if len(w.common) >= 2}))
        for w in self.problems:
            if w.only_a or w.only_b:
                lines.append(
                    f"{w.problem}: only in A: {', '.join(w.only_a) or '-'}; only in B: {', '.join(w.only_b) or '-'}"
                )
        if self.only_a or self.only_b:
            lines.append(
                f"problems only in A: {', '.join(self.only_a) or '-'}; only in B: {', '.join(self.only_b) or '-'}"
            )
        if self.shared_seeds:
            seeds = ", ".join(str(x) for x in self.shared_seeds[:8]) + (
                ", ..." if len(self.shared_seeds) > 8 else ""
            )
            lines.append(
                f"warning: A and B share {len(self.shared_seeds)} seed(s) ({seeds}): their runs are not independent "
                "(on the same seeds and configuration they are the same runs), so their agreement says little; "
                "compare studies on disjoint seeds (--study-a/--study-b pick another study of a folder)."
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def _what_tau_shows(sizes: list[int]) -> list[str]:
    """What tau can show at each number of contenders compared: the orders there are and the smallest p-value
    (:func:`~mxopt_jax.compare.analysis.agreement.smallest_p`), and where that is above 5 %, that it cannot."""
    out = []
    for n in sizes:
        p = smallest_p(n)
        line = (
            f"tau over {n} contenders: {math.factorial(n):,} possible orders; even the same order (tau = +1) has "
            f"p = {p:.2g}"
        )
        if p > 0.05:
            line += (
                f", so {n} contenders cannot show that two rankings agree at the 5 % level (it takes 5: p = "
                f"{smallest_p(5):.2g} at best); read tau here as a description"
            )
        out.append(line)
    return out


def _load(
    study: str | Path | Mapping[str, Any], number: int
) -> tuple[str, dict[str, dict[str, float]], set[int]]:
    """``(label, {problem: {contender: tuned test mean, lower is better}}, seeds)`` of study ``number`` (from 1)
    of a saved plan (a folder holding ``study.json``, the file, or
    :func:`~mxopt_jax.compare.serialize.read_document`'s dict), read as ``mxopt-jax report`` reads it
    (:meth:`~mxopt_jax.compare.result.StudyResult.from_json`): ``seeds`` every selection and report seed that
    study ran on; the label names the study (``study 2 of 3``)."""
    if isinstance(study, Mapping):
        result = StudyResult.from_document(study, "the study document")
        label = result.plan.preset.name
    else:
        path = Path(study)
        if path.is_dir():
            path = path / "study.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"compare_studies: no study.json at {path} (write one with `mxopt-jax compare`)"
            )
        result = StudyResult.from_json(path)
        plan = result.plan
        how = f"preset {plan.preset.name}, {plan.search} search"
        if plan.search == "random":
            how += f" ({plan.trials} trials)"
        if plan.schedule != "constant":
            how += f", {plan.schedule} schedule"
        label = f"{path.parent.name or path.name} ({how})"
    studies = result.studies()
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(studies):
        raise ValueError(
            f"compare_studies: {label} holds {len(studies)} independent stud{'y' if len(studies) == 1 else 'ies'} "
            f"(numbered 1 to {len(studies)}, as its report numbers them), got study {number!r}"
        )
    label += f", study {number} of {len(studies)}"
    chosen = studies[number - 1]
    selections = chosen.selections("tuned")
    seeds = {int(x) for r in chosen.all_records() for x in np.asarray(r.seeds).ravel()}
    seeds |= {int(x) for sel in selections for x in np.asarray(sel.report_seeds).ravel()}
    means = tuned_means(selections)
    if not means:
        raise ValueError(f"compare_studies: {label} holds no tuned selections")
    return label, means, seeds


def compare_studies(
    a: str | Path | Mapping[str, Any],
    b: str | Path | Mapping[str, Any],
    k: int = 3,
    study_a: int = 1,
    study_b: int = 1,
) -> Agreement:
    """How far two saved studies agree, per problem both ran: Kendall's tau-b of the tuned test means with its
    p-value and the overlap of the top ``k``, over the contenders both ran (a diverged mean, ``inf``, ties with
    another); the text says what tau can show at the sizes compared.

    ``a`` and ``b``: folders written by ``mxopt-jax compare`` (or :meth:`Study.write`), their ``study.json``
    files, or :func:`~mxopt_jax.compare.serialize.read_document`'s dicts, each read as ``mxopt-jax report``
    reads it (:meth:`~mxopt_jax.compare.result.StudyResult.from_json`); ``study_a``, ``study_b``: which of a
    folder's independent studies (``--studies``), numbered from 1 as the report numbers them (summary.csv's
    ``study`` column counts from 0). The labels name the studies compared. Contenders and problems in one study
    only are listed. Two studies that ran on some of the same seeds are not independent (on the same seeds and
    configuration they are the same runs): :attr:`Agreement.shared_seeds` lists those seeds and the text warns.

    Raises
    ------
    ValueError
        ``k`` not an int >= 1; a study number outside the folder's studies; a study without tuned selections; a
        ``study.json`` that cannot be read as a study (naming the file and the field).
    """
    label_a, ma, seeds_a = _load(a, study_a)
    label_b, mb, seeds_b = _load(b, study_b)
    return Agreement(
        a=label_a,
        b=label_b,
        k=k,
        problems=agree(ma, mb, k),
        only_a=[p for p in ma if p not in mb],
        only_b=[p for p in mb if p not in ma],
        shared_seeds=sorted(seeds_a & seeds_b),
    )
