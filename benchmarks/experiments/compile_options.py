"""Question 2 of benchmarks/FUSION.md: can a program request xla_cpu_use_multi_output_fusion itself?

Tries (a) ``jax.jit(..., compiler_options=...)`` and ``.lower().compile(compiler_options=...)`` with several
spellings; (b) setting XLA_FLAGS after ``import jax`` but before / after the first computation (each in a
fresh process); (c) a private-API wrapper that merges the map entry into the serialized CompileOptions.
Prints the (single-output, multi-output) fusion counts of a raw Adam step: (3, 0) = off, (2, 1) = on.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/experiments/compile_options.py``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys

MOF = "xla_cpu_use_multi_output_fusion"


def step(w, m, v, g):
    import jax.numpy as jnp

    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g * g
    return w - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v


def counts(compiled):
    e = compiled.as_text()
    e = e[e.index("\nENTRY") :]
    return e.count(" fusion("), e.count(") fusion(")


def _ld(field, payload):
    def varint(x):
        out = b""
        while True:
            b, x = x & 0x7F, x >> 7
            out += bytes([b | (0x80 if x else 0)])
            if not x:
                return out

    return varint((field << 3) | 2) + varint(len(payload)) + payload


@contextlib.contextmanager
def backend_extra_options(opts):
    """PRIVATE API (jax 0.10.2): add entries to DebugOptions.xla_backend_extra_options for compiles inside."""
    from jax._src import compiler
    from jax._src.lib import xla_client as xc

    entries = b"".join(_ld(500, _ld(1, k.encode()) + _ld(2, v.encode())) for k, v in opts.items())
    extra = _ld(3, _ld(3, entries))  # CompileOptionsProto.executable_build_options(3).debug_options(3)
    orig = compiler.backend_compile_and_load

    def patched(backend, module, devices, options, host_callbacks):
        options = xc.CompileOptions.ParseFromString(options.SerializeAsString() + extra)
        return orig(backend, module, devices, options, host_callbacks)

    compiler.backend_compile_and_load = patched
    try:
        yield
    finally:
        compiler.backend_compile_and_load = orig


def child(mode):
    import jax
    import jax.numpy as jnp

    args = [jnp.zeros(2**20, jnp.float32)] * 4  # first computation: the CPU client starts here
    if mode == "env_after_first_use":
        os.environ["XLA_FLAGS"] = f"--xla_backend_extra_options={MOF}"
        print("XLA_FLAGS set after the first computation:", counts(jax.jit(step).lower(*args).compile()))
    elif mode == "compiler_options":
        print("default:", counts(jax.jit(step).lower(*args).compile()))
        for opts in (
            {"xla_backend_extra_options": MOF},
            {"xla_backend_extra_options": f'key: "{MOF}" value: ""'},
            {"xla_backend_extra_options": {MOF: ""}},
            {MOF: True},
            {"xla_cpu_enable_fast_math": False},
        ):
            for how in ("jit", "compile"):
                try:
                    f = jax.jit(lambda *a: step(*a), compiler_options=opts if how == "jit" else None)
                    lo = f.lower(*args)
                    c = lo.compile() if how == "jit" else lo.compile(compiler_options=opts)
                    print(f"{how:8} {opts}: {counts(c)}")
                except Exception as e:  # noqa: BLE001
                    print(f"{how:8} {opts}: {type(e).__name__}: {str(e).splitlines()[0][:150]}")
        with backend_extra_options({MOF: ""}):
            c = jax.jit(lambda *a: step(*a)).lower(*args).compile()
        print("private CompileOptions merge:", counts(c))


def child_env_before():
    os.environ["XLA_FLAGS"] = f"--xla_backend_extra_options={MOF}"  # after `import jax`, before first use
    import jax
    import jax.numpy as jnp

    args = [jnp.zeros(2**20, jnp.float32)] * 4
    print(
        "XLA_FLAGS set after import jax, before the first computation:",
        counts(jax.jit(step).lower(*args).compile()),
    )


if __name__ == "__main__":
    if "--child" in sys.argv:
        mode = sys.argv[-1]
        if mode == "env_before_first_use":
            import jax  # noqa: F401  (imported first on purpose)

            child_env_before()
        else:
            child(mode)
    else:
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        for mode in ("compiler_options", "env_before_first_use", "env_after_first_use"):
            subprocess.run([sys.executable, __file__, "--child", mode], env=env, check=True)
