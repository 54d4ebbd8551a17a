"""Stepped copies over the zoo (CPU, no GPU; docs/codegen.md, "Stepped copies").

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/stepped_copies_check.py [--every 7] [--templates 3]

For each zoo program whose whole-program search is in the cache (no search runs here), at decode and
prefill sizes: its first searched templates at two legal sizes each, lowered with the default options.
Every stepped loader's body is read line by line and must copy what the item-by-item body copies (every
``--every``-th thread and the last, every copy, padded tails at three limits: ``tests/test_stepped_copies``'s
evaluators). Then the kernels whose source the option changes are compiled with nvcc both ways:
registers and spills.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.zoo import ZOO, zoo_graph
from prism import pipeline
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.lower import global_strides, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check
from prism.codegen.render_load import shared_address
from prism.codegen.sizes import POW2, generated_sizes
from prism.errors import CodegenError, IRError
from prism.graph import Graph
from prism.ir import KernelGraph
from prism.rows import searched_graph
from tests.test_stepped_copies import _new, _old


def cached_outcomes(whiches: tuple[str, ...], names: Iterable[str] | None = None
                    ) -> Iterator[tuple[str, str, Graph, pipeline.SearchOutcome]]:
    """(name, which, searched graph, search outcome) of each zoo program (of ``names``, default all) at
    ``whiches`` sizes whose whole-program search is in the cache (no search runs)."""
    for which, name in itertools.product(whiches, sorted(ZOO if names is None else set(names) & set(ZOO))):
        try:
            graph = searched_graph(zoo_graph(name, which))
        except ValueError:
            continue  # no sizes of this kind
        if pipeline._ran(graph, True, None):
            yield name, which, graph, pipeline.search_and_verify(graph, program=name, progress=False)


def plans(templates: int) -> list[tuple[str, KernelGraph]]:
    out = []
    for name, which, _, outcome in cached_outcomes(("decode", "prefill")):
        for t in outcome.of(pipeline.PlanSource.SEARCHED)[:templates]:
            legal = [sz for sz, _ in itertools.islice(generated_sizes(t, "sm_80", values=POW2), 200)]
            out += [(f"{name}:{which}", t.instantiate(sz)) for sz in legal[:: max(1, len(legal) // 2)][:2]]
    return out


def check_loaders(low: KernelLowering, every: int) -> int:
    n = 0
    for lp in (lp for lp in low.loads if lp.stepped and shared_address(lp)):  # (as render_loader steps them)
        gst = global_strides(low.tensor_shapes[lp.tensor])
        axis = None if low.tails is None or lp.op not in low.tails.loads else low.tails.loads[lp.op][1]
        lims = (0,) if axis is None else (1, max(1, lp.buf.shape[axis] // 2), lp.buf.shape[axis] - 1)
        for lim, tid in itertools.product(lims, sorted({*range(0, lp.sweep.threads, every), lp.sweep.threads - 1})):
            assert _new(lp, gst, axis, tid, lim) == _old(lp, gst, axis, tid, lim), (lp, tid, lim)
        n += 1
    return n


Pair = tuple[str, Any, Any]  # (label, kernel with the option, the same kernel without)


def changed(label: str, on: Iterable[Any], off: Iterable[Any]) -> list[Pair]:
    """The kernels (generated both ways, in the same order) whose source the option changes."""
    return [(label, a, b) for a, b in zip(on, off, strict=True)
            if a.source.replace(a.entry, "k") != b.source.replace(b.entry, "k")]


def compare_compiled(pairs: list[Pair], name: str, *, spilling: bool = False) -> None:
    """Compile ``pairs`` with nvcc both ways and print spills and registers (each spilling pair too)."""
    on_c: list[Any] = compile_check([(a.entry, a.source) for _, a, _ in pairs], "sm_80")
    off_c: list[Any] = compile_check([(b.entry, b.source) for _, _, b in pairs], "sm_80")
    both = list(zip(on_c, off_c, strict=True))
    diffs = [a.registers - b.registers for a, b in both]
    for (label, _, _), (a, b) in zip(pairs, both, strict=True):
        if spilling and (a.spills or b.spills):
            print(f"  {label}: spills {a.spills} {name}, {b.spills} item by item ({a.registers} / {b.registers} registers)")
    print(f"{len(pairs)} kernels whose source the option changes ({len({lbl for lbl, _, _ in pairs})} programs): "
          f"spilling {sum(a.spills > 0 for a, _ in both)} {name}, {sum(b.spills > 0 for _, b in both)} item by item; "
          f"registers {name} minus item by item: mean {sum(diffs) / max(1, len(diffs)):.1f}, "
          f"fewer in {sum(d < 0 for d in diffs)}, more in {sum(d > 0 for d in diffs)}")


def sweep_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=7)
    ap.add_argument("--templates", type=int, default=3)
    return ap.parse_args()


def sweep(templates: int, off: Options, check: Callable[[list[KernelLowering], list[Any]], int]
          ) -> tuple[int, list[Pair]]:
    """Over ``plans(templates)``: ``check`` (the lowered kernels, their sources with the default options)
    summed, and the kernels whose source ``off`` (the option switched off) changes."""
    checked, pairs = 0, []
    for label, kg in plans(templates):
        try:
            lowered = [low for low in lower_graph(kg, arch("sm_80"), Options()).kernels if low is not None]
            on, no = (generate(kg, arch="sm_80", options=o).kernels for o in (Options(), off))
        except (CodegenError, IRError):
            continue
        checked += check(lowered, on)
        pairs += changed(label, on, no)
    return checked, pairs


def main() -> None:
    args = sweep_args()
    loaders, pairs = sweep(args.templates, Options(stepped_copies=False),
                           lambda lowered, _: sum(check_loaders(low, args.every) for low in lowered))
    print(f"{loaders} stepped loaders: each copies what the item-by-item body copies")
    compare_compiled(pairs, "stepped")

if __name__ == "__main__":
    main()
