"""Device probe (issue 14): how the tuner's static size prior ranks a program's split-loop plans.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/prior_sweep.py scaled_attention[,NAME] \
        [--which decode] [--per 8] [--out FILE]

For each constructed template of two or more kernels (the carried search cache; no search runs here):
``--per`` legal sizes (powers of two, ``generated_sizes``) spread over the prior's ranking (its best
three, its pick with the fewest loop iterations, then evenly down the rest), each generated, checked
against the float64 reference (``gpu_option_ab._variant``) and timed with the bench protocol, beside
its ``size_score``. Prints each variant, the rank correlation of prior and time per program, and the
prior's pick against the best.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import torch
from gpu_option_ab import _variant
from prior_correlation import spearman
from split_sweep import _is_loop, _loop

from bench.zoo import zoo_graph
from prism import pipeline
from prism.codegen import Options
from prism.codegen.arch import arch as get_arch
from prism.codegen.sizes import generated_sizes, size_score
from prism.ir import KernelGraph
from prism.rows import searched_graph
from prism.tune.tuner import default_scales, random_inputs


def _picks(t: KernelGraph, per: int) -> list[tuple[float, dict[str, int]]]:
    sms = get_arch("sm_90").sms
    scored = sorted(((size_score(res, sms), sz) for sz, res in itertools.islice(generated_sizes(t, "sm_90"), 3000)),
                    key=lambda c: -c[0])
    if len(scored) <= per:
        return scored
    top = scored[0][1]
    fewest = min((c for c in scored if all(v == top[k] for k, v in c[1].items() if not _is_loop(k))),
                 key=lambda c: _loop(c[1]))  # the prior's pick with the fewest loop iterations
    rest = [c for c in scored[3:] if c is not fewest]
    step = max(1, len(rest) // (per - 4))
    return [*scored[:3], *([] if fewest in scored[:3] else [fewest]), *rest[::step][: per - 4]]


def sweep(program: str, which: str, per: int) -> list[dict[str, Any]]:
    graph = searched_graph(zoo_graph(program, which))
    found = pipeline.search_and_verify(graph, program=program, progress=False)
    inputs = random_inputs(graph, default_scales(graph), 0)
    tensors = [torch.tensor(inputs[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
    halves = {t.name: a.double().cpu().numpy() for t, a in zip(graph.inputs, tensors, strict=True)}
    ref = [graph.evaluate(halves)[t.name] for t in graph.outputs]
    rows = []
    for ti, t in enumerate(found.of(pipeline.PlanSource.CONSTRUCTED)):
        if len(t.kernels) < 2 or "s" not in t.symbols:
            continue
        for score, sz in _picks(t, per):
            rec = _variant(t.instantiate(sz), Options(), tensors, ref)
            rows.append({"program": program, "template": ti, "sizes": sz, "prior": score, **rec})
            print(program, ti, sz, f"prior {score:.2f}", rec.get("us"), rec.get("error", ""), flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("programs")
    ap.add_argument("--which", default="decode")
    ap.add_argument("--per", type=int, default=8)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "prior_sweep.json"))
    args = ap.parse_args()
    rows = [r for p in args.programs.split(",") for r in sweep(p, args.which, args.per)]
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    for p in args.programs.split(","):
        ok = [r for r in rows if r["program"] == p and "us" in r]
        if len(ok) > 2:
            rho = spearman([-r["prior"] for r in ok], [r["us"] for r in ok])
            pick, best = max(ok, key=lambda r: r["prior"]), min(ok, key=lambda r: r["us"])
            print(f"{p}: rank correlation {rho:.2f}; prior's pick {pick['template']} {pick['sizes']} {pick['us']:.2f} µs, "
                  f"best {best['template']} {best['sizes']} {best['us']:.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
