"""Prism's kernels beside Inductor's for zoo programs, for Nsight Compute (run on the device machine).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/zoo_ncu.py --only silu_mul,rms_norm [--which decode]
    /usr/local/cuda/bin/ncu --clock-control none -k 'regex:prism_|triton_' --metrics gpu__time_duration.sum,\
        smsp__inst_executed.sum,dram__bytes_read.sum python3 scripts/zoo_ncu.py --only ... --launches 3

Per program: ``prism.superoptimize`` (search cache carried; tuning runs here) and ``torch.compile`` of the same
program (``prism.torch_program.torch_program``), each checked against the float64 reference and called
``--launches`` times after a warm-up, so ncu sees each system's kernels (names ``prism_*`` and ``triton_*``)
with the same inputs. Without ncu it prints each system's graph-timed µs (the bench protocol) as well, so a
gap between kernel durations (ncu) and graph times says whether the kernel or what surrounds it differs.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch

import prism
from bench.zoo import zoo_graph
from prism.reference import relative_error
from prism.torch_program import torch_program
from prism.tune.timing import graph_time_us
from prism.tune.tuner import default_scales, random_inputs


def systems(name: str, which: str, samples: int) -> tuple[Any, dict[str, Any]]:
    graph = zoo_graph(name, which)
    torch._dynamo.reset()
    fns = {"prism": prism.superoptimize(graph, samples=samples, program=name, progress=False, inductor=False),
           "compile": torch.compile(torch_program(graph), dynamic=False)}
    return graph, fns


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", required=True)
    ap.add_argument("--which", default="decode")
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--no-time", action="store_true", help="skip the graph timing (under ncu)")
    args = ap.parse_args(argv)
    for name in [n for n in args.only.split(",") if n]:
        graph, fns = systems(name, args.which, args.samples)
        values = random_inputs(graph, default_scales(graph), 11)
        ref = graph.evaluate(values)[graph.outputs[0].name]
        inputs = [torch.from_numpy(values[t.name]).to(device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
        for system, fn in fns.items():
            out = fn(*inputs)  # compile / warm-up, and the check
            torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
            for _ in range(args.launches):
                fn(*inputs)
            torch.cuda.synchronize()
            us = None if args.no_time else graph_time_us(fn, lambda i, xs=inputs: [t.clone() for t in xs])
            print(f"{name} {system}: rel err {err:.1e}" + ("" if us is None else f", {us:.2f} µs graph-timed"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
