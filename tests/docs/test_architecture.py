"""docs/architecture.md stays true as the code changes: every file path and every ``mxopt_jax.…`` dotted name it
cites exists, every module of the package is placed on it, the site lists it, and what it says of the imports
holds: its layers table and the app's diagram against the import graph, the CSV writers where it names them.
(Its recipes are performed by tests/docs/test_recipes.py.)"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
TEXT = PAGE.read_text()

# A path of the repository: under one of its top-level folders, up to the first character a path here never has.
PATH = re.compile(r"(?<![\w./-])((?:mxopt_jax|tests|tools|benchmarks|docs|notebooks|\.ci)/[\w./-]*)")
# What the page's commands write (not there before they run).
OUTPUTS = ("docs/_build",)
DOTTED = re.compile(r"(?<![\w.])(mxopt_jax(?:\.[A-Za-z_]\w*)+)")


def cited_paths(text: str) -> list[str]:
    """Every repository path the text cites (a trailing full stop or comma is punctuation, not the path)."""
    return sorted(
        {m.rstrip(".,") for m in PATH.findall(text)}
        - {p for p in PATH.findall(text) if p.startswith(OUTPUTS)}
    )


def cited_names(text: str) -> list[str]:
    """Every dotted ``mxopt_jax.…`` name the text cites."""
    return sorted(set(DOTTED.findall(text)))


def resolve(name: str) -> object:
    """The object a dotted name stands for: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)  # AttributeError: the page names what the code does not have
        return obj
    raise ModuleNotFoundError(name)


def test_the_page_cites_paths_and_names():
    # the checks below mean something only if the page cites the modules it is about
    assert len(cited_paths(TEXT)) > 60 and len(cited_names(TEXT)) > 20


@pytest.mark.parametrize("path", cited_paths(TEXT))
def test_every_cited_path_exists(path):
    assert (ROOT / path).exists(), f"docs/architecture.md cites {path}, which does not exist"


@pytest.mark.parametrize("name", cited_names(TEXT))
def test_every_cited_name_exists(name):
    try:
        resolve(name)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"docs/architecture.md cites {name}, which does not exist: {e}")


def _placed(rel: str, text: str) -> bool:
    """Whether module ``rel`` (a path relative to the repository) is named on the page: by its path, or by its
    file name on a line that cites its folder (``mxopt_jax/_src/drivers/``: dense.py, lazy.py, ...); a package's
    ``__init__.py`` by its folder."""
    path = pathlib.PurePosixPath(rel)
    folder = f"{path.parent}/"
    if rel in text:
        return True
    if path.name == "__init__.py":
        return folder in text
    return any(
        folder in line and re.search(rf"(?<![\w/]){re.escape(path.name)}", line) for line in text.splitlines()
    )


def test_every_module_of_the_package_is_placed():
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "mxopt_jax").rglob("*.py"))
    # packages with nothing in their __init__ (namespaces of the layout) need no words of their own
    modules = [m for m in modules if (ROOT / m).read_text().strip() or not m.endswith("__init__.py")]
    missing = [m for m in modules if not _placed(m, TEXT)]
    assert not missing, (
        f"docs/architecture.md places no word on {missing}: add each to 'Where each concern lives'"
    )


def test_placement_rule_tells_a_missing_module():
    # the rule above can fail: a file name alone, or on a line without its folder, is not a placement
    assert _placed("mxopt_jax/_src/drivers/lazy.py", "`mxopt_jax/_src/drivers/`: dense.py, lazy.py")
    assert not _placed("mxopt_jax/_src/drivers/lazy.py", "`mxopt_jax/_src/drivers/`: dense.py\nlazy.py")
    assert not _placed("mxopt_jax/_src/drivers/lazy.py", "`mxopt_jax/_src/drivers/`: dense.py, mylazy.py")


def test_the_site_lists_the_page():
    index = (ROOT / "docs" / "index.md").read_text()
    guides = index.split(":caption: Guides", 1)[1].split("```", 1)[0]
    assert "\narchitecture\n" in guides


# --------------------------------------------------------------------------- the page's claims about imports
def _import_graph() -> dict[str, set[str]]:
    """The package's import graph as tests/test_layout.py reads it (module -> package modules it imports,
    relative to ``mxopt_jax``): the module pytest collects as ``test_layout`` when it is the one importable by
    that name (its parsed sources are then read once per process), else a private copy of it."""
    path = ROOT / "tests" / "test_layout.py"
    try:
        layout = importlib.import_module("test_layout")
    except ImportError:
        layout = None
    if layout is None or pathlib.Path(layout.__file__).resolve() != path.resolve():
        spec = importlib.util.spec_from_file_location("_layout", path)
        assert spec is not None and spec.loader is not None
        layout = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(layout)
    return layout.import_graph()


GRAPH = _import_graph()
#: Packages whose ``__init__.py`` is empty: namespaces of the layout, in no layer.
EMPTY = {
    m
    for m in GRAPH
    if (ROOT / "mxopt_jax" / m.replace(".", "/") / "__init__.py").is_file()
    and not (ROOT / "mxopt_jax" / m.replace(".", "/") / "__init__.py").read_text().strip()
}


def _section(title: str) -> str:
    return TEXT.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _modules_of(path: str) -> set[str]:
    """The package modules a cited path stands for: a file, or every module under a folder."""
    rel = path.removeprefix("mxopt_jax/").removeprefix("mxopt_jax")
    if rel.endswith(".py"):
        mod = rel.removesuffix(".py").removesuffix("__init__").rstrip("/").replace("/", ".")
        return {mod}
    prefix = rel.rstrip("/").replace("/", ".")
    return {m for m in GRAPH if m == prefix or m.startswith(prefix + ".")}


def _layer_rows() -> list[tuple[str, set[str]]]:
    rows = []
    for line in _section("The layers").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("layer", "---"):
            paths = re.findall(r"`(mxopt_jax/[\w./]*)`", cells[2])
            rows.append((cells[0], set().union(*map(_modules_of, paths)) if paths else set()))
    return rows


def test_the_layers_table_places_every_module_once_and_holds_every_import():
    rows = _layer_rows()
    assert [name for name, _ in rows][:2] == ["rules", "drivers"] and rows[-1][0] == "app"
    placed = {m: [i for i, (_, mods) in enumerate(rows) if m in mods] for m in GRAPH if m not in EMPTY}
    assert {m: r for m, r in placed.items() if len(r) != 1} == {}, "in no row, or in two"
    row = {m: r[0] for m, r in placed.items()}
    upward = [
        f"{m} ({rows[row[m]][0]}) imports {n} ({rows[row[n]][0]})"
        for m, targets in GRAPH.items()
        for n in targets
        if m in row and n in row and row[n] > row[m]
    ]
    assert upward == [], "docs/architecture.md's layers say these imports go up"


def test_the_layers_check_can_fail():
    # the optimizers' family modules import signature.py, which imports the tree driver: in the rules row
    # (where the page once listed them) that is an import going up
    assert "_src.signature" in GRAPH["_src.optimizers.sgd"] and "_src.drivers.tree" in GRAPH["_src.signature"]


def _flow_steps() -> list[set[str]]:
    block = _section("The app's data flow").split("```text\n", 1)[1].split("```", 1)[0]
    steps = []
    for line in block.splitlines():
        left = line.strip().split("  ", 1)[0]
        tokens = re.findall(r"[\w]+\.py|[\w]+/", left)
        if tokens:
            steps.append(set().union(*(_modules_of("mxopt_jax/compare/" + t) for t in tokens)))
    return steps


def test_the_data_flow_diagram_holds_the_imports():
    steps = _flow_steps()
    assert len(steps) >= 8 and all(steps), steps
    step = {m: i for i, mods in enumerate(steps) for m in mods}
    upward = [
        f"{m} (step {step[m] + 1}) imports {n} (step {step[n] + 1})"
        for m in step
        for n in GRAPH[m]
        if n in step and step[n] > step[m]
    ]
    assert upward == [], "each step imports only from the steps above it, says docs/architecture.md"
    # every module of the app is on a step, or a helper the page names, which imports no step
    after = _section("The app's data flow").split("helpers any step may use, which import no step:", 1)[1]
    helpers = {
        "compare." + n for n in re.findall(r"(\w+)\.py", after.split("(in `mxopt_jax/compare/`)", 1)[0])
    }
    app = {m for m in GRAPH if m.startswith("compare.")} - EMPTY
    assert sorted(app - set(step) - helpers) == [], "on no step of the diagram and not a helper"
    assert {h: sorted(GRAPH[h] & set(step)) for h in helpers if GRAPH[h] & set(step)} == {}, (
        "helpers import steps"
    )


def test_the_csv_files_are_written_where_the_page_says():
    """The page names serialize.py for the JSON format and the CSV numbers, and the modules that write CSV files:
    every module that imports ``csv`` is on that line."""
    line = next(l for l in TEXT.splitlines() if l.endswith("| `mxopt_jax/compare/serialize.py` |"))

    def source(m: str) -> str:
        path = ROOT / "mxopt_jax" / (m.replace(".", "/") + ".py")
        return path.read_text() if path.is_file() else ""

    writers = {m for m in GRAPH if re.search(r"^\s*import csv\b", source(m), re.M)}
    assert writers and all(f"`mxopt_jax/{w.replace('.', '/')}.py`" in line for w in writers), writers
