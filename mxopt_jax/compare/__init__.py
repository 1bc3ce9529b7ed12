"""The study: a tuned, multi-seed optimizer comparison (``mxopt-jax compare``).

An application on top of the library: ``import mxopt_jax`` never imports it.

Every optimizer's hyperparameters are tuned on each problem, several seeds per setting; selection reads the
validation split, the report reads the test split; contenders are compared paired by seed. For each problem
and family of optimizers, one compiled program trains every run at once. Its pieces, data flowing one way:

* :mod:`~mxopt_jax.compare.problems` — the problems (:class:`Problem`: data, init, loss, metric, target,
  budget); a user's own problem is the same small protocol;
* :mod:`~mxopt_jax.compare.contenders` — what is compared (:class:`Contender`): mxopt_jax's 22 optimizers at
  MXNet's defaults, optax baselines, any user factory (:func:`contender`);
* :mod:`~mxopt_jax.compare.plan` — the protocol as one value (:class:`Plan`: preset, seeds, search,
  schedule, studies, ...): checked once, saved with the study, what ``--resume`` reads;
* :mod:`~mxopt_jax.compare.engine` — the compiled programs (vmap over runs, scan over steps, sharded over
  devices), producing :class:`Records`;
* :mod:`~mxopt_jax.compare.search` — which configurations are tried (the learning-rate grid, or a random
  search over every hyperparameter); :mod:`~mxopt_jax.compare.schedules` — learning-rate schedules;
* :mod:`~mxopt_jax.compare.presets` — presets and grids; :mod:`~mxopt_jax.compare.selection` — selection on
  validation; :mod:`~mxopt_jax.compare.stats` — intervals,
  paired tests and ranks (NumPy, with SciPy's Student t);
* :mod:`~mxopt_jax.compare.result` — what a study produced, as data (:class:`StudyResult`);
  :mod:`~mxopt_jax.compare.serialize` — its JSON format and CSV numbers; :mod:`~mxopt_jax.compare.store` — the folder
  a study keeps its work in as it runs;
* :mod:`~mxopt_jax.compare.report` — tables, files, plots, the HTML page and the protocol's text;
* :mod:`~mxopt_jax.compare.study` — :func:`study`, which runs it all and returns a :class:`Study`;
* :mod:`~mxopt_jax.compare.distributed` — JAX set up for a study (:func:`~mxopt_jax.compare.distributed.
  configure_jax`: host devices, compilation cache) and a study on many processes (``jax.distributed``): the
  launch, and the one gate for what a study writes (process 0 writes);
* :mod:`~mxopt_jax.compare.cli` — the command line (``mxopt-jax compare``, ``report``, ``agree``).

The visual tour of the optimizers on 2-D test functions (``mxopt-jax tour``) is its own sub-package,
:mod:`mxopt_jax.compare.tour`; the study never imports it.
"""

from .contenders import OPTAX_BASELINES, Contender, contender, default_contenders
from .plan import Plan, PlanError
from .preflight import PreflightError
from .presets import PRESETS, Preset
from .problems import PROBLEMS
from .problems.base import Problem, Splits
from .records import Records
from .report.agreement import compare_studies
from .result import ProgramResult, StudyResult
from .selection import Selection
from .space import Hyperparameter
from .store import ResumeError
from .study import Study, study

__all__ = [
    "OPTAX_BASELINES",
    "PRESETS",
    "PROBLEMS",
    "Contender",
    "Hyperparameter",
    "Plan",
    "PlanError",
    "PreflightError",
    "Preset",
    "Problem",
    "ProgramResult",
    "Records",
    "ResumeError",
    "Selection",
    "Splits",
    "Study",
    "StudyResult",
    "compare_studies",
    "contender",
    "default_contenders",
    "study",
]
