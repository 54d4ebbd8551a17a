"""The row-wise fused plan: a program with no matmul, built directly as one kernel.

Every op of such a program works elementwise or reduces some dims; a thread block that holds
whole extents of the reduced dims can run the whole program with no communication. The plan:
one kernel whose grid splits the dims no op reduces (up to three), loop size 1; each input is
loaded (replicated along a grid dim where it broadcasts), passed through a loop-size-1
accumulator into the post-loop phase, and the program's ops run there in order; outputs are
saved along the grid dims. The search finds such plans for small programs; for larger ones (a
layer norm, a residual add before a norm) its op bound or budget may stop it first, and this plan
still exists. It is verified like any searched plan (screen + proof) before it is used.

``row_vendor_plan`` carries it to programs with matmuls: the matmuls and transposes as predefined
kernels (the vendor GEMM reading transposes as views) and each run of other ops between them as one
row-wise kernel, the plan torch.compile's default makes of a norm feeding a linear layer (one fused
norm kernel, then the GEMM). The search may not reach it: a one-kernel search of a norm and its
matmul verifies generated-GEMM plans, and its only all-vendor plan runs the norm as one kernel per op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prism.errors import IRError
from prism.graph import Graph, Node, OpKind
from prism.ir import Accum, BinaryOp, BlockOp, CustomKernel, KernelGraph, Load, ReduceOp, Save, UnaryOp
from prism.ops import Binary, Reduce, Unary
from prism.partition import HEAVY, partition, predefined_plan, stitch

GRID = ("k0_x", "k0_y", "k0_z")


def node_op(n: Node, at: Mapping[int, int]) -> BlockOp | None:
    """The block op of a program's unary, binary or reduce node (its operands: the block ops ``at``
    holds for its args); None for any other node."""
    match n.kind:
        case OpKind.UNARY:
            assert isinstance(n.fn, Unary)
            return UnaryOp(n.fn, at[n.args[0]], n.scalar)
        case OpKind.BINARY:
            assert isinstance(n.fn, Binary)
            return BinaryOp(n.fn, at[n.args[0]], at[n.args[1]])
        case OpKind.REDUCE:
            assert isinstance(n.fn, Reduce) and n.dim is not None
            return ReduceOp(n.fn, at[n.args[0]], n.dim)
        case _:
            return None


def row_plan(graph: Graph, program: str = "program") -> KernelGraph | None:
    """The one-kernel row-wise plan of ``graph``, or None when it has a matmul or transpose or
    reduces every dim (nothing to spread over blocks)."""
    nodes = graph.nodes
    if any(n.kind in (OpKind.MATMUL, OpKind.TRANSPOSE) for n in nodes):
        return None
    rank = len(nodes[graph.output_indices[0][1]].shape)
    if any(len(n.shape) != rank for n in nodes):
        return None
    reduced = {n.dim for n in nodes if n.kind is OpKind.REDUCE}
    par = [d for d in range(rank) if d not in reduced][:3]
    if not par:
        return None
    bcast = graph.broadcast_dims()
    ops: list[BlockOp] = []
    at: dict[int, int] = {}  # program node -> block op holding its value (post-loop phase)
    for i in graph.input_indices:
        name = nodes[i].name or ""
        ops.append(Load(name, tuple(None if (name, d) in bcast else d for d in par)))
        ops.append(Accum(len(ops) - 1))
        at[i] = len(ops) - 1
    for i, n in enumerate(nodes):
        if (op := node_op(n, at)) is not None:
            ops.append(op)
            at[i] = len(ops) - 1
    for name, i in graph.output_indices:
        ops.append(Save(at[i], name, tuple(par)))
    kernel = CustomKernel("k0", GRID[:len(par)], 1, tuple(ops))
    return KernelGraph.of(graph, program, [kernel])


# prove(part's program, its row-wise plan) -> whether the plan is proven to compute the part
type Prover = Callable[[Graph, KernelGraph], bool]


def row_vendor_plan(graph: Graph, program: str = "program", prove: Prover | None = None) -> KernelGraph | None:
    """Heavy ops as predefined kernels, each run of other ops between them as its row-wise kernel;
    None when there is no heavy op, or no run of two or more ops has a row-wise kernel (the predefined
    plan is that plan then). With ``prove``, each row-wise kernel is proven on its own run (a run
    whose kernel is not proven keeps its predefined kernels): the plan is then verified part by part,
    as a stitched plan is, for programs too large to prove whole."""
    if not any(n.kind in HEAVY for n in graph.nodes):
        return None
    try:
        parts = partition(graph, max_ops=len(graph.nodes), prologues=False)
    except IRError:  # an optional candidate: a program partition cannot order has its other plans
        return None
    rows = [None if p.heavy or len(p.nodes) < 2 else row_plan(p.graph, program) for p in parts]
    if prove is not None:
        rows = [r if r is None or prove(p.graph, r) else None for p, r in zip(parts, rows, strict=True)]
    if all(r is None for r in rows):
        return None
    plans = [r if r is not None else predefined_plan(p.graph, program) for p, r in zip(parts, rows, strict=True)]
    return stitch(graph, parts, plans, program)
