"""How well the static size prior (``codegen.sizes.size_score``) ranks what the tuner timed, per entry of
a zoo or bench run: the rank correlation of prior score and measured time over each template's timed
sizes, and whether the prior's first choice of each template was its fastest timed size. Reads the
run's JSON (rows with ``prism_timed``: [template, sizes, µs] of the whole program's samples) and the
search cache the run used (``PRISM_CACHE_DIR``), so the template indices are the run's; stitched and
size-free templates are left out. No GPU.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python scripts/zoo_prior.py bench/results/zoo-DATE.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 2)[0])
sys.path.insert(0, __file__.rsplit("/", 1)[0])

import prior_correlation

from bench.zoo import zoo_graph
from prism import pipeline, workloads
from prism.codegen.arch import arch as get_arch
from prism.codegen.resources import resources
from prism.codegen.sizes import size_score
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.rows import searched_graph

WHOLE = (pipeline.PlanSource.SEARCHED, pipeline.PlanSource.CONSTRUCTED, pipeline.PlanSource.PREDEFINED)


def spearman(a: list[float], b: list[float]) -> float | None:
    """``prior_correlation.spearman``; None for fewer than three pairs."""
    return prior_correlation.spearman(a, b) if len(a) >= 3 else None


def _graph(row: dict[str, Any]) -> tuple[Graph, str]:
    if "which" in row:  # a zoo row
        return searched_graph(zoo_graph(row["program"], row["which"])), row["program"]
    cfg = workloads.config(row["config"])  # a bench row
    return cfg.build(), cfg.program


def entry(row: dict[str, Any], arch: str) -> dict[str, Any]:
    """Per template with at least two timed sizes: pairs of (prior score, µs); their summary."""
    graph, program = _graph(row)
    templates: list[KernelGraph] = list(pipeline.search_and_verify(graph, program=program, progress=False).of(*WHOLE))
    sms = get_arch(arch).sms
    per: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for t, sizes, us in row["prism_timed"]:
        if t < len(templates) and templates[t].symbols:
            per[t].append((size_score(resources(templates[t].instantiate(sizes), arch), sms), us))
    rhos, hits = [], 0
    for pairs in (p for p in per.values() if len(p) >= 2):
        rho = spearman([-s for s, _ in pairs], [us for _, us in pairs])  # high score should mean low time
        if rho is not None:
            rhos.append(rho)
        hits += max(pairs)[1] == min(us for _, us in pairs)  # the prior's first choice was the fastest
    judged = sum(len(p) >= 2 for p in per.values())
    return {"entry": row.get("program", row.get("config")), "which": row.get("which", "bench"),
            "templates": judged, "prior_first_fastest": hits,
            "median_rho": statistics.median(rhos) if rhos else None}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python scripts/zoo_prior.py")
    ap.add_argument("run", type=Path, help="a zoo_bench or bench JSON with prism_timed")
    ap.add_argument("--arch", default="sm_90", help="the architecture the run tuned for")
    args = ap.parse_args(argv)
    run = json.loads(args.run.read_text())
    rows = [r for r in run.get("rows", run.get("configs", [])) if r.get("prism_timed")]
    if not rows:
        sys.exit(f"{args.run}: no row has prism_timed (runs before this script do not record it)")
    for row in rows:
        print(json.dumps(entry(row, args.arch)))


if __name__ == "__main__":
    main()
