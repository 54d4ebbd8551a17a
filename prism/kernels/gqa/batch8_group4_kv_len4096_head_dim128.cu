// Prism generated kernel prism_program_k0_0699022f6c (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_80
// sizes: grid (x=32, y=8, z=1), for-loop 1; block 128 threads; 1 pipeline stage(s); 72192 B dynamic shared memory
// tensors: Kt[8, 128, 4096] float16 (input), Q[8, 4, 128] float16 (input), V[8, 4096, 128] float16 (input), t0[32, 4, 1024] float32 (intermediate), t1[1, 32, 32] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(Kt, imap=(2, 0, None), fmap=None)       [1, 128, 128]  pre   smem s_Kt (once)
//   %1  Load(Q, imap=(None, 0, 1), fmap=None)        [1, 4, 128]    pre   smem s_Q (once)
//   %2  Load(V, imap=(1, 0, None), fmap=None)        [1, 128, 128]  pre   smem s_V (once)
//   %3  matmul(%1, %0)                               [1, 4, 128]    pre   smem mm3
//   %4  exp(%3)                                      [1, 4, 128]    pre   smem ew4
//   %5  matmul(%4, %2)                               [1, 4, 128]    loop  mma fragments (2 unit(s)/warp, k split 1)
//   %6  Accum(%4)                                    [1, 4, 128]    post  inline
//   %7  Accum(%5)                                    [1, 4, 128]    post  registers (frag) -> smem acc7
//   %8  sum(%6, dim=2)                               [1, 4, 1]      post  smem red8
//   %9  Save(%7 -> t0, omap=(0, 2, 1))                              save  global
//   %10 Save(%8 -> t1, omap=(2, 1, 0))                              save  global

// fused: each block runs split kernel 'k0', then the last of the 32 blocks feeding a block of 'k1' runs that block (prism.codegen.fuse)

// program program, kernel 'k1' (2 of 2 custom), target sm_80
// sizes: grid (x=8, y=1), for-loop 32; block 128 threads; 16 pipeline stage(s); 36864 B dynamic shared memory
// tensors: t0[32, 4, 1024] float32 (intermediate), t1[1, 32, 32] float32 (intermediate), O[8, 4, 128] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(t0, imap=(2, 1), fmap=0)                [1, 4, 128]    loop  smem s_t0 (ring x16)
//   %1  Load(t1, imap=(1, 0), fmap=2)                [1, 4, 1]      loop  smem s_t1 (ring x16)
//   %2  Accum(%0)                                    [1, 4, 128]    post  registers (ew) -> smem acc2
//   %3  Accum(%1)                                    [1, 4, 1]      post  registers (ew) -> smem acc3
//   %4  div(%2, %3)                                  [1, 4, 128]    post  inline
//   %5  Save(%4 -> O, omap=(0, 1))                                  save  global



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

// Kt[8, 128, 4096] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Kt(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 4096 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 32768);
  cp_async16(d + 4096, s + 65536);
  cp_async16(d + 6144, s + 98304);
  cp_async16(d + 8192, s + 131072);
  cp_async16(d + 10240, s + 163840);
  cp_async16(d + 12288, s + 196608);
  cp_async16(d + 14336, s + 229376);
  cp_async16(d + 16384, s + 262144);
  cp_async16(d + 18432, s + 294912);
  cp_async16(d + 20480, s + 327680);
  cp_async16(d + 22528, s + 360448);
  cp_async16(d + 24576, s + 393216);
  cp_async16(d + 26624, s + 425984);
  cp_async16(d + 28672, s + 458752);
  cp_async16(d + 30720, s + 491520);
}

// Q[8, 4, 128] -> tile [1, 4, 128]: 64 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Q(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 128 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  if (tid < 64) cp_async16(d, s);
}

// V[8, 4096, 128] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
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

// op 3: 4x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_3(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  #pragma unroll
  for (int t = 0; t < 8; ++t) {
    unsigned a[1][4], b[2][4];
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
      const int mt = (warp / 4) * 1 + r;
      const int a_row = imin(mt * 16 + (lane & 15), 3);
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
      if (r0 < 4) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 4) st_f2(d + 1056, acc[j][h][2], acc[j][h][3]);
    }
  }
}

// op 5: 4x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_5(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  #pragma unroll
  for (int t = 0; t < 8; ++t) {
    unsigned a[1][4], b[2][4];
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
      const int mt = (warp / 4) * 1 + r;
      const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 3) * 136 + (lane >> 4) * 8);
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
      if (r0 < 4) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 4) st_f2(d + 1056, acc[j][h][2], acc[j][h][3]);
    }
  }
}

__device__ __forceinline__ void run(const half_t* __restrict__ t_Kt, const half_t* __restrict__ t_Q, const half_t* __restrict__ t_V, float* __restrict__ t_t0, float* __restrict__ t_t1, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Kt = reinterpret_cast<half_t*>(smem + 0);  // pre [1, 128, 128] pitch 128  swizzled
  half_t* const s_Q = reinterpret_cast<half_t*>(smem + 32768);  // pre [1, 4, 128] pitch 128  swizzled
  half_t* const s_V = reinterpret_cast<half_t*>(smem + 33792);  // pre [1, 128, 128] pitch 128  swizzled
  float* const mm3 = reinterpret_cast<float*>(smem + 66560);  // pre [1, 4, 128] pitch 132
  half_t* const ew4 = reinterpret_cast<half_t*>(smem + 68736);  // pre [1, 4, 128] pitch 136
  float* const acc7 = reinterpret_cast<float*>(smem + 69888);  // post [1, 4, 128] pitch 132
  float* const red8 = reinterpret_cast<float*>(smem + 72064);  // post [1, 4, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Kt = t_Kt + (int)bid.y * 524288 + (int)bid.x * 128;
  const half_t* const g_s_Q = t_Q + (int)bid.y * 512 + (int)bid.z * 512;
  const half_t* const g_s_V = t_V + (int)bid.y * 524288 + (int)bid.x * 16384;
  // accumulators (registers)
  float ra7[2][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  load_s_Kt(smem_base, g_s_Kt, tid);
  load_s_Q(smem_base + 32768, g_s_Q, tid);
  load_s_V(smem_base + 33792, g_s_V, tid);
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 1; ++st) {
    cp_async_commit();
  }
  cp_async_wait<1>();
  __syncthreads();
  // loop-invariant ops, hoisted
  {
    float f[2][2][4] = {};
    mma_3(f, s_Q, s_Kt, warp, lane);
    store_3(f, mm3, warp, lane);
  }
  __syncthreads();
  // ew4 = half(op 4) [1, 4, 128]: 8-element stores
  #pragma unroll 4
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 64) {
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
  }
  __syncthreads();
  for (int it = 0; it < 1; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    cp_async_commit();
    mma_5(ra7, ew4, s_V, warp, lane);
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_5(ra7, acc7, warp, lane);
  __syncthreads();
  // red8: sum over dim 2 of a [1, 4, 128] tile: 4 outputs, 32 lanes each
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int o = (j * 4 + warp) * 1;
    float p = 0.0f;
    {
      const int red8_o1 = o;
      // one pass: a step covers the dim
      {
        const int r0 = lane * 4;
        {
          unsigned red8_v0[2];
          ld_run(red8_v0, reinterpret_cast<const unsigned*>(ew4 + red8_o1 * 136 + r0));
          p += hload((half_t)red8_v0[0]);
          p += hload((half_t)(red8_v0[0] >> 16));
          p += hload((half_t)red8_v0[1]);
          p += hload((half_t)(red8_v0[1] >> 16));
        }
      }
    }
    p = warp_sum(p, 32);
    if (lane == 0) {
      const int red8_o1 = o;
      red8[red8_o1] = p;
    }
  }
  __syncthreads();
  // save t0[32, 4, 1024] <- tile [1, 4, 128], omap (0, 2, 1): 4-element stores
  {
    const int blk_9 = (int)bid.x * 4096 + (int)bid.y * 128 + (int)bid.z * 4096;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
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
      st_f4(t_t0 + blk_9 + s9_1 * 1024 + s9_2, v0, v1, v2, v3);
    }
  }
  // save t1[1, 32, 32] <- tile [1, 4, 1], omap (2, 1, 0): 1-element stores
  {
    const int blk_10 = (int)bid.x + (int)bid.y * 128 + (int)bid.z * 1024;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 4) {
        const int s10_1 = e;
        const float v0 = red8[s10_1];
        st_f1(t_t1 + blk_10 + s10_1 * 32, v0);
      }
    }
  }
}

}  // namespace split

namespace combine {

// t0[32, 4, 1024] -> tile [1, 4, 128]: 128 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_t0(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t2 = (tid % 32) * 4;
  const int tr2 = tid / 32;
  const int t1 = tr2;
  const float* const s = src + t1 * 1024 + t2;
  const unsigned d = dst + (t1 * 136 + t2) * 4;
  cp_async16(d, s);
}

// t1[1, 32, 32] -> tile [1, 4, 1]: 4 copies of 4 B over 128 threads
__device__ __forceinline__ void load_s_t1(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t1 = tid;
  const float* const s = src + t1 * 32;
  const unsigned d = dst + (t1) * 4;
  if (tid < 4) cp_async4(d, s);
}

__device__ __forceinline__ void run(const float* __restrict__ t_t0, const float* __restrict__ t_t1, half_t* __restrict__ t_O, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const s_t0_ring = reinterpret_cast<float*>(smem + 0);  // loop [1, 4, 128] pitch 136 ring of 16
  float* const s_t1_ring = reinterpret_cast<float*>(smem + 34816);  // loop [1, 4, 1] pitch 1 ring of 16
  float* const acc2 = reinterpret_cast<float*>(smem + 0);  // post [1, 4, 128] pitch 132
  float* const acc3 = reinterpret_cast<float*>(smem + 2176);  // post [1, 4, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const float* const g_s_t0 = t_t0 + (int)bid.y * 4096 + (int)bid.x * 128;
  const float* const g_s_t1 = t_t1 + (int)bid.y * 1024 + (int)bid.x * 128;
  // accumulators (registers)
  float ra2[4] = {};
  float ra3[1] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 15; ++st) {
    if (st < 32) {
      load_s_t0(smem_base + st * 2176, g_s_t0 + st * 4096, tid);
      load_s_t1(smem_base + 34816 + st * 16, g_s_t1 + st * 1, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<15>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 15;  // ring slots of it and of it + 15: it % 16, (it + 15) % 16
  for (int it = 0; it < 32; ++it) {
    cp_async_wait<14>();
    __syncthreads();
    {
      const int nx = it + 15;
      if (nx < 32) {
        load_s_t0(smem_base + sb_wr * 2176, g_s_t0 + nx * 4096, tid);
        load_s_t1(smem_base + 34816 + sb_wr * 16, g_s_t1 + nx * 1, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    float* const s_t0 = s_t0_ring + sb * 544;
    float* const s_t1 = s_t1_ring + sb * 4;
    sb_rd = sb_rd == 15 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 15 ? 0 : sb_wr + 1;
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int a2_e2 = (e % 32) * 4;
      const int a2_er2 = e / 32;
      const int a2_e1 = a2_er2;
      float a2_v0[4];
      ld_run(a2_v0, s_t0 + a2_e1 * 136 + a2_e2);
      ra2[j * 4 + 0] += a2_v0[0];
      ra2[j * 4 + 1] += a2_v0[1];
      ra2[j * 4 + 2] += a2_v0[2];
      ra2[j * 4 + 3] += a2_v0[3];
    }
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 4) {
        const int a3_e1 = e;
        ra3[j] += s_t1[a3_e1];
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    const int a2_e2 = (e % 32) * 4;
    const int a2_er2 = e / 32;
    const int a2_e1 = a2_er2;
    acc2[a2_e1 * 132 + a2_e2] = ra2[j * 4 + 0];
    acc2[a2_e1 * 132 + (a2_e2 + 1)] = ra2[j * 4 + 1];
    acc2[a2_e1 * 132 + (a2_e2 + 2)] = ra2[j * 4 + 2];
    acc2[a2_e1 * 132 + (a2_e2 + 3)] = ra2[j * 4 + 3];
  }
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 4) {
      const int a3_e1 = e;
      acc3[a3_e1] = ra3[j];
    }
  }
  __syncthreads();
  // save O[8, 4, 128] <- tile [1, 4, 128], omap (0, 1): 8-element stores
  {
    const int blk_5 = (int)bid.x * 512 + (int)bid.y * 512;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 64) {
        const int s5_2 = (e % 16) * 8;
        const int s5_r2 = e / 16;
        const int s5_1 = s5_r2;
        float s5_v0[8];
        ld_run(s5_v0, acc2 + s5_1 * 132 + s5_2);
        const float v0 = (s5_v0[0] / acc3[s5_1]);
        const float v1 = (s5_v0[1] / acc3[s5_1]);
        const float v2 = (s5_v0[2] / acc3[s5_1]);
        const float v3 = (s5_v0[3] / acc3[s5_1]);
        const float v4 = (s5_v0[4] / acc3[s5_1]);
        const float v5 = (s5_v0[5] / acc3[s5_1]);
        const float v6 = (s5_v0[6] / acc3[s5_1]);
        const float v7 = (s5_v0[7] / acc3[s5_1]);
        st_h8(t_O + blk_5 + s5_1 * 128 + s5_2, v0, v1, v2, v3, v4, v5, v6, v7);
      }
    }
  }
}

}  // namespace combine

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_0699022f6c(const half_t* __restrict__ t_Kt, const half_t* __restrict__ t_Q, const half_t* __restrict__ t_V, float* __restrict__ t_t0, float* __restrict__ t_t1, half_t* __restrict__ t_O, unsigned* __restrict__ prism_done) {
  split::run(t_Kt, t_Q, t_V, t_t0, t_t1, blockIdx);
  const uint3 cb = make_uint3(blockIdx.y, 0, 0);
  const unsigned cb_lin = cb.x + 8u * (cb.y + 1u * cb.z);
  if (!arrive_last(prism_done + cb_lin, 32u, (int)threadIdx.x)) return;
  combine::run(t_t0, t_t1, t_O, cb);
}
