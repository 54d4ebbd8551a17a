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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prism.cache import JsonCache
from prism.errors import DeviceError, PrismError, SerializationError
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.reference import relative_error
from prism.settings import settings

log = logging.getLogger(__name__)

# Bump when the search, the mapping rules or the axioms change what a cached result would hold.
SEARCH_CACHE_SCHEMA = 3
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


def bind_shapes(template: KernelGraph, graph: Graph) -> KernelGraph:
    """A template re-bound to the shapes of ``graph`` (same structure, other sizes)."""
    return template.with_shapes({t.name: t.shape for t in graph.inputs}, {t.name: t.shape for t in graph.outputs})


def search_cache() -> JsonCache:
    """Verified sGraphs, keyed by the program's size-free structure key."""
    return JsonCache("search", SEARCH_CACHE_SCHEMA)


def save_verified(graph: Graph, templates: Sequence[KernelGraph], stats: dict[str, Any],
                  seconds: dict[str, float] | None = None) -> None:
    """Store the verified sGraphs of ``graph``'s structure (atomically)."""
    key = graph.structure_key()
    payload: dict[str, Any] = {"structure_key": key, "templates": [t.to_json() for t in templates], "stats": stats}
    if seconds is not None:
        payload["seconds"] = seconds
    search_cache().put(key, payload)


def search_and_verify(
    graph: Graph, *, program: str = "program", cache: bool = True, progress: bool = True, config: Any = None
) -> SearchOutcome:
    """Stages 1–3: every verified sGraph of ``graph`` (from the cache when possible)."""
    graph.check_complete()
    key = graph.structure_key()
    use_cache = cache and not settings().no_cache
    if use_cache:
        t0 = time.perf_counter()
        hit = search_cache().get(key, lambda p: _decode_search(p, key))
        if hit is not None:
            cached_templates, stats = hit
            log.info("%s: %d verified sGraphs loaded from the cache (key %s)", program, len(cached_templates), key)
            return SearchOutcome(program, key, tuple(bind_shapes(t, graph) for t in cached_templates), True, stats,
                                 {"search": 0.0, "mapping": 0.0, "verify": 0.0, "load": time.perf_counter() - t0,
                                  "total": time.perf_counter() - t0})

    from prism.search import canonical_key, instantiate_mappings, search
    from prism.search.layout import layout_ok
    from prism.search.mapping import without_idle_loops
    from prism.verify import verify_all
    from prism.verify.screen import screen

    t0 = time.perf_counter()
    result = search(graph, config)
    t1 = time.perf_counter()
    mapped: list[KernelGraph] = []
    before = 0
    cands = result.candidates
    if progress and cands:
        from tqdm import tqdm

        cands = tqdm(cands, desc=f"mappings {program}", unit=" sGraphs", leave=False)
    for cand in cands:
        m = instantiate_mappings(cand)
        before += m.before_symmetry
        mapped.extend(m.graphs)
    # A loop that reads nothing per iteration only repeats itself: keep its loop-size-1 form, once.
    # What still sums identical iterations (right only where the repeats cancel, in a ratio) is
    # never faster than the same plan without them: it is dropped before the proof.
    distinct: dict[str, KernelGraph] = {}
    repeating = 0
    for kg in mapped:
        one = without_idle_loops(kg)
        if not layout_ok(one, repeats=False):
            repeating += 1
            continue
        distinct.setdefault(canonical_key(one), one)
    checked = list(distinct.values())
    t2 = time.perf_counter()
    passed = screen(graph, checked)
    to_prove = [kg for kg, ok in zip(checked, passed, strict=True) if ok is not False]
    t3 = time.perf_counter()
    verdicts = verify_all(graph, to_prove, progress=progress)
    t4 = time.perf_counter()
    # to_prove holds distinct canonical keys already (deduplicated above)
    templates = tuple(kg for kg, verdict in zip(to_prove, verdicts, strict=True) if verdict.proven)
    stats = {
        "candidates": len(result.candidates),
        "mappings": len(mapped),
        "mappings_before_symmetry": before,
        "repeating_loops_dropped": repeating,
        "distinct_mappings": len(checked),
        "screen_rejected": sum(ok is False for ok in passed),
        "proof_attempts": len(to_prove),
        "proven": sum(v.proven for v in verdicts),
        "pruned": dict(result.stats.get("pruned") or {}),  # type: ignore[call-overload]
        "search_timed_out": bool(result.stats.get("timed_out", False)),
    }
    seconds = {"search": t1 - t0, "mapping": t2 - t1, "screen": t3 - t2, "verify": t4 - t3, "total": t4 - t0}
    if use_cache:
        save_verified(graph, templates, stats, seconds)
    return SearchOutcome(program, key, templates, False, stats, seconds)


def _decode_search(payload: Any, key: str) -> tuple[list[KernelGraph], dict[str, Any]]:
    if payload.get("structure_key") != key:
        raise SerializationError("entry belongs to another program")
    stats = dict(payload.get("stats", {}))
    stats["searched_seconds"] = dict(payload.get("seconds", {}))  # what the search cost when it ran
    return [KernelGraph.from_json(t) for t in payload["templates"]], stats


def _require_gpu(program: str, outcome: SearchOutcome) -> None:
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        count, why = 0, str(e)
    else:
        why = "no CUDA device"
    if count < 1:
        err = DeviceError(
            f"{program}: search and verification found {len(outcome.templates)} verified sGraphs; tuning them "
            f"needs an NVIDIA GPU with CuPy ({why})"
        )
        err.summary = outcome.to_json()  # type: ignore[attr-defined]
        raise err


def _tuned_key(graph: Graph, arch: str) -> str:
    return f"{graph.structure_hash()}-{arch}"


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
    scales: dict[str, float] | None = None,
    backend: Any = None,
) -> Any:
    """Search, verify, tune and compile ``graph``; return the fastest verified kernel as a callable.

    ``target`` is the architecture the code is generated for, like ``"sm_80"`` (default: the GPU at
    hand). The returned ``OptimizedGraph`` is callable on torch tensors / CuPy arrays and carries a
    ``summary`` dict (stage times, counts, best time, cache hits). Every kernel returned has passed
    a check against the float64 reference on fresh random inputs on the GPU. Raises DeviceError
    after verification when no GPU is present.
    """
    outcome = search_and_verify(graph, program=program, cache=cache, progress=progress)
    if not outcome.templates:
        raise PrismError(f"{program}: no verified sGraph was found ({outcome.stats})")
    from prism.tune.backends import CudaBackend
    from prism.tune.tuner import TOLERANCE, input_scales, random_inputs, tune

    if backend is None:  # tests pass the interpreter backend instead
        _require_gpu(program, outcome)
        backend = CudaBackend(target)
    arch = backend.arch()
    scales = scales if scales is not None else input_scales(graph)
    use_cache = cache and not settings().no_cache
    store = JsonCache("tuned", TUNE_CACHE_SCHEMA)
    key = _tuned_key(graph, arch)
    searched = outcome.stats.get("searched_seconds", outcome.seconds) if outcome.cached else outcome.seconds
    summary: dict[str, Any] = {
        "program": program,
        # once per program: when loaded from the cache, what the search cost when it ran
        "search_s": searched.get("search", 0.0),
        "verify_s": sum(searched.get(k, 0.0) for k in ("mapping", "screen", "verify")),
        "verified_sgraphs": len(outcome.templates),
        "search_cache_hit": outcome.cached,
        "search": outcome.to_json(),
    }
    hit = store.get(key, lambda p: (KernelGraph.from_json(p["kernel_graph"]), p)) if use_cache else None
    if hit is not None:
        kg, rec = hit
        t0 = time.perf_counter()
        kernel = backend.compile(kg)
        backend.setup(graph, random_inputs(graph, scales, seed))
        # never trust a cache blindly: check the kernel against the float64 reference again
        inputs = random_inputs(graph, scales, seed + 0xCAC4E)
        ref = graph.evaluate(inputs)
        out = backend.run(kernel, inputs)
        err = max(relative_error(out[t.name], ref[t.name]) for t in graph.outputs)
        if err < max(TOLERANCE.get(t.dtype, 2e-2) for t in graph.outputs):
            summary.update(rec["summary"])
            summary.update({"tune_cache_hit": True, "tune_s": time.perf_counter() - t0, "rel_err": err,
                            "search_cache_hit": outcome.cached})
            return Superoptimized(kernel, summary, kg)
        log.error("cached tuned kernel %s fails the reference check (rel. error %.3g): retuning", key, err)
    result = tune(graph, list(outcome.templates), samples=samples, seed=seed, time_budget=time_budget, arch=target,
                  backend=backend, scales=scales)
    distinct = {(r.template, tuple(sorted(r.sizes.items()))) for r in result.records if r.stage is None}
    summary.update({
        "tune_s": result.seconds.get("total", 0.0),
        "samples": result.counts.get("sampled"),
        "compiled": result.counts.get("timed"),
        "failed": sum(1 for r in result.records if r.stage in ("compile", "launch", "check")),
        "distinct_kernels": len(distinct),
        "best_us": result.time_us,
        "rel_err": result.rel_err,
        "arch": result.arch,
        "template": result.template_index,
        "sizes": result.sizes,
        "tune_cache_hit": False,
        "tuning": result.summary,
    })
    concrete = result.template.instantiate(result.sizes)
    if use_cache:
        store.put(key, {"kernel_graph": concrete.to_json(), "summary": {
            k: summary[k] for k in ("best_us", "samples", "compiled", "failed", "distinct_kernels", "arch", "sizes",
                                    "template")}})
    return Superoptimized(result.kernel, summary, concrete)


class Superoptimized:
    """What ``superoptimize`` returns: the compiled kernel (an ``OptimizedGraph``: call it on torch
    tensors or CuPy arrays, same signature) plus ``summary`` and the chosen ``kernel_graph``."""

    def __init__(self, kernel: Any, summary: dict[str, Any], kernel_graph: KernelGraph) -> None:
        self.kernel = kernel
        self.summary = summary
        self.kernel_graph = kernel_graph

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        return self.kernel(*args, out=out, **named) if out is not None else self.kernel(*args, **named)

    def __getattr__(self, name: str) -> Any:  # plan, inputs, outputs, ... of the OptimizedGraph
        return getattr(self.__dict__["kernel"], name)

    def __repr__(self) -> str:
        best = self.summary.get("best_us")
        shown = f"{best:.2f} µs" if isinstance(best, float) else "untimed"
        return f"Superoptimized({self.kernel!r}, {shown})"


def library_optimizer(samples: int = 48, seed: int = 0) -> Any:
    """An ``optimize(graph, entry, arch)`` for prism.library.build: superoptimize, then the sources."""
    from prism.library import Built, Entry

    def optimize(graph: Graph, entry: Entry, arch: str) -> Built:
        from prism import codegen

        kernel = superoptimize(graph, target=arch, samples=samples, seed=seed, program=entry.program,
                               progress=False, scales=entry.scales())
        plan = codegen.generate(kernel.kernel_graph, arch=arch)
        source = library_source(plan)
        return Built(kernel.kernel_graph, source, plan.to_json(), kernel.summary.get("best_us"), _gpu_name())

    return optimize


def library_source(plan: Any) -> str:
    """All custom kernels of a plan in one translation unit: each in its own namespace so their
    preludes do not collide (the ``extern "C"`` entry points keep their names)."""
    if len(plan.kernels) == 1:
        return str(plan.kernels[0].source)
    return "\n".join(f"namespace prism_{i} {{\n{k.source}\n}}  // namespace prism_{i}\n"
                     for i, k in enumerate(plan.kernels))


def _gpu_name() -> str:
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return "unknown GPU"
