"""The tuning stage: the draw (``prism.tune.draw``) → parallel compile → profile → refinement → checked winner.

    result = tune(graph, templates, samples=64, seed=0)
    result.kernel(*tensors)      # the fastest sample that passed the reference check
    result.summary               # counts, times, the best template and sizes

A sample that fails to compile or launch is recorded with its error and counts as infinitely
slow. The fastest sample is run on fresh random inputs (outputs poisoned with NaN) and compared with
the float64 reference; if it fails, that is logged as a bug and the next fastest is checked.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import os
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from prism.codegen.sizes import candidate_values, is_legal
from prism.errors import CompileError, TuningError
from prism.graph import Graph, OpKind
from prism.ir import KernelGraph
from prism.ops import Binary
from prism.options import check_tuning
from prism.reference import evaluate, relative_error, round_to_dtype
from prism.tune.backends import Backend, CudaBackend
from prism.tune.draw import draw_samples, legal_sizes_of, structure_class
from prism.tune.sampler import Sample
from prism.tune.stress import TARGET as STRESS_TARGET
from prism.tune.stress import masked_inputs, stress_inputs
from prism.tune.tolerance import bound_for, tolerance

log = logging.getLogger(__name__)

TIMING_SEED_OFFSET = 0x7153
CHECK_SEED_OFFSET = 0xC0FFEE


class Stage(enum.Enum):
    """Where a sampled size assignment failed (or was skipped)."""

    COMPILE = "compile"
    LAUNCH = "launch"  # compiled, but the launch (timing) raised
    CHECK = "check"  # ran, but its outputs fail the reference check
    SKIPPED = "skipped"  # the time budget was spent before it was compiled


@dataclass(frozen=True)
class SampleRecord:
    """One sampled (template, sizes): its time in µs (inf when it failed) and why it failed."""

    index: int  # position in the sample
    template: int
    sizes: dict[str, int]
    time_us: float = math.inf
    error: str | None = None
    stage: Stage | None = None  # None: timed and checked
    compile_s: float = 0.0
    rel_err: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "template": self.template, "sizes": self.sizes,
                "time_us": None if math.isinf(self.time_us) else self.time_us, "error": self.error,
                "stage": None if self.stage is None else self.stage.value, "compile_s": self.compile_s,
                "rel_err": self.rel_err}


@dataclass(frozen=True)
class TuneResult:
    template_index: int
    template: KernelGraph
    sizes: dict[str, int]
    time_us: float
    rel_err: float
    arch: str
    records: tuple[SampleRecord, ...]
    # legal size assignments found per template: all of them, or, with more templates than samples,
    # one of each drawn template and all of the templates the refinement enumerated
    legal: tuple[int, ...]
    check_failures: tuple[SampleRecord, ...]
    seconds: dict[str, float]
    kernel: Any = field(default=None, compare=False, repr=False)

    @property
    def counts(self) -> dict[str, int]:
        stages = [r.stage for r in self.records]
        return {
            "templates": len(self.legal),
            "legal": sum(self.legal),
            "sampled": len(self.records),
            "compiled": sum(s not in (Stage.COMPILE, Stage.SKIPPED) for s in stages),
            "timed": sum(s in (None, Stage.CHECK) for s in stages),
            "failed": sum(s in (Stage.COMPILE, Stage.LAUNCH) for s in stages),
            "skipped": stages.count(Stage.SKIPPED),
            "check_failures": len(self.check_failures),
        }

    @property
    def timed(self) -> tuple[SampleRecord, ...]:
        """The samples that were timed and not rejected by the check, in sample order."""
        return tuple(r for r in self.records if r.stage is None and math.isfinite(r.time_us))

    @property
    def summary(self) -> dict[str, Any]:
        return {"arch": self.arch, "best_us": self.time_us, "rel_err": self.rel_err,
                "template": self.template_index, "sizes": self.sizes, **self.counts,
                "seconds": dict(self.seconds)}


def default_scales(graph: Graph) -> dict[str, float]:
    """The documented default spread of tuning inputs: N(0, 1) for every input, except that an input
    used (directly or through a transpose) as the right operand of a matmul is N(0, 1/K), K its
    contraction length, as weights are initialised, so products and logits stay O(1) — unless the
    left operand is a ratio (attention probabilities times V: V stays N(0, 1))."""
    nodes = graph.nodes
    out: dict[str, float] = {}
    for n in nodes:
        if n.kind is not OpKind.MATMUL:
            continue
        lhs, rhs = n.args
        if nodes[lhs].kind is OpKind.BINARY and nodes[lhs].fn is Binary.DIV:
            continue  # a ratio (softmax-like probabilities) on the left: its rows already sum to O(1)
        if nodes[rhs].kind is OpKind.TRANSPOSE:
            rhs = nodes[rhs].args[0]
        if nodes[rhs].kind is OpKind.INPUT:
            out[nodes[rhs].name or ""] = nodes[n.args[0]].shape[-1] ** -0.5
    return out


def input_scales(graph: Graph) -> dict[str, float]:
    """Alias of ``default_scales`` (the product never matches benchmark programs)."""
    return default_scales(graph)


def random_inputs(graph: Graph, scales: Mapping[str, float], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: round_to_dtype(rng.standard_normal(t.shape) * scales.get(t.name, 1.0), t.dtype)
            for t in graph.inputs}


def reference_error(backend: Any, kernel: Any, graph: Graph, inputs: Mapping[str, np.ndarray],
                    ref: Mapping[str, np.ndarray] | None = None) -> float:
    """The largest relative error of one call of ``kernel`` (through ``backend.run``) against the float64
    reference on ``inputs`` (``ref`` when the caller has it), over the outputs; raises what the call raises."""
    ref = evaluate(graph, inputs) if ref is None else ref
    out = backend.run(kernel, dict(inputs))
    return max(relative_error(out[t.name], ref[t.name]) for t in graph.outputs)


def _check(backend: Backend, kernel: Any, graph: Graph, inputs: Mapping[str, np.ndarray]) -> tuple[float, str | None]:
    """The kernel's relative error against the float64 reference on ``inputs`` (inf and the error
    text when it does not run)."""
    try:
        return reference_error(backend, kernel, graph, inputs), None
    except Exception as e:
        return math.inf, _error(e)


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".splitlines()[0][:500]


# CUDA errors after which a context cannot be used again (every later call fails the same way)
STICKY_ERRORS = ("misaligned address", "illegal memory access", "illegal address", "unspecified launch failure",
                 "illegal instruction", "hardware stack error")


def _poisons_context(e: BaseException) -> bool:
    text = str(e).lower()
    return any(m in text for m in STICKY_ERRORS)


def _by_time(records: Mapping[int, SampleRecord]) -> list[SampleRecord]:
    """The samples with a finite time, fastest first (ties: the earlier sample)."""
    timed = [r for r in records.values() if r.time_us is not None and math.isfinite(r.time_us)]
    return sorted(timed, key=lambda r: (r.time_us, r.index))


def _timed_best(records: Mapping[int, SampleRecord]) -> dict[int, float]:
    """The best time of each template among the timed samples."""
    best: dict[int, float] = {}
    for r in _by_time(records):
        best.setdefault(r.template, cast(float, r.time_us))
    return best


NEIGHBOUR_TRIES = 4  # values tried on each side of a symbol for a legal neighbour


def _neighbours(template: KernelGraph, at: Sample, legal: Callable[[dict[str, int]], bool]) -> list[Sample]:
    """The legal sizes of ``at``'s template one step away from it: for each symbol, the nearest
    smaller and the nearest larger candidate value (``candidate_values``, at most ``NEIGHBOUR_TRIES``
    tried each way) that is legal with every other symbol unchanged."""
    here, values = at.size_map, candidate_values(template)
    out = []
    for sym, v in here.items():
        for side in ([x for x in reversed(values) if x < v], [x for x in values if x > v]):
            found = next((sz for x in side[:NEIGHBOUR_TRIES] if legal(sz := {**here, sym: x})), None)
            if found is not None:
                out.append(Sample(at.template, tuple(found.items())))
    return out


def _fastest(records: Mapping[int, SampleRecord], chosen: Sequence[Sample]) -> Sample | None:
    timed = _by_time(records)
    return chosen[timed[0].index] if timed else None


WALK_CLASSES = 2  # structure classes whose fastest sized sample starts a neighbour walk


def _walk_starts(prof: _Profiler) -> list[Sample]:
    """The fastest timed sample with sizes of each of the ``WALK_CLASSES`` fastest structure classes
    (``structure_class``), fastest first: the first round judged each class by one size or a few, so
    a runner-up class may be one step from beating the winner. Not always the second: a d=4096 GEMV's
    one-kernel column split took 14.4 µs at the prior's 8 iterations (10.6-11.1 at 16) and its class
    ranked third behind the winning 2-D plan's 12.1 (H200, docs/off-the-suite.md)."""
    starts: dict[tuple[int, tuple[int, ...], int], Sample] = {}
    for r in _by_time(prof.records):
        if prof.chosen[r.index].sizes:
            starts.setdefault(structure_class(prof.templates[r.template]), prof.chosen[r.index])
    return list(starts.values())[:WALK_CLASSES]


class _Refiner:
    """The refinement's state: the samples taken so far and how many more may be timed."""

    def __init__(self, prof: _Profiler, count: int) -> None:
        self.prof, self.left = prof, max(count, 0)
        self.taken = {(s.template, s.sizes) for s in prof.chosen}

    def new(self, samples: Sequence[Sample]) -> list[Sample]:
        return [s for s in samples if (s.template, s.sizes) not in self.taken]

    def run(self, batch: Sequence[Sample]) -> None:
        chosen = self.prof.chosen
        start = len(chosen)
        chosen.extend(batch)
        self.taken.update((s.template, s.sizes) for s in batch)
        self.left -= len(batch)
        self.prof.run([(start + i, s) for i, s in enumerate(batch)])

    def walk(self, legal: Callable[[int, dict[str, int]], bool], keep: int) -> None:
        """Greedy walks to neighbouring sizes (``_neighbours``) from ``_walk_starts``, a round of each
        in turn, a walk going on while its round finds a faster one for it and more than ``keep`` of
        the count is left."""
        prof, walks = self.prof, _walk_starts(self.prof)
        while walks and self.left > keep and not prof.over_budget():
            best = walks.pop(0)
            near = _neighbours(prof.templates[best.template], best, functools.partial(legal, best.template))
            batch = self.new(near)[:self.left - keep]
            if not batch:
                continue
            self.run(batch)
            mine = {i: r for i, r in prof.records.items() if r.template == best.template}
            new = _fastest(mine, prof.chosen)
            if new is not None and new != best:
                walks.append(new)  # this walk goes on after the others' next round


def _refine(prof: _Profiler, sizes_of: Callable[[int], Sequence[Mapping[str, int]]], count: int, seed: int,
            legal: Callable[[int, dict[str, int]], bool]) -> None:
    """Up to ``count`` more samples: first the neighbour walks of ``_Refiner.walk`` while half the
    count is left; then uniform draws from the legal sizes (``sizes_of``) of the three fastest
    templates (a local search where the first round found the good templates)."""
    ref = _Refiner(prof, count)
    ref.walk(legal, count // 2)
    if ref.left <= 0 or prof.over_budget():
        return
    fastest = _timed_best(prof.records)
    top = sorted(fastest, key=lambda t: (fastest[t], t))[:3]
    pairs = ref.new([Sample(t, tuple(sz.items())) for t in top for sz in sizes_of(t)])
    picks = random.Random(seed + 1).sample(pairs, min(ref.left, len(pairs)))
    if picks:
        ref.run(picks)


def tune(
    graph: Graph,
    templates: Sequence[KernelGraph],
    *,
    samples: int = 64,
    seed: int = 0,
    time_budget: float | None = None,
    arch: str | None = None,
    jobs: int | None = None,
    backend: Backend | None = None,
    scales: Mapping[str, float] | None = None,
    inputs: Callable[[int], Mapping[str, np.ndarray]] | None = None,
    max_legal_per_template: int | None = 100_000,
    refine: int | None = None,
    always: Collection[int] = (),
) -> TuneResult:
    """Tune ``templates`` (sGraphs with symbolic sizes, shapes of ``graph``) and return the checked winner.

    ``samples`` (template, sizes) pairs are drawn (``prism.tune.draw``): with no more templates than samples,
    the prior-best size of up to half the samples' templates, the rest uniformly from all other legal
    pairs; with more templates than samples, templates round-robin over structural
    classes, one prior-picked size each. Then ``refine`` more (default ``samples // 2``): neighbour
    walks from the fastest sample of the fastest structural classes, then uniform draws from the
    legal sizes of the three fastest templates (``_refine``).

    ``time_budget`` (seconds, whole call) stops new compiles and timings once at least one sample
    has a time; the rest are recorded as skipped. ``jobs`` compile threads (default: CPU count).
    ``inputs(seed)`` draws fresh inputs (default: ``random_inputs`` with ``scales``, whose default
    is ``default_scales``). Templates with no symbolic size (predefined or stitched plans) and the
    templates at the indices in ``always`` are always timed, on top of the samples.
    """
    t_start = time.perf_counter()
    check_tuning("tune", samples=samples, seed=seed, time_budget=time_budget, target=arch)
    backend = backend if backend is not None else CudaBackend(arch)
    arch = arch or backend.arch()
    sd = dict(scales) if scales is not None else default_scales(graph)
    draw = inputs if inputs is not None else (lambda seed: random_inputs(graph, sd, seed))
    if not templates:
        raise TuningError("no templates to tune")
    space, chosen = draw_samples(graph, templates, samples, seed, arch, backend.resources(), max_legal_per_template, jobs,
                          always)
    t_enum = time.perf_counter()
    log.info("tuning: %d templates, %d legal size assignments found, %d samples on %s",
             len(templates), sum(len(s) for s in space), len(chosen), arch)

    # 3. compile in parallel, profile each as it comes (GPU work stays on this thread)
    backend.setup(graph, dict(draw(seed + TIMING_SEED_OFFSET)))
    prof = _Profiler(backend, templates, chosen, None if time_budget is None else t_start + time_budget, jobs)
    prof.run(list(enumerate(chosen)))
    res = backend.resources()

    def legal(t: int, sizes: dict[str, int]) -> bool:
        return is_legal(templates[t].instantiate(sizes), arch, resources=res)

    def sizes_of(t: int) -> list[dict[str, int]]:  # the first round may have drawn only one
        if len(templates) > samples and templates[t].symbols:
            space[t] = legal_sizes_of(templates[t], arch, res, max_legal_per_template)
        return space[t]

    _refine(prof, sizes_of, refine if refine is not None else samples // 2, seed, legal)
    for n, s in enumerate(chosen):  # futures cancelled by the budget never reached the loop
        prof.records.setdefault(n, SampleRecord(n, s.template, s.size_map, error="time budget spent",
                                                stage=Stage.SKIPPED))
    t_prof = time.perf_counter()
    n, err, failures = _first_checked(graph, backend, prof, lambda attempt: dict(draw(seed + CHECK_SEED_OFFSET + attempt)))
    rec = prof.records[n]
    seconds = {"enumerate": t_enum - t_start, "compile": prof.compile_s, "profile": prof.profile_s,
               "check": time.perf_counter() - t_prof, "total": time.perf_counter() - t_start}
    log.info("tuning: best %.2f µs, template %d, sizes %s (rel. error %.1e); %d/%d samples timed in %.1f s "
             "(%s; budget %s)", rec.time_us, rec.template, rec.sizes, err, len(prof.kernels), len(chosen),
             seconds["total"], ", ".join(f"{k} {v:.1f}" for k, v in seconds.items() if k != "total"),
             "none" if time_budget is None else f"{time_budget:.1f} s")
    return TuneResult(rec.template, templates[rec.template], rec.sizes, rec.time_us, err, arch,
                      tuple(prof.records[i] for i in range(len(chosen))), tuple(len(s) for s in space),
                      tuple(failures), seconds, prof.kernels[n])


class _Profiler:
    """Compiles samples on worker threads and times each on this thread as it comes: ``records``
    per sample index, ``kernels`` of those timed; stops at the deadline once something is timed."""

    def __init__(self, backend: Backend, templates: Sequence[KernelGraph], chosen: list[Sample],
                 deadline: float | None, jobs: int | None) -> None:
        self.backend, self.templates, self.chosen = backend, templates, chosen
        self.deadline, self.jobs = deadline, jobs
        self.records: dict[int, SampleRecord] = {}
        self.kernels: dict[int, Any] = {}
        self.compile_s = self.profile_s = 0.0
        self.rejected: set[int] = set()  # templates whose generated source a compiler rejected

    def build(self, s: Sample) -> tuple[Any, float]:
        t0 = time.perf_counter()
        return self.backend.compile(self.templates[s.template].instantiate(s.size_map)), time.perf_counter() - t0

    def over_budget(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline and bool(self.kernels)

    def run(self, batch: list[tuple[int, Sample]]) -> None:
        with ThreadPoolExecutor(max_workers=self.jobs or os.cpu_count() or 1) as pool:
            futures: dict[Future[tuple[Any, float]], int] = {pool.submit(self.build, s): n for n, s in batch}
            for fut in as_completed(futures):
                if self.over_budget():
                    # cancel what has not started and stop waiting: a future cancelled through
                    # shutdown(cancel_futures=True) never notifies as_completed (it would hang)
                    for f in futures:
                        f.cancel()
                    break
                try:
                    self.time(futures[fut], fut)
                except TuningError:
                    for f in futures:
                        f.cancel()
                    raise

    def time(self, n: int, fut: Future[tuple[Any, float]]) -> None:
        """Record sample ``n``: compiled by ``fut``, then timed (inf and why, when either fails)."""
        s = self.chosen[n]
        try:
            kernel, c_s = fut.result()
        except Exception as e:  # a sample that does not compile is infinitely slow
            if isinstance(e, CompileError) and s.template not in self.rejected:
                # a source the compiler rejects is a code generator bug, not a slow plan: say so once
                self.rejected.add(s.template)
                log.warning("template %d at %s: the compiler rejected its generated source (a code generator "
                            "bug; its samples are left out): %s", s.template, s.size_map, str(e)[:300])
            log.debug("sample %d (template %d, %s) does not compile: %s", n, s.template, s.size_map, e)
            self.records[n] = SampleRecord(n, s.template, s.size_map, error=_error(e), stage=Stage.COMPILE)
            return
        self.compile_s += c_s
        t0 = time.perf_counter()
        try:
            us = float(self.backend.time_us(kernel))
            if not us > 0 or math.isnan(us):
                raise RuntimeError(f"timer returned {us}")
        except Exception as e:  # nor does one that fails to launch
            if _poisons_context(e):
                raise TuningError(
                    f"sample {n} (template {s.template}, sizes {s.size_map}) faulted on the GPU ({_error(e)}); "
                    "the CUDA context of this process is unusable now, so tuning stops here: this is a bug "
                    "in the generated kernel, please report it with the template") from e
            log.debug("sample %d (template %d, %s) fails to launch: %s", n, s.template, s.size_map, e)
            self.records[n] = SampleRecord(n, s.template, s.size_map, error=_error(e), stage=Stage.LAUNCH,
                                           compile_s=c_s)
            return
        finally:
            self.profile_s += time.perf_counter() - t0
        self.records[n] = SampleRecord(n, s.template, s.size_map, us, compile_s=c_s)
        self.kernels[n] = kernel
        log.debug("sample %d (template %d, %s): %.2f us", n, s.template, s.size_map, us)


def _stressed_check(graph: Graph, backend: Backend, kernel: Any, fresh: dict[str, np.ndarray], err: float,
                    s_tol: float) -> tuple[float, str | None]:
    """A kernel that passed on ``fresh`` inputs, checked where the program has a max on large logits
    (a safe softmax must hold) and on logits masked with −inf (a masked chunk must add nothing): the
    error and problem of the first that fails, else ``err`` and None (``prism.tune.stress``)."""
    if (stressed := stress_inputs(graph, fresh)) is not None:
        s_err, s_problem = _check(backend, kernel, graph, stressed)
        if s_problem is not None or not s_err < s_tol:
            return s_err, s_problem or f"relative error {s_err:.3g} ≥ {s_tol:g} on inputs whose max operands reach " \
                f"±{STRESS_TARGET:g}"
    if (masked := masked_inputs(graph, fresh)) is not None:
        m_err, m_problem = _check(backend, kernel, graph, masked)
        if m_problem is not None or not m_err < bound_for(graph, m_err, masked):
            return m_err, m_problem or f"relative error {m_err:.3g} on inputs masked with -inf"
    return err, None


def _first_checked(graph: Graph, backend: Backend, prof: _Profiler,
                   fresh_inputs: Callable[[int], dict[str, np.ndarray]]) -> tuple[int, float, list[SampleRecord]]:
    """4. the fastest timed sample that passes the reference check on fresh inputs (and on stressed
    ones where the program has a max): its index, its error and the samples that failed before it."""
    records = prof.records
    ranked = sorted(prof.kernels, key=lambda n: (records[n].time_us, n))
    failures: list[SampleRecord] = []
    s_tol = tolerance(graph, stressed=True)
    for attempt, n in enumerate(ranked):
        rec = records[n]
        fresh = fresh_inputs(attempt)
        err, problem = _check(backend, prof.kernels[n], graph, fresh)
        tol = bound_for(graph, err, fresh)
        if problem is None and err < tol:
            err, problem = _stressed_check(graph, backend, prof.kernels[n], fresh, err, s_tol)
        if problem is None and err < tol:
            records[n] = SampleRecord(rec.index, rec.template, rec.sizes, rec.time_us, compile_s=rec.compile_s,
                                      rel_err=err)
            return n, err, failures
        why = problem or f"relative error {err:.3g} ≥ {tol:g} against the float64 reference"
        log.error("BUG: a verified kernel fails the reference check on the GPU: template %d, sizes %s: %s",
                  rec.template, rec.sizes, why)
        bad = SampleRecord(rec.index, rec.template, rec.sizes, math.inf, why, Stage.CHECK, rec.compile_s,
                           None if math.isinf(err) else err)
        records[n] = bad
        failures.append(bad)
    counts = {"sampled": len(prof.chosen), "timed": len(prof.kernels), "check failures": len(failures)}
    first = next((r.error for r in records.values() if r.error), None)
    raise TuningError(f"{graph!r}: no sample compiled, ran and passed the reference check ({counts}); "
                      f"first error: {first}")
