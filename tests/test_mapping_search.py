"""Mapping instantiation: z3 enumeration against brute force, and symmetry breaking."""

from __future__ import annotations

import itertools

import sympy

from prism import workloads
from prism.search import SearchConfig, canonical_key, instantiate_mappings, search
from prism.search.mapping import count_mappings
from prism.search.sgraph import SGraph


def _brute_count(sg: SGraph) -> int:
    """Assignments satisfying the linear, structural and matching constraints, by enumeration."""
    names = [v.name for v in sg.variables]
    groups: dict[tuple[str, int, int], list[int]] = {}
    for i, v in enumerate(sg.variables):
        groups.setdefault((v.kind, v.kernel, v.op), []).append(i)
    n = 0
    for bits in itertools.product((0, 1), repeat=len(names)):
        ok = True
        for (kind, _, _), idx in groups.items():
            vs = [sg.variables[i] for i in idx]
            for p in {v.par for v in vs}:
                s = sum(bits[i] for i in idx if sg.variables[i].par == p)
                if (kind == "save" and s != 1) or s > 1:
                    ok = False
            for a in {v.dim for v in vs}:
                if sum(bits[i] for i in idx if sg.variables[i].dim == a and sg.variables[i].par != "i") > 1:
                    ok = False
        val = dict(zip(names, bits, strict=True))
        for f in sg.equalities:
            if sum(c * (1 if v == "" else val[v]) for v, c in f) != 0:
                ok = False
        n += ok
    return n


def _candidates(ng: int) -> list[SGraph]:
    g = workloads.program("swiglu")
    cfg = SearchConfig(max_kernels=1, min_grid_dims=ng, max_grid_dims=ng, max_block_ops=10)
    return search(g, cfg).candidates


def test_z3_count_equals_brute_force() -> None:
    cands = _candidates(1)
    assert cands
    for sg in cands[:3]:
        assert count_mappings(sg, symmetry_breaking=False) == _brute_count(sg)


def test_symmetry_breaking_keeps_one_of_each_permutation_class() -> None:
    for ng in (2, 3):
        cands = _candidates(ng) if ng == 2 else _rmsnorm_linear_grid3()
        assert cands
        for typed in (False, True):
            # the first candidate whose assignments symmetry breaking actually thins out
            pairs = ((instantiate_mappings(sg, symmetry_breaking=False, typed=typed),
                      instantiate_mappings(sg, symmetry_breaking=True, typed=typed)) for sg in cands)
            full, kept = next((f, k) for f, k in pairs if k.after_symmetry < f.after_symmetry)
            assert full.before_symmetry == full.after_symmetry == len(full.graphs)
            # before_symmetry of the kept set counts the whole classes (z3 recount, or orbit sizes when typed)
            assert kept.before_symmetry == len(full.graphs)
            # the kept set covers every class of the full set, once
            full_keys = {canonical_key(g) for g in full.graphs}
            kept_keys = [canonical_key(g) for g in kept.graphs]
            assert set(kept_keys) == full_keys
            assert len(kept_keys) == len(set(kept_keys))


def test_typed_enumeration_is_the_well_typed_part_of_the_full_one() -> None:
    from prism.search.layout import layout_ok

    for sg in _candidates(2)[:6]:
        typed = {canonical_key(g) for g in instantiate_mappings(sg, symmetry_breaking=False).graphs}
        full = instantiate_mappings(sg, symmetry_breaking=False, typed=False).graphs
        assert typed == {canonical_key(g) for g in full if layout_ok(g)}


def _rmsnorm_linear_grid3() -> list[SGraph]:
    g = workloads.program("gqa")
    return search(g, SearchConfig(max_kernels=1, min_grid_dims=3, max_grid_dims=3, max_block_ops=10)).candidates


def test_tile_shapes_are_the_papers_expressions() -> None:
    sg = _candidates(1)[0]
    expr = sg.tile_shapes()[0][0][0]  # type: ignore[index]
    ms = sorted((s for s in expr.free_symbols if str(s).startswith("m")), key=str)
    (big_d,) = [s for s in expr.free_symbols if str(s).startswith("D_")]
    assert len(ms) == 2  # split along the grid dim x and along the loop i
    for bits in itertools.product((0, 1), repeat=len(ms)):
        expected = big_d
        for m, b in zip(ms, bits, strict=True):
            if b:
                expected = expected / sympy.Symbol(f"d_k0_{str(m)[-1]}", positive=True)
        assert sympy.simplify(expr.subs(dict(zip(ms, bits, strict=True))) - expected) == 0
