"""Summarize the cached verified sGraphs of each benchmark program and check that the hand-built
plans (prism/plans.py, split-K included) are among them (by canonical key).

    PRISM_CACHE_DIR=.prism-cache PYTHONPATH=. python scripts/check_cache.py [PROGRAM ...]
"""

from __future__ import annotations

import collections
import json
import sys

from prism import pipeline, plans, workloads
from prism.search import canonical_key, structure_key

for name in sys.argv[1:] or list(workloads.PROGRAMS):
    graph = workloads.configs_of(name)[0].build()
    hit = pipeline.search_cache().get(graph.structure_key(), lambda p: p)
    if hit is None:
        print(json.dumps({"program": name, "cached": False}))
        continue
    out = pipeline.search_and_verify(graph, program=name, progress=False)
    keys = {canonical_key(t) for t in out.templates}
    shapes = collections.Counter(f"{len(t.kernels)} kernel(s), grid {len(t.kernels[0].grid)}-D"  # type: ignore[union-attr]
                                 for t in out.templates)
    found = {i: canonical_key(kg) in keys for i, kg in enumerate(plans.codegen_plans(name, graph))}
    structures = len({structure_key(t) for t in out.templates})  # op sequences, mappings aside
    print(json.dumps({"program": name, "verified": len(out.templates), "op_structures": structures,
                      "by_shape": dict(shapes),
                      "hand_plans_found": found, "stats": out.stats}))
