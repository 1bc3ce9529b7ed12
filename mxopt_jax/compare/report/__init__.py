"""Reports of a study: text tables (:mod:`.tables`), CSV/JSON files (:mod:`.export`), figures (:mod:`.plots`),
the protocol's text (:mod:`.text`).

They read :class:`~mxopt_jax.compare.records.Records` and the protocol's
:class:`~mxopt_jax.compare.protocol.Selection` only; the figures need matplotlib (imported lazily).
"""

from . import export, plots, render, tables, text
from .export import read_json, records_equal, write_csv, write_json, write_summary_csv
from .plots import plot_curves, plot_profile, plot_sensitivity, save_all
from .render import format_study, write_study
from .tables import (
    format_modes,
    format_overall,
    format_problem,
    format_report,
    group_by_problem,
)
from .text import describe

__all__ = [
    "describe",
    "export",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "format_study",
    "group_by_problem",
    "plot_curves",
    "plot_profile",
    "plot_sensitivity",
    "plots",
    "render",
    "read_json",
    "records_equal",
    "save_all",
    "tables",
    "text",
    "write_csv",
    "write_json",
    "write_study",
    "write_summary_csv",
]
