"""The study beyond one process: ``jax.distributed`` launches, the write gate, data placement.

The 2-process study (slow: it compiles) runs ``mxopt-jax compare`` as 2 processes x 2 host devices joined on
localhost with gloo collectives, as ``tests/interop/test_multihost.py`` runs the optimizers, next to the same
study in one process with 4 host devices (``tests/_support/distributed_study_script.py``): one report, by
process 0, whose records equal the one-process study's. The launch checks, the gate and the engine's placement
helpers run in this process, cheaply.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pathlib
import re
import socket
import subprocess
import sys

import distributed_study_script as ds
import jax
import numpy as np
import pytest

from mxopt_jax.compare import cli, distributed, engine
from mxopt_jax.compare.progress import StudyProgress
from mxopt_jax.compare.report import render
from mxopt_jax.compare.result import ProgramResult
from mxopt_jax.compare.serialize import read_document as read_json

SCRIPT = pathlib.Path(ds.__file__)
RTOL, ATOL = 2e-5, 1e-7  # the engine's batching tests' tolerance
TIMEOUT_S = 420


# --------------------------------------------------------------------------- launch arguments, checked locally
@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(coordinator="localhost:1234", num_processes=2, process_id=2), "process_id must be in 0..1"),
        (dict(coordinator="localhost:1234", num_processes=2, process_id=-1), "process_id must be >= 0"),
        (dict(num_processes=2, process_id=0), "a coordinator (HOST:PORT of process 0"),
        (dict(coordinator="localhost:1234", num_processes=2), "needs its process_id (0..1)"),
        (dict(coordinator="localhost", num_processes=2, process_id=0), "coordinator must be HOST:PORT"),
        (dict(coordinator="localhost:0", num_processes=2, process_id=0), "coordinator must be HOST:PORT"),
        (dict(coordinator="localhost:70000", num_processes=2, process_id=0), "coordinator must be HOST:PORT"),
        (dict(coordinator="a b:12", num_processes=2, process_id=0), "coordinator must be HOST:PORT"),
        (dict(coordinator="localhost:1234", num_processes=0, process_id=0), "num_processes must be >= 1"),
        (dict(coordinator="localhost:1234", process_id=0), "num_processes is needed"),
        (dict(process_id=1, auto=True, num_processes=1), "process_id must be in 0..0"),
    ],
)
def test_bad_launch_arguments_are_refused_locally(monkeypatch, kwargs, words):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    with pytest.raises(ValueError, match=re.escape(words)):
        distributed.check_launch(**kwargs)


def test_launch_arguments_that_start_nothing_or_something(monkeypatch):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    assert distributed.check_launch() is False  # one process: nothing to join
    assert distributed.check_launch(num_processes=1) is False
    assert distributed.check_launch(coordinator="localhost:1234", num_processes=1, process_id=0) is True
    assert distributed.check_launch("10.0.0.1:8476", 4, 3) is True
    assert distributed.check_launch("[::1]:8476", 2, 1) is True
    assert distributed.check_launch(auto=True) is True  # the cluster says the rest
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "localhost:1234")  # JAX's own variable counts
    assert distributed.check_launch(num_processes=2, process_id=1) is True
    assert distributed.parse_address("node-7.cluster:61337") == ("node-7.cluster", 61337)
    assert distributed.parse_address("[fe80::1]:1") == ("fe80::1", 1)
    with pytest.raises(TypeError, match="num_processes must be an int"):
        distributed.check_launch("localhost:1", True, 0)
    with pytest.raises(TypeError, match="coordinator must be a 'HOST:PORT' string"):
        distributed.check_launch(1234, 2, 0)  # type: ignore[arg-type]


def test_configure_jax_refuses_bad_launches_before_touching_anything(monkeypatch):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--untouched")
    for kwargs, words in [
        (dict(num_processes=2, process_id=0), "coordinator"),
        (dict(coordinator="localhost:1", num_processes=2, process_id=5), "process_id"),
        (dict(distributed="slurm"), "distributed must be None or 'auto'"),
        (dict(devices=0), "devices must be an int >= 1"),
    ]:
        with pytest.raises(ValueError, match=words):
            cli.configure_jax(cache=False, **kwargs)
    assert os.environ["XLA_FLAGS"] == "--untouched"


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            ["--num-processes", "2", "--process-id", "2", "--coordinator", "localhost:1"],
            "--process-id must be in 0..1",
        ),
        (
            ["--num-processes", "2", "--process-id", "0"],
            "compare: error: --num-processes is 2: a --coordinator",
        ),
        (["--coordinator", "localhost:1", "--process-id", "0"], "--num-processes is needed"),
        (["--num-processes", "0"], "argument --num-processes: must be >= 1, got 0"),
        (["--process-id", "-1"], "argument --process-id: must be >= 0, got -1"),
        (["--coordinator", "nohost"], "argument --coordinator: coordinator must be HOST:PORT"),
        (["--distributed", "yes"], "argument --distributed: invalid choice"),
    ],
)
def test_the_command_line_refuses_bad_launches_before_jax_starts(monkeypatch, capsys, flags, words):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)

    def started(*args, **kwargs):
        raise AssertionError("JAX was set up for a launch that should have been refused")

    monkeypatch.setattr(cli, "_start_jax", started)
    monkeypatch.setattr(cli, "_compare", started)
    try:  # a usage error (argparse exits) or a refused launch (the status returned): 2 either way, one line
        code = cli.main(["compare", "--problems", "logreg", *flags])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_the_launch_flags_reach_configure_jax(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli, "configure_jax", lambda *a, **k: seen.update(args=a, kwargs=k))
    monkeypatch.setattr(cli, "_compare", lambda *args: 0)
    flags = ["--coordinator", "h:9", "--num-processes", "3", "--process-id", "2", "--devices", "1"]
    assert cli.main(["compare", "--problems", "logreg", "--no-cache", *flags]) == 0
    assert seen == {
        "args": (1,),
        "kwargs": dict(cache=False, coordinator="h:9", num_processes=3, process_id=2, distributed=None),
    }


# --------------------------------------------------------------------------- one process: placement and the gate
def test_to_device_and_to_host_round_trip_on_every_device():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("runs",))
    n = 2 * len(jax.devices())
    sharded = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("runs"))
    replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    host = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    dev = engine._to_device(host, sharded)
    assert dev.sharding == sharded and dev.shape == host.shape and dev.dtype == np.float32
    np.testing.assert_array_equal(engine._to_host(dev), host)
    np.testing.assert_array_equal(engine._to_host(dev * 2), 2 * host)  # a computed result comes back whole
    scalar = engine._to_device(np.int32(3), replicated)
    assert scalar.shape == () and int(engine._to_host(scalar)) == 3
    keys = np.stack([np.asarray(jax.random.PRNGKey(s)) for s in range(n)])
    np.testing.assert_array_equal(engine._to_host(engine._to_device(keys, sharded)), keys)


def test_problem_data_keeps_the_dtypes_jax_computes_in():
    from tiny_problems import mlp_problem as _mlp_problem

    prob = _mlp_problem()
    data = engine._host_data(prob)
    want = jax.tree.map(lambda a: jax.numpy.asarray(a).dtype, tuple(prob.data()))
    assert jax.tree.map(lambda a: a.dtype, data) == want
    assert all(isinstance(a, np.ndarray) for a in jax.tree.leaves(data))
    wide = engine._host_data(
        dataclasses.replace(prob, data=lambda: tuple(np.zeros((2, 2), np.float64) for _ in range(3)))
    )
    assert all(a.dtype == jax.dtypes.canonicalize_dtype(np.float64) for a in wide)


def test_one_process_is_the_writer_and_the_others_write_nothing(tmp_path, monkeypatch, capsys):
    assert distributed.is_writer() is True
    info = distributed.process_info()
    assert info["processes"] == 1 and info["process_index"] == 0
    assert info["devices"] == len(jax.devices()) and info["platform"] == jax.default_backend()
    assert distributed.study_devices() == jax.devices()
    assert distributed.study_devices(1) == jax.devices()[:1]
    with pytest.raises(ValueError, match=r"asked for 99 per process, but this process has"):
        distributed.study_devices(99)
    # in any other process: write_study writes nothing, the progress bar and the printed report are silent
    monkeypatch.setattr(distributed, "is_writer", lambda: False)
    monkeypatch.setattr(render, "is_writer", lambda: False)
    assert render.write_study(None, tmp_path / "out") == []  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
    stream = io.StringIO()
    bar = StudyProgress(stream)
    bar("compiling", 0.0)
    bar("done", 1.0)
    assert stream.getvalue() == ""
    with cli._writer_output():
        print("the report")
    assert capsys.readouterr().out == ""
    monkeypatch.setattr(distributed, "is_writer", lambda: True)
    with cli._writer_output():
        print("the report")
    assert capsys.readouterr().out == "the report\n"


def test_the_timing_note_says_platform_devices_and_processes():
    class Fake:
        wall_s = 12.0
        resumed: dict = {}
        programs = [ProgramResult("p", "p/x", ["a"], {}, {}, 3.0, 4, 8, 10, "gpu", 2).info()]

    assert render.timing_note(Fake()).endswith("4 gpu device(s) in 2 processes.")  # type: ignore[arg-type]
    Fake.programs = [ProgramResult("p", "p/x", ["a"], {}, {}, 3.0, 2, 8, 10, "cpu", 1).info()]
    assert render.timing_note(Fake()).endswith("2 cpu device(s).")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- two processes (slow: compiles)
def _free_port(low: int = 0, high: int = 0) -> int:
    for port in range(low, high + 1) if low else [0]:
        with socket.socket() as s:
            try:
                s.bind(("localhost", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in {low}..{high}")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    env["JAX_PLATFORMS"] = "cpu"
    env.update(extra)
    return env


def _wait(procs: list[subprocess.Popen]) -> list[tuple[str, str]]:
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=TIMEOUT_S))
    except subprocess.TimeoutExpired:
        pytest.fail(f"the processes did not finish in {TIMEOUT_S} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, (p, (out, err)) in enumerate(zip(procs, logs, strict=True)):
        assert p.returncode == 0, f"process {i} failed:\n{out[-2000:]}\n{err[-4000:]}"
    return logs


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.slow
def test_two_processes_write_one_report_equal_to_one_process(tmp_path):
    port = _free_port()
    outs = [tmp_path / f"process{i}" for i in range(2)]
    launch = ["--devices", "2", "--coordinator", f"localhost:{port}", "--num-processes", "2"]
    procs = [_start([str(SCRIPT), str(outs[i]), *launch, "--process-id", str(i)], _env()) for i in range(2)]
    # 4 host devices in one process (more than a 2-core machine's cores, which --devices refuses): set by hand
    alone = _env(XLA_FLAGS="--xla_force_host_platform_device_count=4")
    procs.append(_start([str(SCRIPT), str(tmp_path / "alone")], alone))
    (out0, err0), (out1, err1), (out_alone, _) = _wait(procs)

    # one report, by process 0; process 1 printed, drew and wrote nothing
    files = {
        "report.txt",
        "report.html",
        "runs.csv",
        "summary.csv",
        "claims.csv",
        "study.json",
        "spec.json",
        "programs",
    }
    assert {p.name for p in outs[0].iterdir()} == files
    assert not outs[1].exists()
    assert out1 == "" and "ETA" not in err1 and "ETA" in err0
    # (the printed lines wrap at 120 columns: read them with their whitespace joined)
    assert "4 cpu device(s) in 2 processes" in " ".join(out0.split()) and out0.count(
        "== Overall"
    ) == out_alone.count("== Overall")
    report = " ".join((outs[0] / "report.txt").read_text().split())
    assert "4 cpu device(s) in 2 processes." in report
    assert "4 cpu device(s)." in " ".join((tmp_path / "alone" / "report.txt").read_text().split())

    got, want = read_json(outs[0] / "study.json"), read_json(tmp_path / "alone" / "study.json")
    programs = got["timings"]["programs"]
    assert [(p["devices"], p["processes"], p["platform"]) for p in programs] == [(4, 2, "cpu")] * 2
    # problems x contenders x roles (selection, report)
    assert len(got["records"]) == len(want["records"]) == 2 * 3 * 2
    for a, b in zip(got["records"], want["records"], strict=True):
        what = f"{a.problem}/{a.contender}/{a.role}"
        assert (a.problem, a.contender, a.role, a.devices) == (b.problem, b.contender, b.role, 4), what
        np.testing.assert_array_equal(a.seeds, b.seeds, err_msg=what)
        np.testing.assert_allclose(a.lrs, b.lrs, rtol=1e-12, err_msg=what)
        for f in ("train_loss", "val", "test", "steps_to_target", "diverged_at"):
            np.testing.assert_allclose(
                getattr(a, f), getattr(b, f), rtol=RTOL, atol=ATOL, err_msg=f"{what} {f}"
            )
    assert [s.lr for s in got["selections"]] == [s.lr for s in want["selections"]]
    assert json.loads(json.dumps(got["meta"]["identical"])) == want["meta"]["identical"]


@pytest.mark.slow
def test_auto_detection_joins_the_processes_of_a_slurm_job():
    # what `srun` sets, for a 2-task job step on this host; JAX derives the coordinator's port from the job id
    port = _free_port(65535 - 2**12 + 1, 65535)
    job = str(port - (65535 - 2**12 + 1) + 2**12 * 7)
    code = (
        "import json; from mxopt_jax.compare import distributed; from mxopt_jax.compare.distributed import configure_jax; "
        "configure_jax(1, cache=False, distributed='auto'); print(json.dumps(distributed.process_info()))"
    )
    slurm = dict(SLURM_JOB_ID=job, SLURM_STEP_NODELIST="localhost", SLURM_NTASKS="2")
    procs = [_start(["-c", code], _env(**slurm, SLURM_PROCID=str(i), SLURM_LOCALID=str(i))) for i in range(2)]
    logs = _wait(procs)
    infos = [json.loads(out.strip().splitlines()[-1]) for out, _ in logs]
    assert [i["process_index"] for i in infos] == [0, 1]
    assert all(i["processes"] == 2 and i["devices"] == 2 and i["local_devices"] == 1 for i in infos)
