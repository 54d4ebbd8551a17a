"""Numeric testing of axioms: instantiate both sides on random tensors and compare.

For one axiom, a random *instantiation* picks parallel dims (sizes 2 or 3), data dims, unary and
binary ops for the pattern's variables, infers every tensor variable's parallel dims and rank from
the left-hand side, draws its extents (mostly one common extent, sometimes 1 or another size) and its values
(``VALUE_KINDS``: signed values of several magnitudes, with zeros, as well as positive ones, drawn
per variable), and forces the extents that ``unit`` conditions demand. Instantiations whose
left-hand side is ill-typed in ``prism.verify.model`` or not finite everywhere (a square root of a
negative, an overflow) are discarded; on every other one the right-hand side must be defined and
equal (values, parallel dims, split depths), to a tolerance relative to the largest value. A ``unit`` axiom
must produce extent 1 (depth 0) along its dim. An axiom passes only with enough valid
instantiations, so a pattern that can never be instantiated fails instead of passing vacuously.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from prism.verify import model
from prism.verify.axioms import CONDITIONS, SIGNATURES, Axiom, Pattern, parse

PAR_POOL = ("p0", "p1", "p2")
UNARY_POOL = ("exp", "neg", "square", "rsqrt", "sqrt", "silu", "gelu", "scale:0.5", "scale:-1.5", "scale:1/N",
              "adds:0.25")
BINARY_POOL = ("add", "sub", "mul", "div")
SYMBOLS = {"N": 7.0}
# how a tensor variable's values are drawn, one kind per variable: positive (the domain of sqrt and
# rsqrt), signed normal at magnitudes 1e-2, 1 and 1e2, signed with a quarter zeros, and signed with
# magnitudes spread over 1e-3..1e3 inside one tensor (an axiom true only for positive values fails)
VALUE_KINDS = ("positive", "signed-small", "signed", "signed-large", "zeros", "spread")
RTOL = 1e-9


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    valid: int  # instantiations whose left side was defined
    tries: int
    message: str = ""


def _vars(p: object, sort: str, out: dict[str, str]) -> None:
    if isinstance(p, tuple) and p and p[0] == "?":
        prev = out.get(p[1])
        if prev is not None and prev != sort and "any" not in (prev, sort):
            raise ValueError(f"variable {p[1]} used as {prev} and {sort}")
        if prev is None or prev == "any":
            out[p[1]] = sort
        return
    if isinstance(p, tuple):
        sig = SIGNATURES.get(p[0]) or CONDITIONS.get(p[0])
        if sig is None:
            raise ValueError(f"unknown head {p[0]!r}")
        for a, s in zip(p[1:], sig, strict=True):
            _vars(a, s, out)


def _subst(p: Any, b: dict[str, object]) -> Any:
    if isinstance(p, tuple) and p and p[0] == "?":
        return b.get(p[1], p)
    if isinstance(p, tuple):
        return (p[0], *(_subst(a, b) for a in p[1:]))
    return p


def _types(p: Pattern, pars: frozenset[str], rank: int, out: dict[str, tuple[frozenset[str], int]]) -> bool:
    """Top-down parallel dims and rank of each tensor variable; False when inconsistent."""
    if p[0] == "?":
        prev = out.setdefault(p[1], (pars, rank))
        return prev == (pars, rank)
    head = p[0]
    match head:
        case "Un":
            return _types(p[2], pars, rank, out)
        case "Bin":
            return _types(p[2], pars, rank, out) and _types(p[3], pars, rank, out)
        case "Sum" | "Max" | "Tr":
            return _types(p[1], pars, rank, out)
        case "Mm":
            return rank == p[1] and _types(p[3], pars, p[1], out) and _types(p[4], pars, p[2], out)
        case "Part" | "Repl":
            par = p[3] if head == "Part" else p[2]
            return par in pars and _types(p[1], pars - {par}, rank, out)
        case "Resc":
            return p[3] not in pars and _types(p[1], pars | {p[3]}, rank, out) and _types(p[2], pars | {p[3]}, rank, out)
        case "Comb" | "Red" | "RMax":
            par = p[3] if head == "Comb" else p[2]
            return par not in pars and _types(p[1], pars | {par}, rank, out)
    raise ValueError(head)


def _cond(c: Pattern) -> bool:
    match c[0]:
        case "!=":
            return c[1] != c[2]
        case "linear":
            return model.is_linear(str(c[1]))
        case "unit" | "varies":
            return True  # forced when sampling, checked on the values
    raise ValueError(c[0])


def _is_unit(v: model.PT, d: int) -> bool:
    return 0 <= d < len(v.ext) and v.ext[d] == model.ONE


def _varies(v: model.PT, d: int) -> bool:
    return 0 <= d < len(v.ext) and model.varies(v.ext[d])


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


def check_axiom(ax: Axiom, seed: int = 0, want: int = 24, max_tries: int = 20000) -> CheckResult:
    """Instantiate ``ax`` until ``want`` valid instances were compared (or ``max_tries``); a
    ``birewrite`` is checked in both directions."""
    res = _check_one(ax, seed, want, max_tries)
    if res.ok and ax.kind == "birewrite":
        back = _check_one(replace(ax, lhs=ax.rhs, rhs=ax.lhs), seed + 1, want, max_tries)
        if not back.ok:
            return replace(back, message="right to left: " + back.message)
        return replace(res, valid=res.valid + back.valid, tries=res.tries + back.tries)
    return res


def _check_one(ax: Axiom, seed: int, want: int, max_tries: int) -> CheckResult:
    rng = np.random.default_rng(seed)
    lhs = parse(ax.lhs)
    rhs = parse(ax.rhs) if ax.kind in ("rewrite", "birewrite") else None
    conds = [parse(c) for c in ax.when]
    concl = parse(f"(x {ax.unit_dim})")[1] if ax.kind in ("unit", "varies") else None
    sorts: dict[str, str] = {}
    _vars(lhs, "T", sorts)
    for c in conds:
        _vars(c, "any", sorts)
    if rhs is not None:
        rhs_sorts: dict[str, str] = {}
        _vars(rhs, "T", rhs_sorts)
        if not set(rhs_sorts) <= set(sorts):
            return CheckResult(ax.name, False, 0, 0, f"right side binds new variables {set(rhs_sorts) - set(sorts)}")
    valid = 0
    tries = 0
    while valid < want and tries < max_tries:
        tries += 1
        b: dict[str, object] = {}
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
        sizes: dict[str, int] = {p: int(rng.choice([2, 3])) for p in PAR_POOL}
        sizes["N.0"] = 12
        sizes["M.0"] = int(rng.choice([6, 12]))
        lhs_i = _subst(lhs, b)
        conds_i = [_subst(c, b) for c in conds]
        if not all(_cond(c) for c in conds_i):
            continue
        root_pars = frozenset(p for p in PAR_POOL if rng.random() < 0.4)
        rank = int(rng.choice([2, 3]))
        types: dict[str, tuple[frozenset[str], int]] = {}
        assert isinstance(lhs_i, tuple)
        if not _types(lhs_i, root_pars, rank, types):
            continue
        base = "N.0" if rng.random() < 0.8 else "M.0"
        env: dict[str, model.PT] = {}
        try:
            for v, (pars, r) in types.items():
                ext = [_extent(rng, base, PAR_POOL) for _ in range(r)]
                for c in conds_i:
                    if c[1] == ("?", v) and isinstance(c[2], int) and 0 <= c[2] < r:
                        if c[0] == "unit":
                            ext[c[2]] = model.ONE
                        elif c[0] == "varies" and not model.varies(ext[c[2]]):
                            ext[c[2]] = ((base, 1),)
                ps = tuple(sorted(pars))
                shape = (*(sizes[p] for p in ps), *(model.mono_value(e, sizes) for e in ext))
                kind = VALUE_KINDS[rng.integers(len(VALUE_KINDS))]
                env[v] = model.PT(ps, sample_values(rng, shape, kind), tuple(ext))
        except model.ModelError:
            continue
        for c in conds_i:
            if c[0] in ("unit", "varies"):
                test = _is_unit if c[0] == "unit" else _varies
                if not (c[1][0] == "?" and test(env[c[1][1]], int(c[2]))):
                    break
        else:
            try:
                left = model.evaluate(lhs_i, env, sizes, SYMBOLS)
            except model.ModelError:
                continue
            if not np.all(np.isfinite(left.arr)):
                continue  # outside the left side's domain (sqrt of a negative, overflow, 0/0)
            valid += 1
            if concl is not None:
                d = int(b[concl[1]]) if isinstance(concl, tuple) else int(concl)  # type: ignore[call-overload]
                test = _is_unit if ax.kind == "unit" else _varies
                if not test(left, d):
                    return CheckResult(ax.name, False, valid, tries, f"{ax.kind} fails along {d}: {left.ext} ({b})")
                continue
            rhs_i = _subst(rhs, b)
            try:
                right = model.evaluate(rhs_i, env, sizes, SYMBOLS)
            except model.ModelError as e:
                return CheckResult(ax.name, False, valid, tries, f"left defined, right not: {e} ({b})")
            if left.pars != right.pars or left.ext != right.ext or left.arr.shape != right.arr.shape:
                return CheckResult(ax.name, False, valid, tries,
                                   f"type {left.pars}{left.ext} vs {right.pars}{right.ext} ({b})")
            if not _close(left.arr, right.arr):
                err = np.max(np.abs(left.arr - right.arr))
                return CheckResult(ax.name, False, valid, tries, f"values differ by {err:.3g} ({b})")
    ok = valid >= want
    return CheckResult(ax.name, ok, valid, tries, "" if ok else f"only {valid} valid instantiations in {tries} tries")
