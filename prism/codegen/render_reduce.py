"""Reductions and elementwise accumulators.

A reduction over one dim gives each output to a group of ``G`` lanes (``G`` = min(32, the reduced
extent rounded down to a power of two)): the lanes stride the reduced dim, then combine with
``__shfl_xor_sync``. Used for ``ReduceOp`` (result to a float32 tile) and for ``Accum(x, dim)``
(result added into registers every iteration). ``Accum(x)`` without a dim keeps one register per
element a thread owns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from prism.codegen.lowered import WARP_RUN, AccKind, AccPlan, Buf, KernelLowering, inline_reads, outputs_per_pass
from prism.codegen.render_expr import EARLY_RUNS, Exprs, RunAt, RunReads, bcast, decompose, offset, with_at, with_last
from prism.codegen.render_load import sweep_lines, valid_from
from prism.ops import Reduce

NEG_INF = "-__int_as_float(0x7f800000)"  # a running max starts at -inf


def _indent(lines: Sequence[str], n: int) -> list[str]:
    return [" " * n + x for x in lines]


def _red_outputs(tile_x: tuple[int, ...], dim: int) -> tuple[tuple[int, ...], int]:
    out = tuple(1 if d == dim else s for d, s in enumerate(tile_x))
    return out, math.prod(out)


def render_reduce_pass(low: KernelLowering, ex: Exprs, x: int, dim: int, fn: Reduce, group: int, count: int,
                       *, dst: Buf | None, acc: str | None, name: str, shift: int | None = None,
                       running: str = "", held: bool = False, warp_held: bool = False) -> list[str]:
    """Reduce value ``x`` over ``dim``: write to ``dst`` (a ReduceOp; the pass ends with the barrier that
    publishes the tile; ``held``: a block-wide reduction to one output that every thread keeps in the
    register ``<dst>_r`` instead, ``KernelLowering.held``; ``warp_held``: a row per warp, each warp keeping
    its rows' values in ``<dst>_r[j]``, ``KernelLowering.warp_rows``) and/or add into register array ``acc``
    (rescaled by the shift value ``shift`` against the running maxes ``running``: the online softmax)."""
    tile_x = low.tiles[x]
    assert tile_x is not None
    out, n_out = _red_outputs(tile_x, dim)
    extent = tile_x[dim]
    nw = low.warps
    if dst is not None and acc is None and low.block_reduces(x, dim):
        return _block_reduce(low, ex, x, dim, fn, dst, name, held)
    if warp_held:
        return _warp_row_reduce(low, ex, x, dim, fn, f"{acc}[j]" if acc is not None else None, dst, name, count)
    decl, idx = decompose("o", out, f"{name}_o")
    xidx = list(idx)
    xidx[dim] = "r"
    init = "0.0f" if fn is Reduce.SUM else NEG_INF
    comb = "p += {v};" if fn is Reduce.SUM else "p = fmaxf(p, {v});"
    lane_r, o_expr = _lanes(group, nw)
    guard = n_out % outputs_per_pass(group, nw) != 0
    run = lane_run(low, x, dim, group, dst is not None and acc is None)
    walk = _walk(ex, x, xidx, comb, name, lane_r, extent, group, run, run_width(extent, group),
                 _tail(low, x, dim, init))
    who = "the whole block, thread partials" if group > 32 else f"{group} lanes each"
    lines = [
        f"// {name}: {fn.value} over dim {dim} of a {list(tile_x)} tile: {n_out} outputs, {who}",
        "#pragma unroll",
        f"for (int j = 0; j < {count}; ++j) {{",
        f"  const int o = {o_expr};",
        f"  float p = {init};",
        f"  if (o < {n_out}) {{" if guard else "  {",
        *_indent(decl, 4),
        *_indent(walk, 4),
        "  }",
    ]
    if acc is not None and shift is not None:
        tile_c = low.tiles[shift]
        assert tile_c is not None
        lines += [
            f"  if (o < {n_out}) {{  // lane partial, rescaled; the lanes share the row's factors",
            *_indent(decl, 4),
            f"    const float cv = {ex.read(shift, bcast(idx, tile_c, out))};",
            f"    const float mn = fmaxf({running}[j], cv);",
            f"    {acc}[j] = {acc}[j] * ({running}[j] == mn ? 1.0f : __expf({running}[j] - mn)) + p * "
            "(cv == mn ? 1.0f : __expf(cv - mn));",
            f"    {running}[j] = mn;",
            "  }",
        ]
    elif acc is not None:
        lines.append(f"  {acc}[j] += p;  // lane partial; the lanes are combined once, after the loop")
    elif group > 1:
        lines.append(f"  p = {'warp_sum' if fn is Reduce.SUM else 'warp_max'}(p, {group});")
    if dst is not None:
        cond = ([f"o < {n_out}"] if guard else []) + ([f"{lane_r} == 0"] if group > 1 else [])
        lines.append(f"  if ({' && '.join(cond) or 'true'}) {{")
        lines += _indent(decl, 4)
        lines.append(f"    {dst.name}[{offset(dst.strides, idx)}] = p;")
        lines.append("  }")
    lines.append("}")
    return [*lines, "__syncthreads();"] if dst is not None else lines


def _tail(low: KernelLowering, x: int, dim: int, identity: str) -> tuple[str, str] | None:
    """(valid elements of ``x``'s tile along ``dim``, ``identity``) where a padded tail runs along it."""
    o = None if low.tails is None else low.tails.axes[x][dim]
    return None if o is None or low.tails is None else (valid_from(low.tails.valid, o), identity)


def _lanes(group: int, warps: int) -> tuple[str, str]:
    """(this thread's index in its group, the output index ``o`` of pass ``j``) for groups of ``group``
    threads: lane groups of a warp, or the whole block on one output (``group > 32``)."""
    if group > 32:
        return "tid", "j"
    gpw = 32 // group
    lane_r = "lane" if group == 32 else f"(lane & {group - 1})"
    return lane_r, f"(j * {warps} + warp) * {gpw}" + (f" + (lane >> {group.bit_length() - 1})" if gpw > 1 else "")


def run_width(extent: int, group: int, widest: int = 4) -> int:
    """Elements per run of a lane's walk: 4 (or ``widest``), or 2, when every lane gets whole runs; else 1."""
    return next((v for v in (8, 4, 2) if v <= widest and extent % (group * v) == 0), 1)


def block_run(low: KernelLowering, x: int, dim: int) -> int:
    """Elements per run of a thread in the block-wide walk (``_block_reduce``) over the last dim: of 8,
    4, 2 and 1 that divide the row (8 halves: one 16-byte load), the one that gives a thread the fewest
    runs, and of those the narrowest (more threads share the row). The walk's bound leaves threads past
    the last run idle: a 3,584-wide row over 256 threads is 448 runs of 8 (two a thread at most), not
    1,792 of 2 (seven). 1 for other dims."""
    tile_x = low.tiles[x]
    assert tile_x is not None
    if dim != len(tile_x) - 1:
        return 1
    extent = tile_x[dim]
    return min((v for v in (8, 4, 2, 1) if extent % v == 0), key=lambda v: (-(-extent // (v * low.threads)), v))


def lane_run(low: KernelLowering, x: int, dim: int, group: int, to_tile: bool) -> int:
    """Elements per run that a lane reads at once (``RunReads``) in a reduction of ``x`` over
    ``dim`` (``to_tile``: a ReduceOp, not an accumulator): runs along the last dim of the lane walk
    or of the block-wide walk (``block_run``), or along the next-to-last where ``x`` reads a
    transposed load's tile (``stored_rows``); 1 for other dims."""
    tile_x = low.tiles[x]
    assert tile_x is not None
    if (to_tile and low.block_reduces(x, dim)) or group > 32:
        return block_run(low, x, dim)
    if dim == len(tile_x) - 1:
        return run_width(tile_x[dim], group, low.lane_runs)
    return run_width(tile_x[dim], group, low.stored_runs) if stored_rows(low, x, dim) else 1


def stored_rows(low: KernelLowering, x: int, dim: int) -> bool:
    """A lane walk of ``x`` over ``dim`` runs along the rows of a transposed load's tile it reads: ``dim``
    is the next-to-last, which such a tile stores contiguously (``Buf.transposed``)."""
    tile_x = low.tiles[x]
    assert tile_x is not None
    if len(tile_x) < 2 or dim != len(tile_x) - 2 or low.stored_runs < 2:
        return False
    bufs = (low.bufs.get(j) for j in inline_reads(low.kernel.ops, low.stores, [x]))
    return any(b is not None and b.transposed for b in bufs)


def _lane_stride(lane_r: str, extent: int, group: int, stmt: str, v: int) -> list[str]:
    """The lanes' walk over the reduced dim (index ``r``): each lane takes runs of ``v`` consecutive
    elements (``run_width``; runs read by vector loads are ``_walk``'s), else one element per step."""
    if v == 1:
        return _strided("r", lane_r, extent, group, [stmt])
    return _strided("r0", f"{lane_r} * {v}", extent, group * v,
                    ["#pragma unroll", f"for (int r = r0; r < r0 + {v}; ++r) {stmt}"])


def _strided(var: str, start: str, extent: int, step: int, body: list[str]) -> list[str]:
    """``body`` for ``var`` = ``start``, ``start + step``, ... below ``extent``. Where one step covers
    the extent (a thread per run: the row-warps rule's usual case) it is one guarded pass, not a loop
    (straight-line code: the compiler merges the same run's loads of several reductions); the first
    line is a pragma or a comment, which the block-wide walk places at the block's indentation."""
    if extent <= step:
        guard = f"  if ({var} < {extent}) {{" if extent < step else "  {"
        return ["// one pass: a step covers the dim", "{", f"  const int {var} = {start};", guard,
                *_indent(body, 4), "  }", "}"]
    return ["#pragma unroll 4", f"for (int {var} = {start}; {var} < {extent}; {var} += {step}) {{",
            *_indent(body, 2), "}"]


def _walk(ex: Exprs, x: int, xidx: list[str], comb: str, name: str, lane_r: str, extent: int, group: int,
          run: int, v: int, tail: tuple[str, str] | None = None) -> list[str]:
    """The walk of ``group`` threads (``lane_r``: this one's index) over the reduced dim, ``comb``
    taking each element: in runs of ``run`` along the last dim (base ``r0``), each run read once into
    registers by vector loads (``RunReads``); else ``_lane_stride``. ``tail``: (valid elements of the
    reduced dim in the tile, the reduction's identity), taken past them (``prism.codegen.tails``)."""
    def take(value: str, r: str) -> str:
        return comb.format(v=value if tail is None else f"({r} < {tail[0]} ? {value} : {tail[1]})")

    if run == 1:
        return _lane_stride(lane_r, extent, group, take(ex.read(x, xidx), "r"), v)
    step = group * run
    runs = -(-extent // step)  # a block-wide walk of a few runs a thread: EarlyReads may hold them
    axis = xidx.index("r") - len(xidx)  # the last dim, or the next-to-last (``stored_rows``)
    held = axis == -1 and lane_r == "tid" and (runs == 1 or (ex.early is not None and runs <= EARLY_RUNS))
    at = RunAt.over(f"tid * {run}", step, extent, "rj")
    rex = RunReads(ex, "r0", run, f"{name}_v", at if held else None, axis)
    base = [*xidx]
    base[axis] = "r0"
    stmts = [take(rex.read(x, ix := with_at(base, axis, k)), ix[axis]) for k in range(run)]
    body = [*rex.loads, *stmts]  # the reads filled rex.loads
    if held and runs > 1:
        return [f"// {runs} runs a thread, unrolled (their loads are held from the kernel start)", *at.passes("r0", body)]
    return _strided("r0", f"{lane_r} * {run}", extent, step, body)


def _warp_row_reduce(low: KernelLowering, ex: Exprs, x: int, dim: int, fn: Reduce, acc: str | None, dst: Buf | None,
                     name: str, count: int) -> list[str]:
    """``KernelLowering.warp_rows``: warp ``w`` reduces rows ``j * warps + w`` (runs of ``WARP_RUN`` a lane,
    ``row_runs``), combines its lanes with a butterfly of shuffles, which leaves the row's value in every
    lane, and keeps it in ``<dst>_r[j]`` (a ReduceOp) or in its accumulator's register ``acc`` (a
    one-iteration sum) for its own later readers (the next reduction of the row, the save of the row):
    nothing published, no barrier."""
    if acc is not None:
        into = acc
    else:
        assert dst is not None, "a warp-rows ReduceOp keeps its value in its tile's register"
        into = f"{dst.name}_r[j]"
    tile_x = low.tiles[x]
    assert tile_x is not None
    out, n_out = _red_outputs(tile_x, dim)
    decl, idx = decompose("o", out, f"{name}_o")
    init = "0.0f" if fn is Reduce.SUM else NEG_INF
    comb = "p += {v};" if fn is Reduce.SUM else "p = fmaxf(p, {v});"
    rex = RunReads(ex, "r0", WARP_RUN, f"{name}_v", row_at(tile_x[dim]))
    stmts = [comb.format(v=rex.read(x, with_last([*idx[:-1], "r0"], k))) for k in range(WARP_RUN)]
    return [
        f"// {name}: {fn.value} over dim {dim} of a {list(tile_x)} tile: a row per warp, kept in its lanes' registers",
        *([f"float {dst.name}_r[{count}];"] if dst is not None else []),
        "#pragma unroll",
        f"for (int j = 0; j < {count}; ++j) {{",
        f"  const int o = j * {low.warps} + warp;",
        f"  float p = {init};",
        f"  if (o < {n_out}) {{" if n_out % low.warps else "  {",
        *_indent(decl, 4),
        *_indent(row_runs(tile_x[dim], [*rex.loads, *stmts]), 4),
        "  }",
        f"  {into} = {'warp_sum' if fn is Reduce.SUM else 'warp_max'}(p, 32);",
        "}",
    ]


def row_at(extent: int) -> RunAt:
    """Where a lane's runs of ``row_runs`` start: a read-only input's runs there that do not move with the
    row (a norm's weight) are an ``EarlyReads`` array, loaded at the kernel start (as many as the lane
    walks, ``lowered.warp_row_runs``: loaded after the reductions, a 4,096-wide weight's sixteen runs put
    their latency behind the shuffles, measured 5-9% slower than the shared-memory kernel before; loaded
    at the start, 2% faster to 3% slower, docs/codegen.md "Warp rows")."""
    return RunAt.over(f"lane * {WARP_RUN}", 32 * WARP_RUN, extent, "rj")


def row_runs(extent: int, body: list[str]) -> list[str]:
    """``body`` for each run ``r0`` of ``WARP_RUN`` elements a lane takes of a row of ``extent`` (lane ``l``
    the runs at ``l * WARP_RUN``, 32 runs apart): unrolled, so the reductions of a row and its save read
    the same addresses, which the compiler loads once (no barrier between them)."""
    return row_at(extent).passes("r0", body)


def _block_reduce(low: KernelLowering, ex: Exprs, x: int, dim: int, fn: Reduce, dst: Buf, name: str,
                  held: bool = False) -> list[str]:
    """Fewer outputs than warps, long rows: every thread of the block strides each row, warps combine
    with shuffles, then warp 0 combines the warps' partials (one short dependent chain, not 32 lanes
    walking the whole row) and publishes the result behind a barrier; ``held`` (one output): every
    warp combines the partials itself into the register ``<dst>_r``, no publishing, no second barrier."""
    tile_x = low.tiles[x]
    assert tile_x is not None
    out, n_out = _red_outputs(tile_x, dim)
    nw, nt = low.warps, low.threads
    decl, idx = decompose("o", out, f"{name}_o")
    xidx = list(idx)
    xidx[dim] = "r"
    init = "0.0f" if fn is Reduce.SUM else NEG_INF
    comb = "p += {v};" if fn is Reduce.SUM else "p = fmaxf(p, {v});"
    warp_op = "warp_sum" if fn is Reduce.SUM else "warp_max"
    # the whole block is the walk's group; the walk's pragma stays at the block's indentation
    pragma, *walk = _walk(ex, x, xidx, comb, name, "tid", tile_x[dim], nt, block_run(low, x, dim), 1,
                          _tail(low, x, dim, init))
    if held:
        assert n_out == 1, "a held reduction has one output"
        return [
            f"// {name}: {fn.value} over dim {dim} of a {list(tile_x)} tile: one output, the whole block on it, "
            "held by every thread",
            *_held_combine(dst, f"{name}_part", nw, fn, [
                *_indent(decl, 2), f"  float p = {init};", pragma, *_indent(walk, 2), f"  p = {warp_op}(p, 32);"]),
        ]
    assert n_out <= nt, "fewer outputs than threads: one thread combines each"
    return [
        f"// {name}: {fn.value} over dim {dim} of a {list(tile_x)} tile: {n_out} outputs, the whole block on each "
        "(every output's warp values behind one barrier, then one thread an output combines them)",
        "{",
        _parts_decl(f"{name}_part", nw, n_out),
        "#pragma unroll",
        f"  for (int j = 0; j < {n_out}; ++j) {{",
        "    const int o = j;",
        *_indent(decl, 4),
        f"    float p = {init};",
        pragma,
        *_indent(walk, 4),
        f"    p = {warp_op}(p, 32);",
        f"    if (lane == 0) {name}_part[j][warp] = p;",
        "  }",
        "  __syncthreads();",
        f"  if (tid < {n_out}) {{",
        "    const int o = tid;",
        *_indent(decl, 4),
        *_indent(_parts_sum(f"{name}_part[o]", f"{name}_q", nw, fn, f"{dst.name}[{offset(dst.strides, idx)}]"), 4),
        "  }",
        "  __syncthreads();",
        "}",
    ]


def render_red_acc_write(low: KernelLowering, i: int, x: int, dim: int, group: int, count: int, dst: Buf,
                         acc: str) -> list[str]:
    """After the loop: combine the lanes' partial sums with shuffles; the group leaders write the tile
    (block-wide accumulators, ``group > 32``: ``render_held_accs``)."""
    assert group <= 32, "a block-wide accumulator is held (render_held_accs)"
    tile_x = low.tiles[x]
    assert tile_x is not None
    out, n_out = _red_outputs(tile_x, dim)
    nw = low.warps
    decl, idx = decompose("o", out, f"a{i}_o")
    lane_r, o_expr = _lanes(group, nw)
    cond = ([f"o < {n_out}"] if n_out % outputs_per_pass(group, nw) else []) + ([f"{lane_r} == 0"] if group > 1 else [])
    return [
        "#pragma unroll",
        f"for (int j = 0; j < {count}; ++j) {{",
        f"  const int o = {o_expr};",
        f"  const float p = warp_sum({acc}[j], {group});" if group > 1 else f"  const float p = {acc}[j];",
        f"  if ({' && '.join(cond) or 'true'}) {{",
        *_indent(decl, 4),
        f"    {dst.name}[{offset(dst.strides, idx)}] = p;",
        "  }",
        "}",
    ]


def render_held_accs(low: KernelLowering, accs: Sequence[tuple[int, Buf, str]]) -> list[str]:
    """The block-wide accumulators of a kernel (index, tile, register array), each one output
    (``KernelLowering.held``), combined behind one barrier: each warp sums its threads' partials, the
    warps' sums go to shared memory together, then every warp sums them all. The accumulators are
    complete after the loop, so none waits for another's barrier; the partials of a rescaled sum share
    their running max (every thread saw the same shift values), so they add as they are."""
    nw = low.warps
    lines = [f"float {dst.name}_r;" for _, dst, _ in accs] + ["{"]
    lines += [_parts_decl(f"a{i}_part", nw) for i, _, _ in accs]
    lines += [f"  const float p{i} = warp_sum({acc}[0], 32);" for i, _, acc in accs]
    lines.append("  if (lane == 0) {" + " ".join(f"a{i}_part[warp] = p{i};" for i, _, _ in accs) + "}")
    lines.append("  __syncthreads();")
    for i, dst, _ in accs:
        lines += _indent(_parts_sum(f"a{i}_part", f"a{i}_part_q", nw, Reduce.SUM, f"{dst.name}_r"), 2)
    return [*lines, "}"]


def _parts_decl(part: str, nw: int, outputs: int | None = None) -> str:
    """The shared array of the warps' values of a block-wide reduction (``outputs``: one row of them per
    output): 16-byte aligned rows of whole float4s."""
    rows = "" if outputs is None else f"[{outputs}]"
    return f"  __shared__ __align__(16) float {part}{rows}[{-(-nw // 4) * 4}];"


def _parts_sum(part: str, q: str, nw: int, fn: Reduce, dst: str) -> list[str]:
    """``dst`` = the ``nw`` warps' values in ``part`` (a 16-byte aligned array) combined by ``fn``: read
    as float4s ``<q><k>`` (broadcast reads where every thread reads them, no bank conflict) and combined
    as a balanced tree, a chain of log2(nw) operations, where a warp-wide shuffle reduction was five
    dependent shuffles; threads that compute it all get the same value."""
    quads = -(-nw // 4)
    lines = [f"const float4 {q}{k} = reinterpret_cast<const float4*>({part})[{k}];" for k in range(quads)]
    terms = [f"{q}{w // 4}.{'xyzw'[w % 4]}" for w in range(nw)]
    form = "({a} + {b})" if fn is Reduce.SUM else "fmaxf({a}, {b})"
    while len(terms) > 1:
        pairs = [form.format(a=a, b=b) for a, b in zip(terms[::2], terms[1::2], strict=False)]
        terms = [*pairs, terms[-1]] if len(terms) % 2 else pairs
    return [*lines, f"{dst} = {terms[0]};"]


def _held_combine(dst: Buf, part: str, nw: int, fn: Reduce, warp_value: list[str]) -> list[str]:
    """``warp_value`` (lines inside the block's scope that leave each warp's combined value in ``p``, in
    every lane), then the warps' values through ``part`` in shared memory, combined by every thread into
    the register ``<dst>_r`` (``_parts_sum``): one barrier, nothing published."""
    return [
        f"float {dst.name}_r;",
        "{",
        _parts_decl(part, nw),
        *warp_value,
        f"  if (lane == 0) {part}[warp] = p;",
        "  __syncthreads();",
        *_indent(_parts_sum(part, f"{part}_q", nw, fn, f"{dst.name}_r"), 2),
        "}",
    ]


def ew_item_index(low: KernelLowering, i: int) -> tuple[list[str], list[str]]:
    """Accumulator i's item ``e`` as a tile index (runs of ``vec`` along the last dim): the declarations
    of ``a<i>_e…`` and the index strings."""
    tile = low.tiles[i]
    assert tile is not None
    return decompose("e", tile, f"a{i}_e", low.accs[i].vec)


def ew_item_loop(low: KernelLowering, i: int, body: list[str]) -> list[str]:
    """``body`` for each item ``e = tid + j * threads`` of accumulator i a thread owns (guarded)."""
    sw, ap = low.elementwise[i], low.accs[i]
    return ["#pragma unroll", f"for (int j = 0; j < {-(-ap.count // ap.vec)}; ++j) {{",
            f"  const int e = tid + j * {sw.threads};", *sweep_lines(sw, body, pad=2), "}"]


def render_ew_acc(low: KernelLowering, ex: Exprs, i: int, x: int, acc: str, *, write: Buf | None) -> list[str]:
    """Each thread adds its elements of value ``x`` into ``acc`` (or, after the loop, writes them out).
    A max accumulator keeps the running max; a rescaled one (the online softmax) keeps the running
    max of its shift in ``rm<i>`` and rescales: ``acc·e^(m−m') + x·e^(c−m')`` (a factor is 1 where
    its max did not change: one exp per element while the max is steady). With ``vec`` > 1 each item
    is a run of that many elements (register ``j * vec + k``), read in vector loads."""
    v = low.accs[i].vec
    decl, idx = ew_item_index(low, i)
    rex = RunReads(ex, idx[-1], v, f"a{i}_v") if v > 1 else ex
    stmts: list[str] = []
    if v > 1 and write is None and low.accs[i].rescale is not None:
        stmts = _rescaled_run(low, rex, i, x, idx, acc)
    for k in range(v if not stmts else 0):
        at, ik = (f"{acc}[j * {v} + {k}]" if v > 1 else f"{acc}[j]"), with_last(idx, k)
        stmts += _ew_step(low, rex, i, x, ik, at, write)
    loads = rex.loads if isinstance(rex, RunReads) else []
    return ew_item_loop(low, i, [*decl, *loads, *stmts])


def _rescaled_run(low: KernelLowering, ex: Exprs, i: int, x: int, idx: list[str], acc: str) -> list[str]:
    """A run of ``vec`` elements of rescaled accumulator ``i`` whose shift is one value along the run
    (``lower._rescaled_runs``): the shift read once, the run's running max ``rm<i>[j]``, and one pair
    of factors for all its elements."""
    tile, tile_x, ap = low.tiles[i], low.tiles[x], low.accs[i]
    assert ap.rescale is not None
    tile_c = low.tiles[ap.rescale]
    assert tile is not None and tile_x is not None and tile_c is not None and tile_c[-1] == 1
    m = f"rm{i}[j]"
    lines = [f"const float c = {ex.read(ap.rescale, bcast(idx, tile_c, tile))};", f"const float mn = fmaxf({m}, c);",
             f"const float fo = {m} == mn ? 1.0f : __expf({m} - mn);", "const float fc = c == mn ? 1.0f : __expf(c - mn);"]
    for k in range(ap.vec):
        at = f"{acc}[j * {ap.vec} + {k}]"
        lines.append(f"{at} = {at} * fo + ({ex.read(x, bcast(with_last(idx, k), tile_x, tile))}) * fc;")
    return [*lines, f"{m} = mn;"]


def render_shift_max(low: KernelLowering, ex: Exprs, i: int) -> list[str]:
    """``KernelLowering.shift_first``: each thread takes the max of rescaled accumulator ``i``'s shift
    at its elements into ``rm<i>`` (one iteration's stage; the caller loops over all of them first)."""
    tile, ap = low.tiles[i], low.accs[i]
    assert tile is not None and ap.rescale is not None and ap.vec == 1
    tile_c = low.tiles[ap.rescale]
    assert tile_c is not None
    decl, idx = ew_item_index(low, i)
    return ew_item_loop(low, i, [*decl, f"rm{i}[j] = fmaxf(rm{i}[j], {ex.read(ap.rescale, bcast(idx, tile_c, tile))});"])


def _ew_step(low: KernelLowering, ex: Exprs, i: int, x: int, idx: list[str], at: str, write: Buf | None) -> list[str]:
    """One element of ``render_ew_acc``: register ``at`` and element ``idx`` of the tile."""
    tile, tile_x, ap = low.tiles[i], low.tiles[x], low.accs[i]
    assert tile is not None and tile_x is not None
    if write is not None:
        return [f"{write.name}[{offset(write.strides, idx)}] = {at};"]
    v = ex.read(x, bcast(idx, tile_x, tile))
    if ap.rescale is not None:
        tile_c = low.tiles[ap.rescale]
        assert tile_c is not None
        assert ap.vec == 1, "a rescaled accumulator in runs is rendered by _rescaled_run"
        m = f"rm{i}[j]"
        return [
            f"const float c = {ex.read(ap.rescale, bcast(idx, tile_c, tile))};",
            f"const float mn = fmaxf({m}, c);",
            f"{at} = {at} * ({m} == mn ? 1.0f : __expf({m} - mn)) + ({v}) * (c == mn ? 1.0f : __expf(c - mn));",
            f"{m} = mn;",
        ]
    if ap.fn is Reduce.MAX:
        return [f"{at} = fmaxf({at}, {v});"]
    return [f"{at} += {v};"]


def render_acc_decl(j: int, acc: AccPlan) -> list[str]:
    """Register arrays of accumulator j: zeros, or −inf for a running max (and a rescaled
    accumulator's running max ``rm<j>``)."""
    frag = acc.kind is AccKind.FRAG
    lines = [f"float ra{j}[{acc.count}]{'[2][4]' if frag else ''} = {{}};"]
    inits = [f"ra{j}[j]"] if acc.fn is Reduce.MAX and not frag else []
    if acc.rescale is not None:  # the running max: one per element, or per fragment row (r0, r0 + 8)
        lines.append(f"float rm{j}[{acc.count}]{'[2]' if frag else ''};")
        inits += [f"rm{j}[j][0]", f"rm{j}[j][1]"] if frag else [f"rm{j}[j]"]
    if inits:
        sets = " ".join(f"{a} = {NEG_INF};" for a in inits)
        lines += ["#pragma unroll", f"for (int j = 0; j < {acc.count}; ++j) {{ {sets} }}"]
    return lines
