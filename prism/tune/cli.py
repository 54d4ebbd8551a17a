"""``python -m prism optimize NAME --config CONFIG [--json]``: superoptimize one benchmark configuration;
``python -m prism optimize --graph FILE [--name NAME]``: any program, as ``Graph.to_json`` writes it.

Runs ``prism.superoptimize`` (search + verification, or their cache; then tuning on the GPU) and
prints the stages' times, the counts and the best kernel time. With no GPU it stops after
verification with a message saying so and exit status 3 (``EXIT_NO_GPU``), so a script can tell it
from success. Bad flags (``--samples 0``, ``--time-budget nan``, ``--target sm_xx``) are refused
before anything runs (exit status 2).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from typing import Any

from prism import workloads
from prism.errors import DeviceError, OptionError, WorkloadError
from prism.options import add_graph_arguments, check_one_program, count_arg, seconds_arg, seed_arg, target_arg

EXIT_NO_GPU = 3  # search and verification ran; tuning needs a GPU this machine does not have

# (summary key, label, format) printed in this order when present.
SHOWN = [
    ("search_s", "symbolic search", "{:.1f} s"),
    ("verify_s", "mapping + verification", "{:.1f} s"),
    ("tune_s", "tuning", "{:.1f} s"),
    ("verified_sgraphs", "verified sGraphs", "{}"),
    ("distinct_kernels", "distinct kernels", "{}"),
    ("samples", "samples", "{}"),
    ("compiled", "compiled", "{}"),
    ("failed", "failed (compile/launch)", "{}"),
    ("search_cache_hit", "search cache hit", "{}"),
    ("tune_cache_hit", "tuning cache hit", "{}"),
    ("best_us", "best kernel", "{:.2f} µs"),
    ("plan_source", "plan source", "{}"),
    ("rel_err", "rel. error vs float64 reference", "{:.1e}"),
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", metavar="NAME", nargs="?", choices=sorted(workloads.PROGRAMS),
                   help=f"benchmark program: {', '.join(workloads.PROGRAMS)}")
    add_graph_arguments(p, "superoptimized at its own shapes")
    p.add_argument("--config", default=None, metavar="CONFIG",
                   help="configuration id from docs/benchmarks.md (default: the program's first)")
    p.add_argument("--samples", type=count_arg("samples"), default=64, help="tuning samples (default 64)")
    p.add_argument("--seed", type=seed_arg(), default=0, help="seed of the tuning sample (default 0)")
    p.add_argument("--time-budget", type=seconds_arg("time_budget"), default=None, metavar="SECONDS",
                   help="tuning time budget")
    p.add_argument("--target", type=target_arg(), default=None, metavar="ARCH",
                   help="architecture, e.g. sm_80 (default: the GPU's)")
    p.add_argument("--no-cache", action="store_true", help="ignore and do not write the caches")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def resolve_config(program: str, config_id: str | None) -> workloads.Config:
    if config_id is None:
        return workloads.configs_of(program)[0]
    cfg = workloads.config(config_id)
    if cfg.program != program:
        ids = ", ".join(c.id for c in workloads.configs_of(program))
        raise WorkloadError(f"configuration {config_id!r} is of {cfg.program!r}, not {program!r}; "
                            f"{program}'s configurations: {ids}")
    return cfg


def _superoptimize() -> Any:
    try:
        from prism.pipeline import superoptimize
    except ImportError:
        return None
    return superoptimize


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def _program(args: argparse.Namespace) -> tuple[Any, str, str]:
    """(the program, its name, the label of its configuration): a benchmark configuration's or ``--graph``'s."""
    check_one_program(args.program, args.graph)
    if args.graph is None:
        cfg = resolve_config(args.program, args.config)
        return cfg.build(), cfg.program, cfg.id
    if args.config is not None:
        raise OptionError("--config names a benchmark configuration; a --graph program has its own shapes")
    from prism.graph_json import graph_from_file

    graph = graph_from_file(args.graph)
    return graph, args.name, " ".join(f"{t.name}{list(t.shape)}" for t in graph.inputs)


def run(args: argparse.Namespace) -> int:
    graph, program, config = _program(args)
    superoptimize = _superoptimize()
    if superoptimize is None:
        print("prism optimize: prism.superoptimize is not available in this build yet", file=sys.stderr)
        return 2
    kwargs: dict[str, Any] = {"target": args.target, "samples": args.samples, "seed": args.seed,
                              "time_budget": args.time_budget, "cache": not args.no_cache}
    params = inspect.signature(superoptimize).parameters
    if "program" in params:
        kwargs["program"] = program
    head = {"program": program, "config": config}
    try:
        og = superoptimize(graph, **kwargs)
    except DeviceError as e:
        summary = e.summary
        msg = f"no usable GPU: stopped after verification. {e}"
        if args.json:
            print(json.dumps({**head, "status": "verified", "message": msg, "summary": _jsonable(summary)}, indent=1))
        else:
            print(f"{config}: {msg}")
        return EXIT_NO_GPU
    summary = dict(getattr(og, "summary", {}) or {})
    if args.json:
        print(json.dumps({**head, "status": "optimized", "summary": _jsonable(summary)}, indent=1))
        return 0
    print(f"{config} ({program}):")
    for key, label, fmt in SHOWN:
        if summary.get(key) is not None:
            try:
                value = fmt.format(summary[key])
            except (TypeError, ValueError):
                value = str(summary[key])
            print(f"  {label:<32} {value}")
    ind = summary.get("inductor") or {}
    for key, label in (("inductor_us", "torch.compile / generated"), ("eager_us", "eager PyTorch / generated")):
        if ind.get(key) is not None:
            print(f"  {label:<32} {ind[key]:.2f} / {ind['generated_us']:.2f} µs")
    return 0
