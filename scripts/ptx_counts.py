"""What nvcc makes of the generated kernels, without a GPU: per zoo program, every searched template at its
``--sizes`` best legal sizes by the tuner's static prior (``draw._prior_first``: what the first round times),
compiled to PTX for sm_90, and the global loads, barriers, branches and instructions in it, summed per
program. Run on two trees (``PYTHONPATH``) to compare code generators.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python scripts/ptx_counts.py --which decode \
        --only rms_norm,layer_norm,softmax [--sizes 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.zoo import expand_names, zoo_graph
from prism import pipeline
from prism.codegen.generate import generate
from prism.codegen.nvcc import ptx
from prism.codegen.resources import resources as codegen_resources
from prism.codegen.sizes import generated_sizes
from prism.errors import PrismError
from prism.ir import CustomKernel
from prism.rows import searched_graph
from prism.tune.draw import _prior_first

PATTERNS = {"global_loads": r"\bld\.global", "barriers": r"\bbar\.sync", "branches": r"\bbra\b"}


def ptx_counts(source: str) -> Counter[str]:
    lines = [x for x in ptx(source, "sm_90").splitlines() if x.strip().endswith(";") and not x.strip().startswith("//")]
    c = Counter({k: sum(bool(re.search(p, x)) for x in lines) for k, p in PATTERNS.items()})
    c["instructions"] = len(lines)
    return c


def program_counts(name: str, which: str, sizes: int) -> dict[str, object]:
    g = searched_graph(zoo_graph(name, which))
    out = pipeline.search_and_verify(g, program=name, progress=False)
    total: Counter[str] = Counter()
    kernels = 0
    for t in out.templates:
        kg = pipeline.bind_shapes(t, g)
        if not any(isinstance(k, CustomKernel) for k in kg.kernels):
            continue
        for sz in _prior_first(kg, list(generated_sizes(kg)), "sm_80", codegen_resources)[:sizes]:
            try:
                plan = generate(kg.instantiate(sz))
            except PrismError:
                continue
            for k in plan.kernels:
                total += ptx_counts(k.source)
                kernels += 1
    return {"program": name, "which": which, "kernels": kernels, **dict(sorted(total.items()))}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", required=True)
    ap.add_argument("--which", default="decode")
    ap.add_argument("--sizes", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in expand_names(args.only.split(",")):
        row = program_counts(name, args.which, args.sizes)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
