"""The notebooks in notebooks/: committed executed and small, their mxopt_jax names exist, and (``slow``)
every one executes top to bottom (on a copy: the committed files are never rewritten).

Executing them takes four kernels about a minute of both cores (training runs, a study), so the default run
checks what a change of the library breaks first, without a kernel: each code cell parses and every name it
takes from mxopt_jax (``from mxopt_jax... import x``, ``mxopt_jax.x.y``, ``alias.x`` of such a module) exists.
CI executes them in the ``slow`` step.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
MAX_BYTES = 500_000
CELL_TIMEOUT = 300  # seconds per cell; a whole notebook takes well under a minute on 2 cores
PLOTLESS = {"03_migrating_from_mxnet.ipynb"}  # prints only; every other notebook must display figures


def test_the_four_notebooks_exist_and_are_linked():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) == 4, names
    readme = (NOTEBOOKS[0].parent / "README.md").read_text()
    for name in names:
        assert f"({name})" in readme, f"notebooks/README.md does not link {name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_with_outputs_and_small(path):
    assert path.stat().st_size < MAX_BYTES
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "commit the notebook executed"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert nb.metadata.kernelspec.name == "python3"


def _mxopt_names(source: str) -> list[str]:
    """The mxopt_jax names a cell's code uses that do not exist (IPython's ``%`` and ``!`` lines left out)."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    tree = ast.parse(code)
    aliases: dict[str, types.ModuleType] = {}
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "mxopt_jax":
                    module = importlib.import_module(a.name)
                    aliases[a.asname or a.name.split(".")[0]] = (
                        module if a.asname else importlib.import_module("mxopt_jax")
                    )
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mxopt_jax":
            module = importlib.import_module(node.module)
            for a in node.names:
                try:
                    value = getattr(module, a.name)
                except AttributeError:
                    try:
                        value = importlib.import_module(f"{node.module}.{a.name}")
                    except ImportError:
                        missing.append(f"{node.module}.{a.name}")
                        continue
                if isinstance(value, types.ModuleType):
                    aliases[a.asname or a.name] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            module = aliases[node.value.id]
            if not hasattr(module, node.attr):
                try:
                    importlib.import_module(f"{module.__name__}.{node.attr}")
                except ImportError:
                    missing.append(f"{module.__name__}.{node.attr}")
    return missing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_code_parses_and_its_mxopt_jax_names_exist(path):
    nb = nbformat.read(path, as_version=4)
    missing = [m for c in nb.cells if c.cell_type == "code" for m in _mxopt_names(c.source)]
    assert not missing, f"{path.name} uses names mxopt_jax does not have: {missing}"


def test_the_name_check_sees_a_missing_name():
    assert _mxopt_names("import mxopt_jax\nmxopt_jax.adam(0.1)\nmxopt_jax.no_such_optimizer()") == [
        "mxopt_jax.no_such_optimizer"
    ]
    assert _mxopt_names("from mxopt_jax import compare, nothing_here\ncompare.no_such_thing") == [
        "mxopt_jax.nothing_here",
        "mxopt_jax.compare.no_such_thing",
    ]


def _execute(path: Path, workdir: Path) -> Path:
    """Execute a copy of ``path`` in ``workdir`` (its own kernel, ``python3``); returns the executed copy."""
    workdir.mkdir()
    copy = workdir / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and its traceback, on any failing cell
    nbformat.write(nb, copy)
    return copy


@pytest.mark.slow
def test_every_notebook_executes(tmp_path):
    # Two kernels at a time (one test, so pytest-xdist never runs the notebooks twice); the slowest first.
    order = sorted(NOTEBOOKS, key=lambda p: p.name in PLOTLESS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {p: pool.submit(_execute, p, tmp_path / p.stem) for p in order}
    failures = []
    for path, future in futures.items():
        try:
            copy = future.result()
        except Exception as e:  # noqa: BLE001 - report every notebook's failure, not only the first
            failures.append(f"{path.name}: {type(e).__name__}: {e}")
            continue
        nb = nbformat.read(copy, as_version=4)
        outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        if not outputs:
            failures.append(f"{path.name}: no output")
        if path.name not in PLOTLESS and not [o for o in outputs if "image/png" in o.get("data", {})]:
            failures.append(f"{path.name}: no figure was displayed")
        if copy.stat().st_size >= MAX_BYTES:
            failures.append(f"{path.name}: {copy.stat().st_size} bytes once executed")
    assert not failures, "\n\n".join(failures)


def _code(name: str) -> str:
    nb = nbformat.read(next(p for p in NOTEBOOKS if p.name == name), as_version=4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_the_study_notebook_teaches_the_plan_and_sizes_that_can_show_a_difference():
    """Issue 53, item 9: notebook 02 built its settings with ``dataclasses.replace(PRESETS[...])`` and set JAX up
    through ``compare.distributed.configure_jax`` where the docs teach ``Plan.make``, and reported five contenders
    on 5 seeds, where no pair can be shown to differ (10 pairs need 9): it makes its plan with ``Plan.make``,
    passes it to ``study``, and reports on enough seeds for its table's pairs."""
    from mxopt_jax.compare import Plan, stats

    code = _code("02_training_comparison.ipynb")
    assert "configure_jax" not in code and "dataclasses" not in code and "PRESETS" not in code
    tree = ast.parse("\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))))
    calls = {
        ast.unparse(node.func): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("compare.Plan.make", "compare.study")
    }
    make, run = calls["compare.Plan.make"], calls["compare.study"]
    plan = Plan.make(
        *[ast.literal_eval(a) for a in make.args], **{k.arg: ast.literal_eval(k.value) for k in make.keywords}
    )
    assert ast.unparse(run.args[2]) == "plan"
    contenders = len(run.args[1].elts)
    assert contenders == 5
    assert len(plan.confirm_seeds) >= stats.min_seeds(contenders * (contenders - 1) // 2)


def test_the_study_notebook_is_committed_as_the_code_runs_now():
    """Issue 53, item 9: the committed notebook 02 showed a report the code no longer writes: its outputs are the
    current code's (the study's page places each table's picture beside it), on the notebook's sizes (no power
    warning), and name no absolute path of the machine that ran it."""
    import re
    import tempfile

    path = next(p for p in NOTEBOOKS if p.name == "02_training_comparison.ipynb")
    nb = nbformat.read(path, as_version=4)
    out = "\n".join(
        str(o.get("text", "")) + "".join(str(v) for k, v in o.get("data", {}).items() if k != "image/png")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    assert "alt='results_digits_flax.png'" in out and "<div class='beside'>" in out
    assert "12 report seeds" in out and "no pair of this table can be shown to differ" not in out
    for root in (tempfile.gettempdir(), str(Path.home()), str(path.parents[1])):
        assert root not in out, root
    assert not re.search(r"(?<![\w.])/(?:tmp|home|root|Users|var/folders)/", out)
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))
