"""Which cases of a parametrization the default run keeps; the others carry the ``slow`` marker (CI runs
``-m slow`` as its own step, so every case still runs in CI).

A check that is the same code for every optimizer (a driver, a wrapper, the facade's bookkeeping) proves
little new for the 22nd optimizer: the default run takes a rotating share of the optimizers (:func:`share`),
so that every optimizer meets most checks in the default run, and the golden and property tests cover every
optimizer's math there. Where two tests hold the same property (``tests/properties/test_drivers_agree.py``
holds jit against eager, the facade's ``step`` against ``fused_step``, ``FlatParams`` and ``aggregate_num``
against the tree and ``inject_hyperparams`` without recompiles for ``share(4, 0)``), each takes its own quarter
(``share(4, k)`` with another ``k``), so the default run covers more optimizers for the same programs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

import mxopt_jax

NAMES: tuple[str, ...] = tuple(sorted(mxopt_jax.OPTIMIZERS))


def share(k: int, offset: int = 0, names: Sequence[str] = NAMES) -> tuple[str, ...]:
    """Every ``k``-th of ``names`` from ``offset``: a deterministic share, rotated between checks."""
    return tuple(names[offset % k :: k])


def default_run(values: Iterable, keep: Iterable) -> list:
    """``values`` as pytest parameters, those not in ``keep`` marked ``slow`` (ids unchanged)."""
    keep = set(keep)
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]
