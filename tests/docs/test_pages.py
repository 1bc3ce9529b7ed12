"""The pages say what the program does: an old spelling they name is one the command line takes (and its new
one is the one it names), the install page lists every extra, the notebooks' re-run command says which extra
has what it imports, and the README's account of ``mxopt_jax.OPTIMIZERS`` is the table's."""

from __future__ import annotations

import pathlib
import re
import tomllib

import mxopt_jax
from mxopt_jax.compare.cli import DEPRECATED

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "notebooks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def spelling_claims(text: str) -> list[tuple[str, str]]:
    """``(old, new)`` for every "``--new`` ... (``--old`` is its old spelling)" and "``--old`` (now ``--new``)"."""
    text = " ".join(text.split())
    claims = re.findall(r"`(--[\w-]+)` \(now `(--[\w-]+)`\)", text)
    claims += [
        (old, new)
        for new, old in re.findall(r"`(--[\w-]+)` picks [^(]*\(`(--[\w-]+)` is its old spelling", text)
    ]
    claims += [(old, "?") for old in re.findall(r"`(--[\w-]+)` is (?:its|the) old spelling", text)]
    return claims


def test_every_old_spelling_the_pages_name_is_one_the_command_line_takes():
    claims = [(page.name, old, new) for page in PAGES for old, new in spelling_claims(page.read_text())]
    assert len(claims) >= 3  # the check reads what the pages say
    for page, old, new in claims:
        assert old in DEPRECATED, (
            f"{page}: {old} is called an old spelling; the old ones are {list(DEPRECATED)}"
        )
        assert new in ("?", DEPRECATED[old]), f"{page}: {old} is now {DEPRECATED[old]}, not {new}"
    wrong = "`--contenders` picks the optimizers (`--contenders` is its old spelling)"
    assert (
        spelling_claims(wrong) and spelling_claims(wrong)[0][0] not in DEPRECATED
    )  # the old page's sentence


def test_the_install_page_names_every_extra():
    text = (ROOT / "docs" / "getting_started.md").read_text()
    line = " ".join(text.split("Extras:", 1)[1].split("\n\n", 1)[0].split())
    named = set(re.findall(r"`\.\[(\w+)\]`", line))
    assert named == set(EXTRAS), set(EXTRAS) ^ named


def test_the_notebooks_rerun_command_says_which_extra_has_what_it_needs():
    text = " ".join((ROOT / "notebooks" / "README.md").read_text().split())
    rerun = text.split("To re-run a notebook", 1)[1]
    (extra,) = set(re.findall(r"the `(\w+)` extra", rerun))
    needs = {"nbformat", "nbclient", "ipykernel"}
    assert needs <= set(re.findall(r"[\w-]+", rerun))
    have = {re.split(r"[<>=!~ ;\[]", req, maxsplit=1)[0].lower() for req in EXTRAS[extra]}
    assert needs <= have, needs - have


def test_the_readme_says_how_optimizers_names_map_to_constructors():
    """Every name of ``OPTIMIZERS`` is the constructor's own name (``mxopt_jax.<name>``), except those the README
    names as exceptions ("``groupadagrad`` for ``group_adagrad``"), which map to what it says."""
    text = " ".join((ROOT / "README.md").read_text().split())
    exceptions = dict(
        re.findall(r"`(\w+)` for `(\w+)`", text.split("mxopt_jax.OPTIMIZERS` maps", 1)[1][:300])
    )
    for name, ctor in mxopt_jax.OPTIMIZERS.items():
        documented = exceptions.get(name, name)
        assert getattr(mxopt_jax, documented) is ctor, (name, documented, ctor.__name__)
        assert (documented == name) == (ctor.__name__ == name), name
    assert exceptions == {"groupadagrad": "group_adagrad"}


def _expanded(extra: str) -> set[str]:
    """The distributions an extra installs, its references to the project's own extras (``mxopt_jax[study]``)
    expanded, names lower case."""
    out: set[str] = set()
    for req in EXTRAS[extra]:
        name = re.split(r"[<>=!~ ;\[]", req, maxsplit=1)[0].lower().replace("_", "-")
        if name == "mxopt-jax":
            for inner in re.findall(r"\[([\w,\s-]+)\]", req)[0].split(","):
                out |= _expanded(inner.strip())
        else:
            out.add(name)
    return out


def test_the_notebooks_extra_installs_what_runs_the_notebooks():
    """Issue 53, item 9: re-running the notebooks needed an executor that no extra installed: the `notebooks`
    extra has the command's executor and kernel and every package the notebooks import, and notebooks/README.md's
    command installs that extra."""
    import ast
    import sys

    import nbformat

    distribution = {"sklearn": "scikit-learn", "IPython": "ipython", "PIL": "pillow"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    have = _expanded("notebooks") | runtime
    imported: set[str] = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    imported.add(str(node.module).split(".")[0])
    needed = {distribution.get(m, m).lower() for m in imported if m not in sys.stdlib_module_names}
    needed -= {"mxopt-jax", "mxopt_jax"}
    assert {"flax", "scikit-learn", "ipython", "matplotlib"} <= needed
    assert needed <= have, needed - have
    assert {"nbformat", "nbclient", "ipykernel", "pandas", "tqdm"} <= have
    text = " ".join((ROOT / "notebooks" / "README.md").read_text().split())
    rerun = text.split("To re-run a notebook", 1)[1]
    assert "pip install -q -e '.[notebooks]'" in rerun and "the `notebooks` extra" in rerun
