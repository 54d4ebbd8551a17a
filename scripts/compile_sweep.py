"""Compile every generated source of the zoo's plans with nvcc, no GPU needed (a hardening sweep).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/compile_sweep.py decode,prefill [a,b,...]

For each non-attention zoo program (or the named ones) at the given sizes: its searched and
constructed templates (the carried or freshly made search cache), three legal sizes each (the first
power-of-two one, the static prior's best of up to 64 powers of two and 8 of the tuner's draws over the
divisors, the last draw), generated for sm_80; identical sources once.
Prints each program's count and every source nvcc rejects (with the template and sizes). A kernel
nvcc rejects is a failed compile to the tuner, which drops it without a word: a column sum's split
plans at one iteration per split were lost that way (docs/off-the-suite.md, "Column reductions").
"""

from __future__ import annotations

import itertools
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.zoo import ZOO, zoo_graph
from prism import pipeline
from prism.codegen import generate
from prism.codegen.arch import arch as arch_of
from prism.codegen.nvcc import compile_check
from prism.codegen.resources import resources
from prism.codegen.sizes import drawn_sizes, generated_sizes, size_score
from prism.errors import CodegenError, CompileError
from prism.rows import searched_graph

SMS = arch_of("sm_90").sms


def _sources(name: str, which: str) -> list[tuple[tuple[object, ...], str, str]]:
    """(tag, entry, source) of the program's templates at three sizes each, identical sources once."""
    out = pipeline.search_and_verify(searched_graph(zoo_graph(name, which)), program=name, progress=False)
    seen: dict[str, tuple[tuple[object, ...], str, str]] = {}
    for src in (pipeline.PlanSource.SEARCHED, pipeline.PlanSource.CONSTRUCTED):
        for ti, t in enumerate(out.of(src)):
            legal = list(itertools.islice(generated_sizes(t, "sm_90"), 64))  # powers of two, and the tuner's draws
            legal += [(sz, resources(t.instantiate(sz), "sm_90")) for sz in drawn_sizes(t, "sm_90", resources, 8)]
            if not legal:
                continue
            best = max(range(len(legal)), key=lambda j: size_score(legal[j][1], SMS))
            for j in sorted({0, best, len(legal) - 1}):
                try:
                    plan = generate(t.instantiate(legal[j][0]), arch="sm_80")
                except CodegenError:
                    continue
                for k in plan.kernels:
                    if hasattr(k, "source"):
                        seen.setdefault(k.source.replace(k.entry, "E"), ((name, which, src.name, ti, legal[j][0]),
                                                                         k.entry, k.source))
    return list(seen.values())


def main(argv: list[str]) -> int:
    names = argv[1].split(",") if len(argv) > 1 else [n for n in ZOO if ZOO[n].family != "attention"]
    t0, total, failed = time.time(), 0, 0
    for which in argv[0].split(","):
        for name in names:
            if getattr(ZOO[name], which) is None:
                continue
            items = _sources(name, which)
            total += len(items)
            try:
                compile_check([(e, s) for _, e, s in items], jobs=2)
            except CompileError:
                for tag, e, s in items:
                    try:
                        compile_check([(e, s)], jobs=1)
                    except CompileError as ce:
                        failed += 1
                        print("FAIL", tag, str(ce)[:300].replace("\n", " "), flush=True)
            print(f"ok {which} {name}: {len(items)} sources ({time.time() - t0:.0f} s)", flush=True)
    print(f"{total} sources, {failed} rejected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
