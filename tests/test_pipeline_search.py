"""The real pipeline on swiglu (the cheapest benchmark program): search → mappings → egglog, then
every verified sGraph, instantiated at random legal sizes, matches the float64 reference in the
μGraph interpreter; the hand-built fused plan is among them; a second shape loads from the cache."""

from __future__ import annotations

import random

import numpy as np

from prism import interpreter, pipeline, plans, workloads
from prism.errors import IRError
from prism.reference import relative_error
from prism.search import canonical_key


def test_swiglu_pipeline_end_to_end_on_cpu() -> None:
    g = workloads.swiglu(4, 16)
    out = pipeline.search_and_verify(g, program="swiglu", progress=False)
    assert not out.cached and out.templates
    assert out.stats["mappings"] <= out.stats["mappings_before_symmetry"]
    assert canonical_key(plans.swiglu_plan(g)) in {canonical_key(t) for t in out.templates}
    rng = random.Random(0)
    inputs = {t.name: np.random.default_rng(1).standard_normal(t.shape) * 0.5 for t in g.inputs}
    ref = g.evaluate(inputs)["O"]
    for kg in out.templates:
        checked = 0
        for _ in range(60):
            sizes = {s: rng.choice([1, 2, 4]) for s in kg.symbols}
            try:
                got = interpreter.run(kg.instantiate(sizes), inputs)["O"]
            except IRError:
                continue
            assert relative_error(got, ref) < 1e-12, (kg, sizes)
            checked += 1
            if checked == 2:
                break
        assert checked == 2, f"no two legal size choices found for {kg}"
    again = pipeline.search_and_verify(workloads.swiglu(8, 32), program="swiglu", progress=False)
    assert again.cached and again.seconds["search"] == 0.0 and len(again.templates) == len(out.templates)


def test_user_names_like_internal_ones_lose_no_plan() -> None:
    """An input or output named like the search's intermediates (t0, t1) gets the same plans."""
    from prism.graph import Graph

    def swiglu(x_name: str, out_name: str) -> Graph:
        g = Graph()
        x = g.input((8, 32), name=x_name)
        wg, wu = g.input((32, 32), name="Wg"), g.input((32, 32), name="Wu")
        g.output(g.mul(g.silu(g.matmul(x, wg)), g.matmul(x, wu)), name=out_name)
        return g

    counts = [len(pipeline.search_and_verify(swiglu(x, o), cache=False, progress=False, partitioned=False)
                  .of(pipeline.PlanSource.SEARCHED)) for x, o in (("X", "O"), ("t0", "t1"))]
    assert counts[0] > 0 and counts[0] == counts[1]
