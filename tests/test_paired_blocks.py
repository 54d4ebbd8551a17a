"""Two blocks of 4 warps an SM (``lower._pairs``, ``KernelLowering.per_sm``): a matmul tile whose
fragments take more than ``FRAG_REGS`` registers at 4 warps keeps 4 warps where its grid has more
blocks than the target has SMs and two blocks' shared memory fits one, and the size prior counts such
a kernel's waves at two blocks an SM. The 4-warp lowering itself is the one ``test_warp_tiles``
emulates (128x128 tiles at 4 warps among its cases)."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import DEFAULT_OPTIONS, FRAG_REGS, _frag_regs, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.resources import resources
from prism.codegen.sizes import size_score
from prism.ir import KernelGraph
from prism.reference import relative_error
from tests.matmul_cases import matmul_graph


def _gemm(m: int, tile_m: int, tile_n: int, k_tile: int = 64, n: int = 4096, k: int = 4096) -> KernelGraph:
    return matmul_graph(m, n, k, (m // tile_m, n // tile_n), k // k_tile)


def _low(kg: KernelGraph, target: str, options: Options = DEFAULT_OPTIONS) -> KernelLowering:
    low = lower_graph(kg, arch(target), options).kernels[0]
    assert low is not None
    return low


def test_a_128x128_tile_keeps_4_warps_only_where_two_blocks_share_an_sm() -> None:
    many = _low(_gemm(1024, 128, 128), "sm_90")  # 256 blocks, 132 SMs; 96 KB a block, 227 KB an SM
    assert many.warps == 4 and _frag_regs(many) > FRAG_REGS and many.per_sm == 2
    assert _low(_gemm(1024, 128, 128), "sm_90", Options(paired_blocks=False)).warps == 8  # the rule's option
    assert _low(_gemm(512, 128, 128), "sm_90").warps == 8  # 128 blocks: one an SM, so 8 warps as before
    assert _low(_gemm(1024, 128, 128), "sm_80").warps == 8  # two blocks' 96 KB exceed an A100's 163 KB
    small = _low(_gemm(1024, 128, 64), "sm_90")  # fragments within FRAG_REGS: 4 warps, counted once
    assert small.warps == 4 and small.per_sm == 1
    assert _low(_gemm(1024, 128, 256), "sm_90").warps == 8  # 256 fragment registers at 4 warps


def test_the_prior_counts_two_blocks_an_sm() -> None:
    """The 1024-row GEMM's 128x128 tile (256 blocks at 4 warps: 89.4 / 86.2 µs on an H100 at k-tiles of
    64 / 32) now outranks the 256x128 tile of 128 blocks at 8 warps (92.6 µs) it ranked below."""
    paired, wide = resources(_gemm(1024, 128, 128), "sm_90"), resources(_gemm(1024, 256, 128), "sm_90")
    assert (paired.kernels[0].per_sm, wide.kernels[0].per_sm) == (2, 1)
    assert size_score(paired, 132) > size_score(wide, 132)


def test_a_paired_lowering_emulates_like_the_interpreter() -> None:
    """A 2,176-row GEMM of 17 x 8 tiles of 128x128 (136 blocks: more than 132 SMs) at 4 warps."""
    kg = matmul_graph(2176, 1024, 32, (17, 8), 1)
    assert _low(kg, "sm_90").warps == 4
    ins = {t.name: np.random.default_rng(3).standard_normal(t.shape) for t in kg.inputs}
    out = emulate(kg, ins, arch="sm_90")["O"]
    assert relative_error(out, interpreter.run(kg, ins)["O"]) < 1e-12


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_paired_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kt in (64, 32) for k in generate(_gemm(1024, 128, 128, kt), arch="sm_90").kernels]
    assert all("__launch_bounds__(128)" in s for _, s in sources)
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled), [(c.registers, c.spills) for c in compiled]


def test_a_paired_split_kernel_that_fuses_with_its_combine_is_lowered_as_before() -> None:
    """rmsnorm_linear_d4096's split-K plan at 256 split blocks of a 16x1024 tile (128 fragment registers at
    4 warps): apart, the split kernel keeps 4 warps; where its combine fuses into its launch (c=4 combining
    blocks), both take 8 as before the rule (fused at 4, such kernels spilled); where the combine keeps
    its own launch (c=8), the split kernel stays at 4."""
    from prism import plans, workloads

    cfg = workloads.config("rmsnorm_linear_d4096")
    template = plans.codegen_plans(cfg.program, cfg.build())[2]
    fusing, apart = (template.instantiate({"x": 4, "y": 64, "i": 4, "c": c}) for c in (4, 8))
    assert [k.block[0] for k in generate(fusing, arch="sm_90", options=Options(fuse=False)).kernels] == [128, 128]
    assert [(k.name, k.block[0]) for k in generate(fusing, arch="sm_90").kernels] == [("split+combine", 256)]
    assert [(k.name, k.block[0]) for k in generate(apart, arch="sm_90").kernels] == [("split", 128), ("combine", 128)]
