"""Classic 2-D test functions for touring the optimizers, with a learning rate per optimizer and function.

Three functions, each with a fixed start point, all with minimum value 0:

* **Rosenbrock** ``(1 - x)^2 + 100 (y - x^2)^2``: a curved, badly conditioned valley; minimum at ``(1, 1)``,
  start ``(-1.5, 2)``.
* **Beale** ``(1.5 - x + xy)^2 + (2.25 - x + xy^2)^2 + (2.625 - x + xy^3)^2``: flat plateaus and steep walls
  (gradients span several orders of magnitude); minimum at ``(3, 0.5)``, start ``(1, 1.5)``.
* **Saddle** ``x^2 + (y^2 / 2 - 1)^2``: a saddle point at the origin (value 1), bounded below, with minima
  at ``(0, ±√2)``; the start ``(-1.5, 0.01)`` lies almost on the ridge line ``y = 0``, so the question is how
  fast an optimizer escapes along ``y`` while it falls along ``x``.

The point is a single ``(1, 2)`` weight: one parameter with one row, so that every optimizer (GroupAdaGrad
needs 2-D weights) sees the same tree, and layer-wise optimizers (LARS, LAMB, LANS) see one layer.

``LEARNING_RATES`` gives each optimizer's learning rate per function. Provenance: for every optimizer and
function, a grid over ``{1e-4, 3e-4, 1e-3, …, 30, 100}`` (13 values, about half a decade apart) was run for
300 steps (the CLI's default) with seed 0 and every other hyperparameter at MXNet's default; the table keeps
the value with the lowest final function value (non-finite runs excluded). MXNet's default learning rates
(mostly 0.01 or 0.001) are made for mini-batch training of networks and barely move on these functions in
300 steps, so a tuned rate is what makes the tour informative.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


def _xy(p: jax.Array) -> tuple[jax.Array, jax.Array]:
    flat = jnp.reshape(p, (-1,))
    return flat[0], flat[1]


def rosenbrock(p: jax.Array) -> jax.Array:
    """Rosenbrock's banana function of a point ``p`` with 2 elements (any shape); minimum 0 at ``(1, 1)``."""
    x, y = _xy(p)
    return (1.0 - x) ** 2 + 100.0 * (y - x**2) ** 2


def beale(p: jax.Array) -> jax.Array:
    """Beale's function of a point ``p`` with 2 elements (any shape); minimum 0 at ``(3, 0.5)``."""
    x, y = _xy(p)
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2


def saddle(p: jax.Array) -> jax.Array:
    """``x^2 + (y^2/2 - 1)^2``: a saddle at the origin (value 1), minima 0 at ``(0, ±√2)``."""
    x, y = _xy(p)
    return x**2 + (0.5 * y**2 - 1.0) ** 2


class Function2D(NamedTuple):
    """A 2-D test function with its start point, a minimizer and the plotting window."""

    name: str
    formula: str
    fn: Callable[[jax.Array], jax.Array]
    start: tuple[float, float]
    minimum: tuple[float, float]
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def __call__(self, p: jax.Array) -> jax.Array:
        return self.fn(p)

    def start_point(self) -> jax.Array:
        """The start as the ``(1, 2)`` float32 weight every optimizer updates."""
        return jnp.asarray([self.start], jnp.float32)


FUNCTIONS: dict[str, Function2D] = {
    "rosenbrock": Function2D(
        "rosenbrock",
        r"$(1-x)^2 + 100\,(y-x^2)^2$",
        rosenbrock,
        (-1.5, 2.0),
        (1.0, 1.0),
        (-2.0, 2.0),
        (-1.0, 3.0),
    ),
    "beale": Function2D(
        "beale",
        r"$(1.5-x+xy)^2 + (2.25-x+xy^2)^2 + (2.625-x+xy^3)^2$",
        beale,
        (1.0, 1.5),
        (3.0, 0.5),
        (-1.0, 4.5),
        (-1.5, 2.5),
    ),
    "saddle": Function2D(
        "saddle",
        r"$x^2 + (y^2/2 - 1)^2$",
        saddle,
        (-1.5, 0.01),
        (0.0, 2**0.5),
        (-2.0, 2.0),
        (-2.2, 2.2),
    ),
}

#: Learning rate per function and optimizer (grid-tuned, see the module docstring).
LEARNING_RATES: dict[str, dict[str, float]] = {
    "rosenbrock": {
        "sgd": 0.001,
        "nag": 0.001,
        "signum": 0.03,
        "sgld": 0.003,
        "dcasgd": 0.0003,
        "lbsgd": 0.001,
        "ccsgd": 0.001,
        "adagrad": 3.0,
        "groupadagrad": 1.0,
        "adadelta": 30.0,
        "rmsprop": 0.1,
        "adam": 1.0,
        "adamw": 1.0,
        "adamax": 3.0,
        "nadam": 0.3,
        "adabelief": 1.0,
        "ftrl": 3.0,
        "ftml": 1.0,
        "lars": 100.0,
        "lamb": 0.03,
        "lans": 0.1,
        "test": 0.001,
    },
    "beale": {
        "sgd": 0.03,
        "nag": 0.003,
        "signum": 0.03,
        "sgld": 0.03,
        "dcasgd": 0.03,
        "lbsgd": 0.03,
        "ccsgd": 0.03,
        "adagrad": 1.0,
        "groupadagrad": 3.0,
        "adadelta": 3.0,
        "rmsprop": 0.03,
        "adam": 0.3,
        "adamw": 0.3,
        "adamax": 1.0,
        "nadam": 0.3,
        "adabelief": 0.3,
        "ftrl": 1.0,
        "ftml": 0.3,
        "lars": 10.0,
        "lamb": 0.01,
        "lans": 0.01,
        "test": 0.03,
    },
    "saddle": {
        "sgd": 0.3,
        "nag": 0.1,
        "signum": 0.01,
        "sgld": 0.1,
        "dcasgd": 0.3,
        "lbsgd": 0.3,
        "ccsgd": 0.3,
        "adagrad": 0.3,
        "groupadagrad": 0.3,
        "adadelta": 3.0,
        "rmsprop": 0.01,
        "adam": 0.3,
        "adamw": 0.3,
        "adamax": 0.3,
        "nadam": 0.1,
        "adabelief": 0.3,
        "ftrl": 10.0,
        "ftml": 0.1,
        "lars": 30.0,
        "lamb": 0.01,
        "lans": 0.01,
        "test": 0.3,
    },
}
