"""Symbolic dimension matching (paper §3.2).

A tile extent is ``D_a / Π_p (m·d_p + 1 − m)``. With m ∈ {0, 1}, ``m·d_p + 1 − m = d_p^m``, so an
extent is a data-dim size times a product of powers of the parallel sizes whose exponents are
*linear* forms in the Boolean mapping variables: ``D_label · Π_p d_p^{L_p(m)}``. This is the
multilinear form SOLVER-NOTES asks for, and two extents are equal for every d exactly when their
labels agree and, for every d_p, their exponent forms agree (coefficient matching). Matching an
operator therefore records the equalities ``L_p = L'_p`` (kept for mapping instantiation) and prunes
at once when the labels differ or an equality has no 0/1 solution.

Labels name classes of data dims that the program forces to be equal (``program_labels``); ``ONE``
is an extent-1 dim (a kept reduction dim).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sympy

from prism.graph import Graph, OpKind

ONE = "1"

# A linear form over mapping variables: sorted (variable, coefficient) pairs; "" is the constant term.
LinForm = tuple[tuple[str, int], ...]
ZERO: LinForm = ()


def lin(items: Iterable[tuple[str, int]]) -> LinForm:
    acc: dict[str, int] = {}
    for v, c in items:
        acc[v] = acc.get(v, 0) + c
    return tuple(sorted((v, c) for v, c in acc.items() if c))


def lin_add(a: LinForm, b: LinForm, sign: int = 1) -> LinForm:
    if not b:
        return a
    if not a and sign == 1:
        return b
    return lin([*a, *((v, sign * c) for v, c in b)])


def lin_var(v: str, c: int = 1, fixed: Mapping[str, int] | None = None) -> LinForm:
    """``c·v``, or the constant ``c·value`` when the variable is fixed (the concrete-maps ablation)."""
    if fixed is not None and v in fixed:
        return (("", c * fixed[v]),) if c * fixed[v] else ZERO
    return ((v, c),) if c else ZERO


def lin_feasible(f: LinForm) -> bool:
    """Necessary condition for ``f == 0`` to have a 0/1 solution (exact when f has at most one variable)."""
    const = sum(c for v, c in f if v == "")
    lo = const + sum(c for v, c in f if v and c < 0)
    hi = const + sum(c for v, c in f if v and c > 0)
    if not lo <= 0 <= hi:
        return False
    terms = [(v, c) for v, c in f if v]
    if len(terms) == 1:
        return -const % terms[0][1] == 0 and -const // terms[0][1] in (0, 1)
    return True


@dataclass(frozen=True)
class Ext:
    """One tile extent: ``D_label · Π_s d_s^{exps[s]}`` (exps sorted by size symbol, zero forms dropped)."""

    label: str
    exps: tuple[tuple[str, LinForm], ...] = ()

    def exp(self, sym: str) -> LinForm:
        for s, f in self.exps:
            if s == sym:
                return f
        return ZERO

    def shifted(self, sym: str, form: LinForm) -> Ext:
        if not form:
            return self
        new = lin_add(self.exp(sym), form)
        rest = [(s, f) for s, f in self.exps if s != sym]
        return Ext(self.label, tuple(sorted([*rest, (sym, new)])) if new else tuple(rest))

    @property
    def is_one(self) -> bool:
        return self.label == ONE and not self.exps

    def to_sympy(self, data_sizes: Mapping[str, sympy.Expr] | None = None) -> sympy.Expr:
        """The paper's form: ``D / Π (m·d + 1 − m)`` (and ``Π (o·d + 1 − o)`` for savers)."""
        base: sympy.Expr = sympy.Integer(1) if self.label == ONE else (
            data_sizes[self.label] if data_sizes else sympy.Symbol(f"D_{self.label}", positive=True))
        expr = base
        for sym, form in self.exps:
            d = sympy.Symbol(f"d_{sym}", positive=True)
            for v, c in form:
                if v == "":
                    expr = expr * d**c
                else:
                    m = sympy.Symbol(v)
                    expr = expr * (m * d + 1 - m) ** c
        return expr


Tile = tuple[Ext, ...]


class Mismatch(Exception):
    """Two dimensions can never be equal for every d (different labels, or no 0/1 solution)."""


def _eq(a: Ext, b: Ext, out: list[LinForm]) -> None:
    if a.label != b.label:
        raise Mismatch(f"{a.label} vs {b.label}")
    if a.exps == b.exps:  # equal for every d: nothing to record
        return
    for sym in {s for s, _ in a.exps} | {s for s, _ in b.exps}:
        f = lin_add(a.exp(sym), b.exp(sym), -1)
        if f:
            if not lin_feasible(f):
                raise Mismatch(f"{sym}: {f}")
            out.append(f)


def match(a: Ext, b: Ext, out: list[LinForm]) -> Ext:
    """Equal extents (a contraction dim): record the equalities, return the common extent."""
    _eq(a, b, out)
    return a


def broadcast(a: Ext, b: Ext, out: list[LinForm]) -> Ext:
    """NumPy broadcasting of two dims for every d: equal, or one of them identically 1."""
    if a.label == ONE and b.label != ONE:
        _eq(a, Ext(ONE), out)
        return b
    if b.label == ONE and a.label != ONE:
        _eq(b, Ext(ONE), out)
        return a
    _eq(a, b, out)
    return a


# ------------------------------------------------------------------------------------- labels


class _UF:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            keep, drop = sorted((ra, rb))
            self.parent[drop] = keep


@dataclass(frozen=True)
class ProgramLabels:
    """Label of every dim of every node of a Graph (``ONE`` for kept reduction dims)."""

    nodes: tuple[tuple[str, ...], ...]
    inputs: dict[str, tuple[str, ...]]
    outputs: dict[str, tuple[str, ...]]


def program_labels(graph: Graph) -> ProgramLabels:
    """Classes of data dims the program forces equal: every input dim starts in its own class."""
    uf = _UF()
    raw: list[list[str]] = []
    bcast = graph.broadcast_dims()
    for idx, node in enumerate(graph.nodes):
        args = [raw[a] for a in node.args]
        match node.kind:
            case OpKind.INPUT:  # a dim of extent 1 that broadcasts (a bias row, a per-row scale)
                lab = [ONE if (node.name, d) in bcast else f"{node.name}.{d}" for d in range(len(node.shape))]
            case OpKind.UNARY:
                lab = list(args[0])
            case OpKind.BINARY:
                lab = []
                for x, y in zip(args[0], args[1], strict=True):
                    if x == ONE:
                        lab.append(y)
                    elif y == ONE:
                        lab.append(x)
                    else:
                        uf.union(x, y)
                        lab.append(x)
            case OpKind.REDUCE:
                lab = [ONE if d == node.dim else s for d, s in enumerate(args[0])]
            case OpKind.TRANSPOSE:
                lab = [*args[0][:-2], args[0][-1], args[0][-2]]
            case OpKind.MATMUL:
                a, b = args
                if a[-1] != ONE and b[-2] != ONE:
                    uf.union(a[-1], b[-2])
                batch = []
                if len(b) == len(a):
                    for x, y in zip(a[:-2], b[:-2], strict=True):
                        if x == ONE:
                            batch.append(y)
                        elif y == ONE:
                            batch.append(x)
                        else:
                            uf.union(x, y)
                            batch.append(x)
                else:
                    batch = list(a[:-2])
                lab = [*batch, a[-2], b[-1]]
        assert len(lab) == len(node.shape), (idx, lab, node.shape)
        raw.append(lab)

    def fin(labels: list[str]) -> tuple[str, ...]:
        return tuple(ONE if s == ONE else uf.find(s) for s in labels)

    nodes = tuple(fin(lab) for lab in raw)
    inputs = {graph.nodes[i].name or "": nodes[i] for i in graph.input_indices}
    outputs = {name: nodes[i] for name, i in graph.output_indices}
    return ProgramLabels(nodes, inputs, outputs)
