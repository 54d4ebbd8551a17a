"""The hand-built fused plans of prism/plans.py are among the search's results (issue 3, "must be found").

Each plan is found twice over: its structure (canonical form without maps) is a candidate sGraph,
and mapping instantiation of that candidate produces the plan's exact maps (canonical key)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from prism import plans, workloads
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.search import SearchConfig, canonical_key, instantiate_mappings, search, structure_key

_cache: dict[tuple[str, SearchConfig], object] = {}


def _search(program: str, cfg: SearchConfig):  # type: ignore[no-untyped-def]
    if (program, cfg) not in _cache:
        _cache[(program, cfg)] = search(workloads.program(program), cfg, name=program)
    return _cache[(program, cfg)]


def _found(program: str, make: Callable[[Graph], KernelGraph], cfg: SearchConfig) -> None:
    plan = make(workloads.program(program))
    result = _search(program, cfg)
    cands = [c for c in result.candidates if c.structure_key == structure_key(plan)]  # type: ignore[attr-defined]
    assert cands, f"{program}: the plan's structure is not among {len(result.candidates)} candidates"  # type: ignore[attr-defined]
    keys = {canonical_key(g) for c in cands for g in instantiate_mappings(c).graphs}
    assert canonical_key(plan) in keys, f"{program}: the plan's maps are not among the candidate's mappings"


ONE_KERNEL = SearchConfig(max_kernels=1, max_grid_dims=2)
SPLIT = SearchConfig(max_grid_dims=2)


@pytest.mark.parametrize(
    ("program", "make"),
    [
        ("rmsnorm_linear", plans.rmsnorm_linear_plan),
        ("rmsnorm_linear", plans.rmsnorm_linear_2d_plan),
        ("swiglu", plans.swiglu_plan),
        ("rmsnorm_mlp", plans.rmsnorm_mlp_plan),
        ("gqa", plans.gqa_plan),
        ("gqa", lambda g: plans.gqa_plan(g, rows_on_y=True)),
    ],
)
def test_one_kernel_plan_is_found(program: str, make: Callable[[Graph], KernelGraph]) -> None:
    _found(program, make, ONE_KERNEL)


@pytest.mark.slow
def test_qknorm_one_kernel_plan_is_found_at_its_minimum_size() -> None:
    # the plan has 16 ops, the fewest any one-kernel graph of this program needs (about a minute)
    cfg = SearchConfig(max_kernels=1, max_grid_dims=1, max_block_ops=16)
    _found("qknorm_gqa", lambda g: plans.gqa_plan(g, qknorm=True), cfg)


def test_split_kv_plan_is_found() -> None:
    _found("gqa", plans.gqa_split_plan, SPLIT)


@pytest.mark.slow
def test_qknorm_split_kv_plan_is_found() -> None:
    _found("qknorm_gqa", lambda g: plans.gqa_split_plan(g, qknorm=True), SPLIT)


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(plans.PLANS))
def test_every_plan_is_found_with_the_default_config(program: str) -> None:
    for make in plans.PLANS[program]:
        _found(program, make, SearchConfig())


def test_default_op_bound_is_capped_for_large_programs() -> None:
    g = workloads.program("swiglu")
    one = SearchConfig(max_kernels=1)
    assert search(g, one).stats["max_block_ops"] == 9 + 2  # the fewest ops + extra_ops
    assert search(g, SearchConfig(max_kernels=1, auto_block_ops_cap=10)).stats["max_block_ops"] == 10
    assert search(g, SearchConfig(max_kernels=1, auto_block_ops_cap=5)).stats["max_block_ops"] == 9  # never below
