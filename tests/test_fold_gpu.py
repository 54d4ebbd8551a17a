"""Folded transposes on the GPU: the rmsnorm_linear hand plans (one- and two-dim grids, split-K with a
combine) with the weight given as a PyTorch linear weight ``[out, in]`` behind a transpose, and the
gqa hand plans (split KV with a combine) with the keys as a cache stores them ``[b, s, d]``, so the
generated matmuls read them in place (prism/codegen/fold.py). The CPU half of this check (the same
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


def behind_transpose(kg: KernelGraph, name: str, stored: str) -> KernelGraph:
    """``kg`` with its input ``name`` made by a transpose of a new input ``stored`` (last two dims swapped)."""
    w = next(t for t in kg.inputs if t.name == name)
    src = TensorSpec(stored, (*w.shape[:-2], w.shape[-1], w.shape[-2]), w.dtype)
    inputs = tuple(src if t.name == name else t for t in kg.inputs)
    t = PredefinedKernel(f"{stored}_t", OpKind.TRANSPOSE, (stored,), name)
    return KernelGraph(kg.program, inputs, kg.outputs, (t, *kg.kernels))


def linear_templates(n: int, d: int) -> list[KernelGraph]:
    return [behind_transpose(t, "W", "Wl") for t in plans.codegen_plans("rmsnorm_linear", workloads.rmsnorm_linear(n, d))]


def cached_keys_templates(g: Graph) -> list[KernelGraph]:
    """The gqa hand plans of ``g`` reading the keys K [b, s, d] (``Kt`` = its transpose)."""
    return [behind_transpose(t, "Kt", "K") for t in plans.codegen_plans("gqa", g)]


def cached_keys_graph(batch: int, group: int, kv_len: int, head_dim: int) -> Graph:
    """softmax(Q @ K^T) @ V with the keys as stored: the gqa program reading K [b, s, d]."""
    g = Graph()
    q = g.input((batch, group, head_dim), "float16", "Q")
    k = g.input((batch, kv_len, head_dim), "float16", "K")
    v = g.input((batch, kv_len, head_dim), "float16", "V")
    e = g.exp(g.matmul(q, g.transpose(k)))
    g.output(g.matmul(g.div(e, g.sum(e, -1)), v), "O")
    return g


CASES = {"linear": (lambda: linear_graph(16, 512), lambda: linear_templates(16, 512)),
         "attention": (lambda: cached_keys_graph(4, 8, 1024, 64),
                       lambda: cached_keys_templates(workloads.gqa(4, 8, 1024, 64)))}


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_folded_plans_match_the_reference_on_the_gpu(case: str) -> None:
    torch = pytest.importorskip("torch")
    from prism.runtime import compile_plan

    make_graph, make_templates = CASES[case]
    g = make_graph()
    runs = 0
    for ti, template in enumerate(make_templates()):
        legal = [s for s, _ in generated_sizes(template, "sm_90")]
        for sizes in legal[:: max(1, len(legal) // 4)][:4]:
            plan = generate(template.instantiate(sizes), arch="sm_90")
            assert not any(isinstance(s, PredefinedOp) and s.kind == "transpose" for s in plan.steps)
            fn = compile_plan(plan)
            rng = torch.Generator().manual_seed(runs)
            xs = {t.name: torch.randn(t.shape, generator=rng, dtype=torch.float64) * (0.05 if t.name == "Wl" else 0.5)
                  for t in g.inputs}
            ref = g.evaluate({k: v.numpy() for k, v in xs.items()})["O"]
            out = fn(*[xs[t.name].to("cuda", torch.float16) for t in g.inputs])
            torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
            assert err < 2e-2, f"template {ti} sizes {sizes}: relative error {err:.3e}"
            runs += 1
    assert runs >= 4


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 16])
def test_row_vendor_plan_runs_on_the_gpu(rows: int) -> None:
    """The row-vendor plan of a norm feeding a linear layer (one row-wise norm kernel, then the vendor
    GEMM reading the weight's transpose as a view): right against the float64 reference."""
    torch = pytest.importorskip("torch")
    from prism.rowwise import row_vendor_plan
    from prism.runtime import compile_plan

    g = linear_graph(rows, 512)
    template = row_vendor_plan(g, "linear")
    assert template is not None
    legal = [s for s, _ in generated_sizes(template, "sm_90")]
    assert legal
    fn = compile_plan(generate(template.instantiate(legal[0]), arch="sm_90"))
    rng = torch.Generator().manual_seed(0)
    xs = {t.name: torch.randn(t.shape, generator=rng, dtype=torch.float64) * (0.05 if t.name == "Wl" else 0.5)
          for t in g.inputs}
    ref = g.evaluate({k: v.numpy() for k, v in xs.items()})["O"]
    out = fn(*[xs[t.name].to("cuda", torch.float16) for t in g.inputs])
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), ref) < 2e-2
