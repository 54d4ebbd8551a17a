"""Predefined and stitched plans on the GPU: torch/cuBLAS-backed predefined ops, checked against
the float64 reference, capturable in a CUDA graph. Runs without z3/egglog (then the search is
skipped and only predefined plans remain: the answer must still be right)."""

from __future__ import annotations

import numpy as np
import pytest

from prism import pipeline
from prism.graph import Graph
from prism.reference import relative_error

pytestmark = pytest.mark.gpu


def _bias_gelu_matmul() -> Graph:
    g = Graph()
    x = g.input((64, 256), name="X")
    w = g.input((256, 512), name="W")
    b = g.input((1, 512), name="B")
    g.output(g.gelu(g.add(g.matmul(g.rms_norm(x), w), b)), name="O")
    return g


def _attention() -> Graph:
    g = Graph()
    q = g.input((2, 8, 128), name="Q")
    kt = g.input((2, 128, 256), name="Kt")
    v = g.input((2, 256, 128), name="V")
    g.output(g.matmul(g.softmax(g.scale(g.matmul(q, kt), 128**-0.5)), v), name="O")
    return g


def _attention_k_transpose() -> Graph:
    g = Graph()
    q = g.input((2, 8, 128), name="Q")
    k = g.input((2, 256, 128), name="Kt")  # K as stored: (batch, kv, head_dim); scaled like Kt below
    v = g.input((2, 256, 128), name="V")
    g.output(g.matmul(g.softmax(g.scale(g.matmul(q, g.transpose(k)), 128**-0.5)), v), name="O")
    return g


@pytest.mark.parametrize("build", [_bias_gelu_matmul, _attention, _attention_k_transpose])
def test_superoptimize_answers_with_a_correct_capturable_plan(build: object) -> None:
    import torch

    g = build()  # type: ignore[operator]
    fast = pipeline.superoptimize(g, samples=4, progress=False, inductor=False)  # Prism's own plans
    rng = np.random.default_rng(3)
    vals = {t.name: rng.standard_normal(t.shape) * (0.06 if t.name in ("W", "Kt") else 1.0) for t in g.inputs}
    args = [torch.tensor(vals[t.name], device="cuda", dtype=torch.float16) for t in g.inputs]
    ref = g.evaluate({t.name: a.double().cpu().numpy() for t, a in zip(g.inputs, args, strict=True)})["O"]
    assert relative_error(fast(*args).double().cpu().numpy(), ref) < 1e-2
    graph = torch.cuda.CUDAGraph()
    out = fast(*args)  # warm
    with torch.cuda.graph(graph):
        out = fast(*args)
    graph.replay()
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), ref) < 1e-2
    # any of Prism's own sources (a rule-built split plan of the attentions too), not Inductor's
    assert fast.summary["plan_source"] in {s.value for s in pipeline.PlanSource}
