"""Run search + mapping + verification for every benchmark program (fills PRISM_CACHE_DIR).

    PRISM_CACHE_DIR=.prism-cache PYTHONPATH=. python scripts/search_all.py [PROGRAM ...]

Prints one JSON line per program (the `python -m prism search --json` fields)."""

from __future__ import annotations

import json
import logging
import sys

from prism import pipeline, workloads

logging.basicConfig(level=logging.WARNING)
for name in sys.argv[1:] or list(workloads.PROGRAMS):
    graph = workloads.configs_of(name)[0].build()
    outcome = pipeline.search_and_verify(graph, program=name, progress=False)
    print(json.dumps(outcome.to_json()), flush=True)
