"""Run search + mapping + verification for every benchmark program (fills PRISM_CACHE_DIR).

    PRISM_CACHE_DIR=.prism-cache PYTHONPATH=. python scripts/search_all.py [PROGRAM ...]
        [--extra-ops N] [--time-budget S]

Prints one JSON line per program (the `python -m prism search --json` fields)."""

from __future__ import annotations

import argparse
import json
import logging

from prism import pipeline, workloads
from prism.search import SearchConfig

logging.basicConfig(level=logging.WARNING)
parser = argparse.ArgumentParser()
parser.add_argument("programs", nargs="*", default=list(workloads.PROGRAMS))
parser.add_argument("--extra-ops", type=int, default=SearchConfig.extra_ops)
parser.add_argument("--time-budget", type=float, default=pipeline.DEFAULT_SEARCH_BUDGET_S,
                    help="the search's budget (default: superoptimize's)")
args = parser.parse_args()
config = SearchConfig(extra_ops=args.extra_ops, time_budget_s=args.time_budget)
for name in args.programs:
    graph = workloads.configs_of(name)[0].build()
    outcome = pipeline.search_and_verify(graph, program=name, progress=False, config=config)
    record = {**outcome.to_json(), "extra_ops": config.extra_ops, "time_budget_s": config.time_budget_s}
    print(json.dumps(record), flush=True)
