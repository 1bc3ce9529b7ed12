"""Statistics of the optimizer study, one job per module (NumPy and SciPy, no JAX, so a saved study can be
re-analysed without the study's programs). Every function reads *lower is better*: a metric where higher is
better is oriented first (:meth:`mxopt_jax.compare.direction.Direction.orient`).

The study runs every contender (optimizer) on every problem with the *same* seeds: a seed fixes the
initialization and the order of the mini-batches, so two contenders' results on one seed form a pair. The
comparisons here are therefore paired by seed:

* :mod:`.distributions`: Student's t (``scipy.stats.t``, the arguments checked: :func:`t_quantile`,
  :func:`t_sf_two_sided`, :func:`ci_halfwidth`), the exact signed-rank distribution with ties and zeros, the
  sign-flip distribution of a sum;
* :mod:`.paired`: the paired tests, with SciPy-shaped results (``statistic``, ``pvalue``, the effect with its
  interval): :func:`wilcoxon` (Wilcoxon's signed-rank test, exact, the default) and :func:`paired_t` (Student's
  paired t with its exact sign-flip p-value); :func:`effect` (the Hodges-Lehmann estimate and its interval);
* :mod:`.multiple`: :func:`holm`, Holm's (1979) step-down correction of a family of p-values;
* :mod:`.pairwise`: what one table may claim: :func:`compare_configurations` (every pair of a table's
  configurations, Holm-corrected, rounding twins never separated), :func:`compare_searches` (under their
  searches), :func:`holm_family` (every table of a report one family), the compact letter display
  (:func:`letters`, Piepho 2004) and the simultaneous rank sets; :func:`compare_divergence`;
* :mod:`.power`: what a number of seeds can show (:func:`smallest_p`, :func:`min_seeds`, :func:`most_entries`);
* :mod:`.ranking`: :func:`bootstrap_problems`, :func:`bootstrap_mean_ranks`: the mean rank over problems, its
  bootstrap interval over problems and the probability of being ranked first, the tests' decisions kept;
* :mod:`.profiles`: :func:`performance_ratios`, :func:`performance_profile`, :func:`profile_score`: performance
  profiles (Dolan & Moré 2002) as the AlgoPerf benchmark defines and scores them;
* :mod:`.agreement`: how far two rankings agree: :func:`kendall_tau` (Kendall's tau-b, SciPy's), its p-value
  (:func:`tau_p_value`) and the smallest any order of ``n`` contenders can have (:func:`smallest_tau_p`).

The package re-exports each module's public names (``stats.wilcoxon`` is ``stats.paired.wilcoxon``).
"""

from __future__ import annotations

from .agreement import kendall_tau, smallest_tau_p, tau_p_value
from .distributions import ci_halfwidth, signed_rank_normal_less, t_quantile, t_sf_two_sided
from .multiple import holm
from .paired import (
    ROUNDING_RTOL,
    TEST,
    TESTS,
    Effect,
    PairedTest,
    SignedRankTest,
    differences,
    effect,
    paired_t,
    paired_t_rows,
    wilcoxon,
)
from .pairwise import (
    Comparison,
    DivergenceComparison,
    SearchComparison,
    compare_configurations,
    compare_divergence,
    compare_searches,
    holm_family,
    letters,
    ranks,
    significantly_better,
)
from .power import min_seeds, most_entries, smallest_p
from .profiles import performance_profile, performance_ratios, profile_score
from .ranking import BootstrapRanks, bootstrap_mean_ranks, bootstrap_problems

__all__ = [
    "ROUNDING_RTOL",
    "TEST",
    "TESTS",
    "BootstrapRanks",
    "Comparison",
    "DivergenceComparison",
    "Effect",
    "PairedTest",
    "SearchComparison",
    "SignedRankTest",
    "bootstrap_mean_ranks",
    "bootstrap_problems",
    "ci_halfwidth",
    "compare_configurations",
    "compare_divergence",
    "compare_searches",
    "differences",
    "effect",
    "holm",
    "holm_family",
    "kendall_tau",
    "letters",
    "min_seeds",
    "most_entries",
    "paired_t",
    "paired_t_rows",
    "performance_profile",
    "performance_ratios",
    "profile_score",
    "ranks",
    "signed_rank_normal_less",
    "significantly_better",
    "smallest_p",
    "smallest_tau_p",
    "t_quantile",
    "t_sf_two_sided",
    "tau_p_value",
    "wilcoxon",
]
