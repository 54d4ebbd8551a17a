"""Search + verification of every zoo program on this machine (CPU): seconds and verified plans.

    PYTHONPATH=. python scripts/zoo_search.py [--which small] [--only a,b,@new_ops] [--json out.json]

Per program: seconds to the first verified plan with generated kernels (a part's or the whole
program's), total seconds, and the verified plans by source (searched whole / stitched parts /
predefined). Runs with a fresh cache unless PRISM_CACHE_DIR says otherwise.
"""

from __future__ import annotations

import argparse
import json
import time

from bench.zoo import ZOO, expand_names, zoo_graph
from prism import pipeline
from prism.ir import CustomKernel
from prism.rows import searched_graph


def run(name: str, which: str) -> dict[str, object]:
    g = searched_graph(zoo_graph(name, which))  # what superoptimize searches ([b, s, d] rows merged)
    t0 = time.perf_counter()
    out = pipeline.search_and_verify(g, program=name, progress=False)
    total = time.perf_counter() - t0
    custom_parts = sum(any(isinstance(k, CustomKernel) for k in t.kernels)
                       for p in out.parts for t in p.outcome.templates)
    first = out.seconds.get("parts", total) if custom_parts else (total if out.of(pipeline.PlanSource.SEARCHED) else None)
    return {"program": name, "family": ZOO[name].family, "total_s": round(total, 2),
            "first_generated_s": None if first is None else round(first, 2),
            "parts_s": round(out.seconds.get("parts", 0.0), 2), "parts": len(out.parts),
            **out.to_json()["verified_by_source"],
            "search_timed_out": out.stats.get("search_timed_out"), "mapping_timed_out": out.stats.get("mapping_timed_out")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="small")
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    # every program with sizes of that set (attention programs have no prefill sizes)
    everything = [n for n, p in ZOO.items() if getattr(p, args.which) is not None]
    names = [n for n in expand_names([t for t in args.only.split(",") if t]) if n in everything] or everything
    rows = []
    for name in names:
        row = run(name, args.which)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
