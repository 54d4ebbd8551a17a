"""Padded tails: a plan run at a dim padded up to a multiple of its tiles, the padding masked.

A dim whose extent no tile size of a template divides in legal tiles (a KV cache of 1,000
positions, where an mma tile takes multiples of 16) is run at ``Tail.padded`` (1,008 or 1,024)
while the tensors hold ``Tail.valid`` elements along it (``prism.ir.Tail``). Every tile axis of a
kernel's values that runs along the padded dim has an ``Origin``: where its tile starts in the dim,
from the block's coordinates and the loop iteration. The generated code then

* copies zeros where a Load's tile runs past ``valid`` (cp.async with a source size of 0: nothing
  is read there),
* skips the tail in every reduction over it (the reduction's identity instead: 0 for a sum, -inf for
  a max), the element-wise accumulators included,
* writes zeros into the tail of every value it materialises as a matmul operand (the product of a
  tail element is then 0 whatever the other operand holds: both operands are zero there),
* stops an output's stores at the valid elements.

Values an element-wise op computes in the tail are never read by anything else, so they may be
anything. Why the masked plan computes the program: every verified plan is equivalent to the
program at every size, and it reaches the padded dim only through per-position ops and reductions;
skipping the tail in each reduction is the plan at the shorter extent with a shorter last tile, which
only regroups the reductions' terms (docs/codegen.md, "Padded tails"). Every plan returned is
checked against the float64 reference at the program's own shapes besides.

An intermediate tensor along the padded dim (the scores two stitched parts pass on) is allocated
padded; its stores stop at the valid elements like an output's, and the next kernel's copies zero its
tail like an input's (nothing is read there), so its tail is never read.

What is not supported (``CodegenError``, the tuner skips the sizes): a tail no tile of a Load reaches with
at least one valid element (every tile but the last is whole), a Load with two padded axes, and
the loop orders and schedules that move where a tile starts (rotation, skewed ops, streamed loops,
shift maxima first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import assert_never

from prism.codegen.fold import fold_transposes
from prism.errors import CodegenError, IRError
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
    Tail,
    TensorSpec,
    UnaryOp,
    infer,
    load_shape,
)


@dataclass(frozen=True)
class Origin:
    """Where a tile starts along the padded dim: block coordinate ``p`` times ``chunk`` elements for
    each ``(p, chunk)`` of ``terms``, plus the loop iteration times ``step``."""

    terms: tuple[tuple[int, int], ...]
    step: int

    def start(self, coord: Sequence[int], it: int) -> int:
        return sum(coord[p] * c for p, c in self.terms) + it * self.step


Axes = tuple[Origin | None, ...]  # per tile axis of a value: its origin along the padded dim, or None


@dataclass(frozen=True)
class TailPlan:
    """The padded dim's origins in one kernel: per op, per tile axis (an empty tuple for a Save), and
    per Load along it (view axis, axis of its stored tile: the copy's orientation)."""

    valid: int
    axes: tuple[Axes, ...]
    loads: Mapping[int, tuple[int, int]]

    def padded_axes(self, i: int) -> list[tuple[int, Origin]]:
        return [(a, o) for a, o in enumerate(self.axes[i]) if o is not None]

    def load_origin(self, i: int) -> Origin:
        """Where Load ``i``'s tile starts along its padded axis."""
        o = self.axes[i][self.loads[i][0]]
        assert o is not None
        return o


def _stored_axis(a: int, rank: int, transposed: bool) -> int:
    """A Load's view axis in the stored tensor (the last two swap under a transpose)."""
    if transposed and rank >= 2 and a >= rank - 2:
        return 2 * rank - 3 - a
    return a


def memory_shapes(kg: KernelGraph, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, tuple[int, ...]]:
    """Every tensor's extents in memory: the program's for inputs and outputs (``Tail.true_shape``),
    the padded ones of intermediates (the plan allocates them)."""
    if kg.tail is None:
        return dict(shapes)
    io = {t.name: t.shape for t in (*kg.true_inputs, *kg.true_outputs)}
    return {n: io.get(n, s) for n, s in shapes.items()}


class _Walk:
    """The origins of one kernel's values, op by op (``plan``)."""

    def __init__(self, tail: Tail, ops: Sequence[BlockOp], tiles: Sequence[tuple[int, ...] | None],
                 shapes: Mapping[str, tuple[int, ...]], io: tuple[set[str], set[str]], grid: tuple[int, ...],
                 loop: int, where: str, chunks: Mapping[str, int]) -> None:
        self.tail, self.ops, self.tiles, self.shapes = tail, ops, tiles, shapes
        self.inputs, self.outputs = io
        self.grid, self.loop, self.where = grid, loop, where
        self.chunks = chunks  # ``saved_chunks``: intermediates holding copies of the padded dim
        self.axes: list[Axes] = []
        self.loads: dict[int, tuple[int, int]] = {}

    def fail(self, i: int, msg: str) -> CodegenError:
        return CodegenError(f"{self.where}, op {i}: {msg} (padded tail {self.tail.valid} of {self.tail.padded})")

    def tile(self, i: int) -> tuple[int, ...]:
        t = self.tiles[i]
        assert t is not None
        return t

    def of(self, j: int, axis: int) -> Origin | None:
        """Value ``j``'s origin along ``axis`` (None where its tile is 1 wide there: broadcast)."""
        return self.axes[j][axis] if self.tile(j)[axis] > 1 else None

    def load(self, i: int, op: Load) -> Axes:
        stored = self.shapes[op.tensor]
        view = load_shape(stored, op.transposed)
        chunked = [a for a in range(len(view)) if self.chunks.get(op.tensor) == _stored_axis(a, len(view), op.transposed)]
        padded = [a for a, s in enumerate(view) if s == self.tail.padded]
        if len(padded) + len(chunked) > 1:
            raise self.fail(i, f"tensor {op.tensor!r} has {len(padded) + len(chunked)} padded axes; one is supported")
        axes: list[Origin | None] = [None] * len(view)
        for a in chunked:  # each tile one copy of the padded dim, from its start
            if self.tile(i)[a] != self.tail.padded:
                raise self.fail(i, f"a tile of {self.tile(i)[a]} across the copies of the padded dim in {op.tensor!r}")
            axes[a] = Origin((), 0)
            self.loads[i] = (a, _stored_axis(a, len(view), op.transposed))
        for a in padded:
            size, terms = view[a], []
            for p, g in enumerate(self.grid):
                if p < len(op.imap) and op.imap[p] == a:
                    size //= g
                    terms.append((p, size))
            step = self.tile(i)[a] if op.fmap == a and self.loop > 1 else 0
            if self.tile(i)[a] <= self.tail.padded - self.tail.valid:
                raise self.fail(i, f"a tile of {self.tile(i)[a]} along the padded dim would hold no valid element")
            axes[a] = Origin(tuple(terms), step)
            self.loads[i] = (a, _stored_axis(a, len(view), op.transposed))
        return tuple(axes)

    def merge(self, i: int, pairs: Sequence[tuple[int, int]]) -> Origin | None:
        """One axis of value ``i`` from the (operand, axis) pairs that run along it."""
        found = {o for j, a in pairs if (o := self.of(j, a)) is not None}
        if len(found) > 1:
            raise self.fail(i, "operands whose tiles start at different places of the padded dim meet")
        return found.pop() if found else None

    def op(self, i: int, op: BlockOp) -> Axes:
        match op:
            case Load():
                return self.load(i, op)
            case UnaryOp(x=x):
                return self.axes[x]
            case BinaryOp(a=a, b=b):
                return tuple(self.merge(i, [(a, k), (b, k)]) for k in range(len(self.tile(i))))
            case MatmulOp(a=a, b=b):  # (an operand of lower rank, a 2-D weight, broadcasts over the batch)
                r, ra, rb = len(self.tile(i)), len(self.tile(a)), len(self.tile(b))
                self.merge(i, [(a, ra - 1), (b, rb - 2)])  # the contraction: both zero in the tail
                batch = [self.merge(i, [(x, k - r + rx) for x, rx in ((a, ra), (b, rb)) if k - r + rx >= 0])
                         for k in range(r - 2)]
                return (*batch, self.of(a, ra - 2), self.of(b, rb - 1))
            case ReduceOp(x=x, dim=dim):
                return tuple(None if k == dim else o for k, o in enumerate(self.axes[x]))
            case Accum(x=x, reduce_dim=dim):
                kept = [None if k == dim else o for k, o in enumerate(self.axes[x])]
                if any(o is not None and o.step for o in kept):
                    raise self.fail(i, "an element-wise accumulator over the padded dim's iterations")
                return tuple(kept)
            case Save():  # (stores stop at the valid elements; a later kernel's copies zero the rest)
                return ()
            case _:
                assert_never(op)

    def plan(self) -> TailPlan:
        for i, op in enumerate(self.ops):
            self.axes.append(self.op(i, op))
        return TailPlan(self.tail.valid, tuple(self.axes), dict(self.loads))


def tail_plan(kg: KernelGraph, ops: Sequence[BlockOp], tiles: Sequence[tuple[int, ...] | None],
              shapes: Mapping[str, tuple[int, ...]], grid: tuple[int, ...], loop: int, where: str, *,
              chunks: Mapping[str, int]) -> TailPlan | None:
    """The origins of one kernel's values along ``kg.tail``'s padded dim (None without a tail);
    CodegenError for what is not supported (the module docstring). ``chunks``: what the kernels before
    it saved as copies of the padded dim (``saved_chunks``)."""
    if kg.tail is None:
        return None
    io = {t.name for t in kg.inputs}, {t.name for t in kg.outputs}
    return _Walk(kg.tail, ops, tiles, shapes, io, grid, loop, where, chunks).plan()


def saved_chunks(kg: KernelGraph, ops: Sequence[BlockOp], tiles: Sequence[tuple[int, ...] | None],
                 shapes: Mapping[str, tuple[int, ...]], plan: TailPlan) -> dict[str, int]:
    """The intermediates one kernel (``ops``, its tail plan ``plan``) saves as whole copies of the padded
    dim side by side, tensor -> axis: a split kernel's partials ``[rows, s · padded]``, each split
    block's tile one copy from its start (the Save's value spans the padded dim there, and the tensor
    is longer). Their stores stop at each copy's valid elements; a later kernel's Load of one copy a
    tile is masked as a padded axis (``_Walk.load``)."""
    assert kg.tail is not None
    padded, outputs = kg.tail.padded, {t.name for t in kg.outputs}
    out: dict[str, int] = {}
    for op in ops:
        if not isinstance(op, Save) or op.tensor in outputs:
            continue
        tile, ext = tiles[op.x], shapes[op.tensor]
        for a, o in enumerate(plan.axes[op.x]):
            if o is not None and tile is not None and tile[a] == padded and ext[a] > padded and ext[a] % padded == 0:
                out[op.tensor] = a
    return out


def padded_chunks(kg: KernelGraph) -> dict[str, int]:
    """``saved_chunks`` of every kernel of ``kg``, in order (the lowering collects them as it lowers);
    kernels whose walk fails add none."""
    if kg.tail is None:
        return {}
    try:
        shapes, per_kernel = infer(kg)
    except IRError:
        return {}
    chunks: dict[str, int] = {}
    for k, ks in zip(kg.kernels, per_kernel, strict=True):
        if not isinstance(k, CustomKernel) or ks is None:
            continue
        try:
            plan = tail_plan(kg, k.ops, ks.tiles, shapes, tuple(int(g) for g in k.grid), int(k.loop), k.name,
                             chunks=chunks)
        except CodegenError:
            continue
        assert plan is not None
        chunks |= saved_chunks(kg, k.ops, ks.tiles, shapes, plan)
    return chunks


# ---------------------------------------------------------------------------------- plans to pad

TAIL_MULTIPLES = (16, 32, 64, 128)  # a padded extent is the valid one rounded up to one of these


def tails_of(specs: Sequence[TensorSpec]) -> list[Tail]:
    """The tails worth trying for a program with these inputs and outputs: each extent that is not a
    multiple of 16 (an mma tile's), rounded up to each of ``TAIL_MULTIPLES``, except where the padded
    extent is another dim's (an axis of that extent would be taken for a padded one)."""
    extents = {s for t in specs for s in t.shape}
    out = []
    for n in sorted(extents):
        if n % 16 == 0 or n < 16:
            continue
        for m in TAIL_MULTIPLES:
            padded = -(-n // m) * m
            tail = Tail(padded, n)
            if padded not in extents and tail not in out:
                out.append(tail)
    return out


def padded_plans(template: KernelGraph, intermediates: bool = False) -> list[KernelGraph]:
    """``template`` (program shapes, no tail) at each tail of ``tails_of`` that it needs, the longest
    padding first (the most divisors): plans with generated kernels (the lowering refuses a predefined
    kernel on a padded tensor: it would compute the tail into its results; a transpose that a load
    folds is none). ``intermediates``: also plans that write an intermediate along the padded dim
    (``_needs``)."""
    if template.tail is not None or not any(isinstance(k, CustomKernel) for k in template.kernels):
        return []
    tails = sorted(tails_of((*template.inputs, *template.outputs)), key=lambda t: -t.padded)
    return [p for t in tails if _needs(p := template.padded(t), intermediates)]


def _needs(kg: KernelGraph, intermediates: bool = False) -> bool:
    """Whether padded plan ``kg`` needs its tail and can have it, from its shapes at sizes of 1 (every
    tile the whole tensor): some matmul contracts over the padded dim or spans it in its output's
    last axis (an mma tile takes multiples of 16 there: at the valid extent no size is legal), and,
    unless ``intermediates``, no kernel writes an intermediate along it (the lowering masks one, as
    stitched parts' plans and split plans' partials need (``saved_chunks``), but a searched plan that
    does is not padded: the searched candidates padded whole stay those measured on the H200)."""
    assert kg.tail is not None
    padded = kg.tail.padded
    kg = fold_transposes(kg)  # (a transposed K read by the matmul's load, as the lowering folds it)
    try:
        shapes, per_kernel = infer(kg.instantiate(dict.fromkeys(kg.symbols, 1)))
    except IRError:
        return False
    io = {t.name for t in (*kg.inputs, *kg.outputs)}
    if not intermediates and any(padded in s for n, s in shapes.items() if n not in io):
        return False
    for k, ks in zip(kg.kernels, per_kernel, strict=True):
        if not isinstance(k, CustomKernel) or ks is None:
            continue
        for op in k.ops:
            ta, tb = (ks.tiles[op.a], ks.tiles[op.b]) if isinstance(op, MatmulOp) else (None, None)
            if ta is not None and tb is not None and padded in (ta[-1], tb[-1]):
                return True
    return False

