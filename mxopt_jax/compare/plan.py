"""The study's protocol as one value: :class:`Plan`.

A plan holds every setting of a study — the preset, the selection and confirmation seeds, the search (grid or
random, its trials and seed), the learning-rate schedule, how many independent studies, how far a grid may be
extended, the batching check and how contenders are grouped into compiled programs. It checks itself once,
when made; it is what :func:`~mxopt_jax.compare.study`, the saved folder (:mod:`~mxopt_jax.compare.store`),
``study.json``, the printed protocol and ``--resume`` all read. A new setting is a field here (with its check
and its words in :data:`SETTINGS`) plus the code that uses it.

Resuming a saved study is "the stored plan, with what the user changed": :meth:`Plan.resumed` refuses any
change, naming each setting that differs (problems and contenders may be added; they are not settings).

Independent studies (``studies=N``, AlgoPerf's repetition of the whole tuning): study ``k`` runs the same
protocol on its own selection seeds (each seed ``+ 100 k``), its own confirmation seeds (``+ 1000 k``) and its
own search draws (search seed ``+ k``): :meth:`Plan.for_study`. With the defaults, study 1 selects on seeds
100-104 and reports seeds 2000-2009. Every seed of every study must be distinct.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import schedules as _schedules
from . import search as _search
from .presets import CONFIRM_OFFSET, PRESETS, Preset
from .validation import extend_count

__all__ = [
    "CHECK_BATCHING",
    "GROUP_BY",
    "SETTINGS",
    "STUDY_CONFIRM_STRIDE",
    "STUDY_SEED_STRIDE",
    "CHOICES",
    "Plan",
    "PlanError",
    "check_setting",
    "check_settings",
]

#: What ``check_batching`` may be: re-run the chosen configuration in every slot of its program for ``"all"``
#: contenders, the ``"best"`` of each program, or ``"none"``.
CHECK_BATCHING = ("best", "all", "none")
#: How contenders are grouped into compiled programs: one program per ``"problem"`` (every contender under one
#: ``lax.switch``: the fewest programs, so the least compile time), per ``"family"``, or one per contender.
GROUP_BY = ("problem", "family", "none")
#: Study ``k``'s selection seeds are study 0's plus ``k * STUDY_SEED_STRIDE``; its confirmation seeds plus
#: ``k * STUDY_CONFIRM_STRIDE``; its search seed plus ``k``.
STUDY_SEED_STRIDE = 100
STUDY_CONFIRM_STRIDE = 1000
#: The most independent studies a plan runs.
MAX_STUDIES = 20

#: Every setting of a plan, in order, with one line on what it is (the printed protocol, ``--help`` and the
#: docs use these words).
SETTINGS: dict[str, str] = {
    "preset": "quick or full: grid size, seeds and step budgets (presets.PRESETS)",
    "seeds": "the selection seeds (the runs that choose)",
    "confirm_seeds": "the fresh seeds the chosen and the default configurations are re-run on (reported)",
    "search": "grid (the learning rate on the preset's grid) or random (every hyperparameter)",
    "trials": "configurations per contender of a random search",
    "search_seed": "the seed of the random search's draws (common random numbers: a contender's trials depend on "
    "the seed and its search space only, not on its name or the other contenders)",
    "schedule": "the learning-rate schedule of every run, its peak the tuned rate",
    "studies": "independent repetitions of the whole tuning, each on its own seeds and draws",
    "extend": "times a grid may be extended past the edge where its chosen rate sits",
    "check_batching": "re-run the chosen configuration in every slot of its program: best, all or none",
    "group_by": "one compiled program per problem (every contender in it), per family of contenders, or per "
    "contender (none)",
}


#: The settings given by name, and the names each may take (the others are integers: counts, seeds, sizes).
CHOICES: dict[str, tuple[str, ...]] = {
    "preset": tuple(PRESETS),
    "search": tuple(_search.SEARCHES),
    "schedule": tuple(_schedules.SCHEDULES),
    "check_batching": CHECK_BATCHING,
    "group_by": GROUP_BY,
}


class PlanError(ValueError):
    """A plan that cannot be made (a setting out of range) or resumed (a setting differs from the stored one)."""


def _seeds(value: int | Sequence[int], what: str, offset: int) -> tuple[int, ...]:
    """A count (``offset, offset + 1, ...``) or a list of seeds, checked: integers in ``[0, 2**31)``, at least
    2 (an interval needs them), none repeated."""
    if isinstance(value, bool):
        raise TypeError(f"`{what}` must be a count or a list of ints, got {value!r}")
    if isinstance(value, numbers.Integral):
        out = list(range(offset, offset + int(value)))
    else:
        if isinstance(value, str | bytes) or not isinstance(value, Sequence):
            raise TypeError(f"`{what}` must be a count or a list of ints, got {value!r}")
        out = []
        for s in value:
            if isinstance(s, bool) or not isinstance(s, numbers.Real) or int(s) != s:
                raise TypeError(f"`{what}` must be a count or a list of ints, got {list(value)!r}")
            out.append(int(s))
    if len(out) < 2:
        given = int(value) if isinstance(value, numbers.Integral) else list(value)
        raise ValueError(
            f"need at least 2 {what} for confidence intervals, got {given!r}: give a count >= 2 (the seeds "
            f"{offset}, {offset + 1}, ...) or a list of at least 2 distinct ints in [0, 2**31)"
        )
    dup = sorted({s for s in out if out.count(s) > 1})
    if dup:
        raise ValueError(f"`{what}` repeat {dup}: a repeated seed repeats a run and shrinks the interval")
    if any(s < 0 or s >= 2**31 for s in out):
        raise ValueError(f"`{what}` must be in [0, 2**31), got {out}")
    return tuple(out)


def _choice(value: Any, what: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(
            f"{what} must be {', '.join(map(repr, allowed[:-1]))} or {allowed[-1]!r}, got {value!r}"
        )
    return str(value)


def _preset(value: Preset | str) -> Preset:
    if isinstance(value, Preset):
        return value
    if isinstance(value, str) and value in PRESETS:
        return PRESETS[value]
    raise (ValueError if isinstance(value, str) else TypeError)(
        f"preset must be one of {sorted(PRESETS)} or a Preset, got {value!r}"
    )


@dataclasses.dataclass(frozen=True)
class Plan:
    """Every setting of a study (see the module docstring), checked when made.

    Make one with :meth:`make` (counts and names resolved: ``Plan.make(preset="full", seeds=3)``) or directly
    with resolved values; :meth:`replace` changes settings and checks again. Plans are equal when their
    settings are (a schedule hook of your own is compared by its name).

    Attributes:
      preset: the :class:`~mxopt_jax.compare.presets.Preset` (grid, seeds and step budgets).
      seeds: the selection seeds of study 0 (the runs that choose).
      confirm_seeds: the confirmation seeds of study 0 (fresh: never selection seeds; the reported runs).
      search: ``"grid"`` or ``"random"`` (:mod:`~mxopt_jax.compare.search`).
      trials: configurations per contender of a random search (``None`` for the grid).
      search_seed: the random search's seed (study ``k`` uses ``search_seed + k``).
      schedule: the learning-rate schedule's name (:mod:`~mxopt_jax.compare.schedules`).
      studies: independent repetitions of the whole tuning (:meth:`for_study`).
      extend: times a grid may be extended past the edge where the chosen rate sits (0 for a random search).
      check_batching: ``"best"``, ``"all"`` or ``"none"`` (the batching check).
      group_by: ``"problem"``, ``"family"`` or ``"none"`` (one compiled program per problem, per family or per
        contender: one per problem compiles fastest; programs of other sizes can round a last bit differently).
      schedule_hook: the schedule's function ``(peak, steps) -> learning_rate`` (None: constant); not a
        setting (not saved, not compared): a built-in name brings its own, a hook of your own comes back by
        passing it again.
    """

    preset: Preset = PRESETS["quick"]
    seeds: tuple[int, ...] = ()
    confirm_seeds: tuple[int, ...] = ()
    search: str = "grid"
    trials: int | None = None
    search_seed: int = 0
    schedule: str = "constant"
    studies: int = 1
    extend: int = 2
    check_batching: str = "best"
    group_by: str = "problem"
    schedule_hook: Callable[[Any, int], Any] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "preset", _preset(self.preset))
        set_(self, "seeds", _seeds(self.preset.seeds if self.seeds == () else self.seeds, "seeds", 0))
        set_(
            self,
            "confirm_seeds",
            _seeds(
                self.preset.confirm_seeds if self.confirm_seeds == () else self.confirm_seeds,
                "confirm_seeds",
                CONFIRM_OFFSET,
            ),
        )
        set_(self, "trials", _search.check_search(self.search, self.trials))
        _search.generator(self.search_seed, "")  # checks the seed
        set_(self, "search_seed", int(self.search_seed))
        if callable(self.schedule) or self.schedule is None or self.schedule in _schedules.SCHEDULES:
            name, hook = _schedules.resolve(self.schedule)
            set_(self, "schedule", name)
            set_(self, "schedule_hook", hook)
        elif not isinstance(self.schedule, str) or not self.schedule:
            raise TypeError(
                f"schedule must be a name or a hook (peak, steps) -> learning_rate, got {self.schedule!r}"
            )
        # else: a hook of the user's, by name (restored from a saved study: it runs when the hook is given again)
        set_(self, "studies", _studies(self.studies))
        set_(self, "extend", extend_count(self.extend))
        set_(self, "check_batching", _choice(self.check_batching, "check_batching", CHECK_BATCHING))
        set_(self, "group_by", _choice(self.group_by, "group_by", GROUP_BY))
        shared = sorted(set(self.seeds) & set(self.confirm_seeds))
        if shared:
            raise ValueError(f"confirmation seeds must be fresh; {shared} are also selection seeds")
        met: dict[int, str] = {}
        for k in range(self.studies):
            for role, seeds in (("selection", self.seeds_of(k)), ("confirmation", self.confirm_seeds_of(k))):
                for s in seeds:
                    where = f"a {role} seed of study {k}"
                    if s in met or s >= 2**31:
                        problem = f"also {met[s]}" if s in met else "not below 2**31"
                        raise ValueError(
                            f"studies={self.studies}: seed {s}, {where}, is {problem}; study k shifts the "
                            f"selection seeds by {STUDY_SEED_STRIDE} k and the confirmation seeds by "
                            f"{STUDY_CONFIRM_STRIDE} k: give seeds that stay apart, or fewer studies"
                        )
                    met[s] = where

    @property
    def runnable(self) -> bool:
        """Whether the schedule can run: a built-in one, or a hook of your own that was given (a plan restored
        from a saved study knows a hook of yours by name only)."""
        return self.schedule in _schedules.SCHEDULES or self.schedule_hook is not None

    # ------------------------------------------------------------------ making and changing
    @classmethod
    def make(
        cls,
        preset: Preset | str = "quick",
        *,
        seeds: int | Sequence[int] | None = None,
        confirm_seeds: int | Sequence[int] | None = None,
        search: str = "grid",
        trials: int | None = None,
        search_seed: int = 0,
        schedule: str | Callable[[Any, int], Any] | None = None,
        studies: int = 1,
        extend: int = 2,
        check_batching: str = "best",
        group_by: str = "problem",
    ) -> Plan:
        """A plan from the study's arguments: ``seeds``/``confirm_seeds`` as counts (``0, 1, ...`` and
        ``1000, 1001, ...``) or lists, defaulting to the preset's; ``schedule`` a name of
        :data:`~mxopt_jax.compare.schedules.SCHEDULES` or a hook of your own ``(peak, steps) ->
        learning_rate``."""
        p = _preset(preset)
        name, hook = _schedules.resolve(schedule)
        return cls(
            preset=p,
            seeds=_seeds(p.seeds if seeds is None else seeds, "seeds", 0),
            confirm_seeds=_seeds(
                p.confirm_seeds if confirm_seeds is None else confirm_seeds, "confirm_seeds", CONFIRM_OFFSET
            ),
            search=search,
            trials=trials,
            search_seed=search_seed,
            schedule=name,
            studies=studies,
            extend=extend,
            check_batching=check_batching,
            group_by=group_by,
            schedule_hook=hook,
        )

    def replace(self, **changes: Any) -> Plan:
        """This plan with ``changes`` (any of :data:`SETTINGS`; counts and names as :meth:`make` takes them),
        checked again. A new preset brings its own seeds unless they are given too (or were not the old
        preset's)."""
        check_settings(changes)
        current = self.settings()
        if "preset" in changes:
            old = self.preset
            if self.seeds == tuple(range(old.seeds)):
                current["seeds"] = None
            if self.confirm_seeds == tuple(range(CONFIRM_OFFSET, CONFIRM_OFFSET + old.confirm_seeds)):
                current["confirm_seeds"] = None
        if changes.get("search") == "grid":
            current["trials"] = None
        current.update(changes)
        if current["schedule"] == self.schedule and self.schedule_hook is not None:
            current["schedule"] = (
                self.schedule_hook if self.schedule not in _schedules.SCHEDULES else self.schedule
            )
        if current["schedule"] == self.schedule and not self.runnable:  # a stored hook's name: kept as it is
            return dataclasses.replace(Plan.make(**{**current, "schedule": None}), schedule=self.schedule)
        return Plan.make(**current)

    def settings(self) -> dict[str, Any]:
        """The settings as :meth:`make` takes them (``preset`` the :class:`Preset`)."""
        return {k: getattr(self, k) for k in SETTINGS}

    # ------------------------------------------------------------------ independent studies
    @property
    def configurations(self) -> int:
        """How many configurations each contender's search tries before any extension: the random search's
        trials, or the grid's points (:attr:`Preset.grid_points <mxopt_jax.compare.presets.Preset.grid_points>`);
        an extended grid adds ``configurations - 1`` per extension."""
        return int(self.trials) if self.trials is not None else int(self.preset.grid_points)

    def seeds_of(self, study: int) -> tuple[int, ...]:
        """Study ``study``'s selection seeds (study 0's shifted by ``STUDY_SEED_STRIDE * study``)."""
        return tuple(s + STUDY_SEED_STRIDE * study for s in self.seeds)

    def confirm_seeds_of(self, study: int) -> tuple[int, ...]:
        """Study ``study``'s confirmation seeds (study 0's shifted by ``STUDY_CONFIRM_STRIDE * study``)."""
        return tuple(s + STUDY_CONFIRM_STRIDE * study for s in self.confirm_seeds)

    def for_study(self, study: int) -> Plan:
        """The plan of independent study ``study`` (``0 <= study < studies``) alone: its seeds, confirmation
        seeds and search seed, ``studies=1``."""
        if (
            isinstance(study, bool)
            or not isinstance(study, numbers.Integral)
            or not 0 <= study < self.studies
        ):
            raise ValueError(f"study must be an int in [0, {self.studies}), got {study!r}")
        return dataclasses.replace(
            self,
            seeds=self.seeds_of(study),
            confirm_seeds=self.confirm_seeds_of(study),
            search_seed=self.search_seed + int(study),
            studies=1,
        )

    # ------------------------------------------------------------------ saved form
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the schedule by name; the preset in full)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in SETTINGS}
        out["preset"] = self.preset.to_dict()
        out["seeds"] = list(self.seeds)
        out["confirm_seeds"] = list(self.confirm_seeds)
        return out

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], schedule_hook: Callable[[Any, int], Any] | None = None
    ) -> Plan:
        """The plan :meth:`to_dict` saved (checked again). A schedule of your own comes back by name only
        (pass its ``schedule_hook`` to run it)."""
        if not isinstance(doc, Mapping):
            raise TypeError(f"a saved plan must be a mapping, got {type(doc).__name__}")
        unknown = sorted(set(doc) - set(SETTINGS))
        if unknown:
            raise ValueError(
                f"a saved plan has unknown setting(s) {', '.join(unknown)} (written by a newer version?)"
            )
        values = dict(doc)
        if isinstance(values.get("preset"), Mapping):
            values["preset"] = Preset(**values["preset"])
        for key in ("seeds", "confirm_seeds"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values, schedule_hook=schedule_hook)

    def differences(self, other: Plan) -> list[str]:
        """``"setting: this A, other B"`` for every setting that differs (the preset field by field)."""
        a, b = self.to_dict(), other.to_dict()
        out = []
        for k in SETTINGS:
            if k == "preset" and a[k] != b[k]:
                for f in a[k]:
                    if a[k][f] != b[k].get(f):
                        out.append(f"preset.{f}: {a[k][f]!r} vs {b[k].get(f)!r}")
            elif a[k] != b[k]:
                out.append(f"{k}: {_short(a[k])} vs {_short(b[k])}")
        return out

    def resumed(self, **given: Any) -> Plan:
        """This (stored) plan, held against the settings a user gave to resume it (``None``: not given): a
        setting given with another value than the stored one is refused (:class:`PlanError`, naming every
        difference); the settings not given keep their stored values. A schedule hook of your own, given again
        under the stored name, is taken (it is what lets a restored plan run)."""
        given = {k: v for k, v in given.items() if v is not None}
        check_settings(given)
        hook = None
        if callable(given.get("schedule")):
            given["schedule"], hook = _schedules.resolve(given["schedule"])
        differ = []
        for k, v in given.items():
            mine = getattr(self, k)
            if k == "preset":
                mine, v = self.preset.to_dict(), _preset(v).to_dict()
            elif k in ("seeds", "confirm_seeds"):
                v = _seeds(v, k, 0 if k == "seeds" else CONFIRM_OFFSET)
            if mine != v:
                differ.append(f"{k}: stored {_short(mine)}, given {_short(v)}")
        if differ:
            raise PlanError(
                "the folder holds a study made under other settings; resume it with the same ones (or leave them "
                "out: the stored ones are taken), or start a new folder. What differs:\n  "
                + "\n  ".join(differ)
            )
        return dataclasses.replace(self, schedule_hook=hook) if hook is not None else self


def check_setting(name: str, value: Any) -> Any:
    """One setting checked alone, exactly as a :class:`Plan` checks it, and the value a plan holds for it
    (seeds and confirmation seeds as a count or a list, a number of trials as a random search takes it). The
    command line's flags call it, so a bad flag is refused with the plan's own words. What depends on two
    settings (trials without a random search, confirmation seeds that are also selection seeds, studies whose
    seeds meet) is checked when the plan is made.

    Raises
    ------
    TypeError
        ``name`` not a setting; ``value`` of the wrong type.
    ValueError
        ``value`` out of the setting's range, or not one of its names (:data:`CHOICES`).
    """
    check_settings({name: value})
    return _CHECKS[name](value)


def _check_search_seed(value: Any) -> int:
    _search.generator(value, "")  # checks the seed
    return int(value)


#: Each setting's own check (:func:`check_setting`); ``tests/app/test_plan.py`` holds it to :data:`SETTINGS`.
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "preset": _preset,
    "seeds": lambda v: _seeds(v, "seeds", 0),
    "confirm_seeds": lambda v: _seeds(v, "confirm_seeds", CONFIRM_OFFSET),
    "search": lambda v: _choice(v, "search", CHOICES["search"]),
    "trials": lambda v: _search.check_search("random", v),
    "search_seed": _check_search_seed,
    "schedule": lambda v: _choice(v, "schedule", CHOICES["schedule"]),
    "studies": lambda v: _studies(v),
    "extend": extend_count,
    "check_batching": lambda v: _choice(v, "check_batching", CHECK_BATCHING),
    "group_by": lambda v: _choice(v, "group_by", GROUP_BY),
}


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse (``TypeError``) any name that is not a setting of a plan (:data:`SETTINGS`)."""
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise TypeError(f"unknown setting(s) {', '.join(unknown)}; a plan's settings: {', '.join(SETTINGS)}")


def _studies(value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 1 <= int(value) <= MAX_STUDIES
    ):
        raise ValueError(f"studies must be an integer between 1 and {MAX_STUDIES}, got {value!r}")
    return int(value)


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
