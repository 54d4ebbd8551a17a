"""Graph-timed templates of zoo programs at fixed sizes, beside torch.compile (issue 14 probes).

    # CPU (with the prover): the spec, each template's prior-best legal sizes and any given ones
    PYTHONPATH=. python scripts/template_times.py spec vocab_softmax:decode,vocab_softmax:prefill \\
        --sources constructed --top 3 --out spec.json
    # device (search cache carried): time them, each checked against float64 first
    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/template_times.py time spec.json --deadline 200

Templates are numbered as ``pipeline.search_and_verify`` lists them for the program with its rows merged
as ``superoptimize`` merges them. One JSON line per timed row (``gpu_option_ab._variant``: µs and
relative error, or the error) and one per program for torch.compile.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

sys.path.insert(0, __file__.rsplit("/", 2)[0])

from bench.zoo import zoo_graph
from prism import pipeline
from prism.rows import searched_graph


def spec(entries: list[str], sources: set[str], top: int) -> list[dict[str, Any]]:
    from prism.codegen.resources import resources
    from prism.codegen.sizes import size_score
    from prism.tune import draw

    out = []
    for entry in entries:
        name, which = entry.split(":")
        found = pipeline.search_and_verify(searched_graph(zoo_graph(name, which)), program=name, progress=False)
        for t, (kg, src) in enumerate(zip(found.templates, found.sources, strict=True)):
            if src.name.lower() not in sources:
                continue
            for rank, sizes in enumerate(draw.legal_sizes_of(kg, "sm_90", resources, 3000)[:top]):
                res = resources(kg.instantiate(sizes), "sm_90")
                out.append({"name": name, "which": which, "t": t, "src": src.name, "sizes": sizes, "rank": rank,
                            "score": round(size_score(res, 132), 3), "blocks": [k.blocks for k in res.kernels],
                            "launches": res.launches})
    return out


def time_rows(rows: list[dict[str, Any]], deadline: float) -> None:
    """Each row timed as ``gpu_option_ab`` times a variant (its program's inputs, reference and check),
    at the default options; torch.compile of each program once, on the same inputs."""
    import gpu_option_ab as ab  # (scripts/ is this script's directory: on sys.path)

    from prism.codegen.lower import DEFAULT_OPTIONS

    setups: dict[tuple[str, str], Any] = {}
    for row in rows:
        if time.time() > deadline:
            print(json.dumps({"deadline": True}), flush=True)
            return
        key = (row["name"], row["which"])
        if key not in setups:
            setups[key] = ab.program_setup(*key)
            print(json.dumps(_compiled(*key, *setups[key][1:])), flush=True)
        out, args, ref = setups[key]
        rec = ab._variant(out.templates[row["t"]].instantiate(row["sizes"]), DEFAULT_OPTIONS, args, ref)
        print(json.dumps({**row, **rec}), flush=True)


def _compiled(name: str, which: str, args: list[Any], ref: list[Any]) -> dict[str, Any]:
    """torch.compile of the program: checked on ``args`` against ``ref``, then graph-timed."""
    import torch

    from prism.reference import relative_error
    from prism.torch_program import torch_program
    from prism.tune.timing import graph_time_us

    fn = torch.compile(torch_program(searched_graph(zoo_graph(name, which))), dynamic=False)
    err = relative_error(fn(*args).double().cpu().numpy(), ref[0])
    us = graph_time_us(fn, lambda i: [a.clone() for a in args] if i else args, replays=10)
    return {"name": name, "which": which, "system": "compile", "us": us, "rel_err": err}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("spec")
    s.add_argument("entries", help="NAME:WHICH,...")
    s.add_argument("--sources", default="constructed,searched")
    s.add_argument("--top", type=int, default=3)
    s.add_argument("--out", required=True)
    t = sub.add_parser("time")
    t.add_argument("spec")
    t.add_argument("--deadline", type=float, default=200.0, help="seconds before the remaining rows are skipped")
    args = ap.parse_args(argv)
    if args.cmd == "spec":
        rows = spec(args.entries.split(","), set(args.sources.split(",")), args.top)
        rows.sort(key=lambda r: r["rank"])
        with open(args.out, "w") as f:
            json.dump(rows, f)
        print(len(rows), "rows")
    else:
        with open(args.spec) as f:
            time_rows(json.load(f), time.time() + args.deadline)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
