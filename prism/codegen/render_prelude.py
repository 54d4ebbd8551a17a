"""Device helpers every generated kernel starts with: half conversions, cp.async, ldmatrix, mma.

Inline PTX only, no headers, so NVRTC compiles the source as it is; sm_80 instructions only.
Half values are carried as raw 16-bit ``half_t`` bits; ``hload``/``hstore`` convert them for the
kernel's dtype (float16 or bfloat16).
"""

from __future__ import annotations

from prism.codegen.lowered import KernelLowering
from prism.ir import BinaryOp, UnaryOp
from prism.ops import Binary, Unary

_COMMON = r"""typedef unsigned short half_t;  // raw float16 / bfloat16 bits

// the compiler's own conversion (not inline PTX): it keeps shared-pointer arithmetic 32-bit
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// dst: a shared-memory byte address (32-bit, as smem_u32 gives it)
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global{L2} [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
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
"""

_F16 = r"""__device__ __forceinline__ float hload(half_t h) {
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
"""

_BF16 = r"""__device__ __forceinline__ float hload(half_t h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ half_t hstore(float f) {
  half_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// d += a @ b on one 16x8x16 tile: bfloat16 operands, float32 accumulators
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
"""

_STORES = r"""__device__ __forceinline__ unsigned pack2(float lo, float hi) {
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
"""


# a fused split + combine kernel (prism.codegen.fuse): the arrival on a combining block's counter
_FUSED = r"""// after a block's saves: one arrival on the combining block's counter by thread 0, an acq_rel atomic
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
"""


_L2_LOADS = r"""// a tensor another kernel writes, read in place past L1 (``Buf.l2``): ld.global.cg, volatile so
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
"""


_ZFILL = r"""// a padded tail's copies (prism.codegen.tails): ok false copies zeros (a source size of 0 reads nothing)
__device__ __forceinline__ void cp_async16z(unsigned dst, const void* src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async8z(unsigned dst, const void* src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(dst), "l"(src), "r"(ok ? 8 : 0) : "memory");
}
__device__ __forceinline__ void cp_async4z(unsigned dst, const void* src, bool ok) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(dst), "l"(src), "r"(ok ? 4 : 0) : "memory");
}
"""


# helpers a kernel gets only when it uses them (``prelude(helpers=...)``), by name
_MAX = "__device__ __forceinline__ float prism_max(float a, float b) { return (a != a || a > b) ? a : b; }\n"
_MIN = "__device__ __forceinline__ float prism_min(float a, float b) { return (a != a || a < b) ? a : b; }\n"
_HELPERS: dict[str, str] = {
    "prism_sigmoid": "__device__ __forceinline__ float prism_sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }\n",
    "prism_relu": "__device__ __forceinline__ float prism_relu(float x) { return x < 0.0f ? 0.0f : x; }"
                  "  // NaN stays NaN, as torch.relu\n",
    "prism_gelu_erf": "__device__ __forceinline__ float prism_gelu_erf(float x) "
                      "{ return 0.5f * x * (1.0f + erff(x * 0.70710678118f)); }\n",
    # NaN where either operand is NaN, as torch.maximum / torch.clamp (fmaxf would drop it)
    "prism_max": _MAX,
    "prism_min": _MIN,
    # a max used as a shift, x - max(x) (``ir.shift_by_max``): 0 where the max is -inf (every x masked)
    "prism_shift": "__device__ __forceinline__ float prism_shift(float m) "
                   "{ return m == -__int_as_float(0x7f800000) ? 0.0f : m; }\n",
}
_HELPER_OF: dict[Unary | Binary, str] = {
    Unary.SIGMOID: "prism_sigmoid", Unary.RELU: "prism_relu", Unary.GELU_ERF: "prism_gelu_erf",
    Unary.MAX_SCALAR: "prism_max", Binary.MAXIMUM: "prism_max", Unary.MIN_SCALAR: "prism_min",
    Binary.MINIMUM: "prism_min",
}


def prelude(dtype: str, l2_prefetch: int = 0, *, fused: bool = False, l2_loads: bool = False,
            tails: bool = False, helpers: frozenset[str] = frozenset()) -> str:
    """Helpers for a kernel whose half tensors have ``dtype`` (float16 or bfloat16); ``l2_prefetch``
    adds an ``.L2::<n>B`` prefetch hint to the 16-byte copies; ``fused``: a split kernel fused with
    its combine (``arrive_last``); ``l2_loads``: tiles read in place past L1 (``ld_l2``); ``tails``:
    zero-filling copies (``cp_async16z``...); ``helpers``: the names of the ``_HELPERS`` the kernel calls
    (``helpers_used``)."""
    common = _COMMON.replace("{L2}", f".L2::{l2_prefetch}B" if l2_prefetch else "")
    extra = "".join(code for name, code in _HELPERS.items() if name in helpers)
    return (common + extra + (_BF16 if dtype == "bfloat16" else _F16) + _STORES + (_FUSED if fused else "")
            + (_L2_LOADS if l2_loads else "") + (_ZFILL if tails else ""))


def helpers_used(*lows: KernelLowering) -> frozenset[str]:
    """The ``_HELPERS`` the kernels ``lows`` call (one launch: a split kernel and its fused combine)."""
    fns = {op.fn for low in lows for op in low.kernel.ops if isinstance(op, UnaryOp | BinaryOp)}
    shifts = any(low.shifts for low in lows)
    return frozenset({_HELPER_OF[fn] for fn in fns if fn in _HELPER_OF} | ({"prism_shift"} if shifts else set()))
