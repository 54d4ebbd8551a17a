"""Mapping assignments enumerated directly, without a solver (docs/search-speed.md).

The constraints of mapping instantiation (``mapping``) are of two kinds. Those of one op (a parallel
dim splits at most one data dim of a tensor, exactly one for a saver's grid dims; a data dim is
split by at most one grid dim) allow few assignments of that op's variables: they are listed once
per op (``Level.choices``). The equalities of dimension matching are linear forms over variables
of several ops; taken op by op in kernel order, an equality is *open* at a cut between two ops
when it has variables on both sides. The states of the open equalities (their partial sums) that
the ops after a cut can still bring to zero are computed backwards once (``Plan.reach``), so the
depth-first walk extends a prefix only when some full assignment of the remaining ops satisfies
every equality: the exact pruning a solver's projection under assumptions gives, at the cost of a
set lookup. A set that would grow past ``REACH_LIMIT`` states is not built; the walk then checks
each equality when its last op is assigned, which is exact for the leaves and prunes less.

Symmetry breaking (grid-dim columns of variables lexicographically non-increasing) is checked on the
prefix of each column that is assigned: a prefix that already orders two columns the wrong way
cannot be completed.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from prism.memo import remember

from .dimmatch import LinForm
from .sgraph import LOOP, MapVar

REACH_LIMIT = 200_000  # states (times choices) of the backward pass at one cut before it gives up
# A cut without a reach set gets one on demand (``_on_demand``) once the walks of the plan's candidates
# have evaluated ``DEMAND_AFTER`` choices there, if it costs at most ``DEMAND_LIMIT`` states times choices:
# then it is cheaper than the walk it prunes (a rank-3 softmax's split candidates: 2.1x faster walks).
DEMAND_AFTER = 200_000
DEMAND_LIMIT = 1_000_000

State = tuple[int, ...]


@dataclass(frozen=True)
class Level:
    """One load or save: its free variables and the assignments its own rules allow."""

    names: tuple[str, ...]
    choices: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Step:
    """How the open equalities' state moves across one level.

    Equalities are numbered by ``used`` position here. ``carry``: (position before, position after,
    equality) of one that stays open; ``close``: (position before, equality) of one whose last
    variable is here (it must reach 0); ``start``: (position after, equality, constant) of one whose
    first variable is here."""

    carry: tuple[tuple[int, int, int], ...]
    close: tuple[tuple[int, int], ...]
    start: tuple[tuple[int, int, int], ...]
    width: int  # open equalities after the level
    contrib: tuple[tuple[int, ...], ...]  # per choice: each used equality's contribution


Successors = tuple[tuple[int, State], ...]  # (choice, state after it) of each choice that can finish
SUCCESSORS_LIMIT = 200_000  # (level, state) entries one plan remembers before it starts afresh


@dataclass(frozen=True)
class Plan:
    levels: tuple[Level, ...]
    steps: tuple[Step, ...]
    reach: tuple[frozenset[State] | None, ...]  # per cut 0..len(levels); None: not built
    # (level, state before it) -> ``successors``, remembered as the walks of the plan's candidates ask
    memo: dict[tuple[int, State], Successors] = field(default_factory=dict, compare=False, repr=False)
    # cuts without a reach set: choices evaluated there so far, and the sets built on demand
    work: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    demanded: dict[int, frozenset[State] | None] = field(default_factory=dict, compare=False, repr=False)


def _op_choices(vs: Sequence[MapVar], fixed: Mapping[str, int]) -> tuple[tuple[str, ...], list[tuple[int, ...]]]:
    """The free variables of one op and their assignments under the op's own rules and ``fixed``."""
    pars = tuple(sorted({v.par for v in vs}))
    dims = tuple(sorted({v.dim for v in vs}))
    index = {(v.dim, v.par): v.name for v in vs}
    assert len(index) == len(pars) * len(dims) == len(vs), "an op's variables cover every (dim, par) once"
    cells = tuple((v.dim, v.par) for v in vs)
    pinned = tuple(fixed.get(v.name, -1) for v in vs)
    free = tuple(v.name for v in vs if v.name not in fixed)
    return free, _cell_choices(vs[0].kind == "save", pars, dims, cells, pinned)


@functools.cache
def _cell_choices(save: bool, pars: tuple[str, ...], dims: tuple[int, ...], cells: tuple[tuple[int, str], ...],
                  pinned: tuple[int, ...]) -> list[tuple[int, ...]]:
    """``_op_choices`` by the op's shape (same for every op of that shape): values of the unpinned cells."""
    out: set[tuple[int, ...]] = set()
    for pick in itertools.product(*[dims if save else (None, *dims) for _ in pars]):
        grid = [a for p, a in zip(pars, pick, strict=True) if p != LOOP and a is not None]
        if len(grid) != len(set(grid)):
            continue
        on = {(a, p) for p, a in zip(pars, pick, strict=True) if a is not None}
        bits = [int(c in on) for c in cells]
        if all(pin in (-1, b) for pin, b in zip(pinned, bits, strict=True)):
            out.add(tuple(b for pin, b in zip(pinned, bits, strict=True) if pin == -1))
    return sorted(out, reverse=True)


def _equalities(eqs: Sequence[LinForm], fixed: Mapping[str, int],
                where: Mapping[str, tuple[int, int]]) -> list[tuple[int, dict[int, list[tuple[int, int]]]]]:
    """Each equality as its constant and, per level, its (index in level, coefficient) terms."""
    out = []
    for f in eqs:
        const = 0
        terms: dict[int, list[tuple[int, int]]] = {}
        for v, c in f:
            if v == "":
                const += c
            elif v in fixed:
                const += c * fixed[v]
            else:
                lv, i = where[v]
                terms.setdefault(lv, []).append((i, c))
        out.append((const, terms))
    return out


def build_plan(groups: Sequence[Sequence[MapVar]], eqs: Sequence[LinForm], fixed: Mapping[str, int]) -> Plan | None:
    """The walk's tables for ops ``groups`` (in order); None when some equality can never hold."""
    levels = []
    where: dict[str, tuple[int, int]] = {}
    for lv, vs in enumerate(groups):
        names, choices = _op_choices(vs, fixed) if vs else ((), [()])
        levels.append(Level(names, tuple(choices)))
        where.update({n: (lv, i) for i, n in enumerate(names)})
    equalities = _equalities(eqs, fixed, where)
    if any(not terms and const for const, terms in equalities):
        return None
    equalities = [(c, t) for c, t in equalities if t]
    levels = _local_filter(levels, equalities)
    spans = [(min(t), max(t)) for _, t in equalities]
    opened = [[e for e, (lo, hi) in enumerate(spans) if lo < cut <= hi] for cut in range(len(levels) + 1)]
    steps = tuple(_step(lv, levels[lv], equalities, spans, opened) for lv in range(len(levels)))
    return Plan(tuple(levels), steps, _reach(steps, len(levels)))


def _local_filter(levels: list[Level], equalities: Sequence[tuple[int, dict[int, list[tuple[int, int]]]]]) -> list[Level]:
    """Drop each level's choices that break an equality whose variables are all at that level."""
    out = []
    for lv, level in enumerate(levels):
        local = [(c, t[lv]) for c, t in equalities if set(t) == {lv}]
        keep = tuple(x for x in level.choices if all(c + sum(k * x[i] for i, k in ts) == 0 for c, ts in local))
        out.append(Level(level.names, keep))
    return out


def _step(lv: int, level: Level, equalities: Sequence[tuple[int, dict[int, list[tuple[int, int]]]]],
          spans: Sequence[tuple[int, int]], opened: Sequence[Sequence[int]]) -> Step:
    before = {e: i for i, e in enumerate(opened[lv])}
    after = {e: i for i, e in enumerate(opened[lv + 1])}
    starting = [e for e, (lo, hi) in enumerate(spans) if lo == lv < hi]
    used = {e: u for u, e in enumerate([*opened[lv], *starting])}
    carry = tuple((before[e], after[e], used[e]) for e in opened[lv] if e in after)
    close = tuple((before[e], used[e]) for e in opened[lv] if e not in after)
    start = tuple((after[e], used[e], equalities[e][0]) for e in starting)
    terms = tuple(tuple(equalities[e][1].get(lv, [])) for e in used)
    return Step(carry, close, start, len(after), _contrib(level.choices, terms))


@functools.lru_cache(maxsize=16_384)
def _contrib(choices: tuple[tuple[int, ...], ...], terms: tuple[tuple[tuple[int, int], ...], ...]
             ) -> tuple[tuple[int, ...], ...]:
    """Per choice, each equality's contribution (its terms at the level: (index in level, coefficient));
    the same for the many plans whose level and equalities look alike."""
    return tuple(tuple(sum(k * x[i] for i, k in ts) for ts in terms) for x in choices)


def advance(step: Step, state: State, choice: int) -> State | None:
    """The open equalities' state after one level, or None when an equality closes off zero."""
    k = step.contrib[choice]
    for p, u in step.close:
        if state[p] + k[u]:
            return None
    new = [0] * step.width
    for p, q, u in step.carry:
        new[q] = state[p] + k[u]
    for q, u, c in step.start:
        new[q] = c + k[u]
    return tuple(new)


def successors(plan: Plan, lv: int, state: State) -> Successors:
    """The choices at level ``lv`` whose state after it, from ``state``, is one from which the later
    levels can bring every equality to 0 (or not ruled out, where no reach set was built), each with
    that state. Candidates of one plan meet the same states again and again: remembered."""
    got = plan.memo.get((lv, state))
    if got is None:
        step, nxt = plan.steps[lv], plan.reach[lv + 1]
        if nxt is None:
            nxt = _on_demand(plan, lv + 1, len(step.contrib))
        got = remember(plan.memo, SUCCESSORS_LIMIT, (lv, state), tuple(
            (ci, new) for ci in range(len(step.contrib))
            if (new := advance(step, state, ci)) is not None and (nxt is None or new in nxt)))
    return got


def _on_demand(plan: Plan, cut: int, choices: int) -> frozenset[State] | None:
    """The reach set of ``cut``, built once the walks have evaluated ``DEMAND_AFTER`` choices there
    (None before, or when it would cost more than ``DEMAND_LIMIT``). An exact filter like the eager
    ones: the walk keeps the same mappings, in the same order, only sooner."""
    if cut in plan.demanded:
        return plan.demanded[cut]
    plan.work[cut] = plan.work.get(cut, 0) + choices
    if plan.work[cut] < DEMAND_AFTER:
        return None
    got = plan.demanded[cut] = _reach_capped(tuple(plan.steps[cut:]), DEMAND_LIMIT)
    if got is not None:
        plan.memo.clear()  # successors remembered without this filter
    return got


@functools.lru_cache(maxsize=256)
def _reach_capped(steps: tuple[Step, ...], limit: int) -> frozenset[State] | None:
    """``_reach_from`` with a larger ``limit`` (its own sets where they exist)."""
    if not steps:
        return frozenset({()})
    later = _reach_from(steps[1:])
    if later is None:
        later = _reach_capped(steps[1:], limit)
    return _preimage_set(steps[0], later, limit)


def _preimage_set(step: Step, later: frozenset[State] | None, limit: int) -> frozenset[State] | None:
    """The states before ``step`` that lead into ``later``, unless that costs more than ``limit``."""
    if later is None or len(later) * len(step.contrib) > limit:
        return None
    return _preimages(step, later)


def _reach(steps: Sequence[Step], n: int) -> tuple[frozenset[State] | None, ...]:
    """Per cut, the states of its open equalities from which the later levels can reach all zeros."""
    return tuple(_reach_from(tuple(steps[lv:])) for lv in range(n + 1))


@functools.lru_cache(maxsize=2048)
def _reach_from(steps: tuple[Step, ...]) -> frozenset[State] | None:
    """``_reach`` at the cut before ``steps``; plans whose last levels move alike (a later kernel
    shared by several first kernels) share it."""
    if not steps:
        return frozenset({()})
    return _preimage_set(steps[0], _reach_from(steps[1:]), REACH_LIMIT)


def _preimages(step: Step, later: frozenset[State]) -> frozenset[State]:
    """The states before ``step`` from which some choice leads into ``later``: per distinct contribution
    of a choice, the later states whose starting equalities it meets, moved back across the step (an
    open equality's partial sum less the contribution, a closing one's the contribution negated), in
    numpy arrays: the mapping walk's most-called inner loop before (docs/search-speed.md, "Idle loops
    typed at one iteration in the walk", its last paragraph)."""
    if not later:
        return frozenset()
    after = np.array(list(later), dtype=np.int64).reshape(len(later), step.width)
    starts = [q for q, _, _ in step.start]
    carry_to = [p for p, _, _ in step.carry]
    carry_from = [q for _, q, _ in step.carry]
    close_at = [p for p, _ in step.close]
    blocks = []
    for k in set(step.contrib):
        target = np.array([c + k[u] for _, u, c in step.start], dtype=np.int64)
        rows = after[(after[:, starts] == target).all(axis=1)] if starts else after
        if not len(rows):
            continue
        before = np.empty((len(rows), len(carry_to) + len(close_at)), dtype=np.int64)
        before[:, carry_to] = rows[:, carry_from] - np.array([k[u] for _, _, u in step.carry], dtype=np.int64)
        before[:, close_at] = -np.array([k[u] for _, u in step.close], dtype=np.int64)
        blocks.append(before)
    return frozenset(map(tuple, np.concatenate(blocks).tolist())) if blocks else frozenset()
