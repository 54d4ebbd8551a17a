"""prism.output_views: outputs that are transposes of computed values, returned as transposed views."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gpu_compare import errors, superoptimized

from bench.zoo import zoo_graph
from prism import pipeline
from prism.errors import InputError
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph
from prism.output_views import PeeledOutputs, ViewsKernel, peel_output_transposes
from prism.rows import searched_graph
from prism.tune.backends import InterpreterBackend


def _scaled_t() -> Graph:
    """transpose(0.5 · X) and X + 1: one peeled output, one left as it is."""
    g = Graph()
    x = g.input((2, 8, 16), "float16", "X")
    g.output(g.transpose(g.scale(x, 0.5)), "T")
    g.output(g.add_scalar(x, 1.0), "P")
    return g


def _inputs(graph: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape) for t in graph.inputs}


def test_an_output_transpose_of_a_computed_value_is_peeled() -> None:
    graph = _scaled_t()
    peeled = peel_output_transposes(graph)
    assert peeled is not None and peeled.transposed == {"T"}
    assert peeled.shapes == ((2, 16, 8), (2, 8, 16))
    assert not any(n.kind is OpKind.TRANSPOSE for n in peeled.graph.nodes)
    assert [t.shape for t in peeled.graph.outputs] == [(2, 8, 16), (2, 8, 16)]
    xs = _inputs(graph)
    want, got = graph.evaluate(xs), peeled.graph.evaluate(xs)
    np.testing.assert_array_equal(got["T"].swapaxes(-1, -2), want["T"])
    np.testing.assert_array_equal(got["P"], want["P"])


def _built(build: Any) -> Graph:
    g = Graph()
    build(g)
    return g


@pytest.mark.parametrize("why, build", [
    ("a transpose of an input is returned as the input's view already",
     lambda g: g.output(g.transpose(g.input((4, 8), "float16", "X")), "T")),
    ("the operand is an output of its own: two names for one buffer",
     lambda g: (y := g.scale(g.input((4, 8), "float16", "X"), 2.0), g.output(y, "Y"), g.output(g.transpose(y), "T"))),
    ("another op reads the transpose",
     lambda g: (t := g.transpose(g.scale(g.input((4, 8), "float16", "X"), 2.0)), g.output(t, "T"),
                g.output(g.exp(t), "E"))),
])
def test_transposes_that_are_not_peeled(why: str, build: Any) -> None:
    assert peel_output_transposes(_built(build)) is None, why


def _fake(peeled: PeeledOutputs, calls: list[Any]) -> Any:
    """A compiled rewritten program stand-in: evaluates it, writing row-major buffers only."""
    def kernel(*args: Any, out: Any = None, **named: Any) -> Any:
        names = [t.name for t in peeled.graph.inputs]
        res = peeled.graph.evaluate({**dict(zip(names, args, strict=False)), **named})
        outs = tuple(res[t.name] for t in peeled.graph.outputs)
        calls.append(out)
        if out is None:
            return outs
        for o, r in zip(out, outs, strict=True):
            assert o.flags.c_contiguous and o.shape == r.shape
            o[...] = r
        return out
    return kernel


def test_the_callable_returns_transposed_views_and_fills_out_buffers() -> None:
    graph = _scaled_t()
    peeled = peel_output_transposes(graph)
    assert peeled is not None
    calls: list[Any] = []
    fast = ViewsKernel(_fake(peeled, calls), peeled)
    assert [(t.name, t.shape, t.dtype) for t in fast.outputs] == [("T", (2, 16, 8), "float16"),
                                                                  ("P", (2, 8, 16), "float16")]
    xs = _inputs(graph, seed=3)
    want = graph.evaluate(xs)
    t, p = fast(*xs.values())
    assert t.shape == (2, 16, 8) and not t.flags.c_contiguous and t.swapaxes(-1, -2).flags.c_contiguous
    np.testing.assert_array_equal(t, want["T"])
    np.testing.assert_array_equal(p, want["P"])
    # a returned view used again as out=: written in place, no temporary
    t2, p2 = np.zeros((2, 8, 16)).swapaxes(-1, -2), np.zeros((2, 8, 16))
    assert fast(*xs.values(), out=(t2, p2)) == (t2, p2)
    assert calls[-1][0].base is t2.base
    np.testing.assert_array_equal(t2, want["T"])
    # a row-major out= buffer: written through a temporary
    t3, p3 = np.zeros((2, 16, 8)), np.zeros((2, 8, 16))
    fast(**xs, out=[t3, p3])
    assert calls[-1][0] is not t3 and calls[-1][1] is p3
    np.testing.assert_array_equal(t3, want["T"])
    np.testing.assert_array_equal(p3, want["P"])
    with pytest.raises(InputError, match=r"out= buffer for 'T' has shape \[2, 8, 16\]; the output is \[2, 16, 8\]"):
        fast(*xs.values(), out=(np.zeros((2, 8, 16)), p3))
    with pytest.raises(InputError, match="1 buffers"):
        fast(*xs.values(), out=t3)


def _timer(kg: KernelGraph) -> float:
    return 1.0 + sum(len(k.ops) for k in kg.kernels if isinstance(k, CustomKernel))


def test_superoptimize_searches_the_untransposed_program() -> None:
    g = Graph()
    x = g.input((16, 32), "float16", "X")
    g.output(g.transpose(g.exp(g.scale(x, 0.5))), "T")
    assert searched_graph(g).structure_key() != g.structure_key()
    assert not any(n.kind is OpKind.TRANSPOSE for n in searched_graph(g).nodes)
    fast = pipeline.superoptimize(g, samples=2, seed=1, backend=InterpreterBackend(_timer), progress=False)
    assert fast.summary["outputs_as_views"] == ["T"]
    assert isinstance(fast.kernel, ViewsKernel)
    assert [t.shape for t in fast.kernel_graph.outputs] == [(16, 32)]  # computed row-major, untransposed
    assert [(t.name, t.shape) for t in fast.outputs] == [("T", (32, 16))]  # the callable's: the program's shapes
    # off (the PyTorch capture's regions, whose outputs the graph around plans contiguous): as written
    kept = pipeline.superoptimize(g, samples=2, seed=1, backend=InterpreterBackend(_timer), progress=False,
                                  output_views=False)
    assert "outputs_as_views" not in kept.summary and not isinstance(kept.kernel, ViewsKernel)
    assert [t.shape for t in kept.kernel_graph.outputs] == [(32, 16)]
    assert searched_graph(g, views=False).structure_key() == g.structure_key()


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["channels_first_proj", "channels_first_norm"])
def test_gpu_transposed_outputs_are_views_like_eager(name: str) -> None:
    torch = pytest.importorskip("torch")
    g = zoo_graph(name, "decode")
    fast = superoptimized(g, name, 4)
    err, eager_err, bound = errors(g, fast)
    assert err < bound and eager_err < bound, (err, eager_err, bound)
    assert fast.summary["outputs_as_views"] == ["O"]
    args = [torch.randn(t.shape, device="cuda", dtype=torch.float16) for t in g.inputs]
    got = fast(*args)
    assert got.stride() == got.t().contiguous().t().stride() and not got.is_contiguous()  # eager's strides
    again = torch.empty_like(got.t()).t()  # a buffer laid out like the returned view: written in place
    fast(*args, out=again)
    dense = torch.empty(got.shape, device="cuda", dtype=torch.float16)  # row-major: through one copy
    fast(*args, out=dense)
    torch.cuda.synchronize()
    assert torch.equal(again, got) and torch.equal(dense, got)


def test_a_kernel_of_the_searched_program_is_called_like_the_program() -> None:
    """What ``library.load`` wraps a stored plan in: rows merged back and transposes peeled, in order."""
    from prism.rows import program_callable

    graph = _scaled_t()
    searched = searched_graph(graph)
    assert [t.shape for t in searched.inputs] == [(16, 16)]  # peeled, then its rows merged

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        assert x.shape == (16, 16)
        res = searched.evaluate({"X": x})
        return tuple(res[t.name] for t in searched.outputs)

    xs = _inputs(graph, seed=5)
    t, p = program_callable(kernel, graph)(xs["X"])
    want = graph.evaluate(xs)
    assert t.shape == (2, 16, 8) and p.shape == (2, 8, 16)
    np.testing.assert_array_equal(t, want["T"])
    np.testing.assert_array_equal(p, want["P"])
    assert program_callable(kernel, searched) is kernel  # nothing to view
