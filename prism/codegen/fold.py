"""Transposes folded into the loads that read them: a generated matmul reads a transposed program
input in place.

A PyTorch ``linear`` is ``x @ w.T``: captured, the weight reaches the μGraph through a pre-defined
transpose kernel, and a generated kernel would read its output, a copy of the whole weight made on
every call. When every custom-kernel reader of that transpose is the B operand of a matmul, the
transpose is dropped and those loads read the input itself (``Load.transposed``): the tile is
copied in the input's own layout (rows along the weight's contiguous dim) and ldmatrix reads it as
the B operand without ``.trans`` (``render_mma``). Element-wise ops and reductions may read such a
tile too (a bank of vectors normalised, then multiplied by its transpose: ``prism.transposes``); their
reads swap the tile's last two indices. Only 2-D and 3-D program inputs are folded (a
linear layer's weight, an attention's keys): their layout is the caller's, and no kernel of the
plan writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from prism.graph import OpKind
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    Kernel,
    KernelGraph,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    UnaryOp,
    op_args,
)


def foldable(kg: KernelGraph) -> dict[str, str]:
    """Transposed name -> program input, for the transposes that ``fold_transposes`` removes."""
    inputs = {t.name: t for t in kg.inputs}
    outputs = {t.name for t in kg.outputs}
    found = {k.output: k.inputs[0] for k in kg.kernels
             if isinstance(k, PredefinedKernel) and k.kind is OpKind.TRANSPOSE and k.inputs[0] in inputs
             and len(inputs[k.inputs[0]].shape) in (2, 3) and k.output not in outputs}
    for k in kg.kernels:
        if isinstance(k, PredefinedKernel):
            for t in k.inputs:
                found.pop(t, None)  # a pre-defined op reads it: it stays (a view, or a copy)
            continue
        for i, op in enumerate(k.ops):
            if isinstance(op, Load) and op.tensor in found and not read_in_place(k.ops, i):
                found.pop(op.tensor)
    return found


def read_in_place(ops: Sequence[BlockOp], i: int) -> bool:
    """Every reader of Load ``i`` can read its tile in the input's own layout: a matmul as its B operand
    (ldmatrix without ``.trans``), or an element-wise op, reduction or accumulator, whose reads index the
    tile with its last two dims swapped (``Buf.transposed``). Not a matmul's A operand, not a Save."""
    users = [op for op in ops if i in op_args(op)]
    return bool(users) and all(
        (op.b == i and op.a != i) if isinstance(op, MatmulOp) else isinstance(op, UnaryOp | BinaryOp | ReduceOp | Accum)
        for op in users)


def fold_transposes(kg: KernelGraph) -> KernelGraph:
    """``kg`` with every foldable transpose of a program input read in place (or ``kg`` itself)."""
    fold = foldable(kg)
    if not fold:
        return kg
    kernels: list[Kernel] = []
    for k in kg.kernels:
        if isinstance(k, PredefinedKernel):
            if not (k.kind is OpKind.TRANSPOSE and k.output in fold):
                kernels.append(k)
            continue
        ops = tuple(replace(op, tensor=fold[op.tensor], transposed=True)
                    if isinstance(op, Load) and op.tensor in fold else op for op in k.ops)
        kernels.append(replace(k, ops=ops))
    return replace(kg, kernels=tuple(kernels))
