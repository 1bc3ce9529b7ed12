"""The one JSON encoding of a float that JSON cannot hold: NaN as ``null``, infinities as ``"inf"`` and
``"-inf"`` (:func:`encode`), and back (:func:`decode`). Records, selections and every study document
(:mod:`mxopt_jax.compare.serialize`) write their numbers through it, so a file has one spelling of a diverged
value."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["decode", "encode"]


def encode(x: Any) -> Any:
    """``x`` with every float (nested lists included) JSON-ready: NaN as ``None``, ``inf``/``-inf`` as
    ``"inf"``/``"-inf"``, a finite float as it is; anything else unchanged."""
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def decode(x: Any) -> Any:
    """:func:`encode` undone (nested lists included): ``None`` as NaN, a number or ``"inf"``/``"-inf"`` as a
    float."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    return math.nan if x is None else float(x)
