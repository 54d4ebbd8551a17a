"""From a block-graph structure to an sGraph: symbolic tiles, mapping variables and the equalities
of symbolic dimension matching (paper §3.2), op by op."""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    ReduceOp,
    Save,
    TensorSpec,
    UnaryOp,
    op_args,
)

from .dimmatch import ONE, Ext, LinForm, Mismatch, Tile, broadcast, lin_var, match
from .sgraph import LOOP, PARALLEL, MapVar, SGraph, load_var, save_var

ComputeOp = UnaryOp | BinaryOp | MatmulOp | ReduceOp | Accum


def op_tile(op: ComputeOp, tiles: Sequence[Tile], eqs: list[LinForm]) -> Tile:
    """Symbolic tile of a compute op; raises Mismatch when its operands can never fit."""
    match op:
        case UnaryOp():
            return tiles[0]
        case BinaryOp():
            a, b = tiles
            if len(a) != len(b):
                raise Mismatch("rank")
            return tuple(broadcast(x, y, eqs) for x, y in zip(a, b, strict=True))
        case MatmulOp():
            a, b = tiles
            if len(a) < 2 or len(b) < 2 or len(b) > len(a) or len(a) > 3:
                raise Mismatch("rank")
            match(a[-1], b[-2], eqs)
            same = len(a) == len(b)
            batch = tuple(broadcast(x, y, eqs) for x, y in zip(a[:-2], b[:-2], strict=True)) if same else a[:-2]
            return (*batch, a[-2], b[-1])
        case Accum(reduce_dim=rd, rescale=c) if c is not None:
            tx, tc = tiles
            if len(tx) != len(tc):
                raise Mismatch("rank")
            if rd is not None:
                tx = tuple(Ext(ONE) if d == rd else e for d, e in enumerate(tx))
            for ex, ec in zip(tx, tc, strict=True):
                broadcast(ex, ec, eqs)  # the shift broadcasts against the accumulated value
            return tx
        case ReduceOp(_, _, dim) | Accum(_, dim):
            if dim is None:
                return tiles[0]
            return tuple(Ext(ONE) if d == dim else e for d, e in enumerate(tiles[0]))
    assert_never(op)


@dataclass(frozen=True)
class KernelSpec:
    """A block graph's structure: ops in canonical order (placeholder maps), its sizes."""

    ops: tuple[BlockOp, ...]
    grid: tuple[str, ...]
    loop: str | int


class _Free(enum.Enum):
    """A map left symbolic (its mapping variables are solved later)."""

    SYMBOLIC = "symbolic"


def _imap_choices(rank: int, ng: int, concrete: frozenset[str]) -> list[tuple[int | None, ...] | _Free]:
    if "imap" not in concrete:
        return [_Free.SYMBOLIC]
    return [m for m in itertools.product([None, *range(rank)], repeat=ng)
            if len([a for a in m if a is not None]) == len({a for a in m if a is not None})]


def _fmap_choices(rank: int, concrete: frozenset[str]) -> list[int | _Free | None]:
    return [None, *range(rank)] if "fmap" in concrete else [_Free.SYMBOLIC]


def _omap_choices(rank: int, ng: int, concrete: frozenset[str]) -> list[tuple[int, ...] | _Free]:
    return list(itertools.permutations(range(rank), ng)) if "omap" in concrete else [_Free.SYMBOLIC]


def symbolize(program: str, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
              input_labels: Mapping[str, tuple[str, ...]], kernels: Sequence[KernelSpec],
              concrete: frozenset[str] = frozenset()) -> Iterator[SGraph]:
    """Every sGraph of this structure (one, or one per concrete map choice in the ablation).

    Raises nothing: structures whose dims cannot match for every d yield no sGraph."""
    out_labels = {t.name: None for t in outputs}
    base: dict[str, Tile] = {t.name: tuple(Ext(lab) for lab in input_labels[t.name]) for t in inputs}
    yield from _sym_kernel(program, inputs, outputs, kernels, 0, base, [], [], {}, [], concrete, out_labels)


# What one kernel adds: tensors it writes for later kernels, its variables, equalities, fixed maps, tiles.
Outcome = tuple[dict[str, Tile], tuple[MapVar, ...], tuple[LinForm, ...], dict[str, int], tuple[Tile | None, ...]]


def _sym_kernel(program: str, inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                kernels: Sequence[KernelSpec], k: int, tensors: dict[str, Tile], variables: list[MapVar],
                eqs: list[LinForm], fixed: dict[str, int], tiles_acc: list[tuple[Tile | None, ...]],
                concrete: frozenset[str], out_labels: object) -> Iterator[SGraph]:
    if k == len(kernels):
        built = [CustomKernel(f"k{i}", ks.grid, ks.loop, tuple(_placeholder(op, len(ks.grid)) for op in ks.ops))
                 for i, ks in enumerate(kernels)]
        kg = KernelGraph(program, inputs, outputs, tuple(built))
        yield SGraph(kg, tuple(variables), tuple(eqs), tuple(sorted(fixed.items())), tuple(tiles_acc))
        return
    if k == 0:  # the first kernel reads program inputs only: the same for every later kernel (docs/search-speed.md)
        outcomes: Iterable[Outcome] = _first_outcomes(inputs, outputs, tuple(sorted(tensors.items())), kernels[0],
                                                      concrete)
    else:
        outcomes = _later_outcomes(inputs, outputs, tuple(sorted(tensors.items())), kernels[k], k, concrete)
    for new_tensors, vs, es, fx, tiles in outcomes:
        yield from _sym_kernel(program, inputs, outputs, kernels, k + 1, {**tensors, **new_tensors},
                               [*variables, *vs], [*eqs, *es], {**fixed, **fx}, [*tiles_acc, tiles],
                               concrete, out_labels)


@functools.lru_cache(maxsize=4096)
def _first_outcomes(inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                    tensors: tuple[tuple[str, Tile], ...], ks: KernelSpec, concrete: frozenset[str]) -> tuple[Outcome, ...]:
    return tuple(_kernel_outcomes(inputs, outputs, ks, 0, dict(tensors), concrete))


@functools.lru_cache(maxsize=16384)
def _later_outcomes(inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...],
                    tensors: tuple[tuple[str, Tile], ...], ks: KernelSpec, k: int,
                    concrete: frozenset[str]) -> tuple[Outcome, ...]:
    """A later kernel's outcomes, shared by every earlier kernel that leaves it the same tensors (a
    split graph's second kernel recurs with each first kernel computing the same intermediates)."""
    return tuple(_kernel_outcomes(inputs, outputs, ks, k, dict(tensors), concrete))


def _kernel_outcomes(inputs: tuple[TensorSpec, ...], outputs: tuple[TensorSpec, ...], ks: KernelSpec, k: int,
                     tensors: dict[str, Tile], concrete: frozenset[str]) -> Iterator[Outcome]:
    """Every way kernel ``k`` (spec ``ks``) matches its dims, reading ``tensors``."""
    ng = len(ks.grid)
    pars = [*zip(PARALLEL, ks.grid, strict=False), *([(LOOP, ks.loop)] if isinstance(ks.loop, str) else [])]
    grid_pars = pars[:ng]

    def rec(j: int, tiles: list[Tile | None], vs: list[MapVar], es: list[LinForm], fx: dict[str, int],
            new_tensors: dict[str, Tile]) -> Iterator[Outcome]:
        if j == len(ks.ops):
            yield new_tensors, tuple(vs), tuple(es), fx, tuple(tiles)
            return
        op = ks.ops[j]
        match op:
            case Load(tensor):
                base = tensors[tensor]
                rank = len(base)
                nv = [MapVar(load_var(k, j, a, p), "load", k, j, a, p) for a in range(rank) for p, _ in pars]
                for im in _imap_choices(rank, ng, concrete):
                    for fm in _fmap_choices(rank, concrete):
                        f2 = dict(fx)
                        if im is not _Free.SYMBOLIC:
                            for pi, (p, _) in enumerate(grid_pars):
                                for a in range(rank):
                                    f2[load_var(k, j, a, p)] = int(im[pi] == a)
                        if fm is not _Free.SYMBOLIC and isinstance(ks.loop, str):
                            for a in range(rank):
                                f2[load_var(k, j, a, LOOP)] = int(fm == a)
                        tile: list[Ext] = []
                        for a, e in enumerate(base):
                            for p, sym in pars:
                                e = e.shifted(sym, lin_var(load_var(k, j, a, p), -1, f2))
                            tile.append(e)
                        yield from rec(j + 1, [*tiles, tuple(tile)], vs + nv, es, f2, new_tensors)
            case Save(x, tensor):
                saved = tiles[x]
                assert saved is not None
                rank = len(saved)
                if rank < ng:
                    return
                nv = [MapVar(save_var(k, j, a, p), "save", k, j, a, p) for a in range(rank) for p, _ in grid_pars]
                is_out = tensor in {t.name for t in outputs}
                for om in _omap_choices(rank, ng, concrete):
                    f2 = dict(fx)
                    if om is not _Free.SYMBOLIC:
                        for pi, (p, _) in enumerate(grid_pars):
                            for a in range(rank):
                                f2[save_var(k, j, a, p)] = int(om[pi] == a)
                    dims = []
                    for a, e in enumerate(saved):
                        for p, sym in grid_pars:
                            e = e.shifted(sym, lin_var(save_var(k, j, a, p), 1, f2))
                        dims.append(e)
                    e2: list[LinForm] = []
                    try:
                        if is_out:
                            for e in dims:
                                match(e, Ext(e.label), e2)
                    except Mismatch:
                        continue
                    nt = new_tensors if is_out else {**new_tensors, tensor: tuple(dims)}
                    yield from rec(j + 1, [*tiles, None], vs + nv, es + e2, f2, nt)
            case _:
                args = [tiles[a] for a in op_args(op)]
                e3: list[LinForm] = []
                try:
                    out = op_tile(op, [t for t in args if t is not None], e3)
                except Mismatch:
                    return
                yield from rec(j + 1, [*tiles, out], vs, es + e3, fx, new_tensors)

    yield from rec(0, [], [], [], {}, {})


def _placeholder(op: BlockOp, ng: int) -> BlockOp:
    if isinstance(op, Load):
        return Load(op.tensor, (None,) * ng, None)
    if isinstance(op, Save):
        return Save(op.x, op.tensor, (None,) * ng)
    return op
