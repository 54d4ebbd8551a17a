"""Canonical forms of kernel graphs: equal strings for graphs that differ only in op order, symbol
names, kernel names, intermediate tensor names and (optionally) the order of each kernel's grid dims.

The op order is the unique topological order in which the op keys ``(position of the newest operand,
kind, operands, parameters)`` strictly increase; the generator builds block graphs directly in that
order, so it never produces two orderings of one block graph (uniqueness: two such orders of one DAG
would have to place two ops available at the same step in both relative orders).
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import itertools
from collections.abc import Mapping, Sequence
from typing import assert_never

from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    Kernel,
    KernelGraph,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    Save,
    UnaryOp,
    op_args,
)
from prism.ops import COMMUTATIVE, scalar_to_json

KIND_RANK = {Load: 0, UnaryOp: 1, BinaryOp: 2, MatmulOp: 3, ReduceOp: 4, Accum: 5, Save: 6}
INTERMEDIATE = "~"  # what a save to an intermediate tensor sorts as (its name is given afterwards)

OpKey = tuple[int, int, tuple[int, ...], str]
# kernel orders tried at most: a chain of kernels has one, k independent kernels k! (docs/search-speed.md)
ORDERS_LIMIT = 5040


def sorted_args(op: BlockOp) -> tuple[int, ...]:
    args = op_args(op)
    if isinstance(op, BinaryOp) and op.fn in COMMUTATIVE:
        return tuple(sorted(args))
    return args


def op_params(op: BlockOp, tensor_name: str = "", maps: bool = False) -> str:
    match op:
        case Load(tensor, imap, fmap):
            return f"{tensor_name or tensor}" + (f"|{list(imap)}|{fmap}" if maps else "")
        case UnaryOp(fn, _, scalar):
            return f"{fn.value}|{scalar_to_json(scalar)}"
        case BinaryOp(fn):
            return fn.value
        case MatmulOp():
            return ""
        case ReduceOp(fn, _, dim):
            return f"{fn.value}|{dim}"
        case Accum(_, rd, fn, rescale):
            return f"{rd}" if op.plain else f"{rd}|{fn.value}|{rescale is not None}"
        case Save(_, tensor, omap):
            return f"{tensor_name or tensor}" + (f"|{list(omap)}" if maps else "")
    assert_never(op)


def op_key(op: BlockOp, pos: Sequence[int] | Mapping[int, int], tensor_name: str = "", maps: bool = False) -> OpKey:
    """The ordering key of an op whose operands sit at positions ``pos[a]``."""
    args = tuple(pos[a] for a in sorted_args(op))
    if isinstance(op, BinaryOp) and op.fn in COMMUTATIVE:
        args = tuple(sorted(args))
    return (max(args, default=-1), KIND_RANK[type(op)], args, op_params(op, tensor_name, maps))


def canonical_order(ops: Sequence[BlockOp], names: Mapping[str, str], maps: bool) -> list[int]:
    """Indices of ``ops`` in canonical order (``names`` gives loads' tensors their canonical names):
    at each step the available op (every operand placed) of least ``(op_key, index)``. An op's key
    depends only on its operands' positions, fixed once it is available, so each key is computed
    once and the available ops wait in a heap."""
    def tname(op: BlockOp) -> str:
        if isinstance(op, Load):
            return names.get(op.tensor, op.tensor)
        if isinstance(op, Save):
            return names.get(op.tensor, INTERMEDIATE)
        return ""

    args = [set(op_args(op)) for op in ops]
    users: list[list[int]] = [[] for _ in ops]
    for j, a in enumerate(args):
        for x in a:
            users[x].append(j)
    waiting = [len(a) for a in args]
    pos: dict[int, int] = {}
    heap = [(op_key(op, pos, tname(op), maps), j) for j, op in enumerate(ops) if not waiting[j]]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, best = heapq.heappop(heap)
        pos[best] = len(order)
        order.append(best)
        for u in users[best]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(heap, (op_key(ops[u], pos, tname(ops[u]), maps), u))
    if len(order) != len(ops):
        raise ValueError(f"ops {sorted(set(range(len(ops))) - set(order))} depend on a cycle")
    return order


@functools.lru_cache(maxsize=1 << 16)
def _order(ops: tuple[BlockOp, ...], names: tuple[tuple[str, str], ...], maps: bool) -> tuple[int, ...]:
    """``canonical_order``, once for every grid permutation ``_least`` tries (it does not depend on it)."""
    return tuple(canonical_order(ops, dict(names), maps))


def _kernel_orders(kg: KernelGraph) -> list[tuple[Kernel, ...]]:
    """Every order of the kernels that respects tensor flow (depth first, in the kernels' order: the
    orders a filter of all permutations would keep, without walking them), at most ``ORDERS_LIMIT``
    of them (beyond, the form depends on the order the kernels are given in)."""
    inputs = {t.name for t in kg.inputs}
    needs = [_reads(k) - inputs for k in kg.kernels]
    writes = [_writes(k) for k in kg.kernels]
    out: list[tuple[Kernel, ...]] = []

    def extend(order: list[int], seen: frozenset[str]) -> None:
        if len(out) >= ORDERS_LIMIT:
            return
        if len(order) == len(kg.kernels):
            out.append(tuple(kg.kernels[i] for i in order))
            return
        for i in range(len(kg.kernels)):
            if i not in order and needs[i] <= seen:
                extend([*order, i], seen | writes[i])

    extend([], frozenset())
    return out or [tuple(kg.kernels)]


def _writes(k: Kernel) -> set[str]:
    return {s.tensor for s in k.saves} if isinstance(k, CustomKernel) else {k.output}


def _reads(k: Kernel) -> set[str]:
    return {ld.tensor for ld in k.loads} if isinstance(k, CustomKernel) else set(k.inputs)


# A kernel's body in canonical order: its op texts, each a str or, for a load or save whose maps are
# written, (text before the map, the map, text after it): the maps alone follow the grid permutation.
Piece = str | tuple[str, tuple[int | None, ...], str]


def _fresh(named: dict[str, str]) -> str:
    """The name of the next intermediate tensor: ``~t<n>`` after the n named so far ("~" is in no
    identifier: never a program's tensor name)."""
    return f"~t{sum(v.startswith('~t') for v in named.values())}"


@functools.lru_cache(maxsize=1 << 16)
def _body(ops: tuple[BlockOp, ...], names: tuple[tuple[str, str], ...], maps: bool
          ) -> tuple[tuple[Piece, ...], tuple[tuple[str, str], ...]]:
    """The pieces of a kernel's body given the tensor names so far (``names``, sorted items), and the
    names after it (its saves to intermediates named ``~t<n>`` in order): the same for every grid
    permutation ``_least`` tries, so computed once."""
    named = dict(names)
    order = _order(ops, names, maps)
    pos = {j: i for i, j in enumerate(order)}
    body: list[Piece] = []
    for j in order:
        op = ops[j]
        args = tuple(pos[a] for a in sorted_args(op))
        if isinstance(op, BinaryOp) and op.fn in COMMUTATIVE:
            args = tuple(sorted(args))
        match op:
            case Load(tensor, imap, fmap):
                name = named.get(tensor, tensor)
                body.append((f"L({name}|", imap, f"|{fmap})") if maps else f"L({name})")
            case Save(_, tensor, omap):
                if tensor not in named:
                    named[tensor] = _fresh(named)
                body.append((f"S({args[0]},{named[tensor]}|", omap, ")") if maps else f"S({args[0]},{named[tensor]})")
            case _:
                body.append(f"{type(op).__name__}({','.join(map(str, args))};{op_params(op)})")
    return tuple(body), tuple(sorted(named.items()))


def _part(k: Kernel, perm: tuple[int, ...], names: tuple[tuple[str, str], ...], syms: dict[str, str],
          maps: bool) -> tuple[str, tuple[tuple[str, str], ...]]:
    """One kernel's text with its grid dims in order ``perm`` given the tensor names so far, and the
    names after it; ``syms`` (size symbol -> its canonical name) grows in place."""
    def sym(s: int | str) -> str:
        if isinstance(s, int):
            return str(s)
        if s not in syms:
            syms[s] = f"s{len(syms)}"
        return syms[s]

    if isinstance(k, PredefinedKernel):
        named = dict(names)
        ins = ",".join(named.get(t, t) for t in k.inputs)
        if k.output not in named:
            named[k.output] = _fresh(named)
            names = tuple(sorted(named.items()))
        fn = k.fn and k.fn.value
        return f"P[{k.kind.value}|{fn}|{k.dim}|{scalar_to_json(k.scalar)}|{ins}->{named[k.output]}]", names
    assert isinstance(k, CustomKernel), k
    head = f"K[{','.join(sym(k.grid[p]) for p in perm)};{sym(k.loop)}]"
    pieces, names = _body(k.ops, names, maps)
    body = [pc if isinstance(pc, str) else f"{pc[0]}{[pc[1][p] for p in perm]}{pc[2]}" for pc in pieces]
    return head + "{" + ";".join(body) + "}", names


def _undominated(texts: list[tuple[str, dict[str, str]]]) -> list[tuple[str, dict[str, str]]]:
    """The prefixes (with their symbol names) that some completion could still make least: a prefix is
    out once a smaller one differs from it before its own end (every completion of that one is then
    smaller); equal prefixes, and those another is a prefix of, stay."""
    kept: list[tuple[str, dict[str, str]]] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for text, syms in sorted(texts, key=lambda ts: ts[0]):
        key = (text, tuple(sorted(syms.items())))
        if key not in seen and all(text.startswith(t) for t, _ in kept):
            seen.add(key)
            kept.append((text, syms))
    return kept


def _least(kernels: Sequence[Kernel], io: set[str], maps: bool, grid_perms: bool) -> str:
    """The least text of the kernels in this order over every order of each kernel's grid dims, kernel
    by kernel: only the prefixes ``_undominated`` keeps are extended (the size symbols' names depend
    on the dims' order, so a choice made for one kernel can change the text of the next)."""
    names: tuple[tuple[str, str], ...] = tuple(sorted((n, n) for n in io))
    states: list[tuple[str, dict[str, str]]] = [("", {})]
    for k in kernels:
        n = len(k.grid) if isinstance(k, CustomKernel) else 0
        perms = list(itertools.permutations(range(n))) if grid_perms else [tuple(range(n))]
        grown: list[tuple[str, dict[str, str]]] = []
        after = names
        for prefix, syms in states:
            for perm in perms:
                mine = dict(syms)
                part, after = _part(k, perm, names, mine, maps)
                grown.append((f"{prefix} {part}" if prefix else part, mine))
        names = after
        states = _undominated(grown)
    return states[0][0]


def canonical_form(kg: KernelGraph, *, maps: bool = True, grid_perms: bool = True) -> str:
    """The canonical text of ``kg`` (with or without its maps; modulo grid-dim order if asked)."""
    io = {t.name for t in kg.inputs} | {t.name for t in kg.outputs}
    return min(_least(kernels, io, maps, grid_perms) for kernels in _kernel_orders(kg))


def canonical_key(kg: KernelGraph, *, maps: bool = True, grid_perms: bool = True) -> str:
    """A short hash of :func:`canonical_form`: equal for equivalent orderings/namings of one graph."""
    return hashlib.sha256(canonical_form(kg, maps=maps, grid_perms=grid_perms).encode()).hexdigest()[:20]


def structure_key(kg: KernelGraph) -> str:
    """The key of the graph's structure: its canonical form with every map erased."""
    return canonical_key(kg, maps=False)
