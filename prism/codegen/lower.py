"""Lowering decisions for one custom kernel: where every value lives, how work is split, smem layout.

This is the part of code generation that needs no source text: ``resources()`` runs it alone to
answer "do these sizes fit?" cheaply, and ``generate()`` renders its result. Every size or
structure the renderers cannot handle is rejected here with a ``CodegenError``, so the two can
never disagree.

Where values live (``Store``):

* ``LOAD``  a tile brought by ``cp.async`` into shared memory; a ring of ``stages`` copies when it
  changes with the for-loop, one copy when it does not (``fmap`` None: loaded once, "pre" phase).
* ``INLINE`` an elementwise op, recomputed in registers wherever it is read (fused chains).
* ``F32``   a materialised float32 tile in shared memory (a matmul result that is not only
  accumulated, a reduction); ``copies`` > 1 holds per-warp partial sums added when read.
* ``H16``   an elementwise value materialised as a half tile because a matmul reads it.
* ``FRAG``  a matmul whose only use is an ``Accum``: it accumulates in mma register fragments.
* ``ACC``   an accumulator: registers during the loop, a float32 tile after it.

Ops that depend only on loop-invariant loads are hoisted before the loop ("pre" phase).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from prism.codegen.arch import MAX_GRID, Arch
from prism.errors import CodegenError, IRError
from prism.ir import (
    Accum,
    BinaryOp,
    CustomKernel,
    KernelGraph,
    KernelShapes,
    Load,
    MatmulOp,
    ReduceOp,
    Save,
    UnaryOp,
    infer,
    op_args,
)
from prism.names import c_ident
from prism.ops import Reduce

HALF_DTYPES = ("float16", "bfloat16")
INTERMEDIATE_DTYPE = "float32"
MAX_ACC_REGS = 128  # float accumulator registers per thread
MAX_ELEMS = 2**31 - 1
ALIGN = 128  # byte alignment of every shared-memory buffer
MAX_STAGES = 16  # pipeline depth limit (cp.async.wait_group immediates stay small)


class Store(enum.Enum):
    LOAD = "load"
    INLINE = "inline"
    F32 = "f32"
    H16 = "h16"
    FRAG = "frag"
    ACC = "acc"
    SAVE = "save"


@dataclass(frozen=True)
class Options:
    """Knobs of the generator that are not μGraph sizes. None: the built-in heuristic."""

    warps: int | None = None
    stages: int | None = None
    stage_target: int = 96 * 1024  # bytes of loads in flight per block the stage heuristic aims for
    l2_prefetch: int = 0  # L2 prefetch size hint of 16-byte cp.async: 0 (none), 64, 128 or 256 bytes


DEFAULT_OPTIONS = Options()


@dataclass(frozen=True)
class Buf:
    """A tile in shared memory. Row-major; the last dim padded to ``pitch`` against bank conflicts."""

    name: str
    region: str  # "pre" | "loop" | "post"
    dtype: str  # "half" | "f32"
    shape: tuple[int, ...]
    pitch: int
    copies: int = 1
    ring: bool = False  # copies are pipeline stages (else partial sums, added when read)
    offset: int = 0  # bytes from the start of dynamic shared memory

    @property
    def esize(self) -> int:
        return 2 if self.dtype == "half" else 4

    @property
    def strides(self) -> tuple[int, ...]:
        st = [1] * len(self.shape)
        if len(self.shape) >= 2:
            st[-2] = self.pitch
            for d in range(len(self.shape) - 3, -1, -1):
                st[d] = st[d + 1] * self.shape[d + 1]
        return tuple(st)

    @property
    def copy_elems(self) -> int:
        """Elements from one copy to the next (16-byte aligned)."""
        n = self.shape[0] * self.strides[0] if len(self.shape) >= 2 else self.pitch
        q = 16 // self.esize
        return -(-n // q) * q

    @property
    def nbytes(self) -> int:
        return _round(self.copies * self.copy_elems * self.esize)


@dataclass(frozen=True)
class MmaPlan:
    """How the warps of a block split one matmul [batch, m, k] @ [batch, k, n] into mma tiles.

    A unit is (batch, 16-row tile, 16-column pair of n8 tiles); each warp owns ``per_warp`` units
    and a 1/``ksplit`` share of the k-steps (ksplit > 1 only when there are fewer units than warps).
    """

    a: int
    b: int
    batch: int
    m: int
    n: int
    k: int
    a_bstride: int  # elements between batch slabs of A's operand tile (0: broadcast)
    b_bstride: int
    mtiles: int
    npairs: int
    ksplit: int
    per_warp: int
    ksteps: int  # k-steps of 16 per warp

    @property
    def units(self) -> int:
        return self.batch * self.mtiles * self.npairs


@dataclass(frozen=True)
class AccPlan:
    """An accumulator: ``frag`` (mma fragments of a matmul), ``ew`` (one register per element a
    thread owns) or ``red`` (summed over a dim by groups of ``group`` lanes with warp shuffles).
    An ``ew`` accumulator may keep a running max (``fn`` MAX) or be rescaled by the shift
    ``rescale`` (an op index; then a second register per element holds the running max)."""

    kind: str
    x: int
    count: int  # register slots per thread (fragments: units per warp)
    group: int = 1
    fn: Reduce = Reduce.SUM
    rescale: int | None = None

    @property
    def regs(self) -> int:
        if self.kind == "frag":
            return self.count * (10 if self.rescale is not None else 8)
        return self.count * (2 if self.rescale is not None else 1)


@dataclass(frozen=True)
class KernelLowering:
    kernel: CustomKernel
    index: int  # position in the kernel graph
    grid: tuple[int, ...]
    loop: int
    dtype: str  # the half dtype of matmul operands: float16 | bfloat16
    warps: int
    stages: int
    prefetch: int
    tiles: tuple[tuple[int, ...] | None, ...]
    phases: tuple[str, ...]  # pre | loop | post | save
    stores: tuple[Store, ...]
    bufs: Mapping[int, Buf]  # primary storage of materialised values
    operands: Mapping[int, Buf]  # half tiles read by matmuls
    mmas: Mapping[int, MmaPlan]
    accs: Mapping[int, AccPlan]
    groups: Mapping[int, int]  # lanes per output of each ReduceOp
    smem_bytes: int
    tensor_shapes: Mapping[str, tuple[int, ...]]
    tensor_dtypes: Mapping[str, str]
    args: tuple[str, ...]  # tensors of the kernel's parameters: loads first, then saves
    scalars: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    ring_bytes: int = 0  # bytes of loop-varying tiles per pipeline stage
    l2_prefetch: int = 0

    @property
    def threads(self) -> int:
        return self.warps * 32

    @property
    def acc_regs(self) -> int:
        return sum(a.regs for a in self.accs.values())

    def users(self, i: int) -> list[int]:
        return [j for j, op in enumerate(self.kernel.ops) if i in op_args(op)]


@dataclass(frozen=True)
class GraphLowering:
    kg: KernelGraph
    arch: Arch
    kernels: tuple[KernelLowering | None, ...]  # None for pre-defined kernels
    shapes: Mapping[str, tuple[int, ...]]
    dtypes: Mapping[str, str]
    intermediates: tuple[str, ...]


def _round(n: int, a: int = ALIGN) -> int:
    return -(-n // a) * a


def _pow2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n >= 1 else 1


def _pitch(shape: tuple[int, ...], esize: int) -> int:
    c = shape[-1]
    q = 16 // esize
    if len(shape) >= 2 and shape[-2] > 1 and c % q == 0:
        return c + q  # one 16-byte pad per row: rows of ldmatrix / row-wise reads hit distinct banks
    return c


def reduce_group(extent: int) -> int:
    """Lanes that cooperate on one output of a reduction over ``extent`` elements."""
    return min(32, _pow2_floor(extent))


def lower_graph(kg: KernelGraph, arch: Arch, options: Options = DEFAULT_OPTIONS) -> GraphLowering:
    """All lowering decisions for a concrete μGraph; CodegenError for what cannot be generated."""
    try:
        shapes, per_kernel = infer(kg)
    except IRError as e:
        raise CodegenError(f"not a valid concrete μGraph: {e}") from e
    dtypes: dict[str, str] = {t.name: t.dtype for t in kg.inputs}
    for t in kg.outputs:
        dtypes[t.name] = t.dtype
    outputs = {t.name for t in kg.outputs}
    half = set(dtypes.values())
    bad = half - set(HALF_DTYPES)
    if bad or len(half) > 1:
        raise CodegenError(f"{kg.program}: tensor-core code needs all inputs and outputs in one of "
                           f"{HALF_DTYPES}; got {sorted(half)}")
    dtype = half.pop() if half else "float16"
    intermediates = []
    for k in kg.kernels:
        written = [s.tensor for s in k.saves] if isinstance(k, CustomKernel) else [k.output]
        for name in written:
            if name not in outputs:
                # generated kernels hand on float32; a predefined op writes the program's dtype, as PyTorch does
                dtypes[name] = INTERMEDIATE_DTYPE if isinstance(k, CustomKernel) else dtype
                intermediates.append(name)
    for name, shp in shapes.items():
        if math.prod(shp) > MAX_ELEMS:
            raise CodegenError(f"{kg.program}: tensor {name}{list(shp)} has more than 2^31-1 elements")
    scalars = {t.name: t.shape for t in kg.inputs}
    lowered: list[KernelLowering | None] = []
    for idx, (k, ks) in enumerate(zip(kg.kernels, per_kernel, strict=True)):
        if isinstance(k, CustomKernel):
            assert ks is not None
            lowered.append(_lower_kernel(kg, idx, k, ks, shapes, dtypes, dtype, scalars, arch, options))
        else:
            lowered.append(None)
    return GraphLowering(kg, arch, tuple(lowered), shapes, dtypes, tuple(intermediates))


def _row_shift(acc: Accum, tiles: tuple[tuple[int, ...] | None, ...]) -> bool:
    """A rescaled accumulator whose shift is one value per row of the accumulated tile."""
    if acc.rescale is None or acc.fn is not Reduce.SUM:
        return False
    tx, tc = tiles[acc.x], tiles[acc.rescale]
    return tx is not None and tc is not None and len(tc) == len(tx) and tc[-1] == 1


def _lower_kernel(kg: KernelGraph, index: int, k: CustomKernel, ks: KernelShapes,
                  shapes: Mapping[str, tuple[int, ...]], dtypes: Mapping[str, str], dtype: str,
                  scalars: Mapping[str, tuple[int, ...]], arch: Arch, options: Options) -> KernelLowering:
    where = f"{kg.program}: kernel {k.name!r}"

    def fail(msg: str, op: int | None = None) -> CodegenError:
        return CodegenError(f"{where}" + (f", op {op}" if op is not None else "") + f": {msg}")

    grid = tuple(int(g) for g in k.grid)
    loop = int(k.loop)
    for p, g in enumerate(grid):
        if g > MAX_GRID[p]:
            raise fail(f"grid dim {'xyz'[p]} = {g} exceeds the CUDA limit {MAX_GRID[p]}")
    warps = options.warps or 4
    if warps not in (1, 2, 4, 8, 16):
        raise fail(f"warps = {warps}; use 1, 2, 4, 8 or 16")
    nthreads = warps * 32
    if options.l2_prefetch not in (0, 64, 128, 256):
        raise fail(f"l2_prefetch = {options.l2_prefetch}; use 0, 64, 128 or 256")
    ops = k.ops
    tiles = ks.tiles

    # phases: loop-phase values that depend only on loop-invariant loads are hoisted ("pre")
    phases: list[str] = []
    for i, op in enumerate(ops):
        ph = ks.phases[i]
        if ph == "loop":
            if isinstance(op, Load):
                ph = "pre" if op.fmap is None else "loop"
            else:
                ph = "pre" if all(phases[a] == "pre" for a in op_args(op)) else "loop"
        phases.append(ph)

    users: dict[int, list[int]] = {i: [] for i in range(len(ops))}
    for j, op in enumerate(ops):
        for a in op_args(op):
            users[a].append(j)
    mm_operand = {a for op in ops if isinstance(op, MatmulOp) for a in (op.a, op.b)}

    stores: list[Store] = []
    for i, op in enumerate(ops):
        tile = tiles[i]
        if tile is not None and len(tile) > 3:
            raise fail(f"tile {list(tile)} has rank {len(tile)}; at most 3 is supported", i)
        match op:
            case Load(tensor=t):
                if len(shapes[t]) > 3:
                    raise fail(f"loads a rank-{len(shapes[t])} tensor; at most 3 is supported", i)
                stores.append(Store.LOAD)
            case MatmulOp():
                if phases[i] == "post":
                    raise fail("a matmul after the for-loop (on accumulated values) is not supported", i)
                u = users[i]
                user = ops[u[0]] if len(u) == 1 else None
                # one iteration: a max or rescaled accumulator is its value (a plain one, in fragments);
                # a row-wise rescaled one updates the fragments in registers
                frag = isinstance(user, Accum) and user.reduce_dim is None and user.x == i and (
                    user.plain or loop == 1 or _row_shift(user, tiles))
                stores.append(Store.FRAG if frag else Store.F32)
            case ReduceOp():
                stores.append(Store.F32)
            case UnaryOp() | BinaryOp():
                stores.append(Store.H16 if i in mm_operand else Store.INLINE)
            case Accum():
                stores.append(Store.ACC)
            case Save():
                stores.append(Store.SAVE)

    # a matmul accumulated in fragments runs every iteration, even on loop-invariant operands
    for i, st in enumerate(stores):
        if st is Store.FRAG and phases[i] == "pre":
            phases[i] = "loop"

    # matmul work split
    mmas: dict[int, MmaPlan] = {}
    for i, op in enumerate(ops):
        if not isinstance(op, MatmulOp):
            continue
        ta, tb, to = tiles[op.a], tiles[op.b], tiles[i]
        assert ta is not None and tb is not None and to is not None
        if len(to) not in (2, 3):
            raise fail(f"matmul of rank {len(to)}; 2-D and batched 3-D are supported", i)
        m, kk, n = ta[-2], ta[-1], tb[-1]
        if kk % 16:
            raise fail(f"matmul contraction length {kk} is not a multiple of 16 (mma k-step)", i)
        if n % 16:
            # A single n8 tile (width 8) faulted on the H200 (misaligned shared-memory read under
            # compute-sanitizer in the k-split path): refused until that path is fixed.
            raise fail(f"matmul output width {n} is not a multiple of 16 (two mma n-tiles)", i)
        batch = to[0] if len(to) == 3 else 1
        a_b = len(ta) == 3 and ta[0] > 1
        b_b = len(tb) == 3 and tb[0] > 1
        mtiles = -(-m // 16)
        npairs = -(-n // 16)
        units = batch * mtiles * npairs
        ksteps = kk // 16
        if units >= warps:
            ksplit, per_warp = 1, -(-units // warps)
        else:
            ksplit = _pow2_floor(warps // units)
            while ksteps % ksplit:
                ksplit //= 2
            per_warp = 1
        if per_warp * 8 > MAX_ACC_REGS:
            raise fail(f"matmul tile {list(to)} needs {per_warp * 8} accumulator registers per thread "
                       f"with {warps} warps (at most {MAX_ACC_REGS}); use a smaller tile or more warps", i)
        mmas[i] = MmaPlan(op.a, op.b, batch, m, n, kk, int(a_b), int(b_b), mtiles, npairs, ksplit, per_warp,
                          ksteps // ksplit)

    # accumulators
    accs: dict[int, AccPlan] = {}
    groups: dict[int, int] = {}
    for i, op in enumerate(ops):
        if isinstance(op, Accum):
            tx = tiles[op.x]
            to = tiles[i]
            assert tx is not None and to is not None
            acc = Accum(op.x, op.reduce_dim) if loop == 1 else op  # one iteration: each holds its one value
            if stores[op.x] is Store.FRAG:
                accs[i] = AccPlan("frag", op.x, mmas[op.x].per_warp, rescale=acc.rescale)
            elif op.reduce_dim is None:
                accs[i] = AccPlan("ew", op.x, -(-math.prod(to) // nthreads), fn=acc.fn, rescale=acc.rescale)
            else:
                g = reduce_group(tx[op.reduce_dim])
                accs[i] = AccPlan("red", op.x, -(-math.prod(to) // (warps * (32 // g))), g, rescale=acc.rescale)
        elif isinstance(op, ReduceOp):
            tx = tiles[op.x]
            assert tx is not None
            groups[i] = reduce_group(tx[op.dim])
    regs = sum(a.regs for a in accs.values())
    if regs > MAX_ACC_REGS:
        raise fail(f"accumulators need {regs} registers per thread (at most {MAX_ACC_REGS}); "
                   f"use smaller tiles or more warps")

    # buffers
    names: set[str] = set()

    def uniq(base: str) -> str:
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}_{n}"
        names.add(name)
        return name

    bufs: dict[int, Buf] = {}
    operands: dict[int, Buf] = {}
    for i, op in enumerate(ops):
        tile = tiles[i]
        region = {"pre": "pre", "loop": "loop", "post": "post"}.get(phases[i], "")
        match op:
            case Load(tensor=t):
                assert tile is not None
                ring = op.fmap is not None
                bd = "half" if dtypes[t] in HALF_DTYPES else "f32"
                bufs[i] = Buf(uniq(f"s_{_ident(t)}"), region, bd, tile, _pitch(tile, 2 if bd == "half" else 4),
                              ring=ring)
                if i in mm_operand:
                    if bd == "half":
                        operands[i] = bufs[i]
                    else:
                        operands[i] = Buf(uniq(f"h_{_ident(t)}"), region, "half", tile, _pitch(tile, 2))
            case MatmulOp():
                assert tile is not None
                if stores[i] is Store.F32:
                    bufs[i] = Buf(uniq(f"mm{i}"), region, "f32", tile, _pitch(tile, 4), copies=mmas[i].ksplit)
            case ReduceOp():
                assert tile is not None
                bufs[i] = Buf(uniq(f"red{i}"), region, "f32", tile, _pitch(tile, 4))
            case UnaryOp() | BinaryOp():
                assert tile is not None
                if stores[i] is Store.H16:
                    bufs[i] = Buf(uniq(f"ew{i}"), region, "half", tile, _pitch(tile, 2))
                    operands[i] = bufs[i]
            case Accum():
                assert tile is not None
                copies = mmas[op.x].ksplit if stores[op.x] is Store.FRAG else 1
                bufs[i] = Buf(uniq(f"acc{i}"), "post", "f32", tile, _pitch(tile, 4), copies=copies)
            case Save():
                pass
        if i in mm_operand and i not in operands:
            assert tile is not None
            operands[i] = Buf(uniq(f"h{i}"), region, "half", tile, _pitch(tile, 2))
    for i in mmas:
        for a, role in ((mmas[i].a, "A"), (mmas[i].b, "B")):
            if len(operands[a].shape) < 2:
                raise fail(f"matmul operand {role} has rank {len(operands[a].shape)}", i)

    # stages and layout
    ring_bytes = sum(b.nbytes for b in bufs.values() if b.ring)
    pre = [b for b in (*bufs.values(), *operands.values()) if b.region == "pre"]
    loop_fixed = [b for b in (*bufs.values(), *operands.values()) if b.region == "loop" and not b.ring]
    post = [b for b in bufs.values() if b.region == "post"]
    pre_bytes = sum(b.nbytes for b in _dedup(pre))
    fixed_bytes = pre_bytes + sum(b.nbytes for b in _dedup(loop_fixed))
    post_bytes = sum(b.nbytes for b in post)
    if loop == 1 or ring_bytes == 0:
        stages = 1
    elif options.stages is not None:
        if options.stages < 2:
            raise fail(f"stages = {options.stages}: a for-loop of {loop} iterations needs at least 2")
        stages = min(options.stages, loop)
    else:
        stages = max(2, min(MAX_STAGES, loop, options.stage_target // max(ring_bytes, 1)))
        while stages > 2 and fixed_bytes + stages * ring_bytes > arch.smem_max:
            stages -= 1
    if stages > MAX_STAGES:
        raise fail(f"stages = {stages}; at most {MAX_STAGES}")
    # a ring as deep as the loop is filled in the prologue; else one slot is refilled per iteration
    prefetch = loop if stages >= loop else stages - 1
    total = max(fixed_bytes + stages * ring_bytes, post_bytes)
    if total > arch.smem_max:
        raise fail(f"needs {total} bytes of shared memory ({stages} pipeline stages of {ring_bytes} B, "
                   f"{fixed_bytes} B of other tiles, {post_bytes} B after the loop); {arch.name} allows "
                   f"{arch.smem_max} per block")

    placed: dict[str, Buf] = {}
    off = 0
    for b in _dedup(pre):
        placed[b.name] = _with(b, offset=off)
        off += b.nbytes
    for b in _dedup(loop_fixed):
        placed[b.name] = _with(b, offset=off)
        off += b.nbytes
    for b in bufs.values():
        if b.ring:
            placed[b.name] = _with(b, offset=off, copies=stages)
            off += placed[b.name].nbytes
    off = 0
    for b in post:
        placed[b.name] = _with(b, offset=off)
        off += b.nbytes
    bufs = {i: placed[b.name] for i, b in bufs.items()}
    operands = {i: placed[b.name] for i, b in operands.items()}

    loads = [op.tensor for op in ops if isinstance(op, Load)]
    saves = [op.tensor for op in ops if isinstance(op, Save)]
    args = tuple(dict.fromkeys([*loads, *saves]))
    return KernelLowering(k, index, grid, loop, dtype, warps, stages, prefetch, tiles, tuple(phases),
                          tuple(stores), bufs, operands, mmas, accs, groups, total, shapes, dtypes, args,
                          scalars, ring_bytes, options.l2_prefetch)


def _dedup(bs: list[Buf]) -> list[Buf]:
    seen: dict[str, Buf] = {}
    for b in bs:
        seen.setdefault(b.name, b)
    return list(seen.values())


def _with(b: Buf, *, offset: int, copies: int | None = None) -> Buf:
    return replace(b, offset=offset, copies=b.copies if copies is None else copies)


def _ident(name: str) -> str:
    """A tensor's name in a buffer identifier (after a prefix such as ``s_``): see ``c_ident``."""
    return c_ident(name)


def ident(name: str) -> str:
    """The C identifier of a tensor's pointer parameter: ``t_`` and the mangled name (never a
    keyword, a built-in or a generator local, whatever the tensor is called)."""
    return f"t_{c_ident(name)}"
