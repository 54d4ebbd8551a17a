"""Static ranking of algebraic variants: a block graph that does more work than another computing
the same values from the same loads is dropped before it is symbolized, mapped and verified.

The generator builds every block graph within the op bound that computes the kernel's saved values,
so one kernel comes in many algebraic variants: a split softmax's combine divides two partial sums
in one op, or squares one and multiplies and divides in three (``a·b / b²``); a norm's ``1/d``
scale sits before or after its sum. Variants of one kernel compute the same values (the generator's
values are canonical expressions), so a variant whose every op is matched by an op of another variant
that costs at least as much on every input size is never faster and never needed.

Costs are compared per op, without sizes: an op costs at most another when both are of one cost
class (or the first's class is cheaper), both run in the same phase (or the first after the loop,
once, the second inside it, per iteration), and its dim labels are a sub-multiset of the other's
(extent-1 dims dropped): on every assignment of sizes to labels, and under any grid and loop split
of those labels, it touches no more elements. A kernel *dominates* another when its ops map one to
one onto the other's ops that cost at least as much. Among kernels that dominate each other (equal
cost: ``x·x`` against ``square(x)``) the first in a fixed order stays.

This is EqiForge's static ranking reduced to what holds on every size; it never drops a kernel
that could be the fastest on some input, up to the per-op cost model: same-class ops are taken to
cost the same per element (``mul`` as ``div``; ``exp`` as ``rsqrt``).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.ir import Accum, BinaryOp, MatmulOp, ReduceOp, UnaryOp

from .dimmatch import ONE
from .symbolic import ComputeOp


class Cost(enum.IntEnum):
    """Per-element cost classes; a lower class costs no more than a higher one of its family."""

    ARITH = 0  # add, sub, mul, div, square, neg, scale, add_scalar
    TRANSCENDENTAL = 1  # exp, rsqrt, sqrt, silu, gelu
    REDUCE = 10  # the skeleton: classes from here on must match exactly
    ACCUM = 11
    MATMUL = 20
    LOAD = 30


@dataclass(frozen=True)
class Item:
    """One op's cost: its class, its phase (``"loop"`` or ``"post"``), the dims it touches, and what
    else tells skeleton ops apart (the tensor a load reads, a reduction's function, whether an
    accumulator rescales)."""

    cost: Cost
    phase: str
    dims: tuple[str, ...]
    what: str | None = None

    @property
    def skeleton(self) -> bool:
        return self.cost >= Cost.REDUCE

    def at_most(self, other: Item) -> bool:
        if self.cost != other.cost and not (self.cost == Cost.ARITH and other.cost == Cost.TRANSCENDENTAL):
            return False
        if self.what != other.what:
            return False
        if self.phase != other.phase and not (self.phase == "post" and other.phase == "loop"):
            return False
        mine, theirs = Counter(self.dims), Counter(other.dims)
        return all(theirs[d] >= k for d, k in mine.items())


def op_cost(op: ComputeOp) -> Cost:
    match op:
        case UnaryOp(fn):
            return Cost.TRANSCENDENTAL if fn.transcendental else Cost.ARITH
        case BinaryOp():
            return Cost.ARITH
        case MatmulOp():
            return Cost.MATMUL
        case ReduceOp():
            return Cost.REDUCE
        case Accum():
            return Cost.ACCUM
    assert_never(op)


def dims(labels: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted(d for d in labels if d != ONE))


def dominates(a: Sequence[Item], b: Sequence[Item]) -> bool:
    """Do ``a`` and ``b`` have the same skeleton (loads, matmuls, reductions and accumulators, equal
    item for item), and do ``a``'s elementwise ops map one to one onto ``b``'s elementwise ops that
    cost at least as much?"""
    return _skeleton(a) == _skeleton(b) and _matched(_elementwise(a), _elementwise(b), Item.at_most)


def _matched[I](a: Sequence[I], b: Sequence[I], at_most: Callable[[I, I], bool]) -> bool:
    """A one-to-one map of ``a`` into ``b`` with each item at most its image."""
    return len(a) <= len(b) and _matching([[j for j, y in enumerate(b) if at_most(x, y)] for x in a])


def _matching(fits: list[list[int]]) -> bool:
    """Can every left node ``i`` get its own right node among ``fits[i]`` (augmenting paths)?"""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or place(owner[j], seen):
                owner[j] = i
                return True
        return False

    return all(place(i, set()) for i in sorted(range(len(fits)), key=lambda i: len(fits[i])))


def _skeleton(items: Sequence[Item]) -> tuple[Item, ...]:
    return tuple(sorted((x for x in items if x.skeleton), key=repr))


def _elementwise(items: Sequence[Item]) -> tuple[Item, ...]:
    return tuple(sorted((x for x in items if not x.skeleton), key=repr))


def undominated[T](kernels: Sequence[T], items: Callable[[T], list[Item]],
                   tick: Callable[[], None] = lambda: None) -> list[T]:
    """The kernels no other kernel of the list dominates; of kernels that dominate each other, the
    first. Order is kept. Kernels are compared only within one skeleton, and once per distinct
    multiset of elementwise items (two multisets that dominate each other are equal: ``at_most``
    both ways means the same item); ``tick`` is called once per comparison round (the generator
    checks its deadline there)."""
    first: dict[tuple[tuple[Item, ...], tuple[Item, ...]], int] = {}
    for i, k in enumerate(kernels):
        its = items(k)
        first.setdefault((_skeleton(its), _elementwise(its)), i)
    by_skeleton: dict[tuple[Item, ...], list[tuple[tuple[Item, ...], int]]] = {}
    for (skel, ew), i in first.items():
        by_skeleton.setdefault(skel, []).append((ew, i))
    keep: set[int] = set()
    for bags in by_skeleton.values():
        keep.update(_least(bags, tick))
    return [k for i, k in enumerate(kernels) if i in keep]


def _least(bags: list[tuple[tuple[Item, ...], int]], tick: Callable[[], None]) -> list[int]:
    """The kernels (indices) of the distinct elementwise multisets no other one maps into."""
    ids: dict[Item, int] = {}
    coded = [[ids.setdefault(x, len(ids)) for x in ew] for ew, _ in bags]
    items = list(ids)
    le = [[x.at_most(y) for y in items] for x in items]

    def at_most(x: int, y: int) -> bool:
        return le[x][y]

    kept = []
    for r, (_, i) in enumerate(bags):
        tick()
        if not any(q != r and _matched(coded[q], coded[r], at_most) for q in range(len(bags))):
            kept.append(i)
    return kept
