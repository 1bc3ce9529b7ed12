"""Kernel and byte counts of a compiled XLA:CPU program, multi-output fusions included.

``benchmarks/passes.py``'s parser skips instructions whose shape is a tuple (its shape pattern has no spaces),
so a multi-output loop fusion — shape ``(f32[n]{0}, f32[n]{0})`` — is not counted there. This one reads
tuple shapes: a kernel moves the n-element arrays it reads (operands, a ``get-tuple-element`` of an earlier
multi-output fusion included) plus every n-element array it writes (each tuple element).

``count(text, n)`` -> ``(kernels, bytes_per_param, [(name, bytes), ...])`` for arrays of ``n`` elements
(float32, bfloat16/float16 and int32 sizes are all counted by their element size).
"""

from __future__ import annotations

import re

_DEF = re.compile(r"^\s*(?:ROOT )?%(\S+) = (\([^()]*\)|\S+) ([a-z][\w\-]*)\((.*?)\)(?:,|$)")
_ARR = re.compile(r"(f64|f32|s32|u32|bf16|f16)\[([\d,]*)\]")
_BYTES = {"f64": 8, "f32": 4, "s32": 4, "u32": 4, "bf16": 2, "f16": 2}
_SKIP = {"parameter", "tuple", "get-tuple-element", "bitcast", "constant"}


def _size(shape: str, n: int) -> int:
    """Bytes of the arrays in ``shape`` that hold ``n`` elements or more (a stacked (2, n) buffer counts)."""
    total = 0
    for dt, dims in _ARR.findall(shape):
        elems = 1
        for d in filter(None, dims.split(",")):
            elems *= int(d)
        if elems >= n:
            total += elems * _BYTES[dt]
    return total


def count(hlo: str, n: int) -> tuple[int, float, list[tuple[str, int]]]:
    entry = hlo[hlo.index("\nENTRY") :]
    body = entry[: entry.index("\n}")]
    size: dict[str, int] = {}
    out = []
    for line in body.splitlines()[1:]:
        m = _DEF.match(line)
        if not m:
            continue
        name, shape, op, operands = m.groups()
        size[name] = _size(shape, n)
        if op in _SKIP:
            continue
        ops = [o.strip().lstrip("%") for o in re.sub(r"/\*.*?\*/", "", operands).split(",")]
        moved = size[name] + sum(size.get(o, 0) for o in ops)
        if moved:
            multi = shape.startswith("(")
            out.append((f"{op}{'[multi-output]' if multi else ''} {name}", moved))
    return len(out), sum(b for _, b in out) / n, out


def entry_text(hlo: str) -> str:
    entry = hlo[hlo.index("\nENTRY") :]
    return entry[: entry.index("\n}") + 2]
