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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from stepped_copies_check import changed, compare_compiled, plans

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.lower import lower_graph
from prism.codegen.lowered import KernelLowering
from prism.errors import CodegenError, IRError
from tests.test_carried_copies import _carried, _expected


def check_loop(low: KernelLowering, source: str, every: int) -> None:
    for lp in (lp for lp in low.loads if lp.buf.ring):
        for tid in sorted({*range(0, low.threads, every), low.threads - 1}):
            assert _carried(source, low, lp, tid) == _expected(low, lp, tid), (lp.fn, tid)


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
        for low in (low for low in lowered.kernels if low is not None and low.carried):
            source = next(k.source for k in on if f"kernel '{low.kernel.name}'" in k.source)
            check_loop(low, source, args.every)
            loops += 1
        pairs += changed(label, on, off)
    print(f"{loops} carried loops: each copies what the plain loop copies, in every iteration")
    compare_compiled(pairs, "carried", spilling=True)


if __name__ == "__main__":
    main()
