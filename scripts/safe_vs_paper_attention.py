"""The online-softmax kernels beside the paper-softmax kernels of the same shape (GPU, diagnostic).

    PYTHONPATH=. python scripts/safe_vs_paper_attention.py [--samples 24] [--out results.json]

Both from the hand-built plans of prism/plans.py through the tuner (its timing, the checked
winner), so the cost of the rescaling is seen apart from what the search finds; the headline
figures come from ``python -m bench`` (prism.superoptimize). Paper-form inputs: Q (or Kt after
the norm) scaled by 1/sqrt(head_dim), so that exp does not overflow; safe: unit-normal inputs.
"""

from __future__ import annotations

import argparse
import json

from prism import plans, workloads
from prism.tune import tune

SHAPES = {"h1024": dict(batch=2, group=8, kv_len=1024, head_dim=128),
          "h2048": dict(batch=2, group=8, kv_len=2048, head_dim=128),
          "b32_kv4096": dict(batch=32, group=8, kv_len=4096, head_dim=128),
          "b32_kv8192": dict(batch=32, group=8, kv_len=8192, head_dim=128)}


def _best(program: str, sizes: dict[str, int], scales: dict[str, float], samples: int) -> dict[str, object]:
    g = workloads.program(program, **sizes)
    out: dict[str, object] = {}
    for i, kg in enumerate(plans.hand_plans(program, g)):
        res = tune(g, [kg], samples=samples, seed=0, scales=scales, jobs=8)
        out[f"plan{i}_{kg.kernels[0].name}"] = {"us": round(res.time_us, 2), "sizes": res.sizes,
                                                 "rel_err": res.rel_err}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--out", default="")
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated: {', '.join(SHAPES)}")
    args = ap.parse_args()
    rows = []
    for sizes in (SHAPES[s] for s in args.shapes.split(",")):
        for norm in (False, True):
            paper, safe = ("qknorm_gqa", "qknorm_gqa_safe") if norm else ("gqa", "gqa_safe")
            scale = {"Kt": 128**-0.5} if norm else {"Q": 128**-0.5}
            row = {"shape": sizes, "program": safe, "paper": _best(paper, sizes, scale, args.samples),
                   "safe": _best(safe, sizes, {}, args.samples)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
