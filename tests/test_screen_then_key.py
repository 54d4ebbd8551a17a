"""Canonical keys after the numeric screen (``search.verified``): the mappings are screened unkeyed
and only what passes is keyed and deduplicated, giving the plans that keying every mapping before
the screen gave."""

from __future__ import annotations

import time
from typing import Any, cast

from bench.zoo import zoo_graph
from prism.search import SearchConfig, search
from prism.search import verified as sv
from prism.search.canonical import canonical_key
from prism.search.parallel import instantiate_all
from prism.verify.screen import screen


def test_the_first_plan_of_each_passing_key_is_kept_in_order_and_row_plans_are_told_apart() -> None:
    plans = cast(Any, ["row", "vendor", "a", "b", "a2", "c", "d"])
    passed: list[tuple[bool | None, str | None]] = [
        (True, "krow"), (True, "kc"), (False, None), (True, "kb"), (True, "ka"), (None, "kc"), (True, "kb")]
    got = sv._distinct(sv._Screenable(plans, (0, 1)), passed)
    assert got.plans == ["b", "a2", "c", "row"]  # "a" failed; "d" and the vendor plan repeat kb and kc
    assert (got.row_added, got.row_vendor_added) == (True, False)
    none = sv._distinct(sv._Screenable(plans[2:], (None, None)), passed[2:])
    assert none.plans == ["b", "a2", "c"] and (none.row_added, none.row_vendor_added) == (False, False)
    vendor = sv._distinct(sv._Screenable(plans[1:], (None, 0)), passed[1:])
    assert vendor.plans == ["b", "a2", "c"] and (vendor.row_added, vendor.row_vendor_added) == (False, False)


def test_the_row_wise_plans_are_screened_first_and_kept_last() -> None:
    """A screen stopped at its deadline (an attention's, at decode sizes) has screened them: they
    were last and dropped unscreened before."""
    g = zoo_graph("rms_norm")
    mapped = cast(Any, type("M", (), {"graphs": []})())
    screenable = sv._screenable(g, "rms_norm", mapped, {})
    assert screenable.rows[0] == 0 and screenable.order[-1] == 0  # screened first, kept last


def test_keying_after_the_screen_keeps_the_plans_keying_before_it_kept() -> None:
    g = zoo_graph("scaled_attention")  # small sizes; its mappings repeat some plans
    cfg = SearchConfig(max_candidates=200)
    mapped = instantiate_all(search(g, cfg).candidates, deadline=time.time() + 120, jobs=1)
    assert not mapped.timed_out
    # before: one plan per key, the first of each, then the screen
    first: dict[str, Any] = {}
    for kg in mapped.graphs:
        first.setdefault(canonical_key(kg), kg)
    before = [k for k, ok in zip(first, screen(g, list(first.values())), strict=True) if ok is not False]
    # now
    screenable = sv._screenable(g, "scaled_attention", mapped, {})
    passed = sv._screen_until(g, time.perf_counter() + 120, screenable.plans)
    after = [canonical_key(kg) for kg in sv._distinct(screenable, passed).plans]
    assert len(first) < len(mapped.graphs)  # there were duplicates to drop
    assert sum(ok is False for ok, _ in passed) > 0  # and plans the screen rejected
    assert after[:len(before)] == before and len(before) > 0
    rows = [screenable.plans[i] for i in screenable.rows if i is not None]
    assert set(after[len(before):]) <= {canonical_key(kg) for kg in rows}
