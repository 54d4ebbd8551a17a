"""Output savers and materialising passes.

A saver evaluates the (inlined) elementwise chain of its value for ``vec`` consecutive elements of
a row and writes them with one 16-byte store where alignment allows (8 halves / 4 floats). A
materialising pass writes a value into a half tile in shared memory (a matmul operand).
"""

from __future__ import annotations

import math

from prism.codegen.lower import global_strides, ident
from prism.codegen.lowered import WARP_RUN, Buf, KernelLowering, Sweep, sweep
from prism.codegen.render_expr import EARLY_RUNS, Exprs, RunAt, decompose, offset, run_values, with_last
from prism.codegen.render_load import block_origin, sweep_lines, tail_conds
from prism.codegen.render_reduce import _indent, row_at, row_runs
from prism.ir import Save


def render_save(low: KernelLowering, ex: Exprs, i: int) -> list[str]:
    if low.warp_rows:
        return _warp_row_save(low, ex, i)
    op = low.kernel.ops[i]
    assert isinstance(op, Save)
    sp = low.saves[i]
    tile = low.tiles[op.x]
    assert tile is not None
    shape = low.tensor_shapes[op.tensor]
    vec, sw = sp.vec, sp.sweep
    decl, idx = decompose("e", tile, f"s{i}_", vec)
    vals = run_values(ex, op.x, idx, vec, f"s{i}_v", at=_saved_runs(tile, vec, sw))
    fn = ("st_h" if sp.half else "st_f") + str(vec)
    args = ", ".join(f"v{k}" for k in range(vec))
    store = f"{fn}({ident(op.tensor)} + blk_{i} + {offset(global_strides(shape), idx)}, {args});"
    if conds := tail_conds(low, op.x, idx):
        store = f"if ({' && '.join(conds)}) {store}  // (not past a padded tail's valid elements)"
    return [
        f"// save {op.tensor}{list(shape)} <- tile {list(tile)}, omap {op.omap}: {vec}-element stores",
        "{",
        f"  const int blk_{i} = {block_origin(sp.block_terms)};",
        "#pragma unroll",
        f"  for (int j = 0; j < {sw.per}; ++j) {{",
        f"    const int e = tid + j * {sw.threads};",
        *sweep_lines(sw, [*decl, *vals, store]),
        "  }",
        "}",
    ]


def _warp_row_save(low: KernelLowering, ex: Exprs, i: int) -> list[str]:
    """``KernelLowering.warp_rows``: warp ``w`` saves rows ``j * warps + w`` of the ``[R, C]`` tile, the runs
    its reductions walked (``row_runs``), with the rows' reduced values from its lanes' registers."""
    op = low.kernel.ops[i]
    assert isinstance(op, Save)
    sp, tile = low.saves[i], low.tiles[op.x]
    assert tile is not None
    shape = low.tensor_shapes[op.tensor]
    rows, nw = tile[-2], low.warps
    idx = [*("0" for _ in tile[:-2]), "o" if rows > 1 else "0", "r0"]
    vals = run_values(ex, op.x, idx, WARP_RUN, f"s{i}_v", at=row_at(tile[-1]))
    fn = ("st_h" if sp.half else "st_f") + str(sp.vec)
    stores = [f"{fn}({ident(op.tensor)} + blk_{i} + {offset(global_strides(shape), with_last(idx, k))}, "
              + ", ".join(f"v{k + m}" for m in range(sp.vec)) + ");" for k in range(0, WARP_RUN, sp.vec)]
    return [
        f"// save {op.tensor}{list(shape)} <- tile {list(tile)}, omap {op.omap}: a row per warp, {sp.vec}-element stores",
        "{",
        f"  const int blk_{i} = {block_origin(sp.block_terms)};",
        "#pragma unroll",
        f"  for (int j = 0; j < {-(-rows // nw)}; ++j) {{",
        f"    const int o = j * {nw} + warp;",
        f"    if (o < {rows}) {{" if rows % nw else "    {",
        *_indent(row_runs(tile[-1], [*vals, *stores]), 6),
        "    }",
        "  }",
        "}",
    ]


def _saved_runs(tile: tuple[int, ...], vec: int, sw: Sweep) -> RunAt | None:
    """Where each thread saves its runs of a one-row tile (item ``e = tid + j * threads``, its run at
    element ``tid * vec + j * threads * vec``, guarded by ``e < sw.bound``), for at most ``EARLY_RUNS``
    items a thread; else None."""
    if vec == 1 or sw.per > EARLY_RUNS or any(t != 1 for t in tile[:-1]) or tile[-1] // vec < 2:
        return None
    return RunAt(f"tid * {vec}", None if sw.bound is None else sw.bound * vec, sw.per, sw.threads * vec, "j")


def materialise_vec(tile: tuple[int, ...], dst: Buf) -> int:
    """Elements per thread of a materialising pass: a run of 8, 4 or 2 along the last dim written with
    one 16-, 8- or 4-byte store where every row of ``dst`` starts aligned to it (else 1)."""
    if dst.swizzle or ((dst.copies > 1 or dst.ring) and not dst.parity):  # (a parity copy is a whole tile)
        return 1
    return next((v for v in (8, 4, 2) if tile[-1] % v == 0 and dst.offset % (2 * v) == 0
                 and all(s % v == 0 for s in dst.strides[:-1])), 1)


def _tail_zero(low: KernelLowering, i: int, idx: list[str], v: str) -> str:
    """``v``, or 0 past the valid elements of a padded tail along value ``i``'s tile: a matmul operand
    is zero there (``prism.codegen.tails``)."""
    conds = tail_conds(low, i, idx)
    return v if not conds else f"({' && '.join(conds)} ? {v} : 0.0f)"


def render_materialise(low: KernelLowering, ex: Exprs, i: int, dst: Buf, *, own: bool) -> list[str]:
    """Write value ``i`` into the half tile ``dst`` (``own``: dst is i's storage, so compute i's op): each
    thread computes a run of ``materialise_vec`` elements and stores them at once."""
    tile = low.tiles[i]
    assert tile is not None
    vec = materialise_vec(tile, dst)
    sw = sweep(math.prod(tile) // vec, low.threads)
    decl, idx = decompose("e", tile, f"m{i}_", vec)
    vals = run_values(ex, i, idx, vec, f"m{i}_v", own=own)
    args = ", ".join(_tail_zero(low, i, with_last(idx, k), f"v{k}") for k in range(vec))
    body = [*decl, *vals, f"st_h{vec}({dst.name} + {offset(dst.strides, idx)}, {args});"]
    return [f"// {dst.name} = half(op {i}) [{', '.join(map(str, tile))}]: {vec}-element stores", "#pragma unroll 4",
            f"for (int j = 0; j < {sw.per}; ++j) {{", f"  const int e = tid + j * {sw.threads};",
            *sweep_lines(sw, body, pad=2), "}"]
