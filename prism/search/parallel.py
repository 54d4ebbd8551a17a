"""Mapping instantiation of many candidates, spread over worker processes (``PRISM_JOBS``).

Candidates are cut into chunks in order; forked worker processes instantiate a chunk each and send
back the μGraphs. Results are joined in candidate order, so the outcome is the same for any number
of workers. Workers are forked (spawned ones would re-run a user's script that has no main guard),
and only while this process runs no other Python thread (one could hold a lock the child needs);
otherwise, and for few candidates, the work runs here. A wall-clock deadline stops the work:
what was instantiated by then is kept (each μGraph still goes through the screen and the proof).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
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


def _run(cands: Sequence[SGraph], deadline: float) -> Mapped:
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
    if jobs > 1 and len(cands) >= MIN_PARALLEL and forkable:
        ctx = multiprocessing.get_context("fork")
        with warnings.catch_warnings():  # native solver threads (egglog) are idle; the child uses z3 only
            warnings.simplefilter("ignore", DeprecationWarning)
            with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=ctx) as pool:
                for part in pool.map(_run, chunks, [deadline] * len(chunks)):
                    parts.append(part)
                    if on_progress is not None:
                        on_progress(part)
    else:
        for chunk in chunks:
            parts.append(_run(chunk, deadline))
            if on_progress is not None:
                on_progress(parts[-1])
            if parts[-1].timed_out:
                break
    return Mapped([g for p in parts for g in p.graphs], sum(p.before_symmetry for p in parts),
                  sum(p.done for p in parts), any(p.timed_out for p in parts))
