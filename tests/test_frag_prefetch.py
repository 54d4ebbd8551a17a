"""``Options.frag_prefetch``: a warp-tiled matmul keeps two fragment sets and issues k-step t + 1's
ldmatrix before k-step t's mma. The lowering is unchanged but for the flag (the emulator runs the
same units), so the checks here are on the rendered source: the loads of the next k-step precede the
mma of this one, and the sources compile without spills. Their values on a GPU:
``tests/test_main_loop_gpu.py``."""

from __future__ import annotations

import pytest

from prism.codegen import Options, generate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.codegen.render_mma import render_mma
from tests.matmul_cases import matmul_graph
from tests.test_warp_tiles import _kernel

PREFETCH = Options(frag_prefetch=True)


def test_only_warp_tiled_matmuls_of_several_k_steps_prefetch() -> None:
    kg = matmul_graph(256, 256, 64, (2, 2), 2)  # 128x128 tiles, 2 k-steps an iteration
    assert _kernel(kg, PREFETCH).mmas[2].prefetch and not _kernel(kg, Options()).mmas[2].prefetch
    assert not _kernel(kg, Options(frag_prefetch=True, warp_tiles=False)).mmas[2].prefetch
    assert not _kernel(matmul_graph(256, 256, 16, (2, 2), 1), PREFETCH).mmas[2].prefetch  # one k-step


def test_the_next_k_steps_loads_precede_this_k_steps_mma() -> None:
    low = _kernel(matmul_graph(256, 256, 64, (2, 2), 2), PREFETCH)
    lines = [line.strip() for line in render_mma(low, 2).splitlines()]
    assert "unsigned a[2][" in lines[next(i for i, x in enumerate(lines) if x.startswith("unsigned a"))]
    first = next(i for i, x in enumerate(lines) if x.startswith("ldsm_x4(a[0][r]"))
    loop = next(i for i, x in enumerate(lines) if x.startswith("for (int q = 0;"))
    ahead = next(i for i, x in enumerate(lines) if x.startswith("ldsm_x4(a[(q + 1) & 1][r]"))
    mma = next(i for i, x in enumerate(lines) if x.startswith("mma16816("))
    assert first < loop < ahead < mma and "a[q & 1][r]" in lines[mma]
    assert "const int t = q + 1;" in lines[loop:ahead]


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_prefetching_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kg, w in ((matmul_graph(256, 256, 64, (2, 2), 2), 8),
                                                 (matmul_graph(128, 128, 512, (1, 1), 8), 4),
                                                 (matmul_graph(256, 96, 64, (2, 1), 2), 8))
               for k in generate(kg, arch="sm_80", options=Options(frag_prefetch=True, warps=w)).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 3 and all(c.spills == 0 for c in compiled)

