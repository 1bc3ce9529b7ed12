"""The study on many processes: JAX's multi-controller runtime (``jax.distributed``), the launch and who writes.

A study can run as several processes, one per host (or several on one machine), joined by
:func:`jax.distributed.initialize`: every process runs the same program, JAX's devices are those of all the
processes, and the engine shards the run axis of every compiled program over all of them
(:mod:`mxopt_jax.compare.engine` builds each process's part of its inputs and gathers the results into every
process). Every process therefore computes the same selections and the same :class:`Study`; **process 0 alone
writes** (the report, the records, the plots, the progress bar, anything printed), the others write nothing.

* :func:`initialize` checks the launch arguments locally (a clear ``ValueError`` before anything compiles
  and before JAX waits for processes that will never come) and joins the processes;
  :func:`configure_jax` calls it, and ``mxopt-jax compare --coordinator HOST:PORT
  --num-processes N --process-id I`` (or ``--distributed auto`` under SLURM, Open MPI, ...) does the same.
* :func:`configure_jax`: JAX set up for a study before its first computation (host devices, the compilation
  cache, joining the processes); the command line calls it first thing.
* :func:`is_writer`: the one gate for anything a study writes (files, stdout): ``True`` in process 0 (and in a
  study of one process). Whatever writes a study's output calls it.
* :func:`process_info`: platform, process and device counts (the report states them).
* :func:`study_devices`: the devices a study shards over when asked for ``N`` per process.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .validation import cpu_devices, expect_host_devices

__all__ = [
    "check_launch",
    "configure_jax",
    "initialize",
    "is_writer",
    "parse_address",
    "process_info",
    "study_devices",
]

_ADDRESS = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:\[\]]+)):(?P<port>\d+)$")


def parse_address(address: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (or ``"[IPv6]:PORT"``) as ``(host, port)``; a clear ``ValueError`` otherwise."""
    if not isinstance(address, str):
        raise TypeError(f"coordinator must be a 'HOST:PORT' string, got {address!r}")
    m = _ADDRESS.match(address.strip())
    port = int(m["port"]) if m else 0
    if m is None or not 1 <= port <= 65535:
        raise ValueError(
            f"coordinator must be HOST:PORT (process 0's address and a free port in 1..65535, e.g. "
            f"'localhost:8476' or '10.0.0.1:8476'), got {address!r}"
        )
    return (m["v6"] or m["host"]), port


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def check_launch(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    auto: bool = False,
) -> bool:
    """Check the launch arguments without starting anything; returns whether they ask for
    :func:`jax.distributed.initialize` (``False``: a study of one process, nothing to join).

    Raises ``ValueError``/``TypeError`` naming the argument: ``num_processes < 1``; a ``process_id`` outside
    ``0 .. num_processes - 1``; more than one process without a coordinator (nor ``JAX_COORDINATOR_ADDRESS``);
    a malformed coordinator address; a coordinator or process id without a process count. With ``auto``, JAX
    detects what is not given from the cluster's environment (SLURM, Open MPI, Cloud TPU, ...); what is given
    is still checked.
    """
    num_processes = _int_or_none(num_processes, "num_processes")
    process_id = _int_or_none(process_id, "process_id")
    if coordinator is not None:
        parse_address(coordinator)
    if num_processes is not None and num_processes < 1:
        raise ValueError(f"num_processes must be >= 1, got {num_processes}")
    if process_id is not None and process_id < 0:
        raise ValueError(f"process_id must be >= 0, got {process_id}")
    if num_processes is not None and process_id is not None and process_id >= num_processes:
        raise ValueError(
            f"process_id must be in 0..{num_processes - 1} (num_processes is {num_processes}), got {process_id}"
        )
    if auto:
        return True
    if num_processes is None:
        if coordinator is not None or process_id is not None:
            raise ValueError(
                "num_processes is needed with a coordinator or a process id (the number of processes "
                "of the study), or auto-detection of the cluster (auto=True; --distributed auto)"
            )
        return False
    if num_processes == 1:
        return coordinator is not None
    if coordinator is None and not os.environ.get("JAX_COORDINATOR_ADDRESS"):
        raise ValueError(
            f"num_processes is {num_processes}: a coordinator (HOST:PORT of process 0, the same in every "
            "process) is needed, or auto-detection of the cluster (auto=True; --distributed auto)"
        )
    if process_id is None:
        raise ValueError(
            f"num_processes is {num_processes}: each process needs its process_id (0..{num_processes - 1})"
        )
    return True


def initialize(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    *,
    auto: bool = False,
    timeout_s: int = 300,
) -> bool:
    """Join the processes of a study (:func:`jax.distributed.initialize`), after :func:`check_launch`.

    Call it in every process before anything else uses JAX (:func:`mxopt_jax.compare.configure_jax` does,
    after setting the host device count). ``coordinator`` is process 0's ``HOST:PORT`` (the same in every
    process); ``process_id`` runs from 0 to ``num_processes - 1``. ``auto=True`` leaves what is not given to
    JAX's cluster detection (``jax.distributed.initialize()`` with no arguments under SLURM, Open MPI, ...).
    ``timeout_s``: how long to wait for every process to join. On CPU the processes' collectives go through
    gloo. Returns whether a multi-process runtime was started (``False`` when the arguments ask for none).
    """
    if not check_launch(coordinator, num_processes, process_id, auto):
        return False
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int) or timeout_s < 1:
        raise ValueError(f"timeout_s must be an int >= 1, got {timeout_s!r}")
    import jax

    is_initialized = getattr(jax.distributed, "is_initialized", lambda: False)
    if is_initialized():
        raise RuntimeError("jax.distributed is already initialized in this process: initialize once")
    if getattr(jax.config, "jax_cpu_collectives_implementation", "gloo") is None:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=coordinator,
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=timeout_s,
    )
    return True


def is_writer() -> bool:
    """Whether this process writes the study's output: process 0 of a multi-process study, or the only one.

    The one gate: :func:`mxopt_jax.compare.report.write_study` and the command line's printing call it; so
    must anything else that writes a study's files.
    """
    import jax

    return int(jax.process_index()) == 0


def process_info() -> dict[str, Any]:
    """``{"platform", "processes", "process_index", "devices", "local_devices"}`` of JAX's default backend."""
    import jax

    return {
        "platform": jax.default_backend(),
        "processes": int(jax.process_count()),
        "process_index": int(jax.process_index()),
        "devices": int(jax.device_count()),
        "local_devices": int(jax.local_device_count()),
    }


def study_devices(per_process: int | None = None) -> list[Any]:
    """The devices a study shards over: all of JAX's default backend (``None``), or the first ``per_process``
    devices of every process (GPU, TPU or CPU host devices alike), in JAX's global order.

    Refuses more than a process has (``ValueError``): on CPU, the host device count is set before JAX starts
    (:func:`mxopt_jax.compare.configure_jax`); on an accelerator, it is the hardware's.
    """
    import jax

    devices = list(jax.devices())
    if per_process is None:
        return devices
    per_process = _int_or_none(per_process, "devices")
    if per_process is None or per_process < 1:
        raise ValueError(f"devices must be an int >= 1 (devices per process), got {per_process!r}")
    have = jax.local_device_count()
    if per_process > have:
        platform = devices[0].platform
        hint = (
            "the host device count was fixed before JAX started (XLA_FLAGS="
            "--xla_force_host_platform_device_count, set by configure_jax or the environment)"
            if platform == "cpu"
            else "each process can only use the devices it has"
        )
        raise ValueError(
            f"devices: asked for {per_process} per process, but this process has {have} {platform} "
            f"device(s); {hint}"
        )
    by_process: dict[int, list[Any]] = {}
    for d in devices:
        by_process.setdefault(int(d.process_index), []).append(d)
    return [d for p in sorted(by_process) for d in by_process[p][:per_process]]


def configure_jax(
    devices: int | None = None,
    cache: bool = True,
    *,
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    distributed: str | None = None,
) -> None:
    """Set up JAX for a study, before its first computation (the command line calls it first thing).

    ``devices``: on CPU, the host device count of this process (default: one per core, at most 8) through
    ``--xla_force_host_platform_device_count``, so the runs are sharded over the cores (flags already in
    ``XLA_FLAGS`` are kept); on a GPU or TPU the hardware decides, and
    :func:`mxopt_jax.compare.distributed.study_devices` picks the first ``devices``.
    ``cache``: JAX's persistent compilation cache in ``$MXOPT_JAX_CACHE`` or ``~/.cache/mxopt_jax/jax``, so a
    second study with the same programs skips compilation.
    ``coordinator``, ``num_processes``, ``process_id``: join a study of several processes
    (:func:`mxopt_jax.compare.distributed.initialize`: process 0's ``HOST:PORT``, the number of processes,
    this one's index); ``distributed="auto"``: JAX detects what is not given from the cluster (SLURM, ...).
    Bad launch arguments raise ``ValueError`` here, before anything starts.
    All of it must happen before JAX initializes its backend; afterwards the device count and the cache have
    no effect and joining raises ``RuntimeError``. JAX offers no public way to tell whether it has started, so
    the host device count is compared once it is known (when :func:`~mxopt_jax.compare.study` starts), and a
    warning says when the request came too late to take effect.
    """
    import warnings

    if distributed not in (None, "auto"):
        raise ValueError(f"distributed must be None or 'auto', got {distributed!r}")
    if devices is not None and (isinstance(devices, bool) or not isinstance(devices, int) or devices < 1):
        raise ValueError(f"devices must be an int >= 1 (devices per process), got {devices!r}")
    auto = distributed == "auto"
    check_launch(coordinator, num_processes, process_id, auto=auto)

    import jax

    flags = os.environ.get("XLA_FLAGS", "")
    n = devices or min(cpu_devices(), 8)
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = " ".join([flags, f"--xla_force_host_platform_device_count={n}"]).strip()
        expect_host_devices(n, requested=devices is not None)  # checked when the study starts
    elif devices is not None:
        warnings.warn(
            f"configure_jax(devices={devices}): XLA_FLAGS already sets the host device count ({flags!r}); kept",
            RuntimeWarning,
            stacklevel=2,
        )
    if cache:
        path = os.environ.get("MXOPT_JAX_CACHE") or os.path.join(
            os.path.expanduser("~"), ".cache", "mxopt_jax", "jax"
        )
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    initialize(coordinator, num_processes, process_id, auto=auto)
