"""The tuner's draw: which (template, sizes) pairs are timed before the refinement walks from the
fastest (``prism.tune.tuner``).

* No more templates than samples: every template's legal sizes (enumerated, or past
  ``FULL_ENUMERATION`` candidate assignments drawn and climbed by the static prior), the prior-best
  of up to half the samples' templates, the rest uniformly (``_first_round``).
* More templates than samples: templates round-robin over structural classes, one prior-picked size
  each (``_sample_templates_first``).
* Always: every size-free template (predefined, stitched), and each plan built by rule at its
  ``BUILT_TOP`` best sizes (one more where its sizes are drawn), at every launch count the prior
  reaches, and at its fewest loop iterations (``_fixed_samples``, ``_other_launches``,
  ``_fewest_iterations``).
"""

from __future__ import annotations

import gc
import logging
import math
import multiprocessing
import os
import pickle
import random
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from prism.codegen.arch import arch as get_arch
from prism.codegen.fold import fold_transposes
from prism.codegen.resources import resources as codegen_resources
from prism.codegen.sizes import candidate_values, drawn_sizes, iter_legal, prior_ascent, size_score
from prism.errors import TuningError
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.settings import settings
from prism.tune.sampler import Sample, sample

log = logging.getLogger(__name__)


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
    """Whether ``legal_sizes_of`` draws the template's sizes (more than ``FULL_ENUMERATION`` candidate assignments)."""
    return len(candidate_values(template)) ** len(template.symbols) > FULL_ENUMERATION


def legal_sizes_of(template: KernelGraph, arch: str, resources: Any, cap: int | None) -> list[dict[str, int]]:
    """The legal sizes of ``template`` (all of them, at most ``cap``; past ``FULL_ENUMERATION``
    candidate assignments ``SIZES_PER_TEMPLATE`` drawn, and before them the end of the prior's
    ascent from the best drawn, ``prior_ascent``), the best by the static prior first (``_prior_first``)."""
    if _drawn_not_enumerated(template):
        drawn = _drawn(template, arch, resources, SIZES_PER_TEMPLATE)
        ranked = _prior_first(template, [(sz, None) for sz in drawn], arch, resources)
        if not ranked or resources is not codegen_resources:
            return ranked
        top = prior_ascent(template, ranked[0], arch)
        return [top, *(sz for sz in ranked if sz != top)]
    legal: list[tuple[dict[str, int], Any]] = []
    for sizes, use in iter_legal(template, arch=arch, resources=resources):  # over ``candidate_values``
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
    template's best, H200). It lowers a few assignments, not all of them (``legal_sizes_of``: 13-15 s of a
    2-core machine for the 24 templates drawn from a captured GEMV part's 1,404); ``_refine``
    enumerates the fastest templates' sizes. The best drawn is then climbed by the prior
    (``prior_ascent``; ``PRISM_FIRST_ROUND_ASCENT=0`` turns that off): over a 2,880-wide GEMV's many
    divisors the eight descents left 6 blocks the best drawn of its one-kernel plan (170 µs on an H100),
    where the prior's best runs 17.9 and its neighbours 13.8-14.5 (docs/off-the-suite.md, "The tuner's
    first round judged a template by a size of 6 blocks")."""
    drawn = _drawn(template, arch, resources, FIRST_ROUND_DRAWS)
    best = _prior_first(template, [(sz, None) for sz in drawn], arch, resources)[:1]
    if not best or not template.symbols or resources is not codegen_resources or not settings().first_round_ascent:
        return best
    return [prior_ascent(template, best[0], arch)]  # the drawn best, climbed by the prior


def legal_space(templates: Sequence[KernelGraph], arch: str, resources: Any, cap: int | None, jobs: int | None,
                 legal: Callable[..., list[dict[str, int]]] = legal_sizes_of) -> list[list[dict[str, int]]]:
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
    structural classes (``structure_class``: custom kernels, grid ranks, predefined kernels; a search can verify hundreds of
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
        drawn = legal_space([templates[t] for t in batch], arch, resources, cap, jobs, _one_legal)
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


def structure_class(kg: KernelGraph) -> tuple[int, tuple[int, ...], int]:
    """Custom kernels, the grid rank of each, and the predefined kernels: the shape of a plan before
    its sizes (a norm kernel before a vendor GEMM is not one more one-kernel plan among hundreds), as it
    runs: a weight's transpose that code generation folds into a load is no kernel."""
    kg = fold_transposes(kg)
    ranks = tuple(len(k.grid) for k in kg.kernels if isinstance(k, CustomKernel))
    return len(ranks), ranks, len(kg.kernels) - len(ranks)


def _round_robin(templates: Sequence[KernelGraph], rng: random.Random) -> list[int]:
    """Template indices: each class shuffled, then one of each class in turn (fewest kernels first)."""
    classes: dict[tuple[int, tuple[int, ...], int], list[int]] = {}
    for t, kg in enumerate(templates):
        classes.setdefault(structure_class(kg), []).append(t)
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
    slower than it. The sizes of a template in ``always`` are enumerated (``legal_sizes_of``: they are few
    templates) rather than drawn as a many-template first round draws them; ``space`` keeps them for
    ``_refine``."""
    drawn = set(chosen)
    extra = []
    for t, tpl in enumerate(templates):
        if tpl.symbols and t not in always:
            continue
        space[t] = space[t] or legal_sizes_of(tpl, arch, resources, None)  # (``draw_samples`` enumerated the drawn ones)
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


def draw_samples(graph: Graph, templates: Sequence[KernelGraph], samples: int, seed: int, arch: str, resources: Any,
                 max_legal: int | None, jobs: int | None,
                 always: Collection[int] = ()) -> tuple[list[list[dict[str, int]]], list[Sample]]:
    """1. the legal sizes of every template, 2. the sample (plus every size-free template and ``always``)."""
    if len(templates) <= samples:
        space = legal_space(templates, arch, resources, max_legal, jobs)
        found = any(space)
        chosen = _first_round(templates, space, samples, seed)
    else:
        space, chosen = _sample_templates_first(templates, samples, seed, arch, resources, max_legal, jobs)
        found = bool(chosen)
    if not found:
        raise TuningError(f"{graph!r}: no template has a legal size assignment on {arch}")
    for n, smp in enumerate(chosen):  # a plan built by rule, drawn in a many-template first round
        if smp.template in always and len(templates) > samples and templates[smp.template].symbols:
            space[smp.template] = legal_sizes_of(templates[smp.template], arch, resources, max_legal)
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
