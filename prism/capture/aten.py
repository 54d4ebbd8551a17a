"""PyTorch ops as Prism steps: the table from a torch.fx node (Dynamo's torch-level graph, or an
aten graph: the op names coincide) to a ``Captured`` step, and the cost of every node.

A node maps when its op is in ``TABLE`` and its operands fit: tensors of a Prism dtype (float16,
bfloat16, float32) of rank 1 to 4, Python numbers, and the op's options in the supported form
(``keepdim=True``, ``approximate="tanh"``, the last two dims of a transpose, no attention mask …);
otherwise the node stays with PyTorch and ``why`` says which rule refused it. View ops (``view``,
``reshape``, ``permute`` …) stay with PyTorch: they cost nothing there and a region reads their
result as an input. Nothing here imports torch: the nodes and their ``meta`` are only inspected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prism.capture.ir import Activation, Captured, Cost, Operand, Ref, Step, Support
from prism.ops import DTYPES, Binary, Reduce, Unary

# Modules whose callables a call_function node may name (Dynamo inlines user code into these).
TORCH_MODULES = ("torch", "_operator", "operator")
MAX_RANK = 4
VIEWS = frozenset({
    "view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand", "getitem", "size", "t", "flatten",
    "unflatten", "narrow", "select", "split", "chunk", "unbind", "detach", "dim", "numel", "getattr", "_unsafe_view",
    "expand_as", "view_as", "mT", "alias", "slice",
})


@dataclass(frozen=True)
class Mapped:
    """A node's fate: its step when supported, otherwise why not."""

    step: Captured | None
    why: str = ""

    @property
    def support(self) -> Support:
        if self.step is None:
            return Support.NONE
        return Support.ALONE if self.step.step is Step.SDPA else Support.FUSE


class _Node:
    """The parts of one fx node a handler reads: positional and keyword arguments, meta tensors."""

    def __init__(self, node: Any, index: Mapping[Any, int]) -> None:
        self.node, self.index = node, index
        self.args: tuple[Any, ...] = tuple(node.args)
        self.kwargs: dict[str, Any] = dict(node.kwargs)
        self.seen: dict[int, Any] = {}  # operand position -> its fx node

    def arg(self, i: int, name: str, default: Any = None) -> Any:
        if len(self.args) > i:
            return self.args[i]
        return self.kwargs.get(name, default)

    def operand(self, a: Any) -> Operand | None:
        if isinstance(a, bool):
            return None
        if isinstance(a, int | float):
            return float(a) if math.isfinite(a) else None
        if a is not None and hasattr(a, "meta") and a in self.index and tensor_meta(a) is not None:
            self.seen[self.index[a]] = a
            return Ref(self.index[a])
        return None

    def out_meta(self) -> Any:
        return tensor_meta(self.node)


def tensor_meta(node: Any) -> Any:
    """The example tensor Dynamo (``example_value``) or an aten trace (``val``) recorded, or None."""
    meta = getattr(node, "meta", None) or {}
    v = meta.get("example_value", meta.get("val"))
    return v if hasattr(v, "shape") and hasattr(v, "dtype") else None


def dtype_name(t: Any) -> str:
    return str(t.dtype).removeprefix("torch.")


def _tensor_ok(t: Any) -> str:
    """Why a meta tensor cannot be a Prism tensor ("" when it can)."""
    if t is None:
        return "not a tensor"
    if dtype_name(t) not in DTYPES:
        return f"dtype {dtype_name(t)}"
    if not 1 <= len(t.shape) <= MAX_RANK:
        return f"rank {len(t.shape)}"
    return ""


def op_name(node: Any) -> str | None:
    """The op's name: a method's name, or a torch / operator callable's ``__name__`` (an aten
    overload ``aten.add.Tensor`` is ``add``); None for other callables and node kinds."""
    if node.op == "call_method":
        return str(node.target)
    if node.op != "call_function":
        return None
    target = node.target
    module = getattr(target, "__module__", None) or ""
    if module.startswith("torch._ops"):
        return str(target).split(".")[1] if str(target).count(".") >= 2 else None
    if not module.startswith(TORCH_MODULES):
        return None
    return getattr(target, "__name__", None)


Handler = Callable[[_Node, int], Captured | str]


def _tensors(n: _Node, *ops: Operand | None) -> tuple[Ref, ...] | str:
    """The operands as tensors when they and the output are Prism tensors, otherwise why not."""
    refs: list[Ref] = []
    for o in ops:
        if not isinstance(o, Ref):
            return "an operand is not a tensor"
        if why := _tensor_ok(tensor_meta(_node_at(n, o))):
            return f"an operand has {why}"
        refs.append(o)
    if why := _tensor_ok(n.out_meta()):
        return why
    return tuple(refs)


def _node_at(n: _Node, r: Ref) -> Any:
    return n.seen[r.node]


def _binary(fn: Binary) -> Handler:
    def handle(n: _Node, i: int) -> Captured | str:
        if len(n.args) != 2 or n.kwargs:
            return "extra arguments (alpha, rounding_mode, out)"
        a, b = (n.operand(x) for x in n.args)
        if a is None or b is None or not (isinstance(a, Ref) or isinstance(b, Ref)):
            return "operands must be tensors or numbers"
        refs = [o for o in (a, b) if isinstance(o, Ref)]
        if isinstance(why := _tensors(n, *refs), str):
            return why
        if fn is Binary.DIV and not isinstance(a, Ref):
            return "number / tensor"
        if len(refs) == 2:
            ranks = [len(tensor_meta(_node_at(n, r)).shape) for r in refs]
            low = refs[ranks.index(min(ranks))]
            if ranks[0] != ranks[1] and _node_at(n, low).op not in ("placeholder", "get_attr"):
                return "a lower-rank operand that is computed (only an input broadcasts from the left)"
        return Captured(i, Step.BINARY, (a, b), fn=fn)
    return handle


def _unary(fn: Unary) -> Handler:
    def handle(n: _Node, i: int) -> Captured | str:
        x = n.operand(n.arg(0, "input"))
        op = fn
        if fn is Unary.GELU:  # PyTorch's default is the exact form
            forms = {"tanh": Unary.GELU, "none": Unary.GELU_ERF}
            if (form := n.arg(1, "approximate", "none")) not in forms:
                return f"GELU approximate={form!r}"
            op = forms[form]
        if n.kwargs.get("inplace") or (fn in (Unary.SILU, Unary.RELU) and n.arg(1, "inplace", False)):
            return "in place"
        if isinstance(got := _tensors(n, x), str):
            return got
        return Captured(i, Step.UNARY, got, fn=op)
    return handle


def _pow(n: _Node, i: int) -> Captured | str:
    e = n.arg(1, "exponent")
    if isinstance(e, bool) or e not in (2, 2.0):
        return f"exponent {e!r} (only 2)"
    x = n.operand(n.arg(0, "input"))
    if isinstance(got := _tensors(n, x), str):
        return got
    return Captured(i, Step.UNARY, got, fn=Unary.SQUARE)


def _one_dim(d: Any) -> int | None:
    if isinstance(d, list | tuple) and len(d) == 1:
        d = d[0]
    return d if isinstance(d, int) and not isinstance(d, bool) else None


def _reduce(fn: Reduce, mean: bool = False) -> Handler:
    def handle(n: _Node, i: int) -> Captured | str:
        x = n.operand(n.arg(0, "input"))
        dim = _one_dim(n.arg(1, "dim"))
        if dim is None:
            return "a reduction over one dim only"
        if n.arg(2, "keepdim", False) is not True:
            return "keepdim=False (Prism keeps the reduced dim)"
        if n.kwargs.get("dtype") is not None or n.kwargs.get("out") is not None:
            return "dtype= / out="
        if isinstance(got := _tensors(n, x), str):
            return got
        return Captured(i, Step.REDUCE, got, fn=fn, dim=dim, mean=mean)
    return handle


def _softmax(step: Step) -> Handler:
    def handle(n: _Node, i: int) -> Captured | str:
        x = n.operand(n.arg(0, "input"))
        dim = n.arg(1, "dim")
        if not isinstance(dim, int) or isinstance(dim, bool):
            return f"{step.value} needs a dim"
        if isinstance(got := _tensors(n, x), str):  # (dtype=: the output's dtype, which _tensors checks)
            return got
        return Captured(i, step, got, dim=dim)
    return handle


def _clamp(n: _Node, i: int) -> Captured | str:
    """``clamp`` / ``clip`` / ``clamp_min`` / ``clamp_max`` / ``hardtanh`` / ``relu6`` with number bounds."""
    name = op_name(n.node)
    bounds = {"clamp_min": (n.arg(1, "min"), None), "clamp_max": (None, n.arg(1, "max")), "relu6": (0.0, 6.0),
              "hardtanh": (n.arg(1, "min_val", -1.0), n.arg(2, "max_val", 1.0))}
    lo, hi = bounds.get(str(name), (n.arg(1, "min"), n.arg(2, "max")))
    if any(b is not None and (isinstance(b, bool) or not isinstance(b, int | float)) for b in (lo, hi)):
        return "a bound that is not a number (a tensor bound stays with PyTorch)"
    if lo is None and hi is None:
        return "a clamp without bounds"
    inplace_at = {"relu6": 1, "hardtanh": 3}.get(str(name))
    if n.kwargs.get("inplace") or (inplace_at is not None and n.arg(inplace_at, "inplace", False)):
        return "in place"
    if isinstance(got := _tensors(n, n.operand(n.arg(0, "input"))), str):
        return got
    return Captured(i, Step.CLAMP, (*got, -math.inf if lo is None else float(lo), math.inf if hi is None else float(hi)))


# an activation's parameter: (position, keyword, PyTorch's default), and other arguments only at their defaults
_PARAMETER: dict[Activation, tuple[int, str, float]] = {
    Activation.SOFTPLUS: (1, "beta", 1.0), Activation.ELU: (1, "alpha", 1.0),
    Activation.LEAKY_RELU: (1, "negative_slope", 0.01),
}
_INPLACE_AT: dict[Activation, int] = {Activation.ELU: 2, Activation.LEAKY_RELU: 2, Activation.HARDSIGMOID: 1,
                                      Activation.HARDSWISH: 1, Activation.MISH: 1}


def _activation(act: Activation) -> Handler:
    def handle(n: _Node, i: int) -> Captured | str:
        at = _INPLACE_AT.get(act)
        if n.kwargs.get("inplace") or (at is not None and n.arg(at, "inplace", False)):
            return "in place"
        if act is Activation.SOFTPLUS and n.arg(2, "threshold", 20.0) != 20.0:
            return "a softplus threshold other than 20"
        scale = None
        if act in _PARAMETER:
            pos, name, default = _PARAMETER[act]
            value = n.arg(pos, name, default)
            if isinstance(value, bool) or not isinstance(value, int | float):
                return f"{name} that is not a number"
            scale = None if value == default else float(value)
        if isinstance(got := _tensors(n, n.operand(n.arg(0, "input"))), str):
            return got
        return Captured(i, Step.ACTIVATION, got, fn=act, scale=scale)
    return handle


def _logsumexp(n: _Node, i: int) -> Captured | str:
    x = n.operand(n.arg(0, "input"))
    dim = _one_dim(n.arg(1, "dim"))
    if dim is None:
        return "a logsumexp over one dim only"
    if n.arg(2, "keepdim", False) is not True:
        return "keepdim=False (Prism keeps the reduced dim)"
    if isinstance(got := _tensors(n, x), str):
        return got
    return Captured(i, Step.LOGSUMEXP, got, dim=dim)


def _transpose(n: _Node, i: int) -> Captured | str:
    x = n.operand(n.arg(0, "input"))
    if isinstance(got := _tensors(n, x), str):
        return got
    rank = len(n.out_meta().shape)
    dims = {0, 1} if op_name(n.node) == "t" else {n.arg(1, "dim0"), n.arg(2, "dim1")}
    if rank < 2 or not all(isinstance(d, int) for d in dims) or {d % rank for d in dims} != {rank - 2, rank - 1}:
        return "a transpose of other dims than the last two"
    return Captured(i, Step.TRANSPOSE, got)


def _matmul(n: _Node, i: int) -> Captured | str:
    a, b = n.operand(n.arg(0, "input")), n.operand(n.arg(1, "other", n.kwargs.get("mat2")))
    if isinstance(got := _tensors(n, a, b), str):
        return got
    ra, rb = (len(tensor_meta(_node_at(n, r)).shape) for r in got)
    if (ra, rb) not in ((2, 2), (3, 2), (3, 3)):
        return f"matmul of ranks {ra}@{rb} (2@2, 3@2, 3@3)"
    return Captured(i, Step.MATMUL, got)


def _linear(n: _Node, i: int) -> Captured | str:
    x, w = n.operand(n.arg(0, "input")), n.operand(n.arg(1, "weight"))
    bias = n.arg(2, "bias")
    if isinstance(got := _tensors(n, x, w), str):
        return got
    rx, rw = (len(tensor_meta(_node_at(n, r)).shape) for r in got)
    if rx not in (2, 3) or rw != 2:
        return f"linear of an input of rank {rx}"
    if bias is None:
        return Captured(i, Step.LINEAR, got)
    b = _tensors(n, n.operand(bias))
    if isinstance(b, str):
        return f"bias: {b}"
    if bias.op not in ("placeholder", "get_attr"):
        return "a computed bias"
    return Captured(i, Step.LINEAR, (*got, *b))


def _identity(n: _Node, i: int) -> Captured | str:
    x = n.operand(n.arg(0, "input"))
    if isinstance(got := _tensors(n, x), str):
        return got
    src, out = tensor_meta(_node_at(n, got[0])), n.out_meta()
    if src.device != out.device or tuple(src.shape) != tuple(out.shape):
        return "a copy to another device or shape"
    if op_name(n.node) == "dropout" and n.arg(2, "training", True) and n.arg(1, "p", 0.5) != 0:
        return "dropout in training mode"
    return Captured(i, Step.IDENTITY, got)


def _attention(n: _Node, i: int) -> Captured | str:
    q, k, v = (n.operand(n.arg(j, name)) for j, name in enumerate(("query", "key", "value")))
    if isinstance(got := _tensors(n, q, k, v), str):
        return got
    if n.arg(3, "attn_mask") is not None:
        return "an attention mask"
    if n.arg(4, "dropout_p", 0.0) != 0:
        return "attention dropout"
    qm = tensor_meta(_node_at(n, got[0]))
    if len(qm.shape) != 4:
        return "attention operands of rank other than 4"
    if n.arg(5, "is_causal", False) and not (isinstance(qm.shape[2], int) and qm.shape[2] == 1):
        return "causal attention over more than one query row (prefill stays with PyTorch)"
    scale = n.arg(6, "scale")
    if scale is not None and not isinstance(scale, int | float):
        return "a scale that is not a number"
    return Captured(i, Step.SDPA, got, scale=None if scale is None else float(scale))


TABLE: dict[str, Handler] = {
    **{name: _binary(Binary.ADD) for name in ("add", "__add__")},
    **{name: _binary(Binary.SUB) for name in ("sub", "__sub__", "subtract")},
    **{name: _binary(Binary.MUL) for name in ("mul", "__mul__", "multiply")},
    **{name: _binary(Binary.DIV) for name in ("truediv", "div", "__truediv__", "divide")},
    "exp": _unary(Unary.EXP), "silu": _unary(Unary.SILU), "gelu": _unary(Unary.GELU),
    "sqrt": _unary(Unary.SQRT), "rsqrt": _unary(Unary.RSQRT), "neg": _unary(Unary.NEG), "__neg__": _unary(Unary.NEG),
    "square": _unary(Unary.SQUARE), "pow": _pow, "__pow__": _pow,
    "relu": _unary(Unary.RELU), "abs": _unary(Unary.ABS), "__abs__": _unary(Unary.ABS), "tanh": _unary(Unary.TANH),
    "sigmoid": _unary(Unary.SIGMOID), "log": _unary(Unary.LOG), "erf": _unary(Unary.ERF),
    "maximum": _binary(Binary.MAXIMUM), "minimum": _binary(Binary.MINIMUM),
    **{name: _clamp for name in ("clamp", "clip", "clamp_min", "clamp_max", "hardtanh", "relu6")},
    **{a.value: _activation(a) for a in Activation},
    "sum": _reduce(Reduce.SUM), "mean": _reduce(Reduce.SUM, mean=True), "amax": _reduce(Reduce.MAX),
    "softmax": _softmax(Step.SOFTMAX), "_softmax": _softmax(Step.SOFTMAX), "transpose": _transpose, "t": _transpose,
    "log_softmax": _softmax(Step.LOG_SOFTMAX), "_log_softmax": _softmax(Step.LOG_SOFTMAX), "logsumexp": _logsumexp,
    "matmul": _matmul, "mm": _matmul, "bmm": _matmul, "linear": _linear,
    **{name: _identity for name in ("to", "float", "half", "bfloat16", "type_as", "contiguous", "clone", "dropout",
                                    "_to_copy")},
    "scaled_dot_product_attention": _attention,
}


def capture(node: Any, index: Mapping[Any, int]) -> Mapped:
    """The Prism step of fx ``node`` (``index``: every node's position), or why it has none."""
    name = op_name(node)
    if name is None:
        return Mapped(None, f"{node.op} {node.target}")
    handler = TABLE.get(name)
    if handler is None:
        return Mapped(None, f"{name}: no Prism op")
    got = handler(_Node(node, index), index[node])
    return Mapped(got, "") if isinstance(got, Captured) else Mapped(None, f"{name}: {got}")


def _size(t: Any) -> int:
    try:
        return math.prod(int(d) for d in t.shape)
    except (TypeError, ValueError, RuntimeError):  # a symbolic size without a hint
        return 0


def _bytes(t: Any) -> int:
    return _size(t) * int(getattr(t, "itemsize", 0) or getattr(t.dtype, "itemsize", 0))


def cost(node: Any) -> Cost:
    """FLOPs and bytes of a node run alone (a matmul 2·M·N·K, another op one flop per output
    element; bytes: every tensor read and written). Views and non-tensor nodes cost nothing."""
    name = op_name(node)
    out = tensor_meta(node)
    if name is None or name in VIEWS or out is None:
        return Cost(0, 0)
    ins = [m for m in (tensor_meta(a) for a in node.all_input_nodes) if m is not None]
    moved = sum(_bytes(m) for m in ins) + _bytes(out)
    try:
        if name in ("linear", "matmul", "mm", "bmm") and ins:
            return Cost(2 * _size(out) * int(ins[0].shape[-1]), moved)
        if name == "scaled_dot_product_attention" and len(ins) >= 3:
            keys, d, dv = int(ins[1].shape[-2]), int(ins[0].shape[-1]), int(out.shape[-1])
            return Cost(2 * _size(out) // dv * keys * (d + dv), moved)
    except (TypeError, ValueError, RuntimeError):  # symbolic sizes
        return Cost(0, moved)
    return Cost(_size(out), moved)
