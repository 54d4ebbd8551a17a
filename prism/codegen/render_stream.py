"""The main loop of a streamed kernel (``KernelLowering.streamed``, ``Options.direct_loops``).

Its loop-varying tiles are read in place in global memory (``gi_<tile>``: the tile of iteration
``it``), so an iteration needs no copy, wait or barrier. The iterations run in chunks: first every
iteration's loads of the element-wise accumulators' values into registers (``Prefetched``), then the
accumulation, in the order of the ops::

    for (int it0 = 0; it0 < loop; it0 += U) {
      float pf2_0[U][count];
      for u < U: it = it0 + u; pf2_0[u][j] = ld_l2(gi_s_N + ...)    // all U iterations' loads in flight
      for u < U: it = it0 + u; ra2[j] += pf2_0[u][j]                  // then the adds
    }

Written as one iteration's loads then its adds, the first add waits for its load before the next
iteration's loads issue: ptxas kept about a dozen loads in flight, and a fused split-KV combine of 16
partials took 9.6 µs against 5.15 with its copied ring (H200, docs/codegen.md, "Combines that add
their own copies").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prism.codegen.lowered import AccKind, Buf, KernelLowering, Phase, Storage
from prism.codegen.render_expr import Exprs, element_read
from prism.codegen.render_load import rotation_decl, tile_iter
from prism.codegen.render_reduce import _indent, ew_item_index, ew_item_loop, render_ew_acc
from prism.ir import Accum

PREFETCH_REGS = 160  # registers per thread one chunk's prefetched values may take


class Prefetched(Exprs):
    """Reads of streamed tiles (direct, with an iteration step) as registers ``<prefix><n>[u][j]``
    of chunk iteration ``u`` and accumulator item ``j``; ``loads`` holds the statements that fill
    them (in the accumulator's item loop), ``arrays`` their element types and names."""

    def __init__(self, ex: Exprs, prefix: str) -> None:
        super().__init__(ex.low, ex.ptr)
        self.prefix = prefix
        self.names: dict[tuple[str, str], str] = {}
        self.arrays: list[tuple[str, str]] = []
        self.loads: list[str] = []

    def buf_read(self, b: Buf, idx: Sequence[str]) -> str:
        if not (b.direct and b.gstep):
            return super().buf_read(b, idx)
        p, off = self.pointer(b), self.tile_offset(b, idx)
        name = self.names.get((p, off))
        if name is None:  # halves stay raw bits until the add (no conversion between the loads)
            name = self.names[(p, off)] = f"{self.prefix}{len(self.names)}"
            self.arrays.append((b.dtype.ctype, name))
            self.loads.append(f"{name}[u][j] = {element_read(b, p, off)};")
        return f"hload({name}[u][j])" if b.dtype is Storage.HALF else f"{name}[u][j]"


def _chunk(low: KernelLowering, per_iteration: int) -> int:
    """Iterations per chunk: a power of two, at most the loop, within ``PREFETCH_REGS``."""
    u = 1
    while u * 2 <= low.loop and u * 2 * per_iteration <= PREFETCH_REGS:
        u *= 2
    return u


def render_streamed_loop(low: KernelLowering, ex: Exprs, compute: Callable[[int], list[str]]) -> list[str]:
    """The loop in chunks of prefetched loads then adds; ``compute(i)``: the code of loop op i that is
    not an element-wise accumulator (a lane-partial reduction reads its tile in place as it goes).
    The barrier after the loop (where the prologue has tiles) keeps the epilogue's tiles, which reuse
    their space, from overwriting them early."""
    ops = low.kernel.ops
    pre = {i: Prefetched(ex, f"pf{i}_") for i, a in sorted(low.accs.items()) if a.kind is AccKind.EW}
    assert all(low.accs[i].vec == 1 for i in pre), "streamed tiles are not copied: no accumulator owns copies"
    adds = []
    for i, op in enumerate(ops):
        if i in pre:
            assert isinstance(op, Accum)
            adds += render_ew_acc(low, pre[i], i, op.x, f"ra{i}", write=None)
        elif low.phases[i] is Phase.LOOP or isinstance(op, Accum):
            adds += compute(i)
    u = _chunk(low, sum(low.accs[i].count * len(p.arrays) for i, p in pre.items()))
    arrays = [f"{c} {name}[{u}][{low.accs[i].count}];" for i, p in pre.items() for c, name in p.arrays]
    loads = [line for i, p in pre.items() if p.loads
             for line in ew_item_loop(low, i, [*ew_item_index(low, i)[0], *p.loads])]
    decl, kt = tile_iter(low, "it", "kt")
    ptrs = [f"const {lp.ctype}* const gi_{lp.buf.name} = g_{lp.buf.name} + {kt} * {lp.buf.gstep};"
            for lp in low.loads if lp.buf.gstep]

    def each(body: list[str]) -> list[str]:
        inner = [*decl, *ptrs, *body]
        if low.loop % u:
            inner = [f"if (it < {low.loop}) {{", *_indent(inner, 2), "}"]
        return ["#pragma unroll", f"for (int u = 0; u < {u}; ++u) {{", "  const int it = it0 + u;",
                *_indent(inner, 2), "}"]

    shared = any(b.region is not Phase.POST for b in low.all_bufs().values())
    return [*rotation_decl(low), f"for (int it0 = 0; it0 < {low.loop}; it0 += {u}) {{",
            *_indent([*arrays, *(each(loads) if loads else []), *each(adds)], 2), "}",
            *(["__syncthreads();"] if shared else [])]
