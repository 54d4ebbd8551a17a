"""Legal size assignments of a μGraph template for its concrete shapes and a GPU architecture.

The one home of size legality: the tuner enumerates its search space here and ``python -m prism
emit`` picks its default here. A template's sizes (grid dims and for-loop extents) are symbols
shared by name across its kernels. An assignment is legal when

* every split divides its dim and the instantiated μGraph validates (``prism.ir.infer``),
* each kernel's grid is within the CUDA limits (``prism.codegen.arch.MAX_GRID``),
* the code generator lowers it within the architecture's shared memory per block and thread limit
  (a resources function, by default ``prism.codegen.resources.resources``; None for no such filter).

Candidate values of a symbol are, for the tuner, the divisors of the tensors' dims and the powers
of two up to the largest dim (:func:`candidate_values`); for ``emit``, the powers of two up to 4096
(:data:`POW2`). The enumeration backtracks over the symbols in order and checks each Load's
divisibility as soon as its factors are known, so it never builds the whole product.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import random
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from prism.codegen.arch import ARCHS, MAX_GRID, MAX_THREADS
from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import DEFAULT_OPTIONS, Options, mma_width
from prism.codegen.lowered import HALF_DTYPES
from prism.codegen.resources import KernelResources, Resources, resources
from prism.errors import CodegenError, IRError, TuningError
from prism.ir import (
    CustomKernel,
    KernelGraph,
    Load,
    MatmulOp,
    PredefinedKernel,
    check_structure,
    infer,
    predefined_shape,
)

POW2 = tuple(2**e for e in range(13))  # 1 .. 4096: emit's candidate values


class Footprint(Protocol):
    """What a concrete μGraph needs per thread block (the maximum over its kernels)."""

    @property
    def smem_bytes(self) -> int: ...

    @property
    def threads(self) -> int: ...


@dataclass(frozen=True)
class Usage:
    """A plain :class:`Footprint` (resources functions other than the code generator's)."""

    smem_bytes: int
    threads: int


# resources(kg, arch) -> the footprint of a concrete μGraph, or raises CodegenError when it cannot lower.
type ResourceFn[F: Footprint] = Callable[[KernelGraph, str], F]


def smem_budget(arch: str) -> int:
    """Shared memory one thread block may opt into on ``arch`` (TuningError if unknown)."""
    if arch not in ARCHS:
        raise TuningError(f"unknown architecture {arch!r}; known: {', '.join(ARCHS)}")
    return ARCHS[arch].smem_max


def candidate_values(template: KernelGraph) -> list[int]:
    """Divisors of every input/output dim and powers of two up to the largest dim, ascending."""
    dims = {d for t in (*template.inputs, *template.outputs) for d in t.shape}
    top = max(dims, default=1)
    values = {1 << k for k in range(top.bit_length()) if 1 << k <= top}
    for d in dims:
        values.update(v for v in range(1, math.isqrt(d) + 1) if d % v == 0)
        values.update(d // v for v in range(1, math.isqrt(d) + 1) if d % v == 0)
    return sorted(values)


@dataclass(frozen=True)
class _Split:
    """A Load of an input tensor: ``extent`` must be divisible by the product of ``factors``."""

    extent: int
    factors: tuple[int | str, ...]

    def symbols(self) -> set[str]:
        return {f for f in self.factors if isinstance(f, str)}

    def ok(self, sizes: Mapping[str, int]) -> bool:
        div = math.prod(sizes[f] if isinstance(f, str) else f for f in self.factors)
        return self.extent % div == 0


def _splits(template: KernelGraph) -> list[_Split]:
    """Every grid split of a tensor whose shape is size-free: an input, or what a predefined kernel makes
    of such tensors (a vendor GEMM's output read by a row-wise kernel of a constructed plan)."""
    shapes = {t.name: t.shape for t in template.inputs}
    out = []
    for k in template.kernels:
        if isinstance(k, PredefinedKernel):
            if all(t in shapes for t in k.inputs):
                with contextlib.suppress(IRError):  # infer() reports it for every assignment
                    shapes[k.output] = predefined_shape(template, k, [shapes[t] for t in k.inputs])
            continue
        for op in k.ops:
            if not isinstance(op, Load) or op.tensor not in shapes:
                continue  # a generated kernel's output: its shape depends on the sizes; infer() checks it
            shape = shapes[op.tensor]
            for a, extent in enumerate(shape):
                factors: list[int | str] = [g for p, g in enumerate(k.grid) if p < len(op.imap) and op.imap[p] == a]
                if op.fmap == a:
                    factors.append(k.loop)
                if factors:
                    out.append(_Split(extent, tuple(factors)))
    return out


_GENERATOR = resources  # the code generator's own footprint: sizes legal where the code generator lowers them


def _mma_possible(template: KernelGraph) -> bool:
    """(Under the code generator's footprint.) False when a generated matmul's contraction or output
    width is not a multiple of 16 (``lower.mma_width`` of the default options) even at its full extent
    (every size 1: one block, one iteration): a tile divides it, so no size assignment can lower
    (``lower._check_matmul``). A random program's 485
    templates with a contraction of 24 cost ~400 lowerings each to find no legal size (16 s of a
    tuning's enumeration, docs/search-speed.md). Likewise a generated matmul in a program whose inputs
    or outputs are float32: a random float32 attention spent 150 s finding no size for its padded plans."""
    if not any(isinstance(op, MatmulOp) for k in template.kernels if isinstance(k, CustomKernel) for op in k.ops):
        return True
    if {t.dtype for t in (*template.inputs, *template.outputs)} - set(HALF_DTYPES):
        return False  # tensor-core code takes half inputs and outputs only (``lower._tensor_dtypes``)
    try:
        _, per_kernel = infer(template.instantiate(dict.fromkeys(template.symbols, 1)), structure=False)
    except IRError:
        return True  # not decided here: the size assignments are checked one by one
    for k, ks in zip(template.kernels, per_kernel, strict=True):
        if not isinstance(k, CustomKernel) or ks is None:
            continue
        for op in k.ops:
            if isinstance(op, MatmulOp):
                ta, tb = ks.tiles[op.a], ks.tiles[op.b]
                if ta is not None and tb is not None and (ta[-1] % 16 or tb[-1] % mma_width(DEFAULT_OPTIONS)):
                    return False
    return True


def _grid_ok(kg: KernelGraph) -> bool:
    for k in kg.kernels:
        if isinstance(k, CustomKernel) and any(int(g) > lim for g, lim in zip(k.grid, MAX_GRID, strict=False)):
            return False
    return True


def _footprint[F: Footprint](kg: KernelGraph, arch: str, resources: ResourceFn[F] | None, max_threads: int,
                             structure: bool) -> tuple[bool, F | None]:
    """(legal, the resources function's footprint) of a concrete μGraph."""
    try:
        infer(kg, structure=structure)
    except IRError:
        return False, None
    if not _grid_ok(kg):
        return False, None
    if resources is None:
        return True, None
    try:
        use = resources(kg, arch)
    except CodegenError:
        return False, None
    return use.smem_bytes <= smem_budget(arch) and use.threads <= max_threads, use


def is_legal(kg: KernelGraph, arch: str, *, resources: ResourceFn[Footprint] | None = None,
             max_threads: int = MAX_THREADS, structure: bool = True) -> bool:
    """Whether a concrete μGraph is legal on ``arch`` (shapes, grid limits, shared memory, threads);
    ``structure=False`` when the template's size-free structure was checked already."""
    return _footprint(kg, arch, resources, max_threads, structure)[0]


def _split_checks(template: KernelGraph) -> list[list[_Split]] | None:
    """Per symbol (in order), the splits to check once it is assigned (a split is checked as soon
    as the last of its symbols is); None when a split of constants alone fails."""
    order = {s: i for i, s in enumerate(template.symbols)}
    checks: list[list[_Split]] = [[] for _ in template.symbols]
    for sp in _splits(template):
        syms = sp.symbols()
        if syms:
            checks[max(order[s] for s in syms)].append(sp)
        elif not sp.ok({}):
            return None
    return checks


def iter_legal[F: Footprint](template: KernelGraph, *, arch: str, resources: ResourceFn[F] | None,
                             values: Sequence[int] | None = None,
                             max_threads: int = MAX_THREADS) -> Iterator[tuple[dict[str, int], F | None]]:
    """Legal assignments with their footprints (None without a resources function), in
    lexicographic order of (symbols in order, ``values`` ascending; default :func:`candidate_values`)."""
    smem_budget(arch)  # unknown arch: fail before enumerating
    try:
        check_structure(template)  # size-free: once per template, not per size assignment
    except IRError:
        return
    symbols = template.symbols
    vals = candidate_values(template) if values is None else sorted(values)
    checks = _split_checks(template)
    if checks is None or (resources is _GENERATOR and not _mma_possible(template)):
        return
    assigned: dict[str, int] = {}

    def rec(i: int) -> Iterator[tuple[dict[str, int], F | None]]:
        if i == len(symbols):
            ok, use = _footprint(template.instantiate(assigned), arch, resources, max_threads, False)
            if ok:
                yield dict(assigned), use
            return
        for v in vals:
            assigned[symbols[i]] = v
            if all(sp.ok(assigned) for sp in checks[i]):
                yield from rec(i + 1)
        assigned.pop(symbols[i], None)

    yield from rec(0)


def sample_legal_sizes(template: KernelGraph, *, arch: str, count: int, rng: random.Random | None = None,
                       values: Sequence[int] = POW2, resources: ResourceFn[Footprint] | None = resources,
                       max_checks: int = 256) -> list[dict[str, int]]:
    """Up to ``count`` distinct legal assignments without enumerating them all (a stitched template
    has thousands): each is the first legal leaf of one depth-first descent that tries the values
    of every symbol in ascending order (``rng`` None: the lexicographically first assignments) or
    in an order drawn from ``rng``; divisibility is checked as soon as a split's symbols are known,
    and at most ``max_checks`` complete assignments are checked (instantiated and lowered) in all."""
    smem_budget(arch)
    try:
        check_structure(template)
    except IRError:
        return []
    symbols = template.symbols
    vals = sorted(values)
    checks = _split_checks(template)
    if checks is None or (resources is _GENERATOR and not _mma_possible(template)):
        return []
    budget = [max_checks]
    tried: set[tuple[int, ...]] = set()  # complete assignments checked already (legal or not)
    assigned: dict[str, int] = {}

    def descend(i: int) -> dict[str, int] | None:
        if i == len(symbols):
            key = tuple(assigned[s] for s in symbols)
            if key in tried:
                return None
            tried.add(key)
            budget[0] -= 1
            legal = _footprint(template.instantiate(assigned), arch, resources, MAX_THREADS, False)[0]
            return dict(assigned) if legal else None
        for v in (vals if rng is None else rng.sample(vals, len(vals))):
            if budget[0] <= 0:
                return None
            assigned[symbols[i]] = v
            if all(sp.ok(assigned) for sp in checks[i]) and (found := descend(i + 1)) is not None:
                return found
        assigned.pop(symbols[i], None)
        return None

    out: list[dict[str, int]] = []
    while len(out) < count and budget[0] > 0:
        assigned.clear()
        found = descend(0)
        if found is None:
            break
        out.append(found)
    return out


def drawn_sizes(template: KernelGraph, arch: str, resources: ResourceFn[Footprint] | None, count: int,
                max_checks: int = 192) -> list[dict[str, int]]:
    """Up to ``count`` legal sizes over :func:`candidate_values` (the divisors of the shapes, not only
    powers of two) by random descents seeded by the template; when those find none, the first ones in
    ascending order. Random values of a symbol whose splits are only checked at the leaves (a row-wise
    kernel reading a generated kernel's output) rarely divide, so the random descents can spend their
    checks without a legal leaf: on the H200 a transformers region's constructed plan (4 symbols, 23
    values each) was never timed, though it had legal sizes (docs/capture.md, fifth run). A plan with
    a padded tail draws from the powers of two first: a decode attention's split plan padded to 1,536
    positions had 20 legal power-of-two sizes, and 192 checks over all divisors found none."""
    rng = random.Random(zlib.crc32(template.dumps().encode()))
    values = candidate_values(template)
    tries: list[tuple[random.Random | None, list[int]]] = [(rng, values), (None, values)]
    if template.tail is not None:  # a padded extent is a multiple of a power of two: those values first
        tries.insert(0, (rng, [v for v in values if v & (v - 1) == 0]))
    for order, vals in tries:
        drawn = sample_legal_sizes(template, arch=arch, count=count, rng=order, values=vals,
                                   resources=resources, max_checks=max_checks)
        if drawn:
            return drawn
    return []


def has_sizes(template: KernelGraph, arch: str = "sm_80") -> bool:
    """Whether the tuner finds a size assignment of ``template`` that the code generator lowers: the
    same bounded draws over the same candidate values as the tuner's first round (not powers of two
    alone: a GEMV over 11,008 features tiles its columns by 688 = 16 x 43)."""
    return bool(drawn_sizes(template, arch, resources, 1))


def iter_legal_sizes(template: KernelGraph, *, arch: str, max_threads: int = MAX_THREADS,
                     resources: ResourceFn[Footprint] | None = resources,
                     values: Sequence[int] | None = None) -> Iterator[dict[str, int]]:
    """The assignments of :func:`iter_legal`, without footprints."""
    for sizes, _ in iter_legal(template, arch=arch, resources=resources, values=values, max_threads=max_threads):
        yield sizes


def legal_sizes(template: KernelGraph, *, arch: str, max_threads: int = MAX_THREADS, limit: int | None = None,
                resources: ResourceFn[Footprint] | None = resources,
                values: Sequence[int] | None = None) -> list[dict[str, int]]:
    """Every legal assignment of ``template.symbols`` (at most ``limit``), see the module docstring.

    ``resources(kg, arch)`` reports shared memory and threads per block of a concrete μGraph (or
    raises CodegenError); by default the code generator's; pass None for no such filter.
    """
    out: list[dict[str, int]] = []
    for sizes in iter_legal_sizes(template, arch=arch, max_threads=max_threads, resources=resources, values=values):
        out.append(sizes)
        if limit is not None and len(out) >= limit:
            break
    return out


def generated_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None,
                    values: Sequence[int] = POW2) -> Iterator[tuple[dict[str, int], Resources]]:
    """Every legal assignment of ``values`` (default: powers of two) with the generator's resources."""
    fn = functools.partial(resources, options=options)
    for sizes, res in iter_legal(template, arch=arch, resources=fn, values=values):
        assert res is not None
        yield sizes, res


LATENCY_BYTES = 256 * 1024  # bytes a whole grid moves in about one loop iteration's latency (~0.1-0.2 µs)


def iteration_cost(k: KernelResources) -> float:
    """The prior's charge for one kernel's loop iterations: 0.1 each while an iteration moves less
    than ``LATENCY_BYTES`` over the whole grid (its latency shows), falling with the grid's bytes per
    iteration past that (a pipelined stream hides it: 16 iterations of 2 MB cost what 8 of 4 MB do)."""
    grid_bytes = max(k.blocks * k.stage_bytes, 1)
    return 0.1 * k.loop * k.rounds * min(1.0, LATENCY_BYTES / grid_bytes)


def size_score(res: Resources, sms: int) -> float:
    """A static prior over size choices, higher is better: about one wave of blocks, stages of ~16 KB,
    few loop iterations where their latency shows (``iteration_cost``), one launch (a split kernel fused
    with its combine is one: a decode LoRA GEMV split 4 ways, fused, ran 12.8 µs where the prior's
    two-launch picks ran 14.3-16.3; docs/off-the-suite.md, "The prior counts launches").
    A later kernel's blocks count too, in the share of the first kernel's bytes it loads
    (``_later_blocks_term``). Before ``iteration_cost`` (0.1 per iteration everywhere) its rank
    correlation with times measured on the H200 was 0.54-0.87 on the GEMV parts of a captured decoder
    layer at batch 1, -0.09-0.57 at batch 16 (docs/off-the-suite.md, "What the tuner samples")."""
    first = res.kernels[0]
    blocks_term, stage_term = _kernel_terms(first, sms)
    blocks_term += sum(_later_blocks_term(k, first, sms) for k in res.kernels[1:])
    loops = sum(iteration_cost(k) for k in res.kernels)
    rereads = sum(max(0.0, math.log2(max(k.reread, 1.0)) - 1) for k in res.kernels)
    return -blocks_term - 0.5 * stage_term - loops - 0.5 * (res.launches - 1) - 0.5 * rereads


def _kernel_terms(k: KernelResources, sms: int) -> tuple[float, float]:
    """(blocks term, stage or tile term) of one kernel."""
    if k.loop == 1 and k.tile_bytes:
        return _loop_free_terms(k, sms)
    return abs(math.log2(k.blocks / (0.75 * sms * k.per_sm))), abs(math.log2(max(k.stage_bytes, 1024) / 16384))


def _later_blocks_term(k: KernelResources, first: KernelResources, sms: int) -> float:
    """A later kernel's blocks term, weighted by the bytes its grid loads over the first kernel's (at
    most 1): a combine that reads a split's small partials weighs little, but the element-wise kernel
    of a statistics-then-normalise pipeline, which reads the whole row again, as much as the first
    (a 128K-vocabulary softmax's pipelines ranked one block of it first, and ran 120-195 µs at decode
    where the plan's 64-block sizes ran 16-29; docs/off-the-suite.md, "Partials reduced before they
    are saved")."""
    weight = min(1.0, k.grid_bytes / max(first.grid_bytes, 1))
    return weight * _kernel_terms(k, sms)[0]


RUN_BYTES = 128  # a loaded tile's rows shorter than this waste DRAM bursts


def _loop_free_terms(k: KernelResources, sms: int) -> tuple[float, float]:
    """(blocks term, tile term) of a kernel without a loop: at least about one wave of blocks but as
    many waves as its tiles of ~16 KB make (8 MB element-wise at 128 blocks ran 11.5-11.9 µs, at 512-1024
    8.0-8.8: docs/codegen.md, "Blocks of loop-free kernels"), and no tile rows shorter than ``RUN_BYTES``."""
    blocks_term = max(0.0, math.log2(0.75 * sms / k.blocks))
    run_term = max(0.0, math.log2(RUN_BYTES / max(k.run_bytes, 1)))
    return blocks_term + run_term, abs(math.log2(max(k.tile_bytes, 1024) / 16384))


ASCENT_CHECKS = 160  # lowerings one prior ascent may spend (it took 0.02-0.25 s a template over the decode zoo, 2 cores)


def prior_ascent(template: KernelGraph, start: Mapping[str, int], arch: str,
                 max_checks: int = ASCENT_CHECKS) -> dict[str, int]:
    """A legal size assignment at least as good by the static prior ``size_score`` as ``start`` (legal):
    coordinate ascent over :func:`candidate_values`, each symbol in turn moved to its best value with
    the others fixed, until a sweep moves none or ``max_checks`` lowerings are spent. For a template
    too large to enumerate, whose legal sizes are drawn at random (``drawn_sizes``): a 128K-vocabulary
    softmax's 3-launch plan has ~5 · 10^5 assignments, and 48 drawn ones missed the prior's best few
    (its 7.7-8.0 µs sizes at decode, against 9.9 for the best drawn; docs/off-the-suite.md, "The prior
    climbs from the drawn sizes")."""
    symbols, values = template.symbols, candidate_values(template)
    checks = _split_checks(template) or []
    splits = [sp for per in checks for sp in per]
    sms, budget = get_arch(arch).sms, [max_checks]
    scored: dict[tuple[int, ...], float | None] = {}

    def score(sizes: dict[str, int]) -> float | None:
        key = tuple(sizes[s] for s in symbols)
        if key not in scored:
            if not all(sp.ok(sizes) for sp in splits):
                scored[key] = None
            elif budget[0] <= 0:
                return None
            else:
                budget[0] -= 1
                ok, use = _footprint(template.instantiate(sizes), arch, resources, MAX_THREADS, False)
                scored[key] = size_score(use, sms) if ok and use is not None else None
        return scored[key]

    best = dict(start)
    best_score, moved = score(best), True
    if best_score is None:
        return best
    while moved and budget[0] > 0:
        moved = False
        for sym, v in itertools.product(symbols, values):
            cand = {**best, sym: v}
            if v != best[sym] and (sc := score(cand)) is not None and sc > best_score:
                best, best_score, moved = cand, sc, True
    return best


def default_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None) -> dict[str, int]:
    """A legal size choice by the static prior ``size_score``: the best of the power-of-two assignments
    and the tuner's draws over the divisors (``drawn_sizes``: a dim of 11,008 or 50,257 has no
    power-of-two size that lowers, and 5 rows of a norm are 5 blocks, not 1); CodegenError if there is
    none."""
    sms = get_arch(arch).sms
    fn = functools.partial(resources, options=options)
    drawn = ((sz, fn(template.instantiate(sz), arch)) for sz in drawn_sizes(template, arch, fn, 16))
    candidates = itertools.chain(generated_sizes(template, arch, options=options), drawn)
    scored = [(size_score(res, sms), sizes) for sizes, res in candidates]
    if scored:
        return max(scored, key=lambda c: c[0])[1]  # the first of equal scores
    raise CodegenError(f"{template.program}: no legal size choice for {template.symbols} among powers of two "
                       "or the divisors of the shapes")
