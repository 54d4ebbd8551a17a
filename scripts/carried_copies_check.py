"""Carried copy addresses over the zoo (CPU, no GPU; docs/codegen.md, "Carried copy addresses").

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/carried_copies_check.py [--every 7] [--templates 3]

For each zoo program whose whole-program search is in the cache (no search runs here), at decode and
prefill sizes: its first searched templates at two legal sizes each (``stepped_copies_check.plans``),
generated with the default options. In every kernel with a carried loop, each ring Load's copies, read
from the rendered source and evaluated for every ``--every``-th thread and the last, must be exactly what
the plain loop copies in every iteration (``tests/test_carried_copies``'s evaluators). Then those kernels
are compiled with nvcc both ways: registers and spills.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from stepped_copies_check import plans

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.lower import lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check
from prism.errors import CodegenError, IRError
from tests.test_carried_copies import _carried, _expected


def check_loops(low: KernelLowering, source: str, every: int) -> int:
    for lp in (lp for lp in low.loads if lp.buf.ring):
        for tid in sorted({*range(0, low.threads, every), low.threads - 1}):
            assert _carried(source, low, lp, tid) == _expected(low, lp, tid), (lp.fn, tid)
    return 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=7)
    ap.add_argument("--templates", type=int, default=3)
    args = ap.parse_args()
    loops, pairs = 0, []
    for label, kg in plans(args.templates):
        try:
            lowered = lower_graph(kg, arch("sm_80"), Options())
            on, off = (generate(kg, arch="sm_80", options=o).kernels for o in (Options(), Options(carried_copies=False)))
        except (CodegenError, IRError):
            continue
        carried = [low for low in lowered.kernels if low is not None and low.carried]
        by_entry = {k.entry: k.source for k in on}
        for low in carried:
            source = next(s for s in by_entry.values() if f"'{low.kernel.name}'" in s.splitlines()[1])
            loops += check_loops(low, source, args.every)
        pairs += [(label, a, b) for a, b in zip(on, off, strict=True)
                  if a.source.replace(a.entry, "k") != b.source.replace(b.entry, "k")]
    print(f"{loops} carried loops: each copies what the plain loop copies, in every iteration")
    on_c: list[Any] = compile_check([(a.entry, a.source) for _, a, _ in pairs], "sm_80")
    off_c: list[Any] = compile_check([(b.entry, b.source) for _, _, b in pairs], "sm_80")
    both = list(zip(on_c, off_c, strict=True))
    diffs = [a.registers - b.registers for a, b in both]
    for (label, _, _), (a, b) in zip(pairs, both, strict=True):
        if a.spills or b.spills:
            print(f"  {label}: spills {a.spills} carried, {b.spills} item by item ({a.registers} / {b.registers} registers)")
    print(f"{len(pairs)} kernels whose source the option changes ({len({lbl for lbl, _, _ in pairs})} programs): "
          f"spilling {sum(a.spills > 0 for a, _ in both)} carried, {sum(b.spills > 0 for _, b in both)} item by item; "
          f"registers carried minus item by item: mean {sum(diffs) / max(1, len(diffs)):.1f}, "
          f"fewer in {sum(d < 0 for d in diffs)}, more in {sum(d > 0 for d in diffs)}")


if __name__ == "__main__":
    main()
