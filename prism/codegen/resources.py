"""Cheap resource estimate of a μGraph at concrete sizes, without rendering any source.

It runs the same lowering as ``generate`` (prism.codegen.lower), so a size choice that
``resources`` accepts is one ``generate`` accepts, with the same shared memory and threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import DEFAULT_OPTIONS, Options, lower_graph
from prism.ir import KernelGraph


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
        blocks = 1
        for g in low.grid:
            blocks *= g
        out.append(KernelResources(low.kernel.name, low.smem_bytes, low.threads, blocks, low.stages, low.acc_regs,
                                    low.ring_bytes, low.loop))
    return Resources(tuple(out))
