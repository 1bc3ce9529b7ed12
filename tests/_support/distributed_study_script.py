"""One process of ``mxopt-jax compare`` on two tiny workloads; ``tests/app/test_distributed.py`` starts it as
the 2 processes of a ``jax.distributed`` study and as one process alone, and compares what they write.

Run as ``python distributed_study_script.py OUT [compare flags...]``, e.g. ``--devices 2 --coordinator
localhost:PORT --num-processes 2 --process-id 0``. The command line runs as users run it (``main([...])``),
with two workloads small enough to compile in seconds (the tiny MLP and the tiny embedding model of
``tiny_problems.py``, registered as ``tiny`` and ``tiny_sparse``) and a tiny quick preset (3 rates x 2
seeds, 2 confirmation seeds); the SGD family (sgd, nag, sgld: SGLD draws from the optimizer's own stream), so
one compiled program per workload and the second compiling in the background while the first runs. Every
process calls the same ``main``: which of them prints and writes is the app's decision, not this script's.
"""

from __future__ import annotations

import dataclasses
import sys

from tiny_problems import mlp_problem, sparse_problem

CONTENDERS = "sgd,nag,sgld"
PROBLEM_NAMES = "tiny,tiny_sparse"


def main(out: str, flags: list[str]) -> int:
    from mxopt_jax.compare import cli, presets
    from mxopt_jax.compare.problems import PROBLEMS

    PROBLEMS["tiny"] = mlp_problem
    PROBLEMS["tiny_sparse"] = sparse_problem
    presets.PRESETS["quick"] = dataclasses.replace(
        presets.PRESETS["quick"], grid_points=3, seeds=2, confirm_seeds=2
    )
    argv = ["compare", "--problems", PROBLEM_NAMES, "--contenders", CONTENDERS, "--out", out, "--no-plots"]
    return cli.main([*argv, "--no-cache", *flags])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
