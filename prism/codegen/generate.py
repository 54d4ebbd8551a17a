"""μGraph -> LaunchPlan: lower every custom kernel, render its source, list buffers and library ops."""

from __future__ import annotations

import hashlib
from dataclasses import fields

from prism.codegen.arch import arch as get_arch
from prism.codegen.fuse import Fusion, launch_fusion
from prism.codegen.lower import DEFAULT_OPTIONS, GraphLowering, Options, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.plan import COUNTER_DTYPE, BufferSpec, KernelLaunch, LaunchPlan, PredefinedOp, Step
from prism.codegen.render_fused import fused_args, render_fused
from prism.codegen.render_kernel import render_kernel
from prism.errors import CodegenError
from prism.ir import CustomKernel, KernelGraph, PredefinedKernel, kernel_graph_name_problem
from prism.names import c_ident, c_label, show
from prism.ops import Unary


def entry_name(gl: GraphLowering, kernel: CustomKernel, options: Options) -> str:
    """A C symbol unique to the μGraph, its sizes, the target and the options (deterministic; only the
    options that differ from the defaults count, so a new option renames no kernel)."""
    changed = {f.name: getattr(options, f.name) for f in fields(options)
               if getattr(options, f.name) != getattr(DEFAULT_OPTIONS, f.name)}
    key = f"{gl.kg.dumps()}|{gl.arch.name}|{sorted(changed.items())}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"prism_{c_label(gl.kg.program)}_{c_ident(kernel.name)}_{digest}"


def generate(kg: KernelGraph, *, arch: str = "sm_80", options: Options | None = None) -> LaunchPlan:
    """CUDA source and launch plan of a concrete μGraph for ``arch`` (raises CodegenError)."""
    if (bad := kernel_graph_name_problem(kg)) is not None:
        raise CodegenError(f"{show(kg.program)}: {bad}")
    if any(getattr(op, "fn", None) is Unary.CHAIN
           for k in kg.kernels for op in (k.ops if isinstance(k, CustomKernel) else (k,))):
        raise CodegenError(f"{show(kg.program)}: a chain op is the search's stand-in (prism.chains); expand it first")
    opts = options or DEFAULT_OPTIONS
    gl, opts, fu = launch_fusion(kg, lower_graph(kg, get_arch(arch), opts), opts)
    kg = gl.kg  # transposes of inputs folded into the loads that read them (prism.codegen.fold)
    second = None if fu is None else gl.kernels[fu.second]  # the combine, launched inside the split kernel
    steps: list[Step] = []
    for k, low in zip(kg.kernels, gl.kernels, strict=True):
        if isinstance(k, PredefinedKernel):
            scalar = k.scalar.resolve({t.name: t.shape for t in kg.inputs}) if k.scalar is not None else None
            steps.append(PredefinedOp(k.name, k.kind.value, k.inputs, k.output,
                                      None if k.fn is None else k.fn.value, k.dim, scalar))
            continue
        assert low is not None
        if low is second:
            continue
        if fu is not None and second is not None and low.index == fu.first:
            steps.append(_fused_launch(gl, low, second, fu, opts))
            continue
        entry = entry_name(gl, k, opts)
        steps.append(KernelLaunch(k.name, entry, render_kernel(gl, low, entry), _grid3(low), (low.threads, 1, 1),
                                  low.smem_bytes, low.args, low.stages, _sizes(low)))
    buffers = tuple(BufferSpec(n, gl.shapes[n], gl.dtypes[n]) for n in gl.intermediates)
    if fu is not None and second is not None:
        buffers += (BufferSpec(fu.counter, (second.blocks,), COUNTER_DTYPE),)
    return LaunchPlan(kg.program, arch, kg.true_inputs, kg.true_outputs, buffers, tuple(steps), kg.dumps())


def _grid3(low: KernelLowering) -> tuple[int, int, int]:
    g = (*low.grid, *([1] * (3 - len(low.grid))))
    return g[0], g[1], g[2]


def _sizes(low: KernelLowering) -> tuple[tuple[str, int], ...]:
    return (*zip("xyz", low.grid, strict=False), ("loop", low.loop))


def _fused_launch(gl: GraphLowering, a: KernelLowering, b: KernelLowering, fu: Fusion, opts: Options) -> KernelLaunch:
    """The launch of split kernel ``a`` with its combine ``b`` inside (``prism.codegen.fuse``)."""
    entry = entry_name(gl, a.kernel, opts)
    return KernelLaunch(f"{a.kernel.name}+{b.kernel.name}", entry, render_fused(gl, a, b, fu, entry), _grid3(a),
                        (a.threads, 1, 1), max(a.smem_bytes, b.smem_bytes), (*fused_args(a, b), fu.counter),
                        max(a.stages, b.stages), _sizes(a))
