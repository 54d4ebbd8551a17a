"""What the GPU tests of whole programs share: ``superoptimize`` (skipped where the search is neither cached
nor runnable: a GPU machine without z3/egglog), then the callable and PyTorch eager on the same inputs,
each against the float64 reference."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from prism import pipeline
from prism.errors import PrismError
from prism.graph import Graph
from prism.reference import relative_error
from prism.torch_program import torch_program
from prism.tune.tolerance import tolerance
from prism.tune.tuner import default_scales, random_inputs


def superoptimized(g: Graph, program: str, samples: int) -> pipeline.Superoptimized:
    """``superoptimize(g)``, or a skip where its search is not cached and z3/egglog are not here."""
    searchable = importlib.util.find_spec("z3") is not None and importlib.util.find_spec("egglog") is not None
    try:
        fast = pipeline.superoptimize(g, program=program, samples=samples, seed=1, progress=False)
    except PrismError as e:
        if not searchable and "search" in str(e).lower():
            pytest.skip(f"{program}: no cached search and no z3/egglog to run it ({e})")
        raise
    if not searchable and (why := (fast.summary.get("search") or {}).get("whole_program_error")):
        # only the fallbacks are left: passing with them would not test the searched plans
        pytest.skip(f"{program}: no cached search and no z3/egglog to run it ({why})")
    return fast


def errors(g: Graph, fast: Any) -> tuple[float, float, float]:
    """The relative errors of ``fast`` and of eager PyTorch against float64 on output O, and the bound."""
    import torch

    inputs = random_inputs(g, default_scales(g), 4321)
    args = [torch.tensor(inputs[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in g.inputs]
    ref = g.evaluate(inputs)["O"]
    out = fast(*args)
    eager = torch_program(g)(*args)
    torch.cuda.synchronize()
    return (relative_error(out.double().cpu().numpy(), ref), relative_error(eager.double().cpu().numpy(), ref),
            tolerance(g, inputs=inputs))
