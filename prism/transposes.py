"""Transposes moved onto the program's inputs: a rewrite of the program before the search.

A program that normalises a bank of vectors and multiplies by its transpose (cosine similarity:
``l2(A) @ l2(B)^T``; squared distances: ``|a|² + (|b|²)^T - 2 A @ B^T``) transposes a computed value. A
block graph has no transpose, so the search puts it in a predefined kernel between two launches, and the
transposed value is written to memory and read back. A transpose commutes with element-wise ops and with a
reduction over one of the two dims it swaps, so it can move back through them to the inputs they read:

    transpose(f(x))             = f(transpose(x))
    transpose(a ∘ b)            = transpose(a) ∘ transpose(b)          (equal ranks: broadcasts stay aligned)
    transpose(reduce(x, d))     = reduce(transpose(x), d')             (d one of the last two dims, d' the other)
    transpose(transpose(x))     = x

A transpose of a program input is what code generation reads in place (``prism.codegen.fold``) and what
the search sees as an input of its own (``partition.weight_transposes``). ``sink_transposes`` moves a
transpose only where its whole cone, down to the inputs, is such ops read by nothing else (so no value is
computed twice) and none of them is an output: the rewritten program computes the same function with the
same inputs and outputs, each identity exact in real arithmetic (a sum's order is the only change).
"""

from __future__ import annotations

from dataclasses import replace
from typing import assert_never

from prism.graph import Graph, Node, OpKind
from prism.ir import load_shape
from prism.ops import broadcast_shape
from prism.partition import reader_sets


def sink_transposes(graph: Graph) -> Graph:
    """``graph`` with every transpose that can move onto inputs moved there (``graph`` itself when none can)."""
    outputs, readers = {i for _, i in graph.output_indices}, reader_sets(graph)
    movable = [t for t, n in enumerate(graph.nodes) if n.kind is OpKind.TRANSPOSE and _movable(graph, t, outputs, readers)]
    if not movable:
        return graph
    return _Rewrite(graph, set(movable)).run().without_dead_ops()


def _movable(graph: Graph, t: int, outputs: set[int], readers: dict[int, set[int]]) -> bool:
    """Transpose ``t`` reads a computed value whose cone (down to the inputs) is element-wise ops and
    reductions over the swapped dims, of rank 2 or more, each read only within the cone or by ``t``,
    none an output."""
    top = graph.nodes[t].args[0]
    if graph.nodes[top].kind is OpKind.INPUT:
        return False
    cone: set[int] = set()
    todo = [top]
    while todo:
        u = todo.pop()
        node = graph.nodes[u]
        if u in cone or node.kind is OpKind.INPUT:
            continue
        if not _commutes(node) or u in outputs:
            return False
        cone.add(u)
        todo.extend(node.args)
    return all(readers.get(u, set()) <= cone | {t} for u in cone)


def _commutes(node: Node) -> bool:
    """A transpose of ``node``'s value can move onto its operands."""
    rank = len(node.shape)
    match node.kind:
        case OpKind.UNARY | OpKind.BINARY | OpKind.TRANSPOSE:
            return rank >= 2
        case OpKind.REDUCE:
            return rank >= 2 and node.dim is not None and node.dim >= rank - 2
        case OpKind.INPUT | OpKind.MATMUL:  # (an input ends the cone; a matmul's transpose swaps its operands)
            return False
        case _:
            assert_never(node.kind)


class _Rewrite:
    """The program rebuilt in order, each movable transpose replaced by its operand's transposed form."""

    def __init__(self, graph: Graph, movable: set[int]) -> None:
        self.src, self.movable = graph, movable
        self.out = Graph()
        self.copy: dict[int, int] = {}  # source node -> its copy
        self.flipped: dict[int, int] = {}  # source node -> the node of its transpose

    def run(self) -> Graph:
        for i, node in enumerate(self.src.nodes):
            if i in self.movable or (node.kind is OpKind.TRANSPOSE and self.src.nodes[node.args[0]].kind is OpKind.INPUT):
                self.copy[i] = self.flip(node.args[0])  # (one transpose node per input)
            else:
                self.copy[i] = self.add(replace(node, args=tuple(self.copy[a] for a in node.args)))
        self.out._outputs = [(name, self.copy[i]) for name, i in self.src.output_indices]
        return self.out

    def add(self, node: Node) -> int:
        self.out.nodes.append(node)
        return len(self.out.nodes) - 1

    def flip(self, i: int) -> int:
        """The node of ``transpose(value i)``, built from transposed operands (memoised)."""
        if i in self.flipped:
            return self.flipped[i]
        node = self.src.nodes[i]
        match node.kind:
            case OpKind.TRANSPOSE:
                out = self.copy[node.args[0]]
            case OpKind.INPUT:
                out = self.add(Node(OpKind.TRANSPOSE, (self.copy[i],), load_shape(node.shape, True), node.dtype))
            case OpKind.UNARY:
                x = self.flip(node.args[0])
                out = self.add(replace(node, args=(x,), shape=self.out.nodes[x].shape))
            case OpKind.BINARY:
                a, b = self.flip(node.args[0]), self.flip(node.args[1])
                shape = broadcast_shape(self.out.nodes[a].shape, self.out.nodes[b].shape)
                assert shape is not None, "transposed operands broadcast as the originals did"
                out = self.add(replace(node, args=(a, b), shape=shape))
            case OpKind.REDUCE:
                x, rank = self.flip(node.args[0]), len(node.shape)
                assert node.dim is not None
                out = self.add(replace(node, args=(x,), shape=load_shape(node.shape, True), dim=2 * rank - 3 - node.dim))
            case OpKind.MATMUL:
                raise AssertionError(f"node {i}: a matmul is not in a movable cone (_commutes)")
            case _:
                assert_never(node.kind)
        self.flipped[i] = out
        return out
