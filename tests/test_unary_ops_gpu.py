"""relu, abs, tanh, sigmoid, log, the exact gelu, maximum, minimum and clamps on the GPU (marked; skipped
without one): zoo programs that use them through ``superoptimize`` (every returned plan is checked against
float64 on fresh inputs inside it; here once more on other inputs, and against PyTorch eager).

On a GPU machine without z3/egglog, set PRISM_CACHE_DIR to a cache folder whose searches were run on a
CPU machine (``PYTHONPATH=. python scripts/zoo_search.py --which decode --only <programs>``)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_compare import errors, superoptimized

from bench.zoo import zoo_graph

pytestmark = pytest.mark.gpu

PROGRAMS = ("mish", "leaky_relu_residual", "l1_normalize", "logsumexp", "log_softmax", "tanh_logit_softcap",
            "relu_mlp_bias", "softplus_proj", "sigmoid_output_gate", "relu2_mlp", "bert_mlp", "gelu_exact_bias",
            "clamped_glu", "normalize_embeddings", "maxout_proj", "clipped_double_q", "erf_gelu_bias")


@pytest.mark.parametrize("name", PROGRAMS)
def test_superoptimized_new_op_programs_match_float64_and_eager(name: str) -> None:
    g = zoo_graph(name, "decode")
    fast = superoptimized(g, name, 4)
    err, eager_err, bound = errors(g, fast)
    assert err < bound, (name, err, fast.summary.get("plan_source"))
    assert eager_err < bound
    assert np.isfinite(fast.summary["best_us"])
