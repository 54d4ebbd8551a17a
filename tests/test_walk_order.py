"""The mapping walk assigns a kernel's loads at their first users (``walk.walk_order``): the same
mappings, listed in the same order as a walk in op order, with fewer prefixes walked where a load's
first user comes late (docs/search-speed.md, "Loads assigned at their first users")."""

from __future__ import annotations

import time

import prism.search
from prism import pipeline
from prism.graph import Graph
from prism.ir import KernelGraph, Load, Save
from prism.search import walk as walk_mod
from prism.search.sgraph import SGraph


def _chain() -> Graph:
    g = Graph()
    h = g.input((8, 32), "float16", "X")
    for i in range(3):
        h = g.matmul(h, g.input((32, 32), "float16", f"W{i}"))
        if i < 2:
            h = g.silu(h)
    g.output(h, "O")
    return g


def _op_order(cand: SGraph) -> list[tuple[int, int]]:
    return [(ki, j) for ki, k in enumerate(cand.kernels) for j, op in enumerate(k.ops) if isinstance(op, Load | Save)]


def _walked(cand: SGraph, positions: list[tuple[int, int]]) -> tuple[list[KernelGraph], int, int]:
    groups = tuple(tuple(g) for g in walk_mod.map_ops(cand, positions))
    plan = walk_mod._plan(groups, cand.equalities, cand.fixed)
    if plan is None or (plan.reach[0] is not None and () not in plan.reach[0]):
        return [], 0, 0
    w = walk_mod.Walker(cand, positions, groups, plan, True, time.time() + 60)
    graphs, before = w.run()
    return graphs, before, w.expansions


def test_loads_at_their_first_users_give_the_same_mappings_in_the_same_order_from_fewer_prefixes() -> None:
    g = _chain()
    cands = prism.search.search(g, pipeline.default_config(g, 10.0)).candidates
    reordered = fewer = 0
    for cand in cands[:60]:
        order = walk_mod.walk_order(cand)
        assert sorted(order) == _op_order(cand)
        graphs, before, expansions = _walked(cand, order)
        old_graphs, old_before, old_expansions = _walked(cand, _op_order(cand))
        assert (graphs, before) == (old_graphs, old_before)
        reordered += order != _op_order(cand)
        fewer += expansions < old_expansions
    assert reordered and fewer  # the chain's one-kernel candidates load every weight before the first matmul
