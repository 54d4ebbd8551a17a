"""The main job as far as it goes on this machine: build, evaluate, and run fused plans.

``python -m prism demo [PROGRAM]`` builds every benchmark program, evaluates it with the float64
reference, and runs its hand-built fused μGraph plans through the μGraph interpreter at a few
size choices, reporting the error against the reference.
"""

from __future__ import annotations

import argparse

import numpy as np

from prism import interpreter, plans, workloads
from prism.reference import relative_error

# Small sizes that keep the block-by-block interpreter quick.
DEMO_SIZES: dict[str, dict[str, int]] = {
    "rmsnorm_linear": {"n": 8, "d": 64},
    "rmsnorm_mlp": {"n": 8, "d": 64},
    "swiglu": {"n": 16, "d": 64},
    "gqa": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
    "qknorm_gqa": {"batch": 2, "group": 8, "kv_len": 64, "head_dim": 16},
}
DEMO_D = [{"x": 2, "y": 2, "i": 4, "s": 2}, {"x": 2, "y": 4, "i": 2, "s": 4}]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", nargs="?", default=None, choices=sorted(workloads.PROGRAMS),
                   help="one program (default: all five)")


def run(args: argparse.Namespace) -> int:
    names = [args.program] if args.program else list(workloads.PROGRAMS)
    worst = 0.0
    for name in names:
        g = workloads.program(name, **DEMO_SIZES[name])
        rng = np.random.default_rng(0)
        inputs = {t.name: rng.standard_normal(t.shape) * 0.5 for t in g.inputs}
        ref = g.evaluate(inputs)
        print(f"{name}: {g}  structure key {g.structure_key()}")
        for kg in plans.hand_plans(name, g):
            for d in DEMO_D:
                sizes = {k: v for k, v in d.items() if k in kg.symbols}
                out = interpreter.run(kg.instantiate(sizes), inputs)
                err = max(relative_error(out[o], ref[o]) for o in ref)
                worst = max(worst, err)
                kernels = " + ".join(f"{k.name}" for k in kg.kernels)
                print(f"  plan [{kernels}] sizes {sizes}: rel. error vs float64 reference {err:.1e}")
    print(f"worst relative error {worst:.1e}")
    return 0 if worst < 1e-9 else 1
