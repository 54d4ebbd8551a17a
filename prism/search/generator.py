"""Enumeration of kernel graphs and block graphs with symbolic mappings (paper §3.1–§3.3).

The generator works in two incremental steps:

1. **Values.** Starting from the loads of the program inputs, ops of the target's vocabulary are
   added one at a time to every value found so far. An op is kept only when its operands' dims
   match (symbolic dimension matching on data-dim labels, §3.2) and its abstract expression at
   d = 1 is a sub-expression of the target (expression-guided pruning, §3.3). A value is an
   (expression, dim labels, phase) triple, phase "loop" (inside the for-loop) or "post" (after an
   accumulator). Every way an op produced a value is kept as a *recipe* of that value.
2. **Block graphs.** A block graph is a choice of one recipe for each value it needs, starting from
   the values it saves (the program output, whose expression must equal the target's, or
   intermediates for a later kernel) down to loads. Every value of such a graph is used and no
   value is computed twice, each block graph comes out exactly once (no duplicate orderings:
   its op sequence is the canonical order of ``canonical``), and only graphs that complete are
   ever built. The ops within ``max_block_ops`` bound the choice.
   In a split graph (``split_only``) the second kernel loops over a grid size of the first and
   only accumulates tensors the first kernel wrote, then finishes the computation after its loop.

Each block-graph structure then gets symbolic sizes (a kernel's grid dims and loop; a later kernel
may reuse an earlier kernel's grid size) and mapping variables; ``symbolic`` replays its ops with
symbolic extents and records the matching equalities (pruning when they cannot hold), and z3 checks
that at least one mapping satisfies every constraint.

Rules of the space (the brute-force soundness tests apply them too): each tensor is loaded at most
once per kernel, no two ops of a block graph compute the same value in the same phase, every value
is used, at most ``max_kernels`` (≤ 2) kernels, where the second reads at least one tensor written
by the first.
"""

from __future__ import annotations

import functools
import itertools
import logging
import operator
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import assert_never

from prism.graph import Graph, OpKind
from prism.ir import Accum, BinaryOp, BlockOp, Load, MatmulOp, ReduceOp, Save, TensorSpec, UnaryOp
from prism.ops import COMMUTATIVE, Binary, Reduce, Scalar, Unary

from .canonical import INTERMEDIATE, canonical_order
from .config import SearchConfig
from .dimmatch import ONE, ProgramLabels, program_labels
from .dominance import Cost, Item, dims, op_cost, undominated
from .exprprune import Poly, Target, build_target, is_max, shifted_by
from .sgraph import LOOP, PARALLEL, SGraph, long_inputs
from .symbolic import ComputeOp, KernelSpec, symbolize

log = logging.getLogger(__name__)

PRUNE_RULES = ("dim_mismatch", "expression", "op_limit", "op_budget", "first_kernel", "map_infeasible", "dominated")


@dataclass(frozen=True)
class Vocab:
    unary: tuple[tuple[Unary, Scalar | None], ...]
    binary: tuple[Binary, ...]
    reduce: tuple[Reduce, ...]
    matmul: bool


def vocabulary(graph: Graph) -> Vocab:
    """The operators of the target program (the generator uses exactly these, plus accumulators)."""
    un: list[tuple[Unary, Scalar | None]] = []
    bi: list[Binary] = []
    re_: list[Reduce] = []
    mm = False
    for n in graph.nodes:
        if n.kind is OpKind.UNARY and isinstance(n.fn, Unary) and (n.fn, n.scalar) not in un:
            un.append((n.fn, n.scalar))
        elif n.kind is OpKind.BINARY and isinstance(n.fn, Binary) and n.fn not in bi:
            bi.append(n.fn)
        elif n.kind is OpKind.REDUCE and isinstance(n.fn, Reduce) and n.fn not in re_:
            re_.append(n.fn)
        elif n.kind is OpKind.MATMUL:
            mm = True
    return Vocab(tuple(un), tuple(bi), tuple(re_), mm)


def budget_kind(op: BlockOp) -> str:
    match op:
        case UnaryOp(fn):
            return f"unary:{fn.value}"
        case BinaryOp(fn):
            return f"binary:{fn.value}"
        case MatmulOp():
            return "matmul"
        case ReduceOp(fn):
            return f"reduce:{fn.value}"
        case Accum():
            return "accum"
        case Load():
            return "load"
        case Save():
            return "save"
    assert_never(op)


def _bcast(a: str, b: str) -> str | None:
    if a == b:
        return a
    if a == ONE:
        return b
    if b == ONE:
        return a
    return None


def _bcast_all(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...] | None:
    """``_bcast`` of the labels of two equally long shapes; None when a pair never matches."""
    out: list[str] = []
    for x, y in zip(a, b, strict=True):
        if (z := _bcast(x, y)) is None:
            return None
        out.append(z)
    return tuple(out)


def label_shape(op: ComputeOp, labs: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """Shape rule at d = 1 on data-dim labels; None when the dims can never match."""
    match op:
        case UnaryOp():
            return labs[0]
        case BinaryOp():
            a, b = labs
            if len(a) != len(b):
                return None
            return _bcast_all(a, b)
        case MatmulOp():
            a, b = labs
            if len(a) < 2 or len(b) < 2 or len(b) > len(a) or len(a) > 3 or a[-1] != b[-2]:
                return None
            if len(a) == len(b):
                batch = _bcast_all(a[:-2], b[:-2])
                if batch is None:
                    return None
            else:
                batch = a[:-2]
            return (*batch, a[-2], b[-1])
        case Accum(reduce_dim=rd, rescale=c) if c is not None:
            x, sh = labs
            if rd is not None:
                if x[rd] == ONE:
                    return None
                x = tuple(ONE if d == rd else a for d, a in enumerate(x))
            fits = len(x) == len(sh) and all(b in (a, ONE) for a, b in zip(x, sh, strict=True))
            return x if fits else None  # the shift broadcasts against the accumulated value
        case ReduceOp(_, _, dim) | Accum(_, dim):
            if dim is None:
                return labs[0]
            if labs[0][dim] == ONE:
                return None  # reducing an extent-1 dim does nothing
            return tuple(ONE if d == dim else x for d, x in enumerate(labs[0]))
    assert_never(op)


Node = tuple[int, tuple[str, ...], str]  # (expression id, dim labels, phase)


@dataclass(frozen=True)
class Recipe:
    """How a value is made: ``op`` (operand fields are placeholders) applied to value ids ``args``;
    ``tensor`` names a loaded tensor (an input, or ``INTERMEDIATE`` for a tensor of an earlier kernel)."""

    op: ComputeOp | None
    args: tuple[int, ...]
    tensor: str | None = None


def _apply(op: ComputeOp, args: tuple[int, ...]) -> ComputeOp:
    match op:
        case UnaryOp(fn, _, sc):
            return UnaryOp(fn, args[0], sc)
        case BinaryOp(fn):
            return BinaryOp(fn, args[0], args[1])
        case MatmulOp():
            return MatmulOp(args[0], args[1])
        case ReduceOp(fn, _, dim):
            return ReduceOp(fn, args[0], dim)
        case Accum(_, rd, fn, rescale):
            return Accum(args[0], rd, fn, None if rescale is None else args[1])
    assert_never(op)


@dataclass
class Stats:
    pruned: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PRUNE_RULES, 0))
    values: int = 0
    block_graphs: int = 0
    structures: int = 0
    timed_out: bool = False
    stopped_early: bool = False  # the next level of a deepening could not finish by the deadline


@dataclass(frozen=True)
class _Level:
    """What one exhaustive level of an iterative deepening cost (``Generator._deepen``)."""

    steps: int
    seconds: float


# A level of an iterative deepening is projected from the one before only when it took this long
# (shorter levels' step ratios vary too much, and their next level cannot cost much either).
PROJECT_AFTER_S = 0.5


_Check = tuple["Recipe", int, int, tuple[tuple[int, int], ...]]  # an option, see _Closure.checks


@dataclass(frozen=True)
class _WalkTables:
    """What a block-graph walk (``_Closure``) reads and never changes: each value's options, the
    bounds ``required``, ``descendants``, ``least_sizes`` and ``heights`` derive from them (an
    intermediate's load counts 1 there), and the memo of ``_Closure.checks``."""

    opts: list[list[Recipe]]
    req: list[int]
    desc: list[int]
    least: list[int]
    h: list[int]
    checks: dict[int, list[_Check]] = field(default_factory=dict)


class _Timeout(Exception):
    pass


class Generator:
    def __init__(self, graph: Graph, config: SearchConfig, name: str = "program") -> None:
        self.graph = graph
        self.cfg = config
        self.name = name
        self.labels: ProgramLabels = program_labels(graph)
        self.target: Target = build_target(graph, self.labels)
        self.alg = self.target.alg
        self.vocab = vocabulary(graph)
        self.stats = Stats()
        self.exprs: list[Poly] = []
        self._ids: dict[Poly, int] = {}
        self.inputs = tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.inputs)
        self.long = long_inputs([t.name for t in self.inputs], config.long_dims)
        self.outputs = tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.outputs)
        self.out_expr = {name: self._intern(p) for name, p in self.target.outputs.items()}
        self.nodes: list[Node] = []
        self.index: dict[Node, int] = {}
        self.recipes: list[list[Recipe]] = []
        self.deadline = 0.0
        self.results: list[SGraph] = []
        self._seen: set[object] = set()
        self.on_result: Callable[[SGraph], None] | None = None
        self.max_ops: int = config.max_block_ops or 0
        self.min_ops: int | None = None
        self._below_min: _Level | None = None  # the walk of the last level below min_ops (exhaustive)
        self._tables: dict[tuple[frozenset[int] | None, bool], _WalkTables] = {}
        self._split_memo: dict[int, list[Recipe]] = {}
        self._users_memo: dict[bool, list[list[int]]] = {}

    # ------------------------------------------------------------------ values
    def _intern(self, p: Poly) -> int:
        i = self._ids.get(p)
        if i is None:
            i = len(self.exprs)
            self._ids[p] = i
            self.exprs.append(p)
        return i

    def _node(self, n: Node) -> tuple[int, bool]:
        i = self.index.get(n)
        if i is not None:
            return i, False
        i = len(self.nodes)
        self.index[n] = i
        self.nodes.append(n)
        self.recipes.append([])
        return i, True

    def _expr(self, op: ComputeOp, args: tuple[int, ...]) -> Poly:
        alg = self.alg
        e = [self.exprs[self.nodes[a][0]] for a in args]
        labs = [self.nodes[a][1] for a in args]
        match op:
            case UnaryOp(fn, _, scalar):
                return alg.unary(fn, e[0], scalar, self.labels.inputs)
            case BinaryOp(fn):
                return alg.binary(fn, e[0], e[1])
            case MatmulOp():
                return alg.sum(alg.mul(e[0], e[1]), frozenset({labs[0][-1]}))
            case ReduceOp(fn, _, dim):
                return alg.reduce(fn, e[0], labs[0][dim])
            case Accum(_, rd):  # at d = 1 one iteration: a max or a rescaled accumulator is its value
                return e[0] if rd is None else alg.reduce(Reduce.SUM, e[0], labs[0][rd])
        assert_never(op)

    def _try(self, op: ComputeOp, args: tuple[int, ...], fresh: list[int]) -> None:
        pr = self.stats.pruned
        labs = label_shape(op, [self.nodes[a][1] for a in args])
        if labs is None:
            pr["dim_mismatch"] += 1
            return
        p = self._expr(op, args)
        if not p or not self.target.contains(p):
            pr["expression"] += 1
            return
        phase = "post" if isinstance(op, Accum) else self.nodes[args[0]][2]
        i, new = self._node((self._intern(p), labs, phase))
        if i in args:
            return  # an op that gives back its operand
        self.recipes[i].append(Recipe(op, args))
        if new:
            fresh.append(i)

    def build_values(self) -> None:
        """Saturate the set of values reachable from the inputs' loads (at most max_block_ops deep)."""
        fresh: list[int] = []
        for t in self.graph.inputs:
            i, _ = self._node((self._intern(self.alg.var(t.name)), self.labels.inputs[t.name], "loop"))
            self.recipes[i].append(Recipe(None, (), t.name))
            fresh.append(i)
        v = self.vocab
        singles: list[ComputeOp] = [UnaryOp(fn, 0, sc) for fn, sc in v.unary]
        pairs: list[ComputeOp] = [BinaryOp(fn, 0, 1) for fn in v.binary]
        if v.matmul:
            pairs.append(MatmulOp(0, 1))
        for _ in range(self.max_ops or 64):
            if not fresh:
                break
            frontier, fresh = fresh, []
            newset = set(frontier)
            for n in frontier:
                rank = len(self.nodes[n][1])
                ops = list(singles) + [ReduceOp(fn, 0, d) for fn in v.reduce for d in range(rank)]
                if self.nodes[n][2] == "loop":
                    # a row max is accumulated as a running max, never summed over the iterations
                    ops += [Accum(0, fn=Reduce.MAX)] if self._is_max(n) else [Accum(0), *(Accum(0, d) for d in range(rank))]
                for op in ops:
                    self._try(op, (n,), fresh)
            total = len(self.nodes) - len(fresh)
            for n in frontier:
                for m in range(total):
                    if self.nodes[m][2] != self.nodes[n][2] or (m in newset and m < n):
                        continue
                    for op in pairs:
                        comm = isinstance(op, BinaryOp) and op.fn in COMMUTATIVE
                        self._try(op, (min(n, m), max(n, m)) if comm else (m, n), fresh)
                        if not comm and m != n:
                            self._try(op, (n, m), fresh)
                    if self.nodes[n][2] == "loop" and m != n:
                        self._rescaled(n, m, fresh)
            self._check_time()
        self.stats.values = len(self.nodes)
        self._heights()

    def _is_max(self, n: int) -> bool:
        """Is value n a max (a row max: what a max accumulator or a rescaling shift takes)?"""
        return Reduce.MAX in self.vocab.reduce and is_max(self.exprs[self.nodes[n][0]])

    def _rescaled(self, a: int, b: int, fresh: list[int]) -> None:
        """Online-softmax accumulators of one loop value rescaled by the other (both ways): by a
        bare max ``c``, of a value holding ``exp(… − c)`` (any other rescaling is never right)."""
        for x, c in ((a, b), (b, a)):
            if self._is_max(c) and shifted_by(self.exprs[self.nodes[x][0]], self.exprs[self.nodes[c][0]]):
                self._try(Accum(0, rescale=1), (x, c), fresh)
                for d, lab in enumerate(self.nodes[c][1]):  # summed over a dim the shift is constant along
                    if lab == ONE:
                        self._try(Accum(0, d, rescale=1), (x, c), fresh)

    def _heights(self) -> None:
        """h[n]: the fewest values on a chain from value n down to a load (a lower bound on any
        block graph computing n; an intermediate load counts 1)."""
        self.h = heights(len(self.nodes), self.recipes.__getitem__)

    # ------------------------------------------------------------------ block graphs
    def _check_time(self) -> None:
        if time.monotonic() > self.deadline:
            self.stats.timed_out = True
            raise _Timeout

    def closures(self, roots: list[int], budget: int, inter_ok: set[int] | None,
                 max_inter: int) -> Iterator[dict[int, Recipe]]:
        """Every choice of one recipe per needed value (acyclic, within ``budget`` ops).

        ``inter_ok``: loop-phase values that may instead be loaded from an earlier kernel's tensor."""
        walk = _Closure(self, roots, budget, inter_ok, max_inter)
        yield from walk.rec()

    def _ops(self, chosen: dict[int, Recipe], saves: list[tuple[int, str]],
             inter_names: dict[int, str]) -> tuple[list[BlockOp], dict[int, int]]:
        """The block graph's ops in canonical order; returns them and each value's position."""
        order: list[int] = []
        seen: set[int] = set()

        def visit(n: int) -> None:
            if n in seen:
                return
            seen.add(n)
            for a in chosen[n].args:
                visit(a)
            order.append(n)

        for n, _ in saves:
            visit(n)
        pos = {n: i for i, n in enumerate(order)}
        ops: list[BlockOp] = []
        for n in order:
            r = chosen[n]
            if r.op is None:
                tensor = r.tensor if r.tensor != INTERMEDIATE else inter_names[n]
                assert tensor is not None
                ops.append(Load(tensor, (), None))
            else:
                ops.append(_apply(r.op, tuple(pos[a] for a in r.args)))
        for n, tensor in saves:
            ops.append(Save(pos[n], tensor, ()))
        names = {t: t for t in (*(s.name for s in self.inputs), *(s.name for s in self.outputs))}
        names.update({v: v for v in inter_names.values()})
        canon = canonical_order(ops, names, maps=False)
        newpos = {j: i for i, j in enumerate(canon)}
        out: list[BlockOp] = []
        for j in canon:
            op = ops[j]
            match op:
                case Load():
                    out.append(op)
                case Save(x, tensor, omap):
                    out.append(Save(newpos[x], tensor, omap))
                case _:
                    from prism.ir import op_args

                    out.append(_apply(op, tuple(newpos[a] for a in op_args(op))))
        return out, {n: newpos[pos[n]] for n in order}

    def walk_tables(self, inter_ok: set[int] | None, split: bool) -> _WalkTables:
        """The tables of a block-graph walk, which depend only on the values that may be loaded from
        an earlier kernel and the split rule: built once per pair, shared by every walk with it."""
        key = (None if inter_ok is None else frozenset(inter_ok), split)
        got = self._tables.get(key)
        if got is None:
            count = len(self.nodes)
            opts = [self.walk_options(n, inter_ok, split) for n in range(count)]
            req = required(count, opts.__getitem__)
            desc = descendants(count, opts.__getitem__)
            users = self.walk_users(split)
            got = self._tables[key] = _WalkTables(opts, req, desc, least_sizes(count, opts.__getitem__, req, desc, users),
                                                  heights(count, opts.__getitem__, users))
        return got

    def walk_options(self, n: int, inter_ok: set[int] | None, split: bool) -> list[Recipe]:
        """The recipes a block-graph walk may choose for value ``n``: loading it from an earlier
        kernel's tensor when it is in ``inter_ok``; in a split graph's later kernel, nothing else
        for a loop value (it only accumulates what the first kernel computed), and no accumulator
        that also reduces."""
        if split and self.nodes[n][2] == "loop":
            return [Recipe(None, (), INTERMEDIATE)] if inter_ok is not None and n in inter_ok else []
        opts = self._split_recipes(n) if split else self.recipes[n]  # the generator's own: read only
        if inter_ok is not None and n in inter_ok:
            return [*opts, Recipe(None, (), INTERMEDIATE)]
        return opts

    def _split_recipes(self, n: int) -> list[Recipe]:
        """Value ``n``'s recipes in a split graph's later kernel: no accumulator that also reduces."""
        got = self._split_memo.get(n)
        if got is None:
            got = self._split_memo[n] = [r for r in self.recipes[n]
                                         if not (isinstance(r.op, Accum) and r.op.reduce_dim is not None)]
        return got

    def walk_users(self, split: bool) -> list[list[int]]:
        """Per value, the values whose walk options take it as an argument (``_users``). The same for
        every set of loadable values: loading a value adds a recipe without arguments, and in a
        split graph's later kernel a loop value only ever loads."""
        got = self._users_memo.get(split)
        if got is None:
            got = self._users_memo[split] = _users([self.walk_options(n, None, split) for n in range(len(self.nodes))])
        return got

    def _intermediate_name(self, k: int) -> str:
        """``t{k}``, unless the program already names a tensor so (then underscores in front)."""
        taken = {t.name for t in (*self.inputs, *self.outputs)}
        name = f"t{k}"
        while name in taken:
            name = f"_{name}"
        return name

    # ------------------------------------------------------------------ kernel graphs
    def run(self) -> list[SGraph]:
        self.deadline = time.monotonic() + self.cfg.time_budget_s
        try:
            self.build_values()
            self.min_ops = self._min_ops()
            if self.cfg.max_block_ops is None:
                least = self.min_ops or 0
                self.max_ops = max(least, min(least + self.cfg.extra_ops, self.cfg.auto_block_ops_cap))
            self._single_kernel()
            if self.cfg.max_kernels >= 2 and self._max_intermediates() >= 1:
                self._two_kernels()
        except _Timeout:
            if len(self.results) >= self.cfg.max_candidates:
                log.warning("search of %s stopped at %d candidates (max_candidates)", self.name, len(self.results))
            elif self.stats.stopped_early:
                log.warning("search of %s stopped early with %d candidates: its next level could not finish "
                            "within the %.0f s budget", self.name, len(self.results), self.cfg.time_budget_s)
            else:
                log.warning("search of %s hit its %.0f s budget", self.name, self.cfg.time_budget_s)
        return self.results

    def _out_roots(self) -> list[tuple[int, str]] | None:
        roots = []
        for t in self.outputs:
            n = self.index.get((self.out_expr[t.name], self.labels.outputs[t.name], "post"))
            if n is None:
                return None
            roots.append((n, t.name))
        return roots

    def _min_ops(self) -> int | None:
        """The fewest ops of any single-kernel block graph computing the outputs (saves included)."""
        roots = self._out_roots()
        if roots is None:
            return None
        start = max(self.h[n] for n, _ in roots)
        before: _Level | None = None
        for budget in range(start, 64):
            steps, t0 = self.stats.block_graphs, time.monotonic()
            for _ in self.closures([n for n, _ in roots], budget, None, 0):
                self.stats.block_graphs = steps
                self._below_min = before
                return budget + len(roots)
            level = _Level(self.stats.block_graphs - steps, time.monotonic() - t0)
            self.stats.block_graphs = steps
            self._deepen(before, level)
            before = level
        return None

    def _deepen(self, before: _Level | None, level: _Level) -> None:
        """Go on to the next level of an iterative deepening, or stop the search (``_Timeout``,
        ``stats.stopped_early``) when that level cannot finish before the deadline: projected at this
        level's time times its growth in walk steps over the level before. Every block graph within
        a level is also within the next, so the walk of a level is at least the walk of the one below:
        the levels that the search would still need all cost at least the projection."""
        if before is None or before.steps == 0 or level.seconds < PROJECT_AFTER_S:
            return
        projected = level.seconds * max(1.0, level.steps / before.steps)
        if time.monotonic() + projected > self.deadline:
            log.info("search of %s: after a level of %d walk steps in %.1f s the next would take about %.0f s, "
                     "past the budget", self.name, level.steps, level.seconds, projected)
            self.stats.timed_out = self.stats.stopped_early = True
            raise _Timeout

    def _grids(self, k: int) -> list[tuple[str, ...]]:
        dims = range(self.cfg.min_grid_dims, self.cfg.max_grid_dims + 1)
        return [tuple(f"k{k}_{p}" for p in PARALLEL[:ng]) for ng in dims]

    def _single_kernel(self) -> None:
        roots = self._out_roots()
        if roots is None:
            return
        found, complete = self._within_levels([n for n, _ in roots], self.max_ops - len(roots))
        for chosen in self._ranked(found):
            ops, _ = self._ops(chosen, roots, {})
            self.stats.structures += 1
            loops: list[str | int] = [f"k0_{LOOP}", *([1] if self.cfg.loop_one else [])]
            for grid in self._grids(0):
                for loop in loops:
                    self._emit([KernelSpec(tuple(ops), grid, loop)])
        if not complete:  # the levels below were emitted; the search ends here
            raise _Timeout

    def _within_levels(self, roots: list[int], budget: int) -> tuple[list[dict[int, Recipe]], bool]:
        """Every single-kernel block graph within ``budget`` ops, walked level by level from the
        fewest ops (``min_ops``), and True: the last level's walk is the one-walk enumeration, so the
        graphs and their order are the same. Where a level cannot finish before the deadline
        (``_deepen``), the graphs of the level below and False: the smallest, where one walk would
        have given none."""
        least = None if self.min_ops is None else self.min_ops - len(roots)
        found: list[dict[int, Recipe]] = []
        before: _Level | None = None
        level = self._below_min if least is not None and least <= budget else None
        for level_budget in range(budget if least is None else min(budget, least), budget + 1):
            if level is not None:
                try:
                    self._deepen(before, level)
                except _Timeout:
                    return found, False
            steps, t0 = self.stats.block_graphs, time.monotonic()
            found = list(self.closures(roots, level_budget, None, 0))
            before, level = level, _Level(self.stats.block_graphs - steps, time.monotonic() - t0)
        return found, True

    def _two_kernels(self) -> None:
        """Split graphs, one set of values loaded by the later kernel at a time: the first kernels
        computing that set, each paired with every later kernel loading exactly it."""
        roots = self._out_roots()
        if roots is None:
            return
        later = _LaterKernels(self, [n for n, _ in roots])
        for loaded in later.loaded_sets():
            lasts = self._ranked(later.kernels(loaded))
            if not lasts:
                continue
            first_roots = self._first_roots(list(loaded))
            firsts = self._ranked(list(self.closures(first_roots, self._first_budget(first_roots), None, 0)))
            if not firsts:
                self.stats.pruned["first_kernel"] += 1
                continue
            for last in lasts:
                for first in firsts:
                    self._split_graph(first, first_roots, last, roots)

    def _ranked(self, kernels: list[dict[int, Recipe]]) -> list[dict[int, Recipe]]:
        """The block graphs no algebraic variant beats (``dominance``: only graphs with the same
        skeleton, loads included, are compared); all of them when ``rank_variants`` is off."""
        if not self.cfg.rank_variants:
            return kernels
        kept = undominated(kernels, self._cost_items, self._check_time)
        self.stats.pruned["dominated"] += len(kernels) - len(kept)
        return kept

    def _cost_items(self, chosen: dict[int, Recipe]) -> list[Item]:
        items = []
        for n, r in chosen.items():
            _, labels, phase = self.nodes[n]
            if r.op is None:
                items.append(Item(Cost.LOAD, phase, dims(labels), r.tensor))
                continue
            arg = self.nodes[r.args[0]]
            match r.op:
                case MatmulOp():
                    items.append(Item(Cost.MATMUL, arg[2], dims((*labels, arg[1][-1]))))
                case ReduceOp(fn) | Accum(_, _, fn, None):
                    items.append(Item(op_cost(r.op), arg[2], dims(arg[1]), fn.value))
                case Accum(_, _, fn, _):
                    items.append(Item(op_cost(r.op), arg[2], dims(arg[1]), f"rescaled {fn.value}"))
                case _:
                    items.append(Item(op_cost(r.op), phase, dims(labels)))
        return items

    def _split_graph(self, first: dict[int, Recipe], first_roots: list[int], last: dict[int, Recipe],
                     roots: list[tuple[int, str]]) -> None:
        ops0, pos0 = self._ops(first, [(r, INTERMEDIATE) for r in first_roots], {})
        # intermediate names follow the canonical order of the first kernel's saves
        names: dict[int, str] = {}
        renamed0: list[BlockOp] = []
        for op in ops0:
            if isinstance(op, Save):
                names[next(n for n in first_roots if pos0[n] == op.x)] = nm = self._intermediate_name(len(names))
                renamed0.append(Save(op.x, nm, ()))
            else:
                renamed0.append(op)
        inter_names = {n: names[self.index[(self.nodes[n][0], self.nodes[n][1], "post")]] for n in _loaded(last)}
        ops1, _ = self._ops(last, roots, inter_names)
        self.stats.structures += 1
        for grid0 in self._grids(0):
            for grid1, loop1 in self._second_sizes(grid0):
                self._emit([KernelSpec(tuple(renamed0), grid0, f"k0_{LOOP}"), KernelSpec(tuple(ops1), grid1, loop1)])

    def _first_roots(self, inters: list[int]) -> list[int]:
        """The first kernel's values (post phase) that a second kernel loads as ``inters``."""
        return [self.index[(self.nodes[n][0], self.nodes[n][1], "post")] for n in inters]

    def _max_intermediates(self) -> int:
        return self.cfg.max_intermediates if self.cfg.max_intermediates is not None else 2

    def _first_budget(self, roots: list[int]) -> int:
        """Ops (saves excluded) of a split graph's first kernel: what the op bound leaves after its
        saves. A running max among the intermediates (a split safe softmax writes it beside its
        partials) is bookkeeping the one-kernel bound does not count: its accumulator and its
        save come on top."""
        return self.max_ops - len(roots) + 2 * sum(self._is_max(r) for r in roots)

    def _second_sizes(self, grid0: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str | int]]:
        """Sizes of the second kernel. The first kernel's grid dims are interchangeable, so one
        representative of each way to share them is enough: the loop reuses the first grid size
        (a split graph), the second kernel's grid may reuse the next ones."""
        share = self.cfg.share_sizes or self.cfg.split_only
        for ng in range(self.cfg.min_grid_dims, self.cfg.max_grid_dims + 1):
            fresh = tuple(f"k1_{p}" for p in PARALLEL[:ng])
            if not self.cfg.split_only:
                yield fresh, f"k1_{LOOP}"
                if self.cfg.last_loop_one:
                    yield fresh, 1
            if not share:
                continue
            loop, rest = grid0[0], grid0[1:]
            for nshare in range(min(ng, len(rest)) + 1):
                yield (*fresh[: ng - nshare], *rest[:nshare]), loop

    def _emit(self, kernels: list[KernelSpec]) -> None:
        from .mapping import feasible

        found = False
        for sg in symbolize(self.name, self.inputs, self.outputs, self.labels.inputs, kernels, self.cfg.concrete_maps):
            found = True
            if self.long:
                sg = replace(sg, long=self.long)
            if self.cfg.check_feasible and not feasible(sg):
                self.stats.pruned["map_infeasible"] += 1
                continue
            self.results.append(sg)
            if self.on_result is not None:
                self.on_result(sg)
            if len(self.results) >= self.cfg.max_candidates:
                self.stats.timed_out = True
                raise _Timeout
        if not found:
            self.stats.pruned["dim_mismatch"] += 1
        self._check_time()


def _loaded(chosen: dict[int, Recipe]) -> tuple[int, ...]:
    """The values a later kernel's block graph loads from the earlier kernel's tensors."""
    return tuple(sorted(n for n, r in chosen.items() if r.tensor == INTERMEDIATE))


class _LaterKernels:
    """The later kernels of split graphs, per set of values they load from the first kernel.

    A later kernel holds at most ``extra_ops`` values more than the fewest of any later kernel that
    loads exactly the same values (and no more than the program's op bound leaves it). It is the
    one-kernel rule (``max_block_ops`` = the fewest ops + ``extra_ops``) applied to the later
    kernel on its own: the program-wide bound counts the whole program, so a later kernel that only
    finishes what the first one accumulated (a split softmax divides two partial sums in 5 ops)
    could otherwise spend the ten ops that bound leaves it on algebraic detours (a sum rebuilt from
    squares of its reciprocal square root ...: qknorm_gqa's later kernels number 371,236 with
    them, 37 without).

    The loaded sets are every set of at most ``max_intermediates`` loop values that have a post
    counterpart (plus any running maxes, which ride along uncounted) from which the outputs can be
    computed at all; per set, one walk that may load only that set (``kernels``)."""

    def __init__(self, gen: Generator, roots: list[int]) -> None:
        self.gen = gen
        self.roots = roots
        self.split = gen.cfg.split_only
        self.budget = gen.max_ops - len(roots)
        self.inter_ok = {
            i for i, (e, labs, ph) in enumerate(gen.nodes)
            if ph == "loop" and (e, labs, "post") in gen.index and gen.exprs[e] not in
            {gen.alg.var(t.name) for t in gen.inputs}
        }
        self._unloaded: list[int] | None = None  # the heights with no value loaded (``_reachable``)

    def loaded_sets(self) -> list[tuple[int, ...]]:
        gen = self.gen
        maxes = sorted(n for n in self.inter_ok if gen._is_max(n))
        plain = sorted(self.inter_ok.difference(maxes))
        sets = []
        for k in range(gen._max_intermediates() + 1):
            for counted in itertools.combinations(plain, k):
                for j in range(len(maxes) + 1):
                    for riding in itertools.combinations(maxes, j):
                        loaded = tuple(sorted(counted + riding))
                        if loaded and self._reachable(loaded):
                            sets.append(loaded)
        return sets

    def _reachable(self, loaded: tuple[int, ...]) -> bool:
        """Can the outputs be computed from ``loaded`` within the op bound's path length? (The heights
        with nothing loaded, once; then per set only what its loads lower: loading a value only adds
        a recipe to it, ``walk_options``.)"""
        gen, only = self.gen, set(loaded)
        users = gen.walk_users(self.split)
        if self._unloaded is None:
            self._unloaded = heights(len(gen.nodes), lambda n: gen.walk_options(n, set(), self.split), users)
        h = heights(len(gen.nodes), lambda n: gen.walk_options(n, only, self.split), users,
                    start=self._unloaded, grown=loaded)
        return all(h[r] <= self.budget for r in self.roots)

    def kernels(self, loaded: tuple[int, ...]) -> list[dict[int, Recipe]]:
        """The later kernels loading exactly ``loaded``, within its own bound: one walk whose bound
        drops to the smallest kernel found so far + ``extra_ops`` (branch and bound: a kernel
        within the final bound is within every earlier one, so none is lost)."""
        gen = self.gen
        walk = _Closure(gen, self.roots, self.budget, set(loaded), gen._max_intermediates())
        found = []
        for c in walk.rec():
            if _loaded(c) == loaded:
                found.append(c)
                walk.budget = min(walk.budget, len(c) + gen.cfg.extra_ops)
        return [c for c in found if len(c) <= walk.budget]


@dataclass
class _Fits:
    """A pending value's options at one mask (``_Closure._fitting``)."""

    fitting: list[tuple[_Check, int]]  # each with the values it makes required
    failed: int  # options over the op bound, but those that close a cycle
    cycles: list[_Check]  # options that close a cycle (within the bound when found)


def _within(m: int, parts: tuple[tuple[int, int], ...], budget: int) -> bool:
    """Whether an option that makes ``m`` required fits the op bound: ``m`` itself, and per argument
    its least graph plus the required values outside its descendants (``parts``)."""
    if m.bit_count() > budget:
        return False
    for outside, least in parts:  # noqa: SIM110 (a loop, not all(): the search's hottest test)
        if (m & outside).bit_count() + least > budget:
            return False
    return True


class _Closure:
    """The depth-first choice of recipes behind ``Generator.closures``.

    Per option of a popped value the checks run cheapest first: the intermediate count, the op
    bound, the root-to-load path bound, the op-kind caps, then the cycle test. The op bound counts
    the values every completion must hold: ``required`` gives, for each value, the values that
    every acyclic block graph computing it contains (a bit set); the union of those of the chosen,
    pending and new values is a lower bound on the graph's size, admissible by construction (see
    ``required``), so no graph within the bound is lost. A cycle needs an
    argument that is already chosen and from which the popped value is reachable: those are the
    popped value's ancestors, found once per pop by walking up the ``users`` of each value (the
    chosen values whose recipes read it) instead of once per option and argument."""

    def __init__(self, gen: Generator, roots: list[int], budget: int, inter_ok: set[int] | None,
                 max_inter: int) -> None:
        self.gen = gen
        self.budget = budget
        self.inter_ok = inter_ok
        self.max_inter = max_inter
        self.split = inter_ok is not None and gen.cfg.split_only
        self.caps = dict(gen.cfg.op_budget) if gen.cfg.op_budget is not None else None
        self.chosen: dict[int, Recipe] = {}
        # each root once (two outputs of one value, sqrt(square(y)) and y, are one root: popped twice, it
        # would be chosen twice and unchosen twice); a list of its own, which the walk pops and extends
        roots = list(dict.fromkeys(roots))
        self.pending = roots
        self.pset = set(roots)
        self.depth: dict[int, int] = dict.fromkeys(roots, 0)  # values above n on one path from a root
        self.users: dict[int, list[int]] = {}
        self.tables = gen.walk_tables(inter_ok, self.split)
        self.req = self.tables.req
        self.mask = 0  # the values every completion holds: those required by the chosen and pending ones
        for n in roots:
            self.mask |= self.req[n]
        self.counts: dict[str, int] = {}
        self.n_inter = 0

    def ancestors(self, n: int) -> set[int]:
        """The chosen values from which ``n`` is reachable."""
        seen: set[int] = set()
        stack = [n]
        while stack:
            for u in self.users.get(stack.pop(), ()):
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen

    def rec(self) -> Iterator[dict[int, Recipe]]:
        gen, chosen, pending = self.gen, self.chosen, self.pending
        if not pending:
            yield dict(chosen)
            return
        gen.stats.block_graphs += 1
        if gen.stats.block_graphs % 2048 == 0:
            gen._check_time()
        tight = self.propagate()
        if tight is None:
            return
        outer, self.mask = self.mask, tight[0]
        yield from self._pop(tight[1], tight[2])
        self.mask = outer

    def propagate(self) -> tuple[int, int, list[tuple[Recipe, int]]] | None:
        """Forward checking: every pending value must still have an option that fits (``_fitting``);
        the values all of its fitting options require are required now. Repeated to a fixpoint;
        None when some pending value has no option left (the state cannot complete), else the
        tightened bit set, the position in ``pending`` of the value with the fewest fitting options
        and those options with their bit sets (chosen next: failing first keeps dead branches
        short; every completion is still reached exactly once, whatever the order). Caps and the
        intermediate count are left to the walk (pruning less, never more). A pass after the first
        tests again only the options that fitted before (the mask only grows, and what does not
        depend on it, the path bound and the cycle test, stands)."""
        mask = self.mask
        fits: dict[int, _Fits] = {}
        changed = True
        best: tuple[int, int, list[tuple[_Check, int]]] = (1 << 30, 0, [])
        while changed:
            changed = False
            best = (1 << 30, 0, [])
            for i, p in enumerate(self.pending):
                fits[p] = self._fitting(p, mask) if p not in fits else self._refit(fits[p], mask)
                fitting = fits[p].fitting
                if not fitting:
                    return None
                if len(fitting) < best[0]:
                    best = (len(fitting), i, fitting)
                common = -1
                for _, m in fitting:
                    common &= m
                if common & ~mask:
                    mask |= common
                    changed = True
        return mask, best[1], [(c[0], m) for c, m in best[2]]

    def _fitting(self, p: int, mask: int) -> _Fits:
        """The options of pending value ``p`` that can still complete within the op bound, with the
        values each one makes required (``mask``: those required now). An option fails when its
        required values exceed the bound; when an argument's least graph (``least``, all inside the
        argument's descendants) plus the required values outside those descendants do; when its
        root-to-load path is longer than the bound; or when it closes a cycle."""
        budget, chosen = self.budget, self.chosen.keys()
        high_max = budget - self.depth[p] - 1
        out = _Fits([], 0, [])
        fitting = out.fitting
        anc: set[int] | None = None
        for check in self.checks(p):
            r, needs, high, parts = check
            m = mask | needs
            over = high > high_max or m.bit_count() > budget
            if not over:  # _within's loop, inlined: the search's hottest test (a call here cost ~10%)
                for outside, least in parts:
                    if (m & outside).bit_count() + least > budget:
                        over = True
                        break
            if over:
                out.failed += 1
                continue
            if not chosen.isdisjoint(r.args):
                anc = self.ancestors(p) if anc is None else anc
                if not anc.isdisjoint(r.args):
                    out.cycles.append(check)
                    continue
            fitting.append((check, m))
        self.gen.stats.pruned["op_limit"] += out.failed
        return out

    def _refit(self, before: _Fits, mask: int) -> _Fits:
        """``_fitting`` at a mask grown from the one ``before`` was found at: only its fitting options
        can fit, each tested against the bound again (failures counted as ``_fitting`` counts them:
        the bound is tested before the cycle)."""
        budget = self.budget
        out = _Fits([], before.failed, before.cycles)
        for check, _ in before.fitting:
            m = mask | check[1]
            if _within(m, check[3], budget):
                out.fitting.append((check, m))
            else:
                out.failed += 1
        cycles_failed = sum(not _within(mask | c[1], c[3], budget) for c in before.cycles)
        self.gen.stats.pruned["op_limit"] += out.failed + cycles_failed
        return out

    def checks(self, n: int) -> list[_Check]:
        """Per option of value ``n``, what ``_fitting`` tests, computed once: the values its
        arguments require, their greatest height, and per argument the values outside its
        descendants (a bit mask) with its least graph size."""
        t = self.tables
        got = t.checks.get(n)
        if got is None:
            got = t.checks[n] = [
                (r, functools.reduce(operator.or_, (t.req[a] for a in r.args), 0),
                 max((t.h[a] for a in r.args), default=0), tuple((~t.desc[a], t.least[a]) for a in r.args))
                for r in t.opts[n]]
        return got

    def _pop(self, at: int, fitting: list[tuple[Recipe, int]]) -> Iterator[dict[int, Recipe]]:
        """Choose each fitting option (``propagate``) of the pending value at ``at`` in turn."""
        gen, chosen, pending, pset = self.gen, self.chosen, self.pending, self.pset
        n = pending.pop(at)
        pset.discard(n)
        rides = gen._is_max(n)  # a running max rides along: not counted among the intermediates
        for r, mask in fitting:
            counted = r.tensor == INTERMEDIATE and not rides
            if counted and self.n_inter >= self.max_inter:
                continue
            kind = "load" if r.op is None else _kind(r.op)
            if self.caps is not None and r.op is not None and self.counts.get(kind, 0) >= self.caps.get(kind, 0):
                gen.stats.pruned["op_budget"] += 1
                continue
            new = [a for a in dict.fromkeys(r.args) if a not in chosen and a not in pset]
            yield from self._choose(n, r, kind, counted, new, mask)
        pending.insert(at, n)
        pset.add(n)

    def _choose(self, n: int, r: Recipe, kind: str, counted: bool, new: list[int],
                mask: int) -> Iterator[dict[int, Recipe]]:
        chosen, pending, users = self.chosen, self.pending, self.users
        chosen[n] = r
        outer, self.mask = self.mask, mask
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.n_inter += counted
        args = tuple(dict.fromkeys(r.args))
        for a in args:
            users.setdefault(a, []).append(n)
        pending.extend(new)
        self.pset.update(new)
        for a in new:
            self.depth[a] = self.depth[n] + 1
        yield from self.rec()
        del pending[len(pending) - len(new):]
        self.pset.difference_update(new)
        for a in args:
            users[a].pop()
        self.n_inter -= counted
        self.counts[kind] -= 1
        self.mask = outer
        del chosen[n]


@functools.cache
def _kind(op: BlockOp) -> str:
    return budget_kind(op)


def _users(opts: list[list[Recipe]]) -> list[list[int]]:
    """Per value, the values with a recipe that takes it as an argument (where a fixpoint's change
    of it can move theirs)."""
    users: list[set[int]] = [set() for _ in opts]
    for n, rs in enumerate(opts):
        for r in rs:
            for a in r.args:
                users[a].add(n)
    return [sorted(u) for u in users]


def _fixpoint(count: int, users: list[list[int]], update: Callable[[int], bool],
              first: Sequence[int] | None = None) -> None:
    """Chaotic iteration to a fixpoint: ``update(n)`` moves value n's entry one way (bounds only grow
    or only shrink) and says whether it changed; the users of a changed value are updated again.
    A monotone update reaches the same fixpoint in any fair order, so this is the round-robin
    iteration's result, with each value recomputed only when one of its arguments moved. ``first``:
    the values to update first (default: all), where the others already hold their update's result."""
    pending = list(range(count)) if first is None else list(first)
    queued = [False] * count
    for n in pending:
        queued[n] = True
    while pending:
        n = pending.pop()
        queued[n] = False
        if update(n):
            for u in users[n]:
                if not queued[u]:
                    queued[u] = True
                    pending.append(u)


def required(count: int, options: Callable[[int], list[Recipe]]) -> list[int]:
    """For each of ``count`` values, the values (a bit set) that every acyclic block graph computing
    it contains: itself, plus what every one of its recipes needs through its arguments; a value
    with no recipe can never be computed (all bits).

    This is the least fixpoint of ``R(n) = {n} ∪ ⋂_recipes ⋃_args R(a)``, iterated up from empty
    sets. The true sets T are a pre-fixpoint (any acyclic graph computing n uses some recipe, and
    holds a graph computing each of its arguments, so it holds ``{n} ∪ ⋃_args T(a)``), and the
    least fixpoint lies below every pre-fixpoint: R(n) ⊆ T(n), so counting R never overestimates."""
    everything = (1 << count) - 1
    opts = [options(n) for n in range(count)]
    req = [0] * count
    changed = True
    while changed:
        changed = False
        for n in range(count):
            need = everything
            for r in opts[n]:
                below = 0
                for a in r.args:
                    below |= req[a]
                need &= below
            need |= 1 << n
            if need != req[n]:
                req[n] = need
                changed = True
    return req


def heights(count: int, options: Callable[[int], list[Recipe]], users: list[list[int]] | None = None,
            start: Sequence[int] | None = None, grown: Sequence[int] = ()) -> list[int]:
    """For each value, the fewest values on a chain from it down to a load through ``options`` (a
    lower bound on the values above a load in any block graph computing it); 2**30 when none.

    With ``start``, the heights under options that differ from ``options`` only at the values in
    ``grown``, where ``options`` has more (``users`` then required): only those values, and the
    values whose heights fall with theirs, are recomputed. Heights only fall as options grow, and
    each one in ``start`` is the height of a chain that ``options`` still has, so the iteration down
    from ``start`` ends where the one down from 2**30 does."""
    inf = 1 << 30
    if start is not None:
        assert users is not None, "heights from a start need the users of every value"
        h, first = list(start), grown
    else:
        h, first = [inf] * count, None
        users = users if users is not None else _users([options(n) for n in range(count)])
    opts: dict[int, list[Recipe]] = {}

    def update(n: int) -> bool:
        best = h[n]
        rs = opts.get(n)
        if rs is None:
            rs = opts[n] = options(n)
        for r in rs:
            v = 0
            for a in r.args:
                if h[a] > v:
                    v = h[a]
            best = min(best, v + 1)
        if best >= h[n]:
            return False
        h[n] = best
        return True

    _fixpoint(count, users, update, first)
    return h


def descendants(count: int, options: Callable[[int], list[Recipe]]) -> list[int]:
    """For each value, the values (a bit set, itself included) that some block graph computing it
    can hold: the least fixpoint of ``D(n) = {n} ∪ ⋃_recipes ⋃_args D(a)``."""
    opts = [options(n) for n in range(count)]
    desc = [1 << n for n in range(count)]
    changed = True
    while changed:
        changed = False
        for n in range(count):
            d = desc[n]
            for r in opts[n]:
                for a in r.args:
                    d |= desc[a]
            if d != desc[n]:
                desc[n] = d
                changed = True
    return desc


def least_sizes(count: int, options: Callable[[int], list[Recipe]], req: list[int], desc: list[int],
                users: list[list[int]] | None = None) -> list[int]:
    """For each value, a lower bound on the size of any acyclic block graph computing it
    (``count + 1``: none exists).

    A graph computing n by recipe r holds n, the values ``req`` gives each argument, and for each
    argument a a graph computing a, which lies inside a's descendants (``desc``) and so is disjoint
    from the other arguments' required values outside them (and from n: acyclic). So its size is
    at least ``max(|{n} ∪ ⋃ R(a)|, 1 + L(a) + |⋃_{b≠a} R(b) ∖ D(a) ∖ {n}|)``, and at least the
    least of that over the recipes. Iterated up from ``|R(n)|`` (admissible): each step maps
    admissible bounds to admissible bounds, and the bounds only grow, capped at ``count + 1``.
    What does not depend on the bounds (the union's size, each argument's added count) is counted
    once, before the iteration."""
    opts = [options(n) for n in range(count)]
    cap = count + 1
    recipes: list[list[tuple[int, tuple[tuple[int, int], ...]]]] = []
    for n in range(count):
        rs = []
        for r in opts[n]:
            args = tuple(dict.fromkeys(r.args))
            union = 1 << n
            for a in args:
                union |= req[a]
            terms = []
            for a in args:
                others = 0
                for b in args:
                    if b != a:
                        others |= req[b]
                terms.append((a, 1 + (others & ~desc[a] & ~(1 << n)).bit_count()))
            rs.append((union.bit_count(), tuple(terms)))
        recipes.append(rs)
    least = [min(r.bit_count(), cap) for r in req]

    def update(n: int) -> bool:
        bound = cap
        for v, terms in recipes[n]:
            for a, extra in terms:
                if least[a] + extra > v:
                    v = least[a] + extra
            if v < bound:
                bound = v
        if bound <= least[n]:
            return False
        least[n] = bound
        return True

    _fixpoint(count, _users(opts) if users is None else users, update)
    return least
