"""``Options.gemm_stages``: the least ring depth of a main loop with GEMM tiles, where shared memory
holds it; kernels without GEMM tiles and rings that do not fit keep the depth ``stage_target`` gives."""

from __future__ import annotations

from prism.codegen import Options
from tests.matmul_cases import matmul_graph
from tests.test_warp_tiles import _kernel

THREE = Options(gemm_stages=3)


def test_a_128x256_tile_of_48_kb_stages_gets_a_third_stage_where_it_fits() -> None:
    kg = matmul_graph(1024, 4096, 4096, (8, 16), 64)  # 128x256 tile, k-tile 64: 48 KB a stage
    assert _kernel(kg, Options()).stages == 2
    three = _kernel(kg, THREE)
    assert (three.stages, three.prefetch) == (3, 2) and three.smem_bytes == 3 * 48 * 1024


def test_rings_that_do_not_fit_and_kernels_without_gemm_tiles_keep_their_depth() -> None:
    wide = matmul_graph(128, 128, 4096, (1, 1), 32)  # 128x128 tile, k-tile 128: 64 KB a stage
    assert _kernel(wide, THREE).stages == 2
    gemv = matmul_graph(16, 4096, 4096, (1, 16), 64)  # 16 rows (no GEMM tile), 34 KB a stage: 2 deep
    assert _kernel(gemv, THREE).stages == _kernel(gemv, Options()).stages
    small = matmul_graph(512, 256, 1024, (4, 4), 16)  # 128x64 tile, 24 KB a stage: already 4 deep
    assert _kernel(small, THREE).stages == _kernel(small, Options()).stages == 4
