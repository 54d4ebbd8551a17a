"""The symbolic search alone on every zoo program and its searchable parts: candidates and seconds.

    PYTHONPATH=. python scripts/search_survey.py [--which decode] OUT.jsonl

One line per distinct structure (the whole program where the pipeline searches it whole, then each
searchable part under its names by position, as ``pipeline._search_parts`` searches it): the
candidate count, a digest of the candidates' kernels in order (two trees, or two hash seeds, that
search alike give equal digests), whether the search timed out or stopped early, and its seconds.
No cache: every structure is searched (``prism.search.search``, the default config, 30 s budget).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Iterator

from bench.zoo import ZOO, zoo_graph
from prism.graph import Graph
from prism.partition import canonical, partition
from prism.pipeline import WHOLE_PROGRAM_OPS, default_config, primitive_ops
from prism.rows import searched_graph
from prism.search import search


def searched_graphs(name: str, which: str) -> Iterator[tuple[str, Graph]]:
    """The graphs ``search_and_verify`` searches for zoo program ``name``, labelled whole or p<i>."""
    g = searched_graph(zoo_graph(name, which)).without_dead_ops()
    if primitive_ops(g) <= WHOLE_PROGRAM_OPS:
        yield "whole", g
    parts = partition(g)
    if len(parts) > 1:
        for part in parts:
            if part.searchable:
                yield f"p{part.index}", canonical(part.inner or part.graph)[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--which", default="decode")
    args = ap.parse_args()
    seen: set[str] = set()
    with open(args.out, "w") as out:
        for name, program in ZOO.items():
            if getattr(program, args.which) is None:
                continue
            for label, g in searched_graphs(name, args.which):
                if (key := g.structure_key()) in seen:
                    continue
                seen.add(key)
                t0 = time.perf_counter()
                res = search(g, default_config(g, 30))
                digest = hashlib.sha256("\n".join(repr(c.kernels) for c in res.candidates).encode()).hexdigest()
                row = {"program": name, "graph": label, "n": len(res.candidates), "digest": digest[:16],
                       "timed_out": res.stats["timed_out"], "stopped_early": res.stats.get("stopped_early", False),
                       "seconds": round(time.perf_counter() - t0, 2)}
                print(json.dumps(row), file=out, flush=True)


if __name__ == "__main__":
    main()
