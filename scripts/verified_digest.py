"""The proven plans of programs, by canonical key: a digest per program to compare two trees' searches.

    PYTHONPATH=. PRISM_CACHE_DIR=$(mktemp -d) python scripts/verified_digest.py OUT.json w:gqa,w:gqa_safe,softmax_bias

Names with ``w:`` are benchmark programs (``prism.workloads``, default sizes), the others zoo programs
at decode sizes (rows merged as ``superoptimize`` searches them). Per program: seconds of
``search_and_verify``, the number of proven whole-program plans and per part, and a digest of their
canonical keys (sorted), so runs of two trees agree exactly when they prove the same plans.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

from bench.zoo import zoo_graph
from prism import pipeline, workloads
from prism.graph import Graph
from prism.rows import searched_graph
from prism.search.canonical import canonical_key


def graph(name: str) -> tuple[Graph, str]:
    if name.startswith("w:"):
        return workloads.program(name[2:]), name[2:]
    return searched_graph(zoo_graph(name, "decode")), name


def digest(name: str) -> dict[str, object]:
    g, program = graph(name)
    t = time.perf_counter()
    out = pipeline.search_and_verify(g, program=program, progress=False)
    keys = sorted(canonical_key(kg) for kg in out.templates)
    parts = [sorted(canonical_key(kg) for kg in p.outcome.templates) for p in out.parts]
    return {"seconds": round(time.perf_counter() - t, 1), "plans": len(keys), "part_plans": [len(p) for p in parts],
            "digest": hashlib.sha1(json.dumps([keys, parts]).encode()).hexdigest()[:12],
            "mapping_timed_out": out.stats.get("mapping_timed_out")}


def main() -> None:
    rows = {}
    for name in sys.argv[2].split(","):
        rows[name] = digest(name)
        print(name, json.dumps(rows[name]), flush=True)
        with open(sys.argv[1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
