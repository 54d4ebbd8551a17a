"""The axiom set, as a table of rules grouped by theory.

Each :class:`Axiom` is written once, as egglog patterns (bare lowercase names are variables); the
same text becomes the egglog rule (:func:`prelude`) and is parsed into a tree that
``prism.verify.axiomcheck`` instantiates on random tensors through ``prism.verify.model``. So the
rule that runs is exactly the rule that is tested.

Kinds: ``rewrite`` (lhs → rhs), ``birewrite`` (both directions; only where both sides bind the
same variables, paper §6) and ``unit`` (an analysis fact: the value of ``lhs`` has extent 1 along
``unit_dim``). ``unit t d`` in a condition means "t has a whole extent of 1 along d" (a reduced dim),
``linear f`` that the unary op f is linear (``UnOp.linear``), ``!=`` distinct dims/parallel dims.

Parallel rules are written in the lowering direction (parallel operators move towards the root and
cancel); commutations only across *distinct* parallel dims and, for two splits, distinct data dims;
only linear contexts pass through ``Red``. Associativity lives in the theory ``assoc``, run only in
the bounded second phase (it is what makes negative queries blow up).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, assert_never

from prism.ops import Binary
from prism.verify.nodes import BY_HEAD, Term, UnOp, Var

SExpr = int | str | tuple["SExpr", ...]  # a parsed s-expression; a bare name is ("?", name)
Pattern = tuple[SExpr, ...]


class Kind(enum.Enum):
    """What an axiom states; the value is its egglog command (``unit``/``varies`` are relations)."""

    REWRITE = "rewrite"  # lhs → rhs
    BIREWRITE = "birewrite"  # both directions
    UNIT = "unit"  # lhs has extent 1 along unit_dim
    VARIES = "varies"  # lhs has a varying (input-dim) extent along unit_dim

    @property
    def rewrites(self) -> bool:
        return self is Kind.REWRITE or self is Kind.BIREWRITE


@dataclass(frozen=True)
class Axiom:
    name: str
    theory: str
    lhs: str
    rhs: str = ""
    when: tuple[str, ...] = ()
    kind: Kind = Kind.REWRITE
    unit_dim: str = ""

    def egglog(self) -> str:
        cond = f" :when ({' '.join(self.when)})" if self.when else ""
        match self.kind:
            case Kind.REWRITE | Kind.BIREWRITE:
                return f"({self.kind.value} {self.lhs} {self.rhs}{cond} :ruleset {self.theory})"
            case Kind.UNIT | Kind.VARIES:
                body = " ".join(("(= e__ " + self.lhs + ")", *self.when))
                return f"(rule ({body}) (({self.kind.value} e__ {self.unit_dim})) :ruleset {self.theory})"
            case _:
                assert_never(self.kind)


# ------------------------------------------------------------------ the table

MM_RANKS = ((2, 2), (3, 3), (3, 2))
NE_PQ = "(!= p q)"
NE_DE = "(!= d e)"


def _inverse() -> list[Axiom]:
    return [
        Axiom("comb-of-part", "inverse", "(Comb (Part t d p) d p)", "t"),
        Axiom("part-of-comb", "inverse", "(Part (Comb t d p) d p)", "t"),
    ]


def _commute() -> list[Axiom]:
    b = Kind.BIREWRITE
    return [
        Axiom("part-part", "commute", "(Part (Part t d p) e q)", "(Part (Part t e q) d p)", (NE_DE, NE_PQ), b),
        Axiom("part-repl", "commute", "(Part (Repl t p) d q)", "(Repl (Part t d q) p)", (NE_PQ,), b),
        Axiom("repl-repl", "commute", "(Repl (Repl t p) q)", "(Repl (Repl t q) p)", (NE_PQ,), b),
        Axiom("red-part", "commute", "(Red (Part t d q) p)", "(Part (Red t p) d q)", (NE_PQ,), b),
        Axiom("red-repl", "commute", "(Red (Repl t q) p)", "(Repl (Red t p) q)", (NE_PQ,), b),
        Axiom("red-red", "commute", "(Red (Red t p) q)", "(Red (Red t q) p)", (NE_PQ,), b),
        Axiom("comb-part", "commute", "(Comb (Part t d p) e q)", "(Part (Comb t e q) d p)", (NE_DE, NE_PQ), b),
        Axiom("comb-comb", "commute", "(Comb (Comb t d p) e q)", "(Comb (Comb t e q) d p)", (NE_DE, NE_PQ), b),
        Axiom("comb-repl", "commute", "(Comb (Repl t p) d q)", "(Repl (Comb t d q) p)", (NE_PQ,), b),
        Axiom("red-comb", "commute", "(Red (Comb t d q) p)", "(Comb (Red t p) d q)", (NE_PQ,), b),
        Axiom("rmax-part", "commute", "(RMax (Part t d q) p)", "(Part (RMax t p) d q)", (NE_PQ,), b),
        Axiom("rmax-repl", "commute", "(RMax (Repl t q) p)", "(Repl (RMax t p) q)", (NE_PQ,), b),
        Axiom("rmax-comb", "commute", "(RMax (Comb t d q) p)", "(Comb (RMax t p) d q)", (NE_PQ,), b),
        # a rescaled accumulator over p of a share along d (q) with its shift whole: the share of the
        # accumulator (the shift is one value along d; a combine spread over the head dim)
        Axiom("resc-part", "commute", "(Resc (Part t d q) (Repl c q) p)", "(Part (Resc t c p) d q)",
              (NE_PQ, "(unit c d)"), b),
        Axiom("resc-repl", "commute", "(Resc (Repl t q) (Repl c q) p)", "(Repl (Resc t c p) q)", (NE_PQ,), b),
    ]


def _elementwise() -> list[Axiom]:
    b = Kind.BIREWRITE
    th = "elementwise"
    out = [
        Axiom("un-part", th, "(Un f (Part t d p))", "(Part (Un f t) d p)", (), b),
        Axiom("un-repl", th, "(Un f (Repl t p))", "(Repl (Un f t) p)", (), b),
        Axiom("un-comb", th, "(Un f (Comb t d p))", "(Comb (Un f t) d p)", (), b),
        Axiom("un-red-linear", th, "(Un f (Red t p))", "(Red (Un f t) p)", ("(linear f)",), b),
        Axiom("bin-part-part", th, "(Bin f (Part a d p) (Part c d p))", "(Part (Bin f a c) d p)",
              ("(varies a d)", "(varies c d)")),
        Axiom("bin-repl-repl", th, "(Bin f (Repl a p) (Repl c p))", "(Repl (Bin f a c) p)"),
        Axiom("bin-part-repl", th, "(Bin f (Part a d p) (Repl c p))", "(Part (Bin f a c) d p)", ("(unit c d)",)),
        Axiom("bin-repl-part", th, "(Bin f (Repl c p) (Part a d p))", "(Part (Bin f c a) d p)", ("(unit c d)",)),
        Axiom("bin-comb-comb", th, "(Bin f (Comb a d p) (Comb c d p))", "(Comb (Bin f a c) d p)"),
        Axiom("bin-comb-unit", th, "(Bin f (Comb a d p) c)", "(Comb (Bin f a (Repl c p)) d p)", ("(unit c d)",)),
        Axiom("bin-unit-comb", th, "(Bin f c (Comb a d p))", "(Comb (Bin f (Repl c p) a) d p)", ("(unit c d)",)),
    ]
    for op in ("add", "sub"):
        out.append(Axiom(f"{op}-red-red", th, f'(Bin "{op}" (Red a p) (Red c p))', f'(Red (Bin "{op}" a c) p)', (), b))
    for op in ("mul", "div"):
        out.append(Axiom(f"{op}-red-factor", th, f'(Red (Bin "{op}" a (Repl c p)) p)', f'(Bin "{op}" (Red a p) c)', (), b))
    out.append(Axiom("mul-factor-red", th, '(Red (Bin "mul" (Repl c p) a) p)', '(Bin "mul" c (Red a p))', (), b))
    return out


def _matmul() -> list[Axiom]:
    out: list[Axiom] = []
    b = Kind.BIREWRITE
    for ra, rb in MM_RANKS:
        tag = f"{ra}{rb}"
        mm = f"Mm {ra} {rb}"
        rows, ka, kb, cols_b, cols = ra - 2, ra - 1, rb - 2, rb - 1, ra - 1
        th = "matmul"
        out += [
            Axiom(f"mm{tag}-rows", th, f"({mm} (Part a {rows} p) (Repl c p))", f"(Part ({mm} a c) {rows} p)", (), b),
            Axiom(f"mm{tag}-cols", th, f"({mm} (Repl a p) (Part c {cols_b} p))", f"(Part ({mm} a c) {cols} p)", (), b),
            Axiom(f"mm{tag}-repl", th, f"({mm} (Repl a p) (Repl c p))", f"(Repl ({mm} a c) p)", (), b),
            Axiom(f"mm{tag}-split-k", th, f"(Red ({mm} (Part a {ka} p) (Part c {kb} p)) p)", f"({mm} a c)"),
            Axiom(f"mm{tag}-red-left", th, f"({mm} (Red a p) c)", f"(Red ({mm} a (Repl c p)) p)", (), b),
            Axiom(f"mm{tag}-red-right", th, f"({mm} a (Red c p))", f"(Red ({mm} (Repl a p) c) p)", (), b),
            Axiom(f"mm{tag}-comb-rows", th, f"({mm} (Comb a {rows} p) c)", f"(Comb ({mm} a (Repl c p)) {rows} p)"),
            Axiom(f"mm{tag}-comb-cols", th, f"({mm} a (Comb c {cols_b} p))", f"(Comb ({mm} (Repl a p) c) {cols} p)"),
            Axiom(f"mm{tag}-comb-k", th, f"({mm} (Comb a {ka} p) (Comb c {kb} p))", f"(Red ({mm} a c) p)"),
        ]
        if (ra, rb) == (3, 3):
            out.append(Axiom(f"mm{tag}-batch", th, f"({mm} (Part a 0 p) (Part c 0 p))", f"(Part ({mm} a c) 0 p)",
                             ("(varies a 0)", "(varies c 0)"), b))
        if (ra, rb) == (3, 2):
            out.append(Axiom(f"mm{tag}-batch", th, f"({mm} (Part a 0 p) (Repl c p))", f"(Part ({mm} a c) 0 p)", (), b))
    return out


def _reduce() -> list[Axiom]:
    b = Kind.BIREWRITE
    th = "reduce"
    out = [
        Axiom("sum-split", th, "(Red (Sum (Part t d p) d) p)", "(Sum t d)"),
        Axiom("sum-of-comb", th, "(Sum (Comb t d p) d)", "(Red (Sum t d) p)"),
        Axiom("sum-unit", th, "(Sum t d)", "t", ("(unit t d)",)),
        Axiom("sum-red", th, "(Sum (Red t p) e)", "(Red (Sum t e) p)", (), b),
    ]
    out += [
        Axiom("max-split", th, "(RMax (Max (Part t d p) d) p)", "(Max t d)"),
        Axiom("max-of-comb", th, "(Max (Comb t d p) d)", "(RMax (Max t d) p)"),
        Axiom("max-unit", th, "(Max t d)", "t", ("(unit t d)",)),
        Axiom("max-red", th, "(Max (RMax t p) e)", "(RMax (Max t e) p)", (), b),
        # the running max of a tile every iteration reads whole (no loop split) is that tile: how a
        # kernel carries a loop-invariant input into its post-loop phase (prism.epilogue)
        Axiom("rmax-of-repl", th, "(RMax (Repl t p) p)", "t"),
    ]
    for red in ("Sum", "Max"):
        low = red.lower()
        out += [
            Axiom(f"{low}-part-other", th, f"({red} (Part t d p) e)", f"(Part ({red} t e) d p)", (NE_DE,), b),
            Axiom(f"{low}-repl", th, f"({red} (Repl t p) e)", f"(Repl ({red} t e) p)", (), b),
            Axiom(f"{low}-comb-other", th, f"({red} (Comb t d p) e)", f"(Comb ({red} t e) d p)", (NE_DE,), b),
        ]
    return out


def _rms() -> list[Axiom]:
    b = Kind.BIREWRITE
    th = "rms"
    return [
        Axiom("sum-linear", th, "(Sum (Un f t) d)", "(Un f (Sum t d))", ("(linear f)",), b),
        Axiom("sum-rowscale-mul", th, '(Sum (Bin "mul" a s) d)', '(Bin "mul" (Sum a d) s)', ("(unit s d)",), b),
        Axiom("sum-rowscale-div", th, '(Sum (Bin "div" a s) d)', '(Bin "div" (Sum a d) s)', ("(unit s d)",), b),
        Axiom("square-is-mul", th, '(Un "square" t)', '(Bin "mul" t t)'),
    ]


def _rowscale() -> list[Axiom]:
    b = Kind.BIREWRITE
    th = "rowscale"
    out: list[Axiom] = []
    for ra, rb in MM_RANKS:
        tag = f"{ra}{rb}"
        mm = f"Mm {ra} {rb}"
        for op in ("mul", "div"):
            out.append(Axiom(f"mm{tag}-row{op}", th, f'({mm} (Bin "{op}" a s) c)', f'(Bin "{op}" ({mm} a c) s)',
                             (f"(unit s {ra - 1})",), b))
            if ra == rb:
                out.append(Axiom(f"mm{tag}-col{op}", th, f'({mm} a (Bin "{op}" c s))', f'(Bin "{op}" ({mm} a c) s)',
                                 (f"(unit s {rb - 2})",), b))
        out.append(Axiom(f"mm{tag}-linear-left", th, f"({mm} (Un f a) c)", f"(Un f ({mm} a c))", ("(linear f)",), b))
        out.append(Axiom(f"mm{tag}-linear-right", th, f"({mm} a (Un f c))", f"(Un f ({mm} a c))", ("(linear f)",), b))
    return out


def _algebra() -> list[Axiom]:
    b = Kind.BIREWRITE
    th = "algebra"
    return [
        Axiom("mul-comm", th, '(Bin "mul" a c)', '(Bin "mul" c a)'),
        Axiom("add-comm", th, '(Bin "add" a c)', '(Bin "add" c a)'),
        Axiom("maximum-comm", th, '(Bin "maximum" a c)', '(Bin "maximum" c a)'),
        Axiom("minimum-comm", th, '(Bin "minimum" a c)', '(Bin "minimum" c a)'),
        Axiom("mul-interchange", th, '(Bin "mul" (Bin "mul" a c) (Bin "mul" s t))',
              '(Bin "mul" (Bin "mul" a s) (Bin "mul" c t))'),
        Axiom("sub-is-add-neg", th, '(Bin "sub" a c)', '(Bin "add" a (Un "neg" c))', (), b),
        Axiom("div-mul-swap", th, '(Bin "div" (Bin "mul" a c) s)', '(Bin "mul" (Bin "div" a s) c)', (), b),
        Axiom("exp-of-add", th, '(Un "exp" (Bin "add" a c))', '(Bin "mul" (Un "exp" a) (Un "exp" c))'),
        Axiom("linear-mul", th, '(Un f (Bin "mul" a c))', '(Bin "mul" (Un f a) c)', ("(linear f)",), b),
        Axiom("linear-div", th, '(Un f (Bin "div" a c))', '(Bin "div" (Un f a) c)', ("(linear f)",), b),
        Axiom("linear-add", th, '(Un f (Bin "add" a c))', '(Bin "add" (Un f a) (Un f c))', ("(linear f)",), b),
    ]


def _online() -> list[Axiom]:
    """What the online softmax needs: a shift by a row max cancels through exp, and a rescaled
    accumulator of ``a / exp(c)`` is the plain sum of ``a`` over ``exp(max c)``."""
    th = "online"
    return [
        Axiom("exp-of-sub", th, '(Un "exp" (Bin "sub" a c))', '(Bin "div" (Un "exp" a) (Un "exp" c))'),
        Axiom("resc-shift", th, '(Resc (Bin "div" a (Un "exp" c)) c p)', '(Bin "div" (Red a p) (Un "exp" (RMax c p)))'),
    ]


def _assoc() -> list[Axiom]:
    return [
        Axiom(f"{op}-assoc", "assoc", f'(Bin "{op}" (Bin "{op}" a c) s)', f'(Bin "{op}" a (Bin "{op}" c s))', (),
              Kind.BIREWRITE)
        for op in ("mul", "add")
    ]


def _analysis() -> list[Axiom]:
    th = "analysis"
    u = Kind.UNIT
    out = [
        Axiom("unit-sum", th, "(Sum t d)", kind=u, unit_dim="d"),
        Axiom("unit-max", th, "(Max t d)", kind=u, unit_dim="d"),
        Axiom("unit-un", th, "(Un f t)", when=("(unit t d)",), kind=u, unit_dim="d"),
        Axiom("unit-bin", th, "(Bin f a c)", when=("(unit a d)", "(unit c d)"), kind=u, unit_dim="d"),
        Axiom("unit-part", th, "(Part t e p)", when=("(unit t d)", NE_DE), kind=u, unit_dim="d"),
        Axiom("unit-comb", th, "(Comb t e p)", when=("(unit t d)", NE_DE), kind=u, unit_dim="d"),
        Axiom("unit-repl", th, "(Repl t p)", when=("(unit t d)",), kind=u, unit_dim="d"),
        Axiom("unit-red", th, "(Red t p)", when=("(unit t d)",), kind=u, unit_dim="d"),
        Axiom("unit-rmax", th, "(RMax t p)", when=("(unit t d)",), kind=u, unit_dim="d"),
        Axiom("unit-resc", th, "(Resc t c p)", when=("(unit t d)", "(unit c d)"), kind=u, unit_dim="d"),
        Axiom("unit-sum-other", th, "(Sum t e)", when=("(unit t d)",), kind=u, unit_dim="d"),
    ]
    v = Kind.VARIES
    out += [
        Axiom("varies-un", th, "(Un f t)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-bin-left", th, "(Bin f a c)", when=("(varies a d)",), kind=v, unit_dim="d"),
        Axiom("varies-bin-right", th, "(Bin f a c)", when=("(varies c d)",), kind=v, unit_dim="d"),
        Axiom("varies-part", th, "(Part t e p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-comb", th, "(Comb t e p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-repl", th, "(Repl t p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-red", th, "(Red t p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-rmax", th, "(RMax t p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-resc", th, "(Resc t c p)", when=("(varies t d)",), kind=v, unit_dim="d"),
        Axiom("varies-sum-other", th, "(Sum t e)", when=("(varies t d)", NE_DE), kind=v, unit_dim="d"),
        Axiom("varies-max-other", th, "(Max t e)", when=("(varies t d)", NE_DE), kind=v, unit_dim="d"),
    ]
    for ra, rb in MM_RANKS:
        mm = f"Mm {ra} {rb}"
        out.append(Axiom(f"varies-mm{ra}{rb}-rows", th, f"({mm} a c)", when=(f"(varies a {ra - 2})",), kind=v,
                         unit_dim=str(ra - 2)))
        out.append(Axiom(f"varies-mm{ra}{rb}-cols", th, f"({mm} a c)", when=(f"(varies c {rb - 1})",), kind=v,
                         unit_dim=str(ra - 1)))
        if ra == 3:
            out.append(Axiom(f"varies-mm{ra}{rb}-batch", th, f"({mm} a c)", when=("(varies a 0)",), kind=v,
                             unit_dim="0"))
        if rb == 3:
            out.append(Axiom(f"varies-mm{ra}{rb}-batch-right", th, f"({mm} a c)", when=("(varies c 0)",), kind=v,
                             unit_dim="0"))
    out += _transposed_dims(u, v)
    for ra, rb in MM_RANKS:
        mm = f"Mm {ra} {rb}"
        out.append(Axiom(f"unit-mm{ra}{rb}-rows", th, f"({mm} a c)", when=(f"(unit a {ra - 2})",), kind=u,
                         unit_dim=str(ra - 2)))
        out.append(Axiom(f"unit-mm{ra}{rb}-cols", th, f"({mm} a c)", when=(f"(unit c {rb - 1})",), kind=u,
                         unit_dim=str(ra - 1)))
    return out


def _transposed_dims(u: Kind, v: Kind) -> list[Axiom]:
    """A transpose swaps the analysis facts of its last two dims (a reduced column transposed is a
    row: broadcast over the rows it is added to) and keeps the batch dim's."""
    out: list[Axiom] = []
    for r in (2, 3):
        for kind, fact in ((u, "unit"), (v, "varies")):
            for d, e in ((r - 2, r - 1), (r - 1, r - 2), *(((0, 0),) if r == 3 else ())):
                out.append(Axiom(f"{fact}-tr{r}-{d}", "analysis", f"(Tr {r} t)", when=(f"({fact} t {e})",), kind=kind,
                                 unit_dim=str(d)))
    return out


AXIOMS: tuple[Axiom, ...] = (
    *_inverse(), *_commute(), *_elementwise(), *_matmul(), *_reduce(), *_rms(), *_rowscale(), *_algebra(),
    *_online(), *_assoc(), *_analysis(),
)

THEORIES: tuple[str, ...] = tuple(dict.fromkeys(a.theory for a in AXIOMS))
PHASE1: tuple[str, ...] = tuple(t for t in THEORIES if t != "assoc")


def by_theory() -> dict[str, list[Axiom]]:
    out: dict[str, list[Axiom]] = {}
    for a in AXIOMS:
        out.setdefault(a.theory, []).append(a)
    return out


DATATYPE = """
(datatype T
  (In String) (Un String T) (Bin String T T) (Sum T i64) (Max T i64) (Mm i64 i64 T T) (Tr i64 T)
  (Part T i64 String) (Comb T i64 String) (Red T String) (RMax T String) (Resc T T String) (Repl T String))
(relation unit (T i64))
(relation varies (T i64))
(relation linear (String))
(constructor Goal (i64) T)
(constructor Cand (i64 i64) T)
(relation proven (i64 i64))
"""


def prelude(axioms: tuple[Axiom, ...] = AXIOMS) -> str:
    """egglog text: the datatype, one ruleset per theory, the goal rule and the two phase schedules."""
    theories = list(dict.fromkeys(a.theory for a in axioms))
    lines = [DATATYPE, "(ruleset goal)"]
    lines += [f"(ruleset {t})" for t in theories]
    lines += [a.egglog() for a in axioms]
    lines.append("(rule ((= (Cand k o) (Goal o))) ((proven k o)) :ruleset goal)")
    p1 = [t for t in theories if t != "assoc"]
    lines.append(f"(unstable-combined-ruleset phase1 goal {' '.join(p1)})")
    lines.append(f"(unstable-combined-ruleset phase2 goal {' '.join(theories)})")
    return "\n".join(lines)


# ------------------------------------------------------------------ patterns as trees (for tests)

SIGNATURES: dict[str, tuple[str, ...]] = {
    "In": ("name",), "Un": ("op1", "T"), "Bin": ("op2", "T", "T"), "Sum": ("T", "D"),
    "Max": ("T", "D"), "Mm": ("R", "R", "T", "T"), "Tr": ("R", "T"), "Part": ("T", "D", "P"),
    "Comb": ("T", "D", "P"), "Red": ("T", "P"), "RMax": ("T", "P"), "Resc": ("T", "T", "P"),
    "Repl": ("T", "P"),
}
CONDITIONS: dict[str, tuple[str, ...]] = {"!=": ("any", "any"), "unit": ("T", "D"), "varies": ("T", "D"),
                                         "linear": ("op1",)}


def parse(text: str) -> Pattern:
    """One s-expression: lists become tuples, ``"..."`` strings, integers ints, names ``("?", name)``."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def atom(tok: str) -> SExpr:
        if tok.startswith('"'):
            return tok[1:-1]
        try:
            return int(tok)
        except ValueError:
            return ("?", tok)

    def walk() -> SExpr:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok != "(":
            return atom(tok)
        head = tokens[pos]
        pos += 1
        items: list[SExpr] = [head]
        while tokens[pos] != ")":
            items.append(walk())
        pos += 1
        return tuple(items)

    out = walk()
    if pos != len(tokens) or not isinstance(out, tuple):
        raise ValueError(f"not one s-expression: {text!r}")
    return out


def to_term(p: SExpr) -> Term:
    """A pattern whose op, dim and parallel-dim variables are all bound, as a term (its tensor
    variables become ``Var``)."""
    assert isinstance(p, tuple) and isinstance(p[0], str), p
    if p[0] == "?":
        return Var(str(p[1]))
    args: list[Any] = []  # the node's fields, by the sorts of its signature
    for a, sort in zip(p[1:], SIGNATURES[p[0]], strict=True):
        match sort:
            case "T":
                args.append(to_term(a))
            case "op1":
                args.append(UnOp.parse(str(a)))
            case "op2":
                args.append(Binary(a))
            case _:
                assert isinstance(a, int | str), f"unbound variable {a} in {p}"
                args.append(a)
    return BY_HEAD[p[0]](*args)
