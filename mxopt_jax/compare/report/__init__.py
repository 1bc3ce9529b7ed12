"""Reports of a study: text tables (:mod:`.tables`), CSV files and DataFrames (:mod:`.export`), figures
(:mod:`.plots`), the protocol's text (:mod:`.text`), the HTML page (:mod:`.html`), the whole study rendered and
written (:mod:`.render`), how far two saved studies agree (:mod:`.agreement`).

They read a :class:`~mxopt_jax.compare.result.StudyResult` (its :class:`~mxopt_jax.compare.records.Records`,
:class:`~mxopt_jax.compare.protocol.Selection` objects and its analysis,
:class:`~mxopt_jax.compare.analysis.StudyAnalysis`) only: they test, select and rank nothing themselves; the
figures need matplotlib (imported lazily).
"""

from . import export, plots, render, tables, text
from .export import records_equal, write_csv, write_summary_csv
from .plots import plot_curves, plot_profile, plot_ranks, plot_results, plot_sensitivity, save_all
from .render import describe_study, format_study, study_document, write_study
from .tables import (
    format_modes,
    format_overall,
    format_problem,
    format_report,
)
from .text import describe

__all__ = [
    "describe",
    "describe_study",
    "export",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "format_study",
    "plot_curves",
    "plot_profile",
    "plot_ranks",
    "plot_results",
    "plot_sensitivity",
    "plots",
    "render",
    "records_equal",
    "save_all",
    "study_document",
    "tables",
    "text",
    "write_csv",
    "write_study",
    "write_summary_csv",
]
