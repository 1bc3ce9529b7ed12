"""The protocol in words: the text printed with the results and stored with them."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import schedules as _schedules
from ..analysis import most_entries
from ..direction import Direction
from ..plan import Plan
from ..protocol import (
    BOOTSTRAP_REPLICATES,
    BOOTSTRAP_SEED,
    LEVEL,
    ROUNDING_RTOL,
    TAU_MAX,
    TEST,
    TEST_LEVEL,
    Preset,
)
from ..space import Hyperparameter
from .tables import WIDTH, test_words, wrap

if TYPE_CHECKING:  # pragma: no cover
    from ..problems.base import Problem

__all__ = ["describe"]


def _fmt_lr(v: float) -> str:
    return f"{v:.3g}"


def _seed_text(seeds: Sequence[int]) -> str:
    """``"5 seeds (0-4)"`` or ``"3 seeds (0, 7, 9)"``."""
    seeds = [int(x) for x in seeds]
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        listing = f"{seeds[0]}-{seeds[-1]}"
    else:
        listing = ", ".join(map(str, seeds))
    return f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({listing})"


def _settings_text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _grid_text(g: np.ndarray) -> str:
    """``"7 rates 0.001 .. 1"`` or ``"1 rate: 0.1"``."""
    if len(g) == 1:
        return f"1 rate: {_fmt_lr(g[0])}"
    return f"{len(g)} rates {_fmt_lr(g[0])} .. {_fmt_lr(g[-1])}"


def _per_problem_grids(
    grids: Mapping[str, Sequence[float] | np.ndarray]
    | Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
    problems: Sequence[str],
) -> dict[str, dict[str, np.ndarray]]:
    """``{contender: {problem: rates}}`` from ``grids`` given per problem (``{problem: {contender: rates}}``) or
    once for every problem (``{contender: rates}``)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    if any(isinstance(v, Mapping) for v in grids.values()):
        for prob, per in grids.items():
            for n, g in per.items():  # type: ignore[union-attr]
                out.setdefault(n, {})[prob] = np.asarray(g, np.float64)
    else:
        for n, g in grids.items():
            out[n] = {prob: np.asarray(g, np.float64) for prob in problems}
    return out


def _space_text(h: Hyperparameter) -> str:
    """``"beta1 0.5..0.99 log1m [0.9]"``."""
    return f"{h.name} {h.low:.4g}..{h.high:.4g} {h.scale} [{h.default:.4g}]"


def describe(
    preset: Preset | None,
    problems: Sequence[Problem],
    contenders: Sequence[str],
    grids: Mapping[str, Sequence[float] | np.ndarray]
    | Mapping[str, Mapping[str, Sequence[float] | np.ndarray]]
    | None = None,
    one_shot: bool = True,
    level: float = LEVEL,
    tau_max: float = TAU_MAX,
    width: int = 100,
    seeds: Sequence[int] | None = None,
    confirm_seeds: Sequence[int] | None = None,
    settings: Mapping[str, tuple[str, Mapping[str, object]]] | None = None,
    search: str = "grid",
    trials: int | None = None,
    search_seed: int = 0,
    spaces: Mapping[str, Sequence[Hyperparameter]] | None = None,
    schedule: str = "constant",
    test: str = TEST,
    searches: bool = True,
) -> str:
    """The protocol in words, as it ran: printed with the results and stored with them.

    Args:
      preset: the preset that ran (None: a custom study; the grid sizes come from ``grids``).
      problems: the problems (name, steps, target, metric).
      contenders: the contenders' names.
      grids: the rates each contender was tuned on (extensions included), per problem
        (``{problem: {contender: rates}}``: each problem's grid as it ran) or ``{contender: rates}`` (the same
        on every problem).
      one_shot: whether the study also ran the one-shot mode (every contender at its default rate).
      level, tau_max: the interval's level and the profile's largest ratio.
      width: line width of the wrapped paragraphs.
      seeds, confirm_seeds: the selection and the confirmation seeds that ran (default: those of a
        :class:`~mxopt_jax.compare.plan.Plan` of ``preset``, the plan owning the seeds).
      settings: ``{contender: (description, {setting: value})}``: what each contender ran with besides what
        was tuned.
      search, trials, search_seed: ``"grid"`` or ``"random"`` (:mod:`mxopt_jax.compare.search`), the trials per
        contender and the seed of a random search; ``spaces``: ``{contender: hyperparameters}`` it drew from.
      schedule: the learning-rate schedule's name (:mod:`mxopt_jax.compare.schedules`).
      test: the tables' paired test (:data:`mxopt_jax.compare.stats.TESTS`).
      searches: whether every configuration tried also ran on the report seeds (the claims of the tuned tables
        are then about the optimizers under their searches); ``False`` for a study saved before they did.
    """
    pct = f"{100 * level:g} %"
    if preset is not None and (seeds is None or confirm_seeds is None):  # the seeds a plan of it runs
        plan = Plan(preset)
        seeds = list(plan.seeds) if seeds is None else list(seeds)
        confirm_seeds = list(plan.confirm_seeds) if confirm_seeds is None else list(confirm_seeds)
    by_contender = _per_problem_grids(grids or {}, [p.name for p in problems])
    sizes = sorted({len(g) for per in by_contender.values() for g in per.values()})
    paras = []
    head = "Protocol"
    if preset is not None:
        budget = "each problem's quick step budget" if preset.quick else "each problem's full step budget"
        head += f" (preset '{preset.name}': {budget})"
    head += "."
    if preset is not None and preset.quick and any(p.quick_steps is not None for p in problems):
        head += (
            " Budget: the quick budget is a fraction of the full one, so these tables rank early progress; "
            "rankings can change at the full budget (the full preset; `mxopt-jax agree A B` measures how far two "
            "saved studies agree, `--study-a`/`--study-b` picking one of a folder's independent studies)."
        )
    elif preset is not None and not preset.quick:
        head += (
            " Budget: each problem's full step budget; cite these rankings rather than the quick preset's."
        )
    paras.append(head)
    if search == "random":
        n_trials = trials if trials is not None else 0
        paras.append(
            f"Tuning (random search, equal budgets): each contender is trained at {n_trials} configurations: its "
            f"default one (MXNet's or optax's defaults), then {max(n_trials - 1, 0)} drawn at random, every "
            "hyperparameter it declares independently from its range (listed below): the learning rate "
            "log-uniformly over 4 decades, the range of its kind of update (what the rate multiplies: a gradient "
            "step, a normalized step, ...; contenders that compute the same update search the same rates), decay "
            "rates (momentum, beta1, beta2, rho) log-uniformly in 1 - value, epsilons and weight decays "
            "log-uniformly. Common random numbers: the search seed "
            f"({search_seed}) alone seeds one stream of uniform numbers per kind of hyperparameter (the learning "
            "rate, momentum, beta1 = optax's b1, ...), and every contender that has a kind maps the same numbers "
            "through its own range: contenders with the same space run the same trials whatever their names, and "
            "a contender's trials depend neither on the other contenders nor on the problem. Another search seed "
            "draws a new, independent search for every contender. Every drawn hyperparameter is a traced input of "
            "the compiled program (no recompiles). Settings not drawn keep their defaults (listed below)."
        )
    elif preset is not None:
        ran = ""
        if sizes and sizes != [preset.grid_points]:
            ran = (
                f" A grid whose chosen rate sat on its edge was extended past it, so the contenders ran "
                f"{' or '.join(map(str, sizes))} rates (listed below)."
            )
        paras.append(
            f"Tuning: each contender is trained at {preset.grid_points} learning rates, log-spaced "
            f"{preset.spacing:g} decade(s) apart and centred on its default rate (MXNet's default for mxopt_jax's "
            f"optimizers); every other hyperparameter keeps its default (listed below).{ran}"
        )
    else:
        paras.append(
            "Tuning: each contender is trained on a log-spaced learning-rate grid; every other hyperparameter "
            "keeps its default."
        )
    if schedule != "constant":
        paras.append(
            f"Schedule: {_schedules.describe(schedule)}, the same for every contender; the peak is the "
            "configuration's learning rate (the tuned one, or the default in the one-shot mode), and the "
            "schedule knows each run's step budget."
        )
    seed_words = (
        f"each rate is run with {_seed_text(seeds)}" if seeds else "every rate is run with several seeds"
    )
    paras.append(
        f"Seeds: {seed_words} for selection. A seed sets the initialization, the order of the mini-batches and "
        "any randomness of the optimizer (SGLD's noise), from three independent streams; every contender sees "
        "the same ones. The data split (train / validation / test) is fixed. Every run of a contender is "
        "trained in one compiled program."
    )
    what, tie = ("configuration", "the earlier trial") if search == "random" else ("rate", "the smaller rate")
    paras.append(
        f"Selection (validation only): the chosen {what} is the one with the best mean over the selection "
        "seeds of the final validation metric (the lowest, or the highest where the problem's metric is better "
        "higher); a run that diverged (its training loss or a parameter became NaN/inf, whatever the metric then "
        f"says) counts as the worst value, so a {what} where any seed diverged is never chosen over one where none "
        f"did; equal means: {tie}. The test split is never read to choose."
    )
    if confirm_seeds and searches:
        paras.append(
            f"Report runs (fresh seeds): every {what} tried is also run on {_seed_text(confirm_seeds)}, disjoint from "
            "the selection seeds and never read to choose (reporting the runs that chose would be optimistic). "
            f"The chosen {what}'s runs are what the tables report: the test values, their median and quartiles, the "
            "best validation value, steps and time to target and the report seeds' divergences; every "
            f"{what}'s final test value is what the claims about the optimizers compare against (below). The "
            f"default {what} is one of them (the one-shot mode's). The fastest trial and the performance profile, "
            "ms/step and the selection divergences come from the selection runs. Figures: the training curves "
            f"show the chosen {what}'s report runs (validation); the sensitivity plot shows the selection runs "
            "(every configuration tried, on the selection seeds: the runs that chose)."
        )
    elif confirm_seeds:
        paras.append(
            f"Confirmation (fresh seeds): the chosen rate is run again with {_seed_text(confirm_seeds)}, disjoint "
            "from the selection seeds (reporting the runs that chose would be optimistic). What each number "
            "reads: the test values, their median and quartiles, the groups and rank sets, the best validation "
            "value, steps and time to target and the report seeds' divergences come from these confirmation runs "
            "only; the fastest trial and the performance profile, ms/step and the selection divergences come "
            "from the selection runs (every rate tried on the selection seeds). Figures: the training curves show "
            "these runs (validation); the sensitivity plot shows the selection runs (every configuration tried, "
            "on the selection seeds: the runs that chose)."
        )
    paras.append(
        f"Reporting (test): the final test metric's mean over the reported seeds and the half-width of the {pct} "
        "Student-t confidence interval of that mean (R-1 degrees of freedom; symmetric, so it can reach past "
        "the metric's range, e.g. below 0 %; the tests do not read it); where report seeds diverged, the mean and "
        "interval over the finite ones with their count, and how many diverged. Beside it the median and "
        "quartiles over every report seed, a diverged seed counting as the worst value (as DeepOBS and the "
        "Crowded Valley report). Also the best validation value over the run (mean over seeds), steps to target "
        "and ms per step (the selection runs' time over every step of every run, measured while nothing else ran "
        "in the process, compilation excluded)."
    )
    test_pct = f"{100 * TEST_LEVEL:g} %"
    tables = 2 * len(problems) if one_shot else len(problems)
    any_false = 1 - (1 - TEST_LEVEL) ** tables
    R = len(confirm_seeds or ()) or 16
    most = most_entries(R, TEST_LEVEL)
    about = (
        f"What the tuned tables' claims are about: the optimizers under this search and budget. A contender is "
        f"shown better than another when, at its chosen {what}, it beats the other at every one of the {what}s "
        f"the other's search tried (an intersection-union test, Berger 1982: one one-sided {test_words(test)} per "
        "configuration of the other, on the report seeds, paired by seed; the pair's p-value is the largest of "
        "them, doubled for the two directions). Whichever configuration the other's tuning would have picked, it "
        "would have lost, so the claim needs no model of the tuning's luck; it speaks of each contender's best on "
        f"this search ({what}s, seeds and steps as listed here), not of configurations outside it (a chosen "
        f"{what} on its search's edge is flagged in the claim). The chosen configurations are also compared alone "
        "(claims.csv, about='configurations'; the tuning's luck is inside those claims). "
        if searches
        else "What a study's claims are about: the configurations it chose (this study did not run every "
        "configuration on the report seeds). Its tests hold each contender's chosen configuration fixed, so the "
        "tuning's luck is part of every claim. "
    )
    paras.append(
        "Claims (per table, on the reported test values): contenders identical in the table are first folded "
        "into one entry (a duplicate would count twice), which all of them share. Every contender of a table "
        f"ran the same report seeds, so the entries are compared paired by seed ({test_words(test)}); a diverged "
        "seed is the worst value on its seed (the entry loses that seed, its other seeds still count). A "
        f"difference of at most {ROUNDING_RTOL:g} relative of the value on a seed is treated as no difference "
        "on that seed (a zero, ranked but never signed: far above float32 rounding, where two implementations "
        "of one update drift 1e-6 apart, and below what the tables print), and two entries within it on every "
        "seed are treated as equal, never separated (a real difference that small is not claimed either). "
        "Where a problem states a practical margin (listed below), a pair is shown to differ only by more than "
        "it. The family is every pair of the table's entries, corrected together by Holm's step-down method at "
        f"{test_pct}: a pair whose adjusted p-value is at most that was shown to differ. A table prints only "
        "what these tests showed: the group letters (a compact letter display, Piepho 2004: two entries share a "
        "letter exactly when they were not shown to differ), the rank set [1 + entries shown better, E - entries "
        "shown worse] (E entries) and the claims in sentences (the median paired difference with the "
        "Hodges-Lehmann interval, the adjusted p-value, the seeds that went the claim's way); claims.csv holds "
        "every tested pair (the test, its statistic, p, adjusted p, the family, the effect and its interval, "
        "the seeds or studies used, what the claim is about). " + about + "Error control is per table: "
        "Holm's correction makes every claim of one table right with probability at least "
        f"{100 * (1 - TEST_LEVEL):g} % (and then every entry's true rank lies in its set); a report of T tables "
        f"can hold some false claim with probability up to 1 - {1 - TEST_LEVEL:g}^T ({100 * any_false:.0f} % for "
        f"this report's {tables} tables under a global null). With --family report every pair of every table "
        "(the tables across studies included) is one Holm family, and the whole report is right with "
        f"probability at least {100 * (1 - TEST_LEVEL):g} % (fewer claims). --studies N repeats the whole tuning "
        "on other seeds and search draws: the across-studies test takes the study as the unit (per pair and study "
        "the median paired difference, then the exact sign-flip test over the N studies' effects, Wilcoxon's "
        "signed-rank test of them, Holm over the table): its smallest p-value is 2/2^N however alike the "
        f"studies are, so N studies can show a difference only where 2/2^N <= {test_pct}/pairs (6 studies for 2 "
        "entries, 8 for 4, 9 for 5, 14 for 22); a table too large for its studies says so, and random-effects "
        "estimates (Hartung-Knapp intervals) are shown beside it as model-based effects, never as claims. A rank "
        "set 1-E means not shown to differ from any, not equal. Power: the exact signed-rank test's smallest "
        f"p-value on R seeds is 2/2^R (0.002 at 10, 1.9e-6 at 20), and Holm's first step needs {test_pct}/pairs: "
        f"these {R} report seeds can separate at most {most} entries ({most * (most - 1) // 2} pairs); a table "
        "too large for its seeds says so. A seed on which an entry diverged is its worst value, the largest "
        "difference against it: one diverged seed of 16 keeps it from being shown better in a table of 5 or more "
        "entries (the power note names the seeds it would need), and the divergence counts are compared on their "
        "own (McNemar's exact sign test on the seeds where only one of a pair diverged, Holm over those pairs)."
    )
    boot_pct = f"{100 * level:g} %"
    paras.append(
        f"Overall ranking: each contender's mean rank over the problems (the middle of its rank set on each, "
        f"(low + high) / 2), with the {boot_pct} percentile interval of that mean over {BOOTSTRAP_REPLICATES} "
        "bootstrap resamples of the problems (numpy's default_rng, seed "
        f"{BOOTSTRAP_SEED}) and P(best), the share of resamples in which it has the lowest mean rank. Each "
        "problem's tests run once, on its data, and are kept as they are (re-testing resampled seeds would count "
        "a duplicated seed as independent evidence): the interval shows how much the ranking depends on which "
        "problems were run, and claims no difference a table did not show. The interval and P(best) are shown "
        "only from 9 problems on and with --family report: with fewer problems the bootstrap interval covers the "
        "mean rank in as few as half of the draws (2 problems), and with a family per table a single false claim "
        "in one table of 9 (about 30 % of studies where no contender differs) gives someone P(best) >= 0.5."
    )
    if search == "random":
        paras.append(
            "Edge flag: a chosen value that is the lowest (<) or the highest (>) of its hyperparameter among the "
            "contender's trials is flagged, per hyperparameter (the rate next to it, the others in the chosen "
            "configurations): no trial tried a value beyond it on that side, so the best value may lie there "
            "(a default on its range's end, such as momentum 0 or no weight decay, is not flagged). Of N trials, "
            "one that a hyperparameter does not matter to holds its lowest or highest value with probability 2/N: "
            "the flag says a direction went unexplored, not that the range is wrong."
        )
    else:
        paras.append(
            "Edge flag: a chosen rate that is the smallest (<) or the largest (>) of its grid is flagged: the "
            "best rate may lie outside the grid."
        )
    if one_shot:
        on = f", on the same {_seed_text(confirm_seeds)}" if confirm_seeds else ""
        paras.append(
            f"One-shot mode: every contender at its default rate (MXNet's defaults, no tuning){on}, the smallest "
            "tuning budget; its ranks are shown next to the tuned ones."
        )
    paras.append(
        "Identical contenders: contenders whose runs agree exactly in a table (the same update at these "
        "settings) are one entry of that table, decided per table from the runs it shows."
    )
    paras.append(
        "Target: each problem's validation target (below). Steps to target: the first evaluation step whose "
        "validation metric reaches the target, per seed; tables show, at the chosen rate on the report seeds, "
        "the steps by which a majority of the seeds reached it (the median for an odd count, the upper median "
        "for an even one; none unless more than half did), how many seeds reached it, and the seconds it stands "
        "for (steps x ms per step). Time to target, for the performance profile (AlgoPerf's external tuning: per "
        "study the fastest trial that reaches the target, then the median over the studies, a majority needed): "
        "a selection seed is a study and the rates tried on it its trials, so per seed the fewest steps any rate "
        "tried needed, then the steps by which a majority of the seeds got there, infinite unless more than half "
        "did; counted in steps (every contender of a problem does the same model work per step). Profile: "
        "rho(tau) = fraction of problems on which a contender's time to target is at most tau times the "
        f"fastest contender's, tau linear from 1 to {tau_max:g}; score = the area under rho over tau from 1 to "
        f"{tau_max:g}, divided by {tau_max - 1:g} (1: fastest everywhere, 0: never within {tau_max:g} times the "
        "fastest)."
    )
    paras.append(
        "Noise: runs at different rates share one batched program; at unstable rates batched arithmetic can "
        "make a run's last bits depend on which other rates share the program, and those bits grow "
        "chaotically. The spread over seeds is the study's measure of noise; the tests compare contenders seed "
        "by seed, so a difference smaller than that spread counts only where it is consistent over the seeds."
    )
    text = "\n".join(
        textwrap.fill(p, width=width, subsequent_indent="  ", break_on_hyphens=False) for p in paras
    )
    lines = [text, "", "Problems:"]
    for p in problems:
        steps = preset.steps(p) if preset is not None else p.steps
        direction = Direction(getattr(p, "better", "lower"))
        margin = float(getattr(p, "margin", 0.0))
        lines += wrap(
            f"  {p.name}: {p.title}; {steps} steps, batch {p.batch_size}; metric {p.metric_name} "
            f"({direction.word} is better), target {direction.symbol} {p.target:g}; practical "
            f"margin {f'{margin:g} {p.metric_name}' if margin else '0 (none)'}",
            WIDTH,
            "      ",
        )
    names = list(contenders)
    w = max((len(n) for n in names), default=0)
    if by_contender:
        lines.append(
            "Grids (the rates each contender ran, extensions included; per problem where they differ):"
        )
        for n in names:
            per = by_contender.get(n, {})
            if not per:
                lines.append(f"  {n:<{w}}  (not run)")
                continue
            same: dict[tuple[float, ...], list[str]] = {}
            for prob, g in per.items():
                same.setdefault(tuple(g.tolist()), []).append(prob)
            if len(same) == 1:
                lines.append(f"  {n:<{w}}  {_grid_text(next(iter(per.values())))}")
            else:
                lines += wrap(
                    f"  {n:<{w}}  "
                    + "; ".join(
                        f"{_grid_text(np.asarray(g))} ({', '.join(probs)})" for g, probs in same.items()
                    ),
                    WIDTH,
                    " " * (w + 4),
                )
    elif spaces:
        lines.append(
            "Search spaces (the ranges each contender's trials were drawn from; default in brackets):"
        )
        for n in names:
            hps = spaces.get(n, ())
            lines += wrap(f"  {n:<{w}}  " + ", ".join(_space_text(h) for h in hps), WIDTH, " " * (w + 4))
    else:
        lines.append("Contenders: " + ", ".join(names))
    if settings:
        lines.append(
            "Settings (besides the tuned rate; where libraries' defaults differ, these are the values run):"
            if search != "random"
            else "Settings (besides the searched hyperparameters; the values run):"
        )
        for n in names:
            if n not in settings:
                continue
            desc, values = settings[n]
            listing = ", ".join(f"{k}={_settings_text(v)}" for k, v in values.items())
            lines += wrap(
                f"  {n:<{w}}  {listing or '-'}" + (f"  [{desc}]" if desc else ""), WIDTH, " " * (w + 4)
            )
    return "\n".join(lines)
