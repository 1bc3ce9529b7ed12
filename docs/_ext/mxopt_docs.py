"""Sphinx extension: the optimizer reference, generated from the optimizer table at build time.

Nothing here is a hand-kept list. Every page of ``reference/optimizers/`` is written from
``mxopt_jax._src.registry.TABLE`` when the build starts: the constructor's documentation (equations, paper,
arguments, example) through autodoc, MXNet's name and both APIs' defaults from ``inspect.signature``, the
state ``NamedTuple`` with its field comments read from the source, the facade class, and what composes with
the optimizer (row-sparse gradients from ``rule.sparse``, flat buffers from ``rule.no_flat``, ``axis_name``
from the signature). The notebooks are copied in from ``notebooks/`` so that they render with their stored
outputs. When the build ends, every public name (``mxopt_jax.__all__`` and the public modules' ``__all__``)
must have been documented, or the build warns (an error under ``-W``).

:func:`write_pages` and :func:`missing_names` need no Sphinx (the tests call them).
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import textwrap
import types
from collections.abc import Iterable

DOCS = pathlib.Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
OPTIMIZER_DIR = "reference/optimizers"  # generated, relative to docs/ (ignored by git)
NOTEBOOK_DIR = "notebooks"  # copied from the repository's notebooks/ (ignored by git)
BENCHMARK_DIR = "benchmarks"  # the benchmark's write-ups, copied from benchmarks/ (ignored by git)
BENCHMARK_PAGES = ("RESULTS.md", "RESULTS_ONEPASS.md", "ANALYSIS.md", "FUSION.md", "README.md")
PUBLIC_MODULES = ("facade", "lr_scheduler", "multi_tensor", "mxnet_format", "sparse")

GENERIC_FIELDS = {
    "count": "updates applied so far (int32 scalar, 0 after ``init``); the rule's step ``t`` is "
    "``begin_num_update + count + 1``",
    "master": "float32 master copies of float16/bfloat16 parameters under ``multi_precision=True``, "
    "else ``None``",
    "key": "the ``jax.random`` key, split at every update",
}

SPARSE = {
    "standard": "standard: a {class}`~mxopt_jax.sparse.RowSparse` gradient is densified and the dense rule "
    "runs (identical to passing the dense gradient).",
    "lazy_update": "lazy with ``lazy_update=True``: only the listed rows of the weight and of every state "
    "entry change, with the dense formula; standard (densified) otherwise.",
    "rows": "always lazy (MXNet's sparse kernel): only the listed rows change; needs ``wd == 0`` for a "
    "row-sparse gradient (``ValueError`` otherwise).",
}


# --------------------------------------------------------------------------------------------- helpers
def _fmt(value: object) -> str:
    if value is inspect.Parameter.empty:
        return "(required)"
    return f"`{value!r}`"


def _sig_text(params: Iterable[inspect.Parameter]) -> str:
    """``a=1, b=2, *, c=3`` without annotations (readable in a heading)."""
    out, star = [], False
    for p in params:
        if p.kind == p.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        out.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return ", ".join(out)


def field_comments(cls: type) -> dict[str, str]:
    """``field -> comment`` for the ``name: type  # comment`` lines of a ``NamedTuple`` class's source."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    out = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = lines[node.lineno - 1]
            if "#" in line:
                out[node.target.id] = line.split("#", 1)[1].strip()
    return out


def _myst(text: str) -> str:
    """reST roles in a docstring as MyST roles, unqualified names resolved in ``mxopt_jax``."""
    return re.sub(
        r":(\w+):`([^`]+)`",
        lambda m: f"{{{m.group(1)}}}`{m.group(2) if '.' in m.group(2) else '~mxopt_jax.' + m.group(2)}`",
        text,
    )


def _state_block(cls: type, first: bool) -> list[str]:
    comments = field_comments(cls)
    doc = _myst((inspect.getdoc(cls) or "").strip())
    lines = [f"````{{py:class}} mxopt_jax.{cls.__name__}"]
    if not first:
        lines.append(":no-index:")
    lines += [
        "",
        f"{doc} A ``NamedTuple``; every entry but ``count`` (and ``key``) has the parameters' tree structure.",
        "",
    ]
    for name in cls._fields:
        text = _myst(comments.get(name) or GENERIC_FIELDS.get(name, ""))
        lines += [f"```{{py:attribute}} {name}", *([":no-index:"] if not first else []), "", text, "```", ""]
    lines.append("````")
    return lines


# ----------------------------------------------------------------------------------------------- pages
def optimizer_page(entry, first_state: bool) -> str:
    """The MyST page of one optimizer-table entry."""
    import mxopt_jax

    rule = entry.rule
    fn = entry.constructor
    cls = getattr(mxopt_jax, entry.class_name)
    fsig = inspect.signature(fn)
    csig = inspect.signature(cls)
    title = (inspect.getdoc(fn) or "").splitlines()[0].split("(``")[0].split(" (")[0].rstrip(" ,:")
    title = f": {title}" if title and title != entry.class_name else ""
    state = rule.state_cls
    fields = ", ".join(f"``{f}``" for f in state._fields)
    own = [p for p in fsig.parameters.values() if p.name not in _base_names()]

    lines = [
        f"(optimizer-{entry.name})=",
        f"# `{fn.__name__}` / `{entry.class_name}`{title}",
        "",
        "```{list-table}",
        ":stub-columns: 1",
        "",
        f"* - functional constructor\n  - {{func}}`mxopt_jax.{fn.__name__}` (an ``optax.GradientTransformation``)",
        f"* - facade class\n  - {{class}}`mxopt_jax.{entry.class_name}`, or ``mxopt_jax.create({entry.name!r})``",
        f"* - MXNet\n  - ``{entry.mxnet}``, registry name ``{entry.name!r}``",
        f"* - state\n  - {{class}}`mxopt_jax.{state.__name__}`: {fields}",
        f"* - family\n  - {entry.family}",
        "```",
        "",
        "## Update rule, paper and arguments",
        "",
        "```{eval-rst}",
        f".. autofunction:: mxopt_jax.{fn.__name__}",
        "```",
        "",
        "## MXNet's name and defaults",
        "",
        f"The functional constructor takes MXNet's arguments with MXNet's defaults; the facade class "
        f"``{entry.class_name}`` takes the same, plus MXNet's facade-only ``param_idx2name``, ``sym`` and "
        "``param_dict``. The optimizer's own arguments:",
        "",
        "| argument | default | facade default |",
        "|---|---|---|",
    ]
    for p in own:
        cd = csig.parameters[p.name].default if p.name in csig.parameters else "—"
        lines.append(f"| ``{p.name}`` | {_fmt(p.default)} | {_fmt(cd) if cd != '—' else cd} |")
    differ = [
        (n, fsig.parameters[n].default, csig.parameters[n].default)
        for n in _base_names()
        if n in fsig.parameters
        and n in csig.parameters
        and fsig.parameters[n].default != csig.parameters[n].default
    ]
    lines += [
        "",
        "The common arguments (``wd``, ``rescale_grad``, ``clip_gradient``, ``lr_scheduler``, "
        "``multi_precision``, ``lr_mult``, ``wd_mult``, ``begin_num_update``, ``aggregate_num``, "
        "``use_fused_step``) are described in {ref}`common-arguments`"
        + (
            "; this class's facade defaults differ from the functional ones for "
            + ", ".join(f"``{n}`` (``{c!r}``, functional ``{f!r}``)" for n, f, c in differ)
            + " (MXNet's class defaults)."
            if differ
            else "."
        ),
    ]
    if entry.deprecated:
        olds = ", ".join(f"``{o}`` (use ``{n}``)" for o, n in entry.deprecated.items())
        lines += ["", f"MXNet's renamed keywords are refused by the facade, as MXNet does: {olds}."]
    if entry.deprecation:
        lines += ["", f"Deprecated: {entry.deprecation} (a ``DeprecationWarning`` on construction)."]

    lines += ["", "## State", "", *_state_block(state, first_state), ""]
    if rule.fp32_state:
        lines += ["MXNet keeps this optimizer's state in float32 whatever the parameters' dtype.", ""]

    flat = (
        "yes: {class}`~mxopt_jax.multi_tensor.FlatParams` and ``aggregate_num`` run it on one buffer per "
        "dtype group, per-parameter semantics intact"
        if rule.no_flat is None
        else f"no ({rule.no_flat}); a ``FlatParams`` or ``aggregate_num > 1`` raises ``ValueError``"
    )
    axis = (
        "yes: ``axis_name`` sums its whole-tensor norms over the named mesh axes inside ``jax.shard_map`` / "
        "``jax.pmap`` (functional API only; the facade refuses it)"
        if "axis_name" in fsig.parameters
        else "not needed (no whole-tensor reductions): data-parallel and sharded use work as they are"
    )
    params_note = (
        "optional while ``wd == 0`` (the rule reads the weight only for weight decay)"
        if rule.weight_only_for_decay
        else "required (``ValueError`` otherwise)"
    )
    hypers = ["learning_rate", "wd", "rescale_grad", "clip_gradient", *rule.hyper]
    hypers = [h for h in hypers if h in fsig.parameters]
    lines += [
        "## What composes",
        "",
        "```{list-table}",
        ":stub-columns: 1",
        "",
        f"* - row-sparse gradients\n  - {SPARSE[rule.sparse]}",
        f"* - multi-tensor (flat) path\n  - {flat}",
        f"* - sharded parameters\n  - {axis}",
        f"* - ``params`` in ``update``\n  - {params_note}",
        "* - ``optax.inject_hyperparams``\n  - float hyperparameters "
        + ", ".join(f"``{h}``" for h in hypers)
        + " may be Python floats, JAX scalars or schedules; changing them never recompiles",
        "* - optax wrappers, Flax, checkpoints\n  - ``optax.chain``, ``masked``, ``partition``, "
        "``MultiSteps``, ``apply_if_finite``, a Flax ``TrainState``, orbax and ``flax.serialization`` "
        "({doc}`/interop`)",
    ]
    if rule.uses_key:
        lines.append(
            "* - randomness\n  - the state carries a ``jax.random`` key (``seed=``); inside "
            "``jax.shard_map`` every shard draws the same noise unless the key is folded with the axis index"
        )
    lines += ["```", "", "## Facade class", ""]
    extra = f" {entry.extra_doc}" if entry.extra_doc else ""
    lines += [
        f"```{{py:class}} mxopt_jax.{entry.class_name}({_sig_text(csig.parameters.values())})",
        "",
        f"MXNet's ``{entry.mxnet}``, registered as ``{entry.name!r}`` (``mxopt_jax.create({entry.name!r})``), a "
        f"{{class}}`~mxopt_jax.Optimizer` on the update rule of {{func}}`mxopt_jax.{fn.__name__}` (the same "
        "code path, checked against the same MXNet trajectories). ``use_fused_step`` defaults to "
        f"``{entry.fused}`` and ``aggregate_num`` to ``{entry.aggregate}``, MXNet's class defaults.{extra}",
        "```",
        "",
    ]
    return "\n".join(lines)


def _base_names() -> tuple[str, ...]:
    from mxopt_jax._src.signature import BASE_KEYWORDS

    return tuple(k.name for k in BASE_KEYWORDS)


def index_page() -> str:
    """The optimizer table as a page, with a hidden toctree of every optimizer page."""
    import mxopt_jax
    from mxopt_jax._src.registry import BY_NAME, FAMILIES, TABLE

    lines = [
        "# Optimizers",
        "",
        "Every optimizer of MXNet's ``mxnet.optimizer`` module, in two forms that run the same update rule: a "
        "functional constructor returning an ``optax.GradientTransformation``, and a facade class with "
        "MXNet's name (see {doc}`/facade_guide`). This page and the pages below are generated from the optimizer "
        "table (``mxopt_jax._src.registry.TABLE``) when the documentation is built.",
    ]
    for family, names in FAMILIES.items():
        lines += [
            "",
            f"## {family[0].upper()}{family[1:]}",
            "",
            "| MXNet | functional | facade | state |",
            "|---|---|---|---|",
        ]
        for e in (BY_NAME[n] for n in names):
            st = e.rule.state_cls.__name__
            lines.append(
                f"| {{ref}}`{e.mxnet} <optimizer-{e.name}>` | {{func}}`~mxopt_jax.{e.constructor.__name__}` "
                f"| {{class}}`~mxopt_jax.{e.class_name}` | {{class}}`~mxopt_jax.{st}` |"
            )
    lines += [
        "",
        "``mxopt_jax.OPTIMIZERS`` maps each MXNet registry name to its constructor:",
        "",
        "```{eval-rst}",
        ".. autodata:: mxopt_jax.OPTIMIZERS",
        "   :no-value:",
        "```",
        "",
        "``mxopt_jax.FAMILIES`` groups the registry names by family (the comparison app draws each together):",
        "",
        "```{eval-rst}",
        ".. autodata:: mxopt_jax.FAMILIES",
        "```",
        "",
        "``mxopt_jax.ALIASES`` maps a constructor's name to its registry name where the two differ "
        "(``mxopt_jax.create`` and the study take either):",
        "",
        "```{eval-rst}",
        ".. autodata:: mxopt_jax.ALIASES",
        "```",
        "",
        "(common-arguments)=",
        "## Common arguments",
        "",
        "Every constructor and facade class takes the keywords of MXNet's ``Optimizer`` base class "
        "(keyword-only in the functional API):",
        "",
        "| argument | default | meaning |",
        "|---|---|---|",
    ]
    from mxopt_jax._src.signature import BASE_KEYWORDS

    for k in BASE_KEYWORDS:
        lines.append(f"| ``{k.name}`` | {_fmt(k.default)} | {' '.join(k.doc.split())} |")
    lines += [
        "",
        "```{toctree}",
        ":hidden:",
        "",
        *(e.name for e in TABLE),
        "```",
        "",
    ]
    assert mxopt_jax.OPTIMIZERS  # the table is importable
    return "\n".join(lines)


def write_pages(docs: pathlib.Path = DOCS) -> list[pathlib.Path]:
    """Write the optimizer pages under ``docs/reference/optimizers`` (only files whose text changed)."""
    from mxopt_jax._src.registry import TABLE

    out_dir = docs / OPTIMIZER_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = {"index": index_page()}
    seen: set[type] = set()
    for e in TABLE:
        pages[e.name] = optimizer_page(e, first_state=e.rule.state_cls not in seen)
        seen.add(e.rule.state_cls)
    written = []
    for name, text in pages.items():
        path = out_dir / f"{name}.md"
        if not path.exists() or path.read_text() != text:  # unchanged pages keep their mtime (no rebuild)
            path.write_text(text)
        written.append(path)
    for stale in set(out_dir.glob("*.md")) - set(written):
        stale.unlink()
    return written


def copy_notebooks(docs: pathlib.Path = DOCS) -> list[pathlib.Path]:
    """Copy ``notebooks/*.ipynb`` and their README (as the index, with a toctree) under ``docs/notebooks``."""
    src, dst = ROOT / "notebooks", docs / NOTEBOOK_DIR
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for nb in sorted(src.glob("*.ipynb")):
        target = dst / nb.name
        # Links from a notebook to ../docs/X.md point to X.md of this site, one level up from notebooks/.
        text = nb.read_text().replace("](../docs/", "](../")
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        out.append(target)
    readme = (src / "README.md").read_text()
    index = readme + "\n```{toctree}\n:hidden:\n\n" + "\n".join(p.stem for p in out) + "\n```\n"
    target = dst / "index.md"
    if not target.exists() or target.read_text() != index:
        target.write_text(index)
    return [*out, target]


def copy_benchmarks(docs: pathlib.Path = DOCS) -> list[pathlib.Path]:
    """Copy the benchmark's results and analysis under ``docs/benchmarks`` (their links to each other hold)."""
    dst = docs / BENCHMARK_DIR
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for name in BENCHMARK_PAGES:
        text, target = (ROOT / "benchmarks" / name).read_text(), dst / name
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        out.append(target)
    return out


def public_names() -> list[str]:
    """Every public name, fully qualified: ``mxopt_jax.X`` for ``__all__`` and each public module's."""
    import mxopt_jax

    names = [f"mxopt_jax.{n}" for n in mxopt_jax.__all__]
    for mod in PUBLIC_MODULES:
        names += [f"mxopt_jax.{mod}.{n}" for n in getattr(mxopt_jax, mod).__all__]
    return names


def _aliases(qualname: str) -> set[str]:
    """The names under which the object ``qualname`` may be documented (the same object, re-exported)."""
    import mxopt_jax

    parts = qualname.split(".")
    obj = mxopt_jax
    for p in parts[1:]:
        obj = getattr(obj, p)
    if isinstance(obj, types.ModuleType):
        return {qualname}
    out = {qualname}
    for mod in (None, *PUBLIC_MODULES):
        where = mxopt_jax if mod is None else getattr(mxopt_jax, mod)
        for n in getattr(where, "__all__", ()):
            if getattr(where, n) is obj:
                out.add(f"mxopt_jax.{n}" if mod is None else f"mxopt_jax.{mod}.{n}")
    return out


def missing_names(documented: Iterable[str]) -> list[str]:
    """Public names documented under none of their aliases (``documented``: fully qualified names)."""
    documented = set(documented)
    return [n for n in public_names() if not (_aliases(n) & documented)]


# ---------------------------------------------------------------------------------------------- sphinx
def _generate(app) -> None:
    write_pages(pathlib.Path(app.srcdir))
    copy_notebooks(pathlib.Path(app.srcdir))
    copy_benchmarks(pathlib.Path(app.srcdir))


def _common_arguments_header(app, what, name, obj, options, lines) -> None:
    """Turn the constructors' shared "Common arguments (...):" paragraph into a napoleon section."""
    for i, line in enumerate(lines):
        if line.startswith("Common arguments (MXNet's ``Optimizer`` base class"):
            lines[i] = "Keyword Args:"


def _check_names(app, env) -> None:
    from sphinx.util import logging

    documented = set(env.get_domain("py").objects)
    for name in missing_names(documented):
        logging.getLogger(__name__).warning("public name %s is not documented in the reference", name)


def setup(app) -> dict:
    app.connect("builder-inited", _generate)
    app.connect("autodoc-process-docstring", _common_arguments_header, priority=400)  # before napoleon
    app.connect("env-check-consistency", _check_names)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
