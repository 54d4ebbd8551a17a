"""Mapping instantiation (paper §3.4): every assignment of an sGraph's mapping variables, with z3.

Constraints: the linear rules (a parallel dim splits at most one dim of a tensor; a data dim is split
by at most one grid dim), the structural rules of the IR (a saver maps every grid dim to exactly one
distinct data dim), and the equalities of symbolic dimension matching. Parallel sizes stay symbolic.

Symmetry breaking: permuting a kernel's grid dims (with their sizes) gives the same μGraph up to
renaming, so of each class only the assignment whose per-grid-dim columns of variables are sorted
(lexicographically non-increasing) is kept. Grid dims whose size is shared with another kernel are
not permuted.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import z3

from prism.ir import BlockOp, CustomKernel, KernelGraph, Load, Save, op_args

from .assign import Plan, State, advance, build_plan
from .dimmatch import LinForm, Tile
from .layout import IllTyped, check_layout
from .sgraph import LOOP, PARALLEL, MapVar, SGraph


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


def _permutable_columns(sg: SGraph) -> list[list[list[MapVar]]]:
    """Per kernel whose grid has two or more dims of unshared size: one column of variables per such
    grid dim (sorted alike), the unit that symmetry breaking orders and grid permutations swap."""
    users = sg.symbol_users()
    out = []
    for ki, k in enumerate(sg.kernels):
        pars = [p for p, sym in zip(PARALLEL, k.grid, strict=False) if len(users.get(str(sym), ())) == 1]
        if len(pars) >= 2:
            out.append([sorted((v for v in sg.variables if v.kernel == ki and v.par == p),
                               key=lambda v: (v.kind, v.op, v.dim)) for p in pars])
    return out


def _symmetry(sg: SGraph, bools: Mapping[str, z3.BoolRef]) -> list[z3.BoolRef]:
    out: list[z3.BoolRef] = []
    for columns in _permutable_columns(sg):
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


def _map_ops(candidate: SGraph) -> list[list[MapVar]]:
    """The variables of every Load and Save, in kernel and op order (the order ``check_layout`` counts)."""
    by_op: dict[tuple[int, int], list[MapVar]] = {}
    for v in candidate.variables:
        by_op.setdefault((v.kernel, v.op), []).append(v)
    return [by_op.get((ki, j), []) for ki, k in enumerate(candidate.kernels)
            for j, op in enumerate(k.ops) if isinstance(op, Load | Save)]


def _orbit(columns: list[list[list[MapVar]]], values: Mapping[str, int]) -> int:
    """How many assignments the grid-dim permutations make of this one (its class under symmetry)."""
    total = 1
    for kernel_columns in columns:
        cols = [tuple(values.get(v.name, 0) for v in vs) for vs in kernel_columns]
        n = math.factorial(len(cols))
        for c in Counter(cols).values():
            n //= math.factorial(c)
        total *= n
    return total


def instantiate_mappings(candidate: SGraph, *, symmetry_breaking: bool = True, count_before: bool = True,
                         typed: bool = True) -> MappingResult:
    """Every valid concrete mapping of ``candidate`` (sizes symbolic), optionally symmetry-broken.

    With ``typed`` (the default) the assignments are built op by op, depth first: z3 enumerates the
    assignments of the next op's variables that extend the current prefix to a full solution of the
    constraints (under assumptions, projected on that op), and each must keep a layout
    (``layout.check_layout``), so whole subtrees of wrong mappings are never enumerated.
    ``before_symmetry`` then counts the well-typed assignments before symmetry breaking (each kept one
    stands for its class of grid-dim permutations). ``typed=False`` enumerates every assignment that
    satisfies the constraints with z3 blocking clauses.
    """
    t0 = time.perf_counter()
    if typed:
        graphs, before = _walk(candidate, symmetry_breaking)
        return MappingResult(graphs, before, len(graphs), time.perf_counter() - t0)
    fixed = dict(candidate.fixed)
    s, bools = _solver(candidate.variables, candidate.equalities, fixed)
    if symmetry_breaking:
        s.add(*_symmetry(candidate, bools))
    free = [v.name for v in candidate.variables if v.name not in fixed]
    sols = _enumerate(s, bools, free)
    before = count_mappings(candidate, symmetry_breaking=False) if symmetry_breaking and count_before else len(sols)
    return MappingResult([candidate.instantiate(sol) for sol in sols], before, len(sols), time.perf_counter() - t0)


@dataclass(frozen=True)
class _Slot:
    """Where one level's op sits: the placeholder op and its variables."""

    kernel: int
    op: int
    placeholder: BlockOp
    variables: tuple[MapVar, ...]


def _slots(candidate: SGraph, groups: Sequence[Sequence[MapVar]]) -> list[_Slot]:
    positions = [(ki, j) for ki, k in enumerate(candidate.kernels) for j, op in enumerate(k.ops)
                 if isinstance(op, Load | Save)]
    return [_Slot(ki, j, candidate.kernels[ki].ops[j], tuple(vs)) for (ki, j), vs in zip(positions, groups, strict=True)]


def _concrete_op(op: BlockOp, vs: Sequence[MapVar], values: Mapping[str, int]) -> BlockOp:
    """A placeholder Load or Save with the maps that ``values`` give its variables ``vs``."""
    def dim(p: str) -> int | None:
        return next((v.dim for v in sorted(vs, key=lambda v: v.dim) if v.par == p and values.get(v.name, 0)), None)

    grid = PARALLEL[: len(op.imap if isinstance(op, Load) else op.omap)]  # type: ignore[union-attr]
    if isinstance(op, Load):
        return Load(op.tensor, tuple(dim(p) for p in grid), dim(LOOP))
    assert isinstance(op, Save)
    return Save(op.x, op.tensor, tuple(dim(p) for p in grid))


@dataclass(frozen=True)
class _Order:
    """Symmetry breaking on prefixes: per level, the kernels' columns and how much of them is known."""

    checks: tuple[tuple[tuple[tuple[str, ...], ...], int], ...]  # per level: (columns, known prefix length)


def _order(columns: list[list[list[MapVar]]], groups: Sequence[Sequence[MapVar]], fixed: Mapping[str, int]) -> list[_Order]:
    level_of = {v.name: lv for lv, vs in enumerate(groups) for v in vs}
    out = []
    for lv in range(len(groups)):
        checks = []
        for kernel_columns in columns:
            known = [next((i for i, v in enumerate(col) if v.name not in fixed and level_of[v.name] > lv), len(col))
                     for col in kernel_columns]
            if min(known):
                checks.append((tuple(tuple(v.name for v in col) for col in kernel_columns), min(known)))
        out.append(_Order(tuple(checks)))
    return out


def _ordered(order: _Order, values: Mapping[str, int]) -> bool:
    """Do the known prefixes of the grid-dim columns leave them non-increasing (lexicographically)?"""
    for cols, n in order.checks:
        prev = None
        for col in cols:
            cur = tuple(values[name] for name in col[:n])
            if prev is not None and cur > prev:
                return False
            prev = cur
    return True


def _checked_levels(candidate: SGraph) -> list[bool]:
    """Per level: does assigning it make ``check_layout`` compute a value that can be ill-typed?

    A value is computed once every load and save it depends on is assigned (a load of an
    intermediate tensor also waits for its saver); a load of a program input alone is never
    ill-typed, and values computed at earlier levels stay as they were, so a level that completes
    nothing else cannot turn a passing prefix into a failing one."""
    inputs = {t.name for t in candidate.template.inputs}
    saved_at: dict[str, int] = {}
    level = -1
    checked: list[bool] = []
    for k in candidate.kernels:
        ready: list[int] = []
        for op in k.ops:
            if isinstance(op, Load | Save):
                level += 1
                checked.append(False)
            args = [ready[a] for a in op_args(op)]
            if isinstance(op, Load):
                at = level if op.tensor in inputs else max(level, saved_at.get(op.tensor, level))
            else:
                at = max([*args, level if isinstance(op, Save) else -1])
            if isinstance(op, Save):
                saved_at[op.tensor] = at
            if at >= 0 and not (isinstance(op, Load) and op.tensor in inputs):
                checked[at] = True
            ready.append(at)
    return checked


# Layout verdicts of prefixes that end before a candidate's last kernel, by (inputs and outputs, level,
# the kernels so far): such a prefix only involves those kernels, and candidates that share their
# first kernel repeat it. Bounded: cleared when full.
_PREFIX_LAYOUT: dict[tuple[object, int, tuple[CustomKernel, ...]], bool] = {}
PREFIX_LAYOUT_LIMIT = 200_000


class _Walker:
    """Depth first over the loads and saves in kernel order (module docstring of ``assign``): each
    prefix extends to a full solution of the constraints and keeps a layout (``check_layout``)."""

    def __init__(self, candidate: SGraph, plan: Plan, symmetry_breaking: bool) -> None:
        groups = _map_ops(candidate)
        self.candidate, self.plan, self.symmetry_breaking = candidate, plan, symmetry_breaking
        self.columns = _permutable_columns(candidate)
        fixed = dict(candidate.fixed)
        self.orders = _order(self.columns, groups, fixed) if symmetry_breaking else [_Order(())] * len(groups)
        self.slots = _slots(candidate, groups)
        self.made: list[dict[int, BlockOp]] = [{} for _ in self.slots]  # per level: the op of each choice tried
        self.checked = _checked_levels(candidate)
        self.ops = [list(k.ops) for k in candidate.kernels]
        self.values = fixed
        self.io = (candidate.template.inputs, candidate.template.outputs)
        self.graphs: list[KernelGraph] = []
        self.before = 0

    def build(self, upto: int | None = None) -> KernelGraph:
        kernels = tuple(replace(k, ops=tuple(o)) for k, o in zip(self.candidate.kernels[:upto], self.ops, strict=False))
        return replace(self.candidate.template, kernels=kernels)

    def typed(self, lv: int) -> bool:
        """Does the prefix up to level ``lv`` keep a layout?"""
        k = self.slots[lv].kernel
        if k == len(self.ops) - 1:
            return layout_ok_upto(self.build(), lv + 1)
        kg = self.build(k + 1)
        key = (self.io, lv, kg.kernels)
        verdict = _PREFIX_LAYOUT.get(key)  # type: ignore[arg-type]
        if verdict is None:
            if len(_PREFIX_LAYOUT) >= PREFIX_LAYOUT_LIMIT:
                _PREFIX_LAYOUT.clear()
            verdict = _PREFIX_LAYOUT[key] = layout_ok_upto(kg, lv + 1)  # type: ignore[index]
        return verdict

    def visit(self, lv: int, state: State) -> None:
        plan = self.plan
        if lv == len(plan.levels):
            self.graphs.append(self.build())
            self.before += _orbit(self.columns, self.values) if self.symmetry_breaking else 1
            return
        level, slot, nxt = plan.levels[lv], self.slots[lv], plan.reach[lv + 1]
        for ci, x in enumerate(level.choices):
            new = advance(plan.steps[lv], state, ci)
            if new is None or (nxt is not None and new not in nxt):
                continue
            self.values.update(zip(level.names, x, strict=True))
            if not _ordered(self.orders[lv], self.values):
                continue
            if ci not in self.made[lv]:
                self.made[lv][ci] = _concrete_op(slot.placeholder, slot.variables, self.values)
            self.ops[slot.kernel][slot.op] = self.made[lv][ci]
            if not self.checked[lv] or self.typed(lv):
                self.visit(lv + 1, new)
        self.ops[slot.kernel][slot.op] = slot.placeholder  # unassigned levels keep their placeholders


def layout_ok_upto(kg: KernelGraph, assigned: int) -> bool:
    try:
        check_layout(kg, assigned=assigned)
    except IllTyped:
        return False
    return True


def _walk(candidate: SGraph, symmetry_breaking: bool) -> tuple[list[KernelGraph], int]:
    plan = build_plan(_map_ops(candidate), candidate.equalities, dict(candidate.fixed))
    if plan is None or (plan.reach[0] is not None and () not in plan.reach[0]):
        return [], 0
    walker = _Walker(candidate, plan, symmetry_breaking)
    walker.visit(0, ())
    return walker.graphs, walker.before


def without_idle_loops(kg: KernelGraph) -> KernelGraph:
    """``kg`` with loop size 1 in every kernel whose loop reads nothing per iteration.

    Such a loop repeats one iteration; at loop size 1 it is the same kernel without the repeats, which
    the verifier can prove (the repeated form is only right when the repeats cancel, as in a ratio).
    A loop size shared with another kernel (a split graph's combine loop) is left alone."""
    uses: dict[str, int] = {}
    for k in kg.kernels:
        if isinstance(k, CustomKernel):
            for s in {*k.grid, k.loop}:
                if isinstance(s, str):
                    uses[s] = uses.get(s, 0) + 1
    kernels = []
    changed = False
    for k in kg.kernels:
        if (isinstance(k, CustomKernel) and isinstance(k.loop, str) and uses[k.loop] == 1
                and all(op.fmap is None for op in k.loads)):
            k = replace(k, loop=1)
            changed = True
        kernels.append(k)
    return replace(kg, kernels=tuple(kernels)) if changed else kg
