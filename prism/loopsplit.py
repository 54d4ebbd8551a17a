"""Split-loop plans: a plan's first kernel's for-loop spread over a new grid dim, with a combine kernel
(its later kernels, loop-free ones of a statistics-then-element-wise pipeline, kept as they were).

A one-kernel plan whose blocks each run a long loop (decode attention over the whole KV length, a
GEMV over the whole contraction) keeps as few blocks busy as its grid has: for a decode attention of
two KV heads, two blocks read megabytes while the other SMs idle. This rule builds the flash-decoding
shape from any such plan: the *split* kernel is the plan's loop phase on the grid ``(*grid, s)``, grid
dim ``s`` splitting each loop-varying Load's loop dim before the loop does (``prism.ir``: grid first,
then each chunk by the loop); it saves every accumulator the post-loop phase uses as a float32
partial, concatenated along a dim of the tile that no grid dim writes, and for each online-softmax
accumulator (``Accum(x, rescale=c)``) also its chunk's running max ``Accum(c, fn=MAX)``. The
*combine* kernel runs on the plan's grid with ``s`` as its loop: it accumulates the partials the way
the original accumulated the iterations (sum, max, or a sum rescaled by the partial maxes:
``Σ_p N_p · exp(M_p − max M)`` is the whole loop's ``Σ_i x_i · exp(c_i − max c)``), then runs the
plan's post-loop ops and saves. Code generation fuses the two into one launch where each combining
block's partials come from its own split blocks (``prism.codegen.fuse``).

Every plan is proven against the whole program before it is used (``prism.verify``); one that is not
is dropped. Like every cached search result the plans are size-free: ``s`` is a size symbol that
the tuner chooses per shape (``s = 1`` is the original plan with one more launch, so the tuner's
legal sizes decide whether splitting pays).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.errors import IRError
from prism.graph import Graph
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    OpPhase,
    ReduceOp,
    Save,
    UnaryOp,
    check_structure,
    op_args,
    renumbered,
)
from prism.ops import Reduce
from prism.rowwise import Prover

# proven split plans per program, from its first one-kernel plans in the search's order
MAX_PLANS = 4
SPLIT = "s"  # the split grid dim's size symbol (a fresh name is taken where the plan uses it)


@dataclass(frozen=True)
class Partial:
    """A value the split kernel saves as ``tensor``: the accumulator at op ``x`` of the original
    kernel or, with ``running_max``, the running max of its loop op ``x`` (a rescaling shift).
    The combine accumulates it with ``fn``, rescaled by the maxes of partial ``shift`` if given. With
    ``reduced``, the split kernel saves the accumulator reduced by the post-loop ReduceOp at that op
    index (its only use, and one that commutes with the combine: ``_reduced``), and the combine's
    accumulator stands for that ReduceOp."""

    x: int
    tensor: str
    fn: Reduce = Reduce.SUM
    shift: str | None = None
    running_max: bool = False
    reduced: int | None = None


def split_plans(graph: Graph, plans: Sequence[KernelGraph], program: str, prove: Prover) -> list[KernelGraph]:
    """Up to ``MAX_PLANS`` proven split-loop plans of ``graph``, one from each of ``plans`` whose first
    kernel is a custom kernel with a loop and at most two grid dims (``split_loop``), each followed by
    its variant with the combine spread over the output's columns (``spread_combine``) where it has one."""
    built = (p for kg in plans if (p := split_loop(graph, kg, program)) is not None)
    out: list[KernelGraph] = []
    for p in itertools.islice(built, MAX_PLANS):
        if _proven(prove, graph, p):
            out.append(p)
            if (wide := spread_combine(graph, p, program)) is not None and _proven(prove, graph, wide):
                out.append(wide)
    return out


def _proven(prove: Prover, graph: Graph, plan: KernelGraph) -> bool:
    """``prove``'s verdict; a plan whose shapes do not fit the program (IRError on the way) is not one."""
    try:
        return prove(graph, plan)
    except IRError:
        return False


def split_loop(graph: Graph, kg: KernelGraph, program: str) -> KernelGraph | None:
    """``kg``'s first kernel as a split kernel and a combine kernel (module docstring), its later
    kernels after them as they were (a pipeline's statistics kernel split, its element-wise kernel
    kept); None when that kernel is not a looping custom kernel of at most two grid dims with its
    saves on one grid map, when a later kernel is not a custom kernel without a loop, or when the
    result is not valid IR."""
    k, later = kg.kernels[0], kg.kernels[1:]
    if not isinstance(k, CustomKernel) or k.loop == 1 or len(k.grid) > 2:
        return None
    if any(not isinstance(lk, CustomKernel) or lk.loop != 1 for lk in later):
        return None
    saves = k.saves
    if not saves or any(sv.omap != saves[0].omap for sv in saves):
        return None
    dims = saves[0].omap  # the data dim along which each grid dim writes: the partials' too
    phases = _phases(k)
    accs = [op for op in k.ops if isinstance(op, Accum)]
    if accs and all(op.reduce_dim is None and _per_element(k, op.x) for op in accs):
        return None
    taken = {t.name for t in (*kg.inputs, *kg.outputs)} | {
        sv.tensor for lk in kg.kernels if isinstance(lk, CustomKernel) for sv in lk.saves}
    partials = _partials(k, phases, taken, _op_unit_dims(kg, k))
    s = _fresh(kg)
    split = _split_kernel(k, phases, partials, dims, _ranks(kg, k), s)
    if split is None:
        return None
    plan = KernelGraph.of(graph, program, [split, _combine_kernel(k, phases, partials, split, s), *later])
    try:
        check_structure(plan)
    except IRError:
        return None
    return plan


def _per_element(k: CustomKernel, x: int) -> bool:
    """Whether op ``x`` is computed element-wise from Loads only (no reduction or matmul on the way):
    an accumulator of it keeps one value per element an iteration reads. A plan whose accumulators
    are all such is not split: its partials would be as large as the data the split reads (a column
    sum that reduces after the loop: 32 MB of float32 partials for a 16 MB input, 2-7× slower than the
    same program's other splits on an H200, docs/off-the-suite.md "Column reductions"); beside a
    matmul's accumulator (a norm's sum of squares in a GEMV) they are small."""
    match k.ops[x]:
        case Load():
            return True
        case UnaryOp(x=a):
            return _per_element(k, a)
        case BinaryOp(a=a, b=b):
            return _per_element(k, a) and _per_element(k, b)
        case _:
            return False


def _phases(k: CustomKernel) -> list[OpPhase]:
    out: list[OpPhase] = []
    for op in k.ops:
        match op:
            case Load():
                out.append(OpPhase.LOOP)
            case Accum():
                out.append(OpPhase.POST)
            case Save():
                out.append(OpPhase.SAVE)
            case _:
                out.append(out[op_args(op)[0]])
    return out


def _ranks(kg: KernelGraph, k: CustomKernel) -> list[int]:
    """Each op's tile rank (a Save's: its value's)."""
    rank = {t.name: len(t.shape) for t in kg.inputs}
    out: list[int] = []
    for op in k.ops:
        match op:
            case Load(tensor=t):
                out.append(rank[t])
            case BinaryOp(a=a, b=b) | MatmulOp(a=a, b=b):
                out.append(max(out[a], out[b]))
            case UnaryOp(x=x) | ReduceOp(x=x) | Accum(x=x) | Save(x=x):
                out.append(out[x])
            case _:
                assert_never(op)
    return out


def _fresh(kg: KernelGraph, base: str = SPLIT) -> str:
    used = set(kg.symbols)
    return next(n for n in itertools.chain([base], (f"{base}{i}" for i in itertools.count(1))) if n not in used)


def _partials(k: CustomKernel, phases: list[OpPhase], taken: set[str], ones: list[set[int]]) -> list[Partial]:
    """The accumulators the post-loop phase uses, in op order, each after the running-max partial its
    rescaling needs (one per shift op, shared by the accumulators it rescales), each reduced before it
    is saved where ``_reduced`` allows."""
    used = {a for i, op in enumerate(k.ops) if phases[i] is not OpPhase.LOOP for a in op_args(op)}
    names = (n for n in (f"part{j}" for j in itertools.count()) if n not in taken)
    out: list[Partial] = []
    maxes: dict[int, str] = {}
    for i, op in enumerate(k.ops):
        if not isinstance(op, Accum) or i not in used:
            continue
        if op.rescale is not None and op.rescale not in maxes:
            maxes[op.rescale] = next(names)
            out.append(Partial(op.rescale, maxes[op.rescale], Reduce.MAX, running_max=True))
        out.append(Partial(i, next(names), op.fn, None if op.rescale is None else maxes[op.rescale],
                           reduced=_reduced(k, i, ones)))
    return out


# an accumulator's fn and the post-loop ReduceOp's fn that commute: the reduction of the whole loop's
# accumulator is the accumulation of the iterations' (or splits') reductions
_COMMUTING = {(Reduce.SUM, Reduce.SUM), (Reduce.MAX, Reduce.MAX)}


def _reduced(k: CustomKernel, acc: int, ones: list[set[int]]) -> int | None:
    """The post-loop ReduceOp that is the only use of accumulator ``acc`` and that the split kernel can
    apply before saving, or None: the two fns commute and a rescaling shift has extent 1 along the
    reduced dim (the shift is then one factor for the whole reduced run: ``Σ_d Σ_p N_p · exp(M_p − M)``
    is ``Σ_p exp(M_p − M) · Σ_d N_p``). A softmax over a row longer than a tile accumulates its
    exponentials tile-wide and sums them after the loop; reduced, its partials are one float32 a row
    and split, not a tile (a 128K-entry vocabulary: 2 MB of partials, which four combining blocks read
    in 13 µs on an H200; docs/off-the-suite.md, "Partials reduced before they are saved")."""
    op = k.ops[acc]
    assert isinstance(op, Accum)
    users = [j for j, u in enumerate(k.ops) if acc in op_args(u)]
    if len(users) != 1 or not isinstance(red := k.ops[users[0]], ReduceOp) or op.reduce_dim is not None:
        return None
    if (op.fn, red.fn) not in _COMMUTING or (op.rescale is not None and red.dim not in ones[op.rescale]):
        return None
    return users[0]


def _split_kernel(k: CustomKernel, phases: list[OpPhase], partials: list[Partial], dims: tuple[int | None, ...],
                  ranks: list[int], s: str) -> CustomKernel | None:
    """The loop phase and accumulators on grid ``(*k.grid, s)``, the partials saved with ``s``
    concatenating along the first dim no grid dim writes; None when a loop-varying Load's loop dim is
    also split by a grid dim, or a partial's tile has no free dim or lacks a dim a grid dim writes."""
    ops: list[BlockOp] = []
    new: dict[int, int] = {}
    for i, op in enumerate(k.ops):
        if phases[i] is not OpPhase.LOOP and not isinstance(op, Accum):
            continue
        if isinstance(op, Load):
            if op.fmap is not None and op.fmap in op.imap:
                return None
            op = Load(op.tensor, (*op.imap, op.fmap), op.fmap, op.transposed)
        new[i] = len(ops)
        ops.append(renumbered(op, new))
    for p in partials:
        x = new[p.x]
        if p.running_max:
            ops.append(Accum(x, fn=Reduce.MAX))
            x = len(ops) - 1
        if p.reduced is not None:
            red = k.ops[p.reduced]
            assert isinstance(red, ReduceOp)
            if red.dim in dims:
                return None
            ops.append(ReduceOp(red.fn, x, red.dim))
            x = len(ops) - 1
        free = next((d for d in range(ranks[p.x]) if d not in dims), None)
        if free is None or any(d is not None and d >= ranks[p.x] for d in dims):
            return None
        ops.append(Save(x, p.tensor, (*dims, free)))
    return CustomKernel(f"{k.name}_split", (*k.grid, s), k.loop, tuple(ops))


def _combine_kernel(k: CustomKernel, phases: list[OpPhase], partials: list[Partial], split: CustomKernel,
                    s: str) -> CustomKernel:
    """On ``k``'s grid with loop ``s``: each partial loaded as the split kernel saved it and
    accumulated, then ``k``'s post-loop ops and saves on the accumulated values."""
    saved = {op.tensor: op.omap for op in split.saves}
    ops: list[BlockOp] = [Load(p.tensor, saved[p.tensor][:-1], saved[p.tensor][-1]) for p in partials]
    load = {p.tensor: j for j, p in enumerate(partials)}
    new: dict[int, int] = {}
    for j, p in enumerate(partials):
        if p.running_max:
            continue
        new[p.x] = len(ops)
        if p.reduced is not None:
            new[p.reduced] = len(ops)  # the accumulated reductions are the ReduceOp's value
        ops.append(Accum(j, fn=p.fn, rescale=None if p.shift is None else load[p.shift]))
    reductions = {p.reduced for p in partials}
    for i, op in enumerate(k.ops):
        if phases[i] is not OpPhase.LOOP and not isinstance(op, Accum) and i not in reductions:
            new[i] = len(ops)
            ops.append(renumbered(op, new))
    return CustomKernel(f"{k.name}_combine", k.grid, s, tuple(ops))


def spread_combine(graph: Graph, kg: KernelGraph, program: str) -> KernelGraph | None:
    """Split plan ``kg`` with its combine kernel (the second) on one more grid dim, ``c``, over a dim
    of the output that no grid dim writes and no partial is concatenated along (attention: the head
    dim). Each combining block then reads that dim's share of the partials that have it (the
    numerator; statistics of extent 1 there, a max and a sum, whole), so the combine no longer runs
    on as few blocks as the plan's grid has (two for a decode attention of two KV heads: each read
    its ``s`` partials one after another). None when the combine's post-loop ops reduce or contract,
    or no such dim exists. The split and combine are then two launches (``prism.codegen.fuse``
    needs each split block to feed one combining block)."""
    if len(kg.kernels) < 2 or not all(isinstance(k, CustomKernel) for k in kg.kernels[:2]):
        return None
    split, comb = kg.kernels[0], kg.kernels[1]
    assert isinstance(split, CustomKernel) and isinstance(comb, CustomKernel)
    if any(isinstance(op, ReduceOp | MatmulOp) for op in comb.ops) or not comb.saves:
        return None
    loads = [op for op in comb.ops if isinstance(op, Load)]
    ones = _unit_dims(kg, split)
    rank = {t.name: len(t.shape) for t in kg.outputs}
    omap = comb.saves[0].omap
    if any(sv.omap != omap or sv.tensor not in rank for sv in comb.saves):
        return None
    free = [d for d in range(rank[comb.saves[0].tensor]) if d not in omap and all(ld.fmap != d for ld in loads)]
    if not free:
        return None
    d, c = free[-1], _fresh(kg, "c")
    ops = tuple(_widened(op, d, ones) for op in comb.ops)
    wide = CustomKernel(f"{comb.name}_wide", (*comb.grid, c), comb.loop, ops)
    plan = KernelGraph.of(graph, program, [split, wide, *kg.kernels[2:]])
    try:
        check_structure(plan)
    except IRError:
        return None
    return plan


def _widened(op: BlockOp, d: int, ones: dict[str, set[int]]) -> BlockOp:
    """``op`` of a combine kernel given one more grid dim over data dim ``d``: a Load of a partial
    whose extent along ``d`` is 1 reads it whole, others their share; Saves write their share."""
    match op:
        case Load(tensor=t):
            return Load(t, (*op.imap, None if d in ones.get(t, set()) else d), op.fmap, op.transposed)
        case Save():
            return Save(op.x, op.tensor, (*op.omap, d))
        case _:
            return op


def _unit_dims(kg: KernelGraph, k: CustomKernel) -> dict[str, set[int]]:
    """Per tensor ``k`` saves, the dims of extent 1 at every size (``_op_unit_dims``)."""
    ones = _op_unit_dims(kg, k)
    return {op.tensor: ones[i] for i, op in enumerate(k.ops) if isinstance(op, Save)}


def _op_unit_dims(kg: KernelGraph, k: CustomKernel) -> list[set[int]]:
    """Per op of ``k``, the dims of its tile of extent 1 at every size: reduced by a ReduceOp or an
    accumulator, or of extent 1 in every input that reaches them."""
    shapes = {t.name: t.shape for t in kg.inputs}
    ones: list[set[int]] = []
    for op in k.ops:
        match op:
            case Load(tensor=t):
                ones.append({a for a, n in enumerate(shapes.get(t, ())) if n == 1})
            case UnaryOp(x=x):
                ones.append(ones[x])
            case BinaryOp(a=a, b=b):
                ones.append(ones[a] & ones[b])
            case ReduceOp(x=x, dim=dim):
                ones.append(ones[x] | {dim})
            case Accum(x=x, reduce_dim=dim):
                ones.append(ones[x] | ({dim} if dim is not None else set()))
            case MatmulOp():
                ones.append(set())  # conservative: rows and columns of a product taken as wide
            case Save(x=x):
                ones.append(ones[x])
            case _:
                assert_never(op)
    return ones
