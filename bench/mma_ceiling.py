"""The ceiling of the sm_80 tensor-core path on this GPU: back-to-back ``mma.sync.m16n8k16`` (float16
in, float32 accumulators), measured with a calibration kernel in the bench run.

Prism's generated GEMMs use only sm_80 instructions (``mma.sync``, ``ldmatrix``, ``cp.async``), so on
an H200 their ceiling is this rate, not the vendor GEMM's (cuBLAS uses Hopper's wgmma). The kernel
keeps ``CHAINS`` independent accumulator chains per warp, ``WARPS`` warps per block and
``BLOCKS_PER_SM`` blocks per SM, with no memory traffic in the loop: the highest rate the
instruction reaches.
"""

from __future__ import annotations

CHAINS = 8
WARPS = 8
BLOCKS_PER_SM = 4
FLOPS_PER_MMA = 2 * 16 * 8 * 16

SOURCE = r"""
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
extern "C" __global__ void __launch_bounds__(WARPS * 32) mma_peak(float* out, int iters) {
  const unsigned h = 0x14001400u + (threadIdx.x & 7u);  // small float16 pairs (~1e-3): no overflow
  const unsigned a[4] = {h, h ^ 1u, h ^ 2u, h ^ 3u};
  float d[CHAINS][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) mma16816(d[c], a, h, h ^ 4u);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
  if (s == 1234.5f) out[blockIdx.x] = s;  // never true in practice; keeps the chains live
}
"""


def mma_sync_rate(iters: int = 4096) -> float:
    """float16 mma.sync rate of this GPU in flop/s (CUDA events around the calibration kernel)."""
    import cupy
    import torch

    from prism.tune.timing import kernel_time_us

    src = f"#define CHAINS {CHAINS}\n#define WARPS {WARPS}\n" + SOURCE
    fn = cupy.RawModule(code=src, options=("--std=c++17",)).get_function("mma_peak")
    sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    blocks = sms * BLOCKS_PER_SM
    out = torch.zeros(blocks, device="cuda", dtype=torch.float32)

    def launch() -> None:
        with cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            fn((blocks,), (WARPS * 32,), (out.data_ptr(), cupy.int32(iters)))

    us = kernel_time_us(launch, warmup=2, reps=10, flush_l2=False)
    return blocks * WARPS * iters * CHAINS * FLOPS_PER_MMA / (us * 1e-6)
