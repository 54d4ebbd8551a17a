"""Device probe of the d=4096 GEMVs (issue 14): hand-written reference GEMVs and Prism's kernels.

    PYTHONPATH=. python3 scripts/gemv_probe.py --out $OUT time     # graph-timed table (JSON + text)
    ncu ... python3 scripts/gemv_probe.py --out $OUT ncu           # each kernel launched 2 times, for ncu

The reference (``ref_gemv``): O[M,N] = X[M,K] @ W[K,N], W row-major; each thread reads 16 bytes
(8 columns) of a W row per step, a block covers COLS columns and K/KS rows (split-K over grid y),
X's K-slice is staged in shared memory once, partial sums are reduced in shared memory and added
to a zeroed float32 output with atomics. Measured 2026-12-01 it is issue-bound (scalar float FMAs,
contended shared-memory float atomics; 44-160 µs): NOT a bandwidth reference. ``ref_read`` and
``ref_read4`` (4 loads in flight per thread) only read W: the read ceiling of the shape.
Timing follows docs/benchmarks.md (CUDA graph of 20 calls on rotating input copies, median of 30).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

REF_SRC = r"""
#include <cuda_fp16.h>
template <int M, int COLS, int THREADS, int U>
__device__ __forceinline__ void gemv_body(const half* __restrict__ X, const half* __restrict__ W,
                                          float* __restrict__ O, int K, int N, int KC) {
  constexpr int TPR = COLS / 8, RP = THREADS / TPR;
  extern __shared__ __align__(16) unsigned char sm[];
  half* xs = reinterpret_cast<half*>(sm);            // [KC][M]
  float* red = reinterpret_cast<float*>(sm + KC * M * 2);  // [M][COLS]
  const int k0 = blockIdx.y * KC, n0 = blockIdx.x * COLS, tid = threadIdx.x;
  for (int e = tid; e < M * KC; e += THREADS) { int m = e / KC, k = e % KC; xs[k * M + m] = X[m * K + k0 + k]; }
  for (int e = tid; e < M * COLS; e += THREADS) red[e] = 0.f;
  __syncthreads();
  const int c = (tid % TPR) * 8, r0 = tid / TPR;
  float acc[M][8];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[m][j] = 0.f;
  const half* wp = W + (size_t)k0 * N + n0 + c;
  for (int r = r0; r < KC; r += RP * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int rr = r + u * RP;
      if (rr < KC) asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
          : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(wp + (size_t)rr * N));
      else v[u] = make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int rr = min(r + u * RP, KC - 1);
      const half2* h = reinterpret_cast<const half2*>(&v[u]);
      float w[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) { float2 f = __half22float2(h[j]); w[2 * j] = f.x; w[2 * j + 1] = f.y; }
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float xv = __half2float(xs[rr * M + m]);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[m][j] += xv * w[j];
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) atomicAdd(&red[m * COLS + c + j], acc[m][j]);
  __syncthreads();
  for (int e = tid; e < M * COLS; e += THREADS) atomicAdd(&O[(e / COLS) * N + n0 + e % COLS], red[e]);
}
#define REF(M, COLS, T, U) extern "C" __global__ void __launch_bounds__(T) ref_gemv_m##M##_c##COLS##_t##T##_u##U( \
  const half* X, const half* W, float* O, int K, int N, int KC) { gemv_body<M, COLS, T, U>(X, W, O, K, N, KC); }
REF(8, 64, 256, 4) REF(8, 128, 256, 4) REF(8, 256, 256, 4) REF(8, 512, 256, 4)
REF(8, 256, 256, 8) REF(8, 256, 128, 8) REF(8, 512, 512, 4)
REF(16, 64, 256, 4) REF(16, 128, 256, 4) REF(16, 256, 256, 4) REF(16, 512, 256, 4)
extern "C" __global__ void ref_read(const uint4* __restrict__ W, long n, unsigned* out) {
  unsigned s = 0;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(W + i));
    s ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (s == 0x12345678u) out[0] = s;
}
extern "C" __global__ void ref_read4(const uint4* __restrict__ W, long n, unsigned* out) {
  unsigned s = 0;
  const long step = (long)gridDim.x * blockDim.x;
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += 4 * step) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long j = min(i + u * step, n - 1);
      asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
          : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(W + j));
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) s ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (s == 0x12345678u) out[0] = s;
}
"""

# (M, COLS, threads, unroll, KS)
REF_VARIANTS = [
    (8, 64, 256, 4, 4), (8, 64, 256, 4, 8), (8, 128, 256, 4, 4), (8, 128, 256, 4, 8),
    (8, 256, 256, 4, 8), (8, 256, 256, 4, 16), (8, 512, 256, 4, 16), (8, 512, 256, 4, 32),
    (8, 256, 256, 8, 8), (8, 256, 128, 8, 16), (8, 512, 512, 4, 16),
    (16, 64, 256, 4, 4), (16, 128, 256, 4, 8), (16, 256, 256, 4, 8), (16, 256, 256, 4, 16),
    (16, 512, 256, 4, 16),
]
K = N = 4096


def ref_name(m: int, cols: int, t: int, u: int) -> str:
    return f"ref_gemv_m{m}_c{cols}_t{t}_u{u}"


class Ref:
    """One compiled reference variant, launchable on the current torch stream."""

    def __init__(self, mod: Any, m: int, cols: int, t: int, u: int, ks: int) -> None:
        self.m, self.cols, self.t, self.ks = m, cols, t, ks
        self.kern = mod.get_function(ref_name(m, cols, t, u))
        self.kc = K // ks
        self.smem = self.kc * m * 2 + m * cols * 4
        self.kern.max_dynamic_shared_size_bytes = 96 * 1024  # shared by the variants of one kernel
        self.name = f"ref m{m} cols{cols} t{t} u{u} ks{ks}"

    def __call__(self, x: Any, w: Any, o: Any) -> None:
        import numpy as np

        o.zero_()
        self.kern((N // self.cols, self.ks, 1), (self.t, 1, 1),
                  (x.data_ptr(), w.data_ptr(), o.data_ptr(), np.int32(K), np.int32(N), np.int32(self.kc)),
                  shared_mem=self.smem, **stream_kw())


def stream_kw() -> dict[str, Any]:
    """Launch on torch's current stream (CuPy's default stream when that is the null stream)."""
    import cupy
    import torch

    sp = torch.cuda.current_stream().cuda_stream
    return {"stream": cupy.cuda.ExternalStream(sp)} if sp else {}


def ref_module() -> Any:
    import cupy

    return cupy.RawModule(code=REF_SRC, options=("--std=c++17", "-I/usr/local/cuda/include"))


def prism_fns() -> list[tuple[str, str, Any]]:
    """(label, config, compiled plan) of the current best GEMV variants."""
    from prism import plans, runtime, workloads
    from prism.codegen import Options, generate

    out = []
    for cid, sizes, opts in (("rmsnorm_linear_d4096", {"x": 128, "i": 32}, Options(stage_target=163840)),
                             ("rmsnorm_linear_d4096", {"x": 128, "i": 32}, Options(warps=8, stage_target=163840)),
                             ("swiglu_d4096", {"x": 128, "i": 32}, Options(stage_target=163840)),
                             ("swiglu_d4096", {"x": 128, "i": 32}, Options(warps=8, stage_target=163840))):
        cfg = workloads.config(cid)
        t = plans.codegen_plans(cfg.program, cfg.build())[0]
        plan = generate(t.instantiate(sizes), arch="sm_90", options=opts)
        out.append((f"prism {cid} {sizes} w{opts.warps} st{opts.stage_target}", cid, runtime.compile_plan(plan)))
    return out


def check_ref(r: Ref, x: Any, w: Any) -> float:
    import torch

    o = torch.empty(r.m, N, dtype=torch.float32, device="cuda")
    r(x, w, o)
    ref = x.double() @ w.double()
    return float((o.double() - ref).norm() / ref.norm())


def main() -> int:
    import numpy as np
    import torch

    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["time", "ncu"])
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--prism-only", action="store_true", help="ncu mode: only Prism's kernels")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mod = ref_module()
    refs = [Ref(mod, *v) for v in REF_VARIANTS]
    gen = torch.Generator(device="cuda").manual_seed(0)
    xs = {m: torch.randn(m, K, device="cuda", generator=gen).half() for m in (8, 16)}
    w0 = (torch.randn(K, N, device="cuda", generator=gen) / 64).half()
    if args.mode == "ncu":
        rd = mod.get_function("ref_read")
        flag = torch.zeros(1, dtype=torch.int32, device="cuda")
        for _ in range(1):
            rd((264, 1, 1), (512, 1, 1), (w0.data_ptr(), np.int64(K * N // 8), flag.data_ptr()))
        for r in [] if args.prism_only else refs:
            o = torch.empty(r.m, N, dtype=torch.float32, device="cuda")
            for _ in range(1):
                r(xs[r.m], w0, o)
        for _label, cid, fn in prism_fns():
            ins = [xs[8], w0] if cid.startswith("rmsnorm") else [xs[16], w0, w0.clone()]
            for _ in range(1):
                fn(*ins)
        torch.cuda.synchronize()
        return 0
    from gpu_codegen import ceilings, time_graph

    ceil = ceilings()
    n_copies = 8
    ws = [w0] + [w0.clone() for _ in range(n_copies - 1)]
    rows: list[dict[str, Any]] = []
    rd = mod.get_function("ref_read")
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    rd4 = mod.get_function("ref_read4")
    for kname, blocks, threads in (("ref_read", 264, 512), ("ref_read", 1056, 256), ("ref_read", 2112, 256),
                                   ("ref_read4", 264, 512), ("ref_read4", 528, 512), ("ref_read4", 1056, 256)):
        def read(w: Any, _b: int = blocks, _t: int = threads, _k: Any = rd if kname == "ref_read" else rd4) -> None:
            _k((_b, 1, 1), (_t, 1, 1), (w.data_ptr(), np.int64(K * N // 8), flag.data_ptr()), **stream_kw())
        us = time_graph(read, [[w] for w in ws])
        rows.append({"name": f"{kname} blocks{blocks} t{threads}", "us": us, "tb_s": K * N * 2 / us / 1e6})
        print(rows[-1], flush=True)
    for r in refs:
        err = check_ref(r, xs[r.m], w0)
        outs = [torch.empty(r.m, N, dtype=torch.float32, device="cuda") for _ in ws]
        st = {"j": 0}

        def call(w: Any, _r: Ref = r, _o: Any = outs, _s: Any = st) -> None:
            _s["j"] += 1
            _r(xs[_r.m], w, _o[_s["j"] % len(_o)])
        us = time_graph(call, [[w] for w in ws])
        nbytes = K * N * 2 + r.m * K * 2 + r.m * N * 4
        rows.append({"name": r.name, "rel_err": err, "us": us, "tb_s": nbytes / us / 1e6,
                     "pct_floor": 100 * nbytes / ceil["copy_bytes_per_s"] * 1e6 / us})
        print(rows[-1], flush=True)
    for label, cid, fn in prism_fns():
        sets = [[xs[8], w] for w in ws] if cid.startswith("rmsnorm") else \
            [[xs[16], ws[j], ws[(j + 1) % n_copies]] for j in range(n_copies)]
        m = 8 if cid.startswith("rmsnorm") else 16
        outs = [torch.empty(m, N, dtype=torch.float16, device="cuda") for _ in ws]
        st2 = {"j": 0}

        def pcall(*a: Any, _f: Any = fn, _o: Any = outs, _s: Any = st2) -> None:
            _s["j"] += 1
            _f(*a, out=_o[_s["j"] % len(_o)])
        us = time_graph(pcall, sets)
        nbytes = (1 if m == 8 else 2) * K * N * 2 + 2 * m * K * 2
        rows.append({"name": label, "us": us, "tb_s": nbytes / us / 1e6,
                     "pct_floor": 100 * nbytes / ceil["copy_bytes_per_s"] * 1e6 / us})
        print(rows[-1], flush=True)
    with open(os.path.join(args.out, "gemv_probe.json"), "w") as f:
        json.dump({"ceilings": ceil, "rows": rows, "device": torch.cuda.get_device_name()}, f, indent=1)
    _ = math
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
