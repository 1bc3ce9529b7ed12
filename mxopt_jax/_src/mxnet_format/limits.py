"""The reader's budgets, tied to the size of the file being read.

Every object the readers create (arrays, bytes, strings, containers, memo entries) is counted at its size in
memory before it is made; a file whose reading would pass its budget is refused with a ``ValueError``. The
budget of a file of ``n`` bytes is ``max(FLOOR_BYTES, RATIO * n)`` unless the caller passes ``max_bytes``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# The budget of any file, however small (bytes), and in multiples of its size (the larger of the two applies):
# one budget for every file mxopt_jax reads, owned by the facade's state format (the lower layer) and used here.
from ..facade.states import FLOOR_BYTES, RATIO

#: The deepest nesting of containers (and of MARKs in a pickle) a file may hold.
MAX_DEPTH = 64
#: The most tuples a pickle may use as dictionary keys (tuples are hashed from their items, which a file can
#: choose to collide; strings are hashed with Python's random key).
MAX_TUPLE_KEYS = 1024
#: The longest tuple a pickle may use as a dictionary key.
MAX_KEY_TUPLE = 8


_KEY_INT = 2**61 - 2  # integer keys: distinct values have distinct hashes (sys.hash_info.modulus = 2**61 - 1)


def _plain_key(k: Any) -> bool:
    if k is None or isinstance(k, (str, bytes, float, bool, np.bool_, np.floating)):
        return True
    if isinstance(k, (int, np.integer)):
        return -_KEY_INT <= int(k) <= _KEY_INT
    return False


def key_refusal(k: Any) -> str | None:
    """Why ``k`` may not be a dictionary key (or set item) of a file, or ``None``: keys are strings, bytes,
    numbers (integers within 2**61) and tuples of at most ``MAX_KEY_TUPLE`` of those, so hashing one is cheap,
    cannot recurse, and distinct integers never collide."""
    if _plain_key(k) or (isinstance(k, tuple) and len(k) <= MAX_KEY_TUPLE and all(_plain_key(v) for v in k)):
        return None
    kind = (
        f"a tuple of {len(k)} items or holding more than strings and numbers"
        if isinstance(k, tuple)
        else "an integer beyond 2**61"
        if isinstance(k, int)
        else f"a {type(k).__name__}"
    )
    return (
        f"refused a dictionary key (or set item) that is {kind}: keys are strings, bytes, numbers (integers "
        f"within 2**61) and tuples of at most {MAX_KEY_TUPLE} of those"
    )


#: The most bytes a NumPy array may span, counting every non-zero dimension (NumPy refuses more than
#: ``2**63 - 1`` with its own error, even for an array of no element such as shape ``(0, 2**62)``).
MAX_SPAN = 2**62


def shape_refusal(shape: tuple[int, ...], itemsize: int) -> str | None:
    """Why an array of ``shape`` (non-negative ints) and ``itemsize`` cannot be made, or ``None``: the product
    of its non-zero dimensions times the itemsize passes :data:`MAX_SPAN` (an empty array included, whose
    product is 0 but whose shape NumPy still refuses)."""
    span = itemsize
    for d in shape:
        span *= d or 1
        if span > MAX_SPAN:
            return (
                f"shape {shape}, whose dimensions span more than 2**62 bytes (no array has such a shape, not "
                "even an empty one)"
            )
    return None


def check_max_bytes(max_bytes: Any) -> int | None:
    """The ``max_bytes`` argument of the public readers: ``None`` or a positive int."""
    if max_bytes is None:
        return None
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(
            f"max_bytes must be an int (a number of bytes) or None, got {type(max_bytes).__name__}"
        )
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    return max_bytes


def default_budget(size: int) -> int:
    """The budget of a file of ``size`` bytes."""
    return max(FLOOR_BYTES, RATIO * size)


class OverBudget(ValueError):
    """A file refused for the memory reading it would take (a ``ValueError`` naming the file)."""


class Budget:
    """What reading one file may allocate: a running count, refused past ``cap`` (bytes)."""

    __slots__ = ("cap", "used", "where", "user_cap")

    def __init__(self, where: str, size: int, max_bytes: int | None = None) -> None:
        self.where = where
        self.user_cap = max_bytes is not None
        self.cap = default_budget(size) if max_bytes is None else max_bytes
        self.used = 0

    def charge(self, n: int, what: str, at: str = "") -> None:
        """Count ``n`` more bytes; refuse (``ValueError``) past the cap, naming ``what`` and where."""
        self.used += n
        if self.used > self.cap:
            raise OverBudget(f"{self.where}: {self.over(what)}{f' ({at})' if at else ''}")

    def check(self, n: int, what: str, at: str = "") -> None:
        """Refuse if ``n`` bytes alone would pass the cap (nothing is counted)."""
        if n > self.cap:
            raise OverBudget(f"{self.where}: {self.over(what, n)}{f' ({at})' if at else ''}")

    def over(self, what: str, n: int | None = None) -> str:
        need = f"{n} bytes" if n is not None else f"more than {self.cap} bytes"
        how = (
            "the max_bytes passed"
            if self.user_cap
            else f"the default budget, max({FLOOR_BYTES >> 20} MiB, {RATIO} x the file's size)"
        )
        return (
            f"refused: {what} needs {need}, past the reader's memory budget of {self.cap} bytes ({how}); "
            "pass a larger max_bytes to read a file you trust"
        )
