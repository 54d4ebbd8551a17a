"""Device probe (issue 14): generated GEMV kernels and source-level variants of them, graph-timed.

    PYTHONPATH=. python3 scripts/gemv_variants.py --out $OUT time [--set diag] [--rounds 2]
    ncu ... python3 scripts/gemv_variants.py --out $OUT ncu --only NAME[,NAME]   # one launch each

A variant is (config, plan, sizes, Options, hacks). Hacks edit the generated CUDA text to take one
part of the loop out (``nocomp``: no mma / reduction in the loop; ``nox``: no X copies in the loop;
``nobar``: no block barrier in the loop): those kernels compute wrong values and are timed only, to
say which part of the loop sets the time. ``evict`` (an L2 evict-first policy on the copies of the
weight tiles) computes the same values and is checked. Every variant without a destructive hack is
checked against the float64 reference on fresh inputs (output poisoned with NaN) before timing; timing
follows docs/benchmarks.md (CUDA graph of 20 calls on rotating input copies, median of 30 replays / 20).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from prism import plans, workloads
from prism.codegen import Options, generate
from prism.reference import relative_error

ARCH = "sm_90"
L2_BYTES = 60 * 2**20
DESTRUCTIVE = {"nocomp", "nox", "nobar", "nopad", "noxpro", "nomat", "nocomb", "combD", "comb1"}
ST = 163840


@dataclasses.dataclass(frozen=True)
class Variant:
    config: str
    plan: int
    sizes: tuple[tuple[str, int], ...]
    options: tuple[tuple[str, int], ...] = ()
    hacks: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        s = ",".join(f"{k}={v}" for k, v in self.sizes)
        o = ",".join(f"{k}={v}" for k, v in self.options)
        h = "+".join(self.hacks)
        short = self.config[:-6] if self.config.endswith("_d4096") else self.config
        return f"{short} p{self.plan} {s} [{o}]" + (f" {h}" if h else "")


def v(config: str, plan: int, sizes: dict[str, int], options: dict[str, int] | None = None,
      hacks: tuple[str, ...] = ()) -> Variant:
    return Variant(config, plan, tuple(sizes.items()), tuple((options or {}).items()), hacks)


RL, SW = "rmsnorm_linear_d4096", "swiglu_d4096"
DNL = "zoo:decoder_norm_linear:decode:stitched"  # 16 rows, d 2048 -> 8192: the gate projection of a decode batch
SETS: dict[str, list[Variant]] = {
    "diag": [
        *(v(RL, 0, {"x": 128, "i": 32}, {"stage_target": ST}, h) for h in
          ((), ("nocomp",), ("nox",), ("nobar",), ("nocomp", "nobar"), ("nocomp", "nox"), ("evict",))),
        v(RL, 0, {"x": 128, "i": 16}, {"stage_target": ST}),
        v(RL, 0, {"x": 128, "i": 16}, {"stage_target": ST}, ("nocomp",)),
        v(RL, 0, {"x": 128, "i": 64}, {"stage_target": ST}),
        v(RL, 0, {"x": 128, "i": 32}, {"stage_target": 65536}),
        v(RL, 0, {"x": 128, "i": 32}, {"warps": 8, "stage_target": ST}),
        v(RL, 0, {"x": 128, "i": 32}, {"warps": 8, "stage_target": ST}, ("nocomp",)),
        *(v(RL, 0, {"x": 256, "i": i}, {"stage_target": t}) for i in (16, 32) for t in (65536, 98304)),
        v(RL, 0, {"x": 256, "i": 32}, {"stage_target": 65536}, ("nocomp",)),
        *(v(SW, 0, {"x": 128, "i": 32}, {"stage_target": ST}, h) for h in
          ((), ("nocomp",), ("nox",), ("nobar",), ("evict",))),
        v(SW, 0, {"x": 128, "i": 64}, {"stage_target": ST}),
        v(SW, 0, {"x": 128, "i": 64}, {"stage_target": ST}, ("nocomp",)),
        *(v(SW, 0, {"x": 256, "i": i}, {"stage_target": 98304}) for i in (32, 64)),
    ],
    "cand": [
        *(v(RL, 0, {"x": 128, "i": i}, {"stage_target": t}) for i in (32, 16) for t in (ST, 98304)),
        v(RL, 0, {"x": 128, "i": 32}, {"warps": 8, "stage_target": ST}),
        v(RL, 0, {"x": 256, "i": 32}, {"stage_target": 98304}),
        *(v(SW, 0, {"x": 128, "i": i}, {"stage_target": ST}) for i in (32, 64, 16)),
        v(SW, 0, {"x": 128, "i": 32}, {"stage_target": 98304}),
        v(SW, 0, {"x": 256, "i": 64}, {"stage_target": 98304}),
    ],
    "diag2": [
        *(v(RL, 0, {"x": 128, "i": 32}, {"stage_target": ST}, h) for h in
          ((), ("nocomp", "nox"), ("nocomp", "nox", "nopad"), ("nocomp", "nox", "noxpro"),
           ("nocomp", "nox", "nopad", "noxpro"), ("nocomp", "nopad"), ("nocomp",))),
        *(v(SW, 0, {"x": 128, "i": 32}, {"stage_target": ST}, h) for h in
          ((), ("nocomp", "nox"), ("nocomp", "nox", "nopad"), ("nocomp", "nox", "nopad", "noxpro"))),
    ],
    "diag3": [
        *(v(c, 0, {"x": 128, "i": 32}, {"stage_target": ST}, h) for c in (RL, SW)
          for h in ((), ("nocomp",), ("nocomp", "nox"))),
    ],
    "tune": [
        *(v(RL, 0, {"x": 128, "i": i}, o) for i in (16, 32) for o in ({}, {"warps": 8})),
        v(RL, 0, {"x": 128, "i": 32}, {"stage_target": 65536}),
        *(v(SW, 0, {"x": 128, "i": 32}, o) for o in ({}, {"warps": 8})),
    ],
    # issue 14, X-tile swizzle: the same variants in both trees (default options unless named), then the
    # rotated loop orders (Options.rotate, after tree only)
    "b14": [
        v(RL, 0, {"x": 128, "i": 32}), v(RL, 0, {"x": 128, "i": 16}), v(RL, 0, {"x": 128, "i": 32}, {"stage_target": ST}),
        v(RL, 0, {"x": 128, "i": 32}, {}, ("nocomp",)),
        v(SW, 0, {"x": 128, "i": 32}), v(SW, 0, {"x": 128, "i": 32}, {"stage_target": ST}),
        v("rmsnorm_linear_d1024", 0, {"x": 64, "i": 8}), v("swiglu_d1024", 0, {"x": 32, "i": 32}),
        v("rmsnorm_mlp_n8", 0, {"x": 64, "i": 2}),
        v("gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}), v("qknorm_gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}),
    ],
    "a14": [],  # b14, then the rotations: filled below
    "split": [
        *(v(RL, 2, {"x": x, "y": y, "i": i, "c": 64}, {"stage_target": t}, h)
          for x, y, i, t in ((64, 2, 16, ST), (32, 4, 8, ST), (16, 8, 8, ST), (64, 4, 8, 98304), (32, 8, 8, 98304))
          for h in ((), ("nocomp",))),
        *(v(SW, 1, {"x": x, "y": y, "i": i, "c": 64}, {"stage_target": t}, h)
          for x, y, i, t in ((64, 2, 32, ST), (32, 4, 16, ST), (64, 4, 16, 98304), (32, 8, 16, 98304))
          for h in ((), ("nocomp",))),
    ],
}

# issue 14, 16-row GEMVs: decoder_norm_linear at decode (X [16, 2048], W [8192, 2048]); stitched template 1
# has the grid over W's rows, template 2 over rows and W's rows
SETS["m16"] = [
    *(v(DNL, 1, {"p1_k0_x": x, "p1_k0_i": i}) for x in (64, 128, 256) for i in (16, 32)),
    *(v(DNL, 1, {"p1_k0_x": 128, "p1_k0_i": 32}, {}, h) for h in (("nocomp",), ("nox",), ("nocomp", "nox"), ("nomat",))),
    v(DNL, 1, {"p1_k0_x": 128, "p1_k0_i": 32}, {"stage_target": ST}),
    v(DNL, 1, {"p1_k0_x": 128, "p1_k0_i": 32}, {"warps": 8}),
    v(DNL, 1, {"p1_k0_x": 128, "p1_k0_i": 16}, {"warps": 8}),
    v(DNL, 1, {"p1_k0_x": 256, "p1_k0_i": 32}, {"warps": 8}),
    v(DNL, 1, {"p1_k0_x": 128, "p1_k0_i": 32}, {"warps": 8}, ("nomat",)),
    v(DNL, 2, {"p1_k0_x": 1, "p1_k0_y": 128, "p1_k0_i": 32}),
    v(DNL, 2, {"p1_k0_x": 2, "p1_k0_y": 64, "p1_k0_i": 32}),
]

SETS["a14"] = [
    *SETS["b14"],
    *(v(RL, 0, {"x": 128, "i": 32}, {"rotate": r}) for r in (4, 8, 32)),
    v(RL, 0, {"x": 128, "i": 16}, {"rotate": 8}),
    v(RL, 0, {"x": 128, "i": 32}, {"stage_target": ST, "rotate": 8}),
    v(RL, 0, {"x": 128, "i": 32}, {"rotate": 8}, ("nocomp",)),
    *(v(SW, 0, {"x": 128, "i": 32}, {"rotate": r}) for r in (8, 32)),
    v(SW, 0, {"x": 128, "i": 32}, {"stage_target": ST, "rotate": 8}),
    v("rmsnorm_linear_d1024", 0, {"x": 64, "i": 8}, {"rotate": 8}),
    v("swiglu_d1024", 0, {"x": 32, "i": 32}, {"rotate": 8}),
    v("rmsnorm_mlp_n8", 0, {"x": 64, "i": 2}, {"rotate": 2}),
    v("gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}, {"rotate": 8}),
    v("qknorm_gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}, {"rotate": 8}),
]

# issue 14, ldmatrix.x2 for A tiles of at most 8 rows (rmsnorm_linear, rmsnorm_mlp, gqa); swiglu's A has
# 16 rows (same code in both trees: the run's noise). Timed against the x2 patch (not kept: no gain; the
# patch is in bench/results/gemv-x-swizzle-2026-12-01-h200.json)
SETS["x2"] = [
    v(RL, 0, {"x": 128, "i": 16}), v(RL, 0, {"x": 128, "i": 32}), v(RL, 0, {"x": 128, "i": 16}, {"rotate": 8}),
    v(RL, 0, {"x": 128, "i": 16}, {}, ("nocomp",)),
    v("rmsnorm_linear_d1024", 0, {"x": 64, "i": 8}), v("rmsnorm_mlp_n8", 0, {"x": 64, "i": 2}),
    v("rmsnorm_mlp_n16", 0, {"x": 64, "i": 2}),
    v("gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}), v("qknorm_gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}),
    v(SW, 0, {"x": 128, "i": 32}), v("swiglu_d1024", 0, {"x": 32, "i": 32}),
]

# issue 14, the latency-bound configurations: where their time goes (timing-only hacks) and the sizes
# around the ones the tuner picks; run with --floor for the hand-written calibration kernels beside them
_RL1, _MLP8, _SW1 = "rmsnorm_linear_d1024", "rmsnorm_mlp_n8", "swiglu_d1024"
SETS["lat"] = [
    *(v(_RL1, 0, {"x": 64, "i": 8}, {}, h) for h in
      ((), ("nocomp",), ("nobar",), ("nox", "noxpro"), ("nocomp", "nox", "noxpro"), ("nocomp", "nobar", "nox", "noxpro"))),
    *(v(_RL1, 0, {"x": x, "i": i}) for x, i in ((64, 4), (64, 2), (32, 8))),
    *(v(_RL1, 2, {"x": 64, "y": y, "i": 8 // y, "c": 64}) for y in (2, 4)),
    v(_RL1, 0, {"x": 64, "i": 8}, {"warps": 8}),
    *(v(_MLP8, 0, {"x": 64, "i": i}, {}, h) for i in (2, 8) for h in ((), ("nocomp",), ("nox", "noxpro"))),
    *(v(_SW1, 0, {"x": 32, "i": 32}, {}, h) for h in ((), ("nocomp",), ("nox", "noxpro"))),
    *(v(_SW1, 0, {"x": x, "i": i}) for x, i in ((64, 8), (64, 16))),
    *(v(_SW1, 1, {"x": 64, "y": y, "i": 16 // y, "c": 64}) for y in (2, 4)),
    v("gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}), v("qknorm_gqa_h1024", 2, {"x": 2, "s": 16, "i": 1}),
]

# the second probe: one wait for a ring as deep as its loop (correct values: checked), the combine's share
# of a fused split-KV attention (``nocomb``: timing only), and the split counts around the picked one
_GQ = ("gqa_h1024", "qknorm_gqa_h1024", "gqa_h2048", "qknorm_gqa_h2048")
SETS["lat2"] = [
    *(v(c, 2, {"x": 2, "s": s, "i": 1}, {}, h) for c in _GQ[:2] for s in (8, 16, 32, 64)
      for h in ((), ("onewait",), ("nocomb",)) if s <= 16 or h != ("onewait",) or c == _GQ[0]),
    *(v(c, 2, {"x": 2, "s": s, "i": 1}, {}, h) for c in _GQ[2:] for s in (16, 32, 64)
      for h in ((), ("onewait",)) if s <= 16 or h != ("onewait",) or c == _GQ[2]),
    *(v(_RL1, 0, {"x": 64, "i": i}, {}, h) for i in (8, 4) for h in ((), ("onewait",))),
    *(v(_MLP8, 0, {"x": 64, "i": i}, {}, h) for i in (8, 2) for h in ((), ("onewait",))),
    *(v(_SW1, 0, {"x": 64, "i": 8}, {}, h) for h in ((), ("onewait",))),
]
# the third: what in the fused combine costs ~0.12 µs a partial (its D copies; distinct partial tiles)
SETS["comb"] = [v("gqa_h1024", 2, {"x": 2, "s": s, "i": 1}, {}, h) for s in (16, 32)
                for h in ((), ("nocomb",), ("combD",), ("comb1",), ("combD", "comb1"))]


# the fourth: combines that read their partials in place (``Options.direct_loops``) or add the elements
# their thread copied, with no barrier per iteration (``Options.own_copies``), against the default
_DL, _OWN = {"direct_loops": 1}, {"own_copies": 1}
SETS["stream"] = [
    *(v(c, 2, {"x": 2, "s": s, "i": 1}, o) for c in _GQ for s in (8, 16, 32) for o in ({}, _OWN, _DL)),
    *(v(_RL1, 2, {"x": 64, "y": y, "i": 8 // y, "c": 64}, o) for y in (2, 4, 8) for o in ({}, _OWN, _DL)),
    *(v(_SW1, 1, {"x": 64, "y": y, "i": 16 // y, "c": 64}, o) for y in (2, 4, 8) for o in ({}, _OWN, _DL)),
]


# the fifth: split-loop plans of a safe decode attention (prism.loopsplit), whole and without the combine
_SA = "zoo:scaled_attention:decode:constructed"
_SA_SIZES = ((4, {"k0_x": 2, "k0_y": 4, "s": 16, "k0_i": 1}), (1, {"k0_x": 2, "s": 16, "k0_i": 4}),
             (1, {"k0_x": 2, "s": 16, "k0_i": 1}), (1, {"k0_x": 2, "s": 32, "k0_i": 2}),
             (1, {"k0_x": 2, "s": 32, "k0_i": 1}), (1, {"k0_x": 2, "s": 64, "k0_i": 1}))
SETS["sattn"] = [v(_SA, p, sz, {}, h) for p, sz in _SA_SIZES for h in ((), ("nocomb",))]


# the sixth: safe split-KV combines with the shift maxima first (``Options.shift_first``) or the running max
_NOSF = {"shift_first": 0}
SETS["shift"] = [
    *(v(_SA, p, sz, o) for p, sz in ((4, {"k0_x": 2, "k0_y": 4, "s": 16, "k0_i": 1}), (1, {"k0_x": 2, "s": 16, "k0_i": 1}),
                                     (4, {"k0_x": 2, "k0_y": 8, "s": 16, "k0_i": 1}))
      for o in ({}, _NOSF)),
    *(v(c, 1, {"x": 2, "s": s, "i": 1}, o) for c in ("gqa_safe_h1024", "gqa_safe_h2048") for s in (8, 16)
      for o in ({}, _NOSF)),
]



# the seventh: combine loops run in chunks of ``unroll`` iterations behind one wait and barrier
# (``Options.unroll``; 1: the loop before it): safe split-KV attention (fused and spread combines), the
# unsafe benchmark splits and the split-K GEMV combines. Indices of scaled_attention's constructed
# templates as a fresh decode search of it numbers them: 1 split + combine, 2 its spread combine, 6
# query rows over y
def _u(cfg: str, plan: int, sizes: dict[str, int], values: tuple[int, ...]) -> list[Variant]:
    return [v(cfg, plan, sizes, {"unroll": u}) for u in values]


_UV = {16: (1, 4, 8), 32: (1, 4, 8), 64: (1, 2, 4, 8)}
SETS["unroll"] = [
    *_u(_SA, 6, {"k0_x": 2, "k0_y": 4, "s": 16, "k0_i": 1}, (1, 2, 4, 8)),
    *(x for s in (16, 32, 64) for x in _u(_SA, 1, {"k0_x": 2, "s": s, "k0_i": 1}, _UV[s])),
    *(x for s in (16, 32, 64) for x in _u(_SA, 2, {"k0_x": 2, "s": s, "k0_i": 1, "c": 8}, _UV[s])),
    *(x for s in (16, 32, 64) for x in _u("gqa_h1024", 2, {"x": 2, "s": s, "i": 1}, (1, 4, 8))),
    *(x for s in (16, 32) for x in _u("qknorm_gqa_h1024", 2, {"x": 2, "s": s, "i": 1}, (1, 8))),
    *(x for s in (16, 32, 64) for x in _u("gqa_h2048", 2, {"x": 2, "s": s, "i": 1}, (1, 8))),
    *(x for c in ("gqa_safe_h1024", "gqa_safe_h2048") for x in _u(c, 1, {"x": 2, "s": 16, "i": 1}, (1, 8))),
    *_u(_RL1, 2, {"x": 64, "y": 4, "i": 2, "c": 64}, (1, 4)),
    *_u(_SW1, 1, {"x": 64, "y": 4, "i": 4, "c": 64}, (1, 4)),
]


# the eighth: safe combines with the numerator's rescale once a run of 4 (``Options.rescaled_runs``), with
# and without the chunks of the seventh, against the loop before both
_BEFORE, _UNROLLED = {"rescaled_runs": 0, "unroll": 1}, {"rescaled_runs": 0}
_SAFE_RUNS = [(_SA, 6, {"k0_x": 2, "k0_y": 4, "s": 16, "k0_i": 1}), (_SA, 1, {"k0_x": 2, "s": 16, "k0_i": 1}),
              (_SA, 1, {"k0_x": 2, "s": 64, "k0_i": 1}), (_SA, 2, {"k0_x": 2, "s": 32, "k0_i": 1, "c": 8}),
              (_SA, 2, {"k0_x": 2, "s": 64, "k0_i": 1, "c": 8}), ("gqa_safe_h1024", 1, {"x": 2, "s": 16, "i": 1}),
              ("gqa_safe_h1024", 1, {"x": 2, "s": 8, "i": 1}), ("gqa_safe_h2048", 1, {"x": 2, "s": 16, "i": 1})]
SETS["runs"] = [v(c, p, sz, o) for c, p, sz in _SAFE_RUNS for o in (_BEFORE, _UNROLLED, {})]


# the ninth: batch-32 long-context safe attention (64 MB of K and V, floor ~16 µs): the hand split over its
# split counts and iterations, chunked and not, and without the loop's arithmetic (timing only)
_B32 = "gqa_safe_b32_kv4096"
SETS["b32"] = [
    *(v(_B32, 1, {"x": 32, "s": s, "i": i}, o) for s, i in ((4, 8), (4, 16), (8, 4), (8, 8), (8, 16), (16, 1),
                                                            (16, 2), (16, 4), (16, 8)) for o in ({}, {"unroll": 1})),
    *(v(_B32, 1, {"x": 32, "s": s, "i": i}, {}, ("nocomp",)) for s, i in ((8, 8), (16, 4))),
    *(v(_B32, 1, {"x": 16, "s": s, "i": i}) for s, i in ((8, 8), (16, 4))),
]

# the tenth: the same kernels and the decode attention splits, run in two trees (padded against swizzled
# unit-batch operand tiles: ``lower.swizzles``)
SETS["swz"] = [
    *(v(_B32, 1, {"x": 32, "s": s, "i": i}) for s, i in ((4, 8), (4, 16), (8, 8), (8, 16), (16, 4), (16, 8))),
    *(v(c, 1, {"x": 2, "s": s, "i": 1}) for c in ("gqa_safe_h1024", "gqa_safe_h2048") for s in (8, 16)),
    *(v(c, 2, {"x": 2, "s": 16, "i": 1}) for c in ("gqa_h1024", "gqa_h2048", "qknorm_gqa_h1024")),
    v(_SA, 1, {"k0_x": 2, "s": 16, "k0_i": 1}), v(_SA, 6, {"k0_x": 2, "k0_y": 4, "s": 16, "k0_i": 1}),
]

# ------------------------------------------------------------------ source hacks


def _loop_span(src: str) -> tuple[int, int]:
    """(start of the loop body after the ring-slot updates, start of the loop's closing brace)."""
    m = list(re.finditer(r"\n    sb_wr = sb_wr == \d+ \? 0 : sb_wr \+ 1;", src))
    assert m, "no ring-slot update in the loop"
    end = src.index("\n  }\n  cp_async_wait<0>();")
    return m[-1].end(), end


EVICT_HELPER = """__device__ __forceinline__ void cp_async16_ef(unsigned dst, const void* src) {
  unsigned long long pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "l"(pol) : "memory");
}
"""


_ONEWAIT = re.compile(
    r"cp_async_wait<(\d+)>\(\);\n(\s*)__syncthreads\(\);(\n\s*int sb_rd = 0, sb_wr = 0;  // ring slots of it and "
    r"of it \+ (\d+):[^\n]*\n\s*for \(int it = 0; it < (\d+); \+\+it\) \{)"
    r"\n\s*cp_async_wait<\d+>\(\);\n\s*__syncthreads\(\);")


def _one_wait(m: re.Match[str]) -> str:
    if m.group(4) != m.group(5):  # a ring shallower than the loop: left as it is
        return m.group(0)
    return f"cp_async_wait<0>();\n{m.group(2)}__syncthreads();{m.group(3)}"


def hack(src: str, h: str) -> str:
    match h:
        case "nocomp":
            a, b = _loop_span(src)
            return src[:a] + src[b:]
        case "nox":
            out = re.sub(r"\n        load_s_X\(smem_base \+ (\d+ \+ )?sb_wr[^\n]*", "", src)
            assert out != src
            return out
        case "nobar":
            out = re.sub(r"(\n    cp_async_wait<\d+>\(\);)\n    __syncthreads\(\);", r"\1", src)
            assert out != src
            return out
        case "nomat":  # no materialising pass into a matmul operand tile in the loop, nor its barrier
            out = re.sub(r"\n    // \w+ = half\(op \d+\).*?__syncthreads\(\);", "", src, count=1, flags=re.S)
            assert out != src
            return out
        case "nopad":  # the [128, 32] weight tiles unpadded (pitch 32, not 40): layout of the copies only
            out = src.replace("(t0 * 40 + t1) * 2", "(t0 * 32 + t1) * 2").replace(" * 10240", " * 8192")
            assert out != src
            return out
        case "noxpro":  # no X copies in the prologue either
            out = re.sub(r"\n      load_s_X\(smem_base \+ (\d+ \+ )?st[^\n]*", "", src)
            assert out != src
            return out
        case "onewait":  # a ring as deep as its loop: wait for every stage once, no wait nor barrier per iteration
            out = _ONEWAIT.sub(_one_wait, src)
            assert out != src
            return out
        case "nocomb":  # a fused split + combine without the combine (the arrival stays)
            out = re.sub(r"\n  combine::run\([^\n]*\);", "", src)
            assert out != src
            return out
        case "combD" | "comb1":  # the fused combine without its D copies / reading one partial tile s times
            at = src.index("namespace combine {")
            head, comb = src[:at], src[at:]
            if h == "combD":
                out = re.sub(r"\n\s*load_s_D\([^\n]*", "", comb)
            else:
                out = re.sub(r"g_s_N \+ (st|nx) \* \d+", "g_s_N", comb)
            assert out != comb
            return head + out
        case "evict":
            at = src.index("__device__ __forceinline__ void cp_async8")
            src = src[:at] + EVICT_HELPER + src[at:]
            parts = re.split(r"(__device__ __forceinline__ void load_s_W\w*\()", src)
            for k in range(2, len(parts), 2):
                body_end = parts[k].index("\n}\n")
                parts[k] = parts[k][:body_end].replace("cp_async16(", "cp_async16_ef(") + parts[k][body_end:]
            return "".join(parts)
        case _:
            raise ValueError(h)


# ------------------------------------------------------------------ configs: benchmark workloads or zoo programs


@dataclasses.dataclass(frozen=True)
class ZooConfig:
    """``zoo:NAME:WHICH:SOURCE``: a zoo program as superoptimize searches it (rows merged), its templates of
    plan source SOURCE read from the carried search cache (no search runs on the device machine)."""

    name: str
    which: str
    source: str

    def build(self) -> Any:
        from bench.zoo import zoo_graph
        from prism.rows import searched_graph

        return searched_graph(zoo_graph(self.name, self.which))

    def random_inputs(self, seed: int, g: Any) -> Any:
        from prism.tune.tuner import default_scales, random_inputs

        return random_inputs(g, default_scales(g), seed)

    def templates(self, g: Any) -> Any:
        from prism import pipeline

        out = pipeline.search_and_verify(g, program=self.name, progress=False)
        return out.of(pipeline.PlanSource(self.source))


def config(name: str) -> Any:
    if name.startswith("zoo:"):
        _, prog, which, source = name.split(":")
        return ZooConfig(prog, which, source)
    return workloads.config(name)


def templates(cfg: Any, g: Any) -> Any:
    return cfg.templates(g) if isinstance(cfg, ZooConfig) else plans.codegen_plans(cfg.program, g)


# ------------------------------------------------------------------ build, check, time


def build(var: Variant) -> tuple[Any, dict[str, Any]]:
    from prism import runtime

    cfg = config(var.config)
    g = cfg.build()
    tmpl = templates(cfg, g)[var.plan]
    plan = generate(tmpl.instantiate(dict(var.sizes)), arch=ARCH, options=Options(**dict(var.options)))
    steps = []
    for s in plan.steps:
        if hasattr(s, "source") and var.hacks:
            src = s.source
            for h in var.hacks:
                src = hack(src, h)
            s = dataclasses.replace(s, source=src, entry=s.entry)
        steps.append(s)
    plan = dataclasses.replace(plan, steps=tuple(steps))
    info = {"kernels": [{"grid": k.grid, "block": k.block[0], "smem": k.smem_bytes, "stages": k.stages}
                        for k in plan.kernels]}
    return runtime.compile_plan(plan), info


def to_torch(x: Any) -> Any:
    import numpy as np
    import torch

    return torch.from_numpy(np.ascontiguousarray(x)).to(device="cuda", dtype=torch.float16)


def check(var: Variant, fn: Any, seed: int) -> float:
    import torch

    cfg = config(var.config)
    g = cfg.build()
    inp = cfg.random_inputs(seed, g)
    ref = g.evaluate(inp)[g.outputs[0].name]
    out = torch.full(g.outputs[0].shape, float("nan"), dtype=torch.float16, device="cuda")
    fn(*[to_torch(inp[t.name]) for t in g.inputs], out=out)
    torch.cuda.synchronize()
    return float(relative_error(out.double().cpu().numpy(), ref))


class Inputs:
    """Rotating input copies per config (4x the L2, at most 20) and output buffers."""

    def __init__(self) -> None:
        self.sets: dict[str, list[list[Any]]] = {}

    def of(self, name: str) -> list[list[Any]]:
        if name not in self.sets:
            cfg = config(name)
            g = cfg.build()
            base = cfg.random_inputs(7, g)
            first = [to_torch(base[t.name]) for t in g.inputs]
            nbytes = sum(math.prod(t.shape) * 2 for t in g.inputs)
            n = max(2, min(20, math.ceil(4 * L2_BYTES / nbytes)))
            self.sets[name] = [first] + [[t.clone() for t in first] for _ in range(n - 1)]
        return self.sets[name]


def time_variant(var: Variant, fn: Any, inputs: Inputs) -> float:
    import torch
    from gpu_codegen import time_graph

    copies = inputs.of(var.config)
    g = config(var.config).build()
    outs = [torch.empty(g.outputs[0].shape, dtype=torch.float16, device="cuda") for _ in copies]
    st = {"j": 0}

    def call(*a: Any) -> Any:
        o = outs[st["j"] % len(outs)]
        st["j"] += 1
        return fn(*a, out=o)

    return time_graph(fn if var.plan < 0 else call, copies)


def baselines(configs: set[str], start: int) -> list[tuple[dict[str, Any], Any]]:
    """PyTorch eager and torch.compile (default mode) of each zoo config's program, as rows of the table."""
    import torch

    from prism.torch_program import torch_program

    rows: list[tuple[dict[str, Any], Any]] = []
    for c in sorted(x for x in configs if x.startswith("zoo:")):
        base = torch_program(config(c).build())
        torch._dynamo.reset()
        for k, fn in enumerate((base, torch.compile(base, dynamic=False))):
            rows.append(({"index": start + len(rows), "name": f"{c} {('eager', 'torch.compile')[k]}", "config": c,
                          "plan": -1, "kernels": [], "us": []}, fn))
    return rows


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["time", "ncu"])
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--set", default="diag")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--only", default="", help="ncu mode: comma-separated indices into the set")
    p.add_argument("--floor", action="store_true", help="also time bench.latency_floor's calibration kernels")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch

    variants = SETS[args.set]
    if args.mode == "ncu":
        inputs = Inputs()
        for k in (int(x) for x in args.only.split(",")):
            fn, _ = build(variants[k])
            fn(*inputs.of(variants[k].config)[0])
        torch.cuda.synchronize()
        return 0
    from gpu_codegen import ceilings, floor_us

    ceil = ceilings()
    print(f"device {torch.cuda.get_device_name()}, ceilings {ceil}", flush=True)
    built = []
    for n, var in enumerate(variants):
        t0 = time.time()
        fn, info = build(var)
        rec: dict[str, Any] = {"index": n, "name": var.name, **dataclasses.asdict(var), **info,
                               "compile_s": time.time() - t0, "us": []}
        if not DESTRUCTIVE & set(var.hacks):
            rec["rel_err"] = check(var, fn, 100 + n)
        built.append((rec, fn))
    built += baselines({var.config for var in variants}, len(built))
    inputs = Inputs()
    for _ in range(args.rounds):
        for rec, fn in built:
            ok = rec.get("rel_err") is None or rec["rel_err"] < 2e-2
            if ok:
                rec["us"].append(time_variant(Variant(rec["config"], rec["plan"], ()), fn, inputs))
    floors = {c: floor_us(config(c), ceil)["floor_us"] for c in {r["config"] for r, _ in built}}
    calib = _calibration() if args.floor else []
    rows = [r for r, _ in built]
    with open(os.path.join(args.out, f"gemv_variants_{args.set}.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(sys.argv),
                   "ceilings": ceil, "floors": floors, "rows": rows, "calibration": calib,
                   "device": torch.cuda.get_device_name()},
                  f, indent=1, default=str)
    for r in rows:
        us = " / ".join(f"{u:.2f}" for u in r["us"])
        err = f"{r['rel_err']:.1e}" if "rel_err" in r else "timing only"
        pct = f"{100 * floors[r['config']] / min(r['us']):.0f}%" if r["us"] else "-"
        print(f"{r['index']:>2} {r['name']:<62} {[(k['grid'][0], k['smem'], k['stages']) for k in r['kernels']]!s:<28}"
              f" {us:<16} {pct:>4} {err}", flush=True)
    for c in calib:
        print(f"   {c['name']:<62} {c.get('us', c.get('error'))!s:<24} {c.get('rel_err', '')}", flush=True)
    return 0


def _calibration() -> list[dict[str, Any]]:
    """bench.latency_floor's kernels, each timed in two rounds (a failing one is recorded, not raised)."""
    from gpu_codegen import time_graph

    from bench.latency_floor import PROBES, time_probe

    out = []
    for p in PROBES:
        try:
            rec = time_probe(p, time_graph)
        except Exception as e:
            rec = {"name": p.name, "error": f"{type(e).__name__}: {e}"[:300]}
        out.append(rec)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
