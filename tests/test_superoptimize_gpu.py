"""prism.superoptimize end to end on the GPU (marked; skipped without one).

On a GPU machine without z3/egglog, point PRISM_GPU_SEARCH_CACHE at a cache folder filled by
``scripts/search_all.py`` (its search/*.json entries are copied into each test's cache)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from prism import pipeline, workloads
from prism.reference import relative_error
from prism.settings import settings

pytestmark = pytest.mark.gpu


def _seed_cache(program: str) -> None:
    src = os.environ.get("PRISM_GPU_SEARCH_CACHE")
    key = workloads.configs_of(program)[0].build().structure_key()
    if (settings().cache_dir / "search" / f"{key}.json").exists():
        return  # carried in the PRISM_CACHE_DIR pytest started with (tests/conftest.py links its searches)
    if src and (Path(src) / "search" / f"{key}.json").exists():
        dst = settings().cache_dir / "search"
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(src) / "search" / f"{key}.json", dst)
    elif importlib.util.find_spec("z3") is None or importlib.util.find_spec("egglog") is None:
        pytest.skip(f"no cached search for {program} and no z3/egglog to run it")


@pytest.mark.parametrize("program", list(workloads.PROGRAMS))
def test_superoptimize_each_program(program: str) -> None:
    import torch

    _seed_cache(program)
    first, second = workloads.configs_of(program)[:2]
    fast = pipeline.superoptimize(first.build(), program=program, samples=6, seed=1)
    inputs = first.random_inputs(seed=1234)
    ref = first.build().evaluate(inputs)["O"]
    args = [torch.from_numpy(inputs[t.name]).to("cuda", torch.float16) for t in first.build().inputs]
    out = fast(*args)
    torch.cuda.synchronize()
    assert relative_error(out.double().cpu().numpy(), ref) < 2e-2
    assert np.isfinite(fast.summary["best_us"])
    again = pipeline.superoptimize(second.build(), program=program, samples=4, seed=1)
    assert again.summary["search_cache_hit"], "a second configuration must reuse the symbolic search"
