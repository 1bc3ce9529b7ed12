"""Smoke test of the benchmark harness (benchmarks/): it runs and produces sane output.

No timing assertions: only that the harness runs in ``--quick`` mode, that every number it reports is
finite, that the markdown tables are well formed, and that the bytes-per-step model is right.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mxopt_jax

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _load(name: str):
    """Import a benchmarks/ module under a private name (its siblings are found through sys.path)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_workloads_need_no_jax_and_match_resnet50():
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import workloads as W, bench_engine;"
        "assert 'jax' not in sys.modules, 'workloads/bench_engine must not import jax';"
        "b = W.get('B'); print(b.num_leaves, b.num_params, W.get('C').num_leaves, W.get('D').touched_rows)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["161", "25557032", "2000", "10000"]


def test_bytes_per_step_model():
    run = _load("run")
    params = {"w": jnp.zeros((1000,), jnp.float32), "b": jnp.zeros((10, 10), jnp.float32)}
    n = 1100

    def bpp(tx):
        return run.model_for(params, tx.init(params))["bytes_per_param"]

    # read g + read/write w + read/write each state array (scalar counters add a few bytes in total)
    assert bpp(mxopt_jax.sgd(learning_rate=0.1)) == pytest.approx(12, abs=0.05)
    assert bpp(mxopt_jax.sgd(learning_rate=0.1, momentum=0.9)) == pytest.approx(20, abs=0.05)
    assert bpp(mxopt_jax.adam()) == pytest.approx(28, abs=0.05)
    assert bpp(mxopt_jax.ftml()) == pytest.approx(36, abs=0.05)
    # the traffic formula itself, and the lazy (row-sparse) variant
    assert run.traffic_bytes(4 * n, 4 * n, 8 * n) == 28 * n
    assert run.traffic_bytes(4 * n, 44, 8 * n, fraction=0.01) == pytest.approx(0.01 * 24 * n + 44)


def _check_table(lines: list[str]) -> int:
    """Every markdown table has a header, a separator and rows with the header's column count."""
    tables, i = 0, 0
    while i < len(lines):
        if lines[i].startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            ncol = block[0].count("|")
            assert len(block) >= 3, block
            assert set(block[1].replace("|", "")) == {"-"}, block[1]
            for row in block:
                assert row.endswith("|") and row.count("|") == ncol, row
            tables += 1
        i += 1
    return tables


@pytest.mark.slow  # the whole harness in a subprocess (20 s); the default run checks its models above
def test_quick_run(tmp_path):
    out_md, out_png, out_json = tmp_path / "R.md", tmp_path / "r.png", tmp_path / "r.json"
    cmd = [sys.executable, str(BENCH / "run.py"), "--quick", "--workloads", "C,D"]
    cmd += ["--optimizers", "sgd,adam", "--rounds", "1", "--headline-rounds", "1"]
    cmd += ["--facade-first-budget", "2"]
    cmd += ["--out", str(out_md), "--plot", str(out_png), "--json", str(out_json)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out_json.read_text())

    bw = res["bandwidth"]["reference_gbps"]
    assert math.isfinite(bw) and bw > 0
    groups = {(g["workload"], g["optimizer"]): g for g in res["groups"]}
    assert set(groups) == {("C", "sgd"), ("C", "adam"), ("D", "adam")}  # D times sgd_mom and adam only
    for key, g in groups.items():
        r = g["results"]
        must = ("mxopt_dense", "optax_dense", "jax_lazy_ref") if key[0] == "D" else ("mxopt", "optax")
        for label in must:
            rec = r[label]
            assert "error" not in rec["setup"], (key, label, rec["setup"])
            for field in ("ms", "limit_ms", "pct_roofline"):
                assert math.isfinite(rec[field]) and rec[field] > 0, (key, label, field, rec.get(field))
            assert math.isfinite(rec["setup"]["first_call_s"]) and rec["setup"]["first_call_s"] > 0
            if label != "optax" and label != "optax_dense":
                assert np.isfinite(rec["vs_optax"]) and rec["vs_optax"] > 0
        for label, rec in r.items():  # every contender either ran or says why not
            assert rec.get("ms") is not None or rec["setup"].get("error"), (key, label)
    assert groups[("C", "adam")]["results"]["mxopt"]["setup"]["bytes_per_param"] == pytest.approx(28, abs=0.1)
    assert groups[("C", "sgd")]["results"]["mxopt"]["setup"]["bytes_per_param"] == pytest.approx(12, abs=0.1)
    assert groups[("D", "adam")]["results"]["mxopt_lazy"]["ms"] > 0  # the RowSparse + lazy_update path

    md = out_md.read_text()
    for heading in ("## Memory bandwidth", "## Workload C", "## Workload D", "Reference bandwidth"):
        assert heading in md
    assert _check_table(md.splitlines()) >= 4
    assert out_png.stat().st_size > 1000


@pytest.mark.skipif(
    jax.__version_info__ < (0, 5),
    reason="benchmarks/passes.py reads the compiled HLO of newer XLA (the evidence was recorded on JAX 0.10.2); "
    "on JAX 0.4.35 it finds 12 B/param moved for Adam",
)
def test_pass_count_evidence_script():
    """benchmarks/passes.py (the HLO evidence in benchmarks/ANALYSIS.md) parses the compiled program: Adam's
    model is 28 B/param, the compiled program moves at least that, and every kernel it finds is counted."""
    passes = _load("passes")
    n = 2**12
    adam = passes.analyse(mxopt_jax.adam(learning_rate=0.01), n)
    assert adam["model"] == 28 and adam["fusions"] >= 1
    assert adam["hlo"] >= 28 and 0 < adam["ceiling"] <= 1
    sgd = passes.analyse(mxopt_jax.sgd(learning_rate=0.1), n)
    assert sgd["model"] == 12 and sgd["hlo"] >= 12
    hlo = "\n".join(
        [
            "HloModule m",
            "",
            "ENTRY %main (a: f32[8], b: f32[8]) -> f32[8] {",
            "  %a = f32[8]{0} parameter(0)",
            "  %b = f32[8]{0} parameter(1)",
            "  %f = f32[8]{0} fusion(%a, %b), kind=kLoop, calls=%c",
            "  ROOT %g = f32[8]{0} fusion(%f, %a), kind=kLoop, calls=%d",
            "}",
        ]
    )
    assert passes._kernels(hlo, 8) == [("fusion f", 96), ("fusion g", 96)]  # 3 arrays of 8 float32 each
