"""Benchmark workloads, defined once as plain shapes and NumPy data (no JAX import).

The JAX harness (``run.py``) and the side-library scripts (``mxnet_side.py``, ``torch_side.py``, which run in
other virtualenvs) all build their parameters and gradients from here, so every library sees the same
shapes and the same numbers.

* ``A``: one leaf of 2^24 float32.
* ``B``: the 161 parameters of ResNet-50 (25,557,032 values), generated from the architecture.
* ``C``: 2000 leaves of 256 float32.
* ``D``: a 1,000,000 x 64 float32 embedding table; 10,000 distinct rows (1 %) get a gradient each step.

``quick=True`` gives small versions for smoke runs (B: one bottleneck block per stage at 1/16 width, 53 leaves).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

DTYPE = np.float32

# ResNet-50 (He et al. 2016, "v1.5"-style parameter set as in torchvision / Gluon model zoo): bottleneck
# blocks per stage and the bottleneck width of each stage; the block output is 4x the width.
RESNET50_BLOCKS = (3, 4, 6, 3)
RESNET_WIDTHS = (64, 128, 256, 512)
RESNET_EXPANSION = 4
RESNET50_NUM_PARAMS = 25_557_032
RESNET50_NUM_LEAVES = 161


def resnet_param_shapes(
    blocks: tuple[int, ...] = RESNET50_BLOCKS,
    base_width: int = 64,
    num_classes: int = 1000,
    in_channels: int = 3,
) -> list[tuple[str, tuple[int, ...]]]:
    """``(name, shape)`` of every trainable ResNet parameter, in definition order.

    Convolution kernels are ``(out, in, kh, kw)`` (MXNet / PyTorch layout) and have no bias; every
    convolution is followed by a BatchNorm with ``gamma`` and ``beta`` (running statistics are not
    trainable and not listed); the classifier is ``fc_weight (classes, features)`` and ``fc_bias``.
    Names end in ``_weight`` / ``_gamma`` / ``_beta`` / ``_bias`` as in MXNet, which matters for LARS (it
    exempts gamma, beta and bias from the layer-wise rate).
    """
    shapes: list[tuple[str, tuple[int, ...]]] = []

    def conv_bn(prefix: str, cin: int, cout: int, k: int) -> None:
        shapes.append((f"{prefix}_conv_weight", (cout, cin, k, k)))
        shapes.append((f"{prefix}_bn_gamma", (cout,)))
        shapes.append((f"{prefix}_bn_beta", (cout,)))

    widths = [base_width * (2**i) for i in range(len(blocks))]
    conv_bn("stem", in_channels, widths[0], 7)
    cin = widths[0]
    for stage, (n_blocks, width) in enumerate(zip(blocks, widths, strict=True), start=1):
        cout = width * RESNET_EXPANSION
        for b in range(n_blocks):
            p = f"stage{stage}_unit{b + 1}"
            conv_bn(f"{p}_a", cin, width, 1)
            conv_bn(f"{p}_b", width, width, 3)
            conv_bn(f"{p}_c", width, cout, 1)
            if b == 0:  # projection shortcut (channel count and, after stage 1, stride change)
                conv_bn(f"{p}_proj", cin, cout, 1)
            cin = cout
    shapes.append(("fc_weight", (num_classes, cin)))
    shapes.append(("fc_bias", (num_classes,)))
    return shapes


@dataclasses.dataclass(frozen=True)
class Workload:
    """A benchmark workload: named leaf shapes, plus the sparse-row description for D.

    Attributes:
      name: ``'A'`` .. ``'D'``.
      description: one line for tables.
      leaves: ``(name, shape)`` per parameter, in order.
      touched_rows: for the embedding workload, how many distinct rows get a gradient per step (else 0).
    """

    name: str
    description: str
    leaves: tuple[tuple[str, tuple[int, ...]], ...]
    touched_rows: int = 0

    @property
    def num_leaves(self) -> int:
        return len(self.leaves)

    @property
    def num_params(self) -> int:
        return sum(math.prod(s) for _, s in self.leaves)

    @property
    def param_bytes(self) -> int:
        return self.num_params * np.dtype(DTYPE).itemsize

    @property
    def sparse(self) -> bool:
        return self.touched_rows > 0


def get(name: str, quick: bool = False) -> Workload:
    """The workload called ``name`` (full size, or the small ``quick`` version)."""
    name = name.upper()
    if name == "A":
        n = 2**14 if quick else 2**24
        return Workload("A", f"one leaf of {n:,} float32", (("w", (n,)),))
    if name == "B":
        if quick:
            shapes = resnet_param_shapes(blocks=(1, 1, 1, 1), base_width=4, num_classes=10)
            desc = "ResNet structure, one block per stage, 1/16 width"
        else:
            shapes = resnet_param_shapes()
            desc = "ResNet-50 parameters"
        wl = Workload("B", "", tuple(shapes))
        return dataclasses.replace(
            wl, description=f"{desc}: {wl.num_leaves} leaves, {wl.num_params:,} float32"
        )
    if name == "C":
        n = 8 if quick else 2000
        return Workload("C", f"{n} leaves x 256 float32", tuple((f"p{i:04d}", (256,)) for i in range(n)))
    if name == "D":
        rows, k = (10_000, 100) if quick else (1_000_000, 10_000)
        return Workload(
            "D",
            f"{rows:,} x 64 float32 embedding, {k:,} rows ({100 * k / rows:g} %) touched per step",
            (("table", (rows, 64)),),
            touched_rows=k,
        )
    raise ValueError(f"unknown workload {name!r}; choose from A, B, C, D")


ALL = ("A", "B", "C", "D")


def params_and_grads(wl: Workload, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Deterministic float32 parameters and dense gradients, one array per leaf.

    Parameters are ``N(0, 0.1^2)``; gradients ``N(0, 0.01^2)``. For a sparse workload (D) the dense
    gradient is zero except on the touched rows (see :func:`sparse_rows`).
    """
    rng = np.random.default_rng(seed)
    params = [(0.1 * rng.standard_normal(shape, dtype=DTYPE)) for _, shape in wl.leaves]
    if wl.sparse:
        idx, vals = sparse_rows(wl, seed)
        g = np.zeros(wl.leaves[0][1], DTYPE)
        g[idx] = vals
        return params, [g]
    grads = [(0.01 * rng.standard_normal(shape, dtype=DTYPE)) for _, shape in wl.leaves]
    return params, grads


def sparse_rows(wl: Workload, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """For D: ``(indices int32[k], values float32[k, 64])``, distinct sorted rows, the same every step."""
    if not wl.sparse:
        raise ValueError(f"workload {wl.name} has no sparse rows")
    rows, cols = wl.leaves[0][1]
    rng = np.random.default_rng(seed + 1)
    idx = np.sort(rng.choice(rows, size=wl.touched_rows, replace=False)).astype(np.int32)
    vals = 0.01 * rng.standard_normal((wl.touched_rows, cols), dtype=DTYPE)
    return idx, vals


def as_2d(shape: tuple[int, ...]) -> tuple[int, int]:
    """2-D view ``(rows, features)`` of a parameter, for GroupAdaGrad (which needs 2-D weights).

    ``(n,)`` becomes ``(n, 1)`` (one accumulator per element); ``(d0, d1, ...)`` becomes
    ``(d0, d1 * ...)``.
    """
    if len(shape) == 1:
        return (shape[0], 1)
    return (shape[0], math.prod(shape[1:]))


if __name__ == "__main__":
    for w in ALL:
        wl = get(w)
        print(f"{w}: {wl.description} ({wl.num_leaves} leaves, {wl.num_params:,} params)")


_CACHE: dict = {}


def cached(name: str, quick: bool = False) -> tuple[Workload, list[np.ndarray], list[np.ndarray]]:
    """``(workload, params, grads)`` for the side workers, the last workload kept (one at a time in memory)."""
    key = (name, quick)
    if key not in _CACHE:
        _CACHE.clear()
        wl = get(name, quick)
        _CACHE[key] = (wl, *params_and_grads(wl))
    return _CACHE[key]
