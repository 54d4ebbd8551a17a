"""Helpers of the row-kernel tests: plans bound at a grid of ``n`` blocks along x."""

from __future__ import annotations

from prism.graph import Graph
from prism.ir import KernelGraph
from prism.rowwise import row_vendor_plan


def at_rows(kg: KernelGraph, n: int) -> KernelGraph:
    """``kg`` with every grid-x size ``n`` and every other size 1 (loop-free, one tile a block)."""
    return kg.instantiate({s: (n if s.endswith("_x") else 1) for s in kg.symbols})


def row_vendor_at(g: Graph, n: int) -> KernelGraph:
    """The row-vendor plan of ``g`` (vendor GEMMs, one row kernel between them) at ``n`` blocks."""
    plan = row_vendor_plan(g)
    assert plan is not None
    return at_rows(plan, n)


def layer_norm_affine(n: int, d: int) -> Graph:
    """X [n, d] normalised by its rows' mean and variance, scaled by G and shifted by B (both [1, d])."""
    g = Graph()
    x = g.input((n, d), "float16", "X")
    c = g.sub(x, g.mean(x, -1))
    y = g.mul(c, g.rsqrt(g.add_scalar(g.mean(g.square(c), -1), 1e-6)))
    g.output(g.add(g.mul(y, g.input((1, d), "float16", "G")), g.input((1, d), "float16", "B")), "O")
    return g
