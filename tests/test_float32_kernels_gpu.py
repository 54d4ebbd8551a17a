"""float32 programs without matmuls on the GPU (marked; skipped without one): through ``superoptimize``
with their generated plans in the tuner's choice (docs/off-the-suite.md, "float32 programs"); the result
checked once more against float64 on other inputs and against PyTorch eager.

On a GPU machine without z3/egglog, PRISM_CACHE_DIR must hold these programs' searches, run on a CPU
machine first (``PYTHONPATH=. python -c "import tests.test_float32_kernels_gpu as t; t.prepare()"``)."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_compare import errors, superoptimized

from prism import pipeline
from prism.graph import Graph

pytestmark = pytest.mark.gpu

SHAPES = {"silu_bias": (16, 4096), "softmax": (8, 32000), "rms_norm": (16, 4096), "log_softmax": (8, 32000),
          "col_sum": (256, 1024)}


def program(body: str) -> Graph:
    from tests.test_float32_kernels import _ops

    n, d = SHAPES[body]
    return _ops(body, n, d)


def prepare() -> None:
    """The searches of these programs into the search cache (a CPU machine with z3 and egglog)."""
    for body in SHAPES:
        pipeline.search_and_verify(program(body), program=f"f32_{body}", progress=False)


@pytest.mark.parametrize("body", list(SHAPES))
def test_float32_programs_match_float64_and_eager(body: str) -> None:
    g = program(body)
    fast = superoptimized(g, f"f32_{body}", 8)
    err, eager_err, bound = errors(g, fast)
    assert err < bound, (body, err, fast.summary.get("plan_source"))
    assert eager_err < bound
    assert np.isfinite(fast.summary["best_us"])
    print(body, fast.summary.get("plan_source"), f"{fast.summary['best_us']:.2f} us", f"error {err:.1e}")
