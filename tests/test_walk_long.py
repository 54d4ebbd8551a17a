"""The mapping walk drops a Load that holds a long dim of a program input whole (``SGraph.long``, set by
the generator from ``SearchConfig.long_dims``) as soon as it is assigned: it returns exactly the
mappings the walk without it returns that do not hold one (``verified.holds_whole``), in the same
order, and the walks with and without share no memoized completions (docs/search-speed.md, "Long
dims in the mapping walk")."""

from __future__ import annotations

from dataclasses import replace

from prism.graph import Graph
from prism.ir import Load
from prism.search import SearchConfig, instantiate_mappings, search
from prism.search.canonical import canonical_key
from prism.search.sgraph import SGraph, holds_long, long_inputs
from prism.search.verified import holds_whole


def _softmax() -> Graph:
    g = Graph()
    g.output(g.softmax(g.input((2, 64), "float16", "X"), -1), "O")
    return g


LONG = ((0, 1),)  # the rows of X: no tile may hold one whole (as if it were a 128K vocabulary)


def _candidates(long_dims: tuple[tuple[int, int], ...]) -> list[SGraph]:
    cfg = SearchConfig(split_only=False, last_loop_one=True, long_dims=long_dims, max_candidates=1500)
    return search(_softmax(), cfg, name="softmax_long").candidates


def test_the_generator_marks_its_candidates_with_the_long_dims() -> None:
    assert long_inputs(["X", "Y"], ((1, 2), (0, 1), (1, 0))) == (("X", (1,)), ("Y", (0, 2)))
    marked = _candidates(LONG)
    assert marked and all(c.long == (("X", (1,)),) for c in marked)
    assert all(c.long == () for c in _candidates(()))


def test_the_walk_drops_exactly_the_mappings_that_hold_a_long_dim_whole() -> None:
    long = {"X": frozenset({1})}
    plain, dropped, kept_any = 0, 0, 0
    for c in _candidates(LONG)[::3]:
        # unmarked first, then marked: a completion memoized by one walk must not serve the other
        everything = instantiate_mappings(replace(c, long=())).graphs
        walked = instantiate_mappings(c).graphs
        want = [g for g in everything if not holds_whole(g, long)]
        assert [canonical_key(g) for g in walked] == [canonical_key(g) for g in want]
        again = instantiate_mappings(replace(c, long=())).graphs
        assert [canonical_key(g) for g in again] == [canonical_key(g) for g in everything]
        plain += len(everything)
        dropped += len(everything) - len(want)
        kept_any += bool(walked)
    assert dropped > 0 and kept_any > 0, (plain, dropped, kept_any)


def test_a_load_holds_a_long_dim_unless_a_grid_dim_or_the_loop_splits_it() -> None:
    assert holds_long(Load("X", (0,), None), (1,))
    assert not holds_long(Load("X", (1,), None), (1,))
    assert not holds_long(Load("X", (0,), 1), (1,))
    assert holds_long(Load("X", (None, 0), None), (0, 1))
