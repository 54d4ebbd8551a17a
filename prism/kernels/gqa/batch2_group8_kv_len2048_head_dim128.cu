namespace prism_0 {
// Prism generated kernel prism_program_k0_fed5f1926a (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_80
// sizes: grid (x=16, y=2), for-loop 1; block 128 threads; 1 pipeline stage(s); 73984 B dynamic shared memory
// tensors: Kt[2, 128, 2048] float16 (input), Q[2, 8, 128] float16 (input), V[2, 2048, 128] float16 (input), t0[2, 128, 1] float32 (intermediate), t1[2, 128, 128] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(Kt, imap=(2, 0), fmap=2)                [1, 128, 128]  loop  smem s_Kt (ring x1)
//   %1  Load(Q, imap=(None, 0), fmap=None)           [1, 8, 128]    pre   smem s_Q (once)
//   %2  Load(V, imap=(1, 0), fmap=1)                 [1, 128, 128]  loop  smem s_V (ring x1)
//   %3  matmul(%1, %0)                               [1, 8, 128]    loop  smem mm3
//   %4  exp(%3)                                      [1, 8, 128]    loop  smem ew4
//   %5  matmul(%4, %2)                               [1, 8, 128]    loop  mma fragments (2 unit(s)/warp, k split 1)
//   %6  Accum(%4, reduce_dim=2)                      [1, 8, 1]      post  registers (red) -> smem acc6
//   %7  Accum(%5)                                    [1, 8, 128]    post  registers (frag) -> smem acc7
//   %8  Save(%6 -> t0, omap=(1, 0))                                 save  global
//   %9  Save(%7 -> t1, omap=(1, 0))                                 save  global



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


// Kt[2, 128, 2048] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Kt(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 2048 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 16384);
  cp_async16(d + 4096, s + 32768);
  cp_async16(d + 6144, s + 49152);
  cp_async16(d + 8192, s + 65536);
  cp_async16(d + 10240, s + 81920);
  cp_async16(d + 12288, s + 98304);
  cp_async16(d + 14336, s + 114688);
  cp_async16(d + 16384, s + 131072);
  cp_async16(d + 18432, s + 147456);
  cp_async16(d + 20480, s + 163840);
  cp_async16(d + 22528, s + 180224);
  cp_async16(d + 24576, s + 196608);
  cp_async16(d + 26624, s + 212992);
  cp_async16(d + 28672, s + 229376);
  cp_async16(d + 30720, s + 245760);
}

// Q[2, 8, 128] -> tile [1, 8, 128]: 128 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Q(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 128 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  cp_async16(d, s);
}

// V[2, 2048, 128] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_V(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 128 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 1024);
  cp_async16(d + 4096, s + 2048);
  cp_async16(d + 6144, s + 3072);
  cp_async16(d + 8192, s + 4096);
  cp_async16(d + 10240, s + 5120);
  cp_async16(d + 12288, s + 6144);
  cp_async16(d + 14336, s + 7168);
  cp_async16(d + 16384, s + 8192);
  cp_async16(d + 18432, s + 9216);
  cp_async16(d + 20480, s + 10240);
  cp_async16(d + 22528, s + 11264);
  cp_async16(d + 24576, s + 12288);
  cp_async16(d + 26624, s + 13312);
  cp_async16(d + 28672, s + 14336);
  cp_async16(d + 30720, s + 15360);
}

// op 3: 8x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_3(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  #pragma unroll
  for (int t = 0; t < 8; ++t) {
    unsigned a[1][4], b[2][4];
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
      const int mt = (warp / 4) * 1 + r;
      const int a_row = imin(mt * 16 + (lane & 15), 7);
      const unsigned a_addr = smem_u32(A + a_row * 128);
      const int a_key = a_row % 8;  // swizzled A: chunk c of this row is at c ^ a_key
      ldsm_x4(a[r], a_addr + (((t * 2 + (lane >> 4)) ^ a_key) << 4));
    }
  #pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int np = (warp % 4) * 2 + c;
      const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 128 + ((np * 16 + (lane >> 4) * 8) ^ ((((lane & 7) + ((lane >> 3) & 1) * 8) % 8) * 8)));
      ldsm_x4_t(b[c], b_addr + t * 4096);
    }
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
  #pragma unroll
      for (int c = 0; c < 2; ++c) {
        mma16816(acc[r * 2 + c][0], a[r], b[c][0], b[c][1]);
        mma16816(acc[r * 2 + c][1], a[r], b[c][2], b[c][3]);
      }
    }
  }
}

__device__ __forceinline__ void store_3(const float (&acc)[2][2][4], float* D, const int warp, const int lane) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int mt = (warp / 4) * 1 + j / 2;
    const int np = (warp % 4) * 2 + j % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 132 + col;
      if (r0 < 8) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 8) st_f2(d + 1056, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 5: 8x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_5(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  #pragma unroll
  for (int t = 0; t < 8; ++t) {
    unsigned a[1][4], b[2][4];
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
      const int mt = (warp / 4) * 1 + r;
      const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 7) * 136 + (lane >> 4) * 8);
      ldsm_x4(a[r], a_addr + t * 32);
    }
  #pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int np = (warp % 4) * 2 + c;
      const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 128 + ((np * 16 + (lane >> 4) * 8) ^ ((((lane & 7) + ((lane >> 3) & 1) * 8) % 8) * 8)));
      ldsm_x4_t(b[c], b_addr + t * 4096);
    }
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
  #pragma unroll
      for (int c = 0; c < 2; ++c) {
        mma16816(acc[r * 2 + c][0], a[r], b[c][0], b[c][1]);
        mma16816(acc[r * 2 + c][1], a[r], b[c][2], b[c][3]);
      }
    }
  }
}

__device__ __forceinline__ void store_5(const float (&acc)[2][2][4], float* D, const int warp, const int lane) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int mt = (warp / 4) * 1 + j / 2;
    const int np = (warp % 4) * 2 + j % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 132 + col;
      if (r0 < 8) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 8) st_f2(d + 1056, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_fed5f1926a(const half_t* __restrict__ t_Kt, const half_t* __restrict__ t_Q, const half_t* __restrict__ t_V, float* __restrict__ t_t0, float* __restrict__ t_t1) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Q = reinterpret_cast<half_t*>(smem + 0);  // pre [1, 8, 128] pitch 128  swizzled
  float* const mm3 = reinterpret_cast<float*>(smem + 2048);  // loop [1, 8, 128] pitch 132
  half_t* const ew4 = reinterpret_cast<half_t*>(smem + 6272);  // loop [1, 8, 128] pitch 136
  half_t* const s_Kt_ring = reinterpret_cast<half_t*>(smem + 8448);  // loop [1, 128, 128] pitch 128 ring of 1 swizzled
  half_t* const s_V_ring = reinterpret_cast<half_t*>(smem + 41216);  // loop [1, 128, 128] pitch 128 ring of 1 swizzled
  float* const acc6 = reinterpret_cast<float*>(smem + 0);  // post [1, 8, 1] pitch 1
  float* const acc7 = reinterpret_cast<float*>(smem + 128);  // post [1, 8, 128] pitch 132
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Kt = t_Kt + (int)bid.y * 262144 + (int)bid.x * 128;
  const half_t* const g_s_Q = t_Q + (int)bid.y * 1024;
  const half_t* const g_s_V = t_V + (int)bid.y * 262144 + (int)bid.x * 16384;
  // accumulators (registers)
  float ra6[2] = {};
  float ra7[2][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  load_s_Q(smem_base, g_s_Q, tid);
  cp_async_commit();
  {  // the ring's Loads in the order the loop first reads them, a group each
    load_s_Kt(smem_base + 8448 + 0 * 32768, g_s_Kt + 0 * 128, tid);
    cp_async_commit();
    load_s_V(smem_base + 41216 + 0 * 32768, g_s_V + 0 * 16384, tid);
    cp_async_commit();
  }
  cp_async_wait<2>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 1: it % 1, (it + 1) % 1
  for (int it = 0; it < 1; ++it) {
    cp_async_wait<1>();
    __syncthreads();
    const int sb = sb_rd;
    half_t* const s_Kt = s_Kt_ring + sb * 16384;
    half_t* const s_V = s_V_ring + sb * 16384;
    sb_rd = sb_rd == 0 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 0 ? 0 : sb_wr + 1;
    {
      float f[2][2][4] = {};
      mma_3(f, s_Q, s_Kt, warp, lane);
      store_3(f, mm3, warp, lane);
    }
    __syncthreads();
    // ew4 = half(op 4) [1, 8, 128]: 8-element stores
    #pragma unroll 4
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int m4_2 = (e % 16) * 8;
      const int m4_r2 = e / 16;
      const int m4_1 = m4_r2;
      float m4_v0[8];
      ld_run(m4_v0, mm3 + m4_1 * 132 + m4_2);
      const float v0 = __expf(m4_v0[0]);
      const float v1 = __expf(m4_v0[1]);
      const float v2 = __expf(m4_v0[2]);
      const float v3 = __expf(m4_v0[3]);
      const float v4 = __expf(m4_v0[4]);
      const float v5 = __expf(m4_v0[5]);
      const float v6 = __expf(m4_v0[6]);
      const float v7 = __expf(m4_v0[7]);
      st_h8(ew4 + m4_1 * 136 + m4_2, v0, v1, v2, v3, v4, v5, v6, v7);
    }
    cp_async_wait<0>();  // the next arrival of the ring's Loads
    __syncthreads();
    mma_5(ra7, ew4, s_V, warp, lane);
    // acc6: sum over dim 2 of a [1, 8, 128] tile: 8 outputs, 32 lanes each
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int o = (j * 4 + warp) * 1;
      float p = 0.0f;
      {
        const int acc6_o1 = o;
        // one pass: a step covers the dim
        {
          const int r0 = lane * 4;
          {
            unsigned acc6_v0[2];
            ld_run(acc6_v0, reinterpret_cast<const unsigned*>(ew4 + acc6_o1 * 136 + r0));
            p += hload((half_t)acc6_v0[0]);
            p += hload((half_t)(acc6_v0[0] >> 16));
            p += hload((half_t)acc6_v0[1]);
            p += hload((half_t)(acc6_v0[1] >> 16));
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
  for (int j = 0; j < 2; ++j) {
    const int o = (j * 4 + warp) * 1;
    const float p = warp_sum(ra6[j], 32);
    if (lane == 0) {
      const int a6_o1 = o;
      acc6[a6_o1] = p;
    }
  }
  store_5(ra7, acc7, warp, lane);
  __syncthreads();
  // save t0[2, 128, 1] <- tile [1, 8, 1], omap (1, 0): 1-element stores
  {
    const int blk_8 = (int)bid.x * 8 + (int)bid.y * 128;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 8) {
        const int s8_1 = e;
        const float v0 = acc6[s8_1];
        st_f1(t_t0 + blk_8 + s8_1, v0);
      }
    }
  }
  // save t1[2, 128, 128] <- tile [1, 8, 128], omap (1, 0): 4-element stores
  {
    const int blk_9 = (int)bid.x * 1024 + (int)bid.y * 16384;
  #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int s9_2 = (e % 32) * 4;
      const int s9_r2 = e / 32;
      const int s9_1 = s9_r2;
      float s9_v0[4];
      ld_run(s9_v0, acc7 + s9_1 * 132 + s9_2);
      const float v0 = s9_v0[0];
      const float v1 = s9_v0[1];
      const float v2 = s9_v0[2];
      const float v3 = s9_v0[3];
      st_f4(t_t1 + blk_9 + s9_1 * 128 + s9_2, v0, v1, v2, v3);
    }
  }
}

}  // namespace prism_0

namespace prism_1 {
// Prism generated kernel prism_program_k1_fed5f1926a (deterministic output; do not edit)
// program program, kernel 'k1' (2 of 2 custom), target sm_80
// sizes: grid (x=2), for-loop 16; block 128 threads; 16 pipeline stage(s); 75776 B dynamic shared memory
// tensors: t0[2, 128, 1] float32 (intermediate), t1[2, 128, 128] float32 (intermediate), O[2, 8, 128] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(t0, imap=(None,), fmap=1)               [2, 8, 1]      loop  smem s_t0 (ring x16)
//   %1  Load(t1, imap=(2,), fmap=1)                  [2, 8, 64]     loop  smem s_t1 (ring x16)
//   %2  Accum(%0)                                    [2, 8, 1]      post  registers (ew) -> smem acc2
//   %3  Accum(%1)                                    [2, 8, 64]     post  registers (ew) -> smem acc3
//   %4  div(%3, %2)                                  [2, 8, 64]     post  inline
//   %5  Save(%4 -> O, omap=(2,))                                    save  global



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


// t0[2, 128, 1] -> tile [2, 8, 1]: 16 copies of 4 B over 128 threads
__device__ __forceinline__ void load_s_t0(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t1 = (tid % 8);
  const int tr1 = tid / 8;
  const int t0 = tr1;
  const float* const s = src + t0 * 128 + t1;
  const unsigned d = dst + (t0 * 8 + t1) * 4;
  if (tid < 16) cp_async4(d, s);
}

// t1[2, 128, 128] -> tile [2, 8, 64]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_t1(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 4;
  const int tr2 = tid / 16;
  const int t1 = (tr2 % 8);
  const int tr1 = tr2 / 8;
  const int t0 = tr1;
  const float* const s = src + t0 * 16384 + t1 * 128 + t2;
  const unsigned d = dst + (t0 * 576 + t1 * 72 + t2) * 4;
  cp_async16(d, s);
  cp_async16(d + 2304, s + 16384);
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k1_fed5f1926a(const float* __restrict__ t_t0, const float* __restrict__ t_t1, half_t* __restrict__ t_O) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const s_t0_ring = reinterpret_cast<float*>(smem + 0);  // loop [2, 8, 1] pitch 1 ring of 16
  float* const s_t1_ring = reinterpret_cast<float*>(smem + 1024);  // loop [2, 8, 64] pitch 72 ring of 16
  float* const acc2 = reinterpret_cast<float*>(smem + 0);  // post [2, 8, 1] pitch 1
  float* const acc3 = reinterpret_cast<float*>(smem + 128);  // post [2, 8, 64] pitch 68
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const float* const g_s_t0 = t_t0 + 0;
  const float* const g_s_t1 = t_t1 + (int)bid.x * 64;
  // accumulators (registers)
  float ra2[1] = {};
  float ra3[8] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 16; ++st) {
    if (st < 16) {
      load_s_t0(smem_base + st * 64, g_s_t0 + st * 8, tid);
      load_s_t1(smem_base + 1024 + st * 4608, g_s_t1 + st * 1024, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<16>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 16: it % 16, (it + 16) % 16
  for (int it = 0; it < 16; ++it) {
    cp_async_wait<15>();
    {
      const int nx = it + 16;
      if (nx < 16) {
        load_s_t0(smem_base + sb_wr * 64, g_s_t0 + nx * 8, tid);
        load_s_t1(smem_base + 1024 + sb_wr * 4608, g_s_t1 + nx * 1024, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    float* const s_t0 = s_t0_ring + sb * 16;
    float* const s_t1 = s_t1_ring + sb * 1152;
    sb_rd = sb_rd == 15 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 15 ? 0 : sb_wr + 1;
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 16) {
        const int a2_e1 = (e % 8);
        const int a2_er1 = e / 8;
        const int a2_e0 = a2_er1;
        ra2[j] += s_t0[a2_e0 * 8 + a2_e1];
      }
    }
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int a3_e2 = (e % 16) * 4;
      const int a3_er2 = e / 16;
      const int a3_e1 = (a3_er2 % 8);
      const int a3_er1 = a3_er2 / 8;
      const int a3_e0 = a3_er1;
      float a3_v0[4];
      ld_run(a3_v0, s_t1 + a3_e0 * 576 + a3_e1 * 72 + a3_e2);
      ra3[j * 4 + 0] += a3_v0[0];
      ra3[j * 4 + 1] += a3_v0[1];
      ra3[j * 4 + 2] += a3_v0[2];
      ra3[j * 4 + 3] += a3_v0[3];
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 16) {
      const int a2_e1 = (e % 8);
      const int a2_er1 = e / 8;
      const int a2_e0 = a2_er1;
      acc2[a2_e0 * 8 + a2_e1] = ra2[j];
    }
  }
  #pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int a3_e2 = (e % 16) * 4;
    const int a3_er2 = e / 16;
    const int a3_e1 = (a3_er2 % 8);
    const int a3_er1 = a3_er2 / 8;
    const int a3_e0 = a3_er1;
    acc3[a3_e0 * 544 + a3_e1 * 68 + a3_e2] = ra3[j * 4 + 0];
    acc3[a3_e0 * 544 + a3_e1 * 68 + (a3_e2 + 1)] = ra3[j * 4 + 1];
    acc3[a3_e0 * 544 + a3_e1 * 68 + (a3_e2 + 2)] = ra3[j * 4 + 2];
    acc3[a3_e0 * 544 + a3_e1 * 68 + (a3_e2 + 3)] = ra3[j * 4 + 3];
  }
  __syncthreads();
  // save O[2, 8, 128] <- tile [2, 8, 64], omap (2,): 8-element stores
  {
    const int blk_5 = (int)bid.x * 64;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int s5_2 = (e % 8) * 8;
      const int s5_r2 = e / 8;
      const int s5_1 = (s5_r2 % 8);
      const int s5_r1 = s5_r2 / 8;
      const int s5_0 = s5_r1;
      float s5_v0[8];
      ld_run(s5_v0, acc3 + s5_0 * 544 + s5_1 * 68 + s5_2);
      const float v0 = (s5_v0[0] / acc2[s5_0 * 8 + s5_1]);
      const float v1 = (s5_v0[1] / acc2[s5_0 * 8 + s5_1]);
      const float v2 = (s5_v0[2] / acc2[s5_0 * 8 + s5_1]);
      const float v3 = (s5_v0[3] / acc2[s5_0 * 8 + s5_1]);
      const float v4 = (s5_v0[4] / acc2[s5_0 * 8 + s5_1]);
      const float v5 = (s5_v0[5] / acc2[s5_0 * 8 + s5_1]);
      const float v6 = (s5_v0[6] / acc2[s5_0 * 8 + s5_1]);
      const float v7 = (s5_v0[7] / acc2[s5_0 * 8 + s5_1]);
      st_h8(t_O + blk_5 + s5_0 * 1024 + s5_1 * 128 + s5_2, v0, v1, v2, v3, v4, v5, v6, v7);
    }
  }
}

}  // namespace prism_1
