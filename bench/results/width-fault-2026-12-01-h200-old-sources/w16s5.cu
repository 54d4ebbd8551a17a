// Prism generated kernel prism_program_k0_a496c504e0 (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_90
// sizes: grid (x=2, y=256), for-loop 16; block 128 threads; 5 pipeline stage(s); 83200 B dynamic shared memory
// tensors: Wg[4096, 4096] float16 (input), Wu[4096, 4096] float16 (input), X[16, 4096] float16 (input), t0[32, 4096] float32 (intermediate), t1[32, 4096] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(Wg, imap=(0, 1), fmap=0)                [128, 16]      loop  smem s_Wg (ring x5)
//   %1  Load(Wu, imap=(0, 1), fmap=0)                [128, 16]      loop  smem s_Wu (ring x5)
//   %2  Load(X, imap=(1, None), fmap=1)              [16, 128]      loop  smem s_X (ring x5)
//   %3  matmul(%2, %0)                               [16, 16]       loop  mma fragments (1 unit(s)/warp, k split 4)
//   %4  matmul(%2, %1)                               [16, 16]       loop  mma fragments (1 unit(s)/warp, k split 4)
//   %5  Accum(%3)                                    [16, 16]       post  registers (frag) -> smem acc5
//   %6  Accum(%4)                                    [16, 16]       post  registers (frag) -> smem acc6
//   %7  Save(%5 -> t0, omap=(0, 1))                                 save  global
//   %8  Save(%6 -> t1, omap=(0, 1))                                 save  global



typedef unsigned short half_t;  // raw float16 / bfloat16 bits

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_u32(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__device__ __forceinline__ int imin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ float prism_sq(float x) { return x * x; }
__device__ __forceinline__ float prism_silu(float x) { return x / (1.0f + __expf(-x)); }
__device__ __forceinline__ float prism_gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float warp_sum(float v, int width) {
  for (int o = width >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v, int width) {
  for (int o = width >> 1; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float hload(half_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ half_t hstore(float f) {
  half_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// d += a @ b on one 16x8x16 tile: float16 operands, float32 accumulators
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  return (unsigned)hstore(lo) | ((unsigned)hstore(hi) << 16);
}
__device__ __forceinline__ void st_h8(half_t* p, float a, float b, float c, float d, float e, float f, float g,
                                             float h) {
  uint4 v;
  v.x = pack2(a, b); v.y = pack2(c, d); v.z = pack2(e, f); v.w = pack2(g, h);
  *reinterpret_cast<uint4*>(p) = v;
}
__device__ __forceinline__ void st_h4(half_t* p, float a, float b, float c, float d) {
  uint2 v;
  v.x = pack2(a, b); v.y = pack2(c, d);
  *reinterpret_cast<uint2*>(p) = v;
}
__device__ __forceinline__ void st_h2(half_t* p, float a, float b) { *reinterpret_cast<unsigned*>(p) = pack2(a, b); }
__device__ __forceinline__ void st_h1(half_t* p, float a) { *p = hstore(a); }
__device__ __forceinline__ void st_f4(float* p, float a, float b, float c, float d) {
  float4 v;
  v.x = a; v.y = b; v.z = c; v.w = d;
  *reinterpret_cast<float4*>(p) = v;
}
__device__ __forceinline__ void st_f2(float* p, float a, float b) {
  float2 v;
  v.x = a; v.y = b;
  *reinterpret_cast<float2*>(p) = v;
}
__device__ __forceinline__ void st_f1(float* p, float a) { *p = a; }


// Wg[4096, 4096] -> tile [128, 16]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wg(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int t1 = (e % 2) * 8;
    const int tr1 = e / 2;
    const int t0 = tr1;
    cp_async16(dst + t0 * 24 + t1, src + t0 * 4096 + t1);
  }
}

// Wu[4096, 4096] -> tile [128, 16]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wu(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int t1 = (e % 2) * 8;
    const int tr1 = e / 2;
    const int t0 = tr1;
    cp_async16(dst + t0 * 24 + t1, src + t0 * 4096 + t1);
  }
}

// X[16, 4096] -> tile [16, 128]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int t1 = (e % 16) * 8;
    const int tr1 = e / 16;
    const int t0 = tr1;
    cp_async16(dst + t0 * 136 + t1, src + t0 * 4096 + t1);
  }
}

// op 3: [1x]16x128 @ 128x16: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 2 k-steps per warp
__device__ __forceinline__ void mma_3(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 15) * 136 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 24 + np * 16 + (lane >> 4) * 8);
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int t = kpart * 2 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 768);
      mma16816(c[q & 1][0], a, b[0], b[1]);
      mma16816(c[q & 1][1], a, b[2], b[3]);
    }
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
    #pragma unroll
      for (int r = 0; r < 4; ++r) acc[j][h][r] += c[0][h][r] + c[1][h][r];
    }
  }
}

__device__ __forceinline__ void store_3(const float (&acc)[1][2][4], float* D, const int warp, const int lane) {
  const int kpart = warp / 1;
  D += kpart * 320;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 20 + col;
      if (r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 16) st_f2(d + 160, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 4: [1x]16x128 @ 128x16: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 2 k-steps per warp
__device__ __forceinline__ void mma_4(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 15) * 136 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 24 + np * 16 + (lane >> 4) * 8);
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int t = kpart * 2 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 768);
      mma16816(c[q & 1][0], a, b[0], b[1]);
      mma16816(c[q & 1][1], a, b[2], b[3]);
    }
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
    #pragma unroll
      for (int r = 0; r < 4; ++r) acc[j][h][r] += c[0][h][r] + c[1][h][r];
    }
  }
}

__device__ __forceinline__ void store_4(const float (&acc)[1][2][4], float* D, const int warp, const int lane) {
  const int kpart = warp / 1;
  D += kpart * 320;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 20 + col;
      if (r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 16) st_f2(d + 160, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_a496c504e0(const half_t* __restrict__ t_Wg, const half_t* __restrict__ t_Wu, const half_t* __restrict__ t_X, float* __restrict__ t_t0, float* __restrict__ t_t1) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Wg_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [128, 16] pitch 24 ring of 5
  half_t* const s_Wu_ring = reinterpret_cast<half_t*>(smem + 30720);  // loop [128, 16] pitch 24 ring of 5
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 61440);  // loop [16, 128] pitch 136 ring of 5
  float* const acc5 = reinterpret_cast<float*>(smem + 0);  // post [16, 16] pitch 20 4 partial copies
  float* const acc6 = reinterpret_cast<float*>(smem + 5120);  // post [16, 16] pitch 20 4 partial copies
  // this block's tile origins in global memory
  const half_t* const g_s_Wg = t_Wg + (int)blockIdx.x * 8388608 + (int)blockIdx.y * 16;
  const half_t* const g_s_Wu = t_Wu + (int)blockIdx.x * 8388608 + (int)blockIdx.y * 16;
  const half_t* const g_s_X = t_X + (int)blockIdx.x * 2048;
  // accumulators (registers)
  float ra5[1][2][4] = {};
  float ra6[1][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 4; ++st) {
    if (st < 16) {
      load_s_Wg(s_Wg_ring + st * 3072, g_s_Wg + st * 524288, tid);
      load_s_Wu(s_Wu_ring + st * 3072, g_s_Wu + st * 524288, tid);
      load_s_X(s_X_ring + st * 2176, g_s_X + st * 128, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<4>();
  __syncthreads();
  for (int it = 0; it < 16; ++it) {
    cp_async_wait<3>();
    __syncthreads();
    {
      const int nx = it + 4;
      if (nx < 16) {
        const int sb = nx % 5;
        load_s_Wg(s_Wg_ring + sb * 3072, g_s_Wg + nx * 524288, tid);
        load_s_Wu(s_Wu_ring + sb * 3072, g_s_Wu + nx * 524288, tid);
        load_s_X(s_X_ring + sb * 2176, g_s_X + nx * 128, tid);
      }
      cp_async_commit();
    }
    const int sb = it % 5;
    half_t* const s_Wg = s_Wg_ring + sb * 3072;
    half_t* const s_Wu = s_Wu_ring + sb * 3072;
    half_t* const s_X = s_X_ring + sb * 2176;
    mma_3(ra5, s_X, s_Wg, warp, lane);
    mma_4(ra6, s_X, s_Wu, warp, lane);
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_3(ra5, acc5, warp, lane);
  store_4(ra6, acc6, warp, lane);
  __syncthreads();
  // save t0[32, 4096] <- tile [16, 16], omap (0, 1): 4-element stores
  {
    const int blk_7 = (int)blockIdx.x * 65536 + (int)blockIdx.y * 16;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 64) {
        const int s7_1 = (e % 4) * 4;
        const int s7_r1 = e / 4;
        const int s7_0 = s7_r1;
        const float v0 = (acc5[s7_0 * 20 + s7_1] + acc5[s7_0 * 20 + s7_1 + 320] + acc5[s7_0 * 20 + s7_1 + 640] + acc5[s7_0 * 20 + s7_1 + 960]);
        const float v1 = (acc5[s7_0 * 20 + (s7_1 + 1)] + acc5[s7_0 * 20 + (s7_1 + 1) + 320] + acc5[s7_0 * 20 + (s7_1 + 1) + 640] + acc5[s7_0 * 20 + (s7_1 + 1) + 960]);
        const float v2 = (acc5[s7_0 * 20 + (s7_1 + 2)] + acc5[s7_0 * 20 + (s7_1 + 2) + 320] + acc5[s7_0 * 20 + (s7_1 + 2) + 640] + acc5[s7_0 * 20 + (s7_1 + 2) + 960]);
        const float v3 = (acc5[s7_0 * 20 + (s7_1 + 3)] + acc5[s7_0 * 20 + (s7_1 + 3) + 320] + acc5[s7_0 * 20 + (s7_1 + 3) + 640] + acc5[s7_0 * 20 + (s7_1 + 3) + 960]);
        st_f4(t_t0 + blk_7 + s7_0 * 4096 + s7_1, v0, v1, v2, v3);
      }
    }
  }
  // save t1[32, 4096] <- tile [16, 16], omap (0, 1): 4-element stores
  {
    const int blk_8 = (int)blockIdx.x * 65536 + (int)blockIdx.y * 16;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 64) {
        const int s8_1 = (e % 4) * 4;
        const int s8_r1 = e / 4;
        const int s8_0 = s8_r1;
        const float v0 = (acc6[s8_0 * 20 + s8_1] + acc6[s8_0 * 20 + s8_1 + 320] + acc6[s8_0 * 20 + s8_1 + 640] + acc6[s8_0 * 20 + s8_1 + 960]);
        const float v1 = (acc6[s8_0 * 20 + (s8_1 + 1)] + acc6[s8_0 * 20 + (s8_1 + 1) + 320] + acc6[s8_0 * 20 + (s8_1 + 1) + 640] + acc6[s8_0 * 20 + (s8_1 + 1) + 960]);
        const float v2 = (acc6[s8_0 * 20 + (s8_1 + 2)] + acc6[s8_0 * 20 + (s8_1 + 2) + 320] + acc6[s8_0 * 20 + (s8_1 + 2) + 640] + acc6[s8_0 * 20 + (s8_1 + 2) + 960]);
        const float v3 = (acc6[s8_0 * 20 + (s8_1 + 3)] + acc6[s8_0 * 20 + (s8_1 + 3) + 320] + acc6[s8_0 * 20 + (s8_1 + 3) + 640] + acc6[s8_0 * 20 + (s8_1 + 3) + 960]);
        st_f4(t_t1 + blk_8 + s8_0 * 4096 + s8_1, v0, v1, v2, v3);
      }
    }
  }
}
