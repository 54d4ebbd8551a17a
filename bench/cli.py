"""``python -m bench`` (``make bench BENCH_ARGS=...``): run the suite of docs/benchmarks.md and write the results.

    python -m bench                                   # everything: ten configs, four systems
    python -m bench --programs gqa,swiglu --systems prism,compile
    python -m bench --systems eager,compile,max-autotune --tag baselines
    python -m bench --from-json bench/results/X.json --update-readme   # re-render table + plot (no GPU)

The JSON is rewritten after every configuration, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import report
from bench.measure import SYSTEMS, Measurer, measure_systems
from bench.programs import roofline
from bench.providers import PROVIDERS, Budget, Provider, default_provider, make_provider
from prism import workloads
from prism.errors import PrismError
from prism.options import count_arg, seconds_arg, seed_arg

log = logging.getLogger("bench")


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _system(name: str) -> str:
    s = name.replace("-", "_")
    if s not in SYSTEMS:
        raise argparse.ArgumentTypeError(f"unknown system {name!r}; known: prism, eager, compile, max-autotune, sdpa")
    return s


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description="Prism's benchmark suite (docs/benchmarks.md).")
    p.add_argument("--configs", type=_csv, default=None, metavar="IDS",
                   help=f"comma-separated configuration ids (default: all ten: {', '.join(workloads.CONFIGS)})")
    p.add_argument("--programs", type=_csv, default=None, metavar="NAMES",
                   help=f"only configurations of these programs ({', '.join(workloads.PROGRAMS)})")
    p.add_argument("--systems", type=lambda t: [_system(s) for s in _csv(t)], default=list(SYSTEMS), metavar="LIST",
                   help="comma-separated systems to run: prism, eager, compile, max-autotune, sdpa "
                        "(SDPA: attention programs only; default: all)")
    p.add_argument("--prism", choices=[*PROVIDERS, "auto"], default="auto",
                   help="where Prism's kernel comes from: prism.superoptimize, the tuner over the hand-built "
                        "plans, or none (default auto: the first that exists)")
    p.add_argument("--samples", type=count_arg("samples"), default=64,
                   help="Prism tuning budget: samples per configuration")
    p.add_argument("--time-budget", type=seconds_arg("time_budget"), default=None,
                   help="Prism tuning budget: seconds per configuration")
    p.add_argument("--seed", type=seed_arg(), default=0, help="seed of the tuning samples and of the correctness inputs")
    p.add_argument("--no-cache", action="store_true", help="do not use Prism's search/tuning caches")
    p.add_argument("--out", type=Path, default=report.RESULTS_DIR, help="results folder (default bench/results)")
    p.add_argument("--tag", default=None, help="suffix of the result file name (e.g. 'baselines')")
    p.add_argument("--note", default=None, help="a note stored in the JSON and printed under the table")
    p.add_argument("--no-plot", action="store_true", help="do not write the PNG plot")
    p.add_argument("--update-readme", action="store_true", help="put the table into bench/README.md")
    p.add_argument("--from-json", type=Path, default=None, metavar="FILE",
                   help="measure nothing: re-render the table, plot (and README with --update-readme) of FILE")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    return p


def select_configs(ids: Sequence[str] | None, programs: Sequence[str] | None) -> list[workloads.Config]:
    for name in programs or []:
        if name not in workloads.PROGRAMS:
            raise PrismError(f"unknown program {name!r}; known: {', '.join(workloads.PROGRAMS)}")
    cfgs = [workloads.config(i) for i in ids] if ids else list(workloads.CONFIGS.values())
    if programs:
        cfgs = [c for c in cfgs if c.program in programs]
        if not ids:  # a program outside the ten (the safe attention) runs its own configurations
            ten = {c.program for c in workloads.CONFIGS.values()}
            cfgs += [c for c in workloads.EXTRA_CONFIGS.values() if c.program in programs and c.program not in ten]
    if not cfgs:
        raise PrismError("no configuration selected")
    return cfgs


def _render(result: dict[str, Any], path: Path, args: argparse.Namespace) -> None:
    print(report.table(result))
    print(f"results: {path}")
    if not args.no_plot:
        png = report.write_plot(result, path.with_suffix(".png"))
        if png is not None:
            print(f"plot: {png}")
    if args.update_readme:
        if report.update_readme(result, path):
            print(f"table written into {report.README}")
        else:
            log.warning("%s has no table markers; not updated", report.README)


def run(args: argparse.Namespace, argv: Sequence[str], measurer: Measurer | None = None,
        provider: Provider | None = None) -> int:
    if args.from_json is not None:
        saved: dict[str, Any] = json.loads(args.from_json.read_text())
        saved["configs"] = [report.finish_record(r) for r in saved["configs"]]
        saved["summary"] = report.summarize(saved["configs"])
        _render(saved, args.from_json, args)
        return 0

    cfgs = select_configs(args.configs, args.programs)
    systems = [s for s in SYSTEMS if s in args.systems]
    budget = Budget(samples=args.samples, seed=args.seed, time_budget=args.time_budget, cache=not args.no_cache)
    provider_name = getattr(provider, "name", None) or (default_provider() if args.prism == "auto" else args.prism)
    if "prism" in systems and provider is None:
        provider = make_provider(provider_name, budget)
        if provider is None:
            log.warning("no Prism provider available (prism.pipeline / prism.codegen missing): Prism not run")
            systems.remove("prism")
    if measurer is None:
        from bench.measure import TorchMeasurer

        measurer = TorchMeasurer(seed=args.seed)

    t0 = time.perf_counter()
    result: dict[str, Any] = measurer.environment()
    result["command"] = "python -m bench " + shlex.join(argv)
    result["systems"] = systems
    result["prism_provider"] = provider_name if "prism" in systems else None
    result["prism_budget"] = {"samples": budget.samples, "time_budget_s": budget.time_budget, "seed": budget.seed,
                              "cache": budget.cache} if "prism" in systems else None
    if args.note:
        result["note"] = args.note
    ceil = measurer.ceilings()
    result["ceilings"] = {"copy_tb_per_s": ceil.copy_bytes_per_s / 1e12,
                          "matmul_tflop_per_s": ceil.matmul_flops_per_s / 1e12,
                          "mma_sync_tflop_per_s": None if ceil.mma_sync_flops_per_s is None
                          else ceil.mma_sync_flops_per_s / 1e12}
    result["configs"] = []
    path = report.result_path(result, args.out, args.tag)
    log.info("ceilings: %.2f TB/s copy, %.0f TFLOP/s fp16 matmul; writing %s",
             ceil.copy_bytes_per_s / 1e12, ceil.matmul_flops_per_s / 1e12, path)

    for cfg in cfgs:
        roof = roofline(cfg.build())
        rec: dict[str, Any] = {"config": cfg.id, "program": cfg.program, "bytes": roof.bytes, "flops": roof.flops,
                               "floor_us": roof.floor_us(ceil.copy_bytes_per_s, ceil.matmul_flops_per_s),
                               "rel_err": None, **{f"{s}_us": None for s in SYSTEMS}, "errors": {}}
        prism_fn = None
        if "prism" in systems:
            assert provider is not None
            try:
                kernel = provider.prepare(cfg)
                prism_fn = kernel.fn
                rec.update(kernel.info)
                rec["prism_source"] = kernel.info.get("prism_source") or provider.name  # shown per figure
            except Exception as e:  # Prism failing on one config is a result, not the end of the run
                log.error("Prism on %s failed: %s", cfg.id, e)
                rec["errors"]["prism"] = f"{type(e).__name__}: {e}"
        log.info("%s: checking and timing %s", cfg.id, ", ".join(systems))
        measured = measure_systems(measurer, cfg, [s for s in systems if s != "prism" or prism_fn is not None],
                                   prism_fn)
        for s, res in measured.items():
            rec[f"{s}_us"] = res.us
            rec[f"{s}_rel_err"] = res.rel_err
            if res.error:
                rec["errors"][s] = res.error
        rec["rel_err"] = rec.get("prism_rel_err")
        result["configs"].append(report.finish_record(rec))
        result["summary"] = report.summarize(result["configs"])
        result["bench_s"] = time.perf_counter() - t0
        report.write_json(result, path)
    _render(result, path, args)
    return 0


def main(argv: Sequence[str] | None = None, *, measurer: Measurer | None = None,
         provider: Provider | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return run(args, argv, measurer, provider)
    except PrismError as e:
        print(f"bench: error: {e}", file=sys.stderr)
        return 2
