"""Assemble one custom kernel's CUDA source from the per-op pieces.

Kernel shape::

    prologue   cp.async: loop-invariant tiles, then the first (stages - 1) stages of the ring
               hoisted ops on the invariant tiles ("pre" phase)
    for it     wait for stage it; prefetch stage it + stages - 1; run the loop ops:
               materialise, mma into fragments, accumulate reductions in registers
               (a safe combine's loop: chunks of ``unroll`` iterations behind one wait)
    epilogue   accumulators -> float32 tiles; post-loop ops inlined into the savers
"""

from __future__ import annotations

import functools
import math
from typing import assert_never

from prism.codegen.lower import ident
from prism.codegen.lowered import (
    AccKind,
    GraphLowering,
    KernelLowering,
    LoadPlan,
    Phase,
    Store,
    inline_reads,
    outputs_per_pass,
)
from prism.codegen.render_expr import EarlyReads, Exprs
from prism.codegen.render_load import (
    COPY_FN,
    block_origin,
    carried_fn,
    render_carried_addresses,
    render_loader,
    rotation_decl,
    shared_address,
    tile_iter,
    valid_from,
)
from prism.codegen.render_mma import render_frag_rescale, render_frag_store, render_mma
from prism.codegen.render_prelude import helpers_used, prelude
from prism.codegen.render_reduce import (
    _indent,
    render_acc_decl,
    render_ew_acc,
    render_held_accs,
    render_red_acc_write,
    render_reduce_pass,
    render_shift_max,
)
from prism.codegen.render_save import render_materialise, render_save
from prism.codegen.render_stream import render_streamed_loop
from prism.ir import Accum, BinaryOp, Load, MatmulOp, ReduceOp, Save, UnaryOp, op_args
from prism.ops import Reduce, scalar_to_json


def tensor_ctype(low: KernelLowering, t: str) -> str:
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
            return f"registers ({a.kind.value}) -> smem {b.name if b else ''}"
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
        lines.append(f"//   %{i:<2} {describe_op(op):<44} {t:<14} {low.phases[i].value:<5} {_where(low, i)}")
    return "\n".join(lines)


def device_functions(low: KernelLowering) -> list[str]:
    """Loaders, then per matmul: its mma function, its fragment store, its online-softmax rescale."""
    parts = [render_loader(low, lp) for lp in low.copied_loads]
    if low.carried:
        parts += [render_carried_addresses(low, lp) for lp in low.loads if lp.buf.ring]
    for i in sorted(low.mmas):
        parts.append(render_mma(low, i))
        acc = low.frag_acc(i)
        dst = low.bufs[i] if low.stores[i] is Store.F32 or acc is None else low.bufs[acc]
        parts.append(render_frag_store(low, i, dst))
        shift = low.accs[acc].rescale if acc is not None else None
        if shift is not None:
            parts.append(render_frag_rescale(low, i, shift))
    return parts


def _matmul_call(low: KernelLowering, i: int, a: int, b: int) -> list[str]:
    plan, acc = low.mmas[i], low.frag_acc(i)
    operands = f"{low.operands[a].name}, {low.operands[b].name}, warp, lane"
    if low.stores[i] is Store.FRAG:
        assert acc is not None
        shift = low.accs[acc].rescale
        if shift is None:
            return [f"mma_{i}(ra{acc}, {operands});"]
        then = f"rescale_{i}(ra{acc}, f, rm{acc}, {low.bufs[shift].name}, warp, lane);"
        return ["{", f"  float f[{plan.per_warp}][2][4] = {{}};", f"  mma_{i}(f, {operands});", f"  {then}", "}"]
    return ["{", f"  float f[{plan.per_warp}][2][4] = {{}};", f"  mma_{i}(f, {operands});",
            f"  store_{i}(f, {low.bufs[i].name}, warp, lane);", "}", "__syncthreads();"]


def _compute(low: KernelLowering, ex: Exprs, i: int) -> list[str]:
    """Code for op i inside the prologue (PRE phase) or the loop body."""
    op = low.kernel.ops[i]
    out: list[str] = []
    match op:
        case UnaryOp() | BinaryOp() if low.stores[i] is Store.H16:
            out += [*render_materialise(low, ex, i, low.bufs[i], own=True), "__syncthreads();"]
        case MatmulOp(a, b):
            out += _matmul_call(low, i, a, b)
        case ReduceOp(fn, x, dim):
            g = low.groups[i]
            out += render_reduce_pass(low, ex, x, dim, fn, g, -(-_numel(low, i) // outputs_per_pass(g, low.warps)),
                                      dst=low.bufs[i], acc=None, name=f"red{i}", held=i in low.held,
                                      warp_held=i in low.warp_rows)
        case Accum(x, reduce_dim) if i in low.accs:  # (an inline one is read in place)
            out += _accumulate(low, ex, i, x, reduce_dim)
    if i in low.operands and low.operands[i] is not low.bufs.get(i):
        out += [*render_materialise(low, ex, i, low.operands[i], own=False), "__syncthreads();"]
    return out


def _accumulate(low: KernelLowering, ex: Exprs, i: int, x: int, reduce_dim: int | None) -> list[str]:
    ap = low.accs[i]
    match ap.kind:
        case AccKind.EW:
            return render_ew_acc(low, ex, i, x, f"ra{i}", write=None)
        case AccKind.RED:
            assert reduce_dim is not None
            return render_reduce_pass(low, ex, x, reduce_dim, Reduce.SUM, ap.group, ap.count, dst=None,
                                      acc=f"ra{i}", name=f"acc{i}", shift=ap.rescale, running=f"rm{i}",
                                      warp_held=i in low.warp_rows)
        case AccKind.FRAG:
            return []  # the matmul's own call accumulates
        case _:
            assert_never(ap.kind)


def _declarations(low: KernelLowering) -> list[str]:
    """Shared-memory tile pointers, global tile origins, accumulator registers."""
    body = ["// shared-memory tiles (the post-loop tiles reuse the loop's space)"]
    order = (Phase.PRE, Phase.LOOP)
    for b in sorted(low.all_bufs().values(),
                    key=lambda b: (b.region is not order[0], b.region is not order[1], b.offset, b.name)):
        name = f"{b.name}_ring" if b.ring else b.name
        what = f"ring of {b.copies}" if b.ring else (f"{b.copies} partial copies" if b.copies > 1 else "")
        what += " swizzled" if b.swizzle else ""
        c = b.dtype.ctype
        body.append(f"{c}* const {name} = reinterpret_cast<{c}*>(smem + {b.offset});"
                    f"  // {b.region.value} [{', '.join(map(str, b.shape))}] pitch {b.pitch} {what}".rstrip())
    if any(shared_address(lp) for lp in low.copied_loads):
        body.append("const unsigned smem_base = smem_u32(smem);  // cp.async destinations as 32-bit shared addresses")
    body.append("// this block's tile origins in global memory")
    for lp in low.loads:
        body.append(f"const {lp.ctype}* const g_{lp.buf.name} = {ident(lp.tensor)} + {block_origin(lp.block_terms)};")
    if low.accs:
        body.append("// accumulators (registers)")
    for j, a in sorted(low.accs.items()):
        body += render_acc_decl(j, a)
    return body


def _load_dst(lp: LoadPlan, slot: str | None) -> str:
    """The loader's destination: a 32-bit shared address (cp.async) or a pointer, of ring slot ``slot``."""
    if shared_address(lp):
        at = f"smem_base + {lp.buf.offset}" if lp.buf.offset else "smem_base"
        return at if slot is None else f"{at} + {slot} * {lp.buf.copy_elems * lp.buf.esize}"
    return lp.buf.name if slot is None else f"{lp.buf.name}_ring + {slot} * {lp.buf.copy_elems}"


def _ring_copy(low: KernelLowering, lp: LoadPlan, slot: str, it: str) -> str:
    return f"{lp.fn}({_load_dst(lp, slot)}, g_{lp.buf.name} + {it} * {lp.iter_stride}, tid{tail_arg(low, lp, it)});"


def tail_arg(low: KernelLowering, lp: LoadPlan, it: str) -> str:
    """The loader's last argument with a padded tail along its tile: the valid elements from the tile's
    start (``prism.codegen.tails``); else nothing."""
    tails = low.tails
    return "" if tails is None or lp.op not in tails.loads else f", {valid_from(tails.valid, tails.load_origin(lp.op), it)}"


def _prologue(low: KernelLowering, ex: Exprs) -> list[str]:
    """Loop-invariant tiles, the first ring stages, then the hoisted ops."""
    body = ["// prologue: loop-invariant tiles, then the first stages"]
    fixed = [lp for lp in low.copied_loads if not lp.buf.ring]
    ring = [lp for lp in low.loads if lp.buf.ring]
    if fixed or ring:  # (tiles read in place in global memory need no copy, wait or barrier)
        body += [f"{lp.fn}({_load_dst(lp, None)}, g_{lp.buf.name}, tid{tail_arg(low, lp, '0')});" for lp in fixed]
        body += [*(rotation_decl(low) if ring else []), "cp_async_commit();"]
        body += _staged_copies(low) if low.arrivals else _stage_copies(low, ring)
        body += [f"cp_async_wait<{low.prologue_wait}>();", "__syncthreads();"]
    hoisted = [line for i in range(len(low.kernel.ops)) if low.phases[i] is Phase.PRE
               for line in _compute(low, ex, i)]
    if hoisted:
        body += ["// loop-invariant ops, hoisted", *hoisted]
    if low.skewed:  # iteration 0's skewed ops, before the loop (its barrier orders them)
        body += _skewed_block(low, ex, "0", "0", "0")
    return body


def _stage_copies(low: KernelLowering, ring: list[LoadPlan]) -> list[str]:
    """The first ``prefetch`` stages of the ring, a group each (an empty group past the loop's end)."""
    body = ["#pragma unroll", f"for (int st = 0; st < {low.prefetch}; ++st) {{"]
    if ring:
        decl, kt = tile_iter(low, "st", "kt")
        copies = [f"    {_ring_copy(low, lp, 'st', kt)}" for lp in ring]
        body += [f"  if (st < {low.loop}) {{", *_indent(decl, 4), *copies, "  }"]
    return [*body, "  cp_async_commit();", "}"]


def _staged_copies(low: KernelLowering) -> list[str]:
    """``KernelLowering.arrivals``: the one stage's copies, each arrival's Loads committed as a group, in
    the order the loop first reads them."""
    decl, kt = tile_iter(low, "0", "kt")
    by_op = {lp.op: lp for lp in low.loads if lp.buf.ring}
    body = ["{  // the ring's Loads in the order the loop first reads them, a group each", *_indent(decl, 2)]
    for a in low.arrivals:
        body += [*(f"  {_ring_copy(low, by_op[j], '0', kt)}" for j in a.loads), "  cp_async_commit();"]
    return [*body, "}"]


def _inputs(low: KernelLowering, ops: tuple[int, ...]) -> set[int]:
    """The ops whose values ``ops`` read, through inline ones (``lower._skewable``: Loads and inline ops)."""
    return inline_reads(low.kernel.ops, low.stores, [a for i in ops for a in op_args(low.kernel.ops[i])])


def _skewed_block(low: KernelLowering, ex: Exprs, it: str, slot: str, parity: str) -> list[str]:
    """The skewed ops of iteration ``it`` (``KernelLowering.skewed``), in a scope where the ring tiles are
    those of ring slot ``slot`` and each skewed op's tile is its copy ``parity``; no barrier after them."""
    read = _inputs(low, low.skewed)
    ring = [lp for lp in low.loads if lp.buf.ring and lp.op in read]
    lines = [f"{lp.ctype}* const {lp.buf.name} = {lp.buf.name}_ring + {slot} * {lp.buf.copy_elems};" for lp in ring]
    for i in low.skewed:
        b = low.bufs[i]
        lines.append(f"{b.dtype.ctype}* const {b.name} = {b.name}_ring + {parity} * {b.copy_elems};")
    for i in low.skewed:
        lines += render_materialise(low, ex, i, low.bufs[i], own=True)
    return [f"{{  // the skewed ops of iteration {it}", *_indent(lines, 2), "}"]


def _main_loop(low: KernelLowering, ex: Exprs) -> list[str]:
    """Wait for this iteration's stage, refill the oldest slot, run the loop ops (with
    ``Options.late_refill``: run the loop ops, then refill). Nothing when the loop
    runs once, streams no ring and computes nothing (an element-wise or row-wise kernel whose values
    are read in place): the prologue has waited for its copies and synchronised, so the loop's wait,
    barrier and empty commit, and the drain after it, would only lengthen the kernel's critical path.
    Only the loop ops when it runs once, nothing is copied and no shared tile lives before the
    epilogue (a row kernel reading in place: the ops read global memory and registers)."""
    if low.streamed:
        return render_streamed_loop(low, ex, functools.partial(_compute, low, ex))
    S, P = low.stages, low.prefetch
    ring = [lp for lp in low.loads if lp.buf.ring]
    waits, computed = low.arrival_waits(), list[str]()
    for i, op in enumerate(low.kernel.ops):
        if (low.phases[i] is Phase.LOOP or isinstance(op, Accum)) and i not in low.skewed:
            computed = [*_arrival(computed, waits.get(i)), *_compute(low, ex, i)]
    if low.loop == 1 and not ring and not computed:
        return []
    if low.loop == 1 and not low.copied_loads and not _shared_before_epilogue(low):
        return ["// the loop's one iteration: nothing copied, no shared tile before the epilogue", *computed]
    body = _shift_maxima(low, ex) if low.shift_first else []
    barrier = [] if low.private_loop or low.shift_first else ["  __syncthreads();"]
    if low.carried:  # (its ring slots are literals: no slot counters)
        return [*body, *_carried_loop(low, ring, computed, barrier)]
    if ring:  # slot counters instead of a modulo per iteration (S need not be a power of two)
        body.append(f"int sb_rd = 0, sb_wr = {P % S};  // ring slots of it and of it + {P}: it % {S}, (it + {P}) % {S}")
    if low.unroll > 1:  # (no refill after, no skewed ops: ``lower._unroll``)
        return [*body, *_unrolled(low, computed, barrier)]
    body += [f"for (int it = 0; it < {low.loop}; ++it) {{", f"  cp_async_wait<{low.loop_wait}>();", *barrier]
    late = bool(ring) and low.late_refill
    refill = [] if low.arrivals else _refill(low, ring)  # (staged arrivals: one iteration, no refill)
    advance = _advance(low, ring)
    body += [] if late else refill
    if ring:
        body += [*_slot_tiles(low, ring), *([] if late else advance)]
    if low.skewed:  # this iteration's copies, then the next iteration's skewed ops (ring slot sb_rd, advanced)
        body += [f"  {low.bufs[i].dtype.ctype}* const {low.bufs[i].name} = {low.bufs[i].name}_ring + (it & 1) * "
                 f"{low.bufs[i].copy_elems};" for i in low.skewed]
        body += [f"  if (it + 1 < {low.loop}) {{", *_indent(_skewed_block(low, ex, "it + 1", "sb_rd", "((it + 1) & 1)"), 4),
                 "  }"]
    tail = [*refill, *advance] if late else []
    return [*body, *_indent(computed, 2), *tail, "}", "cp_async_wait<0>();", "__syncthreads();"]


def _carried_loop(low: KernelLowering, ring: list[LoadPlan], computed: list[str], barrier: list[str]) -> list[str]:
    """``KernelLowering.carried``: each thread's copy addresses of iteration ``prefetch``'s tiles first, then
    the loop in turns of the ring's depth ``S`` (iteration ``i0 + u`` reads ring slot ``u`` and refills
    slot ``(u + prefetch) % S``, both literals once unrolled) copying at the carried addresses plus
    literals; the global pointers advance by ``S`` iterations' tiles after each turn's ops."""
    S, P, L = low.stages, low.prefetch, low.loop
    setup = [f"// each copy's addresses of iteration {P}'s tiles, kept in registers across iterations"]
    copies, advance = [], []
    for lp in ring:
        b, n = lp.buf.name, lp.sweep.per
        setup += [f"const {lp.ctype}* cp_{b}[{n}];", f"unsigned cd_{b}[{n}];",
                  f"{carried_fn(lp)}(cp_{b}, cd_{b}, {_load_dst(lp, None)}, g_{b} + {P * lp.iter_stride}, tid);"]
        bound = lp.sweep.bound
        guard = "" if bound is None else f"if (tid + j * {lp.sweep.threads} < {bound}) "
        at = f"cd_{b}[j] + ((u + {P}) % {S}) * {lp.buf.copy_elems * lp.buf.esize}, cp_{b}[j] + u * {lp.iter_stride}"
        copies += ["#pragma unroll", f"for (int j = 0; j < {n}; ++j) {guard}{COPY_FN[lp.nbytes]}({at});"]
        advance += ["#pragma unroll", f"for (int j = 0; j < {n}; ++j) cp_{b}[j] += {S * lp.iter_stride};"]
    step = [f"cp_async_wait<{low.loop_wait}>();", *(line.strip() for line in barrier),
            f"if (it + {P} < {L}) {{", *_indent(copies, 2), "}", "cp_async_commit();",
            *[f"{lp.ctype}* const {lp.buf.name} = {lp.buf.name}_ring + u * {lp.buf.copy_elems};" for lp in ring],
            *computed]
    guarded = step if L % S == 0 else [f"if (it < {L}) {{", *_indent(step, 2), "}"]
    return [*setup, f"for (int i0 = 0; i0 < {L}; i0 += {S}) {{", "  #pragma unroll", f"  for (int u = 0; u < {S}; ++u) {{",
            "    const int it = i0 + u;", *_indent(guarded, 4), "  }", *_indent(advance, 2), "}",
            "cp_async_wait<0>();", "__syncthreads();"]


def _arrival(before: list[str], keep: int | None) -> list[str]:
    """``before``, then what the first reader of a staged arrival (``KernelLowering.arrivals``) needs: its
    group landed, for every thread (the wait goes ahead of a barrier that ends ``before``)."""
    if keep is None:
        return before
    wait = f"cp_async_wait<{keep}>();  // the next arrival of the ring's Loads"
    if before and before[-1] == "__syncthreads();":
        return [*before[:-1], wait, before[-1]]
    return [*before, wait, "__syncthreads();"]


def _slot_tiles(low: KernelLowering, ring: list[LoadPlan]) -> list[str]:
    """This iteration's ring tiles (slot ``sb_rd``), then the read slot advanced."""
    return ["  const int sb = sb_rd;",
            *[f"  {lp.ctype}* const {lp.buf.name} = {lp.buf.name}_ring + sb * {lp.buf.copy_elems};" for lp in ring],
            f"  sb_rd = sb_rd == {low.stages - 1} ? 0 : sb_rd + 1;"]


def _advance(low: KernelLowering, ring: list[LoadPlan]) -> list[str]:
    return [f"  sb_wr = sb_wr == {low.stages - 1} ? 0 : sb_wr + 1;"] if ring else []


def _unrolled(low: KernelLowering, computed: list[str], barrier: list[str]) -> list[str]:
    """``KernelLowering.unroll``: chunks of ``unroll`` iterations behind one wait (their stages landed)
    and one barrier; each iteration still refills one slot and commits one group, so every chunk's
    wait counts the same. The refills land in slots no iteration of the chunk reads (``lower._unroll``)."""
    ring = [lp for lp in low.loads if lp.buf.ring]
    step = [*_refill(low, ring), *_advance(low, ring), *_slot_tiles(low, ring), *_indent(computed, 2)]
    return [f"for (int i0 = 0; i0 < {low.loop}; i0 += {low.unroll}) {{", f"  cp_async_wait<{low.loop_wait}>();",
            *barrier, "  #pragma unroll", f"  for (int iu = 0; iu < {low.unroll}; ++iu) {{",
            "    const int it = i0 + iu;", *_indent(step, 2), "  }", "}", "cp_async_wait<0>();", "__syncthreads();"]


def _shared_before_epilogue(low: KernelLowering) -> bool:
    """Some shared tile lives before the epilogue (a copy, a materialised value): the epilogue's tiles
    may reuse its space, so the loop ends with a barrier. (A held reduction's tile is never written.)"""
    held = {low.bufs[i].name for i in low.held | low.warp_rows}
    return any(b.region is not Phase.POST and b.name not in held for b in low.all_bufs().values())


def _shift_maxima(low: KernelLowering, ex: Exprs) -> list[str]:
    """``KernelLowering.shift_first``: every stage landed and visible to every thread (stage it is in
    ring slot it: the prologue copied them all), then each rescaled accumulator's running max over all
    of them, so the loop's updates ``acc·1 + x·e^(c−m)`` carry no max from one iteration to the next."""
    ring = [lp for lp in low.loads if lp.buf.ring]
    maxes = [line for i, a in sorted(low.accs.items()) if a.rescale is not None for line in render_shift_max(low, ex, i)]
    slots = [f"  const {lp.ctype}* const {lp.buf.name} = {lp.buf.name}_ring + it * {lp.buf.copy_elems};" for lp in ring]
    return ["cp_async_wait<0>();", "__syncthreads();", "// the shifts' maxima over every stage first", "#pragma unroll",
            f"for (int it = 0; it < {low.loop}; ++it) {{", *slots, *_indent(maxes, 2), "}"]


def _refill(low: KernelLowering, ring: list[LoadPlan]) -> list[str]:
    """Copies of iteration ``it + prefetch``'s tiles into the ring's oldest slot ``sb_wr`` (read in
    iteration ``it - 1``, before this iteration's barrier), committed as one group (an empty group
    when no ring or past the loop's end, so each iteration's wait counts the same)."""
    if not ring:
        return ["  cp_async_commit();"]
    decl, kx = tile_iter(low, "nx", "kx")
    return ["  {", f"    const int nx = it + {low.prefetch};", f"    if (nx < {low.loop}) {{", *_indent(decl, 6),
            *[f"      {_ring_copy(low, lp, 'sb_wr', kx)}" for lp in ring], "    }", "    cp_async_commit();", "  }"]


def _epilogue(low: KernelLowering, ex: Exprs) -> list[str]:
    """Accumulators to their tiles, then the post-loop reductions and the savers."""
    body = ["// epilogue: accumulators to shared memory, then the post-loop ops and savers"]
    if low.reads_loop_tiles_after:  # one iteration (one ring slot): values after the loop read its tiles
        body += [f"{lp.ctype}* const {lp.buf.name} = {lp.buf.name}_ring;" for lp in low.loads if lp.buf.ring]
    held = [(j, low.bufs[j], f"ra{j}") for j, a in sorted(low.accs.items()) if a.kind is AccKind.RED and a.group > 32]
    apart = {j for j, _, _ in held} | low.warp_rows  # written with the first held one; kept in registers
    for j, a in sorted(low.accs.items()):
        dst = low.bufs[j]
        if held and j == held[0][0]:  # the block-wide accumulators, all behind one barrier
            body += render_held_accs(low, held)
        if j in apart:
            continue
        match a.kind:
            case AccKind.FRAG:
                body.append(f"store_{a.x}(ra{j}, {dst.name}, warp, lane);")
            case AccKind.EW:
                body += render_ew_acc(low, ex, j, a.x, f"ra{j}", write=dst)
            case AccKind.RED:
                op = low.kernel.ops[j]
                assert isinstance(op, Accum) and op.reduce_dim is not None
                body += render_red_acc_write(low, j, a.x, op.reduce_dim, a.group, a.count, dst, f"ra{j}")
            case _:
                assert_never(a.kind)
    if set(low.accs) - low.held - low.warp_rows:  # their tiles are read below; with none, the last barrier covers the tiles
        body.append("__syncthreads();")
    for i, op in enumerate(low.kernel.ops):
        if low.phases[i] is Phase.POST and isinstance(op, ReduceOp):
            body += _compute(low, ex, i)
        elif isinstance(op, Save):
            body += render_save(low, ex, i)
    return body


def param(low: KernelLowering, t: str, written: bool) -> str:
    """Tensor ``t``'s pointer parameter (const unless the kernel writes it)."""
    c = tensor_ctype(low, t)
    return f"{c}* __restrict__ {ident(t)}" if written else f"const {c}* __restrict__ {ident(t)}"


def params(low: KernelLowering) -> list[str]:
    """The tensor pointer parameters of the kernel (loads first, then saves)."""
    saved = set(low.saves_tensors())
    return [param(low, t, t in saved) for t in low.args]


def block_code(low: KernelLowering) -> list[str]:
    """What one block runs, as the block ``bid`` (a ``uint3`` in scope): declarations, prologue,
    main loop, epilogue."""
    ex = Exprs(low, early=EarlyReads.of(low))
    ids = ["const int tid = threadIdx.x;"]
    if low.uses_lanes:
        ids += ["const int warp = tid >> 5;", "const int lane = tid & 31;"]
    body = [*_prologue(low, ex), *_main_loop(low, ex), *_epilogue(low, ex)]  # (fills ex.early)
    early = ex.early.declarations() if ex.early is not None else []
    return ["extern __shared__ __align__(128) unsigned char smem[];", *ids, *_declarations(low), *early, *body]


def render_kernel(gl: GraphLowering, low: KernelLowering, entry: str) -> str:
    kernel = [f'extern "C" __global__ void __launch_bounds__({low.threads}) {entry}({", ".join(params(low))}) {{',
              "  const uint3 bid = blockIdx;", *_indent(block_code(low), 2), "}"]
    parts = [header(gl, low, entry), "",
             prelude(low.dtype, low.l2_prefetch, l2_loads=reads_past_l1(low), tails=low.tails is not None,
                     helpers=helpers_used(low)),
             *device_functions(low),
             "\n".join(kernel)]
    return "\n\n".join(parts) + "\n"


def reads_past_l1(*lows: KernelLowering) -> bool:
    """Whether a kernel reads a tile in place past L1 (its prelude needs ``ld_l2``)."""
    return any(b.l2 for low in lows for b in low.bufs.values())


def _numel(low: KernelLowering, i: int) -> int:
    t = low.tiles[i]
    assert t is not None
    return math.prod(t)
