"""The numeric screen decides plans that no all-2 size set can run: a grid or loop that splits a dim of
extent 1 (multi-head attention's one query per KV head) divides it only at size 1. Such plans went to
the proof unscreened: 55,193 proof attempts, 91 s, for the 211 proven plans of the part of a decode
multi-head attention (docs/off-the-suite.md, "Held-out programs")."""

from __future__ import annotations

import itertools
import time

import numpy as np

import prism.search
from bench.zoo import zoo_graph
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.rows import searched_graph
from prism.search.config import SearchConfig
from prism.search.parallel import instantiate_all
from prism.verify import verify_all
from prism.verify.screen import (
    SCREEN_SIZE,
    UNIT_SETS,
    _fewest_ones_first,
    _size_sets,
    _unit_size_sets,
    _verdict,
    screen,
    small_instance,
)


def _plans_of_group_one_attention() -> tuple[Graph, list[KernelGraph]]:
    g = searched_graph(zoo_graph("mha_attention", "small"))
    # bounded by count, not time (the same first 150 candidates as a 3 s search on an idle machine, in
    # 0.4 s; under load a clock could cut them short)
    res = prism.search.search(g, SearchConfig(loop_one=False, time_budget_s=60.0, max_candidates=1000), label="mha")
    m = instantiate_all(res.candidates[:150], deadline=time.time() + 60.0, jobs=1)
    assert m.done == 150 and not m.timed_out
    return g, list(m.graphs[:1500])


def test_plans_that_only_run_with_sizes_of_1_are_screened_and_none_it_rejects_is_proven() -> None:
    g, plans = _plans_of_group_one_attention()
    small = small_instance(g)
    assert any(t.shape[1] == 1 for t in small.inputs)  # the one query per head stays 1
    ins = {t.name: t.shape for t in small.inputs}
    outs = {t.name: t.shape for t in small.outputs}
    rng = np.random.default_rng(0)
    x = {t.name: rng.standard_normal(t.shape) * 0.5 for t in small.inputs}
    ref = small.evaluate(x)
    unrun = [i for i, kg in enumerate(plans)
             if _verdict(kg.with_shapes(ins, outs), _size_sets(kg.symbols), x, ref) is None]
    assert len(unrun) >= 100, len(unrun)  # the usual size sets run none of these
    verdicts = screen(g, plans)
    rejected = [plans[i] for i in unrun if verdicts[i] is False]
    # most are wrong (73% here; 80% before the layout typing rejected plain sums of shifted chunks itself)
    assert len(rejected) >= 0.6 * len(unrun)
    assert not any(v.proven for v in verify_all(g, rejected, progress=False))  # the screen only rejects what is wrong
    kept = [kg for kg, v in zip(plans, verdicts, strict=True) if v is not False]
    assert all(v is True for v in verdicts if v is not False)  # every plan decided: none runs at no size set
    assert any(v.proven for v in verify_all(g, kept, progress=False))


def test_size_sets_with_ones_come_fewest_ones_first_without_listing_all_of_them() -> None:
    for n in range(9):  # the order of a stable sort of every combination by its count of 1s
        every = sorted(itertools.product((SCREEN_SIZE, 1), repeat=n), key=lambda c: c.count(1))
        assert list(_fewest_ones_first(n)) == every
    # a plan of 48 size symbols (2**48 combinations): its first UNIT_SETS sets at once
    sets = list(_unit_size_sets([f"s{i}" for i in range(48)]))
    assert len(sets) == UNIT_SETS
    assert [sum(v == 1 for v in s.values()) for s in sets] == [1] * UNIT_SETS
