"""PyTorch's kernels (torch.compile's and eager) as superoptimize's candidates, on the GPU (marked; skipped
without one): InductorKernel's and EagerKernel's calling convention, and the comparison through CudaBackend."""

from __future__ import annotations

import numpy as np
import pytest

from prism.graph import Graph
from prism.reference import relative_error
from prism.tune.backends import CudaBackend
from prism.tune.inductor import TIE_MARGIN, EagerKernel, InductorKernel, compare
from prism.tune.inputs import input_sampler

pytestmark = pytest.mark.gpu


def _two_outputs() -> Graph:
    g = Graph()
    x = g.input((8, 256), dtype="float16", name="X")
    y = g.input((8, 256), dtype="float16", name="Y")
    g.output(g.mul(g.silu(x), y), name="A")
    g.output(g.add(x, y), name="B")
    return g


@pytest.mark.parametrize("kind", [InductorKernel, EagerKernel])
def test_pytorch_kernels_take_what_an_optimized_graph_takes(kind: type) -> None:
    import torch

    from prism.errors import InputError

    g = _two_outputs()
    k = kind(g)
    vals = input_sampler(g)(3)
    x, y = (torch.from_numpy(vals[n]).to("cuda", torch.float16) for n in ("X", "Y"))
    ref = g.evaluate(vals)
    a, b = k(x, Y=y)  # positional, then by name
    assert relative_error(a.double().cpu().numpy(), ref["A"]) < 1e-2
    assert relative_error(b.double().cpu().numpy(), ref["B"]) < 1e-2
    outs = (torch.full_like(x, float("nan")), torch.full_like(x, float("nan")))
    k(x, y, out=outs)
    assert torch.equal(outs[0], a) and torch.equal(outs[1], b)
    with pytest.raises(InputError, match="'X'"):
        k(x[:4], y)
    with pytest.raises(InputError, match="'B'"):  # copy_ would broadcast into a larger buffer silently
        k(x, y, out=(outs[0], torch.empty((2, 8, 256), device="cuda", dtype=torch.float16)))
    cupy = pytest.importorskip("cupy")
    ca = k(cupy.asarray(x), cupy.asarray(y))[0]
    assert isinstance(ca, cupy.ndarray) and np.array_equal(cupy.asnumpy(ca), a.cpu().numpy())


def test_the_comparison_times_both_and_keeps_a_correct_winner() -> None:
    g = _two_outputs()
    be = CudaBackend()
    sampler = input_sampler(g)
    be.setup(g, sampler(0))
    generated = InductorKernel(g)  # stands in for a generated plan: any callable the backend can time
    chosen, v = compare(g, be, generated, sampler, 0)
    assert v.why is None and v.generated_us and v.inductor_us and v.rel_err is not None and v.rel_err < 1e-2
    assert v.eager_why is None and v.eager_us and v.eager_rel_err is not None and v.eager_rel_err < 1e-2
    fastest_torch = min(v.inductor_us, v.eager_us)
    assert (chosen is generated) == (fastest_torch >= v.generated_us * (1 + TIE_MARGIN))
    assert chosen is generated or isinstance(chosen, EagerKernel if v.eager_us < v.inductor_us else InductorKernel)


def test_superoptimize_returns_a_correct_capturable_answer_either_way() -> None:
    import torch

    from prism import pipeline

    g = Graph()
    x = g.input((16, 512), dtype="float16", name="X")
    w = g.input((512, 512), dtype="float16", name="W")
    g.output(g.gelu(g.matmul(x, w)), name="O")
    fast = pipeline.superoptimize(g, samples=4, progress=False)
    v = fast.summary["inductor"]
    assert v["why"] is None and v["generated_us"] > 0 and v["inductor_us"] > 0 and v["eager_us"] > 0
    fastest_torch = min(v["inductor_us"], v["eager_us"])
    assert (fast.summary["plan_source"] in ("inductor", "eager")) == (fastest_torch < v["generated_us"] * (1 + TIE_MARGIN))
    vals = input_sampler(g)(11)
    args = [torch.from_numpy(vals[t.name]).to("cuda", torch.float16) for t in g.inputs]
    ref = g.evaluate(vals)["O"]
    fast(*args)  # warm
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fast(*args)
    graph.replay()
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), ref) < 1e-2
