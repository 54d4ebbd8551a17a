"""Rows: a program over activations ``[batch, tokens, d]`` run as one of ``[batch·tokens, d]``.

A decoder's programs multiply rows by weight matrices, work element-wise (parameters broadcast along
the leading dims) and reduce the last dim. For those, the leading dims are only a row index, and the
program with them merged into one computes the same values in the same memory. The code generator
needs the merged form: it reads ``[16, 1, 2048] @ W`` as a batch of 16 one-row products against the
same weight and gives each product its own mma tile padded from 1 row to 16 (docs/capture.md, "Rows":
37-67 µs where the merged program's kernels take 14). ``superoptimize`` merges before the search,
and the callable it returns views its inputs and outputs accordingly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prism.errors import InputError
from prism.graph import Graph, Node, Tensor
from prism.ir import TensorSpec
from prism.ops import DimRecip, OpKind
from prism.output_views import PeeledOutputs, ViewsKernel, peel_output_transposes


def _weights(nodes: Sequence[Node]) -> set[int]:
    """2-D inputs and their transposes: the only nodes allowed below the rows' rank (a matmul's B)."""
    return {i for i, n in enumerate(nodes) if len(n.shape) == 2 and n.kind in (OpKind.INPUT, OpKind.TRANSPOSE)}


def _problem(graph: Graph, rank: int, weights: set[int]) -> bool:
    """Whether some node keeps the leading dims from being a row index."""
    nodes = graph.nodes
    lead: set[tuple[int, ...]] = set()
    for i, n in enumerate(nodes):
        if i in weights:
            if n.kind is OpKind.TRANSPOSE and nodes[n.args[0]].kind is not OpKind.INPUT:
                return True
            continue
        if len(n.shape) != rank or (n.kind is OpKind.REDUCE and n.dim != rank - 1):
            return True
        if n.kind is OpKind.TRANSPOSE or (n.kind is OpKind.MATMUL and n.args[1] not in weights):
            return True
        if any(a in weights and not (n.kind is OpKind.MATMUL and a == n.args[1]) for a in n.args):
            return True
        if any(x != 1 for x in n.shape[:-1]):
            lead.add(n.shape[:-1])
    return len(lead) > 1 or any(i in weights for _, i in graph.output_indices)


def row_rank(graph: Graph) -> int | None:
    """The rank (≥ 3) of the row tensors when ``graph``'s leading dims can merge into one, else None."""
    rank = max((len(n.shape) for n in graph.nodes), default=0)
    if rank < 3 or _problem(graph, rank, _weights(graph.nodes)):
        return None
    return rank


def as_rows(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with its leading dims merged into one: ``[b, s, d]`` -> ``[b·s, d]``."""
    return (math.prod(shape[:-1]), shape[-1])


def _merged(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    return as_rows(shape) if len(shape) == rank else shape


@dataclass(frozen=True)
class Rows:
    """``graph`` with its leading dims merged; each input's and output's shape in both programs."""

    graph: Graph
    inputs: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]  # name -> (original, merged)
    outputs: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]

    def view_inputs(self, args: Mapping[str, Any] | Sequence[Any]) -> Mapping[str, Any] | list[Any]:
        """Example or call inputs (by name or in input order) viewed at the merged shapes."""
        if isinstance(args, Mapping):
            return {k: _view(v, self.inputs[k][1]) if k in self.inputs else v for k, v in args.items()}
        return [_view(a, m) for a, (_, m) in zip(args, self.inputs.values(), strict=False)]


def _view(a: Any, shape: tuple[int, ...]) -> Any:
    return a.reshape(shape) if hasattr(a, "reshape") and tuple(getattr(a, "shape", ())) != shape else a


def _out_view(o: Any, shape: tuple[int, ...]) -> Any:
    """An ``out=`` buffer viewed at the merged shape: it must be contiguous, or the view would be a copy."""
    flags = getattr(o, "flags", None)
    contiguous = o.is_contiguous() if hasattr(o, "is_contiguous") else getattr(flags, "c_contiguous", True)
    if not contiguous:
        raise InputError(f"out= buffer of shape {list(getattr(o, 'shape', ()))} must be contiguous")
    return _view(o, shape)


def merge_rows(graph: Graph) -> Rows | None:
    """The merged program, or None when ``graph`` has no leading dims to merge or merging would change it."""
    rank = row_rank(graph)
    if rank is None:
        return None
    g = Graph()
    for n in graph.nodes:
        scalar = n.scalar
        if isinstance(scalar, DimRecip) and scalar.dim == rank - 1:
            scalar = DimRecip(scalar.tensor, 1)
        dim = 1 if n.kind is OpKind.REDUCE else n.dim
        g.nodes.append(replace(n, shape=_merged(n.shape, rank), dim=dim, scalar=scalar))
    for name, i in graph.output_indices:
        g.output(Tensor(g, i), name)
    ins = {n.name or "": (n.shape, _merged(n.shape, rank)) for n in (graph.nodes[i] for i in graph.input_indices)}
    outs = {name: (graph.nodes[i].shape, g.nodes[i].shape) for name, i in graph.output_indices}
    return Rows(g, ins, outs)


@dataclass(frozen=True)
class Rewrite:
    """What ``superoptimize`` does to a program before its search: output transposes peeled
    (``prism.output_views``, outermost first), then rows merged; ``graph`` is the program searched."""

    peels: tuple[PeeledOutputs, ...]
    rows: Rows | None
    graph: Graph

    def callable(self, kernel: Any) -> Any:
        """``kernel``, compiled for ``graph``, called like the original program: inputs and outputs at
        its shapes (rows merged back), its peeled output transposes returned as views."""
        if self.rows is not None:
            kernel = RowsKernel(kernel, self.rows)
        for peeled in reversed(self.peels):
            kernel = ViewsKernel(kernel, peeled)
        return kernel


def rewrite(graph: Graph, *, views: bool = True) -> Rewrite:
    """``graph`` without its dead ops, its output transposes peeled while any is (``views``: off for the
    PyTorch capture's regions, ``superoptimize``'s ``output_views``) and its rows merged where they merge."""
    graph = graph.without_dead_ops()
    peels: list[PeeledOutputs] = []
    while views and (peeled := peel_output_transposes(graph)) is not None:
        peels.append(peeled)
        graph = peeled.graph
    rows = merge_rows(graph)
    return Rewrite(tuple(peels), rows, graph if rows is None else rows.graph)


def searched_graph(graph: Graph, *, views: bool = True) -> Graph:
    """The program ``superoptimize`` searches for ``graph`` (``rewrite``). What fills the search cache
    ahead of ``superoptimize`` (a CPU machine before a GPU one: ``library.search_entry``, ``bench.fuzz
    --prepare``, scripts) searches this one, so that the keys match."""
    return rewrite(graph, views=views).graph


def program_callable(kernel: Any, graph: Graph) -> Any:
    """``kernel``, compiled for ``searched_graph(graph)``, called like ``graph`` (``Rewrite.callable``;
    ``library.load`` uses it for a kernel compiled from a stored plan)."""
    return rewrite(graph).callable(kernel)


class RowsKernel:
    """A compiled merged program called with the original program's shapes: inputs (positional or by
    name, and ``out=``) are viewed at the merged shapes, outputs at the original ones."""

    def __init__(self, kernel: Any, rows: Rows) -> None:
        self.kernel, self.rows = kernel, rows
        self._shapes = [o for o, _ in rows.outputs.values()]  # the program's own output shapes
        self._merged = [m for _, m in rows.outputs.values()]

    def _check(self, args: Sequence[Any], named: Mapping[str, Any], outs: Sequence[Any] | None) -> None:
        """The original shapes, named in the error: viewed at the merged shapes, a wrongly shaped input
        would pass the compiled program's own check."""
        for name, a in [*zip(self.rows.inputs, args, strict=False), *named.items()]:
            want = self.rows.inputs[name][0] if name in self.rows.inputs else None
            if want is not None and hasattr(a, "shape") and tuple(a.shape) != want:
                raise InputError(f"input {name!r} has shape {list(a.shape)}; the program takes {list(want)}")
        if outs is None:
            return
        if len(outs) != len(self.rows.outputs):
            raise InputError(f"out= has {len(outs)} buffers for the program's {len(self.rows.outputs)} outputs")
        for (name, (want, _)), o in zip(self.rows.outputs.items(), outs, strict=True):
            if tuple(getattr(o, "shape", ())) != want:
                raise InputError(f"out= buffer for {name!r} has shape {list(getattr(o, 'shape', ()))}; "
                                 f"the output is {list(want)}")

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        self._check(args, named, None if out is None else (out if isinstance(out, tuple | list) else (out,)))
        args = tuple(self.rows.view_inputs(list(args)))
        named = dict(self.rows.view_inputs(named))
        if out is not None:
            outs = out if isinstance(out, tuple | list) else (out,)
            views = type(outs)(_out_view(o, m) for o, m in zip(outs, self._merged, strict=True))
            res = self.kernel(*args, out=views if isinstance(out, tuple | list) else views[0], **named)
        else:
            res = self.kernel(*args, **named)
        if isinstance(res, tuple | list):
            return type(res)(_view(r, s) for r, s in zip(res, self._shapes, strict=True))
        return _view(res, self._shapes[0])

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The program's inputs, at its own shapes."""
        return tuple(TensorSpec(t.name, self.rows.inputs[t.name][0], t.dtype) for t in self.rows.graph.inputs)

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The program's outputs, at its own shapes."""
        return tuple(TensorSpec(t.name, self.rows.outputs[t.name][0], t.dtype) for t in self.rows.graph.outputs)

    def __getattr__(self, name: str) -> Any:  # plan, ... of the merged program's kernel
        return getattr(self.__dict__["kernel"], name)
