"""PyTorch capture on a GPU: a Llama decoder layer (torch.nn) and a transformers Llama model (random
weights) through ``prism.compile``, beside eager and ``torch.compile`` (default, reduce-overhead,
max-autotune), at decode and prefill shapes. Writes one JSON (per case: time per forward, error
against eager, the fraction of FLOPs and bytes in Prism kernels, what ran where).

    PYTHONPATH=. PRISM_CACHE_DIR=.prism-cache python scripts/gpu_capture.py --out bench/results/capture-h200.json
    ... --dump regions.json    # the captured regions, for scripts/capture_search.py on a machine with z3/egglog
    ... --device cpu --systems prism --dump regions.json   # no GPU: capture, search and dump (nothing timed)

The searches need z3/egglog; on a GPU image without them, regions get the plans a carried search
cache holds, else predefined kernels (their plan source is in the JSON).
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import platform
import statistics
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from bench.capture_models import LayerConfig, hf_llama, layer_inputs, llama_layer
from prism.capture import CaptureOptions, CaptureWarning, Fallback, compile
from prism.capture.build import spec_to_json

# compile-cudagraph: default torch.compile (Inductor's kernels, no CUDA graphs of its own) replayed
# from a CUDA graph of ours, the like-for-like GPU-only figure beside prism-cudagraph
SYSTEMS = ("eager", "compile", "reduce-overhead", "max-autotune", "compile-cudagraph", "max-autotune-cudagraph", "prism",
           "prism-cudagraph")


@dataclass(frozen=True)
class Case:
    model: str  # "layer" or "hf"
    phase: str  # "decode" or "prefill"
    batch: int
    length: int
    past: int

    @property
    def name(self) -> str:
        return f"{self.model}-{self.phase}-b{self.batch}-l{self.length}"


CASES = [
    *(Case("layer", "decode", b, 1, 512) for b in (1, 4, 16)),
    *(Case("layer", "prefill", 1, n, 0) for n in (128, 512)),
    *(Case("hf", "decode", b, 1, 0) for b in (1, 4, 16)),  # one token, no KV cache (see docs/capture.md)
    *(Case("hf", "prefill", 1, n, 0) for n in (128, 512)),
]


# torch.compile's mode per system; the "-cudagraph" systems replay one CUDA graph of the compiled forward
# (graphed below), so max-autotune's own CUDA graphs are turned off there
COMPILE_MODES: dict[str, str | None] = {"compile": None, "reduce-overhead": "reduce-overhead",
                                         "max-autotune": "max-autotune", "compile-cudagraph": None,
                                         "max-autotune-cudagraph": "max-autotune-no-cudagraphs"}


def time_us(fn: Callable[[], Any], reps: int) -> float:
    """Median over 5 rounds of the mean time of ``reps`` back-to-back calls (CUDA events)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        rounds.append(start.elapsed_time(end) * 1000 / reps)
    return statistics.median(rounds)


def graphed(fn: Callable[[], Any]) -> tuple[Callable[[], Any], Any]:
    """``fn`` captured in a CUDA graph (warmed up on a side stream first): (replay, its output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn()
    return g.replay, out


def kernel_profile(call: Callable[[], Any], n: int = 10) -> list[dict[str, Any]]:
    """The GPU kernels of ``n`` calls (torch.profiler; kernels replayed from a CUDA graph included):
    per kernel name, launches and µs per call, slowest first."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            call()
        torch.cuda.synchronize()
    rows = [{"kernel": e.key[:160], "per_call": e.count / n,
             "us": getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0.0)) / n}
            for e in prof.key_averages()]
    return sorted(rows, key=lambda r: -r["us"])[:60]


def build(case: Case, dtype: Any, device: str) -> tuple[Any, tuple[Any, ...]]:
    cfg = LayerConfig()
    torch.manual_seed(0)
    with torch.device(device):  # weights made on the GPU (a CPU init of the model takes seconds)
        model = (llama_layer(cfg) if case.model == "layer" else hf_llama()).to(dtype).eval()
    if case.model == "layer":
        ins = layer_inputs(cfg, case.batch, case.length, case.past, device=device, dtype=dtype)
    else:
        ins = (torch.randint(0, 32000, (case.batch, case.length), device=device),)
    for p in model.parameters():
        p.requires_grad_(False)
    if case.model == "hf":
        hf = model
        model = lambda ids: hf(input_ids=ids).logits  # noqa: E731
    return model, ins


def errors(got: Any, want: Any) -> dict[str, float]:
    d = (got.double() - want.double())
    return {"rel_l2": float(d.norm() / want.double().norm()), "max_abs": float(d.abs().max()),
            "max_abs_ref": float(want.double().abs().max())}


def run_case(case: Case, systems: list[str], dtype: Any, reps: int, options: CaptureOptions,
             dump: list[dict[str, Any]], device: str = "cuda", profile: bool = False) -> dict[str, Any]:
    model, ins = build(case, dtype, device)
    row: dict[str, Any] = {"case": case.name, **vars(case), "dtype": str(dtype).removeprefix("torch."),
                           "time_us": {}, "error_vs_eager": {}, "compile_s": {}, "failed": {}}
    with torch.no_grad():
        want = model(*ins)
        prism_fn: Any = None
        for system in systems:
            if system != "prism-cudagraph":
                torch._dynamo.reset()
            t0 = time.perf_counter()
            try:
                if system == "eager":
                    fn = model
                elif system in COMPILE_MODES:
                    fn = torch.compile(model, mode=COMPILE_MODES[system])
                    fn(*ins)
                elif system == "prism-cudagraph" and prism_fn is not None:
                    fn = prism_fn  # the same compiled forward, replayed from a CUDA graph
                else:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always", CaptureWarning)
                        fast = compile(model, example_inputs=ins, options=options)
                    row["prism"] = {**fast.summary(), "warnings": sorted({str(w.message)[:300] for w in caught})}
                    fn = prism_fn = fast
                    for g in fast.report.graphs:
                        for r in g.regions:
                            if r.spec is not None:
                                dump.append({"case": case.name, "label": r.label, "spec": spec_to_json(r.spec),
                                             "bound": [[[list(s) for s in shapes], dt] for shapes, dt in r.bound]})
                row["compile_s"][system] = time.perf_counter() - t0
                if system.endswith("cudagraph"):
                    replay, out = graphed(functools.partial(fn, *ins))
                    replay()
                    torch.cuda.synchronize()
                    got, call = out, replay
                else:
                    got, call = fn(*ins), functools.partial(fn, *ins)
                row["error_vs_eager"][system] = errors(got, want)
                if device == "cuda":
                    row["time_us"][system] = time_us(call, reps)
                if profile and device == "cuda":
                    row.setdefault("kernels", {})[system] = kernel_profile(call)
            except Exception as e:  # one system failing must not lose the others' figures
                row["failed"][system] = f"{type(e).__name__}: {e}"[:2000]
                traceback.print_exc()
            print(case.name, system, row["time_us"].get(system), row["error_vs_eager"].get(system), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dump", default=None, help="write the captured regions here (JSON)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--samples", type=int, default=CaptureOptions.samples)
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--time-budget", type=float, default=CaptureOptions.time_budget,
                    help="seconds of tuning per region and shape")
    ap.add_argument("--fallback", default=CaptureOptions.fallback.value, choices=[f.value for f in Fallback],
                    help="what runs a region Prism does not (and what its kernel is timed against)")
    ap.add_argument("--device", default="cuda", help="cpu: capture and search only (regions run in PyTorch)")
    ap.add_argument("--no-compare", action="store_true",
                    help="run every region Prism can (no timing against PyTorch, no whole-graph comparison)")
    ap.add_argument("--profile", action="store_true", help="record each system's GPU kernels (torch.profiler)")
    ap.add_argument("--log", default="WARNING", help="level of prism's log on stderr (DEBUG: every tuning sample)")
    args = ap.parse_args()
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("prism").setLevel(args.log)
    systems = args.systems.split(",")
    by_name = {c.name: c for c in CASES}
    cases = [by_name[n] for n in args.cases.split(",")] if args.cases else CASES  # in the order given
    options = CaptureOptions(samples=args.samples, time_budget=args.time_budget, fallback=Fallback(args.fallback),
                             compare=not args.no_compare)
    dump: list[dict[str, Any]] = []
    doc: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
                           "torch": torch.__version__,
                           "python": platform.python_version(), "layer": vars(LayerConfig()),
                           "command": "python scripts/gpu_capture.py " + " ".join(
                               f"--{k} {v}" for k, v in vars(args).items() if v not in (None, "")),
                           "cases": []}
    for case in cases:
        doc["cases"].append(run_case(case, systems, getattr(torch, args.dtype), args.reps, options, dump,
                                     args.device, args.profile))
        with open(args.out, "w") as f:  # after every case: a timeout keeps what was measured
            json.dump(doc, f, indent=1)
        if args.dump:
            with open(args.dump, "w") as f:
                json.dump(dump, f)


if __name__ == "__main__":
    main()
