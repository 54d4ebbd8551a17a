"""Device probe (issue 14): a generated GEMM's source against hand edits of its main loop's refill.

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/gemm_hack_probe.py \\
        --at 'matmul_residual.p0:2:[{"k0_x": 4, "k0_y": 64, "k0_i": 64}]' --hacks none,carried --rounds 2
    python3 scripts/gemm_hack_probe.py --at ... --hacks carried --emit DIR   # CPU: write the edited sources

Hacks (each a text edit of the generated source, checked against float64 before it is timed):
``carried``: every loop-varying loader's per-copy global pointers and shared offsets are computed once
before the loop and kept in registers of their own, each pointer advanced by the tile's step after its
copy (CUTLASS's iterator form; advanced just before its copy, so the register an in-flight copy reads is
not written again until the next refill): no copy's address is recomputed into a register pair the next copy reuses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

LOADER = re.compile(
    r"__device__ __forceinline__ void (load_s_\w+)"
    r"\(unsigned dst, const half_t\* __restrict__ src, const int tid\) \{\n"
    r"#pragma unroll\n  for \(int j = 0; j < (\d+); \+\+j\) \{\n(?P<body>(?:    .*\n)+?)"
    r"    cp_async16\((?P<dst>.*), (?P<src>src \+ .*)\);\n  \}\n\}\n")
REFILL = re.compile(
    r"        (load_s_\w+)\(smem_base \+ (?P<slot>[^,]+), (?P<origin>g_s_\w+) \+ nx \* (?P<step>\d+), tid\);\n")


def carried(src: str) -> str:
    """The ``carried`` edit (see the module doc)."""
    loaders = {m.group(1): m for m in LOADER.finditer(src)}
    refills = list(REFILL.finditer(src))
    assert refills and all(r.group(1) in loaders for r in refills), "no refill of a known loader"
    decls, inits, copies = [], [], []
    for r in refills:
        name, m = r.group(1), loaders[r.group(1)]
        n, body = int(m.group(2)), m.group("body")
        p, d = f"p_{name}", f"d_{name}"
        decls.append(f"  const half_t* {p}[{n}];\n  unsigned {d}[{n}];\n")
        first = m.group("src").replace("src", f"({r.group('origin')} + {r.group('step')} * STAGES_AHEAD)", 1)
        inits.append(f"  #pragma unroll\n  for (int j = 0; j < {n}; ++j) {{\n{body}"
                     f"    {p}[j] = {first};\n    {d}[j] = {m.group('dst').replace('dst + ', '', 1)};\n  }}\n")
        copies.append(f"        #pragma unroll\n        for (int j = 0; j < {n}; ++j) {{\n"
                      f"          {p}[j] += {r.group('step')};\n"
                      f"          cp_async16(smem_base + {r.group('slot')} + {d}[j], {p}[j]);\n        }}\n")
    ahead = re.search(r"const int nx = it \+ (\d+);", src)
    assert ahead
    block = "".join(decls) + "".join(inits).replace("STAGES_AHEAD", str(int(ahead.group(1)) - 1))
    start, end = refills[0].start(), refills[-1].end()
    out = src[:start] + "".join(copies) + src[end:]
    return out.replace("  int sb_rd = 0, sb_wr", block + "  int sb_rd = 0, sb_wr", 1)


HACKS = {"none": lambda s: s, "carried": carried}


def _plan(label: str, index: int, sizes: dict[str, int], which: str, hack: str) -> tuple[Any, Any]:
    from gemm_probe import groups

    from prism.codegen import Options, generate

    _, graph, templates = next(g for g in groups(label.split(".")[0], which) if g[0] == label)
    plan = generate(templates[index].instantiate(sizes), arch="sm_80", options=Options())
    steps = tuple(dataclasses.replace(s, source=HACKS[hack](s.source)) if hasattr(s, "source") else s
                  for s in plan.steps)
    return graph, dataclasses.replace(plan, steps=steps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--at", required=True, help="GROUP:TEMPLATE:[sizes, ...] as gemm_probe.py --at")
    ap.add_argument("--which", default="prefill")
    ap.add_argument("--hacks", default="none,carried")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--emit", help="write the edited sources here instead of timing (no GPU)")
    args = ap.parse_args()
    label, index, sizes_json = args.at.split(":", 2)
    cases = [(sz, h) for sz in json.loads(sizes_json) for h in args.hacks.split(",")]
    if args.emit:
        os.makedirs(args.emit, exist_ok=True)
        for k, (sz, h) in enumerate(cases):
            _, plan = _plan(label, int(index), sz, args.which, h)
            with open(os.path.join(args.emit, f"{k}_{h}.cu"), "w") as f:
                f.write(plan.kernels[0].source)
        return
    from bench.programs import roofline
    from prism import runtime
    from prism.tune import CudaBackend
    from prism.tune.tuner import default_scales, random_inputs, reference_error

    built = []
    for sz, h in cases:
        graph, plan = _plan(label, int(index), sz, args.which, h)
        built.append((sz, h, graph, runtime.compile_plan(plan)))
    backend = CudaBackend()
    backend.setup(built[0][2], random_inputs(built[0][2], default_scales(built[0][2]), 1))
    for rnd in range(args.rounds):
        for sz, h, graph, kernel in built:
            row: dict[str, Any] = {"round": rnd, "group": label, "template": int(index), "sizes": sz, "hack": h}
            if rnd == 0:
                row["rel_err"] = reference_error(backend, kernel, graph, random_inputs(graph, default_scales(graph), 2))
            row["us"] = backend.time_us(kernel)
            row["tflops"] = roofline(graph).flops / (row["us"] * 1e-6) / 1e12
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
