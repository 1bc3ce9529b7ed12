"""How far two saved studies agree (``mxopt-jax agree DIR_A DIR_B``; it names the studies it compares, and
``--study-a``/``--study-b`` pick them in a folder of several independent studies).

The quick preset's budget is a fraction of the full one's, so its tables rank early progress; whether a
ranking survives a longer budget (or another search, schedule or seed set) is a measurement, not an
assumption. :func:`compare_studies` reads two ``study.json`` files (:func:`~mxopt_jax.compare.serialize.read_document`) and, per
problem, compares the tuned test means of the contenders both ran: Kendall's tau-b of the two orders (ties,
such as identical contenders or two diverged ones, counted as ties) and the overlap of the top ``k`` (by mean,
name breaking ties). Contenders in one study only are listed and left out of both numbers.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats

from ..selection import Selection
from ..serialize import read_document

__all__ = ["Agreement", "ProblemAgreement", "compare_studies", "kendall_tau"]


def kendall_tau(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b of two paired samples (ties in either corrected for; ``+inf`` equals ``+inf``).

    ``scipy.stats.kendalltau(a, b, variant="b")`` with the inputs checked. 1: the same order; -1: reversed;
    NaN with fewer than two pairs or when one sample is all ties.
    """
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"kendall_tau: need two 1-D samples of the same length, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("kendall_tau: NaN has no order (a diverged result is +inf)")
    if len(x) < 2 or (x == x[0]).all() or (y == y[0]).all():
        return math.nan
    return float(scipy.stats.kendalltau(x, y, variant="b")[0])


@dataclasses.dataclass
class ProblemAgreement:
    """One problem's agreement between studies ``a`` and ``b``.

    Attributes:
      problem: the problem; ``common``: the contenders both ran on it; ``only_a``/``only_b``: those one ran.
      tau: Kendall's tau-b of the tuned test means over ``common`` (NaN with fewer than two).
      top_a, top_b: the ``k`` best of ``common`` in each study (lowest mean first).
      overlap: ``len(set(top_a) & set(top_b))``.
    """

    problem: str
    common: list[str]
    only_a: list[str]
    only_b: list[str]
    tau: float
    top_a: list[str]
    top_b: list[str]
    overlap: int


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
        """The mean of the problems' taus (those defined)."""
        taus = [w.tau for w in self.problems if math.isfinite(w.tau)]
        return float(np.mean(taus)) if taus else math.nan

    def format(self) -> str:
        """The comparison as text: one row per problem, then what only one study ran."""
        lines = [
            f"Agreement of the tuned test means: A = {self.a}, B = {self.b}",
            "(Kendall's tau-b over the contenders both ran, 1 = the same order; top-k overlap, k = "
            f"{self.k})",
        ]
        head = [
            "problem",
            "contenders",
            "tau",
            f"top-{self.k} overlap",
            f"top-{self.k} A",
            f"top-{self.k} B",
        ]
        rows = [
            [
                w.problem,
                str(len(w.common)),
                f"{w.tau:+.2f}" if math.isfinite(w.tau) else "-",
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
        lines.append(f"mean tau: {mean:+.2f}" if math.isfinite(mean) else "mean tau: -")
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


def _load(
    study: str | Path | Mapping[str, Any], index: int = 0
) -> tuple[str, dict[str, dict[str, float]], set[int]]:
    """``(label, {problem: {contender: tuned test mean, lower is better}}, seeds)`` of study ``index`` of a saved
    plan (a folder holding ``study.json``, the file, or :func:`~mxopt_jax.compare.serialize.read_document`'s
    dict): ``seeds`` every selection and report seed that study ran on; the label names the study (``study 2
    of 3``)."""
    if isinstance(study, Mapping):
        doc, label = study, str(study.get("preset") or "study")
    else:
        path = Path(study)
        if path.is_dir():
            path = path / "study.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"compare_studies: no study.json at {path} (write one with `mxopt-jax compare`)"
            )
        doc = read_document(path)
        meta = doc.get("meta") or {}
        plan = meta.get("plan") or meta  # study.json before format 3 kept the settings in meta itself
        how = f"preset {doc.get('preset')}" + (f", {plan['search']} search" if plan.get("search") else "")
        if plan.get("trials"):
            how += f" ({plan['trials']} trials)"
        if plan.get("schedule", "constant") != "constant":
            how += f", {plan['schedule']} schedule"
        label = f"{path.parent.name or path.name} ({how})"
    studies = sorted({int(getattr(r, "study", 0) or 0) for r in doc.get("records", ())}) or [0]
    if isinstance(index, bool) or not isinstance(index, int) or index not in range(len(studies)):
        raise ValueError(
            f"compare_studies: {label} holds {len(studies)} independent stud{'y' if len(studies) == 1 else 'ies'} "
            f"(0 to {len(studies) - 1}), got study {index!r}"
        )
    label += f", study {index} of {len(studies)} (numbered from 0)"
    if len(studies) > 1 or index:
        from ..result import StudyResult

        selections = StudyResult.from_document(doc).studies()[index].selections()
        number = studies[index]
    else:
        selections = [
            s if isinstance(s, Selection) else Selection.from_dict(s) for s in doc.get("selections", ())
        ]
        number = studies[0]
    seeds = {
        int(x)
        for r in doc.get("records", ())
        if int(getattr(r, "study", 0) or 0) == number
        for x in np.asarray(getattr(r, "seeds", ())).ravel()
    }
    means: dict[str, dict[str, float]] = {}
    for sel in selections:
        if sel.mode != "tuned":
            continue
        # every mean as lower-is-better (a problem whose metric is better higher is oriented)
        mean = float(sel.direction.orient(sel.test_mean)) if math.isfinite(sel.test_mean) else math.inf
        means.setdefault(sel.problem, {})[sel.contender] = float(mean)
        seeds |= {int(x) for x in np.asarray(sel.report_seeds).ravel()}
    if not means:
        raise ValueError(f"compare_studies: {label} holds no tuned selections")
    return label, means, seeds


def compare_studies(
    a: str | Path | Mapping[str, Any],
    b: str | Path | Mapping[str, Any],
    k: int = 3,
    study_a: int = 0,
    study_b: int = 0,
) -> Agreement:
    """How far two saved studies agree, per problem both ran: Kendall's tau-b of the tuned test means and
    the overlap of the top ``k``, over the contenders both ran (a diverged mean, ``inf``, ties with another).

    ``a`` and ``b``: folders written by ``mxopt-jax compare`` (or :meth:`Study.write`), their ``study.json``
    files, or :func:`~mxopt_jax.compare.serialize.read_document`'s dicts; ``study_a``, ``study_b``: which of a
    folder's independent studies (``--studies``; 0 the first, as ``summary.csv``'s ``study`` column). The labels
    name the studies compared. Contenders and problems in one study only are listed. Two studies that ran on
    some of the same seeds are not independent (on the same seeds and configuration they are the same runs):
    :attr:`Agreement.shared_seeds` lists those seeds and the text warns.

    Raises
    ------
    ValueError
        ``k`` not an int >= 1; a study number outside the folder's studies; a study without tuned selections.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"compare_studies: k must be an int >= 1, got {k!r}")
    label_a, ma, seeds_a = _load(a, study_a)
    label_b, mb, seeds_b = _load(b, study_b)
    rows = []
    for problem in [p for p in ma if p in mb]:
        xa, xb = ma[problem], mb[problem]
        common = [c for c in xa if c in xb]
        tau = kendall_tau([xa[c] for c in common], [xb[c] for c in common])
        top_a = sorted(common, key=lambda c: (xa[c], c))[:k]
        top_b = sorted(common, key=lambda c: (xb[c], c))[:k]
        rows.append(
            ProblemAgreement(
                problem=problem,
                common=common,
                only_a=[c for c in xa if c not in xb],
                only_b=[c for c in xb if c not in xa],
                tau=tau,
                top_a=top_a,
                top_b=top_b,
                overlap=len(set(top_a) & set(top_b)),
            )
        )
    return Agreement(
        a=label_a,
        b=label_b,
        k=k,
        problems=rows,
        only_a=[p for p in ma if p not in mb],
        only_b=[p for p in mb if p not in ma],
        shared_seeds=sorted(seeds_a & seeds_b),
    )
