"""Which first-round picks a change of the static prior moves (CPU, no GPU): for each zoo program at
the given sizes, its first 40 searched and constructed templates, the prior's best of up to 64
power-of-two sizes with every term (``size_score``) against the same without the terms named by MODE
(``rounds``: iterations charged as one round each; ``reread``: no charge for grids that reread inputs;
``both``).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/prior_diff.py decode both [a,b,...]
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.zoo import ZOO, zoo_graph
from prism import pipeline
from prism.codegen.resources import Resources
from prism.codegen.sizes import generated_sizes, size_score
from prism.rows import searched_graph

OFF: dict[str, dict[str, Any]] = {"rounds": {"rounds": 1}, "reread": {"reread": 1.0}, "both": {"rounds": 1, "reread": 1.0}}


def main(which: str, mode: str, only: set[str]) -> None:
    def without(r: Resources) -> float:
        return size_score(Resources(tuple(dataclasses.replace(k, **OFF[mode]) for k in r.kernels)), 132)

    total = moved = 0
    for zp in ZOO.values():
        if only and zp.name not in only:
            continue
        g = searched_graph(zoo_graph(zp.name, which))
        ts = pipeline.search_and_verify(g, program=zp.name, progress=False).of(
            pipeline.PlanSource.SEARCHED, pipeline.PlanSource.CONSTRUCTED)
        changed = []
        for ti, t in enumerate(ts[:40]):
            cands = list(itertools.islice(generated_sizes(t, "sm_90"), 64)) if t.symbols else []
            if cands:
                total += 1
                a, b = max(cands, key=lambda c: without(c[1]))[0], max(cands, key=lambda c: size_score(c[1], 132))[0]
                changed += [(ti, a, b)] if a != b else []
        moved += len(changed)
        print(zp.name, len(ts), "templates; picks moved:", len(changed), changed[:3], flush=True)
    print(f"{total} templates, {moved} picks moved")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], set(sys.argv[3].split(",")) if len(sys.argv) > 3 else set())
