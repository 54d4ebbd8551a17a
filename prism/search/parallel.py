"""Mapping instantiation of many candidates, spread over worker processes (``PRISM_JOBS``).

Candidates are cut into chunks in order; forked worker processes instantiate a chunk each and send
back the μGraphs. Results are joined in candidate order, so the outcome is the same for any number
of workers. Workers are forked (spawned ones would re-run a user's script that has no main guard),
and only while this process runs no other Python thread (one could hold a lock the child needs);
otherwise, and for few candidates, the work runs here. A wall-clock deadline stops the work:
what was instantiated by then is kept (each μGraph still goes through the screen and the proof).
Inside ``mapping_on(chunk_map)`` (``prism.distributed.spread_search``: a Dask cluster's workers) the
chunks go to ``chunk_map`` instead of forked workers; the fork path stays the default.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass

from prism.ir import KernelGraph

from .mapping import instantiate_mappings
from .sgraph import SGraph

CHUNK = 32  # candidates per task: small enough to balance, large enough to amortize the transfer
# fewer candidates than this are instantiated here: a few milliseconds each (docs/search-speed.md),
# less than forking workers and sending the graphs back
MIN_PARALLEL = 2 * CHUNK

@dataclass(frozen=True)
class Mapped:
    graphs: list[KernelGraph]
    before_symmetry: int
    done: int  # candidates instantiated
    timed_out: bool


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
    before = 0
    for n, cand in enumerate(cands):
        if time.time() > deadline:
            return Mapped(graphs, before, n, True)
        m = instantiate_mappings(cand)
        before += m.before_symmetry
        graphs.extend(m.graphs)
    return Mapped(graphs, before, len(cands), False)


def instantiate_all(cands: Sequence[SGraph], *, deadline: float, jobs: int,
                    on_progress: Callable[[Mapped], None] | None = None) -> Mapped:
    """Every candidate's mappings (``deadline``: a ``time.time()`` value), in candidate order;
    ``on_progress`` gets each chunk's result as it comes."""
    chunks = [list(cands[s:s + CHUNK]) for s in range(0, len(cands), CHUNK)]
    parts: list[Mapped] = []
    forkable = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if (chunk_map := _chunk_map.get()) is not None and len(cands) >= MIN_PARALLEL:
        for part in chunk_map(chunks, deadline):
            parts.append(part)
            if on_progress is not None:
                on_progress(part)
    elif jobs > 1 and len(cands) >= MIN_PARALLEL and forkable:
        ctx = multiprocessing.get_context("fork")
        with warnings.catch_warnings():  # native solver threads (egglog) are idle; the child uses z3 only
            warnings.simplefilter("ignore", DeprecationWarning)
            with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
                for part in pool.map(run_chunk, chunks, [deadline] * len(chunks)):
                    parts.append(part)
                    if on_progress is not None:
                        on_progress(part)
    else:
        for chunk in chunks:
            parts.append(run_chunk(chunk, deadline))
            if on_progress is not None:
                on_progress(parts[-1])
            if parts[-1].timed_out:
                break
    return Mapped([g for p in parts for g in p.graphs], sum(p.before_symmetry for p in parts),
                  sum(p.done for p in parts), any(p.timed_out for p in parts))
