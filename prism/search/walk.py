"""The typed mapping walk: every layout-correct assignment of an sGraph's mapping variables, without a
solver (docs/search-speed.md).

Loads and saves are assigned one at a time, kernel by kernel, within a kernel each load at its first
user (``walk_order``; the mappings are then listed in the order of their choices in op order, as a
walk in op order lists them). Each step keeps the prefix only if some
full assignment satisfies every linear constraint (``assign``), its grid-dim columns can still be
ordered (symmetry breaking), and its values keep a layout (``layout.type_ops``, level by level).
Kernels are checked one at a time: a kernel sees the earlier ones only through what they stored
(the layouts of the tensors they saved), so the layout verdicts are memoized by (kernel so far,
stored layouts), and the completions of a later kernel by (the kernels and levels from there on,
stored layouts, state of the open equalities): earlier kernels that store alike share them, within
a candidate and across candidates (a split graph's later kernel pairs with many first kernels).
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from prism.ir import BlockOp, CustomKernel, KernelGraph, Load, Save, op_args
from prism.memo import remember

from .assign import Plan, State, build_plan, successors
from .dimmatch import LinForm
from .layout import IllTyped, type_ops
from .sgraph import LOOP, PARALLEL, MapVar, SGraph, holds_long

# Layout verdicts by (kernel template with the program's inputs and outputs, level within the kernel,
# the loads and saves assigned so far, what earlier kernels stored), shared by all candidates; with
# what the kernel stores when the level is its last. Templates and stored layouts are numbered once
# (numbers are never reused, so clearing the bounded tables cannot confuse two of them).
_VERDICTS: dict[tuple[object, ...], Verdict] = {}
_IDS: dict[object, int] = {}
_NEXT_ID = itertools.count(1)
VERDICTS_LIMIT = 100_000


def _number(thing: object) -> int:
    """A number for ``thing`` (equal things, equal numbers)."""
    n = _IDS.get(thing)
    if n is None:
        if len(_IDS) >= VERDICTS_LIMIT:
            _IDS.clear()
        n = _IDS[thing] = next(_NEXT_ID)
    return n

Completion = tuple[tuple[BlockOp, ...], int]  # the ops of the remaining levels, and their orbit size
# The completions of a later kernel by (what the walk from there depends on (``Walker._tail``), what
# earlier kernels stored, the open equalities' state), shared by all candidates: a split graph's
# later kernel is walked once for the many first kernels it is paired with.
_LATER: dict[tuple[int, int, tuple[int, ...]], list[Completion]] = {}
LATER_LIMIT = 20_000
# a kernel's typing after some level: each op's layout so far, and what is stored by then
Stored = tuple[tuple[str, Any], ...]  # the layouts of saved tensors, sorted by tensor
TypingState = tuple[tuple[object, ...], Stored]
# passes, the stored layouts' number and items when the level is its kernel's last, the typing after it
Verdict = tuple[bool, int, Stored, TypingState | None]


def walk_order(candidate: SGraph) -> list[tuple[int, int]]:
    """The loads and saves (kernel, op) in the order the walk assigns them: kernel by kernel, and within
    a kernel each load at its first user and each save at its place, so that every op is typed (and a
    wrong prefix dropped) as soon as its loads are assigned, not after the loads of ops far below it."""
    out: list[tuple[int, int]] = []
    for ki, k in enumerate(candidate.kernels):
        first_use: dict[int, int] = {}
        for o, op in enumerate(k.ops):
            for a in op_args(op):
                first_use.setdefault(a, o)
        here = [j for j, op in enumerate(k.ops) if isinstance(op, Load | Save)]
        out.extend((ki, j) for j in sorted(here, key=lambda j: (
            first_use.get(j, len(k.ops)) if isinstance(k.ops[j], Load) else j, j)))
    return out


def map_ops(candidate: SGraph, order: Sequence[tuple[int, int]]) -> list[list[MapVar]]:
    """The variables of every Load and Save, in ``order`` (``walk_order``)."""
    by_op: dict[tuple[int, int], list[MapVar]] = {}
    for v in candidate.variables:
        by_op.setdefault((v.kernel, v.op), []).append(v)
    return [by_op.get(at, []) for at in order]


def permutable_columns(sg: SGraph) -> dict[int, list[list[MapVar]]]:
    """Per kernel whose grid has two or more dims of unshared size: one column of variables per such
    grid dim (sorted alike), the unit that symmetry breaking orders and grid permutations swap."""
    users = sg.symbol_users()
    out = {}
    for ki, k in enumerate(sg.kernels):
        pars = [p for p, sym in zip(PARALLEL, k.grid, strict=False) if len(users.get(str(sym), ())) == 1]
        if len(pars) >= 2:
            out[ki] = [sorted((v for v in sg.variables if v.kernel == ki and v.par == p),
                              key=lambda v: (v.kind, v.op, v.dim)) for p in pars]
    return out


def orbit(columns: Sequence[Sequence[str]], values: Mapping[str, int]) -> int:
    """How many assignments the permutations of one kernel's grid dims (columns of variable names)
    make of this one."""
    cols = [tuple(values.get(name, 0) for name in col) for col in columns]
    n = math.factorial(len(cols))
    for c in Counter(cols).values():
        n //= math.factorial(c)
    return n


def _concrete_op(op: BlockOp, vs: Sequence[MapVar], values: Mapping[str, int]) -> BlockOp:
    """A placeholder Load or Save with the maps that ``values`` give its variables ``vs``."""
    return _placed(op, tuple(sorted((v.dim, v.par) for v in vs if values.get(v.name, 0))))


@functools.lru_cache(maxsize=65_536)
def _placed(op: BlockOp, on: tuple[tuple[int, str], ...]) -> BlockOp:
    """``op`` with data dim ``a`` split along parallel dim ``p`` for each (a, p) in ``on`` (sorted)."""
    def dim(p: str) -> int | None:
        return next((a for a, q in on if q == p), None)

    if isinstance(op, Load):
        return Load(op.tensor, tuple(dim(p) for p in PARALLEL[: len(op.imap)]), dim(LOOP))
    assert isinstance(op, Save), op
    return Save(op.x, op.tensor, tuple(dim(p) for p in PARALLEL[: len(op.omap)]))


def _ready_levels(candidate: SGraph, order: Sequence[tuple[int, int]]) -> tuple[list[bool], list[list[int]]]:
    """Per level (the loads and saves in ``order``): does assigning it make the typing compute a value
    that can be ill-typed? And per kernel and op: the level from which it can be typed.

    A value is computed once every load and save it depends on is assigned (a load of an
    intermediate tensor also waits for its saver); a load of a program input alone is never
    ill-typed, and values computed at earlier levels stay as they were, so a level that completes
    nothing else cannot turn a passing prefix into a failing one."""
    inputs = {t.name for t in candidate.template.inputs}
    level_at = {at: lv for lv, at in enumerate(order)}
    saved_at: dict[str, int] = {}
    checked = [False] * len(order)
    ready_at: list[list[int]] = []
    for ki, k in enumerate(candidate.kernels):
        ready: list[int] = []
        for j, op in enumerate(k.ops):
            args = [ready[a] for a in op_args(op)]
            if isinstance(op, Load):
                level = level_at[(ki, j)]
                at = level if op.tensor in inputs else max(level, saved_at.get(op.tensor, level))
            else:
                at = max([*args, level_at[(ki, j)] if isinstance(op, Save) else -1])
            if isinstance(op, Save):
                saved_at[op.tensor] = at
            if at >= 0 and not (isinstance(op, Load) and op.tensor in inputs):
                checked[at] = True
            ready.append(at)
        ready_at.append(ready)
    return checked, ready_at


@dataclass(frozen=True)
class _Level:
    """One load or save: where it sits, its variables, and what the walk does there."""

    kernel: int
    op: int
    placeholder: BlockOp
    variables: tuple[MapVar, ...]
    first: int  # the kernel's first level
    last: bool  # the kernel's last level
    checked: bool  # check the layout here
    order: tuple[tuple[str, ...], ...]  # the kernel's columns (symmetry breaking), empty when none
    known: int  # how much of each column is assigned after this level
    todo: tuple[int, ...] = ()  # when checked: the kernel's ops it types (ready since the last check)


def _levels(candidate: SGraph, positions: Sequence[tuple[int, int]], groups: Sequence[Sequence[MapVar]],
            symmetry_breaking: bool) -> list[_Level]:
    fixed = dict(candidate.fixed)
    columns = permutable_columns(candidate) if symmetry_breaking else {}
    level_of = {v.name: lv for lv, vs in enumerate(groups) for v in vs}
    checked, ready_at = _ready_levels(candidate, positions)
    out = []
    since = -1  # the kernel's last checked level
    for lv, ((ki, j), vs) in enumerate(zip(positions, groups, strict=True)):
        last = lv + 1 == len(positions) or positions[lv + 1][0] != ki
        first = next(i for i, (kj, _) in enumerate(positions) if kj == ki)
        since = max(since, first - 1)
        cols = columns.get(ki, [])
        known = min((next((i for i, v in enumerate(col) if v.name not in fixed and level_of[v.name] > lv), len(col))
                     for col in cols), default=0)
        check = checked[lv] or last
        todo = tuple(o for o, at in enumerate(ready_at[ki]) if since < at <= lv) if check else ()
        since = lv if check else since
        out.append(_Level(ki, j, candidate.kernels[ki].ops[j], tuple(vs), first, last, check,
                          tuple(tuple(v.name for v in col) for col in cols), known, todo))
    return out


def _ordered(level: _Level, values: Mapping[str, int]) -> bool:
    """Do the assigned prefixes of the kernel's grid-dim columns leave them non-increasing?"""
    if not level.known:
        return True
    prev = None
    for col in level.order:
        cur = tuple(values[name] for name in col[: level.known])
        if prev is not None and cur > prev:
            return False
        prev = cur
    return True


def shares_loop(kernels: Sequence[object]) -> list[bool]:
    """Per kernel: is it a custom kernel whose loop size another custom kernel uses too (as grid or
    loop size: a split graph's combine loop)?"""
    sizes = [{*k.grid, k.loop} if isinstance(k, CustomKernel) else set() for k in kernels]
    return [isinstance(k, CustomKernel) and isinstance(k.loop, str)
            and any(k.loop in other for j, other in enumerate(sizes) if j != i) for i, k in enumerate(kernels)]


class WalkTimeout(Exception):
    """The walk of one candidate passed its deadline (its mappings so far are dropped)."""


class Walker:
    """Depth first over the loads and saves in ``walk_order`` (module docstring)."""

    def __init__(self, candidate: SGraph, positions: Sequence[tuple[int, int]], groups: Sequence[Sequence[MapVar]],
                 plan: Plan, symmetry_breaking: bool, deadline: float | None = None) -> None:
        self.candidate, self.plan = candidate, plan
        self.deadline, self.expansions = deadline, 0  # ``time.time()``: one candidate can walk for minutes
        self.levels = _levels(candidate, positions, groups, symmetry_breaking)
        self.made: list[dict[int, BlockOp]] = [{} for _ in self.levels]  # per level: the op of each choice tried
        # the levels in kernel and op order: the mappings are listed in the order of their choices there
        self.by_op = sorted(range(len(self.levels)), key=lambda lv: (self.levels[lv].kernel, self.levels[lv].op))
        self.choice_of: list[dict[BlockOp, int]] = [{} for _ in self.levels]
        self.kernels = candidate.kernels
        self.ops = [list(k.ops) for k in self.kernels]
        self.values = dict(candidate.fixed)
        self.io = (candidate.template.inputs, candidate.template.outputs)
        # what kernels before k stored, and its number
        self.stored: list[tuple[int, Stored]] = [(0, ())] * (len(self.ops) + 1)
        # the long dims are part of a kernel's number: completions walked without them are not reused
        self.templates = [_number((self.io, k, candidate.fixed, candidate.long)) for k in candidate.kernels]
        long = dict(candidate.long)
        # per level: the dims of a program input its Load may not hold whole (``SGraph.long``)
        self.long = [long.get(lvl.placeholder.tensor, ()) if isinstance(lvl.placeholder, Load) else ()
                     for lvl in self.levels]
        # a loop size another kernel shares is never made idle, so the kernel's accumulators may not
        # sum identical iterations (``parallel.kept_form`` would drop the mapping)
        self.no_repeats = shares_loop(candidate.kernels)
        self.tails: dict[int, int] = {}  # a later kernel's first level -> ``_tail``
        self.typing: list[TypingState | None] = [None] * len(self.levels)  # per level, on the current path
        self.shapes = {t.name: t.shape for t in candidate.template.inputs}
        self.outputs = frozenset(t.name for t in candidate.template.outputs)

    def run(self) -> tuple[list[KernelGraph], int]:
        graphs: list[KernelGraph] = []
        before = 0
        found = self.visit(0, ())
        if self.by_op != list(range(len(self.levels))):
            found = sorted(found, key=lambda c: tuple(self._choice(lv, c[0][lv]) for lv in self.by_op))
        for ops, n in found:
            kernels: list[CustomKernel] = []
            at = 0
            for k in self.kernels:
                body = list(k.ops)
                while at < len(self.levels) and self.levels[at].kernel == len(kernels):
                    body[self.levels[at].op] = ops[at]
                    at += 1
                kernels.append(replace(k, ops=tuple(body)))
            graphs.append(replace(self.candidate.template, kernels=tuple(kernels)))
            before += n
        return graphs, before

    def _choice(self, lv: int, op: BlockOp) -> int:
        """Which of level ``lv``'s choices ``op`` is."""
        table = self.choice_of[lv]
        if not table:
            level, choices = self.levels[lv], self.plan.levels[lv]
            fixed = dict(self.candidate.fixed)
            for ci, choice in enumerate(choices.choices):
                values = {**fixed, **dict(zip(choices.names, choice, strict=True))}
                table[_concrete_op(level.placeholder, level.variables, values)] = ci
        return table[op]

    def visit(self, lv: int, state: State) -> list[Completion]:
        """Every completion of the current prefix from level ``lv`` on."""
        if lv == len(self.levels):
            return [((), 1)]
        level = self.levels[lv]
        if lv != level.first or level.kernel == 0:
            return self.expand(lv, state)
        key = (self._tail(lv), self.stored[level.kernel][0], state)
        got = _LATER.get(key)
        return got if got is not None else remember(_LATER, LATER_LIMIT, key, self.expand(lv, state))

    def _tail(self, first: int) -> int:
        """The number of what the walk from level ``first`` (a later kernel's first) on depends on
        besides what earlier kernels stored and the open equalities: the later kernels, their levels
        (positions relative to ``first``) and how the equalities move across them."""
        n = self.tails.get(first)
        if n is None:
            k = self.levels[first].kernel
            levels = tuple(replace(lvl, first=lvl.first - first) for lvl in self.levels[first:])
            n = self.tails[first] = _number((tuple(self.templates[k:]), tuple(self.no_repeats[k:]), levels,
                                             self.plan.steps[first:]))
        return n

    def expand(self, lv: int, state: State) -> list[Completion]:
        self.expansions += 1
        if self.deadline is not None and time.time() > self.deadline:
            raise WalkTimeout(f"mapping walk past its deadline after {self.expansions} expansions")
        level, plan = self.levels[lv], self.plan
        out: list[Completion] = []
        choices = plan.levels[lv]
        for ci, new in successors(plan, lv, state):
            self.values.update(zip(choices.names, choices.choices[ci], strict=True))
            if not _ordered(level, self.values):
                continue
            if ci not in self.made[lv]:
                self.made[lv][ci] = _concrete_op(level.placeholder, level.variables, self.values)
            op = self.made[lv][ci]
            if self.long[lv] and isinstance(op, Load) and holds_long(op, self.long[lv]):
                continue  # cannot be generated at the program's shapes (``SGraph.long``)
            self.ops[level.kernel][level.op] = op
            if level.checked:
                if not self.typed(lv, level):
                    continue
            else:  # completes nothing that can be ill-typed: typed with the next checked level
                self.typing[lv] = self._typing_before(lv, level)
            n = orbit(level.order, self.values) if level.last and level.order else 1
            out.extend(((op, *rest), n * m) for rest, m in self.visit(lv + 1, new))
        self.ops[level.kernel][level.op] = level.placeholder  # unassigned levels keep their placeholders
        return out

    def typed(self, lv: int, level: _Level) -> bool:
        """Does the kernel of level ``lv`` keep a layout so far (given what earlier kernels stored)?"""
        k = level.kernel
        assigned = tuple(self.ops[k][self.levels[i].op] for i in range(level.first, lv + 1))
        key = (self.templates[k], assigned, self.stored[k][0], self.no_repeats[k])
        verdict = _VERDICTS.get(key)
        if verdict is None:
            verdict = remember(_VERDICTS, VERDICTS_LIMIT, key, self.check(lv, level))
        if verdict[0]:
            self.typing[lv] = verdict[3]
            if level.last:
                self.stored[k + 1] = verdict[1], verdict[2]
        return verdict[0]

    def _typing_before(self, lv: int, level: _Level) -> TypingState:
        """The kernel's typing before level ``lv``: the previous level's, or nothing typed and what
        earlier kernels stored at the kernel's first level."""
        if lv > level.first:
            state = self.typing[lv - 1]
            assert state is not None
            return state
        return (None,) * len(self.ops[level.kernel]), self.stored[level.kernel][1]

    def check(self, lv: int, level: _Level) -> Verdict:
        """Type what level ``lv`` completes, from the typing the previous level left
        (``layout.type_ops`` on the ops it makes ready: the verdict of checking the kernel's whole prefix
        again)."""
        k = level.kernel
        before = self._typing_before(lv, level)
        vals: list[Any] = list(before[0])
        stored: dict[str, Any] = dict(before[1])
        try:
            type_ops(self.kernels[k], self.ops[k], level.todo, self.shapes, self.outputs, stored, vals,
                     repeats=not self.no_repeats[k])
        except IllTyped:
            return False, 0, (), None
        items = tuple(sorted(stored.items()))
        return True, _number(items), items, (tuple(vals), items)


@functools.lru_cache(maxsize=4096)
def _plan(groups: tuple[tuple[MapVar, ...], ...], equalities: tuple[LinForm, ...],
          fixed: tuple[tuple[str, int], ...]) -> Plan | None:
    """``build_plan``, shared by candidates with the same loads, saves and equalities (variables are
    named by position, so algebraic variants of one structure often share all three: rmsnorm_mlp's
    16,054 candidates have 844 distinct plans)."""
    return build_plan(groups, equalities, dict(fixed))


def walk(candidate: SGraph, symmetry_breaking: bool, deadline: float | None = None) -> tuple[list[KernelGraph], int]:
    """Every layout-correct mapping of ``candidate`` and how many assignments they stand for
    (``WalkTimeout`` past ``deadline``, a ``time.time()`` value)."""
    positions = walk_order(candidate)
    groups = tuple(tuple(g) for g in map_ops(candidate, positions))
    plan = _plan(groups, candidate.equalities, candidate.fixed)
    if plan is None or (plan.reach[0] is not None and () not in plan.reach[0]):
        return [], 0
    return Walker(candidate, positions, groups, plan, symmetry_breaking, deadline).run()
