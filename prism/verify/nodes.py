"""The verifier's term IR: one frozen node class per egglog constructor.

A term has the same shape as the egglog expression it encodes (``DATATYPE`` in
``prism.verify.axioms``), field for field, so :func:`to_sexpr` is one generic walk::

    In(name)                  graph input
    Un(op, x)                 elementwise unary; ``op`` a :class:`UnOp` (``exp``, ``scale:0.5``, ``scale:1/X.1``)
    Bin(fn, a, b)             add | sub | mul | div (``prism.ops.Binary``), NumPy broadcasting
    Sum(x, dim) Max(x, dim)   reductions keeping the dim
    Mm(ra, rb, a, b)          matmul of ranks ra @ rb
    Tr(rank, x)               swap the last two dims of a rank-``rank`` tensor
    Part(x, dim, par) Comb(x, dim, par) Red(x, par) Repl(x, par)   parallel operators (paper §4)
    RMax(x, par)              max over a parallel dim (a max accumulator)
    Resc(x, c, par)           Σ_par x · exp(c − max_par c) (a rescaled accumulator, the online softmax)
    Var(name)                 a pattern variable (axiom instantiation only; never sent to egglog)

Semantics and typing: ``prism.verify.model``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields

from prism.ops import Binary, Unary

# ------------------------------------------------------------------ unary op names

# the egglog spelling of the two scalar ops (``scale:0.5``, ``adds:1/X.1``)
_SCALAR_PREFIX = {Unary.SCALE: "scale", Unary.ADD_SCALAR: "adds", Unary.CHAIN: "chain", Unary.MAX_SCALAR: "maxs",
                  Unary.MIN_SCALAR: "mins"}
_BY_PREFIX = {v: k for k, v in _SCALAR_PREFIX.items()}


@dataclass(frozen=True)
class UnOp:
    """A unary op of a term: ``fn`` with its scalar, a number (``const``) or ``1/recip`` where
    ``recip`` names an input-dim symbol (a mean's ``1/n``). Its egglog name is :attr:`text`."""

    fn: Unary
    const: float | None = None
    recip: str | None = None

    @property
    def text(self) -> str:
        prefix = _SCALAR_PREFIX.get(self.fn)
        if prefix is None:
            return self.fn.value
        return f"{prefix}:1/{self.recip}" if self.recip is not None else f"{prefix}:{self.const!r}"

    @property
    def linear(self) -> bool:
        """f(a + b) = f(a) + f(b): the only unary ops that pass through Red and Sum."""
        return self.fn is Unary.NEG or self.fn is Unary.SCALE

    @staticmethod
    def parse(text: str) -> UnOp:
        """The op named ``text`` (the inverse of :attr:`text`)."""
        head, sep, arg = text.partition(":")
        if not sep:
            return UnOp(Unary(text))
        fn = _BY_PREFIX[head]
        return UnOp(fn, recip=arg[2:]) if arg.startswith("1/") else UnOp(fn, const=float(arg))


# ------------------------------------------------------------------ nodes


@dataclass(frozen=True, slots=True)
class In:
    name: str


@dataclass(frozen=True, slots=True)
class Var:
    name: str


@dataclass(frozen=True, slots=True)
class Un:
    op: UnOp
    x: Term


@dataclass(frozen=True, slots=True)
class Bin:
    fn: Binary
    a: Term
    b: Term


@dataclass(frozen=True, slots=True)
class Sum:
    x: Term
    dim: int


@dataclass(frozen=True, slots=True)
class Max:
    x: Term
    dim: int


@dataclass(frozen=True, slots=True)
class Mm:
    ra: int
    rb: int
    a: Term
    b: Term


@dataclass(frozen=True, slots=True)
class Tr:
    rank: int
    x: Term


@dataclass(frozen=True, slots=True)
class Part:
    x: Term
    dim: int
    par: str


@dataclass(frozen=True, slots=True)
class Comb:
    x: Term
    dim: int
    par: str


@dataclass(frozen=True, slots=True)
class Red:
    x: Term
    par: str


@dataclass(frozen=True, slots=True)
class RMax:
    x: Term
    par: str


@dataclass(frozen=True, slots=True)
class Resc:
    x: Term
    c: Term
    par: str


@dataclass(frozen=True, slots=True)
class Repl:
    x: Term
    par: str


Leaf = In | Var
Term = In | Var | Un | Bin | Sum | Max | Mm | Tr | Part | Comb | Red | RMax | Resc | Repl
NODES: tuple[type[Term], ...] = (In, Var, Un, Bin, Sum, Max, Mm, Tr, Part, Comb, Red, RMax, Resc, Repl)
BY_HEAD: dict[str, type[Term]] = {cls.__name__: cls for cls in NODES}


def kids(t: Term) -> tuple[Term, ...]:
    """The term's operands, in field order."""
    match t:
        case In() | Var():
            return ()
        case Un(_, x) | Tr(_, x) | Sum(x, _) | Max(x, _) | Part(x, _, _) | Comb(x, _, _) | Red(x, _) | RMax(x, _) \
                | Repl(x, _):
            return (x,)
        case Bin(_, a, b) | Mm(_, _, a, b) | Resc(a, b, _):
            return (a, b)


def walk(terms: Iterable[Term]) -> Iterator[Term]:
    """Every distinct node (by identity) reachable from ``terms``."""
    seen: set[int] = set()
    stack = list(terms)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        yield t
        stack.extend(kids(t))


def unary_ops(terms: Iterable[Term]) -> frozenset[UnOp]:
    """The unary ops used anywhere in ``terms``."""
    return frozenset(t.op for t in walk(terms) if isinstance(t, Un))


class Interner:
    """One object for each structurally equal term: the candidates of one program share most of their
    subterms (kernels recur across plans), so memos by ``id`` (shape inference, egglog text) hit across
    candidates once their terms are interned. Keeps every term it returns alive, so such ids stay valid."""

    def __init__(self) -> None:
        self._table: dict[tuple[object, ...], Term] = {}

    def __call__(self, terms: Sequence[Term]) -> list[Term]:
        """``terms`` with every node replaced by its one interned object (post order, no recursion)."""
        done: dict[int, Term] = {}
        for root in terms:
            stack = [root]
            while stack:
                t = stack[-1]
                if id(t) in done:
                    stack.pop()
                    continue
                vals = [getattr(t, name) for name in _FIELDS[type(t)]]
                todo = [v for v in vals if type(v) in _NODE_TYPES and id(v) not in done]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                done[id(t)] = self._one(t, vals, done)
        return [done[id(t)] for t in terms]

    def _one(self, t: Term, vals: list[object], done: dict[int, Term]) -> Term:
        """The interned object of ``t`` (field values ``vals``), whose operands are interned (in ``done``)."""
        new = [done[id(v)] if type(v) in _NODE_TYPES else v for v in vals]
        # a UnOp by its egglog text: what the prover sees (its float field would equate 0.0 and -0.0)
        key = (type(t), *(id(v) if type(v) in _NODE_TYPES else v.text if type(v) is UnOp else v for v in new))
        canon = self._table.get(key)
        if canon is None:
            canon = t if all(a is b for a, b in zip(vals, new, strict=True)) else type(t)(*new)  # type: ignore[arg-type]
            self._table[key] = canon
        return canon


_FIELDS: dict[type, tuple[str, ...]] = {cls: tuple(f.name for f in fields(cls)) for cls in NODES}
_NODE_TYPES: frozenset[type] = frozenset(NODES)


def _field_text(v: object, memo: dict[int, str]) -> str:
    match v:
        case UnOp():
            return _quoted(v.text)
        case Binary():
            return _quoted(v.value)
        case str():
            return _quoted(v)
        case int():
            return str(v)
    assert isinstance(v, NODES), v
    return to_sexpr(v, memo)


def _quoted(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def to_sexpr(term: Term, memo: dict[int, str] | None = None) -> str:
    """egglog text of a term (shared subterms rendered once, through ``memo``)."""
    memo = {} if memo is None else memo
    if id(term) in memo:
        return memo[id(term)]
    assert not isinstance(term, Var), f"pattern variable {term.name!r} in a term sent to egglog"
    parts = [type(term).__name__, *(_field_text(getattr(term, f.name), memo) for f in fields(term))]
    s = "(" + " ".join(parts) + ")"
    memo[id(term)] = s
    return s
