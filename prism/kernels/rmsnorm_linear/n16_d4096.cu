namespace prism_0 {
// Prism generated kernel prism_program_k0_b2f05523ab (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 2 custom), target sm_80
// sizes: grid (x=8, y=32), for-loop 4; block 128 threads; 2 pipeline stage(s); 73728 B dynamic shared memory
// tensors: W[4096, 4096] float16 (input), X[16, 4096] float16 (input), t0[128, 4096] float32 (intermediate), t1[128, 32] float32 (intermediate)
// block graph (tile per block; where the value lives):
//   %0  Load(W, imap=(0, 1), fmap=0)                 [128, 128]     loop  smem s_W (ring x2)
//   %1  Load(X, imap=(1, None), fmap=1)              [16, 128]      loop  smem s_X (ring x2)
//   %2  square(%1)                                   [16, 128]      loop  inline
//   %3  matmul(%1, %0)                               [16, 128]      loop  mma fragments (2 unit(s)/warp, k split 1)
//   %4  Accum(%2)                                    [16, 128]      post  registers (ew) -> smem acc4
//   %5  Accum(%3)                                    [16, 128]      post  registers (frag) -> smem acc5
//   %6  sum(%4, dim=1)                               [16, 1]        post  smem red6
//   %7  Save(%5 -> t0, omap=(0, 1))                                 save  global
//   %8  Save(%6 -> t1, omap=(0, 1))                                 save  global



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


// W[4096, 4096] -> tile [128, 128]: 2048 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_W(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 16) * 8;
  const int tr1 = tid / 16;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 4096 + t1;
  const unsigned d = dst + (t0 * 128 + (t1 ^ ((t0 % 8) * 8))) * 2;
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

// X[16, 4096] -> tile [16, 128]: 256 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 16) * 8;
  const int tr1 = tid / 16;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 4096 + t1;
  const unsigned d = dst + (t0 * 128 + (t1 ^ ((t0 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 32768);
}

// op 3: 16x128 @ 128x128: 8 units of 16x16, warp tiles of 1x2 on a 1x4 grid of 4 warps, 8 k-steps
__device__ __forceinline__ void mma_3(float (&acc)[2][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
  #pragma unroll
  for (int t = 0; t < 8; ++t) {
    unsigned a[1][4], b[2][4];
  #pragma unroll
    for (int r = 0; r < 1; ++r) {
      const int mt = (warp / 4) * 1 + r;
      const int a_row = imin(mt * 16 + (lane & 15), 15);
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
      if (r0 < 16) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 16) st_f2(d + 1056, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_b2f05523ab(const half_t* __restrict__ t_W, const half_t* __restrict__ t_X, float* __restrict__ t_t0, float* __restrict__ t_t1) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  half_t* const s_W_ring = reinterpret_cast<half_t*>(smem + 0);  // loop [128, 128] pitch 128 ring of 2 swizzled
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 65536);  // loop [16, 128] pitch 128 ring of 2 swizzled
  float* const acc4 = reinterpret_cast<float*>(smem + 0);  // post [16, 128] pitch 132
  float* const acc5 = reinterpret_cast<float*>(smem + 8448);  // post [16, 128] pitch 132
  float* const red6 = reinterpret_cast<float*>(smem + 16896);  // post [16, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_W = t_W + (int)bid.x * 2097152 + (int)bid.y * 128;
  const half_t* const g_s_X = t_X + (int)bid.x * 512;
  // accumulators (registers)
  float ra4[16] = {};
  float ra5[2][2][4] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 1; ++st) {
    if (st < 4) {
      load_s_W(smem_base + st * 32768, g_s_W + st * 524288, tid);
      load_s_X(smem_base + 65536 + st * 4096, g_s_X + st * 128, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<1>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 1;  // ring slots of it and of it + 1: it % 2, (it + 1) % 2
  for (int it = 0; it < 4; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    {
      const int nx = it + 1;
      if (nx < 4) {
        load_s_W(smem_base + sb_wr * 32768, g_s_W + nx * 524288, tid);
        load_s_X(smem_base + 65536 + sb_wr * 4096, g_s_X + nx * 128, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    half_t* const s_W = s_W_ring + sb * 16384;
    half_t* const s_X = s_X_ring + sb * 2048;
    sb_rd = sb_rd == 1 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 1 ? 0 : sb_wr + 1;
    mma_3(ra5, s_X, s_W, warp, lane);
    #pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int e = tid + j * 128;
      const int a4_e1 = (e % 128);
      const int a4_er1 = e / 128;
      const int a4_e0 = a4_er1;
      ra4[j] += prism_sq(hload(s_X[a4_e0 * 128 + (a4_e1 ^ ((a4_e0 % 8) * 8))]));
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int e = tid + j * 128;
    const int a4_e1 = (e % 128);
    const int a4_er1 = e / 128;
    const int a4_e0 = a4_er1;
    acc4[a4_e0 * 132 + a4_e1] = ra4[j];
  }
  store_3(ra5, acc5, warp, lane);
  __syncthreads();
  // red6: sum over dim 1 of a [16, 128] tile: 16 outputs, 32 lanes each
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int o = (j * 4 + warp) * 1;
    float p = 0.0f;
    {
      const int red6_o0 = o;
      // one pass: a step covers the dim
      {
        const int r0 = lane * 4;
        {
          float red6_v0[4];
          ld_run(red6_v0, acc4 + red6_o0 * 132 + r0);
          p += red6_v0[0];
          p += red6_v0[1];
          p += red6_v0[2];
          p += red6_v0[3];
        }
      }
    }
    p = warp_sum(p, 32);
    if (lane == 0) {
      const int red6_o0 = o;
      red6[red6_o0] = p;
    }
  }
  __syncthreads();
  // save t0[128, 4096] <- tile [16, 128], omap (0, 1): 4-element stores
  {
    const int blk_7 = (int)bid.x * 65536 + (int)bid.y * 128;
  #pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int e = tid + j * 128;
      const int s7_1 = (e % 32) * 4;
      const int s7_r1 = e / 32;
      const int s7_0 = s7_r1;
      float s7_v0[4];
      ld_run(s7_v0, acc5 + s7_0 * 132 + s7_1);
      const float v0 = s7_v0[0];
      const float v1 = s7_v0[1];
      const float v2 = s7_v0[2];
      const float v3 = s7_v0[3];
      st_f4(t_t0 + blk_7 + s7_0 * 4096 + s7_1, v0, v1, v2, v3);
    }
  }
  // save t1[128, 32] <- tile [16, 1], omap (0, 1): 1-element stores
  {
    const int blk_8 = (int)bid.x * 512 + (int)bid.y;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 16) {
        const int s8_0 = e;
        const float v0 = red6[s8_0];
        st_f1(t_t1 + blk_8 + s8_0 * 32, v0);
      }
    }
  }
}

}  // namespace prism_0

namespace prism_1 {
// Prism generated kernel prism_program_k1_b2f05523ab (deterministic output; do not edit)
// program program, kernel 'k1' (2 of 2 custom), target sm_80
// sizes: grid (x=32), for-loop 8; block 128 threads; 8 pipeline stage(s); 70656 B dynamic shared memory
// tensors: t0[128, 4096] float32 (intermediate), t1[128, 32] float32 (intermediate), O[16, 4096] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(t0, imap=(1,), fmap=0)                  [16, 128]      loop  smem s_t0 (ring x8)
//   %1  Load(t1, imap=(1,), fmap=0)                  [16, 1]        loop  smem s_t1 (ring x8)
//   %2  Accum(%0)                                    [16, 128]      post  registers (ew) -> smem acc2
//   %3  Accum(%1)                                    [16, 1]        post  registers (ew) -> smem acc3
//   %4  scale(%3, {'recip_dim': ['X', 1]})           [16, 1]        post  inline
//   %5  add_scalar(%4, {'const': 1e-06})             [16, 1]        post  inline
//   %6  rsqrt(%5)                                    [16, 1]        post  inline
//   %7  mul(%2, %6)                                  [16, 128]      post  inline
//   %8  Save(%7 -> O, omap=(1,))                                    save  global



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


// t0[128, 4096] -> tile [16, 128]: 512 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_t0(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t1 = (tid % 32) * 4;
  const int tr1 = tid / 32;
  const int t0 = tr1;
  const float* const s = src + t0 * 4096 + t1;
  const unsigned d = dst + (t0 * 136 + t1) * 4;
  cp_async16(d, s);
  cp_async16(d + 2176, s + 16384);
  cp_async16(d + 4352, s + 32768);
  cp_async16(d + 6528, s + 49152);
}

// t1[128, 32] -> tile [16, 1]: 16 copies of 4 B over 128 threads
__device__ __forceinline__ void load_s_t1(unsigned dst, const float* __restrict__ src, const int tid) {
  const int t0 = tid;
  const float* const s = src + t0 * 32;
  const unsigned d = dst + (t0) * 4;
  if (tid < 16) cp_async4(d, s);
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k1_b2f05523ab(const float* __restrict__ t_t0, const float* __restrict__ t_t1, half_t* __restrict__ t_O) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const s_t0_ring = reinterpret_cast<float*>(smem + 0);  // loop [16, 128] pitch 136 ring of 8
  float* const s_t1_ring = reinterpret_cast<float*>(smem + 69632);  // loop [16, 1] pitch 1 ring of 8
  float* const acc2 = reinterpret_cast<float*>(smem + 0);  // post [16, 128] pitch 132
  float* const acc3 = reinterpret_cast<float*>(smem + 8448);  // post [16, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const float* const g_s_t0 = t_t0 + (int)bid.x * 128;
  const float* const g_s_t1 = t_t1 + (int)bid.x;
  // accumulators (registers)
  float ra2[16] = {};
  float ra3[1] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 8; ++st) {
    if (st < 8) {
      load_s_t0(smem_base + st * 8704, g_s_t0 + st * 65536, tid);
      load_s_t1(smem_base + 69632 + st * 64, g_s_t1 + st * 512, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<8>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 0;  // ring slots of it and of it + 8: it % 8, (it + 8) % 8
  for (int it = 0; it < 8; ++it) {
    cp_async_wait<7>();
    {
      const int nx = it + 8;
      if (nx < 8) {
        load_s_t0(smem_base + sb_wr * 8704, g_s_t0 + nx * 65536, tid);
        load_s_t1(smem_base + 69632 + sb_wr * 64, g_s_t1 + nx * 512, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    float* const s_t0 = s_t0_ring + sb * 2176;
    float* const s_t1 = s_t1_ring + sb * 16;
    sb_rd = sb_rd == 7 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 7 ? 0 : sb_wr + 1;
    #pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int e = tid + j * 128;
      const int a2_e1 = (e % 32) * 4;
      const int a2_er1 = e / 32;
      const int a2_e0 = a2_er1;
      float a2_v0[4];
      ld_run(a2_v0, s_t0 + a2_e0 * 136 + a2_e1);
      ra2[j * 4 + 0] += a2_v0[0];
      ra2[j * 4 + 1] += a2_v0[1];
      ra2[j * 4 + 2] += a2_v0[2];
      ra2[j * 4 + 3] += a2_v0[3];
    }
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 16) {
        const int a3_e0 = e;
        ra3[j] += s_t1[a3_e0];
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  #pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int e = tid + j * 128;
    const int a2_e1 = (e % 32) * 4;
    const int a2_er1 = e / 32;
    const int a2_e0 = a2_er1;
    acc2[a2_e0 * 132 + a2_e1] = ra2[j * 4 + 0];
    acc2[a2_e0 * 132 + (a2_e1 + 1)] = ra2[j * 4 + 1];
    acc2[a2_e0 * 132 + (a2_e1 + 2)] = ra2[j * 4 + 2];
    acc2[a2_e0 * 132 + (a2_e1 + 3)] = ra2[j * 4 + 3];
  }
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 16) {
      const int a3_e0 = e;
      acc3[a3_e0] = ra3[j];
    }
  }
  __syncthreads();
  // save O[16, 4096] <- tile [16, 128], omap (1,): 8-element stores
  {
    const int blk_8 = (int)bid.x * 128;
  #pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int e = tid + j * 128;
      const int s8_1 = (e % 16) * 8;
      const int s8_r1 = e / 16;
      const int s8_0 = s8_r1;
      float s8_v0[8];
      ld_run(s8_v0, acc2 + s8_0 * 132 + s8_1);
      const float v0 = (s8_v0[0] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v1 = (s8_v0[1] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v2 = (s8_v0[2] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v3 = (s8_v0[3] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v4 = (s8_v0[4] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v5 = (s8_v0[5] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v6 = (s8_v0[6] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      const float v7 = (s8_v0[7] * rsqrtf(((acc3[s8_0] * 0.000244140625f) + 1e-06f)));
      st_h8(t_O + blk_8 + s8_0 * 4096 + s8_1, v0, v1, v2, v3, v4, v5, v6, v7);
    }
  }
}

}  // namespace prism_1
