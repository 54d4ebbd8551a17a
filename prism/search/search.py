"""``search(graph, config)``: the symbolic search as one call."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from prism.graph import Graph
from prism.progress import StageBar

from .config import SearchConfig
from .generator import Generator
from .sgraph import SGraph

log = logging.getLogger(__name__)


@dataclass
class SearchResult:
    program: str
    structure_key: str
    candidates: list[SGraph]
    stats: dict[str, object] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        seconds = self.stats.get("seconds", 0.0)
        assert isinstance(seconds, int | float), seconds
        return float(seconds)


def search(graph: Graph, config: SearchConfig | None = None, *, name: str = "program",
           label: str | None = None) -> SearchResult:
    """Enumerate candidate sGraphs of ``graph`` (its sizes do not matter: everything is symbolic);
    ``label`` names it on the progress bar (default: ``name``)."""
    graph.check_complete()
    cfg = config or SearchConfig()
    t0 = time.perf_counter()
    gen = Generator(graph, cfg, name)
    bar = StageBar(f"search {label or name}", unit=" sGraphs", enabled=cfg.progress)

    def found(_: SGraph) -> None:  # the search's end is unknown: its time budget bounds it
        left = max(0.0, cfg.time_budget_s - (time.perf_counter() - t0))
        bar.advance(1, structures=gen.stats.structures, pruned=sum(gen.stats.pruned.values()),
                    budget_left=f"{left:.0f}s")

    if cfg.progress:
        gen.on_result = found
    with bar:
        cands = gen.run()
    st = gen.stats
    stats: dict[str, object] = {
        "seconds": time.perf_counter() - t0,
        "pruned": dict(st.pruned),
        "values": st.values,
        "min_block_ops": gen.min_ops,
        "max_block_ops": gen.max_ops,
        "structures": st.structures,
        "block_graph_steps": st.block_graphs,
        "timed_out": st.timed_out,
        "stopped_early": st.stopped_early,
        "target_subexpressions": len(gen.target.subexprs),
    }
    return SearchResult(name, graph.structure_key(), cands, stats)
