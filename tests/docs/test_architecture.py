"""docs/architecture.md stays true as the code changes: every file path and every ``mxopt_jax.…`` dotted name it
cites exists, every module of the package is placed on it, and the site lists it."""

from __future__ import annotations

import importlib
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
