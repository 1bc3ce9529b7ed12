"""Guards of the hostile-file tests (``tests/facade/test_mxnet_hostile.py``, ``tests/regressions/``)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def no_hang(seconds: int = 60) -> Iterator[None]:
    """A hang becomes a failure, not a stuck test run: ``SIGALRM`` after ``seconds`` interrupts a blocking
    ``open`` or a loop with a ``TimeoutError``. A guard, not a speed check (the house never asserts wall time);
    main thread only (signals), the previous handler restored on exit."""

    def alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds} s: the reader hangs")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
