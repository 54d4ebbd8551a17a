// Prism generated kernel prism_program_k0_b6d693de6e (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_80
// sizes: grid (x=8, y=2), for-loop 1; block 128 threads; 1 pipeline stage(s); 74112 B dynamic shared memory
// tensors: Kt[2, 128, 1024] float16 (input), Q[2, 8, 128] float16 (input), V[2, 1024, 128] float16 (input), t0[1, 64, 2] float32 (intermediate), t1[2, 8, 1024] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(Kt, imap=(2, 0), fmap=2)                [1, 128, 128]  loop  smem s_Kt (ring x1)
//   %1  Load(Q, imap=(None, 0), fmap=None)           [1, 8, 128]    pre   smem s_Q (once)
//   %2  Load(V, imap=(1, 0), fmap=1)                 [1, 128, 128]  loop  smem s_V (ring x1)
//   %3  scale(%1, {'recip_dim': ['Q', 2]})           [1, 8, 128]    pre   inline
//   %4  matmul(%1, %0)                               [1, 8, 128]    loop  smem mm4
//   %5  mul(%1, %3)                                  [1, 8, 128]    pre   inline
//   %6  sum(%5, dim=2)                               [1, 8, 1]      pre   smem red6
//   %7  add_scalar(%6, {'const': 1e-06})             [1, 8, 1]      pre   inline
//   %8  rsqrt(%7)                                    [1, 8, 1]      pre   inline
//   %9  mul(%4, %8)                                  [1, 8, 128]    loop  inline
//   %10 exp(%9)                                      [1, 8, 128]    loop  smem ew10
//   %11 matmul(%10, %2)                              [1, 8, 128]    loop  mma fragments (2 unit(s)/warp, k split 1)
//   %12 Accum(%10, reduce_dim=2)                     [1, 8, 1]      post  registers (red) -> smem acc12
//   %13 Accum(%11)                                   [1, 8, 128]    post  registers (frag) -> smem acc13
//   %14 Save(%12 -> t0, omap=(1, 2))                                save  global
//   %15 Save(%13 -> t1, omap=(2, 0))                                save  global

// fused: each block runs split kernel 'k0', then the last of the 8 blocks feeding a block of 'k1' runs that block (prism.codegen.fuse)

// program program, kernel 'k1' (2 of 2 custom), target sm_80
// sizes: grid (x=2), for-loop 8; block 128 threads; 1 pipeline stage(s); 4352 B dynamic shared memory
// tensors: t0[1, 64, 2] float32 (intermediate), t1[2, 8, 1024] float32 (intermediate), O[2, 8, 128] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(t0, imap=(2,), fmap=1)                  [1, 8, 1]      loop  smem s_t0 (once)
//   %1  Load(t1, imap=(0,), fmap=2)                  [1, 8, 128]    loop  smem s_t1 (once)
//   %2  Accum(%0)                                    [1, 8, 1]      post  registers (ew) -> smem acc2
//   %3  Accum(%1)                                    [1, 8, 128]    post  registers (ew) -> smem acc3
//   %4  div(%3, %2)                                  [1, 8, 128]    post  inline
//   %5  Save(%4 -> O, omap=(0,))                                    save  global



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
// a tensor another kernel writes, read in place past L1 (``Buf.l2``): ld.global.cg, volatile so
// that no load moves above the acquire of a fused combine's arrival
__device__ __forceinline__ float ld_l2(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ half_t ld_l2(const half_t* p) {
  half_t v;
  asm volatile("ld.global.cg.u16 %0, [%1];" : "=h"(v) : "l"(p));
  return v;
}


namespace split {

// Kt[2, 128, 1024] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_Kt(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t2 = (tid % 16) * 8;
  const int tr2 = tid / 16;
  const int t1 = tr2;
  const half_t* const s = src + t1 * 1024 + t2;
  const unsigned d = dst + (t1 * 128 + (t2 ^ ((t1 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 8192);
  cp_async16(d + 4096, s + 16384);
  cp_async16(d + 6144, s + 24576);
  cp_async16(d + 8192, s + 32768);
  cp_async16(d + 10240, s + 40960);
  cp_async16(d + 12288, s + 49152);
  cp_async16(d + 14336, s + 57344);
  cp_async16(d + 16384, s + 65536);
  cp_async16(d + 18432, s + 73728);
  cp_async16(d + 20480, s + 81920);
  cp_async16(d + 22528, s + 90112);
  cp_async16(d + 24576, s + 98304);
  cp_async16(d + 26624, s + 106496);
  cp_async16(d + 28672, s + 114688);
  cp_async16(d + 30720, s + 122880);
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

// V[2, 1024, 128] -> tile [1, 128, 128]: 2048 copies of 16 B over 128 threads
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

// op 4: 8x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_4(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
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

__device__ __forceinline__ void store_4(const float (&acc)[2][2][4], float* D, const int warp, const int lane) {
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

// op 11: 8x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_11(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
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

__device__ __forceinline__ void store_11(const float (&acc)[2][2][4], float* D, const int warp, const int lane) {
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

__device__ __forceinline__ void run(const half_t* __restrict__ t_Kt, const half_t* __restrict__ t_Q, const half_t* __restrict__ t_V, float* __restrict__ t_t0, float* __restrict__ t_t1, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_Q = reinterpret_cast<half_t*>(smem + 0);  // pre [1, 8, 128] pitch 128  swizzled
  float* const red6 = reinterpret_cast<float*>(smem + 2048);  // pre [1, 8, 1] pitch 1
  float* const mm4 = reinterpret_cast<float*>(smem + 2176);  // loop [1, 8, 128] pitch 132
  half_t* const ew10 = reinterpret_cast<half_t*>(smem + 6400);  // loop [1, 8, 128] pitch 136
  half_t* const s_Kt_ring = reinterpret_cast<half_t*>(smem + 8576);  // loop [1, 128, 128] pitch 128 ring of 1 swizzled
  half_t* const s_V_ring = reinterpret_cast<half_t*>(smem + 41344);  // loop [1, 128, 128] pitch 128 ring of 1 swizzled
  float* const acc12 = reinterpret_cast<float*>(smem + 0);  // post [1, 8, 1] pitch 1
  float* const acc13 = reinterpret_cast<float*>(smem + 128);  // post [1, 8, 128] pitch 132
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_Kt = t_Kt + (int)bid.y * 131072 + (int)bid.x * 128;
  const half_t* const g_s_Q = t_Q + (int)bid.y * 1024;
  const half_t* const g_s_V = t_V + (int)bid.y * 131072 + (int)bid.x * 16384;
  // accumulators (registers)
  float ra12[2] = {};
  float ra13[2][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  load_s_Q(smem_base, g_s_Q, tid);
  cp_async_commit();
  {  // the ring's Loads in the order the loop first reads them, a group each
    load_s_Kt(smem_base + 8576 + 0 * 32768, g_s_Kt + 0 * 128, tid);
    cp_async_commit();
    load_s_V(smem_base + 41344 + 0 * 32768, g_s_V + 0 * 16384, tid);
    cp_async_commit();
  }
  cp_async_wait<2>();
  __syncthreads();
  // loop-invariant ops, hoisted
  // red6: sum over dim 2 of a [1, 8, 128] tile: 8 outputs, 32 lanes each
  #pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int o = (j * 4 + warp) * 1;
    float p = 0.0f;
    {
      const int red6_o1 = o;
      // one pass: a step covers the dim
      {
        const int r0 = lane * 4;
        {
          unsigned red6_v0[2];
          ld_run(red6_v0, reinterpret_cast<const unsigned*>(s_Q + red6_o1 * 128 + (r0 ^ ((red6_o1 % 8) * 8))));
          p += (hload((half_t)red6_v0[0]) * (hload((half_t)red6_v0[0]) * 0.0078125f));
          p += (hload((half_t)(red6_v0[0] >> 16)) * (hload((half_t)(red6_v0[0] >> 16)) * 0.0078125f));
          p += (hload((half_t)red6_v0[1]) * (hload((half_t)red6_v0[1]) * 0.0078125f));
          p += (hload((half_t)(red6_v0[1] >> 16)) * (hload((half_t)(red6_v0[1] >> 16)) * 0.0078125f));
        }
      }
    }
    p = warp_sum(p, 32);
    if (lane == 0) {
      const int red6_o1 = o;
      red6[red6_o1] = p;
    }
  }
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
      mma_4(f, s_Q, s_Kt, warp, lane);
      store_4(f, mm4, warp, lane);
    }
    __syncthreads();
    // ew10 = half(op 10) [1, 8, 128]: 8-element stores
    #pragma unroll 4
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int m10_2 = (e % 16) * 8;
      const int m10_r2 = e / 16;
      const int m10_1 = m10_r2;
      float m10_v0[8];
      ld_run(m10_v0, mm4 + m10_1 * 132 + m10_2);
      const float v0 = __expf((m10_v0[0] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v1 = __expf((m10_v0[1] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v2 = __expf((m10_v0[2] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v3 = __expf((m10_v0[3] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v4 = __expf((m10_v0[4] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v5 = __expf((m10_v0[5] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v6 = __expf((m10_v0[6] * rsqrtf((red6[m10_1] + 1e-06f))));
      const float v7 = __expf((m10_v0[7] * rsqrtf((red6[m10_1] + 1e-06f))));
      st_h8(ew10 + m10_1 * 136 + m10_2, v0, v1, v2, v3, v4, v5, v6, v7);
    }
    cp_async_wait<0>();  // the next arrival of the ring's Loads
    __syncthreads();
    mma_11(ra13, ew10, s_V, warp, lane);
    // acc12: sum over dim 2 of a [1, 8, 128] tile: 8 outputs, 32 lanes each
    #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int o = (j * 4 + warp) * 1;
      float p = 0.0f;
      {
        const int acc12_o1 = o;
        // one pass: a step covers the dim
        {
          const int r0 = lane * 4;
          {
            unsigned acc12_v0[2];
            ld_run(acc12_v0, reinterpret_cast<const unsigned*>(ew10 + acc12_o1 * 136 + r0));
            p += hload((half_t)acc12_v0[0]);
            p += hload((half_t)(acc12_v0[0] >> 16));
            p += hload((half_t)acc12_v0[1]);
            p += hload((half_t)(acc12_v0[1] >> 16));
          }
        }
      }
      ra12[j] += p;  // lane partial; the lanes are combined once, after the loop
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int o = (j * 4 + warp) * 1;
    const float p = warp_sum(ra12[j], 32);
    if (lane == 0) {
      const int a12_o1 = o;
      acc12[a12_o1] = p;
    }
  }
  store_11(ra13, acc13, warp, lane);
  __syncthreads();
  // save t0[1, 64, 2] <- tile [1, 8, 1], omap (1, 2): 1-element stores
  {
    const int blk_14 = (int)bid.x * 16 + (int)bid.y;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 8) {
        const int s14_1 = e;
        const float v0 = acc12[s14_1];
        st_f1(t_t0 + blk_14 + s14_1 * 2, v0);
      }
    }
  }
  // save t1[2, 8, 1024] <- tile [1, 8, 128], omap (2, 0): 4-element stores
  {
    const int blk_15 = (int)bid.x * 128 + (int)bid.y * 8192;
  #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int s15_2 = (e % 32) * 4;
      const int s15_r2 = e / 32;
      const int s15_1 = s15_r2;
      float s15_v0[4];
      ld_run(s15_v0, acc13 + s15_1 * 132 + s15_2);
      const float v0 = s15_v0[0];
      const float v1 = s15_v0[1];
      const float v2 = s15_v0[2];
      const float v3 = s15_v0[3];
      st_f4(t_t1 + blk_15 + s15_1 * 1024 + s15_2, v0, v1, v2, v3);
    }
  }
}

}  // namespace split

namespace combine {

__device__ __forceinline__ void run(const float* __restrict__ t_t0, const float* __restrict__ t_t1, half_t* __restrict__ t_O, const uint3 bid) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const acc2 = reinterpret_cast<float*>(smem + 0);  // post [1, 8, 1] pitch 1
  float* const acc3 = reinterpret_cast<float*>(smem + 128);  // post [1, 8, 128] pitch 132
  // this block's tile origins in global memory
  const float* const g_s_t0 = t_t0 + (int)bid.x;
  const float* const g_s_t1 = t_t1 + (int)bid.x * 8192;
  // accumulators (registers)
  float ra2[1] = {};
  float ra3[8] = {};
  // prologue: loop-invariant tiles, then the first stages
  for (int it0 = 0; it0 < 8; it0 += 8) {
    float pf2_0[8][1];
    float pf3_0[8][8];
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int it = it0 + u;
      const float* const gi_s_t0 = g_s_t0 + it * 16;
      const float* const gi_s_t1 = g_s_t1 + it * 128;
      #pragma unroll
      for (int j = 0; j < 1; ++j) {
        const int e = tid + j * 128;
        if (e < 8) {
          const int a2_e1 = e;
          pf2_0[u][j] = ld_l2(gi_s_t0 + a2_e1 * 2);
        }
      }
      #pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int e = tid + j * 128;
        const int a3_e2 = (e % 128);
        const int a3_er2 = e / 128;
        const int a3_e1 = a3_er2;
        pf3_0[u][j] = ld_l2(gi_s_t1 + a3_e1 * 1024 + a3_e2);
      }
    }
    #pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int it = it0 + u;
      const float* const gi_s_t0 = g_s_t0 + it * 16;
      const float* const gi_s_t1 = g_s_t1 + it * 128;
      #pragma unroll
      for (int j = 0; j < 1; ++j) {
        const int e = tid + j * 128;
        if (e < 8) {
          const int a2_e1 = e;
          ra2[j] += pf2_0[u][j];
        }
      }
      #pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int e = tid + j * 128;
        const int a3_e2 = (e % 128);
        const int a3_er2 = e / 128;
        const int a3_e1 = a3_er2;
        ra3[j] += pf3_0[u][j];
      }
    }
  }
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 8) {
      const int a2_e1 = e;
      acc2[a2_e1] = ra2[j];
    }
  }
  #pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = tid + j * 128;
    const int a3_e2 = (e % 128);
    const int a3_er2 = e / 128;
    const int a3_e1 = a3_er2;
    acc3[a3_e1 * 132 + a3_e2] = ra3[j];
  }
  __syncthreads();
  // save O[2, 8, 128] <- tile [1, 8, 128], omap (0,): 8-element stores
  {
    const int blk_5 = (int)bid.x * 1024;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      const int s5_2 = (e % 16) * 8;
      const int s5_r2 = e / 16;
      const int s5_1 = s5_r2;
      float s5_v0[8];
      ld_run(s5_v0, acc3 + s5_1 * 132 + s5_2);
      const float v0 = (s5_v0[0] / acc2[s5_1]);
      const float v1 = (s5_v0[1] / acc2[s5_1]);
      const float v2 = (s5_v0[2] / acc2[s5_1]);
      const float v3 = (s5_v0[3] / acc2[s5_1]);
      const float v4 = (s5_v0[4] / acc2[s5_1]);
      const float v5 = (s5_v0[5] / acc2[s5_1]);
      const float v6 = (s5_v0[6] / acc2[s5_1]);
      const float v7 = (s5_v0[7] / acc2[s5_1]);
      st_h8(t_O + blk_5 + s5_1 * 128 + s5_2, v0, v1, v2, v3, v4, v5, v6, v7);
    }
  }
}

}  // namespace combine

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_b6d693de6e(const half_t* __restrict__ t_Kt, const half_t* __restrict__ t_Q, const half_t* __restrict__ t_V, float* __restrict__ t_t0, float* __restrict__ t_t1, half_t* __restrict__ t_O, unsigned* __restrict__ prism_done) {
  split::run(t_Kt, t_Q, t_V, t_t0, t_t1, blockIdx);
  const uint3 cb = make_uint3(blockIdx.y, 0, 0);
  const unsigned cb_lin = cb.x + 2u * (cb.y + 1u * cb.z);
  if (!arrive_last(prism_done + cb_lin, 8u, (int)threadIdx.x)) return;
  combine::run(t_t0, t_t1, t_O, cb);
}
