"""Any prism Graph as the PyTorch function a user would write (eager ops in the program's dtype).

``torch_program(graph)`` returns ``fn(*tensors)`` (inputs in the Graph's order, returning its output,
or a tuple of its outputs in order when it has several): the "PyTorch eager" baseline of the bench,
what the bench's ``torch.compile`` baselines compile, and the function behind superoptimize's
Inductor candidate (``prism.tune.inductor``). torch is imported when the function runs, so this
module imports without it. Each call returns a function with a code object of its own: torch.compile
keeps its compiled variants per code object, so graphs never share (or exhaust) one cache.
"""

from __future__ import annotations

import types
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
        case Unary.RELU:
            return torch.relu(x)
        case Unary.ABS:
            return torch.abs(x)
        case Unary.TANH:
            return torch.tanh(x)
        case Unary.SIGMOID:
            return torch.sigmoid(x)
        case Unary.LOG:
            return torch.log(x)
        case Unary.GELU_ERF:
            return torch.nn.functional.gelu(x)
        case Unary.ERF:
            return torch.erf(x)
        case Unary.MAX_SCALAR:
            return torch.clamp(x, min=c)
        case Unary.MIN_SCALAR:
            return torch.clamp(x, max=c)
        case Unary.CHAIN:
            raise ValueError("a chain op (prism.chains) is a search stand-in; expand it first")
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
        case Binary.MAXIMUM:
            return a.maximum(b)
        case Binary.MINIMUM:
            return a.minimum(b)
    raise ValueError(f"binary {fn!r}")


def torch_program(graph: Graph) -> Callable[..., Any]:
    """``graph`` as eager PyTorch: one torch op per primitive, in the inputs' dtype."""
    nodes = list(graph.nodes)
    shapes = {t.name: t.shape for t in graph.inputs}
    outs = [i for _, i in graph.output_indices]

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
        return vals[outs[0]] if len(outs) == 1 else tuple(vals[i] for i in outs)

    # a fresh code object: torch.compile's per-code cache then holds this graph alone
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, "prism_program", fn.__defaults__, fn.__closure__)
