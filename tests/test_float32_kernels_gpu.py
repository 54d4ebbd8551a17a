"""float32 programs without matmuls on the GPU (marked; skipped without one): through ``superoptimize``
with their generated plans in the tuner's choice (docs/off-the-suite.md, "float32 programs"); the result
checked once more against float64 on other inputs and against PyTorch eager.

On a GPU machine without z3/egglog, PRISM_CACHE_DIR must hold these programs' searches, run on a CPU
machine first (``PYTHONPATH=. python -c "import tests.test_float32_kernels_gpu as t; t.prepare()"``)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from prism import pipeline
from prism.errors import PrismError
from prism.graph import Graph
from prism.reference import relative_error
from prism.torch_program import torch_program
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs

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
    import torch

    g = program(body)
    searchable = importlib.util.find_spec("z3") is not None and importlib.util.find_spec("egglog") is not None
    try:
        fast = pipeline.superoptimize(g, program=f"f32_{body}", samples=8, seed=1, progress=False)
    except PrismError as e:
        if not searchable and "search" in str(e).lower():
            pytest.skip(f"{body}: no cached search and no z3/egglog to run it ({e})")
        raise
    inputs = random_inputs(g, default_scales(g), 4321)
    args = [torch.tensor(inputs[t.name], device="cuda", dtype=torch.float32) for t in g.inputs]
    ref = g.evaluate(inputs)["O"]
    out = fast(*args)
    eager = torch_program(g)(*args)
    torch.cuda.synchronize()
    bound = tolerance(g, inputs=inputs)
    err = relative_error(out.double().cpu().numpy(), ref)
    assert err < bound, (body, err, fast.summary.get("plan_source"))
    assert relative_error(eager.double().cpu().numpy(), ref) < bound
    assert np.isfinite(fast.summary["best_us"])
    print(body, fast.summary.get("plan_source"), f"{fast.summary['best_us']:.2f} us", f"error {err:.1e}")
