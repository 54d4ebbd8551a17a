"""A numeric screen before the proof: run each candidate once, small, in the μGraph interpreter.

A candidate that computes the program for every size computes it at one small size, so a
candidate whose result differs from the float64 reference there is wrong and is rejected without
asking egglog. Only what passes (or what cannot be run at the screen's sizes) goes on to the
proof, which alone can accept. The screen runs the program at a small shape of the same
structure (every distinct input extent above 1 becomes a small multiple of 4, so each dim can be
split by a grid dim and the loop) with every parallel size 2.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from prism import interpreter
from prism.errors import PrismError
from prism.graph import Graph, OpKind, Tensor
from prism.interpreter import Prefixes
from prism.ir import KernelGraph, check_structure
from prism.ops import Binary, Reduce, Unary
from prism.reference import relative_error
from prism.verify import batched

SCREEN_SIZE = 2
TOLERANCE = 1e-8
UNIT_SETS = 31  # size sets with 1s tried for a plan that runs at none of the usual ones (5 symbols: all)


def small_instance(graph: Graph) -> Graph:
    """``graph`` rebuilt with small input extents (equal extents stay equal, 1 stays 1)."""
    extents = sorted({s for t in graph.inputs for s in t.shape if s > 1})
    small = {s: 8 + 4 * i for i, s in enumerate(extents)}
    g = Graph()
    ts: list[Tensor] = []
    for n in graph.nodes:
        args = [ts[a] for a in n.args]
        match n.kind:
            case OpKind.INPUT:
                ts.append(g.input(tuple(small.get(s, s) for s in n.shape), n.dtype, n.name))
            case OpKind.UNARY:
                assert isinstance(n.fn, Unary)
                ts.append(g._unary(n.fn, args[0], n.scalar))
            case OpKind.BINARY:
                assert isinstance(n.fn, Binary)
                ts.append(g._binary(n.fn, args[0], args[1]))
            case OpKind.REDUCE:
                assert isinstance(n.fn, Reduce) and n.dim is not None
                ts.append(g._reduce(n.fn, args[0], n.dim))
            case OpKind.MATMUL:
                ts.append(g.matmul(args[0], args[1]))
            case OpKind.TRANSPOSE:
                ts.append(g.transpose(args[0]))
    for name, i in graph.output_indices:
        g.output(ts[i], name)
    return g


def screen(graph: Graph, candidates: Sequence[KernelGraph], *, seed: int = 0) -> list[bool | None]:
    """Per candidate: False when it differs from the reference at a size set of the screen (so it is
    wrong), True when it matches at every size set it runs at, None when it runs at none (the proof
    must decide)."""
    small = small_instance(graph)
    rng = np.random.default_rng(seed)
    inputs = {t.name: rng.standard_normal(t.shape) * 0.5 for t in small.inputs}
    ref = small.evaluate(inputs)
    ins = {t.name: t.shape for t in small.inputs}
    outs = {t.name: t.shape for t in small.outputs}
    prefixes: Prefixes = {}  # plans that begin alike run their first kernels once
    out: list[bool | None] = []
    for cand in candidates:
        kg = cand.with_shapes(ins, outs)
        try:
            check_structure(kg)  # the checks that need no sizes, once for every size set
        except PrismError:
            out.append(None)  # it runs at none (as before the check was taken out of each run)
            continue
        verdict = _verdict(kg, _size_sets(kg.symbols), inputs, ref, prefixes)
        if verdict is None:  # it runs at none: a size splits a dim of extent 1 (one query head, one row)
            verdict = _verdict(kg, _unit_size_sets(kg.symbols), inputs, ref, prefixes)
        out.append(verdict)
    return out


def _verdict(kg: KernelGraph, size_sets: Iterable[dict[str, int]], inputs: dict[str, np.ndarray],
             ref: dict[str, np.ndarray], prefixes: Prefixes | None = None) -> bool | None:
    """False when ``kg`` is wrong at one of the size sets (the later ones are not run), True when it
    runs at one and is right at every one it runs at, None when it runs at none."""
    verdict: bool | None = None
    for sizes in size_sets:
        ok = _at(kg, sizes, inputs, ref, prefixes)
        if ok is False:
            return False
        verdict = verdict if ok is None else True
    return verdict


def _size_sets(symbols: Sequence[str]) -> list[dict[str, int]]:
    """Every size SCREEN_SIZE, then alternately 2·SCREEN_SIZE and SCREEN_SIZE (a plan right at one
    size but wrong for others, a map that only matters when two sizes differ, is caught)."""
    same = {s: SCREEN_SIZE for s in symbols}
    mixed = {s: SCREEN_SIZE * (2 if i % 2 == 0 else 1) for i, s in enumerate(sorted(symbols))}
    return [same] if mixed == same else [same, mixed]


def _unit_size_sets(symbols: Sequence[str]) -> Iterator[dict[str, int]]:
    """Sizes of SCREEN_SIZE and 1, most SCREEN_SIZEs first (the all-SCREEN_SIZE set has run already), at
    most UNIT_SETS of them: for a plan whose grid or loop splits a dim of extent 1, which only a size of
    1 divides. A size set that does not divide a dim fails at once, before anything is computed."""
    names = sorted(symbols)
    for combo in itertools.islice(_fewest_ones_first(len(names)), 1, UNIT_SETS + 1):
        yield dict(zip(names, combo, strict=True))


def _fewest_ones_first(n: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of ``n`` sizes SCREEN_SIZE or 1, those with fewer 1s first, each count in the order
    ``itertools.product((SCREEN_SIZE, 1), repeat=n)`` lists them, made one at a time (a plan of many
    symbols has 2**n of them): the n-bit numbers with k bits set, increasing (a 1 where a bit is set,
    the first size the highest bit)."""
    for k in range(n + 1):
        x = (1 << k) - 1
        while x < 1 << n:
            yield tuple(1 if x >> (n - 1 - i) & 1 else SCREEN_SIZE for i in range(n))
            if x == 0:
                break
            low = x & -x
            up = x + low
            x = (((up ^ x) >> 2) // low) | up  # the next larger number with as many bits set


def _at(kg: KernelGraph, sizes: dict[str, int], inputs: dict[str, np.ndarray],
        ref: dict[str, np.ndarray], prefixes: Prefixes | None = None) -> bool | None:
    """Whether ``kg`` at ``sizes`` computes ``ref`` (None: it does not fit these sizes); run every
    block at once (``batched``), block by block where that form does not cover the plan."""
    try:
        concrete = kg.instantiate(sizes)
        try:
            got = batched.run(concrete, inputs, structure=False, prefixes=prefixes)
        except batched.NotBatched:
            got = interpreter.run(concrete, inputs)
    except PrismError:
        return None
    return all(relative_error(got[name], ref[name]) < TOLERANCE for name in ref)
