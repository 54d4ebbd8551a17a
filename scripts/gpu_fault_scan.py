"""Find generated kernels that fault on the GPU: each (template, sizes) sample runs once, checked
against the reference, in its own process (a faulting kernel poisons its CUDA context).

    PRISM_CACHE_DIR=.prism-cache PYTHONPATH=. python scripts/gpu_fault_scan.py OUT.json CONFIG [CONFIG ...]
        [--per-config N] [--jobs J]

Writes OUT.json: for every failing sample, the config, the kernel graph (JSON) and the error."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CHILD = r"""
import json, sys
import numpy as np
from prism import workloads
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.tune.backends import CudaBackend
cfg = workloads.config(sys.argv[1]); g = cfg.build()
kg = KernelGraph.loads(open(sys.argv[2]).read())
b = CudaBackend()
inputs = cfg.random_inputs(seed=7)
b.setup(g, inputs)
k = b.compile(kg)
out = b.run(k, inputs)
ref = g.evaluate(inputs)
err = max(relative_error(out[t.name], ref[t.name]) for t in g.outputs)
print(json.dumps({"rel_err": err}))
sys.exit(0 if err < 2e-2 else 3)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("configs", nargs="+")
    ap.add_argument("--per-config", type=int, default=96)
    ap.add_argument("--jobs", type=int, default=12)
    args = ap.parse_args()
    from prism import pipeline, workloads
    from prism.codegen.sizes import legal_sizes

    jobs = []
    for cid in args.configs:
        cfg = workloads.config(cid)
        g = cfg.build()
        tpls = list(pipeline.search_and_verify(g, program=cfg.program, progress=False).templates)
        rng = random.Random(0)
        order = rng.sample(range(len(tpls)), len(tpls))
        n = 0
        for t in order:
            if n >= args.per_config:
                break
            legal = legal_sizes(tpls[t], arch="sm_90", limit=200)
            if not legal:
                continue
            sizes = rng.choice(legal)
            path = f"/tmp/scan_{cid}_{t}.json"
            with open(path, "w") as f:
                f.write(tpls[t].instantiate(sizes).dumps())
            jobs.append((cid, t, sizes, path))
            n += 1

    def run(job: tuple) -> dict:
        cid, t, sizes, path = job
        p = subprocess.run([sys.executable, "-c", CHILD, cid, path], capture_output=True, text=True, timeout=120)
        return {"config": cid, "template": t, "sizes": sizes, "rc": p.returncode,
                "tail": (p.stdout + p.stderr)[-400:], "kernel_graph": open(path).read() if p.returncode else None}

    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(run, jobs))
    bad = [r for r in results if r["rc"] != 0]
    summary = {c: {"ran": sum(r["config"] == c for r in results), "failed": sum(r["config"] == c for r in bad)}
               for c in args.configs}
    print(json.dumps(summary))
    with open(args.out, "w") as f:
        json.dump({"summary": summary, "failed": bad}, f)


if __name__ == "__main__":
    main()
