"""Lowering of a concrete μGraph into the lowered-kernel IR (``prism.codegen.lowered``).

This is the part of code generation that needs no source text: ``resources()`` runs it alone to
answer "do these sizes fit?" cheaply, ``generate()`` renders its result and ``emulate`` executes
it. Every size or structure the renderers cannot handle is rejected here with a ``CodegenError``,
so the two can never disagree.

A kernel is lowered by the passes of :data:`PASSES`, in order, each filling in a few fields of a
``_Draft`` (the IR under construction); ``_freeze`` makes it the frozen ``KernelLowering``.
Ops that depend only on loop-invariant loads are hoisted before the loop (the PRE phase).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import assert_never

from prism.codegen.arch import MAX_GRID, Arch
from prism.codegen.fold import fold_transposes, read_in_place
from prism.codegen.lowered import (
    DEFAULT_OPTIONS,
    HALF_DTYPES,
    INTERMEDIATE_DTYPE,
    MAX_ACC_REGS,
    MAX_ELEMS,
    MAX_STAGES,
    AccKind,
    AccPlan,
    Arrival,
    Buf,
    DirectLoads,
    GraphLowering,
    KernelLowering,
    LoadPlan,
    MmaPlan,
    Options,
    Phase,
    SavePlan,
    Storage,
    Store,
    Sweep,
    block_wide,
    carry_free,
    combine_loop,
    held_value,
    inline_reads,
    outputs_per_pass,
    reads_loop_tiles_after,
    sweep,
    warp_rows,
)
from prism.codegen.tails import TailPlan, memory_shapes, saved_chunks, tail_plan
from prism.errors import CodegenError, IRError
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    KernelShapes,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    Save,
    UnaryOp,
    infer,
    load_shape,
    op_args,
)
from prism.names import c_ident
from prism.ops import Reduce

__all__ = ["DEFAULT_OPTIONS", "PASSES", "DirectLoads", "Options", "ident", "lower_graph", "reduce_group"]


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n >= 1 else 1


def _pitch(shape: tuple[int, ...], esize: int) -> int:
    c = shape[-1]
    q = 16 // esize
    if len(shape) >= 2 and shape[-2] > 1 and c % q == 0:
        return c + q  # one 16-byte pad per row: rows of ldmatrix / row-wise reads hit distinct banks
    return c


def swizzles(shape: tuple[int, ...], esize: int) -> bool:
    """Whether a copied matmul operand tile can be swizzled (``Buf.swizzle``): 2-D (leading dims of
    extent 1 allowed: a batched operand whose batch the grid maps), at least 2 rows, and rows of 2, 4
    or a multiple of 8 16-byte chunks (a chunk index XOR its key stays in the row)."""
    n, q = shape[-1], 16 // esize
    return (len(shape) >= 2 and all(d == 1 for d in shape[:-2]) and shape[-2] > 1 and n % q == 0
            and (n // q in (2, 4) or (n // q) % 8 == 0))


def _copy_pitch(shape: tuple[int, ...], esize: int) -> int:
    """The row pitch of a tile that cp.async fills. Its rows start 32-byte aligned: rows at 16-byte
    offsets (the one 16-byte pad of ``_pitch``) stream 10-17% slower through cp.async on an H200
    (docs/codegen.md, "Aligned copy rows"). The pitch is an odd multiple of 32 bytes, so the 8 rows of
    an ldmatrix fall on 4 distinct 16-byte bank groups (2-way) instead of one (8-way)."""
    c = shape[-1]
    if len(shape) < 2 or shape[-2] == 1 or (c * esize) % 16:
        return c
    row = -(-c * esize // 32) * 32
    return (row + (32 - row) % 64) // esize


def reduce_group(extent: int) -> int:
    """Lanes that cooperate on one output of a reduction over ``extent`` elements."""
    return min(32, _pow2_floor(extent))


def tile_reduce_group(tile: tuple[int, ...], dim: int, threads: int) -> int:
    """Lanes per output of a reduction of ``tile`` over ``dim``. Over the last dim, ``reduce_group``:
    the lanes of a group read consecutive elements. Over another dim (a column sum) the lanes of a
    group read one column down the rows, in one shared-memory bank when the row pitch is a multiple
    of 128 bytes, and consecutive groups take consecutive columns; so no more lanes per output than
    the block's threads need to cover the outputs (one when there are as many outputs as threads:
    a warp reads 32 consecutive columns of a row)."""
    g = reduce_group(tile[dim])
    if dim == len(tile) - 1:
        return g
    outputs = math.prod(tile) // tile[dim]
    return min(g, _pow2_floor(max(1, threads // outputs)))


def lower_graph(kg: KernelGraph, arch: Arch, options: Options = DEFAULT_OPTIONS) -> GraphLowering:
    """All lowering decisions for a concrete μGraph; CodegenError for what cannot be generated.
    Transposes of program inputs that only matmuls read are folded into their loads first
    (``prism.codegen.fold``): the lowering's ``kg`` is the folded graph."""
    kg = fold_transposes(kg)
    try:
        shapes, per_kernel = infer(kg)
    except IRError as e:
        raise CodegenError(f"not a valid concrete μGraph: {e}") from e
    dtypes, dtype, intermediates = _tensor_dtypes(kg, half_operands=options.half_operands)
    for name, shp in shapes.items():
        if math.prod(shp) > MAX_ELEMS:
            raise CodegenError(f"{kg.program}: tensor {name}{list(shp)} has more than 2^31-1 elements")
    scalars = {t.name: t.shape for t in kg.true_inputs}  # (a mean divides by the program's extent)
    mem = memory_shapes(kg, shapes)
    settled = settled_tensors(kg)
    chunks: dict[str, int] = {}  # ``tails.saved_chunks`` of the kernels lowered so far
    lowered: list[KernelLowering | None] = []
    for idx, (k, ks) in enumerate(zip(kg.kernels, per_kernel, strict=True)):
        if isinstance(k, CustomKernel):
            assert ks is not None
            draft = functools.partial(_Draft, kg, idx, k, ks, shapes, dtypes, dtype, scalars, settled, arch, options,
                                      mem=mem, chunks=dict(chunks))
            low = _lower_kernel(draft, _warps_to_try(k, ks, settled, options),
                                _pair_smem(k, arch) if options.paired_blocks else 0)
            lowered.append(low)
            if low.tails is not None:
                chunks |= saved_chunks(kg, k.ops, ks.tiles, shapes, low.tails)
        else:
            _check_padded_operands(kg, k, shapes)
            lowered.append(None)
    return GraphLowering(kg, arch, tuple(lowered), shapes, dtypes, tuple(intermediates))


def _check_padded_operands(kg: KernelGraph, k: PredefinedKernel, shapes: Mapping[str, tuple[int, ...]]) -> None:
    """A predefined kernel would compute a padded tail's garbage into its results: refused."""
    if kg.tail is not None and any(kg.tail.padded in shapes[t] for t in (*k.inputs, k.output)):
        raise CodegenError(f"{kg.program}: predefined kernel {k.name!r} reads or writes the padded tail "
                           f"({kg.tail.valid} of {kg.tail.padded})")


# Warps per block: 4, or 8 where the accumulators of 4 warps would exceed MAX_ACC_REGS per thread (a
# 128x128 matmul tile with a row reduction beside it: issue 14's large prefill tiles) or their mma
# fragments FRAG_REGS. Options.warps fixes it.
WARPS = (4, 8)


class _AccumulatorLimit(CodegenError):
    """More accumulator registers per thread than MAX_ACC_REGS with the draft's warps."""


# A row kernel (``_row_warps``) gets a thread per run of this many halves of its largest loaded tile
# (one 16-byte load each), between 4 and ROW_MAX_WARPS warps.
ROW_RUN = 8
ROW_MAX_WARPS = 16


def _reduces(op: BlockOp) -> bool:
    """``op`` reduces a dim: a ReduceOp, or an accumulator over a dim."""
    return isinstance(op, ReduceOp) or (isinstance(op, Accum) and op.reduce_dim is not None)


def _row_warps(k: CustomKernel, ks: KernelShapes, settled: set[str]) -> int | None:
    """Warps of a latency-bound row kernel: no main loop, no matmul, every Load a settled tensor
    (``settled_tensors``: a split kernel's combine reads partials and shares its split kernel's
    launch, so it keeps ``WARPS``).
    A thread per run of ``ROW_RUN`` elements of the largest loaded tile (rounded up: a 3,584-wide row
    gets 14 warps, each thread one run), 4 to ``ROW_MAX_WARPS`` warps, and where the kernel reduces
    several rows, at most one warp per row (beyond that each row's block-wide reduction runs in turn).
    Fitted to the H200 A/B of 2026-12-02 (docs/codegen.md, "Warps of row kernels"): 16 warps made
    4096-wide norms 5-6% faster, and slowed 1024-wide softmax rows (the rule keeps those at 4); counts
    that are not powers of two: "Row kernels of widths that are not powers of two". None: not a row
    kernel."""
    if k.loop != 1 or any(isinstance(op, MatmulOp) for op in k.ops):
        return None
    loads = [(i, op.tensor) for i, op in enumerate(k.ops) if isinstance(op, Load)]
    if not loads or any(tensor not in settled for _, tensor in loads):
        return None
    elems = max(math.prod(ks.tiles[i] or (1,)) for i, _ in loads)
    warps = min(ROW_MAX_WARPS, max(WARPS[0], -(-elems // (ROW_RUN * 32))))
    rows = [math.prod(ks.tiles[i] or (1,)) for i, op in enumerate(k.ops) if _reduces(op)]
    if rows and max(rows) > 1:
        warps = min(warps, max(WARPS[0], max(rows)))
    return warps


def _warps_to_try(k: CustomKernel, ks: KernelShapes, settled: set[str], options: Options) -> tuple[int, ...]:
    """``Options.warps`` when set; else a row kernel's own count first (``Options.row_warps``), then ``WARPS``."""
    if options.warps:
        return (options.warps,)
    row = _row_warps(k, ks, settled) if options.row_warps else None
    return tuple(dict.fromkeys((row, *WARPS) if row is not None else WARPS))


# mma fragment registers per thread above which a kernel takes the next warp count: on the H200 a
# 128x128 or 64x256 tile at 4 warps (128 fragment registers) used 255 registers and spilled; at 8
# warps it ran 1.3-1.6x faster, and a 64x128 tile (64 at 4 warps) was 1.2x slower at 8 (docs/codegen.md,
# "Generated GEMMs against the mma.sync ceiling"). With warp tiles the same held: 128x128 50.1 µs at 8
# warps against 55.6 at 4, 64x128 49.7 at 4 against 57.6 at 8 ("Warp tiles").
FRAG_REGS = 64


def _frag_regs(low: KernelLowering) -> int:
    return sum(a.regs for a in low.accs.values() if a.kind is AccKind.FRAG)


# ... but where two blocks of 4 warps can share an SM (``_pair_smem``), fragments of up to this many
# registers (and at most PAIRED_OTHER_REGS of other accumulators) keep 4 warps: a 128x128 tile runs
# 64x64 warp tiles (a third fewer shared-memory bytes per mma than 64x32) and the SM still has 8
# warps. On an H100 a 1024x4096x4096 GEMM's 128x128 tile (256 blocks) took 89.4 µs (k-tile 64) and
# 86.2 (k-tile 32) at 4 warps, 99.0 at 8, and no 8-warp tile beat 92.2 (docs/codegen.md, "Two
# blocks of 4 warps an SM").
FRAG_REGS_PAIRED = 2 * FRAG_REGS
PAIRED_OTHER_REGS = 8


def _pair_smem(k: CustomKernel, arch: Arch) -> int:
    """Shared memory two blocks of ``k`` may take together to share an SM: ``arch.smem_max`` (one
    block's opt-in limit, about an SM's) where the grid has more blocks than ``arch`` has SMs, else 0."""
    return arch.smem_max if math.prod(int(s) for s in k.grid) > arch.sms else 0


def _pairs(low: KernelLowering, pair_smem: int) -> bool:
    """Fragments within ``FRAG_REGS_PAIRED`` and other accumulators within ``PAIRED_OTHER_REGS`` (the
    registers a 128x128 tile leaves at 4 warps), where two blocks fit ``pair_smem``."""
    regs = _frag_regs(low)
    other = sum(a.regs for a in low.accs.values()) - regs
    return regs <= FRAG_REGS_PAIRED and other <= PAIRED_OTHER_REGS and 2 * low.smem_bytes <= pair_smem


def _lower_kernel(draft: Callable[..., _Draft], counts: tuple[int, ...], pair_smem: int = 0) -> KernelLowering:
    """The kernel lowered by ``PASSES`` with the first of ``counts`` (warps) whose accumulators fit,
    its mma fragments in ``FRAG_REGS`` registers per thread (or, counted as two blocks an SM, within
    ``_pairs``) but with the last count (the last count's error is the kernel's, unless an
    earlier count lowered with more fragment registers)."""
    *first, last = counts
    fallback: KernelLowering | None = None
    for warps in first:
        try:
            low = _passes(draft(warps=warps))
        except _AccumulatorLimit:
            continue
        if _frag_regs(low) <= FRAG_REGS:
            return low
        if _pairs(low, pair_smem):
            return replace(low, per_sm=2)
        fallback = fallback or low
    try:
        return _passes(draft(warps=last))
    except CodegenError:
        if fallback is None:
            raise
        return fallback


def _passes(d: _Draft) -> KernelLowering:
    for step in PASSES:
        step(d)
    return _freeze(d)


def _matmul_operands_only(kg: KernelGraph) -> set[str]:
    """The tensors that generated kernels load only as matmul operands (every user of every Load of
    them is a MatmulOp)."""
    only: dict[str, bool] = {}
    for k in kg.kernels:
        if not isinstance(k, CustomKernel):
            continue
        for i, op in enumerate(k.ops):
            if isinstance(op, Load):
                users = [u for u in k.ops if i in op_args(u)]
                only[op.tensor] = only.get(op.tensor, True) and bool(users) and all(
                    isinstance(u, MatmulOp) for u in users)
    return {name for name, ok in only.items() if ok}


def _tensor_dtypes(kg: KernelGraph, *, half_operands: bool = False) -> tuple[dict[str, str], str, list[str]]:
    """Every tensor's dtype, the one dtype of the program (the half dtype of the kernels' helpers:
    float16 for a float32 program), the intermediate tensors. Tensor-core code needs a half dtype; a
    generated kernel without a matmul reads and writes float32 tensors as it does its float32
    intermediates, and a plan of predefined kernels runs in any one dtype (PyTorch ops). With
    ``half_operands`` (``Options.half_operands``) an intermediate read only as matmul operands is in
    the half dtype."""
    dtypes: dict[str, str] = {t.name: t.dtype for t in (*kg.inputs, *kg.outputs)}
    half = set(dtypes.values())
    mma = any(isinstance(op, MatmulOp) for k in kg.kernels if isinstance(k, CustomKernel) for op in k.ops)
    allowed = HALF_DTYPES if mma else (*HALF_DTYPES, "float32")
    if half - set(allowed) or len(half) > 1:
        what = "tensor-core code" if mma else "a plan"
        raise CodegenError(f"{kg.program}: {what} needs all inputs and outputs in one of {allowed}; "
                           f"got {sorted(half)}")
    dtype = next(iter(half & set(HALF_DTYPES)), "float16")  # (one dtype at most by now)
    own = next(iter(half), dtype)  # the program's dtype: float32 for a float32 program
    outputs = {t.name for t in kg.outputs}
    generated_reads = {n for k in kg.kernels if isinstance(k, CustomKernel) for n in (ld.tensor for ld in k.loads)}
    if half_operands:
        generated_reads -= _matmul_operands_only(kg)
    intermediates = []
    for k in kg.kernels:
        written = [s.tensor for s in k.saves] if isinstance(k, CustomKernel) else [k.output]
        for name in written:
            if name not in outputs:
                # generated kernels hand on float32 to generated kernels; a tensor only predefined ops read (a
                # vendor GEMM's operand) is written in the program's dtype, as PyTorch writes it: no cast
                # before each GEMM that reads it (measured: docs/capture.md, "Half intermediates")
                wide = isinstance(k, CustomKernel) and name in generated_reads
                dtypes[name] = INTERMEDIATE_DTYPE if wide else own
                intermediates.append(name)
    return dtypes, dtype, intermediates


@dataclass
class _Draft:
    """One kernel's lowering under construction: the inputs, then what each pass decides."""

    kg: KernelGraph
    index: int
    k: CustomKernel
    ks: KernelShapes
    shapes: Mapping[str, tuple[int, ...]]
    dtypes: Mapping[str, str]
    dtype: str
    scalars: Mapping[str, tuple[int, ...]]
    settled: set[str]  # ``settled_tensors``: what a row kernel may read and a direct Load read in place
    arch: Arch
    options: Options
    grid: tuple[int, ...] = ()
    loop: int = 1
    warps: int = 4
    phases: list[Phase] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)
    mmas: dict[int, MmaPlan] = field(default_factory=dict)
    accs: dict[int, AccPlan] = field(default_factory=dict)
    groups: dict[int, int] = field(default_factory=dict)
    bufs: dict[int, Buf] = field(default_factory=dict)
    operands: dict[int, Buf] = field(default_factory=dict)
    stages: int = 1
    prefetch: int = 1
    smem_bytes: int = 0
    ring_bytes: int = 0
    loads: tuple[LoadPlan, ...] = ()
    saves: dict[int, SavePlan] = field(default_factory=dict)
    elementwise: dict[int, Sweep] = field(default_factory=dict)
    skewed: tuple[int, ...] = ()
    unroll: int = 1
    mem: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # extents in memory (``tails.memory_shapes``)
    chunks: Mapping[str, int] = field(default_factory=dict)  # ``tails.saved_chunks`` of the kernels before
    tails: TailPlan | None = None
    arrivals: tuple[Arrival, ...] = ()

    @property
    def ops(self) -> tuple[BlockOp, ...]:
        return self.k.ops

    @property
    def tiles(self) -> tuple[tuple[int, ...] | None, ...]:
        return self.ks.tiles

    @property
    def threads(self) -> int:
        return self.warps * 32

    def tile(self, i: int) -> tuple[int, ...]:
        t = self.ks.tiles[i]
        assert t is not None
        return t

    def users(self, i: int) -> list[int]:
        return [j for j, op in enumerate(self.ops) if i in op_args(op)]

    def mm_operands(self) -> set[int]:
        return {a for op in self.ops if isinstance(op, MatmulOp) for a in (op.a, op.b)}

    def fail(self, msg: str, op: int | None = None) -> CodegenError:
        where = f"{self.kg.program}: kernel {self.k.name!r}" + (f", op {op}" if op is not None else "")
        return CodegenError(f"{where}: {msg}")


def _launch(d: _Draft) -> None:
    """Grid, loop and warps within the limits; the options valid."""
    d.grid = tuple(int(g) for g in d.k.grid)
    d.loop = int(d.k.loop)
    for p, g in enumerate(d.grid):
        if g > MAX_GRID[p]:
            raise d.fail(f"grid dim {'xyz'[p]} = {g} exceeds the CUDA limit {MAX_GRID[p]}")
    d.warps = d.options.warps or d.warps
    if any(isinstance(op, MatmulOp) for op in d.k.ops) and d.warps not in (1, 2, 4, 8, 16):
        raise d.fail(f"warps = {d.warps}; a kernel with a matmul takes 1, 2, 4, 8 or 16")
    if not 1 <= d.warps <= ROW_MAX_WARPS:
        raise d.fail(f"warps = {d.warps}; use 1 to {ROW_MAX_WARPS}")
    if d.options.l2_prefetch not in (0, 64, 128, 256):
        raise d.fail(f"l2_prefetch = {d.options.l2_prefetch}; use 0, 64, 128 or 256")
    if d.options.rotate < 0:
        raise d.fail(f"rotate = {d.options.rotate}; use 0 (none) or a number of phases")


def _hoist(d: _Draft) -> None:
    """Phases: loop-phase values that depend only on loop-invariant loads are hoisted (PRE)."""
    for i, op in enumerate(d.ops):
        ph = Phase(d.ks.phases[i])
        if ph is Phase.LOOP:
            if isinstance(op, Load):
                ph = Phase.PRE if op.fmap is None else Phase.LOOP
            else:
                ph = Phase.PRE if all(d.phases[a] is Phase.PRE for a in op_args(op)) else Phase.LOOP
        d.phases.append(ph)


def _row_shift(acc: Accum, tiles: tuple[tuple[int, ...] | None, ...]) -> bool:
    """A rescaled accumulator whose shift is one value per row of the accumulated tile."""
    if acc.rescale is None or acc.fn is not Reduce.SUM:
        return False
    tx, tc = tiles[acc.x], tiles[acc.rescale]
    return tx is not None and tc is not None and len(tc) == len(tx) and tc[-1] == 1


def _matmul_store(d: _Draft, i: int) -> Store:
    if d.phases[i] is Phase.POST:
        raise d.fail("a matmul after the for-loop (on accumulated values) is not supported", i)
    u = d.users(i)
    user = d.ops[u[0]] if len(u) == 1 else None
    # one iteration: a max or rescaled accumulator is its value (a plain one, in fragments);
    # a row-wise rescaled one updates the fragments in registers
    frag = isinstance(user, Accum) and user.reduce_dim is None and user.x == i and (
        user.plain or d.loop == 1 or _row_shift(user, d.tiles))
    return Store.FRAG if frag else Store.F32


def _stores(d: _Draft) -> None:
    """Where each value lives (``Store``); a matmul accumulated in fragments runs every iteration."""
    operands = d.mm_operands()
    for i, op in enumerate(d.ops):
        tile = d.tiles[i]
        if tile is not None and len(tile) > 3:
            raise d.fail(f"tile {list(tile)} has rank {len(tile)}; at most 3 is supported", i)
        match op:
            case Load(tensor=t):
                if len(d.shapes[t]) > 3:
                    raise d.fail(f"loads a rank-{len(d.shapes[t])} tensor; at most 3 is supported", i)
                d.stores.append(Store.LOAD)
            case MatmulOp():
                d.stores.append(_matmul_store(d, i))
            case ReduceOp():
                d.stores.append(Store.F32)
            case UnaryOp() | BinaryOp():
                d.stores.append(Store.H16 if i in operands else Store.INLINE)
            case Accum():
                d.stores.append(Store.INLINE if _is_its_value(d, i, op) else Store.ACC)
            case Save():
                d.stores.append(Store.SAVE)
    for i, st in enumerate(d.stores):
        if st is Store.FRAG and d.phases[i] is Phase.PRE:
            d.phases[i] = Phase.LOOP


def _is_its_value(d: _Draft, i: int, op: Accum) -> bool:
    """A for-loop of one iteration: an element-wise accumulator (any fn, rescaled or not) holds its
    one value, so it is read in place (inline) instead of going through registers and a tile.
    Fragments of a matmul keep their accumulator (the fragments are its storage). With
    ``Options.inline_special`` off, so do kernels that reduce and run a special function (exp, ...)
    over tiles as large as the accumulator (the softmax family; docs/codegen.md, "One-iteration
    accumulators" and "Approximate division and square root")."""
    if not (d.options.inline_accums and d.loop == 1 and op.reduce_dim is None and d.stores[op.x] is not Store.FRAG):
        return False
    if d.options.inline_special:
        return True
    reduces = any(_reduces(o) for o in d.ops)
    size = math.prod(d.tile(i))
    special = any(isinstance(o, UnaryOp) and o.fn.transcendental and math.prod(d.tile(j)) >= size
                  for j, o in enumerate(d.ops))
    return not (reduces and special)


# Matmul output tiles are multiples of two mma n-tiles, or of one with ``Options.narrow_mma``. Width 8
# (one n8 tile) was refused after one such kernel faulted on the H200 with the generator before acd599a
# although its IR and source were right (the emulator runs it correctly); cause not found
# (docs/width8-fault.md).
MMA_WIDTH = 16
MMA_N = 8  # one mma n-tile: the narrowest output tile any option allows


def mma_width(options: Options) -> int:
    """The output widths a matmul tile must be a multiple of under ``options``."""
    return MMA_N if options.narrow_mma else MMA_WIDTH


def _check_matmul(d: _Draft, i: int, ta: tuple[int, ...], tb: tuple[int, ...], to: tuple[int, ...]) -> None:
    if len(to) not in (2, 3):
        raise d.fail(f"matmul of rank {len(to)}; 2-D and batched 3-D are supported", i)
    if ta[-1] % 16:
        raise d.fail(f"matmul contraction length {ta[-1]} is not a multiple of 16 (mma k-step)", i)
    if tb[-1] % (width := mma_width(d.options)):
        tiles = "one mma n-tile" if width == MMA_N else "two mma n-tiles"
        raise d.fail(f"matmul output width {tb[-1]} is not a multiple of {width} ({tiles})", i)


def _split_mma(d: _Draft, i: int, op: MatmulOp) -> MmaPlan:
    ta, tb, to = d.tile(op.a), d.tile(op.b), d.tile(i)
    _check_matmul(d, i, ta, tb, to)
    m, kk, n = ta[-2], ta[-1], tb[-1]
    batch = to[0] if len(to) == 3 else 1
    mtiles, npairs, ksteps = -(-m // 16), -(-n // 16), kk // 16
    units = batch * mtiles * npairs
    if units >= d.warps:
        ksplit, per_warp = 1, -(-units // d.warps)
    else:
        ksplit, per_warp = _k_parts(d.warps // units, ksteps, d.options.ragged_kparts), 1
    if per_warp * 8 > MAX_ACC_REGS:
        raise _AccumulatorLimit(d.fail(f"matmul tile {list(to)} needs {per_warp * 8} accumulator registers per "
                                       f"thread with {d.warps} warps (at most {MAX_ACC_REGS}); use a smaller tile", i))
    a_b = len(ta) == 3 and ta[0] > 1
    b_b = len(tb) == 3 and tb[0] > 1
    wm, wn = _warp_grid(mtiles, npairs, d.warps) if d.options.warp_tiles and batch == 1 and per_warp > 1 else (0, 0)
    if wn and _k_split_tiles(d, units, ksteps) and (half := _warp_grid(mtiles, npairs, d.warps // 2))[1]:
        (wm, wn), ksplit, per_warp = half, 2, units // (d.warps // 2)
    return MmaPlan(op.a, op.b, batch, m, n, kk, int(a_b), int(b_b), mtiles, npairs, ksplit, per_warp,
                   -(-ksteps // ksplit), wm, wn, prefetch=wn > 0 and ksteps // ksplit > 1 and d.options.frag_prefetch)


def _k_parts(spare: int, ksteps: int, ragged: bool) -> int:
    """The k parts of a matmul with ``spare`` warps for each unit: the largest power of two (at most
    ``spare``) that divides the k-steps; with ``ragged`` (``Options.ragged_kparts``) the one that leaves
    a warp the fewest k-steps, the smallest such, the last part shorter (``MmaPlan.ragged``: 9 k-steps
    over 2 parts run 5 and 4 where the even rule left two of four warps idle; docs/codegen.md,
    "Ragged k parts")."""
    parts = [1 << e for e in range(_pow2_floor(spare).bit_length())]
    if not ragged:
        return max(p for p in parts if ksteps % p == 0)
    return min(parts, key=lambda p: (-(-ksteps // p), p))


def _k_split_tiles(d: _Draft, units: int, ksteps: int) -> bool:
    """``Options.warp_ksplit``: a kernel at more than ``WARPS[0]`` warps (its fragments did not fit 4)
    runs the warp tiles of a grid over half its warps, two warps a tile, each half the k-steps; when
    those tiles divide the units and their accumulators fit ``MAX_ACC_REGS``."""
    half = d.warps // 2
    return (d.options.warp_ksplit and d.warps > WARPS[0] and ksteps % 2 == 0 and units % half == 0
            and units // half * 8 <= MAX_ACC_REGS)


def _warp_grid(mtiles: int, npairs: int, warps: int) -> tuple[int, int]:
    """The wm x wn grid of warps over a matmul's units (wm | mtiles, wn | npairs) whose warp tiles
    need the fewest ldmatrix per k-step (rows + column pairs of a tile; ties: the squarer tile);
    (0, 0) when no grid divides the units."""
    grids = [(wm, warps // wm) for wm in range(1, warps + 1)
             if warps % wm == 0 and mtiles % wm == 0 and npairs % (warps // wm) == 0]
    if not grids:
        return 0, 0
    return min(grids, key=lambda g: (mtiles // g[0] + npairs // g[1], abs(mtiles // g[0] - npairs // g[1])))


def _mmas(d: _Draft) -> None:
    """Matmul work split over warps (units, k-split)."""
    for i, op in enumerate(d.ops):
        if isinstance(op, MatmulOp):
            d.mmas[i] = _split_mma(d, i, op)


def _acc_plan(d: _Draft, i: int, op: Accum) -> AccPlan:
    acc = Accum(op.x, op.reduce_dim) if d.loop == 1 else op  # one iteration: each holds its one value
    to = d.tile(i)
    if d.stores[op.x] is Store.FRAG:
        return AccPlan(AccKind.FRAG, op.x, d.mmas[op.x].per_warp, rescale=acc.rescale)
    if op.reduce_dim is None:
        return AccPlan(AccKind.EW, op.x, -(-math.prod(to) // d.threads), fn=acc.fn, rescale=acc.rescale)
    g = tile_reduce_group(d.tile(op.x), op.reduce_dim, d.threads)
    if (math.prod(to) == 1 and op.fn is Reduce.SUM and block_wide(d.tile(op.x), op.reduce_dim, d.warps)
            and not d.mmas):  # (beside a matmul's main loop the other warps are busy: not measured there)
        g = d.threads  # one output a block: every thread walks the row (one warp would, the rest idle)
    return AccPlan(AccKind.RED, op.x, -(-math.prod(to) // outputs_per_pass(g, d.warps)), g, rescale=acc.rescale)


def _accs(d: _Draft) -> None:
    """Accumulator registers and reduction lane groups; the register budget."""
    for i, op in enumerate(d.ops):
        if isinstance(op, Accum) and d.stores[i] is Store.ACC:
            d.accs[i] = _acc_plan(d, i, op)
        elif isinstance(op, ReduceOp):
            d.groups[i] = tile_reduce_group(d.tile(op.x), op.dim, d.threads)
    regs = sum(a.regs for a in d.accs.values())
    if regs > MAX_ACC_REGS:
        raise _AccumulatorLimit(d.fail(f"accumulators need {regs} registers per thread with {d.warps} warps "
                                       f"(at most {MAX_ACC_REGS}); use smaller tiles"))


def _value_buf(d: _Draft, i: int, op: BlockOp, uniq: Callable[[str], str]) -> Buf | None:
    """The shared-memory tile that holds value ``i`` (None: registers or inline)."""
    tile, region = d.tile(i) if not isinstance(op, Save) else (), d.phases[i]
    match op:
        case Load(tensor=t):
            st = Storage.HALF if d.dtypes[t] in HALF_DTYPES else Storage.F32
            name, ring, tr = uniq(f"s_{c_ident(t)}"), op.fmap is not None, op.transposed
            if _direct(d, i, op):
                return Buf(name, region, st, tile, tile[-1], direct=True, gstrides=global_strides(d.mem[t]),
                           l2=d.loop > 1 and t not in d.settled)
            stored = _transposed_tile(d, i, st, tile) if tr else tile
            if st is Storage.HALF and _mm_operand(d, i) and swizzles(stored, st.esize):
                return Buf(name, region, st, stored, stored[-1], ring=ring, swizzle=True, transposed=tr)
            return Buf(name, region, st, stored, _copy_pitch(stored, st.esize), ring=ring, transposed=tr)
        case MatmulOp() if d.stores[i] is Store.F32:
            return Buf(uniq(f"mm{i}"), region, Storage.F32, tile, _pitch(tile, 4), copies=d.mmas[i].ksplit)
        case ReduceOp():
            return Buf(uniq(f"red{i}"), region, Storage.F32, tile, _pitch(tile, 4))
        case UnaryOp() | BinaryOp() if d.stores[i] is Store.H16:
            return Buf(uniq(f"ew{i}"), region, Storage.HALF, tile, _pitch(tile, 2))
        case Accum() if d.stores[i] is Store.ACC:
            copies = d.mmas[op.x].ksplit if d.stores[op.x] is Store.FRAG else 1
            return Buf(uniq(f"acc{i}"), Phase.POST, Storage.F32, tile, _pitch(tile, 4), copies=copies)
    return None


def _transposed_tile(d: _Draft, i: int, st: Storage, tile: tuple[int, ...]) -> tuple[int, ...]:
    """The tile of a transposed load as the tensor lays it out (``Buf.transposed``): its last two dims
    swapped; only 2-D or 3-D half tiles that matmuls read as B, or expressions (``fold.read_in_place``)."""
    if st is not Storage.HALF or len(tile) not in (2, 3):
        raise d.fail(f"a transposed load of a {st.value} tile {list(tile)}: only 2-D or 3-D half tiles", i)
    if not read_in_place(d.ops, i):
        raise d.fail("a transposed load is read only as a matmul's B operand or by expressions", i)
    return (*tile[:-2], tile[-1], tile[-2])


def settled_tensors(kg: KernelGraph) -> set[str]:
    """Tensors no generated kernel writes: the program's inputs and the outputs of predefined kernels
    (a vendor GEMM's, written by an earlier launch). A generated kernel's output may be read by a
    combine fused into the same launch (``fuse``), which must read it past L1 and share its block."""
    return {t.name for t in kg.inputs} | {k.output for k in kg.kernels if isinstance(k, PredefinedKernel)}


def _direct(d: _Draft, i: int, op: Load) -> bool:
    """``Options.direct_loads``: a Load of a settled tensor (``settled_tensors``) in a kernel without a
    main loop, which no matmul reads (ldmatrix needs shared memory), is read in place in global
    memory. ``DirectLoads.ELEMENTWISE``: only in kernels that neither reduce nor multiply matrices;
    ``ROWS``: also those whose reductions are all held block-wide rows (``_held_rows``) or all rows
    a warp each (``_warp_rows``). In a loop kernel: ``_streamed``."""
    if d.loop > 1:
        return _streamed(d, op)
    match d.options.direct_loads:
        case DirectLoads.NEVER:
            return False
        case DirectLoads.ELEMENTWISE:
            if any(isinstance(o, MatmulOp) or _reduces(o) for o in d.ops):
                return False
        case DirectLoads.ROWS:
            if any(isinstance(o, MatmulOp) for o in d.ops) or not (_held_rows(d) or _warp_rows(d)):
                return False
        case DirectLoads.ALWAYS:
            pass
        case unreachable:
            assert_never(unreachable)
    return d.loop == 1 and not op.transposed and op.tensor in d.settled and not _mm_operand(d, i)


def _held_rows(d: _Draft) -> bool:
    """No reduction, or each one walked by the whole block for its one output and held in every
    thread's registers (``lowered.held_value``); a row per block, 16-byte runs a thread."""
    return all(held_value(j, o, d.phases[j], d.tile, d.warps, d.accs.get(j))
               for j, o in enumerate(d.ops) if _reduces(o))


def _warp_rows(d: _Draft) -> bool:
    """Every reduction a row per warp, kept in its lanes' registers, and every Save of the same rows
    (``lowered.warp_rows``): nothing is shared between warps, so the rows are read in place."""
    return bool(warp_rows(d.ops, d.stores, d.tile, d.warps, d.groups, d.loop, d.tails, d.accs))


def _streamed(d: _Draft, op: Load) -> bool:
    """``Options.direct_loops``: a loop-varying Load in a kernel without matmuls whose loop writes no
    shared tile (its accumulators are registers: element-wise or lane partials; a split kernel's
    combine) is read in place, each thread its own elements of every iteration, so the loop holds no
    copy, wait or barrier. A tensor another kernel writes (perhaps this launch's split blocks) is read
    past L1 (``Buf.l2``). ``Options.partials_in_place``: the same in a kernel whose loop-varying Loads
    all read such tensors (a combine of partials)."""
    if op.fmap is None or op.transposed or not (d.options.direct_loops or (d.options.partials_in_place
                                                                          and _reads_partials_only(d))):
        return False
    return not any(isinstance(o, MatmulOp) or (isinstance(o, ReduceOp) and d.phases[j] is Phase.LOOP)
                   for j, o in enumerate(d.ops))


def _reads_partials_only(d: _Draft) -> bool:
    """Every loop-varying Load reads a tensor another kernel of the plan writes (a combine's partials)."""
    return all(o.tensor not in d.settled for o in d.ops if isinstance(o, Load) and o.fmap is not None)


def _mm_operand(d: _Draft, i: int) -> bool:
    """Value ``i`` is read by ldmatrix (an A or B operand of a matmul). Its other readers are
    expressions (``Exprs.buf_read``), which index a swizzled tile through the same permutation."""
    return any(isinstance(d.ops[j], MatmulOp) for j in d.users(i))


def _operand_buf(d: _Draft, i: int, op: BlockOp, uniq: Callable[[str], str]) -> Buf:
    """The half tile a matmul reads for value ``i`` (its own tile when that is one)."""
    own = d.bufs.get(i)
    if own is not None and own.dtype is Storage.HALF and isinstance(op, Load | UnaryOp | BinaryOp):
        return own
    base = f"h_{c_ident(op.tensor)}" if isinstance(op, Load) else f"h{i}"
    tile = d.tile(i)
    return Buf(uniq(base), d.phases[i], Storage.HALF, tile, _pitch(tile, 2))


def _buffers(d: _Draft) -> None:
    """Shared-memory tiles of materialised values and of matmul operands (not yet placed)."""
    names: set[str] = set()

    def uniq(base: str) -> str:
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.add(name)
        return name

    operands = d.mm_operands()
    for i, op in enumerate(d.ops):
        if (b := _value_buf(d, i, op, uniq)) is not None:
            d.bufs[i] = b
        if i in operands:
            d.operands[i] = _operand_buf(d, i, op, uniq)
    for i, p in d.mmas.items():
        for a, role in ((p.a, "A"), (p.b, "B")):
            if len(d.operands[a].shape) < 2:
                raise d.fail(f"matmul operand {role} has rank {len(d.operands[a].shape)}", i)


def _dedup(bs: list[Buf]) -> list[Buf]:
    seen: dict[str, Buf] = {}
    for b in bs:
        seen.setdefault(b.name, b)
    return list(seen.values())


def _live(d: _Draft, region: Phase, ring: bool = False) -> list[Buf]:
    """The distinct shared-memory tiles of a region (POST: value tiles only); ring tiles apart from the rest."""
    both = (*d.bufs.values(), *d.operands.values()) if region is not Phase.POST else tuple(d.bufs.values())
    return _dedup([b for b in both if b.region is region and b.ring == ring and not b.direct])


def _stages(d: _Draft) -> None:
    """Pipeline depth (within the shared memory of the architecture) and the prefetch distance."""
    d.ring_bytes = sum(b.nbytes for b in d.bufs.values() if b.ring)
    fixed = sum(b.nbytes for b in (*_live(d, Phase.PRE), *_live(d, Phase.LOOP)))
    post = sum(b.nbytes for b in _live(d, Phase.POST))
    opt, loop = d.options, d.loop
    if loop == 1 or d.ring_bytes == 0:
        d.stages = 1
    elif opt.stages is not None:
        if opt.stages < 2:
            raise d.fail(f"stages = {opt.stages}: a for-loop of {loop} iterations needs at least 2")
        d.stages = min(opt.stages, loop)
    else:
        least = opt.gemm_stages if _gemm_tiles(d) else 2
        d.stages = max(2, min(MAX_STAGES, loop, max(least, opt.stage_target // max(d.ring_bytes, 1))))
        while d.stages > 2 and fixed + d.stages * d.ring_bytes > d.arch.smem_max:
            d.stages -= 1
    if d.stages > MAX_STAGES:
        raise d.fail(f"stages = {d.stages}; at most {MAX_STAGES}")
    # a ring as deep as the loop is filled in the prologue; else one slot is refilled per iteration
    d.prefetch = loop if d.stages >= loop else d.stages - 1
    loop_bytes = fixed + d.stages * d.ring_bytes
    d.smem_bytes = loop_bytes + post if reads_loop_tiles_after(d.ops, d.stores) else max(loop_bytes, post)
    if d.smem_bytes > d.arch.smem_max:
        raise d.fail(f"needs {d.smem_bytes} bytes of shared memory ({d.stages} pipeline stages of "
                     f"{d.ring_bytes} B, {fixed} B of other tiles, {post} B after the loop); {d.arch.name} "
                     f"allows {d.arch.smem_max} per block")


def _skewable(d: _Draft, i: int) -> bool:
    """Op ``i`` is a loop op materialised as a matmul operand (its own tile) whose value comes from
    copied tiles alone (this iteration's stage, loop-invariant ones), through inline element-wise ops."""
    op = d.ops[i]
    if not (isinstance(op, UnaryOp | BinaryOp) and d.phases[i] is Phase.LOOP and d.stores[i] is Store.H16
            and i in d.operands and d.operands[i].name == d.bufs[i].name and d.bufs[i].region is Phase.LOOP):
        return False
    todo, seen = list(op_args(op)), set()
    while todo:
        j = todo.pop()
        if j in seen:
            continue
        seen.add(j)
        match d.ops[j]:
            case Load():
                if d.bufs[j].direct:
                    return False
            case UnaryOp() | BinaryOp() as x if d.stores[j] is Store.INLINE:
                todo += op_args(x)
            case _:
                return False
    return True


def _skew(d: _Draft) -> None:
    """``Options.skew_materialise``: the skewable operand tiles (``_skewable``) get a second copy
    (``Buf.parity``) and are computed one iteration ahead (``KernelLowering.skewed``), where the loop
    refills a ring and keeps at least two stages in flight, and the second copies fit."""
    if not d.options.skew_materialise or d.loop < 2 or d.prefetch < 2:
        return
    skewed = tuple(i for i in range(len(d.ops)) if _skewable(d, i))
    extra = sum(d.bufs[i].nbytes for i in skewed)
    if not skewed or d.smem_bytes + extra > d.arch.smem_max:
        return
    d.skewed, d.smem_bytes = skewed, d.smem_bytes + extra
    for i in skewed:
        d.bufs[i] = d.operands[i] = replace(d.bufs[i], ring=True, parity=True)


# The most iterations a loop of ring Loads and element-wise accumulators (a combine) runs between one
# wait and one barrier (``_unroll``).
UNROLL = 8


def _unroll(d: _Draft) -> None:
    """A loop whose ops are ring Loads and element-wise accumulators only, a rescaled one among them (a
    safe split kernel's combine: each iteration a chain of maxima and exponentials behind a wait and a
    barrier) waits for the stages of ``unroll`` iterations at once and runs them behind one barrier
    (``KernelLowering.unroll``): the largest power of two up to ``Options.unroll`` (None: ``UNROLL``)
    that divides the loop and, where the ring is refilled, leaves it at least as many stages in flight
    (``prefetch = stages - unroll``: a chunk's refills never land in a slot the chunk reads). Plain
    sums keep one iteration a wait: their iterations are cheap, and a shallower ring cost them up to
    1.3 µs on an H200 (docs/codegen.md, "Combines in chunks of iterations"); ``Options.unroll`` still
    unrolls them."""
    want = UNROLL if d.options.unroll is None else d.options.unroll
    if want < 1:
        raise d.fail(f"unroll = {want}; use 1 (no unrolling) or more")
    if d.loop == 1 or d.stages == 1 or d.skewed or d.options.late_refill or d.options.shift_first:
        return
    only, rescaled = combine_loop(d.ops, d.phases, d.bufs, d.accs)
    if not (rescaled or (only and d.options.unroll is not None)):
        return
    cap = min(want, d.loop if d.prefetch >= d.loop else d.stages // 2)
    u = max(u for u in (1, 2, 4, 8, 16) if u <= cap and d.loop % u == 0)
    d.unroll = u
    if d.prefetch < d.loop:
        d.prefetch = d.stages - u


def _place(d: _Draft) -> None:
    """Offsets: PRE tiles, LOOP tiles, then the rings; the POST tiles reuse the space from 0 (unless
    a value after the loop still reads the loop's tiles: then they follow them)."""
    placed: dict[str, Buf] = {}
    off = 0
    for b in (*_live(d, Phase.PRE), *_live(d, Phase.LOOP), *_live(d, Phase.LOOP, ring=True)):
        placed[b.name] = replace(b, offset=off, copies=2 if b.parity else d.stages if b.ring else b.copies)
        off += placed[b.name].nbytes
    off = off if reads_loop_tiles_after(d.ops, d.stores) else 0
    for b in d.bufs.values():
        if b.region is Phase.POST:
            placed[b.name] = replace(b, offset=off)
            off += b.nbytes
    d.bufs = {i: placed.get(b.name, b) for i, b in d.bufs.items()}  # a direct Load's tile has no place
    d.operands = {i: placed[b.name] for i, b in d.operands.items()}


def global_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[d + 1:]) for d in range(len(shape)))


def _load_plan(d: _Draft, i: int, op: Load) -> LoadPlan:
    """The copy of a Load's tile. The tile origin and iteration stride follow the maps (dims of the
    loaded view: the transpose's for a transposed load); the vectors run along the stored rows."""
    stored, tile, buf = d.shapes[op.tensor], d.tile(i), d.bufs[i]
    shape, gst = load_shape(stored, op.transposed), load_shape(global_strides(d.mem[op.tensor]), op.transposed)
    terms = []
    for a in range(len(shape)):
        size = shape[a]
        for p, g in enumerate(d.grid):
            if op.imap[p] == a:
                size //= g
                terms.append((p, size * gst[a]))
    iter_stride = tile[op.fmap] * gst[op.fmap] if op.fmap is not None else 0
    if buf.direct:  # rows start aligned to the gcd of the 16-byte base and every element stride
        # (one iteration: no loop is emitted, so no per-iteration pointer; the tile origin serves)
        gstep = iter_stride if d.loop > 1 else 0
        strides = [t for _, t in terms] + list(gst[:-1]) + [gstep]
        buf = d.bufs[i] = replace(buf, galign=math.gcd(16, *(t * buf.esize for t in strides)), gstep=gstep)
    vec = next((v for v in (16 // buf.esize, 8 // buf.esize, 4 // buf.esize)
                if v >= 1 and buf.shape[-1] % v == 0 and d.mem[op.tensor][-1] % v == 0 and buf.pitch % v == 0), 1)
    stepped = d.options.stepped_copies and carry_free(buf.shape, vec, d.threads) and not _gemm_tiles(d)
    return LoadPlan(i, op.tensor, buf, f"load_{buf.name}", tuple(terms), iter_stride, vec,
                    sweep(math.prod(tile) // vec, d.threads), stepped)


# a kernel with a matmul of this many rows a block or more copies item by item (``Options.stepped_copies``):
# its main loop is the tensor cores', and a GEMM's stepped refill ran slower (docs/codegen.md, "Stepped copies")
GEMM_ROWS = 64


def _gemm_tiles(d: _Draft) -> bool:
    return any(mp.m >= GEMM_ROWS for mp in d.mmas.values())


def save_vec(tile: tuple[int, ...], shape: tuple[int, ...], esize: int) -> int:
    return next((v for v in (16 // esize, 8 // esize, 4 // esize, 2 // esize, 1)
                 if v >= 1 and tile[-1] % v == 0 and shape[-1] % v == 0), 1)


def _save_plan(d: _Draft, i: int, op: Save) -> SavePlan:
    tile, shape = d.tile(op.x), d.mem[op.tensor]
    half = d.dtypes[op.tensor] != "float32"
    esize = 2 if half else 4
    vec = save_vec(tile, shape, esize)
    if d.options.short_runs and _elementwise_only(d):  # every thread a run of its own, runs of 4 bytes at least
        while vec * esize > 4 and math.prod(tile) // (vec // 2) <= d.threads:
            vec //= 2
    gst = global_strides(shape)
    terms = tuple((p, tile[a] * gst[a]) for p, a in enumerate(op.omap) if a is not None)
    return SavePlan(i, op.tensor, half, terms, vec, sweep(math.prod(tile) // vec, d.threads))


def _elementwise_only(d: _Draft) -> bool:
    """A loop-free kernel of Loads, element-wise ops, one-iteration element-wise accumulators and Saves
    (``Options.short_runs``)."""
    return d.loop == 1 and all(isinstance(op, Load | UnaryOp | BinaryOp | Save)
                               or (isinstance(op, Accum) and op.reduce_dim is None) for op in d.ops)


def _copies(d: _Draft) -> None:
    """Each Load's cp.async copy, each Save's vector stores, each per-element pass's sweep."""
    d.loads = tuple(_load_plan(d, i, op) for i, op in enumerate(d.ops) if isinstance(op, Load))
    d.saves = {i: _save_plan(d, i, op) for i, op in enumerate(d.ops) if isinstance(op, Save)}
    d.elementwise = {i: sweep(math.prod(t), d.threads) for i, t in enumerate(d.tiles) if t is not None}


def _own_copies(d: _Draft) -> None:
    """``Options.own_copies``: an element-wise sum or max of a copied Load's whole tile takes the
    loader's items (its sweep and vector width), so each thread adds exactly the elements it copied
    (``AccPlan.own``; with every stage copied before the loop, ``KernelLowering.private_loop``)."""
    if not d.options.own_copies or d.loop == 1:
        return
    for i, a, lp in _loader_tiles(d):
        if a.rescale is None:
            _take_items(d, i, replace(a, count=lp.sweep.per * lp.vec, vec=lp.vec, own=True), lp)


def _rescaled_runs(d: _Draft) -> None:
    """``Options.rescaled_runs``: a rescaled element-wise accumulator of a copied Load's whole tile whose
    shift is constant along the tile's last dim (a safe combine: one max per row) takes the loader's
    items, runs of its vector width, and rescales each run with one pair of exponentials (``AccPlan.vec``;
    not ``own``: the shift is copied by other threads, so the loop keeps its barrier). Only where the
    runs still give every thread one: a spread combine's small tiles (128 elements a block) ran
    1-2 µs slower on an H200 with a quarter of the threads adding (docs/codegen.md, "Safe combines")."""
    if not d.options.rescaled_runs or d.options.shift_first or d.loop == 1:
        return
    for i, a, lp in _loader_tiles(d):
        if (a.rescale is not None and lp.vec > 1 and _one_shift_a_run(d, i, a.rescale)
                and math.prod(d.tile(i)) // lp.vec >= d.threads):
            _take_items(d, i, replace(a, count=lp.sweep.per * lp.vec, vec=lp.vec), lp)


def _loader_tiles(d: _Draft) -> list[tuple[int, AccPlan, LoadPlan]]:
    """Element-wise accumulators of a copied (not transposed) Load's whole tile, with that Load's plan."""
    copies = {lp.op: lp for lp in d.loads if not lp.buf.direct and not lp.buf.transposed}
    return [(i, a, copies[a.x]) for i, a in list(d.accs.items())
            if a.kind is AccKind.EW and a.x in copies and d.tile(a.x) == d.tile(i)]


def _take_items(d: _Draft, i: int, new: AccPlan, lp: LoadPlan) -> None:
    """Accumulator ``i`` becomes ``new`` on the loader's sweep, if the registers stay within MAX_ACC_REGS."""
    if sum(b.regs for b in d.accs.values()) - d.accs[i].regs + new.regs <= MAX_ACC_REGS:
        d.accs[i], d.elementwise[i] = new, lp.sweep


def _one_shift_a_run(d: _Draft, i: int, shift: int) -> bool:
    """Accumulator ``i``'s shift is one value along its tile's last dim (extent 1 there)."""
    tile = d.tile(shift)
    return len(tile) == len(d.tile(i)) and tile[-1] == 1


def _tails(d: _Draft) -> None:
    """With a padded tail (``prism.codegen.tails``): the origins of the kernel's values along it (first:
    what it does not support fails before the other passes run)."""
    d.tails = tail_plan(d.kg, d.ops, d.tiles, d.shapes, d.grid, d.loop, f"{d.kg.program}: kernel {d.k.name!r}",
                        chunks=d.chunks)


def _tail_schedule(d: _Draft) -> None:
    """With a padded tail: the schedules that move where a tile starts, or read it in place, refused."""
    if d.tails is None:
        return
    if (min(d.options.rotate, d.loop, math.prod(d.grid)) > 1 or d.skewed or d.options.shift_first
            or any(lp.buf.direct for lp in d.loads if lp.op in d.tails.loads)):
        raise d.fail("a padded tail with a rotated loop, skewed ops, shift maxima first or a tile read in place")


def _arrivals(d: _Draft) -> None:
    """``Options.staged_arrivals``: in a loop of one iteration (no skewed ops, no late refill), ring Loads
    first read by different loop ops are committed as separate groups in the order they are read, each
    waited for just before its first reader (``KernelLowering.arrivals``); a ring Load no loop op reads
    joins the first. One reader for all of them: nothing to stage."""
    ring = [lp.op for lp in d.loads if lp.buf.ring]
    if (not d.options.staged_arrivals or d.loop != 1 or len(ring) < 2 or d.skewed or d.options.late_refill
            or d.options.shift_first):
        return
    first: dict[int, int] = {}
    for i, op in enumerate(d.ops):
        if d.phases[i] is Phase.LOOP or isinstance(op, Accum):
            for j in _ring_reads(d, i, set(ring)):
                first.setdefault(j, i)
    at = sorted(set(first.values()))
    if len(at) < 2:
        return
    groups = {p: [j for j in ring if first.get(j, at[0]) == p] for p in at}
    d.arrivals = tuple(Arrival(tuple(groups[p]), p) for p in at)


def _ring_reads(d: _Draft, i: int, ring: set[int]) -> set[int]:
    """The ring Loads op ``i``'s code reads: its arguments, through values computed inline, and a Load's
    own tile where op ``i`` is a Load materialised as a matmul operand."""
    own = [i] if i in d.operands and d.operands[i] is not d.bufs.get(i) else []
    return inline_reads(d.ops, d.stores, [*op_args(d.ops[i]), *own]) & ring


# The lowering of one kernel, in order; each pass reads what the earlier ones decided.
PASSES: tuple[Callable[[_Draft], None], ...] = (
    _launch, _tails, _hoist, _stores, _mmas, _accs, _buffers, _stages, _skew, _unroll, _place, _copies, _own_copies,
    _rescaled_runs, _tail_schedule, _arrivals,
)


def _freeze(d: _Draft) -> KernelLowering:
    loads = [op.tensor for op in d.ops if isinstance(op, Load)]
    saves = [op.tensor for op in d.ops if isinstance(op, Save)]
    args = tuple(dict.fromkeys([*loads, *saves]))
    return KernelLowering(d.k, d.index, d.grid, d.loop, d.dtype, d.warps, d.stages, d.prefetch, d.tiles,
                          tuple(d.phases), tuple(d.stores), d.bufs, d.operands, d.mmas, d.accs, d.groups,
                          d.smem_bytes, d.mem, d.dtypes, args, d.scalars, d.ring_bytes,
                          d.options.l2_prefetch, d.loads, d.saves, d.elementwise,
                          max(1, min(d.options.rotate, d.loop, math.prod(d.grid))), d.options.late_refill,
                          d.skewed, d.options.shift_first, d.unroll, d.tails, d.arrivals, d.options.stored_runs,
                          d.options.lane_runs, carried_on=d.options.carried_copies and _gemm_tiles(d))


def ident(name: str) -> str:
    """The C identifier of a tensor's pointer parameter: ``t_`` and the mangled name (never a
    keyword, a built-in or a generator local, whatever the tensor is called)."""
    return f"t_{c_ident(name)}"
