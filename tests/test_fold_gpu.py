"""Folded transposes on the GPU: the rmsnorm_linear hand plans (one- and two-dim grids, split-K with a
combine) with the weight given as a PyTorch linear weight ``[out, in]`` behind a transpose, so the
generated matmul reads it in place (prism/codegen/fold.py). The CPU half of this check (the same
plans in the emulator) is in test_fold.py."""

from __future__ import annotations

import pytest

from prism import plans, workloads
from prism.codegen import generate
from prism.codegen.plan import PredefinedOp
from prism.codegen.sizes import generated_sizes
from prism.graph import Graph, OpKind
from prism.ir import KernelGraph, PredefinedKernel, TensorSpec
from prism.reference import relative_error


def linear_graph(n: int, d: int) -> Graph:
    """O = rms_norm(X) @ Wl^T, Wl a linear layer's weight [out, in]."""
    g = Graph()
    x = g.input((n, d), "float16", "X")
    wl = g.input((d, d), "float16", "Wl")
    g.output(g.matmul(g.rms_norm(x), g.transpose(wl)), "O")
    return g


def with_linear_weight(kg: KernelGraph) -> KernelGraph:
    """``kg`` (reads W [in, out]) with W made by a transpose of the input Wl [out, in]."""
    w = next(t for t in kg.inputs if t.name == "W")
    wl = TensorSpec("Wl", (w.shape[1], w.shape[0]), w.dtype)
    inputs = tuple(wl if t.name == "W" else t for t in kg.inputs)
    t = PredefinedKernel("wt", OpKind.TRANSPOSE, ("Wl",), "W")
    return KernelGraph(kg.program, inputs, kg.outputs, (t, *kg.kernels))


def linear_templates(n: int, d: int) -> list[KernelGraph]:
    return [with_linear_weight(t) for t in plans.codegen_plans("rmsnorm_linear", workloads.rmsnorm_linear(n, d))]


@pytest.mark.gpu
def test_folded_linear_plans_match_the_reference_on_the_gpu() -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    g = linear_graph(16, 512)
    runs = 0
    for ti, template in enumerate(linear_templates(16, 512)):
        legal = [s for s, _ in generated_sizes(template, "sm_90")]
        for sizes in legal[:: max(1, len(legal) // 4)][:4]:
            plan = generate(template.instantiate(sizes), arch="sm_90")
            assert not any(isinstance(s, PredefinedOp) and s.kind == "transpose" for s in plan.steps)
            fn = compile_plan(plan)
            rng = torch.Generator().manual_seed(runs)
            xs = {t.name: torch.randn(t.shape, generator=rng, dtype=torch.float64) * (0.5 if t.name == "X" else 0.05)
                  for t in g.inputs}
            ref = g.evaluate({k: v.numpy() for k, v in xs.items()})["O"]
            out = fn(*[xs[t.name].to("cuda", torch.float16) for t in g.inputs])
            torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
            assert err < 2e-2, f"template {ti} sizes {sizes}: relative error {err:.3e}"
            runs += 1
    assert runs >= 8
