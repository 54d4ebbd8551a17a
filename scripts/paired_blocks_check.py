"""Two blocks of 4 warps an SM over the zoo (CPU, no GPU; docs/codegen.md, "Two blocks of 4 warps an SM").

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/paired_blocks_check.py [--which prefill] [--top 12]

For each zoo program whose whole-program search is in the cache (no search runs here): every generated
template of its plans and of its parts, the ``--top`` legal sizes the static prior ranks first for sm_90.
Counts the kernels ``Options.paired_blocks`` launches at 4 warps where they took 8, the templates whose
prior-best size it moves, and compiles each changed kernel with nvcc (registers, spills).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from stepped_copies_check import cached_outcomes

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.nvcc import compile_check
from prism.codegen.resources import resources
from prism.codegen.sizes import size_score
from prism.errors import CodegenError, IRError
from prism.ir import CustomKernel, KernelGraph
from prism.tune import draw

OFF = Options(paired_blocks=False)


def templates(which: str) -> list[tuple[str, KernelGraph]]:
    out = []
    for name, _, outcome in cached_outcomes((which,)):
        groups = [(name, outcome.templates)] + [(f"{name}.p{po.part.index}", po.outcome.templates) for po in outcome.parts]
        out += [(label, t) for label, ts in groups for t in ts if all(isinstance(k, CustomKernel) for k in t.kernels)]
    return out


def _score(kg: KernelGraph, options: Options) -> float | None:
    try:
        return size_score(resources(kg, "sm_90", options=options), arch("sm_90").sms)
    except (CodegenError, IRError, IndexError):
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="prefill")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    changed: list[tuple[str, Any]] = []
    moved = checked = 0
    for label, t in templates(args.which):
        sizes = draw.legal_sizes_of(t, "sm_90", resources, 3000)[: args.top]
        for sz in sizes:
            kg = t.instantiate(sz)
            try:
                on, off = (resources(kg, "sm_90", options=o).kernels for o in (Options(), OFF))
            except (CodegenError, IRError):
                continue
            checked += 1
            if any(a.threads != b.threads for a, b in zip(on, off, strict=True)):
                changed += [(f"{label} {sz}", k) for k in generate(kg, arch="sm_90").kernels]
        scores = {tuple(sz.items()): (_score(t.instantiate(sz), Options()), _score(t.instantiate(sz), OFF))
                  for sz in sizes}
        best = [max((k for k in scores if scores[k][i] is not None), key=lambda k: scores[k][i], default=None)
                for i in (0, 1)]
        if best[0] != best[1]:
            moved += 1
            print(f"{label}: prior-best {dict(best[1] or ())} -> {dict(best[0] or ())}")
    print(f"{checked} template sizes; {len(changed)} kernels lowered at 4 warps where they took 8; "
          f"prior-best size moved in {moved} templates (among each one's first {args.top})")
    compiled = compile_check([(k.entry, k.source) for _, k in changed], "sm_80")
    for (what, _), c in zip(changed, compiled, strict=True):
        if c.spills:
            print(f"  {what}: {c.registers} registers, {c.spills} spills")
    print(f"spilling: {sum((c.spills or 0) > 0 for c in compiled)} of {len(compiled)}")


if __name__ == "__main__":
    main()
