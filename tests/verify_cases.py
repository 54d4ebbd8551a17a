"""Wrong candidates for the verifier tests, each built by editing a hand plan of prism/plans.py."""

from __future__ import annotations

from dataclasses import replace

from prism import plans
from prism.graph import Graph
from prism.ir import Accum, BinaryOp, CustomKernel, KernelGraph, Load, MatmulOp, ReduceOp, Save, UnaryOp
from prism.ops import Binary, Reduce, Unary


def _kernel(kg: KernelGraph, i: int = 0) -> CustomKernel:
    k = kg.kernels[i]
    assert isinstance(k, CustomKernel)
    return k


def with_ops(kg: KernelGraph, ops: list, i: int = 0, **kw: object) -> KernelGraph:  # type: ignore[type-arg]
    kernels = list(kg.kernels)
    kernels[i] = replace(_kernel(kg, i), ops=tuple(ops), **kw)  # type: ignore[arg-type]
    return replace(kg, kernels=tuple(kernels))


def wrong_saver_dim(g: Graph) -> KernelGraph:
    """The 2-D plan whose saver concatenates rows along the column dim and vice versa."""
    return plans.rmsnorm_linear_2d_plan(g, omap=(1, 0))


def wrong_saver_dim_same_size(g: Graph) -> KernelGraph:
    """The same wrong saver with both grid dims of one size: well-shaped, so the e-graph must refuse it."""
    kg = plans.rmsnorm_linear_2d_plan(g, omap=(1, 0))
    return with_ops(kg, list(_kernel(kg).ops), grid=("x", "x"))


def accum_before_square(g: Graph) -> KernelGraph:
    """K split over the loop, but Σx² squares the loop-sum of X chunks instead of accumulating squares."""
    kg = plans.rmsnorm_linear_plan(g)
    ops = [
        *_kernel(kg).ops[:4],  # loads, matmul, its accumulator (3)
        Accum(0),  # 4: Σ_i X_chunk_i, [n, K/i]
        UnaryOp(Unary.SQUARE, 4),  # 5
        ReduceOp(Reduce.SUM, 5, 1),  # 6
        *plans._rms_factor(6, "X", 1, 7),  # 7 8 9
        BinaryOp(Binary.MUL, 3, 9),  # 10
        Save(10, "O", (1,)),
    ]
    return with_ops(kg, ops)


def contraction_on_grid(g: Graph) -> KernelGraph:
    """K split over a grid dim y whose partial products are concatenated by the saver, never summed."""
    kg = plans.rmsnorm_linear_2d_plan(g)
    ops = list(_kernel(kg).ops)
    ops[0] = Load("X", (None, 1), None)
    ops[1] = Load("W", (1, 0), None)
    ops[-1] = Save(9, "O", (1, 0))
    return with_ops(kg, ops)


def mismatched_operands(g: Graph) -> KernelGraph:
    """SwiGLU with both grid dims of one size: gate's columns split by x, up's by the other grid dim."""
    kg = plans.swiglu_plan(g)
    ops = [
        Load("X", (None, 0), 1),
        Load("Wg", (1, None), 0),
        Load("Wu", (None, 1), 0),  # should be (1, None)
        MatmulOp(0, 1), MatmulOp(0, 2), Accum(3), Accum(4), UnaryOp(Unary.SILU, 5), BinaryOp(Binary.MUL, 7, 6),
        Save(8, "O", (1, 0)),
    ]
    return with_ops(kg, ops, grid=("x", "x"))


def matched_operands(g: Graph) -> KernelGraph:
    """The correct version of ``mismatched_operands`` (control: it must be proven)."""
    kg = mismatched_operands(g)
    ops = list(_kernel(kg).ops)
    ops[2] = Load("Wu", (1, None), 0)
    return with_ops(kg, ops)


def divide_before_combine(g: Graph, qknorm: bool = False) -> KernelGraph:
    """Split-KV attention dividing each split's partial numerator by its partial denominator."""
    kg = plans.gqa_split_plan(g, qknorm=qknorm)
    split = list(_kernel(kg, 0).ops)
    n = len(split) - 2  # the two savers
    split = [*split[:n], BinaryOp(Binary.DIV, n - 2, n - 1), Save(n, "Q_", (0, 2))]
    combine = [Load("Q_", (0,), 2), Accum(0), Save(1, "O", (0,))]
    kg = with_ops(kg, split, 0)
    return with_ops(kg, combine, 1)


def missing_rms_factor(g: Graph) -> KernelGraph:
    """RMSNorm+matmul that saves the matmul without the rms factor."""
    kg = plans.rmsnorm_linear_plan(g)
    ops = list(_kernel(kg).ops)
    ops[-1] = Save(3, "O", (1,))
    return with_ops(kg, ops)


def wrong_reduce_dim(g: Graph) -> KernelGraph:
    """Attention whose denominator sums the query rows instead of the keys."""
    kg = plans.gqa_plan(g)
    ops = list(_kernel(kg).ops)
    a = ops[-3]
    assert isinstance(a, Accum)
    ops[-3] = Accum(a.x, reduce_dim=1)
    return with_ops(kg, ops)


def unrescaled(g: Graph, split: bool, qknorm: bool = False) -> KernelGraph:
    """Safe attention that forgets to rescale: the online accumulators become plain sums, so chunks
    shifted by different maxes are added as if they shared one."""
    kg = plans.safe_gqa_split_plan(g, qknorm) if split else plans.safe_gqa_plan(g, qknorm)
    kernels = []
    for k in kg.kernels:
        assert isinstance(k, CustomKernel)
        ops = tuple(replace(op, rescale=None) if isinstance(op, Accum) and op.rescale is not None else op
                    for op in k.ops)
        kernels.append(replace(k, ops=ops))
    return replace(kg, kernels=tuple(kernels))
