"""The lowered-kernel IR: every decision about one custom kernel that the renderer prints and the
emulator executes, as frozen dataclasses and enums.

``prism.codegen.lower`` builds it (a table of passes), ``prism.codegen.render_*`` print CUDA from
it, ``prism.codegen.emulate`` runs it in NumPy. Anything both of them need (a guard's bound, a
tile's pitch, a copy's vector width, a buffer's offset) is a field here, so the source text and
the emulation cannot disagree. Design notes: docs/codegen.md ("The lowered IR").

Where values live (``Store``):

* ``LOAD``  a tile brought by ``cp.async`` into shared memory; a ring of ``stages`` copies when it
  changes with the for-loop, one copy when it does not (``fmap`` None: loaded once, PRE phase).
* ``INLINE`` an elementwise op, recomputed in registers wherever it is read (fused chains).
* ``F32``   a materialised float32 tile in shared memory (a matmul result that is not only
  accumulated, a reduction); ``copies`` > 1 holds per-warp partial sums added when read.
* ``H16``   an elementwise value materialised as a half tile because a matmul reads it.
* ``FRAG``  a matmul whose only use is an ``Accum``: it accumulates in mma register fragments.
* ``ACC``   an accumulator: registers during the loop, a float32 tile after it.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prism.codegen.arch import Arch
from prism.codegen.tails import TailPlan
from prism.ir import Accum, BlockOp, CustomKernel, KernelGraph, Load, ReduceOp, Save, op_args, shift_by_max
from prism.ops import Reduce

HALF_DTYPES = ("float16", "bfloat16")
INTERMEDIATE_DTYPE = "float32"
MAX_ACC_REGS = 128  # float accumulator registers per thread
MAX_ELEMS = 2**31 - 1
ALIGN = 128  # byte alignment of every shared-memory buffer
MAX_STAGES = 16  # pipeline depth limit (cp.async.wait_group immediates stay small)


class Phase(enum.Enum):
    """When an op runs: before the for-loop (hoisted), in it, after it; a Save runs last."""

    PRE = "pre"
    LOOP = "loop"
    POST = "post"
    SAVE = "save"


class Storage(enum.Enum):
    """Element type of a shared-memory tile."""

    HALF = "half"
    F32 = "f32"

    @property
    def esize(self) -> int:
        return 2 if self is Storage.HALF else 4

    @property
    def ctype(self) -> str:
        return "half_t" if self is Storage.HALF else "float"


class AccKind(enum.Enum):
    """How an accumulator is held: mma fragments, one register per element, or lane-group sums."""

    FRAG = "frag"
    EW = "ew"
    RED = "red"


class Store(enum.Enum):
    LOAD = "load"
    INLINE = "inline"
    F32 = "f32"
    H16 = "h16"
    FRAG = "frag"
    ACC = "acc"
    SAVE = "save"


class DirectLoads(enum.Enum):
    """Which loop-free kernels read their Loads of settled tensors (program inputs, vendor-GEMM
    outputs: ``lower.settled_tensors``) in place in global memory. On an H200 (decode sizes)
    element-wise kernels ran 4-6% faster that way and kernels that reduce 4-50% slower
    (docs/codegen.md, "Loads read in place"): ELEMENTWISE, kernels without a reduction or a matmul.
    ROWS (the default) adds kernels whose every reduction is a row per block walked by the whole block
    and held in registers (``KernelLowering.held``): 3-8% faster read in place, where lane walks and
    several rows a block stayed 3-40% slower (docs/codegen.md, "Row kernels of widths that are not
    powers of two") until each warp kept its rows' reduced values and saved its own rows
    (``KernelLowering.warp_rows``), which ROWS admits too."""

    NEVER = "never"
    ELEMENTWISE = "elementwise"
    ROWS = "rows"
    ALWAYS = "always"


@dataclass(frozen=True)
class Options:
    """Knobs of the generator that are not μGraph sizes. None: the built-in heuristic."""

    warps: int | None = None
    stages: int | None = None
    stage_target: int = 96 * 1024  # bytes of loads in flight per block the stage heuristic aims for
    l2_prefetch: int = 0  # L2 prefetch size hint of 16-byte cp.async: 0 (none), 64, 128 or 256 bytes
    # phases of the loop order over the blocks (``KernelLowering.rotation``); 0, 1: none. Off by default:
    # on an H200 it sped some kernels up and slowed others down (docs/codegen.md, "Swizzled A operands and X tiles")
    rotate: int = 0
    # one launch for a split kernel and the kernel that combines its partials (prism.codegen.fuse)
    fuse: bool = True
    # which kernels without a main loop read the Loads no matmul reads straight from global memory
    # into registers: no cp.async, shared tile or barrier for them (``lower._direct``)
    direct_loads: DirectLoads = DirectLoads.ROWS
    # an element-wise accumulator of a copied loop tile adds the elements its thread copied (vector
    # reads), and a loop that reads nothing else needs no barrier per iteration once every stage is in
    # flight (``private_loop``); split-KV combines 0.2-4.3 µs faster on an H200 (docs/codegen.md,
    # "Combines that add their own copies")
    own_copies: bool = True
    # a loop kernel without matmuls or reductions (a split kernel's combine) reads its loop-varying
    # Loads in place, past L1 where another kernel writes them: no ring, no per-iteration wait or
    # barrier, a chunk of iterations' loads in flight at once (``lower._streamed``). Off: on an H200 a
    # fused split-KV combine ran 0.5-6 µs slower this way, the split-K combines 0-0.2 µs faster
    # (docs/codegen.md, "Combines that add their own copies")
    direct_loops: bool = False
    # ``direct_loops`` for kernels whose loop reads a tensor another kernel of the plan writes (a
    # combine's partials) and nothing else. Not set by hand: ``fuse.launch_fusion`` lowers a plan again
    # with it when that lets a combine whose narrow partials share L1 lines (``fuse._l1_safe``) join its
    # split kernel's launch
    partials_in_place: bool = False
    # a row kernel (no loop, no matmul, settled tensors only) gets a warp count sized to its tile
    # (``lower._row_warps``) instead of 4; ignored when ``warps`` is set
    row_warps: bool = True
    # a for-loop of one iteration: element-wise accumulators read their value in place (lower._is_its_value)
    inline_accums: bool = True
    # ... also in kernels that reduce and run a special function over tiles as large as the accumulator
    # (the softmax family), which keep their accumulators when this is off. On since 2026-12-04: with
    # approximate division it was faster for 13 of 16 softmax programs and sizes on an H200, 3% slower
    # for one (docs/codegen.md, "Approximate division and square root")
    inline_special: bool = True
    # each warp owns a 2-D block of a matmul's 16x16 units and reuses every ldmatrix fragment across
    # its row or column of them (``MmaPlan.wm``/``wn``), instead of units dealt round-robin with two
    # ldmatrix per unit and k-step. On an H200 a 512x4096x4096 GEMM's tuned kernel went from 29% to 56%
    # of the mma.sync ceiling (docs/codegen.md, "Warp tiles")
    warp_tiles: bool = True
    # the main loop refills the ring's oldest slot after the iteration's ops instead of before them, so
    # the first ldmatrix of a stage follows its barrier at once. Off: on an H200 a 512x4096x4096 GEMM
    # ran 0-20% slower with it (docs/codegen.md, "Late refill and fragment prefetch, timed")
    late_refill: bool = False
    # a warp-tiled matmul keeps two sets of ldmatrix fragments and loads k-step t + 1's before k-step
    # t's mma (register double-buffering), so only a stage's first k-step waits on shared memory.
    # Off: on an H200 it moved GEMMs and decode GEMVs by -2% to +1%, none below the tuned 47.9 µs (docs/codegen.md,
    # "Late refill and fragment prefetch, timed")
    frag_prefetch: bool = False
    # a warp-tiled matmul of a kernel that took the larger warp count (``lower.WARPS``: its fragments did
    # not fit 4 warps) keeps the 4-warp grid's warp tiles and splits the k-steps between two warps per
    # tile (``MmaPlan.kgroup``): a 128x128 tile at 8 warps runs 64x64 warp tiles (8 ldmatrix per 32 mma)
    # instead of 64x32 (6 per 16), a third fewer shared-memory reads per mma, partial sums added once
    # after the loop. Off: on an H100 a 512x4096x4096 GEMM's k-split 128x128 tiles were 4% faster at one
    # size, 1-7% slower at two, none near the tuned 128x64 tile (docs/codegen.md, "The GEMM main loop's stalls")
    warp_ksplit: bool = False
    # a matmul with fewer units than warps splits its k-steps over the spare warps where they do not
    # divide too, the last k part shorter (``MmaPlan.ragged``; ``lower._k_parts``): a 2,880-wide GEMV's
    # [8, 144] @ [144, 32] stage (9 k-steps, 2 units) ran on 2 of its 4 warps. Off: timed on an H100, no
    # gain end to end (the tuner's first-round climb reaches the even splits, 13.8-14.5 µs against 17.9 at
    # 9 k-steps) and two kernels slower with it (docs/codegen.md, "Ragged k parts")
    ragged_kparts: bool = False
    # a loop's materialised matmul operand computed only from its stage's tiles (the x·g of a norm with
    # a weight ahead of a GEMV) is computed one iteration ahead into a second copy, so the loop keeps
    # one barrier per iteration instead of two (``KernelLowering.skewed``). Off: not yet timed on a GPU
    # (docs/codegen.md, "Skewed materialisation")
    skew_materialise: bool = False
    # a loop that only sums its ring's stages into element-wise accumulators, with every stage copied
    # before it and an online-softmax (rescaled) sum among them (a safe split-KV combine), waits for
    # every stage once, takes the maxima of the shifts over all stages first, then adds independent
    # terms ``x·e^(c−max)`` with no barrier per iteration (``KernelLowering.shift_first``) instead of
    # a running max carried from iteration to iteration behind a barrier each. Off: on an H200 the fused
    # safe split-KV kernels ran 0-3.6 µs slower with it (docs/codegen.md, "Safe combines: the shift maxima first")
    shift_first: bool = False
    # an intermediate that generated kernels read only as matmul operands (a normalised K or Q that a
    # stitched plan's attention part multiplies) is written in the program's half dtype, not float32:
    # the mma rounds it to half at the same point either way (same values), and it moves half the
    # bytes (``lower._tensor_dtypes``). On: a stitched decode MLP's down projection read its activation
    # in float32, twice the bytes its part was tuned on (docs/codegen.md, "Half operand intermediates")
    half_operands: bool = True
    # iterations of a loop of ring Loads and element-wise accumulators only (a split kernel's combine)
    # run between one wait and one barrier (``KernelLowering.unroll``): None, the rule
    # (``lower.UNROLL``, the largest power of two up to it dividing the loop that the ring allows);
    # 1, one wait and barrier per iteration
    unroll: int | None = None
    # a rescaled element-wise accumulator whose shift is one value per row (a safe split-KV combine's
    # numerator) adds runs of the loader's vector width, one pair of exponentials a run instead of
    # one an element (``lower._rescaled_runs``)
    rescaled_runs: bool = True
    # a loop of one iteration whose ring Loads are first read by different ops (an attention block's K
    # by the scores' matmul, its V by the weighted sum's) commits each set as its own cp.async group, in
    # the order they are read, and waits for a set just before the op that first reads it
    # (``KernelLowering.arrivals``): the scores are computed while V is still arriving. On: 1.7-4.4%
    # faster on the split-KV attentions of the benchmark (docs/codegen.md, "Staged arrivals")
    staged_arrivals: bool = True
    # a loop-free element-wise kernel (no matmul, no reduction) whose saves' 16-byte runs leave threads
    # without one takes shorter runs, down to 4 bytes, until every thread has at most one
    # (``lower._save_plan``): a [1, 256] tile at 128 threads runs 2 elements a thread, not 8 on a
    # quarter of them. On: on an H200 the decode element-wise zoo programs' best kernels were 0-0.22 µs
    # faster, never slower (exact GELUs 1.57 → 1.37 µs; docs/codegen.md, "Shorter runs for element-wise kernels")
    short_runs: bool = True
    # the widest run (elements) a lane reads at once where a reduction walks a transposed load's tile
    # along its stored rows (the norm of a bank read as its transpose): ``render_reduce.stored_rows``;
    # 1: one 2-byte load an element, as before. 8: on an H100 the decode cosine similarity and squared
    # distances ran 7.24 → 6.16 and 6.39 → 5.42 µs (4: 6.48, 5.52; docs/off-the-suite.md, "Runs along stored rows")
    stored_runs: int = 8
    # the widest run (elements) a lane reads at once where a reduction's lanes walk the last dim
    # (``render_reduce.lane_run``): 4, or 2, where every lane gets whole runs
    lane_runs: int = 4
    # a copy whose items ``tid + j * threads`` move by whole rows (``carry_free``) computes each thread's
    # global and shared addresses once and adds a literal a copy (``render_load._stepped_copies``), but in
    # kernels with GEMM tiles (``lower.GEMM_ROWS``). On: on an H100, 47 kernels of the benchmark programs
    # 1.2% faster (geometric mean; 25 faster by more than 1%, 4 slower); a prefill GEMM's tuned tile ran
    # 3% slower with it, so GEMM tiles keep copies item by item (docs/codegen.md, "Stepped copies")
    stepped_copies: bool = True
    # a matmul tile whose fragments take more than ``lower.FRAG_REGS`` registers at 4 warps keeps 4 where
    # two of its blocks share an SM (more blocks than SMs; two blocks' shared memory fits), instead of
    # taking 8 (``lower._pairs``): a 1024x4096x4096 GEMM's 128x128 tile ran 89.4 µs at 4 warps, 99.0 at 8 on
    # an H100 (docs/codegen.md, "Two blocks of 4 warps an SM")
    paired_blocks: bool = True
    # a matmul's output tile may be one mma n-tile (8 columns) wide, not only a multiple of two
    # (``lower._check_matmul``): a decode GEMV 1,024 wide can then run 128 blocks of 8 columns instead
    # of 64 of 16 on a GPU of 108-132 SMs. The width-8 fault of 2026-11-29 (docs/width8-fault.md) was
    # not seen again with sources generated after acd599a
    narrow_mma: bool = False
    # a main loop that refills its ring keeps each copy's global pointer and shared address in
    # registers of their own from iteration to iteration and runs its iterations in turns of the ring's
    # depth, so every ring slot's offset is a literal (``KernelLowering.carried``): no copy's address is
    # computed into a scratch register the next copy overwrites while the cp.async still reads it. Only
    # in kernels with GEMM tiles (``lower.GEMM_ROWS``): on an H100 the tuned prefill GEMMs ran 3-13%
    # faster (a 1,024-row one 91.5 → 79.2 µs, 66% of the mma.sync ceiling), the decode GEMVs -0.7% to
    # +1.4% (docs/codegen.md, "Carried copy addresses")
    carried_copies: bool = True
    # the least ring depth of a main loop with GEMM tiles (``lower.GEMM_ROWS``) where shared memory holds
    # it; ``stage_target`` alone gives a 128x256 tile's 48 KB stages a ring of 2. A third stage made the
    # 1,024-row GEMM's 128x256 tile 10-13% slower on an H100 (80.1 → 88.7 µs; docs/codegen.md, "What
    # bounds the 64x64 warp tile"), so the default keeps the rule's depth
    gemm_stages: int = 2


DEFAULT_OPTIONS = Options()


@dataclass(frozen=True)
class Arrival:
    """Ring Loads of a one-iteration loop committed as one cp.async group (``Options.staged_arrivals``):
    the prologue commits the arrivals in order, and the loop waits for arrival k (then a barrier) just
    before op ``before``, the first loop op that reads one of them (the first arrival: at the loop's start)."""

    loads: tuple[int, ...]  # Load op indices
    before: int


@dataclass(frozen=True)
class Sweep:
    """``items`` work items spread over the block's threads: item ``e = tid + j * threads`` for
    ``j < per``; when ``bound`` is set the item runs only if ``e < bound`` (the guard the renderer
    prints; None when the items fill every thread's iterations exactly)."""

    items: int
    threads: int
    bound: int | None

    @property
    def per(self) -> int:
        return -(-self.items // self.threads)


def item_extents(shape: Sequence[int], vec: int) -> list[int]:
    """A tile's extents in items: its dims, the last in runs of ``vec`` elements."""
    return [*shape[:-1], shape[-1] // vec]


def item_digits(shape: Sequence[int], vec: int, item: int) -> tuple[int, ...]:
    """The index of flat item ``item`` of a tile of ``shape`` (row-major, the last dim in runs of ``vec``),
    one entry a dim, the last in elements."""
    exts = item_extents(shape, vec)
    out = [0] * len(exts)
    for d in range(len(exts) - 1, -1, -1):
        item, out[d] = divmod(item, exts[d])
    out[-1] *= vec
    return tuple(out)


def carry_free(shape: Sequence[int], vec: int, threads: int) -> bool:
    """Is item ``tid + j * threads`` of a tile item ``tid`` moved by item ``j * threads``, index by index,
    for every ``tid < threads`` and ``j`` (no carry between the dims)? Then a copy's addresses are one
    per thread plus constants (``LoadPlan.stepped``). True when ``threads`` is ``m`` items of some dim
    with ``m`` dividing that dim's extent (``tid``'s index there stays below ``m``, the step's is a
    multiple of it, the dims above are ``tid``'s zeros), or the dims below it fill ``threads`` exactly
    and it is the outermost dim of more than one item (no item past the tile)."""
    exts = item_extents(shape, vec)
    below = 1
    for d in range(len(exts) - 1, -1, -1):
        ext = exts[d]
        if ext == 1:
            continue
        m = threads // below
        if all(e == 1 for e in exts[:d]) or (m <= ext and ext % m == 0):
            return True
        if m % ext:
            return False
        below *= ext
    return True


def sweep(items: int, threads: int) -> Sweep:
    """The sweep of ``items`` over ``threads``, guarded when they do not divide."""
    return Sweep(items, threads, items if items % threads else None)


def stored_index[T](idx: Sequence[T]) -> list[T]:
    """A transposed load's tile index as stored (``Buf.transposed``): its last two swapped."""
    return [*idx[:-2], idx[-1], idx[-2]]


@dataclass(frozen=True)
class Buf:
    """A tile in shared memory. Row-major; the last dim padded to ``pitch`` against bank conflicts,
    or (``swizzle``: a 2-D copied tile that ldmatrix reads, unpadded) its 16-byte chunks permuted per
    row: see :meth:`swizzle_key`. Every reader of a swizzled tile (the loader's writes, the A and B
    ldmatrix addresses, expression reads) indexes it through that permutation."""

    name: str
    region: Phase  # PRE | LOOP | POST: when the tile is live
    dtype: Storage
    shape: tuple[int, ...]
    pitch: int
    copies: int = 1
    ring: bool = False  # copies are pipeline stages (else partial sums, added when read)
    offset: int = 0  # bytes from the start of dynamic shared memory
    swizzle: bool = False
    # the tile of a transposed load (``Load.transposed``): ``shape`` is as stored, the transpose of
    # the value's tile (rows along the tensor's contiguous dim); ldmatrix reads it as a B operand,
    # expressions at ``stored_index`` of their index, one element at a time except a reduction's runs
    # along the stored rows (``render_reduce.stored_rows``)
    transposed: bool = False
    # a Load's tile read in place in global memory (``Options.direct_loads``): no shared memory; element
    # idx is at ``g_<name>[Σ idx·gstrides]``, and every row of it starts ``galign``-byte aligned
    direct: bool = False
    gstrides: tuple[int, ...] = ()
    galign: int = 0
    # a direct tile of a loop-varying Load (``Options.direct_loops``): iteration it's tile starts
    # ``it * gstep`` elements on; ``l2``: read past L1 (a tensor some kernel writes, perhaps this launch)
    gstep: int = 0
    l2: bool = False
    # two copies alternating by iteration (``KernelLowering.skewed``): copy ``it & 1`` holds iteration
    # it's value; a ``ring`` tile (one copy read at a time, ``<name>_ring``) that no cp.async fills
    parity: bool = False

    @property
    def esize(self) -> int:
        return self.dtype.esize

    @property
    def chunk(self) -> int:
        """Elements of one 16-byte chunk."""
        return 16 // self.esize

    def swizzle_key(self) -> tuple[int, int]:
        """(rows per key, keys): element (r, c) of a swizzled tile lives in chunk ``(c // chunk) ^ key(r)``
        of row r, ``key(r) = (r // rows per key) % keys``. Any 8 consecutive rows of one logical chunk
        then fall on 8 distinct 16-byte bank groups (a conflict-free ldmatrix), and every row stays
        dense and 32-byte aligned (what cp.async needs to stream at full speed)."""
        n = self.pitch // self.chunk
        return max(1, 8 // n), min(n, 8)

    @property
    def strides(self) -> tuple[int, ...]:
        st = [1] * len(self.shape)
        if len(self.shape) >= 2:
            st[-2] = self.pitch
            for d in range(len(self.shape) - 3, -1, -1):
                st[d] = st[d + 1] * self.shape[d + 1]
        return tuple(st)

    @property
    def span(self) -> int:
        """Elements one copy spans (its last element + 1)."""
        return self.shape[0] * self.strides[0] if len(self.shape) >= 2 else self.pitch

    @property
    def copy_elems(self) -> int:
        """Elements from one copy to the next (16-byte aligned)."""
        q = 16 // self.esize
        return -(-self.span // q) * q

    @property
    def nbytes(self) -> int:
        return -(-(self.copies * self.copy_elems * self.esize) // ALIGN) * ALIGN


@dataclass(frozen=True)
class MmaPlan:
    """How the warps of a block split one matmul [batch, m, k] @ [batch, k, n] into mma tiles.

    A unit is (batch, 16-row tile, 16-column pair of n8 tiles); each warp owns ``per_warp`` units
    and a 1/``ksplit`` share of the k-steps: ksplit > 1 when there are fewer units than warps, or with
    ``Options.warp_ksplit`` when each warp tile of a grid over ``kgroup`` warps is run by ``ksplit``
    warps (k part ``warp / kgroup``).
    """

    a: int
    b: int
    batch: int
    m: int
    n: int
    k: int
    a_bstride: int  # 1: A's operand tile has a batch dim > 1 (0: broadcast)
    b_bstride: int
    mtiles: int
    npairs: int
    ksplit: int
    per_warp: int
    ksteps: int  # k-steps of 16 per warp (the last k part's may be fewer: ``ragged``)
    # warp tiles (``Options.warp_tiles``): the warps as a wm x wn grid over the units, each owning
    # mtiles / wm rows by npairs / wn column pairs of them (slot j: row j // wt_n, pair j % wt_n);
    # 0, 0: units dealt round-robin (unit ``warp + j * warps``)
    wm: int = 0
    wn: int = 0
    prefetch: bool = False  # ``Options.frag_prefetch``: two fragment sets, k-step t + 1 loaded before t's mma

    @property
    def units(self) -> int:
        return self.batch * self.mtiles * self.npairs

    @property
    def blocked(self) -> bool:
        return self.wn > 0

    @property
    def ragged(self) -> bool:
        """The k-steps do not divide among the k parts: a part's steps past ``k // 16`` are skipped
        (9 k-steps over 2 parts: 5 and 4)."""
        return self.ksteps * self.ksplit != self.k // 16

    @property
    def kgroup(self) -> int:
        """Warps of one k part: warp ``w`` takes k part ``w / kgroup`` (its units or tile: ``w % kgroup``)."""
        return self.wm * self.wn if self.blocked else self.units

    @property
    def wt_m(self) -> int:
        """Unit rows per warp tile."""
        return self.mtiles // self.wm

    @property
    def wt_n(self) -> int:
        """Unit column pairs per warp tile."""
        return self.npairs // self.wn

    @property
    def two(self) -> bool:
        """The last unit of a row is one n8 tile (n is not a multiple of 16)."""
        return self.n % 16 != 0


@dataclass(frozen=True)
class AccPlan:
    """An accumulator: FRAG (mma fragments of a matmul), EW (one register per element a thread
    owns) or RED (summed over a dim by groups of ``group`` lanes with warp shuffles; ``group`` the
    block's thread count when its one output is walked by the whole block, ``lower._acc_plan``). An EW
    accumulator may keep a running max (``fn`` MAX) or be rescaled by the shift ``rescale`` (an op
    index; then a second register per element holds the running max)."""

    kind: AccKind
    x: int
    count: int  # register slots per thread (fragments: units per warp)
    group: int = 1
    fn: Reduce = Reduce.SUM
    rescale: int | None = None
    # EW: each item is a run of ``vec`` consecutive elements along the last dim; ``own``: the items
    # are those of the loader of the accumulated Load's tile (``lower._own_copies``), so every thread
    # adds exactly the elements it copied itself
    vec: int = 1
    own: bool = False

    @property
    def regs(self) -> int:
        if self.kind is AccKind.FRAG:
            return self.count * (10 if self.rescale is not None else 8)
        return self.count * (2 if self.rescale is not None else 1)


@dataclass(frozen=True)
class LoadPlan:
    """One Load's cp.async copy of a tile into shared memory."""

    op: int
    tensor: str
    buf: Buf
    fn: str  # device function name
    block_terms: tuple[tuple[int, int], ...]  # (grid dim, elements per block index): the tile origin
    iter_stride: int  # elements between consecutive loop iterations' tiles (0: invariant)
    vec: int  # elements per copy
    sweep: Sweep  # over the tile's vectors
    # each thread's copies are its first address plus constants (``carry_free``; ``Options.stepped_copies``)
    stepped: bool = False

    @property
    def ctype(self) -> str:
        return self.buf.dtype.ctype

    @property
    def nbytes(self) -> int:
        return self.vec * self.buf.esize


@dataclass(frozen=True)
class SavePlan:
    """One Save's vector stores of a tile into global memory."""

    op: int
    tensor: str
    half: bool  # the tensor is a half type (else float32)
    block_terms: tuple[tuple[int, int], ...]
    vec: int
    sweep: Sweep  # over the tile's vectors


def outputs_per_pass(group: int, warps: int) -> int:
    """Outputs a reduction pass covers at once with ``group`` threads an output: ``warps * 32 / group``
    lane groups, or one when the group is the whole block (a block-wide accumulator, ``group > 32``)."""
    return 1 if group > 32 else warps * (32 // group)


def block_wide(tile_x: tuple[int, ...], dim: int, warps: int) -> bool:
    """A reduction of a ``tile_x`` tile over ``dim`` to a tile is walked by the whole block: fewer outputs
    than warps and rows of at least 32 elements a warp."""
    n_out = math.prod(tile_x) // tile_x[dim]
    return warps > 1 and n_out < warps and tile_x[dim] >= 32 * warps


def held_value(i: int, op: BlockOp, phase: Phase, tile: Callable[[int], tuple[int, ...]], warps: int,
               acc: AccPlan | None) -> bool:
    """Op ``i``'s one output is left in every thread's register by a block-wide reduction
    (``KernelLowering.held``): a ReduceOp before or after the loop of one output walked by the whole
    block, or a lane-group accumulator whose group is the whole block (``lower._acc_plan``)."""
    match op:
        case ReduceOp(x=x, dim=dim):
            return phase in (Phase.PRE, Phase.POST) and math.prod(tile(i)) == 1 and block_wide(tile(x), dim, warps)
        case Accum():
            return acc is not None and acc.kind is AccKind.RED and acc.group > 32
    return False


WARP_RUN = 8  # elements of a row a lane reads at once in a warp-rows kernel (16 bytes of halves)
WARP_ROW_RUNS = 16  # runs a lane walks in a warp-rows kernel at most (row passes times runs a row), unrolled


def warp_rows(ops: Sequence[BlockOp], stores: Sequence[Store], tile: Callable[[int], tuple[int, ...]], warps: int,
              groups: Mapping[int, int], loop: int, tails: TailPlan | None, accs: Mapping[int, AccPlan]) -> frozenset[int]:
    """The reductions of a *warp-rows* kernel (else empty): a loop-free kernel without matmuls whose every
    reduction (a ReduceOp, or a one-iteration lane-group sum ``Accum``) walks rows of one ``[R, C]`` tile
    (leading dims 1) over ``C`` with a warp a row (32 lanes, the ``R`` rows over the warps: not
    ``block_wide``), whose other values are inline, and whose every Save writes an ``[R, C]`` tile. Each
    warp then keeps its rows' reduced values in its lanes' registers (after a butterfly of shuffles) and
    saves the same rows (``render_save``): no shared-memory round trip and no barrier between the
    reductions and the stores (the prefill shapes of norms and softmax: several rows a block)."""
    if loop != 1 or tails is not None:
        return frozenset()
    reds, rows = [], set[tuple[int, ...]]()
    for i, op in enumerate(ops):
        match op:
            case ReduceOp(x=x, dim=dim) | Accum(x=x, reduce_dim=int(dim)) if stores[i] is not Store.INLINE:
                tx = tile(x)
                lanes = accs[i].group if i in accs and _row_sum(accs[i]) else groups.get(i)
                if dim != len(tx) - 1 or lanes != 32 or block_wide(tx, dim, warps) or tx[-1] % WARP_RUN:
                    return frozenset()
                reds.append(i)
                rows.add(tx)
            case Save(x=x):
                rows.add(tile(x))
            case Load():
                pass
            case _ if stores[i] is not Store.INLINE:
                return frozenset()
    if len(rows) != 1 or not reds or set(accs) - set(reds):
        return frozenset()
    (row,) = rows
    runs = -(-row[-2] // warps) * -(-row[-1] // (32 * WARP_RUN)) if len(row) >= 2 else 0
    return frozenset(reds) if 0 < runs <= warp_row_runs(warps) and all(t == 1 for t in row[:-2]) else frozenset()


def warp_row_runs(warps: int) -> int:
    """The runs a lane may walk in a warp-rows kernel of ``warps`` warps (``WARP_ROW_RUNS``, unrolled): one
    input's runs held in registers (four each) take at most a quarter of the 64K-register file across
    the block (16 warps: 8 runs; measured on an H100, a 16-warp layer norm of 16 runs a lane spilled
    and ran 3-4× slower, docs/codegen.md "Warp rows")."""
    return min(WARP_ROW_RUNS, 128 // warps)


def _row_sum(acc: AccPlan) -> bool:
    """A lane-group sum of one iteration's values (no rescale): its registers end as the row's sum."""
    return acc.kind is AccKind.RED and acc.fn is Reduce.SUM and acc.rescale is None


def combine_loop(ops: Sequence[BlockOp], phases: Sequence[Phase], bufs: Mapping[int, Buf],
                 accs: Mapping[int, AccPlan]) -> tuple[bool, bool]:
    """(the loop's ops are ring Loads and element-wise accumulators only: a split kernel's combine,
    a rescaled (online-softmax) accumulator among them)."""
    looped = [i for i, op in enumerate(ops) if phases[i] is Phase.LOOP or isinstance(op, Accum)]
    only = all((isinstance(ops[i], Load) and i in bufs and bufs[i].ring) or (i in accs and accs[i].kind is AccKind.EW)
               for i in looped)
    return only, only and any(accs[i].rescale is not None for i in looped if i in accs)


def reads_loop_tiles_after(ops: Sequence[BlockOp], stores: Sequence[Store]) -> bool:
    """Some value after the loop reads a loop or prologue tile in place (an accumulator of a
    one-iteration loop, ``lower._is_its_value``): those tiles stay live after the loop."""
    return any(isinstance(op, Accum) and stores[i] is Store.INLINE for i, op in enumerate(ops))


def inline_reads(ops: Sequence[BlockOp], stores: Sequence[Store], roots: Iterable[int]) -> set[int]:
    """The values ``roots`` and, through those computed inline (``Store.INLINE``), the values they read."""
    todo, seen = list(roots), set()
    while todo:
        if (j := todo.pop()) not in seen:
            seen.add(j)
            todo += op_args(ops[j]) if stores[j] is Store.INLINE else []
    return seen


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
    phases: tuple[Phase, ...]
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
    loads: tuple[LoadPlan, ...] = ()
    saves: Mapping[int, SavePlan] = field(default_factory=dict)
    elementwise: Mapping[int, Sweep] = field(default_factory=dict)  # per-element passes over op i's tile
    rotate: int = 1  # phases of the loop order over the blocks (1: every block runs it = 0, 1, ...)
    late_refill: bool = False  # ``Options.late_refill``: the ring's refill after the loop ops
    # ops computed one iteration ahead (``Options.skew_materialise``): iteration it computes op i of
    # iteration it + 1 into its ``Buf.parity`` tile (the prologue computes iteration 0's), reading the
    # next stage, which the loop's wait already covers (one stage fewer in flight)
    skewed: tuple[int, ...] = ()
    shift_first_on: bool = False  # ``Options.shift_first``; where it applies: ``shift_first``
    # loop iterations run between one wait and one barrier (``lower._unroll``): the loop waits for
    # ``unroll`` stages at once and keeps ``prefetch - unroll`` in flight
    unroll: int = 1
    tails: TailPlan | None = None  # the padded dim's origins (``prism.codegen.tails``), with a Tail
    arrivals: tuple[Arrival, ...] = ()  # ``Options.staged_arrivals``; empty: one group per stage
    stored_runs: int = 1  # ``Options.stored_runs``
    lane_runs: int = 4  # ``Options.lane_runs``
    per_sm: int = 1  # 2: kept 4 warps for two blocks an SM (``Options.paired_blocks``, ``lower._pairs``)
    carried_on: bool = False  # ``Options.carried_copies``; where it applies: ``carried``

    @property
    def blocks(self) -> int:
        return math.prod(self.grid)

    def rotation(self, block: int) -> int:
        """The iteration whose tiles block ``block`` (linear index) loads first: the blocks fall into
        ``rotate`` equal phases, phase p starting at ``p * loop / rotate``; the loop's tiles are
        loaded in the order ``(it + rotation) % loop``. Legal for every kernel: only accumulators
        (sums, maxes, rescaled sums) carry values across iterations, and their order is free."""
        return (block * self.rotate // self.blocks) * self.loop // self.rotate

    @property
    def threads(self) -> int:
        return self.warps * 32

    @property
    def acc_regs(self) -> int:
        return sum(a.regs for a in self.accs.values())

    @property
    def uses_lanes(self) -> bool:
        """Some code splits work by warp and lane (mma, reductions, lane-group accumulators)."""
        return bool(self.mmas or self.groups or any(a.kind is not AccKind.EW for a in self.accs.values()))

    @property
    def reads_loop_tiles_after(self) -> bool:
        return reads_loop_tiles_after(self.kernel.ops, self.stores)

    def users(self, i: int) -> list[int]:
        return [j for j, op in enumerate(self.kernel.ops) if i in op_args(op)]

    def block_reduces(self, x: int, dim: int) -> bool:
        """A reduction of value ``x`` over ``dim`` to a tile is block-wide (``render_reduce._block_reduce``)."""
        return block_wide(self._tile(x), dim, self.warps)

    @functools.cached_property
    def shifts(self) -> frozenset[int]:
        """The ops ``x − max(x)`` that subtract 0 from a −inf max (``ir.shift_by_max``)."""
        return frozenset(i for i in range(len(self.kernel.ops)) if shift_by_max(self.kernel.ops, i))

    @functools.cached_property
    def held(self) -> frozenset[int]:
        """ReduceOps before or after the loop, and block-wide lane-group accumulators, whose one output a
        block-wide reduction gives every thread in a register (``<tile>_r``): each warp sums the warps'
        partials itself, so no warp publishes the result through shared memory and no second barrier
        follows (a row per block: norms, softmax)."""
        return frozenset(i for i, op in enumerate(self.kernel.ops)
                         if held_value(i, op, self.phases[i], self._tile, self.warps, self.accs.get(i)))

    @functools.cached_property
    def warp_rows(self) -> frozenset[int]:
        """The reductions (ReduceOps, one-iteration lane-group sums) whose rows each warp keeps in its
        lanes' registers (``lowered.warp_rows``)."""
        return warp_rows(self.kernel.ops, self.stores, self._tile, self.warps, self.groups, self.loop, self.tails,
                         self.accs)

    def _tile(self, i: int) -> tuple[int, ...]:
        t = self.tiles[i]
        assert t is not None
        return t

    def frag_acc(self, i: int) -> int | None:
        """The accumulator holding matmul ``i``'s fragments, if it has one."""
        return next((j for j, a in self.accs.items() if a.kind is AccKind.FRAG and a.x == i), None)

    def saves_tensors(self) -> tuple[str, ...]:
        """The tensors this kernel writes, in op order."""
        return tuple(dict.fromkeys(sp.tensor for sp in self.saves.values()))

    @property
    def copied_loads(self) -> tuple[LoadPlan, ...]:
        """The Loads copied into shared memory: all but those read in place in global memory (``Buf.direct``)."""
        return tuple(lp for lp in self.loads if not lp.buf.direct)

    @property
    def streamed(self) -> bool:
        """A loop with nothing in shared memory: every loop-varying Load is read in place
        (``Options.direct_loops``), so an iteration needs no wait and no barrier."""
        return self.loop > 1 and any(lp.buf.gstep for lp in self.loads) and not any(lp.buf.ring for lp in self.loads)

    @property
    def loop_wait(self) -> int:
        """The groups the loop's ``cp_async_wait`` leaves in flight: iteration it's stage landed (and it + 1's
        too when ops are ``skewed``; the stages of its ``unroll`` iterations when it starts a chunk; with
        staged ``arrivals`` the first arrival)."""
        if self.arrivals:
            return len(self.arrivals) - 1
        return self.prefetch - self.unroll - bool(self.skewed)

    @property
    def prologue_wait(self) -> int:
        """The groups the prologue's ``cp_async_wait`` leaves in flight: every ring stage (with ``skewed``
        ops, all but stage 0), or every staged arrival; the loop-invariant tiles have landed."""
        return len(self.arrivals) if self.arrivals else self.prefetch - bool(self.skewed)

    def arrival_waits(self) -> dict[int, int]:
        """Loop op -> the groups left in flight by the wait before it (staged ``arrivals`` after the first)."""
        n = len(self.arrivals)
        return {a.before: n - 1 - k for k, a in enumerate(self.arrivals) if k}

    @property
    def carried(self) -> bool:
        """``Options.carried_copies`` applies: a main loop of more iterations than its prefetch that
        refills a ring of one group a stage (no unrolled chunks, late refill, skewed ops, staged arrivals,
        rotated order or padded tail among its copies), each ring Load copied with cp.async."""
        ring = [lp for lp in self.loads if lp.buf.ring]
        if not (self.carried_on and ring and self.loop > 1 and self.prefetch < self.loop and self.unroll == 1):
            return False
        if self.late_refill or self.skewed or self.arrivals or self.rotate != 1 or self.streamed:
            return False
        tailed = set() if self.tails is None else set(self.tails.loads)
        return all(lp.nbytes >= 4 and lp.op not in tailed for lp in ring)

    @property
    def private_loop(self) -> bool:
        """Every stage is copied before the loop (no refill) and each loop op is a ring Load or an
        accumulator of its own copies (``AccPlan.own``): a thread reads only what it copied and waited
        for itself, so the loop needs no barrier."""
        if self.loop == 1 or self.prefetch < self.loop or self.streamed:
            return False
        ops = self.kernel.ops
        return all(
            (isinstance(op, Load) and self.bufs[i].ring) or (i in self.accs and self.accs[i].own)
            for i, op in enumerate(ops) if self.phases[i] is Phase.LOOP or isinstance(op, Accum))

    @property
    def shift_first(self) -> bool:
        """``Options.shift_first`` applies: a loop of ring Loads and element-wise accumulators only, every
        stage copied before it, a rescaled accumulator among them. The kernel then waits for every stage
        once, computes each rescaled accumulator's running max over all stages (``rm<i>``) before the
        loop, and the loop needs no barrier (no slot is refilled; every copy landed before it)."""
        if not self.shift_first_on or self.loop == 1 or self.prefetch < self.loop or self.streamed or self.skewed:
            return False
        return combine_loop(self.kernel.ops, self.phases, self.bufs, self.accs)[1]

    def all_bufs(self) -> dict[str, Buf]:
        """Every shared-memory tile by name (a tile may be both a value's storage and an operand)."""
        return {b.name: b for b in (*self.bufs.values(), *self.operands.values()) if not b.direct}


@dataclass(frozen=True)
class GraphLowering:
    kg: KernelGraph
    arch: Arch
    kernels: tuple[KernelLowering | None, ...]  # None for pre-defined kernels
    shapes: Mapping[str, tuple[int, ...]]
    dtypes: Mapping[str, str]
    intermediates: tuple[str, ...]
