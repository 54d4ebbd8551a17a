"""Cheap resource estimate of a μGraph at concrete sizes, without rendering any source.

It runs the same lowering as ``generate`` (prism.codegen.lower), so a size choice that
``resources`` accepts is one ``generate`` accepts, with the same shared memory and threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prism.codegen.arch import arch as get_arch
from prism.codegen.fuse import launch_fusion
from prism.codegen.lower import DEFAULT_OPTIONS, Options, lower_graph
from prism.codegen.lowered import KernelLowering, Phase, Store
from prism.ir import Accum, KernelGraph, Load
from prism.ops import ITEMSIZE


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
    rounds: int = 1  # dependent block-wide rounds of one loop iteration (``loop_rounds``)
    reread: float = 1.0  # bytes the grid loads over the bytes of the tensors it loads (``_load_bytes``)
    grid_bytes: int = 0  # bytes the whole grid loads (every block's tiles, a loop-varying one once an iteration)
    per_sm: int = 1  # blocks an SM runs at once where the lowering counts on two (``KernelLowering.per_sm``)


@dataclass(frozen=True)
class Resources:
    kernels: tuple[KernelResources, ...]
    fused: bool = False  # two consecutive kernels run as one launch (``fuse.launch_fusion``)

    @property
    def launches(self) -> int:
        return len(self.kernels) - self.fused

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
    """Shared memory, threads and blocks per custom kernel, of the lowering ``generate`` launches (a
    fused pair may be lowered again at one warp count: ``fuse.launch_fusion``); CodegenError when the
    sizes do not fit."""
    opts = options or DEFAULT_OPTIONS
    gl, _, fused = launch_fusion(kg, lower_graph(kg, get_arch(arch), opts), opts)
    out = []
    for low in gl.kernels:
        if low is None:
            continue
        tile, run, grid, reread = _load_bytes(low)
        out.append(KernelResources(low.kernel.name, low.smem_bytes, low.threads, low.blocks, low.stages, low.acc_regs,
                                    low.ring_bytes, low.loop, tile, run, loop_rounds(low), reread, grid, low.per_sm))
    return Resources(tuple(out), fused is not None)


def loop_rounds(low: KernelLowering) -> int:
    """The dependent block-wide rounds of one loop iteration: the stage's arrival, then one per loop
    value published to a shared tile (a matmul's product, a reduction, a materialised operand) that
    another loop op reads: a barrier stands between them. A GEMV's iteration is one round (its product
    goes to the accumulator); an attention split's is three or four (scores, their max, the
    probabilities as the second matmul's operand)."""
    ops, loop = low.kernel.ops, {i for i, ph in enumerate(low.phases) if ph is Phase.LOOP}
    published = [i for i in loop if not isinstance(ops[i], Load | Accum) and low.stores[i] is not Store.INLINE
                 and any(j in loop and not isinstance(ops[j], Accum) for j in low.users(i))]
    return 1 + len(published)


# a tile smaller than a DRAM burst (a row's statistics beside the row) wastes at most its own burst: its
# run is not the kernel's shortest
SHORT_TILE_BYTES = 128


def _load_bytes(low: KernelLowering) -> tuple[int, int, int, float]:
    """(bytes of a block's loaded tiles, the shortest contiguous run among them, the bytes the whole
    grid loads, the reread factor): a tile's run is its rows' length, or all of it where its rows are
    whole rows of the tensor; tiles under ``SHORT_TILE_BYTES`` count only where all are. The grid loads
    every block's tiles, a loop-varying one once an iteration; the reread factor is that against the
    tensors' bytes: 1 when the blocks share out the tensors, about 8 when eight blocks each read the
    same keys and values for one query row of an attention."""
    tile = grid = whole = 0
    runs = []
    for op, shape in zip(low.kernel.ops, low.tiles, strict=True):
        if not isinstance(op, Load) or shape is None:
            continue
        esize = ITEMSIZE[low.tensor_dtypes[op.tensor]]
        nbytes = math.prod(shape) * esize
        tile += nbytes
        grid += nbytes * low.blocks * (low.loop if op.fmap is not None else 1)
        whole += math.prod(low.tensor_shapes[op.tensor]) * esize
        whole_rows = op.transposed or shape[-1] >= low.tensor_shapes[op.tensor][-1]
        runs.append((nbytes < SHORT_TILE_BYTES, nbytes if whole_rows else shape[-1] * esize))
    return tile, min(runs, default=(False, 0))[1], grid, grid / whole if whole else 1.0
