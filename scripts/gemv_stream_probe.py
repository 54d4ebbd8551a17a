"""Device probe (issue 14): how fast can a cp.async shared-memory ring stream W [4096, 4096] fp16,
as a function of the tile shape a block reads (row-segment bytes, rows per stage), the K split
over blocks, stages and threads? No arithmetic: the loop of a generated GEMV kernel without its mma.

    PYTHONPATH=. python3 scripts/gemv_stream_probe.py --out $OUT

Block (bx, by) reads columns [bx * SEG / 2, +SEG / 2) of rows [by * K / KS, +K / KS) in tiles of
ROWS rows through a ring of STAGES slots (wait_group, __syncthreads, refill one slot, as the
generated kernels do). Timing: docs/benchmarks.md (CUDA graph of 20 calls on rotating copies of W).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

K = N = 4096

SRC = r"""
__device__ __forceinline__ void cp16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
template <int SEG, int ROWS, int STAGES, int T, int PITCH, int XB, int SWZ>
__device__ __forceinline__ void stream_body(const char* __restrict__ W, const char* __restrict__ X, int kc,
                                            unsigned* flag) {
  extern __shared__ __align__(128) unsigned char sm[];
  constexpr int TILE = PITCH * ROWS, PER = SEG * ROWS / 16 / T > 0 ? SEG * ROWS / 16 / T : 1, SEGV = SEG / 16;
  constexpr int XT = XB * 16 * T;  // bytes of the X-like tile every block copies per stage (same for all blocks)
  const unsigned base = (unsigned)__cvta_generic_to_shared(sm);
  const int tid = threadIdx.x;
  const char* g = W + (size_t)blockIdx.y * kc * (4096 * 2) + (size_t)blockIdx.x * SEG;
  const int iters = kc / ROWS;
  auto load = [&](int slot, int it) {
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const int e = tid + j * T;
      if (e < SEG * ROWS / 16) {
        const int r = e / SEGV, c = (e % SEGV) * 16;
        constexpr int CN = SEG / 16, RG = CN >= 8 ? 1 : 8 / CN, M = CN >= 8 ? 8 : CN;
        const int f = SWZ == 0 ? 0 : SWZ == 1 ? (r / RG) % M : ((r / RG) % M) & ~1;  // 2: keeps 32-byte pairs
        cp16(base + slot * TILE + r * PITCH + (((c >> 4) ^ f) << 4), g + (size_t)(it * ROWS + r) * (4096 * 2) + c);
      }
    }
#pragma unroll
    for (int j = 0; j < XB; ++j) cp16(base + STAGES * TILE + slot * XT + (tid + j * T) * 16,
                                      X + ((size_t)it * XT + (tid + j * T) * 16) % 65536);
  };
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < iters) load(s, s);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  int rd = 0, wr = STAGES - 1;
  unsigned acc = 0;
  for (int it = 0; it < iters; ++it) {
    asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
    __syncthreads();
    if (it + STAGES - 1 < iters) load(wr, it + STAGES - 1);
    asm volatile("cp.async.commit_group;" ::: "memory");
    acc += sm[rd * TILE + tid];
    rd = rd == STAGES - 1 ? 0 : rd + 1;
    wr = wr == STAGES - 1 ? 0 : wr + 1;
  }
  if (acc == 0x12345678u) flag[0] = acc;
}
#define S(SEG, ROWS, ST, T) SP(SEG, ROWS, ST, T, SEG, 0)
#define SP(SEG, ROWS, ST, T, P, XB) SW(SEG, ROWS, ST, T, P, XB, 0)
#define SW(SEG, ROWS, ST, T, P, XB, Z) extern "C" __global__ void __launch_bounds__(T) \
  stream_s##SEG##_r##ROWS##_st##ST##_t##T##_p##P##_x##XB##_z##Z(const char* W, const char* X, int kc, unsigned* f) { \
    stream_body<SEG, ROWS, ST, T, P, XB, Z>(W, X, kc, f); }
SW(64, 128, 13, 128, 64, 0, 1) SW(64, 128, 13, 128, 64, 0, 2) SW(64, 128, 6, 128, 64, 0, 1) SW(128, 64, 13, 128, 128, 0, 1)
SW(128, 64, 13, 128, 128, 0, 2) SW(64, 128, 13, 128, 64, 1, 1) SW(64, 128, 13, 128, 96, 0, 0)
SP(64, 128, 13, 128, 80, 0) SP(64, 128, 13, 128, 80, 1) SP(64, 128, 13, 128, 64, 1) SP(128, 64, 13, 128, 144, 0)
SP(128, 64, 13, 128, 144, 1) SP(128, 64, 13, 128, 128, 1)
S(64, 128, 13, 128) S(64, 128, 6, 128) S(64, 256, 6, 128) S(64, 64, 8, 128)
S(128, 64, 13, 128) S(128, 64, 6, 128) S(128, 128, 6, 128) S(128, 128, 4, 128) S(128, 32, 8, 128)
S(256, 32, 13, 128) S(256, 32, 6, 128) S(256, 64, 6, 128) S(256, 16, 8, 128)
S(512, 16, 13, 128) S(512, 16, 6, 128) S(512, 32, 6, 128)
S(128, 64, 13, 256) S(256, 32, 13, 256) S(64, 128, 13, 256)
"""

# (seg bytes, rows, stages, threads, k splits[, smem row pitch, 16-byte X copies per thread and stage, swizzle])
VARIANTS = [
    (64, 128, 13, 128, 1, 64, 0, 0), (64, 128, 13, 128, 1, 64, 0, 1), (64, 128, 13, 128, 1, 64, 0, 2),
    (64, 128, 13, 128, 1, 80, 0, 0), (64, 128, 13, 128, 1, 96, 0, 0), (64, 128, 6, 128, 1, 64, 0, 1),
    (128, 64, 13, 128, 2, 128, 0, 1), (128, 64, 13, 128, 2, 128, 0, 2), (64, 128, 13, 128, 1, 64, 1, 1),
    (64, 128, 13, 128, 1, 80, 0), (64, 128, 13, 128, 1, 80, 1), (64, 128, 13, 128, 1, 64, 1),
    (128, 64, 13, 128, 2, 144, 0), (128, 64, 13, 128, 2, 144, 1), (128, 64, 13, 128, 2, 128, 1),
    (64, 128, 13, 128, 1), (64, 128, 6, 128, 2), (64, 256, 6, 128, 1), (64, 64, 8, 128, 2), (64, 128, 13, 256, 1),
    (128, 64, 13, 128, 2), (128, 64, 6, 128, 4), (128, 128, 6, 128, 2), (128, 128, 4, 128, 4), (128, 32, 8, 128, 4),
    (128, 64, 13, 256, 2), (128, 64, 13, 128, 1),
    (256, 32, 13, 128, 4), (256, 32, 6, 128, 8), (256, 64, 6, 128, 4), (256, 16, 8, 128, 8), (256, 32, 13, 256, 4),
    (512, 16, 13, 128, 8), (512, 16, 6, 128, 16), (512, 32, 6, 128, 8),
]


def main() -> int:
    import cupy
    import numpy as np
    import torch
    from gemv_probe import stream_kw
    from gpu_codegen import ceilings, time_graph

    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    ceil = ceilings()
    mod = cupy.RawModule(code=SRC, options=("--std=c++17",))
    w0 = torch.randn(K, N, device="cuda").half()
    ws = [w0] + [w0.clone() for _ in range(7)]
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    props = torch.cuda.get_device_properties(0)
    rows = []
    x0 = torch.randn(65536 // 2, device="cuda").half()
    for seg, r, st, t, ks, *more in VARIANTS:
        pitch, xb, z = (*more, 0)[:3] if more else (seg, 0, 0)
        fn = mod.get_function(f"stream_s{seg}_r{r}_st{st}_t{t}_p{pitch}_x{xb}_z{z}")
        smem = (pitch * r + xb * 16 * t) * st
        fn.max_dynamic_shared_size_bytes = smem
        grid = (N * 2 // seg, ks, 1)
        kc = K // ks

        def call(w: Any, _f: Any = fn, _g: Any = grid, _t: int = t, _s: int = smem, _kc: int = kc) -> None:
            _f(_g, (_t, 1, 1), (w.data_ptr(), x0.data_ptr(), np.int32(_kc), flag.data_ptr()), shared_mem=_s,
               **stream_kw())

        us = time_graph(call, [[w] for w in ws])
        per_sm = max(1, min(props.shared_memory_per_multiprocessor // (smem + 1024), 2048 // t))
        row = {"seg": seg, "rows": r, "stages": st, "threads": t, "ksplit": ks, "pitch": pitch, "xb": xb, "swizzle": z,
               "blocks": grid[0] * ks,
               "smem": smem, "blocks_per_sm_max": per_sm, "us": us, "tb_s": K * N * 2 / us / 1e6,
               "pct_floor": 100 * K * N * 2 / ceil["copy_bytes_per_s"] * 1e6 / us}
        rows.append(row)
        print(f"seg {seg:>3} B pitch {pitch:>3} x {xb} z {z} rows {r:>3} stages {st:>2} t {t} ks {ks:>2}: "
              f"{grid[0] * ks:>4} blocks, "
              f"{smem // 1024:>3} KB (<= {per_sm}/SM)  {us:6.2f} us  {row['tb_s']:.2f} TB/s", flush=True)
    with open(os.path.join(args.out, "gemv_stream_probe.json"), "w") as f:
        json.dump({"ceilings": ceil, "rows": rows, "device": torch.cuda.get_device_name()}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
