"""Expression-guided pruning (paper §3.3) with abstract expressions at d = 1.

At d = 1 every tile is its whole tensor, for-loop accumulators are the identity (or a sum over their
``reduce_dim``) and the mappings do not matter, so each value of a partial sGraph has one abstract
expression over the program inputs. A partial graph is kept only if every value is a
sub-expression of the target's output under the abstract axioms.

The axioms are built into a normal form instead of being run as rewrites:

* products are multisets of atoms with rational exponents (commutativity, associativity,
  ``square(x) = x·x``, ``rsqrt(x) = x^-1/2``, ``a / b = a·b^-1``);
* sums of products are expanded (distributivity; subtraction and negation are coefficients; a scale
  by a constant is a coefficient, a mean's ``1/n`` is ``Size(dim)^-1``);
* ``Σ_S`` over a dim set pulls out every factor that does not vary along S, splits independent
  factors into separate sums, merges nested sums and distributes over additions (reduction
  splitting, reordering and the sum/mul/div interactions).

The target is "saturated" once: every sub-expression of every equivalent form that the normal form
can reach (sub-products with sub-exponents, bodies of sums with outer factors pushed in, partial
sums over a subset of dims) is enumerated into one set, and a membership query is a hash lookup.
Sub-products are also kept with the constant factor of the product they come from. Because the
normal form distributes products over sums, the set also holds what factoring gives back
(``Target._factored``): the cofactor of a sum's common factor (``X + R`` in ``rms_norm(X + R)``) and,
for sums over the same dims, the merged body and its cofactors (``X + Y`` in ``(X + Y) @ W``). A value
that depends on no input (a constant, such as ``x / x``) is not a sub-expression: a rule of the space.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import assert_never

from prism.graph import Graph, OpKind
from prism.ops import Binary, Const, DimRecip, Reduce, Scalar, Unary

from .dimmatch import ONE, ProgramLabels

# ------------------------------------------------------------------ atoms of a monomial


@dataclass(frozen=True, slots=True)
class Var:
    """A program input."""

    name: str


@dataclass(frozen=True, slots=True)
class Size:
    """The extent of a dim label (a mean's ``1/n`` is ``Size^-1``; a sum of a constant ``Size^1``)."""

    label: str


@dataclass(frozen=True, slots=True)
class Cst:
    """A constant raised to a non-integral power (an integral one is a coefficient)."""

    value: Fraction


@dataclass(frozen=True, slots=True)
class Fn:
    """A non-polynomial function of a polynomial: exp / silu / gelu / relu / ..., or max over ``removed`` dims."""

    fn: Unary | Reduce
    body: Poly
    removed: frozenset[str] = frozenset()
    tag: float = 0.0  # which chain (``Unary.CHAIN``): distinct chains are distinct functions


@dataclass(frozen=True, slots=True)
class Pow:
    """A sum raised to a non-natural power."""

    base: Poly


@dataclass(frozen=True, slots=True)
class Sig:
    """Σ over ``dims`` of a monomial that varies along every one of them."""

    dims: frozenset[str]
    body: Mono


Atom = Var | Size | Cst | Fn | Pow | Sig
Mono = frozenset[tuple[Atom, Fraction]]
Poly = frozenset[tuple[Mono, Fraction]]

EMPTY_MONO: Mono = frozenset()
ZERO_POLY: Poly = frozenset()
F1 = Fraction(1)


def _frac(x: float) -> Fraction:
    return Fraction(x).limit_denominator(1 << 40)


class Algebra:
    """Normal-form construction, with the dims each atom varies along (needed by Σ)."""

    def __init__(self, var_dims: Mapping[str, Iterable[str]]) -> None:
        self.var_dims = {k: frozenset(d for d in v if d != ONE) for k, v in var_dims.items()}
        self._deps: dict[Atom, frozenset[str]] = {}

    # ------------------------------------------------------------------ dependencies
    def deps_atom(self, a: Atom) -> frozenset[str]:
        got = self._deps.get(a)
        if got is not None:
            return got
        match a:
            case Var(name):
                out = self.var_dims[name]
            case Size() | Cst():
                out = frozenset()
            case Fn(_, body, removed):
                out = self.deps_poly(body) - removed
            case Pow(base):
                out = self.deps_poly(base)
            case Sig(dims, body):
                out = self.deps_mono(body) - dims
            case _:
                assert_never(a)
        self._deps[a] = out
        return out

    def deps_mono(self, m: Mono) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for a, _ in m:
            out |= self.deps_atom(a)
        return out

    def deps_poly(self, p: Poly) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for m, _ in p:
            out |= self.deps_mono(m)
        return out

    # ------------------------------------------------------------------ constructors
    def var(self, name: str) -> Poly:
        return self.atom(Var(name))

    @staticmethod
    def const(c: Fraction) -> Poly:
        return frozenset({(EMPTY_MONO, c)}) if c else ZERO_POLY

    def atom(self, a: Atom, e: Fraction = F1) -> Poly:
        return self.mono_poly({a: e}, F1)

    def mono_poly(self, factors: Mapping[Atom, Fraction], coeff: Fraction) -> Poly:
        """A monomial as a polynomial; ``pow`` atoms with a natural exponent are expanded."""
        fs = {a: e for a, e in factors.items() if e}
        if not coeff:
            return ZERO_POLY
        expand = [(a, e) for a, e in fs.items() if isinstance(a, Pow) and e.denominator == 1 and e > 0]
        if not expand:
            return frozenset({(frozenset(fs.items()), coeff)})
        for a, _ in expand:
            del fs[a]
        out = self.mono_poly(fs, coeff)
        for a, e in expand:
            for _ in range(int(e)):
                out = self.mul(out, a.base)
        return out

    @staticmethod
    def add(p: Poly, q: Poly, sign: Fraction = F1) -> Poly:
        acc: dict[Mono, Fraction] = dict(p)
        for m, c in q:
            acc[m] = acc.get(m, Fraction(0)) + sign * c
        return frozenset((m, c) for m, c in acc.items() if c)

    @staticmethod
    def scale(p: Poly, c: Fraction) -> Poly:
        return frozenset((m, c * k) for m, k in p) if c else ZERO_POLY

    def mul(self, p: Poly, q: Poly) -> Poly:
        acc: Poly = ZERO_POLY
        for m1, c1 in p:
            for m2, c2 in q:
                d = dict(m1)
                for a, e in m2:
                    d[a] = d.get(a, Fraction(0)) + e
                acc = self.add(acc, self.mono_poly(d, c1 * c2))
        return acc

    def pow(self, p: Poly, e: Fraction) -> Poly:
        if len(p) == 1:
            ((m, c),) = tuple(p)
            d = {a: k * e for a, k in m}
            if e.denominator == 1:
                return self.mono_poly(d, c ** int(e))
            if c != 1:
                d[Cst(c)] = d.get(Cst(c), Fraction(0)) + e
            return self.mono_poly(d, F1)
        if e.denominator == 1 and e > 0:
            out = self.const(F1)
            for _ in range(int(e)):
                out = self.mul(out, p)
            return out
        return self.mono_poly({Pow(p): e}, F1)

    def fn(self, fn: Unary | Reduce, p: Poly, removed: frozenset[str] = frozenset(), tag: float = 0.0) -> Poly:
        return self.atom(Fn(fn, p, removed, tag))

    def abs(self, p: Poly) -> Poly:
        """``|p|`` with ``|−p| = |p|``: the body's sign fixed by its first monomial in a total order."""
        if not p:
            return ZERO_POLY
        first = min(p, key=lambda mc: mono_key(mc[0]))
        return self.fn(Unary.ABS, self.scale(p, Fraction(-1)) if first[1] < 0 else p)

    def extreme(self, a: Poly, b: Poly, sign: Fraction) -> Poly:
        """``max(a, b)`` (``sign`` 1) or ``min(a, b)`` (−1) as ``(a + b ± |a − b|) / 2``: the same form in
        either operand order."""
        half = Fraction(1, 2)
        return self.add(self.scale(self.add(a, b), half), self.scale(self.abs(self.add(a, b, Fraction(-1))), sign * half))

    def sum(self, p: Poly, dims: frozenset[str]) -> Poly:
        dims = frozenset(d for d in dims if d != ONE)
        if not dims:
            return p
        out = ZERO_POLY
        for m, c in p:
            out = self.add(out, self.scale(self._sum_mono(m, dims), c))
        return out

    def _sum_mono(self, m: Mono, dims: frozenset[str]) -> Poly:
        factors = dict(m)
        dims_set = set(dims)
        changed = True
        while changed:  # merge nested sums that no other factor depends on (Σ_S Σ_T = Σ_{S∪T})
            changed = False
            for a, e in list(factors.items()):
                if not isinstance(a, Sig) or e != 1 or not (self.deps_atom(a) & dims_set):
                    continue
                inner_dims = a.dims
                others = [b for b in factors if b != a]
                if any(self.deps_atom(b) & inner_dims for b in others):
                    continue
                del factors[a]
                for b, k in a.body:
                    factors[b] = factors.get(b, Fraction(0)) + k
                factors = {b: k for b, k in factors.items() if k}
                dims_set |= inner_dims
                changed = True
                break
        outer: dict[Atom, Fraction] = {}
        inner: list[tuple[Atom, Fraction, frozenset[str]]] = []
        for a, e in factors.items():
            dd = self.deps_atom(a) & dims_set
            if dd:
                inner.append((a, e, dd))
            else:
                outer[a] = e
        # connected components of the inner factors over the summed dims
        comps: list[tuple[set[str], dict[Atom, Fraction]]] = []
        for a, e, dd in inner:
            hit = [c for c in comps if c[0] & dd]
            merged_dims, merged = set(dd), {a: e}
            for c in hit:
                merged_dims |= c[0]
                merged.update(c[1])
                comps.remove(c)
            comps.append((merged_dims, merged))
        used: set[str] = set()
        for cd, cf in comps:
            used |= cd
            sig = Sig(frozenset(cd), frozenset(cf.items()))
            outer[sig] = outer.get(sig, Fraction(0)) + 1
        for d in sorted(dims_set - used):
            outer[Size(d)] = outer.get(Size(d), Fraction(0)) + 1
        return self.mono_poly(outer, F1)

    def scalar(self, s: Scalar, input_labels: Mapping[str, tuple[str, ...]]) -> Poly:
        match s:
            case Const(value):
                return self.const(_frac(value))
            case DimRecip(tensor, dim):
                lab = input_labels[tensor][dim]
                return self.const(F1) if lab == ONE else self.atom(Size(lab), Fraction(-1))

    # ------------------------------------------------------------------ operators
    def unary(self, fn: Unary, x: Poly, scalar: Scalar | None, input_labels: Mapping[str, tuple[str, ...]]) -> Poly:
        match fn:
            case Unary.SQUARE:
                return self.pow(x, Fraction(2))
            case Unary.RSQRT:
                return self.pow(x, Fraction(-1, 2))
            case Unary.SQRT:
                return self.pow(x, Fraction(1, 2))
            case Unary.NEG:
                return self.scale(x, Fraction(-1))
            case Unary.SCALE:
                assert scalar is not None
                return self.mul(x, self.scalar(scalar, input_labels))
            case Unary.ADD_SCALAR:
                assert scalar is not None
                return self.add(x, self.scalar(scalar, input_labels))
            case (Unary.EXP | Unary.SILU | Unary.GELU | Unary.GELU_ERF | Unary.RELU | Unary.TANH | Unary.SIGMOID
                  | Unary.LOG | Unary.ERF):
                return self.fn(fn, x)
            case Unary.ABS:
                return self.abs(x)
            case Unary.MAX_SCALAR | Unary.MIN_SCALAR:
                assert scalar is not None
                return self.extreme(x, self.scalar(scalar, input_labels), F1 if fn is Unary.MAX_SCALAR else -F1)
            case Unary.CHAIN:
                assert isinstance(scalar, Const)
                return self.fn(fn, x, tag=scalar.value)

    def binary(self, fn: Binary, a: Poly, b: Poly) -> Poly:
        match fn:
            case Binary.ADD:
                return self.add(a, b)
            case Binary.SUB:
                return self.add(a, b, Fraction(-1))
            case Binary.MUL:
                return self.mul(a, b)
            case Binary.DIV:
                return self.mul(a, self.pow(b, Fraction(-1)))
            case Binary.MAXIMUM | Binary.MINIMUM:
                return self.extreme(a, b, F1 if fn is Binary.MAXIMUM else -F1)

    def reduce(self, fn: Reduce, x: Poly, label: str) -> Poly:
        if label == ONE:
            return x
        match fn:
            case Reduce.SUM:
                return self.sum(x, frozenset({label}))
            case Reduce.MAX:
                return self.fn(Reduce.MAX, x, frozenset({label}))


type SortKey = tuple[object, ...]


def atom_key(a: Atom) -> SortKey:
    """A total order over atoms that does not depend on hashing (the same in every process)."""
    match a:
        case Var(name):
            return ("V", name)
        case Size(label):
            return ("S", label)
        case Cst(value):
            return ("C", value)
        case Fn(fn, body, removed, tag):
            return ("F", fn.value, poly_key(body), tuple(sorted(removed)), tag)
        case Pow(base):
            return ("P", poly_key(base))
        case Sig(dims, body):
            return ("G", tuple(sorted(dims)), mono_key(body))
        case _:
            assert_never(a)


def mono_key(m: Mono) -> SortKey:
    return tuple(sorted((atom_key(a), e) for a, e in m))


def poly_key(p: Poly) -> SortKey:
    return tuple(sorted((mono_key(m), c) for m, c in p))


def key(p: Poly) -> Poly:
    """Lookup key: the normal form itself (constant factors included)."""
    return p


def is_max(p: Poly) -> bool:
    """Is ``p`` a bare max reduction (``max_d e``)?"""
    if len(p) != 1:
        return False
    ((m, c),) = tuple(p)
    if c != 1 or len(m) != 1:
        return False
    ((a, e),) = tuple(m)
    return e == 1 and isinstance(a, Fn) and a.fn is Reduce.MAX


def shifted_by(x: Poly, c: Poly) -> bool:
    """Does ``x`` contain ``exp(… − c)`` (an exponential shifted by ``c``, a bare max)? Only such a
    value is worth accumulating with rescaling by ``c``."""
    ((cm, _),) = tuple(c)
    return any(isinstance(a, Fn) and a.fn is Unary.EXP and (cm, -1) in a.body for a in atoms_of(x))


def has_var(p: Poly) -> bool:
    """Does ``p`` depend on any program input? (A value that does not is a constant.)"""
    for m, _ in p:
        for a, _ in m:
            match a:
                case Var():
                    return True
                case Fn(_, body) | Pow(body) if has_var(body):
                    return True
                case Sig(_, body) if has_var(frozenset({(body, F1)})):
                    return True
    return False


def _sub_exps(q: Fraction) -> list[Fraction]:
    """Exponents p such that ``a^p`` is a sub-term of some form of ``a^q``."""
    out = {q, F1}
    sign = 1 if q > 0 else -1
    for k in (Fraction(1, 2), F1):
        if k < abs(q):
            out.add(sign * k)
    return sorted(out)


@dataclass
class Target:
    """The target's sub-expression set (built once) and the outputs' normal forms."""

    alg: Algebra
    outputs: dict[str, Poly]
    values: list[Poly] = field(default_factory=list)  # the program's scaled values, as written
    subexprs: set[Poly] = field(default_factory=set)
    _seen: set[object] = field(default_factory=set)
    _coeff: dict[Mono, set[tuple[Mono, Fraction]]] = field(default_factory=dict)
    _monos: list[Mono] = field(default_factory=list)  # in the order first reached

    def build(self) -> Target:
        """Every sub-expression of the outputs: the polynomials and monomials their forms reach (a
        closure: the same whatever order the sets are walked in), then each monomial's powers at
        every coefficient it has anywhere in them (``_mono_powers``; only once all are known, so
        the set does not depend on which sum reached a monomial first), and the program's scaled values."""
        for p in self.outputs.values():
            self._poly(p)
        for m in self._monos:
            self._mono_powers(m)
        for p in self.values:  # ``x - 2·y`` computes ``2·y``, which the normal form holds only as ``-2·y``
            self._add(p)
        return self

    def contains(self, p: Poly) -> bool:
        return has_var(p) and key(p) in self.subexprs

    def _add(self, p: Poly) -> None:
        if p:
            self.subexprs.add(key(p))

    def _poly(self, p: Poly) -> None:
        if p in self._seen:
            return
        self._seen.add(p)
        self._add(p)
        terms = list(p)
        for m, c in terms:
            self._coeff.setdefault(m, set()).add((m, c))
        if len(terms) > 1:
            for m, _ in terms:
                self._mono(m)
            if len(terms) <= MAX_SUBSUM_TERMS:
                for r in range(2, len(terms)):
                    for sub in itertools.combinations(terms, r):
                        self._add(frozenset(sub))
            self._factored(terms)
        elif terms:
            self._mono(terms[0][0])

    def _factored(self, terms: list[tuple[Mono, Fraction]]) -> None:
        """Undo the distribution of products over sums that the normal form applies. (1) A sum whose
        terms share a factor, ``a·w + b·w``, has the cofactor ``a + b`` (``X + R`` in ``rms_norm(X + R)``).
        (2) Sums over the same dims, ``Σ_S a + Σ_S b``, are ``Σ_S (a + b)``: ``a + b`` is a sub-expression,
        and so is the cofactor of each group of its terms sharing a factor, divided by any part of it
        (``X + Y`` of ``(X + Y) @ W``; ``X·G + B`` of an affine norm before a matmul)."""
        if common := _common_factor([m for m, _ in terms]):
            # the whole sum's cofactor, if element-wise (X + R of a norm's input). Sub-sums, partial
            # factors and cofactors holding a reduction (a layer norm's X - mean(X)) flood the search
            cofactor = frozenset((_divide(m, common), c) for m, c in terms)
            if not any(isinstance(a, Sig) for m, _ in cofactor for a, _ in m):
                self._add(cofactor)
        for group in _sum_groups(terms, self.alg).values():
            if len(group) > MAX_SUBSUM_TERMS:
                continue
            self._add(frozenset(group))  # Σ_S a + Σ_S b = Σ_S (a + b): the value a reduction reads
            for r in range(2, len(group) + 1):
                for sub in itertools.combinations(group, r):
                    for f in _divisors(_common_factor([m for m, _ in sub])):
                        self._poly(frozenset((_divide(m, f), c) for m, c in sub))

    def _mono_powers(self, m: Mono) -> None:
        """Each product of some of ``m``'s factors at exponents that are sub-terms of theirs, at each
        coefficient ``m`` has in a sum of the target (and 1)."""
        factors = list(m)
        choices = [[Fraction(0), *_sub_exps(q)] for _, q in factors]
        coeffs = {F1, *(c for _, c in self._coeff.get(m, ()))}
        for combo in itertools.product(*choices):
            if any(combo):
                for c in coeffs:
                    self._add(self.alg.mono_poly({a: e for (a, _), e in zip(factors, combo, strict=True) if e}, c))

    def _atom(self, a: Atom) -> None:
        match a:
            case Fn(_, body) | Pow(body):
                self._poly(body)
            case Sig(_, body):
                self._mono(body)

    def _mono(self, m: Mono) -> None:
        if ("m", m) in self._seen:
            return
        self._seen.add(("m", m))
        self._monos.append(m)
        alg = self.alg
        factors = list(m)
        for a, _ in factors:
            self._atom(a)
        # open a sum: its body with outer factors pushed in, summed over any subset of its dims
        for idx, (a, q) in enumerate(factors):
            if not isinstance(a, Sig) or q != 1:
                continue
            others = factors[:idx] + factors[idx + 1 :]
            body = list(a.body)
            dims = sorted(a.dims)
            o_choices = [[Fraction(0), *_sub_exps(e)] for _, e in others]
            b_choices = [[Fraction(0), *_sub_exps(e)] for _, e in body]
            subsets = [frozenset(s) for r in range(len(dims) + 1) for s in itertools.combinations(dims, r)]
            for oc in itertools.product(*o_choices):
                for bc in itertools.product(*b_choices):
                    if not any(bc):
                        continue
                    fs: dict[Atom, Fraction] = {}
                    for (b, _), e in [*zip(others, oc, strict=True), *zip(body, bc, strict=True)]:
                        if e:
                            fs[b] = fs.get(b, Fraction(0)) + e
                    inner = alg.mono_poly(fs, F1)
                    for s in subsets:
                        self._add(alg.sum(inner, s) if s else inner)


MAX_SUBSUM_TERMS = 6  # sub-sums and factorings of a sum are enumerated up to this many terms


def _sum_groups(terms: list[tuple[Mono, Fraction]], alg: Algebra) -> dict[frozenset[str], list[tuple[Mono, Fraction]]]:
    """The terms that are one Σ (exponent 1) times factors constant along its dims, by those dims, each
    as its body with the outer factors pushed in (``f·Σ_S m = Σ_S f·m``)."""
    groups: dict[frozenset[str], list[tuple[Mono, Fraction]]] = {}
    for m, c in terms:
        sums = [a for a, e in m if isinstance(a, Sig) and e == 1]
        if len(sums) != 1:
            continue
        (sig,) = sums
        outer = [(a, e) for a, e in m if a != sig]
        if any(alg.deps_atom(a) & sig.dims for a, _ in outer):
            continue
        inner: dict[Atom, Fraction] = dict(sig.body)
        for a, e in outer:
            inner[a] = inner.get(a, Fraction(0)) + e
        groups.setdefault(sig.dims, []).append((frozenset((a, e) for a, e in inner.items() if e), c))
    return groups


def _common_factor(monos: list[Mono]) -> Mono:
    """The factors every monomial has, each at the exponent nearest zero among them (same sign only)."""
    first, *rest = [dict(m) for m in monos]
    out: dict[Atom, Fraction] = {}
    for a, e in first.items():
        exps = [e, *(m.get(a, Fraction(0)) for m in rest)]
        if all(x > 0 for x in exps):
            out[a] = min(exps)
        elif all(x < 0 for x in exps):
            out[a] = max(exps)
    return frozenset(out.items())


def _divisors(m: Mono) -> list[Mono]:
    """Every non-empty sub-product of ``m`` (each factor at its full exponent or left out)."""
    factors = list(m)
    return [frozenset(sub) for r in range(1, len(factors) + 1) for sub in itertools.combinations(factors, r)]


def _divide(m: Mono, f: Mono) -> Mono:
    d = dict(m)
    for a, e in f:
        d[a] -= e
    return frozenset((a, e) for a, e in d.items() if e)


def atoms_of(p: Poly, out: set[Atom] | None = None) -> set[Atom]:
    """Every function, power-of-a-sum and Σ atom occurring in ``p`` (recursively)."""
    out = set() if out is None else out
    for m, _ in p:
        _atoms_mono(m, out)
    return out


def _atoms_mono(m: Mono, out: set[Atom]) -> None:
    for a, _ in m:
        match a:
            case Fn(_, body) | Pow(body):
                out.add(a)
                atoms_of(body, out)
            case Sig(_, body):
                out.add(a)
                _atoms_mono(body, out)


def graph_exprs(graph: Graph, labels: ProgramLabels, alg: Algebra) -> list[Poly]:
    """Normal form of every node of a Graph."""
    out: list[Poly] = []
    for node in graph.nodes:
        args = [out[a] for a in node.args]
        match node.kind:
            case OpKind.INPUT:
                assert node.name is not None
                out.append(alg.var(node.name))
            case OpKind.UNARY:
                assert isinstance(node.fn, Unary)
                out.append(alg.unary(node.fn, args[0], node.scalar, labels.inputs))
            case OpKind.BINARY:
                assert isinstance(node.fn, Binary)
                out.append(alg.binary(node.fn, args[0], args[1]))
            case OpKind.REDUCE:
                assert isinstance(node.fn, Reduce) and node.dim is not None
                out.append(alg.reduce(node.fn, args[0], labels.nodes[node.args[0]][node.dim]))
            case OpKind.MATMUL:
                k = labels.nodes[node.args[0]][-1]
                out.append(alg.sum(alg.mul(args[0], args[1]), frozenset({k})))
            case OpKind.TRANSPOSE:
                out.append(args[0])
            case _:
                assert_never(node.kind)
    return out


def build_target(graph: Graph, labels: ProgramLabels) -> Target:
    alg = Algebra(labels.inputs)
    exprs = graph_exprs(graph, labels, alg)
    outs = {name: exprs[i] for name, i in graph.output_indices}
    scaled = [e for e, n in zip(exprs, graph.nodes, strict=True) if n.kind is OpKind.UNARY and n.fn is Unary.SCALE]
    return Target(alg, outs, scaled).build()
