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

import numpy as np

from prism.ops import BINARY_NUMPY, Binary

Term = tuple  # ("Op", *args) with Term / str / int arguments
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


# ------------------------------------------------------------------ unary op names

LINEAR_PREFIXES = ("scale:",)
LINEAR_NAMES = frozenset({"neg"})


def is_linear(op: str) -> bool:
    """Unary ops f with f(a + b) = f(a) + f(b): the only ones that pass through Red and Sum."""
    return op in LINEAR_NAMES or op.startswith(LINEAR_PREFIXES)


def unary_numpy(op: str, x: np.ndarray, symbols: Mapping[str, float]) -> np.ndarray:
    """NumPy semantics of a unary op name: ``exp``, ``scale:0.5``, ``scale:1/X.1``, ``adds:1e-06``..."""
    from prism.ops import UNARY_NUMPY, Unary

    def scalar(text: str) -> float:
        if text.startswith("1/"):
            return 1.0 / symbols[text[2:]]
        return float(text)

    if op.startswith("scale:"):
        return x * scalar(op[6:])
    if op.startswith("adds:"):
        return x + scalar(op[5:])
    return UNARY_NUMPY[Unary(op)](x, 0.0)


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


def type_of(term: Term, kids: list[Type], par_symbol: Mapping[str, str]) -> Type:
    """Type of ``term`` from its children's types (inputs and variables are typed by the caller)."""
    head = term[0]

    def sym(p: object) -> str:
        return par_symbol.get(str(p), str(p))

    match head:
        case "Un":
            return kids[0]
        case "Bin":
            (pa, ea), (pb, eb) = kids
            if pa != pb or len(ea) != len(eb):
                raise ModelError(f"{term[1]} of operands on parallel dims {sorted(pa)} / {sorted(pb)}, ranks "
                                 f"{len(ea)} / {len(eb)}")
            return pa, tuple(_fit(x, y, str(term[1])) for x, y in zip(ea, eb, strict=True))
        case "Sum" | "Max":
            p, e = kids[0]
            d = _dim(e, term[2], head)
            return p, tuple(ONE if i == d else x for i, x in enumerate(e))
        case "Mm":
            ra, rb = term[1], term[2]
            (pa, ea), (pb, eb) = kids
            if pa != pb or (ra, rb) not in ((2, 2), (3, 3), (3, 2)) or len(ea) != ra or len(eb) != rb:
                raise ModelError(f"matmul {ra}@{rb} of ranks {len(ea)}@{len(eb)} on {sorted(pa)} / {sorted(pb)}")
            if ea[-1] != eb[-2]:
                raise ModelError(f"matmul contraction extents {ea[-1]} and {eb[-2]} differ for some sizes")
            batch = (_fit(ea[0], eb[0], "matmul batch"),) if rb == 3 else ea[:1] if ra == 3 else ()
            return pa, (*batch, ea[-2], eb[-1])
        case "Tr":
            p, e = kids[0]
            if len(e) < 2:
                raise ModelError("transpose of rank < 2")
            return p, (*e[:-2], e[-1], e[-2])
        case "Part" | "Comb":
            p, e = kids[0]
            d = _dim(e, term[2], head)
            par = str(term[3])
            if (par in p) == (head == "Part"):
                raise ModelError(f"{head} over {par} with parallel dims {sorted(p)}")
            if head == "Part" and e[d] == ONE:
                raise ModelError("a split of an extent that is always 1")
            step = -1 if head == "Part" else 1
            pars = p | {par} if head == "Part" else p - {par}
            return pars, tuple(mono_mul(x, sym(par), step) if i == d else x for i, x in enumerate(e))
        case "Resc":
            (pa, ea), (pc, ec) = kids
            par = str(term[3])
            if pa != pc or par not in pa or len(ea) != len(ec):
                raise ModelError(f"Resc over {par} of operands on {sorted(pa)} / {sorted(pc)}")
            return pa - {par}, tuple(_fit(x, y, "Resc") for x, y in zip(ea, ec, strict=True))
        case "Red" | "RMax" | "Repl":
            p, e = kids[0]
            par = str(term[2])
            if (par in p) != (head != "Repl"):
                raise ModelError(f"{head} over {par} with parallel dims {sorted(p)}")
            return (p - {par} if head != "Repl" else p | {par}), e
    raise ModelError(f"unknown term head {head!r}")


def infer(term: Term, leaves: Mapping[str, Type], par_symbol: Mapping[str, str],
          memo: dict[int, Type] | None = None) -> Type:
    """Symbolic type of a term whose ``In``/``?`` leaves are typed by ``leaves``."""
    memo = {} if memo is None else memo
    if id(term) in memo:
        return memo[id(term)]
    if term[0] in ("In", "?"):
        if term[1] not in leaves:
            raise ModelError(f"no type for {term[1]!r}")
        out = leaves[term[1]]
    else:
        kids = [infer(a, leaves, par_symbol, memo) for a in term[1:] if isinstance(a, tuple)]
        out = type_of(term, kids, par_symbol)
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


def _numeric(term: Term, kids: list[PT], sizes: Mapping[str, int], symbols: Mapping[str, float]) -> np.ndarray:
    head = term[0]
    match head:
        case "Un":
            return unary_numpy(str(term[1]), kids[0].arr, symbols)
        case "Bin":
            return BINARY_NUMPY[Binary(term[1])](kids[0].arr, kids[1].arr)
        case "Sum" | "Max":
            v = kids[0]
            ax = len(v.pars) + int(term[2])
            return v.arr.sum(axis=ax, keepdims=True) if head == "Sum" else v.arr.max(axis=ax, keepdims=True)
        case "Mm":
            a, b = kids
            barr = b.arr
            if term[1] == 3 and term[2] == 2:
                barr = barr.reshape((*barr.shape[:len(b.pars)], 1, *barr.shape[len(b.pars):]))
            return np.matmul(a.arr, barr)
        case "Tr":
            return np.swapaxes(kids[0].arr, -1, -2)
        case "Part":
            v = kids[0]
            par, n = str(term[3]), sizes[str(term[3])]
            ax = len(v.pars) + int(term[2])
            if v.arr.shape[ax] % n:
                raise ModelError(f"Part of extent {v.arr.shape[ax]} into {n} chunks")
            chunks = np.stack(np.split(v.arr, n, axis=ax))
            new = tuple(sorted((*v.pars, par)))
            return _moved(chunks, (par, *v.pars), new)
        case "Comb":
            v = kids[0]
            par = str(term[3])
            moved = np.moveaxis(v.arr, v.pars.index(par), 0)
            return np.concatenate(list(moved), axis=len(v.pars) - 1 + int(term[2]))
        case "Red":
            v = kids[0]
            return v.arr.sum(axis=v.pars.index(str(term[2])))
        case "RMax":
            v = kids[0]
            return v.arr.max(axis=v.pars.index(str(term[2])))
        case "Resc":
            x, c = kids
            ax = x.pars.index(str(term[3]))
            return (x.arr * np.exp(c.arr - c.arr.max(axis=ax, keepdims=True))).sum(axis=ax)
        case "Repl":
            v = kids[0]
            par = str(term[2])
            rep = np.broadcast_to(v.arr, (sizes[par], *v.arr.shape))
            return _moved(rep, (par, *v.pars), tuple(sorted((*v.pars, par)))).copy()
    raise ModelError(f"unknown term head {head!r}")


def evaluate(term: Term, leaves: Mapping[str, PT], sizes: Mapping[str, int], symbols: Mapping[str, float],
             par_symbol: Mapping[str, str] | None = None, memo: dict[int, PT] | None = None) -> PT:
    """Value of ``term``: ``leaves`` bind ``("In", name)`` and pattern variables ``("?", name)``;
    ``sizes`` gives every parallel dim's size, ``symbols`` the values behind ``scale:1/SYM``."""
    memo = {} if memo is None else memo
    par_symbol = {} if par_symbol is None else par_symbol
    if id(term) in memo:
        return memo[id(term)]
    if term[0] in ("In", "?"):
        if term[1] not in leaves:
            raise ModelError(f"no value for {term[1]!r}")
        out = leaves[term[1]]
    else:
        kids = [evaluate(a, leaves, sizes, symbols, par_symbol, memo) for a in term[1:] if isinstance(a, tuple)]
        pars, ext = type_of(term, [k.type for k in kids], par_symbol)
        if (term[0] == "Bin" or term[0] == "Mm") and kids[0].pars != kids[1].pars:
            raise AssertionError("typed operands with different parallel dims")
        with np.errstate(all="ignore"):
            arr = _numeric(term, kids, sizes, symbols)
        out = PT(tuple(sorted(pars)), arr, ext)
    memo[id(term)] = out
    return out
