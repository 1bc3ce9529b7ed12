"""The visual tour (``mxopt-jax tour``): optimizers from a fixed start on classic 2-D test functions, their
paths drawn over the contours, and a small full-batch spiral classification task.

A picture of each optimizer's character at a hand-tuned rate, not a benchmark (the study,
:func:`mxopt_jax.compare.study`, is the benchmark). The tour is built on the study's pieces: each task is a
:class:`~mxopt_jax.compare.problems.base.Problem` run by the study's engine (:mod:`mxopt_jax.compare.engine`,
the paths recorded as the problems' trace), each optimizer the study's contender
(:mod:`mxopt_jax.compare.contenders`), each run the engine's :class:`~mxopt_jax.compare.records.Records`; the
command line parses names, checks its folder and shows progress as ``mxopt-jax compare`` does, and figures are
drawn in the app's one style (:mod:`mxopt_jax.compare.style`). The study never imports the tour.

* :mod:`~mxopt_jax.compare.tour.functions`: Rosenbrock, Beale, a saddle, and the learning rates tuned on them;
* :mod:`~mxopt_jax.compare.tour.tasks`: the tasks as problems (the spiral task, the functions), their rates;
* :mod:`~mxopt_jax.compare.tour.runner`: :func:`run` (one compiled program per task and optimizer family);
* :mod:`~mxopt_jax.compare.tour.results`: :class:`Result` (a view of a run's records), the tables, the CSV file;
* :mod:`~mxopt_jax.compare.tour.plots`: paths over contours, loss curves, time per step.
"""

from . import functions, plots, results, runner, tasks
from .functions import FUNCTIONS, LEARNING_RATES, Function2D
from .plots import save_all as save_plots
from .results import Result, format_overall, format_table, ranked, write_csv
from .runner import run
from .tasks import (
    DEFAULT_OPTIMIZERS,
    TASK_DESCRIPTIONS,
    TASKS,
    TUNED_LR,
    learning_rate,
    problem,
    spiral_dataset,
)

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
    "learning_rate",
    "plots",
    "problem",
    "ranked",
    "results",
    "run",
    "runner",
    "save_plots",
    "spiral_dataset",
    "tasks",
    "write_csv",
]
