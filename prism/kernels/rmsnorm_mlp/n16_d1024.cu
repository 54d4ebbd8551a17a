// Prism generated kernel prism_program_k0_e3284942f2 (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 1 custom), target sm_80
// sizes: grid (x=64), for-loop 16; block 128 threads; 16 pipeline stage(s); 98304 B dynamic shared memory
// tensors: Wg[1024, 1024] float16 (input), Wu[1024, 1024] float16 (input), X[16, 1024] float16 (input), O[16, 1024] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(Wg, imap=(1,), fmap=0)                  [64, 16]       loop  smem s_Wg (ring x16)
//   %1  Load(Wu, imap=(1,), fmap=0)                  [64, 16]       loop  smem s_Wu (ring x16)
//   %2  Load(X, imap=(None,), fmap=1)                [16, 64]       loop  smem s_X (ring x16)
//   %3  square(%2)                                   [16, 64]       loop  inline
//   %4  matmul(%2, %0)                               [16, 16]       loop  mma fragments (1 unit(s)/warp, k split 4)
//   %5  matmul(%2, %1)                               [16, 16]       loop  mma fragments (1 unit(s)/warp, k split 4)
//   %6  Accum(%3, reduce_dim=1)                      [16, 1]        post  registers (red) -> smem acc6
//   %7  Accum(%4)                                    [16, 16]       post  registers (frag) -> smem acc7
//   %8  Accum(%5)                                    [16, 16]       post  registers (frag) -> smem acc8
//   %9  scale(%6, {'recip_dim': ['X', 1]})           [16, 1]        post  inline
//   %10 add_scalar(%9, {'const': 1e-06})             [16, 1]        post  inline
//   %11 rsqrt(%10)                                   [16, 1]        post  inline
//   %12 mul(%7, %11)                                 [16, 16]       post  inline
//   %13 mul(%8, %12)                                 [16, 16]       post  inline
//   %14 mul(%11, %13)                                [16, 16]       post  inline
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


// Wg[1024, 1024] -> tile [64, 16]: 128 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wg(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 2) * 8;
  const int tr1 = tid / 2;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 16 + (t1 ^ (((t0 / 4) % 2) * 8))) * 2;
  cp_async16(d, s);
}

// Wu[1024, 1024] -> tile [64, 16]: 128 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wu(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 2) * 8;
  const int tr1 = tid / 2;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 16 + (t1 ^ (((t0 / 4) % 2) * 8))) * 2;
  cp_async16(d, s);
}

// X[16, 1024] -> tile [16, 64]: 128 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 8) * 8;
  const int tr1 = tid / 8;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 64 + (t1 ^ ((t0 % 8) * 8))) * 2;
  cp_async16(d, s);
}

// op 4: [1x]16x64 @ 64x16: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 1 k-steps per warp
__device__ __forceinline__ void mma_4(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int a_row = imin(mt * 16 + (lane & 15), 15);
    const unsigned a_addr = smem_u32(A + a_row * 64);
    const int a_key = a_row % 8;  // swizzled A: chunk c of this row is at c ^ a_key
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 16 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 4) % 2) * 8)));
    #pragma unroll
    for (int q = 0; q < 1; ++q) {
      const int t = kpart * 1 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + (((t * 2 + (lane >> 4)) ^ a_key) << 4));
      ldsm_x4_t(b, b_addr + t * 512);
      mma16816(acc[j][0], a, b[0], b[1]);
      mma16816(acc[j][1], a, b[2], b[3]);
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

// op 5: [1x]16x64 @ 64x16: 1 units of 16x16 over 4 warps (1 per warp), k split 4 ways, 1 k-steps per warp
__device__ __forceinline__ void mma_5(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 1;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 1;
    const int mt = 0;
    const int np = 0;
    const int a_row = imin(mt * 16 + (lane & 15), 15);
    const unsigned a_addr = smem_u32(A + a_row * 64);
    const int a_key = a_row % 8;  // swizzled A: chunk c of this row is at c ^ a_key
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 16 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 4) % 2) * 8)));
    #pragma unroll
    for (int q = 0; q < 1; ++q) {
      const int t = kpart * 1 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + (((t * 2 + (lane >> 4)) ^ a_key) << 4));
      ldsm_x4_t(b, b_addr + t * 512);
      mma16816(acc[j][0], a, b[0], b[1]);
      mma16816(acc[j][1], a, b[2], b[3]);
    }
  }
}

__device__ __forceinline__ void store_5(const float (&acc)[1][2][4], float* D, const int warp, const int lane) {
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

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_e3284942f2(const half_t* __restrict__ t_Wg, const half_t* __restrict__ t_Wu, const half_t* __restrict__ t_X, half_t* __restrict__ t_O) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Wg_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [64, 16] pitch 16 ring of 16 swizzled
  half_t* const s_Wu_ring = reinterpret_cast<half_t*>(smem + 32768);  // loop [64, 16] pitch 16 ring of 16 swizzled
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 65536);  // loop [16, 64] pitch 64 ring of 16 swizzled
  float* const acc6 = reinterpret_cast<float*>(smem + 0);  // post [16, 1] pitch 1
  float* const acc7 = reinterpret_cast<float*>(smem + 128);  // post [16, 16] pitch 20 4 partial copies
  float* const acc8 = reinterpret_cast<float*>(smem + 5248);  // post [16, 16] pitch 20 4 partial copies
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Wg = t_Wg + (int)bid.x * 16;
  const half_t* const g_s_Wu = t_Wu + (int)bid.x * 16;
  const half_t* const g_s_X = t_X + 0;
  // accumulators (registers)
  float ra6[4] = {};
  float ra7[1][2][4] = {};
  float ra8[1][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 16; ++st) {
    if (st < 16) {
      load_s_Wg(smem_base + st * 2048, g_s_Wg + st * 65536, tid);
      load_s_Wu(smem_base + 32768 + st * 2048, g_s_Wu + st * 65536, tid);
      load_s_X(smem_base + 65536 + st * 2048, g_s_X + st * 64, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<16>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 16: it % 16, (it + 16) % 16
  for (int it = 0; it < 16; ++it) {
    cp_async_wait<15>();
    __syncthreads();
    {
      const int nx = it + 16;
      if (nx < 16) {
        load_s_Wg(smem_base + sb_wr * 2048, g_s_Wg + nx * 65536, tid);
        load_s_Wu(smem_base + 32768 + sb_wr * 2048, g_s_Wu + nx * 65536, tid);
        load_s_X(smem_base + 65536 + sb_wr * 2048, g_s_X + nx * 64, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    half_t* const s_Wg = s_Wg_ring + sb * 1024;
    half_t* const s_Wu = s_Wu_ring + sb * 1024;
    half_t* const s_X = s_X_ring + sb * 1024;
    sb_rd = sb_rd == 15 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 15 ? 0 : sb_wr + 1;
    mma_4(ra7, s_X, s_Wg, warp, lane);
    mma_5(ra8, s_X, s_Wu, warp, lane);
    // acc6: sum over dim 1 of a [16, 64] tile: 16 outputs, 32 lanes each
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int o = (j * 4 + warp) * 1;
      float p = 0.0f;
      {
        const int acc6_o0 = o;
        // one pass: a step covers the dim
        {
          const int r0 = lane * 2;
          {
            unsigned acc6_v0[1];
            ld_run(acc6_v0, reinterpret_cast<const unsigned*>(s_X + acc6_o0 * 64 + (r0 ^ ((acc6_o0 % 8) * 8))));
            p += prism_sq(hload((half_t)acc6_v0[0]));
            p += prism_sq(hload((half_t)(acc6_v0[0] >> 16)));
          }
        }
      }
      ra6[j] += p;  // lane partial; the lanes are combined once, after the loop
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int o = (j * 4 + warp) * 1;
    const float p = warp_sum(ra6[j], 32);
    if (lane == 0) {
      const int a6_o0 = o;
      acc6[a6_o0] = p;
    }
  }
  store_4(ra7, acc7, warp, lane);
  store_5(ra8, acc8, warp, lane);
  __syncthreads();
  // save O[16, 1024] <- tile [16, 16], omap (1,): 8-element stores
  {
    const int blk_15 = (int)bid.x * 16;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 32) {
        const int s15_1 = (e % 2) * 8;
        const int s15_r1 = e / 2;
        const int s15_0 = s15_r1;
        const float v0 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + s15_1] + acc8[s15_0 * 20 + s15_1 + 320] + acc8[s15_0 * 20 + s15_1 + 640] + acc8[s15_0 * 20 + s15_1 + 960]) * ((acc7[s15_0 * 20 + s15_1] + acc7[s15_0 * 20 + s15_1 + 320] + acc7[s15_0 * 20 + s15_1 + 640] + acc7[s15_0 * 20 + s15_1 + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v1 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 1)] + acc8[s15_0 * 20 + (s15_1 + 1) + 320] + acc8[s15_0 * 20 + (s15_1 + 1) + 640] + acc8[s15_0 * 20 + (s15_1 + 1) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 1)] + acc7[s15_0 * 20 + (s15_1 + 1) + 320] + acc7[s15_0 * 20 + (s15_1 + 1) + 640] + acc7[s15_0 * 20 + (s15_1 + 1) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v2 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 2)] + acc8[s15_0 * 20 + (s15_1 + 2) + 320] + acc8[s15_0 * 20 + (s15_1 + 2) + 640] + acc8[s15_0 * 20 + (s15_1 + 2) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 2)] + acc7[s15_0 * 20 + (s15_1 + 2) + 320] + acc7[s15_0 * 20 + (s15_1 + 2) + 640] + acc7[s15_0 * 20 + (s15_1 + 2) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v3 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 3)] + acc8[s15_0 * 20 + (s15_1 + 3) + 320] + acc8[s15_0 * 20 + (s15_1 + 3) + 640] + acc8[s15_0 * 20 + (s15_1 + 3) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 3)] + acc7[s15_0 * 20 + (s15_1 + 3) + 320] + acc7[s15_0 * 20 + (s15_1 + 3) + 640] + acc7[s15_0 * 20 + (s15_1 + 3) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v4 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 4)] + acc8[s15_0 * 20 + (s15_1 + 4) + 320] + acc8[s15_0 * 20 + (s15_1 + 4) + 640] + acc8[s15_0 * 20 + (s15_1 + 4) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 4)] + acc7[s15_0 * 20 + (s15_1 + 4) + 320] + acc7[s15_0 * 20 + (s15_1 + 4) + 640] + acc7[s15_0 * 20 + (s15_1 + 4) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v5 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 5)] + acc8[s15_0 * 20 + (s15_1 + 5) + 320] + acc8[s15_0 * 20 + (s15_1 + 5) + 640] + acc8[s15_0 * 20 + (s15_1 + 5) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 5)] + acc7[s15_0 * 20 + (s15_1 + 5) + 320] + acc7[s15_0 * 20 + (s15_1 + 5) + 640] + acc7[s15_0 * 20 + (s15_1 + 5) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v6 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 6)] + acc8[s15_0 * 20 + (s15_1 + 6) + 320] + acc8[s15_0 * 20 + (s15_1 + 6) + 640] + acc8[s15_0 * 20 + (s15_1 + 6) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 6)] + acc7[s15_0 * 20 + (s15_1 + 6) + 320] + acc7[s15_0 * 20 + (s15_1 + 6) + 640] + acc7[s15_0 * 20 + (s15_1 + 6) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        const float v7 = (rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)) * ((acc8[s15_0 * 20 + (s15_1 + 7)] + acc8[s15_0 * 20 + (s15_1 + 7) + 320] + acc8[s15_0 * 20 + (s15_1 + 7) + 640] + acc8[s15_0 * 20 + (s15_1 + 7) + 960]) * ((acc7[s15_0 * 20 + (s15_1 + 7)] + acc7[s15_0 * 20 + (s15_1 + 7) + 320] + acc7[s15_0 * 20 + (s15_1 + 7) + 640] + acc7[s15_0 * 20 + (s15_1 + 7) + 960]) * rsqrtf(((acc6[s15_0] * 0.0009765625f) + 1e-06f)))));
        st_h8(t_O + blk_15 + s15_0 * 1024 + s15_1, v0, v1, v2, v3, v4, v5, v6, v7);
      }
    }
  }
}
