"""ncu target: one searched or constructed template of a zoo program at fixed sizes, or torch.compile's
kernels of the program, launched twice (run on the device machine with the search cache carried).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache /usr/local/cuda/bin/ncu --clock-control none -k 'regex:prism_' \\
        --section SpeedOfLight --section WarpStateStats python3 scripts/template_ncu.py col_sum prefill \\
        'searched|4|{"k0_x": 128, "k0_i": 8}'
    ... -k 'regex:triton_' ... python3 scripts/template_ncu.py col_sum prefill compile
    ... python3 scripts/template_ncu.py gqa_h1024 bench 'constructed|7|{"k0_x": 2, "k0_y": 8, "s": 8, "k0_i": 1}'

The template is the program's as ``scripts/gpu_option_ab.py`` numbers them (rows merged as
``superoptimize`` merges them), so a variant that script timed can be profiled by its row; the
padded plans of ``pipeline.with_tails`` follow them.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import torch
from gpu_option_ab import program_graph

from prism import pipeline, runtime
from prism.codegen import generate
from prism.torch_program import torch_program
from prism.tune.tuner import default_scales, random_inputs


def main(argv: list[str]) -> int:
    name, which, what = argv
    graph, program = program_graph(name, which)
    values = random_inputs(graph, default_scales(graph), 0)
    args = [torch.tensor(values[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
    if what == "compile":
        fn = torch.compile(torch_program(graph), dynamic=False)
    else:
        src, index, sizes = what.split("|")
        found = pipeline.search_and_verify(graph, program=program, progress=False)
        every, sources = pipeline.with_tails(found.templates, found.sources)  # (padded plans after the rest)
        templates = [t for t, s in zip(every, sources, strict=True) if s is pipeline.PlanSource[src.upper()]]
        fn = runtime.compile_plan(generate(templates[int(index)].instantiate(json.loads(sizes)), arch="sm_80"))
    for _ in range(2):
        fn(*args)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
