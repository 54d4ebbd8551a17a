"""Dimension matching against brute force (issue 16): each candidate's equalities, judged by the IR.

For a candidate sGraph of the search, every assignment of its Loads' and Saves' maps that the IR can
express (a grid dim splits at most one data dim and a data dim is split by at most one grid dim; a
saver maps every grid dim to its own data dim) is built as a concrete μGraph and judged by
``prism.ir.infer``, the IR's shape rules, which know nothing of ``prism.search.dimmatch``. The
equalities that dimension matching recorded for the candidate must hold for exactly the assignments
the IR accepts: an equality too few lets a wrong mapping through (the mutations
``dimmatch-drop-equalities`` and ``dimmatch-drop-contraction-equalities`` of
``scripts/mutation_check.py``), one too many loses a right one.

One choice of sizes decides "for every d": every class of data dims the program forces equal is a
prime of its own times ``P``, and the parallel sizes are distinct primes whose squares divide ``P``.
A tile extent is then ``q·P·Π d^e`` (or ``Π d^e`` for an extent-1 dim), so by unique factorization
two extents are equal at these sizes exactly when their classes and exponents agree, which is
when they are equal for every d; no division leaves a remainder (no exponent goes below −2).

Kernel graphs of two kernels are walked kernel by kernel: each assignment of the first kernel's maps
that the IR accepts on its own is completed by every assignment of the second kernel's, and the
whole graph is judged. A first kernel the IR rejects must break an equality whose variables all
belong to it (the converse need not hold: the second kernel's ops also constrain how the first
saves, as when it broadcasts a saved extent-1 dim). Such a first kernel (one the IR accepts but
its equalities reject) must have no completion the IR accepts; that is checked on one in
``SAMPLE_EVERY`` of them (all of them would be about 300 000 assignments for a split rmsnorm_linear).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

import pytest

from prism.errors import IRError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph, Load, Save, TensorSpec, infer
from prism.search import SearchConfig, instantiate_mappings, search
from prism.search.sgraph import MapVar, SGraph

PRIMES = (2, 3, 5, 7, 11, 13)  # the parallel sizes
P = math.prod(PRIMES) ** 2
GRID = "xyz"
SAMPLE_EVERY = 40  # of the first-kernel assignments that no second kernel can complete, the share completed


def _rmsnorm_linear() -> Graph:
    """O = rms_norm(X) @ W with three distinct dim classes (11, 13, 17): a reduction, a broadcast, a matmul."""
    g = Graph()
    x = g.input((11, 13), "float16", "X")
    w = g.input((13, 17), "float16", "W")
    g.output(g.matmul(g.rms_norm(x), w), "O")
    return g


def _swiglu() -> Graph:
    """O = silu(X @ Wg) * (X @ Wu): two contractions and a product of two matmul results."""
    g = Graph()
    x = g.input((11, 13), "float16", "X")
    wg = g.input((13, 17), "float16", "Wg")
    wu = g.input((13, 17), "float16", "Wu")
    g.output(g.mul(g.silu(g.matmul(x, wg)), g.matmul(x, wu)), "O")
    return g


def _big(specs: Sequence[TensorSpec]) -> dict[str, tuple[int, ...]]:
    return {t.name: tuple(s * P if s > 1 else s for s in t.shape) for t in specs}


def _maps(op: Load | Save, rank: int, ng: int, has_loop: bool) -> list[Load | Save]:
    """Every map of one Load or Save that the IR can express."""
    if isinstance(op, Save):
        return [Save(op.x, op.tensor, om) for om in itertools.permutations(range(rank), ng)]
    imaps = [m for m in itertools.product((None, *range(rank)), repeat=ng)
             if len([a for a in m if a is not None]) == len({a for a in m if a is not None})]
    fmaps = (None, *range(rank)) if has_loop else (None,)
    return [Load(op.tensor, im, fm) for im in imaps for fm in fmaps]


def _value(v: MapVar, op: Load | Save) -> int:
    """The 0/1 value of mapping variable ``v`` under the concrete map ``op`` (read from the IR's maps)."""
    if isinstance(op, Load) and v.par == "i":
        return int(op.fmap == v.dim)
    return int((op.imap if isinstance(op, Load) else op.omap)[GRID.index(v.par)] == v.dim)


class _Judge:
    """Walks a candidate's assignments kernel by kernel, comparing its equalities with ``infer``."""

    def __init__(self, sg: SGraph) -> None:
        assert not sg.fixed
        tpl = sg.template
        self.sg = sg
        syms = sorted(set(tpl.symbols))
        assert len(syms) <= len(PRIMES)
        self.sizes = dict(zip(syms, PRIMES, strict=False))
        self.kernels = [k for k in tpl.kernels if isinstance(k, CustomKernel)]
        assert len(self.kernels) == len(tpl.kernels)
        self.concrete = tpl.with_shapes(_big(tpl.inputs), _big(tpl.outputs)).instantiate(self.sizes)
        self.vars = {(v.kernel, v.op): [w for w in sg.variables if (w.kernel, w.op) == (v.kernel, v.op)]
                     for v in sg.variables}
        kernel_of = {v.name: v.kernel for v in sg.variables}
        last = [max((kernel_of[v] for v, _ in f if v), default=0) for f in sg.equalities]
        self.eqs = [[f for f, ki in zip(sg.equalities, last, strict=True) if ki <= upto]
                    for upto in range(len(self.kernels))]
        self.accepted = 0
        self.rejected = 0
        self.unequal = 0  # first-kernel assignments the IR accepts on their own but the equalities reject

    def _slots(self, ki: int, ranks: dict[str, int]) -> list[tuple[int, list[tuple[Load | Save, dict[str, int]]]]]:
        """Per Load and Save of kernel ``ki``: every map, with the values it gives the op's variables."""
        k = self.kernels[ki]
        out = []
        for j, op in enumerate(k.ops):
            if isinstance(op, Load | Save):
                rank = ranks[op.tensor] if isinstance(op, Load) else ranks.setdefault(
                    op.tensor, len(self.sg.tiles[ki][op.x] or ()))
                maps = _maps(op, rank, len(k.grid), isinstance(k.loop, str))
                out.append((j, [(m, {v.name: _value(v, m) for v in self.vars.get((ki, j), [])}) for m in maps]))
        return out

    def _ir_ok(self, kernels: list[CustomKernel], *, structure: bool = False) -> bool:
        written = {op.tensor for k in kernels for op in k.ops if isinstance(op, Save)}
        kg = replace(self.concrete, kernels=tuple(kernels),
                     outputs=tuple(t for t in self.concrete.outputs if t.name in written))
        try:  # the size-free checks depend on no map that _maps builds: run at the leaves only
            infer(kg, structure=structure)
        except IRError:
            return False
        return True

    def run(self) -> Iterator[tuple[tuple[Load | Save, ...], ...]]:
        """Check every assignment; yield the maps (per kernel, its Loads and Saves) of the accepted ones."""
        ranks = {t.name: len(t.shape) for t in (*self.concrete.inputs, *self.concrete.outputs)}
        yield from self._rec(0, [], {}, ranks)

    def _rec(self, ki: int, done: list[CustomKernel], values: dict[str, int],
             ranks: dict[str, int]) -> Iterator[tuple[tuple[Load | Save, ...], ...]]:
        if ki == len(self.kernels):
            assert self._ir_ok(done, structure=True)
            yield tuple(tuple(op for op in k.ops if isinstance(op, Load | Save)) for k in done)
            return
        k = self.concrete.kernels[ki]
        assert isinstance(k, CustomKernel)
        slots = self._slots(ki, ranks)
        last = ki == len(self.kernels) - 1  # before it, a later kernel may still constrain these maps
        for combo in itertools.product(*(maps for _, maps in slots)):
            ops = list(k.ops)
            val = dict(values)
            for (j, _), (op, vals) in zip(slots, combo, strict=True):
                ops[j] = op
                val.update(vals)
            kernel = replace(k, ops=tuple(ops))
            ir_ok = self._ir_ok([*done, kernel])
            eqs_ok = all(sum(c * (1 if v == "" else val[v]) for v, c in f) == 0 for f in self.eqs[ki])
            assert eqs_ok == ir_ok if last else ir_ok or not eqs_ok, (
                f"kernel {ki} maps {[op for op, _ in combo]}: the equalities say {'valid' if eqs_ok else 'invalid'}, "
                f"the IR's shape rules at sizes {self.sizes} say {'valid' if ir_ok else 'invalid'}\n{self.sg.describe()}")
            if not ir_ok:
                self.rejected += 1
                continue
            self.accepted += 1
            if not eqs_ok:  # no completion may be valid (the last kernel's assertion): checked on a sample
                self.unequal += 1
                if self.unequal % SAMPLE_EVERY:
                    continue
            yield from self._rec(ki + 1, [*done, kernel], val, ranks)


def _map_ops(kg: KernelGraph) -> tuple[tuple[Load | Save, ...], ...]:
    return tuple(tuple(op for op in k.ops if isinstance(op, Load | Save))
                 for k in kg.kernels if isinstance(k, CustomKernel))


def _check(sg: SGraph) -> _Judge:
    """Brute force ``sg``; every mapping the typed walk returns must be among the valid ones."""
    judge = _Judge(sg)
    valid = set(judge.run())
    assert valid and judge.rejected, "no assignment valid, or none rejected: the check would be vacuous"
    walked = {_map_ops(kg) for kg in instantiate_mappings(sg, symmetry_breaking=False).graphs}
    assert walked <= valid, f"the walk returned IR-invalid mappings {sorted(map(str, walked - valid))[:3]}"
    return judge


def _candidates(graph: Graph, kernels: int) -> list[SGraph]:
    cfg = SearchConfig(max_kernels=kernels, min_grid_dims=2, max_grid_dims=2, rank_variants=False)  # a spread of variants
    return [c for c in search(graph, cfg).candidates if len(c.kernels) == kernels]


def test_one_kernel_equalities_are_the_shape_rules_at_two_grid_dims() -> None:
    cands = _candidates(_rmsnorm_linear(), 1)
    assert len(cands) >= 40
    for sg in cands[:: len(cands) // 8][:8]:  # a spread of block graphs (882 assignments each)
        _check(sg)


def test_two_matmuls_equalities_are_the_shape_rules() -> None:
    cands = _candidates(_swiglu(), 1)
    assert cands
    _check(cands[0])  # 18522 assignments


def test_two_kernel_equalities_are_the_shape_rules() -> None:
    """A split graph: the second kernel loads what the first saved, and loops over its grid size."""
    cands = _candidates(_rmsnorm_linear(), 2)
    shared = [c for c in cands if {*c.kernels[1].grid, c.kernels[1].loop} & set(c.kernels[0].grid)]
    assert shared
    assert _check(shared[0]).unequal >= SAMPLE_EVERY


@pytest.mark.parametrize("graph", [_rmsnorm_linear, _swiglu])
def test_sizes_separate_the_dim_classes(graph: Callable[[], Graph]) -> None:
    """The premise of the sizes: distinct classes, and every data dim divisible by any d²."""
    kg = _candidates(graph(), 1)[0].template
    sizes = {s for shape in _big(kg.inputs).values() for s in shape}
    assert len({s // P for s in sizes}) == len(sizes) == 3
    assert all(s % (p * p) == 0 for s in sizes for p in PRIMES)
