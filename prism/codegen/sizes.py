"""Legal size choices of a μGraph template (symbolic grid / loop sizes) and a default pick.

The tuner owns the real search over sizes; this module only enumerates powers of two that pass the
IR's divisibility checks and the generator's resource checks (``resources``), and picks a
reasonable default for ``python -m prism emit``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import Options
from prism.codegen.resources import Resources, resources
from prism.errors import CodegenError, IRError
from prism.ir import KernelGraph

POW2 = tuple(2**e for e in range(13))  # 1 .. 4096


def legal_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None,
                values: tuple[int, ...] = POW2) -> Iterator[tuple[dict[str, int], Resources]]:
    """Every assignment of ``values`` to the template's symbols that generates, with its resources."""
    syms = template.symbols
    for combo in itertools.product(values, repeat=len(syms)):
        sizes = dict(zip(syms, combo, strict=True))
        try:
            res = resources(template.instantiate(sizes), arch, options=options)
        except (IRError, CodegenError):
            continue
        yield sizes, res


def _score(res: Resources, sms: int) -> tuple[float, ...]:
    """Higher is better: fill the GPU with blocks (1-2 waves), then a moderate pipeline."""
    first = res.kernels[0]
    blocks = first.blocks
    fill = min(blocks, 2 * sms) / (2 * sms)
    waves = -(-blocks // sms)
    balance = blocks / (waves * sms)
    return (round(fill, 2), round(balance, 2), min(first.stages, 4), -len(res.kernels), -first.smem_bytes)


def default_sizes(template: KernelGraph, arch: str = "sm_80", *, options: Options | None = None) -> dict[str, int]:
    """A legal size choice by a simple occupancy heuristic (CodegenError if there is none)."""
    best: tuple[tuple[float, ...], dict[str, int]] | None = None
    sms = get_arch(arch).sms
    for sizes, res in legal_sizes(template, arch, options=options):
        s = _score(res, sms)
        if best is None or s > best[0]:
            best = (s, sizes)
    if best is None:
        raise CodegenError(f"{template.program}: no legal size choice among powers of two for {template.symbols}")
    return best[1]
