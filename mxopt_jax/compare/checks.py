"""Checks of arguments at the app's boundary (the command line and the API): one place for each rule, so
that ``mxopt-jax compare`` and :func:`mxopt_jax.compare.study` refuse the same things with the same words."""

from __future__ import annotations

import argparse

__all__ = ["positive_int_arg"]


def positive_int_arg(value: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {n}")
    return n
