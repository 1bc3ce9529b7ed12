"""The visual tour (``mxopt-jax tour``): optimizers from a fixed start on classic 2-D test functions, their
paths drawn over the contours, and a small full-batch spiral classification task.

A picture of each optimizer's character at a hand-tuned rate, not a benchmark (the study,
:func:`mxopt_jax.compare.study`, is the benchmark). Optimizers are built through the study's contenders
(:mod:`mxopt_jax.compare.contenders`) and figures are drawn in the app's one style
(:mod:`mxopt_jax.compare.figures`); the study never imports the tour.

* :mod:`~mxopt_jax.compare.tour.functions` — Rosenbrock, Beale, a saddle, and the learning rates tuned on them;
* :mod:`~mxopt_jax.compare.tour.tasks` — the spiral task and the tasks' table;
* :mod:`~mxopt_jax.compare.tour.runner` — the runs (one ``lax.scan`` each, one program per family);
* :mod:`~mxopt_jax.compare.tour.results` — :class:`Result`, the printed tables, the CSV file;
* :mod:`~mxopt_jax.compare.tour.plots` — paths over contours, loss curves, time per step.
"""

from . import functions, plots, results, runner, tasks
from .functions import FUNCTIONS, LEARNING_RATES, Function2D
from .plots import save_all as save_plots
from .results import Result, format_overall, format_table, ranked, write_csv
from .runner import make_optimizer, minimize, minimize_all, progress_total, run, run_task, train, train_all
from .tasks import DEFAULT_OPTIMIZERS, TASK_DESCRIPTIONS, TASKS, TUNED_LR, spiral_dataset

__all__ = [
    "DEFAULT_OPTIMIZERS",
    "FUNCTIONS",
    "LEARNING_RATES",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "TUNED_LR",
    "Function2D",
    "Result",
    "format_overall",
    "format_table",
    "functions",
    "make_optimizer",
    "minimize",
    "minimize_all",
    "plots",
    "progress_total",
    "ranked",
    "results",
    "run",
    "run_task",
    "runner",
    "save_plots",
    "spiral_dataset",
    "tasks",
    "train",
    "train_all",
    "write_csv",
]
