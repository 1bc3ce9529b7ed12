"""Multi-host, proven on one machine: 2 processes joined by ``jax.distributed.initialize`` (gloo CPU
collectives), parameters and optimizer state sharded over the 4 devices of both, a few steps of adam, lamb,
lars, lans, ftml and sgd equal to the same steps in one process (``tests/_support/multihost_script.py``)."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

import multihost_script as mh
import numpy as np
import pytest

SCRIPT = pathlib.Path(mh.__file__)
RTOL, ATOL = 2e-5, 2e-6
TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _launch(out: pathlib.Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), str(i), "2", str(port), str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=SCRIPT.parent,
        )
        for i in range(2)
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=TIMEOUT_S)[0])
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"the 2-process run did not finish in {TIMEOUT_S} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, (p, log) in enumerate(zip(procs, logs, strict=True)):
        assert p.returncode == 0, f"process {i} failed:\n{log[-4000:]}"


# gloo CPU collectives exist from the floor (JAX 0.4.35) on: no skip.
def test_two_processes_match_one_process(tmp_path):
    out = tmp_path / "multihost.npz"
    _launch(out)
    meta = json.loads((tmp_path / "multihost.npz.json").read_text())
    assert meta["process_count"] == 2 and meta["device_count"] == 4 and meta["local_device_count"] == 2
    got = dict(np.load(out))
    ref = mh.reference()
    assert sorted(got) == sorted(ref)
    for name in mh.NAMES:
        # parameters and every state entry shaped like one sharded over all 4 devices of both processes
        s = meta["summary"][name]
        assert s["sharded_leaves"] >= 3 and s["devices_per_leaf"] == [4], (name, s)
    for path, want in ref.items():
        np.testing.assert_allclose(got[path], want, rtol=RTOL, atol=ATOL, err_msg=path)
    # the steps moved the parameters: the comparison is not between two copies of the start
    start, _ = mh.host_problem()
    for name in mh.NAMES:
        assert not np.allclose(got[f"{name}/0/kernel"], start["kernel"]), name
