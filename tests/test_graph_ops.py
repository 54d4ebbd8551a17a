"""Every Graph operator and composite against an independent NumPy formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import prism
from prism.errors import GraphError, InputError
from prism.ops import Reduce

RNG = np.random.default_rng(1234)


def _rand(shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return RNG.standard_normal(shape) * scale


def _gelu_ref(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


UNARY_CASES = {
    "exp": np.exp,
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": _gelu_ref,
    "sqrt": lambda x: np.sqrt(np.abs(x) + 0.1),
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 0.1),
    "square": lambda x: x**2,
    "neg": lambda x: -x,
}

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)


@pytest.mark.parametrize("name", sorted(UNARY_CASES))
@given(shape=shapes)
@settings(max_examples=15, deadline=None)
def test_unary(name: str, shape: tuple[int, ...]) -> None:
    g = prism.Graph()
    x = g.input(shape, "float32", "X")
    if name in ("sqrt", "rsqrt"):
        # positive argument built in-graph: |x| via sqrt(x^2) + 0.1
        arg = g.add_scalar(g.sqrt(g.square(x)), 0.1)
        g.output(getattr(g, name)(arg))
    else:
        g.output(getattr(g, name)(x))
    xv = _rand(shape)
    np.testing.assert_allclose(g.evaluate({"X": xv})["O"], UNARY_CASES[name](xv), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op,ref", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)])
@given(data=st.data())
@settings(max_examples=20, deadline=None)
def test_binary_broadcasting(op: str, ref: object, data: st.DataObject) -> None:
    shape = data.draw(shapes)
    # each operand keeps a dim or collapses it to 1 (NumPy broadcasting over size-1 dims)
    sa = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    sb = tuple(d if data.draw(st.booleans()) or (a == 1 and d > 1) else 1 for d, a in zip(shape, sa, strict=True))
    g = prism.Graph()
    a, b = g.input(sa, "float32", "A"), g.input(sb, "float32", "B")
    g.output(getattr(g, op)(a, b))
    av, bv = _rand(sa), _rand(sb) + (3.0 if op == "div" else 0.0)
    out = g.evaluate({"A": av, "B": bv})["O"]
    assert out.shape == np.broadcast_shapes(sa, sb)
    np.testing.assert_allclose(out, ref(av, bv), rtol=1e-12)  # type: ignore[operator]


def test_scalar_ops_and_operators() -> None:
    g = prism.Graph()
    x = g.input((3, 4), "float32", "X")
    y = g.input((3, 4), "float32", "Y")
    g.output((x * 2.0 + 1.5 - y) / 4.0 + (-x) * y, "O")
    xv, yv = _rand((3, 4)), _rand((3, 4))
    np.testing.assert_allclose(g.evaluate({"X": xv, "Y": yv})["O"], (xv * 2 + 1.5 - yv) / 4 + (-xv) * yv, rtol=1e-12)


@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), data=st.data())
@settings(max_examples=15, deadline=None)
def test_reductions_keepdim(kind: str, shape: tuple[int, ...], data: st.DataObject) -> None:
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    g = prism.Graph()
    x = g.input(shape, "float32", "X")
    g.output(getattr(g, kind)(x, dim))
    xv = _rand(shape)
    ref = {"sum": np.sum, "mean": np.mean, "max": np.max}[kind](xv, axis=dim, keepdims=True)
    np.testing.assert_allclose(g.evaluate({"X": xv})["O"], ref, rtol=1e-12)


@pytest.mark.parametrize(
    "sa,sb",
    [((4, 6), (6, 5)), ((2, 3, 6), (2, 6, 5)), ((2, 3, 6), (6, 5)), ((1, 3, 6), (4, 6, 2))],
)
def test_matmul(sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    g = prism.Graph()
    a, b = g.input(sa, "float32", "A"), g.input(sb, "float32", "B")
    g.output(a @ b)
    av, bv = _rand(sa), _rand(sb)
    out = g.evaluate({"A": av, "B": bv})["O"]
    # independent formula: explicit broadcast product summed over the contraction dim
    explicit = (np.expand_dims(av, -1) * np.expand_dims(bv, -3)).sum(axis=-2)
    assert out.shape == explicit.shape
    np.testing.assert_allclose(out, explicit, rtol=1e-10)


def test_transpose() -> None:
    g = prism.Graph()
    x = g.input((2, 3, 4), "float32", "X")
    g.output(g.transpose(x))
    xv = _rand((2, 3, 4))
    out = g.evaluate({"X": xv})["O"]
    assert out.shape == (2, 4, 3)
    for b in range(2):
        np.testing.assert_array_equal(out[b], xv[b].T)


@given(n=st.integers(1, 6), d=st.integers(1, 9), eps=st.sampled_from([0.0, 1e-6, 0.1]))
@settings(max_examples=20, deadline=None)
def test_rms_norm(n: int, d: int, eps: float) -> None:
    g = prism.Graph()
    x = g.input((n, d), "float32", "X")
    g.output(g.rms_norm(x, eps))
    xv = _rand((n, d)) + 0.5
    ref = np.empty_like(xv)
    for r in range(n):  # row by row, the textbook formula
        ref[r] = xv[r] / math.sqrt(sum(v * v for v in xv[r]) / d + eps)
    np.testing.assert_allclose(g.evaluate({"X": xv})["O"], ref, rtol=1e-10)


@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=3).map(tuple), data=st.data())
@settings(max_examples=20, deadline=None)
def test_softmax_safe_by_default(shape: tuple[int, ...], data: st.DataObject) -> None:
    """The default softmax subtracts the row max: logits of magnitude 1e3 stay finite and exact."""
    dim = data.draw(st.integers(0, len(shape) - 1))
    g = prism.Graph()
    x = g.input(shape, "float32", "X")
    g.output(g.softmax(x, dim))
    assert any(n.fn is Reduce.MAX for n in g.nodes)
    xv = _rand(shape) * 1000.0 * data.draw(st.sampled_from([-1.0, 1.0]))
    z = xv - xv.max(axis=dim, keepdims=True)
    e = np.exp(z)
    out = g.evaluate({"X": xv})["O"]
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, e / e.sum(axis=dim, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(out.sum(axis=dim), 1.0, rtol=1e-12)


@given(shape=st.lists(st.integers(1, 5), min_size=2, max_size=3).map(tuple), data=st.data())
@settings(max_examples=20, deadline=None)
def test_softmax_unsafe_has_no_max_subtraction(shape: tuple[int, ...], data: st.DataObject) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    g = prism.Graph()
    x = g.input(shape, "float32", "X")
    g.output(g.softmax(x, dim, safe=False))
    assert not any(n.fn is Reduce.MAX for n in g.nodes)
    xv = _rand(shape)
    e = np.exp(xv)
    out = g.evaluate({"X": xv})["O"]
    np.testing.assert_allclose(out, e / e.sum(axis=dim, keepdims=True), rtol=1e-12)
    # the paper's form: huge inputs overflow to NaN instead of being silently renormalised
    big = g.evaluate({"X": xv + 1000.0})["O"]
    assert not np.all(np.isfinite(big))


def test_softmax_safe_flag_is_checked() -> None:
    g = prism.Graph()
    x = g.input((2, 3), "float32", "X")
    with pytest.raises(GraphError, match="safe"):
        g.softmax(x, safe="yes")  # type: ignore[arg-type]


def test_float16_inputs_evaluated_in_float64() -> None:
    g = prism.Graph()
    x = g.input((4, 8), "float16", "X")
    w = g.input((8, 3), "float16", "W")
    g.output(x @ w)
    xv = _rand((4, 8)).astype(np.float16)
    wv = _rand((8, 3)).astype(np.float16)
    out = g.evaluate({"X": xv, "W": wv})["O"]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, xv.astype(np.float64) @ wv.astype(np.float64), rtol=1e-14)


def test_evaluate_by_position_and_input_checks() -> None:
    g = prism.Graph()
    x = g.input((2, 3), "float32", "X")
    y = g.input((2, 3), "float32", "Y")
    g.output(x + y)
    xv, yv = _rand((2, 3)), _rand((2, 3))
    np.testing.assert_allclose(g.evaluate([xv, yv])["O"], xv + yv)
    with pytest.raises(InputError, match="'Y'"):
        g.evaluate({"X": xv, "Y": _rand((3, 2))})
    with pytest.raises(InputError, match="missing"):
        g.evaluate({"X": xv})


def test_inputs_outputs_listing() -> None:
    g = prism.Graph()
    x = g.input((8, 16), dtype="bfloat16", name="X")
    w = g.input((16, 4), dtype="bfloat16", name="W")
    g.output(x @ w, name="O")
    assert [(t.name, t.shape, t.dtype) for t in g.inputs] == [("X", (8, 16), "bfloat16"), ("W", (16, 4), "bfloat16")]
    assert [(t.name, t.shape, t.dtype) for t in g.outputs] == [("O", (8, 4), "bfloat16")]
