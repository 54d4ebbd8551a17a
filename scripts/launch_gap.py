"""Where a small generated kernel's time goes, against Inductor's (run on the device machine).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/launch_gap.py --only gelu_exact_bias,row_variance \
        [--which decode] [--samples 32] [--rounds 2] [--hand] [--out DIR]

``--hand`` first times the hand-written probes (``HAND``: an RMS norm reading its row once or twice, a
variance with one barrier or two, gelu(X + B) with erff and without the erf), each
checked against float64 and timed beside torch.compile of the same function.

Per zoo program: ``prism.superoptimize(..., inductor=False)`` (search cache carried; tuning runs here) and
``torch.compile`` of the same program, then, all timed by the bench protocol (``graph_time_us``):

* ``prism``: the returned callable (allocates its output each call, as every system does);
* ``raw``: the same kernels launched straight through CuPy on torch's stream into one preallocated output
  (no allocation, no argument checks): what the callable costs beyond its launches;
* ``raw_alloc``: ``raw`` with a fresh ``torch.empty`` output per call;
* ``empty``: an empty kernel of the same grid and block (the launch floor of this harness);
* ``compile``: torch.compile's kernels.

The generated sources go to DIR (one ``.cu`` per kernel) for reading. Every system is checked against the
float64 reference first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np
import torch

import prism
from bench.zoo import zoo_graph
from prism.codegen.plan import KernelLaunch
from prism.reference import relative_error
from prism.runtime import compile_kernel
from prism.torch_program import torch_program
from prism.tune.timing import graph_time_us
from prism.tune.tuner import default_scales, random_inputs

EMPTY = 'extern "C" __global__ void empty_kernel() {}'

# Hand-written probes (``--hand``): an RMS norm of [8, 4096] half rows, one row a block of 512 threads, one
# 16-byte run a thread, reading its row once (kept in registers) or twice (before and after the reduction's
# barrier, as the generated kernel does); gelu(X + B) over [16, 3072], 8 contiguous elements a thread.
HAND = r"""
typedef unsigned short half_t;
__device__ __forceinline__ float hl(unsigned h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((half_t)h)); return f; }
__device__ __forceinline__ unsigned hs2(float a, float b) {
  half_t x, y;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(a));
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(y) : "f"(b));
  return (unsigned)x | ((unsigned)y << 16);
}
__device__ __forceinline__ uint4 ld16(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ float wsum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <bool TWICE>
__device__ __forceinline__ void rms(const half_t* __restrict__ x,
    half_t* __restrict__ o) {
  __shared__ float part[16];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const half_t* row = x + blockIdx.x * 4096 + tid * 8;
  uint4 v = ld16(row);
  unsigned w[4] = {v.x, v.y, v.z, v.w};
  float p = 0.0f;
  for (int i = 0; i < 4; ++i) { float a = hl(w[i] & 0xffffu), b = hl(w[i] >> 16); p += a * a + b * b; }
  p = wsum(p);
  if (lane == 0) part[warp] = p;
  __syncthreads();
  const float s = wsum(lane < 16 ? part[lane] : 0.0f);
  const float r = rsqrtf(s * (1.0f / 4096) + 1e-6f);
  if (TWICE) { v = ld16(row); w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w; }
  uint4 out;
  out.x = hs2(hl(w[0] & 0xffffu) * r, hl(w[0] >> 16) * r);
  out.y = hs2(hl(w[1] & 0xffffu) * r, hl(w[1] >> 16) * r);
  out.z = hs2(hl(w[2] & 0xffffu) * r, hl(w[2] >> 16) * r);
  out.w = hs2(hl(w[3] & 0xffffu) * r, hl(w[3] >> 16) * r);
  *reinterpret_cast<uint4*>(o + blockIdx.x * 4096 + tid * 8) = out;
}
extern "C" __global__ void __launch_bounds__(512) rms_once(const half_t* __restrict__ x,
    half_t* __restrict__ o) { rms<false>(x, o); }
extern "C" __global__ void __launch_bounds__(512) rms_twice(const half_t* __restrict__ x,
    half_t* __restrict__ o) { rms<true>(x, o); }
template <bool ONE_BARRIER>
__device__ __forceinline__ void rowvar(const half_t* __restrict__ x, half_t* __restrict__ o) {
  __shared__ float pa[16], pb[16];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const uint4 v = ld16(x + blockIdx.x * 4096 + tid * 8);
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
  float a = 0.0f, b = 0.0f;
  for (int i = 0; i < 4; ++i) {
    const float lo = hl(w[i] & 0xffffu), hi = hl(w[i] >> 16);
    a += lo + hi;
    b += lo * lo + hi * hi;
  }
  a = wsum(a);
  if (lane == 0) pa[warp] = a;
  if (!ONE_BARRIER) { __syncthreads(); a = wsum(lane < 16 ? pa[lane] : 0.0f); }
  b = wsum(b);
  if (lane == 0) pb[warp] = b;
  __syncthreads();
  if (ONE_BARRIER) a = wsum(lane < 16 ? pa[lane] : 0.0f);
  b = wsum(lane < 16 ? pb[lane] : 0.0f);
  const float m = a * (1.0f / 4096);
  if (tid == 0) o[blockIdx.x] = (half_t)(hs2(b * (1.0f / 4096) - m * m, 0.0f) & 0xffffu);
}
extern "C" __global__ void __launch_bounds__(512) rowvar_two(const half_t* __restrict__ x, half_t* __restrict__ o) {
  rowvar<false>(x, o);
}
extern "C" __global__ void __launch_bounds__(512) rowvar_one(const half_t* __restrict__ x, half_t* __restrict__ o) {
  rowvar<true>(x, o);
}
__device__ __forceinline__ float gelu(float h) { return 0.5f * h * (1.0f + erff(h * 0.70710678118f)); }
template <int ERF>
__device__ __forceinline__ void gelu_bias(const half_t* __restrict__ b,
    const half_t* __restrict__ x,
    half_t* __restrict__ o) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
  const uint4 xv = ld16(x + i), bv = ld16(b + i % 3072);
  const unsigned xw[4] = {xv.x, xv.y, xv.z, xv.w}, bw[4] = {bv.x, bv.y, bv.z, bv.w};
  unsigned ow[4];
  for (int k = 0; k < 4; ++k) {
    float lo = hl(xw[k] & 0xffffu) + hl(bw[k] & 0xffffu), hi = hl(xw[k] >> 16) + hl(bw[k] >> 16);
    ow[k] = ERF ? hs2(gelu(lo), gelu(hi)) : hs2(lo, hi);
  }
  *reinterpret_cast<uint4*>(o + i) = make_uint4(ow[0], ow[1], ow[2], ow[3]);
}
extern "C" __global__ void gelu_flat(const half_t* __restrict__ b,
    const half_t* __restrict__ x,
    half_t* __restrict__ o) { gelu_bias<1>(b, x, o); }
extern "C" __global__ void add_flat(const half_t* __restrict__ b,
    const half_t* __restrict__ x,
    half_t* __restrict__ o) { gelu_bias<0>(b, x, o); }
"""


def _inputs(graph: Any, seed: int) -> list[Any]:
    host = random_inputs(graph, default_scales(graph), seed)
    return [torch.from_numpy(host[t.name]).to(device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]


def _raw(fn: Any, stream_of: Any) -> Any:
    """The plan's kernel launches alone: args are the program's inputs, then preallocated outputs."""
    plan = fn.plan
    launches = [s for s in plan.steps if isinstance(s, KernelLaunch)]
    if len(launches) != len(plan.steps):
        return None  # a predefined op in the plan: nothing to compare
    kernels = {k.entry: compile_kernel(k) for k in launches}
    bufs = {b.name: torch.zeros(b.shape, dtype=getattr(torch, b.dtype) if b.dtype != "uint32" else torch.int32,
                                device="cuda") for b in plan.buffers}
    names_in = [t.name for t in plan.inputs]

    def call(*args: Any, out: list[Any] | None = None) -> Any:
        outs = out if out is not None else [torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="cuda")
                                             for t in plan.outputs]
        ptrs = {n: a.data_ptr() for n, a in zip(names_in, args, strict=True)}
        ptrs.update({t.name: o.data_ptr() for t, o in zip(plan.outputs, outs, strict=True)})
        ptrs.update({n: b.data_ptr() for n, b in bufs.items()})
        with stream_of():
            for s in launches:
                kernels[s.entry](s.grid, s.block, tuple(np.uint64(ptrs[a]) for a in s.args), shared_mem=s.smem_bytes)
        return outs[0]

    return call


def _stream() -> Any:
    import cupy
    with warnings.catch_warnings():  # CuPy 14 deprecates ExternalStream; it still works (as prism.runtime)
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


def run(name: str, which: str, samples: int, out_dir: str | None) -> dict[str, Any]:
    import cupy

    graph = zoo_graph(name, which)
    torch._dynamo.reset()
    fn = prism.superoptimize(graph, samples=samples, program=name, progress=False, inductor=False)
    comp = torch.compile(torch_program(graph), dynamic=False)
    values = random_inputs(graph, default_scales(graph), 11)
    ref = graph.evaluate(values)[graph.outputs[0].name]
    check = [torch.from_numpy(values[t.name]).to(device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
    row: dict[str, Any] = {"program": name, "which": which, "errors": {}}
    for sys_name, f in (("prism", fn), ("compile", comp)):
        got = f(*check)
        got = got[0] if isinstance(got, tuple | list) else got
        row["errors"][sys_name] = relative_error(got.double().cpu().numpy(), ref)
    plan = getattr(fn, "plan", None)
    if plan is None:
        row["note"] = "not a generated plan"
        return row
    row["launches"] = [{"entry": s.entry, "grid": s.grid, "block": s.block, "smem": s.smem_bytes}
                       for s in plan.steps if isinstance(s, KernelLaunch)]
    if out_dir:
        for s in plan.steps:
            if isinstance(s, KernelLaunch):
                with open(os.path.join(out_dir, f"{name}-{which}-{s.name}.cu"), "w") as fh:
                    fh.write(s.source)
    raw = _raw(fn, _stream)
    make = lambda i: _inputs(graph, 100 + i)  # noqa: E731
    times = {"prism": graph_time_us(fn, make), "compile": graph_time_us(comp, make)}
    if raw is not None:
        outs = [torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="cuda") for t in plan.outputs]
        got = raw(*check, out=outs)
        row["errors"]["raw"] = relative_error(got.double().cpu().numpy(), ref)
        times["raw"] = graph_time_us(lambda *a: raw(*a, out=outs), make)
        times["raw_alloc"] = graph_time_us(raw, make)
    empty = cupy.RawModule(code=EMPTY).get_function("empty_kernel")
    first = row["launches"][0]

    def launch_empty(*_: Any) -> None:
        with _stream():
            empty(tuple(first["grid"]), tuple(first["block"]), ())

    times["empty"] = graph_time_us(launch_empty, make)
    row["us"] = {k: round(v, 3) for k, v in times.items()}
    return row


def hand() -> list[dict[str, Any]]:
    """The hand-written probes against torch.compile of the same function, each checked in float64."""
    import cupy

    mod = cupy.RawModule(code=HAND, options=("--std=c++17", "--prec-div=false", "--prec-sqrt=false"))
    rows = []
    rms_ref = lambda x: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)  # noqa: E731
    gelu_ref = lambda b, x: 0.5 * (x + b) * (1 + np.vectorize(math.erf)((x + b) / math.sqrt(2)))  # noqa: E731

    def rms_torch(x: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).half()

    def gelu_torch(b: Any, x: Any) -> Any:
        return torch.nn.functional.gelu(x.float() + b.float()).half()

    var_ref = lambda x: (x * x).mean(-1, keepdims=True) - x.mean(-1, keepdims=True) ** 2  # noqa: E731

    def var_torch(x: Any) -> Any:
        xf = x.float()
        return ((xf * xf).mean(-1, keepdim=True) - xf.mean(-1, keepdim=True) ** 2).half()

    cases = [("rowvar_two", [(16, 4096)], (16, 1), (16,), (512,), var_ref, var_torch),
             ("rowvar_one", [(16, 4096)], (16, 1), (16,), (512,), var_ref, var_torch),
             ("rms_once", [(8, 4096)], (8, 4096), (8,), (512,), rms_ref, rms_torch),
             ("rms_twice", [(8, 4096)], (8, 4096), (8,), (512,), rms_ref, rms_torch),
             ("gelu_flat", [(1, 3072), (16, 3072)], (16, 3072), (48,), (128,), gelu_ref, gelu_torch),
             ("add_flat", [(1, 3072), (16, 3072)], (16, 3072), (48,), (128,), None, None)]
    for entry, shapes, oshape, grid, block, ref, tfn in cases:
        k = mod.get_function(entry)

        def call(*a: Any, k: Any = k, oshape: Any = oshape, grid: Any = grid, block: Any = block) -> Any:
            o = torch.empty(oshape, dtype=torch.float16, device="cuda")
            with _stream():
                k(grid, block, tuple(np.uint64(t.data_ptr()) for t in (*a, o)))
            return o

        make = lambda i, shapes=shapes: [torch.randn(s, device="cuda").half() for s in shapes]  # noqa: E731
        args = make(0)
        row: dict[str, Any] = {"hand": entry}
        if ref is not None:
            want = ref(*[a.double().cpu().numpy() for a in args])
            row["rel_err"] = relative_error(call(*args).double().cpu().numpy(), want)
            comp = torch.compile(tfn, dynamic=False)
            row["rel_err_compile"] = relative_error(comp(*args).double().cpu().numpy(), want)
            row["compile_us"] = round(graph_time_us(comp, make), 3)
        row["us"] = round(graph_time_us(call, make), 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--hand", action="store_true", help="time the hand-written probes first")
    ap.add_argument("--which", default="decode")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default=None, help="directory for the JSON rows and the kernels' sources")
    args = ap.parse_args(argv)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    rows = [*hand(), *hand()] if args.hand else []
    for name in [n for n in args.only.split(",") if n]:
        for rnd in range(args.rounds):
            row = run(name, args.which, args.samples, args.out) | {"round": rnd}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        with open(os.path.join(args.out, f"launch-gap-{args.which}.json"), "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
