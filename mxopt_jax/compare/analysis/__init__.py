"""The study's analysis, computed once and then rendered: what the report says, as data.

:func:`analyse_study` reads a result's selections (:attr:`mxopt_jax.compare.result.StudyResult.analysis` calls
it once and keeps the answer; :func:`analyse` does the same for any selections) and makes a
:class:`StudyAnalysis`:

* per table (a problem in one mode) a :class:`TableAnalysis` (:mod:`.table`): the tests once (claims about
  the optimizers under their searches, :func:`mxopt_jax.compare.protocol.search_table`, where every
  configuration ran on the report seeds; else :func:`mxopt_jax.compare.protocol.compare_table`), one
  :class:`Claim` per pair of entries, the rank sets, letters and quartiles;
* per mode a :class:`Ranking` (:mod:`.overall`): the mean rank over problems from the tables' rank sets, its
  bootstrap over problems, P(best), and the performance :class:`Profile`;
* per table run in every independent study an :class:`AcrossStudies` (:mod:`.across`);
* per table a :class:`Verdict` (:mod:`.verdict`): the contenders that could be the best, and what narrowing
  that set would cost (:attr:`StudyAnalysis.verdicts`).

How far two studies' rankings agree (Kendall's tau with its p-value, the top-k overlap, ``mxopt-jax agree``) is
:mod:`.agreement`'s, computed from two studies' selections.

:func:`mean_band` (:mod:`.bands`) is the interval the figures draw. The report (:mod:`mxopt_jax.compare.report`)
reads these objects and never imports :mod:`mxopt_jax.compare.stats` nor the protocol's computing functions
(``tests/test_layout.py`` holds it to that).
"""

from __future__ import annotations

from .across import AcrossStudies, across_studies, common_identity
from .bands import Band, mean_band
from .overall import Profile, Ranking, analyse_profile, analyse_ranking
from .study import MODES, StudyAnalysis, across_claims, analyse, analyse_study
from .table import About, Claim, TableAnalysis, analyse_table
from .verdict import Narrowing, Verdict, most_entries, verdict

__all__ = [
    "MODES",
    "About",
    "AcrossStudies",
    "Band",
    "Claim",
    "Narrowing",
    "Profile",
    "Ranking",
    "StudyAnalysis",
    "TableAnalysis",
    "Verdict",
    "across_claims",
    "across_studies",
    "analyse",
    "analyse_profile",
    "analyse_ranking",
    "analyse_study",
    "analyse_table",
    "common_identity",
    "mean_band",
    "most_entries",
    "verdict",
]
