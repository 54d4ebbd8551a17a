"""The user-facing tensor program: a small DAG of primitive operators with checked shapes.

    g = prism.Graph()
    X = g.input((8, 4096), dtype="float16", name="X")
    W = g.input((4096, 4096), dtype="float16", name="W")
    g.output(g.matmul(g.rms_norm(X), W), name="O")

Composite ops (``rms_norm``, ``softmax``, ``log_softmax``, ``logsumexp``, ``mean``, ``clamp`` and the
activations ``softplus``, ``mish``, ``elu``, ``leaky_relu``, ``hardsigmoid``, ``hardswish``, ``softsign``,
``logsigmoid``; ``silu``, ``gelu``, ``sigmoid``, ``tanh``, ``relu``, ``abs``, ``erf``, ``log``, ``maximum``
and ``minimum`` are primitives) expand into primitives that the search and the verifier understand.
``softmax`` subtracts the row max before ``exp`` (safe for any finite logits); ``softmax(..., safe=False)``
is the Prism paper's ``exp(x) / sum(exp(x))``, which the benchmark programs of docs/benchmarks.md keep.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from prism import reference
from prism.errors import DimError, DTypeError, GraphError, ShapeError
from prism.names import NameKind, name_problem, show
from prism.ops import (
    DTYPES,
    Binary,
    Const,
    DimRecip,
    OpKind,
    Reduce,
    Scalar,
    Unary,
    broadcast_shape,
    matmul_shape,
    scalar_to_json,
)

MAX_ELEMENTS = 2**31  # elements of one tensor: generated code indexes with 32-bit integers


def _finite(op: str, c: object) -> float:
    """A scalar operand as a float: an int, float or NumPy number that is finite."""
    text = repr(c) if len(repr(c)) <= 40 else repr(c)[:37] + "..."
    if isinstance(c, bool) or not isinstance(c, int | float | np.integer | np.floating):
        raise GraphError(op, f"scalar {text} must be a finite number (or pass a Tensor)")
    try:
        value = float(c)
    except OverflowError:
        value = float("inf")
    if not np.isfinite(value):
        raise GraphError(op, f"scalar {text} must be a finite number")
    return value


@dataclass(frozen=True)
class Node:
    """One operator of a Graph. ``args`` index earlier nodes; ``fn`` selects the op of a kind."""

    kind: OpKind
    args: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    fn: Unary | Binary | Reduce | None = None
    dim: int | None = None
    scalar: Scalar | None = None
    name: str | None = None

    def describe(self, size_free: bool = False) -> dict[str, object]:
        """A JSON-able description used for hashing; sizes dropped when ``size_free``."""
        d: dict[str, object] = {"kind": self.kind.value, "args": list(self.args), "dtype": self.dtype}
        d["shape"] = len(self.shape) if size_free else list(self.shape)
        if self.fn is not None:
            d["fn"] = self.fn.value
        if self.dim is not None:
            d["dim"] = self.dim
        if self.scalar is not None:
            d["scalar"] = scalar_to_json(self.scalar)
        if self.name is not None:
            d["name"] = self.name
        return d


@dataclass(frozen=True)
class TensorInfo:
    """What ``graph.inputs`` / ``graph.outputs`` list: a name, a shape and a dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


class Tensor:
    """A handle to one node of a Graph. Supports ``+ - * / @`` and unary ``-``."""

    __slots__ = ("graph", "index")

    def __init__(self, graph: Graph, index: int) -> None:
        self.graph = graph
        self.index = index

    @property
    def node(self) -> Node:
        return self.graph.nodes[self.index]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> str:
        return self.node.dtype

    @property
    def rank(self) -> int:
        return len(self.node.shape)

    def __repr__(self) -> str:
        label = self.node.name or f"%{self.index}"
        return f"Tensor({label}, shape={self.shape}, dtype={self.dtype})"

    def __add__(self, other: Tensor | float) -> Tensor:
        return self.graph.add(self, other)

    def __sub__(self, other: Tensor | float) -> Tensor:
        return self.graph.sub(self, other)

    def __mul__(self, other: Tensor | float) -> Tensor:
        return self.graph.mul(self, other)

    def __rmul__(self, other: float) -> Tensor:
        return self.graph.mul(self, other)

    def __truediv__(self, other: Tensor | float) -> Tensor:
        return self.graph.div(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return self.graph.matmul(self, other)

    def __neg__(self) -> Tensor:
        return self.graph.neg(self)


def _fmt(t: Tensor) -> str:
    return f"{t.node.name or '%' + str(t.index)}{list(t.shape)}"


class Graph:
    """A tensor program. Build it with the methods below; every op checks its operands."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self._outputs: list[tuple[str, int]] = []

    # ------------------------------------------------------------------ building blocks
    def _add(self, node: Node) -> Tensor:
        self.nodes.append(node)
        return Tensor(self, len(self.nodes) - 1)

    def _own(self, op: str, *ts: object) -> tuple[Tensor, ...]:
        out: list[Tensor] = []
        for t in ts:
            if not isinstance(t, Tensor):
                raise GraphError(op, f"operand {t!r} is not a Tensor of this graph")
            if t.graph is not self:
                raise GraphError(op, f"operand {t!r} belongs to another Graph")
            out.append(t)
        return tuple(out)

    def _norm_dim(self, op: str, t: Tensor, dim: int) -> int:
        if not isinstance(dim, int | np.integer) or isinstance(dim, bool) or not -t.rank <= dim < t.rank:
            raise DimError(op, f"dim {dim!r} is out of range for {_fmt(t)} of rank {t.rank}")
        return int(dim) % t.rank

    # ------------------------------------------------------------------ inputs and outputs
    def input(self, shape: Sequence[int], dtype: str = "float16", name: str | None = None) -> Tensor:
        """Declare an input tensor (row-major, contiguous)."""
        name = name if name is not None else f"in{len(self.input_indices)}"
        op = f"input {show(name)}"
        if not isinstance(name, str):
            raise GraphError(op, f"the name {show(name)} must be a string")
        if (isinstance(shape, int | np.integer | str | bytes | bytearray) or not isinstance(shape, Sequence | np.ndarray)
                or (isinstance(shape, np.ndarray) and shape.ndim != 1)):
            raise ShapeError(op, f"shape {shape!r} must be a sequence of 1 to 4 positive integers, like (8, 4096)")
        dtype = dtype.name if isinstance(dtype, np.dtype) else dtype
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise DTypeError(op, f"dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
        shp = tuple(shape)
        if not 1 <= len(shp) <= 4 or not all(
            isinstance(s, int | np.integer) and not isinstance(s, bool) and s > 0 for s in shp
        ):
            raise ShapeError(op, f"shape {shape!r} must be 1 to 4 positive integers")
        if math.prod(int(s) for s in shp) >= MAX_ELEMENTS:
            raise ShapeError(op, f"shape {shape!r} has 2^31 or more elements; a tensor holds fewer")
        if (bad := name_problem(name, NameKind.TENSOR)) is not None:
            raise GraphError(op, bad)
        if name in {self.nodes[i].name for i in self.input_indices} | {n for n, _ in self._outputs}:
            raise GraphError(op, f"the name {name!r} is already used")
        return self._add(Node(OpKind.INPUT, (), tuple(int(s) for s in shp), dtype, name=name))

    def output(self, t: Tensor, name: str | None = None) -> None:
        """Mark ``t`` as an output of the program."""
        name = name if name is not None else ("O" if not self._outputs else f"O{len(self._outputs)}")
        op = f"output {show(name)}"
        if not isinstance(name, str):
            raise GraphError(op, f"the name {show(name)} must be a string")
        (t,) = self._own(op, t)
        if (bad := name_problem(name, NameKind.TENSOR)) is not None:
            raise GraphError(op, bad)
        taken = {n for n, _ in self._outputs} | {self.nodes[i].name for i in self.input_indices}
        if name in taken:
            raise GraphError(f"output {name!r}", f"the name {name!r} is already used")
        self._outputs.append((name, t.index))

    @property
    def input_indices(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n.kind is OpKind.INPUT]

    @property
    def inputs(self) -> list[TensorInfo]:
        return [TensorInfo(n.name or "", n.shape, n.dtype) for n in self.nodes if n.kind is OpKind.INPUT]

    @property
    def outputs(self) -> list[TensorInfo]:
        return [TensorInfo(name, self.nodes[i].shape, self.nodes[i].dtype) for name, i in self._outputs]

    @property
    def output_indices(self) -> list[tuple[str, int]]:
        return list(self._outputs)

    # ------------------------------------------------------------------ elementwise
    def _unary(self, fn: Unary, x: Tensor, scalar: Scalar | None = None) -> Tensor:
        (x,) = self._own(fn.value, x)
        return self._add(Node(OpKind.UNARY, (x.index,), x.shape, x.dtype, fn=fn, scalar=scalar))

    def exp(self, x: Tensor) -> Tensor:
        return self._unary(Unary.EXP, x)

    def silu(self, x: Tensor) -> Tensor:
        """x * sigmoid(x)."""
        return self._unary(Unary.SILU, x)

    def gelu(self, x: Tensor, approximate: str = "tanh") -> Tensor:
        """GELU. ``approximate="tanh"`` (the default here): 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)));
        ``"none"``: the exact x Φ(x) = 0.5 x (1 + erf(x / √2)), PyTorch's default."""
        forms = {"tanh": Unary.GELU, "none": Unary.GELU_ERF}
        if not isinstance(approximate, str) or approximate not in forms:
            raise GraphError("gelu", f"approximate={approximate!r}: use 'tanh' or 'none'")
        return self._unary(forms[approximate], x)

    def sqrt(self, x: Tensor) -> Tensor:
        return self._unary(Unary.SQRT, x)

    def rsqrt(self, x: Tensor) -> Tensor:
        return self._unary(Unary.RSQRT, x)

    def square(self, x: Tensor) -> Tensor:
        return self._unary(Unary.SQUARE, x)

    def neg(self, x: Tensor) -> Tensor:
        return self._unary(Unary.NEG, x)

    def relu(self, x: Tensor) -> Tensor:
        """max(x, 0)."""
        return self._unary(Unary.RELU, x)

    def abs(self, x: Tensor) -> Tensor:
        return self._unary(Unary.ABS, x)

    def tanh(self, x: Tensor) -> Tensor:
        return self._unary(Unary.TANH, x)

    def sigmoid(self, x: Tensor) -> Tensor:
        """1 / (1 + exp(-x))."""
        return self._unary(Unary.SIGMOID, x)

    def erf(self, x: Tensor) -> Tensor:
        """The error function."""
        return self._unary(Unary.ERF, x)

    def log(self, x: Tensor) -> Tensor:
        """The natural logarithm (NaN below 0, -inf at 0, as in NumPy and PyTorch)."""
        return self._unary(Unary.LOG, x)

    def scale(self, x: Tensor, c: float) -> Tensor:
        """Multiply by a scalar."""
        return self._unary(Unary.SCALE, x, Const(_finite("scale", c)))

    def add_scalar(self, x: Tensor, c: float) -> Tensor:
        return self._unary(Unary.ADD_SCALAR, x, Const(_finite("add_scalar", c)))

    def _binary(self, fn: Binary, a: Tensor, b: Tensor) -> Tensor:
        a, b = self._own(fn.value, a, b)
        if a.dtype != b.dtype:
            raise DTypeError(fn.value, f"operands {_fmt(a)} {a.dtype} and {_fmt(b)} {b.dtype} differ in dtype")
        if a.rank != b.rank:
            raise ShapeError(fn.value, f"operands {_fmt(a)} and {_fmt(b)} differ in rank (broadcasting needs equal ranks)")
        shape = broadcast_shape(a.shape, b.shape)
        if shape is None:
            raise ShapeError(fn.value, f"operands {_fmt(a)} and {_fmt(b)} do not broadcast")
        return self._add(Node(OpKind.BINARY, (a.index, b.index), shape, a.dtype, fn=fn))

    def add(self, a: Tensor, b: Tensor | float) -> Tensor:
        return self.add_scalar(a, b) if not isinstance(b, Tensor) else self._binary(Binary.ADD, a, b)

    def sub(self, a: Tensor, b: Tensor | float) -> Tensor:
        return self.add_scalar(a, -_finite("sub", b)) if not isinstance(b, Tensor) else self._binary(Binary.SUB, a, b)

    def mul(self, a: Tensor, b: Tensor | float) -> Tensor:
        return self.scale(a, b) if not isinstance(b, Tensor) else self._binary(Binary.MUL, a, b)

    def div(self, a: Tensor, b: Tensor | float) -> Tensor:
        if not isinstance(b, Tensor):
            if _finite("div", b) == 0:
                raise GraphError("div", f"division of {_fmt(a)} by the scalar 0")
            return self.scale(a, 1.0 / b)
        return self._binary(Binary.DIV, a, b)

    def maximum(self, a: Tensor, b: Tensor | float) -> Tensor:
        """Element-wise max (NaN where either operand is NaN, as ``torch.maximum``); a number ``b``
        clamps from below."""
        return self._extreme(Binary.MAXIMUM, Unary.MAX_SCALAR, a, b)

    def minimum(self, a: Tensor, b: Tensor | float) -> Tensor:
        """Element-wise min; a number ``b`` clamps from above."""
        return self._extreme(Binary.MINIMUM, Unary.MIN_SCALAR, a, b)

    def _extreme(self, fn: Binary, scalar_fn: Unary, a: Tensor, b: Tensor | float) -> Tensor:
        if not isinstance(b, Tensor):
            return self._unary(scalar_fn, a, Const(_finite(fn.value, b)))
        return self._binary(fn, a, b)

    def clamp(self, x: Tensor, lo: float | None = None, hi: float | None = None) -> Tensor:
        """``x`` clamped to [lo, hi] (either bound may be None), as ``torch.clamp(x, min=lo, max=hi)``."""
        if lo is None and hi is None:
            raise GraphError("clamp", "give a lower bound, an upper bound or both")
        if lo is not None and hi is not None and _finite("clamp", lo) > _finite("clamp", hi):
            raise GraphError("clamp", f"the lower bound {lo!r} is above the upper bound {hi!r}")
        y = x if lo is None else self.maximum(x, lo)
        return y if hi is None else self.minimum(y, hi)

    # ------------------------------------------------------------------ reductions
    def _reduce(self, fn: Reduce, x: Tensor, dim: int) -> Tensor:
        (x,) = self._own(fn.value, x)
        d = self._norm_dim(fn.value, x, dim)
        shape = tuple(1 if i == d else s for i, s in enumerate(x.shape))
        return self._add(Node(OpKind.REDUCE, (x.index,), shape, x.dtype, fn=fn, dim=d))

    def sum(self, x: Tensor, dim: int = -1) -> Tensor:
        """Sum over one dim, kept with extent 1."""
        return self._reduce(Reduce.SUM, x, dim)

    def max(self, x: Tensor, dim: int = -1) -> Tensor:
        """Max over one dim, kept with extent 1."""
        return self._reduce(Reduce.MAX, x, dim)

    def mean(self, x: Tensor, dim: int = -1) -> Tensor:
        """Mean over one dim (kept): ``sum`` times the reciprocal of the dim's size."""
        (x,) = self._own("mean", x)
        d = self._norm_dim("mean", x, dim)
        s = self._reduce(Reduce.SUM, x, d)
        origin = self.dim_origin(x.index, d)
        factor: Scalar = DimRecip(*origin) if origin is not None else Const(1.0 / x.shape[d])
        return self._unary(Unary.SCALE, s, factor)

    def dim_origin(self, index: int, dim: int) -> tuple[str, int] | None:
        """Which input dim the extent of ``dim`` of node ``index`` comes from (for mean's 1/n)."""
        node = self.nodes[index]
        match node.kind:
            case OpKind.INPUT:
                return (node.name or "", dim)
            case OpKind.UNARY:
                return self.dim_origin(node.args[0], dim)
            case OpKind.BINARY | OpKind.REDUCE:
                if node.kind is OpKind.REDUCE and dim == node.dim:
                    return None
                for a in node.args:
                    if self.nodes[a].shape[dim] == node.shape[dim]:
                        return self.dim_origin(a, dim)
                return None
            case OpKind.TRANSPOSE:
                r = len(node.shape)
                src = {r - 1: r - 2, r - 2: r - 1}.get(dim, dim)
                return self.dim_origin(node.args[0], src)
            case OpKind.MATMUL:
                lhs, rhs = (self.nodes[i] for i in node.args)
                r = len(node.shape)
                if dim == r - 1:
                    return self.dim_origin(node.args[1], len(rhs.shape) - 1)
                if dim == r - 2:
                    return self.dim_origin(node.args[0], len(lhs.shape) - 2)
                return self.dim_origin(node.args[0], dim)

    # ------------------------------------------------------------------ linear algebra
    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        """``a @ b`` over the last two dims: 2-D, or batched 3-D (a 2-D right operand broadcasts)."""
        a, b = self._own("matmul", a, b)
        if a.dtype != b.dtype:
            raise DTypeError("matmul", f"operands {_fmt(a)} {a.dtype} and {_fmt(b)} {b.dtype} differ in dtype")
        if a.rank not in (2, 3) or b.rank not in (2, 3) or b.rank > a.rank:
            raise ShapeError("matmul", f"operands {_fmt(a)} @ {_fmt(b)}: ranks must be 2@2, 3@2 or 3@3")
        shape = matmul_shape(a.shape, b.shape)
        if shape is None:
            raise ShapeError(
                "matmul",
                f"operands {_fmt(a)} @ {_fmt(b)}: contraction dims {a.shape[-1]} and {b.shape[-2]} "
                "differ or batch dims do not broadcast",
            )
        return self._add(Node(OpKind.MATMUL, (a.index, b.index), shape, a.dtype))

    def transpose(self, x: Tensor) -> Tensor:
        """Swap the last two dims."""
        (x,) = self._own("transpose", x)
        if x.rank < 2:
            raise ShapeError("transpose", f"operand {_fmt(x)} needs rank >= 2")
        shape = (*x.shape[:-2], x.shape[-1], x.shape[-2])
        return self._add(Node(OpKind.TRANSPOSE, (x.index,), shape, x.dtype))

    # ------------------------------------------------------------------ composites
    def rms_norm(self, x: Tensor, eps: float = 1e-6) -> Tensor:
        """``x * rsqrt(mean(x², last dim) + eps)``, no weight."""
        (x,) = self._own("rms_norm", x)
        value = _finite("rms_norm", eps)
        if value < 0:
            raise GraphError("rms_norm", f"eps {eps!r} must be a non-negative number")
        ms = self.mean(self.square(x), -1)
        return self.mul(x, self.rsqrt(self.add_scalar(ms, value)))

    def softmax(self, x: Tensor, dim: int = -1, *, safe: bool = True) -> Tensor:
        """``exp(x − max(x)) / sum(exp(x − max(x)))`` over ``dim``: finite for any finite logits.

        ``safe=False`` is the paper's form ``exp(x) / sum(exp(x))`` (one reduction less; it overflows
        float32 once a logit passes about 88)."""
        (x,) = self._own("softmax", x)
        d = self._norm_dim("softmax", x, dim)
        if not isinstance(safe, bool):
            raise GraphError("softmax", f"safe={safe!r} must be True or False")
        e = self.exp(self.sub(x, self.max(x, d)) if safe else x)
        return self.div(e, self.sum(e, d))

    # ------------------------------------------------------------------ activations (composites)
    def softplus(self, x: Tensor, beta: float = 1.0) -> Tensor:
        """``log(1 + exp(β x)) / β``, written ``relu(x) + log(1 + exp(−β|x|)) / β``: no overflow for large x
        (``torch.nn.functional.softplus`` returns x past its threshold; the difference is below e⁻²⁰)."""
        b = _finite("softplus", beta)
        if b <= 0:
            raise GraphError("softplus", f"beta {beta!r} must be positive")
        tail = self.log(self.add_scalar(self.exp(self.scale(self.abs(x), -b)), 1.0))
        return self.add(self.relu(x), tail if b == 1 else self.scale(tail, 1.0 / b))

    def mish(self, x: Tensor) -> Tensor:
        """``x · tanh(softplus(x))``."""
        return self.mul(x, self.tanh(self.softplus(x)))

    def elu(self, x: Tensor, alpha: float = 1.0) -> Tensor:
        """``x`` where positive, else ``α (exp(x) − 1)``: ``relu(x) + α · min(exp(x) − 1, 0)``."""
        a = _finite("elu", alpha)
        neg = self.minimum(self.add_scalar(self.exp(x), -1.0), 0.0)
        return self.add(self.relu(x), neg if a == 1 else self.scale(neg, a))

    def leaky_relu(self, x: Tensor, negative_slope: float = 0.01) -> Tensor:
        """``x`` where positive, else ``slope · x``: ``relu(x) − slope · relu(−x)``."""
        s = _finite("leaky_relu", negative_slope)
        return self.sub(self.relu(x), self.scale(self.relu(self.neg(x)), s))

    def hardsigmoid(self, x: Tensor) -> Tensor:
        """``clamp(x / 6 + 1/2, 0, 1)``."""
        return self.clamp(self.add_scalar(self.scale(x, 1.0 / 6.0), 0.5), 0.0, 1.0)

    def hardswish(self, x: Tensor) -> Tensor:
        """``x · hardsigmoid(x)``."""
        return self.mul(x, self.hardsigmoid(x))

    def softsign(self, x: Tensor) -> Tensor:
        """``x / (1 + |x|)``."""
        return self.div(x, self.add_scalar(self.abs(x), 1.0))

    def logsigmoid(self, x: Tensor) -> Tensor:
        """``log(sigmoid(x)) = −softplus(−x)``."""
        return self.neg(self.softplus(self.neg(x)))

    def logsumexp(self, x: Tensor, dim: int = -1) -> Tensor:
        """``log(sum(exp(x − max(x)))) + max(x)`` over ``dim``, kept with extent 1: finite for any
        finite logits (a cross-entropy's normaliser)."""
        (x,) = self._own("logsumexp", x)
        d = self._norm_dim("logsumexp", x, dim)
        m = self.max(x, d)
        return self.add(self.log(self.sum(self.exp(self.sub(x, m)), d)), m)

    def log_softmax(self, x: Tensor, dim: int = -1) -> Tensor:
        """``x − max(x) − log(sum(exp(x − max(x))))`` over ``dim``."""
        (x,) = self._own("log_softmax", x)
        d = self._norm_dim("log_softmax", x, dim)
        shifted = self.sub(x, self.max(x, d))
        return self.sub(shifted, self.log(self.sum(self.exp(shifted), d)))

    # ------------------------------------------------------------------ identity
    def broadcast_dims(self) -> frozenset[tuple[str, int]]:
        """Input dims of extent 1 that broadcast against a larger extent (a bias row, a per-row
        scale): they are part of the program's structure, not a size."""
        out: set[tuple[str, int]] = set()
        for n in self.nodes:
            if n.kind is not OpKind.BINARY and n.kind is not OpKind.MATMUL:
                continue
            a, b = (self.nodes[i] for i in n.args)
            if n.kind is OpKind.MATMUL:  # only the batch dims of equal-rank operands broadcast
                pairs = [(0, 0)] if len(a.shape) == len(b.shape) == 3 else []
            else:
                pairs = [(d, d) for d in range(len(a.shape))]
            for da, db in pairs:
                for one, other, dim in ((n.args[0], b, da), (n.args[1], a, db)):
                    if self.nodes[one].shape[dim] == 1 and other.shape[dim] > 1:
                        origin = self.dim_origin(one, dim)
                        if origin is not None:
                            out.add(origin)
        return frozenset(out)

    def to_json(self, size_free: bool = False) -> dict[str, object]:
        """The program as JSON-able data, what its hashes are of (``prism.graph_json`` reads it back);
        sizes dropped when ``size_free``."""
        doc: dict[str, object] = {
            "nodes": [n.describe(size_free) for n in self.nodes],
            "outputs": [[name, i] for name, i in self._outputs],
        }
        bcast = self.broadcast_dims() if size_free else frozenset()
        if bcast:  # absent when empty: the keys of programs without broadcasts stay as they were
            doc["broadcast_dims"] = sorted([name, d] for name, d in bcast)
        return doc

    def _describe(self, size_free: bool) -> str:
        return json.dumps(self.to_json(size_free), sort_keys=True, separators=(",", ":"))

    def structure_hash(self) -> str:
        """Stable hash of the program including every shape."""
        return hashlib.sha256(self._describe(False).encode()).hexdigest()[:16]

    def structure_key(self) -> str:
        """Stable hash that ignores input sizes (keeps ranks, dtypes, ops): keys the search cache."""
        return hashlib.sha256(self._describe(True).encode()).hexdigest()[:16]

    def without_dead_ops(self) -> Graph:
        """The program without the ops no output depends on (every input kept: the callable takes them
        all); ``self`` when there are none. A part of dead ops would have no output to search for."""
        need = {i for _, i in self._outputs}
        for i in reversed(range(len(self.nodes))):
            if i in need:
                need.update(self.nodes[i].args)
        keep = [i for i, n in enumerate(self.nodes) if i in need or n.kind is OpKind.INPUT]
        if len(keep) == len(self.nodes):
            return self
        out = Graph()
        index: dict[int, int] = {}
        for i in keep:
            index[i] = len(out.nodes)
            out.nodes.append(replace(self.nodes[i], args=tuple(index[a] for a in self.nodes[i].args)))
        out._outputs = [(name, index[i]) for name, i in self._outputs]
        return out

    def check_complete(self) -> None:
        """Raise unless the program has at least one output."""
        if not self._outputs:
            raise GraphError("graph", "no output was marked: call graph.output(tensor)")

    # ------------------------------------------------------------------ reference
    def evaluate(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """Every output in float64 NumPy: the ground truth of all tests."""
        return reference.evaluate(self, inputs)

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}{list(t.shape)}" for t in self.inputs)
        outs = ", ".join(f"{t.name}{list(t.shape)}" for t in self.outputs)
        return f"Graph({ins} -> {outs}, {len(self.nodes)} nodes)"
