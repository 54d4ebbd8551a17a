"""Where bench/ gets Prism's kernel for a configuration.

A provider turns a configuration into a callable on torch tensors (inputs in the program's
order, returning the output) plus search-cost facts. Three are built in:

* ``superoptimize`` — ``prism.superoptimize`` (the product; caches allowed, budget stated);
* ``hand-plans`` — the tuner (prism.tune) over the hand-built plans of prism/plans.py, for
  when the search pipeline is not available: it measures code generation and tuning, not search;
* ``none`` — no Prism column (baselines only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from prism.workloads import Config

log = logging.getLogger(__name__)

# Keys of OptimizedGraph.summary that bench copies into its records, under these names.
SUMMARY_FIELDS = {
    "search_s": "search_s",
    "verify_s": "verify_s",
    "tune_s": "tune_s",
    "verified_sgraphs": "verified_sgraphs",
    "distinct_kernels": "distinct_kernels",
    "samples": "samples",
    "compiled": "compiled",
    "failed": "failed",
    "search_cache_hit": "search_cache_hit",
    "tune_cache_hit": "tune_cache_hit",
    "best_us": "prism_tuner_us",
    "template": "prism_template",  # which verified plan won, at which sizes, from where: the run's plan
    "sizes": "prism_sizes",
    "plan_source": "prism_plan_source",
    "timed": "prism_timed",  # [template, sizes, µs] of every timed sample (scripts/zoo_prior.py)
}


@dataclass(frozen=True)
class Budget:
    samples: int = 64
    seed: int = 0
    time_budget: float | None = None
    cache: bool = True


@dataclass
class PrismKernel:
    fn: Callable[..., Any]
    info: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    name: str

    def prepare(self, cfg: Config) -> PrismKernel: ...


class SuperoptimizeProvider:
    name = "superoptimize"

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def prepare(self, cfg: Config) -> PrismKernel:
        import inspect

        import prism.pipeline

        kwargs: dict[str, Any] = {"samples": self.budget.samples, "seed": self.budget.seed,
                                  "time_budget": self.budget.time_budget, "cache": self.budget.cache}
        params = inspect.signature(prism.pipeline.superoptimize).parameters
        if "program" in params:
            kwargs["program"] = cfg.program
        if "inductor" in params:  # the suite measures Prism's own kernels: torch.compile is a baseline here
            kwargs["inductor"] = False
        t0 = time.perf_counter()
        og = prism.pipeline.superoptimize(cfg.build(), **kwargs)
        summary = dict(getattr(og, "summary", {}) or {})
        info: dict[str, Any] = {dst: summary[src] for src, dst in SUMMARY_FIELDS.items() if src in summary}
        info["prism_kernels"] = [getattr(k, "name", "?") for k in getattr(getattr(og, "kernel_graph", None), "kernels", ())]
        info["optimize_s"] = time.perf_counter() - t0
        info["prism_source"] = self.name
        return PrismKernel(og, info)


class HandPlanProvider:
    """prism.tune over prism/plans.py's hand-built templates (no search)."""

    name = "hand-plans"

    def __init__(self, budget: Budget, arch: str | None = None) -> None:
        self.budget = budget
        self.arch = arch

    def prepare(self, cfg: Config) -> PrismKernel:
        from prism import plans
        from prism.tune import tune

        graph = cfg.build()
        templates = plans.hand_plans(cfg.program, graph)
        res = tune(graph, templates, samples=self.budget.samples, seed=self.budget.seed,
                   time_budget=self.budget.time_budget, arch=self.arch, scales=cfg.scales)
        info: dict[str, Any] = {
            "tune_s": res.seconds.get("total"),
            "templates": len(templates),
            "samples": res.counts.get("sampled"),
            "compiled": res.counts.get("compiled"),
            "failed": res.counts.get("failed"),
            "prism_tuner_us": res.time_us,
            "prism_template": res.template_index,
            "prism_sizes": dict(res.sizes),
            "prism_source": self.name,
        }
        return PrismKernel(res.kernel, info)


class SearchedOrHandProvider:
    """``prism.superoptimize`` where the program's verified sGraphs are in the search cache (a GPU
    machine without z3/egglog can only load them), else the tuner over the hand-built plans. Each
    record says which one ran (``prism_source``)."""

    name = "searched-or-hand"

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def prepare(self, cfg: Config) -> PrismKernel:
        from prism.pipeline import search_cache

        if search_cache().path(cfg.build().structure_key()).exists():
            return SuperoptimizeProvider(self.budget).prepare(cfg)
        log.warning("%s: no search results in the cache; Prism's figure comes from hand plans (shown as such, "
                    "never a headline figure)", cfg.id)
        return HandPlanProvider(self.budget).prepare(cfg)


PROVIDERS = ("superoptimize", "hand-plans", "searched-or-hand", "none")


def make_provider(name: str, budget: Budget) -> Provider | None:
    if name == "superoptimize":
        return SuperoptimizeProvider(budget)
    if name == "searched-or-hand":
        return SearchedOrHandProvider(budget)
    if name == "hand-plans":
        return HandPlanProvider(budget)
    if name == "none":
        return None
    raise ValueError(f"unknown Prism provider {name!r}; known: {', '.join(PROVIDERS)}")


def default_provider() -> str:
    """superoptimize when the pipeline exists, else the tuner over hand plans when codegen exists."""
    import importlib.util

    for module, name in (("prism.pipeline", "superoptimize"), ("prism.codegen", "hand-plans")):
        try:
            if importlib.util.find_spec(module) is not None:
                return name
        except (ImportError, ValueError):
            continue
    return "none"
