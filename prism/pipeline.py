"""The pipeline, one named call per stage:

    search_and_verify(graph)      search → mapping instantiation → verification → cache
    superoptimize(graph)          search_and_verify → tune (sizes, codegen, compile, profile) → callable

Verified sGraphs (concrete mappings, symbolic sizes) are cached under the program's size-free
structure key, so a second shape of the same program does no search; tuned kernels are cached per
(program with shapes, dtype, GPU architecture).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from prism.cache import JsonCache
from prism.chains import Collapsed, collapse
from prism.codegen.arch import arch as get_arch
from prism.codegen.fold import fold_transposes
from prism.codegen.resources import resources
from prism.codegen.sizes import drawn_sizes, has_sizes
from prism.codegen.tails import padded_plans
from prism.epilogue import epilogue_plans
from prism.errors import DeviceError, IRError, PrismError, SearchError, SerializationError, VerificationError
from prism.graph import Graph, OpKind
from prism.ir import CustomKernel, KernelGraph, Load, Tail, check_structure, validate
from prism.loopsplit import split_plans
from prism.ops import ITEMSIZE
from prism.options import check_program, check_seconds, check_tuning
from prism.partition import (
    MAX_PART_OPS,
    Part,
    canonical,
    partition,
    predefined_plan,
    renamed,
    stitch,
    stitchable,
    weight_transposes,
    with_transposes,
)
from prism.progress import StageBar
from prism.rows import Rewrite, rewrite
from prism.rowwise import row_vendor_plan
from prism.settings import settings
from prism.transposes import sink_transposes
from prism.tune.backends import Backend, CudaBackend
from prism.tune.draw import legal_space
from prism.tune.inductor import EagerKernel, InductorKernel, Timer, Winner, compare
from prism.tune.inputs import (
    InputSampler,
    check_domain,
    check_examples,
    example_values,
    input_sampler,
    part_sampler,
)
from prism.tune.tolerance import bound_for
from prism.tune.tuner import Stage, TuneResult, reference_error, tune

if TYPE_CHECKING:
    from prism.search.config import SearchConfig

log = logging.getLogger(__name__)

# Bump when the search, the mapping rules or the axioms change what a cached result would hold.
SEARCH_CACHE_SCHEMA = 3
# tuned: 3 keyed and stored under names by position (``_tuned_key``); 4 half intermediates (timings changed);
# 5 winners also checked on logits masked with -inf (``prism.tune.stress.masked_inputs``)
TUNE_CACHE_SCHEMA = 5
# Programs with more primitive ops than this are not searched whole, only in parts (prism.partition).
WHOLE_PROGRAM_OPS = 12
CONSTRUCTED_KEY = "-rows"  # the search cache's key of such a program's row-vendor plan: its structure key, then this
EPILOGUE_KEY = "-epilogue"  # and of its epilogue plans (prism.epilogue)
SPLIT_KEY = "-split3"  # and of its split-loop plans (prism.loopsplit; 2: spread combines, 3: reduced partials)
CHAINS_KEY = "-chains"  # and of the plans of its search with element-wise chains as single ops (prism.chains)
# Seconds each symbolic search may take (its mapping instantiation gets as long again).
DEFAULT_SEARCH_BUDGET_S = 30.0
# Stitched plans listed by search_and_verify (superoptimize tunes the parts instead).
MAX_STITCHED = 4
# A matmul-free program whose every plan makes one block walk this many bytes of an input across rows
# (``Walk``: a column statistic over 1024+ rows) gets the two-kernel pipelines searched too; a walk
# along one contiguous run of memory (a row) only from ``LONG_ROW_BYTES`` (docs/off-the-suite.md,
# "Which long walks get pipelines").
LONG_WALK_BYTES = 16 * 1024
LONG_ROW_BYTES = 96 * 1024


class PlanSource(enum.Enum):
    """Where a verified plan comes from."""

    SEARCHED = "searched"  # the symbolic search of the whole program
    # built by rule for a program too large to search whole, proven part by part (``_constructed``)
    CONSTRUCTED = "constructed"
    STITCHED = "stitched"  # one plan per part of the partitioned program (parts' search or predefined)
    PREDEFINED = "predefined"  # predefined kernels only: always present


@dataclass(frozen=True)
class PartOutcome:
    """What the search found for one part of a partitioned program (its predefined plan last)."""

    part: Part
    outcome: SearchOutcome


@dataclass(frozen=True)
class SearchOutcome:
    """Every verified plan of a program (templates keep symbolic sizes), with where each comes from."""

    program: str
    structure_key: str
    templates: tuple[KernelGraph, ...]
    cached: bool
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    sources: tuple[PlanSource, ...] = ()
    parts: tuple[PartOutcome, ...] = ()

    def of(self, *sources: PlanSource) -> tuple[KernelGraph, ...]:
        return tuple(t for t, s in zip(self.templates, self.sources, strict=True) if s in sources)

    def to_json(self) -> dict[str, Any]:
        counts = {s.value: sum(1 for x in self.sources if x is s) for s in PlanSource}
        return {
            "program": self.program,
            "structure_key": self.structure_key,
            "cached": self.cached,
            "verified": len(self.templates),
            "verified_by_source": counts,
            "parts": len(self.parts),
            "seconds": self.seconds,
            **self.stats,
        }


def bind_shapes(template: KernelGraph, graph: Graph) -> KernelGraph:
    """A template re-bound to the shapes of ``graph`` (same structure, other sizes)."""
    return template.with_shapes({t.name: t.shape for t in graph.inputs}, {t.name: t.shape for t in graph.outputs})


def plan_misfit(template: KernelGraph, graph: Graph) -> str | None:
    """Why a cached plan cannot be a plan of ``graph`` (inputs and outputs by name, rank and dtype;
    structure), or None when it can."""
    for role, want, got in (("inputs", graph.inputs, template.inputs), ("outputs", graph.outputs, template.outputs)):
        if [(t.name, len(t.shape), t.dtype) for t in want] != [(t.name, len(t.shape), t.dtype) for t in got]:
            return f"its {role} {[t.name for t in got]} are not the program's {[t.name for t in want]}"
    try:
        check_structure(template)
    except IRError as e:
        return str(e)
    return None


def _fitting(templates: list[KernelGraph], graph: Graph) -> list[KernelGraph]:
    for t in templates:
        if (why := plan_misfit(t, graph)) is not None:
            raise SerializationError(f"a cached plan does not fit the program: {why}")
    return templates


def search_cache() -> JsonCache:
    """Verified sGraphs, keyed by the program's size-free structure key."""
    return JsonCache("search", SEARCH_CACHE_SCHEMA)


def default_config(graph: Graph, time_budget: float | None = None) -> SearchConfig:
    """The search limits for a program nobody tuned them to: loop-free one-kernel plans too when
    there is no matmul (nothing needs a for-loop to reduce over a contraction)."""
    from prism.search.config import SearchConfig

    has_matmul = any(n.kind is OpKind.MATMUL for n in graph.nodes)
    budget = time_budget if time_budget is not None else DEFAULT_SEARCH_BUDGET_S
    return SearchConfig(loop_one=not has_matmul, time_budget_s=budget)


def cache_key(graph: Graph, config: SearchConfig | None) -> str:
    """The search cache key: the size-free structure, plus the limits that shape the space."""
    key = graph.structure_key()
    if config is None:
        return key
    # not the space: its limits, and the order a budget-bound mapping takes it in
    budgets = ("time_budget_s", "max_candidates", "progress", "check_feasible", "least_work_first")
    from prism.search.config import SearchConfig

    defaults = vars(SearchConfig())
    # only what differs from the defaults: a field added later (at its default) keeps every key
    space = {k: v for k, v in vars(config).items() if k not in budgets and v != defaults[k]}
    if not space:
        return key
    digest = hashlib.sha256(repr(sorted(space.items())).encode()).hexdigest()[:8]
    return f"{key}-{digest}"


def save_verified(graph: Graph, templates: Sequence[KernelGraph], stats: dict[str, Any],
                  seconds: dict[str, float] | None = None, key: str | None = None) -> None:
    """Store the verified sGraphs of ``graph``'s structure (atomically)."""
    key = key or graph.structure_key()
    payload: dict[str, Any] = {"structure_key": key, "templates": [t.to_json() for t in templates], "stats": stats}
    if seconds is not None:
        payload["seconds"] = seconds
    search_cache().put_or_warn(key, payload)


def primitive_ops(graph: Graph) -> int:
    return sum(1 for n in graph.nodes if n.kind is not OpKind.INPUT)


def search_and_verify(
    graph: Graph, *, program: str = "program", cache: bool = True, progress: bool = True,
    config: SearchConfig | None = None,
    time_budget: float | None = None, partitioned: bool = True, part_ops: int = MAX_PART_OPS,
) -> SearchOutcome:
    """Stages 1–3: every verified plan of ``graph`` (search results from the cache when possible).

    The plans are the whole program's verified sGraphs (searched when it has at most
    ``WHOLE_PROGRAM_OPS`` primitive ops or a ``config`` is given; for a larger program, taken
    from the cache when a whole-program search was run, e.g. ``prism search --whole``), with
    ``partitioned`` its row-vendor plan (vendor GEMMs, the ops between them one row-wise kernel each)
    and stitched plans of its parts (each part searched and cached on its own, falling back to its
    predefined kernels; at most ``part_ops`` ops a part), and the all-predefined plan, always last.
    ``time_budget`` bounds each search (seconds; the default is ``DEFAULT_SEARCH_BUDGET_S``).
    """
    check_program(graph, "search_and_verify")
    graph = graph.without_dead_ops()
    t0 = time.perf_counter()
    parts = partition(graph, part_ops) if partitioned else []
    part_outcomes: list[PartOutcome] = []
    if len(parts) > 1:  # the parts first: small searches, so generated kernels are found early
        part_outcomes = _search_parts(graph, parts, program, cache, progress, time_budget)
    stitched = _stitched(graph, part_outcomes, program)
    t_parts = time.perf_counter()
    outer = weight_transposes(graph)  # the search sees the program without its foldable weight transposes
    whole, searched, splits = _whole_plans(outer.inner if outer and outer.inner else graph, program, cache, progress,
                                           config, time_budget, partitioned)
    if outer is not None:
        searched, splits = with_transposes(graph, outer, searched), with_transposes(graph, outer, splits)
    searched = (*searched, *_moved_transposes(graph, program, cache, progress, config, time_budget))
    constructed: tuple[KernelGraph, ...] = ()
    if partitioned:  # the plan built by rule: Inductor's structure, a floor under the searched plans
        epilogues = _epilogues(graph, _epilogue_pair(graph, part_outcomes, part_ops), program, cache,
                               _head_search(graph, program, cache, progress, time_budget, part_outcomes))
        constructed = (*_constructed(graph, program, cache), *epilogues)
    constructed = (*constructed, *splits)
    # a searched kernel may load an input no output reads (the program's dead ops are gone, its inputs not)
    templates = tuple(t.without_dead_ops() for t in (*searched, *constructed, *stitched, predefined_plan(graph, program)))
    sources = (*[PlanSource.SEARCHED] * len(searched), *[PlanSource.CONSTRUCTED] * len(constructed),
               *[PlanSource.STITCHED] * len(stitched), PlanSource.PREDEFINED)
    seconds = dict(whole.seconds) if whole is not None else {}
    seconds["parts"] = t_parts - t0
    seconds["total"] = time.perf_counter() - t0
    stats = dict(whole.stats) if whole is not None else {"whole_program_searched": False}
    return SearchOutcome(program, graph.structure_key(), templates, bool(whole and whole.cached), stats, seconds,
                         sources, tuple(part_outcomes))


def _moved_transposes(graph: Graph, program: str, cache: bool, progress: bool, config: SearchConfig | None,
                      time_budget: float | None) -> tuple[KernelGraph, ...]:
    """The searched plans of ``graph`` with its transposes moved onto inputs (``prism.transposes``), where
    that moves any and the moved program is small enough to search whole: the same function, inputs and
    outputs, where a normalised bank's transpose becomes one kernel reading the bank in place. Those of one
    launch join the program's own plans, which stay (where its parts are better plans, as an attention over
    normalised keys has, the tuner picks those)."""
    moved = sink_transposes(graph)
    if moved is graph or (config is None and primitive_ops(moved) > WHOLE_PROGRAM_OPS):
        return ()
    outer = weight_transposes(moved)
    _, searched, _ = _whole_plans(outer.inner if outer and outer.inner else moved, program, cache, progress,
                                  config, time_budget, False)
    plans = with_transposes(moved, outer, searched) if outer is not None else searched
    return tuple(p for p in plans if _one_launch(p))  # the fusions the program's own plans lack


def _one_launch(kg: KernelGraph) -> bool:
    """``kg`` is one generated kernel once code generation folds its transposes into the loads."""
    kernels = fold_transposes(kg).kernels
    return len(kernels) == 1 and isinstance(kernels[0], CustomKernel)


def _whole_plans(graph: Graph, program: str, cache: bool, progress: bool, config: SearchConfig | None,
                 time_budget: float | None, partitioned: bool,
                 ) -> tuple[SearchOutcome | None, tuple[KernelGraph, ...], tuple[KernelGraph, ...]]:
    """The whole program's search (None when it is too large and no search is cached), its searched
    plans and, with ``partitioned``, their split-loop plans. A program too large to search whole by
    default that its element-wise chains as single ops bring within ``WHOLE_PROGRAM_OPS`` is searched
    so (``prism.chains``), and the plans found, the chains written out, are proven on the program. So is
    one within it whose own search found no plan of generated kernels only (``_with_chains``)."""
    stand_in = collapse(graph) if config is None and primitive_ops(graph) > WHOLE_PROGRAM_OPS else None
    if stand_in is None or primitive_ops(stand_in.graph) > WHOLE_PROGRAM_OPS or _ran(graph, cache, time_budget):
        found = _whole_searched(graph, program, cache, progress, config, time_budget, partitioned)
        if config is not None or primitive_ops(graph) > WHOLE_PROGRAM_OPS:
            return found
        return _with_chains(graph, program, cache, progress, time_budget, partitioned, found)
    log.info("%s: searching whole with its %d element-wise chains as single ops", program, len(stand_in.chains))
    return _chain_plans(graph, stand_in, program, cache, progress, config, time_budget, partitioned)


def _chain_plans(graph: Graph, stand_in: Collapsed, program: str, cache: bool, progress: bool,
                 config: SearchConfig | None, time_budget: float | None, partitioned: bool,
                 ) -> tuple[SearchOutcome | None, tuple[KernelGraph, ...], tuple[KernelGraph, ...]]:
    """The stand-in's search, its searched and split plans with the chains written out and proven."""
    whole, searched, splits = _whole_searched(stand_in.graph, program, cache, progress, config, time_budget,
                                              partitioned)
    return whole, _expanded(graph, stand_in, searched, program, cache, CHAINS_KEY), \
        _expanded(graph, stand_in, splits, program, cache, f"{CHAINS_KEY}{SPLIT_KEY}")


def _with_chains(graph: Graph, program: str, cache: bool, progress: bool, time_budget: float | None,
                 partitioned: bool,
                 found: tuple[SearchOutcome | None, tuple[KernelGraph, ...], tuple[KernelGraph, ...]],
                 ) -> tuple[SearchOutcome | None, tuple[KernelGraph, ...], tuple[KernelGraph, ...]]:
    """``found`` (a whole-program search) and, where it has no plan of generated kernels only, the plans
    of a search with the element-wise chains as single ops: gpt-oss's gated expert (two projections,
    an 8-op gate) has no candidate in 10 ops, three one-kernel plans in 5 (docs/off-the-suite.md,
    "Biases and residuals as epilogues of parts")."""
    whole, searched, splits = found
    if any(map(_generated_only, searched)) or (stand_in := collapse(graph)) is None:
        return found
    log.info("%s: no plan of generated kernels; searching again with its %d element-wise chains as single ops",
             program, len(stand_in.chains))
    _, more, more_splits = _chain_plans(graph, stand_in, program, cache, progress, None, time_budget, partitioned)
    return whole, (*searched, *filter(_generated_only, more)), (*splits, *more_splits)


def _ran(graph: Graph, cache: bool, time_budget: float | None) -> bool:
    """A whole-program search of ``graph`` someone ran (``prism search --whole``) is in the cache."""
    return cache and not settings().no_cache and search_cache().path(
        cache_key(graph, default_config(graph, time_budget))).exists()


def _expanded(graph: Graph, stand_in: Collapsed, plans: Sequence[KernelGraph], program: str, cache: bool,
              suffix: str) -> tuple[KernelGraph, ...]:
    """``plans`` of the stand-in with their chains written out, those proven on ``graph`` (cached)."""
    if not plans:
        return ()

    def build() -> list[KernelGraph]:
        from prism.verify import verify_all

        out = stand_in.expand(plans)
        proven = [kg for kg, v in zip(out, verify_all(graph, list(out)), strict=True) if v.proven]
        log.info("%s: %d of %d plans of the stand-in proven with their chains written out", program,
                 len(proven), len(out))
        return proven

    return _built_by_rule(graph, program, cache, suffix, "chain plans", build)


def _whole_searched(graph: Graph, program: str, cache: bool, progress: bool, config: SearchConfig | None,
                    time_budget: float | None, partitioned: bool,
                    ) -> tuple[SearchOutcome | None, tuple[KernelGraph, ...], tuple[KernelGraph, ...]]:
    """``_whole_plans`` of ``graph`` as given: a pipeline search's plans split under a key of their own
    (the default search's splits are cached for the same program at shapes its plans fit)."""
    whole: SearchOutcome | None = None
    if config is not None or primitive_ops(graph) <= WHOLE_PROGRAM_OPS:
        cfg = config if config is not None else default_config(graph, time_budget)
        try:
            whole = _search_whole(graph, program, cache, progress, cfg)
        except (SearchError, VerificationError) as e:  # outside what the search or prover handle
            log.warning("%s: no whole-program search (%s); parts and predefined kernels remain", program, e)
            whole = SearchOutcome(program, graph.structure_key(), (), False, {"whole_program_error": str(e)})
        if config is None and cfg.loop_one and whole.templates and not _some_plan_fits(graph, whole.templates):
            whole = _with_pipelines(graph, program, cache, progress, cfg, whole)
    elif cache and not settings().no_cache:  # too large to search by default: a search someone ran
        whole = _cached_whole(graph, program, cache_key(graph, default_config(graph, time_budget)))
    searched = whole.templates if whole is not None else ()
    splits = _splits(graph, searched, program, cache, _split_suffix(whole)) if partitioned and searched else ()
    return whole, searched, splits


def _split_suffix(whole: SearchOutcome | None) -> str:
    """The cache-key suffix of the split-loop plans of ``whole``'s searched plans: a pipeline search's
    splits under that search's digest (splits of an older pipeline space are not read back)."""
    key = whole.stats.get("pipelines_key") if whole is not None else None
    return SPLIT_KEY + (f"-pipelines-{key.rsplit('-', 1)[-1]}" if isinstance(key, str) else "")


def _with_pipelines(graph: Graph, program: str, cache: bool, progress: bool, cfg: SearchConfig,
                    whole: SearchOutcome) -> SearchOutcome:
    """``whole`` with the plans of a search that also builds two-kernel pipelines (``split_only``
    off: a first kernel's results read by a second that does not loop over its grid, or has no loop),
    for a program none of whose searched plans can be generated at its shapes in short blocks
    (``_some_plan_fits``). A softmax or norm whose reduced extent does not fit one block's shared
    memory (a 128K-vocabulary softmax) has only plans that hold whole rows, a column statistic only
    plans that walk whole columns; a pipeline computes the statistics in a loop, then the element-wise
    result (docs/off-the-suite.md, "Reductions longer than a tile"). Searched only then: the wider
    space takes several times the default search's time."""
    log.info("%s: no searched plan fits these shapes in short blocks; searching two-kernel pipelines too", program)
    wider = replace(cfg, split_only=False, last_loop_one=True, long_dims=_long_dims(graph), least_work_first=True)
    try:
        more = _search_whole(graph, program, cache, progress, wider)
    except (SearchError, VerificationError) as e:
        log.warning("%s: no pipeline search (%s)", program, e)
        return whole
    fits = [t for t in more.templates if len(t.kernels) > 1 and _fits(graph, t)]
    stats = {**whole.stats, "pipelines": len(fits), "pipelines_searched": len(more.templates),
             "pipelines_long_dims_dropped": more.stats.get("long_dims_dropped", 0), "pipelines_key": cache_key(graph, wider)}
    return replace(whole, templates=(*whole.templates, *fits), stats=stats,
                   sources=(*whole.sources, *[PlanSource.SEARCHED] * len(fits)))


def _long_dims(graph: Graph) -> tuple[tuple[int, int], ...]:
    """(input position, dim) of every input dim no block's shared memory holds whole (``_tile_floor``'s
    2 bytes an element): a plan whose tile holds one whole is refused by ``_fits`` at these shapes, so
    the pipeline search drops it before its screen (``SearchConfig.long_dims``)."""
    smem = get_arch("sm_80").smem_max
    return tuple((i, a) for i, t in enumerate(graph.inputs) for a, n in enumerate(t.shape) if 2 * n > smem)


def _some_plan_fits(graph: Graph, templates: Sequence[KernelGraph]) -> bool:
    """Some template can be generated at ``graph``'s shapes, holds no input row longer than a block's
    shared memory and makes no block walk a long way through an input (``Walk.long``). A plan reading
    long rows in place (its accumulators inline) may be generated, but walks each row with one block;
    a column statistic's plans walk every row of their columns: the two-kernel pipelines are searched
    then too (docs/off-the-suite.md, "Column statistics: pipelines whose last kernel has no loop")."""
    shapes = {t.name: t.shape for t in graph.inputs}
    return any(not any(w.long for w in _walks(t, shapes)) and _fits(graph, t) for t in templates)


@dataclass(frozen=True)
class Walk:
    """What one block of a plan reads of one program input at the plan's largest grid."""

    bytes: int  # every dim the grid does not split (the loop's included), in the input's dtype
    contiguous: bool  # one run of memory: no dim the grid splits lies inside a dim the block walks

    @property
    def long(self) -> bool:
        return self.bytes >= (LONG_ROW_BYTES if self.contiguous else LONG_WALK_BYTES)


def _walks(kg: KernelGraph, shapes: Mapping[str, tuple[int, ...]]) -> Iterator[Walk]:
    """A ``Walk`` per Load of a program input in ``kg``, in the input's dtype. Across rows (a split dim
    inside a walked one, a column's run) a block reads at least 16 bytes of each split last dim."""
    sizes = {t.name: ITEMSIZE.get(t.dtype, 2) for t in kg.inputs}
    for op, shape in _input_loads(kg, shapes):
        esize = sizes.get(op.tensor, 2)
        wide = [a for a, n in enumerate(shape) if n > 1]
        walked = [a for a in wide if a not in op.imap]
        contiguous = all(a < b for a in wide if a in op.imap for b in walked)
        last_split = bool(wide) and wide[-1] in op.imap
        run = min(16 // esize, shape[wide[-1]]) if last_split and walked else 1
        yield Walk(math.prod(shape[a] for a in walked) * run * esize, contiguous)


def _input_loads(kg: KernelGraph, shapes: Mapping[str, tuple[int, ...]]) -> Iterator[tuple[Load, tuple[int, ...]]]:
    """Every Load of a program input in ``kg``'s generated kernels, with the input's shape."""
    for k in kg.kernels:
        for op in k.ops if isinstance(k, CustomKernel) else ():
            if isinstance(op, Load) and op.tensor in shapes:
                yield op, shapes[op.tensor]


def _fits(graph: Graph, kg: KernelGraph) -> bool:
    """``kg`` holds no input row longer than a block's shared memory (``_tile_floor``, the cheap test
    first) and can be generated at ``graph``'s shapes."""
    shapes = {t.name: t.shape for t in graph.inputs}
    return _tile_floor(kg, shapes) <= get_arch("sm_80").smem_max and has_sizes(kg)


def _tile_floor(kg: KernelGraph, shapes: Mapping[str, tuple[int, ...]]) -> int:
    """The most bytes one Load of a program input holds at any sizes: the dims that neither a grid dim
    nor the loop splits are whole in its tile (a cheap test before ``has_sizes`` lowers sizes; the
    wider search returns hundreds of plans, most of which hold whole rows)."""
    wholes = (math.prod(n for a, n in enumerate(shape) if a not in op.imap and a != op.fmap)
              for op, shape in _input_loads(kg, shapes))
    return 2 * max(wholes, default=0)  # 2 bytes an element: for wider dtypes a lower floor, so none that fits is dropped


def _search_parts(graph: Graph, parts: Sequence[Part], program: str, cache: bool, progress: bool,
                  time_budget: float | None) -> list[PartOutcome]:
    out: list[PartOutcome] = []
    bar = StageBar(f"parts of {program}", total=len(parts), unit=" part", enabled=progress)
    for part in parts:
        log.info("%s: part %d/%d (%d ops) ...", program, part.index + 1, len(parts), len(part.nodes))
        if part.searchable:  # searched under names by position: parts of one structure share it
            canon, back = canonical(part.inner or part.graph)  # weight transposes are not searched
            found = search_and_verify(canon, program=f"{program}.p{part.index}", cache=cache, progress=progress,
                                      time_budget=time_budget, partitioned=False)
            found = _with_splits(canon, found, f"{program}.p{part.index}", cache)
            found = _with_part_epilogues(canon, found, f"{program}.p{part.index}", cache, progress, time_budget)
            res = replace(found, templates=with_transposes(graph, part, [renamed(t, back) for t in found.templates]),
                          structure_key=part.graph.structure_key())
        else:
            pre = predefined_plan(part.graph, f"{program}.p{part.index}")
            res = SearchOutcome(pre.program, part.graph.structure_key(), (pre,), False, {}, {"total": 0.0},
                                (PlanSource.PREDEFINED,))
        log.info("%s: part %d/%d: %d verified plans", program, part.index + 1, len(parts), len(res.templates))
        out.append(PartOutcome(part, res))
        bar.advance()
    bar.close()
    return out


def _stitched(graph: Graph, parts: Sequence[PartOutcome], program: str) -> list[KernelGraph]:
    """A few stitched plans: the j-th takes the j-th plan of every part (cyclically), so each part's
    plans all appear; superoptimize tunes parts one by one and stitches the winners instead."""
    if all(len(p.outcome.templates) == 1 for p in parts):  # predefined kernels only: the plan below
        return []
    width = min(MAX_STITCHED, max(len(p.outcome.templates) for p in parts))
    plans = [stitch(graph, [p.part for p in parts],
                    [p.outcome.templates[j % len(p.outcome.templates)] for p in parts], program)
             for j in range(width)]
    return list({kg.dumps(): kg for kg in plans}.values())


def _proven(program: Graph, kg: KernelGraph) -> bool:
    """Whether ``kg`` is proven to compute ``program`` (False outside what the prover takes; ImportError
    where the prover, egglog, is not installed)."""
    from prism.verify import verify_all

    try:
        return verify_all(program, [kg])[0].proven
    except VerificationError:  # outside what the prover takes: not proven
        return False


def _constructed(graph: Graph, program: str, cache: bool) -> tuple[KernelGraph, ...]:
    """The row-vendor plan of a program too large to search whole (``rowwise.row_vendor_plan``: vendor
    GEMMs, each run of other ops between them one row-wise kernel, so a residual add and the norm
    after it run once, where the stitched plans repeat a norm in every projection part it feeds).
    Each row-wise kernel is proven on its own run. Empty when there is none."""
    def build() -> list[KernelGraph]:
        plan = row_vendor_plan(graph, program, prove=_proven)
        return [] if plan is None else [plan]

    return _built_by_rule(graph, program, cache, CONSTRUCTED_KEY, "row_vendor_plan", build)


def _epilogue_pair(graph: Graph, parts: Sequence[PartOutcome] | None, part_ops: int) -> tuple[Part, Part] | None:
    """(a matmul part, the element-wise part after it) that ``_epilogues`` fuses: the program's two parts,
    or where an epilogue took the matmul into the element-wise part (a norm, a matmul, an activation:
    the norm alone, then the matmul with its activation) the prologue-only partition's two (None when
    neither is such a pair). ``parts`` None: ``graph`` is a part, its prologue-only partition's two."""
    if parts is not None:
        if len(parts) != 2:
            return None
        if _has_matmul(parts[0].part):
            return parts[0].part, parts[1].part
    alt = partition(graph, part_ops, epilogues=False)
    return (alt[0], alt[1]) if len(alt) == 2 and _has_matmul(alt[0]) and alt[0].searchable else None


def _has_matmul(part: Part) -> bool:
    return any(n.kind is OpKind.MATMUL for n in part.graph.nodes)


def _epilogues(graph: Graph, pair: tuple[Part, Part] | None, program: str, cache: bool,
               search: Callable[[Part], PartOutcome]) -> tuple[KernelGraph, ...]:
    """The epilogue plans of ``pair`` (``_epilogue_pair``): the matmul part's one-kernel plans with the
    element-wise part after it (``prism.epilogue``), each proven whole; the matmul part's plans come
    from ``search``, asked only when the plans are not cached."""
    if pair is None:
        return ()
    head, tail = pair

    def build() -> list[KernelGraph]:
        return epilogue_plans(graph, search(head).outcome.of(PlanSource.SEARCHED), tail.graph, program, _proven)

    return _built_by_rule(graph, program, cache, EPILOGUE_KEY, "epilogue_plans", build)


def _head_search(graph: Graph, program: str, cache: bool, progress: bool, time_budget: float | None,
                 known: Sequence[PartOutcome] = ()) -> Callable[[Part], PartOutcome]:
    """What ``_epilogues`` asks for a matmul part's plans: the outcome in ``known`` of that part, or its
    search (``_search_parts``)."""
    def search(head: Part) -> PartOutcome:
        return next((po for po in known if po.part.nodes == head.nodes), None) or _search_parts(
            graph, [head], program, cache, progress, time_budget)[0]

    return search


def _with_part_epilogues(graph: Graph, found: SearchOutcome, program: str, cache: bool, progress: bool,
                         time_budget: float | None) -> SearchOutcome:
    """A part that is a matmul and an element-wise tail reading another tensor (a bias, a residual:
    ``partition._biased``) with its epilogue plans and their split-loop plans, before its predefined
    plan (always last): its own search has no one-kernel plan for it."""
    pair = _epilogue_pair(graph, None, MAX_PART_OPS)
    if pair is None or len(pair[1].graph.inputs) < 2:  # an activation alone: the part's search has its plans
        return found
    plans = _epilogues(graph, pair, program, cache, _head_search(graph, program, cache, progress, time_budget))
    return _before_predefined(found, (*plans, *_splits(graph, plans, program, cache, f"{EPILOGUE_KEY}{SPLIT_KEY}")))


def _before_predefined(found: SearchOutcome, built: Sequence[KernelGraph]) -> SearchOutcome:
    """``found`` with the plans ``built`` by rule (constructed) before its predefined plan (always last)."""
    if not built:
        return found
    return replace(found, templates=(*found.templates[:-1], *built, found.templates[-1]),
                   sources=(*found.sources[:-1], *[PlanSource.CONSTRUCTED] * len(built), found.sources[-1]))


def _splits(graph: Graph, searched: Sequence[KernelGraph], program: str, cache: bool,
            suffix: str = SPLIT_KEY) -> tuple[KernelGraph, ...]:
    """The split-loop plans of the whole program's searched plans that start with a looping kernel
    (``prism.loopsplit``: the loop spread over one more grid dim, a combine kernel after), each
    proven whole."""
    return _built_by_rule(graph, program, cache, suffix, "split_plans",
                          lambda: split_plans(graph, searched, program, _proven))


def _with_splits(graph: Graph, found: SearchOutcome, program: str, cache: bool) -> SearchOutcome:
    """A part's search outcome with the split-loop plans of its searched plans, before its
    predefined plan (always last)."""
    return _before_predefined(found, _splits(graph, found.of(PlanSource.SEARCHED), program, cache))


def _built_by_rule(graph: Graph, program: str, cache: bool, suffix: str, what: str,
                   build: Callable[[], list[KernelGraph]]) -> tuple[KernelGraph, ...]:
    """Plans built by rule and proven (``build``), cached under the program's structure key plus
    ``suffix`` (a machine without the prover, a GPU image, reads them there); none where the prover
    (egglog) is missing and nothing is cached."""
    key = f"{graph.structure_key()}{suffix}"
    use_cache = cache and not settings().no_cache
    if use_cache and (hit := _cached_whole(graph, program, key)) is not None:
        return hit.templates
    try:
        plans = build()
    except ImportError as e:  # the prover (egglog) is not on every machine
        log.info("%s: no %s (its proof needs egglog: %s)", program, what, e)
        return ()
    if use_cache:
        save_verified(graph, plans, {"constructed": what}, key=key)
    return tuple(plans)


def _cached_whole(graph: Graph, program: str, key: str) -> SearchOutcome | None:
    """The cached whole-program search under ``key`` (evicted when a plan fails the screen)."""
    t0 = time.perf_counter()
    hit = search_cache().get(key, lambda p: _decode_search(p, key, graph))
    if hit is not None and not _screened(graph, hit[0]):
        search_cache().evict(key, "holding a plan that fails the numeric check")
        hit = None
    if hit is None:
        return None
    cached_templates, stats = hit
    log.info("%s: %d verified sGraphs loaded from the cache (key %s)", program, len(cached_templates), key)
    return SearchOutcome(program, key, tuple(bind_shapes(t, graph) for t in cached_templates), True, stats,
                         {"search": 0.0, "mapping": 0.0, "verify": 0.0, "load": time.perf_counter() - t0,
                          "total": time.perf_counter() - t0}, (PlanSource.SEARCHED,) * len(cached_templates))


def _search_whole(graph: Graph, program: str, cache: bool, progress: bool, config: SearchConfig) -> SearchOutcome:
    """The symbolic search of the whole program: search → mappings → screen → proof → cache."""
    key = cache_key(graph, config)
    use_cache = cache and not settings().no_cache
    if use_cache:
        hit = _cached_whole(graph, program, key)
        if hit is not None:
            return hit

    try:  # the search's solvers (z3, egglog) are not on every machine (a GPU image, say)
        from prism.search.verified import search_verified
    except ImportError as e:
        raise SearchError(f"the symbolic search needs z3-solver and egglog ({e})") from e

    log.info("%s: searching (%d primitive ops, budget %.0f s)", program, primitive_ops(graph), config.time_budget_s)
    found = search_verified(graph, program, config, progress=progress, jobs=settings().jobs)
    if use_cache:
        save_verified(graph, found.templates, found.stats, found.seconds, key)
    return SearchOutcome(program, key, found.templates, False, found.stats, found.seconds,
                         (PlanSource.SEARCHED,) * len(found.templates))


def _decode_search(payload: Any, key: str, graph: Graph) -> tuple[list[KernelGraph], dict[str, Any]]:
    if payload.get("structure_key") != key:
        raise SerializationError("entry belongs to another program")
    stats = dict(payload.get("stats", {}))
    stats["searched_seconds"] = dict(payload.get("seconds", {}))  # what the search cost when it ran
    return _fitting([KernelGraph.from_json(t) for t in payload["templates"]], graph), stats


# digests of (program, cached plans) that passed ``_screened`` in this process: the same plans loaded
# again (a region repeated in every layer, a second call at the same shapes) are not screened again
_SCREENED: set[str] = set()


def _screened(graph: Graph, templates: Sequence[KernelGraph]) -> bool:
    """Do cached plans still compute the program: well-formed for every size (symbolic shapes) and
    right at the search's numeric screen (small, on the CPU)? Once per process for the same plans."""
    from prism.verify.check import ill_formed
    from prism.verify.screen import screen

    digest = hashlib.sha256("\n".join([graph.structure_hash(), *(t.dumps() for t in templates)]).encode()).hexdigest()
    if digest in _SCREENED:
        return True
    bound = [bind_shapes(t, graph) for t in templates]
    ok = not any(why is not None for why in ill_formed(graph, bound)) and all(
        right is not False for right in screen(graph, bound))
    if ok:
        _SCREENED.add(digest)
    return ok


def _require_gpu(program: str, outcome: SearchOutcome) -> None:
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        count, why = 0, str(e)
    else:
        why = "no CUDA device"
    if count < 1:
        raise DeviceError(
            f"{program}: search and verification found {len(outcome.templates)} verified sGraphs; tuning them "
            f"needs an NVIDIA GPU with CuPy ({why})", summary=outcome.to_json())


def _tuned_key(graph: Graph, arch: str) -> tuple[str, dict[str, str]]:
    """The tuned-cache key of ``graph`` on ``arch`` and the map from its names to the cache's.

    The key is the program's shapes and structure under names by position (``partition.canonical``),
    and the entry's plan is stored under those names. Parts of one structure and shapes share one
    tuning: a gate and an up projection, the residual adds of a block, the same part in every layer."""
    canon, back = canonical(graph)
    return f"{canon.structure_hash()}-{arch}-{codegen_fingerprint()}", {mine: pos for pos, mine in back.items()}


# what a tuned entry's choice and timing depend on besides the program: the generated code, how plans run
_CODEGEN_SOURCES = ("codegen/*.py", "runtime.py", "tune/timing.py")


@functools.cache
def codegen_fingerprint() -> str:
    """A digest of the sources that generate, launch and time kernels, part of every tuned-cache key: a
    tuning chosen and timed with other code (a code-generation change makes other plans faster) is a
    miss, not a stale answer."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    for path in sorted(p for pattern in _CODEGEN_SOURCES for p in root.glob(pattern)):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:8]


class Summary(TypedDict, total=False):
    """``Superoptimized.summary``: stage times, counts, the best kernel and where it comes from."""

    program: str
    search_s: float  # once per program: from the cache, what the search cost when it ran
    verify_s: float  # mapping instantiation, screen and proof
    parts_s: float
    verified_sgraphs: int
    search_cache_hit: bool
    search: dict[str, Any]  # SearchOutcome.to_json()
    parts_tune_s: float
    tune_s: float
    samples: int | None
    compiled: int | None
    failed: int
    distinct_kernels: int
    best_us: float
    rel_err: float
    arch: str
    template: int  # index of the chosen plan among the candidates
    sizes: dict[str, int]
    tune_cache_hit: bool
    tuning: dict[str, Any]  # TuneResult.summary
    timed: list[list[Any]]  # [template, sizes, µs] of every timed sample (scripts/zoo_prior.py)
    plan_source: str  # a PlanSource value, or "inductor" / "eager" when PyTorch's kernels won (tune.inductor.Winner)
    inductor: dict[str, Any]  # the comparison with PyTorch's kernels, compiled and eager (prism.tune.inductor.Verdict)
    rows_merged: bool  # leading dims of [batch, tokens, d] activations merged into rows (prism.rows)
    outputs_as_views: list[str]  # outputs computed untransposed and returned as transposed views (prism.output_views)


# what the tuned cache keeps of a Summary
_TUNED_KEYS = ("best_us", "samples", "compiled", "failed", "distinct_kernels", "arch", "sizes", "template")


@dataclass(frozen=True)
class _Tuned:
    """A tuning's answer: the compiled kernel, the summary, the concrete plan and, when that plan is made
    of predefined kernels only, the fastest timed plan with a generated kernel (``_fastest_generated``)."""

    kernel: Any
    summary: Summary
    plan: KernelGraph
    generated: KernelGraph | None = None


@dataclass
class _TuneRequest:
    graph: Graph
    templates: list[KernelGraph]
    sampler: InputSampler
    program: str
    always: tuple[int, ...] = ()  # templates timed whatever the draw (``tune``'s ``always``)


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
    example_inputs: Mapping[str, Any] | Sequence[Any] | None = None,
    search_budget: float | None = None,
    backend: Backend | None = None,
    inductor: bool = True,
    output_views: bool = True,
) -> Superoptimized:
    """Search, verify, tune and compile ``graph``; return the fastest verified plan as a callable.

    ``target`` is the architecture the code is generated for, like ``"sm_80"`` (default: the GPU at
    hand). The candidates are the whole program's verified sGraphs, a stitched plan of its parts
    (each part tuned on its own: generated kernels or predefined ones such as the vendor GEMM) and
    the all-predefined plan, so there is always an answer and it is never slower than the unfused
    plan. ``time_budget`` (seconds) bounds the tuning as a whole, the parts' and the final choice
    together (the search has its own ``search_budget``); past it each tuning call still times one
    sample and the size-free plans, so an answer always comes. Tuning inputs come from
    ``example_inputs`` (their mean and spread) or the documented default (see ``input_sampler``).
    The returned ``Superoptimized`` is callable on torch tensors / CuPy arrays and carries a
    ``summary`` dict (stage times, counts, best time, plan source, cache hits). Every plan returned
    has passed a check against the float64 reference on fresh random inputs on the device (and on
    ``example_inputs`` when given). With ``inductor`` (the default) and PyTorch at hand, the chosen
    plan is timed against ``torch.compile``'s kernels and PyTorch's eager kernels for the same program,
    and the faster of those is returned when the plan does not beat it by more than timing noise
    (``summary["plan_source"]`` ``"inductor"`` or ``"eager"``, every time in ``summary["inductor"]``;
    ``prism.tune.inductor``). With ``output_views`` (the default) an output that
    is a transpose of a computed value is computed untransposed and returned as a transposed view, as
    PyTorch returns it (``prism.output_views``); off, every output is written row-major (what a caller
    that needs contiguous outputs wants: the PyTorch capture's regions). Raises DeviceError after
    verification when no GPU is present.
    """
    check_program(graph, "superoptimize")  # bad options and example inputs fail before the search
    check_tuning("superoptimize", samples=samples, seed=seed, time_budget=time_budget, target=target)
    check_seconds("search_budget", search_budget, "superoptimize")
    graph = graph.without_dead_ops()  # ops no output reads are not computed
    if (rw := rewrite(graph, views=output_views)).peels or rw.rows is not None:  # output views; [b, s, d] rows
        # example inputs checked against the program's own shapes, read once, viewed as rows
        examples = example_inputs if example_inputs is None or rw.rows is None else \
            rw.rows.view_inputs(example_values(graph, example_inputs))
        inner = superoptimize(rw.graph, target=target, samples=samples, seed=seed, time_budget=time_budget,
                              cache=cache, program=program, progress=progress, scales=scales,
                              example_inputs=examples, search_budget=search_budget, backend=backend,
                              inductor=inductor, output_views=output_views)
        return _rewritten(rw, inner)
    sampler = input_sampler(graph, example_inputs, scales)
    check_domain(graph, sampler, seed, program)  # a log of N(0, 1) inputs: no plan could pass the check
    outcome = search_and_verify(graph, program=program, cache=cache, progress=progress, time_budget=search_budget)
    if backend is None:  # tests pass the interpreter backend instead
        _require_gpu(program, outcome)
        backend = CudaBackend(target)
    summary = _search_summary(program, outcome)
    whole = (PlanSource.SEARCHED, PlanSource.CONSTRUCTED, PlanSource.PREDEFINED)  # stitched: from the parts' tunings
    candidates = list(outcome.of(*whole))
    sources = [s for s in outcome.sources if s in whole]
    candidates, sources = with_tails(candidates, sources)  # plans with no legal sizes, at a padded tail
    t_parts = time.perf_counter()
    stitched = bool(outcome.of(PlanSource.STITCHED))
    weights = _tuning_weights(graph, outcome, cache and not settings().no_cache) if stitched else [1.0]
    budget = _Budget(time_budget, weights)  # the parts, then the final choice
    if stitched:
        tuning = _PartTuning(backend, target, max(4, samples // 2), seed, cache)  # a part is small: fewer samples
        plans = _stitched_plans(graph, outcome, sampler, program, tuning, budget)
        candidates += plans
        sources += [PlanSource.STITCHED] * len(plans)
    summary["parts_tune_s"] = time.perf_counter() - t_parts
    built = _built(sources)
    final = _tune_cached(_TuneRequest(graph, candidates, sampler, program, built), backend, target, samples, seed,
                         budget.next(), cache, summary)
    kernel, summary, concrete = final.kernel, final.summary, final.plan
    summary["plan_source"] = sources[int(summary["template"])].value
    if inductor and isinstance(backend, CudaBackend):
        kernel = _versus_inductor(graph, backend, kernel, summary, sampler, seed, progress=progress)
    if example_inputs is not None:
        check_examples(graph, backend, kernel, example_inputs, program)
    return Superoptimized(kernel, summary, concrete)


def _rewritten(rw: Rewrite, inner: Superoptimized) -> Superoptimized:
    """The rewritten program's kernel (``inner``) as the program's: outputs viewed back, rows unmerged."""
    summary: Summary = {**inner.summary}
    if rw.rows is not None:
        summary["rows_merged"] = True
    if rw.peels:
        summary["outputs_as_views"] = sorted(name for p in rw.peels for name in p.transposed)
    return Superoptimized(rw.callable(inner.kernel), summary, inner.kernel_graph)


@dataclass(frozen=True)
class _PartTuning:
    """How each part of a program is tuned (its samples fewer than the whole program's)."""

    backend: Backend
    target: str | None
    samples: int
    seed: int
    cache: bool


def _stitched_plans(graph: Graph, outcome: SearchOutcome, sampler: InputSampler, program: str,
                    tuning: _PartTuning, budget: _Budget) -> list[KernelGraph]:
    """Each part tuned on its own (its plans padded to the tail of the parts before it), then every
    stitching of the parts' tuned plans whose parts are padded alike (else the others compete)."""
    tuned: list[_Tuned] = []
    for po in outcome.parts:
        part_templates, part_sources = with_tails(po.outcome.templates, po.outcome.sources)
        part_templates, part_sources = _padded_to(part_templates, part_sources, _tail_of(tuned))
        req = _TuneRequest(po.part.graph, part_templates, part_sampler(graph, po.part, sampler),
                           f"{program}.p{po.part.index}", _built(part_sources))
        tuned.append(_tune_cached(req, tuning.backend, tuning.target, tuning.samples, tuning.seed, budget.next(),
                                  tuning.cache, Summary()))
    return [stitch(graph, [p.part for p in outcome.parts], plans, program)
            for plans in filter(stitchable, _stitchings(tuned))]


def with_tails(templates: Sequence[KernelGraph], sources: Sequence[PlanSource],
               arch: str = "sm_80") -> tuple[list[KernelGraph], list[PlanSource]]:
    """``templates`` and their ``sources``, then each plan of generated kernels that has no legal sizes
    at the program's shapes because an mma tile spans an extent that is not a multiple of 16 (a KV
    cache of 1,000 positions) run at each padded tail it can take (``prism.codegen.tails.padded_plans``;
    plans built by rule also where they write an intermediate along it: a split GEMV's partials),
    with its plan's source (a plan built by rule is timed whatever the draw, padded too), each that has
    legal sizes. The longest padding (the most divisors) is checked first, and a plan for which it has
    none gets no other: most searched plans have none at any extent (a decode attention's 223 have 18
    at 1,024 positions), and a draw that finds none spends its whole budget of lowerings."""
    out, src = list(templates), list(sources)
    padded = [(s, ps) for t, s in zip(templates, sources, strict=True)
              if t.symbols and (ps := padded_plans(t, intermediates=s is PlanSource.CONSTRUCTED))]
    first = _have_sizes([ps[0] for _, ps in padded], arch)  # (in worker processes: they lower in pure Python)
    rest = [(s, ps) for (s, ps), ok in zip(padded, first, strict=True) if ok]
    more = iter(_have_sizes([p for _, ps in rest for p in ps[1:]], arch))
    for s, ps in rest:
        keep = [ps[0], *(p for p in ps[1:] if next(more))]
        out += keep
        src += [s] * len(keep)
    return out, src


def _have_sizes(templates: Sequence[KernelGraph], arch: str) -> list[bool]:
    """``has_sizes`` of each template, in worker processes when there are many (``draw.legal_space``)."""
    return [bool(found) for found in legal_space(templates, arch, resources, None, None, _one_size)]


def _one_size(template: KernelGraph, arch: str, res: Any, cap: int | None) -> list[dict[str, int]]:
    """One legal size of ``template`` (none when the draws find none: ``has_sizes``)."""
    return drawn_sizes(template, arch, res, 1)


def _built(sources: Sequence[PlanSource]) -> tuple[int, ...]:
    """The indices of plans built by rule (a part's split plans too): timed whatever the tuner's draw,
    a floor under the searched plans."""
    return tuple(i for i, s in enumerate(sources) if s is PlanSource.CONSTRUCTED)


def _versus_inductor(graph: Graph, backend: Timer, kernel: Any, summary: Summary, sampler: InputSampler,
                     seed: int, build: Callable[[Graph, Any], Any] = InductorKernel,
                     eager: Callable[[Graph, Any], Any] | None = EagerKernel, *, progress: bool = False) -> Any:
    """The fastest of the chosen plan's ``kernel``, torch.compile's and eager PyTorch's kernels
    (``prism.tune.inductor.compare``), recorded in ``summary``."""
    log.info("%s: compiling torch.compile's kernels of the program as a candidate", summary.get("program"))
    with StageBar(f"{summary.get('program')}: PyTorch candidates", total=1, unit=" compile",
                  enabled=progress) as bar:
        chosen, v = compare(graph, backend, kernel, sampler, seed, build, eager)
        bar.advance(1)
    summary["inductor"] = asdict(v)
    if v.winner is not Winner.GENERATED:
        log.info("%s: PyTorch's %s kernels %.2f µs, the generated plan %.2f µs: returning PyTorch's",
                 summary.get("program"), v.winner.value, v.winner_us, v.generated_us)
        summary["plan_source"] = v.winner.value
        summary["best_us"] = cast(float, v.winner_us)
        summary["rel_err"] = cast(float, v.winner_rel_err)
    return chosen


def _search_summary(program: str, outcome: SearchOutcome) -> Summary:
    searched = outcome.stats.get("searched_seconds", outcome.seconds) if outcome.cached else outcome.seconds
    return Summary(
        program=program,
        # once per program: when loaded from the cache, what the search cost when it ran
        search_s=searched.get("search", 0.0),
        verify_s=sum(searched.get(k, 0.0) for k in ("mapping", "screen", "verify")),
        parts_s=outcome.seconds.get("parts", 0.0),
        verified_sgraphs=len(outcome.templates),
        search_cache_hit=outcome.cached,
        search=outcome.to_json(),
    )


class _Budget:
    """``superoptimize``'s tuning budget over its tuning calls (each part's, then the whole program's),
    shared by weight: a call gets ``weight / (its weight + the weights still to come)`` of what is
    left, so time a call leaves unspent (a cache hit, a part with few sizes) goes to the later ones,
    and a part that moves more data (a GEMV against an element-wise add) gets more of it. None: no
    budget. A call whose share is spent still runs: ``tune`` always times at least one sample and
    every size-free plan (the predefined one)."""

    def __init__(self, seconds: float | None, weights: Sequence[float],
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.deadline = None if seconds is None else clock() + seconds
        self.weights = [max(0.0, w) for w in weights]

    def next(self) -> float | None:
        w = self.weights.pop(0) if self.weights else 1.0
        if self.deadline is None:
            return None
        rest = w + sum(self.weights)
        return max(0.0, self.deadline - self.clock()) * (w / rest if rest > 0 else 1.0)


def _tuning_weights(graph: Graph, outcome: SearchOutcome, shared: bool = True) -> list[float]:
    """The budget weights of superoptimize's tuning calls: a part by the elements its tensors hold (0
    when it has one plan, nothing to tune, or when ``shared`` (the tuned cache is on) and an earlier
    part has its shapes and structure: it reads that part's tuning), then the whole program's choice,
    weighted as much as all parts when the search found whole-program plans (those are tuned there)
    and as one part else."""
    seen: set[str] = set()
    parts = []
    for po in outcome.parts:
        key = _tuned_key(po.part.graph, "")[0]
        repeat = shared and key in seen
        seen.add(key)
        parts.append(0.0 if repeat or len(po.outcome.templates) <= 1 else float(_elements(po.part.graph)))
    whole = sum(parts) if outcome.of(PlanSource.SEARCHED) else max(parts, default=1.0)
    return [*parts, whole or 1.0]


def _elements(graph: Graph) -> int:
    return sum(math.prod(t.shape) for t in (*graph.inputs, *graph.outputs))


def _tune_cached(req: _TuneRequest, backend: Backend, target: str | None, samples: int, seed: int,
                 time_budget: float | None, cache: bool, summary: Summary) -> _Tuned:
    """Tune ``req`` (or load its tuned plan, checked again)."""
    graph = req.graph
    use_cache = cache and not settings().no_cache
    store = JsonCache("tuned", TUNE_CACHE_SCHEMA)
    key, to_cache = _tuned_key(graph, backend.arch())
    if use_cache and (hit := _tuned_hit(req, backend, store, key, to_cache, seed)) is not None:
        kernel, kg, rec_summary, err, secs, generated = hit
        summary.update(rec_summary)
        summary.update({"tune_cache_hit": True, "tune_s": secs, "rel_err": err})
        return _Tuned(kernel, summary, kg, generated)
    log.info("%s: tuning %d templates", req.program, len(req.templates))
    result = tune(graph, req.templates, samples=samples, seed=seed, time_budget=time_budget, arch=target,
                  backend=backend, inputs=req.sampler, always=req.always)
    distinct = {(r.template, tuple(sorted(r.sizes.items()))) for r in result.records if r.stage is None}
    summary.update({
        "tune_s": result.seconds.get("total", 0.0),
        "samples": result.counts.get("sampled"),
        "compiled": result.counts.get("timed"),
        "failed": sum(1 for r in result.records if r.stage in (Stage.COMPILE, Stage.LAUNCH, Stage.CHECK)),
        "distinct_kernels": len(distinct),
        "best_us": result.time_us,
        "rel_err": result.rel_err,
        "arch": result.arch,
        "template": result.template_index,
        "sizes": result.sizes,
        "tune_cache_hit": False,
        "tuning": result.summary,
        # every timed sample as [template, sizes, µs]: what calibrates the static size prior
        # (scripts/zoo_prior.py); not cached
        "timed": [[r.template, r.sizes, r.time_us] for r in result.timed],
    })
    concrete = result.template.instantiate(result.sizes)
    generated = _fastest_generated(result, req.templates) if not _generates(concrete) else None
    if use_cache:
        rec = {"kernel_graph": renamed(concrete, to_cache).to_json(), "summary": {k: summary.get(k) for k in _TUNED_KEYS}}
        if generated is not None:
            rec["generated_graph"] = renamed(generated, to_cache).to_json()
        store.put_or_warn(key, rec)
    return _Tuned(result.kernel, summary, concrete, generated)


def _generates(kg: KernelGraph) -> bool:
    return any(isinstance(k, CustomKernel) for k in kg.kernels)


def _generated_only(kg: KernelGraph) -> bool:
    return all(isinstance(k, CustomKernel) for k in kg.kernels)


def _fastest_generated(result: TuneResult, templates: Sequence[KernelGraph]) -> KernelGraph | None:
    """The fastest timed sample of ``result`` whose plan has a generated kernel, concrete (None: none
    was timed). Not checked here: a stitched plan made with it is checked when it wins (``tune``)."""
    timed = [r for r in result.timed if _generates(templates[r.template])]
    best = min(timed, key=lambda r: (cast(float, r.time_us), r.index), default=None)
    return None if best is None else templates[best.template].instantiate(best.sizes)


def _tail_of(tuned: Sequence[_Tuned]) -> Tail | None:
    """The padding the parts tuned so far chose (the first that has one)."""
    return next((t.plan.tail for t in tuned if t.plan.tail is not None), None)


def _padded_to(templates: Sequence[KernelGraph], sources: Sequence[PlanSource],
               tail: Tail | None) -> tuple[list[KernelGraph], list[PlanSource]]:
    """A part's templates to tune once an earlier part chose padding ``tail``: those unpadded or padded
    alike, so that the parts' plans stitch (``partition.stitchable``); all of them where that leaves
    none. Random attention programs over 24 keys had parts tuned to 64 and 128: no stitched plan."""
    keep = [i for i, t in enumerate(templates) if tail is None or t.tail in (None, tail)]
    keep = keep or list(range(len(templates)))
    return [templates[i] for i in keep], [sources[i] for i in keep]


def _stitchings(tuned: Sequence[_Tuned]) -> list[list[KernelGraph]]:
    """The plans of the parts to stitch: each part's tuned plan; and, where a part's winner is made of
    predefined kernels only but a generated plan of it was timed, the same with that one too. Each
    part is tuned alone, so a vendor kernel that wins its part by a hair can lose in the whole
    program: post_norm at decode ran 7.6-7.7 µs with its matmul part's vendor GEMM and 7.16 µs with its
    generated one (H200; docs/off-the-suite.md, "Stitched plans with generated parts"). The whole
    program's tuning times both."""
    first = [t.plan for t in tuned]
    second = [t.generated or t.plan for t in tuned]
    return [first] if second == first else [first, second]


def _tuned_hit(req: _TuneRequest, backend: Backend, store: JsonCache, key: str, to_cache: Mapping[str, str],
               seed: int) -> tuple[Any, KernelGraph, Summary, float, float, KernelGraph | None] | None:
    """The cached tuned plan of ``req`` (stored under the cache's names, ``to_cache``) when it still
    compiles, runs and passes the reference check (kernel, plan, its cached summary, relative error,
    seconds, the generated alternative ``_fastest_generated`` stored with it); None (evicting a bad
    entry) otherwise."""
    graph = req.graph
    back = {pos: mine for mine, pos in to_cache.items()}

    def plan(doc: Any) -> KernelGraph:
        return _fitting([validate(renamed(KernelGraph.from_json(doc), back))], graph)[0]

    hit = store.get(key, lambda p: (plan(p["kernel_graph"]), cast(Summary, dict(p["summary"])),
                                    plan(p["generated_graph"]) if "generated_graph" in p else None))
    if hit is None:
        return None
    kg, rec_summary, generated = hit
    t0 = time.perf_counter()
    try:
        kernel = backend.compile(kg)
        backend.setup(graph, req.sampler(seed))
        # never trust a cache blindly: check the kernel against the float64 reference again
        checked = req.sampler(seed + 0xCAC4E)
        err = reference_error(backend, kernel, graph, checked)
    except (PrismError, KeyError, ValueError, TypeError) as e:  # decoded, but not a working plan
        kernel, err = None, math.inf
        log.warning("cached tuned kernel %s does not run (%s)", key, e)
    if kernel is not None and err < bound_for(graph, err, checked):
        return kernel, kg, rec_summary, err, time.perf_counter() - t0, generated
    store.evict(key, f"a kernel that fails the reference check (rel. error {err:.3g})")
    return None


class Superoptimized:
    """What ``superoptimize`` returns: the compiled kernel (with the CUDA backend an ``OptimizedGraph``:
    call it on torch tensors or CuPy arrays, same signature) plus ``summary`` and the chosen
    ``kernel_graph``."""

    def __init__(self, kernel: Any, summary: Summary, kernel_graph: KernelGraph) -> None:
        self.kernel = kernel  # what the backend compiled (the interpreter backend: a KernelGraph)
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
