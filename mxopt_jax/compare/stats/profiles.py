"""Performance profiles (Dolan & Moré 2002) as the AlgoPerf benchmark defines and scores them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def _check_tau_max(tau_max: float) -> float:
    try:
        x = float(tau_max)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and x > 1):
        raise ValueError(f"tau_max must be a finite number > 1, got {tau_max!r}")
    return x


def performance_ratios(times: Mapping[str, Mapping[str, float]]) -> dict[str, np.ndarray]:
    """Each contender's performance ratio on each problem (Dolan & Moré 2002; AlgoPerf's scoring).

    ``times[problem][contender]`` is the time to reach the problem's target (``inf``: never reached). The
    ratio is ``r = t / min_c t_c``, the time over the fastest contender's on that problem (so 1 for the
    fastest); ``inf`` when the contender never reached the target, when no contender did, or when the
    contender is absent from ``times[problem]`` (as AlgoPerf, which scores a missing workload as not
    reached).

    Returns
    -------
    dict
        ``{contender: (P,) ratios}`` in the problems' order; contenders in order of first appearance.

    Raises
    ------
    ValueError
        ``times`` or one of its problems empty; a time NaN or not positive.
    """
    if len(times) == 0:
        raise ValueError("times must hold at least one problem")
    names: dict[str, None] = {}
    for prob, row in times.items():
        if len(row) == 0:
            raise ValueError(f"times[{prob!r}] must hold at least one contender")
        for c, t in row.items():
            if math.isnan(t) or t <= 0:
                raise ValueError(f"times[{prob!r}][{c!r}] must be positive or inf, got {t!r}")
            names.setdefault(c)
    out = {c: np.full(len(times), np.inf) for c in names}
    for p, row in enumerate(times.values()):
        fastest = min(float(t) for t in row.values())
        if math.isinf(fastest):
            continue
        for c, t in row.items():
            out[c][p] = float(t) / fastest  # inf / finite = inf
    return out


def performance_profile(
    times: Mapping[str, Mapping[str, float]], tau_max: float = 4.0, points: int = 301
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Performance profiles as AlgoPerf defines them (Dolan & Moré 2002; Dahl et al. 2023).

    With the ratios ``r_{c,p}`` of :func:`performance_ratios` over ``P`` problems,
    ``rho_c(tau) = #{p : r_{c,p} <= tau} / P``: the fraction of problems on which contender ``c`` reached
    the target within ``tau`` times the fastest contender's time. ``tau`` runs over a linear grid of
    ``points`` values from 1 to ``tau_max`` (AlgoPerf: linear scale, ``tau_max = 4``). A problem that no
    contender solved counts in ``P`` and lowers every profile.

    Returns
    -------
    taus : numpy.ndarray
        ``(points,)`` ``numpy.linspace(1, tau_max, points)``.
    rho : dict
        ``{contender: (points,) rho(taus)}``, non-decreasing step functions in [0, 1].

    Raises
    ------
    ValueError
        bad ``times`` (:func:`performance_ratios`), ``tau_max`` not a finite number > 1, ``points < 2``.
    """
    tau_max = _check_tau_max(tau_max)
    if isinstance(points, bool) or int(points) != points or points < 2:
        raise ValueError(f"points must be an integer >= 2, got {points!r}")
    ratios = performance_ratios(times)
    taus = np.linspace(1.0, tau_max, int(points))
    rho = {c: (r[None, :] <= taus[:, None]).mean(axis=1) for c, r in ratios.items()}
    return taus, rho


def profile_score(ratios: Sequence[float] | np.ndarray, tau_max: float = 4.0) -> float:
    """AlgoPerf's benchmark score of one contender: the normalized area under its performance profile.

    ``B = 1 / (tau_max - 1) * integral_1^tau_max rho(tau) dtau`` (linear ``tau``). ``rho`` is the step
    function of :func:`performance_profile`, so the integral is exact from the ratios themselves (no grid,
    no quantization): each problem with ratio ``r`` adds ``1/P`` to ``rho`` on ``[r, tau_max]``, hence
    ``B = mean_p max(0, tau_max - r_p) / (tau_max - 1)``. 1: fastest on every problem; ``(4 - 2) / 3`` at
    ratio 2 everywhere (``tau_max = 4``); 0: never within ``tau_max`` of the fastest. AlgoPerf integrates
    the same function with the trapezoid rule on its grid, which this value is the limit of.

    Parameters
    ----------
    ratios : array_like
        ``(P,)`` the contender's ratios, one per problem (:func:`performance_ratios`), each ``>= 1`` or
        ``inf``.
    tau_max : float
        The largest ratio that scores (AlgoPerf: 4).

    Raises
    ------
    ValueError
        ``ratios`` empty, not 1-D, NaN or below 1; ``tau_max`` not a finite number > 1.
    """
    tau_max = _check_tau_max(tau_max)
    r = np.asarray(ratios, np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError(f"ratios must be a non-empty 1-D array, got shape {r.shape}")
    if np.any(np.isnan(r)) or np.any(r < 1):
        raise ValueError("ratios must be >= 1 (ratio to the fastest) or inf")
    return float(np.mean(np.clip(tau_max - r, 0.0, None)) / (tau_max - 1))
