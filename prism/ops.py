"""Primitive operators shared by the Graph API, the μGraph IR and the verifier.

Each operator kind is an Enum member; its NumPy float64 semantics live in one table here, so the
reference evaluator and the μGraph interpreter cannot disagree on what an op means.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

F64 = NDArray[np.float64]

DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32")
ITEMSIZE: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4}  # bytes an element (NumPy has no bfloat16)


class OpKind(enum.Enum):
    """The kind of a Graph node or a pre-defined kernel; ``fn`` (Unary/Binary/Reduce) picks the op."""

    INPUT = "input"
    UNARY = "unary"
    BINARY = "binary"
    REDUCE = "reduce"
    MATMUL = "matmul"
    TRANSPOSE = "transpose"


class Unary(enum.Enum):
    """Elementwise unary ops. SCALE and ADD_SCALAR carry a scalar operand."""

    EXP = "exp"
    SILU = "silu"
    GELU = "gelu"  # tanh approximation
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    SQUARE = "square"
    NEG = "neg"
    SCALE = "scale"  # x * c
    ADD_SCALAR = "add_scalar"  # x + c
    RELU = "relu"  # max(x, 0)
    ABS = "abs"
    TANH = "tanh"
    SIGMOID = "sigmoid"  # 1 / (1 + exp(-x))
    LOG = "log"  # natural logarithm
    GELU_ERF = "gelu_erf"  # exact GELU: x Φ(x) = 0.5 x (1 + erf(x / √2)), PyTorch's default
    ERF = "erf"  # the error function (a GELU written out, as older BERT code does)
    MAX_SCALAR = "max_scalar"  # max(x, c): a clamp from below
    MIN_SCALAR = "min_scalar"  # min(x, c): a clamp from above
    # an element-wise function of one tensor that the search takes as one op (``prism.chains``; its
    # scalar numbers the chain): only in a searched stand-in of a program, never in one or in code
    CHAIN = "chain"

    @property
    def transcendental(self) -> bool:
        """An op of the special-function unit (exp, rsqrt, ...), not a multiply or an add."""
        return self not in _ARITHMETIC_UNARY


_ARITHMETIC_UNARY = frozenset({Unary.SQUARE, Unary.NEG, Unary.SCALE, Unary.ADD_SCALAR, Unary.RELU, Unary.ABS,
                               Unary.MAX_SCALAR, Unary.MIN_SCALAR})


class Binary(enum.Enum):
    """Elementwise binary ops with NumPy broadcasting over size-1 dims."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MAXIMUM = "maximum"  # element-wise max (NaN if either is NaN, as torch.maximum)
    MINIMUM = "minimum"


class Reduce(enum.Enum):
    """Reductions over one dim, keeping it with extent 1."""

    SUM = "sum"
    MAX = "max"


COMMUTATIVE: frozenset[Binary] = frozenset({Binary.ADD, Binary.MUL, Binary.MAXIMUM, Binary.MINIMUM})
SCALAR_UNARY: frozenset[Unary] = frozenset({Unary.SCALE, Unary.ADD_SCALAR, Unary.CHAIN, Unary.MAX_SCALAR,
                                            Unary.MIN_SCALAR})
# Unary ops that commute with a positive per-row scale are not needed; the verifier owns algebra.

_GELU_C = float(np.sqrt(2.0 / np.pi))


def _gelu(x: F64) -> F64:
    return 0.5 * x * (1.0 + np.tanh(_GELU_C * (x + 0.044715 * x**3)))


def _silu(x: F64) -> F64:
    return x / (1.0 + np.exp(-x))


_ERF = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf; math.erf is exact to float64


def _erf(x: F64) -> F64:
    return np.asarray(_ERF(np.asarray(x, dtype=np.float64)), dtype=np.float64)


def _gelu_erf(x: F64) -> F64:
    return 0.5 * x * (1.0 + _erf(x * 0.5**0.5))


def _sigmoid(x: F64) -> F64:
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for x < -709: the sigmoid is then 0
        return 1.0 / (1.0 + np.exp(-x))


UNARY_NUMPY: dict[Unary, Callable[[F64, float], F64]] = {
    Unary.EXP: lambda x, c: np.exp(x),
    Unary.SILU: lambda x, c: _silu(x),
    Unary.GELU: lambda x, c: _gelu(x),
    Unary.SQRT: lambda x, c: np.sqrt(x),
    Unary.RSQRT: lambda x, c: 1.0 / np.sqrt(x),
    Unary.SQUARE: lambda x, c: x * x,
    Unary.NEG: lambda x, c: -x,
    Unary.SCALE: lambda x, c: x * c,
    Unary.ADD_SCALAR: lambda x, c: x + c,
    Unary.RELU: lambda x, c: np.maximum(x, 0.0),
    Unary.ABS: lambda x, c: np.abs(x),
    Unary.TANH: lambda x, c: np.tanh(x),
    Unary.SIGMOID: lambda x, c: _sigmoid(x),
    Unary.LOG: lambda x, c: np.log(x),
    Unary.GELU_ERF: lambda x, c: _gelu_erf(x),
    Unary.ERF: lambda x, c: _erf(x),
    Unary.MAX_SCALAR: lambda x, c: np.maximum(x, c),
    Unary.MIN_SCALAR: lambda x, c: np.minimum(x, c),
    Unary.CHAIN: lambda x, c: np.tanh(x + c),  # a stand-in, one per chain number, for numeric screens
}

def shifted(x: F64, m: F64) -> F64:
    """``x − m`` for a max ``m`` of ``x`` (``ir.shift_by_max``): 0 subtracted where ``m`` is −inf."""
    return x - np.where(np.isneginf(m), 0.0, m)


BINARY_NUMPY: dict[Binary, Callable[[F64, F64], F64]] = {
    Binary.ADD: np.add,
    Binary.SUB: np.subtract,
    Binary.MUL: np.multiply,
    Binary.DIV: np.divide,
    Binary.MAXIMUM: np.maximum,
    Binary.MINIMUM: np.minimum,
}

REDUCE_NUMPY: dict[Reduce, Callable[[F64, int], F64]] = {
    Reduce.SUM: lambda x, d: np.sum(x, axis=d, keepdims=True),
    Reduce.MAX: lambda x, d: np.max(x, axis=d, keepdims=True),
}


@dataclass(frozen=True)
class Const:
    """A literal scalar operand."""

    value: float

    def resolve(self, shapes: dict[str, tuple[int, ...]]) -> float:
        return self.value


@dataclass(frozen=True)
class DimRecip:
    """The scalar 1 / (size of dim ``dim`` of graph input ``tensor``): what a mean divides by.

    Kept symbolic so that a plan found for one shape stays right for every other shape.
    """

    tensor: str
    dim: int

    def resolve(self, shapes: dict[str, tuple[int, ...]]) -> float:
        return 1.0 / shapes[self.tensor][self.dim]


Scalar = Const | DimRecip


def scalar_to_json(s: Scalar | None) -> object:
    match s:
        case None:
            return None
        case Const(value):
            return {"const": value}
        case DimRecip(tensor, dim):
            return {"recip_dim": [tensor, dim]}


def scalar_from_json(obj: object) -> Scalar | None:
    if obj is None:
        return None
    if isinstance(obj, dict) and "const" in obj:
        return Const(float(obj["const"]))
    if isinstance(obj, dict) and "recip_dim" in obj:
        tensor, dim = obj["recip_dim"]
        return DimRecip(str(tensor), int(dim))
    raise ValueError(f"not a scalar: {obj!r}")


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """NumPy broadcasting of two shapes of equal rank; None when they do not broadcast."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """Shape of ``a @ b``: 2-D, or batched 3-D with a 2-D or 3-D right operand; None if invalid."""
    if len(a) < 2 or len(b) < 2 or len(b) > len(a) or a[-1] != b[-2]:
        return None
    if len(a) == len(b):
        batch = broadcast_shape(a[:-2], b[:-2])
        if batch is None:
            return None
        return (*batch, a[-2], b[-1])
    if len(b) != 2:
        return None
    return (*a[:-2], a[-2], b[-1])
