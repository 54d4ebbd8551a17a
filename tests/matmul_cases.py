"""One-kernel matmul graphs O = X @ W for the code-generation tests (no search: importable where z3
and egglog are not installed)."""

from __future__ import annotations

from prism.ir import Accum, CustomKernel, KernelGraph, Load, MatmulOp, Save, TensorSpec


def matmul_graph(m: int, n: int, k: int, grid: tuple[int, int], loop: int) -> KernelGraph:
    """X [m, k] @ W [k, n] over a grid of row x column blocks and ``loop`` iterations over k."""
    ops = (Load("X", (0, None), 1), Load("W", (None, 1), 0), MatmulOp(0, 1), Accum(2), Save(3, "O", (0, 1)))
    return KernelGraph("mm", (TensorSpec("X", (m, k), "float16"), TensorSpec("W", (k, n), "float16")),
                       (TensorSpec("O", (m, n), "float16"),), (CustomKernel("k0", grid, loop, ops),))
