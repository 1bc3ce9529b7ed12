"""The comparison app: a tuned, multi-seed optimizer study (``mxopt-jax compare``) and a visual tour.

An application on top of the library: ``import mxopt_jax`` never imports it.

**The study** — every optimizer's learning rate tuned on a log grid, several seeds per rate, on real
workloads that download nothing; selection on validation, report on test with 95 % confidence intervals,
shared ranks for results that cannot be told apart, performance profiles. For each problem and group of
optimizers, one compiled program trains every ``(rate, seed)`` pair at once. Its pieces, data flowing one way:

* :mod:`~mxopt_jax.compare.problems` — the workloads (:class:`Problem`: data, init, loss, metric, target,
  budget); a user's own problem is the same small protocol;
* :mod:`~mxopt_jax.compare.contenders` — what is compared (:class:`Contender`): mxopt_jax's 22 optimizers at
  MXNet's defaults, optax baselines, any user factory (:func:`contender`);
* :mod:`~mxopt_jax.compare.engine` — the compiled programs (vmap over rates and seeds, scan over steps,
  sharded over devices), producing :class:`Records`;
* :mod:`~mxopt_jax.compare.protocol` — presets, grids, selection, confidence intervals, ranks, profiles;
* :mod:`~mxopt_jax.compare.report` — tables, CSV/JSON, plots;
* :mod:`~mxopt_jax.compare.study` — :func:`study`, which runs it all and returns a :class:`Study`;
* :mod:`~mxopt_jax.compare.cli` — the command line.

**The tour** (``mxopt-jax tour``) — optimizers from a fixed start on 2-D test functions, their paths drawn over
the contours: :mod:`~mxopt_jax.compare.runner`, :mod:`~mxopt_jax.compare.testfns`,
:mod:`~mxopt_jax.compare.plotting`, :mod:`~mxopt_jax.compare.results`, :mod:`~mxopt_jax.compare.tasks`.
"""

from . import engine, plotting, protocol, report, testfns
from .cli import Progress, build_parser, configure_jax, main
from .contenders import OPTAX_BASELINES, Contender, contender, default_contenders
from .problems import PROBLEMS
from .problems.base import Problem, Splits
from .protocol import PRESETS, Preset, Selection
from .records import Records
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
from .study import Study, study
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
    "OPTAX_BASELINES",
    "PRESETS",
    "PROBLEMS",
    "TASKS",
    "TASK_DESCRIPTIONS",
    "TUNED_LR",
    "Contender",
    "Function2D",
    "Preset",
    "Problem",
    "Progress",
    "Records",
    "Result",
    "Selection",
    "Splits",
    "Study",
    "build_parser",
    "compare",
    "configure_jax",
    "contender",
    "default_contenders",
    "engine",
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
    "protocol",
    "ranked",
    "report",
    "run_task",
    "save_plots",
    "spiral_dataset",
    "study",
    "testfns",
    "train",
    "train_all",
    "write_csv",
]
