"""The tuning stage: legal sizes → uniform sample → parallel compile → profile → checked winner.

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
import gc
import logging
import math
import multiprocessing
import os
import pickle
import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from prism.codegen.arch import arch as get_arch
from prism.codegen.resources import resources as codegen_resources
from prism.codegen.sizes import candidate_values, drawn_sizes, is_legal, iter_legal, prior_ascent, size_score
from prism.errors import CompileError, TuningError
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph
from prism.ops import Binary
from prism.options import check_tuning
from prism.reference import evaluate, relative_error, round_to_dtype
from prism.tune.backends import Backend, CudaBackend
from prism.tune.sampler import Sample, sample
from prism.tune.stress import TARGET as STRESS_TARGET
from prism.tune.stress import stress_inputs
from prism.tune.tolerance import tolerance

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


def reference_error(backend: Any, kernel: Any, graph: Graph, inputs: Mapping[str, np.ndarray]) -> float:
    """The largest relative error of one call of ``kernel`` (through ``backend.run``) against the float64
    reference on ``inputs``, over the outputs; raises what the call raises."""
    ref = evaluate(graph, inputs)
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


# A template whose candidate size assignments (values ** symbols) exceed this is not enumerated:
# ``SIZES_PER_TEMPLATE`` legal sizes are drawn by random descents instead (a captured layer's GEMV
# parts have 4 symbols over ~30 divisors of 5632: enumerating 16 drawn templates took 16-74 s of a
# 2-core machine, the whole tuning budget, before any compile). The neighbour walk of the refinement
# then checks sizes next to the fastest one directly (``_neighbours``).
FULL_ENUMERATION = 20_000
SIZES_PER_TEMPLATE = 48


def _drawn(template: KernelGraph, arch: str, resources: Any, count: int) -> list[dict[str, int]]:
    """Up to ``count`` legal sizes (``drawn_sizes``) within ``4 * SIZES_PER_TEMPLATE`` checks."""
    return drawn_sizes(template, arch, resources, count, max_checks=4 * SIZES_PER_TEMPLATE)


def _drawn_not_enumerated(template: KernelGraph) -> bool:
    """Whether ``_legal`` draws the template's sizes (more than ``FULL_ENUMERATION`` candidate assignments)."""
    return len(candidate_values(template)) ** len(template.symbols) > FULL_ENUMERATION


def _legal(template: KernelGraph, arch: str, resources: Any, cap: int | None) -> list[dict[str, int]]:
    """The legal sizes of ``template`` (all of them, at most ``cap``; past ``FULL_ENUMERATION``
    candidate assignments ``SIZES_PER_TEMPLATE`` drawn, and before them the end of the prior's
    ascent from the best drawn, ``prior_ascent``), the best by the static prior first (``_prior_first``)."""
    values = candidate_values(template)
    if _drawn_not_enumerated(template):
        drawn = _drawn(template, arch, resources, SIZES_PER_TEMPLATE)
        ranked = _prior_first(template, [(sz, None) for sz in drawn], arch, resources)
        if not ranked or resources is not codegen_resources:
            return ranked
        top = prior_ascent(template, ranked[0], arch)
        return [top, *(sz for sz in ranked if sz != top)]
    legal: list[tuple[dict[str, int], Any]] = []
    for sizes, use in iter_legal(template, arch=arch, resources=resources, values=values):
        legal.append((sizes, use))
        if cap is not None and len(legal) >= cap:
            log.warning("a template has more than %d legal sizes; enumeration truncated", cap)
            break
    return _prior_first(template, legal, arch, resources)


def _prior_first(template: KernelGraph, legal: Sequence[tuple[dict[str, int], Any]], arch: str,
                 resources: Any) -> list[dict[str, int]]:
    """The sizes of ``legal`` (with their footprints, or None to lower again), best by ``size_score``
    first when the resources function is the code generator's (else in order; equal scores keep their
    order): the first judges the template in the first round (``_first_round``), the first
    ``BUILT_TOP`` of a plan built by rule are timed (``_fixed_samples``)."""
    sizes = [sz for sz, _ in legal]
    if len(sizes) <= 1 or resources is not codegen_resources:
        return sizes
    sms = get_arch(arch).sms
    scores = [size_score(use if use is not None else codegen_resources(template.instantiate(sz), arch), sms)
              for sz, use in legal]
    return [sizes[i] for i in sorted(range(len(sizes)), key=lambda i: (-scores[i], i))]


# the prior's best sizes of a plan built by rule that are timed. Near-equal scores are no ranking: a decode
# LoRA split-K plan's best two (x = 128, s = 1 and x = 64, s = 2, 0.05 apart) ran 16.3 and 14.8 µs
# (H200; docs/off-the-suite.md, "Split attention tiles without pads"). A template whose sizes are drawn
# (``_drawn_not_enumerated``) times one more: the prior's ascent end
# (``prior_ascent``) beside the two best drawn, which hedge the prior's errors (a decode masked
# attention's split plan: 8.15 µs at a size next to its drawn second, 8.83 with the ascent end and the
# drawn best alone; docs/off-the-suite.md, "The prior climbs from the drawn sizes")
BUILT_TOP = 2
FIRST_ROUND_DRAWS = 8  # legal sizes drawn per template in the first round; the best by ``size_score`` is timed


def _one_legal(template: KernelGraph, arch: str, resources: Any, cap: int | None) -> list[dict[str, int]]:
    """One legal size assignment of ``template`` (none when it has none): of ``FIRST_ROUND_DRAWS``
    random descents (``sample_legal_sizes``, seeded by the template), the best by the static prior
    ``size_score`` when the resources function is the code generator's (else the first). What the
    first round of a many-template tuning times: one sample of a template, which judges the template,
    so not a size that leaves most SMs idle (8 blocks of a GEMV part: 73 µs against 10 for its
    template's best, H200). It lowers a few assignments, not all of them (``_legal``: 13-15 s of a
    2-core machine for the 24 templates drawn from a captured GEMV part's 1,404); ``_refine``
    enumerates the fastest templates' sizes."""
    drawn = _drawn(template, arch, resources, FIRST_ROUND_DRAWS)
    return _prior_first(template, [(sz, None) for sz in drawn], arch, resources)[:1]


def _legal_space(templates: Sequence[KernelGraph], arch: str, resources: Any, cap: int | None,
                 jobs: int | None, legal: Callable[..., list[dict[str, int]]] = _legal) -> list[list[dict[str, int]]]:
    """``legal`` (the legal sizes, or ``_one_legal``) of every template; in worker processes when
    there are many templates (the enumeration lowers each size assignment it checks, in pure Python)."""
    workers = min(jobs or os.cpu_count() or 1, len(templates))
    if workers > 1 and len(templates) >= 8 and "fork" in multiprocessing.get_all_start_methods():
        try:
            pickle.dumps(resources)
        except Exception:  # a local function (tests): enumerate here
            pass
        else:
            ctx = multiprocessing.get_context("fork")
            # garbage (CUDA events held by a caught exception's frames) is freed here: in a forked child
            # its finalizers call a CUDA runtime the child cannot use, and print an error each
            gc.collect()
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                futs = [pool.submit(legal, t, arch, resources, cap) for t in templates]
                return [f.result() for f in futs]
    return [legal(t, arch, resources, cap) for t in templates]


def _sample_templates_first(templates: Sequence[KernelGraph], samples: int, seed: int, arch: str, resources: Any,
                            cap: int | None, jobs: int | None) -> tuple[list[list[dict[str, int]]], list[Sample]]:
    """More templates than samples: draw templates without replacement, round-robin over their
    structural classes (``_structure_class``: custom kernels, grid ranks, predefined kernels; a search can verify hundreds of
    split-K variants beside a handful of one-kernel plans, and a uniform draw would rarely time the
    latter), uniformly within each; then one legal size assignment of each (``_one_legal``; a
    template with none is replaced by the next draw). ``space`` holds that one assignment of each
    drawn template and nothing for the others: ``_refine`` enumerates the fastest templates' sizes."""
    rng = random.Random(seed)
    order = _round_robin(templates, rng)
    space: list[list[dict[str, int]]] = [[] for _ in templates]
    picked: list[int] = []
    pos = 0
    while len(picked) < samples and pos < len(order):
        batch = order[pos:pos + samples - len(picked)]
        pos += len(batch)
        drawn = _legal_space([templates[t] for t in batch], arch, resources, cap, jobs, _one_legal)
        for t, legal in zip(batch, drawn, strict=True):
            space[t] = legal
            if legal:
                picked.append(t)
    return space, [Sample(t, tuple(space[t][0].items())) for t in picked]


def _first_round(templates: Sequence[KernelGraph], space: list[list[dict[str, int]]], samples: int,
                 seed: int) -> list[Sample]:
    """No more templates than samples, every template's sizes enumerated (``space``, each list's
    prior best first): the prior best of up to half the samples' templates (round-robin over the
    structural classes, ``_round_robin``), the rest drawn uniformly from all the other pairs. A
    uniform draw alone judges a template by whatever size it hits: for a d=4096 GEMV (58 templates,
    4,194 legal sizes on the H200) it timed the one-kernel column split once, at 32 blocks (19.4 µs),
    and never at 128 (10.6-11.1 µs; docs/codegen.md)."""
    order = [t for t in _round_robin(templates, random.Random(seed)) if space[t]]
    firsts = order[:max(1, samples // 2)] if samples else []
    taken = set(firsts)
    rest = [s[1:] if t in taken else s for t, s in enumerate(space)]
    drawn = sample(rest, samples - len(firsts), seed)
    return [*(Sample(t, tuple(space[t][0].items())) for t in firsts), *drawn]


def _structure_class(kg: KernelGraph) -> tuple[int, tuple[int, ...], int]:
    """Custom kernels, the grid rank of each, and the predefined kernels: the shape of a plan before
    its sizes (a norm kernel before a vendor GEMM is not one more one-kernel plan among hundreds)."""
    ranks = tuple(len(k.grid) for k in kg.kernels if isinstance(k, CustomKernel))
    return len(ranks), ranks, len(kg.kernels) - len(ranks)


def _round_robin(templates: Sequence[KernelGraph], rng: random.Random) -> list[int]:
    """Template indices: each class shuffled, then one of each class in turn (fewest kernels first)."""
    classes: dict[tuple[int, tuple[int, ...], int], list[int]] = {}
    for t, kg in enumerate(templates):
        classes.setdefault(_structure_class(kg), []).append(t)
    queues = [rng.sample(ts, len(ts)) for _, ts in sorted(classes.items())]
    order: list[int] = []
    for depth in range(max(len(q) for q in queues)):
        order += [q[depth] for q in queues if depth < len(q)]
    return order


def _fixed_samples(templates: Sequence[KernelGraph], space: list[list[dict[str, int]]], chosen: Sequence[Sample],
                   arch: str, resources: Any, always: Collection[int]) -> list[Sample]:
    """A sample for every size-free template (predefined or stitched plan) not drawn already, and
    for every template in ``always`` (a plan built by rule) its ``BUILT_TOP`` best sizes by the prior
    not drawn already: the plan made of predefined kernels is always timed, so the winner is never
    slower than it. The sizes of a template in ``always`` are enumerated (``_legal``: they are few
    templates) rather than drawn as a many-template first round draws them; ``space`` keeps them for
    ``_refine``."""
    drawn = set(chosen)
    extra = []
    for t, tpl in enumerate(templates):
        if tpl.symbols and t not in always:
            continue
        space[t] = space[t] or _legal(tpl, arch, resources, None)  # (``_draw`` enumerated the drawn ones)
        top = BUILT_TOP + _drawn_not_enumerated(tpl)  # drawn: the prior's ascent end and the two best drawn
        picks = [*space[t][:top], *_other_launches(tpl, space[t], arch, resources)]  # a size-free one: one
        for smp in (Sample(t, tuple(sz.items())) for sz in picks):
            if smp not in drawn:
                drawn.add(smp)
                extra.append(smp)
    return extra


LAUNCH_SCAN = 32  # the prior's best sizes of a plan built by rule searched for another launch count


def _other_launches(template: KernelGraph, ordered: Sequence[dict[str, int]], arch: str,
                    resources: Any) -> list[dict[str, int]]:
    """Of a plan built by rule (its sizes ``ordered`` by the prior), the prior's best size of each
    launch count its ``BUILT_TOP`` best lack, among the first ``LAUNCH_SCAN``: a split fused with its
    combine where its combine grid is small (one launch), launched apart where not (two). The prior
    charges a launch, so its best sizes can all be fused ones, yet a split can be faster apart: one of
    a decode LoRA GEMV's built plans ran 14.79 µs launched apart (x = 64, s = 2) and 15.39 fused
    (x = 32, s = 4; H200, docs/off-the-suite.md, "The prior counts launches"); it keeps one sample of
    the other kind."""
    customs = sum(isinstance(k, CustomKernel) for k in template.kernels)
    if resources is not codegen_resources or len(ordered) <= BUILT_TOP or customs < 2:
        return []  # (one custom kernel: one launch at every size)

    def launches(sz: dict[str, int]) -> int:
        return codegen_resources(template.instantiate(sz), arch).launches

    seen = {launches(sz) for sz in ordered[:BUILT_TOP]}
    out = []
    for sz in ordered[BUILT_TOP:LAUNCH_SCAN]:
        if len(seen) == 2:  # fused or not: the only two counts a plan has
            break
        if (n := launches(sz)) not in seen:
            seen.add(n)
            out.append(sz)
    return out


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
    (``_structure_class``), fastest first: the first round judged each class by one size or a few, so
    a runner-up class may be one step from beating the winner. Not always the second: a d=4096 GEMV's
    one-kernel column split took 14.4 µs at the prior's 8 iterations (10.6-11.1 at 16) and its class
    ranked third behind the winning 2-D plan's 12.1 (H200, docs/off-the-suite.md)."""
    starts: dict[tuple[int, tuple[int, ...], int], Sample] = {}
    for r in _by_time(prof.records):
        if prof.chosen[r.index].sizes:
            starts.setdefault(_structure_class(prof.templates[r.template]), prof.chosen[r.index])
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

    ``samples`` (template, sizes) pairs are drawn (``_draw``): with no more templates than samples,
    the prior-best size of up to half the samples' templates, the rest uniformly from all other legal
    pairs (``_first_round``); with more templates than samples, templates round-robin over structural
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
    space, chosen = _draw(graph, templates, samples, seed, arch, backend.resources(), max_legal_per_template, jobs,
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
            space[t] = _legal(templates[t], arch, res, max_legal_per_template)
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


def _draw(graph: Graph, templates: Sequence[KernelGraph], samples: int, seed: int, arch: str, resources: Any,
          max_legal: int | None, jobs: int | None,
          always: Collection[int] = ()) -> tuple[list[list[dict[str, int]]], list[Sample]]:
    """1. the legal sizes of every template, 2. the sample (plus every size-free template and ``always``)."""
    if len(templates) <= samples:
        space = _legal_space(templates, arch, resources, max_legal, jobs)
        found = any(space)
        chosen = _first_round(templates, space, samples, seed)
    else:
        space, chosen = _sample_templates_first(templates, samples, seed, arch, resources, max_legal, jobs)
        found = bool(chosen)
    if not found:
        raise TuningError(f"{graph!r}: no template has a legal size assignment on {arch}")
    for n, smp in enumerate(chosen):  # a plan built by rule, drawn in a many-template first round
        if smp.template in always and len(templates) > samples and templates[smp.template].symbols:
            space[smp.template] = _legal(templates[smp.template], arch, resources, max_legal)
            chosen[n] = Sample(smp.template, tuple(space[smp.template][0].items()))
    chosen.extend(_fixed_samples(templates, space, chosen, arch, resources, always))
    chosen.extend(_fewest_iterations(templates, space, chosen, always))
    return space, chosen


def _loop_symbols(template: KernelGraph) -> set[str]:
    """The size symbols that only count loop iterations (a kernel's loop, no grid dim's extent)."""
    customs = [k for k in template.kernels if isinstance(k, CustomKernel)]
    grid = {str(g) for k in customs for g in k.grid}
    return {str(k.loop) for k in customs if str(k.loop) in template.symbols} - grid


def _fewest_iterations(templates: Sequence[KernelGraph], space: list[list[dict[str, int]]], chosen: Sequence[Sample],
                       always: Collection[int]) -> list[Sample]:
    """For each plan built by rule, its timed size with the fewest loop iterations its legal sizes
    allow, all else the same, as one more sample: a loop whose iterations are a chain of dependent
    rounds (an attention split: scores, max, probabilities, product) is fastest at one or two
    iterations, which the static prior, aiming at 16 KB stages, ranks low (H200: 8.9 µs at one
    iteration against 11.7 at the prior's four; docs/off-the-suite.md, "The prior of split attention plans")."""
    have, extra = set(chosen), []
    for smp in chosen:
        loops = _loop_symbols(templates[smp.template]) if smp.template in always else set()
        if not loops:
            continue
        at = smp.size_map
        same = [sz for sz in space[smp.template] if all(sz[k] == v for k, v in at.items() if k not in loops)]
        fewest = min(same, key=lambda sz: (math.prod(sz[k] for k in loops), sorted(sz.items())), default=at)
        few = Sample(smp.template, tuple(fewest.items()))
        if fewest != at and few not in have:  # (two sizes of a plan may share their fewest iterations)
            have.add(few)
            extra.append(few)
    return extra


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


def _first_checked(graph: Graph, backend: Backend, prof: _Profiler,
                   fresh_inputs: Callable[[int], dict[str, np.ndarray]]) -> tuple[int, float, list[SampleRecord]]:
    """4. the fastest timed sample that passes the reference check on fresh inputs (and on stressed
    ones where the program has a max): its index, its error and the samples that failed before it."""
    records = prof.records
    ranked = sorted(prof.kernels, key=lambda n: (records[n].time_us, n))
    failures: list[SampleRecord] = []
    tol, s_tol = tolerance(graph), tolerance(graph, stressed=True)
    for attempt, n in enumerate(ranked):
        rec = records[n]
        fresh = fresh_inputs(attempt)
        err, problem = _check(backend, prof.kernels[n], graph, fresh)
        stressed = stress_inputs(graph, fresh) if problem is None and err < tol else None
        if stressed is not None:  # a max in the program: large logits too (a safe softmax must hold)
            s_err, s_problem = _check(backend, prof.kernels[n], graph, stressed)
            if s_problem is not None or not s_err < s_tol:
                err, problem = s_err, s_problem or f"relative error {s_err:.3g} ≥ {s_tol:g} on inputs whose max " \
                    f"operands reach ±{STRESS_TARGET:g}"
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
