"""Hypothesis strategies shared by the property suites."""

from __future__ import annotations

from hypothesis import strategies as st


def float_in(check: dict) -> st.SearchStrategy:
    """Floats inside a rule's ``check_range`` keywords (``low``/``high``, open or closed ends).

    No subnormal values: XLA's CPU code may flush them to zero in one fused kernel and not in another (the
    suite found LAMB's upper_bound=1.4e-45 switching its clamp on under jit and off in eager mode; such
    bounds are now refused, tests/regressions/test_defects.py).
    """
    low = check.get("low", 0.0)
    high = check.get("high")
    if high is None:
        high = low + (1e-2 if low == 0.0 and check.get("low_open") else 1.0)
    if check.get("low_open"):
        low = low + min(1e-6, (high - low) / 10)
    if check.get("high_open"):
        high = high - (high - low) / 100
    return st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)
