"""What a number of seeds (or studies) can show with the exact signed-rank test under Holm's correction: the
smallest p-value it can give, the fewest seeds a family needs, the most entries a table of so many seeds can
separate."""

from __future__ import annotations

import math

from ._checks import check_level
from .distributions import signed_rank_table


def smallest_p(n: int, against: int = 0) -> float:
    """The smallest two-sided p-value the exact signed-rank test can give on ``n`` seeds when ``against`` of
    them go the other way with the largest differences (a contender that diverged on ``against`` seeds: there it
    is the worst value, the largest difference), every other seed the same way: ``2 P(T_n <= s)`` with ``s``
    the sum of the ``against`` largest ranks, ``n, n - 1, ...`` (``2 / 2^n`` for ``against = 0``). 16 seeds, one
    diverged: 0.0052 (above Holm's first threshold 5 % / 10 in a table of 5 entries).

    Raises
    ------
    ValueError
        ``n`` not an integer >= 1; ``against`` not an integer in ``[0, n]``.
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(against, bool) or int(against) != against or not 0 <= against <= n:
        raise ValueError(f"against must be an integer in [0, n], got {against!r}")
    n, k = int(n), int(against)
    cdf, _ = signed_rank_table(n)
    s = k * n - k * (k - 1) // 2
    return float(min(1.0, 2 * cdf[s]))


def min_seeds(pairs: int, level: float = 0.05, diverged: int = 0) -> int:
    """The fewest seeds on which the exact signed-rank test can show a difference in a family of ``pairs``
    tests corrected by Holm at ``level``: the smallest ``n`` with ``2 / 2^n <= level / pairs`` (the test's
    smallest p-value, every seed the same way, against Holm's first threshold). 1 pair: 6 seeds; 10 pairs (5
    contenders): 9; 21 (7): 10; 253 (23): 14; 325 (26): 14. The same count of *studies* lets the across-studies
    test (the study as the unit) show a difference.

    ``diverged``: a contender that diverged on that many seeds (the worst value there, the largest differences
    against it) and is better on every other seed: the smallest ``n`` with :func:`smallest_p` ``(n, diverged)
    <= level / pairs``. One diverged seed: 10 pairs need 17 seeds, 1 pair 12.

    Raises
    ------
    ValueError
        ``pairs`` not an integer >= 1; ``level`` outside (0, 1); ``diverged`` not an integer >= 0.
    """
    if isinstance(pairs, bool) or int(pairs) != pairs or pairs < 1:
        raise ValueError(f"pairs must be an integer >= 1, got {pairs!r}")
    level = check_level(level)
    if isinstance(diverged, bool) or int(diverged) != diverged or diverged < 0:
        raise ValueError(f"diverged must be an integer >= 0, got {diverged!r}")
    if not diverged:
        return max(2, math.ceil(1 + math.log2(int(pairs) / level) - 1e-12))
    n = max(2, int(diverged) + 1)
    while smallest_p(n, int(diverged)) > level / int(pairs):
        n += 1
    return n


def most_entries(seeds: int, level: float = 0.05) -> int:
    """The most entries a table can have for the exact signed-rank test on ``seeds`` seeds to show any
    difference after Holm's correction at ``level``: the largest ``E`` with :func:`min_seeds` ``(E (E - 1) / 2)
    <= seeds`` (10 seeds: 7 entries, 14: 29, 16: 57); 1 when no pair can be shown.

    Raises
    ------
    ValueError
        ``seeds`` not an integer >= 1; ``level`` outside (0, 1).
    """
    if isinstance(seeds, bool) or int(seeds) != seeds or seeds < 1:
        raise ValueError(f"seeds must be an integer >= 1, got {seeds!r}")
    level = check_level(level)
    pairs = math.floor(level * 2.0 ** (int(seeds) - 1) * (1 + 1e-12))  # 2 / 2^seeds <= level / pairs
    if pairs < 1:
        return 1
    return int(math.floor((1 + math.sqrt(1 + 8 * pairs)) / 2 + 1e-12))
