"""Runtime aliasing (issue 16): an ``out=`` that shares memory with an input or another output, torch
lazy neg/conj views and non-contiguous tensors are refused with ``InputError``; calls on two streams
are ordered (the intermediates are shared). The overlap predicate is pure Python (CPU tests); the
rest needs a GPU with torch and CuPy (marked ``gpu``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prism import plans, workloads
from prism.codegen import generate
from prism.errors import InputError
from prism.reference import relative_error
from prism.runtime import Span, first_overlap


def test_an_output_overlapping_an_input_is_found() -> None:
    x = Span("X", "input", 1000, 64)
    assert first_overlap([x, Span("O", "output", 1000, 64)]) == (x, Span("O", "output", 1000, 64))
    assert first_overlap([x, Span("O", "output", 1063, 8)]) is not None  # one byte in common
    assert first_overlap([x, Span("O", "output", 1064, 8)]) is None  # adjacent, not overlapping
    assert first_overlap([x, Span("O", "output", 992, 8)]) is None


def test_outputs_must_not_overlap_each_other_but_inputs_may() -> None:
    assert first_overlap([Span("O1", "output", 0, 32), Span("O2", "output", 16, 32)]) is not None
    assert first_overlap([Span("A", "input", 0, 32), Span("B", "input", 0, 32)]) is None  # f(X, X)
    assert first_overlap([Span("A", "input", 0, 32), Span("O", "output", 0, 0)]) is None  # empty


SPANS = st.lists(st.tuples(st.sampled_from(["input", "output"]), st.integers(0, 64), st.integers(0, 24)),
                 max_size=6)


@settings(max_examples=300, deadline=None)
@given(SPANS)
def test_overlap_matches_a_byte_by_byte_model(raw: list[tuple[str, int, int]]) -> None:
    spans = [Span(f"t{i}", role, start, n) for i, (role, start, n) in enumerate(raw)]
    clash = any(set(range(a.start, a.start + a.nbytes)) & set(range(b.start, b.start + b.nbytes))
                for i, a in enumerate(spans) for b in spans[i + 1:] if "output" in (a.role, b.role))
    assert (first_overlap(spans) is not None) == clash


# ---------------------------------------------------------------------------------------- GPU


def _rmsnorm_linear() -> tuple[Any, Any, dict[str, np.ndarray]]:
    """A compiled rmsnorm_linear plan (its output has the shape and dtype of the input X)."""
    from prism.runtime import compile_plan

    cfg = workloads.config("rmsnorm_linear_d1024")
    g = cfg.build()
    fn = compile_plan(generate(plans.hand_plans(cfg.program, g)[0].instantiate({"x": 32, "i": 8}), arch="sm_90"))
    return fn, g, cfg.random_inputs(3, g)


@pytest.mark.gpu
def test_gpu_out_aliasing_an_input_is_refused() -> None:
    torch = pytest.importorskip("torch")
    fn, g, inputs = _rmsnorm_linear()
    x, w = (torch.from_numpy(inputs[t.name]).to("cuda", torch.float16) for t in g.inputs)
    assert tuple(x.shape) == g.outputs[0].shape  # out=x is a legal shape and dtype
    with pytest.raises(InputError, match="shares memory with input 'X'"):
        fn(x, w, out=x)
    with pytest.raises(InputError, match="shares memory with input 'W'"):
        fn(x, w, out=w[: x.shape[0]])  # the first rows of W: contiguous, aligned, same shape
    out = fn(x, w)  # and an honest call still works
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), g.evaluate(inputs)["O"]) < 2e-2


@pytest.mark.gpu
def test_gpu_lazy_neg_views_and_strided_tensors_are_refused() -> None:
    torch = pytest.importorskip("torch")
    fn, g, inputs = _rmsnorm_linear()
    x, w = (torch.from_numpy(inputs[t.name]).to("cuda", torch.float16) for t in g.inputs)
    neg = torch._neg_view(x)
    assert neg.is_neg() and neg.data_ptr() == x.data_ptr()  # reads x's memory, means -x
    with pytest.raises(InputError, match="lazy neg"):
        fn(neg, w)
    with pytest.raises(InputError, match="lazy neg"):
        fn(x, w, out=torch._neg_view(torch.empty_like(x)))
    with pytest.raises(InputError, match="contiguous"):
        fn(x, w.t())  # square, so only the strides are wrong
    out = fn(neg.resolve_neg(), w)  # the remedy the message names
    torch.cuda.synchronize()
    want = g.evaluate({"X": -inputs["X"], "W": inputs["W"]})["O"]
    assert relative_error(out.double().cpu().numpy(), want) < 2e-2


@pytest.mark.gpu
def test_gpu_calls_on_two_streams_share_intermediates_safely() -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    cfg = workloads.config("gqa_h1024")
    g = cfg.build()
    fn = compile_plan(generate(plans.hand_plans(cfg.program, g)[2].instantiate({"x": 2, "s": 16, "i": 2}),
                               arch="sm_90"))
    assert fn.plan.buffers, "this plan must have intermediates for the test to mean anything"
    runs = [cfg.random_inputs(s, g) for s in (11, 12, 13, 14)]
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    outs = []
    for n, inputs in enumerate(runs):  # alternate streams with no synchronisation between calls
        xs = [torch.from_numpy(inputs[t.name]).to("cuda", torch.float16) for t in g.inputs]
        torch.cuda.synchronize()
        with torch.cuda.stream(streams[n % 2]):
            outs.append(fn(*xs))
    torch.cuda.synchronize()
    for inputs, out in zip(runs, outs, strict=True):
        assert relative_error(out.double().cpu().numpy(), g.evaluate(inputs)["O"]) < 2e-2
