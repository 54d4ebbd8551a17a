"""``Options.skew_materialise``: a loop's materialised matmul operand computed from its stage's tiles
alone (x·g ahead of a GEMV) is computed one iteration ahead into a second copy, so the loop keeps one
barrier per iteration. The lowering picks those ops only; the emulator runs the skewed order (the
prologue computes iteration 0's, iteration it computes it + 1's from the next ring slot, the loop's wait
leaves one group fewer in flight) like the interpreter; the sources compile. On a GPU:
``tests/test_main_loop_gpu.py``."""

from __future__ import annotations

import pytest

from prism.codegen import Options, generate
from prism.codegen.nvcc import compile_check, nvcc_path
from tests.matmul_cases import matmul_graph, scaled_matmul_graph
from tests.test_emulate import _hand, cheap_sizes, emulate_error
from tests.test_late_refill import _loop
from tests.test_warp_tiles import _kernel

SKEW = Options(skew_materialise=True)


def test_the_product_is_skewed_where_two_stages_are_in_flight() -> None:
    kg = scaled_matmul_graph(16, 128, 1024, (1, 2), 16)
    low = _kernel(kg, SKEW)
    assert low.skewed == (2,) and low.bufs[2].parity and low.bufs[2].copies == 2 and low.prefetch >= 2
    assert low.loop_wait == low.prefetch - 2
    plain = _kernel(kg, Options())
    assert plain.skewed == () and not plain.bufs[2].ring and plain.loop_wait == plain.prefetch - 1
    assert _kernel(scaled_matmul_graph(16, 128, 128, (1, 2), 1), SKEW).skewed == ()  # no loop
    assert _kernel(scaled_matmul_graph(16, 128, 1024, (1, 2), 16), Options(skew_materialise=True, stages=2)).skewed == ()
    assert _kernel(matmul_graph(128, 128, 512, (1, 1), 8), SKEW).skewed == ()  # nothing materialised


def test_the_skewed_loop_has_one_barrier() -> None:
    kg = scaled_matmul_graph(16, 128, 1024, (1, 2), 16)
    plain, skewed = (_loop(generate(kg, arch="sm_80", options=o).kernels[0].source) for o in (Options(), SKEW))
    assert plain.count("__syncthreads();") == 2 and skewed.count("__syncthreads();") == 1
    low = _kernel(kg, SKEW)
    assert f"cp_async_wait<{low.prefetch - 2}>();" in skewed and "if (it + 1 < 16) {" in skewed


@pytest.mark.parametrize(("shape", "options"), [
    ((16, 128, 1024, (1, 2), 16), SKEW),  # refills: the next slot is read ahead of its iteration
    ((32, 64, 256, (2, 1), 2), SKEW),  # every stage copied in the prologue
    ((16, 256, 512, (1, 1), 8), Options(skew_materialise=True, stages=3)),  # the shallowest ring it takes
    ((64, 128, 512, (1, 1), 8), Options(skew_materialise=True, warps=8)),
], ids=["refills", "prologue", "three-stages", "eight-warps"])
def test_skewed_loops_emulate_like_the_interpreter(shape: tuple[int, int, int, tuple[int, int], int],
                                                   options: Options) -> None:
    kg = scaled_matmul_graph(*shape)
    assert _kernel(kg, options).skewed == (2,)
    assert emulate_error(kg, options) < 1e-9


@pytest.mark.parametrize("program", ["rmsnorm_linear", "swiglu", "rmsnorm_mlp"])
def test_hand_plans_emulate_like_the_interpreter_with_the_option(program: str) -> None:
    ran = 0
    for _, t in _hand(program):
        for sizes in cheap_sizes(t, 2):
            assert emulate_error(t.instantiate(sizes), SKEW) < 1e-9
            ran += 1
    assert ran


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_skewed_sources_compile_without_spills() -> None:
    sources = [(k.entry, k.source) for kg in (scaled_matmul_graph(16, 128, 1024, (1, 2), 16),
                                              scaled_matmul_graph(64, 128, 1024, (1, 1), 8))
               for k in generate(kg, arch="sm_80", options=SKEW).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled)
