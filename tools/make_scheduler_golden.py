"""Record reference learning-rate schedules from real MXNet for ``tests/test_lr_scheduler.py``.

Regenerate (MXNet 2.0.0b1 lives in a side virtualenv, never in the project's venv)::

    /tmp/mx20/bin/python tools/make_scheduler_golden.py --out tests/golden/schedulers.npz

For every case a fresh ``mxnet.lr_scheduler.<cls>(**kwargs)`` is built; when ``overwrite`` is not
``None`` the script sets ``sched.base_lr = overwrite`` right after construction (what an MXNet optimizer
does when it gets both ``learning_rate`` and ``lr_scheduler``). Stored arrays (float64):

* ``lr_<i>``:  ``sched(n)`` for ``n = 0..40`` called in increasing order (the optimizer's pattern);
* ``seq_<i>``: a second fresh scheduler called with the non-monotone sequence ``meta["seq_calls"]``.

``meta`` is a 0-d unicode array holding JSON: ``{"mxnet_version", "n", "seq_calls", "cases": [{"cls",
"kwargs", "overwrite"}, ...]}``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

N = list(range(41))
SEQ_CALLS = [45, 10, 1, 25, 3, 40, 0, 15, 12, 60, 7]

# (class name, kwargs, base_lr overwrite or None)
CASES = [
    # FactorScheduler
    ("FactorScheduler", {"step": 3, "factor": 0.5, "base_lr": 1.0}, None),
    ("FactorScheduler", {"step": 3, "factor": 0.5, "stop_factor_lr": 0.2, "base_lr": 1.0}, None),
    (
        "FactorScheduler",
        {"step": 3, "factor": 0.5, "base_lr": 1.0, "warmup_steps": 4, "warmup_begin_lr": 0.2},
        None,
    ),
    (
        "FactorScheduler",
        {
            "step": 5,
            "factor": 0.9,
            "base_lr": 0.1,
            "warmup_steps": 6,
            "warmup_begin_lr": 0.01,
            "warmup_mode": "constant",
        },
        None,
    ),
    ("FactorScheduler", {"step": 1, "factor": 1}, None),
    ("FactorScheduler", {"step": 1, "factor": 0.7, "stop_factor_lr": 1e-3, "base_lr": 0.5}, None),
    ("FactorScheduler", {"step": 2, "factor": 0.5, "base_lr": 1.0, "warmup_steps": 3}, 2.0),
    ("FactorScheduler", {"step": 4, "factor": 0.1, "stop_factor_lr": 1e-3, "base_lr": 1e-4}, None),
    ("FactorScheduler", {"step": 7, "factor": 0.25, "stop_factor_lr": 1e-5, "base_lr": 0.3}, 0.05),
    ("FactorScheduler", {"step": 4, "factor": 1, "stop_factor_lr": 0.5, "base_lr": 0.1}, None),
    # MultiFactorScheduler
    ("MultiFactorScheduler", {"step": [2, 5], "factor": 0.1, "base_lr": 1.0}, None),
    (
        "MultiFactorScheduler",
        {"step": [2, 5], "factor": 0.1, "base_lr": 1.0, "warmup_steps": 3, "warmup_mode": "constant"},
        None,
    ),
    (
        "MultiFactorScheduler",
        {"step": [15, 25], "factor": 0.1, "base_lr": 0.1, "warmup_steps": 10, "warmup_begin_lr": 0.05},
        None,
    ),
    ("MultiFactorScheduler", {"step": [1, 8, 9, 30], "factor": 0.5, "base_lr": 0.2}, None),
    ("MultiFactorScheduler", {"step": [5, 10, 20], "factor": 1, "base_lr": 0.3}, None),
    (
        "MultiFactorScheduler",
        {"step": [4, 12], "factor": 0.3, "base_lr": 1.0, "warmup_steps": 3, "warmup_begin_lr": 0.1},
        0.5,
    ),
    ("MultiFactorScheduler", {"step": [50], "factor": 0.1, "base_lr": 0.01}, None),
    # PolyScheduler
    ("PolyScheduler", {"max_update": 10, "base_lr": 1.0, "pwr": 2, "final_lr": 0.1}, None),
    (
        "PolyScheduler",
        {
            "max_update": 10,
            "base_lr": 1.0,
            "pwr": 1,
            "final_lr": 0,
            "warmup_steps": 4,
            "warmup_begin_lr": 0.2,
        },
        None,
    ),
    (
        "PolyScheduler",
        {
            "max_update": 20,
            "base_lr": 0.5,
            "pwr": 3,
            "final_lr": 0.01,
            "warmup_steps": 5,
            "warmup_begin_lr": 0.05,
            "warmup_mode": "constant",
        },
        None,
    ),
    ("PolyScheduler", {"max_update": 40, "base_lr": 0.1, "pwr": 2}, None),
    ("PolyScheduler", {"max_update": 100, "base_lr": 0.3, "pwr": 1}, None),
    ("PolyScheduler", {"max_update": 10, "base_lr": 1.0, "pwr": 1}, 2.0),
    (
        "PolyScheduler",
        {"max_update": 30, "base_lr": 1.0, "pwr": 2, "final_lr": 0.05, "warmup_steps": 6},
        0.1,
    ),
    # CosineScheduler
    ("CosineScheduler", {"max_update": 10, "base_lr": 1.0, "final_lr": 0.1}, None),
    (
        "CosineScheduler",
        {"max_update": 10, "base_lr": 1.0, "final_lr": 0, "warmup_steps": 2, "warmup_begin_lr": 0.5},
        None,
    ),
    (
        "CosineScheduler",
        {
            "max_update": 25,
            "base_lr": 0.2,
            "final_lr": 0.001,
            "warmup_steps": 5,
            "warmup_begin_lr": 0.02,
            "warmup_mode": "constant",
        },
        None,
    ),
    ("CosineScheduler", {"max_update": 40, "base_lr": 0.05}, None),
    ("CosineScheduler", {"max_update": 12, "base_lr": 1.0, "final_lr": 0.2}, 3.0),
    ("CosineScheduler", {"max_update": 100, "base_lr": 3.0, "final_lr": 0.1, "warmup_steps": 10}, None),
]


def _build(mx, cls: str, kwargs: dict, overwrite):
    sched = getattr(mx.lr_scheduler, cls)(**kwargs)
    if overwrite is not None:
        sched.base_lr = overwrite
    return sched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output .npz path")
    args = parser.parse_args()

    import mxnet as mx  # only available in the side virtualenv

    arrays: dict[str, np.ndarray] = {}
    for i, (cls, kwargs, overwrite) in enumerate(CASES):
        sched = _build(mx, cls, kwargs, overwrite)
        arrays[f"lr_{i}"] = np.array([float(sched(n)) for n in N], dtype=np.float64)
        sched = _build(mx, cls, kwargs, overwrite)
        arrays[f"seq_{i}"] = np.array([float(sched(n)) for n in SEQ_CALLS], dtype=np.float64)
    meta = {
        "mxnet_version": mx.__version__,
        "n": N,
        "seq_calls": SEQ_CALLS,
        "cases": [{"cls": c, "kwargs": k, "overwrite": o} for c, k, o in CASES],
    }
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(args.out, **arrays)
    print(f"wrote {len(CASES)} cases to {args.out}")


if __name__ == "__main__":
    main()
