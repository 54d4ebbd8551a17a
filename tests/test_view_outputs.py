"""Outputs that are transposes of an input: PyTorch returns a view without a kernel, and so does
a call without ``out=`` (``runtime.view_outputs``); with ``out=`` the values are copied."""

from __future__ import annotations

import numpy as np
import pytest

from prism.codegen import LaunchPlan, generate
from prism.graph import Graph
from prism.partition import predefined_plan
from prism.runtime import view_outputs


def _plan(build: str) -> LaunchPlan:
    g = Graph()
    x = g.input([64, 192], name="X")
    w = g.input([192, 32], name="W")
    match build:
        case "transpose":
            g.output(g.transpose(x), name="O")
        case "double":
            g.output(g.transpose(g.transpose(x)), name="O")
        case "transpose_and_matmul":
            g.output(g.transpose(x), name="O")
            g.output(g.matmul(x, w), name="P")
        case "transpose_then_exp":
            g.output(g.exp(g.transpose(x)), name="O")
    return generate(predefined_plan(g), arch="sm_80")


def test_an_output_that_transposes_an_input_is_a_view_of_it() -> None:
    plan = _plan("transpose")
    assert view_outputs(plan) == {"O": ("X", True)}


def test_two_transposes_are_the_input_itself() -> None:
    plan = _plan("double")
    assert view_outputs(plan) == {"O": ("X", False)}


def test_only_the_transposed_output_of_several_is_a_view() -> None:
    plan = _plan("transpose_and_matmul")
    assert view_outputs(plan) == {"O": ("X", True)}


def test_a_computed_output_is_never_a_view() -> None:
    plan = _plan("transpose_then_exp")
    assert view_outputs(plan) == {}


@pytest.mark.gpu
def test_gpu_a_transposed_output_is_a_view_and_out_gets_a_copy() -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    plan = _plan("transpose_and_matmul")
    fn = compile_plan(plan)
    x = torch.randn(64, 192, device="cuda", dtype=torch.float16)
    w = torch.randn(192, 32, device="cuda", dtype=torch.float16)
    o, p = fn(x, w)
    assert o.data_ptr() == x.data_ptr() and torch.equal(o, x.t())  # a view, as x.t() is
    torch.testing.assert_close(p, x @ w)
    out_o, out_p = torch.empty(192, 64, device="cuda", dtype=torch.float16), torch.empty_like(p)
    fn(x, w, out=(out_o, out_p))
    torch.cuda.synchronize()
    assert np.array_equal(out_o.cpu().numpy(), x.t().cpu().numpy())
    cupy = pytest.importorskip("cupy")
    xc, wc = cupy.asarray(x), cupy.asarray(w)
    oc, _ = fn(xc, wc)  # CuPy arrays: a view too
    assert oc.data.ptr == xc.data.ptr and bool((oc == xc.T).all())
