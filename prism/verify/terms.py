"""Encode a Graph and a KernelGraph (concrete mappings, symbolic sizes) as verifier terms.

A term is a nested tuple, the same shape as an egglog expression::

    ("In", name)              graph input
    ("Un", op, t)             elementwise unary; op is "exp", "scale:0.5", "scale:1/X.1", "adds:1e-06"...
    ("Bin", op, a, b)         "add" | "sub" | "mul" | "div", NumPy broadcasting
    ("Sum", t, d) ("Max", t, d)
    ("Mm", ra, rb, a, b)      matmul of ranks ra @ rb
    ("Tr", t)                 swap the last two dims
    ("Part", t, d, p) ("Comb", t, d, p) ("Red", t, p) ("Repl", t, p)   parallel operators (paper §4)
    ("RMax", t, p)            max over a parallel dim (a max accumulator)
    ("Resc", t, c, p)         Σ_p t · exp(c − max_p c) (a rescaled accumulator, the online softmax)

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
from typing import Any

import numpy as np

from prism.errors import VerificationError
from prism.graph import Graph, OpKind
from prism.ir import (
    Accum,
    BinaryOp,
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
from prism.ops import Binary, Const, DimRecip, Reduce, Scalar, Unary
from prism.verify import model

Term = tuple


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


def scalar_op(kind: str, s: Scalar | None, dims: DimTable, inputs: set[str]) -> str:
    match s:
        case Const(value):
            return f"{kind}:{value!r}"
        case DimRecip(tensor, dim):
            if tensor not in inputs:
                raise IllFormed(f"DimRecip refers to {tensor!r}, which is not a program input")
            return f"{kind}:1/{dims.find(f'{tensor}.{dim}')}"
        case None:
            raise IllFormed(f"{kind} without a scalar")


def unary_name(fn: Unary, s: Scalar | None, dims: DimTable, inputs: set[str]) -> str:
    if fn is Unary.SCALE:
        return scalar_op("scale", s, dims, inputs)
    if fn is Unary.ADD_SCALAR:
        return scalar_op("adds", s, dims, inputs)
    return fn.value


def matmul_term(a: Term, b: Term, ra: int, rb: int) -> Term:
    return ("Mm", ra, rb, a, b)


def accum_term(x: Term, fn: Reduce, c: Term | None, p: str) -> Term:
    """An accumulator over the loop's parallel dim ``p``: ``Red`` (a sum), ``RMax`` (a running max),
    or ``Resc`` (rescaled by the shift ``c``: ``Σ_p x · exp(c − max_p c)``, the online update)."""
    if c is not None:
        return ("Resc", x, c, p)
    return ("RMax", x, p) if fn is Reduce.MAX else ("Red", x, p)


# ---------------------------------------------------------------------------------- encodings


@dataclass(frozen=True)
class Encoding:
    """Output terms by name, the size of every parallel dim, and the unary op names used."""

    outputs: dict[str, Term]
    par_sizes: dict[str, Size]
    ops: frozenset[str]


def _ops_of(terms: list[Term]) -> frozenset[str]:
    seen: set[int] = set()
    out: set[str] = set()
    stack = list(terms)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t[0] == "Un":
            out.add(t[1])
        stack.extend(a for a in t[1:] if isinstance(a, tuple))
    return frozenset(out)


def encode_graph(graph: Graph) -> tuple[Encoding, DimTable]:
    """The program as terms, and the input-dim equalities its shapes force.

    Two passes: the first collects every equality, the second names each mean's ``1/n`` by the
    final canonical symbol of its dim."""
    graph.check_complete()
    dims = DimTable()
    _encode_graph(graph, dims)
    return _encode_graph(graph, dims), dims


def _encode_graph(graph: Graph, dims: DimTable) -> Encoding:
    names = {t.name for t in graph.inputs}
    bcast = graph.broadcast_dims()
    terms: list[Term] = []
    sym: list[list[str | None]] = []  # per node, per dim: input-dim symbol or None (extent 1 from a reduce)
    for n in graph.nodes:
        args = [terms[a] for a in n.args]
        asym = [sym[a] for a in n.args]
        match n.kind:
            case OpKind.INPUT:
                t: Term = ("In", n.name)
                # a dim of extent 1 that broadcasts is like a kept reduction dim
                s: list[str | None] = [None if (n.name, d) in bcast else f"{n.name}.{d}" for d in range(len(n.shape))]
                dims.unit.update(f"{n.name}.{d}" for d in range(len(n.shape)) if (n.name, d) in bcast)
            case OpKind.UNARY:
                assert isinstance(n.fn, Unary)
                t = ("Un", unary_name(n.fn, n.scalar, dims, names), args[0])
                s = asym[0]
            case OpKind.BINARY:
                assert isinstance(n.fn, Binary)
                t = ("Bin", n.fn.value, args[0], args[1])
                s = []
                for d, (x, y) in enumerate(zip(asym[0], asym[1], strict=True)):
                            ea, eb = (graph.nodes[a].shape[d] for a in n.args)
                            if x is not None and y is not None and ea == eb:
                                dims.union(x, y)
                                s.append(x)
                            elif x is None or y is None:
                                s.append(y if x is None else x)
                            else:
                                raise VerificationError(f"{n.fn.value}: broadcasts an input dim of size 1 "
                                                        "(not supported by the verifier)")
            case OpKind.REDUCE:
                assert isinstance(n.fn, Reduce) and n.dim is not None
                t = ("Sum" if n.fn is Reduce.SUM else "Max", args[0], n.dim)
                s = [None if d == n.dim else x for d, x in enumerate(asym[0])]
            case OpKind.MATMUL:
                a, b = (graph.nodes[i] for i in n.args)
                ra, rb = len(a.shape), len(b.shape)
                t = matmul_term(args[0], args[1], ra, rb)
                xa, xb = asym
                ka, kb = xa[-1], xb[-2]
                if ka is None or kb is None:
                    raise VerificationError("matmul over a reduced dim is not supported by the verifier")
                dims.union(ka, kb)
                if ra == 3 and rb == 3 and xa[0] is not None and xb[0] is not None:
                    dims.union(xa[0], xb[0])
                batch = ([xa[0] if xa[0] is not None else xb[0]] if rb == 3 else [xa[0]]) if ra == 3 else []
                s = [*batch, xa[-2], xb[-1]]
            case OpKind.TRANSPOSE:
                t = ("Tr", args[0])
                s = [*asym[0][:-2], asym[0][-1], asym[0][-2]]
        terms.append(t)
        sym.append(s)
    outs = {name: terms[i] for name, i in graph.output_indices}
    return Encoding(outs, {}, _ops_of(list(outs.values())))


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
    tensors: dict[str, Term] = {t.name: ("In", t.name) for t in kg.inputs}
    par_sizes: dict[str, Size] = {}
    for ki, k in enumerate(kg.kernels):
        if isinstance(k, PredefinedKernel):
            tensors[k.output], ranks[k.output] = _predefined(k, [tensors[t] for t in k.inputs],
                                                              [ranks[t] for t in k.inputs], dims, names)
            continue
        pars = _par_names(k, ki)
        for p, size in zip(pars, (*k.grid, k.loop), strict=True):
            par_sizes[p] = size
        grid_pars, loop_par = pars[:-1], pars[-1]
        # a parallel dim of size 1 splits, replicates, reduces and combines nothing: no operator for it
        unit = {p for p, size in zip(pars, (*k.grid, k.loop), strict=True) if size == 1}
        vals: list[Any] = []
        rk: list[int] = []
        for op in k.ops:
            t: Term | None = None
            r = 0
            match op:
                case Load(tensor, imap, fmap):
                    t = tensors[tensor]
                    r = ranks[tensor]
                    if any(a is not None and not 0 <= a < r for a in (*imap, fmap)):
                        raise IllFormed(f"kernel {k.name!r}: Load of {tensor!r} maps a dim outside rank {r}")
                    for p, a in zip((*grid_pars, loop_par), (*imap, fmap), strict=True):
                        if p not in unit:
                            t = ("Repl", t, p) if a is None else ("Part", t, a, p)
                case UnaryOp(fn, x, scalar):
                    t, r = ("Un", unary_name(fn, scalar, dims, names), vals[x]), rk[x]
                case BinaryOp(fn, a, b):
                    if rk[a] != rk[b]:
                        raise IllFormed(f"kernel {k.name!r}: {fn.value} of ranks {rk[a]} and {rk[b]}")
                    t, r = ("Bin", fn.value, vals[a], vals[b]), rk[a]
                case MatmulOp(a, b):
                    if (rk[a], rk[b]) not in ((2, 2), (3, 3), (3, 2)):
                        raise IllFormed(f"kernel {k.name!r}: matmul of ranks {rk[a]}@{rk[b]}")
                    t, r = matmul_term(vals[a], vals[b], rk[a], rk[b]), rk[a]
                case ReduceOp(fn, x, dim):
                    t, r = ("Sum" if fn is Reduce.SUM else "Max", vals[x], dim), rk[x]
                case Accum(x, reduce_dim, fn, rescale):
                    inner = vals[x] if reduce_dim is None else ("Sum", vals[x], reduce_dim)
                    c = None if rescale is None else vals[rescale]
                    t, r = (inner if loop_par in unit else accum_term(inner, fn, c, loop_par)), rk[x]
                case Save(x, tensor, omap):
                    v = vals[x]
                    assert v is not None
                    for p, a in zip(grid_pars, omap, strict=True):
                        assert a is not None  # check_structure: every grid dim is mapped
                        if p not in unit:
                            v = ("Comb", v, a, p)
                    tensors[tensor] = v
                    ranks[tensor] = rk[x]
            vals.append(t)
            rk.append(r)
    outs = {t.name: tensors[t.name] for t in kg.outputs}
    return Encoding(outs, par_sizes, _ops_of(list(outs.values())))


def _predefined(k: PredefinedKernel, args: list[Term], ranks: list[int], dims: DimTable,
                names: set[str]) -> tuple[Term, int]:
    match k.kind:
        case OpKind.UNARY:
            assert isinstance(k.fn, Unary)
            return ("Un", unary_name(k.fn, k.scalar, dims, names), args[0]), ranks[0]
        case OpKind.BINARY:
            assert isinstance(k.fn, Binary)
            return ("Bin", k.fn.value, args[0], args[1]), ranks[0]
        case OpKind.REDUCE:
            assert isinstance(k.fn, Reduce) and k.dim is not None
            return ("Sum" if k.fn is Reduce.SUM else "Max", args[0], k.dim), ranks[0]
        case OpKind.MATMUL:
            return matmul_term(args[0], args[1], ranks[0], ranks[1]), ranks[0]
        case OpKind.TRANSPOSE:
            return ("Tr", args[0]), ranks[0]
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


def check_shapes(term: Term, ranks: Mapping[str, int], dims: DimTable, par_sizes: Mapping[str, Size]) -> model.Type:
    """Parallel dims and symbolic extents of ``term``, valid for every size; IllFormed otherwise."""
    try:
        return model.infer(term, input_types(ranks, dims), par_symbols(par_sizes))
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


def to_sexpr(term: Term, memo: dict[int, str] | None = None) -> str:
    """egglog text of a term."""
    memo = {} if memo is None else memo
    if id(term) in memo:
        return memo[id(term)]
    parts = [term[0]]
    for a in term[1:]:
        if isinstance(a, tuple):
            parts.append(to_sexpr(a, memo))
        elif isinstance(a, str):
            parts.append('"' + a.replace('"', '\\"') + '"')
        else:
            parts.append(str(int(a)))
    s = "(" + " ".join(parts) + ")"
    memo[id(term)] = s
    return s
