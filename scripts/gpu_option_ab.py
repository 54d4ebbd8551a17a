"""A/B of one code-generation option on searched plans of zoo programs (run on the device machine).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/gpu_option_ab.py OPTION [--values A,B,...]
        [--which decode|bench] [--only a,b] [--sizes 3] [--sources searched,stitched] [--pick divisors|prior|blocks]
        [--templates N] [--at SIZES_JSON] [--out FILE]

For each program (a zoo program at ``--which`` sizes, or with ``--which bench`` a configuration of the
benchmark suite; rows merged as ``superoptimize`` merges them): its templates of ``--sources`` (default
the searched ones; from the carried search cache, no search runs here), up to ``--sizes`` legal size
choices each (spread over the first 200 legal ones of powers of two, or of the divisors of the shapes too
(``--pick divisors``), or with ``--pick prior`` the static prior's best; with ``--at`` only the given
sizes, in templates where they are legal), each generated with
``Options(OPTION=value)`` for each of ``--values`` (default True,False; an int, None, or the name
of a member of the option's enum, e.g. ``direct_loads --values ELEMENTWISE,NEVER``), checked against the float64 reference
(relative error < 2e-2, output poisoned first) and timed with the bench protocol
(``graph_time_us``). Prints and writes per program the best time of each value.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch

from bench.zoo import zoo_graph
from prism import pipeline, runtime, workloads
from prism.codegen import Options, generate
from prism.codegen.arch import arch as arch_of
from prism.codegen.lower import DEFAULT_OPTIONS
from prism.codegen.sizes import POW2, candidate_values, generated_sizes, is_legal, size_score
from prism.errors import CodegenError, IRError
from prism.graph import Graph
from prism.reference import relative_error
from prism.rows import searched_graph
from prism.tune.timing import graph_time_us
from prism.tune.tuner import default_scales, random_inputs

DEFAULT = ("silu_mul", "bias_gelu", "rms_norm", "layer_norm", "softmax", "stable_softmax", "add_rms_norm")


def _variant(kg: Any, options: Options, args: list[Any], ref: Any, l2: int | None = None) -> dict[str, Any]:
    try:
        plan = generate(kg, arch="sm_80", options=options)
    except CodegenError as e:  # e.g. more accumulator registers than allowed on one side only
        return {"error": str(e)}
    fn = runtime.compile_plan(plan)
    outs = fn(*args)
    torch.cuda.synchronize()
    outs = outs if isinstance(outs, tuple) else (outs,)  # a program of several outputs: every one checked
    err = max(relative_error(o.double().cpu().numpy(), r) for o, r in zip(outs, ref, strict=True))
    if not err < 2e-2:
        return {"error": f"relative error {err:.3g}"}
    us = graph_time_us(fn, lambda i: [a.clone() for a in args] if i else args, replays=10, l2=l2)
    return {"us": us, "rel_err": err}


def option_value(option: str, text: str) -> Any:
    """``text`` as a value of ``Options.<option>``: True/False, None, an int, or an enum member's name."""
    default = getattr(DEFAULT_OPTIONS, option)
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    if text.lstrip("-").isdigit():
        return int(text)
    return type(default)[text]


def _picks(t: Any, n_sizes: int, pick: str) -> list[dict[str, int]]:
    """``n_sizes`` legal sizes of template ``t``: spread over its first 200 (powers of two, or with
    ``divisors`` the tuner's candidate values: the divisors of the shapes too), the prior's best, or
    (``blocks``) for each power-of-two block count of the first kernel from 16 to 8192 the prior's best."""
    if pick in ("prior", "blocks"):
        sms = arch_of("sm_90").sms
        ranked = sorted(generated_sizes(t, "sm_90"), key=lambda r: -size_score(r[1], sms))
        if pick == "blocks":
            by_blocks = {r.kernels[0].blocks: sz for sz, r in reversed(ranked)}  # the best of each count
            return [by_blocks[b] for b in sorted(by_blocks) if 16 <= b <= 8192]
        return [sz for sz, _ in ranked[:n_sizes]]
    values = candidate_values(t) if pick == "divisors" else POW2
    legal = [sz for sz, _ in itertools.islice(generated_sizes(t, "sm_80", values=values), 200)]
    picks = sorted({round(k * (len(legal) - 1) / max(1, n_sizes - 1)) for k in range(n_sizes)}) if legal else []
    return [legal[k] for k in picks]


def program_graph(name: str, which: str) -> tuple[Graph, str]:
    """(graph, program name) that superoptimize searches (the cache's key) for zoo program ``name`` at
    ``which`` sizes or, with ``which`` "bench", for a benchmark configuration (e.g. rmsnorm_linear_d4096)."""
    if which == "bench":
        cfg = workloads.config(name)
        return cfg.build(), cfg.program
    return searched_graph(zoo_graph(name, which)), name


def program_setup(name: str, which: str) -> tuple[Any, list[Any], list[Any]]:
    """The search outcome of ``program_graph(name, which)``, GPU inputs, and the float64 reference on
    those inputs as rounded."""
    graph, program = program_graph(name, which)
    return (pipeline.search_and_verify(graph, program=program, progress=False), *graph_inputs(graph))


def graph_inputs(graph: Graph) -> tuple[list[Any], list[Any]]:
    """Seeded GPU inputs of ``graph`` and the float64 reference of its outputs on them as rounded."""
    inputs = random_inputs(graph, default_scales(graph), 0)
    args = [torch.tensor(inputs[t.name], device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
    # the float64 reference on the inputs as rounded to their dtype: once for every variant
    halves = {t.name: a.double().cpu().numpy() for t, a in zip(graph.inputs, args, strict=True)}
    return args, [graph.evaluate(halves)[t.name] for t in graph.outputs]


def _legal_at(t: Any, at: dict[str, int]) -> list[dict[str, int]]:
    """``at`` for template ``t``, if it names exactly the template's sizes and is legal there."""
    if set(at) != set(t.symbols):
        return []
    try:
        return [at] if is_legal(t.instantiate(at), "sm_80") else []
    except (CodegenError, IRError):
        return []


def run(name: str, which: str, option: str, values: list[Any], n_sizes: int, sources: list[str] | None = None,
        pick: str = "spread", max_templates: int | None = None, at: dict[str, int] | None = None) -> dict[str, Any]:
    out, args, ref = program_setup(name, which)
    best: dict[str, float] = {}
    rows = []
    templates = [(f"{src}:{ti}", t) for src in (sources or ["searched"])
                 for ti, t in enumerate(out.of(pipeline.PlanSource[src.upper()])[:max_templates])]
    for ti, t in templates:
        for sizes in (_legal_at(t, at) if at else _picks(t, n_sizes, pick)):
            kg = t.instantiate(sizes)
            for value in values:
                rec = _variant(kg, Options(**{option: value}), args, ref)
                rows.append({"template": ti, "sizes": sizes, option: str(value), **rec})
                if "us" in rec:
                    best[str(value)] = min(best.get(str(value), float("inf")), rec["us"])
    return {"program": name, "which": which, "best_us": best, "variants": rows}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("option")
    ap.add_argument("--values", default="True,False")
    ap.add_argument("--which", default="decode")
    ap.add_argument("--only", default=",".join(DEFAULT))
    ap.add_argument("--sizes", type=int, default=3)
    ap.add_argument("--sources", default="searched", help="plan sources, e.g. searched,stitched,constructed")
    ap.add_argument("--pick", choices=["spread", "divisors", "prior", "blocks"], default="spread",
                    help="sizes spread over the first 200 legal ones, the static prior's best, or one per block count")
    ap.add_argument("--templates", type=int, default=None, help="at most this many templates of each source")
    ap.add_argument("--at", default=None, help='only these sizes (JSON, e.g. \'{"k0_x": 2, "s": 8}\')')
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "option_ab.json"))
    args = ap.parse_args(argv)
    values = [option_value(args.option, v) for v in args.values.split(",")]
    results = []
    for name in [n for n in args.only.split(",") if n]:
        t0 = time.perf_counter()
        r = run(name, args.which, args.option, values, args.sizes, args.sources.split(","), args.pick, args.templates,
                json.loads(args.at) if args.at else None)
        results.append(r)
        best = ", ".join(f"{v} {us:.3f}" for v, us in r["best_us"].items())
        print(f"{name}: {args.option} {best} µs ({len(r['variants'])} variants, {time.perf_counter() - t0:.0f} s)",
              flush=True)
        with open(args.out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "command": " ".join(sys.argv), "option": args.option,
                       "which": args.which, "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
