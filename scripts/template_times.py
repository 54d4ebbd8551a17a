"""Graph-timed templates of zoo programs at fixed sizes, beside torch.compile (issue 14 probes).

    # CPU (with the prover): the spec, each template's prior-best legal sizes and any given ones
    PYTHONPATH=. python scripts/template_times.py spec vocab_softmax:decode,vocab_softmax:prefill \\
        --sources constructed --top 3 --out spec.json
    # device (search cache carried): time them, each checked against float64 first
    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/template_times.py time spec.json --deadline 200

Templates are numbered as ``pipeline.search_and_verify`` lists them for the program with its rows merged
as ``superoptimize`` merges them. One JSON line per timed row (and one per program for torch.compile).
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
    from prism.tune import tuner

    out = []
    for entry in entries:
        name, which = entry.split(":")
        found = pipeline.search_and_verify(searched_graph(zoo_graph(name, which)), program=name, progress=False)
        for t, (kg, src) in enumerate(zip(found.templates, found.sources, strict=True)):
            if src.name.lower() not in sources:
                continue
            for rank, sizes in enumerate(tuner._legal(kg, "sm_90", resources, 3000)[:top]):
                res = resources(kg.instantiate(sizes), "sm_90")
                out.append({"name": name, "which": which, "t": t, "src": src.name, "sizes": sizes, "rank": rank,
                            "score": round(size_score(res, 132), 3), "blocks": [k.blocks for k in res.kernels],
                            "launches": res.launches})
    return out


def time_rows(rows: list[dict[str, Any]], deadline: float) -> None:
    import torch

    from prism import runtime
    from prism.codegen import generate
    from prism.reference import relative_error
    from prism.torch_program import torch_program
    from prism.tune.timing import graph_time_us
    from prism.tune.tuner import default_scales, random_inputs

    setups: dict[tuple[str, str], Any] = {}

    def setup(name: str, which: str) -> Any:
        if (name, which) not in setups:
            g = searched_graph(zoo_graph(name, which))
            found = pipeline.search_and_verify(g, program=name, progress=False)
            values = random_inputs(g, default_scales(g), 3)
            ref = g.evaluate(values)[g.outputs[0].name]

            def make(i: int) -> list[Any]:
                vals = values if i == 0 else random_inputs(g, default_scales(g), 100 + i)
                return [torch.tensor(vals[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in g.inputs]

            fn = torch.compile(torch_program(g), dynamic=False)
            err = relative_error(fn(*make(0)).double().cpu().numpy(), ref)
            print(json.dumps({"name": name, "which": which, "system": "compile", "us": graph_time_us(fn, make),
                              "err": err}), flush=True)
            setups[(name, which)] = (found, ref, make)
        return setups[(name, which)]

    for row in rows:
        if time.time() > deadline:
            print(json.dumps({"deadline": True}), flush=True)
            return
        found, ref, make = setup(row["name"], row["which"])
        us: float | None = None
        try:
            fn = runtime.compile_plan(generate(found.templates[row["t"]].instantiate(row["sizes"]), arch="sm_80"))
            err: Any = relative_error(fn(*make(0)).double().cpu().numpy(), ref)
            us = graph_time_us(fn, make) if err < 1e-2 else None
        except Exception as e:  # a size that does not build is a row, not the end of the probe
            err = repr(e)[:160]
        print(json.dumps({**row, "us": us, "err": err}), flush=True)


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
