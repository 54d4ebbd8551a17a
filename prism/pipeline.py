"""The pipeline, one named call per stage (DESIGN.md):

    search_and_verify(graph)      search → mapping instantiation → verification → cache
    superoptimize(graph)          search_and_verify → tune (sizes, codegen, compile, profile) → callable

Verified sGraphs (concrete mappings, symbolic sizes) are cached under the program's size-free
structure key, so a second shape of the same program does no search; tuned kernels are cached per
(program with shapes, dtype, GPU architecture).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from prism.cache import JsonCache
from prism.errors import DeviceError, PrismError, SerializationError
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.settings import settings

log = logging.getLogger(__name__)

# Bump when the search, the mapping rules or the axioms change what a cached result would hold.
SEARCH_CACHE_SCHEMA = 1
TUNE_CACHE_SCHEMA = 1


@dataclass(frozen=True)
class SearchOutcome:
    """What search + mapping + verification found for a program (templates keep symbolic sizes)."""

    program: str
    structure_key: str
    templates: tuple[KernelGraph, ...]
    cached: bool
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "structure_key": self.structure_key,
            "cached": self.cached,
            "verified": len(self.templates),
            "seconds": self.seconds,
            **self.stats,
        }


def _bind(template: KernelGraph, graph: Graph) -> KernelGraph:
    """A cached template re-bound to the shapes of ``graph`` (same structure, other sizes)."""
    return template.with_shapes({t.name: t.shape for t in graph.inputs}, {t.name: t.shape for t in graph.outputs})


def search_and_verify(
    graph: Graph, *, program: str = "program", cache: bool = True, progress: bool = True, config: Any = None
) -> SearchOutcome:
    """Stages 1–3: every verified sGraph of ``graph`` (from the cache when possible)."""
    graph.check_complete()
    key = graph.structure_key()
    use_cache = cache and not settings().no_cache
    store = JsonCache("search", SEARCH_CACHE_SCHEMA)
    if use_cache:
        t0 = time.perf_counter()
        hit = store.get(key, lambda p: _decode_search(p, key))
        if hit is not None:
            templates, stats = hit
            log.info("%s: %d verified sGraphs loaded from the cache (key %s)", program, len(templates), key)
            return SearchOutcome(program, key, tuple(_bind(t, graph) for t in templates), True, stats,
                                 {"search": 0.0, "mapping": 0.0, "verify": 0.0, "load": time.perf_counter() - t0,
                                  "total": time.perf_counter() - t0})

    from prism.search import canonical_key, instantiate_mappings, search
    from prism.verify import verify_all

    t0 = time.perf_counter()
    result = search(graph, config)
    t1 = time.perf_counter()
    mapped: list[KernelGraph] = []
    before = 0
    for cand in result.candidates:
        m = instantiate_mappings(cand)
        before += m.before_symmetry
        mapped.extend(m.graphs)
    t2 = time.perf_counter()
    verdicts = verify_all(graph, mapped, progress=progress)
    t3 = time.perf_counter()
    seen: dict[str, KernelGraph] = {}
    for kg, verdict in zip(mapped, verdicts, strict=True):
        if verdict.proven:
            seen.setdefault(canonical_key(kg), kg)
    templates = tuple(seen.values())
    stats = {
        "candidates": len(result.candidates),
        "mappings": len(mapped),
        "mappings_before_symmetry": before,
        "proven": sum(v.proven for v in verdicts),
        "pruned": dict(getattr(result, "stats", {}).get("pruned", {})) if isinstance(getattr(result, "stats", None), dict)
        else {},
    }
    seconds = {"search": t1 - t0, "mapping": t2 - t1, "verify": t3 - t2, "total": t3 - t0}
    if use_cache:
        store.put(key, {"structure_key": key, "templates": [t.to_json() for t in templates],
                        "stats": stats, "seconds": seconds})
    return SearchOutcome(program, key, templates, False, stats, seconds)


def _decode_search(payload: Any, key: str) -> tuple[list[KernelGraph], dict[str, Any]]:
    if payload.get("structure_key") != key:
        raise SerializationError("entry belongs to another program")
    return [KernelGraph.from_json(t) for t in payload["templates"]], dict(payload.get("stats", {}))


def superoptimize(
    graph: Graph,
    *,
    target: str | None = None,
    samples: int = 64,
    seed: int = 0,
    time_budget: float | None = None,
    cache: bool = True,
    program: str = "program",
    progress: bool = True,
) -> Any:
    """Search, verify, tune and compile ``graph``; return the fastest verified kernel as a callable.

    ``target`` is an architecture like ``"sm_80"`` (default: the GPU at hand). Raises DeviceError
    after verification when no GPU is present.
    """
    outcome = search_and_verify(graph, program=program, cache=cache, progress=progress)
    if not outcome.templates:
        raise PrismError(f"{program}: no verified sGraph was found (candidates {outcome.stats.get('candidates')})")
    from prism.tune import tune

    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise DeviceError("no CUDA device")
    except Exception as e:
        raise DeviceError(
            f"{program}: search and verification found {len(outcome.templates)} verified sGraphs, but tuning "
            f"needs an NVIDIA GPU with CuPy ({e})"
        ) from e
    return tune(graph, list(outcome.templates), samples=samples, seed=seed, time_budget=time_budget, arch=target,
                outcome=outcome, cache=cache)
