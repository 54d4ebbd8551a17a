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
    for name, _, _, outcome in cached_outcomes((which,)):
        groups = [(name, outcome.templates)] + [(f"{name}.p{po.part.index}", po.outcome.templates) for po in outcome.parts]
        out += [(label, t) for label, ts in groups for t in ts if all(isinstance(k, CustomKernel) for k in t.kernels)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="prefill")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    changed: list[tuple[str, Any]] = []
    moved = checked = 0
    sms = arch("sm_90").sms
    for label, t in templates(args.which):
        scores: dict[tuple[tuple[str, int], ...], tuple[float, float]] = {}
        for sz in draw.legal_sizes_of(t, "sm_90", resources, 3000)[: args.top]:
            kg = t.instantiate(sz)
            try:
                on, off = (resources(kg, "sm_90", options=o) for o in (Options(), OFF))
            except (CodegenError, IRError):
                continue
            checked += 1
            scores[tuple(sz.items())] = (size_score(on, sms), size_score(off, sms))
            if any(a.threads != b.threads for a, b in zip(on.kernels, off.kernels, strict=True)):
                changed += [(f"{label} {sz}", k) for k in generate(kg, arch="sm_90").kernels]
        best = [max(scores, key=lambda k: scores[k][i], default=None) for i in (0, 1)]
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
