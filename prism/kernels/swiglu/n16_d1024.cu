// Prism generated kernel prism_program_k0_376fcc3cb7 (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_80
// sizes: grid (x=2, y=32), for-loop 8; block 128 threads; 8 pipeline stage(s); 81920 B dynamic shared memory
// tensors: Wg[1024, 1024] float16 (input), Wu[1024, 1024] float16 (input), X[16, 1024] float16 (input), t0[32, 1024] float32 (intermediate), t1[32, 1024] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(Wg, imap=(0, 1), fmap=0)                [64, 32]       loop  smem s_Wg (ring x8)
//   %1  Load(Wu, imap=(0, 1), fmap=0)                [64, 32]       loop  smem s_Wu (ring x8)
//   %2  Load(X, imap=(1, None), fmap=1)              [16, 64]       loop  smem s_X (ring x8)
//   %3  matmul(%2, %0)                               [16, 32]       loop  mma fragments (1 unit(s)/warp, k split 2)
//   %4  matmul(%2, %1)                               [16, 32]       loop  mma fragments (1 unit(s)/warp, k split 2)
//   %5  Accum(%3)                                    [16, 32]       post  registers (frag) -> smem acc5
//   %6  Accum(%4)                                    [16, 32]       post  registers (frag) -> smem acc6
//   %7  Save(%5 -> t0, omap=(0, 1))                                 save  global
//   %8  Save(%6 -> t1, omap=(0, 1))                                 save  global

// fused: each block runs split kernel 'k0', then the last of the 4 blocks feeding a block of 'k1' runs that block (prism.codegen.fuse)

// program program, kernel 'k1' (2 of 2 custom), target sm_80
// sizes: grid (x=16), for-loop 2; block 128 threads; 2 pipeline stage(s); 18432 B dynamic shared memory
// tensors: t0[32, 1024] float32 (intermediate), t1[32, 1024] float32 (intermediate), O[16, 1024] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(t0, imap=(1,), fmap=0)                  [16, 64]       loop  smem s_t0 (ring x2)
//   %1  Load(t1, imap=(1,), fmap=0)                  [16, 64]       loop  smem s_t1 (ring x2)
//   %2  Accum(%0)                                    [16, 64]       post  registers (ew) -> smem acc2
//   %3  Accum(%1)                                    [16, 64]       post  registers (ew) -> smem acc3
//   %4  silu(%2)                                     [16, 64]       post  inline
//   %5  mul(%3, %4)                                  [16, 64]       post  inline
//   %6  Save(%5 -> O, omap=(1,))                                    save  global



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
// after a block's saves: one arrival on the combining block's counter by thread 0, an acq_rel atomic
// after the block barrier (the pattern of CUTLASS's split-K semaphore): the release makes the block's
// saves visible device-wide before the count (the barrier orders every thread's saves before thread
// 0's release, and release is cumulative), the acquire orders the last block's reads of every other
// block's partials after it; true in every thread of the block that arrived last, which resets the
// counter for the next launch (no other block touches it any more; the launch's end orders the reset)
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned count, int tid) {
  __syncthreads();
  unsigned old = 0;
  if (tid == 0) asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  const bool last = __syncthreads_or(tid == 0 && old == count - 1u) != 0;
  if (last && tid == 0) *counter = 0u;
  return last;
}


namespace split {

// Wg[1024, 1024] -> tile [64, 32]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wg(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 4) * 8;
  const int tr1 = tid / 4;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 32 + (t1 ^ (((t0 / 2) % 4) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 32768);
}

// Wu[1024, 1024] -> tile [64, 32]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Wu(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 4) * 8;
  const int tr1 = tid / 4;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 32 + (t1 ^ (((t0 / 2) % 4) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 32768);
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

// op 3: [1x]16x64 @ 64x32: 2 units of 16x16 over 4 warps (1 per warp), k split 2 ways, 2 k-steps per warp
__device__ __forceinline__ void mma_3(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 2;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int a_row = imin(mt * 16 + (lane & 15), 15);
    const unsigned a_addr = smem_u32(A + a_row * 64);
    const int a_key = a_row % 8;  // swizzled A: chunk c of this row is at c ^ a_key
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 32 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 2) % 4) * 8)));
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int t = kpart * 2 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + (((t * 2 + (lane >> 4)) ^ a_key) << 4));
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

__device__ __forceinline__ void store_3(const float (&acc)[1][2][4], float* D, const int warp, const int lane) {
  const int kpart = warp / 2;
  D += kpart * 576;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 36 + col;
      if (r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 16) st_f2(d + 288, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 4: [1x]16x64 @ 64x32: 2 units of 16x16 over 4 warps (1 per warp), k split 2 ways, 2 k-steps per warp
__device__ __forceinline__ void mma_4(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  const int kpart = warp / 2;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int a_row = imin(mt * 16 + (lane & 15), 15);
    const unsigned a_addr = smem_u32(A + a_row * 64);
    const int a_key = a_row % 8;  // swizzled A: chunk c of this row is at c ^ a_key
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 32 + ((np * 16 + (lane >> 4) * 8) ^ (((((lane & 7) + ((lane >> 3) & 1) * 8) / 2) % 4) * 8)));
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int t = kpart * 2 + q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + (((t * 2 + (lane >> 4)) ^ a_key) << 4));
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
  D += kpart * 576;
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp % 2;
    const int mt = 0;
    const int np = u % 2;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 36 + col;
      if (r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 16) st_f2(d + 288, acc[j][h][2], acc[j][h][3]);
    }
  }
}

__device__ __forceinline__ void run(const half_t* __restrict__ t_Wg, const half_t* __restrict__ t_Wu, const half_t* __restrict__ t_X, float* __restrict__ t_t0, float* __restrict__ t_t1, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Wg_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [64, 32] pitch 32 ring of 8 swizzled
  half_t* const s_Wu_ring = reinterpret_cast<half_t*>(smem + 32768);  // loop [64, 32] pitch 32 ring of 8 swizzled
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 65536);  // loop [16, 64] pitch 64 ring of 8 swizzled
  float* const acc5 = reinterpret_cast<float*>(smem + 0);  // post [16, 32] pitch 36 2 partial copies
  float* const acc6 = reinterpret_cast<float*>(smem + 4608);  // post [16, 32] pitch 36 2 partial copies
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Wg = t_Wg + (int)bid.x * 524288 + (int)bid.y * 32;
  const half_t* const g_s_Wu = t_Wu + (int)bid.x * 524288 + (int)bid.y * 32;
  const half_t* const g_s_X = t_X + (int)bid.x * 512;
  // accumulators (registers)
  float ra5[1][2][4] = {};
  float ra6[1][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 8; ++st) {
    if (st < 8) {
      load_s_Wg(smem_base + st * 4096, g_s_Wg + st * 65536, tid);
      load_s_Wu(smem_base + 32768 + st * 4096, g_s_Wu + st * 65536, tid);
      load_s_X(smem_base + 65536 + st * 2048, g_s_X + st * 64, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<8>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 8: it % 8, (it + 8) % 8
  for (int it = 0; it < 8; ++it) {
    cp_async_wait<7>();
    __syncthreads();
    {
      const int nx = it + 8;
      if (nx < 8) {
        load_s_Wg(smem_base + sb_wr * 4096, g_s_Wg + nx * 65536, tid);
        load_s_Wu(smem_base + 32768 + sb_wr * 4096, g_s_Wu + nx * 65536, tid);
        load_s_X(smem_base + 65536 + sb_wr * 2048, g_s_X + nx * 64, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    half_t* const s_Wg = s_Wg_ring + sb * 2048;
    half_t* const s_Wu = s_Wu_ring + sb * 2048;
    half_t* const s_X = s_X_ring + sb * 1024;
    sb_rd = sb_rd == 7 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 7 ? 0 : sb_wr + 1;
    mma_3(ra5, s_X, s_Wg, warp, lane);
    mma_4(ra6, s_X, s_Wu, warp, lane);
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_3(ra5, acc5, warp, lane);
  store_4(ra6, acc6, warp, lane);
  __syncthreads();
  // save t0[32, 1024] <- tile [16, 32], omap (0, 1): 4-element stores
  {
    const int blk_7 = (int)bid.x * 16384 + (int)bid.y * 32;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int s7_1 = (e % 8) * 4;
      const int s7_r1 = e / 8;
      const int s7_0 = s7_r1;
      const float v0 = (acc5[s7_0 * 36 + s7_1] + acc5[s7_0 * 36 + s7_1 + 576]);
      const float v1 = (acc5[s7_0 * 36 + (s7_1 + 1)] + acc5[s7_0 * 36 + (s7_1 + 1) + 576]);
      const float v2 = (acc5[s7_0 * 36 + (s7_1 + 2)] + acc5[s7_0 * 36 + (s7_1 + 2) + 576]);
      const float v3 = (acc5[s7_0 * 36 + (s7_1 + 3)] + acc5[s7_0 * 36 + (s7_1 + 3) + 576]);
      st_f4(t_t0 + blk_7 + s7_0 * 1024 + s7_1, v0, v1, v2, v3);
    }
  }
  // save t1[32, 1024] <- tile [16, 32], omap (0, 1): 4-element stores
  {
    const int blk_8 = (int)bid.x * 16384 + (int)bid.y * 32;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int s8_1 = (e % 8) * 4;
      const int s8_r1 = e / 8;
      const int s8_0 = s8_r1;
      const float v0 = (acc6[s8_0 * 36 + s8_1] + acc6[s8_0 * 36 + s8_1 + 576]);
      const float v1 = (acc6[s8_0 * 36 + (s8_1 + 1)] + acc6[s8_0 * 36 + (s8_1 + 1) + 576]);
      const float v2 = (acc6[s8_0 * 36 + (s8_1 + 2)] + acc6[s8_0 * 36 + (s8_1 + 2) + 576]);
      const float v3 = (acc6[s8_0 * 36 + (s8_1 + 3)] + acc6[s8_0 * 36 + (s8_1 + 3) + 576]);
      st_f4(t_t1 + blk_8 + s8_0 * 1024 + s8_1, v0, v1, v2, v3);
    }
  }
}

}  // namespace split

namespace combine {

// t0[32, 1024] -> tile [16, 64]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_t0(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t1 = (tid % 16) * 4;
  const int tr1 = tid / 16;
  const int t0 = tr1;
  const float* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 72 + t1) * 4;
  cp_async16(d, s);
  cp_async16(d + 2304, s + 8192);
}

// t1[32, 1024] -> tile [16, 64]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_t1(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t1 = (tid % 16) * 4;
  const int tr1 = tid / 16;
  const int t0 = tr1;
  const float* const s = src + t0 * 1024 + t1;
  const unsigned d = dst + (t0 * 72 + t1) * 4;
  cp_async16(d, s);
  cp_async16(d + 2304, s + 8192);
}

__device__ __forceinline__ void run(const float* __restrict__ t_t0, const float* __restrict__ t_t1, half_t* __restrict__ t_O, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const s_t0_ring = reinterpret_cast<float*>(smem + 0);  // loop [16, 64] pitch 72 ring of 2
  float* const s_t1_ring = reinterpret_cast<float*>(smem + 9216);  // loop [16, 64] pitch 72 ring of 2
  float* const acc2 = reinterpret_cast<float*>(smem + 0);  // post [16, 64] pitch 68
  float* const acc3 = reinterpret_cast<float*>(smem + 4352);  // post [16, 64] pitch 68
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const float* const g_s_t0 = t_t0 + (int)bid.x * 64;
  const float* const g_s_t1 = t_t1 + (int)bid.x * 64;
  // accumulators (registers)
  float ra2[8] = {};
  float ra3[8] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 2; ++st) {
    if (st < 2) {
      load_s_t0(smem_base + st * 4608, g_s_t0 + st * 16384, tid);
      load_s_t1(smem_base + 9216 + st * 4608, g_s_t1 + st * 16384, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<2>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 2: it % 2, (it + 2) % 2
  for (int it = 0; it < 2; ++it) {
    cp_async_wait<1>();
    {
      const int nx = it + 2;
      if (nx < 2) {
        load_s_t0(smem_base + sb_wr * 4608, g_s_t0 + nx * 16384, tid);
        load_s_t1(smem_base + 9216 + sb_wr * 4608, g_s_t1 + nx * 16384, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    float* const s_t0 = s_t0_ring + sb * 1152;
    float* const s_t1 = s_t1_ring + sb * 1152;
    sb_rd = sb_rd == 1 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 1 ? 0 : sb_wr + 1;
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int a2_e1 = (e % 16) * 4;
      const int a2_er1 = e / 16;
      const int a2_e0 = a2_er1;
      float a2_v0[4];
      ld_run(a2_v0, s_t0 + a2_e0 * 72 + a2_e1);
      ra2[j * 4 + 0] += a2_v0[0];
      ra2[j * 4 + 1] += a2_v0[1];
      ra2[j * 4 + 2] += a2_v0[2];
      ra2[j * 4 + 3] += a2_v0[3];
    }
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int a3_e1 = (e % 16) * 4;
      const int a3_er1 = e / 16;
      const int a3_e0 = a3_er1;
      float a3_v0[4];
      ld_run(a3_v0, s_t1 + a3_e0 * 72 + a3_e1);
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
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int a2_e1 = (e % 16) * 4;
    const int a2_er1 = e / 16;
    const int a2_e0 = a2_er1;
    acc2[a2_e0 * 68 + a2_e1] = ra2[j * 4 + 0];
    acc2[a2_e0 * 68 + (a2_e1 + 1)] = ra2[j * 4 + 1];
    acc2[a2_e0 * 68 + (a2_e1 + 2)] = ra2[j * 4 + 2];
    acc2[a2_e0 * 68 + (a2_e1 + 3)] = ra2[j * 4 + 3];
  }
  #pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int e = tid + j * 128;
    const int a3_e1 = (e % 16) * 4;
    const int a3_er1 = e / 16;
    const int a3_e0 = a3_er1;
    acc3[a3_e0 * 68 + a3_e1] = ra3[j * 4 + 0];
    acc3[a3_e0 * 68 + (a3_e1 + 1)] = ra3[j * 4 + 1];
    acc3[a3_e0 * 68 + (a3_e1 + 2)] = ra3[j * 4 + 2];
    acc3[a3_e0 * 68 + (a3_e1 + 3)] = ra3[j * 4 + 3];
  }
  __syncthreads();
  // save O[16, 1024] <- tile [16, 64], omap (1,): 8-element stores
  {
    const int blk_6 = (int)bid.x * 64;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int s6_1 = (e % 8) * 8;
      const int s6_r1 = e / 8;
      const int s6_0 = s6_r1;
      float s6_v0[8];
      ld_run(s6_v0, acc3 + s6_0 * 68 + s6_1);
      float s6_v1[8];
      ld_run(s6_v1, acc2 + s6_0 * 68 + s6_1);
      const float v0 = (s6_v0[0] * prism_silu(s6_v1[0]));
      const float v1 = (s6_v0[1] * prism_silu(s6_v1[1]));
      const float v2 = (s6_v0[2] * prism_silu(s6_v1[2]));
      const float v3 = (s6_v0[3] * prism_silu(s6_v1[3]));
      const float v4 = (s6_v0[4] * prism_silu(s6_v1[4]));
      const float v5 = (s6_v0[5] * prism_silu(s6_v1[5]));
      const float v6 = (s6_v0[6] * prism_silu(s6_v1[6]));
      const float v7 = (s6_v0[7] * prism_silu(s6_v1[7]));
      st_h8(t_O + blk_6 + s6_0 * 1024 + s6_1, v0, v1, v2, v3, v4, v5, v6, v7);
    }
  }
}

}  // namespace combine

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_376fcc3cb7(const half_t* __restrict__ t_Wg, const half_t* __restrict__ t_Wu, const half_t* __restrict__ t_X, float* __restrict__ t_t0, float* __restrict__ t_t1, half_t* __restrict__ t_O, unsigned* __restrict__ prism_done) {
  split::run(t_Wg, t_Wu, t_X, t_t0, t_t1, blockIdx);
  const uint3 cb = make_uint3(blockIdx.y / 2, 0, 0);
  const unsigned cb_lin = cb.x + 16u * (cb.y + 1u * cb.z);
  if (!arrive_last(prism_done + cb_lin, 4u, (int)threadIdx.x)) return;
  combine::run(t_t0, t_t1, t_O, cb);
}
