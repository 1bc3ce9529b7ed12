"""The comparison app (``mxopt-jax compare``): optimizers on built-in tasks, ranked tables, plots.

An application on top of the library: ``import mxopt_jax`` never imports it. Its modules, in import order
(each imports only the ones after it; nothing imports this package's ``__init__``):

* :mod:`~mxopt_jax.compare.cli` — the command line (argparse, :func:`main`, the progress bar);
* :mod:`~mxopt_jax.compare.runner` — training/minimizing runs (one ``lax.scan`` per run, one ``lax.switch``
  program per optimizer family), :mod:`~mxopt_jax.compare.plotting` — the figures (matplotlib, imported
  lazily), :mod:`~mxopt_jax.compare.results` — :class:`Result`, ranking, tables, CSV;
* :mod:`~mxopt_jax.compare.tasks` — the spiral data set, MLP and loss, tuned learning rates, families;
  :mod:`~mxopt_jax.compare.testfns` — the 2-D test functions and their learning rates.
"""

from . import plotting, testfns
from .cli import Progress, build_parser, main
from .results import Result, format_overall, format_table, ranked, write_csv
from .runner import (
    compare,
    make_optimizer,
    minimize,
    minimize_all,
    progress_total,
    run_task,
    train,
    train_all,
)
from .tasks import (
    DEFAULT_OPTIMIZERS,
    FAMILIES,
    FUNCTIONS,
    LEARNING_RATES,
    TASK_DESCRIPTIONS,
    TASKS,
    TUNED_LR,
    Function2D,
    family_groups,
    init_mlp,
    loss_fn,
    mlp,
    spiral_dataset,
)

save_plots = plotting.save_all

__all__ = [
    "DEFAULT_OPTIMIZERS",
    "FAMILIES",
    "FUNCTIONS",
    "LEARNING_RATES",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "TUNED_LR",
    "Function2D",
    "Progress",
    "Result",
    "build_parser",
    "compare",
    "family_groups",
    "format_overall",
    "format_table",
    "init_mlp",
    "loss_fn",
    "main",
    "make_optimizer",
    "minimize",
    "minimize_all",
    "mlp",
    "plotting",
    "progress_total",
    "ranked",
    "run_task",
    "save_plots",
    "spiral_dataset",
    "testfns",
    "train",
    "train_all",
    "write_csv",
]
