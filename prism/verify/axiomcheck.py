"""Numeric testing of axioms: instantiate both sides on random tensors and compare.

For one axiom, a random *instantiation* picks parallel dims (sizes 2 or 3), data dims, unary and
binary ops for the pattern's variables, infers every tensor variable's parallel dims and rank from
the left-hand side, draws its extents (mostly one common extent, sometimes 1 or another size) and its values
(``VALUE_KINDS``: signed values of several magnitudes, with zeros, as well as all-positive and
all-negative ones, drawn per variable), and forces the extents that ``unit`` conditions demand. Instantiations whose
left-hand side is ill-typed in ``prism.verify.model`` or not finite everywhere (a square root of a
negative, an overflow) are discarded; on every other one the right-hand side must be defined and
equal (values, parallel dims, split depths), to a tolerance relative to the largest value. A ``unit`` axiom
must produce extent 1 (depth 0) along its dim. An axiom passes only with enough valid
instantiations, so a pattern that can never be instantiated fails instead of passing vacuously.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import assert_never

import numpy as np

from prism.verify import model
from prism.verify.axioms import CONDITIONS, SIGNATURES, Axiom, Kind, Pattern, SExpr, parse, to_term
from prism.verify.nodes import Bin, Comb, In, Max, Mm, Part, Red, Repl, Resc, RMax, Sum, Term, Tr, Un, UnOp, Var

PAR_POOL = ("p0", "p1", "p2")
UNARY_POOL = ("exp", "neg", "square", "rsqrt", "sqrt", "silu", "gelu", "gelu_erf", "erf", "relu", "abs", "tanh",
              "sigmoid", "log", "scale:0.5", "scale:-1.5", "scale:1/N", "adds:0.25", "maxs:0.25", "mins:-0.5")
BINARY_POOL = ("add", "sub", "mul", "div", "maximum", "minimum")
SYMBOLS = {"N": 7.0}
# how a tensor variable's values are drawn, one kind per variable: positive (the domain of sqrt and
# rsqrt), signed normal at magnitudes 1e-2, 1 and 1e2, signed with a quarter zeros, and signed with
# magnitudes spread over 1e-3..1e3 inside one tensor (an axiom true only for positive values fails)
VALUE_KINDS = ("positive", "negative", "signed-small", "signed", "signed-large", "zeros", "spread")
RTOL = 1e-9


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    valid: int  # instantiations whose left side was defined
    tries: int
    message: str = ""


Binding = dict[str, int | str]  # a pattern's op, dim and parallel-dim variables, bound


def _vars(p: SExpr, sort: str, out: dict[str, str]) -> None:
    if isinstance(p, tuple) and p and p[0] == "?":
        name = str(p[1])
        prev = out.get(name)
        if prev is not None and prev != sort and "any" not in (prev, sort):
            raise ValueError(f"variable {name} used as {prev} and {sort}")
        if prev is None or prev == "any":
            out[name] = sort
        return
    if isinstance(p, tuple):
        sig = SIGNATURES.get(str(p[0])) or CONDITIONS.get(str(p[0]))
        if sig is None:
            raise ValueError(f"unknown head {p[0]!r}")
        for a, s in zip(p[1:], sig, strict=True):
            _vars(a, s, out)


def _subst(p: SExpr, b: Binding) -> SExpr:
    if isinstance(p, tuple) and p and p[0] == "?":
        return b.get(str(p[1]), p)
    if isinstance(p, tuple):
        return (p[0], *(_subst(a, b) for a in p[1:]))
    return p


def _types(t: Term, pars: frozenset[str], rank: int, out: dict[str, tuple[frozenset[str], int]]) -> bool:
    """Top-down parallel dims and rank of each tensor variable; False when inconsistent."""
    match t:
        case Var(name):
            return out.setdefault(name, (pars, rank)) == (pars, rank)
        case Un(_, x) | Sum(x, _) | Max(x, _):
            return _types(x, pars, rank, out)
        case Tr(r, x):
            return rank == r and _types(x, pars, rank, out)
        case Bin(_, a, c):
            return _types(a, pars, rank, out) and _types(c, pars, rank, out)
        case Mm(ra, rb, a, c):
            return rank == ra and _types(a, pars, ra, out) and _types(c, pars, rb, out)
        case Part(x, _, par) | Repl(x, par):
            return par in pars and _types(x, pars - {par}, rank, out)
        case Resc(x, c, par):
            return par not in pars and _types(x, pars | {par}, rank, out) and _types(c, pars | {par}, rank, out)
        case Comb(x, _, par) | Red(x, par) | RMax(x, par):
            return par not in pars and _types(x, pars | {par}, rank, out)
        case In(name):
            raise ValueError(f"an axiom pattern names the program input {name!r}")
        case _:
            assert_never(t)


def _cond(c: Pattern) -> bool:
    match c[0]:
        case "!=":
            return c[1] != c[2]
        case "linear":
            return UnOp.parse(str(c[1])).linear
        case "unit" | "varies":
            return True  # forced when sampling, checked on the values
    raise ValueError(c[0])


def _is_unit(v: model.PT, d: int) -> bool:
    return 0 <= d < len(v.ext) and v.ext[d] == model.ONE


def _varies(v: model.PT, d: int) -> bool:
    return 0 <= d < len(v.ext) and model.varies(v.ext[d])


BROADCAST_ODDS = 0.25  # per variable: extent 1 along a dim the axiom names, on top of _extent's own odds


def _extent(rng: np.random.Generator, base: str, pars: tuple[str, ...]) -> model.Mono:
    """A random symbolic extent: mostly the common input symbol, sometimes 1, a chunk, a combined extent."""
    r = rng.random()
    p = pars[rng.integers(len(pars))]
    if r < 0.6:
        return ((base, 1),)
    if r < 0.75:
        return model.ONE
    if r < 0.85:
        return ((base, 1), (p, -1))
    if r < 0.9:
        return ((p, 1),)
    if r < 0.95:
        return tuple(sorted(((base, 1), (p, 1))))
    return (("M.0" if base == "N.0" else "N.0", 1),)


def sample_values(rng: np.random.Generator, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """Random values of one kind of ``VALUE_KINDS``."""
    match kind:
        case "positive":
            return rng.uniform(0.5, 1.5, size=shape)
        case "negative":  # all negative: where max and a non-monotone op (silu, gelu) do not commute,
            return -rng.uniform(0.05, 4.0, size=shape)  # and sqrt(a*c) is defined but sqrt(a)*sqrt(c) is not
        case "signed-small" | "signed" | "signed-large":
            scale = {"signed-small": 1e-2, "signed": 1.0, "signed-large": 1e2}[kind]
            return rng.standard_normal(shape) * scale
        case "zeros":
            return np.where(rng.random(shape) < 0.25, 0.0, rng.uniform(-1.5, 1.5, size=shape))
        case "spread":
            return rng.choice([-1.0, 1.0], size=shape) * 10.0 ** rng.uniform(-3, 3, size=shape)
    raise ValueError(f"unknown value kind {kind!r}")


def _close(left: np.ndarray, right: np.ndarray) -> bool:
    """Equal up to rounding: relative to the largest magnitude (a cancellation leaves small values
    with the rounding error of large ones); NaN or infinity on the right where the left is finite
    is a difference."""
    if not np.all(np.isfinite(right)):
        return False
    scale = max(1e-300, float(np.max(np.abs(left), initial=0.0)))
    return bool(np.allclose(left, right, rtol=RTOL, atol=RTOL * scale))


def check_axiom(ax: Axiom, seed: int = 0, want: int = 48, max_tries: int = 20000) -> CheckResult:
    """Instantiate ``ax`` until ``want`` valid instances were compared (or ``max_tries``); a
    ``birewrite`` is checked in both directions."""
    res = _check_one(ax, seed, want, max_tries)
    if res.ok and ax.kind is Kind.BIREWRITE:
        back = _check_one(replace(ax, lhs=ax.rhs, rhs=ax.lhs), seed + 1, want, max_tries)
        if not back.ok:
            return replace(back, message="right to left: " + back.message)
        return replace(res, valid=res.valid + back.valid, tries=res.tries + back.tries)
    return res


@dataclass(frozen=True)
class _Parsed:
    """An axiom's patterns and the sort of each of their variables."""

    lhs: Pattern
    rhs: Pattern | None  # a rewrite's right side
    conds: list[Pattern]
    concl: SExpr | None  # a unit / varies axiom's dim
    sorts: dict[str, str]


def _parse(ax: Axiom) -> _Parsed | str:
    """The parsed axiom, or why it cannot be checked."""
    rhs = parse(ax.rhs) if ax.kind.rewrites else None
    p = _Parsed(parse(ax.lhs), rhs, [parse(c) for c in ax.when],
                None if ax.kind.rewrites else parse(f"(x {ax.unit_dim})")[1], {})
    _vars(p.lhs, "T", p.sorts)
    for c in p.conds:
        _vars(c, "any", p.sorts)
    if p.rhs is not None:
        rhs_sorts: dict[str, str] = {}
        _vars(p.rhs, "T", rhs_sorts)
        if not set(rhs_sorts) <= set(p.sorts):
            return f"right side binds new variables {set(rhs_sorts) - set(p.sorts)}"
    return p


@dataclass(frozen=True)
class _Instance:
    binding: Binding
    sizes: dict[str, int]
    lhs: Term
    env: dict[str, model.PT]


def _bind(rng: np.random.Generator, sorts: dict[str, str]) -> Binding:
    b: Binding = {}
    for v, s in sorts.items():
        match s:
            case "P":
                b[v] = PAR_POOL[rng.integers(len(PAR_POOL))]
            case "D" | "any":
                b[v] = int(rng.integers(3))
            case "op1":
                b[v] = UNARY_POOL[rng.integers(len(UNARY_POOL))]
            case "op2":
                b[v] = BINARY_POOL[rng.integers(len(BINARY_POOL))]
    return b


def _instance(rng: np.random.Generator, p: _Parsed) -> _Instance | None:
    """A random instantiation of the left side, or None when the draw does not fit its conditions."""
    b = _bind(rng, p.sorts)
    sizes: dict[str, int] = {q: int(rng.choice([2, 3])) for q in PAR_POOL}
    sizes["N.0"] = 12
    sizes["M.0"] = int(rng.choice([6, 12]))
    conds = [_subst(c, b) for c in p.conds]
    if not all(_cond(c) for c in conds if isinstance(c, tuple)):
        return None
    lhs = to_term(_subst(p.lhs, b))
    root_pars = frozenset(q for q in PAR_POOL if rng.random() < 0.4)
    rank = int(rng.choice([2, 3]))
    types: dict[str, tuple[frozenset[str], int]] = {}
    if not _types(lhs, root_pars, rank, types):
        return None
    base = "N.0" if rng.random() < 0.8 else "M.0"
    forced = [(str(c[0]), c[1], c[2]) for c in conds if isinstance(c, tuple) and c[0] in ("unit", "varies")]
    dims = sorted({v for v in b.values() if isinstance(v, int) and not isinstance(v, bool)})
    env: dict[str, model.PT] = {}
    try:
        for v, (pars, r) in types.items():
            ext = [_extent(rng, base, PAR_POOL) for _ in range(r)]
            named = [d for d in dims if d < r]
            if named and rng.random() < BROADCAST_ODDS:  # broadcast along a dim the axiom names
                ext[named[int(rng.integers(len(named)))]] = model.ONE
            for kind, x, d in forced:
                if x == ("?", v) and isinstance(d, int) and 0 <= d < r:
                    if kind == "unit":
                        ext[d] = model.ONE
                    elif not model.varies(ext[d]):
                        ext[d] = ((base, 1),)
            ps = tuple(sorted(pars))
            shape = (*(sizes[q] for q in ps), *(model.mono_value(e, sizes) for e in ext))
            kind = VALUE_KINDS[rng.integers(len(VALUE_KINDS))]
            env[v] = model.PT(ps, sample_values(rng, shape, kind), tuple(ext))
    except model.ModelError:
        return None
    for kind, x, d in forced:
        test = _is_unit if kind == "unit" else _varies
        if not (isinstance(x, tuple) and x[0] == "?" and test(env[str(x[1])], int(str(d)))):
            return None
    return _Instance(b, sizes, lhs, env)


def _mismatch(ax: Axiom, p: _Parsed, inst: _Instance, left: model.PT) -> str | None:
    """Why the instance refutes the axiom (its left side ``left`` is defined), or None."""
    b = inst.binding
    if p.rhs is None:
        d = _dim_of(p.concl, b)
        test = _is_unit if ax.kind is Kind.UNIT else _varies
        return None if test(left, d) else f"{ax.kind.value} fails along {d}: {left.ext} ({b})"
    try:
        right = model.evaluate(to_term(_subst(p.rhs, b)), inst.env, inst.sizes, SYMBOLS)
    except model.ModelError as e:
        return f"left defined, right not: {e} ({b})"
    if left.pars != right.pars or left.ext != right.ext or left.arr.shape != right.arr.shape:
        return f"type {left.pars}{left.ext} vs {right.pars}{right.ext} ({b})"
    if not _close(left.arr, right.arr):
        return f"values differ by {np.max(np.abs(left.arr - right.arr)):.3g} ({b})"
    return None


def _dim_of(x: SExpr | None, b: Binding) -> int:
    """A dim written as a number or as a bound variable."""
    match x:
        case int():
            return x
        case ("?", str(name)):
            return int(b[name])
    raise ValueError(f"not a dim: {x!r}")


def _check_one(ax: Axiom, seed: int, want: int, max_tries: int) -> CheckResult:
    rng = np.random.default_rng(seed)
    p = _parse(ax)
    if isinstance(p, str):
        return CheckResult(ax.name, False, 0, 0, p)
    valid = 0
    tries = 0
    while valid < want and tries < max_tries:
        tries += 1
        inst = _instance(rng, p)
        if inst is None:
            continue
        try:
            left = model.evaluate(inst.lhs, inst.env, inst.sizes, SYMBOLS)
        except model.ModelError:
            continue
        if not np.all(np.isfinite(left.arr)):
            continue  # outside the left side's domain (sqrt of a negative, overflow, 0/0)
        valid += 1
        if (why := _mismatch(ax, p, inst, left)) is not None:
            return CheckResult(ax.name, False, valid, tries, why)
    ok = valid >= want
    return CheckResult(ax.name, ok, valid, tries, "" if ok else f"only {valid} valid instantiations in {tries} tries")
