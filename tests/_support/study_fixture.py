"""The records of a small study, as numbers, for ``tests/app/test_study.py``: made once with the
engine as it was before the studies ran as one batch (``tests/app/data/study_records.json``), and again by the
test, which holds them equal.

The study: the tiny MLP (``tiny_problems.mlp_problem``), two contenders in one program (``sgd`` and ``ccsgd``,
one ``lax.switch``), a 3-point grid (the quick preset's spacing) extended once past its edge, 2 selection and 3
confirmation seeds, two independent studies, the batching check of every contender: the study of
``test_independent_studies_run_through_the_same_programs``, which holds its numbers to the fixture (no
compile of its own). Timings (``compile_s``,
``run_s``) are left out; every other number of every record, and every batching figure, is kept.

Regenerate (only when a change of the numbers is by design; say so in the commit):
``PYTHONPATH=tests/_support python tests/_support/study_fixture.py``.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import jax
import numpy as np

FIXTURE = pathlib.Path(__file__).parents[1] / "app" / "data" / "study_records.json"
ARRAYS = ("lrs", "seeds", "eval_steps", "train_loss", "val", "test", "steps_to_target", "diverged_at")


def run_study(progress: Any = False) -> Any:
    """The small study (``tests/app/test_study.py``'s independent studies)."""
    import dataclasses

    from tiny_problems import mlp_problem

    from mxopt_jax.compare import protocol
    from mxopt_jax.compare.study import study

    preset = dataclasses.replace(protocol.PRESETS["quick"], grid_points=3, seeds=2, confirm_seeds=3)
    return study(
        mlp_problem(), ["sgd", "ccsgd"], preset, studies=2, extend=1, check_batching="all", progress=progress
    )


def numbers(s: Any) -> dict[str, Any]:
    """A study's numbers: ``{"records": {key: {field: value}}, "batching": {...}, "jax": version}``
    (JSON-ready; timings left out). The records are those of the fixture's roles: every selection run, and the
    runs the tables show (``"confirmation"``: the chosen configuration's report runs; ``"default"``: the default
    configuration's), :func:`mxopt_jax.compare.result.shown`; the report runs at the other configurations,
    which the engine did not make when the fixture was written, are not in it."""
    from mxopt_jax.compare.result import shown

    records: dict[str, Any] = {}
    for sub in s.studies():
        by = {c.name: c for c in sub.contenders}
        for p in sub.problems:
            for name, roles in sub.records.get(p.name, {}).items():
                sel = sub.tuned[p.name][name]
                made = [
                    roles["selection"],
                    shown(roles, "tuned", by[name], sel),
                    shown(roles, "one-shot", by[name], sel),
                ]
                for r in made:
                    d = r.to_dict()
                    key = f"{r.problem}/{r.contender}/{r.role}/study{r.study}"
                    records[key] = {k: d[k] for k in (*ARRAYS, "hparams", "program", "devices")}
    batching = {f"{p}/{c}": v for p, per in sorted(s.batching.items()) for c, v in sorted(per.items())}
    return {"jax": jax.__version__, "records": records, "batching": batching}


def compare(doc: dict[str, Any], ref: dict[str, Any]) -> list[str]:
    """Where ``doc`` differs from ``ref`` (bit for bit: NaN equals NaN), as lines."""
    out = []
    if sorted(doc["records"]) != sorted(ref["records"]):
        out.append(f"record keys differ: {sorted(doc['records'])} vs {sorted(ref['records'])}")
    for key in sorted(set(doc["records"]) & set(ref["records"])):
        a, b = doc["records"][key], ref["records"][key]
        for field in sorted(set(a) | set(b)):
            x, y = a.get(field), b.get(field)
            if field in ARRAYS:
                xa = np.asarray(_nan(x), np.float64)
                ya = np.asarray(_nan(y), np.float64)
                if xa.shape != ya.shape or not np.array_equal(xa, ya, equal_nan=True):
                    out.append(f"{key}.{field}: {xa.ravel()[:6]} vs {ya.ravel()[:6]}")
            elif x != y:
                out.append(f"{key}.{field}: {x!r} vs {y!r}")
    if doc["batching"] != ref["batching"]:
        out.append(f"batching: {doc['batching']} vs {ref['batching']}")
    return out


def _nan(v: Any) -> Any:
    if isinstance(v, list):
        return [_nan(x) for x in v]
    return np.nan if v is None else v


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(numbers(run_study()), sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}")
