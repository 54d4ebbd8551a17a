"""``Options.short_runs``: a loop-free element-wise kernel whose 16-byte runs would leave threads idle
takes shorter runs (down to 4 bytes) so that each thread has at most one. Which kernels and widths, the
emulated values, and nvcc's compile (the timings: docs/codegen.md, "Shorter runs for element-wise kernels")."""

from __future__ import annotations

import numpy as np
import pytest

from prism import interpreter
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.lower import DEFAULT_OPTIONS, lower_graph
from prism.codegen.lowered import DirectLoads
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, ReduceOp, Save, TensorSpec, UnaryOp
from prism.ops import Binary, Reduce, Unary
from prism.reference import relative_error


def gelu_bias(rows: int, cols: int, grid: tuple[int, int], dtype: str = "float16") -> KernelGraph:
    """gelu(X + B) over a grid of column x row blocks (B a bias row)."""
    ops = (Load("B", (1, None), None), Load("X", (1, 0), None), BinaryOp(Binary.ADD, 1, 0), Accum(2),
           UnaryOp(Unary.GELU_ERF, 3), Save(4, "O", (1, 0)))
    ins = (TensorSpec("X", (rows, cols), dtype), TensorSpec("B", (1, cols), dtype))
    return KernelGraph("gelu_bias", ins, (TensorSpec("O", (rows, cols), dtype),), (CustomKernel("k0", grid, 1, ops),))


def _vec(kg: KernelGraph, options: Options = DEFAULT_OPTIONS) -> int:
    low = lower_graph(kg, arch("sm_80"), options).kernels[0]
    assert low is not None
    (save,) = low.saves.values()
    return save.vec


def test_runs_shorten_until_every_thread_has_one() -> None:
    assert _vec(gelu_bias(16, 3072, (12, 16))) == 2  # [1, 256] over 128 threads: 2 elements a thread
    assert _vec(gelu_bias(16, 3072, (12, 16)), Options(short_runs=False)) == 8
    assert _vec(gelu_bias(16, 3072, (24, 16))) == 2  # [1, 128]: runs stop at 4 bytes (64 threads busy)
    assert _vec(gelu_bias(16, 3072, (64, 1))) == 8  # [16, 48]: 96 runs of 8 (runs of 4 would be 192 > 128)
    assert _vec(gelu_bias(16, 3072, (12, 16), "float32")) == 2  # float32 [1, 256]: 128 runs of 8 bytes
    assert _vec(gelu_bias(16, 3072, (24, 16), "float32")) == 1  # [1, 128]: one 4-byte element a thread


def test_a_kernel_that_reduces_keeps_its_runs() -> None:
    ops = (Load("X", (1, 0), None), UnaryOp(Unary.EXP, 0), Accum(1), ReduceOp(Reduce.SUM, 2, 1),
           BinaryOp(Binary.DIV, 2, 3), Save(4, "O", (1, 0)))
    kg = KernelGraph("softmax", (TensorSpec("X", (16, 256), "float16"),), (TensorSpec("O", (16, 256), "float16"),),
                     (CustomKernel("k0", (1, 16), 1, ops),))
    assert _vec(kg) == 8


@pytest.mark.parametrize(("grid", "dtype"), [((12, 16), "float16"), ((24, 16), "float16"), ((12, 16), "float32")])
def test_short_runs_emulate_like_the_interpreter(grid: tuple[int, int], dtype: str) -> None:
    kg = gelu_bias(16, 3072, grid, dtype)
    ins = {t.name: np.random.default_rng(7).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


@pytest.mark.parametrize("direct", list(DirectLoads))
def test_short_runs_read_copied_or_in_place_tiles_alike(direct: DirectLoads) -> None:
    """The save's shorter runs read a tile copied with 16-byte cp.async as well as one read in place."""
    kg, options = gelu_bias(16, 3072, (12, 16)), Options(direct_loads=direct)
    assert _vec(kg, options) == 2
    ins = {t.name: np.random.default_rng(8).standard_normal(t.shape) for t in kg.inputs}
    assert relative_error(emulate(kg, ins, options=options)["O"], interpreter.run(kg, ins)["O"]) < 1e-12


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_short_run_sources_compile() -> None:
    sources = [(k.entry, k.source) for grid, dtype in (((12, 16), "float16"), ((24, 16), "float16"), ((12, 16), "float32"))
               for k in generate(gelu_bias(16, 3072, grid, dtype), arch="sm_80").kernels]
    assert len(compile_check(sources, "sm_80", jobs=2)) == 3
