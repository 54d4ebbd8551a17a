"""Layout typing of concrete mappings: a cheap necessary condition for a μGraph to be right.

For every tile value of a block graph and every parallel dim p of its kernel (grid dims and the
for-loop), the value is one of

* ``R``        replicated: the same for every coordinate along p,
* ``S(a)``     the slice (by the coordinate along p) of data dim ``a`` of the logical tensor,
* ``P``        a partial sum: the logical tensor is the sum over the coordinates along p,

or it is ill-typed. A value may also be *folded* along data dims: an accumulator that sums slices
of dim ``a`` over the loop leaves a tensor whose sum over ``a`` is right, so ``a`` must be summed
later (only linear ops may come in between); and *scaled* by a power of a loop size (a loop that
sums identical iterations), right only if the factor cancels (a softmax's ratio) before a save.

The rules follow the interpreter's semantics (a loader slices, a matmul of operands sliced along
the contraction dim gives partial sums, an accumulator sums over the loop, a saver places each
block's tile by its grid coordinate). A mapping whose values are ill-typed at some op computes
something that is not the program for general sizes (an ``exp`` of a partial sum, a saver writing
copies into an output, a division of two partial sums, a binary op whose operands are sliced along
different dims), so it is dropped before verification. A partial sum (or a slice of another dim,
or a copy) saved by one kernel is *placed by block* along the saver's dim; a later kernel that
slices that dim by the same size symbol reads one block per coordinate, with the layout the block
had (split-K / split-KV: one partial sum per coordinate).

A max over a dim split along a parallel dim (an online softmax's per-chunk max) is *shifted*
(``X``) along it: each block holds the max of its own chunk, and what is computed from it (the
chunk's exponentials) depends on the block's coordinate in a way no layout above describes. A
rescaled accumulator over the loop (or a running max) turns values shifted along the loop into
replicated ones; along grid dims they stay shifted until a later kernel reads them back one block
per coordinate (saved shifted values are placed by block, like partial sums) and rescales them.
Shifted values are never rejected by themselves (a shift can cancel algebraically, as in
exp(x - m_c) · exp(m_c - M)); what is rejected is a max of a partial sum, a read of placed
blocks that does not take one block per coordinate, and a *plain* sum over the loop of values
shifted along it (each term carries another chunk's max) unless some op combined two shifted values
on the way (a shift that may cancel: such a value is *mixed*, and its plain sum is left untyped).
A sum over a shifted dim (a matmul's contraction, a sum) gives a *sum of shifted terms*; a product or
ratio of two of them (a chunk's own softmax, N_c / D_c) cancels the shifts but not the partial sums,
so it is shifted and not mixed: summing such values across chunks plainly is rejected, while the
log-sum-exp merge (O_c · exp(L_c − L), a product with another shifted value) is mixed and kept.
An accumulator over a loop of one iteration is its value. Max and rescaled accumulators over
anything else are not typed: they and what depends on them are left unchecked (to the screen and the
proof). An idle loop's accumulators (rescaled sums of identical iterations) stay untyped too: the
plan is right once ``mapping.without_idle_loops`` sets the loop to one iteration.

The typing only rejects; what it accepts still goes through the numeric screen and egglog. It is
deliberately narrow where plans are exotic (a dim of placed blocks read whole or by another size):
those are rejected, which can only lose plans, never admit a wrong one. The search's soundness
tests (brute force over every concrete μGraph) check that the typing keeps every
interpreter-correct one-kernel plan, and tests/test_layout_screen.py that it keeps the hand plans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    ReduceOp,
    Save,
    Size,
    UnaryOp,
    op_args,
)
from prism.memo import remember
from prism.ops import Binary, Reduce, Unary

Tag = tuple[str, int]  # R, P, X or ("S", dim)
R: Tag = ("R", -1)
P: Tag = ("P", -1)
X: Tag = ("X", -1)  # shifted by the block's own chunk max (module docstring)
Power = tuple[tuple[str, int], ...]  # (size symbol, exponent), sorted, no zero exponents


def _times(a: Power, b: Power, sign: int = 1) -> Power:
    out = dict(a)
    for sym, e in b:
        out[sym] = out.get(sym, 0) + sign * e
    return tuple(sorted((k, e) for k, e in out.items() if e))
LINEAR_UNARY = frozenset({Unary.NEG, Unary.SCALE})


def _s(a: int) -> Tag:
    return ("S", a)


@dataclass(frozen=True)
class _Val:
    tags: tuple[Tag, ...]  # one per parallel dim of the kernel (grid dims, then the loop)
    shape: tuple[int, ...]  # logical shape (1 marks a broadcastable dim)
    folded: frozenset[int] = frozenset()  # dims whose slices were summed by a loop: must be summed later
    power: Power = ()  # the value is Π size**e times its logical value (a loop summed identical copies)
    mixed: bool = False  # some op combined two shifted values (their shifts may cancel: ``_plain_shifted``)
    summed: frozenset[int] = frozenset()  # parallel dims along which it is a sum of shifted terms (``_binary``)

    def __post_init__(self) -> None:  # a sum of shifted terms only where the value is still shifted
        if self.summed:
            object.__setattr__(self, "summed", frozenset(p for p in self.summed if self.tags[p] == X))


class IllTyped(Exception):
    """A mapping whose layout cannot be right; the message says where and why."""


@dataclass(frozen=True)
class _Stored:
    shape: tuple[int, ...]  # logical shape of the value the kernel saved
    folded: frozenset[int]
    power: Power
    stacks: tuple[tuple[int, Size, Tag], ...]  # (stored dim, grid size, tag): blocks placed by coordinate
    mixed: bool = False
    summed: frozenset[int] = frozenset()  # stored dims whose placed blocks are sums of shifted terms


def _fold_binary(fn: Binary, a: _Val, b: _Val, where: str) -> frozenset[int]:
    """Folded sums are linear: + and - of two alike, * or / by a value that is constant along the dims."""
    if not (a.folded or b.folded):
        return frozenset()
    if a.folded == b.folded and fn in (Binary.ADD, Binary.SUB):
        return a.folded
    if not b.folded and fn in (Binary.MUL, Binary.DIV) and all(b.shape[d] == 1 for d in a.folded):
        return a.folded
    if not a.folded and fn is Binary.MUL and all(a.shape[d] == 1 for d in b.folded):
        return b.folded
    raise IllTyped(f"{where}: {fn.value} of a folded sum")


def _binary(fn: Binary, a: _Val, b: _Val, where: str) -> _Val:
    shape = tuple(x if y == 1 else y for x, y in zip(a.shape, b.shape, strict=True))
    folded = _fold_binary(fn, a, b, where)
    power = {Binary.MUL: _times(a.power, b.power), Binary.DIV: _times(a.power, b.power, -1)}.get(fn, a.power)
    if fn in (Binary.ADD, Binary.SUB, Binary.MAXIMUM, Binary.MINIMUM) and a.power != b.power:
        raise IllTyped(f"{where}: {fn.value} of values scaled differently by the loop size")
    tags: list[Tag] = []
    for ta, tb in zip(a.tags, b.tags, strict=True):
        if (ta == tb and ta != P) or (ta[0] == "S" and tb == R and b.shape[ta[1]] == 1):
            tags.append(ta)
        elif tb[0] == "S" and ta == R and a.shape[tb[1]] == 1:
            tags.append(tb)
        elif X in (ta, tb):
            tags.append(X)
        elif P in (ta, tb) and _partial_ok(fn, ta, tb):
            tags.append(P)
        else:
            raise IllTyped(f"{where}: {fn.value} of operands laid out as {ta} and {tb}")
    # a product or ratio of two sums of shifted terms (a chunk's own softmax, N_c / D_c): the shifts cancel,
    # but each factor is one chunk's partial sum, so the value is not shifted the way a correction undoes
    ratio = a.summed & b.summed if fn in (Binary.MUL, Binary.DIV) else frozenset()
    return _Val(tuple(tags), shape, folded, power, _mixed(a, b, ratio), (a.summed | b.summed) - ratio)


def _mixed(a: _Val, b: _Val, ratio: frozenset[int] = frozenset()) -> bool:
    """Either operand mixed, or both shifted along one parallel dim (``exp(x − m_c) · exp(m_c)``) other
    than those of ``ratio`` (both sums of shifted terms there: their shifts cancel, their partial sums not)."""
    return a.mixed or b.mixed or any(ta == X and tb == X and p not in ratio
                                     for p, (ta, tb) in enumerate(zip(a.tags, b.tags, strict=True)))


def _partial_ok(fn: Binary, ta: Tag, tb: Tag) -> bool:
    if ta == P and tb == P:
        return fn in (Binary.ADD, Binary.SUB)
    if ta == P and tb == R:
        return fn in (Binary.MUL, Binary.DIV)
    if ta == R and tb == P:
        return fn is Binary.MUL
    return False


def _matmul(a: _Val, b: _Val, where: str) -> _Val:
    ra, rb = len(a.shape), len(b.shape)
    ak, am, bk, bn = ra - 1, ra - 2, rb - 2, rb - 1
    batch = ra - 2
    shape = (*a.shape[:-2], a.shape[-2], b.shape[-1])
    if rb == ra:
        shape = (*(x if y == 1 else y for x, y in zip(a.shape[:-2], b.shape[:-2], strict=True)), a.shape[-2], b.shape[-1])
    tags: list[Tag] = []
    for ta, tb in zip(a.tags, b.tags, strict=True):
        if ta == R and tb == R:
            tags.append(R)
        elif X in (ta, tb):
            tags.append(X)
        elif ta == ("S", ak) and tb == ("S", bk):
            tags.append(P)
        elif ta == ("S", am) and tb == R:
            tags.append(_s(ra - 2))
        elif ta == R and tb == ("S", bn):
            tags.append(_s(ra - 1))
        elif (ta, tb) in ((P, R), (R, P)):
            tags.append(P)
        elif ta[0] == "S" and ta[1] < batch:
            if not ((rb == ra and tb == ta) or (tb == R and (rb < ra or b.shape[ta[1]] == 1))):
                raise IllTyped(f"{where}: matmul of operands laid out as {ta} and {tb}")
            tags.append(ta)
        elif tb[0] == "S" and rb == ra and tb[1] < batch and ta == R and a.shape[tb[1]] == 1:
            tags.append(tb)
        else:
            raise IllTyped(f"{where}: matmul of operands laid out as {ta} and {tb}")
    if b.folded or ak in a.folded:
        raise IllTyped(f"{where}: matmul of a folded sum")
    # a matmul sums over its contraction: a sum of shifted terms wherever it is shifted
    return _Val(tuple(tags), shape, a.folded, _times(a.power, b.power), _mixed(a, b), frozenset(range(len(tags))))


def _split(x: _Val, dim: int) -> bool:
    """Is data dim ``dim`` of ``x`` sliced or partial along some parallel dim?"""
    return any(t == _s(dim) or t == P for t in x.tags)


def _reduce(x: _Val, dim: int, linear: bool, where: str, skip: int | None = None) -> _Val:
    tags: list[Tag] = []
    for p, t in enumerate(x.tags):
        if p == skip:
            tags.append(t)
        elif t == _s(dim) or t == P:
            if not linear:
                raise IllTyped(f"{where}: a max over a dim that is split or partial along a parallel dim")
            tags.append(P)
        else:
            tags.append(t)
    shape = tuple(1 if i == dim else s for i, s in enumerate(x.shape))
    if x.folded and not linear:
        raise IllTyped(f"{where}: a max of a folded sum")
    summed = frozenset(range(len(tags))) if linear else x.summed
    return _Val(tuple(tags), shape, x.folded - {dim}, x.power, x.mixed, summed)


def _load(op: Load, k: CustomKernel, shapes: Mapping[str, tuple[int, ...]], stored: Mapping[str, _Stored],
          where: str) -> _Val:
    sizes: list[Size] = [*k.grid, k.loop]
    maps = [*op.imap, op.fmap]
    if op.tensor in stored:
        st = stored[op.tensor]
        shape, stacks, folded, power = st.shape, {a: (sym, t) for a, sym, t in st.stacks}, st.folded, st.power
        mixed, summed = st.mixed, st.summed
    else:
        shape, stacks, folded, power, mixed, summed = shapes[op.tensor], {}, frozenset(), (), False, frozenset()
    for a, (sym, _) in stacks.items():
        qs = [q for q, m in enumerate(maps) if m == a]
        if len(qs) != 1 or sizes[qs[0]] != sym:
            raise IllTyped(f"{where}: blocks placed along dim {a} of {op.tensor!r} are not read one per coordinate")
    tags: list[Tag] = [R if a is None else stacks[a][1] if a in stacks else _s(a) for a in maps]
    return _Val(tuple(tags), shape, folded, power, mixed, frozenset(q for q, a in enumerate(maps) if a in summed))


def check_layout(kg: KernelGraph, assigned: int | None = None, *, repeats: bool = True,
                 stored: dict[str, _Stored] | None = None) -> None:
    """Raise ``IllTyped`` unless every value of ``kg`` has a layout; only the first ``assigned`` loads
    and saves (in kernel order) and the ops that depend on them alone are checked when given.
    ``repeats=False`` also rejects a loop that sums identical iterations (right only when the
    repeats cancel, and never faster than the same plan without them). ``stored``: what kernels
    before ``kg``'s saved, by tensor; ``kg``'s savers add to it (mapping instantiation checks one
    kernel at a time)."""
    shapes = {t.name: t.shape for t in kg.inputs}
    outputs = frozenset(t.name for t in kg.outputs)
    stored = {} if stored is None else stored
    shapes_key = tuple(sorted(shapes.items()))
    seen = 0
    for k in kg.kernels:
        if not isinstance(k, CustomKernel):
            return
        if assigned is None:
            _check_kernel(k, shapes, shapes_key, outputs, stored, repeats=repeats)
            continue
        extend_layout(k, shapes, outputs, stored, [None] * len(k.ops), max(0, assigned - seen), repeats=repeats)
        seen += sum(isinstance(op, Load | Save) for op in k.ops)


# Whole-kernel verdicts of ``check_layout`` by (kernel, program inputs' shapes, outputs, repeats, what earlier
# kernels stored): why it is ill-typed, or what it stores. A mapping's kernels recur across the mappings of a
# candidate (a split graph's first kernel beside each of its combines: 3,559 distinct of 46,000 checked in a
# decode attention's part, docs/search-speed.md), so each is typed once per worker.
_KERNELS: dict[tuple[object, ...], str | tuple[tuple[str, _Stored], ...]] = {}
KERNELS_LIMIT = 10_000


def _check_kernel(k: CustomKernel, shapes: Mapping[str, tuple[int, ...]], shapes_key: tuple[object, ...],
                  outputs: frozenset[str], stored: dict[str, _Stored], *, repeats: bool) -> None:
    """``extend_layout`` of the whole kernel ``k`` (``shapes_key``: ``shapes`` sorted), its verdict
    remembered in ``_KERNELS``."""
    key = (k, shapes_key, outputs, repeats, tuple(sorted(stored.items())))
    got = _KERNELS.get(key)
    if got is None:
        before = dict(stored)
        try:
            extend_layout(k, shapes, outputs, stored, [None] * len(k.ops), None, repeats=repeats)
            got = tuple((t, v) for t, v in stored.items() if before.get(t) != v)
        except IllTyped as e:
            got = str(e)
        remember(_KERNELS, KERNELS_LIMIT, key, got)
    if isinstance(got, str):
        raise IllTyped(got)
    stored.update(got)


Typing = list["_Val | None"]  # per op of a kernel: its layout, None while not typed (yet)


def extend_layout(k: CustomKernel, shapes: Mapping[str, tuple[int, ...]], outputs: frozenset[str],
                  stored: dict[str, _Stored], vals: Typing, assigned: int | None, *, repeats: bool = True) -> None:
    """Type the ops of kernel ``k`` that ``vals`` does not type yet and that depend only on its first
    ``assigned`` loads and saves (all when None); ``vals`` and ``stored`` are updated in place.

    A value once typed never changes when more loads and saves are assigned, so the mapping walk
    carries ``vals`` from one level to the next and types only what the new level completes:
    the same verdict as checking the whole prefix again (``check_layout``)."""
    todo = []
    seen = 0
    for j, op in enumerate(k.ops):
        if isinstance(op, Load | Save):
            seen += 1
            if assigned is not None and seen > assigned:
                continue  # not assigned yet: it and what depends on it are not checked
        todo.append(j)
    type_ops(k, k.ops, todo, shapes, outputs, stored, vals, repeats=repeats)


def type_ops(k: CustomKernel, ops: Sequence[BlockOp], todo: Sequence[int], shapes: Mapping[str, tuple[int, ...]],
             outputs: frozenset[str], stored: dict[str, _Stored], vals: Typing, *, repeats: bool = True) -> None:
    """Type ops ``todo`` (increasing, assigned) of ``ops`` (kernel ``k``'s, with its sizes) that
    ``vals`` does not type yet and whose arguments it types; ``vals`` and ``stored`` are updated in
    place (``extend_layout``; the mapping walk knows which ops each of its levels makes ready)."""
    sizes: Sequence[Size] = [*k.grid, k.loop]
    trivial = [s == 1 for s in sizes]
    loop = len(k.grid)
    idle = not _varying(ops)
    for j in todo:
        if vals[j] is not None:
            continue
        op = ops[j]
        args = [vals[a] for a in op_args(op)]
        if any(v is None for v in args):
            continue  # depends on a load not assigned yet, or on a value that is not typed
        v = _type_op(op, k, [v for v in args if v is not None], shapes, outputs, stored, trivial, loop,
                     repeats, f"kernel {k.name} op {j}", idle=idle)
        if v is not None and any(trivial[p] and t != R for p, t in enumerate(v.tags)):
            tags = tuple(R if trivial[p] else t for p, t in enumerate(v.tags))
            v = _Val(tags, v.shape, v.folded, v.power, v.mixed, v.summed)
        vals[j] = v


def _type_op(op: BlockOp, k: CustomKernel, xs: list[_Val], shapes: Mapping[str, tuple[int, ...]],
             outputs: frozenset[str], stored: dict[str, _Stored], trivial: Sequence[bool], loop: int,
             repeats: bool, where: str, idle: bool = False) -> _Val | None:
    """The layout of one op (None: not typed), or ``IllTyped``."""
    match op:
        case Load(tensor=tensor):
            if tensor not in shapes and tensor not in stored:
                return None  # written by a saver not assigned yet
            return _load(op, k, shapes, stored, where)
        case UnaryOp(fn=fn):
            v = xs[0]
            if (P in v.tags or v.folded or v.power) and fn not in LINEAR_UNARY:
                raise IllTyped(f"{where}: {fn.value} of a partial sum")
            return v
        case BinaryOp(fn=fn):
            return _binary(fn, xs[0], xs[1], where)
        case MatmulOp():
            return _matmul(xs[0], xs[1], where)
        case ReduceOp(fn=fn, dim=dim):
            return _reduced(xs[0], fn, dim, where)
        case Accum() if trivial[loop]:
            return _one_iteration(xs[0], op, where)
        case Accum(fn=Reduce.SUM) if op.rescale is not None and xs[0].tags[loop] == xs[1].tags[loop] == R and (
                not repeats or not idle):
            # identical iterations rescaled by identical shifts (factors exp(0)): a plain sum of copies, in a
            # loop that is not idle (an idle one becomes one iteration: ``mapping.without_idle_loops``)
            return _accum(xs[0], op.reduce_dim, k, trivial, loop, repeats, where)
        case Accum() if not op.plain:
            return _shifted_accum(xs[0], op, loop, where)
        case Accum() if xs[0].tags[loop] == X:
            _plain_shifted(xs[0], where)
            return None  # its shifts may have cancelled: not typed
        case Accum(reduce_dim=rd):
            return _accum(xs[0], rd, k, trivial, loop, repeats, where)
        case Save(tensor=tensor, omap=omap):
            return _save(xs[0], tensor, omap, k, outputs, stored, trivial, where)
        case _:
            assert_never(op)


def _plain_shifted(x: _Val, where: str) -> None:
    """Rejects a plain sum over the loop of values shifted by their chunk's own max: each term is
    shifted by another chunk's max, so the sum is not the program's, unless some op combined two
    shifted values (their shifts may cancel: ``exp(x − m_c) · exp(m_c)``), which is left untyped."""
    if not x.mixed:
        raise IllTyped(f"{where}: a plain sum of chunks shifted by their own maxes")


def _varying(ops: Sequence[BlockOp]) -> bool:
    """Does an assigned load of the kernel read a tile per loop iteration (its loop is not idle)?
    Unassigned loads are placeholders without a loop dim, so the answer only turns from no to yes."""
    return any(isinstance(op, Load) and op.fmap is not None for op in ops)


def _one_iteration(x: _Val, op: Accum, where: str) -> _Val:
    """An accumulator over a loop of one iteration is its value (a rescaling factor is exp(0)), reduced
    along ``reduce_dim`` by its fn."""
    return x if op.reduce_dim is None else _reduced(x, op.fn, op.reduce_dim, where)


def _reduced(x: _Val, fn: Reduce, dim: int, where: str) -> _Val:
    """``x`` reduced along ``dim`` by ``fn``: a max over a dim split along some parallel dim is shifted there."""
    if fn is Reduce.MAX and _split(x, dim):
        return _chunk_max(x, dim, where)
    return _reduce(x, dim, fn is Reduce.SUM, where)


def _chunk_max(x: _Val, dim: int, where: str) -> _Val:
    """A max over ``dim`` where it is split along some parallel dim: shifted along those dims."""
    if P in x.tags or x.folded:
        raise IllTyped(f"{where}: a max of a partial sum")
    tags = tuple(X if t == _s(dim) else t for t in x.tags)
    return _Val(tags, tuple(1 if i == dim else s for i, s in enumerate(x.shape)), x.folded, x.power, x.mixed,
                x.summed)


def _shifted_accum(x: _Val, op: Accum, loop: int, where: str) -> _Val | None:
    """A running max of chunk maxes (or of a loop-invariant value), or a rescaled sum of chunks
    shifted by their own maxes (summed along ``reduce_dim`` first, as a softmax's row sums are):
    replicated along the loop. Anything else: not typed (None)."""
    ti = x.tags[loop]
    running_max = op.fn is Reduce.MAX and op.rescale is None and ti in (X, R) and op.reduce_dim is None
    rescaled_sum = op.fn is Reduce.SUM and op.rescale is not None and ti == X
    if not (running_max or rescaled_sum):
        return None
    if op.reduce_dim is not None:
        x = _reduce(x, op.reduce_dim, True, where, skip=loop)
    tags = (*x.tags[:loop], R)
    return _Val(tags, x.shape, x.folded, x.power, x.mixed, x.summed)


def _accum(x: _Val, rd: int | None, k: CustomKernel, trivial: Sequence[bool], loop: int, repeats: bool,
           where: str) -> _Val:
    ti = x.tags[loop]
    if rd is not None and ti == _s(rd):
        ti = P
    # identical iterations: a factor of the loop size
    copies: Power = ((str(k.loop), 1),) if not trivial[loop] and ti == R else ()
    if copies and not repeats:
        raise IllTyped(f"{where}: the accumulator sums identical iterations")
    # summing slices of a dim over the loop folds them: right only if that dim is summed later
    v = x if rd is None else _reduce(x, rd, True, where, skip=loop)
    fold = frozenset() if ti in (P, R) else frozenset({ti[1]})
    tags = (*v.tags[:loop], R)
    return _Val(tags, v.shape, v.folded | fold, _times(v.power, copies), v.mixed, v.summed)


def _save(x: _Val, tensor: str, omap: tuple[int | None, ...], k: CustomKernel, outputs: frozenset[str],
          stored: dict[str, _Stored], trivial: Sequence[bool], where: str) -> _Val:
    if x.folded and tensor in outputs:
        raise IllTyped(f"{where}: saves a folded sum whose dim was never summed")
    if x.power and tensor in outputs:
        raise IllTyped(f"{where}: saves a value scaled by a power of a loop size")
    sizes: Sequence[Size] = [*k.grid, k.loop]
    stacks: list[tuple[int, Size, Tag]] = []
    for p, a in enumerate(omap):
        t = x.tags[p]
        if a is None:
            raise IllTyped(f"{where}: grid dim {p} is not mapped by the saver")
        if t == _s(a) or trivial[p] or (t == X and tensor in outputs):  # a shift may have cancelled
            continue
        if tensor not in outputs:
            stacks.append((a, sizes[p], t))
            continue
        raise IllTyped(f"{where}: saves a value laid out as {t} along grid dim {p} into dim {a}")
    summed = frozenset(a for p in x.summed if (a := omap[p]) is not None and any(a == b for b, _, _ in stacks))
    stored[tensor] = _Stored(x.shape, x.folded, x.power, tuple(stacks), x.mixed, summed)
    return x


def layout_ok(kg: KernelGraph, *, repeats: bool = True) -> bool:
    try:
        check_layout(kg, repeats=repeats)
    except IllTyped:
        return False
    return True
