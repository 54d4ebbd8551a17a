"""Faster must not mean fewer plans (issue 13): the searched plans that ``search_and_verify`` verified
before the block-graph walk's bounds were tightened (canonical keys in
``snapshots/verified_keys.json``, recorded at commit 9563f1e) are all still found and verified when
every algebraic variant is kept (``rank_variants=False``); with the static ranking (the default) the
verified plans are among them; and the walk's bounds are admissible on the generator's own value
graphs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from prism import pipeline, workloads
from prism.pipeline import PlanSource
from prism.rowwise import row_vendor_plan
from prism.search import SearchConfig, canonical_key, search
from prism.search.generator import Generator, Recipe, descendants, heights, least_sizes, required

KEYS = json.loads((Path(__file__).parent / "snapshots" / "verified_keys.json").read_text())


@pytest.mark.parametrize("program", ["swiglu", "rmsnorm_linear"])
def test_every_plan_verified_before_is_still_verified(program: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    graph = workloads.configs_of(program)[0].build()
    every_variant = replace(pipeline.default_config(graph), rank_variants=False)
    outcome = pipeline.search_and_verify(graph, program=program, progress=False, config=every_variant)
    found = {canonical_key(t) for t in outcome.of(PlanSource.SEARCHED)}
    missing = set(KEYS[program]) - found
    assert not missing, f"{program}: {len(missing)} of {len(KEYS[program])} plans verified before are lost"


@pytest.mark.parametrize("program", ["swiglu", "rmsnorm_linear"])
def test_ranked_plans_are_among_those_verified_before(program: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRISM_CACHE_DIR", str(tmp_path))
    graph = workloads.configs_of(program)[0].build()
    outcome = pipeline.search_and_verify(graph, program=program, progress=False)
    found = {canonical_key(t) for t in outcome.of(PlanSource.SEARCHED)}
    built = row_vendor_plan(graph, program)  # constructed beside the walk's plans (after the snapshot)
    found -= {canonical_key(built)} if built is not None else set()
    assert found and found <= set(KEYS[program])


def _acyclic(chosen: dict[int, Recipe]) -> bool:
    state: dict[int, int] = {}  # 1: on the path, 2: done

    def visit(v: int) -> bool:
        if state.get(v) == 2:
            return True
        if state.get(v) == 1:
            return False
        state[v] = 1
        ok = all(visit(a) for a in chosen[v].args)
        state[v] = 2
        return ok

    return all(visit(v) for v in chosen)


def _smallest_graph(gen: Generator, n: int, limit: int) -> int | None:
    """The fewest values of any acyclic choice of one recipe per value computing value ``n``, by
    exhaustive search over the recipes up to ``limit`` values (no bounds of the walk): the truth
    that ``least_sizes`` must not exceed."""
    best: int | None = None

    def grow(chosen: dict[int, Recipe], pending: tuple[int, ...]) -> None:
        nonlocal best
        size = len(chosen) + len(pending)
        if size > limit or (best is not None and size >= best):
            return
        if not pending:
            if _acyclic(chosen):
                best = size
            return
        v, rest = pending[0], pending[1:]
        for r in gen.recipes[v]:
            new = tuple(a for a in dict.fromkeys(r.args) if a not in chosen and a not in rest and a != v)
            chosen[v] = r
            grow(chosen, rest + new)
            del chosen[v]

    grow({}, (n,))
    return best


@pytest.mark.parametrize("program", ["swiglu", "rmsnorm_linear"])
def test_walk_bounds_never_exceed_the_smallest_graph(program: str) -> None:
    """``required`` holds only values every graph holds, ``least_sizes`` never exceeds the smallest
    graph and ``heights`` never exceeds its shortest chain to a load, for values whose smallest
    graph an exhaustive search finds (checked against that search, not against the walk)."""
    gen = Generator(workloads.configs_of(program)[0].build(), SearchConfig(progress=False), program)
    gen.deadline = float("inf")
    gen.build_values()
    count = len(gen.nodes)

    def options(n: int) -> list[Recipe]:
        return list(gen.recipes[n])

    req = required(count, options)
    least = least_sizes(count, options, req, descendants(count, options))
    h = heights(count, options)
    checked = 0
    for n in range(count):
        smallest = _smallest_graph(gen, n, 7)
        if smallest is None:
            continue
        checked += 1
        assert req[n].bit_count() <= least[n] <= smallest, (program, n)
        assert h[n] <= smallest
    assert checked >= 10


def test_search_stops_at_max_candidates() -> None:
    """A search whose space outgrows what mapping can cover stops at ``max_candidates``, incomplete,
    with the first candidates of the full search (the walk's order does not change)."""
    graph = workloads.configs_of("rmsnorm_linear")[0].build()
    full = search(graph, SearchConfig(progress=False), name="rmsnorm_linear")
    capped = search(graph, SearchConfig(progress=False, max_candidates=100), name="rmsnorm_linear")
    assert len(full.candidates) > 100 and not full.stats["timed_out"]
    assert capped.stats["timed_out"] and len(capped.candidates) == 100
    assert [repr(c) for c in capped.candidates] == [repr(c) for c in full.candidates[:100]]
