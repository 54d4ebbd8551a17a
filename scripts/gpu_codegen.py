"""GPU check and timing of generated kernels (run on the device machine).

    PYTHONPATH=. python3 scripts/gpu_codegen.py --out $OUT [--configs a,b] [--max-variants 12]
        [--baselines eager,compile] [--quick]

For every benchmark configuration and hand-built plan it generates a set of legal size choices
(sm_90 budget), compiles them with NVRTC through prism.runtime, checks each against the float64
reference on fresh random inputs with the output poisoned with NaN, checks that a CUDA-graph
capture of one call gives the same output, and times it with the docs/benchmarks.md protocol (a CUDA
graph of 20 calls on rotating input copies, median of 30 replays / 20). Baselines (torch eager,
torch.compile) and the roofline floor (copy bandwidth and matmul rate measured in this run) go in
the same table. Results: $OUT/codegen_results.json and $OUT/codegen_table.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from typing import Any

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from prism import plans, workloads
from prism.codegen import Options, generate
from prism.codegen.sizes import generated_sizes
from prism.reference import relative_error

ARCH = "sm_90"
L2_BYTES = 60 * 2**20


def log(*a: Any) -> None:
    print(*a, flush=True)


# ------------------------------------------------------------------ variants


# Targeted size grids per (program, plan index); other plans get an even spread of legal sizes.
GRIDS: dict[tuple[str, int], dict[str, list[int]]] = {
    ("rmsnorm_linear", 0): {"x": [16, 32, 64, 128, 256], "i": [1, 2, 4, 8, 16, 32]},
    ("rmsnorm_linear", 2): {"x": [16, 32, 64], "y": [2, 4, 8, 16], "i": [1, 2, 4], "c": [32, 64]},
    ("swiglu", 0): {"x": [16, 32, 64, 128, 256], "i": [1, 2, 4, 8, 16, 32]},
    ("swiglu", 1): {"x": [16, 32, 64], "y": [2, 4, 8, 16], "i": [1, 2, 4], "c": [32, 64]},
    ("rmsnorm_mlp", 0): {"x": [16, 32, 64, 128], "i": [1, 2, 4, 8]},
    ("gqa", 2): {"x": [2], "s": [4, 8, 16, 32], "i": [1, 2, 4]},
    ("qknorm_gqa", 2): {"x": [2], "s": [4, 8, 16, 32], "i": [1, 2, 4]},
}
GEMV = {("rmsnorm_linear", 0), ("swiglu", 0), ("rmsnorm_mlp", 0)}
OPTION_SETS: list[dict[str, int]] = []
ONLY: dict[str, set[int]] = {}  # --options: option sets tried on every targeted size


def variants(cfg: workloads.Config, max_per_plan: int, extra: bool = True) -> list[tuple[int, dict[str, int], Options]]:
    """(plan index, sizes, options) to try: legal sizes with enough blocks and a sane stage size."""
    g = cfg.build()
    out = []
    for pi, kg in enumerate(plans.codegen_plans(cfg.program, g)):
        if cfg.program in ONLY and pi not in ONLY[cfg.program]:
            continue
        cands = []
        grid = GRIDS.get((cfg.program, pi))
        for sizes, res in generated_sizes(kg, ARCH):
            if grid is not None and any(sizes[k] not in grid[k] for k in sizes):
                continue
            k0 = res.kernels[0]
            cands.append((k0.blocks, k0.stage_bytes, sizes))
        if not cands:
            continue
        maxb = max(c[0] for c in cands)
        lo = min(32, maxb)
        good = [c for c in cands if lo <= c[0] <= 1024 and (c[1] == 0 or 2048 <= c[1] <= 96 * 1024)]
        if not good:
            good = [c for c in cands if c[0] == maxb]
        good.sort(key=lambda c: (c[0], c[1], sorted(c[2].items())))
        limit = 4 * max_per_plan if grid is not None else max_per_plan
        if len(good) > limit:
            idx = np.linspace(0, len(good) - 1, limit).round().astype(int)
            good = [good[i] for i in sorted(set(idx.tolist()))]
        for _, _, sizes in good:
            if OPTION_SETS and grid is not None:
                out += [(pi, sizes, Options(**o)) for o in OPTION_SETS]
                continue
            out.append((pi, sizes, Options()))
            if extra and (cfg.program, pi) in GEMV:
                out.append((pi, sizes, Options(warps=8)))
                out.append((pi, sizes, Options(stage_target=160 * 1024)))
    return out


# ------------------------------------------------------------------ torch programs


def torch_program(program: str) -> Any:
    import torch

    def rms(x: Any) -> Any:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    def softmax(s: Any) -> Any:
        e = torch.exp(s.float())
        return (e / e.sum(-1, keepdim=True)).to(s.dtype)

    if program == "rmsnorm_linear":
        return lambda X, W: rms(X) @ W
    if program == "rmsnorm_mlp":
        def mlp(X: Any, Wu: Any, Wg: Any) -> Any:
            xn = rms(X)
            return (xn @ Wu) * (xn @ Wg)
        return mlp
    if program == "swiglu":
        return lambda X, Wg, Wu: torch.nn.functional.silu(X @ Wg) * (X @ Wu)
    if program == "gqa":
        return lambda Q, Kt, V: softmax(Q @ Kt) @ V
    if program == "qknorm_gqa":
        return lambda Q, Kt, V: softmax(rms(Q) @ Kt) @ V
    raise ValueError(program)


# ------------------------------------------------------------------ timing


def time_graph(fn: Any, copies: list[list[Any]], reps: int = 30, calls: int = 20) -> float:
    """µs per call: a CUDA graph of ``calls`` calls on rotating input copies, median of ``reps`` replays."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for j in range(3):
            fn(*copies[j % len(copies)])
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for j in range(calls):
            fn(*copies[j % len(copies)])
    torch.cuda.synchronize()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0 / calls)
    del g
    return float(np.median(times))


def ceilings() -> dict[str, float]:
    import torch

    n = 2**30  # 2 GiB of fp16
    a = torch.empty(n, dtype=torch.float16, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        b.copy_(a)
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1000)
    bw = 2 * n * 2 / float(np.median(ts))
    del a, b
    m = 8192
    x = torch.randn(m, m, dtype=torch.float16, device="cuda")
    y = torch.randn(m, m, dtype=torch.float16, device="cuda")
    for _ in range(3):
        x @ y
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        x @ y
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1000)
    rate = 2 * m**3 / float(np.median(ts))
    return {"copy_bytes_per_s": bw, "matmul_flops_per_s": rate}


def floor_us(cfg: workloads.Config, ceil: dict[str, float]) -> dict[str, float]:
    g = cfg.build()
    nbytes = sum(math.prod(t.shape) * 2 for t in (*g.inputs, *g.outputs))
    flops = 0
    for node in g.nodes:
        if node.kind.value == "matmul":
            a = g.nodes[node.args[0]].shape
            flops += 2 * math.prod(node.shape) * a[-1]
    t_mem = nbytes / ceil["copy_bytes_per_s"] * 1e6
    t_mm = flops / ceil["matmul_flops_per_s"] * 1e6
    return {"bytes": nbytes, "flops": flops, "floor_us": max(t_mem, t_mm), "mem_us": t_mem, "mm_us": t_mm}


# ------------------------------------------------------------------ main


def to_torch(x: np.ndarray, dtype: Any) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(x)).to(device="cuda", dtype=dtype)


def run_config(cfg: workloads.Config, args: argparse.Namespace, ceil: dict[str, float], seed0: int) -> dict[str, Any]:
    import torch

    from prism import runtime

    g = cfg.build()
    names = [t.name for t in g.inputs]
    out_spec = g.outputs[0]
    set_bytes = sum(math.prod(t.shape) * 2 for t in g.inputs)
    n_copies = max(2, min(20, math.ceil(4 * L2_BYTES / set_bytes)))
    base_inputs = cfg.random_inputs(seed0, g)
    copies = [[to_torch(base_inputs[n], torch.float16) for n in names]]
    for _ in range(1, n_copies):
        copies.append([t.clone() for t in copies[0]])
    result: dict[str, Any] = {"config": cfg.id, "copies": n_copies, **floor_us(cfg, ceil), "variants": []}
    seed = seed0
    tmpl = plans.codegen_plans(cfg.program, g)
    vs = variants(cfg, args.max_variants, args.extra)
    # compile everything first
    compiled = []
    t0 = time.time()
    for pi, sizes, opts in vs:
        rec: dict[str, Any] = {"plan": pi, "sizes": sizes, "warps": opts.warps, "stages": opts.stages,
                               "stage_target": opts.stage_target}
        try:
            plan = generate(tmpl[pi].instantiate(sizes), arch=ARCH, options=opts)
            rec["kernels"] = [{"grid": k.grid, "block": k.block[0], "smem": k.smem_bytes, "stages": k.stages}
                              for k in plan.kernels]
            fn = runtime.compile_plan(plan)
            compiled.append((rec, fn))
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
            result["variants"].append(rec)
            log(f"  {cfg.id} plan {pi} {sizes}: {rec['error'][:300]}")
    result["compile_s"] = time.time() - t0
    for rec, fn in compiled:
        try:
            seed += 1
            inp = cfg.random_inputs(seed, g)
            ref = g.evaluate(inp)[out_spec.name]
            xs = [to_torch(inp[n], torch.float16) for n in names]
            out = torch.full(out_spec.shape, float("nan"), dtype=torch.float16, device="cuda")
            fn(*xs, out=out)
            torch.cuda.synchronize()
            err = relative_error(out.double().cpu().numpy(), ref)
            rec["rel_err"] = err
            # CUDA-graph capture of one call gives the same output
            out2 = torch.full(out_spec.shape, float("nan"), dtype=torch.float16, device="cuda")
            gr = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                fn(*xs, out=out2)
            torch.cuda.current_stream().wait_stream(s)
            out2.fill_(float("nan"))
            torch.cuda.synchronize()
            with torch.cuda.graph(gr):
                fn(*xs, out=out2)
            gr.replay()
            torch.cuda.synchronize()
            rec["graph_same"] = bool(torch.equal(out, out2))
            if err < 2e-2:
                outs = [torch.empty(out_spec.shape, dtype=torch.float16, device="cuda") for _ in copies]
                state = {"j": 0}

                def call(*a: Any, _fn: Any = fn, _outs: Any = outs, _st: Any = state) -> Any:
                    o = _outs[_st["j"] % len(_outs)]
                    _st["j"] += 1
                    return _fn(*a, out=o)

                rec["us"] = time_graph(call, copies)
        except Exception as e:
            rec["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
            traceback.print_exc()
        result["variants"].append(rec)
        log(f"  {cfg.id} plan {rec['plan']} {rec['sizes']} w{rec['warps']} t{rec['stage_target']} "
            f"{[(k['grid'], k['smem'], k['stages']) for k in rec['kernels']]} err {rec.get('rel_err', float('nan')):.2e} "
            f"graph {rec.get('graph_same')} us {rec.get('us', float('nan')):.2f} {rec.get('error', '')[:200]}")
    # baselines
    tfn = torch_program(cfg.program)
    base: dict[str, Any] = {}
    for name in args.baselines:
        try:
            if name == "eager":
                f = tfn
            elif name == "compile":
                f = torch.compile(tfn)
            elif name == "max-autotune":
                f = torch.compile(tfn, mode="max-autotune-no-cudagraphs")
            else:
                continue
            seed += 1
            inp = cfg.random_inputs(seed, g)
            ref = g.evaluate(inp)[out_spec.name]
            o = f(*[to_torch(inp[n], torch.float16) for n in names])
            torch.cuda.synchronize()
            err = relative_error(o.double().cpu().numpy(), ref)
            base[name] = {"us": time_graph(f, copies), "rel_err": err}
        except Exception as e:
            base[name] = {"error": f"{type(e).__name__}: {str(e)[:500]}"}
        log(f"  {cfg.id} baseline {name}: {base[name]}")
    result["baselines"] = base
    return result


def table(results: list[dict[str, Any]], ceil: dict[str, float]) -> str:
    lines = [
        f"copy bandwidth {ceil['copy_bytes_per_s'] / 1e12:.2f} TB/s, fp16 matmul {ceil['matmul_flops_per_s'] / 1e12:.0f}"
        " TFLOP/s (measured in this run)",
        "",
        "| config | floor µs | prism best µs | plan / sizes | % of floor | eager | compile | max-autotune | ok variants |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ok = [v for v in r["variants"] if "us" in v]
        best = min(ok, key=lambda v: v["us"]) if ok else None
        b = r.get("baselines", {})

        def bt(n: str, _b: dict[str, Any] = b) -> str:
            return f"{_b[n]['us']:.1f}" if n in _b and "us" in _b[n] else "-"

        bad = [v for v in r["variants"] if v.get("rel_err", 0) >= 2e-2 or "error" in v or v.get("graph_same") is False]
        lines.append(
            f"| {r['config']} | {r['floor_us']:.2f} | {best['us']:.2f} | p{best['plan']} {best['sizes']} | "
            f"{100 * r['floor_us'] / best['us']:.0f}% | {bt('eager')} | {bt('compile')} | {bt('max-autotune')} | "
            f"{len(ok)}/{len(r['variants'])} ({len(bad)} bad) |" if best else
            f"| {r['config']} | {r['floor_us']:.2f} | - | - | - | {bt('eager')} | {bt('compile')} | {bt('max-autotune')} "
            f"| 0/{len(r['variants'])} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", "out"))
    p.add_argument("--configs", default=",".join(workloads.CONFIGS))
    p.add_argument("--max-variants", type=int, default=10)
    p.add_argument("--baselines", default="eager,compile")
    p.add_argument("--extra", action="store_true", help="also try 8 warps / deeper pipelines on the GEMV plans")
    p.add_argument("--grids", default="", help='JSON {"program:plan": {"x": [..], ...}} overriding size grids')
    p.add_argument("--options", default="", help="JSON list of Options kwargs tried on every targeted size")
    p.add_argument("--only-grids", action="store_true", help="only the plans that have a size grid")
    args = p.parse_args()
    args.baselines = [b for b in args.baselines.split(",") if b]
    if args.grids:
        for key, grid in json.loads(args.grids).items():
            prog, pi = key.rsplit(":", 1)
            GRIDS[(prog, int(pi))] = grid
    if args.options:
        OPTION_SETS.extend(json.loads(args.options))
    if args.only_grids:
        for c in args.configs.split(","):
            prog = workloads.config(c).program
            ONLY[prog] = {pi for (p, pi) in GRIDS if p == prog}
    os.makedirs(args.out, exist_ok=True)
    import torch

    log(f"torch {torch.__version__}, device {torch.cuda.get_device_name()}")
    ceil = ceilings()
    log(f"ceilings: {ceil}")
    results = []
    for n, cid in enumerate(args.configs.split(",")):
        cfg = workloads.config(cid)
        t0 = time.time()
        try:
            results.append(run_config(cfg, args, ceil, 1000 * (n + 1)))
        except Exception:
            traceback.print_exc()
        log(f"{cid}: {time.time() - t0:.1f}s")
        with open(os.path.join(args.out, "codegen_results.json"), "w") as f:
            json.dump({"ceilings": ceil, "results": results}, f, indent=1, default=str)
    t = table(results, ceil)
    with open(os.path.join(args.out, "codegen_table.md"), "w") as f:
        f.write(t + "\n")
    log(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
