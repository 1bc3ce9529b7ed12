"""The exact signed-rank test of the study (mxopt_jax.compare.stats) against SciPy's, on tied samples.

Why the study keeps its own exact signed-rank test: ``scipy.stats.wilcoxon(method="exact")`` reads the table
without ties or zeros (wrong on tied samples), and its permutation method is exact but enumerates the ``2^n``
sign patterns. This prints, for ``n`` seeds with ties and zeros, the study's time per pair (a batch of pairs, as
a table tests them) and per single call, SciPy's permutation method on one pair, and both p-values; then the
case where ``method="exact"`` is wrong. Needs SciPy >= 1.11 (``scipy.stats.PermutationMethod``; the study itself needs
1.10).

    python benchmarks/signed_rank_speed.py            # n = 10 and 15 (SciPy takes ~1 s and ~40 s)
    python benchmarks/signed_rank_speed.py 8 10       # other numbers of seeds
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy
import scipy.stats

from mxopt_jax.compare import stats
from mxopt_jax.compare.stats import distributions


def main(ns: list[int]) -> None:
    rng = np.random.default_rng(0)
    print(f"SciPy {scipy.__version__}")
    for n in ns:
        d = rng.choice([-3.0, -1.0, 0.0, 1.0, 2.0, 2.0, 3.0, 4.0], size=(2000, n))  # ties and zeros
        distributions.signed_rank_tails(d[:10])  # warm the caches
        t0 = time.perf_counter()
        distributions.signed_rank_tails(d)
        batched = (time.perf_counter() - t0) / len(d)
        t0 = time.perf_counter()
        for row in d[:50]:
            stats.wilcoxon(row, np.zeros(n))
        single = (time.perf_counter() - t0) / 50
        method = scipy.stats.PermutationMethod(n_resamples=np.inf)
        t0 = time.perf_counter()
        ref = scipy.stats.wilcoxon(d[0], np.zeros(n), zero_method="pratt", method=method).pvalue
        perm = time.perf_counter() - t0
        print(
            f"n = {n}: ours {batched * 1e6:.0f} us per pair in a batch, {single * 1e6:.0f} us per call; SciPy's "
            f"permutation method {perm:.2f} s ({perm / batched:.1e} x batched, {perm / single:.1e} x per call); "
            f"p {stats.wilcoxon(d[0], np.zeros(n)).pvalue:.6g} vs {ref:.6g}"
        )
    d = np.array([1.0, -1.0, 2.0, 2.0, 0.0, 3.0, 3.0, 3.0, -0.5, 4.0])
    exact = scipy.stats.wilcoxon(d, zero_method="pratt", method="exact").pvalue
    print(
        f"d = {d.tolist()}: method='exact' {exact:.6g}, the exact p-value {stats.wilcoxon(d, 0 * d).pvalue:.6g}"
    )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 15])
