"""Time one program's search + mapping + verification (no cache) in one process, with forked mapping
workers (PRISM_JOBS), and with its mapping spread over a local Dask cluster of 1 and 2 CPU workers
(twice each: fresh worker processes start with cold caches, which forked workers inherit warm).

    PYTHONPATH=. python scripts/dask_search_timing.py [PROGRAM] [--out FILE]

Prints one JSON object: per setting, the stage seconds and the counts (equal in every setting:
the spread search maps what one process maps). docs/distributed.md cites the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

from prism import distributed, workloads
from prism.distributed import ClusterOptions
from prism.pipeline import search_and_verify


def _once(program: str, label: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    out = search_and_verify(workloads.PROGRAMS[program](), program=program, cache=False, progress=False,
                            partitioned=False)
    stats = out.to_json()
    return {"setting": label, "wall_s": round(time.perf_counter() - t0, 2),
            "seconds": {k: round(v, 2) for k, v in out.seconds.items()},
            "candidates": stats.get("candidates"), "mappings": stats.get("mappings"),
            "mapping_timed_out": stats.get("mapping_timed_out"), "verified": stats.get("verified")}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("program", nargs="?", default="rmsnorm_linear")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    runs = []
    for jobs in (1, 2):
        os.environ["PRISM_JOBS"] = str(jobs)
        runs.append(_once(args.program, f"one process, PRISM_JOBS={jobs} (forked mapping workers)"))
    os.environ["PRISM_JOBS"] = "1"
    for workers in (1, 2):
        with distributed.connect(ClusterOptions(workers=workers, gpus=())) as client, \
                distributed.spread_search(client):
            for run in ("first run, fresh workers", "second run, same workers"):
                runs.append(_once(args.program, f"Dask LocalCluster, {workers} CPU worker(s), {run}"))
    doc = {"program": args.program, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(), "runs": runs}
    text = json.dumps(doc, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
