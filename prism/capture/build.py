"""A captured region as a Prism Graph at the shapes of one call.

``bind(spec, shapes, dtype)`` replays the region's steps on a fresh ``Graph`` whose inputs are the
region's inputs (weights included: they are inputs, never copied). The Graph has one dtype: the
region's compute dtype; casts inside the region (``x.float()`` … ``.to(x.dtype)``) are relabelings,
and the runner casts inputs and outputs of another dtype at the boundary.

Views the runner makes of an input (free on a contiguous tensor) are recorded in ``BoundInput``:
an operand of lower rank than the other operand of a binary op gets leading 1s (PyTorch's
broadcasting from the left, e.g. an RMSNorm weight); attention merges the batch with the key/value
heads, so that grouped-query heads share one key/value row: q ``[b, h, L, d]`` is read as
``[b·hk, (h/hk)·L, d]`` and k, v as ``[b·hk, S, d]``. Pure Python (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

import numpy as np

from prism.capture.ir import Activation, Captured, Ref, Step
from prism.errors import GraphError, SerializationError
from prism.graph import Graph, Tensor
from prism.ops import Binary, Reduce, Unary
from prism.rows import as_rows, row_rank


@dataclass(frozen=True)
class RegionSpec:
    """A region ready to bind: its steps in order, its inputs (nodes outside it that it reads, in
    order of first use) and its outputs (its nodes read outside it)."""

    steps: tuple[Captured, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class BoundInput:
    """One input of the bound Graph: region input ``position`` viewed as ``shape``."""

    position: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Program:
    """The bound Graph; ``outputs[i]`` is the Graph output name of region output i, or the position
    of the region input it merely relabels; ``shapes[i]`` its PyTorch shape."""

    graph: Graph
    inputs: tuple[BoundInput, ...]
    outputs: tuple[str | int, ...]
    shapes: tuple[tuple[int, ...], ...]
    dtype: str


_UNARY: dict[Unary, Callable[[Graph, Tensor], Tensor]] = {
    Unary.EXP: Graph.exp, Unary.SILU: Graph.silu, Unary.GELU: Graph.gelu, Unary.SQRT: Graph.sqrt,
    Unary.RSQRT: Graph.rsqrt, Unary.SQUARE: Graph.square, Unary.NEG: Graph.neg, Unary.RELU: Graph.relu,
    Unary.ABS: Graph.abs, Unary.TANH: Graph.tanh, Unary.SIGMOID: Graph.sigmoid, Unary.LOG: Graph.log,
    Unary.GELU_ERF: lambda g, x: g.gelu(x, approximate="none"), Unary.ERF: Graph.erf,
}
_REDUCE: dict[Reduce, Callable[[Graph, Tensor, int], Tensor]] = {Reduce.SUM: Graph.sum, Reduce.MAX: Graph.max}


class _Binder:
    def __init__(self, spec: RegionSpec, shapes: Sequence[tuple[int, ...]], dtype: str, rows: bool = False) -> None:
        self.spec, self.shapes, self.dtype = spec, shapes, dtype
        self.rows = rows  # leading dims merged into rows (``_merged_rows``): every reduction is over the last dim
        self.g = Graph()
        self.values: dict[int, Tensor] = {}
        self.torch_shapes: dict[int, tuple[int, ...]] = {}
        self.passthrough: dict[int, int] = {}  # a node that relabels a region input -> its position
        self.inputs: dict[BoundInput, Tensor] = {}

    def external(self, node: int, shape: tuple[int, ...] | None = None, rank: int | None = None) -> Tensor:
        pos = self.spec.inputs.index(node)
        base = self.shapes[pos]
        want = shape if shape is not None else (1,) * max(0, (rank or 0) - len(base)) + base
        if math.prod(want) != math.prod(base):
            raise GraphError("capture", f"input {pos} of shape {list(base)} cannot be viewed as {list(want)}")
        key = BoundInput(pos, want)
        if key not in self.inputs:
            self.inputs[key] = self.g.input(want, self.dtype, name=f"x{len(self.inputs)}")
        return self.inputs[key]

    def rank_of(self, op: Ref) -> int:
        if op.node in self.values:
            return self.values[op.node].rank
        return len(self.shapes[self.spec.inputs.index(self._source(op.node))])

    def _source(self, node: int) -> int:
        return self.passthrough.get(node, node)

    def value(self, op: Ref, rank: int | None = None) -> Tensor:
        if op.node in self.values:
            return self.values[op.node]
        return self.external(self._source(op.node), rank=rank)

    def step(self, s: Captured) -> Tensor | None:
        ops = s.operands
        refs = [o for o in ops if isinstance(o, Ref)]
        match s.step:
            case Step.IDENTITY:
                (x,) = refs
                if x.node not in self.values:  # a cast of an input: stays a relabeling of it
                    self.passthrough[s.index] = self._source(x.node)
                    return None
                return self.values[x.node]
            case Step.LINEAR:
                y = self.g.matmul(self.value(refs[0]), self.g.transpose(self.value(refs[1])))
                return self.g.add(y, self.value(refs[2], y.rank)) if len(refs) == 3 else y
            case Step.MATMUL:
                return self.g.matmul(self.value(refs[0]), self.value(refs[1]))
            case Step.BINARY:
                return self.binary(s)
            case Step.UNARY:
                assert isinstance(s.fn, Unary)
                return _UNARY[s.fn](self.g, self.value(refs[0]))
            case Step.REDUCE:
                assert isinstance(s.fn, Reduce) and s.dim is not None
                r, dim = self.value(refs[0]), -1 if self.rows else s.dim
                return self.g.mean(r, dim) if s.mean else _REDUCE[s.fn](self.g, r, dim)
            case Step.SOFTMAX | Step.LOG_SOFTMAX | Step.LOGSUMEXP:
                assert s.dim is not None
                fn = {Step.SOFTMAX: Graph.softmax, Step.LOG_SOFTMAX: Graph.log_softmax, Step.LOGSUMEXP: Graph.logsumexp}
                return fn[s.step](self.g, self.value(refs[0]), -1 if self.rows else s.dim)
            case Step.TRANSPOSE:
                return self.g.transpose(self.value(refs[0]))
            case Step.ACTIVATION:
                assert isinstance(s.fn, Activation)
                composite = getattr(Graph, s.fn.value)
                return composite(self.g, self.value(refs[0]), *(() if s.scale is None else (s.scale,)))
            case Step.CLAMP:
                lo, hi = (float(b) if isinstance(b, int | float) and math.isfinite(b) else None for b in s.operands[1:])
                return self.g.clamp(self.value(refs[0]), lo, hi)
            case Step.SDPA:
                return self.attention(s)
            case _:
                assert_never(s.step)

    def binary(self, s: Captured) -> Tensor:
        a, b = s.operands
        assert isinstance(s.fn, Binary)
        if isinstance(a, Ref):
            if isinstance(b, Ref):
                rank = max(self.rank_of(a), self.rank_of(b))
                return _BINARY[s.fn](self.g, self.value(a, rank), self.value(b, rank))
            return _BINARY[s.fn](self.g, self.value(a), float(b))
        assert isinstance(b, Ref)
        x = self.value(b)
        match s.fn:  # number ∘ tensor
            case Binary.ADD | Binary.MUL | Binary.MAXIMUM | Binary.MINIMUM:
                return _BINARY[s.fn](self.g, x, float(a))
            case Binary.SUB:
                return self.g.add_scalar(self.g.neg(x), float(a))
            case Binary.DIV:
                raise GraphError("capture", f"number / tensor ({a} / …) has no Prism op")
            case _:
                assert_never(s.fn)

    def attention(self, s: Captured) -> Tensor:
        q, k, v = (self._source(o.node) for o in s.operands if isinstance(o, Ref))
        qs, ks, vs = (self.shapes[self.spec.inputs.index(n)] for n in (q, k, v))
        if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
            raise GraphError("capture", f"attention operands {qs} {ks} {vs} must be 4-D")
        (b, h, length, d), (_, hk, keys, _), dv = qs, ks, vs[-1]
        if hk == 0 or h % hk or ks[0] != b or vs[:3] != ks[:3] or ks[3] != d:
            raise GraphError("capture", f"attention shapes q {list(qs)}, k {list(ks)}, v {list(vs)} do not fit")
        group = h // hk
        qv = self.external(q, shape=(b * hk, group * length, d))
        kv = self.external(k, shape=(b * hk, keys, d))
        vv = self.external(v, shape=(b * hk, keys, dv))
        c = s.scale if s.scale is not None else 1.0 / math.sqrt(d)
        p = self.g.softmax(self.g.scale(self.g.matmul(qv, self.g.transpose(kv)), c), -1)
        self.torch_shapes[s.index] = (b, h, length, dv)
        return self.g.matmul(p, vv)


_BINARY: dict[Binary, Callable[[Graph, Tensor, Tensor | float], Tensor]] = {
    Binary.ADD: Graph.add, Binary.SUB: Graph.sub, Binary.MUL: Graph.mul, Binary.DIV: Graph.div,
    Binary.MAXIMUM: Graph.maximum, Binary.MINIMUM: Graph.minimum,
}


def bind(spec: RegionSpec, shapes: Sequence[tuple[int, ...]], dtype: str) -> Program:
    """The region as a Graph at ``shapes`` (one per region input) in ``dtype``. Raises a
    ``GraphError`` when the shapes do not fit the ops (the runner then keeps PyTorch's)."""
    if len(shapes) != len(spec.inputs):
        raise GraphError("capture", f"{len(shapes)} input shapes for {len(spec.inputs)} region inputs")
    shapes = [tuple(int(d) for d in s) for s in shapes]
    squeezed = _squeezed(spec, shapes)
    b = _replayed(_Binder(spec, squeezed or shapes, dtype))
    if not squeezed and (rows := _merged_rows(b)) is not None:
        unmerged, b = b, _replayed(_Binder(spec, rows, dtype, rows=True))
        b.torch_shapes = {n: t.shape for n, t in unmerged.values.items()}
    outputs: list[str | int] = []
    shapes_out: list[tuple[int, ...]] = []
    named: dict[int, str] = {}
    torch_shapes = _broadcast_shapes(spec, shapes) if squeezed else b.torch_shapes
    for node in spec.outputs:
        if node in b.passthrough:
            pos = b.passthrough[node]
            outputs.append(spec.inputs.index(pos))
            shapes_out.append(shapes[spec.inputs.index(pos)])
            continue
        t = b.values[node]
        if t.index not in named:
            named[t.index] = f"y{len(named)}"
            b.g.output(t, named[t.index])
        outputs.append(named[t.index])
        shapes_out.append(torch_shapes.get(node, t.shape))
    if not named:
        raise GraphError("capture", "the region computes nothing (only casts of its inputs)")
    return Program(b.g, tuple(b.inputs), tuple(outputs), tuple(shapes_out), dtype)


def _replayed(b: _Binder) -> _Binder:
    for s in b.spec.steps:
        t = b.step(s)
        if t is not None:
            b.values[s.index] = t
    return b


def _merged_rows(b: _Binder) -> list[tuple[int, ...]] | None:
    """The region's input shapes with the leading dims of its row tensors merged into one
    (``prism.rows``: where that leaves the program the same), or None. 2-D weights keep theirs."""
    rank = row_rank(b.g)
    if rank is None:
        return None
    weights = {key.position for key, t in b.inputs.items() if len(t.shape) < rank}
    if any(key.position in weights for key, t in b.inputs.items() if len(t.shape) == rank):
        return None  # one input read both as a weight and as rows
    return [s if len(s) < 2 or pos in weights else as_rows(s) for pos, s in enumerate(b.shapes)]


ELEMENTWISE = (Step.IDENTITY, Step.UNARY, Step.BINARY, Step.CLAMP, Step.ACTIVATION)
MAX_RANK = 3  # the code generator's tiles have at most 3 dims


def _squeezed(spec: RegionSpec, shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]] | None:
    """For an element-wise region with tensors of rank > 3 (attention-shaped ``[b, h, L, d]``):
    every input right-aligned (PyTorch broadcasts from the left) without the dims that are 1 in all
    of them, which no element-wise op can make larger; None when nothing changes. The rotary
    products of a decoder layer at decode, ``[1, 32, 1, 64] * [1, 1, 1, 64]``, become ``[32, 64] *
    [1, 64]``: a shape the generator takes (rank <= 3), the same values in the same memory."""
    rank = max(len(s) for s in shapes)
    if rank <= MAX_RANK or not all(s.step in ELEMENTWISE for s in spec.steps):
        return None
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    keep = [d for d in range(rank) if any(p[d] != 1 for p in padded)] or [rank - 1]
    return [tuple(p[d] for d in keep) for p in padded] if len(keep) < rank else None


def _broadcast_shapes(spec: RegionSpec, shapes: Sequence[tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
    """PyTorch's shape of every node of an element-wise region (broadcasting its operands)."""
    full = {n: shapes[i] for i, n in enumerate(spec.inputs)}
    for s in spec.steps:
        full[s.index] = tuple(np.broadcast_shapes(*(full[o.node] for o in s.operands if isinstance(o, Ref))))
    return full


def evaluate(program: Program, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The region's outputs in float64 from its inputs (NumPy, at the bound shapes): the reference a
    captured region is held to, and how tests check the mapping of PyTorch ops without a GPU."""
    arrays = [np.asarray(x, dtype=np.float64) for x in inputs]
    out = program.graph.evaluate({t.name: arrays[b.position].reshape(b.shape)
                                  for t, b in zip(program.graph.inputs, program.inputs, strict=True)})
    return [(out[src] if isinstance(src, str) else arrays[src]).reshape(shape)
            for src, shape in zip(program.outputs, program.shapes, strict=True)]


_FN_OF: dict[Step, type[Unary] | type[Binary] | type[Reduce] | type[Activation]] = {
    Step.UNARY: Unary, Step.BINARY: Binary, Step.REDUCE: Reduce, Step.ACTIVATION: Activation,
}


def spec_to_json(spec: RegionSpec) -> dict[str, Any]:
    """A region as JSON (``scripts/capture_search.py`` searches regions captured on another machine)."""
    steps = [{"index": s.index, "step": s.step.value, "fn": s.fn.value if s.fn is not None else None, "dim": s.dim,
              "mean": s.mean, "scale": s.scale,
              "operands": [{"ref": o.node} if isinstance(o, Ref) else o for o in s.operands]} for s in spec.steps]
    return {"steps": steps, "inputs": list(spec.inputs), "outputs": list(spec.outputs)}


def spec_from_json(doc: dict[str, Any]) -> RegionSpec:
    try:
        steps = []
        for d in doc["steps"]:
            step = Step(d["step"])
            fn = _FN_OF[step](d["fn"]) if d["fn"] is not None else None
            ops = tuple(Ref(int(o["ref"])) if isinstance(o, dict) else float(o) for o in d["operands"])
            steps.append(Captured(int(d["index"]), step, ops, fn, d["dim"], bool(d["mean"]), d["scale"]))
        return RegionSpec(tuple(steps), tuple(doc["inputs"]), tuple(doc["outputs"]))
    except (KeyError, ValueError, TypeError) as e:
        raise SerializationError(f"not a captured region: {e}") from e
