"""Time a program's split-loop plans (``prism.loopsplit``) over their split counts on the GPU.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/split_sweep.py scaled_attention \
        [--which decode] [--splits 16,32,64] [--combine 1,4,8,16] [--out FILE]

For each constructed template of two or more kernels (the carried search cache; no search runs here):
its power-of-two legal sizes with the largest first grid dim, ``s`` in ``--splits``, a spread
combine's ``c`` in ``--combine`` (``spread_combine``), and a second grid dim of 1 or 4, the fewest loop
iterations per split; each generated, checked against the float64 reference (``gpu_option_ab._variant``)
and timed with the bench protocol. Prints every variant and the best with and without a spread combine.
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

from bench.zoo import zoo_graph
from prism import pipeline
from prism.codegen import Options
from prism.codegen.sizes import generated_sizes
from prism.ir import CustomKernel, KernelGraph
from prism.rows import searched_graph
from prism.tune.tuner import default_scales, random_inputs


def _is_loop(symbol: str) -> bool:
    return symbol == "i" or symbol.endswith("_i")


def _loop(sizes: dict[str, int]) -> int:
    return next((v for k, v in sizes.items() if _is_loop(k)), 1)


def _picks(t: KernelGraph, splits: set[int], combine: set[int]) -> list[dict[str, int]]:
    k = t.kernels[0]
    if not isinstance(k, CustomKernel) or "s" not in t.symbols:
        return []
    legal = [sz for sz, _ in itertools.islice(generated_sizes(t, "sm_90"), 3000)]
    first = k.grid[0] if k.grid else None
    top = max((sz.get(str(first), 1) for sz in legal), default=1)
    best: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    for sz in legal:
        if sz.get(str(first), 1) != top or sz.get("s") not in splits or sz.get("c", 1) not in combine:
            continue
        if any(k.endswith("_y") and v not in (1, 4) for k, v in sz.items()):
            continue
        key = tuple((k, v) for k, v in sz.items() if not _is_loop(k))
        if key not in best or _loop(sz) < _loop(best[key]):
            best[key] = sz
    return list(best.values())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("--which", default="decode")
    ap.add_argument("--splits", default="16,32,64")
    ap.add_argument("--combine", default="1,4,8,16")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "split_sweep.json"))
    args = ap.parse_args()
    splits, combine = ({int(v) for v in a.split(",")} for a in (args.splits, args.combine))
    graph = searched_graph(zoo_graph(args.program, args.which))
    found = pipeline.search_and_verify(graph, program=args.program, progress=False)
    inputs = random_inputs(graph, default_scales(graph), 0)
    tensors = [torch.tensor(inputs[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
    halves = {t.name: a.double().cpu().numpy() for t, a in zip(graph.inputs, tensors, strict=True)}
    ref = [graph.evaluate(halves)[t.name] for t in graph.outputs]
    rows: list[dict[str, Any]] = []
    for ti, t in enumerate(found.of(pipeline.PlanSource.CONSTRUCTED)):
        if len(t.kernels) < 2:
            continue
        spread = any(k.name.endswith("_wide") for k in t.kernels)
        for sz in _picks(t, splits, combine):
            rec = _variant(t.instantiate(sz), Options(), tensors, ref)
            rows.append({"program": args.program, "template": ti, "spread": spread, "sizes": sz, **rec})
            print(ti, "spread" if spread else "split ", sz, rec.get("us"), rec.get("error", ""), flush=True)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)
    for sp in (False, True):
        ok = [r for r in rows if r["spread"] == sp and "us" in r]
        if ok:
            b = min(ok, key=lambda r: r["us"])
            print("best", "spread" if sp else "split", b["template"], b["sizes"], f"{b['us']:.2f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
