"""Cheap resource estimate of a μGraph at concrete sizes, without rendering any source.

It runs the same lowering as ``generate`` (prism.codegen.lower), so a size choice that
``resources`` accepts is one ``generate`` accepts, with the same shared memory and threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import DEFAULT_OPTIONS, Options, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.ir import KernelGraph, Load


@dataclass(frozen=True)
class KernelResources:
    name: str
    smem_bytes: int
    threads: int
    blocks: int
    stages: int
    acc_regs: int  # float accumulator registers per thread
    stage_bytes: int  # bytes of loop-varying tiles per pipeline stage
    loop: int = 1
    tile_bytes: int = 0  # bytes of the tiles a block loads (every Load, read in place or copied)
    run_bytes: int = 0  # the shortest contiguous run of a loaded tile in global memory (0: no Load)


@dataclass(frozen=True)
class Resources:
    kernels: tuple[KernelResources, ...]

    @property
    def smem_bytes(self) -> int:
        return max((k.smem_bytes for k in self.kernels), default=0)

    @property
    def threads(self) -> int:
        return max((k.threads for k in self.kernels), default=0)

    @property
    def blocks(self) -> int:
        return max((k.blocks for k in self.kernels), default=0)


def resources(kg: KernelGraph, arch: str = "sm_80", *, options: Options | None = None) -> Resources:
    """Shared memory, threads and blocks per custom kernel; CodegenError when the sizes do not fit."""
    gl = lower_graph(kg, get_arch(arch), options or DEFAULT_OPTIONS)
    out = []
    for low in gl.kernels:
        if low is None:
            continue
        tile, run = _load_bytes(low)
        out.append(KernelResources(low.kernel.name, low.smem_bytes, low.threads, low.blocks, low.stages, low.acc_regs,
                                    low.ring_bytes, low.loop, tile, run))
    return Resources(tuple(out))


def _load_bytes(low: KernelLowering) -> tuple[int, int]:
    """(bytes of a block's loaded tiles, the shortest contiguous run among them): a tile's run is its
    rows' length, or all of it where its rows are whole rows of the tensor."""
    tile = 0
    runs = []
    for op, shape in zip(low.kernel.ops, low.tiles, strict=True):
        if not isinstance(op, Load) or shape is None:
            continue
        esize = np.dtype(low.tensor_dtypes[op.tensor]).itemsize
        nbytes = math.prod(shape) * esize
        tile += nbytes
        whole_rows = op.transposed or shape[-1] >= low.tensor_shapes[op.tensor][-1]
        runs.append(nbytes if whole_rows else shape[-1] * esize)
    return tile, min(runs, default=0)
