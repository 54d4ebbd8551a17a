"""The static ranking of algebraic variants (``prism.search.dominance``): which block graphs beat
which, and what the generator keeps with it on (issue 13)."""

from __future__ import annotations

import time

from prism import workloads
from prism.search import SearchConfig
from prism.search.dominance import Cost, Item, dominates, undominated
from prism.search.generator import Generator, _LaterKernels

LOOP, POST = "loop", "post"


def _acc(dims: tuple[str, ...], what: str = "sum") -> Item:
    return Item(Cost.ACCUM, LOOP, dims, what)


def test_a_smaller_elementwise_op_beats_a_larger_one_and_not_back() -> None:
    skel = [_acc(("g", "d"))]
    small = [*skel, Item(Cost.ARITH, POST, ("g",))]
    large = [*skel, Item(Cost.ARITH, POST, ("d", "g"))]
    assert dominates(small, large) and not dominates(large, small)


def test_extra_ops_lose_and_cheap_ops_beat_transcendental_ones() -> None:
    skel = [_acc(("g",)), _acc(("d", "g"))]
    div = [*skel, Item(Cost.ARITH, POST, ("d", "g"))]
    detour = [*skel, Item(Cost.ARITH, POST, ("g",)), Item(Cost.TRANSCENDENTAL, POST, ("g",)),
              Item(Cost.ARITH, POST, ("d", "g"))]
    assert dominates(div, detour) and not dominates(detour, div)
    exp = [*skel, Item(Cost.TRANSCENDENTAL, POST, ("d", "g"))]
    assert dominates(div, exp) and not dominates(exp, div)


def test_inside_the_loop_costs_more_than_after_it() -> None:
    skel = [_acc(("g",))]
    assert dominates([*skel, Item(Cost.ARITH, POST, ("g",))], [*skel, Item(Cost.ARITH, LOOP, ("g",))])
    assert not dominates([*skel, Item(Cost.ARITH, LOOP, ("g",))], [*skel, Item(Cost.ARITH, POST, ("g",))])


def test_incomparable_shapes_are_both_kept() -> None:
    """A norm's scale before a matmul ([n, d]) or after it ([n, k]): which is cheaper depends on
    the sizes, so neither goes."""
    skel = [Item(Cost.MATMUL, LOOP, ("d", "k", "n"))]
    before = [*skel, Item(Cost.ARITH, LOOP, ("d", "n"))]
    after = [*skel, Item(Cost.ARITH, POST, ("k", "n"))]
    assert not dominates(before, after) and not dominates(after, before)
    assert undominated([before, after], lambda k: k) == [before, after]


def test_a_different_skeleton_is_never_compared() -> None:
    """An online softmax's rescaled accumulator is not a plain one with fewer ops: which of the two
    is right for a split loop is for mapping and verification to say."""
    plain = [_acc(("g", "kv"))]
    rescaled = [_acc(("g", "kv"), "rescaled sum"), Item(Cost.ARITH, LOOP, ("g",))]
    assert not dominates(plain, rescaled) and not dominates(rescaled, plain)


def test_of_equal_variants_the_first_stays() -> None:
    """``x·x`` and ``square(x)``: the same items in another order."""
    a = [_acc(("g",)), Item(Cost.ARITH, LOOP, ("d", "g")), Item(Cost.TRANSCENDENTAL, POST, ("g",))]
    b = [a[2], a[0], a[1]]
    assert undominated([a, b], lambda k: k) == [a]
    assert undominated([b, a], lambda k: k) == [b]


def test_the_split_softmax_combine_keeps_only_the_division() -> None:
    """qknorm_gqa's later kernels for one loaded pair: the one that divides the two sums, not the
    eleven that reach the same quotient through squares and reciprocal roots."""
    gen = Generator(workloads.program("qknorm_gqa"), SearchConfig(), "qknorm_gqa")
    gen.deadline = time.monotonic() + 120
    gen.build_values()
    gen.min_ops = gen._min_ops()
    gen.max_ops = (gen.min_ops or 0) + gen.cfg.extra_ops
    later = _LaterKernels(gen, [n for n, _ in gen._out_roots() or []])
    every = next(k for s in later.loaded_sets() if len(k := later.kernels(s)) > 1)
    kept = gen._ranked(every)
    assert len(every) > 1 and len(kept) == 1
    assert len(kept[0]) == min(len(k) for k in every)
