"""Bad programs raise typed errors that name the op and the operands' shapes."""

from __future__ import annotations

import pytest

import prism
from prism.errors import DimError, DTypeError, GraphError, ShapeError


def test_matmul_mismatched_contraction() -> None:
    g = prism.Graph()
    a, b = g.input((4, 6), name="A"), g.input((5, 3), name="B")
    with pytest.raises(ShapeError, match=r"matmul.*A\[4, 6\].*B\[5, 3\]") as e:
        g.matmul(a, b)
    assert e.value.op == "matmul"


def test_matmul_wrong_rank() -> None:
    g = prism.Graph()
    a, b = g.input((6,), name="A"), g.input((6, 3), name="B")
    with pytest.raises(ShapeError, match=r"matmul.*ranks"):
        g.matmul(a, b)


def test_binary_wrong_rank_and_shape() -> None:
    g = prism.Graph()
    a, b, c = g.input((4, 6), name="A"), g.input((6,), name="B"), g.input((4, 5), name="C")
    with pytest.raises(ShapeError, match=r"add.*A\[4, 6\].*B\[6\].*rank"):
        g.add(a, b)
    with pytest.raises(ShapeError, match=r"mul.*A\[4, 6\].*C\[4, 5\].*broadcast"):
        g.mul(a, c)


def test_bad_dtype() -> None:
    g = prism.Graph()
    with pytest.raises(DTypeError, match="float64"):
        g.input((2, 2), dtype="float64", name="X")
    a = g.input((2, 2), dtype="float16", name="A")
    b = g.input((2, 2), dtype="float32", name="B")
    with pytest.raises(DTypeError, match=r"sub.*float16.*float32"):
        g.sub(a, b)


def test_reduce_over_missing_dim() -> None:
    g = prism.Graph()
    x = g.input((4, 6), name="X")
    with pytest.raises(DimError, match=r"sum.*dim 2.*X\[4, 6\]"):
        g.sum(x, 2)
    with pytest.raises(DimError, match=r"softmax.*dim -3"):
        g.softmax(x, -3)


def test_output_never_marked() -> None:
    g = prism.Graph()
    x = g.input((4, 6), name="X")
    g.exp(x)
    with pytest.raises(GraphError, match="no output"):
        g.evaluate({"X": [[0.0] * 6] * 4})


def test_bad_shapes_names_and_foreign_tensors() -> None:
    g = prism.Graph()
    with pytest.raises(ShapeError, match="positive"):
        g.input((4, 0), name="X")
    g.input((4,), name="X")
    with pytest.raises(GraphError, match="already used"):
        g.input((4,), name="X")
    other = prism.Graph()
    y = other.input((4,), name="Y")
    with pytest.raises(GraphError, match="another Graph"):
        g.exp(y)
    with pytest.raises(GraphError, match="scale.*finite"):
        g.scale(g.input((2,), name="Z"), float("nan"))


def test_errors_are_prism_errors() -> None:
    g = prism.Graph()
    with pytest.raises(prism.PrismError):
        g.matmul(g.input((2, 3), name="A"), g.input((2, 3), name="B"))


@pytest.mark.parametrize(("call", "error", "pattern"), [
    (lambda g, a: g.input(8), ShapeError, "sequence of 1 to 4 positive integers"),
    (lambda g, a: g.input(None), ShapeError, "sequence of 1 to 4 positive integers"),
    (lambda g, a: g.input((2**40, 2), name="B"), ShapeError, "2\\^31 or more elements"),
    (lambda g, a: g.input((2, 2), name=123), GraphError, "must be a string"),
    (lambda g, a: g.output(a, 5), GraphError, "must be a string"),
    (lambda g, a: g.sub(a, "x"), GraphError, "sub: scalar 'x' must be a finite number"),
    (lambda g, a: g.mul(a, None), GraphError, "must be a finite number"),
    (lambda g, a: g.scale(a, 10**400), GraphError, r"scale: scalar 1000.*\.\.\. must be a finite number"),
    (lambda g, a: g.div(a, float("nan")), GraphError, "must be a finite number"),
])
def test_bad_arguments_get_typed_errors_naming_the_value(call: object, error: type, pattern: str) -> None:
    g = prism.Graph()
    a = g.input((4, 8), name="A")
    with pytest.raises(error, match=pattern):
        call(g, a)  # type: ignore[operator]


def test_numpy_scalars_and_dims_are_accepted() -> None:
    import numpy as np

    g = prism.Graph()
    a = g.input((np.int64(4), 8), name="A")
    g.output(g.sum(g.scale(a, np.float32(2.0)), np.int64(1)), name="O")
    assert g.outputs[0].shape == (4, 1)
