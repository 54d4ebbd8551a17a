"""A NumPy emulator of the lowered form: it executes the ``KernelLowering`` that the renderer prints.

    outputs = emulate(kg, inputs)          # like prism.interpreter.run, through the lowered IR

For every custom kernel and every block of its grid it does, step by step, what the generated
kernel does: the prologue's cp.async copies (loop-invariant tiles, the first ring stages), the
hoisted ops, each loop iteration (wait, refill of the oldest ring slot, the loop ops; with
``Options.late_refill`` the refill after the loop ops; an unrolled loop waits once per chunk), the
epilogue (accumulators to their tiles, post-loop reductions, the savers). Work is split as the
source splits it: copies, saves and per-element passes by the sweeps of the IR (``e = tid + j *
threads`` under the guard ``e < bound``), matmuls by warp, unit and k part with each lane's
ldmatrix address (``emulate_mma``), reductions by output. Memory is checked as the GPU requires
(``emulate_mem``): shared-memory accesses inside their tile and aligned to their width, reads of
bytes their own tile wrote and no cp.async in flight, ring slots holding the iteration read,
global accesses in bounds and aligned. Values are float64 (no half rounding), so the outputs
match ``prism.interpreter.run`` up to summation order; any fault raises ``EmulationError``.
What it does not model: thread interleaving within a block (``__syncthreads`` placement),
registers beyond the accumulators, and the source text itself (docs/codegen.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from prism.codegen.arch import arch as get_arch
from prism.codegen.emulate_mem import EmulationError, Smem, global_index
from prism.codegen.emulate_mma import Units, frag_rescale, frag_store, mma, swizzle_at, units
from prism.codegen.lower import DEFAULT_OPTIONS, Options, global_strides, lower_graph
from prism.codegen.lowered import (
    AccKind,
    Buf,
    GraphLowering,
    KernelLowering,
    LoadPlan,
    Phase,
    Store,
    Sweep,
    outputs_per_pass,
    stored_index,
)
from prism.codegen.render_reduce import lane_run
from prism.interpreter import input_tensors, run_predefined
from prism.ir import (
    Accum,
    BinaryOp,
    KernelGraph,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    Save,
    UnaryOp,
    grid_coords,
)
from prism.ops import BINARY_NUMPY, UNARY_NUMPY, Reduce, shifted
from prism.reference import round_to_dtype

__all__ = ["EmulationError", "emulate", "emulate_lowering"]

type Index = list[np.ndarray | int]  # one entry per tile dim: an index array, or 0


def emulate(kg: KernelGraph, inputs: Mapping[str, np.ndarray], *, arch: str = "sm_80",
            options: Options | None = None) -> dict[str, np.ndarray]:
    """Lower ``kg`` as ``generate`` does and run the lowered form on float64 ``inputs`` (by name)."""
    return emulate_lowering(lower_graph(kg, get_arch(arch), options or DEFAULT_OPTIONS), inputs)


def emulate_lowering(gl: GraphLowering, inputs: Mapping[str, np.ndarray], *,
                     stored: bool = False) -> dict[str, np.ndarray]:
    """``emulate`` of a lowering; with ``stored`` every tensor a kernel writes, a library op's
    included, is rounded to the dtype of its buffer (``gl.dtypes``), as GPU memory holds it."""
    kg = gl.kg
    tensors = input_tensors(kg, inputs)
    scalars = {t.name: t.shape for t in kg.true_inputs}
    with np.errstate(all="ignore"):
        for k, low in zip(kg.kernels, gl.kernels, strict=True):
            if isinstance(k, PredefinedKernel):
                run_predefined(k, tensors, scalars)
                written = [k.output]
            else:
                assert low is not None
                flat = _kernel_tensors(low, tensors)
                for coord in grid_coords(low.grid):
                    _Block(low, flat, coord).run()
                written = list(low.saves_tensors())
                for name in written:
                    tensors[name] = flat[name].reshape(low.tensor_shapes[name])
            for name in written if stored else ():
                tensors[name] = round_to_dtype(tensors[name], gl.dtypes[name])
    return {t.name: tensors[t.name] for t in kg.outputs}


def _kernel_tensors(low: KernelLowering, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Flat views of the kernel's arguments; the tensors it saves start as NaN (never written)."""
    flat = {t: tensors[t].reshape(-1) for t in low.args if t in tensors}
    for t in low.saves_tensors():
        flat[t] = np.full(math.prod(low.tensor_shapes[t]), np.nan)
    return flat


def decompose(e: np.ndarray, shape: Sequence[int], vec: int = 1) -> Index:
    """``render_expr.decompose`` on index arrays: a flat item index split over a row-major shape (the
    last dim in steps of ``vec``); the outermost split dim is not reduced modulo its extent."""
    idx: Index = [0] * len(shape)
    rest = e
    n = len(shape)
    for d in range(n - 1, -1, -1):
        ext = shape[d] // vec if d == n - 1 else shape[d]
        if ext == 1:
            continue
        inner = math.prod(shape[:d])
        v = rest if inner == 1 else rest % ext
        idx[d] = v * vec if d == n - 1 else v
        if inner > 1:
            rest = rest // ext
    return idx


def offset(strides: Sequence[int], idx: Index) -> np.ndarray:
    return np.asarray(sum((i * s for i, s in zip(idx, strides, strict=True)), start=np.int64(0)))


def bcast(idx: Index, tile: Sequence[int], out: Sequence[int]) -> Index:
    return [0 if t == 1 and o != 1 else i for i, t, o in zip(idx, tile, out, strict=True)]


def active(sw: Sweep) -> np.ndarray:
    """The item indices ``e = tid + j * threads`` that pass the sweep's guard."""
    e = np.arange(sw.per * sw.threads, dtype=np.int64)
    return e if sw.bound is None else e[e < sw.bound]


class _Block:
    """One thread block of a lowered kernel, run from the prologue to the savers."""

    def __init__(self, low: KernelLowering, tensors: dict[str, np.ndarray], coord: tuple[int, ...]) -> None:
        self.low = low
        self.g = tensors
        self.coord = coord
        where = f"{low.kernel.name!r} block {coord}"
        self.sm = Smem(low.smem_bytes, low.all_bufs(), where)
        self.slots: dict[str, int] = {}  # ring tile -> the slot this iteration reads
        self.held: dict[str, list[int]] = {lp.buf.name: [-1] * lp.buf.copies for lp in low.loads if lp.buf.ring}
        self.direct = {lp.buf.name: lp for lp in low.loads if lp.buf.direct}  # tiles read in global memory
        self.it = 0
        self.acc: dict[int, np.ndarray] = {}
        self.run_max: dict[int, np.ndarray] = {}
        self.lane_run = 1  # a reduction's lanes read runs of this many elements (``row_values``)
        self.run_axis = -1  # ... along this axis of the tile index: the last, or the next-to-last
        bid = sum(c * math.prod(low.grid[:p]) for p, c in enumerate(coord))
        self.rot = low.rotation(bid)
        self._init_accs()

    def tile(self, i: int) -> tuple[int, ...]:
        t = self.low.tiles[i]
        assert t is not None
        return t

    def origin(self, terms: tuple[tuple[int, int], ...]) -> int:
        return sum(self.coord[p] * chunk for p, chunk in terms)

    def run(self) -> None:
        low, sm = self.low, self.sm
        for lp in low.copied_loads:
            if not lp.buf.ring:
                self.copy(lp, 0, 0)
        sm.commit()
        if low.arrivals:  # ``render_kernel._staged_copies``: the one stage, a group per arrival
            by_op = {lp.op: lp for lp in low.loads if lp.buf.ring}
            for a in low.arrivals:
                for j in a.loads:
                    self.copy(by_op[j], 0, 0)
                sm.commit()
        for st in range(0 if low.arrivals else low.prefetch):
            if st < low.loop:
                for lp in low.loads:
                    if lp.buf.ring:
                        self.copy(lp, st, st)
            sm.commit()
        sm.wait(low.prologue_wait)  # (skewed ops: stage 0 as well, for iteration 0's)
        for i, ph in enumerate(low.phases):
            if ph is Phase.PRE:
                self.compute(i)
        if low.skewed:  # ``render_kernel._prologue``: iteration 0's skewed ops
            self.skew_ahead(0)
        if low.shift_first:
            self.shift_maxima()
        for it in range(low.loop):
            self.iteration(it)
        sm.wait(0)
        self.epilogue()

    def iteration(self, it: int) -> None:
        low, sm = self.low, self.sm
        self.it = it
        if low.streamed:  # ``render_kernel._streamed_loop``: no wait, refill or commit
            self.loop_ops()
            return
        if it % low.unroll == 0:  # (``KernelLowering.unroll``: one wait per chunk of iterations)
            sm.wait(low.loop_wait)
        late = low.late_refill and bool(self.held)  # ``Options.late_refill``: the loop ops, then the refill
        if not late and not low.arrivals:  # (staged arrivals: one iteration, no refill)
            self.refill(it)
        self.ring_slots(it, f"iteration {it} reads")
        for i in low.skewed:
            self.slots[low.bufs[i].name] = it & 1
        if low.skewed and it + 1 < low.loop:
            self.skew_ahead(it + 1)
        self.loop_ops()
        if late:
            self.refill(it)

    def ring_slots(self, it: int, who: str) -> None:
        """Point every ring's tile at iteration ``it``'s slot, which must hold that iteration's copy."""
        for name, held in self.held.items():
            sb = it % self.low.stages
            if held[sb] != it:
                raise self.sm.fail(f"{who} ring slot {sb} of {name}, which holds iteration {held[sb]}")
            self.slots[name] = sb

    def shift_maxima(self) -> None:
        """``render_kernel._shift_maxima``: every stage landed, then each rescaled accumulator's running
        max over all stages (stage it in ring slot it), before the loop."""
        low = self.low
        self.sm.wait(0)
        for it in range(low.loop):
            self.it = it
            self.ring_slots(it, "the shift maxima read")
            for i, ap in sorted(low.accs.items()):
                if ap.rescale is not None:
                    for e, idx in self.ew_items(i):
                        c = self.read(ap.rescale, bcast(idx, self.tile(ap.rescale), self.tile(i))) * np.ones(e.shape)
                        self.run_max[i][e] = np.fmax(self.run_max[i][e], c)

    def skew_ahead(self, it: int) -> None:
        """``render_kernel._skewed_block``: the skewed ops of iteration ``it`` from its ring slot, into
        copy ``it & 1`` of their tiles."""
        low, saved, now = self.low, dict(self.slots), self.it
        self.it = it
        self.ring_slots(it, f"skewed ops of iteration {it} read")
        for i in low.skewed:
            self.slots[low.bufs[i].name] = it & 1
        for i in low.skewed:
            self.materialise(i, low.bufs[i], own=True)
        self.slots, self.it = saved, now

    def refill(self, it: int) -> None:
        """Iteration ``it + prefetch``'s ring tiles into its slot, committed as one group."""
        low = self.low
        nx = it + low.prefetch
        if nx < low.loop:
            for lp in low.loads:
                if lp.buf.ring:
                    self.copy(lp, nx % low.stages, nx)
        self.sm.commit()

    def loop_ops(self) -> None:
        waits = self.low.arrival_waits()  # staged arrivals: a wait before each one's first reader
        for i, op in enumerate(self.low.kernel.ops):
            if (self.low.phases[i] is Phase.LOOP or isinstance(op, Accum)) and i not in self.low.skewed:
                if i in waits:
                    self.sm.wait(waits[i])
                self.compute(i)

    # ---- global memory
    def copy(self, lp: LoadPlan, slot: int, it: int) -> None:
        """``load_<tile>``: the sweep's cp.async copies of ``vec`` elements, global -> slot ``slot``."""
        tile, buf = lp.buf.shape, lp.buf
        e = active(lp.sweep)
        idx = decompose(e, tile, lp.vec)
        kt = (it + self.rot) % self.low.loop  # the iteration whose tiles this stage holds (rotated order)
        src = self.origin(lp.block_terms) + kt * lp.iter_stride + offset(global_strides(self.shape(lp.tensor)), idx)
        what = f"load of {lp.tensor} (op {lp.op})"
        ok = self.copied(lp, idx, kt) * np.ones(e.shape, dtype=bool)  # (a padded tail's zeros: nothing read)
        g = global_index(self.g[lp.tensor], np.broadcast_to(src, e.shape)[ok], lp.vec, buf.esize, what, lp.tensor)
        vals = np.zeros((e.size, lp.vec))
        vals[ok] = self.g[lp.tensor][g].reshape(-1, lp.vec)
        dst = swizzle_at(buf, idx) if buf.swizzle else offset(buf.strides, idx)
        self.sm.write(buf, slot, dst, vals, what, asynchronous=lp.nbytes >= 4)
        if buf.ring:
            self.held[buf.name][slot] = it

    def copied(self, lp: LoadPlan, idx: Index, it: int) -> np.ndarray | bool:
        """Which copies of a Load read memory: those before a padded tail's end (``render_loader``)."""
        tails = self.low.tails
        if tails is None or lp.op not in tails.loads:
            return True
        return np.asarray(idx[tails.loads[lp.op][1]]) < tails.valid - tails.load_origin(lp.op).start(self.coord, it)

    def within(self, i: int, idx: Index) -> np.ndarray | bool:
        """Which elements ``idx`` of value ``i``'s tile are before a padded tail's end this iteration
        (``render_load.tail_conds``)."""
        tails, keep = self.low.tails, np.asarray(True)
        if tails is not None:
            for a, o in tails.padded_axes(i):
                keep = keep & (np.asarray(idx[a]) < tails.valid - o.start(self.coord, self.it))
        return keep

    def save(self, i: int) -> None:
        """The saver of Save op ``i``: ``vec`` consecutive values of a row per store."""
        op = self.low.kernel.ops[i]
        assert isinstance(op, Save)
        sp = self.low.saves[i]
        e = active(sp.sweep)
        idx = decompose(e, self.tile(op.x), sp.vec)
        vals = np.stack([self.read(op.x, [*idx[:-1], idx[-1] + k]) * np.ones(e.shape) for k in range(sp.vec)],
                        axis=-1)
        dst = self.origin(sp.block_terms) + offset(global_strides(self.shape(op.tensor)), idx)
        keep = self.within(op.x, idx) * np.ones(e.shape, dtype=bool)  # (``render_save``: not past a tail)
        what = f"save of {op.tensor} (op {i})"
        g = global_index(self.g[op.tensor], np.broadcast_to(dst, e.shape)[keep], sp.vec, 2 if sp.half else 4, what,
                         op.tensor)
        self.g[op.tensor][g] = vals[keep].reshape(-1)

    def shape(self, tensor: str) -> tuple[int, ...]:
        return tuple(self.low.tensor_shapes[tensor])

    # ---- values
    def read(self, i: int, idx: Index) -> np.ndarray:
        """Value ``i`` at a tile index (``Exprs.read``): inline ops computed, tiles read (copies added)."""
        store = self.low.stores[i]
        if store is Store.INLINE:
            return self.define(i, idx)
        if store is Store.FRAG:
            raise EmulationError(f"op {i}: an mma fragment is read through its accumulator")
        return self.buf_read(self.low.bufs[i], idx, f"read of op {i}")

    def buf_read(self, b: Buf, idx: Index, what: str) -> np.ndarray:
        if b.direct:  # ``Exprs.pointer``: the tile in place in global memory
            lp = self.direct[b.name]
            kt = (self.it + self.rot) % self.low.loop  # a streamed tile: this iteration's (``gi_<tile>``)
            src = self.origin(lp.block_terms) + kt * b.gstep + offset(b.gstrides, idx)
            g = global_index(self.g[lp.tensor], src, 1, b.esize, what, lp.tensor)
            return self.g[lp.tensor][g].reshape(np.shape(src))
        off = self.tile_offset(b, idx)
        if b.ring:
            return self.sm.read(b, self.slots.get(b.name, 0), off, what)
        return sum((self.sm.read(b, c, off, what) for c in range(b.copies)), start=np.zeros(np.shape(off)))

    def tile_offset(self, b: Buf, idx: Index) -> np.ndarray:
        """``Exprs.tile_offset``: padded rows, or swizzled chunks (a lane's run read at its base where the
        run lies along the stored rows); a transposed load's tile by its stored index."""
        along = self.run_axis  # the run's axis in the tile as stored (``RunReads._vectorisable``)
        if b.transposed:
            idx, along = stored_index(idx), {-1: -2, -2: -1}.get(along, along)
        if not b.swizzle:
            return offset(b.strides, idx)
        if self.lane_run > 1 and along == -1:
            base = idx[-1] - idx[-1] % self.lane_run
            return swizzle_at(b, [*idx[:-1], base]) + (idx[-1] - base)
        return swizzle_at(b, idx)

    def define(self, i: int, idx: Index) -> np.ndarray:
        """The op's own computation (``Exprs.define``)."""
        low = self.low
        op = low.kernel.ops[i]
        tile = self.tile(i)
        match op:
            case UnaryOp(fn, x, scalar):
                c = scalar.resolve(dict(low.scalars)) if scalar is not None else 0.0
                return UNARY_NUMPY[fn](self.read(x, bcast(idx, self.tile(x), tile)), c)
            case BinaryOp(fn, a, b):
                va, vb = self.read(a, bcast(idx, self.tile(a), tile)), self.read(b, bcast(idx, self.tile(b), tile))
                return shifted(va, vb) if i in low.shifts else BINARY_NUMPY[fn](va, vb)
            case Accum(x=x) if low.stores[i] is Store.INLINE:  # one iteration: the accumulator is its value
                return self.read(x, idx)
            case Load() | MatmulOp() | ReduceOp() | Accum():
                return self.read(i, idx)
        raise EmulationError(f"op {i}: no elementwise definition for {op!r}")

    # ---- ops
    def compute(self, i: int) -> None:
        """Op ``i`` in the prologue or the loop body (``render_kernel._compute``)."""
        low = self.low
        op = low.kernel.ops[i]
        match op:
            case UnaryOp() | BinaryOp() if low.stores[i] is Store.H16:
                self.materialise(i, low.bufs[i], own=True)
            case MatmulOp():
                self.matmul(i)
            case ReduceOp(fn, x, dim):
                self.reduce(i, x, dim, fn)
            case Accum() if i in low.accs:
                self.accumulate(i)
        if i in low.operands and low.operands[i] is not low.bufs.get(i):
            self.materialise(i, low.operands[i], own=False)

    def materialise(self, i: int, dst: Buf, *, own: bool) -> None:
        e = active(self.low.elementwise[i])
        idx = decompose(e, self.tile(i))
        val = self.define(i, idx) if own else self.read(i, idx)
        val = np.where(self.within(i, idx), val, 0.0)  # a matmul operand is zero past a tail (``_tail_zero``)
        copy = self.slots.get(dst.name, 0) if dst.ring else 0  # (a ``Buf.parity`` tile: this iteration's copy)
        self.sm.write(dst, copy, offset(dst.strides, idx), val * np.ones(e.shape), f"materialise op {i} into {dst.name}")

    def matmul(self, i: int) -> None:
        low = self.low
        us, prod = mma(low, self.sm, i, self.slots)
        j = low.frag_acc(i)
        if low.stores[i] is not Store.FRAG:
            frag_store(low, self.sm, i, us, prod, low.bufs[i])
            return
        assert j is not None
        ap = low.accs[j]
        if ap.rescale is None:
            self.acc[j][us.warp, us.slot] += prod
        else:
            frag_rescale(low, self.sm, i, ap.rescale, us, self.acc[j], self.run_max[j], prod, self.slots)

    def outputs(self, x: int, dim: int, group: int, count: int) -> tuple[np.ndarray, Index, tuple[int, ...], bool]:
        """A lane-group reduction's output indices ``o`` (``(j * warps + warp) * groups + g``), the
        ones within the tile, their tile index, the output shape, and whether a guard is printed."""
        tile_x = self.tile(x)
        out = tuple(1 if d == dim else s for d, s in enumerate(tile_x))
        per = outputs_per_pass(group, self.low.warps)
        o = np.arange(count * per, dtype=np.int64)
        guard = math.prod(out) % per != 0
        return o, decompose(o, out), out, guard

    def row_values(self, x: int, dim: int, idx: Index, n: int, run: int = 1) -> np.ndarray:
        """Value ``x`` along ``dim`` for each of ``n`` outputs at ``idx``: shape [n, extent]. ``run`` > 1:
        the lanes read runs of that many elements of the last dim, a swizzled tile at each run's
        swizzled base plus the offset in the run (``render_expr.Run``)."""
        extent = self.tile(x)[dim]
        r = np.arange(extent, dtype=np.int64).reshape(1, -1)
        full: Index = [np.broadcast_to(np.asarray(v).reshape(-1, 1), (n, 1)) for v in idx]
        full[dim] = r
        self.lane_run, self.run_axis = run, dim - len(idx)
        try:
            return self.read(x, full) * np.ones((n, extent))
        finally:
            self.lane_run, self.run_axis = 1, -1

    def tail_masked(self, x: int, dim: int, rows: np.ndarray, identity: float) -> np.ndarray:
        """Rows of ``x`` along ``dim`` with a padded tail's elements replaced by ``identity`` (``render_reduce._walk``)."""
        tails = self.low.tails
        o = None if tails is None else tails.axes[x][dim]
        if o is None or tails is None:
            return rows
        return np.where(np.arange(rows.shape[1]) < tails.valid - o.start(self.coord, self.it), rows, identity)

    def reduce(self, i: int, x: int, dim: int, fn: Reduce) -> None:
        """A ReduceOp pass: every output within the tile reduces its row and writes its tile."""
        g = self.low.groups[i]
        count = -(-math.prod(self.tile(i)) // outputs_per_pass(g, self.low.warps))
        o, idx, out, guard = self.outputs(x, dim, g, count)
        keep = o < math.prod(out) if guard else np.ones(o.shape, dtype=bool)
        idx = [v[keep] if isinstance(v, np.ndarray) else v for v in idx]
        rows = self.tail_masked(x, dim, self.row_values(x, dim, idx, int(keep.sum()), lane_run(self.low, x, dim, g, True)),
                                0.0 if fn is Reduce.SUM else -np.inf)
        p = rows.sum(axis=1) if fn is Reduce.SUM else rows.max(axis=1)
        dst = self.low.bufs[i]
        self.sm.write(dst, 0, offset(dst.strides, idx), p, f"reduction op {i}")

    def accumulate(self, i: int) -> None:
        ap = self.low.accs[i]
        op = self.low.kernel.ops[i]
        assert isinstance(op, Accum)
        match ap.kind:
            case AccKind.FRAG:
                return  # the matmul's own call accumulates
            case AccKind.EW:
                self.ew_accumulate(i, ap.x)
            case AccKind.RED:
                assert op.reduce_dim is not None
                self.red_accumulate(i, ap.x, op.reduce_dim)

    def ew_accumulate(self, i: int, x: int) -> None:
        items = self.ew_items(i)
        for e, idx in items:  # a rescaled run reads its shift once, at its first element (``_rescaled_run``)
            self.ew_add(i, x, e, idx, items[0][1])

    def ew_items(self, i: int) -> list[tuple[np.ndarray, Index]]:
        """(register slots, element indices) of accumulator i's items: runs of ``vec`` elements
        (``render_ew_acc``), slot ``item * vec + k`` for element k of a run."""
        ap, tile = self.low.accs[i], self.tile(i)
        e = active(self.low.elementwise[i])
        idx = decompose(e, tile, ap.vec)
        return [(e * ap.vec + k, [*idx[:-1], idx[-1] + k]) for k in range(ap.vec)]

    def ew_add(self, i: int, x: int, e: np.ndarray, idx: Index, first: Index) -> None:
        ap, tile = self.low.accs[i], self.tile(i)
        v = self.read(x, bcast(idx, self.tile(x), tile)) * np.ones(e.shape)
        acc = self.acc[i]
        if ap.rescale is not None:
            c = self.read(ap.rescale, bcast(first, self.tile(ap.rescale), tile)) * np.ones(e.shape)
            acc[e] = self.rescaled(acc[e], v, self.run_max[i], e, c)
        elif ap.fn is Reduce.MAX:
            acc[e] = np.fmax(acc[e], v)
        else:
            acc[e] += v

    def rescaled(self, acc: np.ndarray, v: np.ndarray, run_max: np.ndarray, at: np.ndarray, c: np.ndarray) -> np.ndarray:
        """``acc·e^(m−m') + v·e^(c−m')`` with ``m' = max(m, c)``; the running max updated at ``at``."""
        m = run_max[at]
        mn = np.fmax(m, c)
        run_max[at] = mn
        return acc * np.where(m == mn, 1.0, np.exp(m - mn)) + v * np.where(c == mn, 1.0, np.exp(c - mn))

    def red_accumulate(self, i: int, x: int, dim: int) -> None:
        ap = self.low.accs[i]
        o, idx, out, guard = self.outputs(x, dim, ap.group, ap.count)
        keep = o < math.prod(out) if guard else np.ones(o.shape, dtype=bool)
        kidx = [v[keep] if isinstance(v, np.ndarray) else v for v in idx]
        rows = self.row_values(x, dim, kidx, int(keep.sum()), lane_run(self.low, x, dim, ap.group, False))
        p = self.tail_masked(x, dim, rows, 0.0).sum(axis=1)
        at = o[keep]
        if ap.rescale is not None:
            c = self.read(ap.rescale, bcast(kidx, self.tile(ap.rescale), out)) * np.ones(at.shape)
            self.acc[i][at] = self.rescaled(self.acc[i][at], p, self.run_max[i], at, c)
        else:
            self.acc[i][at] += p

    def _init_accs(self) -> None:
        """Register arrays: zeros, −inf for a running max (``render_acc_decl``)."""
        low = self.low
        for j, ap in low.accs.items():
            match ap.kind:
                case AccKind.FRAG:
                    self.acc[j] = np.zeros((low.warps, ap.count, 16, 16))
                    self.run_max[j] = np.full((low.warps, ap.count, 16), -np.inf)
                case AccKind.EW:
                    n = ap.count * low.threads
                    self.acc[j] = np.full(n, -np.inf) if ap.fn is Reduce.MAX else np.zeros(n)
                    self.run_max[j] = np.full(n, -np.inf)
                case AccKind.RED:
                    n = ap.count * outputs_per_pass(ap.group, low.warps)
                    self.acc[j] = np.zeros(n)
                    self.run_max[j] = np.full(n, -np.inf)

    def epilogue(self) -> None:
        """Accumulators to their tiles, then post-loop reductions and the savers."""
        low = self.low
        for j, ap in sorted(low.accs.items()):
            dst = low.bufs[j]
            what = f"accumulator op {j} to {dst.name}"
            match ap.kind:
                case AccKind.FRAG:
                    us = _all_units(low, ap.x)
                    frag_store(low, self.sm, ap.x, us, self.acc[j][us.warp, us.slot], dst)
                case AccKind.EW:
                    for e, idx in self.ew_items(j):
                        self.sm.write(dst, 0, offset(dst.strides, idx), self.acc[j][e], what)
                case AccKind.RED:
                    op = low.kernel.ops[j]
                    assert isinstance(op, Accum) and op.reduce_dim is not None
                    o, idx, out, guard = self.outputs(ap.x, op.reduce_dim, ap.group, ap.count)
                    keep = o < math.prod(out) if guard else np.ones(o.shape, dtype=bool)
                    kidx = [v[keep] if isinstance(v, np.ndarray) else v for v in idx]
                    self.sm.write(dst, 0, offset(dst.strides, kidx), self.acc[j][o[keep]], what)
        for i, op in enumerate(low.kernel.ops):
            if low.phases[i] is Phase.POST and isinstance(op, ReduceOp):
                self.compute(i)
            elif isinstance(op, Save):
                self.save(i)


def _all_units(low: KernelLowering, i: int) -> Units:
    return units(low.mmas[i], low.warps)
