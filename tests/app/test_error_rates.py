"""The error rates and the power of the whole rank machinery, by simulation (the "Done when" of issue 34).

Under the null (contenders identical in distribution, paired by seed: a large seed effect every contender
shares, independent noise per run) the share of tables in which *any* output -- a claim, hence a letter not
shared or a rank set narrower than the whole table, an overall bootstrap interval or P(best) -- says two
contenders differ must stay at the stated level, 5 % (Holm's family-wise error rate over a table's pairs); and
a consistent difference of 2 paired standard deviations over 10 seeds must be found.

Every simulation draws from a fixed seed, so the tests are deterministic. The tolerances come from the binomial
standard error of a rate estimated from ``n`` independent tables: ``se = sqrt(q (1 - q) / n)`` at the rate ``q``
being bounded; a rate bounded above by ``q`` is asserted ``<= q + 3 se`` (a true rate at ``q`` fails with
probability 0.13 %), a power bounded below by ``q`` is asserted ``>= q - 3 se``; a measured rate quoted in the
docs is asserted within ``3 se`` of its quoted value.

The simulations call the batched internals (:func:`mxopt_jax.compare.stats._decide`, the one
:func:`~mxopt_jax.compare.stats.compare` runs on a batch of one), and each test checks on a few tables that the
public functions give the same answer.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from mxopt_jax.compare import analysis as A
from mxopt_jax.compare import protocol as P
from mxopt_jax.compare import stats as S

LEVEL = 0.05


def _null(rng, n, C, seeds, noise="normal", seed_effect=5.0):
    """``n`` null tables ``(n, C, seeds)``: a seed effect shared by every contender, plus independent noise of
    unit scale (normal, or Student's t with 2 degrees of freedom: heavy tails, a seed far off now and then)."""
    shared = rng.normal(0.0, seed_effect, (n, 1, seeds))
    if noise == "normal":
        return shared + rng.normal(size=(n, C, seeds))
    return shared + rng.standard_t(2, size=(n, C, seeds))


def _claims(values, test="wilcoxon", level=LEVEL):
    """``better`` ``(n, C, C)`` of every table of a batch, as :func:`~mxopt_jax.compare.stats.compare`."""
    n, C, _ = values.shape
    better = S._decide(values, np.ones((n, C), bool), level, test, 0.0, S.ROUNDING_RTOL)[0]
    return better


def _upper(q, n):
    return q + 3 * math.sqrt(q * (1 - q) / n)


def _lower(q, n):
    return q - 3 * math.sqrt(q * (1 - q) / n)


# --------------------------------------------------------------------------- one table
@pytest.mark.parametrize(
    "C, seeds, test, noise",
    [
        (2, 10, "wilcoxon", "normal"),
        (5, 10, "wilcoxon", "normal"),
        (5, 10, "wilcoxon", "heavy"),
        (10, 20, "wilcoxon", "normal"),
        (5, 10, "t", "normal"),
    ],
)
def test_null_tables_claim_at_most_the_level(C, seeds, test, noise):
    """Measured (n = 3000 tables each): the share of null tables with any claim is 5.1 % (2 contenders: the
    exact test's tail at 5 % is 2 x 25/1024 = 4.9 %), 3.5 % (5 contenders, 10 seeds), 3.1 % (the same with heavy
    tails: the test reads ranks), 4.4 % (10 contenders, 20 seeds), 4.9 % (Student's t, 5 contenders); a single
    pair's share is far below (0.38 %, 0.32 %, 0.11 %, 0.58 % with 5 or 10 contenders: Holm)."""
    rng = np.random.default_rng(100 + C + seeds)
    n = 3000
    values = _null(rng, n, C, seeds, noise)
    better = _claims(values, test)
    any_claim = better.any(axis=(1, 2))
    assert any_claim.mean() <= _upper(LEVEL, n), any_claim.mean()
    pairs = (better | better.transpose(0, 2, 1))[:, *np.triu_indices(C, 1)]
    assert pairs.mean() <= any_claim.mean()
    # what the tables print reads only these claims: the letters differ, or a rank set is narrower than
    # [1, C], exactly in the tables with a claim (checked through the public function on 100 tables)
    for k in range(100):
        cmp = S.compare(values[k], test=test)
        np.testing.assert_array_equal(cmp.better, better[k])
        narrow = (cmp.rank_low > 1) | (cmp.rank_high < C)
        assert narrow.any() == any_claim[k] == (len(set(cmp.letters)) > 1)


@pytest.mark.parametrize(
    "C, power_one, power_all",
    [(2, 0.99, 0.99), (3, 0.98, 0.98), (5, 0.94, 0.86)],
)
def test_a_two_standard_deviation_difference_over_ten_seeds_is_found(C, power_one, power_all):
    """A contender better on average by 2 standard deviations of the paired differences (not on every seed: a
    seed goes the other way 2.3 % of the time), 10 seeds, the others identical, in a table of ``C``. Measured
    (n = 2000): shown better than a given other one in 100 % (2 contenders), 99.6 % (3), 96 % (5) of the
    tables; better than all the others in 100 %, 99.1 %, 88.8 %."""
    rng = np.random.default_rng(200 + C)
    n, seeds = 2000, 10
    values = rng.normal(0.0, 5.0, (n, 1, seeds)) + rng.normal(size=(n, C, seeds)) / math.sqrt(2)
    values[:, 0] -= 2.0  # the paired differences with any other: mean 2, standard deviation 1
    better = _claims(values)
    assert better[:, 0, 1].mean() >= _lower(power_one, n), better[:, 0, 1].mean()
    assert better[:, 0, 1:].all(axis=-1).mean() >= _lower(power_all, n), better[:, 0, 1:].all(axis=-1).mean()
    assert not better[:, 1:, 0].any()  # never the wrong way


def test_the_exact_test_holds_its_level_on_every_seed_count():
    """The exact signed-rank test's rejection rate of one null pair at 5 % is the exact tail mass, at most 5 %,
    and 0 below 6 seeds (its smallest p-value, 2 / 2^n, exceeds 5 %); Student's t on the same draws is at 5 %
    only under normal noise."""
    rng = np.random.default_rng(300)
    n = 4000
    for seeds, exact in ((2, 0.0), (5, 0.0), (6, 2 * 1 / 64), (10, 2 * 25 / 1024), (20, None)):
        d = rng.normal(size=(n, 1, seeds)) * np.array([[[1.0], [0.0]]])  # (n, 2, seeds): a - b = noise
        rate = _claims(d).any(axis=(1, 2)).mean()
        assert rate <= _upper(LEVEL, n)
        if exact is not None:
            assert rate == pytest.approx(exact, abs=3 * math.sqrt(max(exact, 1e-4) * (1 - exact) / n) + 1e-12)


# --------------------------------------------------------------------------- the overall ranking
def _old_bootstrap_separation(rng, seeds, n=2000, replicates=50):
    """The study's former bootstrap on one null pair: resample the seeds with replacement, re-test the resampled
    pair by Student's paired t as if the duplicated seeds were independent; the share of resamples separated."""
    d = rng.normal(size=(n, seeds))
    idx = rng.integers(0, seeds, size=(n, replicates, seeds))
    resampled = np.take_along_axis(d[:, None, :], idx, axis=-1)
    _, p = _student(resampled)
    return float((p <= LEVEL).mean())


@pytest.mark.parametrize("seeds", [2, 10, 20])
def test_overall_ranking_is_calibrated_under_the_null(seeds):
    """Item 3: the bootstrap of the overall ranking keeps each problem's tests and resamples the problems, so it
    separates no more than the tests do. Re-testing resampled seeds (the former method) separated a null pair in
    53 % of the resamples at 2 seeds and 16-18 % at 10-20 (measured here again: ``_old_bootstrap_separation``,
    52 %, 17 %, 17 %).
    Now, over 300 null studies of 5 contenders on 5 problems: no pair's intervals are disjoint, no P(best) reaches
    95 %, and the share of studies whose overall table shows any difference is at most the tests' level."""
    rng = np.random.default_rng(400 + seeds)
    n, C, problems = 300, 5, 5
    names = list("abcde")
    called = 0
    for k in range(n):
        values = _null(rng, problems, C, seeds)
        better = _claims(values)
        low, high = S._rank_sets(better, np.ones((problems, C), bool))
        res = S.bootstrap_problems(0.5 * (low + high), names, n_boot=200, seed=k)
        disjoint = res.high[:, None] < res.low[None, :]
        called += bool(disjoint.any() or (res.p_first >= 0.95).any())
        if k < 5:  # the public path: the same replicates
            per = {f"p{q}": values[q] for q in range(problems)}
            again = S.bootstrap_mean_ranks(per, names, n_boot=200, seed=k)
            np.testing.assert_array_equal(again.replicates, res.replicates)
    assert called / n <= _upper(LEVEL, n), called / n
    old = _old_bootstrap_separation(rng, seeds)
    if seeds == 2:
        assert old > 0.45  # half the resamples draw one seed twice: zero variance, "p = 0"
    else:
        assert old > 0.12  # far above the level the test holds on the data


# --------------------------------------------------------------------------- across studies
def _studies(rng, n, N, C, luck, effect=0.0, seeds=10):
    """``n`` repetitions of ``N`` independent studies of one table ``(n, N, C, seeds)``: per study a seed
    effect, each contender's tuning luck (``luck`` x N(0, 1), fixed over the study's seeds: the chosen
    configuration's own quality), and noise with paired standard deviation 1; contender 0 better by
    ``effect``."""
    values = (
        rng.normal(0.0, 5.0, (n, N, 1, seeds))
        + luck * rng.normal(size=(n, N, C, 1))
        + rng.normal(size=(n, N, C, seeds)) / math.sqrt(2)
    )
    values[:, :, 0] -= effect
    return values


def _across(values, test="wilcoxon", level=LEVEL):
    """Per repetition: the per-study claims ``(N, C, C)``, the replicated ones and the across-studies test's
    (:func:`mxopt_jax.compare.protocol._study_level` on each study's median paired difference, the rounding
    margin applied seed by seed, as :func:`~mxopt_jax.compare.protocol.across_studies`), all repetitions at
    once."""
    n, N, C, seeds = values.shape
    per_study = _claims(values.reshape(n * N, C, seeds)).reshape(n, N, C, C)
    return per_study, per_study.all(axis=1), _shown(values, test, level)


def _shown(values, test="wilcoxon", level=LEVEL):
    """The across-studies claims ``(n, C, C)`` of ``n`` repetitions of ``N`` studies ``(n, N, C, seeds)``."""
    n, N, C, seeds = values.shape
    i, j = np.triu_indices(C, 1)
    d, _ = S._rounded(values[:, :, i], values[:, :, j], S.ROUNDING_RTOL)  # (n, N, pairs, seeds)
    effects = np.moveaxis(np.median(d, axis=-1), 1, -1).reshape(-1, N)  # (n * pairs, N)
    pl, pg = S._pair_tails(effects, test, 0.0)
    p = np.minimum(1.0, 2 * np.minimum(pl, pg)).reshape(n, -1)
    sig = S._holm(p) <= level
    lower, higher = (pl < pg).reshape(n, -1), (pg < pl).reshape(n, -1)
    shown = np.zeros((n, C, C), bool)
    shown[:, i, j], shown[:, j, i] = sig & lower, sig & higher
    return shown


def _student(d):
    """The former paired t-test of every row of ``d`` (last axis): the mean and Student's two-sided p-value,
    ``sd = 0`` giving ``p = 0`` (a nonzero mean) or 1 (a zero one)."""
    n = d.shape[-1]
    mean, sd = d.mean(axis=-1), d.std(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean) / (sd / math.sqrt(n))
    p = 2 * scipy.stats.t.sf(t, n - 1)
    return mean, np.where(sd == 0, np.where(mean == 0, 1.0, 0.0), p)


def _old_shown(values, level=LEVEL):
    """The former across-studies test (issue 40, item 1): Student's t over the studies' median paired
    differences, ``sd = 0`` giving ``p = 0``, Holm over the pairs."""
    n, N, C, seeds = values.shape
    i, j = np.triu_indices(C, 1)
    medians = np.moveaxis(np.median(values[:, :, i] - values[:, :, j], axis=-1), 1, -1)  # (n, pairs, N)
    mean, p = _student(medians)
    return (S._holm(p) <= level) & (mean != 0)


def _selections(values, rep):
    """The studies of repetition ``rep`` as Selections (for the public :func:`across_studies`)."""
    N, C, seeds = values.shape[1:]
    out = []
    for s in range(N):
        sels = []
        for c in range(C):
            v = values[rep, s, c]
            base = P.Selection(
                contender=f"c{c}", problem="p", mode="tuned", lrs=np.array([0.01]), index=0, lr=0.01,
                scores=np.zeros(1), val_final=v, val_mean=float(v.mean()), val_ci=0.0, test=v,
                test_mean=float(v.mean()), test_ci=S.ci_halfwidth(v), best_val=v, best_val_mean=float(v.mean()),
                steps_to_target=np.full(seeds, np.inf), time_to_target=math.inf, reached=0, ms_per_step=1.0,
                on_edge=None, diverged=0, diverged_chosen=0, seeds=seeds, steps=10,
                report_seeds=np.arange(seeds) + 1000 * (s + 1),
            )  # fmt: skip
            sels.append(base)
        out.append(sels)
    return out


@pytest.mark.parametrize("luck", [0.0, 0.5, 1.0])
def test_across_studies_error_rates(luck):
    """Under the null, with the tuning's luck at 0, 0.5 and 1 paired standard deviations, 2 studies of 2
    contenders (n = 3000): a single study claims a difference in 5.6 % (the exact rate: 4.9 %), 37 %, 63 % of the
    tables (its tests hold the chosen configurations fixed); both studies make the same claim in 0.07 %, 7.2 %,
    19.5 % (agreement is not a test); the across-studies test (the study as the unit, an exact sign-flip test
    over the studies' effects) never does: its smallest p-value with 2 studies is 2 / 2^2 = 0.5. With 8 studies
    of 4 contenders (6 pairs: 2 / 2^8 <= 5 % / 6) its share of tables with any claim stays at the level
    (measured 4.0 %, 4.1 %, 4.3 %)."""
    rng = np.random.default_rng(500 + int(10 * luck))
    n = 3000
    per_study, replicated, shown = _across(_studies(rng, n, 2, 2, luck))
    single = per_study[:, 0].any(axis=(1, 2)).mean()
    both = replicated.any(axis=(1, 2)).mean()
    quoted = {0.0: (0.049, 0.001), 0.5: (0.37, 0.072), 1.0: (0.63, 0.195)}[luck]
    assert single == pytest.approx(quoted[0], abs=3 * math.sqrt(quoted[0] * (1 - quoted[0]) / n))
    assert both == pytest.approx(quoted[1], abs=3 * math.sqrt(max(quoted[1], 1e-3) * (1 - quoted[1]) / n))
    assert not shown.any()
    n8 = 1000
    values = _studies(rng, n8, 8, 4, luck)
    shown8 = _shown(values)
    assert shown8.any(axis=(1, 2)).mean() <= _upper(LEVEL, n8)
    # the public function agrees with the simulation's path
    for rep in range(3):
        a = A.across_studies(_selections(values, rep))
        np.testing.assert_array_equal(a.shown, shown8[rep])


def test_across_studies_power():
    """A consistent 2-standard-deviation difference over 10 seeds, no tuning luck, 5 contenders (10 pairs):
    each single study shows it (contender 0 better than contender 1) in 96-97 % of the tables, and both of 2
    studies in 93 %. The across-studies test cannot show it with 2, 3 or 5 studies (its smallest p-value,
    2 / 2^N, is above Holm's first threshold 5 % / 10: the table says so, :attr:`AcrossStudies.can_claim`,
    and names the 9 studies it needs, :attr:`AcrossStudies.min_studies`); with 9 studies it shows it in
    99 % of the tables (measured), with 12 in 100 %."""
    rng = np.random.default_rng(600)
    n = 1000
    found = {}
    for N in (2, 3, 5, 9, 12):
        per_study, replicated, shown = _across(_studies(rng, n, N, 5, 0.0, effect=2.0))
        found[N] = shown[:, 0, 1].mean()
        if N == 2:
            assert replicated[:, 0, 1].mean() >= _lower(0.90, n)
        assert not shown[:, 1:, 0].any()  # never the wrong way
    assert found[2] == found[3] == found[5] == 0.0
    assert found[9] >= _lower(0.97, n) and found[12] >= _lower(0.99, n)
    values = _studies(rng, 1, 5, 5, 0.0, effect=2.0)
    a = A.across_studies(_selections(values, 0))
    assert not a.can_claim and a.min_studies == 9 and a.pairs == 10
    a9 = A.across_studies(_selections(_studies(rng, 1, 9, 5, 0.0, effect=2.0), 0))
    assert a9.can_claim and a9.shown[0, 1]


# --------------------------------------------------------------------------- across studies, as the app runs
def _tuned_studies(rng, n, N, C, luck=1.0, effect=0.0, seeds=10, examples=100, twins=()):
    """``n`` repetitions of ``N`` studies of one table ``(n, N, C, seeds)`` on a *discrete* metric, each
    contender *tuned* in each study: an error rate (``k / examples``, so ties are common) of the configuration
    its selection chose. Every contender has the same 7 configurations (true error 0.2 plus a flat bowl plus
    ``luck`` x 0.033 x N(0, 1) per configuration, drawn once per repetition: identical in distribution, the
    null, unless ``effect`` lowers contender 0's error on every configuration); a study chooses per contender the
    configuration with the lowest mean of 5 noisy validation values (noise 0.06 per seed: the tuning's luck, a
    different choice in each study and for each contender), then runs it on ``seeds`` confirmation seeds (a
    seed effect every contender shares, binomial noise). ``twins`` ``(a, b)``: contender ``b`` is ``a``'s rounding
    twin (``a`` x (1 + 3e-6) on every seed, as adam and optax.adam)."""
    G = 7
    true = (
        0.20
        + 0.005 * ((np.arange(G) - G // 2) / (G // 2)) ** 2
        + luck * 0.033 * rng.normal(size=(n, 1, 1, G))
    )
    true = np.broadcast_to(true, (n, N, C, G)).copy()
    true[:, :, 0] -= effect
    val = true[..., None] + 0.06 * rng.normal(size=(n, N, C, G, 5))
    chosen = val.mean(axis=-1).argmin(axis=-1)  # (n, N, C)
    q = np.take_along_axis(true, chosen[..., None], axis=-1)
    pr = np.clip(q + 0.02 * rng.normal(size=(n, N, 1, seeds)), 0.01, 0.99)
    values = rng.binomial(examples, pr) / examples
    for a, b in twins:
        values[:, :, b] = values[:, :, a] * (1 + 3e-6)
    return values


@pytest.mark.parametrize("N", [2, 3, 5, 8])
def test_across_studies_null_with_tuning_luck_discrete_metric_and_twins(N):
    """Issue 40, item 1, the "Done when": contenders identical in distribution, each tuned in each study (the
    tuning's luck from selection on noisy validation values), a discrete metric (errors out of 100 examples:
    ties, zero differences, equal per-study medians) and a pair of rounding twins, 4 contenders, at 2, 3, 5 and 8
    studies. The across-studies test's share of tables with any claim stays at most the level: 0 at 2, 3 and 5
    studies (no claim is possible there), 1.7 % at 8 (measured, wilcoxon and t alike); a single study's tests
    claim in 13-17 % (they hold the chosen configurations fixed). The former rule (Student's t over the
    per-study medians) claimed in 21 % at 2 studies, 78 % at 3 and 100 % at 5 and 8 (the twins: equal medians,
    sd 0, p 0)."""
    rng = np.random.default_rng(4000 + N)
    n, C = 1000, 4
    values = _tuned_studies(rng, n, N, C, twins=((2, 3),))
    for test in ("wilcoxon", "t"):
        rate = _shown(values, test).any(axis=(1, 2)).mean()
        assert rate <= _upper(LEVEL, n), (test, rate)
        if N <= 5:
            assert rate == 0.0
    old = _old_shown(values).any(axis=-1).mean()
    assert old > 0.15  # the former rule: far above the level at every N
    single = _claims(values[:, 0]).any(axis=(1, 2)).mean()
    assert single > 0.09  # the tuning's luck: a single study's claims are about its chosen configurations
    for rep in range(2):  # the public path agrees
        a = A.across_studies(_selections(values, rep))
        np.testing.assert_array_equal(a.shown, _shown(values[rep : rep + 1])[0])
        assert a.can_claim == (N >= 8) and a.min_studies == 8


def test_across_studies_power_on_the_tuned_discrete_metric():
    """Power where the app can claim (issue 40: "power stated"): contender 0's error lower by 0.066 (1.2
    standard deviations of a seed's paired difference) on every configuration, tuned as above with the tuning's
    luck, 4 contenders: shown better than contender 1 in 87 % of the tables at 8 studies and 99 % at 10
    (measured, n = 1000), never the wrong way; half that difference: 32 % and 58 %."""
    rng = np.random.default_rng(4100)
    n = 1000
    for N, power in ((8, 0.84), (10, 0.97)):
        shown = _shown(_tuned_studies(rng, n, N, 4, effect=0.066))
        assert shown[:, 0, 1].mean() >= _lower(power, n), (N, shown[:, 0, 1].mean())
        assert not shown[:, 1:, 0].any()


# --------------------------------------------------------------------------- a report of many tables
def _report_claims(values, family):
    """Per report ``(n, T, C, S)``: the claims ``(n, T, C, C)`` with Holm per table or over the report."""
    n, T, C, S_ = values.shape
    pt = S._pair_tests(
        values.reshape(n * T, C, S_), np.ones((n * T, C), bool), "wilcoxon", 0.0, S.ROUNDING_RTOL
    )
    if family == "table":
        adj = S._holm(pt.p)
    else:
        adj = S._holm(pt.p.reshape(n, -1)).reshape(n * T, -1)
    better, _, _ = S._square(pt, adj, LEVEL, C)
    return better.reshape(n, T, C, C)


def test_report_wide_family_holds_the_level_for_the_report():
    """Issue 40, item 3: with a family per table, a report of 9 null tables (5 contenders, 16 seeds) carries some
    false claim in 27 % of the reports (measured, n = 400; about 1 - 0.965^9), and the overall ranking built on
    them gives someone P(best) >= 0.5 in 23 %; one Holm family over the report (``--family report``,
    :func:`~mxopt_jax.compare.protocol.report_family`) holds both at the level (3.3 %, 3.3 %)."""
    rng = np.random.default_rng(700)
    n, T, C = 400, 9, 5
    values = _null(rng, n * T, C, 16).reshape(n, T, C, 16)
    names = list("abcde")
    rates = {}
    for family in ("table", "report"):
        better = _report_claims(values, family)
        any_claim = better.any(axis=(1, 2, 3))
        high = 0
        for k in np.flatnonzero(any_claim):
            low, hi = S._rank_sets(better[k], np.ones((T, C), bool))
            res = S.bootstrap_problems(0.5 * (low + hi), names, n_boot=200, seed=int(k))
            high += bool((res.p_first >= 0.5).any())
        rates[family] = (any_claim.mean(), high / n)
    assert rates["table"][0] > 0.2 and rates["table"][1] > 0.15  # the per-table family: a report-wide error
    assert rates["report"][0] <= _upper(LEVEL, n) and rates["report"][1] <= _upper(LEVEL, n)
    # the public path: report_family gives the same claims
    sels = [[_sel(values[0, t, c], f"c{c}", f"p{t}") for c in range(C)] for t in range(T)]
    tables = P.report_family([P.compare_table(s) for s in sels], "report")
    for t, table in enumerate(tables):
        np.testing.assert_array_equal(table.comparison.better, _report_claims(values[:1], "report")[0, t])
        assert table.comparison.family == T * 10


def _sel(v, name, problem="p"):
    return P.Selection(
        contender=name, problem=problem, mode="tuned", lrs=np.array([0.01]), index=0, lr=0.01, scores=np.zeros(1),
        val_final=v, val_mean=0.0, val_ci=0.0, test=v, test_mean=float(np.mean(v)), test_ci=0.0, best_val=v,
        best_val_mean=0.0, steps_to_target=np.full(len(v), np.inf), time_to_target=math.inf, reached=0,
        ms_per_step=1.0, on_edge=None, diverged=int((~np.isfinite(v)).sum()), diverged_chosen=0, seeds=len(v),
        steps=10, report_seeds=np.arange(len(v)) + 1000,
    )  # fmt: skip


@pytest.mark.parametrize(
    "probs", [(0.2, 0.1, 0.4, 0.1, 0.2), (0.4, 0.1, 0.3, 0.1, 0.1), (0.2,) * 5, (0.45, 0.05, 0.0, 0.05, 0.45)]
)
def test_the_ranking_interval_needs_nine_problems(probs):
    """Issue 40, item 3: the overall ranking's bootstrap interval over problems, for a contender whose rank on a
    problem is drawn from ``probs`` over 1..5 (spread, skewed, uniform, bimodal), covers its mean rank over
    problems (95 % nominal; n = 4000) in 83 %, 49 %, 69 %, 50 % of the draws with 2 problems, 87 %, 87 %, 87 %,
    92 % with 5, 90 %, 89 %, 92 %, 92 % with 8 and 90-93 % from 9 on: the report shows the interval and P(best)
    from :data:`~mxopt_jax.compare.protocol.MIN_PROBLEMS` = 9 problems on, and says why not below."""
    rng = np.random.default_rng(800)
    support = np.arange(1.0, 6.0)
    p = np.array(probs)
    mu = float(support @ p)
    n, B = 4000, 400
    cover = {}
    for problems in (2, 9, 12):
        r = rng.choice(support, p=p, size=(n, problems))
        idx = rng.integers(0, problems, size=(n, B, problems))
        rep = np.take_along_axis(r[:, None, :], idx, axis=-1).mean(axis=-1)
        lo, hi = np.quantile(rep, [0.025, 0.975], axis=1)
        cover[problems] = float(((lo <= mu) & (mu <= hi)).mean())
    assert cover[2] < 0.85
    assert cover[9] >= 0.9 - 3 * math.sqrt(0.09 / n) and cover[12] >= 0.9 - 3 * math.sqrt(0.09 / n)
    # the public function's interval is the same percentile interval
    res = S.bootstrap_problems(r[:1].T, ["x"], n_boot=B, seed=1)
    assert res.low[0] <= res.mean_rank[0] <= res.high[0]
    assert (
        P.ranking_omitted(8, "report")
        and P.ranking_omitted(9, "table")
        and not P.ranking_omitted(9, "report")
    )


# --------------------------------------------------------------------------- diverged seeds
def test_one_diverged_seed_is_in_the_power_note_and_divergences_are_compared():
    """Issue 40, item 5: a contender 5 standard deviations better on 15 of 16 seeds and diverged on the 16th
    (the worst value there) is shown better than a given other in 3 % of 5-entry tables and never in 10-entry
    ones (measured, n = 300): the smallest p-value it can get, 2 x 169 / 2^16 = 0.0052, is above Holm's first
    threshold. The table's power note says so (17 seeds needed for 5 entries); and where the divergence counts
    differ enough, the divergence comparison says who diverges less."""
    rng = np.random.default_rng(900)
    n = 300
    for C, most in ((5, 0.06), (10, 0.0)):
        values = _null(rng, n, C, 16)
        values[:, 0] -= 5.0 * math.sqrt(2)  # 5 paired standard deviations better
        values[:, 0, 0] = np.inf  # diverged on one seed
        shown = _claims(values)[:, 0, 1:].mean()
        assert shown <= most, (C, shown)
    table = P.compare_table([_sel(values[0, c], f"c{c}") for c in range(5)])
    assert "c0 diverged on 1 of 16 seeds" in table.power_note() and "17 seeds" in table.power_note()
    assert table.divergence is not None and list(table.divergence.diverged) == [1, 0, 0, 0, 0]
    assert table.divergence_claims() == []  # 1 seed against 0: nothing shown
    v = values[0, :5].copy()
    v[1, :10] = np.inf  # c1 diverged on 10 of 16 seeds: shown to diverge more often than the others
    table = P.compare_table([_sel(v[c], f"c{c}") for c in range(5)])
    claims = {(a, b) for a, b, _ in table.divergence_claims()}
    assert {("c2", "c1"), ("c3", "c1"), ("c4", "c1")} <= claims and ("c0", "c1") in claims


def test_paired_t_option_on_a_discrete_metric_holds_the_level():
    """Issue 40, item 1 (the t option): Student's p-value made a zero spread certainty (``sd = 0``: ``p = 0``), so
    on a discrete metric (errors out of 100 examples) 5-entry null tables claimed a difference in 39 % of the
    tables at 2 seeds (measured, n = 2000; the former rule recomputed here); the sign-flip p-value never claims
    below 6 seeds (its smallest p-value is 2 / 2^n) and stays at the level at 10 seeds (2.5 %; 3.2 % at 16 in the
    slow run)."""
    rng = np.random.default_rng(1000)
    n, C = 2000, 5
    for seeds in (2, 3, 10):  # 16 seeds: 65,536 sign patterns per pair, ~2 min (measured 3.2 %)
        pr = np.clip(0.2 + 0.02 * rng.normal(size=(n, 1, seeds)), 0.01, 0.99)
        values = rng.binomial(100, np.broadcast_to(pr, (n, C, seeds))) / 100
        rate = _claims(values, "t").any(axis=(1, 2)).mean()
        assert rate <= _upper(LEVEL, n), (seeds, rate)
        if seeds < 6:
            assert rate == 0.0
        i, j = np.triu_indices(C, 1)
        mean, p = _student(values[:, i] - values[:, j])  # the former rule: Student's t, sd = 0 -> p = 0
        old = ((S._holm(p) <= LEVEL) & (mean != 0)).any(axis=-1).mean()
        if seeds == 2:
            assert old > 0.3, old


# --------------------------------------------------------------------------- claims about the optimizers from one study
def _searched(
    rng, n, C, G=7, sel=5, R=16, landscape="bowl", delta=0.0, step=None, twins=False, diverge=False
):
    """``n`` tables of ``C`` tuned contenders, each with ``G`` configurations, as one study runs them: every
    configuration on ``sel`` selection seeds and on ``R`` report seeds; per contender the configuration with
    the best mean validation value on the selection seeds is chosen. A run's value: the configuration's true
    value, a seed effect every contender and configuration shares (5 per-run SDs: pairing by seed removes it),
    independent noise of SD 1; validation adds noise of SD 0.5 of its own.

    ``landscape``: ``"flat"`` (every configuration of every contender the same: the choice is pure tuning luck)
    or ``"bowl"`` (a bowl of curvature 0.3 per configuration squared around a random best configuration per
    contender, every contender's best the same: the choice is often wrong by one configuration); ``delta``:
    contender 0's configurations all that much better (the power case); ``step``: a discrete metric, values
    rounded to multiples of ``step`` (ties common); ``twins``: contender 1 is contender 0 computed another way
    (the same runs times 1 + 1e-6, as adam and optax.adam); ``diverge``: the two configurations of the largest
    rate diverge on each seed with probability 1/2 (``+inf``, the worst value).

    Returns ``(chosen (n, C, R), grids (n, C, G, R), truly (n, C, C))``: ``truly[t, i, j]`` when ``i``'s chosen
    configuration beats each of ``j``'s on a seed with probability above 1/2 (a claim ``i`` better than ``j``
    is false where it is not)."""
    if landscape == "flat":
        mu = np.zeros((n, C, G))
    else:
        best = rng.integers(0, G, size=(n, C, 1))
        mu = 0.3 * (np.arange(G)[None, None, :] - best) ** 2
    mu[:, 0] -= delta
    if twins:
        mu[:, 1] = mu[:, 0]
    p_div = np.where(np.arange(G) >= G - 2, 0.5, 0.0) if diverge else np.zeros(G)

    def runs(seeds, noise=0.0):
        eps = rng.normal(size=(n, C, G, seeds))
        bad = rng.random((n, C, G, seeds)) < p_div[None, None, :, None]
        if twins:
            eps[:, 1], bad[:, 1] = eps[:, 0], bad[:, 0]
        x = mu[..., None] + rng.normal(0, 5.0, (n, 1, 1, seeds)) + eps
        if noise:
            x = x + rng.normal(0, noise, x.shape)
        if twins:
            x[:, 1] = x[:, 0] * (1 + 1e-6)
        return np.where(bad, np.inf, x)

    val = runs(sel, noise=0.5)
    grids = runs(R)
    if step:
        grids = np.where(np.isfinite(grids), np.round(grids / step) * step, grids)
    score = np.where(np.isfinite(val).all(-1), val.mean(-1), np.inf)
    index = np.argmin(score, axis=-1)  # (n, C): the first of equal scores
    chosen = np.take_along_axis(grids, index[..., None, None], axis=2)[:, :, 0]
    own, d_own = np.take_along_axis(mu, index[..., None], -1)[..., 0], p_div[index]
    mi, di = own[:, :, None, None], d_own[:, :, None, None]
    win = (1 - di) * (1 - p_div) * scipy.stats.norm.cdf((mu[:, None] - mi) / math.sqrt(2)) + (1 - di) * p_div
    win = win + 0.5 * di * p_div
    return chosen, grids, (win > 0.5 + 1e-9).all(axis=-1)


def _search_claims(chosen, grids, level=LEVEL):
    """``better`` ``(n, C, C)`` of every table of a batch, as :func:`~mxopt_jax.compare.stats.compare_searches`
    decides (its batched internals)."""
    one, _, _ = S._search_tests(chosen, grids, "wilcoxon", 0.0, S.ROUNDING_RTOL)
    n, C, _ = chosen.shape
    i, j = np.triu_indices(C, 1)
    p = np.minimum(1.0, 2 * np.minimum(one[:, i, j], one[:, j, i]))
    significant = S._holm(p) <= level
    better = np.zeros((n, C, C), bool)
    better[:, i, j] = significant & (one[:, i, j] < one[:, j, i])
    better[:, j, i] = significant & (one[:, j, i] < one[:, i, j])
    return better


# the app's table sizes (2 contenders; 5; the default table's 22 entries once identical ones are folded), the
# default run's tables and, under slow, many more
_SEARCH_CASES = [
    pytest.param(2, 600, dict(landscape="flat"), id="2-flat"),
    pytest.param(5, 300, dict(landscape="bowl"), id="5-bowl"),
    pytest.param(
        5, 150, dict(landscape="bowl", step=0.5, twins=True, diverge=True), id="5-discrete-twins-div"
    ),
    pytest.param(22, 30, dict(landscape="bowl", twins=True), id="22-bowl-twins"),
    pytest.param(2, 4000, dict(landscape="bowl", step=1.0), id="2-discrete", marks=pytest.mark.slow),
    pytest.param(5, 2000, dict(landscape="flat", step=0.5), id="5-flat-discrete", marks=pytest.mark.slow),
    pytest.param(
        5,
        1500,
        dict(landscape="bowl", step=0.5, twins=True, diverge=True),
        id="5-all",
        marks=pytest.mark.slow,
    ),
    pytest.param(22, 300, dict(landscape="bowl", diverge=True), id="22-bowl-div", marks=pytest.mark.slow),
    pytest.param(
        22,
        120,
        dict(landscape="flat", step=0.5, twins=True, diverge=True),
        id="22-all",
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.parametrize("C, n, kw", _SEARCH_CASES)
def test_claims_about_the_optimizers_hold_their_level_with_tuning_luck(C, n, kw):
    """Claims about the optimizers from one study (the intersection-union test of
    :func:`~mxopt_jax.compare.stats.compare_searches`): the share of tables with *any* false claim stays at most
    5 % (Holm's family-wise rate over the table), whatever the tuning's luck (a flat landscape: every choice is
    luck; a bowl: the choice is often one configuration off), on a discrete metric (ties), with rounding twins
    (never separated) and configurations that diverge on half the seeds. Measured (the slow cases' sizes): 0 to
    0.2 % of tables, far below the level, because every configuration of the other contender must be beaten.
    The default run proves it at the table sizes the app makes (2, 5, 22 entries) on few tables; ``slow`` adds
    thousands."""
    rng = np.random.default_rng(700 + C + n)
    chosen, grids, truly = _searched(rng, n, C, **kw)
    better = _search_claims(chosen, grids)
    false = (better & ~truly).any(axis=(1, 2))
    assert false.mean() <= _upper(LEVEL, n), false.mean()
    if kw.get("twins"):
        assert not better[:, 0, 1].any() and not better[:, 1, 0].any()  # twins are never separated
    # the public function decides the same on a few tables (ragged searches: the same grids as lists)
    for t in range(2):
        r = S.compare_searches(chosen[t], list(grids[t]))
        np.testing.assert_array_equal(r.comparison.better, better[t])


@pytest.mark.parametrize(
    "C, n, power_all, power_pair",
    [
        pytest.param(2, 400, 0.95, 0.95, id="2"),
        pytest.param(5, 200, 0.70, 0.85, id="5"),
        pytest.param(22, 20, 0.0, 0.25, id="22"),
        pytest.param(22, 150, 0.0, 0.30, id="22-slow", marks=pytest.mark.slow),
    ],
)
def test_claims_about_the_optimizers_find_a_plain_difference(C, n, power_all, power_pair):
    """Power: contender 0 two per-run SDs better at every configuration (the bowl landscape: its chosen
    configuration is often not its best), 16 report seeds: measured, it is shown better than every other
    contender in 98.9 % of 2-entry tables and 83 % of 5-entry ones (92 % per pair), and better than a given
    other in 46 % of the pairs of a 22-entry table (Holm's first threshold 5 % / 231 needs nearly every seed
    the same way against every configuration). Never the wrong way."""
    rng = np.random.default_rng(800 + C + n)
    chosen, grids, truly = _searched(rng, n, C, landscape="bowl", delta=2.0)
    better = _search_claims(chosen, grids)
    assert better[:, 0, 1:].all(axis=-1).mean() >= _lower(power_all, n)
    assert better[:, 0, 1:].mean() >= _lower(power_pair, n * (C - 1))
    assert not better[:, 1:, 0].any()
    assert not (better & ~truly).any(axis=(1, 2)).mean() > _upper(LEVEL, n)


def test_a_search_claim_is_a_claim_at_the_chosen_configurations_too():
    """An intersection-union claim holds against the other's chosen configuration among the rest, so every
    claim about the optimizers is also found by the chosen configurations' own test at the same level, paired
    by seed (never the other way: the configurations' test claims more, with the tuning's luck inside)."""
    rng = np.random.default_rng(900)
    chosen, grids, _ = _searched(rng, 200, 5, landscape="bowl", delta=1.0)
    search = _search_claims(chosen, grids)
    one_sided = np.zeros_like(search)
    for t in range(len(chosen)):
        one_sided[t] = S.compare(chosen[t]).better
    # the Holm thresholds are the same and every pair's p-value at least the chosen configurations' one
    assert search.any() and not (search & ~one_sided).any()
    assert search.sum() < one_sided.sum()
