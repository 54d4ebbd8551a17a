"""A float32 program through ``superoptimize`` on the GPU (its predefined plan; generated kernels
need a half dtype), checked against the float64 reference; also float16 and bfloat16 for contrast.

    PYTHONPATH=. python scripts/gpu_float32_check.py
"""

from __future__ import annotations

import json

import numpy as np

import prism
from prism.graph import Graph
from prism.reference import relative_error


def program(dtype: str) -> Graph:
    g = Graph()
    x = g.input((8, 1024), dtype, "X")
    w = g.input((1024, 512), dtype, "W")
    g.output(g.silu(g.matmul(g.rms_norm(x), w)), "O")
    return g


def main() -> None:
    import torch

    rows = []
    for dtype in ("float32", "float16", "bfloat16"):
        g = program(dtype)
        fn = prism.superoptimize(g, samples=4, inductor=False)  # the generated kernels in each dtype
        rng = np.random.default_rng(0)
        inputs = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in g.inputs}
        inputs["W"] /= 32.0
        tdt = getattr(torch, dtype)
        args = [torch.from_numpy(inputs[t.name]).to("cuda", tdt) for t in g.inputs]
        out = fn(*args)
        torch.cuda.synchronize()
        ref = g.evaluate({t.name: a.double().cpu().numpy() for t, a in zip(g.inputs, args, strict=True)})["O"]
        rows.append({"dtype": dtype, "plan_source": fn.summary.get("plan_source"),
                     "rel_err": relative_error(out.double().cpu().numpy(), ref), "best_us": fn.summary.get("best_us")})
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
