"""The protocol as one value (:class:`mxopt_jax.compare.plan.Plan`): it checks itself once, round-trips to
JSON, gives each independent study its own seeds and draws, and a resumed study is "the stored plan, with what
the user changed", refused with the differences named. No compile: seconds."""

from __future__ import annotations

import dataclasses
import json

import pytest

from mxopt_jax.compare import PRESETS
from mxopt_jax.compare import plan as plan_module
from mxopt_jax.compare.plan import SETTINGS, Plan, PlanError


def test_made_from_counts_and_names_with_the_presets_defaults():
    p = Plan.make()
    assert p.preset == PRESETS["quick"] and p.seeds == (0, 1, 2, 3, 4)
    assert p.confirm_seeds == tuple(range(1000, 1016)) and p.trials is None and p.schedule == "constant"
    assert (p.studies, p.extend, p.check_batching, p.group_by) == (1, 2, "best", "problem")
    full = Plan.make("full", seeds=3, confirm_seeds=[7, 9], search="random", schedule="cosine")
    assert full.seeds == (0, 1, 2) and full.confirm_seeds == (7, 9) and full.trials == 20
    assert full.schedule_hook is not None and full.runnable
    assert Plan() == p  # the constructor resolves the same defaults


def test_every_setting_is_named_and_round_trips_to_json():
    p = Plan.make(
        "full", seeds=[3, 5], search="random", trials=7, search_seed=4, schedule="warmup-cosine", studies=2
    )
    doc = json.loads(json.dumps(p.to_dict()))
    assert set(doc) == set(SETTINGS)
    back = Plan.from_dict(doc)
    assert back == p and back.runnable  # a built-in schedule brings its hook back
    assert set(p.settings()) == set(SETTINGS)
    with pytest.raises(ValueError, match="unknown setting.*sead"):
        Plan.from_dict({**doc, "sead": 1})


@pytest.mark.parametrize(
    ("settings", "error", "words"),
    [
        ({"seeds": 1}, ValueError, "need at least 2 seeds"),
        ({"seeds": [0, 0]}, ValueError, r"`seeds` repeat \[0\]"),
        ({"seeds": "01"}, TypeError, "`seeds` must be a count or a list of ints"),
        ({"confirm_seeds": [1, 2], "seeds": [0, 1]}, ValueError, r"fresh; \[1\] are also selection seeds"),
        ({"search": "bayes"}, ValueError, "search must be one of"),
        ({"trials": 5}, ValueError, "only a random search"),
        ({"search": "random", "trials": 0}, ValueError, "trials must be an int >= 1"),
        ({"search_seed": -1}, ValueError, "search seed must be an int >= 0"),
        ({"schedule": "step"}, ValueError, "schedule must be one of"),
        ({"studies": 0}, ValueError, "studies must be an integer between 1 and 20"),
        ({"studies": 2, "seeds": [0, 100]}, ValueError, "seed 100, a selection seed of study 1, is also"),
        ({"extend": -1}, ValueError, "extend must be an integer >= 0"),
        ({"check_batching": "some"}, ValueError, "check_batching must be 'best', 'all' or 'none'"),
        ({"group_by": "x"}, ValueError, "group_by must be 'problem', 'family' or 'none'"),
        ({"preset": "huge"}, ValueError, "preset must be one of"),
    ],
)
def test_a_setting_out_of_range_is_refused_naming_it(settings, error, words):
    with pytest.raises(error, match=words):
        Plan.make(**settings)


def test_unknown_settings_are_named():
    with pytest.raises(TypeError, match="unknown setting.*seed_count.*a plan's settings: preset, seeds"):
        Plan.make().replace(seed_count=3)


def test_independent_studies_get_their_own_seeds_and_draws():
    p = Plan.make(studies=3)
    s1, s2 = p.for_study(1), p.for_study(2)
    assert s1.seeds == (100, 101, 102, 103, 104) and s1.confirm_seeds == tuple(range(2000, 2016))
    assert s2.seeds[0] == 200 and s2.confirm_seeds[0] == 3000 and (s1.search_seed, s2.search_seed) == (1, 2)
    assert p.for_study(0).seeds == p.seeds and s1.studies == 1
    seen = [s for k in range(3) for s in (*p.seeds_of(k), *p.confirm_seeds_of(k))]
    assert len(seen) == len(set(seen))  # every seed of every study is distinct
    with pytest.raises(ValueError, match=r"study must be an int in \[0, 3\)"):
        p.for_study(3)


def test_replace_changes_settings_and_a_new_preset_brings_its_seeds():
    p = Plan.make()
    full = p.replace(preset="full")
    assert full.seeds == tuple(range(10)) and len(full.confirm_seeds) == 20
    mine = Plan.make(seeds=[3, 4]).replace(preset="full")
    assert mine.seeds == (3, 4)  # seeds given explicitly stay
    assert (
        p.replace(search="random").trials == 20
        and p.replace(search="random").replace(search="grid").trials is None
    )


def test_resuming_takes_the_stored_plan_and_refuses_a_changed_setting():
    stored = Plan.make(seeds=3, extend=1)
    assert stored.resumed() is stored and stored.resumed(seeds=3, extend=None, preset="quick") is stored
    with pytest.raises(PlanError) as e:
        stored.resumed(seeds=4, check_batching="all", preset="full")
    text = str(e.value)
    assert "seeds: stored (0, 1, 2), given (0, 1, 2, 3)" in text
    assert "check_batching: stored 'best', given 'all'" in text and "preset: stored" in text
    assert "extend" not in text  # what was not given is taken from the stored plan


def test_a_schedule_of_your_own_runs_when_given_again():
    def ramp(peak, steps):
        return peak

    p = Plan.make(schedule=ramp)
    assert p.schedule == "ramp" and p.runnable
    back = Plan.from_dict(p.to_dict())  # saved by name only
    assert back.schedule == "ramp" and not back.runnable and back == p
    assert back.resumed(schedule=ramp).runnable
    with pytest.raises(PlanError, match="schedule: stored 'ramp', given 'cosine'"):
        back.resumed(schedule="cosine")


def test_a_new_setting_is_one_field_of_the_plan():
    """What "one place" means: every setting is a field of Plan, listed in SETTINGS with its words, and the
    study, the store, study.json and the command line read the plan (not the settings one by one)."""
    fields = [f.name for f in dataclasses.fields(Plan) if f.name != "schedule_hook"]
    assert fields == list(SETTINGS)
    import inspect

    from mxopt_jax.compare import study

    params = inspect.signature(study).parameters
    assert not set(params) & set(SETTINGS) - {"plan"}  # settings come as **settings, checked by the plan
    assert plan_module.__doc__ and "one value" in plan_module.__doc__


def test_every_setting_has_its_own_check_and_a_flag():
    """check_setting checks each setting alone as the plan does (the command line's flags call it)."""
    from mxopt_jax.compare import cli
    from mxopt_jax.compare.plan import _CHECKS, SETTINGS, check_setting

    assert list(_CHECKS) == list(SETTINGS)
    assert check_setting("seeds", 3) == (0, 1, 2) and check_setting("confirm_seeds", 2) == (1000, 1001)
    assert check_setting("preset", "full") == PRESETS["full"] and check_setting("trials", 4) == 4
    with pytest.raises(TypeError, match="unknown setting"):
        check_setting("seed", 3)
    assert set(SETTINGS) <= set(vars(cli.build_parser().parse_args(["compare"])))
