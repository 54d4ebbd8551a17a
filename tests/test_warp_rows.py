"""Row kernels of several rows a block keep each row in one warp (``KernelLowering.warp_rows``): warp ``w``
reduces rows ``j * warps + w``, keeps the reduced values in its lanes' registers (a butterfly of shuffles
leaves them in every lane) and saves the same rows, so nothing goes through shared memory and the kernel
has no barrier; its inputs are read in place, and each run of a row is loaded once (the reductions and
the save read the same addresses, which the compiler merges with no barrier between them). Checked on the
lowering, the source, the PTX where nvcc is installed, and by the emulator against the interpreter."""

from __future__ import annotations

import re

import numpy as np
import pytest
from row_cases import at_rows, layer_norm_affine

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import lower_graph
from prism.codegen.nvcc import nvcc_path, ptx
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.rowwise import row_plan


def _softmax(n: int, d: int) -> Graph:
    g = Graph()
    x = g.input((n, d), "float16", "X")
    e = g.exp(g.sub(x, g.max(x, -1)))
    g.output(g.div(e, g.sum(e, -1)), "O")
    return g


def _row_variance(n: int, d: int) -> Graph:
    g = Graph()
    x = g.input((n, d), "float16", "X")
    g.output(g.mean(g.square(g.sub(x, g.mean(x, -1))), -1), "O")
    return g


def _blocks(g: Graph, rows: int) -> KernelGraph:
    """The row plan of ``g`` at ``rows`` rows a block."""
    kg = row_plan(g)
    assert kg is not None
    return at_rows(kg, g.inputs[0].shape[0] // rows)


def _inputs(g: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) for t in g.inputs}


def _body(src: str) -> str:
    return src[src.index('extern "C" __global__'):]


@pytest.mark.parametrize("rows", [8, 16])
def test_a_layer_norm_of_several_rows_a_block_has_no_barrier(rows: int) -> None:
    g = layer_norm_affine(64, 768)
    kg = _blocks(g, rows)
    low = lower_graph(kg, arch("sm_80")).kernels[0]
    assert low is not None and low.warp_rows and rows >= low.warps
    assert all(lp.buf.direct for lp in low.loads)
    body = _body(generate(kg, arch="sm_80").kernels[0].source)
    assert "__syncthreads" not in body and "cp_async" not in body
    assert "a row per warp" in body and re.search(r"float red\d+_r\[\d\];", body)
    inputs = _inputs(g, 3)
    assert relative_error(emulate(kg, inputs)["O"], interpreter.run(kg, inputs)["O"]) < 1e-9
    if nvcc_path() is not None:
        text = ptx(generate(kg, arch="sm_80").kernels[0].source)
        assert "bar.sync" not in text
        # three 16-byte runs a lane of each of X, G and B for each of its rows, each loaded once
        passes = -(-rows // low.warps)
        assert len(re.findall(r"ld\.global\.nc\.v4", text)) == 3 * passes + 6


def test_a_softmax_keeps_its_max_and_sum_in_registers() -> None:
    """The max (a ReduceOp) and the sum (a one-iteration lane-group accumulator) of each row stay in the
    warp's registers; the save divides by them without reading shared memory."""
    g = _softmax(64, 1024)
    kg = _blocks(g, 8)
    low = lower_graph(kg, arch("sm_80")).kernels[0]
    assert low is not None and len(low.warp_rows) == 2
    body = _body(generate(kg, arch="sm_80").kernels[0].source)
    assert "__syncthreads" not in body and "= warp_max(p, 32);" in body and "= warp_sum(p, 32);" in body
    inputs = _inputs(g, 4)
    assert relative_error(emulate(kg, inputs)["O"], interpreter.run(kg, inputs)["O"]) < 1e-9


def test_one_row_a_block_and_a_saved_reduction_stay_as_they_were() -> None:
    """A row a block is walked by the whole block (``KernelLowering.held``); a program whose output is the
    reduced value ([n, 1]) saves another tile than its rows: neither is a warp-rows kernel."""
    one = lower_graph(_blocks(layer_norm_affine(64, 768), 1), arch("sm_80")).kernels[0]
    assert one is not None and not one.warp_rows and one.held
    var = lower_graph(_blocks(_row_variance(64, 1024), 8), arch("sm_80")).kernels[0]
    assert var is not None and not var.warp_rows


def test_rows_too_long_to_unroll_are_walked_as_before() -> None:
    """More than ``WARP_ROW_RUNS`` runs a lane (four 4096-wide rows a warp: 64 runs) is no warp-rows
    kernel: its loops would be unrolled past what the compiler keeps in registers."""
    kg = _blocks(layer_norm_affine(64, 4096), 16)
    low = lower_graph(kg, arch("sm_80"), Options(warps=4)).kernels[0]
    assert low is not None and low.warps == 4 and not low.warp_rows
    assert "__syncthreads" in generate(kg, arch="sm_80", options=Options(warps=4)).kernels[0].source
