"""A tensor program read back from JSON (``Graph.to_json``): what a library record keeps of the program
it was built from, so that a stored kernel is called at the program's own shapes
(``rows.program_callable``) whatever module built the program.

``graph_from_json`` rebuilds the program through the Graph's own builders (so every name, shape, dtype
and dim is checked as when a user builds it) and then requires each rebuilt node to equal the recorded
one: a record whose shapes do not follow from its inputs is refused, not trusted.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

import numpy as np

from prism.errors import GraphError
from prism.graph import Graph, Node, Tensor
from prism.ops import Binary, Const, DimRecip, OpKind, Reduce, Scalar, Unary, scalar_from_json

WHAT = "program record"


def graph_from_file(path: str) -> Graph:
    """The program in JSON file ``path``, as ``Graph.to_json`` writes it (``graph_from_json``); a
    ``GraphError`` when the file is not JSON (``OSError`` when it cannot be read)."""
    with open(path) as f:
        try:
            doc = json.load(f)
        except json.JSONDecodeError as e:
            raise GraphError(WHAT, f"{path!r} is not JSON: {e}") from e
    return graph_from_json(doc)


def graph_from_json(doc: object) -> Graph:
    """The program ``Graph.to_json`` wrote; ``GraphError`` naming the node where the record is malformed."""
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or not isinstance(doc.get("outputs"), list):
        raise GraphError(WHAT, "expected an object with lists 'nodes' and 'outputs'")
    g = Graph()
    tensors: list[Tensor] = []
    for i, item in enumerate(doc["nodes"]):
        node = _node(i, item)
        if any(not 0 <= a < i for a in node.args):
            raise GraphError(WHAT, f"node {i}: operands {list(node.args)} must be earlier nodes")
        t = _replay(g, node, [tensors[a] for a in node.args])
        if t.node != node:
            raise GraphError(WHAT, f"node {i}: recorded as {_brief(node)}, its operands give {_brief(t.node)}")
        tensors.append(t)
    for item in doc["outputs"]:
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], int)
                or isinstance(item[1], bool) or not 0 <= item[1] < len(tensors)):
            raise GraphError(WHAT, f"output {json.dumps(item)[:60]} must be [name, node index]")
        g.output(tensors[item[1]], item[0])
    g.check_complete()
    return g


ARITY = {OpKind.INPUT: 0, OpKind.UNARY: 1, OpKind.BINARY: 2, OpKind.REDUCE: 1, OpKind.MATMUL: 2, OpKind.TRANSPOSE: 1}
FN: dict[OpKind, Any] = {OpKind.UNARY: Unary, OpKind.BINARY: Binary, OpKind.REDUCE: Reduce}  # the kinds with an fn
SCALAR_UNARY = frozenset({Unary.SCALE, Unary.ADD_SCALAR, Unary.MAX_SCALAR, Unary.MIN_SCALAR})  # and only these a scalar


def _node(i: int, item: object) -> Node:
    """One recorded node, its fields parsed into the IR's enums and its form checked (an fn where its
    kind has one, a scalar where its op takes one, a dim for a reduction, its kind's operand count);
    nothing yet against the graph."""
    if not isinstance(item, dict):
        raise GraphError(WHAT, f"node {i} must be an object")
    try:
        kind = OpKind(item["kind"])
        fn = FN[kind](item["fn"]) if kind in FN else None
        args, shape = tuple(item["args"]), tuple(item["shape"])
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (*args, *shape)):
            raise ValueError("operands and shape must be integers")
        dim, name = item.get("dim"), item.get("name")
        if (dim is not None) != (kind is OpKind.REDUCE) or isinstance(dim, bool) or not isinstance(dim, int | None):
            raise ValueError(f"dim {dim!r}: a reduction has one integer dim, other ops none")
        if len(args) != ARITY[kind] or fn is Unary.CHAIN or ("fn" in item) != (kind in FN):
            raise ValueError(f"{kind.value} {item.get('fn', '')}: not an op of a program with {len(args)} operands")
        scalar = scalar_from_json(item.get("scalar"))
        if (scalar is not None) != (fn in SCALAR_UNARY):
            raise ValueError(f"scalar {scalar!r}: only {sorted(u.value for u in SCALAR_UNARY)} take one")
        if (name is not None) != (kind is OpKind.INPUT) or not isinstance(name, str | None):
            raise ValueError(f"name {name!r}: inputs are named, other nodes not")
        return Node(kind, args, shape, str(item["dtype"]), fn, dim, scalar, name)
    except (KeyError, TypeError, ValueError) as e:
        raise GraphError(WHAT, f"node {i}: {e}") from None


def _replay(g: Graph, node: Node, ops: list[Tensor]) -> Tensor:
    """``node`` built again by the Graph's builder for its kind, on the rebuilt operands."""
    match node.kind:
        case OpKind.INPUT:
            return g.input(node.shape, node.dtype, node.name)
        case OpKind.UNARY:
            assert isinstance(node.fn, Unary)  # checked by _node, as the operand counts below
            _check_scalar(g, node.scalar)
            return g._unary(node.fn, ops[0], node.scalar)
        case OpKind.BINARY:
            assert isinstance(node.fn, Binary)
            return g._binary(node.fn, *ops)
        case OpKind.REDUCE:
            assert isinstance(node.fn, Reduce) and node.dim is not None
            return g._reduce(node.fn, ops[0], node.dim)
        case OpKind.MATMUL:
            return g.matmul(*ops)
        case OpKind.TRANSPOSE:
            return g.transpose(ops[0])
        case _:
            assert_never(node.kind)


def _check_scalar(g: Graph, scalar: Scalar | None) -> None:
    """A unary op's scalar: a finite constant, or the reciprocal of a dim of one of the program's inputs."""
    match scalar:
        case None:
            return
        case Const(value) if np.isfinite(value):
            return
        case DimRecip(tensor, dim) if any(t.name == tensor and 0 <= dim < len(t.shape) for t in g.inputs):
            return
    raise GraphError(WHAT, f"scalar {scalar!r} is not a finite constant or a dim of an input")


def _brief(node: Node) -> str:
    fn = f" {node.fn.value}" if node.fn is not None else ""
    return f"{node.kind.value}{fn} {list(node.shape)} {node.dtype}"
