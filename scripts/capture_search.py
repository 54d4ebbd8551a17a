"""Search and verify the regions ``scripts/gpu_capture.py --dump`` captured (on a machine with
z3/egglog), filling ``PRISM_CACHE_DIR`` so that the GPU machine, given that cache, tunes searched
plans instead of predefined kernels. One search serves every shape of a region (the cache key is
the size-free structure), so each distinct structure is searched once.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python scripts/capture_search.py regions.json [--rows 1,16]

``--rows`` also binds every region whose inputs include 3-D activations ``[b, s, d]`` at ``[r, 1, d]``
for each r (decode with r sequences; one row and many rows are different structures).
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from prism.capture.build import bind, spec_from_json
from prism.pipeline import search_and_verify
from prism.rows import searched_graph


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump")
    ap.add_argument("--rows", default="", help="comma-separated decode row counts to bind 3-D inputs at")
    ap.add_argument("--budget", type=float, default=None, help="seconds per search (default: superoptimize's)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with open(args.dump) as f:
        regions = json.load(f)
    seen: set[str] = set()
    for r in regions:
        spec = spec_from_json(r["spec"])
        rows = [int(x) for x in args.rows.split(",") if x]
        bound = [(shapes, dtype) for shapes, dtype in r["bound"]]
        bound += [([(n, 1, s[2]) if len(s) == 3 else s for s in shapes], dtype) for shapes, dtype in r["bound"]
                  for n in rows if any(len(s) == 3 for s in shapes)]
        for shapes, dtype in bound:
            graph = searched_graph(bind(spec, [tuple(s) for s in shapes], dtype).graph, views=False)  # as the runner
            if graph.structure_key() in seen:
                continue
            seen.add(graph.structure_key())
            t0 = time.perf_counter()
            out = search_and_verify(graph, program=f"{r['case']}.{r['label']}", progress=False,
                                    time_budget=args.budget)
            print(json.dumps({"case": r["case"], "label": r["label"], "key": graph.structure_key(),
                              "ops": len(graph.nodes), "seconds": round(time.perf_counter() - t0, 1),
                              "verified_by_source": out.to_json()["verified_by_source"],
                              "parts": len(out.parts)}), flush=True)


if __name__ == "__main__":
    main()
