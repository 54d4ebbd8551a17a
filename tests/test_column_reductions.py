"""Reductions over a dim that is not a tile's last (a column sum, a column softmax): each output's lanes
walk one column down the rows, so as many lanes per output as the block needs to cover the outputs and
no more (``lower.tile_reduce_group``); with 32 per output a warp read one shared-memory bank per step
and reduced one column at a time (a prefill column sum took 38-345 µs on an H200 where the same
plan's element-wise accumulator took 9.5). Checked by the emulator against the interpreter and nvcc."""

from __future__ import annotations

import numpy as np
import pytest

from prism.codegen import generate
from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import lower_graph, tile_reduce_group
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.interpreter import run
from prism.ir import Accum, BinaryOp, BlockOp, CustomKernel, KernelGraph, Load, ReduceOp, Save, UnaryOp
from prism.ops import Binary, Reduce, Unary
from prism.reference import relative_error

N, D = 64, 256


def _col_sum() -> Graph:
    g = Graph()
    g.output(g.sum(g.input((N, D), "float16", "X"), 0), "O")
    return g


def _col_softmax() -> Graph:
    g = Graph()
    g.output(g.softmax(g.input((N, D), "float16", "X"), 0), "O")
    return g


LOAD = Load("X", (1,), 0)
SUM_PLANS: dict[str, tuple[BlockOp, ...]] = {
    "reduce in the accumulator": (LOAD, Accum(0, 0), Save(1, "O", (1,))),
    "reduce then accumulate": (LOAD, ReduceOp(Reduce.SUM, 0, 0), Accum(1), Save(2, "O", (1,))),
    "accumulate then reduce": (LOAD, Accum(0), ReduceOp(Reduce.SUM, 1, 0), Save(2, "O", (1,))),
}
# a searched plan of the prefill zoo's col_softmax: the whole column in one tile
SOFTMAX = (Load("X", (1,), None), ReduceOp(Reduce.MAX, 0, 0), BinaryOp(Binary.SUB, 0, 1), UnaryOp(Unary.EXP, 2),
           Accum(3, 0), Accum(3), BinaryOp(Binary.DIV, 5, 4), Save(6, "O", (1,)))


def _check(g: Graph, kg: KernelGraph) -> None:
    x = np.random.default_rng(5).standard_normal((N, D))
    want = g.evaluate({"X": x})["O"]
    assert relative_error(run(kg, {"X": x})["O"], want) < 1e-12
    assert relative_error(emulate(kg, {"X": x})["O"], want) < 1e-12
    if nvcc_path() is not None:
        k = generate(kg, arch="sm_80").kernels[0]
        assert len(compile_check([(k.entry, k.source)], "sm_80", jobs=1)) == 1


def test_lanes_per_output_of_a_column_reduction_cover_the_threads_only() -> None:
    assert tile_reduce_group((128, 256), 1, 128) == 32  # a row reduction: unchanged
    assert tile_reduce_group((128, 256), 0, 128) == 1  # 256 columns for 128 threads
    assert tile_reduce_group((256, 32), 0, 128) == 4
    assert tile_reduce_group((1024, 16), 0, 512) == 32
    assert tile_reduce_group((4, 16), 0, 128) == 4  # never more lanes than rows


@pytest.mark.parametrize("name", list(SUM_PLANS))
@pytest.mark.parametrize("sizes", [{"k0_x": 1, "k0_i": 4}, {"k0_x": 2, "k0_i": 2}, {"k0_x": 8, "k0_i": 1}])
def test_column_sums_emulate_like_the_interpreter(name: str, sizes: dict[str, int]) -> None:
    g = _col_sum()
    kg = KernelGraph.of(g, "col_sum", [CustomKernel("k0", ("k0_x",), "k0_i", SUM_PLANS[name])]).instantiate(sizes)
    _check(g, kg)


def test_a_column_sum_reduces_with_one_lane_per_column_when_the_columns_cover_the_block() -> None:
    g = _col_sum()
    kg = KernelGraph.of(g, "col_sum", [CustomKernel("k0", ("k0_x",), "k0_i", SUM_PLANS["reduce in the accumulator"])])
    low = lower_graph(kg.instantiate({"k0_x": 1, "k0_i": 4}), get_arch("sm_80")).kernels[0]
    assert low is not None and low.threads <= D
    assert low.accs[1].group == 1


@pytest.mark.parametrize("x", [1, 4, 16])
def test_a_column_softmax_emulates_like_the_interpreter(x: int) -> None:
    g = _col_softmax()
    _check(g, KernelGraph.of(g, "col_softmax", [CustomKernel("k0", ("k0_x",), 1, SOFTMAX)]).instantiate({"k0_x": x}))
