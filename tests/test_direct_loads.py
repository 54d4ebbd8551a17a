"""``Options.direct_loads``: a kernel without a main loop reads the Loads of program inputs that no
matmul reads in place in global memory (no cp.async copy, shared tile or barrier for them). Checked by
the lowered-IR emulator against the interpreter, by the source, and by nvcc where installed."""

from __future__ import annotations

import re

import numpy as np
import pytest
from row_cases import at_rows, row_vendor_at

from prism import interpreter, plans, workloads
from prism.codegen import DirectLoads, Options, generate
from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import lower_graph
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.graph import Graph
from prism.ir import Accum, CustomKernel, KernelGraph, Load, ReduceOp, Save
from prism.ops import Reduce
from prism.reference import relative_error
from prism.rowwise import row_plan

DIRECT = Options(direct_loads=DirectLoads.ALWAYS)


def _row_kernel(g: Graph) -> KernelGraph:
    """The row-wise plan with one block per row (grid x over the rows, y = 1)."""
    kg = row_plan(g)
    assert kg is not None
    return at_rows(kg, g.inputs[0].shape[0])


def _matches(kg: KernelGraph, g: Graph) -> None:
    rng = np.random.default_rng(2)
    inputs = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    got, want = emulate(kg, inputs, options=DIRECT), interpreter.run(kg, inputs)
    assert all(relative_error(got[k], want[k]) < 1e-12 for k in want)


def test_an_elementwise_kernel_reads_its_inputs_in_place() -> None:
    g = Graph()
    x, y = g.input((8, 64), "float16", "X"), g.input((8, 64), "float16", "Y")
    g.output(g.mul(g.silu(x), y), "O")
    kg = _row_kernel(g)
    _matches(kg, g)
    k = generate(kg, arch="sm_80", options=DIRECT).kernels[0]
    assert k.smem_bytes == 0 and "load_s_" not in k.source and "__syncthreads();" not in k.source
    assert "reinterpret_cast<const unsigned*>(g_s_X" in k.source  # a run of 8 halves, one 16-byte load
    default = generate(kg, arch="sm_80").kernels[0]  # the default reads an element-wise kernel's inputs in place
    assert default.source.replace(default.entry, k.entry) == k.source
    never = generate(kg, arch="sm_80", options=Options(direct_loads=DirectLoads.NEVER)).kernels[0]
    assert "load_s_X(" in never.source and never.smem_bytes > 0
    if nvcc_path() is not None:
        assert len(compile_check([(k.entry, k.source)], "sm_80", jobs=1)) == 1


def test_a_norm_reads_its_row_twice_from_global_memory() -> None:
    g = Graph()
    x, w = g.input((4, 128), "float16", "X"), g.input((1, 128), "float16", "W")
    g.output(g.mul(g.rms_norm(x), w), "O")
    kg = _row_kernel(g)
    _matches(kg, g)
    low = next(k for k in lower_graph(kg, get_arch("sm_80"), DIRECT).kernels if k is not None)
    assert all(b.direct for i, b in low.bufs.items() if i in {lp.op for lp in low.loads})
    assert not any(b.direct for b in low.all_bufs().values())  # the reduction's tile stays in shared memory
    elementwise = Options(direct_loads=DirectLoads.ELEMENTWISE)
    copied = next(k for k in lower_graph(kg, get_arch("sm_80"), elementwise).kernels if k is not None)
    assert not any(b.direct for b in copied.bufs.values())  # ELEMENTWISE: a kernel that reduces copies its rows
    # the default (ROWS): one row a block, its sum walked by the whole block and held in registers: in place
    default = next(k for k in lower_graph(kg, get_arch("sm_80")).kernels if k is not None)
    assert default.held and all(b.direct for i, b in default.bufs.items() if i in {lp.op for lp in default.loads})
    rng = np.random.default_rng(4)
    inputs = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
    assert relative_error(got["O"], want["O"]) < 1e-12


def test_rows_reads_in_place_only_where_every_reduction_is_a_held_row() -> None:
    """``DirectLoads.ROWS`` (the default): two rows a block (a block-wide walk per row, published through
    shared memory) keep their rows copied; one row a block, its sum held in registers, reads in place."""
    g = Graph()
    x, w = g.input((4, 4096), "float16", "X"), g.input((1, 4096), "float16", "W")
    g.output(g.mul(g.rms_norm(x), w), "O")
    kg = row_plan(g)
    assert kg is not None
    one, two = at_rows(kg, 4), at_rows(kg, 2)
    low_one, low_two = (next(k for k in lower_graph(c, get_arch("sm_80")).kernels if k is not None) for c in (one, two))
    assert low_one.held and any(b.direct for b in low_one.bufs.values())
    assert not low_two.held and not any(b.direct for b in low_two.bufs.values())
    rng = np.random.default_rng(9)
    inputs = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    for c in (one, two):
        got, want = emulate(c, inputs), interpreter.run(c, inputs)
        assert relative_error(got["O"], want["O"]) < 1e-12


def test_runs_are_only_as_wide_as_the_rows_are_aligned() -> None:
    g = Graph()
    x = g.input((8, 6), "float16", "X")  # rows of 12 bytes start 4-byte aligned: runs of 2 halves
    g.output(g.silu(x), "O")
    kg = _row_kernel(g)
    _matches(kg, g)
    low = next(k for k in lower_graph(kg, get_arch("sm_80"), DIRECT).kernels if k is not None)
    assert [b.galign for b in low.bufs.values() if b.direct] == [4]
    src = generate(kg, arch="sm_80", options=DIRECT).kernels[0].source
    assert re.search(r"unsigned (s\d+_v0|early\d+)\[1\];", src) and not re.search(r"unsigned \w+\[[24]\];", src)


@pytest.mark.parametrize("sizes", [{"x": 2, "i": 2}])
def test_a_kernel_with_a_main_loop_or_a_matmul_keeps_its_copies(sizes: dict[str, int]) -> None:
    g = workloads.program("rmsnorm_linear", n=8, d=64)
    kg = plans.hand_plans("rmsnorm_linear", g)[0].instantiate(sizes)
    low = next(k for k in lower_graph(kg, get_arch("sm_80"), DIRECT).kernels if k is not None)
    assert low.loop > 1 and not any(b.direct for b in low.bufs.values())


def test_a_vendor_gemms_output_is_read_in_place_too() -> None:
    """A tensor a predefined kernel (the vendor GEMM) wrote in an earlier launch is settled: the
    element-wise kernel after it reads it in place, as it reads a program input; emulation matches."""
    from prism.ir import CustomKernel

    g = Graph()
    y = g.matmul(g.input((8, 32), "float16", "X"), g.input((32, 64), "float16", "W"))
    g.output(g.mul(g.silu(y), g.input((8, 64), "float16", "Y")), "O")
    kg = row_vendor_at(g, 8)
    (k,) = [k for k in kg.kernels if isinstance(k, CustomKernel)]
    assert {op.tensor for op in k.loads} - {t.name for t in kg.inputs}  # the GEMM's output
    low = next(x for x in lower_graph(kg, get_arch("sm_80")).kernels if x is not None)
    assert low.bufs and all(b.direct for b in low.bufs.values())
    rng = np.random.default_rng(4)
    inputs = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    got, want = emulate(kg, inputs), interpreter.run(kg, inputs)
    assert relative_error(got["O"], want["O"]) < 1e-12


def test_a_one_iteration_kernel_reads_its_tile_from_the_tile_origin() -> None:
    """A column sum's kernel at one iteration: its loop is not emitted, so its direct Load must not use
    the per-iteration pointer (``gi_``) the loop would declare (nvcc rejected it: split-loop plans of the
    prefill zoo's col_sum at one iteration per split, found on the H200)."""
    g = Graph()
    x = g.input((64, 128), "float16", "X")
    g.output(g.sum(x, 0), "O")
    # a split of the loop over the rows (grid dim s) that adds whole tiles: the combine reduces them
    split = CustomKernel("k0_split", ("k0_x", "s"), "k0_i", (Load("X", (1, 0), 0), Accum(0), Save(1, "part0", (1, 0))))
    combine = CustomKernel("k0_combine", ("k0_x",), "s", (Load("part0", (1,), 0), Accum(0), ReduceOp(Reduce.SUM, 1, 0),
                                                         Save(2, "O", (1,))))
    concrete = KernelGraph.of(g, "col_sum", [split, combine]).instantiate({"k0_x": 2, "s": 4, "k0_i": 1})
    rng = np.random.default_rng(3)
    inputs = {"X": rng.standard_normal((64, 128))}
    got, want = emulate(concrete, inputs), g.evaluate(inputs)
    assert relative_error(got["O"], want["O"]) < 1e-12
    kernel = generate(concrete, arch="sm_80").kernels[0]  # the split kernel
    assert "gi_" not in kernel.source and "g_s_X +" in kernel.source
    if nvcc_path() is not None:
        assert len(compile_check([(kernel.entry, kernel.source)], "sm_80", jobs=1)) == 1
