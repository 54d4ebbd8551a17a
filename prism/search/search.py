"""``search(graph, config)``: the symbolic search as one call."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from prism.graph import Graph

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
        return float(self.stats.get("seconds", 0.0))  # type: ignore[arg-type]


def search(graph: Graph, config: SearchConfig | None = None, *, name: str = "program") -> SearchResult:
    """Enumerate candidate sGraphs of ``graph`` (sizes do not matter: everything is symbolic)."""
    graph.check_complete()
    cfg = config or SearchConfig()
    t0 = time.perf_counter()
    gen = Generator(graph, cfg)
    gen.graph_name = name
    bar = None
    if cfg.progress:
        from tqdm import tqdm

        bar = tqdm(desc=f"search {name}", unit=" sGraphs", leave=False)
        gen._progress = bar
    try:
        cands = gen.run()
    finally:
        if bar is not None:
            bar.close()
    secs = time.perf_counter() - t0
    st = gen.stats
    stats: dict[str, object] = {
        "seconds": secs,
        "pruned": dict(st.pruned),
        "partial_graphs": st.partial_graphs,
        "kernels_completed": st.kernels_completed,
        "timed_out": st.timed_out,
        "target_subexpressions": len(gen.target.subexprs),
        "abstract_expressions": len(gen.exprs),
    }
    if st.timed_out:
        log.warning("search of %s stopped at the %.0f s budget: results are partial", name, cfg.time_budget_s)
    return SearchResult(name, graph.structure_key(), cands, stats)
