"""What a capture did: per region, what ran in Prism and what went back to PyTorch, and why.

``CaptureReport.summary()`` counts the fx nodes that compute (views excluded), the nodes in regions,
the nodes whose region runs a Prism kernel, and the fractions of FLOPs and bytes (as if each op ran
alone, the unfused eager count) in Prism kernels: in regions that run a Prism plan at every shape
(``*_fraction_prism``), and in those whose plan is a searched or stitched one, with generated
kernels, rather than the predefined plan (one vendor or library op per primitive, dispatched by
Prism: ``*_fraction_generated``; a stitched plan may still run some parts as vendor GEMMs).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from prism.capture.build import RegionSpec
from prism.capture.ir import Cost


class Outcome(enum.Enum):
    PENDING = "pending"  # not called yet
    PRISM = "prism"  # a checked Prism kernel runs the region
    PYTORCH = "pytorch"  # the region runs its PyTorch ops (``reason`` says why)


@dataclass
class RegionRecord:
    """One region of one captured graph, and what happened to it at each shape it ran at."""

    label: str
    nodes: int
    ops: tuple[str, ...]
    cost: Cost
    outcomes: dict[str, tuple[Outcome, str]] = field(default_factory=dict)  # shapes -> (outcome, detail)
    sources: dict[str, str] = field(default_factory=dict)  # shapes -> plan source (searched, stitched, predefined)
    spec: RegionSpec | None = None
    bound: list[tuple[list[tuple[int, ...]], str]] = field(default_factory=list)  # (input shapes, dtype) per shape

    @property
    def outcome(self) -> Outcome:
        """PRISM when every shape it ran at used a Prism kernel; PYTORCH when one did not."""
        kinds = {o for o, _ in self.outcomes.values()}
        if not kinds:
            return Outcome.PENDING
        return Outcome.PYTORCH if Outcome.PYTORCH in kinds else Outcome.PRISM


@dataclass
class GraphRecord:
    """One graph Dynamo handed to the backend."""

    nodes: int  # nodes that compute (views and placeholders excluded)
    cost: Cost
    regions: list[RegionRecord] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)  # why a node stays with PyTorch -> how many
    # µs per call at the example inputs, by CUDA-graph replay: the graph with Prism's regions and
    # Inductor's graph alone (the faster runs); empty when not compared
    times_us: dict[str, float] = field(default_factory=dict)
    # in-place writes to tensors from outside the graph (a buffer, a cache, an input): "add_ of L_x_";
    # running the graph has effects there
    writes_in_place: list[str] = field(default_factory=list)


@dataclass
class CaptureReport:
    graphs: list[GraphRecord] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        regions = [r for g in self.graphs for r in g.regions]
        prism = [r for r in regions if r.outcome is Outcome.PRISM]
        generated = [r for r in prism if r.sources and "predefined" not in r.sources.values()]
        flops = sum(g.cost.flops for g in self.graphs)
        moved = sum(g.cost.bytes for g in self.graphs)
        refused: dict[str, int] = {}
        for g in self.graphs:
            for why, n in g.refused.items():
                refused[why] = refused.get(why, 0) + n
        return {
            "graphs": len(self.graphs),
            "nodes": sum(g.nodes for g in self.graphs),
            "nodes_captured": sum(r.nodes for r in regions),
            "nodes_in_prism": sum(r.nodes for r in prism),
            "regions": len(regions),
            "regions_in_prism": len(prism),
            "flops_fraction_prism": sum(r.cost.flops for r in prism) / flops if flops else 0.0,
            "bytes_fraction_prism": sum(r.cost.bytes for r in prism) / moved if moved else 0.0,
            "flops_fraction_generated": sum(r.cost.flops for r in generated) / flops if flops else 0.0,
            "bytes_fraction_generated": sum(r.cost.bytes for r in generated) / moved if moved else 0.0,
            "left_to_pytorch": dict(sorted(refused.items(), key=lambda kv: -kv[1])),
            "graph_times_us": [g.times_us for g in self.graphs if g.times_us],
            "writes_in_place": [w for g in self.graphs for w in g.writes_in_place],
            "region_outcomes": [
                {"label": r.label, "nodes": r.nodes, "ops": list(r.ops), "flops": r.cost.flops, "bytes": r.cost.bytes,
                 "outcomes": {k: [o.value, d] for k, (o, d) in r.outcomes.items()}}
                for r in regions
            ],
        }
