"""Any prism Graph as the PyTorch function a user would write (eager ops in the program's dtype).

``torch_program(graph)`` returns ``fn(*tensors)`` (inputs in the Graph's order, returning its
first output): the "PyTorch eager" baseline of zoo programs, and what ``torch.compile`` compiles.
torch is imported when the function runs, so this module imports without it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prism.graph import Graph, Node, OpKind
from prism.ops import Binary, Reduce, Unary


def _unary(torch: Any, node: Node, x: Any, shapes: dict[str, tuple[int, ...]]) -> Any:
    c = node.scalar.resolve(shapes) if node.scalar is not None else 0.0
    match node.fn:
        case Unary.EXP:
            return torch.exp(x)
        case Unary.SILU:
            return torch.nn.functional.silu(x)
        case Unary.GELU:
            return torch.nn.functional.gelu(x, approximate="tanh")
        case Unary.SQRT:
            return torch.sqrt(x)
        case Unary.RSQRT:
            return torch.rsqrt(x)
        case Unary.SQUARE:
            return x * x
        case Unary.NEG:
            return -x
        case Unary.SCALE:
            return x * c
        case Unary.ADD_SCALAR:
            return x + c
    raise ValueError(f"unary {node.fn!r}")


def _binary(fn: Binary | Unary | Reduce | None, a: Any, b: Any) -> Any:
    match fn:
        case Binary.ADD:
            return a + b
        case Binary.SUB:
            return a - b
        case Binary.MUL:
            return a * b
        case Binary.DIV:
            return a / b
    raise ValueError(f"binary {fn!r}")


def torch_program(graph: Graph) -> Callable[..., Any]:
    """``graph`` as eager PyTorch: one torch op per primitive, in the inputs' dtype."""
    nodes = list(graph.nodes)
    shapes = {t.name: t.shape for t in graph.inputs}
    out_index = graph.output_indices[0][1]

    def fn(*args: Any) -> Any:
        import torch

        it = iter(args)
        vals: list[Any] = []
        for n in nodes:
            a = [vals[i] for i in n.args]
            match n.kind:
                case OpKind.INPUT:
                    vals.append(next(it))
                case OpKind.UNARY:
                    vals.append(_unary(torch, n, a[0], shapes))
                case OpKind.BINARY:
                    vals.append(_binary(n.fn, a[0], a[1]))
                case OpKind.REDUCE:
                    f = torch.sum if n.fn is Reduce.SUM else torch.amax
                    vals.append(f(a[0], dim=n.dim, keepdim=True))
                case OpKind.MATMUL:
                    vals.append(a[0] @ a[1])
                case OpKind.TRANSPOSE:
                    vals.append(a[0].transpose(-1, -2))
        return vals[out_index]

    return fn
