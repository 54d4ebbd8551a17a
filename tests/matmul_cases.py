"""One-kernel matmul graphs O = X @ W for the code-generation tests (no search: importable where z3
and egglog are not installed)."""

from __future__ import annotations

from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, MatmulOp, Save, TensorSpec
from prism.ops import Binary


def matmul_graph(m: int, n: int, k: int, grid: tuple[int, int], loop: int) -> KernelGraph:
    """X [m, k] @ W [k, n] over a grid of row x column blocks and ``loop`` iterations over k."""
    ops = (Load("X", (0, None), 1), Load("W", (None, 1), 0), MatmulOp(0, 1), Accum(2), Save(3, "O", (0, 1)))
    return KernelGraph("mm", (TensorSpec("X", (m, k), "float16"), TensorSpec("W", (k, n), "float16")),
                       (TensorSpec("O", (m, n), "float16"),), (CustomKernel("k0", grid, loop, ops),))


def scaled_matmul_graph(m: int, n: int, k: int, grid: tuple[int, int], loop: int) -> KernelGraph:
    """(X * G) @ W with G [1, k] (a norm's weight ahead of a projection): the product is materialised
    each iteration as the matmul's A operand."""
    ops = (Load("X", (0, None), 1), Load("G", (None, None), 1), BinaryOp(Binary.MUL, 0, 1), Load("W", (None, 1), 0),
           MatmulOp(2, 3), Accum(4), Save(5, "O", (0, 1)))
    ins = (TensorSpec("X", (m, k), "float16"), TensorSpec("G", (1, k), "float16"), TensorSpec("W", (k, n), "float16"))
    return KernelGraph("smm", ins, (TensorSpec("O", (m, n), "float16"),), (CustomKernel("k0", grid, loop, ops),))
