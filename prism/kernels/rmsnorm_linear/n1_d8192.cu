// Prism generated kernel prism_program_k0_3923402b4d (deterministic output; do not edit)
// program program, kernel 'k0' (1 of 1 custom), target sm_80
// sizes: grid (x=128, y=1), for-loop 16; block 128 threads; 2 pipeline stage(s); 133248 B dynamic shared memory
// tensors: W[8192, 8192] float16 (input), X[1, 8192] float16 (input), O[1, 8192] float16 (output)
// block graph (tile per block; where the value lives):
//   %0  Load(W, imap=(1, None), fmap=0)              [512, 64]      loop  smem s_W (ring x2)
//   %1  Load(X, imap=(None, 0), fmap=1)              [1, 512]       loop  smem s_X (ring x2)
//   %2  mul(%1, %1)                                  [1, 512]       loop  inline
//   %3  matmul(%1, %0)                               [1, 64]        loop  mma fragments (1 unit(s)/warp, k split 1)
//   %4  sum(%2, dim=1)                               [1, 1]         loop  smem red4
//   %5  Accum(%3)                                    [1, 64]        post  registers (frag) -> smem acc5
//   %6  Accum(%4)                                    [1, 1]         post  registers (ew) -> smem acc6
//   %7  scale(%6, {'recip_dim': ['X', 1]})           [1, 1]         post  inline
//   %8  add_scalar(%7, {'const': 1e-06})             [1, 1]         post  inline
//   %9  rsqrt(%8)                                    [1, 1]         post  inline
//   %10 mul(%5, %9)                                  [1, 64]        post  inline
//   %11 Save(%10 -> O, omap=(1, 0))                                 save  global



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


// W[8192, 8192] -> tile [512, 64]: 4096 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_W(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = (tid % 8) * 8;
  const int tr1 = tid / 8;
  const int t0 = tr1;
  const half_t* const s = src + t0 * 8192 + t1;
  const unsigned d = dst + (t0 * 64 + (t1 ^ ((t0 % 8) * 8))) * 2;
  cp_async16(d, s);
  cp_async16(d + 2048, s + 131072);
  cp_async16(d + 4096, s + 262144);
  cp_async16(d + 6144, s + 393216);
  cp_async16(d + 8192, s + 524288);
  cp_async16(d + 10240, s + 655360);
  cp_async16(d + 12288, s + 786432);
  cp_async16(d + 14336, s + 917504);
  cp_async16(d + 16384, s + 1048576);
  cp_async16(d + 18432, s + 1179648);
  cp_async16(d + 20480, s + 1310720);
  cp_async16(d + 22528, s + 1441792);
  cp_async16(d + 24576, s + 1572864);
  cp_async16(d + 26624, s + 1703936);
  cp_async16(d + 28672, s + 1835008);
  cp_async16(d + 30720, s + 1966080);
  cp_async16(d + 32768, s + 2097152);
  cp_async16(d + 34816, s + 2228224);
  cp_async16(d + 36864, s + 2359296);
  cp_async16(d + 38912, s + 2490368);
  cp_async16(d + 40960, s + 2621440);
  cp_async16(d + 43008, s + 2752512);
  cp_async16(d + 45056, s + 2883584);
  cp_async16(d + 47104, s + 3014656);
  cp_async16(d + 49152, s + 3145728);
  cp_async16(d + 51200, s + 3276800);
  cp_async16(d + 53248, s + 3407872);
  cp_async16(d + 55296, s + 3538944);
  cp_async16(d + 57344, s + 3670016);
  cp_async16(d + 59392, s + 3801088);
  cp_async16(d + 61440, s + 3932160);
  cp_async16(d + 63488, s + 4063232);
}

// X[1, 8192] -> tile [1, 512]: 64 copies of 16 B over 128 threads
__device__ __forceinline__ void load_s_X(unsigned dst, const half_t* __restrict__ src, const int tid) {
  const int t1 = tid * 8;
  const half_t* const s = src + t1;
  const unsigned d = dst + (t1) * 2;
  if (tid < 64) cp_async16(d, s);
}

// op 3: [1x]1x512 @ 512x64: 4 units of 16x16 over 4 warps (1 per warp), k split 1 ways, 32 k-steps per warp
__device__ __forceinline__ void mma_3(float (&acc)[1][2][4], const half_t* A, const half_t* B, const int warp, const int lane) {
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp + j * 4;
    const int mt = 0;
    const int np = u % 4;
    const unsigned a_addr = smem_u32(A + imin(mt * 16 + (lane & 15), 0) * 512 + (lane >> 4) * 8);
    const unsigned b_addr = smem_u32(B + ((lane & 7) + ((lane >> 3) & 1) * 8) * 64 + ((np * 16 + (lane >> 4) * 8) ^ ((((lane & 7) + ((lane >> 3) & 1) * 8) % 8) * 8)));
    float c[2][2][4] = {};  // two independent accumulation chains (mma latency)
    #pragma unroll
    for (int q = 0; q < 32; ++q) {
      const int t = q;
      unsigned a[4], b[4];
      ldsm_x4(a, a_addr + t * 32);
      ldsm_x4_t(b, b_addr + t * 2048);
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
#pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int u = warp + j * 4;
    const int mt = 0;
    const int np = u % 4;
    const int r0 = mt * 16 + (lane >> 2);
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = np * 16 + h * 8 + 2 * (lane & 3);
      float* d = D + r0 * 64 + col;
      if (r0 < 1) st_f2(d, acc[j][h][0], acc[j][h][1]);
      if (r0 + 8 < 1) st_f2(d + 512, acc[j][h][2], acc[j][h][3]);
    }
  }
}

extern "C" __global__ void __launch_bounds__(128) prism_program_k0_3923402b4d(const half_t* __restrict__ t_W, const half_t* __restrict__ t_X, half_t* __restrict__ t_O) {
  const uint3 bid = blockIdx;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  // shared-memory tiles (the post-loop tiles reuse the loop's space)
  float* const red4 = reinterpret_cast<float*>(smem + 0);  // loop [1, 1] pitch 1
  half_t* const s_W_ring = reinterpret_cast<half_t*>(smem + 128);  // loop [512, 64] pitch 64 ring of 2 swizzled
  half_t* const s_X_ring = reinterpret_cast<half_t*>(smem + 131200);  // loop [1, 512] pitch 512 ring of 2
  float* const acc5 = reinterpret_cast<float*>(smem + 0);  // post [1, 64] pitch 64
  float* const acc6 = reinterpret_cast<float*>(smem + 256);  // post [1, 1] pitch 1
  const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses
  // this block's tile origins in global memory
  const half_t* const g_s_W = t_W + (int)bid.x * 64;
  const half_t* const g_s_X = t_X + (int)bid.y * 8192;
  // accumulators (registers)
  float ra5[1][2][4] = {};
  float ra6[1] = {};
  // prologue: loop-invariant tiles, then the first stages
  cp_async_commit();
  #pragma unroll
  for (int st = 0; st < 1; ++st) {
    if (st < 16) {
      load_s_W(smem_base + 128 + st * 65536, g_s_W + st * 4194304, tid);
      load_s_X(smem_base + 131200 + st * 1024, g_s_X + st * 512, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<1>();
  __syncthreads();
  int sb_rd = 0, sb_wr = 1;  // ring slots of it and of it + 1: it % 2, (it + 1) % 2
  for (int it = 0; it < 16; ++it) {
    cp_async_wait<0>();
    __syncthreads();
    {
      const int nx = it + 1;
      if (nx < 16) {
        load_s_W(smem_base + 128 + sb_wr * 65536, g_s_W + nx * 4194304, tid);
        load_s_X(smem_base + 131200 + sb_wr * 1024, g_s_X + nx * 512, tid);
      }
      cp_async_commit();
    }
    const int sb = sb_rd;
    half_t* const s_W = s_W_ring + sb * 32768;
    half_t* const s_X = s_X_ring + sb * 512;
    sb_rd = sb_rd == 1 ? 0 : sb_rd + 1;
    sb_wr = sb_wr == 1 ? 0 : sb_wr + 1;
    mma_3(ra5, s_X, s_W, warp, lane);
    // red4: sum over dim 1 of a [1, 512] tile: 1 outputs, the whole block on each (every output's warp values behind one barrier, then one thread an output combines them)
    {
      __shared__ __align__(16) float red4_part[1][4];
    #pragma unroll
      for (int j = 0; j < 1; ++j) {
        const int o = j;
        float p = 0.0f;
    // one pass: a step covers the dim
        {
          const int r0 = tid * 4;
          {
            unsigned red4_v0[2];
            ld_run(red4_v0, reinterpret_cast<const unsigned*>(s_X + r0));
            p += (hload((half_t)red4_v0[0]) * hload((half_t)red4_v0[0]));
            p += (hload((half_t)(red4_v0[0] >> 16)) * hload((half_t)(red4_v0[0] >> 16)));
            p += (hload((half_t)red4_v0[1]) * hload((half_t)red4_v0[1]));
            p += (hload((half_t)(red4_v0[1] >> 16)) * hload((half_t)(red4_v0[1] >> 16)));
          }
        }
        p = warp_sum(p, 32);
        if (lane == 0) red4_part[j][warp] = p;
      }
      __syncthreads();
      if (tid < 1) {
        const int o = tid;
        const float4 red4_q0 = reinterpret_cast<const float4*>(red4_part[o])[0];
        red4[0] = ((red4_q0.x + red4_q0.y) + (red4_q0.z + red4_q0.w));
      }
      __syncthreads();
    }
    #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 1) {
        ra6[j] += red4[0];
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  // epilogue: accumulators to shared memory, then the post-loop ops and savers
  store_3(ra5, acc5, warp, lane);
  #pragma unroll
  for (int j = 0; j < 1; ++j) {
    const int e = tid + j * 128;
    if (e < 1) {
      acc6[0] = ra6[j];
    }
  }
  __syncthreads();
  // save O[1, 8192] <- tile [1, 64], omap (1, 0): 8-element stores
  {
    const int blk_11 = (int)bid.x * 64 + (int)bid.y * 8192;
  #pragma unroll
    for (int j = 0; j < 1; ++j) {
      const int e = tid + j * 128;
      if (e < 8) {
        const int s11_1 = e * 8;
        float s11_v0[8];
        ld_run(s11_v0, acc5 + s11_1);
        const float v0 = (s11_v0[0] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v1 = (s11_v0[1] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v2 = (s11_v0[2] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v3 = (s11_v0[3] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v4 = (s11_v0[4] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v5 = (s11_v0[5] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v6 = (s11_v0[6] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        const float v7 = (s11_v0[7] * rsqrtf(((acc6[0] * 0.000122070312f) + 1e-06f)));
        st_h8(t_O + blk_11 + s11_1, v0, v1, v2, v3, v4, v5, v6, v7);
      }
    }
  }
}
