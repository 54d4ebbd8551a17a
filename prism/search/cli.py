"""``python -m prism search NAME [--json] [--no-cache]``: the symbolic search of a benchmark program;
``python -m prism search --graph FILE``: of any program, written by ``Graph.to_json`` (searched as
``superoptimize`` searches it, so that a CPU machine fills the search cache a GPU machine then reads).

The search and the mapping instantiation are one call each (``run_search``, ``run_mapping``), so the
orchestrating command can add verification, the cache and more JSON fields around them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from prism import workloads
from prism.errors import OptionError, WorkloadError
from prism.options import add_graph_arguments, check_one_program


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", nargs="?", choices=sorted(workloads.PROGRAMS),
                   help="a benchmark program (its sizes do not matter)")
    add_graph_arguments(p, "searched, mapped and verified as superoptimize would, into the same search cache")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-cache", action="store_true", help="ignore cached results (search again)")
    p.add_argument("--no-mappings", action="store_true", help="skip mapping instantiation")
    p.add_argument("--whole", action="store_true",
                   help="search the whole program only (not also its parts, prism.partition)")
    p.add_argument("--max-block-ops", type=int, default=None, help="ops per block graph (default: program's minimum + 2)")
    p.add_argument("--max-kernels", type=int, default=2)
    p.add_argument("--max-grid-dims", type=int, default=3)
    p.add_argument("--time-budget", type=float, default=None,
                   help="wall-clock budget of the search in seconds (default: superoptimize's, "
                   "prism.pipeline.DEFAULT_SEARCH_BUDGET_S; the mapping gets it once more, the screen and the proof "
                   "once each)")
    p.add_argument("--concrete-maps", default="", help="ablation: comma-separated map kinds enumerated during the search "
                   "(imap,fmap,omap)")


def config_from(args: argparse.Namespace) -> Any:
    from prism.pipeline import DEFAULT_SEARCH_BUDGET_S
    from prism.search.config import SearchConfig

    concrete = frozenset(s for s in args.concrete_maps.split(",") if s)
    budget = DEFAULT_SEARCH_BUDGET_S if args.time_budget is None else args.time_budget
    return SearchConfig(max_block_ops=args.max_block_ops, max_kernels=args.max_kernels, max_grid_dims=args.max_grid_dims,
                        time_budget_s=budget, concrete_maps=concrete, progress=not args.json)


def run_search(name: str, config: Any) -> Any:
    """The search part: one call, returns a SearchResult."""
    from prism.search import search

    if name not in workloads.PROGRAMS:
        raise WorkloadError(f"unknown program {name!r}")
    return search(workloads.program(name), config, name=name)


def run_mapping(result: Any, progress: bool = False) -> dict[str, Any]:
    """Mapping instantiation of every candidate (``PRISM_JOBS`` workers): the graphs and the counts."""
    from prism.progress import StageBar
    from prism.search.parallel import Mapped, instantiate_all
    from prism.settings import settings

    t0 = time.perf_counter()
    found = [0]
    with StageBar("mappings", total=len(result.candidates), unit=" sGraphs", enabled=progress) as bar:
        def mapped_part(part: Mapped) -> None:
            found[0] += part.mappings
            bar.advance(part.done, mappings=found[0])

        m = instantiate_all(result.candidates, deadline=time.time() + 1e9, jobs=settings().jobs, on_progress=mapped_part)
    return {"graphs": m.graphs, "mappings": m.mappings, "mappings_before_symmetry": m.before_symmetry,
            "seconds": time.perf_counter() - t0}


def summary(result: Any, mapping: dict[str, Any] | None) -> dict[str, Any]:
    st = result.stats
    kernels: dict[str, int] = {}
    for c in result.candidates:
        kernels[str(len(c.kernels))] = kernels.get(str(len(c.kernels)), 0) + 1
    out: dict[str, Any] = {
        "program": result.program,
        "structure_key": result.structure_key,
        "candidates": len(result.candidates),
        "candidates_by_kernels": kernels,
        "structures": st["structures"],
        "pruned": st["pruned"],
        "values": st["values"],
        "max_block_ops": st["max_block_ops"],
        "timed_out": st["timed_out"],
        "seconds": {"search": round(float(st["seconds"]), 3)},
    }
    if mapping is not None:
        out["mappings"] = mapping["mappings"]
        out["mappings_before_symmetry"] = mapping["mappings_before_symmetry"]
        out["seconds"]["mapping"] = round(mapping["seconds"], 3)
    return out


def run_pipeline(args: argparse.Namespace) -> dict[str, Any]:
    """Search + mapping + verification through the pipeline (cached by structure key)."""
    import logging

    from prism.pipeline import search_and_verify

    logging.getLogger("egglog").setLevel(logging.WARNING)
    graph = workloads.program(args.program)
    return _outcome_json(search_and_verify(graph, program=args.program, cache=not args.no_cache,
                                           progress=not args.json, config=config_from(args), partitioned=not args.whole))


def _outcome_json(outcome: Any) -> dict[str, Any]:
    """A ``SearchOutcome`` as the command prints it (seconds rounded)."""
    out: dict[str, Any] = outcome.to_json()
    out["seconds"] = {k: round(v, 3) for k, v in outcome.seconds.items()}
    out.setdefault("candidates", None)
    return out


def graph_program(args: argparse.Namespace) -> dict[str, Any]:
    """``--graph FILE``: the program read back (``graph_json``, every node checked), searched, mapped
    and verified as ``superoptimize`` does it (``rows.searched_graph``, no search configuration but the
    time budget), so that its cache entries are the ones ``superoptimize`` looks up."""
    from prism.graph_json import graph_from_file
    from prism.pipeline import search_and_verify
    from prism.rows import searched_graph

    graph = searched_graph(graph_from_file(args.graph))
    return _outcome_json(search_and_verify(graph, program=args.name, cache=not args.no_cache, progress=not args.json,
                                           time_budget=args.time_budget, partitioned=not args.whole))


def _checked(args: argparse.Namespace) -> None:
    """One program: a benchmark program's name or ``--graph``; the ablations only for benchmark programs."""
    check_one_program(args.program, args.graph)
    if args.graph is not None and (args.no_mappings or args.concrete_maps):
        raise OptionError("--no-mappings and --concrete-maps are ablations of benchmark programs, not of --graph")


def run(args: argparse.Namespace) -> int:
    _checked(args)
    if not args.no_mappings and not args.concrete_maps:
        out = run_pipeline(args) if args.graph is None else graph_program(args)
        if args.json:
            print(json.dumps(out, sort_keys=True))
            return 0
        w = sys.stdout.write
        src = " (loaded from the cache: no search)" if out["cached"] else ""
        w(f"{out['program']} (structure key {out['structure_key']}){src}\n")
        w(f"  {out.get('candidates')} candidate sGraphs; {out.get('mappings')} mappings after symmetry breaking "
          f"({out.get('mappings_before_symmetry')} before); {out['verified']} distinct verified sGraphs\n")
        if out.get("pruned"):
            w(f"  pruned: {', '.join(f'{k} {v}' for k, v in out['pruned'].items())}\n")
        w(f"  seconds: {', '.join(f'{k} {v:.2f}' for k, v in out['seconds'].items())}\n")
        if out.get("search_timed_out") or out.get("mapping_timed_out"):
            w("  stopped at the time budget: results are partial\n")
        return 0
    cfg = config_from(args)
    result = run_search(args.program, cfg)
    mapping = None if args.no_mappings else run_mapping(result, progress=not args.json)
    out = summary(result, mapping)
    if args.json:
        print(json.dumps(out, sort_keys=True))
        return 0
    w = sys.stdout.write
    w(f"{out['program']}: {out['candidates']} candidate sGraphs ({out['structures']} block-graph structures, "
      f"by kernels {out['candidates_by_kernels']}) in {out['seconds']['search']:.2f} s\n")
    w(f"  pruned: {', '.join(f'{k} {v}' for k, v in out['pruned'].items())}\n")
    if mapping is not None:
        w(f"  mappings: {out['mappings']} after symmetry breaking ({out['mappings_before_symmetry']} before) "
          f"in {out['seconds']['mapping']:.2f} s\n")
    if out["timed_out"]:
        w("  the search stopped at its time budget: results are partial\n")
    return 0
