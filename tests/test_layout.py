"""The house: rules -> drivers -> public API -> facade -> app, one optimizer table, no import cycles.

The import graph is read from the source (``ast``, function-level imports included), so a cycle hidden in a
lazy import is caught too.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import pathlib
import subprocess
import sys

import mxopt_jax
from mxopt_jax import facade
from mxopt_jax._src import registry
from mxopt_jax._src.signature import BASE_KEYWORDS

PKG = pathlib.Path(mxopt_jax.__file__).resolve().parent

# Layers from the bottom up: a module may import only from its own layer or below (modules not listed
# belong to the public layer, mxopt_jax.compare to the app).
LAYERS = [
    ["_src.validation"],
    ["_src.hyperparams", "_src.numerics"],
    ["_src.flatparams", "_src.rowsparse"],
    ["_src.rule"],
    ["_src.drivers.dense", "_src.drivers.lazy", "_src.drivers.flat", "_src.drivers", "_src.drivers.tree"],
    ["_src.signature"],
    ["_src.optimizers.*"],
    ["_src.registry"],
    ["_src.schedulers", "_src.embedding", "_src.sparse_transforms"],
    ["_src.facade.*"],
    # the MXNet checkpoint reader, bottom up: budgets, regular files, array files, the pickle opcode interpreter,
    # the allow-list, the attribute checks and state layouts, the scheduler's position, load_updater,
    # TrainerCheckpoint, load_trainer, then the package
    # that re-exports them
    ["_src.mxnet_format.limits"],
    ["_src.mxnet_format.files"],
    ["_src.mxnet_format.arrays"],
    ["_src.mxnet_format.opcodes"],
    ["_src.mxnet_format.allowlist"],
    ["_src.mxnet_format.unpickler"],
    ["_src.mxnet_format.attributes", "_src.mxnet_format.states"],
    ["_src.mxnet_format.scheduler_state"],
    ["_src.mxnet_format.updater"],
    ["_src.mxnet_format.checkpoint"],
    ["_src.mxnet_format.trainer"],
    ["_src.mxnet_format"],
    ["<public>"],
    ["compare.*", "__main__"],
]


@functools.cache
def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@functools.cache
def _tree(path: pathlib.Path) -> ast.Module:
    """The parsed source of one module (read once per test process: every check below walks the same trees)."""
    return ast.parse(path.read_text())


def _resolve(module: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = module.split(".") if module else []
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, *(target.split(".") if target else [])])


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (relative to ``mxopt_jax``; ``''`` is the package): a fresh
    copy each call of the graph read once per test process."""
    return {m: set(targets) for m, targets in _graph().items()}


@functools.cache
def _graph() -> dict[str, frozenset[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(_tree(path)):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = _resolve(mod, is_pkg, node.level, node.module)
                elif node.module and node.module.split(".")[0] == "mxopt_jax":
                    base = node.module.removeprefix("mxopt_jax").lstrip(".")
                else:
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}" if base else alias.name
                    targets.append(sub if sub in mods else base)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "mxopt_jax":
                        targets.append(alias.name.removeprefix("mxopt_jax").lstrip("."))
            graph[mod].update(t for t in targets if t in mods and t != mod)
    return {m: frozenset(targets) for m, targets in graph.items()}


def _layer(mod: str) -> int:
    for i, names in enumerate(LAYERS):
        for n in names:
            if n == mod or (n.endswith(".*") and (mod == n[:-2] or mod.startswith(n[:-1]))):
                return i
    return LAYERS.index(["<public>"])


def test_no_import_cycles_anywhere_in_the_package():
    graph = import_graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(n) :], n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_imports_flow_down_the_layers():
    bad = [
        f"{m} (layer {_layer(m)}) imports {n} (layer {_layer(n)})"
        for m, targets in import_graph().items()
        for n in targets
        if _layer(n) > _layer(m)
    ]
    assert not bad, "\n".join(bad)


def test_the_library_never_imports_the_app():
    for m, targets in import_graph().items():
        if not (m.startswith("compare") or m == "__main__"):
            assert not any(t.startswith("compare") for t in targets), m


def test_public_api_is_the_optimizer_table():
    """``__init__``'s explicit list names exactly the table's constructors and classes (and nothing is
    exported twice); ``OPTIMIZERS`` and the facade's registry derive from the table."""
    assert list(mxopt_jax.OPTIMIZERS) == list(registry.NAMES)
    assert len(mxopt_jax.__all__) == len(set(mxopt_jax.__all__))
    exported = set(mxopt_jax.__all__)
    for e in registry.TABLE:
        assert mxopt_jax.OPTIMIZERS[e.name] is e.constructor
        assert (
            getattr(mxopt_jax, e.constructor.__name__) is e.constructor and e.constructor.__name__ in exported
        )
        cls = getattr(mxopt_jax, e.class_name)
        assert e.class_name in exported and cls is getattr(facade, e.class_name)
        assert facade.Optimizer.opt_registry[e.name] is cls and cls._ctor is e.constructor
        assert cls.__module__ == "mxopt_jax.facade"
    functions = {n for n in exported if inspect.isfunction(getattr(mxopt_jax, n))}
    assert functions == {e.constructor.__name__ for e in registry.TABLE} | {
        "create",
        "get_updater",
        "register",
    }
    for name in mxopt_jax.__all__:
        assert hasattr(mxopt_jax, name), name


def test_family_modules_are_not_shadowed():
    """The functional constructors are functions; their modules live under ``_src.optimizers``."""
    import importlib

    for e in registry.TABLE:
        assert inspect.isfunction(getattr(mxopt_jax, e.constructor.__name__))
        module = importlib.import_module(e.constructor.__module__)
        assert module.__name__.startswith("mxopt_jax._src.optimizers.")


def test_base_keywords_written_once_and_shown_in_every_signature():
    """Each constructor declares only its own arguments; the base keywords come from one table and appear,
    keyword-only with MXNet's defaults, in ``inspect.signature`` and ``help()``."""
    for e in registry.TABLE:
        params = inspect.signature(e.constructor).parameters
        for k in BASE_KEYWORDS:
            assert params[k.name].kind is inspect.Parameter.KEYWORD_ONLY
            assert params[k.name].default == k.default or (params[k.name].default is k.default)
            assert f"{k.name}:" in e.constructor.__doc__
        assert "**base: Unpack[BaseKeywords]" in inspect.getsource(inspect.getmodule(e.constructor))
    module_sources = {inspect.getsource(inspect.getmodule(e.constructor)) for e in registry.TABLE}
    for src in module_sources:
        assert "rescale_grad: Any = 1.0" not in src and "begin_num_update: int = 0" not in src


# The study app's own layers, from the bottom up (a module may import only from its own layer or below). Data
# flows one way: what is compared -> the engine -> the protocol and its statistics -> the plan and the file
# formats -> the result -> the store and the reports -> the orchestration -> the command line. The report
# renders a result and never reaches back into the orchestration; the store and the report share one module of
# file formats (serialize). The tour is a sub-package beside the study, reached from the command line.
APP_LAYERS = [
    [
        "compare.checks",
        "compare.direction",
        "compare.distributed",
        "compare.floats",
        "compare.figures",
        "compare.progress",
        "compare.stats",
        "compare.records",
        "compare.space",
        "compare.schedules",
        "compare.problems.*",
    ],
    ["compare.contenders"],
    ["compare.engine", "compare.protocol", "compare.search", "compare.preflight"],
    ["compare.plan", "compare.serialize", "compare.tuning"],
    ["compare.analysis.*"],
    ["compare.result"],
    ["compare.report.*", "compare.store"],
    ["compare.study"],
    ["compare.tour.*"],
    ["compare.cli", "compare", "__main__"],
]


def _app_layer(mod: str) -> int:
    for i, names in enumerate(APP_LAYERS):
        for n in names:
            if n == mod or (n.endswith(".*") and (mod == n[:-2] or mod.startswith(n[:-1]))):
                return i
    raise AssertionError(f"{mod} is in no layer of APP_LAYERS: place it")


def test_the_app_flows_one_way():
    graph = import_graph()
    app = [m for m in graph if m == "__main__" or m == "compare" or m.startswith("compare.")]
    bad = [
        f"{m} (layer {_app_layer(m)}) imports {n} (layer {_app_layer(n)})"
        for m in app
        for n in graph[m]
        if (n == "compare" or n.startswith("compare.")) and _app_layer(n) > _app_layer(m)
    ]
    assert not bad, "\n".join(bad)
    # no module of the app imports the package's __init__ (a module imports what it uses, where it lives)
    assert not [m for m in app if m != "__main__" and "compare" in graph[m]]


def _names_used_from(tree: ast.AST, module: str, alias_of: set[str]) -> set[str]:
    """Names a module's ``tree`` takes from ``module`` (``from ..protocol import x`` and ``protocol.x``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == module:
            out.update(a.name for a in node.names)
        elif (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in alias_of
        ):
            out.add(node.attr)
    return out


def test_the_report_only_reads_the_analysis():
    """The report renders the study's analysis (``compare.analysis``, computed once by the result): no module
    under ``compare/report`` imports the statistics or calls a computing function of the protocol (selection,
    the tables' tests, ranks, the bootstrap, profiles); it may read the protocol's types and constants."""
    from mxopt_jax.compare import protocol

    graph = import_graph()
    report = [m for m in graph if m.startswith("compare.report")]
    assert report
    for m in report:
        assert "compare.stats" not in graph[m], f"{m} imports compare.stats: read the analysis instead"
    computing = {
        n for n, v in vars(protocol).items() if inspect.isfunction(v) and v.__module__ == protocol.__name__
    }
    assert {"select", "compare_table", "rank", "rank_uncertainty", "profile_times", "fold"} <= computing
    mods = _modules()
    for m in report:
        tree = _tree(mods[m])
        used = _names_used_from(tree, "protocol", {"protocol", "P"}) & computing
        assert not used, f"{m} calls the protocol's computing functions {sorted(used)}: read the analysis"
        stats_names = _names_used_from(tree, "stats", {"stats"})
        assert not stats_names, f"{m} reads compare.stats ({sorted(stats_names)})"


def test_the_report_and_the_store_read_files_through_one_module():
    graph = import_graph()
    for m in graph:
        if m.startswith("compare.report") or m == "compare.store":
            assert "compare.study" not in graph[m] and "compare.cli" not in graph[m], m
            assert not any(t.startswith("compare.report") for t in graph[m]) or m.startswith(
                "compare.report"
            ), m
    assert "compare.serialize" in graph["compare.store"]
    assert any("compare.serialize" in graph[m] for m in graph if m.startswith("compare.report"))


@functools.cache
def _fresh_imports() -> dict[str, list[str]]:
    """What a fresh interpreter has loaded of ``mxopt_jax.compare`` after ``import mxopt_jax`` (``"library"``),
    then after ``import mxopt_jax.compare`` (``"study"``): one child process for the checks below."""
    code = (
        "import json, sys, mxopt_jax\n"
        "app = lambda: sorted(m for m in sys.modules if m.startswith('mxopt_jax.compare'))\n"
        "library = app()\n"
        "import mxopt_jax.compare\n"
        "print(json.dumps({'library': library, 'study': app()}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_importing_the_study_api_does_not_import_the_command_line():
    """``import mxopt_jax.compare`` (the study's API) loads neither the command line nor argparse's parser:
    ``configure_jax`` lives beside ``distributed``, which the command line imports, not the other way round."""
    study = _fresh_imports()["study"]
    assert "mxopt_jax.compare" in study and "mxopt_jax.compare.cli" not in study
    graph = import_graph()
    assert "compare.cli" not in graph["compare"]
    assert "configure_jax" in vars(importlib.import_module("mxopt_jax.compare.distributed"))


def test_the_study_never_imports_the_tour():
    graph = import_graph()
    study_side = [
        m for m in graph if m.startswith("compare.") and not m.startswith(("compare.tour", "compare.cli"))
    ]
    for m in study_side + ["compare"]:
        assert not any(t.startswith("compare.tour") for t in graph[m]), m


def test_importing_the_library_or_the_study_loads_neither_the_app_nor_the_tour():
    loaded = _fresh_imports()
    assert loaded["library"] == []
    assert [m for m in loaded["study"] if m.startswith("mxopt_jax.compare.tour")] == []


# --------------------------------------------------------------------------- declared dependencies
#: The import name of each distribution that differs from it.
_IMPORT_NAME = {"pillow": "PIL", "scikit-learn": "sklearn"}
#: Declared but imported through another: jaxlib is JAX's backend (``import jax`` loads it), declared so that its
#: floor is pinned with JAX's (``.ci/floors.txt``).
_DECLARED_FOR_ANOTHER = {"jaxlib"}


def _distribution(requirement: str) -> str:
    name = requirement.split(";")[0]
    for sep in "<>=!~[ ":
        name = name.split(sep)[0]
    return name.strip().lower().replace("_", "-")


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level name -> the package modules that import it (function-level and optional imports included)."""
    out: dict[str, set[str]] = {}
    for mod, path in _modules().items():
        for node in ast.walk(_tree(path)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top != "mxopt_jax" and top not in sys.stdlib_module_names:
                    out.setdefault(top, set()).add(mod)
    return out


def test_declared_dependencies_are_what_the_package_imports():
    """Each runtime dependency of pyproject.toml is imported by the package, and the package imports nothing
    else outside the standard library, except in the study app (``compare``), whose imports are the study and
    plot extras."""
    import tomllib

    project = tomllib.loads((PKG.parent / "pyproject.toml").read_text())["project"]

    def import_names(requirements: list[str]) -> set[str]:
        return {_IMPORT_NAME.get(d, d.replace("-", "_")) for d in map(_distribution, requirements)}

    runtime = import_names(
        [r for r in project["dependencies"] if _distribution(r) not in _DECLARED_FOR_ANOTHER]
    )
    extras = project["optional-dependencies"]
    app_extras = import_names(extras["study"] + extras["plot"])
    imported = _third_party_imports()
    assert sorted(runtime - set(imported)) == [], "declared runtime dependencies the package never imports"
    undeclared = {
        top: sorted(mods)
        for top, mods in imported.items()
        if top not in runtime and (top not in app_extras or any(not m.startswith("compare") for m in mods))
    }
    assert undeclared == {}, (
        "imports that no requirement declares (the library may import only the runtime ones)"
    )
