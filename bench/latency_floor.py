"""How fast one kernel launch can read a small weight on this GPU: hand-written calibration kernels
(issue 14, the latency-bound configurations), timed like every system in the bench (a CUDA graph of
20 calls on rotating input copies, median replay / 20; docs/benchmarks.md).

* ``empty``: a launch that does nothing (the launch floor of a kernel in a CUDA graph).
* ``stream``: each block copies a contiguous chunk of the buffer into shared memory, every 16-byte
  cp.async issued before the first is waited for (the bytes-in-flight ideal).
* ``cols``: the buffer is a row-major [K, N] float16 matrix and block b reads the column slice
  [:, b*C:(b+1)*C] (C*2-byte row segments), as a GEMV's weight tile does; ``+x`` adds each block
  reading the whole [M, K] activation too (what a column-split GEMV re-reads per block).
* ``gemv``: a plain GEMV O[M, N] = X[M, K] @ W[K, N] with that column slice per block: the block's
  weight slice and X copied with cp.async all at once, one barrier, fp32 FMAs from shared memory, one
  shared-memory reduction over the K groups: a hand-written reference for the generated kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SOURCE = r"""
typedef unsigned short half_t;
__device__ __forceinline__ void cp16(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}
__device__ __forceinline__ unsigned fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

extern "C" __global__ void empty_k(unsigned* out) {}

// every copy is a cp.async issued before any is waited for (bytes in flight not bound by registers);
// each thread then reads back only what it copied (no barrier)

// block b copies its contiguous chunk: SPER 16-byte words a thread
extern "C" __global__ void __launch_bounds__(THREADS) stream_k(const uint4* __restrict__ src, unsigned* out) {
  extern __shared__ __align__(16) uint4 sm[];
  const uint4* p = src + (size_t)blockIdx.x * THREADS * SPER + threadIdx.x;
#pragma unroll
  for (int j = 0; j < SPER; ++j) cp16(sm + threadIdx.x + j * THREADS, p + j * THREADS);
  cp_wait_all();
  unsigned x = 0;
#pragma unroll
  for (int j = 0; j < SPER; ++j) x ^= fold(sm[threadIdx.x + j * THREADS]);
  out[blockIdx.x * THREADS + threadIdx.x] = x;
}

// W [K, N] halves; block b copies columns [b*C, b*C + C) (C/8 16-byte pieces a row), and X [XROWS, K] whole
extern "C" __global__ void __launch_bounds__(THREADS) cols_k(const half_t* __restrict__ w, const uint4* __restrict__ xin,
                                                            unsigned* out) {
  constexpr int PR = C / 8, RP = THREADS / PR, PER = K / RP, XW = XROWS * K / 8 / THREADS;
  extern __shared__ __align__(16) uint4 sm[];
  const int piece = threadIdx.x % PR, r0 = threadIdx.x / PR;
  const half_t* p = w + (size_t)r0 * N + blockIdx.x * C + piece * 8;
#pragma unroll
  for (int j = 0; j < PER; ++j) cp16(sm + threadIdx.x + j * THREADS, p + (size_t)j * RP * N);
#pragma unroll
  for (int j = 0; j < XW; ++j) cp16(sm + (PER + j) * THREADS + threadIdx.x, xin + threadIdx.x + j * THREADS);
  cp_wait_all();
  unsigned x = 0;
#pragma unroll
  for (int j = 0; j < PER + XW; ++j) x ^= fold(sm[threadIdx.x + j * THREADS]);
  out[blockIdx.x * THREADS + threadIdx.x] = x;
}

__device__ __forceinline__ float h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}

// O [M, N] = X [M, K] @ W [K, N]: block b owns columns [b*C, b*C + C); thread: one 8-column piece over
// K/KG consecutive rows (its k group); W and X copied with cp.async, one barrier (for X), fp32 FMAs,
// then the k groups summed through shared memory
extern "C" __global__ void __launch_bounds__(THREADS) gemv_k(const half_t* __restrict__ xin, const half_t* __restrict__ w,
                                                            half_t* __restrict__ o) {
  constexpr int PR = C / 8, KG = THREADS / PR, PER = K / KG, XW = M * K / 8;
  extern __shared__ __align__(16) uint4 sm[];
  uint4* ws = sm;                                          // [PER, THREADS] this thread's W pieces
  const half_t* xs = reinterpret_cast<const half_t*>(sm + PER * THREADS);  // [M, K]
  float* red = reinterpret_cast<float*>(sm);               // reused after the FMAs: [KG, M * C]
  const int piece = threadIdx.x % PR, g = threadIdx.x / PR;
  const half_t* p = w + (size_t)g * PER * N + blockIdx.x * C + piece * 8;
#pragma unroll
  for (int j = 0; j < PER; ++j) cp16(ws + j * THREADS + threadIdx.x, p + (size_t)j * N);
  for (int e = threadIdx.x; e < XW; e += THREADS) cp16(sm + PER * THREADS + e, reinterpret_cast<const uint4*>(xin) + e);
  cp_wait_all();
  __syncthreads();
  float acc[M][8] = {};
#pragma unroll
  for (int j = 0; j < PER; ++j) {
    const uint4 v = ws[j * THREADS + threadIdx.x];
    const unsigned vw[4] = {v.x, v.y, v.z, v.w};
    float wf[8];
#pragma unroll
    for (int q = 0; q < 4; ++q) { wf[2 * q] = h2f(vw[q] & 0xffff); wf[2 * q + 1] = h2f(vw[q] >> 16); }
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const float xv = h2f(xs[m * K + g * PER + j]);
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[m][c] += xv * wf[c];
    }
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < 8; ++c) red[g * (M * C) + m * C + piece * 8 + c] = acc[m][c];
  __syncthreads();
  for (int e = threadIdx.x; e < M * C; e += THREADS) {
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    for (int q = 0; q < KG; q += 4) {
      s0 += red[q * (M * C) + e]; s1 += red[(q + 1) * (M * C) + e];
      s2 += red[(q + 2) * (M * C) + e]; s3 += red[(q + 3) * (M * C) + e];
    }
    o[(e / C) * N + blockIdx.x * C + e % C] = f2h((s0 + s1) + (s2 + s3));
  }
}
"""


@dataclass(frozen=True)
class Probe:
    """One calibration kernel: ``kind`` empty | stream | cols | gemv, over a [K, N] weight (and [M, K] X)."""

    kind: str
    k: int = 1024
    n: int = 1024
    m: int = 0
    cols: int = 16
    threads: int = 128

    @property
    def name(self) -> str:
        match self.kind:
            case "empty":
                return "empty"
            case "stream":
                return f"stream {self.k * self.n * 2 >> 10} KiB, {self.blocks} blocks"
            case _:
                x = f" +x[{self.m}]" if self.kind == "cols" and self.m else ""
                mm = f" M={self.m}" if self.kind == "gemv" else ""
                return f"{self.kind} [{self.k},{self.n}] C={self.cols} ({self.blocks} blocks){x}{mm}"

    @property
    def blocks(self) -> int:
        return 1 if self.kind == "empty" else self.n // self.cols

    @property
    def weight_bytes(self) -> int:
        return 0 if self.kind == "empty" else self.k * self.n * 2

    def defines(self) -> str:
        per = self.k * self.n * 2 // 16 // (self.blocks * self.threads) if self.kind == "stream" else 0
        d = {"THREADS": self.threads, "SPER": max(per, 1), "K": self.k, "N": self.n, "C": self.cols,
             "M": max(self.m, 1), "XROWS": self.m if self.kind == "cols" else 0}
        return "".join(f"#define {k} {v}\n" for k, v in d.items())


PROBES = (
    Probe("empty"),
    *(Probe("stream", 1024, n, cols=n // b) for n in (1024, 2048) for b in (64, 128)),
    *(Probe("cols", 1024, n, cols=c) for n in (1024, 2048) for c in (8, 16, 32)),
    *(Probe("cols", 1024, 1024, m=m, cols=c) for m in (8, 16) for c in (8, 16)),
    *(Probe("gemv", 1024, 1024, m=8, cols=c) for c in (8, 16)),
    Probe("gemv", 1024, 2048, m=16, cols=8),
    # one or two blocks reading 16-128 KiB: one SM's intake (a fused combine reads its partials this way)
    *(Probe("stream", k, 1024, cols=1024 // b) for k in (8, 32, 64) for b in (1, 2)),
)


def _kernel(probe: Probe) -> Any:
    import cupy

    entry = {"empty": "empty_k", "stream": "stream_k", "cols": "cols_k", "gemv": "gemv_k"}[probe.kind]
    mod = cupy.RawModule(code=probe.defines() + SOURCE, options=("--std=c++17",))
    fn = mod.get_function(entry)
    if _smem(probe) > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = _smem(probe)
    return fn


def _smem(p: Probe) -> int:
    """Dynamic shared memory of a probe's kernel (bytes)."""
    per_block = p.weight_bytes // p.blocks if p.weight_bytes else 0
    match p.kind:
        case "stream":
            return per_block
        case "cols":
            return per_block + p.m * p.k * 2
        case "gemv":
            kg = p.threads // (p.cols // 8)
            return max(per_block + p.m * p.k * 2, kg * p.m * p.cols * 4)
    return 0


def time_probe(probe: Probe, time_graph: Any, copies: int = 20, rounds: int = 2) -> dict[str, Any]:
    """µs per launch, one figure per round (graph-timed, ``copies`` rotating weight copies) and, for
    ``gemv``, its error."""
    import cupy
    import torch

    fn = _kernel(probe)
    n_words = max(probe.weight_bytes // 2, 8)
    ws = [torch.randn(n_words, device="cuda", dtype=torch.float16) * (1 / math.sqrt(probe.k)) for _ in range(copies)]
    xs = [torch.randn(max(probe.m, 1) * probe.k, device="cuda", dtype=torch.float16) for _ in range(copies)]
    out = torch.empty(probe.blocks * probe.threads * 2 + max(probe.m, 1) * probe.n, device="cuda", dtype=torch.float32)
    o16 = torch.empty(max(probe.m, 1) * probe.n, device="cuda", dtype=torch.float16)

    def launch(w: Any, x: Any) -> None:
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            match probe.kind:
                case "empty":
                    fn((1,), (32,), (out.data_ptr(),))
                case "stream":
                    fn((probe.blocks,), (probe.threads,), (w.data_ptr(), out.data_ptr()), shared_mem=_smem(probe))
                case "cols":
                    fn((probe.blocks,), (probe.threads,), (w.data_ptr(), x.data_ptr(), out.data_ptr()),
                       shared_mem=_smem(probe))
                case "gemv":
                    fn((probe.blocks,), (probe.threads,), (x.data_ptr(), w.data_ptr(), o16.data_ptr()),
                       shared_mem=_smem(probe))

    rec: dict[str, Any] = {"name": probe.name, "blocks": probe.blocks, "bytes": probe.weight_bytes}
    if probe.kind == "gemv":
        launch(ws[0], xs[0])
        torch.cuda.synchronize()
        ref = xs[0].double().view(probe.m, probe.k) @ ws[0].double().view(probe.k, probe.n)
        rec["rel_err"] = float((o16.double().view(probe.m, probe.n) - ref).norm() / ref.norm())
    args = [[w, x] for w, x in zip(ws, xs, strict=True)]
    rec["us"] = [time_graph(launch, args) for _ in range(rounds)]
    return rec
