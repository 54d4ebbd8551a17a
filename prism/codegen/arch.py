"""Target architectures and the CUDA launch limits: shared memory per block, threads, grid.

Only sm_80 features are used (mma.sync, ldmatrix, cp.async), so one source runs on A100, H100 and
H200; the architecture only decides the budget the generator checks sizes against.
"""

from __future__ import annotations

from dataclasses import dataclass

from prism.errors import CodegenError

SMEM_DEFAULT = 48 * 1024  # above this a kernel needs the opt-in attribute
MAX_THREADS = 1024  # threads per block
MAX_GRID = (2**31 - 1, 65535, 65535)  # blocks per grid dim x, y, z
# How every generated source is compiled (NVRTC at run time, nvcc in the offline checks): float32
# division and square root as the hardware's approximations (at most 2 ulp of float32, as Triton's
# kernels compute them) instead of the IEEE-rounded sequences with their slow-path branch. Outputs are
# 16-bit, so the results round the same (docs/codegen.md, "Approximate division and square root").
# Denormals are kept (no flush to zero): a norm of tiny values must not divide by zero.
COMPILE_FLAGS: tuple[str, ...] = ("--std=c++17", "--prec-div=false", "--prec-sqrt=false")


@dataclass(frozen=True)
class Arch:
    name: str
    smem_max: int  # bytes of dynamic shared memory one block may opt into
    sms: int  # multiprocessors of the reference part (used by size heuristics only)
    max_threads: int = MAX_THREADS


ARCHS: dict[str, Arch] = {
    "sm_80": Arch("sm_80", 163 * 1024, 108),  # A100: 163 KB per block
    "sm_86": Arch("sm_86", 99 * 1024, 84),
    "sm_89": Arch("sm_89", 99 * 1024, 128),
    "sm_90": Arch("sm_90", 227 * 1024, 132),  # H100 / H200: 227 KB per block
}


def arch(name: str) -> Arch:
    if name not in ARCHS:
        raise CodegenError(f"unknown target architecture {name!r}; known: {', '.join(ARCHS)}")
    return ARCHS[name]
