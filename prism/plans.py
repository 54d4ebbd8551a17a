"""Hand-built μGraph plans of the benchmark programs, with symbolic sizes.

They are the fused kernels the search must find (tests check it), and what the code generator
is developed against. Size symbols: ``x``/``y`` grid dims, ``i`` the for-loop, ``s`` KV splits.
"""

from __future__ import annotations

from collections.abc import Callable

from prism.errors import WorkloadError
from prism.graph import Graph
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    ReduceOp,
    Save,
    UnaryOp,
)
from prism.ops import Binary, Const, DimRecip, Reduce, Unary

EPS = 1e-6


def _wrap(graph: Graph, name: str, kernels: list[CustomKernel]) -> KernelGraph:
    return KernelGraph.of(graph, name, kernels)


def _rms_factor(sum_sq: int, tensor: str, dim: int, base: int) -> list[BlockOp]:
    """ops base..base+2: rsqrt(sum_sq / D + eps)."""
    return [
        UnaryOp(Unary.SCALE, sum_sq, DimRecip(tensor, dim)),
        UnaryOp(Unary.ADD_SCALAR, base, Const(EPS)),
        UnaryOp(Unary.RSQRT, base + 1),
    ]


def rmsnorm_linear_plan(graph: Graph) -> KernelGraph:
    """One kernel: W's columns over x, K over the loop; matmul and Σx² accumulated; RMS after."""
    ops: list[BlockOp] = [
        Load("X", (None,), 1),  # 0 [n, K/i]
        Load("W", (1,), 0),  # 1 [K/i, N/x]
        MatmulOp(0, 1),  # 2
        Accum(2),  # 3 [n, N/x]
        UnaryOp(Unary.SQUARE, 0),  # 4
        Accum(4, reduce_dim=1),  # 5 [n, 1]
        *_rms_factor(5, "X", 1, 6),  # 6 7 8
        BinaryOp(Binary.MUL, 3, 8),  # 9
        Save(9, "O", (1,)),
    ]
    return _wrap(graph, "rmsnorm_linear", [CustomKernel("k0", ("x",), "i", tuple(ops))])


def rmsnorm_linear_2d_plan(graph: Graph, omap: tuple[int, int] = (0, 1)) -> KernelGraph:
    """X's rows over x, W's columns over y; ``omap=(1, 0)`` is a deliberately wrong saver."""
    ops: list[BlockOp] = [
        Load("X", (0, None), 1),
        Load("W", (None, 1), 0),
        MatmulOp(0, 1),
        Accum(2),
        UnaryOp(Unary.SQUARE, 0),
        Accum(4, reduce_dim=1),
        *_rms_factor(5, "X", 1, 6),
        BinaryOp(Binary.MUL, 3, 8),
        Save(9, "O", omap),
    ]
    return _wrap(graph, "rmsnorm_linear", [CustomKernel("k0", ("x", "y"), "i", tuple(ops))])


def swiglu_plan(graph: Graph) -> KernelGraph:
    """One kernel: both matmuls over the loop, silu and product after it."""
    ops: list[BlockOp] = [
        Load("X", (None,), 1),  # 0
        Load("Wg", (1,), 0),  # 1
        Load("Wu", (1,), 0),  # 2
        MatmulOp(0, 1),  # 3
        MatmulOp(0, 2),  # 4
        Accum(3),  # 5
        Accum(4),  # 6
        UnaryOp(Unary.SILU, 5),  # 7
        BinaryOp(Binary.MUL, 7, 6),  # 8
        Save(8, "O", (1,)),
    ]
    return _wrap(graph, "swiglu", [CustomKernel("k0", ("x",), "i", tuple(ops))])


def rmsnorm_mlp_plan(graph: Graph) -> KernelGraph:
    """One kernel: two matmuls and Σx² over the loop; RMS factor and product after it."""
    ops: list[BlockOp] = [
        Load("X", (None,), 1),  # 0
        Load("Wu", (1,), 0),  # 1
        Load("Wg", (1,), 0),  # 2
        MatmulOp(0, 1),  # 3
        MatmulOp(0, 2),  # 4
        Accum(3),  # 5
        Accum(4),  # 6
        UnaryOp(Unary.SQUARE, 0),  # 7
        Accum(7, reduce_dim=1),  # 8
        *_rms_factor(8, "X", 1, 9),  # 9 10 11
        BinaryOp(Binary.MUL, 5, 6),  # 12
        UnaryOp(Unary.SQUARE, 11),  # 13  (rms factor applies to both matmuls)
        BinaryOp(Binary.MUL, 12, 13),  # 14
        Save(14, "O", (1,)),
    ]
    return _wrap(graph, "rmsnorm_mlp", [CustomKernel("k0", ("x",), "i", tuple(ops))])


def _attention_body(qknorm: bool, q_imap: tuple[int | None, ...], kv_imap: tuple[int | None, ...]) -> list[BlockOp]:
    """Loads Q, Kt, V; returns ops ending with numerator (-2) and denominator (-1) accumulators."""
    ops: list[BlockOp] = [Load("Q", q_imap, None), Load("Kt", kv_imap, 2), Load("V", _v_imap(kv_imap), 1)]
    q = 0
    if qknorm:
        ops += [
            UnaryOp(Unary.SQUARE, 0),  # 3
            ReduceOp(Reduce.SUM, 3, 2),  # 4
            *_rms_factor(4, "Q", 2, 5),  # 5 6 7
            BinaryOp(Binary.MUL, 0, 7),  # 8
        ]
        q = 8
    s = len(ops)
    ops += [MatmulOp(q, 1), UnaryOp(Unary.EXP, s), MatmulOp(s + 1, 2), Accum(s + 2), Accum(s + 1, reduce_dim=2)]
    return ops


def _v_imap(kt_imap: tuple[int | None, ...]) -> tuple[int | None, ...]:
    """V[b, L, h] is split like Kt[b, h, L]: batch stays dim 0, the KV dim moves from 2 to 1."""
    return tuple({0: 0, 2: 1}.get(a, a) if a is not None else None for a in kt_imap)


def gqa_plan(graph: Graph, qknorm: bool = False, rows_on_y: bool = False) -> KernelGraph:
    """One kernel: batch over x (query rows over y if asked), KV over the loop, division after it."""
    q_imap: tuple[int | None, ...] = (0, 1) if rows_on_y else (0,)
    kv_imap: tuple[int | None, ...] = (0, None) if rows_on_y else (0,)
    ops = _attention_body(qknorm, q_imap, kv_imap)
    n = len(ops)
    ops += [BinaryOp(Binary.DIV, n - 2, n - 1), Save(n, "O", (0, 1) if rows_on_y else (0,))]
    grid = ("x", "y") if rows_on_y else ("x",)
    name = "qknorm_gqa" if qknorm else "gqa"
    return _wrap(graph, name, [CustomKernel("k0", grid, "i", tuple(ops))])


def gqa_split_plan(graph: Graph, qknorm: bool = False) -> KernelGraph:
    """Two kernels (split-KV): KV splits over y write partial sums; a combine kernel reduces them."""
    ops = _attention_body(qknorm, (0, None), (0, 2))
    n = len(ops)
    ops += [Save(n - 2, "N", (0, 2)), Save(n - 1, "D", (0, 2))]
    combine: list[BlockOp] = [
        Load("N", (0,), 2),  # [1, G, H]
        Load("D", (0,), 2),  # [1, G, 1]
        Accum(0),
        Accum(1),
        BinaryOp(Binary.DIV, 2, 3),
        Save(4, "O", (0,)),
    ]
    name = "qknorm_gqa" if qknorm else "gqa"
    return _wrap(
        graph,
        name,
        [CustomKernel("split", ("x", "s"), "i", tuple(ops)), CustomKernel("combine", ("x",), "s", tuple(combine))],
    )


def _safe_attention_body(qknorm: bool, q_imap: tuple[int | None, ...],
                         kv_imap: tuple[int | None, ...]) -> tuple[list[BlockOp], int]:
    """Safe softmax: per KV chunk its row max c, exp(S - c), and the numerator and denominator
    accumulated with rescaling by c (the online softmax). Returns the ops (numerator at -2,
    denominator at -1) and the index of c."""
    ops = _attention_body(qknorm, q_imap, kv_imap)[:-4]  # loads (+ rms factor) and S = Q @ Kt
    s = len(ops) - 1
    ops += [
        ReduceOp(Reduce.MAX, s, 2),  # c: the chunk's row max
        BinaryOp(Binary.SUB, s, s + 1),
        UnaryOp(Unary.EXP, s + 2),
        MatmulOp(s + 3, 2),
        Accum(s + 4, rescale=s + 1),
        Accum(s + 3, reduce_dim=2, rescale=s + 1),  # the row sums, rescaled as they accumulate
    ]
    return ops, s + 1


def safe_gqa_plan(graph: Graph, qknorm: bool = False) -> KernelGraph:
    """One kernel of safe attention: batch over x, KV over the loop with online rescaling."""
    ops, _ = _safe_attention_body(qknorm, (0,), (0,))
    n = len(ops)
    ops += [BinaryOp(Binary.DIV, n - 2, n - 1), Save(n, "O", (0,))]
    name = "qknorm_gqa_safe" if qknorm else "gqa_safe"
    return _wrap(graph, name, [CustomKernel("k0", ("x",), "i", tuple(ops))])


def safe_gqa_split_plan(graph: Graph, qknorm: bool = False) -> KernelGraph:
    """Split-KV safe attention: each split writes its rescaled partial sums and its running max;
    the combine kernel rescales the partials by exp(M_p - max M) as it sums them."""
    ops, c = _safe_attention_body(qknorm, (0, None), (0, 2))
    n = len(ops)
    ops += [Accum(c, fn=Reduce.MAX), Save(n - 2, "N", (0, 2)), Save(n - 1, "D", (0, 2)), Save(n, "M", (0, 2))]
    combine: list[BlockOp] = [
        Load("N", (0,), 2),  # [1, G, H]
        Load("D", (0,), 2),  # [1, G, 1]
        Load("M", (0,), 2),  # [1, G, 1]
        Accum(0, rescale=2),
        Accum(1, rescale=2),
        BinaryOp(Binary.DIV, 3, 4),
        Save(5, "O", (0,)),
    ]
    name = "qknorm_gqa_safe" if qknorm else "gqa_safe"
    return _wrap(
        graph,
        name,
        [CustomKernel("split", ("x", "s"), "i", tuple(ops)), CustomKernel("combine", ("x",), "s", tuple(combine))],
    )


PLANS: dict[str, list[Callable[[Graph], KernelGraph]]] = {
    "rmsnorm_linear": [rmsnorm_linear_plan, rmsnorm_linear_2d_plan],
    "rmsnorm_mlp": [rmsnorm_mlp_plan],
    "swiglu": [swiglu_plan],
    "gqa": [gqa_plan, lambda g: gqa_plan(g, rows_on_y=True), gqa_split_plan],
    "qknorm_gqa": [
        lambda g: gqa_plan(g, qknorm=True),
        lambda g: gqa_plan(g, qknorm=True, rows_on_y=True),
        lambda g: gqa_split_plan(g, qknorm=True),
    ],
    "gqa_safe": [safe_gqa_plan, safe_gqa_split_plan],
    "qknorm_gqa_safe": [lambda g: safe_gqa_plan(g, qknorm=True), lambda g: safe_gqa_split_plan(g, qknorm=True)],
}


def hand_plans(program: str, graph: Graph) -> list[KernelGraph]:
    """The hand-built plans of a benchmark program, for ``graph``'s shapes (sizes symbolic)."""
    if program not in PLANS:
        raise WorkloadError(f"no hand-built plans for {program!r}; known: {', '.join(PLANS)}")
    return [make(graph) for make in PLANS[program]]


# ---------------------------------------------------------------------------------- split-K plans
# Extra plans for the memory-bound decode GEMVs (added by the code generator's work, issue 5): the
# contraction dim is split over a grid dim y so that many blocks stream the weights at once; a
# combine kernel (grid c, loop y) sums the float32 partials and applies the epilogue. Kept out of
# PLANS so that hand_plans() stays the set the search is tested against; see codegen_plans().


def rmsnorm_linear_splitk_plan(graph: Graph) -> KernelGraph:
    """split: W's columns over x, K over y and the loop -> partials P[n*y, N]; combine: Σ_y P and
    Σ x² (X re-read, it is small), RMS factor, save."""
    split: list[BlockOp] = [
        Load("X", (None, 1), 1),  # 0 [n, K/(y i)]
        Load("W", (1, 0), 0),  # 1 [K/(y i), N/x]
        MatmulOp(0, 1),  # 2
        Accum(2),  # 3 [n, N/x]
        Save(3, "P", (1, 0)),  # P[n*y, N]: block (x, y) writes rows y*n.., columns x*N/x..
    ]
    combine: list[BlockOp] = [
        Load("P", (1,), 0),  # 0 [n, N/c]: iteration t reads split y = t's rows
        Load("X", (None,), 1),  # 1 [n, K/y]
        Accum(0),  # 2
        UnaryOp(Unary.SQUARE, 1),  # 3
        Accum(3, reduce_dim=1),  # 4 [n, 1]
        *_rms_factor(4, "X", 1, 5),  # 5 6 7
        BinaryOp(Binary.MUL, 2, 7),  # 8
        Save(8, "O", (1,)),
    ]
    return _wrap(graph, "rmsnorm_linear", [CustomKernel("split", ("x", "y"), "i", tuple(split)),
                                           CustomKernel("combine", ("c",), "y", tuple(combine))])


def swiglu_splitk_plan(graph: Graph) -> KernelGraph:
    """split: both matmuls' partial sums over K chunks (grid y); combine: Σ_y, silu, product."""
    split: list[BlockOp] = [
        Load("X", (None, 1), 1),  # 0
        Load("Wg", (1, 0), 0),  # 1
        Load("Wu", (1, 0), 0),  # 2
        MatmulOp(0, 1),  # 3
        MatmulOp(0, 2),  # 4
        Accum(3),  # 5
        Accum(4),  # 6
        Save(5, "Pg", (1, 0)),
        Save(6, "Pu", (1, 0)),
    ]
    combine: list[BlockOp] = [
        Load("Pg", (1,), 0),  # 0
        Load("Pu", (1,), 0),  # 1
        Accum(0),  # 2
        Accum(1),  # 3
        UnaryOp(Unary.SILU, 2),  # 4
        BinaryOp(Binary.MUL, 4, 3),  # 5
        Save(5, "O", (1,)),
    ]
    return _wrap(graph, "swiglu", [CustomKernel("split", ("x", "y"), "i", tuple(split)),
                                   CustomKernel("combine", ("c",), "y", tuple(combine))])


SPLIT_K_PLANS: dict[str, list[Callable[[Graph], KernelGraph]]] = {
    "rmsnorm_linear": [rmsnorm_linear_splitk_plan],
    "swiglu": [swiglu_splitk_plan],
}


def codegen_plans(program: str, graph: Graph) -> list[KernelGraph]:
    """hand_plans() followed by the split-K plans of the program (what ``prism emit`` generates)."""
    return hand_plans(program, graph) + [make(graph) for make in SPLIT_K_PLANS.get(program, [])]
