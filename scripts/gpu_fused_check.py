"""A fused split + combine kernel under compute-sanitizer (run on the device machine).

    PYTHONPATH=. compute-sanitizer --tool memcheck python3 scripts/gpu_fused_check.py \
        [CONFIG] [SIZES-JSON] [STRESS] [OPTIONS-JSON]

Builds the split plan of a configuration (default gqa_h1024, x=2 s=16 i=2), checks that it is one
fused launch, runs it several times (the arrival counters must reset themselves between calls, also
inside a replayed CUDA graph) and compares every call with the float64 reference. STRESS (default 0):
that many more launches back to back on one input, each output compared bit for bit with the first
(the combine sums the partials in a fixed order, so a partial read before it was visible shows).
OPTIONS-JSON: ``prism.codegen.Options`` fields (e.g. ``{"direct_loops": true}``).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch

from prism import plans, runtime, workloads
from prism.codegen import Options, generate
from prism.reference import relative_error
from prism.tune.tuner import default_scales, random_inputs


def main(argv: list[str]) -> int:
    cid = argv[0] if argv else "gqa_h1024"
    sizes = json.loads(argv[1]) if len(argv) > 1 else {"x": 2, "s": 16, "i": 2}
    cfg = workloads.config(cid)
    g = cfg.build()
    template = next(t for t in plans.codegen_plans(cfg.program, g) if len(t.kernels) == 2)
    opts = Options(**json.loads(argv[3])) if len(argv) > 3 else Options()
    plan = generate(template.instantiate(sizes), arch="sm_80", options=opts)
    assert len(plan.kernels) == 1 and "+" in plan.kernels[0].name, [k.name for k in plan.kernels]
    fn = runtime.compile_plan(plan)
    worst = 0.0
    for call in range(4):
        xs = random_inputs(g, default_scales(g), call)
        args = [torch.tensor(xs[t.name], device="cuda", dtype=torch.float16) for t in g.inputs]
        halves = {t.name: a.double().cpu().numpy() for t, a in zip(g.inputs, args, strict=True)}
        ref = g.evaluate(halves)[g.outputs[0].name]
        out = fn(*args)
        torch.cuda.synchronize()
        worst = max(worst, relative_error(out.double().cpu().numpy(), ref))
    graph = torch.cuda.CUDAGraph()
    out = fn(*args)
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        gout = fn(*args)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    same = bool(torch.equal(out, gout))
    stress = int(argv[2]) if len(argv) > 2 else 0
    outs = [torch.empty_like(out) for _ in range(min(stress, 64))]
    differ = 0
    for k in range(stress):
        fn(*args, out=outs[k % len(outs)])
        if k % len(outs) == len(outs) - 1 or k == stress - 1:
            torch.cuda.synchronize()
            differ += sum(not torch.equal(o, out) for o in outs[: k % len(outs) + 1])
    print(json.dumps({"config": cid, "sizes": sizes, "kernel": plan.kernels[0].name, "grid": plan.kernels[0].grid,
                      "worst_rel_err": worst, "graph_replay_identical": same, "stress_launches": stress,
                      "stress_outputs_differing": differ}))
    return 0 if worst < 2e-2 and same and differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
