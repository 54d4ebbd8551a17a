"""CUDA code generation from concrete μGraphs (paper §5-§6; our own transpiler).

    plan = prism.codegen.generate(kg, arch="sm_80")   # LaunchPlan: sources, grids, buffers
    res = prism.codegen.resources(kg, "sm_90")         # cheap: shared memory / threads, no source

Pipeline inside: ``lower`` (where each value lives, work split, smem layout, every legality check)
then the ``render_*`` pieces (prelude, loaders, mma, reductions, savers, kernel assembly).
"""

from __future__ import annotations

from prism.codegen.arch import ARCHS, Arch
from prism.codegen.generate import generate
from prism.codegen.lower import DirectLoads, Options
from prism.codegen.plan import BufferSpec, KernelLaunch, LaunchPlan, PredefinedOp
from prism.codegen.resources import KernelResources, Resources, resources
from prism.errors import CodegenError

__all__ = [
    "ARCHS",
    "Arch",
    "BufferSpec",
    "CodegenError",
    "DirectLoads",
    "KernelLaunch",
    "KernelResources",
    "LaunchPlan",
    "Options",
    "PredefinedOp",
    "Resources",
    "generate",
    "resources",
]
