"""Legal size assignments of an sGraph template for its concrete shapes and a GPU architecture.

A template's sizes (grid dims and for-loop extents) are symbols shared by name across its kernels.
An assignment is legal when

* every split divides its dim and the instantiated μGraph validates (``prism.ir.infer``),
* each kernel's grid is within the CUDA limits (x < 2^31, y and z ≤ 65535),
* the code generator can lower it within the architecture's shared memory per block and thread
  limit (``prism.codegen.resources``; skipped with a warning while that does not exist).

Candidate values of a symbol are the divisors of the tensors' dims and the powers of two up to the
largest dim. The enumeration backtracks over the symbols in order and checks each Load's
divisibility as soon as its factors are known, so it never builds the whole product.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from prism.errors import CodegenError, IRError, TuningError
from prism.ir import CustomKernel, KernelGraph, Load, check_structure, infer

log = logging.getLogger(__name__)

# Shared memory one thread block may use (opt-in maximum), bytes.
SMEM_BYTES: dict[str, int] = {
    "sm_80": 163 * 1024,  # A100
    "sm_86": 99 * 1024,
    "sm_89": 99 * 1024,
    "sm_90": 227 * 1024,  # H100 / H200
}
MAX_THREADS = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Usage:
    """What one concrete μGraph needs per thread block (the maximum over its kernels)."""

    smem_bytes: int
    threads: int


# resources(kg, arch) -> Usage-like (smem_bytes / threads) or raises CodegenError when it cannot lower.
Resources = Callable[[KernelGraph, str], Any]


def smem_budget(arch: str) -> int:
    if arch not in SMEM_BYTES:
        raise TuningError(f"unknown architecture {arch!r}; known: {', '.join(SMEM_BYTES)}")
    return SMEM_BYTES[arch]


def _usage(obj: Any) -> Usage:
    """Normalize what a resources function returns: an object/dict with smem and threads, or a
    sequence of such per kernel (None for pre-defined kernels)."""
    if isinstance(obj, Usage):
        return obj
    if isinstance(obj, list | tuple):
        parts = [_usage(o) for o in obj if o is not None]
        return Usage(max((p.smem_bytes for p in parts), default=0), max((p.threads for p in parts), default=0))

    def get(*names: str) -> int:
        for n in names:
            v = obj.get(n) if isinstance(obj, Mapping) else getattr(obj, n, None)
            if v is not None:
                return int(v)
        return 0

    return Usage(get("smem_bytes", "smem", "shared_bytes"), get("threads", "max_threads"))


@functools.cache
def _warn_once(msg: str) -> None:
    log.warning(msg)


def default_resources() -> Resources | None:
    """``prism.codegen.resources`` when the code generator provides it, else None (no filter)."""
    try:
        from prism import codegen
    except ImportError:
        codegen = None  # type: ignore[assignment]
    fn = getattr(codegen, "resources", None) if codegen is not None else None
    if fn is None:
        _warn_once("prism.codegen.resources is not available: legal sizes are not filtered by shared memory "
                   "or threads per block")
    return fn


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
    shapes = {t.name: t.shape for t in template.inputs}
    out = []
    for k in template.kernels:
        if not isinstance(k, CustomKernel):
            continue
        for op in k.ops:
            if not isinstance(op, Load) or op.tensor not in shapes:
                continue  # intermediates: their shapes depend on the sizes; infer() checks them
            shape = shapes[op.tensor]
            for a, extent in enumerate(shape):
                factors: list[int | str] = [g for p, g in enumerate(k.grid) if p < len(op.imap) and op.imap[p] == a]
                if op.fmap == a:
                    factors.append(k.loop)
                if factors:
                    out.append(_Split(extent, tuple(factors)))
    return out


def _grid_ok(kg: KernelGraph) -> bool:
    for k in kg.kernels:
        if isinstance(k, CustomKernel) and any(int(g) > lim for g, lim in zip(k.grid, MAX_GRID, strict=False)):
            return False
    return True


def is_legal(kg: KernelGraph, arch: str, *, resources: Resources | None = None,
             max_threads: int = MAX_THREADS, structure: bool = True) -> bool:
    """Whether a concrete μGraph is legal on ``arch`` (shapes, grid limits, shared memory, threads);
    ``structure=False`` when the template's size-free structure was checked already."""
    try:
        infer(kg, structure=structure)
    except IRError:
        return False
    if not _grid_ok(kg):
        return False
    if resources is None:
        return True
    try:
        use = _usage(resources(kg, arch))
    except CodegenError:
        return False
    return use.smem_bytes <= smem_budget(arch) and use.threads <= max_threads


_AUTO: Any = object()


def iter_legal_sizes(template: KernelGraph, *, arch: str, max_threads: int = MAX_THREADS,
                     resources: Resources | None = _AUTO) -> Iterator[dict[str, int]]:
    """Legal size assignments in lexicographic order of (symbols in order, values ascending)."""
    smem_budget(arch)  # unknown arch: fail before enumerating
    if resources is _AUTO:
        resources = default_resources()
    try:
        check_structure(template)  # size-free: once per template, not per size assignment
    except IRError:
        return
    symbols = template.symbols
    values = candidate_values(template)
    splits = _splits(template)
    # A split is checked as soon as the last of its symbols is assigned.
    order = {s: i for i, s in enumerate(symbols)}
    checks: list[list[_Split]] = [[] for _ in symbols]
    for sp in splits:
        syms = sp.symbols()
        if syms:
            checks[max(order[s] for s in syms)].append(sp)
        elif not sp.ok({}):
            return
    assigned: dict[str, int] = {}

    def rec(i: int) -> Iterator[dict[str, int]]:
        if i == len(symbols):
            kg = template.instantiate(assigned)
            if is_legal(kg, arch, resources=resources, max_threads=max_threads, structure=False):
                yield dict(assigned)
            return
        for v in values:
            assigned[symbols[i]] = v
            if all(sp.ok(assigned) for sp in checks[i]):
                yield from rec(i + 1)
        assigned.pop(symbols[i], None)

    yield from rec(0)


def legal_sizes(template: KernelGraph, *, arch: str, max_threads: int = MAX_THREADS, limit: int | None = None,
                resources: Resources | None = _AUTO) -> list[dict[str, int]]:
    """Every legal assignment of ``template.symbols`` (at most ``limit``), see the module docstring.

    ``resources(kg, arch)`` reports shared memory and threads per block of a concrete μGraph (or
    raises CodegenError); by default ``prism.codegen.resources``; pass None for no such filter.
    """
    out: list[dict[str, int]] = []
    for sizes in iter_legal_sizes(template, arch=arch, max_threads=max_threads, resources=resources):
        out.append(sizes)
        if limit is not None and len(out) >= limit:
            break
    return out
