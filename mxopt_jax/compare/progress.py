"""Progress of a study: a bar with an ETA where a person watches, one line per step where a log is kept.

:class:`StudyProgress` is the ``progress`` callback of :func:`mxopt_jax.compare.study` (``(label, fraction)``).
It draws with tqdm (``tqdm.auto``, the app's ``study`` extra): a widget in a Jupyter notebook (where ipywidgets
is installed; a text bar otherwise), a ``\\r``-redrawn bar on a terminal. When the stream is not a terminal
(a log, CI) or tqdm is missing, it writes one plain line per step instead, so progress stays readable without
control characters. In a study of several processes (``jax.distributed``) only process 0 shows it
(:func:`mxopt_jax.compare.distributed.is_writer`).
"""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any, TextIO

__all__ = ["StudyProgress", "interactive"]


def _in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (an IPython shell talking to a notebook), not merely in a
    process that imported IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if get is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def interactive(stream: TextIO | None = None) -> bool:
    """Whether a person is likely watching: inside a Jupyter kernel, or ``stream`` (stderr) is a terminal."""
    if _in_notebook():
        return True
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _tqdm() -> Any:
    """``tqdm.auto.tqdm``, or None when tqdm is not installed (its notebook-mode notices silenced)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class StudyProgress:
    """A study's progress, called as ``progress(label, fraction)`` with ``fraction`` in ``[0, 1]``.

    Args:
      stream: where the text goes (default: stderr).
      bar: draw a bar (tqdm) rather than one line per step; default: when :func:`interactive` and tqdm is
        installed.
      desc: the bar's label (``"study"``; the tour's is ``"tour"``).
    """

    def __init__(self, stream: TextIO | None = None, bar: bool | None = None, desc: str = "study") -> None:
        self.stream = sys.stderr if stream is None else stream
        self.desc = desc
        tqdm = _tqdm()
        self.bar = tqdm is not None and (interactive(self.stream) if bar is None else bool(bar))
        self._tqdm_cls = tqdm
        self._bar: Any = None
        self._finished = False  # a bar that reached 100 % is not drawn again
        self._quiet: bool | None = None  # in a study of several processes, only process 0 shows progress
        self._t0 = time.perf_counter()

    def __call__(self, label: str, fraction: float) -> None:
        if self._quiet is None:  # decided at the first call, once JAX runs: the bar is process 0's
            from .distributed import is_writer

            self._quiet = not is_writer()
        if self._quiet:
            return
        fraction = min(max(float(fraction), 0.0), 1.0)
        if self.bar:
            self._draw(label, fraction)
            return
        elapsed = time.perf_counter() - self._t0
        eta = f"ETA {elapsed * (1 - fraction) / fraction:4.0f}s" if fraction > 0.02 else "ETA    ?"
        self.stream.write(f"{100 * fraction:3.0f}% {elapsed:5.0f}s {eta} {label}\n")
        self.stream.flush()

    def _draw(self, label: str, fraction: float) -> None:
        if self._finished:
            return
        if self._bar is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._bar = self._tqdm_cls(
                    total=100,
                    file=self.stream,
                    bar_format="{l_bar}{bar}| [{elapsed}<{remaining}]{postfix}",
                    desc=self.desc,
                    mininterval=0.5,
                    dynamic_ncols=True,
                )
        self._bar.set_postfix_str(label, refresh=False)
        self._bar.update(100 * fraction - self._bar.n)
        if fraction >= 1.0:
            self.close()
            self._finished = True

    def close(self) -> None:
        """End the bar (a study that stops early leaves it where it was)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
