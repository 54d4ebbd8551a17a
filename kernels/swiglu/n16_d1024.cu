// Prism generated kernel prism_program_k0_ffc82a4991 (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 1 custom), target sm_80
// sizes: grid (x=128, y=1), for-loop 1; block 128 threads; 1 pipeline stage(s); 98560 B dynamic shared memory
// tensors: Wg[1024, 1024] float16 (input), Wu[1024, 1024] float16 (input), X[16, 1024] float16 (input), O[16, 1024] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(Wg, imap=(1, None), fmap=0)             [1024, 8]      loop  smem s_Wg (ring x1)
//   %1  Load(Wu, imap=(1, None), fmap=0)             [1024, 8]      loop  smem s_Wu (ring x1)
//   %2  Load(X, imap=(None, 0), fmap=1)              [16, 1024]     loop  smem s_X (ring x1)
//   %3  matmul(%2, %0)                               [16, 8]        loop  mma fragments (1 unit(s)/warp, k split 4)
//   %4  matmul(%2, %1)                               [16, 8]        loop  mma fragments (1 unit(s)/warp, k split 4)
//   %5  Accum(%3)                                    [16, 8]        post  registers (frag) -> smem acc5
//   %6  Accum(%4)                                    [16, 8]        post  registers (frag) -> smem acc6
//   %7  silu(%5)                                     [16, 8]        post  inline
//   %8  mul(%6, %7)                                  [16, 8]        post  inline
//   %9  Save(%8 -> O, omap=(1, 0))                                  save  global



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


// Wg[1024, 1024] -> tile [1024, 8]: 1024 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wg(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = tid + j * 128;
    const int t0 = e;
    cp_async16(dst + t0 * 16, src + t0 * 1024);
  }
}

// Wu[1024, 1024] -> tile [1024, 8]: 1024 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wu(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = tid + j * 128;
    const int t0 = e;
    cp_async16(dst + t0 * 16, src + t0 * 1024);
  }
}

// X[16, 1024] -> tile [16, 1024]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(half_t* dst, const half_t* __restrict__ src, const int tid) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int e = tid + j * 128;
    const int t1 = (e % 128) * 8;
    const int tr1 = e / 128;
    const int t0 = tr1;
    cp_async16(dst + t0 * 1032 + t1, src + t0 * 1024 + t1);
  }
}

// op 3: [1x]16x1024 @ 1024x8: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 16 k-steps per warp
__device__ __forceinline__ void mma_3(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 15) * 1032 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 16 + imin(np * 16 + (lane >> 4) * 8, 0));
    const bool two = np * 16 + 8 < 8;
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 16; ++q) {
      const int t = kpart * 16 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 512);
      mma16816(c[q & 1][0], a, b[0], b[1]);
      if (two) mma16816(c[q & 1][1], a, b[2], b[3]);
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
  D += kpart * 192;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 12 + col;
      if (col < 8 && r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (col < 8 && r0 + 8 < 16) st_f2(d + 96, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 4: [1x]16x1024 @ 1024x8: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 16 k-steps per warp
__device__ __forceinline__ void mma_4(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 15) * 1032 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 16 + imin(np * 16 + (lane >> 4) * 8, 0));
    const bool two = np * 16 + 8 < 8;
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 16; ++q) {
      const int t = kpart * 16 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 512);
      mma16816(c[q & 1][0], a, b[0], b[1]);
      if (two) mma16816(c[q & 1][1], a, b[2], b[3]);
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
  D += kpart * 192;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 12 + col;
      if (col < 8 && r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (col < 8 && r0 + 8 < 16) st_f2(d + 96, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_ffc82a4991(const half_t* __restrict__ Wg, const half_t* __restrict__ Wu, const half_t* __restrict__ X, half_t* __restrict__ O) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Wg_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [1024, 8] pitch 16 ring of 1
  half_t* const s_Wu_ring = reinterpret_cast<half_t*>(smem + 32768);  // loop [1024, 8] pitch 16 ring of 1
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 65536);  // loop [16, 1024] pitch 1032 ring of 1
  float* const acc5 = reinterpret_cast<float*>(smem + 0);  // post [16, 8] pitch 12 4 partial copies
  float* const acc6 = reinterpret_cast<float*>(smem + 3072);  // post [16, 8] pitch 12 4 partial copies
  // this block's tile origins in global memory
  const half_t* const g_s_Wg = Wg + (int)blockIdx.x * 8;
  const half_t* const g_s_Wu = Wu + (int)blockIdx.x * 8;
  const half_t* const g_s_X = X + (int)blockIdx.y * 16384;
  // accumulators (registers)
  float ra5[1][2][4] = {};
  float ra6[1][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 1; ++st) {
    if (st < 1) {
      load_s_Wg(s_Wg_ring + st * 16384, g_s_Wg + st * 1048576, tid);
      load_s_Wu(s_Wu_ring + st * 16384, g_s_Wu + st * 1048576, tid);
      load_s_X(s_X_ring + st * 16512, g_s_X + st * 1024, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<1>();
  __syncthreads();
  for (int it = 0; it < 1; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    {
      const int nx = it + 1;
      if (nx < 1) {
        const int sb = nx % 1;
        load_s_Wg(s_Wg_ring + sb * 16384, g_s_Wg + nx * 1048576, tid);
        load_s_Wu(s_Wu_ring + sb * 16384, g_s_Wu + nx * 1048576, tid);
        load_s_X(s_X_ring + sb * 16512, g_s_X + nx * 1024, tid);
      }
      cp_async_commit();
    }
    const int sb = it % 1;
    half_t* const s_Wg = s_Wg_ring + sb * 16384;
    half_t* const s_Wu = s_Wu_ring + sb * 16384;
    half_t* const s_X = s_X_ring + sb * 16512;
    mma_3(ra5, s_X, s_Wg, warp, lane);
    mma_4(ra6, s_X, s_Wu, warp, lane);
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_3(ra5, acc5, warp, lane);
  store_4(ra6, acc6, warp, lane);
  __syncthreads();
  // save O[16, 1024] <- tile [16, 8], omap (1, 0): 8-element stores
  {
    const int blk_9 = (int)blockIdx.x * 8 + (int)blockIdx.y * 16384;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 16) {
        const int s9_0 = e;
        const float v0 = ((acc6[s9_0 * 12] + acc6[s9_0 * 12 + 192] + acc6[s9_0 * 12 + 384] + acc6[s9_0 * 12 + 576]) * prism_silu((acc5[s9_0 * 12] + acc5[s9_0 * 12 + 192] + acc5[s9_0 * 12 + 384] + acc5[s9_0 * 12 + 576])));
        const float v1 = ((acc6[s9_0 * 12 + 1] + acc6[s9_0 * 12 + 1 + 192] + acc6[s9_0 * 12 + 1 + 384] + acc6[s9_0 * 12 + 1 + 576]) * prism_silu((acc5[s9_0 * 12 + 1] + acc5[s9_0 * 12 + 1 + 192] + acc5[s9_0 * 12 + 1 + 384] + acc5[s9_0 * 12 + 1 + 576])));
        const float v2 = ((acc6[s9_0 * 12 + 2] + acc6[s9_0 * 12 + 2 + 192] + acc6[s9_0 * 12 + 2 + 384] + acc6[s9_0 * 12 + 2 + 576]) * prism_silu((acc5[s9_0 * 12 + 2] + acc5[s9_0 * 12 + 2 + 192] + acc5[s9_0 * 12 + 2 + 384] + acc5[s9_0 * 12 + 2 + 576])));
        const float v3 = ((acc6[s9_0 * 12 + 3] + acc6[s9_0 * 12 + 3 + 192] + acc6[s9_0 * 12 + 3 + 384] + acc6[s9_0 * 12 + 3 + 576]) * prism_silu((acc5[s9_0 * 12 + 3] + acc5[s9_0 * 12 + 3 + 192] + acc5[s9_0 * 12 + 3 + 384] + acc5[s9_0 * 12 + 3 + 576])));
        const float v4 = ((acc6[s9_0 * 12 + 4] + acc6[s9_0 * 12 + 4 + 192] + acc6[s9_0 * 12 + 4 + 384] + acc6[s9_0 * 12 + 4 + 576]) * prism_silu((acc5[s9_0 * 12 + 4] + acc5[s9_0 * 12 + 4 + 192] + acc5[s9_0 * 12 + 4 + 384] + acc5[s9_0 * 12 + 4 + 576])));
        const float v5 = ((acc6[s9_0 * 12 + 5] + acc6[s9_0 * 12 + 5 + 192] + acc6[s9_0 * 12 + 5 + 384] + acc6[s9_0 * 12 + 5 + 576]) * prism_silu((acc5[s9_0 * 12 + 5] + acc5[s9_0 * 12 + 5 + 192] + acc5[s9_0 * 12 + 5 + 384] + acc5[s9_0 * 12 + 5 + 576])));
        const float v6 = ((acc6[s9_0 * 12 + 6] + acc6[s9_0 * 12 + 6 + 192] + acc6[s9_0 * 12 + 6 + 384] + acc6[s9_0 * 12 + 6 + 576]) * prism_silu((acc5[s9_0 * 12 + 6] + acc5[s9_0 * 12 + 6 + 192] + acc5[s9_0 * 12 + 6 + 384] + acc5[s9_0 * 12 + 6 + 576])));
        const float v7 = ((acc6[s9_0 * 12 + 7] + acc6[s9_0 * 12 + 7 + 192] + acc6[s9_0 * 12 + 7 + 384] + acc6[s9_0 * 12 + 7 + 576]) * prism_silu((acc5[s9_0 * 12 + 7] + acc5[s9_0 * 12 + 7 + 192] + acc5[s9_0 * 12 + 7 + 384] + acc5[s9_0 * 12 + 7 + 576])));
        st_h8(O + blk_9 + s9_0 * 1024, v0, v1, v2, v3, v4, v5, v6, v7);
      }
    }
  }
}
