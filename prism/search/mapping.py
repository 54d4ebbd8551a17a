"""Mapping instantiation (paper §3.4): every assignment of an sGraph's mapping variables (the typed walk
in ``walk`` without a solver; z3 for the untyped enumeration, counts and feasibility).

Constraints: the linear rules (a parallel dim splits at most one dim of a tensor; a data dim is split
by at most one grid dim), the structural rules of the IR (a saver maps every grid dim to exactly one
distinct data dim), and the equalities of symbolic dimension matching. Parallel sizes stay symbolic.

Symmetry breaking: permuting a kernel's grid dims (with their sizes) gives the same μGraph up to
renaming, so of each class only the assignment whose per-grid-dim columns of variables are sorted
(lexicographically non-increasing) is kept. Grid dims whose size is shared with another kernel are
not permuted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import z3

from prism.ir import CustomKernel, KernelGraph

from .dimmatch import LinForm, Tile
from .sgraph import LOOP, MapVar, SGraph
from .walk import permutable_columns, shares_loop, walk


@dataclass(frozen=True)
class MappingResult:
    graphs: list[KernelGraph]
    before_symmetry: int
    after_symmetry: int
    seconds: float


def _solver(variables: Sequence[MapVar], eqs: Iterable[LinForm],
            fixed: Mapping[str, int]) -> tuple[z3.Solver, dict[str, z3.BoolRef]]:
    s = z3.Solver()
    bools = {v.name: z3.Bool(v.name) for v in variables}
    groups: dict[tuple[str, int, int], list[MapVar]] = {}
    for v in variables:
        groups.setdefault((v.kind, v.kernel, v.op), []).append(v)
    for (kind, _, _), vs in groups.items():
        pars = sorted({v.par for v in vs})
        dims = sorted({v.dim for v in vs})
        for p in pars:
            col = [bools[v.name] for v in vs if v.par == p]
            if kind == "save":
                s.add(z3.PbEq([(b, 1) for b in col], 1))
            else:
                s.add(z3.AtMost(*col, 1))
        for a in dims:
            row = [bools[v.name] for v in vs if v.dim == a and v.par != LOOP]
            if len(row) > 1:
                s.add(z3.AtMost(*row, 1))
    for name, val in fixed.items():
        if name in bools:
            s.add(bools[name] == bool(val))
    for f in eqs:
        const = sum(c for v, c in f if v == "")
        terms = [(bools[v], c) for v, c in f if v]
        if not terms:
            if const != 0:
                s.add(z3.BoolVal(False))
            continue
        s.add(z3.PbEq(terms, -const))
    return s, bools


def feasible_partial(variables: Sequence[MapVar], eqs: Iterable[LinForm], fixed: Mapping[str, int],
                     kernels: Sequence[CustomKernel] = (), tiles: Sequence[tuple[Tile | None, ...]] = ()) -> bool:
    s, _ = _solver(variables, eqs, fixed)
    return s.check() == z3.sat


def feasible(sg: SGraph) -> bool:
    """Has the sGraph at least one mapping assignment that satisfies every constraint?"""
    return feasible_partial(sg.variables, sg.equalities, dict(sg.fixed))


def _symmetry(sg: SGraph, bools: Mapping[str, z3.BoolRef]) -> list[z3.BoolRef]:
    out: list[z3.BoolRef] = []
    for columns in permutable_columns(sg).values():
        cols = []
        for vs in columns:
            bits = [z3.If(bools[v.name], z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)) for v in vs]
            cols.append(bits[0] if len(bits) == 1 else z3.Concat(*bits))
        out.extend(z3.UGE(cols[i], cols[i + 1]) for i in range(len(cols) - 1))
    return out


def _enumerate(s: z3.Solver, bools: Mapping[str, z3.BoolRef], free: Sequence[str]) -> list[dict[str, int]]:
    sols = []
    while s.check() == z3.sat:
        model = s.model()
        sol = {n: int(z3.is_true(model.eval(bools[n], model_completion=True))) for n in free}
        sols.append(sol)
        s.add(z3.Or([bools[n] != bool(v) for n, v in sol.items()]) if sol else z3.BoolVal(False))
    return sols


def count_mappings(sg: SGraph, *, symmetry_breaking: bool) -> int:
    s, bools = _solver(sg.variables, sg.equalities, dict(sg.fixed))
    if symmetry_breaking:
        s.add(*_symmetry(sg, bools))
    free = [v.name for v in sg.variables if v.name not in dict(sg.fixed)]
    return len(_enumerate(s, bools, free))


def instantiate_mappings(candidate: SGraph, *, symmetry_breaking: bool = True, count_before: bool = True,
                         typed: bool = True, deadline: float | None = None) -> MappingResult:
    """Every valid concrete mapping of ``candidate`` (sizes symbolic), optionally symmetry-broken.

    With ``typed`` (the default) the assignments are built op by op, depth first, without a solver
    (``walk``): each prefix extends to a full solution of the constraints and keeps a layout
    (``layout.check_layout``), so whole subtrees of wrong mappings are never enumerated.
    ``before_symmetry`` then counts the well-typed assignments before symmetry breaking (each kept one
    stands for its class of grid-dim permutations). ``typed=False`` enumerates every assignment that
    satisfies the constraints with z3 blocking clauses. ``deadline`` (``time.time()``, typed walks):
    ``walk.WalkTimeout`` once it has passed.
    """
    t0 = time.perf_counter()
    if typed:
        graphs, before = walk(candidate, symmetry_breaking, deadline)
        return MappingResult(graphs, before, len(graphs), time.perf_counter() - t0)
    fixed = dict(candidate.fixed)
    s, bools = _solver(candidate.variables, candidate.equalities, fixed)
    if symmetry_breaking:
        s.add(*_symmetry(candidate, bools))
    free = [v.name for v in candidate.variables if v.name not in fixed]
    sols = _enumerate(s, bools, free)
    before = count_mappings(candidate, symmetry_breaking=False) if symmetry_breaking and count_before else len(sols)
    return MappingResult([candidate.instantiate(sol) for sol in sols], before, len(sols), time.perf_counter() - t0)


def without_idle_loops(kg: KernelGraph) -> KernelGraph:
    """``kg`` with loop size 1 in every kernel whose loop reads nothing per iteration.

    Such a loop repeats one iteration; at loop size 1 it is the same kernel without the repeats, which
    the verifier can prove (the repeated form is only right when the repeats cancel, as in a ratio).
    A loop size shared with another kernel (a split graph's combine loop) is left alone."""
    kernels = []
    changed = False
    for k, shared in zip(kg.kernels, shares_loop(kg.kernels), strict=True):
        if (isinstance(k, CustomKernel) and isinstance(k.loop, str) and not shared
                and all(op.fmap is None for op in k.loads)):
            k = replace(k, loop=1)
            changed = True
        kernels.append(k)
    return replace(kg, kernels=tuple(kernels)) if changed else kg
