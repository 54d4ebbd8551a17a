"""Matmul tiles one mma n-tile wide over the zoo and the benchmark (CPU, no GPU; ``Options.narrow_mma``).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/narrow_mma_check.py [--which decode]
        [--only a,b] [--templates 16] [--no-compile]

For each zoo program at ``--which`` sizes whose whole-program search is in the cache (no search runs here),
and each benchmark configuration: the first ``--templates`` generated templates of its plans and of
its parts, its legal sizes for sm_90 with the option on and off. Counts the templates whose prior-best size (``size_score``)
is new with the option (an 8-wide matmul tile), emulates each such kernel graph against the program's
float64 reference where the template is the whole program, and compiles it with nvcc (registers, spills).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from stepped_copies_check import cached_outcomes

from prism import pipeline, workloads
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate
from prism.codegen.nvcc import compile_check
from prism.codegen.sizes import generated_sizes, size_score
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.reference import relative_error
from prism.tune.tuner import default_scales, random_inputs

NARROW = Options(narrow_mma=True)


def groups(which: str, only: set[str] | None) -> list[tuple[str, Graph, pipeline.SearchOutcome]]:
    out = [(name, graph, outcome) for name, _, graph, outcome in cached_outcomes((which,), only)]
    for cid, cfg in workloads.CONFIGS.items():
        if only is not None and cid not in only:
            continue
        g = cfg.build()
        out.append((cid, g, pipeline.search_and_verify(g, program=cfg.program, progress=False)))
    return out


def best(t: KernelGraph, options: Options | None) -> tuple[dict[str, int], float] | None:
    sms = arch("sm_90").sms
    ranked = [(sz, size_score(r, sms)) for sz, r in generated_sizes(t, "sm_90", options=options)]
    return max(ranked, key=lambda r: r[1], default=None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="decode")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--templates", type=int, default=16, help="at most this many templates of each plan set")
    ap.add_argument("--only", default=None, help="zoo programs and benchmark configurations, comma-separated")
    args = ap.parse_args()
    moved: list[tuple[str, KernelGraph]] = []
    checked = errors = 0
    for name, graph, outcome in groups(args.which, set(args.only.split(",")) if args.only else None):
        n = args.templates
        whole = [(name, t, True) for t in outcome.templates[:n]]
        parts = [(f"{name}.p{po.part.index}", t, False) for po in outcome.parts for t in po.outcome.templates[:n]]
        for label, t, is_whole in whole + parts:
            if not all(isinstance(k, CustomKernel) for k in t.kernels):
                continue
            on, off = best(t, NARROW), best(t, None)
            if on is None:
                continue
            checked += 1
            if off is not None and on[0] == off[0]:
                continue
            kg = t.instantiate(on[0])
            moved.append((label, kg))
            if is_whole:
                x = random_inputs(graph, default_scales(graph), 1)
                want, got = graph.evaluate(x), emulate(kg, x, arch="sm_90", options=NARROW)
                err = max(relative_error(got[o.name], want[o.name]) for o in graph.outputs)
                errors += not err < 1e-6
                print(f"{label}: {on[0]} (prior {on[1]:.2f}, was {off[1] if off else float('nan'):.2f}) "
                      f"emulated, relative error {err:.2e}", flush=True)
            else:
                print(f"{label}: {on[0]} (prior {on[1]:.2f}, was {off[1] if off else float('nan'):.2f})", flush=True)
    print(f"{checked} templates, {len(moved)} whose prior-best size is narrow, {errors} emulated wrong")
    if args.no_compile or not moved:
        return
    sources = [(k.entry, k.source) for _, kg in moved for k in generate(kg, arch="sm_90", options=NARROW).kernels]
    compiled: list[Any] = compile_check(sources, "sm_80", jobs=2)
    spilled = [c for c in compiled if c.spills]
    print(f"{len(compiled)} kernels compiled, {len(spilled)} spilling, registers up to "
          f"{max((c.registers or 0) for c in compiled)}")


if __name__ == "__main__":
    main()
