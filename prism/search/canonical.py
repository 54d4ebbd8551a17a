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
    """``canonical_order``, once for every grid permutation ``_render`` tries (it does not depend on it)."""
    return tuple(canonical_order(ops, dict(names), maps))


def _kernel_orders(kg: KernelGraph) -> list[tuple[Kernel, ...]]:
    """Every order of the kernels that respects tensor flow."""
    writes = {k.name: _writes(k) for k in kg.kernels}
    reads = {k.name: _reads(k) for k in kg.kernels}
    out = []
    for perm in itertools.permutations(kg.kernels):
        seen: set[str] = set()
        ok = True
        for k in perm:
            needs = reads[k.name] - {t.name for t in kg.inputs}
            if not needs <= seen:
                ok = False
                break
            seen |= writes[k.name]
        if ok:
            out.append(perm)
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
    permutation ``_render`` tries, so computed once."""
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


def _render(kernels: Sequence[Kernel], perms: Sequence[tuple[int, ...]], io: set[str], maps: bool) -> str:
    names: tuple[tuple[str, str], ...] = tuple(sorted((n, n) for n in io))
    syms: dict[str, str] = {}

    def sym(s: int | str) -> str:
        if isinstance(s, int):
            return str(s)
        if s not in syms:
            syms[s] = f"s{len(syms)}"
        return syms[s]

    parts: list[str] = []
    for k, perm in zip(kernels, perms, strict=True):
        if isinstance(k, PredefinedKernel):
            named = dict(names)
            ins = ",".join(named.get(t, t) for t in k.inputs)
            if k.output not in named:
                named[k.output] = _fresh(named)
                names = tuple(sorted(named.items()))
            fn = k.fn and k.fn.value
            parts.append(f"P[{k.kind.value}|{fn}|{k.dim}|{scalar_to_json(k.scalar)}|{ins}->{named[k.output]}]")
            continue
        head = f"K[{','.join(sym(k.grid[p]) for p in perm)};{sym(k.loop)}]"
        pieces, names = _body(k.ops, names, maps)
        body = [pc if isinstance(pc, str) else f"{pc[0]}{[pc[1][p] for p in perm]}{pc[2]}" for pc in pieces]
        parts.append(head + "{" + ";".join(body) + "}")
    return " ".join(parts)


def canonical_form(kg: KernelGraph, *, maps: bool = True, grid_perms: bool = True) -> str:
    """The canonical text of ``kg`` (with or without its maps; modulo grid-dim order if asked)."""
    io = {t.name for t in kg.inputs} | {t.name for t in kg.outputs}
    best: str | None = None
    for kernels in _kernel_orders(kg):
        choices = [
            list(itertools.permutations(range(len(k.grid)))) if grid_perms and isinstance(k, CustomKernel)
            else [tuple(range(len(k.grid)))] if isinstance(k, CustomKernel) else [()]
            for k in kernels
        ]
        for perms in itertools.product(*choices):
            text = _render(kernels, perms, io, maps)
            if best is None or text < best:
                best = text
    assert best is not None
    return best


def canonical_key(kg: KernelGraph, *, maps: bool = True, grid_perms: bool = True) -> str:
    """A short hash of :func:`canonical_form`: equal for equivalent orderings/namings of one graph."""
    return hashlib.sha256(canonical_form(kg, maps=maps, grid_perms=grid_perms).encode()).hexdigest()[:20]


def structure_key(kg: KernelGraph) -> str:
    """The key of the graph's structure: its canonical form with every map erased."""
    return canonical_key(kg, maps=False)
