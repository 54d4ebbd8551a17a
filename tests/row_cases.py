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
