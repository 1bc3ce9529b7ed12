"""The study's problems: real (small) training problems that download nothing.

Each is a :class:`~mxopt_jax.compare.problems.base.Problem` made by a factory; :data:`PROBLEMS` lists them
by name in display order. Their descriptions state the data, model, parameter count, loss, metric, budget
and target, and why that target.

* ``digits_mlp`` — scikit-learn's bundled 8x8 digits, an MLP 64-128-10; error %.
* ``char_lm`` — a character-level MLP language model on a generated English-like corpus; bits/char.
* ``recommender`` — matrix factorization of synthetic ratings through row-sparse tables
  (:func:`mxopt_jax.sparse.lookup`, lazy updates); RMSE.
* ``logreg`` — L2-regularized logistic regression on scikit-learn's bundled breast-cancer set (convex);
  log-loss.
* ``autoencoder`` — a deep autoencoder of the digits (ill-conditioned); reconstruction MSE.
* ``mnist1d_mlp`` — MNIST-1D (Greydanus and Kobak, arXiv:2011.14439), the paper's MLP; error % (the paper's
  table: 68 % accuracy).
* ``mnist1d_cnn`` — MNIST-1D, the paper's CNN; error % (the paper's table: 94 % accuracy).
* ``mnist1d_bn`` — MNIST-1D, the paper's CNN with BatchNorm (scale-invariant weights; the running statistics
  are model state, :class:`~mxopt_jax.compare.problems.base.Problem`'s ``init_state``); error %.
* ``char_transformer`` — a pre-LayerNorm causal transformer language model on ``char_lm``'s corpus; bits/char.

``digits_mlp``, ``logreg`` and ``autoencoder`` read data sets bundled with scikit-learn, the MNIST-1D problems
build theirs with the ``mnist1d`` package (both in the app's optional ``study`` extra; imported only when
``data()`` is called).
"""

from __future__ import annotations

from collections.abc import Callable

from ..validation import NameTable
from .base import Problem, Splits, State
from .cancer import logreg
from .charlm import char_lm
from .digits import digits_mlp
from .digits_ae import autoencoder
from .mnist1d import mnist1d_bn, mnist1d_cnn, mnist1d_mlp
from .ratings import recommender
from .transformer import char_transformer

__all__ = [
    "DEFAULT",
    "PROBLEMS",
    "Problem",
    "Splits",
    "State",
    "autoencoder",
    "char_lm",
    "char_transformer",
    "digits_mlp",
    "logreg",
    "mnist1d_bn",
    "mnist1d_cnn",
    "mnist1d_mlp",
    "recommender",
]

#: Name -> factory of every built-in problem, in display order (a name that is not there is a ``KeyError``
#: that lists the names and suggests the close match).
PROBLEMS: dict[str, Callable[[], Problem]] = NameTable(
    "problem",
    {
        "digits_mlp": digits_mlp,
        "char_lm": char_lm,
        "recommender": recommender,
        "logreg": logreg,
        "autoencoder": autoencoder,
        "mnist1d_mlp": mnist1d_mlp,
        "mnist1d_cnn": mnist1d_cnn,
        "mnist1d_bn": mnist1d_bn,
        "char_transformer": char_transformer,
    },
)

#: The problems a study runs when none are named: the five whose quick preset, all contenders together, takes
#: about five minutes cold on two CPU cores. The four heavier ones (``mnist1d_mlp``, ``mnist1d_cnn``,
#: ``mnist1d_bn``, ``char_transformer``: convolutions, BatchNorm and attention cost each step 2 to 10 times a
#: step of the five) run when named, and in the full preset's study of every problem.
DEFAULT: tuple[str, ...] = ("digits_mlp", "char_lm", "recommender", "logreg", "autoencoder")
