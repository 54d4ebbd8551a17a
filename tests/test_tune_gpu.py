"""The tuner on the GPU (marked): hand-built plans through codegen + runtime, checked against the reference."""

from __future__ import annotations

import importlib.util
import math

import pytest

from prism import plans, workloads

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("config_id", ["rmsnorm_linear_d1024", "gqa_h1024"])
def test_tune_hand_plans_on_gpu(config_id: str) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("prism.runtime") is None:
        pytest.skip("prism.runtime does not exist yet")
    from prism.tune import tune

    cfg = workloads.config(config_id)
    graph = cfg.build()
    res = tune(graph, plans.hand_plans(cfg.program, graph), samples=8, seed=0, jobs=4)
    assert res.rel_err < 2e-2
    assert 0 < res.time_us < 1000 and not math.isinf(res.time_us)
    assert res.counts["timed"] >= 1 and res.counts["check_failures"] == 0, res.check_failures
