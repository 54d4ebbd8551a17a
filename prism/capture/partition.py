"""The largest supported connected subgraphs of a captured program (the rest stays with PyTorch).

Nodes are visited in topological order; a supported node joins the regions of its supported
producers when the union stays *convex* (no path leaves the region and comes back: the region must
run as one call between PyTorch ops), otherwise the largest one it can join, otherwise a new region.
``Support.ALONE`` nodes are regions of their own. Regions with fewer than ``min_ops`` arithmetic
nodes are dropped (one op gains nothing from fusion; PyTorch runs it as fast).

A region that holds two blocks of a model (a decoder layer's MLP and the next layer's normed
projections: nothing PyTorch-only lies between them) is split where only one value passes from the
first block to the second and that value is a region output anyway (the residual stream, which later
PyTorch ops read), each side holding a matmul (``split_blocks``). Each block is then run in Prism or
given back to PyTorch on its own: as one region, the two won or lost together. Pure Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prism.capture.ir import Support

MIN_OPS = 2


@dataclass(frozen=True)
class PNode:
    """What partitioning needs of a node: its producers, how it is supported, whether it computes."""

    index: int
    args: tuple[int, ...]
    support: Support
    computes: bool = True
    matmul: bool = False


@dataclass(frozen=True)
class Region:
    nodes: tuple[int, ...]  # in topological order
    alone: bool


def convex(members: set[int], args: Sequence[tuple[int, ...]]) -> bool:
    """No node outside ``members`` both depends on a member and is depended on by one."""
    low = min(members)
    seen: set[int] = set()
    stack = [a for m in members for a in args[m] if a not in members]
    while stack:
        n = stack.pop()
        if n in seen or n < low:  # nodes before the first member cannot depend on it
            continue
        seen.add(n)
        for a in args[n]:
            if a in members:
                return False
            stack.append(a)
    return True


def partition(nodes: Sequence[PNode], min_ops: int = MIN_OPS, *, split: bool = True) -> list[Region]:
    """Convex regions of supported nodes; ``nodes[i].index == i`` and args point backwards; ``split``:
    regions of several blocks split into blocks (``split_blocks``)."""
    regions = _regions(nodes, min_ops)
    if not split:
        return regions
    out: list[Region] = []
    for r in regions:
        out += [r] if r.alone else [Region(b, False) for b in split_blocks(nodes, r.nodes, min_ops)]
    return out


def _regions(nodes: Sequence[PNode], min_ops: int) -> list[Region]:
    args = [n.args for n in nodes]
    regions: list[set[int]] = []
    alone: list[bool] = []
    region_of: dict[int, int] = {}
    for i, n in enumerate(nodes):
        assert n.index == i and all(a < i for a in n.args), n
        if n.support is Support.NONE:
            continue
        near = sorted({region_of[a] for a in n.args if a in region_of and not alone[region_of[a]]},
                      key=lambda r: -len(regions[r]))
        joined = _join(n.index, near, regions, args) if n.support is Support.FUSE else []
        if not joined:
            region_of[n.index] = len(regions)
            regions.append({n.index})
            alone.append(n.support is Support.ALONE)
            continue
        target = joined[0]
        for r in joined[1:]:
            for m in regions[r]:
                region_of[m] = target
            regions[target] |= regions[r]
            regions[r] = set()
        regions[target].add(n.index)
        region_of[n.index] = target
    return [Region(tuple(sorted(members)), single) for members, single in zip(regions, alone, strict=True)
            if members and (single or sum(nodes[m].computes for m in members) >= min_ops)]


def _join(node: int, near: list[int], regions: list[set[int]], args: Sequence[tuple[int, ...]]) -> list[int]:
    """The regions ``node`` joins: every neighbouring one when their union stays convex, else the
    largest one that does, else none."""
    if near and convex(set().union(*(regions[r] for r in near)) | {node}, args):
        return near
    return next(([r] for r in near if convex(regions[r] | {node}, args)), [])


def split_blocks(nodes: Sequence[PNode], members: tuple[int, ...], min_ops: int = MIN_OPS) -> list[tuple[int, ...]]:
    """``members`` (a convex region, in topological order) cut into blocks: at the first position
    where exactly one value of the prefix is read by the rest of the region, that value is also read
    outside the region, and both sides hold a matmul and ``min_ops`` arithmetic nodes; the rest is cut
    again. Both sides of such a cut stay convex (a path between them through outside nodes would have
    left the region and come back)."""
    readers: dict[int, list[int]] = {}
    for n in nodes:
        for a in n.args:
            readers.setdefault(a, []).append(n.index)
    return _cut(nodes, readers, members, min_ops)


def _cut(nodes: Sequence[PNode], readers: dict[int, list[int]], members: tuple[int, ...],
         min_ops: int) -> list[tuple[int, ...]]:
    inside = set(members)
    for p in range(1, len(members)):
        head, tail = members[:p], members[p:]
        after = set(tail)
        crossing = {m for m in head if any(r in after for r in readers.get(m, ()))}
        if len(crossing) != 1 or not any(r not in inside for r in readers.get(next(iter(crossing)), ())):
            continue
        if all(_block(nodes, side, min_ops) for side in (head, tail)):
            return [head, *_cut(nodes, readers, tail, min_ops)]
    return [members]


def _block(nodes: Sequence[PNode], side: tuple[int, ...], min_ops: int) -> bool:
    return any(nodes[m].matmul for m in side) and sum(nodes[m].computes for m in side) >= min_ops
