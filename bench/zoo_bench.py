"""The program zoo on the GPU: Prism (``prism.superoptimize``) beside PyTorch eager, torch.compile and
max-autotune, with the docs/benchmarks.md protocol (CUDA-graph replay, inputs rotated past the L2).

    python -m bench.zoo_bench [--which decode,prefill] [--only a,b] [--systems prism,eager,compile]
                              [--samples 16] [--out bench/results/zoo-DATE.json]

Inputs of every system follow the product's documented default distribution
(``prism.tune.tuner.default_scales``). Each system's output is checked against the float64
reference before it is timed; the JSON is rewritten after every entry.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.programs import roofline
from bench.torch_graph import torch_program
from bench.zoo import ZOO, zoo_graph
from prism.graph import Graph
from prism.reference import relative_error
from prism.tune.tuner import default_scales, random_inputs

log = logging.getLogger("bench.zoo")
TOLERANCE = 2e-2
SYSTEMS = ("prism", "eager", "compile", "max_autotune")


def _entries(which: list[str], only: list[str]) -> list[tuple[str, str]]:
    names = only or list(ZOO)
    return [(n, w) for n in names for w in which if getattr(ZOO[n], w) is not None]


class Runner:
    def __init__(self, samples: int, seed: int) -> None:
        import torch

        self.torch = torch
        self.samples = samples
        self.seed = seed

    def system_fn(self, graph: Graph, name: str, system: str, rec: dict[str, Any]) -> Any:
        if system == "prism":
            import prism

            t0 = time.perf_counter()
            fast = prism.superoptimize(graph, samples=self.samples, seed=self.seed, program=name, progress=False)
            s = fast.summary
            rec.update({"prism_setup_s": time.perf_counter() - t0, "plan_source": s.get("plan_source"),
                        "tuner_us": s.get("best_us"), "tune_s": s.get("tune_s"), "parts": s["search"].get("parts"),
                        "verified": s["search"].get("verified_by_source"),
                        "kernels": [getattr(k, "name", "?") for k in fast.kernel_graph.kernels]})
            return fast
        base = torch_program(graph)
        if system == "eager":
            return base
        mode = {"compile": None, "max_autotune": "max-autotune-no-cudagraphs"}[system]
        # every zoo program is the same Python function over another graph: start dynamo afresh, or it
        # stops recompiling after its limit and silently runs eager
        self.torch._dynamo.reset()
        return self.torch.compile(base, mode=mode, dynamic=False)

    def copy(self, graph: Graph, scales: dict[str, float], i: int) -> list[Any]:
        torch = self.torch
        gen = torch.Generator(device="cuda").manual_seed(1000 + i)
        return [(torch.randn(t.shape, device="cuda", generator=gen) * scales.get(t.name, 1.0)).to(getattr(torch, t.dtype))
                for t in graph.inputs]

    def measure(self, graph: Graph, name: str, system: str, rec: dict[str, Any]) -> None:
        from prism.tune.timing import graph_time_us

        torch = self.torch
        scales = default_scales(graph)
        try:
            fn = self.system_fn(graph, name, system, rec)
            values = random_inputs(graph, scales, self.seed + 7)
            ref = graph.evaluate(values)[graph.outputs[0].name]
            args = [torch.from_numpy(values[t.name]).to(device="cuda", dtype=getattr(torch, t.dtype)) for t in graph.inputs]
            out = fn(*args)
            torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
            rec[f"{system}_rel_err"] = err
            if not err < TOLERANCE:
                rec["errors"][system] = f"relative error {err:.3g}"
                return
            rec[f"{system}_us"] = graph_time_us(fn, lambda i: self.copy(graph, scales, i))
        except Exception as e:  # one failing system is a result
            log.error("%s %s: %s", name, system, e)
            rec["errors"][system] = f"{type(e).__name__}: {str(e)[:300]}"


def _finish(rec: dict[str, Any]) -> None:
    base = [rec.get(f"{s}_us") for s in SYSTEMS[1:]]
    base = [b for b in base if b is not None]
    rec["best_baseline_us"] = min(base) if base else None
    p = rec.get("prism_us")
    rec["speedup"] = rec["best_baseline_us"] / p if p and rec["best_baseline_us"] else None


def table(rows: list[dict[str, Any]]) -> str:
    def f(v: Any) -> str:
        return "—" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)

    lines = ["| program | sizes | floor µs | Prism µs | plan | eager | compile | max-autotune | speedup | Prism err |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        err = r.get("prism_rel_err")
        lines.append(f"| {r['program']} | {r['which']} | {f(r['floor_us'])} | {f(r.get('prism_us'))} | "
                     f"{r.get('plan_source') or '—'} | {f(r.get('eager_us'))} | {f(r.get('compile_us'))} | "
                     f"{f(r.get('max_autotune_us'))} | {f(r.get('speedup'))} | "
                     f"{'—' if err is None else f'{err:.1e}'} |")
    sp = [r["speedup"] for r in rows if r.get("speedup")]
    if sp:
        lines.append(f"\nPrism timed on {len(sp)} of {len(rows)}; geometric-mean speedup over the best baseline "
                     f"{math.exp(sum(map(math.log, sp)) / len(sp)):.2f}×; not slower on {sum(s >= 1 for s in sp)}.")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.zoo_bench")
    ap.add_argument("--which", default="decode,prefill")
    ap.add_argument("--only", default="")
    ap.add_argument("--systems", default="prism,eager,compile,max_autotune")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from prism.tune.timing import copy_bandwidth, matmul_rate

    runner = Runner(args.samples, args.seed)
    systems = [s for s in args.systems.split(",") if s]
    copy_bw, mm = copy_bandwidth(), matmul_rate()
    result: dict[str, Any] = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                              "gpu": runner.torch.cuda.get_device_name(), "torch": runner.torch.__version__,
                              "ceilings": {"copy_tb_per_s": copy_bw / 1e12, "matmul_tflop_per_s": mm / 1e12},
                              "samples": args.samples, "systems": systems, "rows": [],
                              "command": "python -m bench.zoo_bench " + shlex.join(sys.argv[1:])}
    out = args.out or Path("bench/results") / f"zoo-{result['date'][:10]}.json"
    for name, which in _entries(args.which.split(","), [n for n in args.only.split(",") if n]):
        graph = zoo_graph(name, which)
        roof = roofline(graph)
        rec: dict[str, Any] = {"program": name, "which": which, "family": ZOO[name].family,
                               "sizes": ZOO[name].sizes(which), "floor_us": roof.floor_us(copy_bw, mm), "errors": {}}
        t0 = time.perf_counter()
        for s in systems:
            runner.measure(graph, name, s, rec)
        rec["seconds"] = time.perf_counter() - t0
        _finish(rec)
        result["rows"].append(rec)
        log.info("%s %s: %s", name, which, {k: rec.get(f"{k}_us") for k in systems})
        out.write_text(json.dumps(result, indent=1, default=float))
    print(table(result["rows"]))
    print(f"results: {out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
