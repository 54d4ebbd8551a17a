// Prism generated kernel prism_program_k0_47b700a749 (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 1 custom), target sm_80
// sizes: grid (x=128), for-loop 32; block 128 threads; 5 pipeline stage(s); 83200 B dynamic shared memory
// tensors: Wg[4096, 4096] float16 (input), Wu[4096, 4096] float16 (input), X[1, 4096] float16 (input), O[1, 4096] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(Wg, imap=(1,), fmap=0)                  [128, 32]      loop  smem s_Wg (ring x5)
//   %1  Load(Wu, imap=(1,), fmap=0)                  [128, 32]      loop  smem s_Wu (ring x5)
//   %2  Load(X, imap=(None,), fmap=1)                [1, 128]       loop  smem s_X (ring x5)
//   %3  scale(%2, {'recip_dim': ['X', 1]})           [1, 128]       loop  inline
//   %4  matmul(%2, %0)                               [1, 32]        loop  mma fragments (1 unit(s)/warp, k split 2)
//   %5  matmul(%2, %1)                               [1, 32]        loop  mma fragments (1 unit(s)/warp, k split 2)
//   %6  mul(%2, %3)                                  [1, 128]       loop  inline
//   %7  Accum(%4)                                    [1, 32]        post  registers (frag) -> smem acc7
//   %8  Accum(%5)                                    [1, 32]        post  registers (frag) -> smem acc8
//   %9  Accum(%6, reduce_dim=1)                      [1, 1]         post  registers (red) -> smem acc9
//   %10 add_scalar(%9, {'const': 1e-06})             [1, 1]         post  inline
//   %11 rsqrt(%10)                                   [1, 1]         post  inline
//   %12 square(%11)                                  [1, 1]         post  inline
//   %13 mul(%7, %12)                                 [1, 32]        post  inline
//   %14 mul(%8, %13)                                 [1, 32]        post  inline
//   %15 Save(%14 -> O, omap=(1,))                                   save  global



typedef unsigned short half_t;  // raw float16 / bfloat16 bits

// the compiler's own conversion (not inline PTX): it keeps shared-pointer arithmetic 32-bit
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// dst: a shared-memory byte address (32-bit, as smem_u32 gives it)
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async8(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async4(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(src) : "memory");
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
// GELU's tanh form through 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)): one __expf and a division, no tanhf
__device__ __forceinline__ float prism_gelu(float x) {
  return x / (1.0f + __expf(-1.5957691216f * (x + 0.044715f * x * x * x)));
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
// a run of N elements of shared memory into registers, in 16-, 8- or 4-byte loads (p aligned to them)
template <typename T, int N>
__device__ __forceinline__ void ld_run(T (&d)[N], const T* p) {
  constexpr int B = N * (int)sizeof(T);
  if constexpr (B % 16 == 0) {
#pragma unroll
    for (int q = 0; q < B / 16; ++q) reinterpret_cast<uint4*>(d)[q] = reinterpret_cast<const uint4*>(p)[q];
  } else if constexpr (B == 8) {
    *reinterpret_cast<uint2*>(d) = *reinterpret_cast<const uint2*>(p);
  } else {
    static_assert(B == 4, "ld_run: 4, 8 or 16k bytes");
    *reinterpret_cast<unsigned*>(d) = *reinterpret_cast<const unsigned*>(p);
  }
}


// Wg[4096, 4096] -> tile [128, 32]: 512 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wg(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 4) * 8;
  const int tr1 = tid / 4;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 4096 + t1;
  const unsigned d = dst + (t0 * 32 + (t1 ^ (((t0 / 2) % 4) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 131072);
  cp_async16(d + 4096, s + 262144);
  cp_async16(d + 6144, s + 393216);
}

// Wu[4096, 4096] -> tile [128, 32]: 512 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wu(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 4) * 8;
  const int tr1 = tid / 4;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 4096 + t1;
  const unsigned d = dst + (t0 * 32 + (t1 ^ (((t0 / 2) % 4) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 131072);
  cp_async16(d + 4096, s + 262144);
  cp_async16(d + 6144, s + 393216);
}

// X[1, 4096] -> tile [1, 128]: 16 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = tid * 8;
  const half_t* const s = src + t1;
  const unsigned d = dst + (t1) * 2;
  if (tid < 16) cp_async16(d, s);
}

// op 4: [1x]1x128 @ 128x32: 2 units of 16x16 over 4 warps (1 per warp), k split 2 ways, 4 k-steps per warp
__device__ __forceinline__ void mma_4(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 2;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 0) * 128 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 32 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 2) % 4) * 8)));
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int t = kpart * 4 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 1024);
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
  const int kpart = warp / 2;
  D += kpart * 32;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 32 + col;
      if (r0 < 1) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 1) st_f2(d + 256, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 5: [1x]1x128 @ 128x32: 2 units of 16x16 over 4 warps (1 per warp), k split 2 ways, 4 k-steps per warp
__device__ __forceinline__ void mma_5(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 2;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 0) * 128 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 32 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 2) % 4) * 8)));
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int t = kpart * 4 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 1024);
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

__device__ __forceinline__ void store_5(const float (&acc)[1][2][4], float* D, const int warp, const int lane) {
  const int kpart = warp / 2;
  D += kpart * 32;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 32 + col;
      if (r0 < 1) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 1) st_f2(d + 256, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_47b700a749(const half_t* __restrict__ t_Wg, const half_t* __restrict__ t_Wu, const half_t* __restrict__ t_X, half_t* __restrict__ t_O) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Wg_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [128, 32] pitch 32 ring of 5 swizzled
  half_t* const s_Wu_ring = reinterpret_cast<half_t*>(smem + 40960);  // loop [128, 32] pitch 32 ring of 5 swizzled
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 81920);  // loop [1, 128] pitch 128 ring of 5
  float* const acc7 = reinterpret_cast<float*>(smem + 0);  // post [1, 32] pitch 32 2 partial copies
  float* const acc8 = reinterpret_cast<float*>(smem + 256);  // post [1, 32] pitch 32 2 partial copies
  float* const acc9 = reinterpret_cast<float*>(smem + 512);  // post [1, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Wg = t_Wg + (int)bid.x * 32;
  const half_t* const g_s_Wu = t_Wu + (int)bid.x * 32;
  const half_t* const g_s_X = t_X + 0;
  // accumulators (registers)
  float ra7[1][2][4] = {};
  float ra8[1][2][4] = {};
  float ra9[1] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 4; ++st) {
    if (st < 32) {
      load_s_Wg(smem_base + st * 8192, g_s_Wg + st * 524288, tid);
      load_s_Wu(smem_base + 40960 + st * 8192, g_s_Wu + st * 524288, tid);
      load_s_X(smem_base + 81920 + st * 256, g_s_X + st * 128, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<4>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 4;  // ring slots of it and of it + 4: it % 5, (it + 4) % 5
  for (int it = 0; it < 32; ++it) {
    cp_async_wait<3>();
    __syncthreads();
    {
      const int nx = it + 4;
      if (nx < 32) {
        load_s_Wg(smem_base + sb_wr * 8192, g_s_Wg + nx * 524288, tid);
        load_s_Wu(smem_base + 40960 + sb_wr * 8192, g_s_Wu + nx * 524288, tid);
        load_s_X(smem_base + 81920 + sb_wr * 256, g_s_X + nx * 128, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    half_t* const s_Wg = s_Wg_ring + sb * 4096;
    half_t* const s_Wu = s_Wu_ring + sb * 4096;
    half_t* const s_X = s_X_ring + sb * 128;
    sb_rd = sb_rd == 4 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 4 ? 0 : sb_wr + 1;
    mma_4(ra7, s_X, s_Wg, warp, lane);
    mma_5(ra8, s_X, s_Wu, warp, lane);
    // acc9: sum over dim 1 of a [1, 128] tile: 1 outputs, 32 lanes each
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int o = (j * 4 + warp) * 1;
      float p = 0.0f;
      if (o < 1) {
        // one pass: a step covers the dim
        {
          const int r0 = lane * 4;
          {
            unsigned acc9_v0[2];
            ld_run(acc9_v0, reinterpret_cast<const unsigned*>(s_X + r0));
            p += (hload((half_t)acc9_v0[0]) * (hload((half_t)acc9_v0[0]) * 0.000244140625f));
            p += (hload((half_t)(acc9_v0[0] >> 16)) * (hload((half_t)(acc9_v0[0] >> 16)) * 0.000244140625f));
            p += (hload((half_t)acc9_v0[1]) * (hload((half_t)acc9_v0[1]) * 0.000244140625f));
            p += (hload((half_t)(acc9_v0[1] >> 16)) * (hload((half_t)(acc9_v0[1] >> 16)) * 0.000244140625f));
          }
        }
      }
      ra9[j] += p;  // lane partial; the lanes are combined once, after the loop
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_4(ra7, acc7, warp, lane);
  store_5(ra8, acc8, warp, lane);
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int o = (j * 4 + warp) * 1;
    const float p = warp_sum(ra9[j], 32);
    if (o < 1 && lane == 0) {
      acc9[0] = p;
    }
  }
  __syncthreads();
  // save O[1, 4096] <- tile [1, 32], omap (1,): 8-element stores
  {
    const int blk_15 = (int)bid.x * 32;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 4) {
        const int s15_1 = e * 8;
        const float v0 = ((acc8[s15_1] + acc8[s15_1 + 32]) * ((acc7[s15_1] + acc7[s15_1 + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v1 = ((acc8[(s15_1 + 1)] + acc8[(s15_1 + 1) + 32]) * ((acc7[(s15_1 + 1)] + acc7[(s15_1 + 1) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v2 = ((acc8[(s15_1 + 2)] + acc8[(s15_1 + 2) + 32]) * ((acc7[(s15_1 + 2)] + acc7[(s15_1 + 2) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v3 = ((acc8[(s15_1 + 3)] + acc8[(s15_1 + 3) + 32]) * ((acc7[(s15_1 + 3)] + acc7[(s15_1 + 3) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v4 = ((acc8[(s15_1 + 4)] + acc8[(s15_1 + 4) + 32]) * ((acc7[(s15_1 + 4)] + acc7[(s15_1 + 4) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v5 = ((acc8[(s15_1 + 5)] + acc8[(s15_1 + 5) + 32]) * ((acc7[(s15_1 + 5)] + acc7[(s15_1 + 5) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v6 = ((acc8[(s15_1 + 6)] + acc8[(s15_1 + 6) + 32]) * ((acc7[(s15_1 + 6)] + acc7[(s15_1 + 6) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        const float v7 = ((acc8[(s15_1 + 7)] + acc8[(s15_1 + 7) + 32]) * ((acc7[(s15_1 + 7)] + acc7[(s15_1 + 7) + 32]) * prism_sq(rsqrtf((acc9[0] + 1e-06f)))));
        st_h8(t_O + blk_15 + s15_1, v0, v1, v2, v3, v4, v5, v6, v7);
      }
    }
  }
}
