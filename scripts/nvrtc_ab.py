"""A/B of NVRTC flag sets on the plans of zoo programs or benchmark configurations (device machine).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/nvrtc_ab.py --which decode --only a,b
        [--sources searched] [--templates 3] [--sizes 2] --out FILE

Each program's first ``--templates`` plans of ``--sources`` (from the carried search cache) at the
static prior's ``--sizes`` best sizes, the same source compiled with each flag set of ``SETS`` in
two interleaved rounds, each variant checked against float64 and graph-timed
(``gpu_option_ab._variant``). Prints the best µs of each set per program.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import gpu_option_ab as ab

from prism import pipeline, runtime
from prism.codegen import Options

SETS: dict[str, tuple[str, ...]] = {
    "base": ("--std=c++17",),
    "precdiv": ("--std=c++17", "--prec-div=false"),
    "fast": ("--std=c++17", "--use_fast_math"),
}


def run(name: str, which: str, sources: list[str], n_templates: int, n_sizes: int) -> dict[str, Any]:
    out, args, ref = ab.program_setup(name, which)
    best: dict[str, float] = {}
    rows = []
    flags = runtime.NVRTC_OPTIONS
    try:
        for src in sources:
            for ti, t in enumerate(out.of(pipeline.PlanSource[src.upper()])[:n_templates]):
                for sizes in ab._picks(t, n_sizes, "prior"):
                    kg = t.instantiate(sizes)
                    for rnd in range(2):
                        for set_name, opts in SETS.items():
                            runtime.NVRTC_OPTIONS = opts
                            rec = ab._variant(kg, Options(), args, ref)
                            rows.append({"template": f"{src}:{ti}", "sizes": sizes, "set": set_name, "round": rnd,
                                         **rec})
                            if "us" in rec:
                                best[set_name] = min(best.get(set_name, float("inf")), rec["us"])
    finally:
        runtime.NVRTC_OPTIONS = flags
    return {"program": name, "best": best, "rows": rows}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="decode")
    ap.add_argument("--only", required=True)
    ap.add_argument("--sources", default="searched")
    ap.add_argument("--templates", type=int, default=3)
    ap.add_argument("--sizes", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    results = []
    for name in [n for n in a.only.split(",") if n]:
        t0 = time.perf_counter()
        r = run(name, a.which, a.sources.split(","), a.templates, a.sizes)
        results.append(r)
        print(name, {k: round(v, 3) for k, v in r["best"].items()}, f"{time.perf_counter() - t0:.0f} s", flush=True)
        with open(a.out, "w") as f:
            json.dump({"which": a.which, "command": " ".join(sys.argv), "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
