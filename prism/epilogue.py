"""Epilogue plans: a matmul part's searched one-kernel plan with the element-wise part after it
run in the same kernel's post-loop phase.

A program like ``X @ W + R`` (a residual add, a bias, an activation after a projection) is partitioned
into its matmul and the element-wise ops after it; the stitched plans run them as two launches, and
the whole-program search finds no one-kernel plan: every value a kernel uses after its loop passes
through an accumulator, and a loop-invariant input (R) summed over the iterations is R times the
loop. This plan carries each other input of the element-wise part into the post-loop phase with a
*max* accumulator of a tile every iteration reads whole (the max of identical tiles is the tile:
verifier axiom ``rmax-of-repl``), then runs the part's ops on the matmul's accumulated value and
saves the result where the matmul's value was saved. Each plan is proven against the whole program
before it is used (``prism.verify``); one that is not is dropped.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from prism.errors import IRError
from prism.graph import Graph, OpKind
from prism.ir import Accum, BlockOp, CustomKernel, KernelGraph, Load, Save, check_structure
from prism.ops import Reduce
from prism.rowwise import Prover, node_op

# matmul-part plans fused per program, in the search's order, each proven; size-free like every cached
# search result: the tuner times those with a legal size at its shapes
MAX_PLANS = 8


def epilogue_plans(graph: Graph, head: Sequence[KernelGraph], tail: Graph, program: str,
                   prove: Prover) -> list[KernelGraph]:
    """Up to ``MAX_PLANS`` proven one-kernel plans of ``graph``: each one-kernel, looping plan of the
    matmul part (``head``, its tensors named as in ``graph``) with the element-wise part ``tail``
    (which reads the head's output) fused after its loop. Empty when ``tail`` is not element-wise."""
    if not _elementwise(tail):
        return []
    fused = (f for t in head if (f := fuse(graph, t, tail, program)) is not None)
    return [f for f in itertools.islice(fused, MAX_PLANS) if prove(graph, f)]


def _elementwise(g: Graph) -> bool:
    """One output, unary and binary ops only, every value of the output's rank."""
    rank = len(g.outputs[0].shape)
    return len(g.outputs) == 1 and all(n.kind in (OpKind.INPUT, OpKind.UNARY, OpKind.BINARY) and len(n.shape) == rank
                                       for n in g.nodes)


def fuse(graph: Graph, head: KernelGraph, tail: Graph, program: str) -> KernelGraph | None:
    """``head`` (one custom kernel with a loop, ending in the Save of the value ``tail`` reads) with
    ``tail``'s ops after its loop; None when ``head`` is not such a plan or the result is not valid IR."""
    if len(head.kernels) != 1 or not isinstance(k := head.kernels[0], CustomKernel) or k.loop == 1:
        return None
    save = k.ops[-1]
    if not isinstance(save, Save) or sum(isinstance(op, Save) for op in k.ops) != 1:
        return None
    ops: list[BlockOp] = list(k.ops[:-1])
    at = _inputs(tail, save, ops)
    if at is None:
        return None
    for i, n in enumerate(tail.nodes):  # unary and binary only (``_elementwise``)
        if (op := node_op(n, at)) is not None:
            ops.append(op)
            at[i] = len(ops) - 1
    (name, out), = tail.output_indices
    ops.append(Save(at[out], name, save.omap))
    plan = KernelGraph.of(graph, program, [CustomKernel(k.name, k.grid, k.loop, tuple(ops))])
    try:
        check_structure(plan)
    except IRError:
        return None
    return plan


def _inputs(tail: Graph, save: Save, ops: list[BlockOp]) -> dict[int, int] | None:
    """The block op holding each input of ``tail`` after the loop: the head's saved value, or a Load
    of a program input split over the grid like the output (replicated where it broadcasts) and its
    max accumulator, appended to ``ops``. None when an input is neither."""
    out = tail.outputs[0].shape
    at: dict[int, int] = {}
    for i in tail.input_indices:
        name, shape = tail.nodes[i].name or "", tail.nodes[i].shape
        if name == save.tensor:
            at[i] = save.x
            continue
        if any(s not in (1, o) for s, o in zip(shape, out, strict=True)):
            return None
        ops.append(Load(name, tuple(d if d is not None and shape[d] == out[d] else None for d in save.omap)))
        ops.append(Accum(len(ops) - 1, fn=Reduce.MAX))
        at[i] = len(ops) - 1
    return at
