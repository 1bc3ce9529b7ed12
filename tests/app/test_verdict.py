"""Issue 49: claims about the optimizers from one study (the intersection-union test of every configuration a
search tried), the verdict per problem and what narrowing it would cost, the claims' sentences naming their
estimand, ordered by what they decide, the trivial ones summed up; on hand-made selections whose report runs
hold every configuration."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from mxopt_jax.compare import protocol as P
from mxopt_jax.compare import stats as S
from mxopt_jax.compare.analysis import analyse, analyse_table, verdict
from mxopt_jax.compare.analysis.verdict import narrowing_seeds
from mxopt_jax.compare.records import Records
from mxopt_jax.compare.report import tables

PROBLEM = SimpleNamespace(name="toy", metric_name="loss", target=0.0, better="lower", margin=0.0)
EVAL_STEPS = np.array([10, 20])
LRS = [1e-3, 1e-2, 1e-1]
R = 16


def _records(name, val, test, seeds, role):
    """Records of 3 rates whose last evaluation is ``val``/``test`` ``(3, S)`` (the first is twice it)."""
    v, t = np.asarray(val, np.float64), np.asarray(test, np.float64)
    return Records(
        contender=name,
        problem=PROBLEM.name,
        lrs=np.asarray(LRS),
        seeds=np.asarray(seeds),
        eval_steps=EVAL_STEPS,
        train_loss=np.stack([2 * v, v], -1),
        val=np.stack([2 * v, v], -1),
        test=np.stack([np.full_like(t, np.nan), t], -1),  # evaluated at the end only
        steps_to_target=np.full(v.shape, np.inf),
        role=role,
        run_s=1.0,
    )


def searched(name: str, report: np.ndarray, chosen: int = 1) -> P.Selection:
    """A tuned selection of 3 rates whose report runs (every rate, ``R`` seeds) are ``report`` ``(3, R)``; the
    selection seeds choose rate ``chosen``."""
    val = np.full((3, 2), 2.0)
    val[chosen] = 1.0
    sel = _records(name, val, np.full((3, 2), np.nan), [0, 1], "selection")
    rep = _records(name, np.ones((3, R)), report, 1000 + np.arange(R), "report")
    return P.select(sel, PROBLEM, report=rep)


RNG = np.random.default_rng(0)
SEED = RNG.normal(0, 5, R)  # the seed effect every contender shares (pairing removes it)


def grid(best: float, others: float = 3.0, noise: float = 0.1) -> np.ndarray:
    """A contender's report runs: rate 1 at ``best``, the others at ``best + others``."""
    g = SEED + best + RNG.normal(0, noise, (3, R))
    g[[0, 2]] += others
    return g


def test_a_contender_is_shown_better_only_against_every_rate_the_other_tried():
    """B's chosen rate (its selection seeds' luck) is its worst, but another of its rates is as good as A: the
    chosen configurations' test claims A better, the claim about the optimizers does not."""
    a = searched("a", grid(0.0))
    lucky = grid(0.0)
    lucky[1] += 2.0  # the chosen rate is 2 worse; rate 0 is as good as a
    lucky[0] -= 3.0
    b = searched("b", lucky, chosen=1)
    assert b.report_grid.shape == (3, R) and b.index == 1
    configs = P.compare_table([a, b])
    searches = P.search_table([a, b])
    assert configs.shown_better("a", "b") and configs.about == "configurations"
    assert not searches.shown_better("a", "b") and searches.about == "optimizers"
    assert searches.searches.binding[0, 1] == 0  # b's rate 0 came closest
    # beaten at every rate: shown
    c = searched("c", grid(2.0))
    t = P.search_table([a, c])
    assert t.shown_better("a", "c")
    assert t.searches.one_sided[0, 1] == pytest.approx(2.0**-R)  # every seed, every rate: 1 / 2^16
    assert t.comparison.p[0, 1] == pytest.approx(2 * 2.0**-R)


def test_compare_searches_checks_its_input_and_never_separates_twins():
    chosen = RNG.normal(size=(2, R))
    with pytest.raises(ValueError, match="one array per row"):
        S.compare_searches(chosen, [chosen[:1]])
    with pytest.raises(ValueError, match=r"searches\[1\] must be \(configurations, 16\)"):
        S.compare_searches(chosen, [chosen[:1], chosen[:1, :3]])
    with pytest.raises(ValueError, match="must not hold NaN"):
        S.compare_searches(chosen, [chosen[:1], np.full((1, R), np.nan)])
    twin = chosen[0] * (1 + 1e-6)
    r = S.compare_searches(np.stack([chosen[0], twin]), [chosen[:1], np.stack([twin, twin + 5])])
    assert r.comparison.equal[0, 1] and r.one_sided[0, 1] == 1.0 and not r.comparison.better.any()
    # ragged searches: the configurations each tried
    r = S.compare_searches(chosen, [chosen[:1], np.stack([chosen[1], chosen[1] + 1, chosen[1] + 2])])
    assert r.configurations.tolist() == [1, 3]


def test_the_verdict_is_the_entries_no_other_is_shown_better_than_and_costs_narrowing():
    sels = [
        searched("a", grid(0.0)),
        searched("b", grid(0.02, noise=0.3)),  # close to a: not separated on 16 seeds
        searched("c", grid(3.0)),
        searched("d", np.full((3, R), np.inf)),  # diverged everywhere
    ]
    table = analyse_table(sels)
    v = verdict(table)
    assert set(v.best) == {"a", "b"} and v.leader in v.best and v.entries == 4 and v.about == "optimizers"
    assert table.hopeless == ("d",)
    (n,) = v.narrowing
    assert n.name == ({"a", "b"} - {v.leader}).pop()
    # a difference this small: the leader wins on about half the seeds, more seeds would not narrow it
    assert n.seeds is None or n.seeds > R
    # a difference that more seeds would show: the estimate is a count between the seeds run and the largest
    seeds, wins, _ = narrowing_seeds(np.zeros(R) - 0.05 + RNG.normal(0, 0.1, R), np.zeros((3, R)), 0.05 / 6)
    assert wins > 0.5 and seeds is not None and R < seeds <= max(S_STEPS)
    seeds, wins, _ = narrowing_seeds(np.zeros(R) + 1.0, np.zeros((3, R)), 0.05 / 6)
    assert seeds is None and wins == 0.0  # the member wins on every seed: no count of seeds narrows it


S_STEPS = (16, 24, 32, 48, 64, 96, 128, 192, 256)


def test_sentences_name_the_estimand_lead_with_what_decides_and_sum_up_the_trivial():
    sels = [
        searched("a", grid(0.0)),
        searched("b", grid(1.0)),
        searched("c", grid(2.0)),
        searched("d", np.full((3, R), np.inf)),
    ]
    table = analyse_table(sels)
    text = tables.claims_sentences(table, "loss")
    lines = [line.strip() for line in text.splitlines()]
    assert (
        lines[0]
        == f"claims (about the optimizers under this search and budget), {len(table.shown_claims())}:"
    )
    first = lines[1]
    # the claim against the entry nearest the top first: a better than b
    assert first.startswith(
        "a (lr 0.01, chosen from 3 rates on 2 seeds, 20 steps) is better than b at every one"
    )
    assert "of b's 3 rates on toy (16 seeds, p_adj" in first and "against b's lr" in first
    assert not any(line.startswith(("a (", "b (", "c (")) and " than d " in line for line in lines)
    assert lines[-1].startswith(
        "d diverged on every report seed at every one of its 3 configuration(s): 3 of"
    )
    # the chosen configurations' own claims are kept beside (claims.csv) and say what they are about
    conf = [c for c in table.configuration_claims if c.shown]
    assert conf and conf[0].sentence("loss").startswith(
        f"{conf[0].better} is better than {conf[0].worse} at their"
    )
    assert conf[0].about == "configurations" and "at their chosen rates" in conf[0].sentence()


def test_the_verdict_leads_the_report_and_names_the_search():
    sels = [searched("a", grid(0.0)), searched("b", grid(0.01, noise=0.4)), searched("c", grid(3.0))]
    other = [s.__class__(**{**s.__dict__, "problem": "toy2"}) for s in sels]
    analysis = analyse(sels + other)
    problems = [SimpleNamespace(name="toy"), SimpleNamespace(name="toy2")]
    lines = tables.verdict_lines(analysis, problems)
    text = " ".join(" ".join(lines).split())
    assert lines[0] == "== Verdict: which optimizer could be the best on each problem"
    assert (
        "each contender's rate chosen from 3 rates on 2 selection seeds, 20 steps, compared on 16 fresh"
        in text
    )
    assert "beat it at every one of the rates it tried" in text
    assert "toy 2 of 3 could be the best" in text
    assert "Over the 2 problems:" in text and "in every problem's best set" in text


def test_the_report_family_covers_search_tables():
    """``--family report`` re-decides the claims about the optimizers as one family with the other tables'."""
    sels = [searched("a", grid(0.0)), searched("b", grid(0.5)), searched("c", grid(3.0))]
    one = analyse(sels, family="table")
    wide = analyse(sels, family="report")
    t1, tw = one.table("toy"), wide.table("toy")
    assert tw.about == "optimizers" and tw.comparison.searches is not None
    assert not (tw.comparison.comparison.better & ~t1.comparison.comparison.better).any()
    assert math.isclose(
        tw.comparison.searches.comparison.p_adjusted[0, 2], tw.comparison.comparison.p_adjusted[0, 2]
    )


def test_the_effect_is_measured_against_the_closest_configuration():
    """Regression (the main job's first report): when every seed goes the same way at every configuration of the
    other, every component has the smallest p-value the seeds allow; the sentence's effect was measured against
    the first of them (the smallest rate, where the other learns nothing: -3.15 bits/char), not the closest."""
    a = searched("a", grid(0.0))
    far = grid(1.0)
    far[0] += 50.0  # the smallest rate: the other learns nothing there
    b = searched("b", far)
    t = P.search_table([a, b])
    assert t.searches.one_sided[0, 1] == pytest.approx(2.0**-R)
    assert t.searches.binding[0, 1] == 1  # rate 1, the closest (1 worse), not rate 0 (51 worse)
    (claim,) = [c for c in analyse_table([a, b]).claims if c.shown]
    assert claim.versus == "lr 0.01" and -1.5 < claim.effect < -0.5
