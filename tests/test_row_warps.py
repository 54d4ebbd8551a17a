"""Row kernels (no main loop, no matmul, program inputs only) get a warp count sized to their tile
(``lower._row_warps``): a thread per 8-element run of the largest loaded tile, 4 to 16 warps, at most
one warp per row where several rows are reduced. Checked by the count chosen, by the lowered-IR
emulator against the interpreter at those counts, and by nvcc where installed."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import DEFAULT_OPTIONS, lower_graph
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.rowwise import row_plan


def _rows_per_block(g: Graph, rows: int) -> KernelGraph:
    """The row-wise plan with ``rows`` rows a block."""
    kg = row_plan(g)
    assert kg is not None
    n = g.inputs[0].shape[0]
    return kg.instantiate({s: (n // rows if s.endswith("_x") else 1) for s in kg.symbols})


def _warps(kg: KernelGraph, options: Options = DEFAULT_OPTIONS) -> int:
    (low,) = [k for k in lower_graph(kg, get_arch("sm_80"), options).kernels if k is not None]
    return low.warps


def _norm(n: int, d: int) -> Graph:
    g = Graph()
    g.output(g.mul(g.rms_norm(g.input((n, d), "float16", "X")), g.input((1, d), "float16", "W")), "O")
    return g


@pytest.mark.parametrize(("n", "d", "rows", "want"), [
    (4, 4096, 1, 16),  # a 4096-wide row a block: 512 runs of 8
    (8, 4096, 8, 8),   # eight rows a block: one warp a row
    (8, 4096, 2, 4),   # two rows: at most 4 (the default)
    (4, 1024, 1, 4),   # 128 runs: 4 warps
    (4, 2048, 1, 8),
])
def test_a_norm_gets_a_warp_per_256_elements_of_its_row(n: int, d: int, rows: int, want: int) -> None:
    kg = _rows_per_block(_norm(n, d), rows)
    assert _warps(kg) == want
    assert _warps(kg, Options(row_warps=False)) == 4 and _warps(kg, Options(warps=2)) == 2


def test_row_kernels_at_their_warp_counts_match_the_interpreter() -> None:
    rng = np.random.default_rng(5)
    cases = [(_norm(4, 4096), 1), (_norm(8, 4096), 8)]
    g = Graph()
    x, y = g.input((4, 4096), "float16", "X"), g.input((4, 4096), "float16", "Y")
    g.output(g.mul(g.silu(x), y), "O")
    cases.append((g, 1))
    sources = []
    for graph, rows in cases:
        kg = _rows_per_block(graph, rows)
        assert _warps(kg) in (8, 16)
        inputs = {t.name: rng.standard_normal(t.shape) for t in graph.inputs}
        got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
        assert all(relative_error(got[k], want[k]) < 1e-12 for k in want)
        k = generate(kg, arch="sm_80").kernels[0]
        assert k.block[0] == 32 * _warps(kg)
        sources.append((k.entry, k.source))
    if nvcc_path() is not None:
        assert len(compile_check(sources, "sm_80", jobs=1)) == len(sources)


def test_a_kernel_that_reads_another_kernels_output_keeps_four_warps() -> None:
    """Only kernels that read program inputs count as row kernels (a split kernel's combine reads its
    partials and must share the split kernel's block size to share its launch): the norm after a
    vendor GEMM, reading the GEMM's output, keeps 4 warps at a width where reading an input gets 16."""
    from prism.ir import CustomKernel
    from prism.rowwise import row_vendor_plan

    g = Graph()
    y = g.matmul(g.input((4, 64), "float16", "X"), g.input((64, 4096), "float16", "W"))
    g.output(g.mul(g.rms_norm(y), g.input((1, 4096), "float16", "G")), "O")
    plan = row_vendor_plan(g)
    assert plan is not None
    kg = plan.instantiate({s: (4 if s.endswith("_x") else 1) for s in plan.symbols})
    (norm,) = [k for k in kg.kernels if isinstance(k, CustomKernel)]
    assert any(op.tensor not in {t.name for t in kg.inputs} for op in norm.loads)
    assert _warps(kg) == 4
    assert _warps(_rows_per_block(_norm(4, 4096), 1)) == 16  # the same row read from an input
