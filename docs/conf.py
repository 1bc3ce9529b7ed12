"""Sphinx configuration: build with ``sphinx-build -W --keep-going -b html docs docs/_build/html``."""

import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))  # document this checkout, installed or not
sys.path.insert(0, str(DOCS / "_ext"))

import mxopt_jax  # noqa: E402

project = "mxopt_jax"
author = "mxopt_jax contributors"
copyright = "the mxopt_jax contributors; Apache-2.0"
release = version = mxopt_jax.__version__

extensions = [
    "myst_nb",  # MyST Markdown pages and the notebooks (rendered with their stored outputs)
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "mxopt_docs",  # the optimizer reference, generated from the optimizer table
]

exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}

# MyST
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# Notebooks: never executed by the build; the committed outputs are rendered (the tests execute them).
nb_execution_mode = "off"
nb_merge_streams = True

# autodoc / napoleon (the docstrings are Google style)
autodoc_member_order = "bysource"
autodoc_typehints = "description"  # signatures stay readable
autodoc_typehints_description_target = "documented_params"
napoleon_google_docstring = True
napoleon_numpy_docstring = True  # the schedulers use NumPy style
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"mxopt_jax {release}"
html_static_path: list[str] = []
