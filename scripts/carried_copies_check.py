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

import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

from stepped_copies_check import compare_compiled, sweep, sweep_args

from prism.codegen import Options
from prism.codegen.lowered import KernelLowering
from tests.test_carried_copies import _carried, _expected


def check_loop(low: KernelLowering, source: str, every: int) -> None:
    for lp in (lp for lp in low.loads if lp.buf.ring):
        for tid in sorted({*range(0, low.threads, every), low.threads - 1}):
            assert _carried(source, low, lp, tid) == _expected(low, lp, tid), (lp.fn, tid)


def check_loops(lowered: list[KernelLowering], on: list[Any], every: int) -> int:
    """Every carried loop of ``lowered`` checked against its source among ``on``; their count."""
    carried = [low for low in lowered if low.carried]
    for low in carried:
        check_loop(low, next(k.source for k in on if f"kernel '{low.kernel.name}'" in k.source), every)
    return len(carried)


def main() -> None:
    args = sweep_args()
    loops, pairs = sweep(args.templates, Options(carried_copies=False),
                         lambda lowered, on: check_loops(lowered, on, args.every))
    print(f"{loops} carried loops: each copies what the plain loop copies, in every iteration")
    compare_compiled(pairs, "carried", spilling=True)

if __name__ == "__main__":
    main()
