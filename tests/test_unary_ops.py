"""relu, abs, tanh, sigmoid, log, the exact gelu, maximum / minimum and clamps: their NumPy semantics, the
Graph API, the search and the verifier (which proves a plan of each and tells them apart), code generation
(emulated like the interpreter, compiled with nvcc), the PyTorch form of a program, the capture table, and
the check of the tuning inputs against the domains of log and square roots."""

from __future__ import annotations

import json
import math
import types
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from prism import interpreter, pipeline
from prism.capture.build import RegionSpec, bind, evaluate, spec_from_json, spec_to_json
from prism.capture.ir import Activation, Captured, Ref, Step
from prism.codegen import generate
from prism.codegen.emulate import emulate
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.errors import GraphError, TuningError
from prism.graph import Graph, OpKind
from prism.ir import BinaryOp, CustomKernel, KernelGraph, UnaryOp
from prism.ops import UNARY_NUMPY, Binary, Unary
from prism.reference import relative_error
from prism.search.exprprune import Algebra
from prism.torch_program import _unary
from prism.tune.backends import InterpreterBackend
from prism.tune.inputs import check_domain, input_sampler
from prism.verify import check_equivalent
from tests.test_capture import _fn, _Meta, _Trace
from tests.test_emulate import cheap_sizes, inputs_of

NEW = (Unary.RELU, Unary.ABS, Unary.TANH, Unary.SIGMOID, Unary.LOG)  # the exact gelu is tested on its own


def test_numpy_semantics() -> None:
    x = np.array([-800.0, -2.0, -0.0, 0.0, 0.5, 3.0, np.nan])
    with np.errstate(invalid="ignore", divide="ignore"):
        got = {fn: UNARY_NUMPY[fn](x, 0.0) for fn in NEW}
    assert np.array_equal(got[Unary.RELU], [0, 0, 0, 0, 0.5, 3.0, np.nan], equal_nan=True)
    assert np.array_equal(got[Unary.ABS], [800, 2, 0, 0, 0.5, 3, np.nan], equal_nan=True)
    assert np.allclose(got[Unary.TANH][1:6], np.tanh(x[1:6])) and got[Unary.TANH][0] == -1.0
    assert got[Unary.SIGMOID][0] == 0.0 and got[Unary.SIGMOID][3] == 0.5  # exp(800) overflows to a clean 0
    assert math.isclose(got[Unary.SIGMOID][5], 1 / (1 + math.exp(-3.0)))
    assert np.isnan(got[Unary.LOG][1]) and got[Unary.LOG][3] == -np.inf and math.isclose(got[Unary.LOG][5], math.log(3))
    assert not {fn for fn in NEW if fn.transcendental} ^ {Unary.TANH, Unary.SIGMOID, Unary.LOG}


def test_the_exact_gelu() -> None:
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    phi = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(UNARY_NUMPY[Unary.ERF](x, 0.0), [math.erf(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(UNARY_NUMPY[Unary.GELU_ERF](x, 0.0), x * phi, rtol=1e-15)
    assert abs(UNARY_NUMPY[Unary.GELU_ERF](x, 0.0)[1] - UNARY_NUMPY[Unary.GELU](x, 0.0)[1]) > 1e-4  # not the tanh form
    g = Graph()
    y = g.input((2, 3), name="Y")
    assert g.nodes[g.gelu(y, approximate="none").index].fn is Unary.GELU_ERF
    assert g.nodes[g.gelu(y).index].fn is Unary.GELU  # the tanh form stays Prism's default
    with pytest.raises(GraphError, match="approximate='exact'"):
        g.gelu(y, approximate="exact")


def test_graph_methods_make_unary_nodes() -> None:
    g = Graph()
    x = g.input((4, 8), name="X")
    outs = [g.relu(x), g.abs(x), g.tanh(x), g.sigmoid(x), g.log(x)]
    assert [g.nodes[t.index].fn for t in outs] == list(NEW)
    assert all(g.nodes[t.index].kind is OpKind.UNARY and t.shape == (4, 8) for t in outs)
    with pytest.raises(GraphError, match="relu"):
        Graph().relu(x)  # a tensor of another graph, named by the op


def _mixed(n: int = 8, d: int = 16) -> Graph:
    """Every new op in one row program: log(sigmoid(x) + 1) * tanh(gelu(|x|)) + relu(x) / sum(relu(x))."""
    g = Graph()
    x = g.input((n, d), name="X")
    r = g.relu(x)
    body = g.mul(g.log(g.add_scalar(g.sigmoid(x), 1.0)), g.tanh(g.gelu(g.abs(x), approximate="none")))
    body = g.add(body, g.erf(x))
    g.output(g.add(body, g.div(r, g.add_scalar(g.sum(r, -1), 1.0))), "O")
    return g


def _searched(g: Graph) -> list[KernelGraph]:
    out = pipeline.search_and_verify(g, program="unary_ops_test", progress=False)
    return out.of(pipeline.PlanSource.SEARCHED)


def test_plans_of_every_new_op_are_found_proven_and_emulate_like_the_interpreter() -> None:
    g = _mixed()
    templates = _searched(g)
    assert templates
    fns = {op.fn for t in templates for k in t.kernels if isinstance(k, CustomKernel)
           for op in k.ops if isinstance(op, UnaryOp)}
    assert {*NEW, Unary.GELU_ERF, Unary.ERF} <= fns
    ran = 0
    for t in templates[:4]:
        for sizes in cheap_sizes(t, 2):
            kg = t.instantiate(sizes)
            ins = inputs_of(kg)
            got, want = emulate(kg, ins), interpreter.run(kg, ins)
            assert relative_error(got["O"], want["O"]) < 1e-9
            ran += 1
    assert ran


def test_the_verifier_tells_relu_from_abs() -> None:
    g = _mixed()
    t = _searched(g)[0]
    swapped = replace(t, kernels=tuple(
        replace(k, ops=tuple(UnaryOp(Unary.ABS, op.x) if isinstance(op, UnaryOp) and op.fn is Unary.RELU else op
                             for op in k.ops)) if isinstance(k, CustomKernel) else k for k in t.kernels))
    assert swapped != t
    assert check_equivalent(g, t).proven
    assert not check_equivalent(g, swapped).proven


def test_generated_code_uses_the_device_forms() -> None:
    kg = _searched(_mixed())[0]
    src = "\n".join(k.source for k in generate(kg.instantiate(cheap_sizes(kg, 1)[0]), arch="sm_80").kernels)
    for form in ("prism_relu(", "fabsf(", "tanhf(", "prism_sigmoid(", "__logf(", "prism_gelu_erf(", "erff("):
        assert form in src, form


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_generated_sources_compile() -> None:
    kgs = [t.instantiate(cheap_sizes(t, 1)[0]) for t in _searched(_mixed())[:3]]
    sources = list({k.entry: k.source for kg in kgs for k in generate(kg, arch="sm_80").kernels}.items())
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == len(sources) and all(c.spills == 0 for c in compiled)


def test_the_pytorch_form_calls_the_torch_functions() -> None:
    calls: list[str] = []

    def fn(name: str) -> Any:
        return lambda x: calls.append(name) or name

    fake = types.SimpleNamespace(**{name: fn(name) for name in ("relu", "abs", "tanh", "sigmoid", "log")})
    g = Graph()
    x = g.input((2, 2), name="X")
    for op in (g.relu, g.abs, g.tanh, g.sigmoid, g.log):
        assert _unary(fake, g.nodes[op(x).index], object(), {}) == op.__name__
    assert calls == ["relu", "abs", "tanh", "sigmoid", "log"]


def test_the_capture_table_maps_the_new_ops() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((4, 8)))
    for name, module, fn in (("relu", "torch", Unary.RELU), ("relu", "torch.nn.functional", Unary.RELU),
                             ("abs", "torch", Unary.ABS), ("tanh", "torch", Unary.TANH),
                             ("sigmoid", "torch", Unary.SIGMOID), ("log", "torch", Unary.LOG),
                             ("erf", "torch", Unary.ERF)):
        node = t.add("call_function", _fn(name, module), x, out=_Meta((4, 8)))
        assert t.map(node).step == Captured(len(t.nodes) - 1, Step.UNARY, (Ref(0),), fn=fn), name
    t.add("call_function", _fn("gelu", "torch.nn.functional"), x, out=_Meta((4, 8)))  # PyTorch's default: exact
    assert t.map().step == Captured(len(t.nodes) - 1, Step.UNARY, (Ref(0),), fn=Unary.GELU_ERF)
    t.add("call_function", _fn("gelu", "torch.nn.functional"), x, approximate="tanh", out=_Meta((4, 8)))
    assert t.map().step == Captured(len(t.nodes) - 1, Step.UNARY, (Ref(0),), fn=Unary.GELU)
    t.add("call_function", _fn("gelu", "torch.nn.functional"), x, approximate="sigmoid", out=_Meta((4, 8)))
    assert "approximate='sigmoid'" in t.map().why
    t.add("call_method", "abs", x, out=_Meta((4, 8)))
    assert t.map().step == Captured(len(t.nodes) - 1, Step.UNARY, (Ref(0),), fn=Unary.ABS)
    t.add("call_function", _fn("relu", "torch.nn.functional"), x, True, out=_Meta((4, 8)))
    assert t.map().step is None and "in place" in t.map().why


def _np_log_softmax(x: np.ndarray, dim: int) -> np.ndarray:
    s = x - x.max(dim, keepdims=True)
    return s - np.log(np.exp(s).sum(dim, keepdims=True))


def test_log_softmax_and_logsumexp_are_finite_for_large_logits() -> None:
    g = Graph()
    x = g.input((3, 5, 7), name="X")
    g.output(g.log_softmax(x, 1), "L")
    g.output(g.logsumexp(x, -1), "S")
    xs = np.random.default_rng(1).standard_normal((3, 5, 7)) * 400  # exp overflows without the max
    out = g.evaluate({"X": xs})
    np.testing.assert_allclose(out["L"], _np_log_softmax(xs, 1), rtol=1e-12, atol=1e-9)
    m = xs.max(-1, keepdims=True)
    np.testing.assert_allclose(out["S"], np.log(np.exp(xs - m).sum(-1, keepdims=True)) + m, rtol=1e-12)
    assert out["S"].shape == (3, 5, 1) and np.isfinite(out["L"]).all()
    with pytest.raises(GraphError, match="logsumexp"):
        g.logsumexp(x, 3)


def test_captured_log_softmax_and_logsumexp_bind_to_their_numpy_forms() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((2, 3, 16)))
    t.add("call_function", _fn("log_softmax", "torch.nn.functional"), x, -1, out=_Meta((2, 3, 16)))
    assert t.map().step == Captured(1, Step.LOG_SOFTMAX, (Ref(0),), dim=-1)
    t.add("call_function", _fn("softmax", "torch.nn.functional"), x, -1, dtype="torch.float32",
          out=_Meta((2, 3, 16), "float32"))  # as Llama's eager attention writes it
    assert t.map().step == Captured(2, Step.SOFTMAX, (Ref(0),), dim=-1)
    t.nodes.pop()
    t.add("call_function", _fn("logsumexp"), x, -1, True, out=_Meta((2, 3, 1)))
    assert t.map().step == Captured(2, Step.LOGSUMEXP, (Ref(0),), dim=-1)
    t.add("call_function", _fn("logsumexp"), x, -1, out=_Meta((2, 3)))
    assert "keepdim=False" in t.map().why
    steps = (Captured(1, Step.LOG_SOFTMAX, (Ref(0),), dim=-1), Captured(2, Step.LOGSUMEXP, (Ref(0),), dim=-1))
    program = bind(RegionSpec(steps, (0,), (1, 2)), [(2, 3, 16)], "float16")
    xs = np.random.default_rng(2).standard_normal((2, 3, 16)) * 30
    got = evaluate(program, [xs])
    np.testing.assert_allclose(got[0], _np_log_softmax(xs, -1), rtol=1e-12, atol=1e-12)
    m = xs.max(-1, keepdims=True)
    np.testing.assert_allclose(got[1], np.log(np.exp(xs - m).sum(-1, keepdims=True)) + m, rtol=1e-12)


def _log_of_input(n: int = 8, d: int = 16) -> Graph:
    g = Graph()
    x = g.input((n, d), name="X")
    g.output(g.log(x), "O")
    return g


def test_a_log_of_default_inputs_is_refused_before_the_search_with_what_to_do() -> None:
    with pytest.raises(TuningError, match=r"log of input 'X' needs values > 0, but \d+ of 128 are not") as e:
        pipeline.superoptimize(_log_of_input(), samples=2, cache=False, progress=False,
                               backend=InterpreterBackend(lambda kg: 1.0))
    assert "example_inputs" in str(e.value)


def test_positive_example_inputs_keep_a_log_in_its_domain() -> None:
    examples = {"X": np.random.default_rng(3).uniform(0.05, 2.0, (8, 16))}  # normal draws would reach below 0
    fast = pipeline.superoptimize(_log_of_input(), samples=2, cache=False, progress=False, example_inputs=examples,
                                  backend=InterpreterBackend(lambda kg: 1.0))
    assert fast.summary["plan_source"] in {s.value for s in pipeline.PlanSource}
    out = interpreter.run(fast.kernel_graph, examples)["O"]
    np.testing.assert_allclose(out, np.log(examples["X"]), rtol=1e-12)


def test_a_norm_of_a_value_that_can_be_negative_is_named_by_its_node() -> None:
    g = Graph()
    x = g.input((4, 8), name="X")
    g.output(g.sqrt(g.sum(x, -1)), "O")  # a row sum of N(0, 1) values is negative about half the time
    with pytest.raises(TuningError, match=r"sqrt of node \d+ \(sum, shape \[4, 1\]\) needs values >= 0"):
        pipeline.superoptimize(g, samples=2, cache=False, progress=False, backend=InterpreterBackend(lambda kg: 1.0))
    g2 = Graph()
    y = g2.input((4, 8), name="X")
    g2.output(g2.rms_norm(y), "O")  # rsqrt(mean(x²) + eps): always in its domain, no error
    check_domain(g2, input_sampler(g2), 0, "rms")  # raises TuningError if it were not


# ---------------------------------------------------------------- maximum, minimum, clamp
def test_maximum_minimum_and_clamp_in_the_graph_api() -> None:
    g = Graph()
    x, y = g.input((2, 4), name="X"), g.input((2, 4), name="Y")
    g.output(g.maximum(x, y), "MX")
    g.output(g.minimum(x, 0.25), "MN")
    g.output(g.clamp(x, -0.5, 0.5), "C")
    g.output(g.clamp(x, hi=0.0), "H")
    xs = np.array([[-1.0, 0.3, np.nan, 2.0], [0.0, -0.7, 0.6, 0.1]])
    ys = np.array([[0.5, 0.2, 1.0, np.nan], [0.0, 0.0, 0.0, 0.0]])
    out = g.evaluate({"X": xs, "Y": ys})
    np.testing.assert_array_equal(out["MX"], np.maximum(xs, ys))  # NaN where either is NaN
    np.testing.assert_array_equal(out["MN"], np.minimum(xs, 0.25))
    np.testing.assert_array_equal(out["C"], np.clip(xs, -0.5, 0.5))
    np.testing.assert_array_equal(out["H"], np.minimum(xs, 0.0))
    assert [g.nodes[g.maximum(x, 1).index].fn, g.nodes[g.maximum(x, y).index].fn] == [Unary.MAX_SCALAR,
                                                                                        Binary.MAXIMUM]
    with pytest.raises(GraphError, match="clamp"):
        g.clamp(x)
    with pytest.raises(GraphError, match="above the upper bound"):
        g.clamp(x, 1.0, -1.0)
    with pytest.raises(GraphError, match="maximum"):
        g.maximum(x, float("nan"))


def test_the_search_normal_form_of_max_and_min_is_symmetric() -> None:
    alg = Algebra({"A": ("i",), "B": ("i",)})
    a, b = alg.var("A"), alg.var("B")
    assert alg.extreme(a, b, Fraction(1)) == alg.extreme(b, a, Fraction(1))
    assert alg.extreme(a, b, Fraction(1)) != alg.extreme(a, b, Fraction(-1))
    assert alg.abs(alg.add(a, b, Fraction(-1))) == alg.abs(alg.add(b, a, Fraction(-1)))
    # max(a, b) + min(a, b) = a + b
    total = alg.add(alg.extreme(a, b, Fraction(1)), alg.extreme(a, b, Fraction(-1)))
    assert total == alg.add(a, b)


def _clamped(n: int = 8, d: int = 16) -> Graph:
    """clamp(maximum(X, Y) * 0.5, -1, 1) + minimum(X, 0)."""
    g = Graph()
    x, y = g.input((n, d), name="X"), g.input((n, d), name="Y")
    g.output(g.add(g.clamp(g.scale(g.maximum(x, y), 0.5), -1.0, 1.0), g.minimum(x, 0.0)), "O")
    return g


def test_plans_of_max_min_and_clamp_are_proven_and_emulate_like_the_interpreter() -> None:
    g = _clamped()
    templates = _searched(g)
    assert templates
    t = templates[0]
    fns = {op.fn for k in t.kernels if isinstance(k, CustomKernel) for op in k.ops if isinstance(op, UnaryOp | BinaryOp)}
    assert {Binary.MAXIMUM, Unary.MAX_SCALAR, Unary.MIN_SCALAR} <= fns
    for tt in templates[:3]:
        kg = tt.instantiate(cheap_sizes(tt, 1)[0])
        ins = inputs_of(kg)
        assert relative_error(emulate(kg, ins)["O"], interpreter.run(kg, ins)["O"]) < 1e-9
    swapped = replace(t, kernels=tuple(
        replace(k, ops=tuple(BinaryOp(Binary.MINIMUM, op.a, op.b) if isinstance(op, BinaryOp)
                             and op.fn is Binary.MAXIMUM else op for op in k.ops))
        if isinstance(k, CustomKernel) else k for k in t.kernels))
    assert check_equivalent(g, t).proven and not check_equivalent(g, swapped).proven
    src = "\n".join(k.source for k in generate(t.instantiate(cheap_sizes(t, 1)[0]), arch="sm_80").kernels)
    assert "prism_max(" in src and "prism_min(" in src and src.count("float prism_max(") == 1


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_max_min_sources_compile() -> None:
    kgs = [t.instantiate(cheap_sizes(t, 1)[0]) for t in _searched(_clamped())[:2]]
    sources = list({k.entry: k.source for kg in kgs for k in generate(kg, arch="sm_80").kernels}.items())
    assert len(compile_check(sources, "sm_80", jobs=2)) == len(sources)


def test_the_capture_maps_maximum_and_clamps_with_number_bounds() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((4, 8)))
    y = t.add("placeholder", "y", out=_Meta((4, 8)))
    t.add("call_function", _fn("maximum"), x, y, out=_Meta((4, 8)))
    assert t.map().step == Captured(2, Step.BINARY, (Ref(0), Ref(1)), fn=Binary.MAXIMUM)
    cases = [(("clamp", "torch"), (x,), {"min": -1, "max": 2.5}, (-1.0, 2.5)),
             (("clamp_min", "torch"), (x, 1e-6), {}, (1e-6, math.inf)),
             (("relu6", "torch.nn.functional"), (x,), {}, (0.0, 6.0)),
             (("hardtanh", "torch.nn.functional"), (x,), {}, (-1.0, 1.0))]
    for (name, module), args, kwargs, (lo, hi) in cases:
        t.add("call_function", _fn(name, module), *args, out=_Meta((4, 8)), **kwargs)
        assert t.map().step == Captured(len(t.nodes) - 1, Step.CLAMP, (Ref(0), lo, hi)), name
    t.add("call_method", "clamp", x, max=0.5, out=_Meta((4, 8)))
    assert t.map().step == Captured(len(t.nodes) - 1, Step.CLAMP, (Ref(0), -math.inf, 0.5))
    t.add("call_function", _fn("clamp"), x, y, out=_Meta((4, 8)))
    assert "not a number" in t.map().why
    steps = (Captured(2, Step.CLAMP, (Ref(0), -math.inf, 0.5)), Captured(3, Step.BINARY, (2.0, Ref(2)),
                                                                          fn=Binary.MAXIMUM))
    program = bind(RegionSpec(steps, (0,), (3,)), [(4, 8)], "float32")
    xs = np.random.default_rng(4).standard_normal((4, 8)) * 3
    np.testing.assert_array_equal(evaluate(program, [xs])[0], np.maximum(2.0, np.minimum(xs, 0.5)))


# ---------------------------------------------------------------- activations as composites
_ACT_NUMPY = {
    "softplus": lambda v: np.log1p(np.exp(-abs(v))) + np.maximum(v, 0),
    "mish": lambda v: v * np.tanh(np.log1p(np.exp(-abs(v))) + np.maximum(v, 0)),
    "elu": lambda v: np.where(v > 0, v, np.expm1(np.minimum(v, 0))),
    "leaky_relu": lambda v: np.where(v > 0, v, 0.01 * v),
    "hardsigmoid": lambda v: np.clip(v / 6 + 0.5, 0, 1),
    "hardswish": lambda v: v * np.clip(v / 6 + 0.5, 0, 1),
    "softsign": lambda v: v / (1 + abs(v)),
    "logsigmoid": lambda v: -(np.log1p(np.exp(-abs(v))) + np.maximum(-v, 0)),
}


def test_activation_composites_match_their_definitions_without_overflow() -> None:
    g = Graph()
    x = g.input((2, 10), name="X")
    for name in _ACT_NUMPY:
        g.output(getattr(g, name)(x), name)
    g.output(g.softplus(x, beta=2.0), "sp2")
    g.output(g.elu(x, alpha=0.5), "elu05")
    xs = np.array([[-800, -5, -1, -0.1, 0, 0.1, 1, 5, 800, 3.0], [-3, -2.5, 2.9, 3, 3.1, -3.1, 30, -30, 0.5, -6]])
    out = g.evaluate({"X": xs})
    for name, f in _ACT_NUMPY.items():
        np.testing.assert_allclose(out[name], f(xs), rtol=1e-12, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(out["sp2"], _ACT_NUMPY["softplus"](2 * xs) / 2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["elu05"], np.where(xs > 0, xs, 0.5 * np.expm1(np.minimum(xs, 0))), rtol=1e-12)
    with pytest.raises(GraphError, match="beta"):
        g.softplus(x, beta=0.0)


def test_the_capture_maps_activations_to_composites() -> None:
    t = _Trace()
    x = t.add("placeholder", "x", out=_Meta((4, 8)))
    nn = "torch.nn.functional"
    t.add("call_function", _fn("hardswish", nn), x, out=_Meta((4, 8)))
    assert t.map().step == Captured(1, Step.ACTIVATION, (Ref(0),), fn=Activation.HARDSWISH)
    t.add("call_function", _fn("leaky_relu", nn), x, 0.2, out=_Meta((4, 8)))
    assert t.map().step == Captured(2, Step.ACTIVATION, (Ref(0),), fn=Activation.LEAKY_RELU, scale=0.2)
    t.add("call_function", _fn("softplus", nn), x, out=_Meta((4, 8)))
    assert t.map().step == Captured(3, Step.ACTIVATION, (Ref(0),), fn=Activation.SOFTPLUS)
    t.add("call_function", _fn("softplus", nn), x, 1.0, 5.0, out=_Meta((4, 8)))
    assert "threshold" in t.map().why
    t.add("call_function", _fn("elu", nn), x, inplace=True, out=_Meta((4, 8)))
    assert "in place" in t.map().why
    steps = (Captured(1, Step.ACTIVATION, (Ref(0),), fn=Activation.LEAKY_RELU, scale=0.2),
             Captured(2, Step.ACTIVATION, (Ref(1),), fn=Activation.MISH))
    spec = RegionSpec(steps, (0,), (2,))
    assert spec_from_json(json.loads(json.dumps(spec_to_json(spec)))) == spec
    xs = np.random.default_rng(5).standard_normal((4, 8)) * 3
    leaky = np.where(xs > 0, xs, 0.2 * xs)
    np.testing.assert_allclose(evaluate(bind(spec, [(4, 8)], "float32"), [xs])[0], _ACT_NUMPY["mish"](leaky),
                               rtol=1e-12)


# ---------------------------------------------------------------- references that are not finite
def test_relative_error_holds_non_finite_references_to_the_same_value() -> None:
    ref = np.array([1.0, -np.inf, 2.0, np.nan])
    assert relative_error(np.array([1.0, -np.inf, 2.0, np.nan]), ref) == 0.0
    assert 0 < relative_error(np.array([1.1, -np.inf, 2.0, np.nan]), ref) < 0.1  # over the finite entries
    assert relative_error(np.array([1.0, np.inf, 2.0, np.nan]), ref) == math.inf  # the other infinity
    assert relative_error(np.array([1.0, -1e4, 2.0, np.nan]), ref) == math.inf  # finite where it is -inf
    assert relative_error(np.array([1.0, -np.inf, np.nan, np.nan]), ref) == math.inf  # NaN where it is finite
    assert relative_error(np.array([1.0, -np.inf, 2.0, 0.0]), ref) == math.inf  # a number where it is NaN


def test_a_log_softmax_of_masked_logits_is_tuned_and_checked_on_them() -> None:
    g = Graph()
    x = g.input((4, 16), name="X")
    g.output(g.log_softmax(x, -1), "O")
    logits = np.random.default_rng(6).standard_normal((4, 16))
    logits[:, 10:] = -np.inf  # a masked vocabulary: log-probabilities of -inf there
    fast = pipeline.superoptimize(g, samples=2, cache=False, progress=False, example_inputs={"X": logits},
                                  backend=InterpreterBackend(lambda kg: 1.0))
    out = interpreter.run(fast.kernel_graph, {"X": logits})["O"]
    assert np.all(out[:, 10:] == -np.inf) and np.isfinite(out[:, :10]).all()
    assert relative_error(out, g.evaluate({"X": logits})["O"]) < 1e-12


def test_a_rank_4_region_of_clamps_and_activations_is_squeezed_like_other_elementwise_ones() -> None:
    steps = (Captured(2, Step.CLAMP, (Ref(0), -1.0, math.inf)),
             Captured(3, Step.ACTIVATION, (Ref(2),), fn=Activation.HARDSWISH),
             Captured(4, Step.BINARY, (Ref(3), Ref(1)), fn=Binary.MUL))
    shapes = [(1, 32, 1, 64), (1, 1, 1, 64)]
    program = bind(RegionSpec(steps, (0, 1), (4,)), shapes, "float16")
    assert max(len(t.shape) for t in program.graph.inputs) == 2 and program.shapes == ((1, 32, 1, 64),)
    xs = [np.random.default_rng(7).standard_normal(s) * 4 for s in shapes]
    c = np.maximum(xs[0], -1.0)
    np.testing.assert_allclose(evaluate(program, xs)[0], _ACT_NUMPY["hardswish"](c) * xs[1], rtol=1e-12)
