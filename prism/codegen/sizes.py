"""Legal size choices of a μGraph template (symbolic grid / loop sizes) and a default pick.

The tuner owns the real search over sizes; this module only enumerates powers of two that pass the
IR's divisibility checks and the generator's resource checks (``resources``), and picks a
reasonable default for ``python -m prism emit``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import Options
from prism.codegen.resources import Resources, resources
from prism.errors import CodegenError, IRError
from prism.ir import CustomKernel, KernelGraph

POW2 = tuple(2**e for e in range(13))  # 1 .. 4096


def legal_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None,
                values: tuple[int, ...] = POW2) -> Iterator[tuple[dict[str, int], Resources]]:
    """Every assignment of ``values`` to the template's symbols that generates, with its resources."""
    syms = template.symbols
    for combo in itertools.product(values, repeat=len(syms)):
        sizes = dict(zip(syms, combo, strict=True))
        if not _inputs_divide(template, sizes):
            continue
        try:
            res = resources(template.instantiate(sizes), arch, options=options)
        except (IRError, CodegenError):
            continue
        yield sizes, res


def _inputs_divide(template: KernelGraph, sizes: dict[str, int]) -> bool:
    """Cheap pre-check: the splits of every Load of a program input divide its dims."""
    shapes = {t.name: t.shape for t in template.inputs}

    def val(s: int | str) -> int:
        return sizes[s] if isinstance(s, str) else s

    for k in template.kernels:
        if not isinstance(k, CustomKernel):
            continue
        grid = [val(g) for g in k.grid]
        loop = val(k.loop)
        for op in k.loads:
            shape = shapes.get(op.tensor)
            if shape is None:
                continue
            for a, extent in enumerate(shape):
                div = 1
                for p, g in enumerate(grid):
                    if p < len(op.imap) and op.imap[p] == a:
                        div *= g
                if op.fmap == a:
                    div *= loop
                if extent % div:
                    return False
    return True


def _score(res: Resources, sms: int) -> float:
    """Higher is better. Measured on an H200 (notes/codegen.md): about one wave of blocks, stages of
    ~16 KB, few loop iterations in total (each costs ~0.1-0.2 µs of latency), one kernel."""
    first = res.kernels[0]
    blocks_term = abs(math.log2(first.blocks / (0.75 * sms)))
    stage_term = abs(math.log2(max(first.stage_bytes, 1024) / 16384))
    iters = sum(k.loop for k in res.kernels)
    return -blocks_term - 0.5 * stage_term - 0.1 * iters - 0.5 * (len(res.kernels) - 1)


def default_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None) -> dict[str, int]:
    """A legal size choice by a simple occupancy heuristic (CodegenError if there is none)."""
    best: tuple[float, dict[str, int]] | None = None
    sms = get_arch(arch).sms
    for sizes, res in legal_sizes(template, arch, options=options):
        s = _score(res, sms)
        if best is None or s > best[0]:
            best = (s, sizes)
    if best is None:
        raise CodegenError(f"{template.program}: no legal size choice among powers of two for {template.symbols}")
    return best[1]
