"""Chunks masked with −inf on the GPU (marked; skipped without one): the split-KV plan of
tests/test_masked_chunks.py, generated and run on inputs padded on the right and on the left, gives the
float64 reference (finite) where it returned NaN before ``ir.shift_by_max``; and with staged arrivals
(``Options.staged_arrivals``) the same."""

from __future__ import annotations

import numpy as np
import pytest

from prism.codegen import Options, generate
from prism.reference import relative_error
from tests.test_masked_chunks import SIZES, _masked_inputs, _plan, _program

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("staged", [False, True], ids=["default", "staged"])
@pytest.mark.parametrize("left", [False, True], ids=["right", "left"])
def test_the_split_plan_on_masked_inputs_matches_the_reference_on_the_gpu(left: bool, staged: bool) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from prism.runtime import compile_plan

    g, ins = _program(), _masked_inputs(left)
    args = [torch.tensor(ins[t.name], device="cuda", dtype=torch.float16) for t in g.inputs]
    halves = {t.name: a.double().cpu().numpy() for t, a in zip(g.inputs, args, strict=True)}
    ref = g.evaluate(halves)["O"]
    assert np.isfinite(ref).all()
    for sizes in SIZES:
        plan = generate(_plan().instantiate(sizes), arch="sm_90", options=Options(staged_arrivals=staged))
        out = compile_plan(plan)(*args)
        torch.cuda.synchronize()
        got = out.double().cpu().numpy()
        assert np.isfinite(got).all(), sizes
        assert relative_error(got, ref) < 2e-2, sizes
