"""The main job: ``python -m prism demo [PROGRAM]`` (the README's first command).

1. Builds every benchmark program and evaluates it with the float64 reference.
2. Runs the symbolic search, mapping instantiation and verification of PROGRAM (default
   swiglu; cached by structure key, so a second run is instant) and runs a few of the
   verified sGraphs through the μGraph interpreter at random legal sizes against the reference.
3. On a machine with an NVIDIA GPU (CuPy + torch): superoptimizes PROGRAM's first benchmark
   configuration and reports the kernel time; without one it says so and stops there.
"""

from __future__ import annotations

import argparse
import logging
import random

import numpy as np

from prism import interpreter, workloads
from prism.errors import DeviceError, IRError
from prism.ir import KernelGraph
from prism.options import count_arg
from prism.pipeline import bind_shapes, search_and_verify, superoptimize
from prism.reference import relative_error
from prism.tune.inductor import TIE_MARGIN

log = logging.getLogger(__name__)

# Small sizes that keep the block-by-block interpreter quick.
DEMO_SIZES: dict[str, dict[str, int]] = {
    "rmsnorm_linear": {"n": 8, "d": 64},
    "rmsnorm_mlp": {"n": 8, "d": 64},
    "swiglu": {"n": 16, "d": 64},
    "gqa": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
    "qknorm_gqa": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
    "gqa_safe": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
    "qknorm_gqa_safe": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", nargs="?", default="swiglu", choices=sorted(workloads.PROGRAMS),
                   help="the program to superoptimize (default swiglu)")
    p.add_argument("--samples", type=count_arg("samples"), default=32, help="tuning samples on a GPU")
    p.add_argument("--no-cache", action="store_true", help="ignore cached search/tuning results")


def _interpret_some(name: str, templates: list[KernelGraph], rng: random.Random) -> float:
    g = workloads.program(name, **DEMO_SIZES[name])
    inputs = {t.name: np.random.default_rng(0).standard_normal(t.shape) * 0.5 for t in g.inputs}
    ref = g.evaluate(inputs)
    worst, shown = 0.0, 0
    for kg in templates[:6]:
        kg = bind_shapes(kg, g)
        for _ in range(20):  # find a legal random size choice
            sizes = {s: rng.choice([1, 2, 4]) for s in kg.symbols}
            try:
                out = interpreter.run(kg.instantiate(sizes), inputs)
            except IRError:
                continue
            err = max(relative_error(out[o], ref[o]) for o in ref)
            worst = max(worst, err)
            kernels = " + ".join(f"{k.name}" for k in kg.kernels)
            print(f"  verified sGraph [{kernels}] at sizes {sizes}: interpreter vs reference, rel. error {err:.1e}")
            shown += 1
            break
    return worst if shown else float("inf")


def run(args: argparse.Namespace) -> int:
    print("1. benchmark programs, float64 reference:")
    for name in workloads.PROGRAMS:
        g = workloads.program(name, **DEMO_SIZES[name])
        rng = np.random.default_rng(0)
        out = g.evaluate({t.name: rng.standard_normal(t.shape) * 0.5 for t in g.inputs})
        print(f"  {name:15s} {g}  |O| = {np.linalg.norm(out['O']):.3f}  structure key {g.structure_key()}")
    name = args.program
    cfg = workloads.configs_of(name)[0]
    graph = cfg.build()
    print(f"\n2. search + mapping + verification of {name} (symbolic: serves every shape):")
    outcome = search_and_verify(graph, program=name, cache=not args.no_cache)
    info = outcome.to_json()
    print(f"  {info['verified']} verified sGraphs from {info.get('candidates')} candidates, "
          f"{info.get('mappings')} mappings; seconds {({k: round(v, 2) for k, v in outcome.seconds.items()})}"
          f"{' (from the cache)' if outcome.cached else ''}")
    worst = _interpret_some(name, list(outcome.templates), random.Random(0))
    print(f"\n3. superoptimize {cfg.id} on the GPU:")
    try:
        fast = superoptimize(graph, program=name, samples=args.samples, cache=not args.no_cache,
                             scales=dict(cfg.scales))
    except DeviceError as e:
        print(f"  no usable GPU here: stopped after verification ({e})")
        return 0 if worst < 1e-9 else 1
    s = fast.summary
    print(f"  best kernel {s['best_us']:.2f} µs (tuner timing), rel. error vs float64 reference {s['rel_err']:.1e}, "
          f"{s.get('samples')} samples, tuning {s.get('tune_s', 0):.1f} s, plan {s.get('plan_source')}")
    ind = s.get("inductor") or {}
    theirs = [f"{name} {ind[key]:.2f} µs" for key, name in (("inductor_us", "torch.compile"), ("eager_us", "eager"))
              if ind.get(key) is not None]
    if theirs and ind.get("generated_us") is not None:
        print(f"  PyTorch's kernels for the same program: {', '.join(theirs)}; the generated plan "
              f"{ind['generated_us']:.2f} µs (the fastest is returned; within {TIE_MARGIN:.0%}, PyTorch's)")
    print(f"  {fast!r}")
    return 0 if worst < 1e-9 else 1
