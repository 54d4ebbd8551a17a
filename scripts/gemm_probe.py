"""Device probe (issue 14): how close Prism's generated GEMMs come to the sm_80 mma.sync ceiling on
compute-bound zoo entries, whether or not the tuner picks them (the vendor GEMM usually wins there).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python3 scripts/gemm_probe.py [--which prefill]
        [--only a,b] [--samples 32] [--budget 60] [--out FILE] [--dry-run]
        [--options '{"warp_tiles": false}'] [--at GROUP:TEMPLATE:'[{"k0_x": 4, ...}, ...]' [--launches 3]]

For each entry: the searched templates (from the carried search cache; no search runs here) of the
whole program and of each part that has a matmul, only those made of generated kernels alone; each
group tuned on its own (``prism.tune.tune``, the bench protocol's timing), the best time turned into
TFLOP/s (matmul flops only, ``bench.programs.roofline``) and a share of the mma.sync rate measured in
the same call (``bench.mma_ceiling``), each kernel generated with ``--options`` (codegen Options as
JSON). ``--dry-run`` lists the groups without a GPU. ``--at`` times the
given sizes of one group's template instead of tuning (each checked against float64, graph-timed, then
launched ``--launches`` times (under ``ncu -k regex:prism_`` with ``--no-time``, to profile them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.programs import roofline
from bench.zoo import ZOO, zoo_graph
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph
from prism.pipeline import PlanSource, search_and_verify

DEFAULT_ONLY = "matmul_residual,matmul_col_scale,norm_matmul_silu,lora_linear,sum_of_matmuls,mlp_silu,geglu"


def _generated(templates: tuple[KernelGraph, ...]) -> list[KernelGraph]:
    return [t for t in templates if all(isinstance(k, CustomKernel) for k in t.kernels)]


def groups(name: str, which: str) -> list[tuple[str, Graph, list[KernelGraph]]]:
    """(label, graph, generated searched templates) of the whole program and of its matmul parts."""
    graph = zoo_graph(name, which)
    outcome = search_and_verify(graph, program=name, progress=False)
    out = [(name, graph, _generated(outcome.of(PlanSource.SEARCHED)))]
    for po in outcome.parts:
        out.append((f"{name}.p{po.part.index}", po.part.graph, _generated(po.outcome.of(PlanSource.SEARCHED))))
    return [(label, g, ts) for label, g, ts in out if ts and roofline(g).flops]


def _backend(options: dict[str, Any]) -> Any:
    """prism.tune's CUDA backend, generating with ``Options(**options)``."""
    from prism import runtime
    from prism.codegen import Options, generate
    from prism.tune import CudaBackend

    class Backend(CudaBackend):
        def compile(self, kg: KernelGraph) -> Any:
            return runtime.compile_plan(generate(kg, arch=self.arch(), options=Options(**options)))

    return Backend()


def at(label: str, index: int, sizes: list[dict[str, int]], which: str, launches: int, timed: bool,
       options: dict[str, Any]) -> None:
    """Template ``index`` of group ``label`` at each of ``sizes``, generated with ``Options(**options)``:
    checked, launched ``launches`` times, then graph-timed (unless not ``timed``: under ncu)."""
    from prism.codegen import CodegenError
    from prism.tune.tuner import default_scales, random_inputs, reference_error

    label_, graph, templates = next(grp for grp in groups(label.split(".")[0], which) if grp[0] == label)
    backend = _backend(options)
    inputs = random_inputs(graph, default_scales(graph), 1)
    backend.setup(graph, inputs)
    for sz in sizes:
        try:
            kernel = backend.compile(templates[index].instantiate(sz))
        except CodegenError as e:  # a size these options cannot build (shared memory, registers): say so
            print(json.dumps({"group": label_, "template": index, "sizes": sz, "options": options,
                              "error": str(e)[:300]}), flush=True)
            continue
        err = reference_error(backend, kernel, graph, random_inputs(graph, default_scales(graph), 2))
        for _ in range(launches):
            backend.run(kernel, inputs)
        row: dict[str, Any] = {"group": label_, "template": index, "sizes": sz, "options": options, "rel_err": err}
        if timed:
            row["us"] = backend.time_us(kernel)
            row["tflops"] = roofline(graph).flops / (row["us"] * 1e-6) / 1e12
        print(json.dumps(row), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", default="prefill")
    ap.add_argument("--only", default=DEFAULT_ONLY)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--at")
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--no-time", action="store_true", help="with --at: no graph timing (under ncu)")
    ap.add_argument("--options", default="{}", help="codegen Options as JSON, e.g. '{\"warp_tiles\": false}'")
    ap.add_argument("--groups", default="", help="only these groups (labels as listed, e.g. norm_matmul_silu.p1)")
    args = ap.parse_args()
    options = json.loads(args.options)
    if args.at:
        label, index, sizes = args.at.split(":", 2)
        at(label, int(index), json.loads(sizes), args.which, args.launches, not args.no_time, options)
        return
    names = [n for n in args.only.split(",") if n] or list(ZOO)
    todo = [grp for n in names for grp in groups(n, args.which) if not args.groups or grp[0] in args.groups.split(",")]
    for label, g, ts in todo:
        print(f"{label}: {len(ts)} generated templates, {roofline(g).flops / 1e9:.1f} GFLOP", flush=True)
    if args.dry_run:
        return
    from bench.mma_ceiling import mma_sync_rate
    from prism.tune import tune

    ceiling = mma_sync_rate()
    print(f"mma.sync ceiling {ceiling / 1e12:.0f} TFLOP/s", flush=True)
    rows: list[dict[str, Any]] = []
    for label, g, ts in todo:
        t0 = time.perf_counter()
        row: dict[str, Any] = {"group": label, "templates": len(ts), "gflop": roofline(g).flops / 1e9}
        try:
            res = tune(g, ts, samples=args.samples, time_budget=args.budget, backend=_backend(options))
        except Exception as e:  # a probe: report and go on
            row["error"] = f"{type(e).__name__}: {e}"[:300]
        else:
            rate = roofline(g).flops / (res.time_us * 1e-6)
            row.update({"us": res.time_us, "tflops": rate / 1e12, "of_mma": rate / ceiling,
                        "template": res.template_index, "sizes": res.sizes, "rel_err": res.rel_err,
                        "timed": res.counts.get("timed")})
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            import torch

            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "gpu": torch.cuda.get_device_name(),
                       "command": " ".join(sys.argv), "options": options,
                       "mma_sync_tflop_per_s": ceiling / 1e12, "which": args.which,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
