"""Incremental enumeration of kernel graphs and block graphs with symbolic mappings (paper §3.1).

A kernel graph is built kernel by kernel; a block graph op by op, in the canonical op order of
``canonical`` (loads first, sorted by tensor; then every op's key strictly larger than the previous
op's), so no two orderings of one block graph are produced. Each new op is matched symbolically
(``dimmatch``: prune on a label mismatch or an infeasible equality, otherwise record the
equalities) and its abstract expression at d = 1 must be a sub-expression of the target
(``exprprune``). Structural rules of the space (also applied by the brute-force soundness tests):
a tensor is loaded at most once per kernel, two values of one phase never have the same abstract
expression, every value is used, a value is saved at most once, and every intermediate tensor is
read by a later kernel.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from prism.graph import Graph, OpKind
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
    TensorSpec,
    UnaryOp,
)
from prism.ops import COMMUTATIVE, Binary, Reduce, Scalar, Unary

from .canonical import INTERMEDIATE, KIND_RANK, OpKey, op_params
from .config import SearchConfig
from .dimmatch import ONE, Ext, LinForm, Mismatch, ProgramLabels, Tile, broadcast, lin_var, match, program_labels
from .exprprune import Atom, Poly, Target, atoms_of, build_target
from .sgraph import LOOP, PARALLEL, MapVar, SGraph, load_var, save_var

log = logging.getLogger(__name__)

PRUNE_RULES = ("dim_mismatch", "expression", "duplicate_value", "unused_bound", "op_budget", "map_infeasible")


@dataclass
class Stats:
    pruned: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PRUNE_RULES, 0))
    partial_graphs: int = 0
    kernels_completed: int = 0
    timed_out: bool = False


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
    raise AssertionError(op)


def _maker(op: BlockOp) -> Callable[..., BlockOp]:
    match op:
        case UnaryOp(fn, _, sc):
            return lambda x: UnaryOp(fn, x, sc)
        case BinaryOp(fn):
            return lambda a, b: BinaryOp(fn, a, b)
        case MatmulOp():
            return MatmulOp
        case ReduceOp(fn, _, dim):
            return lambda x: ReduceOp(fn, x, dim)
        case Accum(_, rd):
            return lambda x: Accum(x, rd)
    raise AssertionError(op)


def _params(op: BlockOp) -> tuple[object, ...]:
    match op:
        case UnaryOp(fn, _, sc):
            return (fn, sc)
        case BinaryOp(fn, a, b):
            return (fn, a > b) if fn not in COMMUTATIVE else (fn,)
        case MatmulOp(a, b):
            return (a > b,)
        case ReduceOp(fn, _, dim):
            return (fn, dim)
        case Accum(_, rd):
            return (rd,)
    raise AssertionError(op)


def _bcast(a: str, b: str) -> str | None:
    if a == b:
        return a
    if a == ONE:
        return b
    if b == ONE:
        return a
    return None


def _label_shape(op: BlockOp, labs: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """Shape rule at d = 1 on dim labels; None when the dims cannot match."""
    match op:
        case UnaryOp():
            return labs[0]
        case BinaryOp():
            a, b = labs
            if len(a) != len(b):
                return None
            out = tuple(_bcast(x, y) for x, y in zip(a, b, strict=True))
            return None if None in out else out  # type: ignore[return-value]
        case MatmulOp():
            a, b = labs
            if len(a) < 2 or len(b) < 2 or len(b) > len(a) or len(a) > 3 or a[-1] != b[-2]:
                return None
            if len(a) == len(b):
                batch = tuple(_bcast(x, y) for x, y in zip(a[:-2], b[:-2], strict=True))
                if None in batch:
                    return None
            else:
                batch = a[:-2]
            return (*batch, a[-2], b[-1])  # type: ignore[arg-type]
        case ReduceOp(_, _, dim) | Accum(_, dim):
            if dim is None:
                return labs[0]
            return tuple(ONE if d == dim else x for d, x in enumerate(labs[0]))
    raise AssertionError(op)


@dataclass(frozen=True)
class _Cand:
    """An op that passed the d = 1 checks for operands of given signatures."""

    rank: int
    params: str
    make: Callable[..., BlockOp]
    expr: int
    phase: str
    budget: str


Sig = tuple[int, tuple[str, ...], str]
Rejects = list[tuple[str, int]]


@dataclass
class _Tensor:
    """A tensor a kernel may load: a program input or an earlier kernel's intermediate."""

    name: str
    expr: int
    dims: Tile
    producer: int  # -1 for program inputs


@dataclass
class _Graph:
    """The kernels finished so far (shared, mutated with undo by the DFS)."""

    kernels: list[CustomKernel]
    tiles: list[tuple[Tile | None, ...]]
    variables: list[MapVar]
    eqs: list[LinForm]
    fixed: dict[str, int]
    tensors: dict[str, _Tensor]
    outputs_saved: set[str]
    loaded: dict[str, int]


class Generator:
    def __init__(self, graph: Graph, config: SearchConfig) -> None:
        self.graph = graph
        self.cfg = config
        self.labels: ProgramLabels = program_labels(graph)
        self.target: Target = build_target(graph, self.labels)
        self.alg = self.target.alg
        self.vocab = vocabulary(graph)
        self.stats = Stats()
        self.exprs: list[Poly] = []
        self._ids: dict[Poly, int] = {}
        self._memo: dict[tuple[object, ...], int] = {}
        self._ok: dict[int, bool] = {}
        self._single: dict[Sig, tuple[list[_Cand], Rejects]] = {}
        self._pair: dict[tuple[Sig, Sig, bool], tuple[list[_Cand], Rejects]] = {}
        self.out_expr = {name: self._intern(p) for name, p in self.target.outputs.items()}
        self.results: list[SGraph] = []
        self.target_atoms: dict[Atom, int] = {}
        for p in self.target.outputs.values():
            for a in atoms_of(p):
                self.target_atoms[a] = {"fn": 0, "pow": 1, "sig": 2}[str(a[0])]
        self.max_terms = max((len(p) for p in self.target.subexprs), default=1)
        self._feats: dict[int, frozenset[Atom]] = {}
        self.deadline = 0.0
        self.inputs = tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.inputs)
        self.outputs = tuple(TensorSpec(t.name, t.shape, t.dtype) for t in graph.outputs)
        self._progress: object = None

    # ------------------------------------------------------------------ expressions
    def _intern(self, p: Poly) -> int:
        i = self._ids.get(p)
        if i is None:
            i = len(self.exprs)
            self._ids[p] = i
            self.exprs.append(p)
        return i

    def _in_target(self, e: int) -> bool:
        ok = self._ok.get(e)
        if ok is None:
            ok = self.target.contains(self.exprs[e])
            self._ok[e] = ok
        return ok

    def _expr(self, op: BlockOp, args: list[int], tiles: list[Tile]) -> int:
        """Interned abstract expression of ``op`` at d = 1 (memoized on the operands' expressions)."""
        match op:
            case UnaryOp(fn, _, scalar):
                mk: tuple[object, ...] = ("u", fn, scalar, args[0])
            case BinaryOp(fn):
                mk = ("b", fn, *args)
            case MatmulOp():
                mk = ("mm", tiles[0][-1].label, *args)
            case ReduceOp(fn, _, dim):
                mk = ("r", fn, tiles[0][dim].label, args[0])
            case Accum(_, rd):
                mk = ("r", Reduce.SUM, tiles[0][rd].label, args[0]) if rd is not None else ("id", args[0])
            case _:
                raise AssertionError(op)
        got = self._memo.get(mk)
        if got is not None:
            return got
        alg = self.alg
        e = [self.exprs[a] for a in args]
        match op:
            case UnaryOp(fn, _, scalar):
                p = alg.unary(fn, e[0], scalar, self.labels.inputs)
            case BinaryOp(fn):
                p = alg.binary(fn, e[0], e[1])
            case MatmulOp():
                p = alg.sum(alg.mul(e[0], e[1]), frozenset({tiles[0][-1].label}))
            case ReduceOp(fn, _, dim):
                p = alg.reduce(fn, e[0], tiles[0][dim].label)
            case Accum(_, rd):
                p = e[0] if rd is None else alg.reduce(Reduce.SUM, e[0], tiles[0][rd].label)
        i = self._intern(p)
        self._memo[mk] = i
        return i

    def feats(self, e: int) -> frozenset[Atom]:
        """Target atoms occurring in expression ``e``."""
        got = self._feats.get(e)
        if got is None:
            got = frozenset(a for a in atoms_of(self.exprs[e]) if a in self.target_atoms)
            self._feats[e] = got
        return got

    def ops_needed(self, present: dict[Atom, int]) -> int:
        """Lower bound on the ops that must still create target atoms absent from every value.

        One op creates atoms of one kind only: one function atom (exp, silu, ...), or one power of a
        sum (rsqrt/division of a sum), or Σ atoms (at most one per term of its operand, and every
        operand is a target sub-expression, so at most ``max_terms``).
        """
        miss = [0, 0, 0]
        for a, kind in self.target_atoms.items():
            if not present.get(a):
                miss[kind] += 1
        return miss[0] + miss[1] + -(-miss[2] // self.max_terms)

    # ------------------------------------------------------------------ memoized candidates
    def _eval(self, op: BlockOp, sigs: list[Sig], counts: dict[str, int]) -> tuple[int, str] | None:
        labs = [sg[1] for sg in sigs]
        out = _label_shape(op, labs)
        if out is None:
            counts["dim_mismatch"] = counts.get("dim_mismatch", 0) + 1
            return None
        e = self._expr(op, [sg[0] for sg in sigs], [tuple(Ext(x) for x in lab) for lab in labs])
        if not self._in_target(e):
            counts["expression"] = counts.get("expression", 0) + 1
            return None
        return e, ("post" if isinstance(op, Accum) else sigs[0][2])

    def single_cands(self, sig: Sig) -> tuple[list[_Cand], Rejects]:
        got = self._single.get(sig)
        if got is not None:
            return got
        v = self.vocab
        rank = len(sig[1])
        ops: list[BlockOp] = [UnaryOp(fn, 0, sc) for fn, sc in v.unary]
        ops += [ReduceOp(fn, 0, d) for fn in v.reduce for d in range(rank)]
        if sig[2] == "loop":
            ops += [Accum(0), *(Accum(0, d) for d in range(rank))]
        out: list[_Cand] = []
        counts: dict[str, int] = {}
        for op in ops:
            r = self._eval(op, [sig], counts)
            if r is not None:
                out.append(_Cand(KIND_RANK[type(op)], op_params(op), _maker(op), r[0], r[1], budget_kind(op)))
        res = (out, sorted(counts.items()))
        self._single[sig] = res
        return res

    def pair_cands(self, a: Sig, b: Sig, first: bool) -> tuple[list[_Cand], Rejects]:
        """Binary ops and matmuls of (a, b); ``first`` is False for the swapped order (no commutative ops)."""
        mk = (a, b, first)
        got = self._pair.get(mk)
        if got is not None:
            return got
        v = self.vocab
        ops: list[BlockOp] = [BinaryOp(fn, 0, 1) for fn in v.binary if first or fn not in COMMUTATIVE]
        if v.matmul:
            ops.append(MatmulOp(0, 1))
        out: list[_Cand] = []
        counts: dict[str, int] = {}
        for op in ops:
            r = self._eval(op, [a, b], counts)
            if r is not None:
                out.append(_Cand(KIND_RANK[type(op)], op_params(op), _maker(op), r[0], r[1], budget_kind(op)))
        res = (out, sorted(counts.items()))
        self._pair[mk] = res
        return res

    # ------------------------------------------------------------------ driver
    def run(self) -> list[SGraph]:
        self.deadline = time.monotonic() + self.cfg.time_budget_s
        tensors = {
            t.name: _Tensor(t.name, self._intern(self.alg.var(t.name)), tuple(Ext(lab) for lab in self.labels.inputs[t.name]), -1)
            for t in self.graph.inputs
        }
        g = _Graph([], [], [], [], {}, tensors, set(), {})
        self._kernels(g)
        return self.results

    def _timed_out(self) -> bool:
        if time.monotonic() > self.deadline:
            self.stats.timed_out = True
            return True
        return False

    def _kernels(self, g: _Graph) -> None:
        k = len(g.kernels)
        if k >= self.cfg.max_kernels or self._timed_out():
            return
        last = k == self.cfg.max_kernels - 1
        names = sorted(g.tensors)
        for r in range(1, len(names) + 1):
            for loads in itertools.combinations(names, r):
                inter = [t for t in loads if g.tensors[t].producer >= 0]
                if k > 0 and not inter:
                    continue  # a later kernel reads something an earlier one wrote
                for grid, loop in self._size_choices(g, k, loads):
                    self._kernel(g, k, list(loads), grid, loop, last)
                    if self.stats.timed_out:
                        return

    def _size_choices(self, g: _Graph, k: int, loads: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
        shared: list[str] = []
        if self.cfg.share_sizes and k > 0:
            for t in loads:
                for e in g.tensors[t].dims:
                    for s, _ in e.exps:
                        if s not in shared:
                            shared.append(s)
        for ng in range(self.cfg.min_grid_dims, self.cfg.max_grid_dims + 1):
            fresh = [f"k{k}_{p}" for p in PARALLEL[:ng]]
            for nshare in range(min(ng, len(shared)) + 1):
                for sh in itertools.combinations(sorted(shared), nshare):
                    grid = (*fresh[: ng - nshare], *sh)
                    for loop in [f"k{k}_{LOOP}", *(s for s in sorted(shared) if s not in sh)]:
                        yield grid, loop

    # ------------------------------------------------------------------ one block graph
    def _kernel(self, g: _Graph, k: int, loads: list[str], grid: tuple[str, ...], loop: str, last: bool) -> None:
        st = _KernelState(self, g, k, grid, loop, last)
        for _ in st.add_loads(loads):
            st.dfs()
            if self.stats.timed_out:
                return

    def finish_graph(self, g: _Graph) -> None:
        """All outputs are written: keep the graph if every intermediate is read and maps can exist."""
        if any(t.producer >= 0 and not g.loaded.get(t.name) for t in g.tensors.values()):
            return
        kg = KernelGraph(self.graph_name, self.inputs, self.outputs, tuple(g.kernels))
        sg = SGraph(kg, tuple(g.variables), tuple(g.eqs), tuple(sorted(g.fixed.items())), tuple(g.tiles))
        from .mapping import feasible

        if not feasible(sg):
            self.stats.pruned["map_infeasible"] += 1
            return
        self.results.append(sg)
        if self._progress is not None:
            self._progress.update(1)  # type: ignore[attr-defined]

    graph_name = "program"


class _KernelState:
    """DFS over the ops of one block graph."""

    def __init__(self, gen: Generator, g: _Graph, k: int, grid: tuple[str, ...], loop: str, last: bool) -> None:
        self.gen = gen
        self.g = g
        self.k = k
        self.grid = grid
        self.loop = loop
        self.last = last
        self.pars = [*zip(PARALLEL, grid, strict=False), (LOOP, loop)]
        self.ops: list[BlockOp] = []
        self.exprs: list[int] = []  # -1 for saves
        self.tiles: list[Tile | None] = []
        self.labs: list[tuple[str, ...]] = []
        self.sigs: list[tuple[int, tuple[str, ...], str]] = []
        self.present: dict[tuple[int, str], int] = {}
        self.n_unused = 0
        self.n_saves = 0
        self.atoms: dict[Atom, int] = {}
        self.phase: list[str] = []
        self.uses: list[int] = []
        self.keys: list[OpKey] = []
        self.saved_vals: set[int] = set()
        self.inter_names: list[str] = []
        self.budget: dict[str, int] = {}
        self.max_ops = gen.cfg.max_block_ops
        self.concrete = gen.cfg.concrete_maps

    # ----------------------------------------------------------- loads (with their variables)
    def add_loads(self, loads: list[str]) -> Iterator[None]:
        yield from self._load_rec(loads, 0)

    def _load_rec(self, loads: list[str], idx: int) -> Iterator[None]:
        if idx == len(loads):
            yield None
            return
        t = self.g.tensors[loads[idx]]
        j = len(self.ops)
        rank = len(t.dims)
        vars_ = [MapVar(load_var(self.k, j, a, p), "load", self.k, j, a, p) for a in range(rank) for p, _ in self.pars]
        for fixed in self._load_fixings(j, rank):
            tile = []
            for a, base in enumerate(t.dims):
                e = base
                for p, sym in self.pars:
                    e = e.shifted(sym, lin_var(load_var(self.k, j, a, p), -1, fixed))
                tile.append(e)
            self._push(Load(t.name, (None,) * len(self.grid), None), t.expr, tuple(tile), "loop", (-1, 0, (), t.name))
            self.g.variables.extend(vars_)
            self.g.fixed.update(fixed)
            self.g.loaded[t.name] = self.g.loaded.get(t.name, 0) + 1
            yield from self._load_rec(loads, idx + 1)
            self.g.loaded[t.name] -= 1
            for v in fixed:
                del self.g.fixed[v]
            del self.g.variables[-len(vars_):]
            self._pop()

    def _load_fixings(self, j: int, rank: int) -> Iterator[dict[str, int]]:
        """Concrete-maps ablation: enumerate imap / fmap here instead of keeping them symbolic."""
        ng = len(self.grid)
        imaps: list[tuple[int | None, ...] | None] = [None]
        if "imap" in self.concrete:
            imaps = [m for m in itertools.product([None, *range(rank)], repeat=ng)
                     if len([a for a in m if a is not None]) == len({a for a in m if a is not None})]
        fmaps: list[int | None] | list[str] = ["sym"]
        if "fmap" in self.concrete:
            fmaps = [None, *range(rank)]
        for im in imaps:
            for fm in fmaps:
                fixed: dict[str, int] = {}
                if im is not None:
                    for pi, p in enumerate(PARALLEL[:ng]):
                        for a in range(rank):
                            fixed[load_var(self.k, j, a, p)] = int(im[pi] == a)
                if fm != "sym":
                    for a in range(rank):
                        fixed[load_var(self.k, j, a, LOOP)] = int(fm == a)
                yield fixed

    # ----------------------------------------------------------- stack
    def _push(self, op: BlockOp, expr: int, tile: Tile | None, phase: str, key: OpKey) -> None:
        from prism.ir import op_args

        self.ops.append(op)
        self.exprs.append(expr)
        self.tiles.append(tile)
        labs = tuple(e.label for e in tile) if tile is not None else ()
        self.labs.append(labs)
        self.phase.append(phase)
        self.sigs.append((expr, labs, phase))
        self.uses.append(0)
        self.keys.append(key)
        for a in op_args(op):
            if self.uses[a] == 0:
                self.n_unused -= 1
            self.uses[a] += 1
        if phase == "save":
            self.n_saves += 1
        else:
            self.n_unused += 1
            self.present[(expr, phase)] = self.present.get((expr, phase), 0) + 1
            for a in self.gen.feats(expr):
                self.atoms[a] = self.atoms.get(a, 0) + 1
        kind = budget_kind(op)
        self.budget[kind] = self.budget.get(kind, 0) + 1

    def _pop(self) -> None:
        from prism.ir import op_args

        op = self.ops.pop()
        expr = self.exprs.pop()
        self.tiles.pop()
        self.labs.pop()
        self.sigs.pop()
        phase = self.phase.pop()
        u = self.uses.pop()
        self.keys.pop()
        if phase == "save":
            self.n_saves -= 1
        else:
            if u == 0:
                self.n_unused -= 1
            self.present[(expr, phase)] -= 1
            for a in self.gen.feats(expr):
                self.atoms[a] -= 1
        for a in op_args(op):
            self.uses[a] -= 1
            if self.uses[a] == 0:
                self.n_unused += 1
        self.budget[budget_kind(op)] -= 1

    def _unused(self) -> int:
        return self.n_unused

    def _can_finish(self) -> bool:
        """Bounds on the ops still needed: every value must be used (a binary op or a save uses up
        at most one unused value), and in the last kernel the missing target atoms must be created
        and the unsaved outputs saved."""
        remaining = self.max_ops - len(self.ops)
        if self.n_unused > remaining:
            return False
        if self.last:
            unsaved = len(self.gen.outputs) - len(self.g.outputs_saved)
            if self.gen.ops_needed(self.atoms) + unsaved > remaining:
                return False
        return True

    # ----------------------------------------------------------- search
    def dfs(self) -> None:
        gen = self.gen
        gen.stats.partial_graphs += 1
        if gen.stats.partial_graphs % 4096 == 0 and gen._timed_out():
            return
        n = len(self.ops)
        if self.n_unused == 0 and self.n_saves:
            self._complete()
        if n >= self.max_ops:
            return
        last_key = self.keys[-1]
        lo = max(last_key[0], 0)
        pr = gen.stats.pruned
        sigs = self.sigs
        for top in range(lo, n):
            st = sigs[top]
            if st[2] == "save":
                continue
            cands: list[tuple[tuple[int, ...], _Cand]] = []
            single, rej = gen.single_cands(st)
            for r, c in rej:
                pr[r] += c
            cands.extend(((top,), c) for c in single)
            for a in range(top + 1):
                sa = sigs[a]
                if sa[2] != st[2]:
                    continue
                pair, rej = gen.pair_cands(sa, st, True)
                for r, c in rej:
                    pr[r] += c
                cands.extend(((a, top), c) for c in pair)
                if a != top:
                    pair, rej = gen.pair_cands(st, sa, False)
                    for r, c in rej:
                        pr[r] += c
                    cands.extend(((top, a), c) for c in pair)
            for args, c in cands:
                key = (top, c.rank, args, c.params)
                if top == lo and key <= last_key:
                    continue
                self._try(c, args, key)
                if gen.stats.timed_out:
                    return
            if st[2] == "post" and top not in self.saved_vals:
                for t in self.gen.outputs:
                    if t.name not in self.g.outputs_saved:
                        key = (top, 6, (top,), t.name)
                        if top > lo or key > last_key:
                            self._try_save(Save(top, t.name, ()), key)
                if not self.last:
                    key = (top, 6, (top,), INTERMEDIATE)
                    if top > lo or key > last_key:
                        self._try_save(Save(top, INTERMEDIATE, ()), key)

    def _try(self, c: _Cand, args: tuple[int, ...], key: OpKey) -> None:
        gen = self.gen
        pr = gen.stats.pruned
        if gen.cfg.op_budget is not None:
            cap = gen.cfg.budget(c.budget)
            if cap is not None and self.budget.get(c.budget, 0) >= cap:
                pr["op_budget"] += 1
                return
        if self.present.get((c.expr, c.phase)):
            pr["duplicate_value"] += 1
            return
        op = c.make(*args)
        eqs: list[LinForm] = []
        try:
            tile = self._shape(op, [self.tiles[a] for a in args], eqs)  # type: ignore[misc]
        except Mismatch:
            pr["dim_mismatch"] += 1
            return
        if tile is None:
            return
        self._push(op, c.expr, tile, c.phase, key)
        if not self._can_finish():
            pr["unused_bound"] += 1
        else:
            self.g.eqs.extend(eqs)
            self.dfs()
            if eqs:
                del self.g.eqs[-len(eqs):]
        self._pop()

    def _shape(self, op: BlockOp, tiles: list[Tile], eqs: list[LinForm]) -> Tile | None:
        match op:
            case UnaryOp():
                return tiles[0]
            case BinaryOp():
                a, b = tiles
                if len(a) != len(b):
                    return None
                return tuple(broadcast(x, y, eqs) for x, y in zip(a, b, strict=True))
            case MatmulOp():
                a, b = tiles
                if len(a) < 2 or len(b) < 2 or len(b) > len(a) or len(a) > 3:
                    return None
                match(a[-1], b[-2], eqs)
                if len(a) == len(b):
                    batch = tuple(broadcast(x, y, eqs) for x, y in zip(a[:-2], b[:-2], strict=True))
                else:
                    batch = a[:-2]
                return (*batch, a[-2], b[-1])
            case ReduceOp(_, _, dim) | Accum(_, dim):
                if dim is None:
                    return tiles[0]
                if tiles[0][dim].is_one:
                    return None  # reducing an extent-1 dim does nothing
                return tuple(Ext(ONE) if d == dim else e for d, e in enumerate(tiles[0]))
        raise AssertionError(op)

    def _save_fixings(self, j: int, rank: int) -> Iterator[dict[str, int]]:
        ng = len(self.grid)
        if "omap" not in self.concrete:
            yield {}
            return
        for om in itertools.permutations(range(rank), ng):
            yield {save_var(self.k, j, a, p): int(om[pi] == a) for pi, p in enumerate(PARALLEL[:ng]) for a in range(rank)}

    def _try_save(self, op: Save, key: OpKey) -> None:
        gen = self.gen
        x = op.x
        tile = self.tiles[x]
        assert tile is not None
        j = len(self.ops)
        rank = len(tile)
        if rank < len(self.grid):
            return  # every grid dim must concatenate along a distinct data dim
        grid_pars = list(zip(PARALLEL, self.grid, strict=False))
        vars_ = [MapVar(save_var(self.k, j, a, p), "save", self.k, j, a, p) for a in range(rank) for p, _ in grid_pars]
        if op.tensor != INTERMEDIATE:
            if self.exprs[x] != gen.out_expr[op.tensor]:
                gen.stats.pruned["expression"] += 1
                return
            labels = gen.labels.outputs[op.tensor]
            if tuple(e.label for e in tile) != labels:
                gen.stats.pruned["dim_mismatch"] += 1
                return
        elif len([t for t in self.g.tensors.values() if t.producer >= 0]) >= gen.cfg.max_intermediates:
            return
        for fixed in self._save_fixings(j, rank):
            eqs: list[LinForm] = []
            dims: list[Ext] = []
            for a, e in enumerate(tile):
                for p, sym in grid_pars:
                    e = e.shifted(sym, lin_var(save_var(self.k, j, a, p), 1, fixed))
                dims.append(e)
            if op.tensor != INTERMEDIATE:
                try:
                    for e in dims:
                        for _, form in e.exps:
                            match(Ext(e.label, (("_", form),)), Ext(e.label), eqs)
                except Mismatch:
                    gen.stats.pruned["dim_mismatch"] += 1
                    continue
                name = op.tensor
            else:
                name = f"t{sum(1 for t in self.g.tensors.values() if t.producer >= 0)}"
            real = Save(x, name, ())
            self._push(real, -1, None, "save", key)
            self.saved_vals.add(x)
            self.g.variables.extend(vars_)
            self.g.fixed.update(fixed)
            self.g.eqs.extend(eqs)
            if op.tensor != INTERMEDIATE:
                self.g.outputs_saved.add(name)
            else:
                self.g.tensors[name] = _Tensor(name, self.exprs[x], tuple(dims), self.k)
            self.dfs()
            if op.tensor != INTERMEDIATE:
                self.g.outputs_saved.discard(name)
            else:
                del self.g.tensors[name]
            if eqs:
                del self.g.eqs[-len(eqs):]
            for v in fixed:
                del self.g.fixed[v]
            del self.g.variables[-len(vars_):]
            self.saved_vals.discard(x)
            self._pop()

    def _complete(self) -> None:
        """The block graph is closed: finish the kernel graph or go on with the next kernel."""
        gen = self.gen
        g = self.g
        ng = len(self.grid)
        ops = []
        for op in self.ops:
            if isinstance(op, Load):
                ops.append(Load(op.tensor, (None,) * ng, None))
            elif isinstance(op, Save):
                ops.append(Save(op.x, op.tensor, (None,) * ng))
            else:
                ops.append(op)
        kernel = CustomKernel(f"k{self.k}", self.grid, self.loop, tuple(ops))
        g.kernels.append(kernel)
        g.tiles.append(tuple(self.tiles))
        gen.stats.kernels_completed += 1
        try:
            if len(g.outputs_saved) == len(gen.outputs):
                gen.finish_graph(g)
            elif not self.last and any(t.producer == self.k for t in g.tensors.values()):
                from .mapping import feasible_partial

                if feasible_partial(g.variables, g.eqs, g.fixed, g.kernels, g.tiles):
                    gen._kernels(g)
                else:
                    gen.stats.pruned["map_infeasible"] += 1
        finally:
            g.kernels.pop()
            g.tiles.pop()
