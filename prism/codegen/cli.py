"""``python -m prism emit NAME [--config CONFIG] --out DIR [--all] [--arch sm_80] [--check]``

Writes, for a benchmark configuration, one ``.cu`` per custom kernel and a ``plan.json`` launch
plan per plan and size choice: ``DIR/<config>/p<plan>_<sizes>/``. NAME is a configuration id
(``rmsnorm_linear_d4096``) or a program name with ``--config``. The plans come from a pluggable
source (a function ``(program, graph) -> list[KernelGraph]`` of templates with symbolic sizes):
the hand-built plans of prism.plans until the search's verified sGraphs replace them. Without
``--all`` each plan gets one default size choice; with it, every legal power-of-two choice.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from pathlib import Path

from prism import plans, workloads
from prism.codegen.arch import ARCHS
from prism.codegen.generate import generate
from prism.codegen.plan import LaunchPlan
from prism.codegen.sizes import default_sizes, generated_sizes
from prism.errors import OptionError, WorkloadError
from prism.graph import Graph
from prism.ir import KernelGraph

log = logging.getLogger(__name__)

PlanSource = Callable[[str, Graph], list[KernelGraph]]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="configuration id (e.g. rmsnorm_linear_d4096), or a program name with --config")
    p.add_argument("--config", default=None, help="configuration id, when NAME is a program")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--all", action="store_true", help="every legal size choice, not only the default one")
    p.add_argument("--arch", default="sm_80", choices=sorted(ARCHS), help="target (shared-memory budget)")
    p.add_argument("--check", action="store_true", help="compile every written kernel with nvcc")


def resolve_config(name: str, config: str | None) -> workloads.Config:
    if name in workloads.CONFIGS:
        cfg = workloads.config(name)
        if config is not None and config != name:
            raise WorkloadError(f"NAME {name!r} is a configuration; --config {config!r} disagrees")
        return cfg
    if name not in workloads.PROGRAMS:
        raise WorkloadError(f"{name!r} is neither a configuration ({', '.join(workloads.CONFIGS)}) "
                            f"nor a program ({', '.join(workloads.PROGRAMS)})")
    if config is None:
        raise WorkloadError(f"{name!r} is a program: say which configuration with --config "
                            f"({', '.join(c.id for c in workloads.configs_of(name))})")
    cfg = workloads.config(config)
    if cfg.program != name:
        raise WorkloadError(f"configuration {config!r} is of program {cfg.program!r}, not {name!r}")
    return cfg


def _tag(sizes: dict[str, int]) -> str:
    return "_".join(f"{k}{v}" for k, v in sizes.items()) or "fixed"


def write_plan(plan: LaunchPlan, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in plan.kernels:
        p = directory / f"{k.name}.cu"
        p.write_text(k.source)
        paths.append(p)
    p = directory / "plan.json"
    p.write_text(plan.dumps() + "\n")
    paths.append(p)
    return paths


def emit(cfg: workloads.Config, out: Path, *, arch: str = "sm_80", all_sizes: bool = False,
         plan_source: PlanSource = plans.codegen_plans) -> list[tuple[Path, LaunchPlan]]:
    """Generate and write the plans of ``cfg``; returns (directory, plan) per plan and size choice."""
    graph = cfg.build()
    written = []
    for pi, template in enumerate(plan_source(cfg.program, graph)):
        choices = [s for s, _ in generated_sizes(template, arch)] if all_sizes else [default_sizes(template, arch)]
        for sizes in choices:
            plan = generate(template.instantiate(sizes), arch=arch)
            d = out / cfg.id / f"p{pi}_{_tag(sizes)}"
            write_plan(plan, d)
            written.append((d, plan))
    return written


def run(args: argparse.Namespace) -> int:
    cfg = resolve_config(args.name, args.config)
    out = Path(args.out)
    try:
        written = emit(cfg, out, arch=args.arch, all_sizes=args.all)
    except OSError as e:
        raise OptionError(f"emit --out {str(out)!r}: cannot write {e.filename or out}: {e.strerror or e}") from e
    n_kernels = sum(len(p.kernels) for _, p in written)
    for d, p in written:
        ks = ", ".join(f"{k.name} grid {list(k.grid)} smem {k.smem_bytes}" for k in p.kernels)
        print(f"{os.path.relpath(d)}: {ks}")
    print(f"{cfg.id}: {len(written)} plan/size choices, {n_kernels} kernels written under {out / cfg.id}")
    if args.check:
        from prism.codegen.nvcc import compile_check

        srcs = list({k.entry: k.source for _, p in written for k in p.kernels}.items())
        compile_check(srcs, "sm_80" if args.arch == "sm_80" else args.arch, jobs=os.cpu_count() or 2)
        print(f"nvcc: {len(srcs)} kernels compile for {args.arch}")
    return 0
