"""relu, abs, tanh, sigmoid, log, the exact gelu, maximum, minimum and clamps on the GPU (marked; skipped
without one): zoo programs that use them through ``superoptimize`` (every returned plan is checked against
float64 on fresh inputs inside it; here once more on other inputs, and against PyTorch eager).

On a GPU machine without z3/egglog, set PRISM_CACHE_DIR to a cache folder whose searches were run on a
CPU machine (``PYTHONPATH=. python scripts/zoo_search.py --which decode --only <programs>``)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from bench.zoo import zoo_graph
from prism import pipeline
from prism.errors import PrismError
from prism.reference import relative_error
from prism.torch_program import torch_program
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs

pytestmark = pytest.mark.gpu

PROGRAMS = ("mish", "leaky_relu_residual", "l1_normalize", "logsumexp", "log_softmax", "tanh_logit_softcap",
            "relu_mlp_bias", "softplus_proj", "sigmoid_output_gate", "relu2_mlp", "bert_mlp", "gelu_exact_bias",
            "clamped_glu", "normalize_embeddings", "maxout_proj", "clipped_double_q", "erf_gelu_bias")


@pytest.mark.parametrize("name", PROGRAMS)
def test_superoptimized_new_op_programs_match_float64_and_eager(name: str) -> None:
    import torch

    g = zoo_graph(name, "decode")
    searchable = importlib.util.find_spec("z3") is not None and importlib.util.find_spec("egglog") is not None
    try:
        fast = pipeline.superoptimize(g, program=name, samples=4, seed=1, progress=False)
    except PrismError as e:
        if not searchable and "search" in str(e).lower():
            pytest.skip(f"{name}: no cached search and no z3/egglog to run it ({e})")
        raise
    inputs = random_inputs(g, default_scales(g), 4321)
    args = [torch.tensor(inputs[t.name], device="cuda", dtype=torch.float16) for t in g.inputs]
    ref = g.evaluate(inputs)["O"]
    out = fast(*args)
    eager = torch_program(g)(*args)
    torch.cuda.synchronize()
    err = relative_error(out.double().cpu().numpy(), ref)
    assert err < tolerance(g, inputs=inputs), (name, err, fast.summary.get("plan_source"))
    assert relative_error(eager.double().cpu().numpy(), ref) < tolerance(g, inputs=inputs)
    assert np.isfinite(fast.summary["best_us"])
