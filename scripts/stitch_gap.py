"""Device probe (issue 14): a stitched plan's parts timed alone (each on its part graph's inputs) against the
stitched plan, graph-timed as the bench times and checked against float64 first (``gpu_option_ab``'s
variant), with the default input copies and with 4× that L2's worth. Part plans are given as template index and sizes
per part (from a tuner log, ``scripts/part_tunings.py``); searches from the cache (``PRISM_CACHE_DIR``).

    PYTHONPATH=. PRISM_CACHE_DIR=... python3 scripts/stitch_gap.py PICKS.json
    PICKS.json: {"bert_mlp": [[2, {"k0_x": 96, "k0_i": 3}], [4, {"k0_x": 24, "s": 4, "k0_i": 3}]], ...}
"""

from __future__ import annotations

import json
import sys
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 2)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

from bench.zoo import zoo_graph
from prism import pipeline
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.partition import stitch
from prism.rows import searched_graph

L2 = 60 * 2**20


def timed(graph: Graph, kg: KernelGraph, l2: int | None = None) -> tuple[float, float]:
    """(µs, relative error against float64) of plan ``kg`` of ``graph`` (``gpu_option_ab``'s variant timing)."""
    import gpu_option_ab as ab  # (scripts/ is on sys.path; imports torch)

    from prism.codegen.lower import DEFAULT_OPTIONS

    rec = ab._variant(kg, DEFAULT_OPTIONS, *ab.graph_inputs(graph), l2=l2)
    if "error" in rec:
        raise RuntimeError(f"{kg.program}: {rec['error']}")
    return round(rec["us"], 2), float(f"{rec['rel_err']:.2g}")


def gap(name: str, picks: list[list[Any]], which: str = "decode") -> dict[str, Any]:
    g = searched_graph(zoo_graph(name, which))
    out = pipeline.search_and_verify(g, program=name, progress=False)
    plans = [po.outcome.templates[t].instantiate(sizes) for po, (t, sizes) in zip(out.parts, picks, strict=True)]
    rows: dict[str, Any] = {}
    for po, plan in zip(out.parts, plans, strict=True):
        rows[f"p{po.part.index}"] = timed(po.part.graph, plan)
        rows[f"p{po.part.index} l2x4"] = timed(po.part.graph, plan, l2=4 * L2)
    kg = stitch(g, [po.part for po in out.parts], plans, name)
    rows["stitched"] = timed(g, kg)
    rows["stitched l2x4"] = timed(g, kg, l2=4 * L2)
    rows["sum of parts"] = round(sum(rows[f"p{po.part.index}"][0] for po in out.parts), 2)
    return rows


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        picks = json.load(f)
    for name, chosen in picks.items():
        print(json.dumps({name: gap(name, chosen)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
