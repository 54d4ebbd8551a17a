"""Every zoo program gets verified plans, and every plan it gets computes the program (CPU).

CI runs a quick sample of the zoo (one program or two per family); ``-m slow`` runs all of it.
Each returned plan — searched whole, stitched from parts, or predefined — is run in the μGraph
interpreter at its first legal sizes and compared with the float64 reference.
"""

from __future__ import annotations

import pytest

from bench.zoo import ZOO, zoo_graph
from prism import pipeline
from prism.ir import CustomKernel
from prism.rows import searched_graph
from tests.test_partition import run_plan

QUICK = ("silu_mul", "bias_gelu", "row_scale", "rms_norm", "softmax", "matmul_residual", "attention_scores",
         "llama_mlp_block",  # too large to search whole (parts and the constructed plan)
         "decoder_norm_linear",  # [b, s, d] activations: searched with their rows merged
         "gated_rms_norm", "col_rms_scale", "bilinear_score", "norm_two_proj")  # held out (bench.zoo.HELD_OUT)


def _check(name: str) -> None:
    g = searched_graph(zoo_graph(name))  # what superoptimize searches: [b, s, d] rows merged (prism.rows)
    out = pipeline.search_and_verify(g, program=name, progress=False)
    assert out.templates[-1] is not None and out.sources[-1] is pipeline.PlanSource.PREDEFINED
    generated = [t for t in out.templates if any(isinstance(k, CustomKernel) for k in t.kernels)]
    assert generated, f"{name}: only the predefined plan"
    for kg, src in zip(out.templates, out.sources, strict=True):
        assert run_plan(g, kg) < 1e-9, (name, src.value)


@pytest.mark.parametrize("name", QUICK)
def test_quick_zoo_programs_get_generated_plans_that_compute_them(name: str) -> None:
    _check(name)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", [n for n in ZOO if n not in QUICK])
def test_every_zoo_program_gets_generated_plans_that_compute_them(name: str) -> None:
    _check(name)
