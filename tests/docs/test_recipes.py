"""docs/architecture.md's recipes, performed: an optimizer, a driver, a problem, a contender and a setting added
as the page says, and the places the page says follow from them checked to pick each up.

The optimizer is added to a copy of the package (its rule and constructor in a family module, its row of the
table, its names in the explicit list, its rows in the app's tables) imported in a child process, since the
table is read at import; the others join at run time as the page says (a user's problem and contender need no
registration; a driver is a module and one row of ``KINDS``; a setting is one field of the plan).
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import subprocess
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mxopt_jax

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "architecture.md").read_text()


def _recipe(title: str) -> str:
    return PAGE.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


# --------------------------------------------------------------------------- an optimizer
TOY_RULE = '''

def _signsgd_init(w, dtype, opts):
    return ()


def signsgd_step(g, w, s, hp, opts):
    """``w -= lr * sign(G)``: the toy optimizer of tests/docs/test_recipes.py."""
    return -hp["lr"] * jnp.sign(preprocess(g, w, hp)), ()


SignSGDState = NamedTuple("SignSGDState", [("count", jax.Array), ("master", optax.Params | None)])

SIGNSGD_RULE = Rule(name="signsgd", state_cls=SignSGDState, fields=(), init=_signsgd_init, step=signsgd_step)


@optimizer(SIGNSGD_RULE)
def signsgd(
    learning_rate: ScalarOrSchedule | None = 0.01, **base: Unpack[BaseKeywords]
) -> optax.GradientTransformation:
    """SignSGD (a toy): ``w -= lr * sign(G)``."""
    raise NotImplementedError  # a declaration: never run
'''

TOY_ROW = """    Entry("signsgd", sgd.signsgd, "SignSGD", "(a toy of tests/docs/test_recipes.py)", SGD_FAMILY),
"""

CHILD = """
import inspect, sys
import jax.numpy as jnp, numpy as np, optax
import mxopt_jax
from mxopt_jax import facade
from mxopt_jax._src import registry
from mxopt_jax.compare import contenders

assert mxopt_jax.__file__.startswith(sys.argv[1]), mxopt_jax.__file__
# the constructor: the rule plus MXNet's base keywords, validated, an optax transform
tx = mxopt_jax.signsgd(learning_rate=0.5, wd=0.0)
assert "rescale_grad" in inspect.signature(mxopt_jax.signsgd).parameters
params = {"w": jnp.array([1.0, -2.0])}
updates, _ = tx.update({"w": jnp.array([3.0, -0.1])}, tx.init(params), params)
np.testing.assert_allclose(updates["w"], [-0.5, 0.5])
try:
    mxopt_jax.signsgd(learning_rate=-1.0)
except ValueError as e:
    assert "learning_rate" in str(e)
else:
    raise AssertionError("a negative learning rate passed")
# what follows from the row: OPTIMIZERS, the facade class and MXNet's registry name, the family, the contender
assert mxopt_jax.OPTIMIZERS["signsgd"] is mxopt_jax.signsgd and "signsgd" in registry.FAMILIES[registry.SGD_FAMILY]
opt = mxopt_jax.create("signsgd", learning_rate=0.5)
assert type(opt) is facade.SignSGD is mxopt_jax.SignSGD
w = jnp.array([1.0, -2.0])
new_w = facade.get_updater(opt)(0, jnp.array([3.0, -0.1]), w)
np.testing.assert_allclose(new_w, [0.5, -1.5])
c = contenders.mxopt_contender("signsgd")
assert c.family == registry.SGD_FAMILY and [h.name for h in c.hyperparameters] == ["learning_rate", "wd"]
assert c.name in [d.name for d in contenders.default_contenders()]
# the layout's checks of the public list against the table
sys.path.insert(0, sys.argv[2])
import test_layout
test_layout.test_public_api_is_the_optimizer_table()
test_layout.test_base_keywords_written_once_and_shown_in_every_signature()
print("ok")
"""


def _insert(path: pathlib.Path, before: str, text: str) -> None:
    src = path.read_text()
    assert src.count(before) == 1, (path, before)
    path.write_text(src.replace(before, text + before))


def test_adding_an_optimizer_as_the_page_says(tmp_path):
    recipe = _recipe("How to add an optimizer")
    for place in (
        "`mxopt_jax/_src/optimizers/`",
        "`TABLE`",
        "`mxopt_jax/__init__.py`",
        "`SEARCH_SPACES`",
        "`UPDATES`",
    ):
        assert place in recipe, place
    pkg = tmp_path / "mxopt_jax"
    shutil.copytree(ROOT / "mxopt_jax", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    # 1. the rule and 2. the constructor, in its family's module
    sgd = pkg / "_src" / "optimizers" / "sgd.py"
    sgd.write_text(sgd.read_text() + TOY_RULE)
    # 3. one row of TABLE, and the names in the explicit list
    _insert(pkg / "_src" / "registry.py", ")\n\n#: MXNet registry names", TOY_ROW)
    init = pkg / "__init__.py"
    _insert(
        init,
        "from ._src.registry import FAMILIES",
        "from ._src.optimizers.sgd import SignSGDState, signsgd\n",
    )
    _insert(init, "\n__all__ = [", "from .facade import SignSGD  # type: ignore[attr-defined]\n")
    _insert(init, '    "sparse",\n', '    "signsgd",\n    "SignSGDState",\n    "SignSGD",\n')
    # the app's rows: its kind of update and its random search's space
    app = pkg / "compare" / "contenders.py"
    _insert(app, '    "adagrad": "accumulated",\n', '    "signsgd": "normalized",\n')
    _insert(app, '    "nag": ("momentum", "wd"),\n', '    "signsgd": ("wd",),\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(pkg), str(ROOT / "tests")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_an_optimizer_without_its_app_rows_is_refused_by_name():
    from mxopt_jax.compare import contenders

    with pytest.raises(KeyError, match="'signsgd' has no row in UPDATES and SEARCH_SPACES"):
        contenders.search_space("signsgd", 0.01, {})


# --------------------------------------------------------------------------- a driver
@dataclasses.dataclass(frozen=True)
class Frozen:
    """A toy kind of leaf: the gradient of a parameter that must not move this step."""

    value: jax.Array


def _frozen_driver() -> types.ModuleType:
    """A driver module with the three functions of the others: the state as the dense driver makes it, the
    multipliers as it reads them, and an update of zero that leaves the state as it is."""
    from mxopt_jax._src.drivers import dense

    mod = types.ModuleType("frozen")
    mod.init = dense.init  # type: ignore[attr-defined]
    mod.multiplier = dense.multiplier  # type: ignore[attr-defined]
    mod.update = lambda ctx, slot: (jnp.zeros_like(slot.weight), slot.state, slot.master)  # type: ignore[attr-defined]
    return mod


def test_adding_a_driver_as_the_page_says(monkeypatch):
    from mxopt_jax._src import drivers

    recipe = _recipe("How to add a driver (a kind of leaf)")
    assert "`init`, `multiplier`,\n`update`" in recipe or "`init`, `multiplier`, `update`" in recipe
    assert "one row of `KINDS`" in recipe
    monkeypatch.setitem(drivers.KINDS, Frozen, _frozen_driver())  # the one row
    assert (
        drivers.is_unit(Frozen(jnp.ones(2))) and drivers.kind_of(Frozen(jnp.ones(2))) is drivers.KINDS[Frozen]
    )
    params = {"a": jnp.array([1.0, 2.0]), "b": jnp.array([1.0, 2.0])}
    grads = {"a": Frozen(jnp.array([1.0, 1.0])), "b": jnp.array([1.0, 1.0])}
    for tx in (mxopt_jax.sgd(learning_rate=0.5, momentum=0.9), mxopt_jax.adam(learning_rate=0.5)):
        state = tx.init(params)
        updates, _ = tx.update(grads, state, params)  # the tree driver dispatches through kind_of
        np.testing.assert_array_equal(updates["a"], [0.0, 0.0])
        assert float(jnp.abs(updates["b"]).min()) > 0


# --------------------------------------------------------------------------- a problem and a contender
def _toy_problem():
    """A user's problem, filled in as the page says: a noisy least-squares fit (lower is better)."""
    from mxopt_jax.compare import Problem
    from mxopt_jax.compare.problems.base import Splits

    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1 * rng.normal(size=96)).astype(np.float32)

    def loss(p, b):
        return jnp.mean((b[0] @ p["w"] - b[1]) ** 2)

    return Problem(
        "toy_lsq",
        "toy least squares",
        "a user's problem of tests/docs/test_recipes.py",
        lambda: Splits((x[:64], y[:64]), (x[64:80], y[64:80]), (x[80:], y[80:])),
        lambda key: {"w": jnp.zeros(3)},
        loss,
        loss,
        "mse",
        0.5,
        12,
        16,
        4,
    )


@pytest.mark.slow  # ~15 s of compiling; in the default run tests/app/test_study.py's small_study runs a user's
# problem ("tiny") and a user's contender ("slowpoke") through study() the same way
def test_adding_a_problem_and_a_contender_as_the_page_says():
    from mxopt_jax.compare import PRESETS, contender, study

    assert "needs no registration" in _recipe("How to add a problem")
    assert "Any factory of an optax transform" in _recipe("How to add a contender")
    toy = contender("toy.lion", lambda lr: optax.lion(lr), default_lr=1e-3)
    preset = dataclasses.replace(PRESETS["quick"], grid_points=2, seeds=2, confirm_seeds=2)
    result = study(
        _toy_problem(), [toy], preset, extend=0, check_batching="none", progress=False, plots=False
    )
    assert [(s.problem, s.contender) for s in result.selections("tuned")] == [("toy_lsq", "toy.lion")]
    assert "toy.lion" in result.report() and "toy_lsq" in result.report()


# --------------------------------------------------------------------------- a setting
def test_adding_a_setting_as_the_page_says(monkeypatch):
    """One field of the plan with its check and its words in SETTINGS: saving, restoring, comparing and holding
    it on resume come with the field."""
    from mxopt_jax.compare import plan as P

    recipe = _recipe("How to add a setting of the study")
    assert (
        "One field of `mxopt_jax.compare.plan.Plan`" in recipe
        and "`mxopt_jax.compare.plan.SETTINGS`" in recipe
    )

    @dataclasses.dataclass(frozen=True)
    class WarmPlan(P.Plan):
        warmup: int = 0

        def __post_init__(self) -> None:
            super().__post_init__()
            if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
                raise ValueError(f"warmup must be an integer >= 0, got {self.warmup!r}")

    monkeypatch.setitem(P.SETTINGS, "warmup", "steps of linear warm-up before the schedule")
    with pytest.raises(ValueError, match="^warmup must be an integer >= 0"):
        WarmPlan(warmup=-1)
    plan = WarmPlan(warmup=5)
    saved = plan.to_dict()
    assert saved["warmup"] == 5 and WarmPlan.from_dict(saved) == plan
    assert plan.resumed(warmup=None) == plan and plan.resumed(warmup=5) == plan
    with pytest.raises(P.PlanError, match="warmup: stored 5, given 6"):
        plan.resumed(warmup=6)
    assert plan.differences(WarmPlan(warmup=2)) == ["warmup: 5 vs 2"]
