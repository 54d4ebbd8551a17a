"""scripts/zoo_prior.py: the static prior's rank correlation with what a run timed, from the run's JSON
(``prism_timed``) and the search cache. Here on a fake run whose times follow the prior exactly, and
one whose times run against it."""

from __future__ import annotations

from types import ModuleType

from bench.zoo import zoo_graph
from prism import pipeline
from prism.codegen.resources import resources
from prism.codegen.sizes import size_score
from prism.ir import KernelGraph
from prism.rows import searched_graph
from prism.tune import draw
from tests.scripts_loader import load_script


def _script() -> ModuleType:
    return load_script("zoo_prior")


def test_the_prior_is_scored_against_the_timed_sizes() -> None:
    zp = _script()
    assert zp.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0 and zp.spearman([1, 2], [2, 1]) is None
    graph = searched_graph(zoo_graph("softmax", "decode"))
    templates = list(pipeline.search_and_verify(graph, program="softmax", progress=False).of(*zp.WHOLE))
    def by_score(kg: KernelGraph) -> list[dict[str, int]]:
        """One legal size per prior score, the best scored first."""
        sizes = draw.legal_sizes_of(kg, "sm_90", resources, None)
        scores = [size_score(resources(kg.instantiate(sz), "sm_90"), 132) for sz in sizes]
        distinct: dict[float, dict[str, int]] = {}
        for i in sorted(range(len(sizes)), key=lambda i: -scores[i]):
            distinct.setdefault(round(scores[i], 9), sizes[i])
        return list(distinct.values())[:4]

    t, picked = next((i, p) for i, kg in enumerate(templates) if kg.symbols and len(p := by_score(kg)) >= 3)
    row = {"program": "softmax", "which": "decode"}
    # times that follow the prior: the best scored is the fastest
    with_prior = zp.entry({**row, "prism_timed": [[t, sz, 1.0 + k] for k, sz in enumerate(picked)]}, "sm_90")
    against = zp.entry({**row, "prism_timed": [[t, sz, 9.0 - k] for k, sz in enumerate(picked)]}, "sm_90")
    assert with_prior["templates"] == against["templates"] == 1
    assert with_prior["prior_first_fastest"] == 1 and against["prior_first_fastest"] == 0
    assert with_prior["median_rho"] > 0 > against["median_rho"]
