"""Outputs that are transposes of computed values, returned as views: a rewrite before the search.

PyTorch runs ``(x * 0.5).transpose(-1, -2)`` as one element-wise kernel and returns the transpose as
a view of its output: no bytes move for the transpose. A plan that writes the transposed output
instead stores along the wrong dim (a column of the tile per row of memory), which is slower than
eager for nothing (docs/off-the-suite.md, "Outputs returned as views of their transposes").

``peel_output_transposes`` rewrites the program so that each such output is the transpose's operand,
computed in its own row-major layout; ``ViewsKernel`` calls the compiled rewritten program and returns
those outputs through ``swapaxes(-1, -2)``: the same values, the same shapes and the same strides as
eager's. A transpose is peeled where it is an output that nothing else reads and its operand is
computed (a transpose of an input is already returned as a view of the input, ``runtime.view_outputs``)
and is not itself an output (two names for one buffer would alias).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prism.errors import InputError
from prism.graph import Graph, Tensor
from prism.ir import TensorSpec
from prism.ops import OpKind
from prism.partition import reader_sets


@dataclass(frozen=True)
class PeeledOutputs:
    """The rewritten program and the outputs it computes untransposed (returned as views)."""

    graph: Graph
    transposed: frozenset[str]
    shapes: tuple[tuple[int, ...], ...]  # every output's shape in the original program, in its order


def peel_output_transposes(graph: Graph) -> PeeledOutputs | None:
    """``graph`` with each peelable output transpose replaced by its operand, or None when none is."""
    readers, named = reader_sets(graph), {i for _, i in graph.output_indices}
    peel = {name: graph.nodes[i].args[0] for name, i in graph.output_indices if _peelable(graph, i, named, readers)}
    if not peel:
        return None
    g = Graph()
    g.nodes.extend(graph.nodes)
    for name, i in graph.output_indices:
        g.output(Tensor(g, peel.get(name, i)), name)
    shapes = tuple(graph.nodes[i].shape for _, i in graph.output_indices)
    return PeeledOutputs(g.without_dead_ops(), frozenset(peel), shapes)


def _peelable(graph: Graph, i: int, named: set[int], readers: dict[int, set[int]]) -> bool:
    node = graph.nodes[i]
    if node.kind is not OpKind.TRANSPOSE or readers.get(i):
        return False
    operand = node.args[0]
    return graph.nodes[operand].kind is not OpKind.INPUT and operand not in named


class ViewsKernel:
    """A compiled rewritten program called like the original: the peeled outputs come back as
    transposed views of the buffers it computes. An ``out=`` buffer for a peeled output that is itself
    a transposed view of a row-major buffer (what a call returns) is written in place; any other is
    written through a row-major temporary and one copy."""

    def __init__(self, kernel: Any, peeled: PeeledOutputs) -> None:
        self.kernel, self.peeled = kernel, peeled
        self._names = [name for name, _ in peeled.graph.output_indices]

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        if out is None:
            res = self.kernel(*args, **named)
            many = isinstance(res, tuple | list)
            got = [self._viewed(n, r) for n, r in zip(self._names, res if many else (res,), strict=True)]
            return tuple(got) if many else got[0]
        outs = list(out) if isinstance(out, tuple | list) else [out]
        if len(outs) != len(self._names):
            raise InputError(f"out= has {len(outs)} buffers for the program's {len(self._names)} outputs")
        inner, copies = self._inner_outs(outs)
        self.kernel(*args, out=tuple(inner) if isinstance(out, tuple | list) else inner[0], **named)
        for dst, src in copies:
            dst[...] = src.swapaxes(-1, -2)
        return out

    def _viewed(self, name: str, r: Any) -> Any:
        return r.swapaxes(-1, -2) if name in self.peeled.transposed else r

    def _inner_outs(self, outs: Sequence[Any]) -> tuple[list[Any], list[tuple[Any, Any]]]:
        """The buffers the rewritten program writes, and the (user buffer, temporary) copies after it."""
        inner: list[Any] = []
        copies: list[tuple[Any, Any]] = []
        for name, o, want in zip(self._names, outs, self.peeled.shapes, strict=True):
            if name not in self.peeled.transposed:
                inner.append(o)
                continue
            if tuple(getattr(o, "shape", ())) != want:
                raise InputError(f"out= buffer for {name!r} has shape {list(getattr(o, 'shape', ()))}; "
                                 f"the output is {list(want)}")
            swapped = o.swapaxes(-1, -2)
            if _row_major(swapped):
                inner.append(swapped)
            else:
                tmp = _empty(o, tuple(swapped.shape))
                inner.append(tmp)
                copies.append((o, tmp))
        return inner, copies

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The program's outputs: names, shapes (a peeled one transposed) and dtypes."""
        return tuple(TensorSpec(t.name, shape, t.dtype)
                     for t, shape in zip(self.peeled.graph.outputs, self.peeled.shapes, strict=True))

    def __getattr__(self, name: str) -> Any:  # plan, inputs, ... of the rewritten program's kernel
        return getattr(self.__dict__["kernel"], name)


def _row_major(a: Any) -> bool:
    if hasattr(a, "is_contiguous"):
        return bool(a.is_contiguous())
    return bool(a.flags.c_contiguous)


def _empty(like: Any, shape: tuple[int, ...]) -> Any:
    """An uninitialised array of ``like``'s kind, dtype and device."""
    if hasattr(like, "new_empty"):  # torch
        return like.new_empty(shape)
    if type(like).__module__.split(".")[0] == "cupy":
        import cupy

        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=like.dtype)
    import numpy as np

    return np.empty(shape, dtype=like.dtype)
