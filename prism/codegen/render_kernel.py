"""Assemble one custom kernel's CUDA source from the per-op pieces.

Kernel shape::

    prologue   cp.async: loop-invariant tiles, then the first (stages - 1) stages of the ring
               hoisted ops on the invariant tiles ("pre" phase)
    for it     wait for stage it; prefetch stage it + stages - 1; run the loop ops:
               materialise, mma into fragments, accumulate reductions in registers
    epilogue   accumulators -> float32 tiles; post-loop ops inlined into the savers
"""

from __future__ import annotations

import re

from prism.codegen.lower import Buf, GraphLowering, KernelLowering, Store, ident
from prism.codegen.render_expr import Exprs
from prism.codegen.render_load import load_info, render_loader
from prism.codegen.render_mma import render_frag_rescale, render_frag_store, render_mma
from prism.codegen.render_prelude import prelude
from prism.codegen.render_reduce import (
    _indent,
    render_acc_decl,
    render_ew_acc,
    render_red_acc_write,
    render_reduce_pass,
)
from prism.codegen.render_save import render_materialise, render_save, save_vec
from prism.ir import Accum, BinaryOp, Load, MatmulOp, ReduceOp, Save, UnaryOp
from prism.ops import Reduce, scalar_to_json


def _ctype(buf: Buf) -> str:
    return "half_t" if buf.dtype == "half" else "float"


def _tensor_ctype(low: KernelLowering, t: str) -> str:
    return "float" if low.tensor_dtypes[t] == "float32" else "half_t"


def describe_op(op: object) -> str:
    match op:
        case Load(tensor, imap, fmap):
            return f"Load({tensor}, imap={imap}, fmap={fmap})"
        case UnaryOp(fn, x, scalar):
            s = f", {scalar_to_json(scalar)}" if scalar is not None else ""
            return f"{fn.value}(%{x}{s})"
        case BinaryOp(fn, a, b):
            return f"{fn.value}(%{a}, %{b})"
        case MatmulOp(a, b):
            return f"matmul(%{a}, %{b})"
        case ReduceOp(fn, x, dim):
            return f"{fn.value}(%{x}, dim={dim})"
        case Accum(x, reduce_dim, fn, rescale):
            extra = (f", reduce_dim={reduce_dim}" if reduce_dim is not None else "") + (
                f", fn={fn.value}" if fn is not Reduce.SUM else "") + (
                f", rescale=%{rescale}" if rescale is not None else "")
            return f"Accum(%{x}{extra})"
        case Save(x, tensor, omap):
            return f"Save(%{x} -> {tensor}, omap={omap})"
    return repr(op)


def _where(low: KernelLowering, i: int) -> str:
    st = low.stores[i]
    b = low.bufs.get(i)
    match st:
        case Store.LOAD:
            assert b is not None
            return f"smem {b.name}" + (f" (ring x{low.stages})" if b.ring else " (once)")
        case Store.FRAG:
            p = low.mmas[i]
            return f"mma fragments ({p.per_warp} unit(s)/warp, k split {p.ksplit})"
        case Store.ACC:
            a = low.accs[i]
            return f"registers ({a.kind}) -> smem {b.name if b else ''}"
        case Store.INLINE:
            return "inline" + (f", half copy {low.operands[i].name}" if i in low.operands else "")
        case Store.SAVE:
            return "global"
    extra = f", half copy {low.operands[i].name}" if i in low.operands and low.operands[i] is not b else ""
    return f"smem {b.name if b else ''}" + (f" x{b.copies} partial" if b and b.copies > 1 else "") + extra


def header(gl: GraphLowering, low: KernelLowering, entry: str) -> str:
    k = low.kernel
    kg = gl.kg
    grid = ", ".join(f"{n}={g}" for n, g in zip("xyz", low.grid, strict=False))
    roles = {t.name: "input" for t in kg.inputs} | {t.name: "output" for t in kg.outputs}
    tens = ", ".join(f"{t}{list(low.tensor_shapes[t])} {low.tensor_dtypes[t]} ({roles.get(t, 'intermediate')})"
                     for t in low.args)
    n_custom = sum(1 for x in gl.kernels if x is not None)
    pos = sum(1 for x in gl.kernels[: low.index] if x is not None) + 1
    lines = [
        f"// Prism generated kernel {entry} (deterministic output; do not edit)",
        f"// program {kg.program}, kernel {k.name!r} ({pos} of {n_custom} custom), target {gl.arch.name}",
        f"// sizes: grid ({grid}), for-loop {low.loop}; block {low.threads} threads; {low.stages} pipeline "
        f"stage(s); {low.smem_bytes} B dynamic shared memory",
        f"// tensors: {tens}",
        "// block graph (tile per block; where the value lives):",
    ]
    for i, op in enumerate(k.ops):
        tile = low.tiles[i]
        t = f"[{', '.join(map(str, tile))}]" if tile is not None else ""
        lines.append(f"//   %{i:<2} {describe_op(op):<44} {t:<14} {low.phases[i]:<5} {_where(low, i)}")
    return "\n".join(lines)


def render_kernel(gl: GraphLowering, low: KernelLowering, entry: str) -> str:
    k = low.kernel
    ops = k.ops
    nt = low.threads
    S, P = low.stages, low.prefetch
    loads = [load_info(low, i) for i, op in enumerate(ops) if isinstance(op, Load)]
    ex = Exprs(low)

    parts = [header(gl, low, entry), "", prelude(low.dtype, low.l2_prefetch)]
    for li in loads:
        parts.append(render_loader(low, li))
    for i in sorted(low.mmas):
        parts.append(render_mma(low, i))
        dst = low.bufs.get(i) if low.stores[i] is Store.F32 else None
        if dst is None:
            acc = next(j for j, a in low.accs.items() if a.kind == "frag" and a.x == i)
            dst = low.bufs[acc]
        parts.append(render_frag_store(low, i, dst))
        rescaled = next((a for a in low.accs.values() if a.kind == "frag" and a.x == i and a.rescale is not None), None)
        if rescaled is not None:
            assert rescaled.rescale is not None
            parts.append(render_frag_rescale(low, i, rescaled.rescale))

    frag_acc = {a.x: j for j, a in low.accs.items() if a.kind == "frag"}

    def operand_ptr(v: int) -> str:
        return low.operands[v].name

    def compute(i: int) -> list[str]:
        """Code for op i inside the prologue (pre phase) or the loop body."""
        op = ops[i]
        out: list[str] = []
        st = low.stores[i]
        match op:
            case UnaryOp() | BinaryOp() if st is Store.H16:
                out += render_materialise(low, ex, i, low.bufs[i], own=True)
                out.append("__syncthreads();")
            case MatmulOp(a, b):
                plan = low.mmas[i]
                shift = low.accs[frag_acc[i]].rescale if st is Store.FRAG else None
                if shift is not None:
                    j = frag_acc[i]
                    out += [
                        "{",
                        f"  float f[{plan.per_warp}][2][4] = {{}};",
                        f"  mma_{i}(f, {operand_ptr(a)}, {operand_ptr(b)}, warp, lane);",
                        f"  rescale_{i}(ra{j}, f, rm{j}, {low.bufs[shift].name}, warp, lane);",
                        "}",
                    ]
                elif st is Store.FRAG:
                    out.append(f"mma_{i}(ra{frag_acc[i]}, {operand_ptr(a)}, {operand_ptr(b)}, warp, lane);")
                else:
                    out += [
                        "{",
                        f"  float f[{plan.per_warp}][2][4] = {{}};",
                        f"  mma_{i}(f, {operand_ptr(a)}, {operand_ptr(b)}, warp, lane);",
                        f"  store_{i}(f, {low.bufs[i].name}, warp, lane);",
                        "}",
                        "__syncthreads();",
                    ]
            case ReduceOp(fn, x, dim):
                out += render_reduce_pass(low, ex, x, dim, fn, low.groups[i], -(-_numel(low, i) // (
                    low.warps * (32 // low.groups[i]))), dst=low.bufs[i], acc=None, name=f"red{i}")
                out.append("__syncthreads();")
            case Accum(x, reduce_dim):
                ap = low.accs[i]
                if ap.kind == "ew":
                    out += render_ew_acc(low, ex, i, x, ap.count, f"ra{i}", write=None)
                elif ap.kind == "red":
                    assert reduce_dim is not None
                    out += render_reduce_pass(low, ex, x, reduce_dim, Reduce.SUM, ap.group, ap.count, dst=None,
                                              acc=f"ra{i}", name=f"acc{i}", shift=ap.rescale, running=f"rm{i}")
        if i in low.operands and low.operands[i] is not low.bufs.get(i):
            out += render_materialise(low, ex, i, low.operands[i], own=False)
            out.append("__syncthreads();")
        return out

    # ---- kernel body
    body: list[str] = []
    bufs = {b.name: b for b in (*low.bufs.values(), *low.operands.values())}
    body.append("// shared-memory tiles (the post-loop tiles reuse the loop's space)")
    for b in sorted(bufs.values(), key=lambda b: (b.region != "pre", b.region != "loop", b.offset, b.name)):
        name = f"{b.name}_ring" if b.ring else b.name
        what = f"ring of {b.copies}" if b.ring else (f"{b.copies} partial copies" if b.copies > 1 else "")
        body.append(f"{_ctype(b)}* const {name} = reinterpret_cast<{_ctype(b)}*>(smem + {b.offset});"
                    f"  // {b.region} [{', '.join(map(str, b.shape))}] pitch {b.pitch} {what}".rstrip())
    body.append("// this block's tile origins in global memory")
    for li in loads:
        body.append(f"const {li.ctype}* const g_{li.buf.name} = {ident(li.tensor)} + {li.block_offset};")
    if low.accs:
        body.append("// accumulators (registers)")
    for j, a in sorted(low.accs.items()):
        body += render_acc_decl(j, a)

    pre_loads = [li for li in loads if not li.buf.ring]
    ring_loads = [li for li in loads if li.buf.ring]
    body.append("// prologue: loop-invariant tiles, then the first stages")
    for li in pre_loads:
        body.append(f"{li.fn}({li.buf.name}, g_{li.buf.name}, tid);")
    body.append("cp_async_commit();")
    body += ["#pragma unroll", f"for (int st = 0; st < {P}; ++st) {{"]
    if ring_loads:
        body.append(f"  if (st < {low.loop}) {{")
        for li in ring_loads:
            body.append(f"    {li.fn}({li.buf.name}_ring + st * {li.buf.copy_elems}, g_{li.buf.name} + st * "
                        f"{li.iter_stride}, tid);")
        body.append("  }")
    body += ["  cp_async_commit();", "}", f"cp_async_wait<{P}>();", "__syncthreads();"]
    pre_ops = [i for i in range(len(ops)) if low.phases[i] == "pre"]
    if any(compute(i) for i in pre_ops):
        body.append("// loop-invariant ops, hoisted")
        for i in pre_ops:
            body += compute(i)

    body += [f"for (int it = 0; it < {low.loop}; ++it) {{", f"  cp_async_wait<{P - 1}>();", "  __syncthreads();"]
    if ring_loads:
        body += ["  {", f"    const int nx = it + {P};", f"    if (nx < {low.loop}) {{",
                 f"      const int sb = nx % {S};"]
        for li in ring_loads:
            body.append(f"      {li.fn}({li.buf.name}_ring + sb * {li.buf.copy_elems}, g_{li.buf.name} + nx * "
                        f"{li.iter_stride}, tid);")
        body += ["    }", "    cp_async_commit();", "  }"]
        body.append(f"  const int sb = it % {S};")
        for li in ring_loads:
            body.append(f"  {li.ctype}* const {li.buf.name} = {li.buf.name}_ring + sb * {li.buf.copy_elems};")
    else:
        body.append("  cp_async_commit();")
    for i in range(len(ops)):
        if low.phases[i] == "loop" or (isinstance(ops[i], Accum)):
            body += _indent(compute(i), 2)
    body += ["}", "cp_async_wait<0>();", "__syncthreads();"]

    body.append("// epilogue: accumulators to shared memory, then the post-loop ops and savers")
    for j, a in sorted(low.accs.items()):
        dst = low.bufs[j]
        if a.kind == "frag":
            body.append(f"store_{a.x}(ra{j}, {dst.name}, warp, lane);")
        elif a.kind == "ew":
            body += render_ew_acc(low, ex, j, a.x, a.count, f"ra{j}", write=dst)
        else:
            op = ops[j]
            assert isinstance(op, Accum) and op.reduce_dim is not None
            body += render_red_acc_write(low, j, a.x, op.reduce_dim, a.group, a.count, dst, f"ra{j}")
    body.append("__syncthreads();")
    for i, op in enumerate(ops):
        if low.phases[i] == "post" and isinstance(op, ReduceOp):
            body += compute(i)
        elif isinstance(op, Save):
            body += render_save(low, ex, i)

    text = "\n".join(body)
    pre = ["const int tid = threadIdx.x;"]
    if re.search(r"\bwarp\b", text):
        pre.append("const int warp = tid >> 5;")
    if re.search(r"\blane\b", text):
        pre.append("const int lane = tid & 31;")
    params = []
    saved = {op.tensor for op in ops if isinstance(op, Save)}
    for t in low.args:
        c = _tensor_ctype(low, t)
        params.append(f"{c}* __restrict__ {ident(t)}" if t in saved else f"const {c}* __restrict__ {ident(t)}")
    sig = f'extern "C" __global__ void __launch_bounds__({nt}) {entry}({", ".join(params)}) {{'
    kernel = [sig, "  extern __shared__ __align__(128) unsigned char smem[];", *_indent(pre, 2),
              *_indent(body, 2), "}"]
    parts.append("\n".join(kernel))
    _ = save_vec  # savers pick their own vector width
    return "\n\n".join(parts) + "\n"


def _numel(low: KernelLowering, i: int) -> int:
    t = low.tiles[i]
    assert t is not None
    n = 1
    for s in t:
        n *= s
    return n
