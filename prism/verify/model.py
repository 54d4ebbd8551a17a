"""Typing and numeric model of verifier terms: the semantics every axiom is tested against.

A value is a :class:`PT` (parallel tensor): a float64 array with one leading axis per parallel dim
(ordered by name) followed by the data axes, plus each data dim's *symbolic extent*, a monomial over
size symbols (input dims such as ``X.1`` and parallel sizes such as ``x``): ``X.1/x`` is a chunk,
``()`` an extent that is 1 for every size (a reduced dim). The four parallel operators follow the
μGraph interpreter (``prism/interpreter.py``):

* ``Part(t, d, p)`` splits data dim d into |p| equal chunks, chunk k going to index k of p;
  applied to a tile that is already a chunk it subdivides that chunk (grid first, then the loop);
* ``Comb(t, d, p)`` concatenates the chunks along d in index order and drops p;
* ``Red(t, p)`` sums over p and drops it (an accumulator); ``RMax(t, p)`` is its max;
  ``Resc(t, c, p)`` is ``Σ_p t · exp(c − max_p c)`` (c broadcasts against t); ``Repl(t, p)``
  broadcasts along p.

Tensor ops act on the data axes, per parallel index. Typing (:func:`type_of`, shared with the
encoder's shape check) is symbolic, so a term is well-typed only if it is for *every* size: two
data dims fit when their extents are the same monomial, a binary op broadcasts only an extent that
is always 1, ``Part`` never splits such an extent. Ill-typed terms raise :class:`ModelError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import assert_never

import numpy as np

from prism.ops import BINARY_NUMPY, UNARY_NUMPY
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
    Var,
    kids,
)

Mono = tuple[tuple[str, int], ...]  # sorted (symbol, exponent != 0); () is the extent 1
Ext = tuple[Mono, ...]
Type = tuple[frozenset[str], Ext]  # parallel dims, symbolic data extents

ONE: Mono = ()


class ModelError(Exception):
    """A term is not well-typed (wrong parallel dims, extents that do not fit for every size)."""


def mono(c: Mapping[str, int]) -> Mono:
    return tuple(sorted((k, v) for k, v in c.items() if v))


def mono_mul(m: Mono, sym: str, e: int) -> Mono:
    c = Counter(dict(m))
    c[sym] += e
    return mono(c)


def mono_value(m: Mono, sizes: Mapping[str, int]) -> int:
    v = 1.0
    for s, e in m:
        v *= float(sizes[s]) ** e
    if abs(v - round(v)) > 1e-9:
        raise ModelError(f"extent {m} is not an integer at these sizes")
    return round(v)


def varies(m: Mono) -> bool:
    """Whether the extent has an input-dim symbol (``X.1``; parallel sizes are identifiers without a
    dot) in its numerator: then neither it nor any chunk of it is always 1."""
    return any(e > 0 and "." in s for s, e in m)


# ------------------------------------------------------------------ unary ops


def unary_numpy(op: UnOp, x: np.ndarray, symbols: Mapping[str, float]) -> np.ndarray:
    """NumPy semantics of a unary op; ``symbols`` gives the value behind a ``1/SYM`` scalar."""
    scalar = 1.0 / symbols[op.recip] if op.recip is not None else op.const if op.const is not None else 0.0
    return UNARY_NUMPY[op.fn](x, scalar)


# ------------------------------------------------------------------ typing


def _dim(ext: Ext, d: object, what: str) -> int:
    if not isinstance(d, int) or not 0 <= d < len(ext):
        raise ModelError(f"{what}: data dim {d!r} outside rank {len(ext)}")
    return d


def _fit(a: Mono, b: Mono, what: str) -> Mono:
    if a == b:
        return a
    if a == ONE:
        return b
    if b == ONE:
        return a
    raise ModelError(f"{what}: extents {a} and {b} differ for some sizes")


def _split(kind: str, kid: Type, d: int, par: str, sym: str) -> Type:
    """``Part`` (a new parallel dim ``par``, extent d divided by its size) or ``Comb`` (the inverse)."""
    p, e = kid
    d = _dim(e, d, kind)
    part = kind == "Part"
    if (par in p) == part:
        raise ModelError(f"{kind} over {par} with parallel dims {sorted(p)}")
    if part and e[d] == ONE:
        raise ModelError("a split of an extent that is always 1")
    pars = p | {par} if part else p - {par}
    return pars, tuple(mono_mul(x, sym, -1 if part else 1) if i == d else x for i, x in enumerate(e))


def _over(kind: str, kid: Type, par: str, add: bool) -> Type:
    """``Repl`` (adds ``par``), ``Red`` / ``RMax`` (drop it); the data extents stay."""
    p, e = kid
    if (par in p) == add:
        raise ModelError(f"{kind} over {par} with parallel dims {sorted(p)}")
    return (p | {par} if add else p - {par}), e


def _matmul_type(ra: int, rb: int, a: Type, b: Type) -> Type:
    (pa, ea), (pb, eb) = a, b
    if pa != pb or (ra, rb) not in ((2, 2), (3, 3), (3, 2)) or len(ea) != ra or len(eb) != rb:
        raise ModelError(f"matmul {ra}@{rb} of ranks {len(ea)}@{len(eb)} on {sorted(pa)} / {sorted(pb)}")
    if ea[-1] != eb[-2]:
        raise ModelError(f"matmul contraction extents {ea[-1]} and {eb[-2]} differ for some sizes")
    batch = (_fit(ea[0], eb[0], "matmul batch"),) if rb == 3 else ea[:1] if ra == 3 else ()
    return pa, (*batch, ea[-2], eb[-1])


def type_of(term: Term, ops: list[Type], par_symbol: Mapping[str, str]) -> Type:
    """Type of ``term`` from its operands' types (inputs and variables are typed by the caller)."""
    match term:
        case Un():
            return ops[0]
        case Bin(fn):
            (pa, ea), (pb, eb) = ops
            if pa != pb or len(ea) != len(eb):
                raise ModelError(f"{fn.value} of operands on parallel dims {sorted(pa)} / {sorted(pb)}, ranks "
                                 f"{len(ea)} / {len(eb)}")
            return pa, tuple(_fit(x, y, fn.value) for x, y in zip(ea, eb, strict=True))
        case Sum(_, dim) | Max(_, dim):
            p, e = ops[0]
            d = _dim(e, dim, type(term).__name__)
            return p, tuple(ONE if i == d else x for i, x in enumerate(e))
        case Mm(ra, rb):
            return _matmul_type(ra, rb, ops[0], ops[1])
        case Tr():
            p, e = ops[0]
            if len(e) < 2:
                raise ModelError("transpose of rank < 2")
            return p, (*e[:-2], e[-1], e[-2])
        case Part(_, dim, par) | Comb(_, dim, par):
            return _split(type(term).__name__, ops[0], dim, par, par_symbol.get(par, par))
        case Resc(_, _, par):
            (pa, ea), (pc, ec) = ops
            if pa != pc or par not in pa or len(ea) != len(ec):
                raise ModelError(f"Resc over {par} of operands on {sorted(pa)} / {sorted(pc)}")
            return pa - {par}, tuple(_fit(x, y, "Resc") for x, y in zip(ea, ec, strict=True))
        case Red(_, par) | RMax(_, par):
            return _over(type(term).__name__, ops[0], par, add=False)
        case Repl(_, par):
            return _over("Repl", ops[0], par, add=True)
        case In() | Var():
            raise ModelError(f"a leaf {term} is typed by the caller")
        case _:
            assert_never(term)


def infer(term: Term, leaves: Mapping[str, Type], par_symbol: Mapping[str, str],
          memo: dict[int, Type] | None = None) -> Type:
    """Symbolic type of a term whose ``In``/``Var`` leaves are typed by ``leaves``."""
    memo = {} if memo is None else memo
    if id(term) in memo:
        return memo[id(term)]
    if isinstance(term, In | Var):
        if term.name not in leaves:
            raise ModelError(f"no type for {term.name!r}")
        out = leaves[term.name]
    else:
        out = type_of(term, [infer(a, leaves, par_symbol, memo) for a in kids(term)], par_symbol)
    memo[id(term)] = out
    return out


# ------------------------------------------------------------------ evaluation


@dataclass(frozen=True)
class PT:
    pars: tuple[str, ...]  # sorted parallel dim names, one leading axis each
    arr: np.ndarray
    ext: Ext

    @property
    def data_shape(self) -> tuple[int, ...]:
        return tuple(self.arr.shape[len(self.pars):])

    @property
    def type(self) -> Type:
        return frozenset(self.pars), self.ext


def _moved(arr: np.ndarray, old: tuple[str, ...], new: tuple[str, ...]) -> np.ndarray:
    """Reorder the leading parallel axes from ``old`` to ``new`` order (same set)."""
    return np.moveaxis(arr, [old.index(p) for p in new], list(range(len(new)))) if old != new else arr


def _numeric(term: Term, vals: list[PT], sizes: Mapping[str, int], symbols: Mapping[str, float]) -> np.ndarray:
    match term:
        case Un(op):
            return unary_numpy(op, vals[0].arr, symbols)
        case Bin(fn):
            return BINARY_NUMPY[fn](vals[0].arr, vals[1].arr)
        case Sum(_, dim):
            return vals[0].arr.sum(axis=len(vals[0].pars) + dim, keepdims=True)
        case Max(_, dim):
            return vals[0].arr.max(axis=len(vals[0].pars) + dim, keepdims=True)
        case Mm(ra, rb):
            a, b = vals
            barr = b.arr
            if ra == 3 and rb == 2:
                barr = barr.reshape((*barr.shape[:len(b.pars)], 1, *barr.shape[len(b.pars):]))
            return np.matmul(a.arr, barr)
        case Tr():
            return np.swapaxes(vals[0].arr, -1, -2)
        case Part(_, dim, par):
            v, n = vals[0], sizes[par]
            ax = len(v.pars) + dim
            if v.arr.shape[ax] % n:
                raise ModelError(f"Part of extent {v.arr.shape[ax]} into {n} chunks")
            chunks = np.stack(np.split(v.arr, n, axis=ax))
            return _moved(chunks, (par, *v.pars), tuple(sorted((*v.pars, par))))
        case Comb(_, dim, par):
            v = vals[0]
            moved = np.moveaxis(v.arr, v.pars.index(par), 0)
            return np.concatenate(list(moved), axis=len(v.pars) - 1 + dim)
        case Red(_, par):
            return vals[0].arr.sum(axis=vals[0].pars.index(par))
        case RMax(_, par):
            return vals[0].arr.max(axis=vals[0].pars.index(par))
        case Resc(_, _, par):
            x, c = vals
            ax = x.pars.index(par)
            return (x.arr * np.exp(c.arr - c.arr.max(axis=ax, keepdims=True))).sum(axis=ax)
        case Repl(_, par):
            v = vals[0]
            rep = np.broadcast_to(v.arr, (sizes[par], *v.arr.shape))
            return _moved(rep, (par, *v.pars), tuple(sorted((*v.pars, par)))).copy()
        case In() | Var():
            raise ModelError(f"a leaf {term} is bound by the caller")
        case _:
            assert_never(term)


def evaluate(term: Term, leaves: Mapping[str, PT], sizes: Mapping[str, int], symbols: Mapping[str, float],
             par_symbol: Mapping[str, str] | None = None, memo: dict[int, PT] | None = None) -> PT:
    """Value of ``term``: ``leaves`` bind ``In(name)`` and pattern variables ``Var(name)``;
    ``sizes`` gives every parallel dim's size, ``symbols`` the values behind a ``1/SYM`` scalar."""
    memo = {} if memo is None else memo
    par_symbol = {} if par_symbol is None else par_symbol
    if id(term) in memo:
        return memo[id(term)]
    if isinstance(term, In | Var):
        if term.name not in leaves:
            raise ModelError(f"no value for {term.name!r}")
        out = leaves[term.name]
    else:
        args = [evaluate(a, leaves, sizes, symbols, par_symbol, memo) for a in kids(term)]
        pars, ext = type_of(term, [k.type for k in args], par_symbol)
        # type_of checked that Bin / Mm operands share their parallel dims (and so their axis order)
        with np.errstate(all="ignore"):
            arr = _numeric(term, args, sizes, symbols)
        out = PT(tuple(sorted(pars)), arr, ext)
    memo[id(term)] = out
    return out
