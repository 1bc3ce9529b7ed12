"""Every example in the documentation runs as a doctest, and the reference names every public name.

* the ``>>>`` examples in the library's docstrings (every module but the comparison app);
* the ``pycon`` blocks of the documentation pages (``docs/**/*.md``), one doctest per page with shared names;
* every optimizer constructor has an example (``Examples:``);
* the generated optimizer reference (``docs/_ext/mxopt_docs.py``, the pages the Sphinx build writes) plus the
  hand-written pages document every name of ``mxopt_jax.__all__`` and of the public modules' ``__all__``.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pathlib
import pkgutil
import re
import sys

import pytest

import mxopt_jax
from mxopt_jax._src.registry import TABLE

ROOT = pathlib.Path(mxopt_jax.__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
LIBRARY = sorted(
    m.name
    for m in pkgutil.walk_packages(mxopt_jax.__path__, "mxopt_jax.")
    if not m.name.startswith("mxopt_jax.compare") and m.name != "mxopt_jax.__main__"
)
# Written by the build (docs/_ext/mxopt_docs.py; the optimizer pages are checked below).
GENERATED = ("_build", "reference/optimizers", "notebooks", "benchmarks")
PAGES = sorted(
    p for p in DOCS.rglob("*.md") if not any(p.relative_to(DOCS).as_posix().startswith(g) for g in GENERATED)
)
PYCON = re.compile(r"^```pycon\n(.*?)^```", re.S | re.M)


def _run(test: doctest.DocTest) -> None:
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()


@pytest.mark.parametrize("module", LIBRARY)
def test_docstring_examples_run(module, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples read test data by paths relative to the repository
    mod = importlib.import_module(module)
    for test in doctest.DocTestFinder(exclude_empty=True).find(mod, module):
        if test.examples:
            _run(test)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_page_examples_run(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    blocks = PYCON.findall(page.read_text())
    text = "\n".join(blocks)
    test = doctest.DocTestParser().get_doctest(text, {"__name__": "__page__"}, str(page), str(page), 0)
    _run(test)


def test_pages_have_runnable_examples():
    """The guides show code that runs: each has at least one ``pycon`` block."""
    guides = [
        "index.md",
        "getting_started.md",
        "facade_guide.md",
        "schedulers.md",
        "sparse.md",
        "multi_tensor.md",
    ]
    for name in guides:
        assert PYCON.search((DOCS / name).read_text()), f"docs/{name} has no pycon example"


@pytest.mark.parametrize("entry", TABLE, ids=lambda e: e.name)
def test_every_optimizer_has_an_example(entry):
    doc = entry.constructor.__doc__ or ""
    assert "Examples:" in doc and ">>>" in doc, f"mxopt_jax.{entry.constructor.__name__} has no example"


def _documented(text: str) -> set[str]:
    """Names declared by autodoc / py directives in MyST or reST text."""
    names = set()
    pat = r"(?:\{|\.\. )(?:auto)?(?:py:)?(?:function|class|data|module|exception|attribute|method)\}?:{0,2} +"
    for m in re.finditer(pat + r"([\w.]+)", text):
        names.add(m.group(1))
    return names


def test_reference_names_every_public_name(tmp_path):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import mxopt_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    pages = mxopt_docs.write_pages(tmp_path)
    assert len(pages) == len(TABLE) + 1
    documented = set()
    for p in [*pages, *PAGES]:
        documented |= _documented(p.read_text())
    missing = mxopt_docs.missing_names(documented)
    assert not missing, f"not documented in the reference: {missing}"
    # Each optimizer page: the constructor, the facade class, the state, and the MXNet name.
    for e in TABLE:
        text = (tmp_path / "reference" / "optimizers" / f"{e.name}.md").read_text()
        for needle in (
            f"autofunction:: mxopt_jax.{e.constructor.__name__}",
            f"py:class}} mxopt_jax.{e.class_name}(",
            f"mxopt_jax.{e.rule.state_cls.__name__}",
            e.mxnet,
        ):
            assert needle in text, (e.name, needle)
