"""sGraphs: μGraph structures with symbolic parallel sizes and Boolean mapping variables.

An sGraph is a kernel-graph *template* (``prism.ir.KernelGraph`` whose sizes are symbol names and
whose Load/Save maps are placeholders) plus:

* mapping variables ``m[T, a, p]`` for each Load (data dim a of its tensor, parallel dim p among the
  kernel's grid dims and its loop ``i``) and ``o[T, a, p]`` for each Save (grid dims only);
* the equalities found by symbolic dimension matching, as linear forms over those variables that
  must be 0 (see ``dimmatch``);
* each op's symbolic tile extents, which render as the paper's ``D_a / Π_p (m·d_p + 1 − m)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import sympy

from prism.ir import CustomKernel, KernelGraph, Load, Save

from .canonical import structure_key
from .dimmatch import LinForm, Tile

PARALLEL = ("x", "y", "z")
LOOP = "i"


def load_var(k: int, j: int, a: int, p: str) -> str:
    """Variable name: data dim ``a`` of the tensor loaded by op ``j`` of kernel ``k`` split along ``p``."""
    return f"m{k}_{j}_{a}{p}"


def save_var(k: int, j: int, a: int, p: str) -> str:
    return f"o{k}_{j}_{a}{p}"


def long_inputs(names: Sequence[str], long_dims: Sequence[tuple[int, int]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``SearchConfig.long_dims`` ((input position, dim) pairs) by the name of the input (``names`` in
    the program's input order), sorted: ``SGraph.long``."""
    out: dict[str, set[int]] = {}
    for pos, dim in long_dims:
        out.setdefault(names[pos], set()).add(dim)
    return tuple(sorted((name, tuple(sorted(dims))) for name, dims in out.items()))


def holds_long(op: Load, dims: Iterable[int]) -> bool:
    """Does ``op``'s tile hold one of ``dims`` of its tensor whole (neither a grid dim nor the loop splits it)?"""
    return any(a not in op.imap and a != op.fmap for a in dims)


@dataclass(frozen=True)
class MapVar:
    name: str
    kind: str  # "load" | "save"
    kernel: int
    op: int
    dim: int
    par: str  # "x" | "y" | "z" | "i"


@dataclass(frozen=True)
class SGraph:
    """One candidate of the symbolic search."""

    template: KernelGraph
    variables: tuple[MapVar, ...]
    equalities: tuple[LinForm, ...]
    fixed: tuple[tuple[str, int], ...] = ()
    tiles: tuple[tuple[Tile | None, ...], ...] = ()
    # (program input, its dims) that no tile may hold whole (``SearchConfig.long_dims``): the mapping
    # walk drops a Load that holds one whole as soon as it is assigned (``holds_long``)
    long: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @cached_property
    def structure_key(self) -> str:
        return structure_key(self.template)

    @property
    def kernels(self) -> tuple[CustomKernel, ...]:
        return tuple(k for k in self.template.kernels if isinstance(k, CustomKernel))

    def symbol_users(self) -> dict[str, set[int]]:
        """Which kernels use each size symbol."""
        out: dict[str, set[int]] = {}
        for ki, k in enumerate(self.kernels):
            for s in (*k.grid, k.loop):
                if isinstance(s, str):
                    out.setdefault(s, set()).add(ki)
        return out

    def tile_shapes(self) -> list[list[tuple[sympy.Expr, ...] | None]]:
        """Every op's tile shape as sympy expressions of D, d and the mapping variables."""
        return [[None if t is None else tuple(e.to_sympy() for e in t) for t in kt] for kt in self.tiles]

    def instantiate(self, assignment: dict[str, int]) -> KernelGraph:
        """The template with concrete maps (``assignment`` gives every variable 0/1); sizes stay symbolic."""
        values = {**dict(self.fixed), **assignment}
        kernels = []
        for ki, k in enumerate(self.kernels):
            grid_pars = PARALLEL[: len(k.grid)]
            ops = list(k.ops)
            for j, op in enumerate(k.ops):
                if isinstance(op, Load):
                    rank = self._rank(op.tensor, ki)
                    imap = tuple(
                        next((a for a in range(rank) if values.get(load_var(ki, j, a, p), 0)), None) for p in grid_pars
                    )
                    fmap = next((a for a in range(rank) if values.get(load_var(ki, j, a, LOOP), 0)), None)
                    ops[j] = Load(op.tensor, imap, fmap)
                elif isinstance(op, Save):
                    rank = len(self.tiles[ki][op.x] or ())
                    omap = tuple(
                        next((a for a in range(rank) if values.get(save_var(ki, j, a, p), 0)), None) for p in grid_pars
                    )
                    ops[j] = Save(op.x, op.tensor, omap)
            kernels.append(replace(k, ops=tuple(ops)))
        return replace(self.template, kernels=tuple(kernels))

    def _rank(self, tensor: str, kernel: int) -> int:
        for t in self.template.inputs:
            if t.name == tensor:
                return len(t.shape)
        for ki, k in enumerate(self.kernels[:kernel]):
            for op in k.ops:
                if isinstance(op, Save) and op.tensor == tensor:
                    return len(self.tiles[ki][op.x] or ())
        raise KeyError(tensor)

    def describe(self) -> str:
        lines = []
        for k in self.kernels:
            lines.append(f"kernel {k.name} grid={list(k.grid)} loop={k.loop}")
            for j, op in enumerate(k.ops):
                lines.append(f"  {j:2d} {op}")
        return "\n".join(lines)
