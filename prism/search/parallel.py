"""Mapping instantiation of many candidates, spread over worker processes (``PRISM_JOBS``).

Candidates are mapped in the search's order, or the least work first (fewest kernels, then fewest
block ops; ``SearchConfig.least_work_first``), and cut into chunks, those of equal work that end in
the same kernel together (a worker walks such a
kernel once for all the first kernels it pairs with: ``walk``'s memo lives in each process); forked
worker processes instantiate a chunk each and send back the μGraphs (``kept_form``: idle loops at
size 1; those that sum identical loop iterations are only counted). Results are joined in
candidate order, so the outcome is the same for any number of workers. Workers are forked (spawned
ones would re-run a user's script that has no main guard), and only while this process runs no
other Python thread (one could hold a lock the child needs); otherwise, and for few candidates,
the work runs here. A wall-clock deadline stops the work: what was instantiated by then is kept
(each μGraph still goes through the screen and the proof). Canonical keys are not computed here:
nearly every mapping is distinct (1-7% duplicates in the zoo's searches) and four in five fail the
numeric screen, so ``search.verified`` keys only the plans that pass it.
Inside ``mapping_on(chunk_map)`` (``prism.distributed.spread_search``: a Dask cluster's workers) the
chunks go to ``chunk_map`` instead of forked workers; the fork path stays the default.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from prism.ir import CustomKernel, KernelGraph

from .layout import layout_ok
from .mapping import instantiate_mappings, without_idle_loops
from .sgraph import SGraph
from .walk import WalkTimeout, shares_loop

CHUNK = 32  # candidates per task at least: small enough to balance, large enough to amortize the transfer
CHUNKS_PER_JOB = 16  # at most: larger chunks keep candidates that share a later kernel in one process
# fewer candidates than this are instantiated here: a few milliseconds each (docs/search-speed.md),
# less than forking workers and sending the graphs back
MIN_PARALLEL = 2 * CHUNK

@dataclass(frozen=True)
class Mapped:
    graphs: list[KernelGraph]  # the mappings' ``kept_form``s, but those that sum identical loop iterations
    before_symmetry: int
    done: int  # candidates instantiated
    timed_out: bool
    counts: tuple[int, ...] = ()  # per candidate instantiated: how many of ``graphs`` are its own
    mappings: int = 0  # every mapping (after symmetry breaking), those dropped included


# chunks, deadline -> each chunk's Mapped, in order: where mapping_on sends the chunks (unset: forked workers)
ChunkMap = Callable[[list[list[SGraph]], float], Iterable["Mapped"]]
_chunk_map: ContextVar[ChunkMap | None] = ContextVar("prism_chunk_map", default=None)


@contextlib.contextmanager
def mapping_on(chunk_map: ChunkMap) -> Iterator[None]:
    """Within this block (this thread), ``instantiate_all`` hands its chunks to ``chunk_map``."""
    token = _chunk_map.set(chunk_map)
    try:
        yield
    finally:
        _chunk_map.reset(token)


def run_chunk(cands: Sequence[SGraph], deadline: float) -> Mapped:
    """Instantiate a chunk of candidates in order, until ``deadline`` (``time.time()``)."""
    graphs: list[KernelGraph] = []
    counts: list[int] = []
    before = mappings = 0
    for n, cand in enumerate(cands):
        if time.time() > deadline:
            return Mapped(graphs, before, n, True, tuple(counts), mappings)
        try:
            m = instantiate_mappings(cand, deadline=deadline)
        except WalkTimeout:  # one candidate's walk ran past the deadline: it counts as not reached
            return Mapped(graphs, before, n, True, tuple(counts), mappings)
        before += m.before_symmetry
        mappings += len(m.graphs)
        kept = [one for g in m.graphs if (one := kept_form(g)) is not None]
        graphs.extend(kept)
        counts.append(len(kept))
    return Mapped(graphs, before, len(cands), False, tuple(counts), mappings)


def kept_form(kg: KernelGraph) -> KernelGraph | None:
    """``kg`` without its idle loops (``without_idle_loops``), or None when it still sums identical
    loop iterations (right only where the repeats cancel, and never faster than the same plan
    without them): checked where the mapping runs, in the workers.

    Only a kernel with a loop of its own left (symbolic, not made idle, not shared) can: the walk
    typed shared loops without repeats already, and a loop of size 1 sums no copies. Where no kernel
    has one and no loop was made idle, the check (half a mapping's cost) is skipped: the walk typed
    this very graph. A loop made idle is checked again: at one iteration its accumulators are typed
    (``layout._one_iteration``) where the walk, seeing a loop that might still read per iteration,
    left them untyped, so the check can reject what the walk kept (a wrong plan the screen would
    otherwise have to run)."""
    one = without_idle_loops(kg)
    own = any(isinstance(k, CustomKernel) and isinstance(k.loop, str) and not shared
              for k, shared in zip(one.kernels, shares_loop(one.kernels), strict=True))
    return one if (one is kg and not own) or layout_ok(one, repeats=False) else None


def _grouped(cands: Sequence[SGraph], least_work_first: bool = False) -> list[int]:
    """Candidate indices, those that end in the same kernel next to each other (stable); with
    ``least_work_first``, the least work first (fewest kernels, then fewest block ops: where the
    deadline cuts the mapping, it drops the plans that do the most), grouped so among equal work."""
    def work(c: SGraph) -> tuple[int, ...]:
        return (len(c.kernels), sum(len(k.ops) for k in c.kernels)) if least_work_first else ()

    first: dict[object, int] = {}
    ends = [(work(c), c.template.kernels[-1] if c.template.kernels else None) for c in cands]
    for i, end in enumerate(ends):
        first.setdefault(end, i)
    return sorted(range(len(cands)), key=lambda i: (ends[i][0], first[ends[i]]))


def _joined(chunks: Sequence[Sequence[int]], parts: Sequence[Mapped]) -> Mapped:
    """The results of chunks of candidate indices ``chunks`` back in candidate order."""
    own: dict[int, list[KernelGraph]] = {}
    for idx, part in zip(chunks, parts, strict=False):
        pos = 0
        for i, n in zip(idx, part.counts, strict=False):
            own[i] = part.graphs[pos:pos + n]
            pos += n
    done = sorted(own)
    return Mapped([g for i in done for g in own[i]], sum(p.before_symmetry for p in parts),
                  sum(p.done for p in parts), any(p.timed_out for p in parts), tuple(len(own[i]) for i in done),
                  sum(p.mappings for p in parts))


def instantiate_all(cands: Sequence[SGraph], *, deadline: float, jobs: int,
                    on_progress: Callable[[Mapped], None] | None = None, least_work_first: bool = False) -> Mapped:
    """Every candidate's mappings (``deadline``: a ``time.time()`` value), in candidate order;
    ``on_progress`` gets each chunk's result as it comes; ``least_work_first``: see ``_grouped``."""
    order = _grouped(cands, least_work_first)
    size = max(CHUNK, -(-len(cands) // (CHUNKS_PER_JOB * max(jobs, 1))))
    index = [order[s:s + size] for s in range(0, len(cands), size)]
    parts: list[Mapped] = []
    if (chunk_map := _chunk_map.get()) is not None and len(cands) >= MIN_PARALLEL:
        results: Iterable[Mapped] = chunk_map([[cands[i] for i in idx] for idx in index], deadline)
    elif jobs > 1 and len(cands) >= MIN_PARALLEL and _forkable():
        results = _forked(functools.partial(run_chunk, deadline=deadline), cands, index, jobs)
    else:
        results = (run_chunk([cands[i] for i in idx], deadline) for idx in index)
    for part in results:
        parts.append(part)
        if on_progress is not None:
            on_progress(part)  # past the deadline, the chunks left return at once, timed out
    return _joined(index, parts)


def forked_map[T, R](fn: Callable[[list[T]], list[R]], items: Sequence[T], *, jobs: int, chunk: int = CHUNK,
                     on_chunk: Callable[[int], None] | None = None) -> list[R]:
    """``fn`` over ``items`` in chunks (one result per item, in order), in forked workers when
    ``jobs`` > 1 and there are enough items, as ``instantiate_all`` does; here otherwise.
    ``on_chunk`` gets each chunk's item count as its results come (a progress bar)."""
    index = [list(range(s, min(s + chunk, len(items)))) for s in range(0, len(items), chunk)]
    if jobs < 2 or len(index) < 2 or not _forkable():
        parts: Iterable[list[R]] = (fn([items[i] for i in idx]) for idx in index)
    else:
        parts = _forked(fn, items, index, jobs)
    out: list[R] = []
    for part in parts:
        out.extend(part)
        if on_chunk is not None:
            on_chunk(len(part))
    return out


def _forkable() -> bool:
    """Workers are forked only while no other Python thread runs (one could hold a lock the child needs)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


_HELD: Sequence[object] = ()  # in a forked worker: the items its tasks index


def _hold(items: Sequence[object]) -> None:
    global _HELD
    _HELD = items


def _on_held[R](fn: Callable[[list[Any]], R], idx: list[int]) -> R:
    return fn([_HELD[i] for i in idx])


def _forked[R](fn: Callable[[list[Any]], R], items: Sequence[object], index: Sequence[list[int]],
               jobs: int) -> Iterator[R]:
    """``fn`` of each chunk (indices into ``items``) in forked workers, in order. The items reach
    the workers through the fork itself (the initializer's arguments are not pickled): only the
    indices and the results travel."""
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():  # native solver threads (egglog) are idle; the child uses z3 only
        warnings.simplefilter("ignore", DeprecationWarning)
        with ProcessPoolExecutor(max_workers=min(jobs, len(index)), mp_context=ctx, initializer=_hold,
                                 initargs=(items,)) as pool:
            yield from pool.map(functools.partial(_on_held, fn), index)
