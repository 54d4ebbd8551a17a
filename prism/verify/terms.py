"""Encode a Graph and a KernelGraph (concrete mappings, symbolic sizes) as verifier terms.

A term is a tree of the frozen nodes of ``prism.verify.nodes`` (``In``, ``Un``, ``Bin``, ``Sum``,
``Max``, ``Mm``, ``Tr``, ``Part``, ``Comb``, ``Red``, ``RMax``, ``Resc``, ``Repl``), one per egglog
constructor.

Semantics: ``prism.verify.model``. A custom kernel's Load applies, per grid dim in order, ``Part`` along
its imap dim (or ``Repl``), then ``Part`` along the fmap dim over the loop (or ``Repl``): grid first,
then each grid chunk by the loop, as the interpreter does. ``Accum`` is ``Red`` over the loop (after
a ``Sum`` when it reduces a dim), ``Save`` is ``Comb`` along omap for every grid dim. Tensors that one
kernel saves and a later one loads are passed as terms, so a Load that re-splits what a Save combined
along the same-sized parallel dim cancels (``Part(Comb(t,d,p),d,p) = t``).

Parallel dims are named by their size symbol (an int size ``4`` is named ``#4``), so that a combine
kernel's loop ``s`` is the split kernel's grid dim ``s``; a kernel that uses one size twice gets a
distinct name for the second use. This is sound: the term semantics depend only on |p|.

``check_shapes`` is symbolic shape inference: every extent is a monomial over input-dim symbols
(unified where the program forces equality) and size symbols. A candidate whose shapes do not fit
for *every* size (or whose output shape differs from the program's) is ill-formed, hence rejected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

import numpy as np

from prism.errors import VerificationError
from prism.graph import Graph, OpKind
from prism.ir import (
    Accum,
    BinaryOp,
    BlockOp,
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    PredefinedKernel,
    ReduceOp,
    Save,
    Size,
    UnaryOp,
    check_structure,
)
from prism.ops import SCALAR_UNARY, Binary, Const, DimRecip, Reduce, Scalar, Unary
from prism.verify import model
from prism.verify.nodes import (
    Bin,
    Comb,
    In,
    Max,
    Mm,
    Part,
    Red,
    Repl,
    Resc,
    RMax,
    Sum,
    Term,
    Tr,
    Un,
    UnOp,
    unary_ops,
)


class IllFormed(VerificationError):
    """A candidate that is not a well-formed sGraph for every size: rejected, never proven."""


# ---------------------------------------------------------------------------------- dim symbols


class DimTable:
    """Union-find over input dims ``"X.1"``: which input extents the program forces to be equal."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}
        self.unit: set[str] = set()  # input dims of extent 1: they broadcast, their extent is ONE

    def find(self, s: str) -> str:
        self._parent.setdefault(s, s)
        while self._parent[s] != s:
            self._parent[s] = self._parent[self._parent[s]]
            s = self._parent[s]
        return s

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self._parent[hi] = lo


def unary_op(fn: Unary, s: Scalar | None, dims: DimTable, inputs: set[str]) -> UnOp:
    """The term op of ``fn``; a scalar ``1/n`` is named by the canonical symbol of its dim."""
    if fn not in SCALAR_UNARY:
        return UnOp(fn)
    match s:
        case Const(value):
            return UnOp(fn, const=value)
        case DimRecip(tensor, dim):
            if tensor not in inputs:
                raise IllFormed(f"DimRecip refers to {tensor!r}, which is not a program input")
            return UnOp(fn, recip=dims.find(f"{tensor}.{dim}"))
        case None:
            raise IllFormed(f"{fn.value} without a scalar")
        case _:
            assert_never(s)


def reduce_term(fn: Reduce, x: Term, dim: int) -> Term:
    return Sum(x, dim) if fn is Reduce.SUM else Max(x, dim)


def accum_term(x: Term, fn: Reduce, c: Term | None, p: str) -> Term:
    """An accumulator over the loop's parallel dim ``p``: ``Red`` (a sum), ``RMax`` (a running max),
    or ``Resc`` (rescaled by the shift ``c``: ``Σ_p x · exp(c − max_p c)``, the online update)."""
    if c is not None:
        return Resc(x, c, p)
    return RMax(x, p) if fn is Reduce.MAX else Red(x, p)


# ---------------------------------------------------------------------------------- encodings


@dataclass(frozen=True)
class Encoding:
    """Output terms by name, the size of every parallel dim, and the unary op names used."""

    outputs: dict[str, Term]
    par_sizes: dict[str, Size]
    ops: frozenset[UnOp]


def encode_graph(graph: Graph) -> tuple[Encoding, DimTable]:
    """The program as terms, and the input-dim equalities its shapes force.

    Two passes: the first collects every equality, the second names each mean's ``1/n`` by the
    final canonical symbol of its dim."""
    graph.check_complete()
    dims = DimTable()
    _encode_graph(graph, dims)
    return _encode_graph(graph, dims), dims


Syms = list[str | None]  # per dim of a program node: its input-dim symbol, or None (extent 1)


def _encode_graph(graph: Graph, dims: DimTable) -> Encoding:
    names = {t.name for t in graph.inputs}
    bcast = graph.broadcast_dims()
    terms: list[Term] = []
    sym: list[Syms] = []
    for n in graph.nodes:
        args = [terms[a] for a in n.args]
        asym = [sym[a] for a in n.args]
        match n.kind:
            case OpKind.INPUT:
                assert n.name is not None
                t: Term = In(n.name)
                # a dim of extent 1 that broadcasts is like a kept reduction dim
                s: Syms = [None if (n.name, d) in bcast else f"{n.name}.{d}" for d in range(len(n.shape))]
                dims.unit.update(f"{n.name}.{d}" for d in range(len(n.shape)) if (n.name, d) in bcast)
            case OpKind.UNARY:
                assert isinstance(n.fn, Unary)
                t, s = Un(unary_op(n.fn, n.scalar, dims, names), args[0]), asym[0]
            case OpKind.BINARY:
                assert isinstance(n.fn, Binary)
                shapes = [graph.nodes[a].shape for a in n.args]
                t, s = Bin(n.fn, args[0], args[1]), _broadcast_syms(n.fn, asym, shapes, dims)
            case OpKind.REDUCE:
                assert isinstance(n.fn, Reduce) and n.dim is not None
                t = reduce_term(n.fn, args[0], n.dim)
                s = [None if d == n.dim else x for d, x in enumerate(asym[0])]
            case OpKind.MATMUL:
                ra, rb = (len(graph.nodes[i].shape) for i in n.args)
                t, s = Mm(ra, rb, args[0], args[1]), _matmul_syms(ra, rb, asym[0], asym[1], dims)
            case OpKind.TRANSPOSE:
                t = Tr(len(n.shape), args[0])
                s = [*asym[0][:-2], asym[0][-1], asym[0][-2]]
            case _:
                assert_never(n.kind)
        terms.append(t)
        sym.append(s)
    outs = {name: terms[i] for name, i in graph.output_indices}
    return Encoding(outs, {}, unary_ops(outs.values()))


def _broadcast_syms(fn: Binary, asym: list[Syms], shapes: list[tuple[int, ...]], dims: DimTable) -> Syms:
    """The symbols of a binary op's result: equal-extent dims are unified, a reduced dim broadcasts."""
    s: Syms = []
    for d, (x, y) in enumerate(zip(asym[0], asym[1], strict=True)):
        if x is not None and y is not None and shapes[0][d] == shapes[1][d]:
            dims.union(x, y)
            s.append(x)
        elif x is None or y is None:
            s.append(y if x is None else x)
        else:
            raise VerificationError(f"{fn.value}: broadcasts an input dim of size 1 (not supported by the verifier)")
    return s


def _matmul_syms(ra: int, rb: int, xa: Syms, xb: Syms, dims: DimTable) -> Syms:
    """The symbols of a matmul's result; the contraction dims (and 3-D batch dims) are unified."""
    ka, kb = xa[-1], xb[-2]
    if ka is None or kb is None:
        raise VerificationError("matmul over a reduced dim is not supported by the verifier")
    dims.union(ka, kb)
    if ra == 3 and rb == 3 and xa[0] is not None and xb[0] is not None:
        dims.union(xa[0], xb[0])
    batch = ([xa[0] if xa[0] is not None else xb[0]] if rb == 3 else [xa[0]]) if ra == 3 else []
    return [*batch, xa[-2], xb[-1]]


def _par_names(k: CustomKernel, ki: int) -> list[str]:
    names: list[str] = []
    for pos, size in enumerate((*k.grid, k.loop)):
        base = size if isinstance(size, str) else f"#{size}"
        if base in names:
            base = f"{base}~{ki}.{pos}"
        names.append(base)
    return names


def encode_candidate(kg: KernelGraph, graph: Graph, dims: DimTable) -> Encoding:
    """The candidate's outputs as terms; IllFormed if it does not match the program's interface."""
    try:
        check_structure(kg)
    except VerificationError:
        raise
    except Exception as e:  # IRError: a malformed candidate is rejected, not a crash
        raise IllFormed(str(e)) from e
    g_in = {t.name: len(t.shape) for t in graph.inputs}
    k_in = {t.name: len(t.shape) for t in kg.inputs}
    if g_in != k_in:
        raise IllFormed(f"candidate inputs {k_in} differ from the program's {g_in}")
    if {t.name for t in kg.outputs} != {t.name for t in graph.outputs}:
        raise IllFormed("candidate outputs differ from the program's")
    names = set(g_in)
    ranks: dict[str, int] = dict(g_in)
    tensors: dict[str, Term] = {t.name: In(t.name) for t in kg.inputs}
    par_sizes: dict[str, Size] = {}
    for ki, k in enumerate(kg.kernels):
        if isinstance(k, PredefinedKernel):
            tensors[k.output], ranks[k.output] = _predefined(k, [tensors[t] for t in k.inputs],
                                                              [ranks[t] for t in k.inputs], dims, names)
            continue
        pars = _par_names(k, ki)
        par_sizes.update(zip(pars, (*k.grid, k.loop), strict=True))
        # a parallel dim of size 1 splits, replicates, reduces and combines nothing: no operator for it
        unit = frozenset(p for p, size in zip(pars, (*k.grid, k.loop), strict=True) if size == 1)
        ctx = _Kernel(k.name, tuple(pars[:-1]), pars[-1], unit, tensors, ranks, dims, names)
        vals: list[tuple[Term, int]] = []
        for op in k.ops:
            vals.append(_op_term(op, vals, ctx))
    outs = {t.name: tensors[t.name] for t in kg.outputs}
    return Encoding(outs, par_sizes, unary_ops(outs.values()))


@dataclass(frozen=True)
class _Kernel:
    """What encoding one custom kernel's ops needs: its parallel dims (grid, loop; those of size 1
    in ``unit``) and the tensors (terms and ranks) saved so far, which its Saves extend."""

    name: str
    grid_pars: tuple[str, ...]
    loop_par: str
    unit: frozenset[str]
    tensors: dict[str, Term]
    ranks: dict[str, int]
    dims: DimTable
    inputs: set[str]

    def load(self, tensor: str, imap: tuple[int | None, ...], fmap: int | None) -> tuple[Term, int]:
        t, r = self.tensors[tensor], self.ranks[tensor]
        if any(a is not None and not 0 <= a < r for a in (*imap, fmap)):
            raise IllFormed(f"kernel {self.name!r}: Load of {tensor!r} maps a dim outside rank {r}")
        for p, a in zip((*self.grid_pars, self.loop_par), (*imap, fmap), strict=True):
            if p not in self.unit:
                t = Repl(t, p) if a is None else Part(t, a, p)
        return t, r

    def save(self, v: Term, r: int, tensor: str, omap: tuple[int | None, ...]) -> tuple[Term, int]:
        for p, a in zip(self.grid_pars, omap, strict=True):
            assert a is not None  # check_structure: every grid dim is mapped
            if p not in self.unit:
                v = Comb(v, a, p)
        self.tensors[tensor], self.ranks[tensor] = v, r
        return v, r


def _op_term(op: BlockOp, vals: list[tuple[Term, int]], k: _Kernel) -> tuple[Term, int]:
    """The term and rank of one block op of a custom kernel (``vals``: those of the ops before it)."""
    match op:
        case Load(tensor, imap, fmap):
            return k.load(tensor, imap, fmap)
        case UnaryOp(fn, x, scalar):
            return Un(unary_op(fn, scalar, k.dims, k.inputs), vals[x][0]), vals[x][1]
        case BinaryOp(fn, a, b):
            (ta, ra), (tb, rb) = vals[a], vals[b]
            if ra != rb:
                raise IllFormed(f"kernel {k.name!r}: {fn.value} of ranks {ra} and {rb}")
            return Bin(fn, ta, tb), ra
        case MatmulOp(a, b):
            (ta, ra), (tb, rb) = vals[a], vals[b]
            if (ra, rb) not in ((2, 2), (3, 3), (3, 2)):
                raise IllFormed(f"kernel {k.name!r}: matmul of ranks {ra}@{rb}")
            return Mm(ra, rb, ta, tb), ra
        case ReduceOp(fn, x, dim):
            return reduce_term(fn, vals[x][0], dim), vals[x][1]
        case Accum(x, reduce_dim, fn, rescale):
            inner = vals[x][0] if reduce_dim is None else Sum(vals[x][0], reduce_dim)
            c = None if rescale is None else vals[rescale][0]
            return (inner if k.loop_par in k.unit else accum_term(inner, fn, c, k.loop_par)), vals[x][1]
        case Save(x, tensor, omap):
            return k.save(vals[x][0], vals[x][1], tensor, omap)
        case _:
            assert_never(op)


def _predefined(k: PredefinedKernel, args: list[Term], ranks: list[int], dims: DimTable,
                names: set[str]) -> tuple[Term, int]:
    match k.kind:
        case OpKind.UNARY:
            assert isinstance(k.fn, Unary)
            return Un(unary_op(k.fn, k.scalar, dims, names), args[0]), ranks[0]
        case OpKind.BINARY:
            assert isinstance(k.fn, Binary)
            return Bin(k.fn, args[0], args[1]), ranks[0]
        case OpKind.REDUCE:
            assert isinstance(k.fn, Reduce) and k.dim is not None
            return reduce_term(k.fn, args[0], k.dim), ranks[0]
        case OpKind.MATMUL:
            return Mm(ranks[0], ranks[1], args[0], args[1]), ranks[0]
        case OpKind.TRANSPOSE:
            return Tr(ranks[0], args[0]), ranks[0]
        case OpKind.INPUT:
            raise IllFormed(f"kernel {k.name!r}: an input is not a kernel")


# ---------------------------------------------------------------------------------- shapes


def input_types(ranks: Mapping[str, int], dims: DimTable) -> dict[str, model.Type]:
    """Every input whole (no parallel dims), each dim's extent its canonical symbol ``X.1``."""
    def extent(n: str, d: int) -> model.Mono:
        return model.ONE if f"{n}.{d}" in dims.unit else ((dims.find(f"{n}.{d}"), 1),)

    return {n: (frozenset(), tuple(extent(n, d) for d in range(r))) for n, r in ranks.items()}


def par_symbols(par_sizes: Mapping[str, Size]) -> dict[str, str]:
    return {p: s if isinstance(s, str) else f"#{s}" for p, s in par_sizes.items()}


def check_shapes(term: Term, ranks: Mapping[str, int], dims: DimTable, par_sizes: Mapping[str, Size],
                 memo: dict[int, model.Type] | None = None) -> model.Type:
    """Parallel dims and symbolic extents of ``term``, valid for every size; IllFormed otherwise.
    ``memo``: types of subterms by ``id``, inferred before with the same ``par_sizes`` symbols (the
    terms must still be alive)."""
    try:
        return model.infer(term, input_types(ranks, dims), par_symbols(par_sizes), memo)
    except model.ModelError as e:
        raise IllFormed(str(e)) from e


def evaluate(enc: Encoding, dims: DimTable, inputs: Mapping[str, object],
             sizes: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Outputs of an encoding through ``model`` at concrete sizes (``sizes`` by size symbol): for
    checking the encoding against the μGraph interpreter."""
    arrays = {n: np.asarray(v, dtype=np.float64) for n, v in inputs.items()}
    types = input_types({n: a.ndim for n, a in arrays.items()}, dims)
    leaves = {n: model.PT((), arrays[n], types[n][1]) for n in arrays}
    symbols: dict[str, float] = {}
    for n, a in arrays.items():
        for d, e in enumerate(a.shape):
            symbols.setdefault(dims.find(f"{n}.{d}"), float(e))
    par_sizes = {p: int(sizes[s]) if isinstance(s, str) else int(s) for p, s in enc.par_sizes.items()}
    memo: dict[int, model.PT] = {}
    out = {}
    for name, t in enc.outputs.items():
        v = model.evaluate(t, leaves, par_sizes, symbols, par_symbols(enc.par_sizes), memo)
        out[name] = v.arr
    return out
