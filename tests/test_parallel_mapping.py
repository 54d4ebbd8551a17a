"""Mapping instantiation spread over forked workers: the same graphs and counts as in one process,
in candidate order, whatever the chunking (prism.search.parallel)."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

import prism.search.parallel as parallel
from prism import workloads
from prism.search import SearchConfig, search
from prism.search.parallel import forked_map, instantiate_all, kept_form


@pytest.fixture(scope="module")
def candidates() -> list:
    cands = search(workloads.program("rmsnorm_linear"), SearchConfig(min_grid_dims=1, max_grid_dims=2)).candidates
    assert len(cands) >= 2 * parallel.MIN_PARALLEL  # enough to fork
    return cands


def test_forked_workers_give_what_one_process_gives(candidates: list, monkeypatch: pytest.MonkeyPatch) -> None:
    here = instantiate_all(candidates, deadline=time.time() + 120, jobs=1)
    monkeypatch.setattr(parallel, "CHUNKS_PER_JOB", 3)  # chunks that cut groups of a shared last kernel
    spread = instantiate_all(candidates, deadline=time.time() + 120, jobs=2)
    assert not here.timed_out and not spread.timed_out
    assert [g.dumps() for g in spread.graphs] == [g.dumps() for g in here.graphs]
    assert all(kept_form(g) == g for g in here.graphs)  # idle loops at size 1, no identical iterations summed
    assert spread.counts == here.counts and len(here.counts) == len(candidates)
    assert spread.before_symmetry == here.before_symmetry and spread.done == here.done == len(candidates)
    assert spread.mappings == here.mappings >= len(here.graphs) > 0


def test_candidates_are_joined_in_order_even_when_grouped() -> None:
    order = parallel._grouped([cast(Any, _Ends(k)) for k in "abacb"])
    assert order == [0, 2, 1, 4, 3]
    parts = [parallel.Mapped(cast(Any, ["A0", "A2"]), 0, 2, False, (1, 1), 5),
             parallel.Mapped(cast(Any, ["B1", "B1'"]), 0, 2, False, (2, 0), 3)]
    joined = parallel._joined([[0, 2], [1, 4]], parts)
    assert joined.graphs == ["A0", "B1", "B1'", "A2"]
    assert joined.counts == (1, 2, 1, 0) and joined.mappings == 8 and joined.done == 4


def test_the_least_work_is_mapped_first_where_the_search_asks() -> None:
    """``least_work_first``: fewer kernels first, then fewer block ops; equal work keeps a shared last
    kernel together. A 128K-vocabulary softmax's pipeline search maps its two-kernel candidates of 11-19
    ops (the ones that fit) before those of 20 or more, which a slow machine's deadline then cuts
    (tests/test_long_rows.py). Without it, the generator's order, grouped by last kernel."""
    cands = [cast(Any, c) for c in (_Ends("a", 2, 7), _Ends("b", 2, 5), _Ends("a", 2, 5), _Ends("c", 1, 9),
                                    _Ends("b", 2, 7), _Ends("b", 2, 5))]
    assert parallel._grouped(cands, least_work_first=True) == [3, 1, 5, 2, 0, 4]
    assert parallel._grouped(cands) == [0, 2, 1, 4, 5, 3]


def test_forked_map_keeps_order() -> None:
    items = list(range(100))
    assert forked_map(_squares, items, jobs=2, chunk=7) == [i * i for i in items] == forked_map(_squares, items, jobs=1)


def _squares(xs: list[int]) -> list[int]:
    return [x * x for x in xs]


@pytest.mark.parametrize("jobs", [1, 2])
def test_forked_map_reports_each_chunk_as_it_comes(jobs: int) -> None:
    """The screen's progress bar: one call per chunk, with its item count."""
    seen: list[int] = []
    out = forked_map(_squares, list(range(50)), jobs=jobs, chunk=7, on_chunk=seen.append)
    assert out == [i * i for i in range(50)] and seen == [7] * 7 + [1]


class _Ends:
    """A candidate of ``ops`` block ops in each of ``kernels`` kernels, the last one named ``last``."""

    def __init__(self, last: str, kernels: int = 1, ops: int = 4) -> None:
        kernel = type("K", (), {"ops": (None,) * ops})()
        self.kernels = (kernel,) * kernels
        self.template = type("T", (), {"kernels": (*self.kernels[1:], last)})()


def test_a_walk_past_the_deadline_stops_inside_the_candidate(candidates: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """One candidate's walk can run for minutes (a rank-4 rotary program did): the walk looks at the
    clock at every expansion, and the chunk reports the candidate as not reached."""
    from prism.search import walk as walk_mod
    from prism.search.mapping import instantiate_mappings

    with pytest.raises(walk_mod.WalkTimeout):
        instantiate_mappings(candidates[0], deadline=time.time() - 1)
    clock = iter([0.0, 0.0] + [1e12] * 100_000)  # run_chunk's first look passes, the walk's fail
    monkeypatch.setattr(parallel.time, "time", lambda: next(clock))
    monkeypatch.setattr(walk_mod.time, "time", lambda: next(clock))
    got = parallel.run_chunk(candidates[:3], deadline=1.0)
    assert got.timed_out and got.done == 0 and not got.graphs


def test_the_screen_drops_the_plans_it_reaches_past_its_deadline() -> None:
    """``verified._screen_until``: a chunk reached past the deadline is dropped unscreened (False: not
    sent to the prover); before it, the plain numeric screen, with the keys of what passes."""
    from prism import plans as hand
    from prism.search.verified import _screen_until
    from prism.verify.screen import screen

    g = workloads.rmsnorm_linear(4, 32)
    kgs = hand.hand_plans("rmsnorm_linear", g)
    from prism.search.canonical import canonical_key

    assert screen(g, kgs) == [True] * len(kgs)
    assert _screen_until(g, time.perf_counter() + 60, kgs) == [(True, canonical_key(kg)) for kg in kgs]
    assert _screen_until(g, time.perf_counter() - 1, kgs) == [(False, None)] * len(kgs)
