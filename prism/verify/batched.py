"""The μGraph interpreter over every block at once, for the numeric screen.

``prism.interpreter`` runs a kernel block by block: at the screen's sizes (every parallel size 2 or 4)
that is 2-16 blocks, each a dozen NumPy calls on tiles of a few elements, so the calls, not the
arithmetic, take the time. Here each value carries the grid as leading axes (size 1 along a grid
dim it does not depend on), so a kernel's loop iteration is one NumPy call per op whatever its
grid. The semantics are the interpreter's, including what a plan wrong at these sizes computes, on
plans that pass ``ir.check_structure`` (a grid dim splits at most one data dim of a load and exactly
one of a save, one data dim each); where a plan does something this form does not cover
(``NotBatched``), the screen runs the interpreter instead.
``tests/test_batched_screen.py`` compares the two on every plan of several searches.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import assert_never

import numpy as np

from prism.interpreter import Prefixes, rescaled, run_kernels
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    KernelShapes,
    Load,
    MatmulOp,
    OpPhase,
    ReduceOp,
    Save,
    UnaryOp,
    shift_by_max,
)
from prism.ops import BINARY_NUMPY, REDUCE_NUMPY, UNARY_NUMPY, Reduce, shifted


class NotBatched(Exception):
    """The plan does something this form does not cover: run it block by block."""


def run(kg: KernelGraph, inputs: Mapping[str, np.ndarray], *, structure: bool = True,
        prefixes: Prefixes | None = None) -> dict[str, np.ndarray]:
    """``interpreter.run`` of a concrete μGraph (same outputs), every block at once (``NotBatched``
    where it cannot; the interpreter's ``PrismError`` where the plan does not fit its sizes).
    ``structure=False``: the caller ran ``ir.check_structure`` on the plan (at any sizes). ``prefixes``:
    as ``run_kernels`` takes them (a kernel here writes each tensor it saves into a new array)."""
    if kg.tail is not None:
        raise NotBatched("a padded tail runs in the emulator")
    return run_kernels(kg, inputs, lambda k, ks, tensors, shapes, scalars:
                       _Kernel(k, ks, tensors, shapes, scalars).run(), structure=structure, prefixes=prefixes)


class _Kernel:
    """One custom kernel: values are [*grid, *tile] arrays (size 1 along grid dims they do not vary along)."""

    def __init__(self, k: CustomKernel, ks: KernelShapes, tensors: dict[str, np.ndarray],
                 shapes: dict[str, tuple[int, ...]], scalars: dict[str, tuple[int, ...]]) -> None:
        self.k, self.tiles, self.phases = k, ks.tiles, ks.phases
        self.tensors, self.shapes, self.scalars = tensors, shapes, scalars
        self.grid = tuple(int(g) for g in k.grid)
        self.loop = int(k.loop)
        self.lead = len(self.grid)
        saved = {s.tensor for s in k.saves}
        if any(ld.tensor in saved for ld in k.loads):
            raise NotBatched("a kernel that reads what it saves")
        self.shifts = {i for i in range(len(k.ops)) if shift_by_max(k.ops, i)}

    def run(self) -> None:
        ops = self.k.ops
        vals: list[np.ndarray | None] = [None] * len(ops)
        running: dict[int, np.ndarray] = {}  # running max of each rescaled accumulator
        for it in range(self.loop):
            for i, op in enumerate(ops):
                if self.phases[i] is OpPhase.LOOP:
                    vals[i] = self._eval(i, op, vals, it)
            for i, op in enumerate(ops):
                if isinstance(op, Accum):
                    vals[i] = self._accumulate(op, vals, vals[i] if it else None, running, i)
        for t in {s.tensor for s in self.k.saves}:
            self.tensors[t] = np.full(self.shapes[t], np.nan)
        for i, op in enumerate(ops):
            if isinstance(op, Save):
                self._save(op, self._v(vals, op.x))
            elif self.phases[i] is OpPhase.POST and not isinstance(op, Accum):
                vals[i] = self._eval(i, op, vals, 0)

    def _v(self, vals: list[np.ndarray | None], i: int) -> np.ndarray:
        x = vals[i]
        assert x is not None
        return x

    def _rank(self, i: int) -> int:
        tile = self.tiles[i]
        assert tile is not None
        return len(tile)

    def _aligned(self, x: np.ndarray, rank: int, to: int) -> np.ndarray:
        """``x`` (tile rank ``rank``) with axes of 1 after the grid axes up to tile rank ``to`` (the
        tiles' own broadcasting aligns them from the right)."""
        return x if rank >= to else np.expand_dims(x, tuple(range(self.lead, self.lead + to - rank)))

    def _eval(self, i: int, op: BlockOp, vals: list[np.ndarray | None], it: int) -> np.ndarray:
        match op:
            case Load():
                return self._load(op, it)
            case UnaryOp(fn, x, scalar):
                c = scalar.resolve(self.scalars) if scalar is not None else 0.0
                return UNARY_NUMPY[fn](self._v(vals, x), c)
            case BinaryOp(fn, a, b):
                va, vb = self._v(vals, a), self._v(vals, b)
                return shifted(va, vb) if i in self.shifts else BINARY_NUMPY[fn](va, vb)
            case MatmulOp(a, b):
                ra, rb = self._rank(a), self._rank(b)
                return np.matmul(self._v(vals, a), self._aligned(self._v(vals, b), rb, ra))
            case ReduceOp(fn, x, dim):
                return REDUCE_NUMPY[fn](self._v(vals, x), self.lead + dim)
            case Accum() | Save():
                raise AssertionError(f"not evaluated here: {op!r}")
            case _:
                assert_never(op)

    def _load(self, op: Load, it: int) -> np.ndarray:
        """Every block's tile of ``op`` in iteration ``it``."""
        t = self.tensors[op.tensor]
        t = np.swapaxes(t, -1, -2) if op.transposed else t
        split, at, order, shape = _load_recipe(t.shape, op.imap, op.fmap, self.grid, self.loop)
        v = t.reshape(split)
        if at is not None:
            v = v[(slice(None),) * at + (it,)]
        return v.transpose(order).reshape(shape)

    def _accumulate(self, op: Accum, vals: list[np.ndarray | None], prev: np.ndarray | None,
                    running: dict[int, np.ndarray], i: int) -> np.ndarray:
        x = self._v(vals, op.x)
        part = x if op.reduce_dim is None else np.sum(x, axis=self.lead + op.reduce_dim, keepdims=True)
        if op.rescale is not None:
            c = self._v(vals, op.rescale)
            if c.shape != part.shape:
                shape = np.broadcast_shapes(part.shape, c.shape)
                part, c = np.broadcast_to(part, shape), np.broadcast_to(c, shape)
            return rescaled(part, c, prev, running, i)
        if prev is None:
            return part.copy()
        return np.maximum(prev, part) if op.fn is Reduce.MAX else prev + part

    def _save(self, op: Save, x: np.ndarray) -> None:
        """Every block's tile into its place: each tensor dim the blocks along grid dim p stack on
        (``omap[p]``) holds them outermost, the tile within."""
        tile = x.ndim - self.lead
        x = np.broadcast_to(x, (*self.grid, *x.shape[self.lead:]))
        along = {a: p for p, a in enumerate(op.omap)}
        order = [ax for a in range(tile) for ax in ((along[a], self.lead + a) if a in along else (self.lead + a,))]
        self.tensors[op.tensor][...] = x.transpose(order).reshape(self.shapes[op.tensor])


@functools.lru_cache(maxsize=4096)
def _load_recipe(shape: tuple[int, ...], imap: tuple[int | None, ...], fmap: int | None, grid: tuple[int, ...],
                 loop: int) -> tuple[tuple[int, ...], int | None, tuple[int, ...], tuple[int, ...]]:
    """How a load of a tensor of ``shape`` becomes every block's tile: each tensor dim split into the
    grid dim that maps to it, then the loop, then what one block holds (``split``); the loop's axis,
    indexed by the iteration (``at``); the order of the axes left, grid dims first; the result's
    shape, 1 along grid dims that map no dim."""
    split: list[int] = []
    where: dict[int, int] = {}  # grid dim -> its axis of the split tensor
    tile_axes: list[int] = []
    at = None
    for a, extent in enumerate(shape):
        if a in imap:
            p = imap.index(a)
            where[p] = len(split)
            split.append(grid[p])
            extent //= grid[p]
        if fmap == a:
            at = len(split)
            split.append(loop)
            extent //= loop
        tile_axes.append(len(split))
        split.append(extent)
    if at is not None:
        where = {p: ax - (ax > at) for p, ax in where.items()}
        tile_axes = [ax - (ax > at) for ax in tile_axes]
    order = tuple(where[p] for p in sorted(where)) + tuple(tile_axes)
    kept = [s for i, s in enumerate(split) if i != at]
    tile = tuple(kept[ax] for ax in tile_axes)
    return tuple(split), at, order, tuple(grid[p] if p in where else 1 for p in range(len(grid))) + tile
