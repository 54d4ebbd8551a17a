"""Solver-free mapping enumeration (prism.search.assign): exact against brute force and against z3."""

from __future__ import annotations

import itertools
import random

import pytest

from prism import workloads
from prism.search import SearchConfig, canonical_key, instantiate_mappings, search
from prism.search.assign import REACH_LIMIT, Plan, advance, build_plan, successors
from prism.search.dimmatch import LinForm, lin
from prism.search.layout import layout_ok
from prism.search.sgraph import MapVar


def _op(kind: str, op: int, rank: int, pars: str) -> list[MapVar]:
    return [MapVar(f"{kind[0]}{op}_{a}{p}", kind, 0, op, a, p) for a in range(rank) for p in pars]


def _rules_hold(groups: list[list[MapVar]], val: dict[str, int]) -> bool:
    for vs in groups:
        for p in {v.par for v in vs}:
            s = sum(val[v.name] for v in vs if v.par == p)
            if s > 1 or (vs[0].kind == "save" and s != 1):
                return False
        for a in {v.dim for v in vs}:
            if sum(val[v.name] for v in vs if v.dim == a and v.par != "i") > 1:
                return False
    return True


def _brute(groups: list[list[MapVar]], eqs: list[LinForm]) -> set[tuple[int, ...]]:
    names = [v.name for vs in groups for v in vs]
    out = set()
    for bits in itertools.product((0, 1), repeat=len(names)):
        val = dict(zip(names, bits, strict=True))
        if _rules_hold(groups, val) and all(sum(c * (1 if v == "" else val[v]) for v, c in f) == 0 for f in eqs):
            out.add(bits)
    return out


def _walk(plan: Plan) -> tuple[set[tuple[int, ...]], int]:
    """Every leaf of the plan's walk, and how many prefixes it accepted that had no completion."""
    found: set[tuple[int, ...]] = set()
    dead = [0]

    def rec(lv: int, state: tuple[int, ...], bits: tuple[int, ...]) -> bool:
        if lv == len(plan.levels):
            found.add(bits)
            return True
        ok = False
        nxt = plan.reach[lv + 1]
        taken = []
        for ci, x in enumerate(plan.levels[lv].choices):
            new = advance(plan.steps[lv], state, ci)
            if new is not None and (nxt is None or new in nxt):
                taken.append((ci, new))
                ok |= rec(lv + 1, new, bits + x)
        assert successors(plan, lv, state) == tuple(taken)  # what the mapping walk takes
        dead[0] += not ok
        return ok

    rec(0, (), ())
    return found, dead[0]


def test_walk_is_exact_and_never_dead_ends() -> None:
    rng = random.Random(7)
    for trial in range(40):
        groups = [_op("load", 0, 2, "xi"), _op("load", 1, 2, "xi"), _op("save", 2, 2, "x")]
        names = [v.name for vs in groups for v in vs]
        eqs = []
        for _ in range(rng.randint(1, 4)):
            terms = rng.sample(names, rng.randint(1, 3))
            eqs.append(lin([*((n, rng.choice((-1, 1))) for n in terms), ("", rng.choice((0, 0, 1, -1)))]))
        plan = build_plan(groups, eqs, {})
        expected = _brute(groups, eqs)
        if plan is None:
            assert not expected, trial
            continue
        found, dead = _walk(plan)
        assert found == expected, trial
        assert dead == 0 or not expected, trial  # every accepted prefix completes (as z3's projection)


def test_walk_without_reach_sets_is_still_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    import prism.search.assign as assign

    groups = [_op("load", 0, 2, "xyi"), _op("load", 1, 2, "xyi"), _op("save", 2, 2, "xy")]
    eqs = [lin([("l0_0x", 1), ("l1_1x", -1)]), lin([("l0_1i", 1), ("l1_0i", -1)]), lin([("l1_1y", 1), ("s2_1y", -1)])]
    full = build_plan(groups, eqs, {})
    monkeypatch.setattr(assign, "REACH_LIMIT", 0)
    assign._reach_from.cache_clear()  # reach sets are shared by plans with the same last levels
    try:
        bare = assign.build_plan(groups, eqs, {})
    finally:
        assign._reach_from.cache_clear()
    assert full is not None and bare is not None and REACH_LIMIT > 0
    assert all(r is None for r in bare.reach[:-1])
    assert _walk(bare)[0] == _walk(full)[0] == _brute(groups, eqs)


def test_fixed_maps_agree_with_z3() -> None:
    """The concrete-maps ablation fixes variables: the walk honours them like z3 does."""
    g = workloads.program("swiglu")
    cfg = SearchConfig(max_kernels=1, min_grid_dims=2, max_grid_dims=2, max_block_ops=10,
                       concrete_maps=frozenset({"fmap"}))
    for sg in search(g, cfg).candidates[:8]:
        assert sg.fixed
        typed = {canonical_key(k) for k in instantiate_mappings(sg, symmetry_breaking=False).graphs}
        full = instantiate_mappings(sg, symmetry_breaking=False, typed=False).graphs
        assert typed == {canonical_key(k) for k in full if layout_ok(k)}


def test_two_kernel_candidates_agree_with_z3() -> None:
    g = workloads.program("rmsnorm_linear")
    cfg = SearchConfig(min_grid_dims=1, max_grid_dims=2)
    cands = [c for c in search(g, cfg).candidates if len(c.kernels) == 2]
    assert cands
    for sg in cands[:: max(1, len(cands) // 6)]:
        for sym in (False, True):
            typed = instantiate_mappings(sg, symmetry_breaking=sym)
            full = instantiate_mappings(sg, symmetry_breaking=sym, typed=False)
            assert {canonical_key(k) for k in typed.graphs} == {canonical_key(k) for k in full.graphs if layout_ok(k)}


def test_reach_sets_built_on_demand_are_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no reach set built up front, ``successors`` builds them once the walks have worked at a cut
    (``DEMAND_AFTER``): the same leaves as brute force, and then no accepted prefix dead-ends."""
    import prism.search.assign as assign

    groups = [_op("load", 0, 2, "xyi"), _op("load", 1, 2, "xyi"), _op("save", 2, 2, "xy")]
    eqs = [lin([("l0_0x", 1), ("l1_1x", -1)]), lin([("l0_1i", 1), ("l1_0i", -1)]), lin([("l1_1y", 1), ("s2_1y", -1)])]
    monkeypatch.setattr(assign, "REACH_LIMIT", 0)
    monkeypatch.setattr(assign, "DEMAND_AFTER", 1)
    assign._reach_from.cache_clear()
    assign._reach_capped.cache_clear()
    try:
        plan = assign.build_plan(groups, eqs, {})
        assert plan is not None and all(r is None for r in plan.reach[:-1])
        for _ in range(2):  # the first pass builds the sets, the second walks with them
            found: set[tuple[int, ...]] = set()
            dead = [0]

            def rec(lv: int, state: tuple[int, ...], bits: tuple[int, ...], plan: Plan = plan,
                    found: set[tuple[int, ...]] = found, dead: list[int] = dead) -> bool:
                if lv == len(plan.levels):
                    found.add(bits)
                    return True
                ok = False
                for ci, new in successors(plan, lv, state):
                    ok |= rec(lv + 1, new, bits + plan.levels[lv].choices[ci])
                dead[0] += not ok
                return ok

            rec(0, (), ())
            assert found == _brute(groups, eqs)
        assert plan.demanded and all(s is not None for s in plan.demanded.values())
        assert dead[0] == 0
    finally:
        assign._reach_from.cache_clear()
        assign._reach_capped.cache_clear()
