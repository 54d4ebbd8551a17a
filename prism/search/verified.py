"""The whole-program search behind ``prism.pipeline``: symbolic search → mapping instantiation →
distinct plans → numeric screen → proof.

It needs z3 (the search) and egglog (the proof): ``prism.pipeline`` imports this module only where
they are installed, and caches what it returns.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import prism.search
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph, Load
from prism.progress import StageBar
from prism.rowwise import row_plan, row_vendor_plan
from prism.search.canonical import canonical_key
from prism.search.config import SearchConfig
from prism.search.parallel import Mapped, forked_map, instantiate_all
from prism.search.search import SearchResult
from prism.search.sgraph import holds_long, long_inputs
from prism.verify import verify_all
from prism.verify.screen import screen

log = logging.getLogger(__name__)
SCREEN_CHUNK = 128  # plans per screening task (a few milliseconds each)


@dataclass(frozen=True)
class Verified:
    """The proven plans (symbolic sizes), the counts of every stage and its seconds."""

    templates: tuple[KernelGraph, ...]
    stats: dict[str, Any]
    seconds: dict[str, float]


@dataclass(frozen=True)
class _Screenable:
    plans: list[KernelGraph]  # the row-wise plans, then the mappings (``parallel.kept_form``)
    rows: tuple[int | None, int | None]  # where in ``plans`` the row-wise plan and the row-vendor plan are
    long: int = 0  # mappings dropped for holding a long dim whole (``SearchConfig.long_dims``)

    @property
    def order(self) -> list[int]:
        """The plans in the order they are kept: the mappings, then the row-wise plans."""
        first = sum(i is not None for i in self.rows)
        return [*range(first, len(self.plans)), *range(first)]


@dataclass(frozen=True)
class _Distinct:
    plans: list[KernelGraph]  # those that passed the screen (or that it could not run), one per canonical key
    row_added: bool  # the row-wise plan passed and was not among the mappings
    row_vendor_added: bool  # nor the row-wise kernels with vendor GEMMs (``rowwise.row_vendor_plan``)


def search_verified(graph: Graph, program: str, config: SearchConfig, *, progress: bool, jobs: int) -> Verified:
    """Every proven plan of ``graph`` the search finds within ``config``'s budget (the mappings get
    as long again, the numeric screen once more: plans it has not reached by then are dropped)."""
    t0 = time.perf_counter()
    deadline = t0 + 2 * config.time_budget_s
    result = prism.search.search(graph, config, label=program)  # through the package: tests replace it
    t1 = time.perf_counter()
    m = _mappings(result, program, deadline, progress, jobs, config.least_work_first)
    screenable = _screenable(graph, program, m, _long(graph, config.long_dims))
    t2 = time.perf_counter()
    screen_deadline = deadline + config.time_budget_s
    with StageBar(f"screen {program}", total=len(screenable.plans), unit=" plans",
                  enabled=progress and bool(screenable.plans)) as bar:  # a minute or more for an attention
        passed = forked_map(functools.partial(_screen_until, graph, screen_deadline), screenable.plans,
                            jobs=jobs, chunk=SCREEN_CHUNK, on_chunk=bar.advance)
    distinct = _distinct(screenable, passed)
    to_prove = distinct.plans
    t3 = time.perf_counter()
    screen_timed_out = t3 > screen_deadline
    if screen_timed_out:
        log.warning("%s: the numeric screen stopped at its budget: the plans left are dropped unscreened", program)
    # the proof gets the budget once more after the screen's deadline (or after the screen, if later)
    verify_deadline = max(screen_deadline, t3) + config.time_budget_s
    verdicts = verify_all(graph, to_prove, progress=progress, deadline=verify_deadline)
    t4 = time.perf_counter()
    verify_timed_out = t4 > verify_deadline
    if verify_timed_out:
        log.warning("%s: the proof stopped at its budget: the plans left are dropped unproven", program)
    # to_prove holds distinct canonical keys already (deduplicated after the screen)
    templates = tuple(kg for kg, verdict in zip(to_prove, verdicts, strict=True) if verdict.proven)
    pruned = result.stats.get("pruned")
    stats = {
        "candidates": len(result.candidates),
        "mappings": m.mappings,
        "mappings_before_symmetry": m.before_symmetry,
        "repeating_loops_dropped": m.mappings - len(m.graphs),
        "long_dims_dropped": screenable.long,
        "screened": len(screenable.plans),
        "screen_rejected": sum(ok is False for ok, _ in passed),
        "proof_attempts": len(to_prove),
        "proven": sum(v.proven for v in verdicts),
        "pruned": dict(pruned) if isinstance(pruned, dict) else {},
        "search_timed_out": bool(result.stats.get("timed_out", False)),
        "search_stopped_early": bool(result.stats.get("stopped_early", False)),
        "mapping_timed_out": m.timed_out,
        "screen_timed_out": screen_timed_out,
        "verify_timed_out": verify_timed_out,
        "rowwise_plan_added": distinct.row_added,
        "row_vendor_plan_added": distinct.row_vendor_added,
        "whole_program_searched": True,
    }
    seconds = {"search": t1 - t0, "mapping": t2 - t1, "screen": t3 - t2, "verify": t4 - t3, "total": t4 - t0}
    return Verified(templates, stats, seconds)


def _screen_until(graph: Graph, deadline: float, plans: list[KernelGraph]) -> list[tuple[bool | None, str | None]]:
    """``screen`` of a chunk of plans, each with its canonical key where it is not rejected; all
    False (dropped unscreened) once past ``deadline`` (a ``time.perf_counter()`` value: the budget
    once more after the mappings' deadline)."""
    if time.perf_counter() > deadline:
        return [(False, None)] * len(plans)
    return [(ok, None if ok is False else canonical_key(kg)) for kg, ok in zip(plans, screen(graph, plans), strict=True)]


def _mappings(result: SearchResult, program: str, deadline: float, progress: bool, jobs: int,
              least_work_first: bool) -> Mapped:
    """Every candidate's concrete mappings, until ``deadline`` (a ``time.perf_counter()`` value), in the
    order ``SearchConfig.least_work_first`` names."""
    found = [0]
    with StageBar(f"mappings {program}", total=len(result.candidates), unit=" sGraphs",
                  enabled=progress and bool(result.candidates)) as bar:
        def mapped_part(part: Mapped) -> None:
            found[0] += part.mappings
            bar.advance(part.done, mappings=found[0])

        m = instantiate_all(result.candidates, deadline=time.time() + (deadline - time.perf_counter()),
                            jobs=jobs, on_progress=mapped_part, least_work_first=least_work_first)
    if m.timed_out:
        log.warning("%s: mapping instantiation stopped at its budget (%d of %d candidates)", program, m.done,
                    len(result.candidates))
    return m


def _long(graph: Graph, long_dims: tuple[tuple[int, int], ...]) -> dict[str, frozenset[int]]:
    """``SearchConfig.long_dims`` by input name: the dims of each program input no tile may hold whole."""
    return {name: frozenset(dims) for name, dims in long_inputs([t.name for t in graph.inputs], long_dims)}


def holds_whole(kg: KernelGraph, long: Mapping[str, frozenset[int]]) -> bool:
    """Whether a Load of ``kg`` holds one of ``long``'s dims of a program input whole in its tile
    (``sgraph.holds_long``). The mapping walk drops such loads already (``SGraph.long``); this is
    the check of what it returns."""
    return any(isinstance(op, Load) and op.tensor in long and holds_long(op, long[op.tensor])
               for k in kg.kernels if isinstance(k, CustomKernel) for op in k.ops)


def _screenable(graph: Graph, program: str, mapped: Mapped, long: Mapping[str, frozenset[int]]) -> _Screenable:
    """What the screen runs: the row-wise one-kernel plan, which exists even where the budget stops
    the search, and the row-wise kernels between vendor GEMMs (``row_vendor_plan``), first, so that
    a screen stopped at its deadline has screened them; then the mappings but those that hold a
    ``long`` dim whole (``holds_whole``). A loop that reads nothing per iteration only repeats
    itself: its loop-size-1 form is screened; what still sums identical iterations was dropped
    where the mappings were made (``parallel.kept_form``)."""
    plans: list[KernelGraph] = []
    at: list[int | None] = []
    for row in (row_plan(graph, program), row_vendor_plan(graph, program)):
        at.append(None if row is None else len(plans))
        plans += [] if row is None else [row]
    searched = [kg for kg in mapped.graphs if not (long and holds_whole(kg, long))]
    return _Screenable(plans + searched, (at[0], at[1]), len(mapped.graphs) - len(searched))


def _distinct(screened: _Screenable, passed: list[tuple[bool | None, str | None]]) -> _Distinct:
    """The plans the screen did not reject, the first of each canonical key that passed, in the
    order of ``_Screenable.order`` (a row-wise plan the search also found is kept as the search's).
    Plans of one key compute the same thing, so the screen passes all or none of them, but for a
    plan wrong only at some mixes of sizes, which the screen's second size set, given by symbol
    name, may meet in one naming and not in another: then one of them goes to the proof, which
    decides (before, the first of the key was screened alone)."""
    order = screened.order
    distinct: dict[str, int] = {}  # key -> the index of its first plan
    for i in order:
        ok, key = passed[i]
        if ok is not False and key is not None:
            distinct.setdefault(key, i)
    firsts = set(distinct.values())
    added = [i is not None and i in firsts for i in screened.rows]
    return _Distinct([screened.plans[i] for i in order if i in firsts], added[0], added[1])
