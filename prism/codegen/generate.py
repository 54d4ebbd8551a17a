"""μGraph -> LaunchPlan: lower every custom kernel, render its source, list buffers and library ops."""

from __future__ import annotations

import hashlib

from prism.codegen.arch import arch as get_arch
from prism.codegen.lower import DEFAULT_OPTIONS, GraphLowering, Options, lower_graph
from prism.codegen.plan import BufferSpec, KernelLaunch, LaunchPlan, PredefinedOp, Step
from prism.codegen.render_kernel import render_kernel
from prism.errors import CodegenError
from prism.ir import CustomKernel, KernelGraph, PredefinedKernel, kernel_graph_name_problem
from prism.names import c_ident, c_label, show


def entry_name(gl: GraphLowering, kernel: CustomKernel, options: Options) -> str:
    """A C symbol unique to the μGraph, its sizes, the target and the options (deterministic)."""
    key = f"{gl.kg.dumps()}|{gl.arch.name}|{options}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"prism_{c_label(gl.kg.program)}_{c_ident(kernel.name)}_{digest}"


def generate(kg: KernelGraph, *, arch: str = "sm_80", options: Options | None = None) -> LaunchPlan:
    """CUDA source and launch plan of a concrete μGraph for ``arch`` (raises CodegenError)."""
    if (bad := kernel_graph_name_problem(kg)) is not None:
        raise CodegenError(f"{show(kg.program)}: {bad}")
    opts = options or DEFAULT_OPTIONS
    gl = lower_graph(kg, get_arch(arch), opts)
    steps: list[Step] = []
    for k, low in zip(kg.kernels, gl.kernels, strict=True):
        if isinstance(k, PredefinedKernel):
            scalar = k.scalar.resolve({t.name: t.shape for t in kg.inputs}) if k.scalar is not None else None
            steps.append(PredefinedOp(k.name, k.kind.value, k.inputs, k.output,
                                      None if k.fn is None else k.fn.value, k.dim, scalar))
            continue
        assert low is not None
        entry = entry_name(gl, k, opts)
        grid = (*low.grid, *([1] * (3 - len(low.grid))))
        sizes = (*zip("xyz", low.grid, strict=False), ("loop", low.loop))
        steps.append(KernelLaunch(k.name, entry, render_kernel(gl, low, entry), (grid[0], grid[1], grid[2]),
                                  (low.threads, 1, 1), low.smem_bytes, low.args, low.stages, sizes))
    buffers = tuple(BufferSpec(n, gl.shapes[n], gl.dtypes[n]) for n in gl.intermediates)
    return LaunchPlan(kg.program, arch, kg.inputs, kg.outputs, buffers, tuple(steps), kg.dumps())
