"""The README runs: every ``python`` block executes (with the small stand-ins a snippet assumes, named here),
every ``mxopt-jax`` command in it parses with the command line's own parser (and a study's settings make a
plan), the two set-up commands are there verbatim, and the optimizer table is the optimizer table."""

from __future__ import annotations

import contextlib
import inspect
import io
import pathlib
import re
import shlex
import tomllib
import warnings

import jax
import jax.numpy as jnp
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)

# The two set-up commands, verbatim (CI's .ci/run runs the second; both are the README's promise to a newcomer).
MAIN_JOB = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[study]' && .venv/bin/mxopt-jax compare"
TESTS = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python -m pytest -q -n 2"


def _block(key: str) -> str:
    found = [b for b in BLOCKS if key in b]
    assert len(found) == 1, (key, len(found))
    return found[0]


def _standins(i: int) -> dict:
    """What block ``i`` takes from the reader's own code."""
    import optax

    import mxopt_jax

    ns: dict = {"jax": jax, "jnp": jnp, "optax": optax, "mxopt_jax": mxopt_jax}
    if "updater(0, grad, weight)" in BLOCKS[i]:
        ns.update(grad=jnp.full((3,), 0.1), weight=jnp.ones((3,)))
    return ns


def test_the_flax_block_runs_as_shown():
    """The Flax block is whole: it runs in an empty namespace (no model, params or loss assumed)."""
    ns: dict = {}
    exec(compile(_block("TrainState.create"), "README.md (Flax)", "exec"), ns)
    assert int(ns["state"].step) == 1


# Blocks run by other tests (or by the tests below, which need more than a namespace), and where.
ELSEWHERE = {
    "load_trainer(": "tests/facade/test_coming_from_mxnet.py runs the resume lines on real MXNet checkpoints",
    "compare.study(": "below: its calls checked in the default run, the block run on a tiny problem under slow",
}

# The uses the README shows, each by a line its block must have.
USES = {
    "optax chain with clipping, under jit": ("optax.chain(", "optax.clip_by_global_norm(", "@jax.jit"),
    "Flax": ("TrainState.create",),
    "the MXNet-style facade": ("mxopt_jax.create(", "get_updater("),
    "resuming an MXNet checkpoint": ("mxnet_format.load_trainer(",),
    "a study from Python": ("compare.study(", "compare.contender("),
}


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_readme_python_block_runs(i):
    code = BLOCKS[i]
    covered = [why for key, why in ELSEWHERE.items() if key in code]
    if covered:
        assert len(covered) == 1
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, f"README.md block {i}", "exec"), _standins(i))


def test_every_use_has_its_block_and_every_block_is_run():
    for use, keys in USES.items():
        assert any(all(k in b for k in keys) for b in BLOCKS), f"the README shows no block for {use}"
    for key in ELSEWHERE:
        assert sum(key in b for b in BLOCKS) == 1, key


# ---------------------------------------------------------------------------------------------- the study block
_TINY = 'compare.PROBLEMS["logreg"]()'


class _Checked(Exception):
    """Raised by the stand-in of ``compare.study`` once the call is checked (nothing trained)."""


def test_readme_study_block_calls_the_api_as_it_is(monkeypatch):
    """The study block's calls, checked without training: its problem is built in, its contenders resolve, its
    settings make a plan and the call binds ``study()``'s signature (the block runs whole under slow)."""
    from mxopt_jax import compare
    from mxopt_jax.compare.contenders import resolve
    from mxopt_jax.compare.plan import SETTINGS, Plan

    real = compare.study
    seen: list = []

    def checked(problems, contenders=None, plan=None, **kwargs):
        inspect.signature(real).bind(problems, contenders, plan, **kwargs)
        assert isinstance(problems, compare.Problem)
        Plan.make(**{k: v for k, v in kwargs.items() if k in SETTINGS})
        seen.append([c.name for c in resolve(contenders)])
        raise _Checked

    code = _block("compare.study(")
    assert _TINY in code
    monkeypatch.setattr(compare, "study", checked)
    with pytest.raises(_Checked):
        exec(compile(code, "README.md (study block)", "exec"), {})
    assert seen == [["adam", "ftml", "optax.adam", "optax.lion"]]


def test_the_readme_study_can_show_a_difference(monkeypatch):
    """Issue 53, item 9: the block reported four contenders on 3 seeds, where no pair of a table can be shown to
    differ (6 pairs under Holm need 8 report seeds; its own report said so): it reports on enough seeds for its
    table's pairs to be separable."""
    from mxopt_jax import compare
    from mxopt_jax.compare import stats
    from mxopt_jax.compare.contenders import resolve
    from mxopt_jax.compare.plan import SETTINGS, Plan

    seen: list = []

    def checked(problems, contenders=None, plan=None, **kwargs):
        settings = {k: v for k, v in kwargs.items() if k in SETTINGS}
        seen.append((len(resolve(contenders)), plan if isinstance(plan, Plan) else Plan.make(**settings)))
        raise _Checked

    monkeypatch.setattr(compare, "study", checked)
    with pytest.raises(_Checked):
        exec(compile(_block("compare.study("), "README.md (study block)", "exec"), {})
    ((contenders, plan),) = seen
    pairs = contenders * (contenders - 1) // 2
    assert len(plan.confirm_seeds) >= stats.min_seeds(pairs), (
        len(plan.confirm_seeds),
        stats.min_seeds(pairs),
    )


@pytest.mark.slow
def test_readme_study_block_runs_on_a_tiny_problem():
    """The whole block (a study, its report, its frames), on the tests' tiny problem instead of logreg."""
    from tiny_problems import mlp_problem

    code = _block("compare.study(").replace(_TINY, "_tiny()")
    ns: dict = {"_tiny": lambda: mlp_problem(steps=10, eval_every=5)}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(code, "README.md (study block)", "exec"), ns)
    assert "optax.lion" in out.getvalue() and "== tiny" in out.getvalue()
    runs, summary = ns["runs"], ns["summary"]
    assert set(runs["contender"]) == {"adam", "ftml", "optax.adam", "optax.lion"} and len(summary) > 0


# ---------------------------------------------------------------------------------------------- shell commands
def code_lines(text: str) -> list[str]:
    """The command lines of the README's code: the lines of its indented code blocks and of its
    ``sh``/``bash`` fences (``\\`` continuations joined)."""
    lines: list[str] = []
    for block in re.findall(r"```(?:sh|bash|shell|console)\n(.*?)```", text, flags=re.S):
        lines += block.replace("\\\n", " ").splitlines()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    lines += [ln[4:] for ln in prose.splitlines() if ln.startswith("    ") and not ln.startswith("    *")]
    return [ln.strip() for ln in lines if ln.strip()]


def shell_lines(text: str) -> list[str]:
    """Every command line of the README (:func:`code_lines`) and the inline code spans that start with
    ``mxopt-jax``."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    return code_lines(text) + [ln.strip() for ln in re.findall(r"`(mxopt-jax [^`]*)`", prose) if ln.strip()]


def mxopt_commands(text: str) -> list[list[str]]:
    """The arguments of every ``mxopt-jax`` command in the README, once each (a ``.venv/bin/`` prefix, ``&&``
    chains and trailing ``# comments`` taken apart)."""
    out = []
    for line in shell_lines(text):
        for part in line.split("&&"):
            argv = shlex.split(part, comments=True)
            if argv and pathlib.PurePosixPath(argv[0]).name == "mxopt-jax" and argv[1:] not in out:
                out.append(argv[1:])
    return out


def old_spellings(argv: list[str]) -> list[str]:
    """The arguments of ``argv`` spelt the old way (each kept working with a notice, for users' scripts)."""
    from mxopt_jax.compare.cli import DEPRECATED

    return [a for a in argv if a.split("=")[0] in {*DEPRECATED, "--compare-presets"}]


COMMANDS = mxopt_commands(README)


def test_the_set_up_commands_are_there_verbatim():
    lines = shell_lines(README)
    assert MAIN_JOB in lines and TESTS in lines
    assert README.index(TESTS) < README.index("## Supported versions")  # "the test command above"


def unreachable_commands(text: str) -> list[str]:
    """The command lines of ``text``'s code blocks that call ``mxopt-jax`` by a name the README's set-up does not
    make reachable: it installs into ``.venv`` and puts nothing on the PATH, so a bare ``mxopt-jax`` is
    "command not found" (the inline mentions in prose name the program, they are not commands)."""
    bad = []
    for line in code_lines(text):
        for part in line.split("&&"):
            argv = shlex.split(part, comments=True)
            if (
                argv
                and pathlib.PurePosixPath(argv[0]).name == "mxopt-jax"
                and argv[0] != ".venv/bin/mxopt-jax"
            ):
                bad.append(part.strip())
    return bad


def test_the_readme_commands_run_after_its_set_up():
    assert not unreachable_commands(README), unreachable_commands(README)
    assert unreachable_commands("```sh\nmxopt-jax report my_study  # x\n```\n") == [
        "mxopt-jax report my_study  # x"
    ]


def test_the_readme_installs_extras_that_exist():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = re.findall(r"-e '\.\[(\w+)\]'", README)
    assert {"study", "test", "docs"} <= set(named)
    assert set(named) <= set(extras), set(named) - set(extras)


def test_the_readme_shows_each_verb():
    assert {argv[0] for argv in COMMANDS} >= {"compare", "report", "agree", "tour"}


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_every_mxopt_jax_command_of_the_readme_parses(argv):
    """Each command parses with the command line's parser (nothing runs), in today's spellings, and the study
    settings it gives make a plan (so a combination the study refuses is caught here too)."""
    from mxopt_jax.compare.cli import build_parser
    from mxopt_jax.compare.plan import SETTINGS, Plan

    old = old_spellings(argv)
    assert not old, f"the README uses the old spelling {old}"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"mxopt-jax {shlex.join(argv)}: refused ({e.code}): {err.getvalue().strip()}")
    if args.command == "compare":
        Plan.make(**{k: getattr(args, k) for k in SETTINGS if getattr(args, k, None) is not None})


def test_a_wrong_command_would_be_caught():
    """The checks above can fail: a misspelt flag is refused by the parser, an old spelling is named."""
    from mxopt_jax.compare.cli import build_parser

    argv = mxopt_commands("    .venv/bin/mxopt-jax compare --problemz logreg  # a comment\n")
    assert argv == [["compare", "--problemz", "logreg"]]
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        build_parser().parse_args(argv[0])
    assert old_spellings(["compare", "--optimizers=adam", "--batching-check", "all"]) == [
        "--optimizers=adam",
        "--batching-check",
    ]


# ---------------------------------------------------------------------------------------------- the table
def test_the_optimizer_table_is_the_registry():
    """Every optimizer of the table, MXNet's class name -> the constructor, in the row of its family; no other."""
    from mxopt_jax._src import registry

    rows = dict(re.findall(r"^\| ([\w -]+) \| (`.*`) \|$", README, flags=re.M))
    pairs = {
        (family, mx, ours)
        for family, row in rows.items()
        for mx, ours in re.findall(r"`(?:contrib\.)?(\w+)`(?: \(1\.x\))? → `(\w+)`", row)
    }
    want = {(e.family.removesuffix(" family"), e.class_name, e.constructor.__name__) for e in registry.TABLE}
    assert pairs == want, (pairs - want, want - pairs)


# ---------------------------------------------------------------------------------------------- links
def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (``myst_heading_anchors``) make it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def broken_links(page: pathlib.Path) -> list[str]:
    """The relative links of a Markdown page whose file, or whose ``#anchor`` in it, does not exist."""
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            bad.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(), flags=re.M)
            if anchor not in {slug(h) for h in headings}:
                bad.append(target)
    return bad


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "docs/architecture.md"])
def test_links_of_the_front_pages_resolve(page):
    assert not broken_links(ROOT / page), broken_links(ROOT / page)


def test_a_broken_link_would_be_caught(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Run times\n")
    page = tmp_path / "p.md"
    page.write_text("[ok](a.md#run-times) [no](a.md#nowhere) [gone](b.md) [web](https://example.org)")
    assert broken_links(page) == ["a.md#nowhere", "b.md"]
    assert slug("6. Resuming an MXNet checkpoint") == "6-resuming-an-mxnet-checkpoint"
