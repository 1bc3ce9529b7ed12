"""Reports of a study: text tables (:mod:`.tables`), CSV/JSON files (:mod:`.export`), figures (:mod:`.plots`),
the protocol's text (:mod:`.text`).

They read :class:`~mxopt_jax.compare.records.Records` and the protocol's
:class:`~mxopt_jax.compare.protocol.Selection` only; the figures need matplotlib (imported lazily).
"""

from . import export, plots, tables, text
from .export import read_json, records_equal, write_csv, write_json, write_summary_csv
from .plots import plot_curves, plot_profile, plot_sensitivity, save_all
from .tables import (
    format_modes,
    format_overall,
    format_problem,
    format_report,
    group_by_problem,
    identical_groups,
)
from .text import describe

__all__ = [
    "describe",
    "export",
    "format_modes",
    "format_overall",
    "format_problem",
    "format_report",
    "group_by_problem",
    "identical_groups",
    "plot_curves",
    "plot_profile",
    "plot_sensitivity",
    "plots",
    "read_json",
    "records_equal",
    "save_all",
    "tables",
    "text",
    "write_csv",
    "write_json",
    "write_summary_csv",
]
