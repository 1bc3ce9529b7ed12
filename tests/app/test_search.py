"""The random search: the search spaces stated in one table and held to the constructors, reproducible draws
that depend on the seed and the contender alone, every hyperparameter a traced input (trials never
recompile), the chosen values in the records, tables and files, the per-preset targets, and the comparison
of two saved studies (``mxopt-jax agree``)."""

from __future__ import annotations

import csv
import dataclasses
import inspect
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_problems import mlp_problem as _mlp_problem
from traces import counting

import mxopt_jax
from mxopt_jax.compare import PRESETS, PROBLEMS, engine, result, search, study
from mxopt_jax.compare import contenders as C
from mxopt_jax.compare.analysis import analyse
from mxopt_jax.compare.analysis.agreement import kendall_tau
from mxopt_jax.compare.cli import build_parser, main
from mxopt_jax.compare.space import Hyperparameter, kind
from mxopt_jax.compare.study import _preset_target

#: Keywords that are plumbing or switches, not numbers to search (bools, dtypes, masks, ...).
_NOT_NUMBERS = C._PLUMBING | {"seed"}


def _numeric_keywords(fn, overrides=None) -> set[str]:
    out = set()
    for k, p in inspect.signature(fn).parameters.items():
        v = (overrides or {}).get(k, p.default)
        if k in _NOT_NUMBERS or k == "learning_rate" or p.default is inspect.Parameter.empty:
            continue
        if isinstance(v, bool) or isinstance(v, str):
            continue
        if isinstance(v, int | float) or k in C.NOT_SEARCHED:
            out.add(k)
    return out


# --------------------------------------------------------------------------- the search spaces
def test_every_numeric_keyword_is_searched_or_said_why_not():
    """The table states a range for every number of every constructor, or why it stays fixed."""
    for name, fn in mxopt_jax.OPTIMIZERS.items():
        keywords = _numeric_keywords(fn)
        searched = set(C.SEARCH_SPACES[name])
        assert searched <= keywords, (name, searched - keywords)
        assert keywords - searched <= set(C.NOT_SEARCHED), (name, keywords - searched - set(C.NOT_SEARCHED))
    for c in C.OPTAX_BASELINES.values():
        fn = getattr(optax, c.name.removeprefix("optax."))
        searched = set(C.SEARCH_SPACES[c.name])
        assert searched <= _numeric_keywords(fn, c.settings), c.name
    assert set(C.SEARCH_SPACES) == {*mxopt_jax.OPTIMIZERS, *C.OPTAX_BASELINES}


def test_contenders_declare_their_search_space_with_library_defaults():
    for c in C.default_contenders():
        names = [h.name for h in c.hyperparameters]
        assert names == ["learning_rate", *C.SEARCH_SPACES[c.name]], c.name
        lr = c.hyperparameters[0]
        assert (lr.low, lr.high) == C.RATE_RANGES[C.UPDATES[c.name]], c.name  # its kind of update's range
        assert lr.low < lr.default < lr.high and lr.scale == "log", c.name  # the default is drawn around
        fn = mxopt_jax.OPTIMIZERS.get(c.name)
        if fn is not None:
            sig = inspect.signature(fn).parameters
            for h in c.hyperparameters:
                assert h.default == sig[h.name].default, (c.name, h.name)
    assert C.mxopt_contender("ftml").defaults["beta1"] == 0.6
    assert (
        C.OPTAX_BASELINES["optax.sgd"].defaults["momentum"] == 0.9
    )  # the baseline's setting, not optax's None
    assert C.OPTAX_BASELINES["optax.adamw"].defaults["weight_decay"] == 1e-4


def test_contenders_of_one_update_search_the_same_rates():
    """The rate's range is its kind of update's, not its default's: SGD (default 0.1) and ccSGD, LBSGD and Test
    (default 0.01; the same update) all search 1e-3 .. 10 (before: 1e-3 .. 10 and 1e-4 .. 1); every other kind
    of hyperparameter has one range for every contender that has it (optax's ``b1`` is ``beta1``)."""
    space = {c.name: {h.name: h for h in c.hyperparameters} for c in C.default_contenders()}
    assert set(C.UPDATES) == set(space) and set(C.UPDATES.values()) == set(C.RATE_RANGES)
    rng = {n: (s["learning_rate"].low, s["learning_rate"].high) for n, s in space.items()}
    assert {rng[n] for n in ("sgd", "ccsgd", "lbsgd", "test", "nag", "optax.sgd")} == {(1e-3, 10.0)}
    assert {rng[n] for n in ("adam", "optax.adam", "adamw", "optax.adamw", "lamb", "optax.lamb")} == {
        (1e-5, 0.1)
    }
    for lo, hi in C.RATE_RANGES.values():
        assert math.isclose(math.log10(hi / lo), 4.0)  # every kind: 4 decades, the same trials per decade
    ranges: dict[str, set] = {}
    for s in space.values():
        for name, h in s.items():
            if name != "learning_rate":
                ranges.setdefault(kind(name), set()).add((h.low, h.high, h.scale))
    assert all(len(r) == 1 for r in ranges.values()), ranges
    assert kind("b1") == "beta1" and kind("weight_decay") == "wd" and kind("momentum") == "momentum"
    # a user's contender: its default x 10^-2 .. 10^2 (the docstring says so)
    mine = C.contender("mine", lambda lr: optax.sgd(lr), 0.5).hyperparameters[0]
    assert (mine.low, mine.high) == pytest.approx((5e-3, 50.0))
    assert "10**-2 .. 10**2" in C.contender.__doc__ and "10**-3" not in C.contender.__doc__
    assert C.rate(0.01, update="gradient").high == 10.0
    with pytest.raises(ValueError, match="update must be one of"):
        C.rate(0.01, update="sgd")


def test_grid_mode_is_unchanged_by_the_declared_spaces():
    """The grid tunes the learning rate alone; the rest is passed at MXNet's defaults, as numbers."""
    adam = C.mxopt_contender("adam")
    assert search.tuned([adam], "grid") == {"adam": ("learning_rate",)}
    cfg = search.configurations(adam, PRESETS["quick"])
    assert list(cfg) == ["learning_rate"] and len(cfg["learning_rate"]) == 7
    assert adam.settings["beta1"] == 0.9  # the protocol still prints every untuned setting


# --------------------------------------------------------------------------- draws
def test_draws_are_reproducible_and_start_at_the_defaults():
    adam = C.mxopt_contender("adam")
    a = search.configurations(adam, PRESETS["quick"], "random", 50, seed=3)
    b = search.configurations(adam, PRESETS["full"], "random", 50, seed=3)  # preset does not matter
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert {k: float(v[0]) for k, v in a.items()} == adam.defaults  # trial 0: the defaults
    other = search.configurations(adam, PRESETS["quick"], "random", 50, seed=4)
    assert all(not np.array_equal(a[k][1:], other[k][1:]) for k in a)  # a search seed moves every stream
    assert np.array_equal(search.generator(3, "beta1").random(4), search.generator(3, "beta1").random(4))
    for h in adam.hyperparameters:
        drawn = a[h.name][1:]
        assert np.all((drawn >= h.low) & (drawn <= h.high)), h.name
    # 8 trials are the start of 20 under the same seed
    short = search.configurations(adam, PRESETS["quick"], "random", 8, seed=3)
    assert all(np.array_equal(short[k], a[k][:8]) for k in a)


def test_common_random_numbers_do_not_depend_on_the_name_or_the_others():
    """The draws of a kind of hyperparameter are one column, from the search seed alone: a contender's trials do
    not depend on its name, on the other contenders, nor on the hyperparameters it does not have."""
    adam = C.mxopt_contender("adam")
    twin = dataclasses.replace(adam, name="my adam")
    a = search.configurations(adam, PRESETS["quick"], "random", 20, seed=5)
    assert all(
        np.array_equal(a[k], v)
        for k, v in search.configurations(twin, PRESETS["quick"], "random", 20, seed=5).items()
    )
    # one hyperparameter fewer (beta2 fixed): the other columns do not move
    fewer = dataclasses.replace(
        adam, hyperparameters=tuple(h for h in adam.hyperparameters if h.name != "beta2")
    )
    f = search.configurations(fewer, PRESETS["quick"], "random", 20, seed=5)
    assert set(f) == set(a) - {"beta2"} and all(np.array_equal(f[k], a[k]) for k in f)
    # optax's names take the kind's column: optax.adam's b1 draws are mxopt adam's beta1 draws
    ox = search.configurations(C.OPTAX_BASELINES["optax.adam"], PRESETS["quick"], "random", 20, seed=5)
    for mine, theirs in (("beta1", "b1"), ("beta2", "b2"), ("epsilon", "eps")):
        assert np.array_equal(a[mine][1:], ox[theirs][1:])
    # identical updates under two names: ccSGD and SGD run the same drawn trials (their defaults differ:
    # trial 0 is each one's own, MXNet's 0.01 against 0.1)
    sgd = search.configurations(C.mxopt_contender("sgd"), PRESETS["quick"], "random", 20, seed=5)
    cc = search.configurations(C.mxopt_contender("ccsgd"), PRESETS["quick"], "random", 20, seed=5)
    assert (
        all(np.array_equal(sgd[k][1:], cc[k][1:]) for k in sgd)
        and sgd["learning_rate"][0] != cc["learning_rate"][0]
    )
    # other ranges: the same quantile of each one's range (matched draws)
    ua = C.mxopt_contender("adam").hyperparameters[0].to_unit(a["learning_rate"][1:])
    us = C.mxopt_contender("sgd").hyperparameters[0].to_unit(sgd["learning_rate"][1:])
    np.testing.assert_allclose(ua, us, atol=1e-9)


def test_scales_are_log_uniform_where_stated():
    beta2 = Hyperparameter("beta2", 0.999, 0.9, 0.9999, "log1m")
    eps = Hyperparameter("epsilon", 1e-8, 1e-10, 1e-3, "log")
    cols = search.draw([beta2, eps], 4001, seed=0, include_default=False)
    u_b = np.log10(1 - cols["beta2"])  # uniform on [-4, -1]
    u_e = np.log10(cols["epsilon"])  # uniform on [-10, -3]
    assert abs(np.median(u_b) + 2.5) < 0.1 and abs(np.median(u_e) + 6.5) < 0.2
    for h in (beta2, eps, Hyperparameter("x", 0.5, 0.0, 2.0, "linear")):
        u = np.linspace(0, 1, 7)
        np.testing.assert_allclose(h.to_unit(h.from_unit(u)), u, atol=1e-9)
    assert np.isnan(eps.to_unit(0.0))  # a weight decay of 0 has no place on a log scale


# --------------------------------------------------------------------------- the edge flag
def test_edges_flag_the_extremes_of_the_trials_per_hyperparameter():
    hps = C.mxopt_contender("sgd").hyperparameters
    trials = {
        "learning_rate": np.array([0.1, 0.02, 3.0, 0.005]),
        "momentum": np.array([0.0, 0.5, 0.95, 0.3]),
        "wd": np.array([0.0, 1e-5, 3e-3, 1e-4]),
    }
    assert search.edges(trials, 2, hps) == {"learning_rate": "high", "momentum": "high", "wd": "high"}
    assert search.edges(trials, 3, hps) == {"learning_rate": "low"}  # momentum 0.3 and wd 1e-4 are inside
    assert search.edges(trials, 1, hps) == {}
    # the default trial: momentum 0 (its range's end) and wd 0 (no place on a log scale) are not flagged
    assert search.edges(trials, 0, hps) == {}
    assert search.edges({"learning_rate": np.array([0.1, 0.1])}, 0) == {}  # one value says nothing
    assert search.edges({"x": np.array([1.0, 2.0])}, 5) == {}


def _old_edge_flag(h: Hyperparameter, value: float) -> str | None:
    """The flag before: a chosen rate within 5 % of its range's end (on its scale), the rate only."""
    u = float(h.to_unit(value))
    return "low" if u <= 0.05 else "high" if u >= 0.95 else None


def _flag_rates(
    best_u: float, trials: int, runs: int = 400, noise: float = 0.01, bowl: float = 0.05
) -> dict[str, float]:
    """How often each flag fires, by simulation: Adam's space, trial 0 its defaults, the others drawn by the
    search itself (seeds 0 .. runs - 1); the validation score of a trial is ``(u - best_u)**2`` in the rate's
    place ``u`` on its range, plus a smaller bowl in the other hyperparameters and noise (the seed spread)."""
    hps = C.mxopt_contender("adam").hyperparameters
    lr = hps[0]
    rng = np.random.default_rng(0)
    old = new = new_any = 0
    for seed in range(runs):
        cols = search.draw(hps, trials, seed)
        u = {h.name: np.nan_to_num(h.to_unit(cols[h.name]), nan=0.0) for h in hps}
        score = (u["learning_rate"] - best_u) ** 2 + bowl * sum((u[h.name] - 0.5) ** 2 for h in hps[1:])
        score += rng.normal(0, noise, trials)
        chosen = int(np.argmin(score))
        high = 1 if best_u > 1 else 0
        side = "high" if high else "low"
        old += _old_edge_flag(lr, cols["learning_rate"][chosen]) == side
        flags = search.edges(cols, chosen, hps)
        new += flags.get("learning_rate") == side
        new_any += bool(flags)
    return {"old": old / runs, "new": new / runs, "any": new_any / runs}


def test_edge_flag_fires_when_the_best_rate_lies_outside_the_range():
    """A best rate beyond the range's high end (u = 1.3 on its scale; 2,000 simulated searches): the old flag
    (within 5 % of the end) fired 20 % of the time at 5 trials (it missed 80 %; 1 - 0.95**4 without noise) and
    60 % at 20; the flag on the highest rate tried fires 97 % and 84 % (with many trials near the end, the
    noise and the other hyperparameters can pick one below the highest; where the rate alone matters and
    nothing is noisy: always). With the best rate inside the range
    (u = 0.5) the rate is flagged 6 % of the time at 5 trials, 0 % at 20; some hyperparameter is flagged
    64 % and 12 % of the time (the others barely matter here, so the chosen trial is often an extreme of one
    of them by chance: the flag says a direction went unexplored)."""
    outside5, outside20 = _flag_rates(1.3, 5), _flag_rates(1.3, 20)
    assert outside5["old"] < 0.3 and outside20["old"] < 0.7
    assert outside5["new"] > 0.9 and outside20["new"] > 0.75
    assert _flag_rates(1.3, 20, runs=100, noise=0.0, bowl=0.0)["new"] == 1.0
    inside5, inside20 = _flag_rates(0.5, 5), _flag_rates(0.5, 20)
    assert inside5["new"] < 0.15 and inside20["new"] < 0.05 and inside5["old"] == inside20["old"] == 0.0
    assert inside20["any"] < inside5["any"]


def test_sparse_problems_keep_adagrads_weight_decay_at_its_default():
    """AdaGrad's row-sparse kernel refuses a traced wd: on problems with tables the search leaves it at 0."""
    ada = C.mxopt_contender("adagrad")
    assert search.tuned([ada], "random", sparse=True) == {"adagrad": ("learning_rate", "epsilon")}
    dense = search.configurations(ada, PRESETS["quick"], "random", 5)
    sparse = search.configurations(ada, PRESETS["quick"], "random", 5, sparse=True)
    assert set(dense) == {"learning_rate", "epsilon", "wd"} and set(sparse) == {"learning_rate", "epsilon"}
    assert np.array_equal(dense["epsilon"], sparse["epsilon"])  # the other draws do not move
    with pytest.raises(ValueError, match="sparse_fixed"):
        C.Contender("x", ada.make, ada.hyperparameters, "f", sparse_fixed=("momentum",))


# --------------------------------------------------------------------------- every hyperparameter traced
def _trace(c: C.Contender, sparse: bool) -> None:
    params = {"emb": jnp.ones((10, 3)), "w": jnp.ones(3)}
    ids = jnp.array([[1, 2], [3, 1]])

    def loss(p, b):
        return jnp.mean((mxopt_jax.sparse.lookup(p["emb"], b).sum(axis=1) @ p["w"] - 1.0) ** 2)

    grad = (
        mxopt_jax.sparse.value_and_grad(loss, tables=("emb",))
        if sparse and c.row_sparse
        else jax.value_and_grad(loss)
    )
    cols = search.configurations(c, PRESETS["quick"], "random", 3, sparse=sparse)

    def one(row, key):
        hp = {**c.defaults, **row, "learning_rate": search_schedule(row["learning_rate"], 50)}
        tx = c.factory(sparse)(hp, key, 50)
        state = tx.init(params)
        _, g = grad(params, ids)
        updates, state = tx.update(g, state, params)
        return optax.apply_updates(params, updates)

    rows = {k: jnp.asarray(v, jnp.float32) for k, v in cols.items()}
    jax.eval_shape(jax.vmap(one), rows, jax.random.split(jax.random.PRNGKey(0), 3))


def search_schedule(peak, steps):
    from mxopt_jax.compare.schedules import warmup_cosine

    return warmup_cosine(peak, steps)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "row-sparse"])
def test_every_contender_takes_its_whole_search_space_traced(sparse):
    """vmap over draws of every hyperparameter (under a warm-up schedule) traces for all 26 contenders, with
    dense and with row-sparse gradients: no hyperparameter changes the state's structure or needs a Python
    value (momentum 0 vs > 0 included: a traced momentum keeps the buffer)."""
    for c in C.default_contenders():
        _trace(c, sparse)


def test_trials_are_inputs_of_one_compiled_program():
    """Two different draws run through the same compiled program: nothing is traced or compiled again (JAX's
    own counts, through jax.monitoring; the first call's host-side key helpers aside), and the values reach the
    optimizer (the runs made alone are equal to the vmapped ones: ``test_study.py``)."""
    prob = _mlp_problem(steps=10)
    adam = C.mxopt_contender("adam")
    names = search.tuned([adam], "random")
    group = engine.compile_group(prob, [adam], 4, tuned=names)
    compiled = group.compiled
    a = search.configurations(adam, PRESETS["quick"], "random", 2, seed=0)
    b = search.configurations(adam, PRESETS["quick"], "random", 2, seed=1)
    ra = group.run(0, a, [0, 1])
    with counting() as n:
        rb = group.run(0, b, [0, 1])
        group.run(0, b, [5, 6, 7])  # other seeds, and more runs than one call holds
    assert n.traces == 0 and n.compiles == 0, n
    assert group.compiled is compiled
    assert not np.array_equal(ra.val[1], rb.val[1])
    assert set(rb.hparams) == {"beta1", "beta2", "epsilon", "wd"}
    np.testing.assert_array_equal(ra.val[0], rb.val[0])  # trial 0, the defaults, in both draws
    assert ra.config(0) == rb.config(0) == adam.defaults


# --------------------------------------------------------------------------- the study
def _random_contenders() -> list:
    adam_b1 = C.contender(
        "adam b1",
        lambda lr, b1: optax.adam(lr, b1=b1),
        1e-2,
        family="Adam family",  # one compiled program with mxopt's Adam
        hyperparameters=[Hyperparameter("b1", 0.9, 0.5, 0.99, "log1m")],
    )
    twin = dataclasses.replace(C.mxopt_contender("adam"), name="adam twin")  # the same update, another name
    return ["adam", adam_b1, twin]


_RANDOM_PRESET = dataclasses.replace(PRESETS["quick"], seeds=2, confirm_seeds=2)


@pytest.fixture(scope="module")
def random_out(tmp_path_factory):
    """The folder the random study is kept in."""
    return tmp_path_factory.mktemp("random_study")


@pytest.fixture(scope="module")
def random_study(random_out):
    return study(
        _mlp_problem(),
        _random_contenders(),
        _RANDOM_PRESET,
        search="random",
        trials=3,
        check_batching="none",
        out=random_out,
        plots=False,
    )


def test_random_study_reports_every_chosen_hyperparameter(random_study, tmp_path):
    r = random_study
    assert (r.search, r.trials, r.schedule) == ("random", 3, "constant")
    sel = r.tuned["tiny"]["adam"]
    assert set(sel.config) == {"learning_rate", "beta1", "beta2", "epsilon", "wd"} and len(sel.lrs) == 3
    roles = r.records["tiny"]["adam"]
    assert set(roles) == {
        "selection",
        "report",
    }  # the default configuration is the first trial: not run twice
    adam = C.mxopt_contender("adam")
    conf = result.shown(roles, "tuned", adam, sel)
    assert conf.config(0) == sel.config  # the report runs of the chosen configuration, every value of it
    default = result.shown(roles, "one-shot", adam, sel)
    assert default.config(0) == adam.defaults and roles["report"].config(0) == adam.defaults
    assert set(r.tuned["tiny"]["adam b1"].config) == {"learning_rate", "b1"}
    assert len(r.programs) == 1
    text = r.report()
    assert "random search, equal budgets" in text and "Search spaces" in text
    assert "chosen configurations (besides lr):" in text and "beta1=" in text and "b1=" in text
    r.write(tmp_path, plots=False)
    with (tmp_path / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    row = next(x for x in rows if x["contender"] == "adam" and x["mode"] == "tuned")
    assert float(row["beta2"]) == pytest.approx(sel.config["beta2"]) and row["b1"] == ""
    with (tmp_path / "runs.csv").open() as f:
        head = next(csv.reader(f))
    assert {"beta1", "beta2", "epsilon", "wd", "b1"} <= set(head)


def test_identical_contenders_under_two_names_are_one_entry(random_study):
    """Adam under two names draws the same trials (common random numbers), so every record agrees and the
    tables fold them (before, each name drew its own trials: the twins ranked apart)."""
    r = random_study
    a, b = r.records["tiny"]["adam"], r.records["tiny"]["adam twin"]
    for role in ("selection", "report"):
        np.testing.assert_array_equal(a[role].lrs, b[role].lrs)
        assert all(np.array_equal(a[role].hparams[k], b[role].hparams[k]) for k in a[role].hparams)
        np.testing.assert_array_equal(a[role].val, b[role].val)
        np.testing.assert_array_equal(a[role].test, b[role].test)
    assert r.identical["tiny"]["tuned"] == [["adam", "adam twin"]]  # 2 drawn trials shared: every one
    assert r.identical["tiny"]["one-shot"] == [["adam", "adam twin"]]
    assert "adam twin" not in r.reported("tiny")
    assert "adam (= adam twin)" in r.report()


def test_a_study_drawn_another_way_is_refused_on_resume(random_study, random_out, tmp_path):
    """The search seed's meaning is saved (``draws`` in spec.json): a random study saved before common random
    numbers (no such key) is refused on resume, saying what differs; the same draws resume."""
    import json
    import shutil

    from mxopt_jax.compare.store import ResumeError

    folder = tmp_path / "copy"
    shutil.copytree(random_out, folder)
    kwargs = {"search": "random", "trials": 3, "check_batching": "none", "plots": False}
    again = study(_mlp_problem(), _random_contenders(), _RANDOM_PRESET, resume=folder, **kwargs)
    assert again.tuned["tiny"]["adam"].config == random_study.tuned["tiny"]["adam"].config
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["draws"] == search.DRAWS
    del spec["draws"]  # as a study saved before
    (folder / "spec.json").write_text(json.dumps(spec))
    with pytest.raises(ResumeError, match=r"draws: stored \(absent\), now common random numbers"):
        study(_mlp_problem(), _random_contenders(), _RANDOM_PRESET, resume=folder, **kwargs)


def test_sensitivity_plot_draws_trials_as_points(random_study):
    """A random search's trials are not a curve (other hyperparameters vary between them): no line, no band."""
    pytest.importorskip("matplotlib")
    from matplotlib.collections import PolyCollection

    from mxopt_jax.compare.report import plots

    r = random_study
    fig = plots.plot_sensitivity(r.problems, r.all_records("selection"), r.selections(), r.families)
    lines = [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_label() in ("adam", "adam b1")]
    assert len(lines) == 2 and all(ln.get_linestyle() == "None" for ln in lines)
    assert not [c for ax in fig.axes for c in ax.collections if isinstance(c, PolyCollection)]


def test_bad_search_arguments_are_refused_before_compiling():
    prob = _mlp_problem()
    for kwargs, match in (
        ({"search": "bayes"}, "search must be one of"),
        ({"search": "random", "trials": 0}, "trials must be an int >= 1"),
        ({"trials": 5}, "only a random search"),
        ({"search": "random", "search_seed": -1}, "search seed"),
        ({"schedule": "step"}, "schedule must be one of"),
    ):
        with pytest.raises(ValueError, match=match):
            study(prob, ["adam"], **kwargs)
    with pytest.raises(TypeError, match="schedule must be a name"):
        study(prob, ["adam"], schedule=3)


def test_cli_takes_the_search_flags(capsys):
    args = build_parser().parse_args(
        [
            "compare",
            "--search",
            "random",
            "--trials",
            "4",
            "--schedule",
            "warmup-cosine",
            "--search-seed",
            "2",
        ]
    )
    assert (args.search, args.trials, args.schedule, args.search_seed) == ("random", 4, "warmup-cosine", 2)
    assert main(["compare", "--trials", "4"]) == 2
    assert "trials: only a random search takes a number of trials" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "--schedule", "step"])


# --------------------------------------------------------------------------- targets per preset
def test_every_workload_has_a_target_per_preset():
    for name, make in PROBLEMS.items():
        p = make()
        assert set(p.targets) == {"quick", "full"}, name
        assert p.target == p.targets["full"]
        for preset, target in p.targets.items():
            assert f"{target:g}" in p.description, (name, preset)
            assert _preset_target(p, PRESETS[preset]).target == target
        assert _preset_target(p, dataclasses.replace(PRESETS["quick"], name="mine")).target == p.target


# --------------------------------------------------------------------------- two studies compared
def test_kendall_tau_b():
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # one discordant pair of 6: (5 - 1) / 6
    assert kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]) == pytest.approx(4 / 6)
    # ties (two diverged results) on one side: tau-b = (C - D) / sqrt(n1 * n2) = 5 / sqrt(5 * 6)
    assert kendall_tau([1, 2, math.inf, math.inf], [1, 2, 3, 4]) == pytest.approx(5 / math.sqrt(30))
    assert math.isnan(kendall_tau([1], [1])) and math.isnan(kendall_tau([1, 1], [1, 2]))
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau([1, math.nan], [1, 2])


def _tau_b_by_definition(x, y):
    """Kendall's tau-b counted pair by pair: (C - D) / sqrt((C + D + T_x) (C + D + T_y)), where T_x counts the
    pairs tied in x only (the tau-b the report computed by hand before it used SciPy)."""
    num = nx = ny = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx = (x[i] > x[j]) - (x[i] < x[j])
        sy = (y[i] > y[j]) - (y[i] < y[j])
        num, nx, ny = num + sx * sy, nx + (sx != 0), ny + (sy != 0)
    return num / math.sqrt(nx * ny) if nx and ny else math.nan


@settings(derandomize=True, max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(*[st.sampled_from([0.0, 1.0, 2.0, 2.5, math.inf])] * 2),
        min_size=0,
        max_size=9,
    )
)
def test_kendall_tau_b_is_the_definition_with_ties_and_diverged(pairs):
    """SciPy's tau-b (``kendall_tau``) equals the pair-by-pair definition on samples full of ties, diverged
    results (``inf`` equals ``inf``) included, and is NaN exactly where the definition is undefined."""
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    got, want = kendall_tau(x, y), _tau_b_by_definition(x, y)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_agreement_kendall_and_top3_with_contenders_in_one_only():
    """The analysis of ``mxopt-jax agree`` (:mod:`mxopt_jax.compare.analysis.agreement`) on tuned means: tau-b,
    its p-value, the top-3 overlap, contenders and problems in one study only (the command itself, on saved
    folders: tests/app/test_shared_folders.py)."""
    from mxopt_jax.compare.analysis.agreement import agree, mean_tau, smallest_p

    a = {
        "w1": {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "x": 0.5},
        "w2": {"a": 1.0, "b": 2.0},
        "wa": {"a": 1.0},
    }
    b = {"w1": {"a": 1.0, "b": 3.0, "c": 2.0, "d": math.inf, "y": 0.1}, "w2": {"a": 2.0, "b": 1.0}}
    w1, w2 = agree(a, b)
    assert w1.common == ["a", "b", "c", "d"] and w1.only_a == ["x"] and w1.only_b == ["y"]
    assert w1.tau == pytest.approx(4 / 6) and w1.top_a == ["a", "b", "c"] and w1.top_b == ["a", "c", "b"]
    assert w1.overlap == 3 and w2.tau == -1.0
    assert mean_tau([w1, w2]) == pytest.approx((4 / 6 - 1) / 2)
    # what tau can show: 4 contenders have 24 orders, and even the same order has p = 2/24
    assert w1.orders == 24 and w1.smallest_p == pytest.approx(2 / 24) and w1.p == pytest.approx(1 / 3)
    assert smallest_p(5) == pytest.approx(2 / 120) and math.isnan(smallest_p(1))
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        agree(a, b, k=0)


def test_the_tables_mark_each_flagged_hyperparameter(random_study):
    """The study flags every chosen value that is an extreme of the trials (``Selection.edges``; the rate's
    flag is ``on_edge``, the rate column's mark), and the chosen configurations show which."""
    from mxopt_jax.compare.report import tables

    r = random_study
    for name, sel in r.tuned["tiny"].items():
        rec = r.records["tiny"][name]["selection"]
        hps = next(c for c in r.contenders if c.name == name).hyperparameters
        assert sel.edges == search.edges({"learning_rate": rec.lrs, **rec.hparams}, sel.index, hps)
        assert sel.on_edge == sel.edges.get("learning_rate")
    sel = dataclasses.replace(r.tuned["tiny"]["adam"], edges={"beta1": "low", "wd": "high"}, on_edge=None)
    line = tables.format_configs([sel])[1]
    assert f"beta1={sel.config['beta1']:.4g}<" in line and f"wd={sel.config['wd']:.4g}>" in line
    assert f"beta2={sel.config['beta2']:.4g} " in line  # not flagged: no mark
    # the marks are explained once, in "How to read these tables" (the edges' part is there when a table has one)
    guide = " ".join(tables.how_to_read(analyse([sel])).split())
    assert "lowest / highest of that hyperparameter among the trials" in guide
