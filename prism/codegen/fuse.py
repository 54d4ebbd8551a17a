"""Fusing a split kernel with the kernel that combines its partial results: one launch, not two.

A split plan (split-K GEMV, split-KV attention, a long row's split statistics) launches a *split* kernel A whose blocks write
partial results (intermediate tensors) and a *combine* kernel B whose blocks read them. When every
block of A writes into the tiles of exactly one block of B, the two run as one kernel of A's grid:
each A block saves its partials and counts itself in on its B block's counter with one acq_rel atomic
(release: its saves are visible first; acquire: the last block reads the others' after); the block
that counts in last (all partials of that B block are written) resets the counter and runs B's block.
Nothing waits on another block, so any block schedule completes, and the second launch with its gap
(about 1 µs in a CUDA graph on an H200) is gone.

:func:`fusion` finds a pair of consecutive custom kernels of that shape (the last such pair: a split
plan's combine is its last kernel, or the second where a statistics-then-element-wise pipeline's first
kernel was split) and how a
block of A finds its B block: per grid dim q of B, ``b_q = a_p // ratio`` for one grid dim p of A.
Two more conditions: the combine's copies of the partials must not read a stale L1 line
(:func:`_l1_safe`), and its grid must be small (at most a quarter of the SMs): a wide combine, run
by whichever split blocks finish last, was slower fused than launched on its own on an H200
(docs/codegen.md, "Fused combine").
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from prism.codegen.lower import Options, lower_graph
from prism.codegen.lowered import GraphLowering, KernelLowering
from prism.errors import CodegenError
from prism.ir import KernelGraph


@dataclass(frozen=True)
class Coord:
    """Grid coordinate q of the combining block: ``a[src] // ratio`` of the split block's coordinates."""

    src: int
    ratio: int


@dataclass(frozen=True)
class Fusion:
    """Kernels ``first`` (split) and ``second`` (combine) of the graph, by position, run as one.

    ``coords[q]`` gives grid coordinate q of the combining block (None: 0, a grid dim of size 1);
    ``count`` split blocks feed each combining block."""

    first: int
    second: int
    coords: tuple[Coord | None, ...]
    count: int
    counter: str  # name of the plan buffer of per-block counters (not a valid tensor name)

    def target(self, a: tuple[int, ...]) -> tuple[int, ...]:
        """The combining block that split block ``a`` (grid coordinates) feeds."""
        return tuple(0 if c is None else a[c.src] // c.ratio for c in self.coords)


L1_LINE = 128  # bytes
# a combine of at most sms / SMALL_COMBINE blocks leaves the GPU mostly idle: its own launch is latency
SMALL_COMBINE = 4

# per tensor dim: (grid dim that partitions it, elements per block along it) or None (whole dim)
_Split = tuple[tuple[int, int] | None, ...]


def _split(mapping: tuple[int | None, ...], grid: tuple[int, ...], shape: tuple[int, ...]) -> _Split | None:
    """How a load's imap or a save's omap cuts a tensor among the blocks (None: two grid dims on one
    tensor dim, or a dim that does not divide)."""
    out: list[tuple[int, int] | None] = [None] * len(shape)
    for p, d in enumerate(mapping):
        if d is None or p >= len(grid) or grid[p] == 1:
            continue
        if out[d] is not None or shape[d] % grid[p]:
            return None
        out[d] = (p, shape[d] // grid[p])
    return tuple(out)


def _coords(write: _Split, read: _Split, grid_a: tuple[int, ...], grid_b: tuple[int, ...]
            ) -> tuple[tuple[Coord | None, ...], int] | None:
    """(coordinates of the combining block, split blocks per combining block) when every split block
    writes inside one combining block's read region of this tensor; None otherwise."""
    coords: list[Coord | None] = [None] * len(grid_b)
    for w, r in zip(write, read, strict=True):
        if r is None:
            continue  # the combining block reads the whole dim
        q, wb = r
        if w is None:
            return None  # every split block writes along the whole dim: it feeds several combining blocks
        p, wa = w
        if wb % wa:
            return None
        coords[q] = Coord(p, wb // wa)
    if any(g > 1 and c is None for g, c in zip(grid_b, coords, strict=True)):
        return None  # combining blocks along q read the same tiles: a split block feeds several
    count = math.prod(grid_a) // math.prod(grid_b)
    return tuple(coords), count


def _l1_safe(b: KernelLowering, tensor: str, read: _Split | None, shape: tuple[int, ...]) -> bool:
    """Whether the combine may read ``tensor`` through this SM's L1 although other blocks of the launch
    wrote it. 16-byte copies bypass L1 (cp.async.cg). Narrower ones (cp.async.ca) are safe when no
    two combining blocks read one 128-byte line: no block of the launch reads a line of the
    partials before they are complete then (the split blocks never read them), so L1, which is
    invalidated at each launch, holds no stale copy."""
    loads = [lp for lp in b.loads if lp.tensor == tensor and not lp.buf.l2]  # (read past L1: safe)
    if all(lp.nbytes >= 16 for lp in loads):
        return True
    if read is None or any(lp.nbytes < 4 for lp in loads):
        return False  # element-wise copies: plain loads
    parts = [d for d, r in enumerate(read) if r is not None]
    if not parts:
        return True  # one combining block reads it all
    d = max(parts)
    cut = read[d]
    assert cut is not None
    run = cut[1] * math.prod(shape[d + 1:])  # elements of one block's contiguous runs, each starting at a multiple
    return run * loads[0].buf.esize % L1_LINE == 0


def pair_fusion(gl: GraphLowering, a: KernelLowering, b: KernelLowering) -> Fusion | None:
    """The fusion of split kernel ``a`` and combining kernel ``b`` (consecutive in the graph), or None."""
    if a.threads != b.threads or not _grids_fuse(gl, a, b):
        return None
    written = {op.tensor: op.omap for op in a.kernel.saves}
    if not written or set(written) & set(b.saves_tensors()) or set(written) & {op.tensor for op in a.kernel.loads}:
        return None
    found: set[tuple[tuple[Coord | None, ...], int]] = set()
    for load in b.kernel.loads:
        if load.tensor not in written:
            continue
        tensor, shape = load.tensor, gl.shapes[load.tensor]
        w, r = _split(written[tensor], a.grid, shape), _split(load.imap, b.grid, shape)
        got = None if w is None or r is None else _coords(w, r, a.grid, b.grid)
        if got is None or not _l1_safe(b, tensor, r, shape):
            return None
        found.add(got)
    if len(found) != 1:
        return None  # reads nothing of a, or two tensors disagree on the feeding
    coords, count = found.pop()
    return Fusion(a.index, b.index, coords, count, f"done.{b.kernel.name}")


def _grids_fuse(gl: GraphLowering, a: KernelLowering, b: KernelLowering) -> bool:
    """The grids allow a fusion (what no lowering option changes): at most 3-D, more split blocks than
    combining ones, and a small combine (a wide one, fused, queues behind the split blocks:
    docs/codegen.md, "Fused combine")."""
    return len(a.grid) <= 3 and len(b.grid) <= 3 and a.blocks > b.blocks and b.blocks * SMALL_COMBINE <= gl.arch.sms


def _pairs(gl: GraphLowering) -> list[tuple[KernelLowering, KernelLowering]]:
    """The plan's pairs of consecutive custom kernels, the last pair first: a split plan has its combine
    last, or second where a pipeline's split statistics kernel comes first and the kernel that reads
    the statistics after the combine."""
    ks = gl.kernels
    return [(a, b) for a, b in reversed(list(itertools.pairwise(ks))) if a is not None and b is not None]


def fusion(gl: GraphLowering) -> Fusion | None:
    """The fusion of the plan's first pair of consecutive custom kernels, from the last, that fuses;
    None when none does. One fusion per plan keeps the launch plan a list of launches."""
    return next((fu for pair in _pairs(gl) if (fu := pair_fusion(gl, *pair)) is not None), None)


def launch_fusion(kg: KernelGraph, gl: GraphLowering, opts: Options) -> tuple[GraphLowering, Options, Fusion | None]:
    """The lowering, options and fusion ``generate`` launches ``kg`` with (``gl``: lowered with ``opts``):
    with ``opts.fuse`` a fusable pair is fused (``fusion``), else the first lowering again that fuses one
    (``_refusals``) is taken; else ``gl`` as it is, launched apart."""
    if not opts.fuse or not any(_grids_fuse(gl, *pair) for pair in _pairs(gl)):
        return gl, opts, None  # (no option changes a grid: no lowering would fuse it)
    if (fu := fusion(gl)) is not None:
        if any(low is not None and low.per_sm == 2 for low in gl.kernels):
            # one launch holds both kernels' registers: split kernels kept at 4 warps for two blocks an
            # SM spilled fused with their combines (24 of 51 zoo kernels; docs/codegen.md, "Two blocks of
            # 4 warps an SM"), so such a pair is lowered as before
            unpaired = replace(opts, paired_blocks=False)
            return launch_fusion(kg, lower_graph(kg, gl.arch, unpaired), unpaired)
        return gl, opts, fu
    for again_opts in _refusals(gl, opts):
        try:
            again = lower_graph(kg, gl.arch, again_opts)
        except CodegenError:
            continue
        if (fu := fusion(again)) is not None:
            return again, again_opts, fu
    return gl, opts, None


def _refusals(gl: GraphLowering, opts: Options) -> list[Options]:
    """Options under which a pair that does not fuse may: both kernels at the larger warp count (a split
    kernel lowered with 8 warps, its accumulators not fitting 4 (``lower.WARPS``), cannot share a launch
    with a combine of 4); then also the combine's partials read in place past L1
    (``Options.partials_in_place``: a per-block scalar partial, such as a norm's sum of squares beside a
    split-K GEMV, is 4 bytes a combining block in lines other blocks share, which a copy through L1
    may read stale)."""
    warps = {low.warps for low in gl.kernels if low is not None}
    wide = replace(opts, warps=max(warps)) if opts.warps is None and len(warps) > 1 else opts
    out = [wide] if wide is not opts else []
    return out if opts.partials_in_place else [*out, replace(wide, partials_in_place=True)]
