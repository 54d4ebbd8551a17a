"""One kernel from a split kernel and its combine (``prism.codegen.fuse``).

Each kernel's code is the body of a plain kernel, as a ``run`` function in a namespace of its own
(``split``, ``combine``: their loaders and mma helpers keep their names)::

    __global__ entry(every tensor of both, unsigned* prism_done) {
      split::run(..., blockIdx);                      // this block's partials, saved
      if (!arrive_last(prism_done + b, count, tid)) return;
      combine::run(..., {b's coordinates});           // the last of b's split blocks combines
    }
"""

from __future__ import annotations

from prism.codegen.fuse import Fusion
from prism.codegen.lower import ident
from prism.codegen.lowered import GraphLowering, KernelLowering
from prism.codegen.render_kernel import block_code, device_functions, header, param, params, reads_past_l1
from prism.codegen.render_prelude import helpers_used, prelude
from prism.codegen.render_reduce import _indent

COUNTER = "prism_done"


def fused_args(a: KernelLowering, b: KernelLowering) -> tuple[str, ...]:
    """The fused kernel's tensors: the split kernel's, then the combine's it does not have."""
    return (*a.args, *(t for t in b.args if t not in a.args))


def _namespace(name: str, low: KernelLowering) -> str:
    run = [f"__device__ __forceinline__ void run({', '.join([*params(low), 'const uint3 bid'])}) {{",
           *_indent(block_code(low), 2), "}"]
    return "\n\n".join([f"namespace {name} {{", *device_functions(low), "\n".join(run),
                        f"}}  // namespace {name}"])


def _signature(a: KernelLowering, b: KernelLowering, entry: str) -> str:
    written = set(a.saves_tensors()) | set(b.saves_tensors())
    out = [param(a if t in a.args else b, t, t in written) for t in fused_args(a, b)]
    out.append(f"unsigned* __restrict__ {COUNTER}")
    return f'extern "C" __global__ void __launch_bounds__({a.threads}) {entry}({", ".join(out)}) {{'


def _target(fu: Fusion, b: KernelLowering) -> list[str]:
    """``cb``: the combining block this block feeds, and ``cb_lin``: its linear index."""
    coords = [("0" if c is None else f"blockIdx.{'xyz'[c.src]}" + (f" / {c.ratio}" if c.ratio > 1 else ""))
              for c in fu.coords]
    coords += ["0"] * (3 - len(coords))
    grid = (*b.grid, *([1] * (3 - len(b.grid))))
    return [f"const uint3 cb = make_uint3({', '.join(coords)});",
            f"const unsigned cb_lin = cb.x + {grid[0]}u * (cb.y + {grid[1]}u * cb.z);"]


def render_fused(gl: GraphLowering, a: KernelLowering, b: KernelLowering, fu: Fusion, entry: str) -> str:
    note = (f"// fused: each block runs split kernel {a.kernel.name!r}, then the last of the {fu.count} blocks "
            f"feeding a block of {b.kernel.name!r} runs that block (prism.codegen.fuse)")
    kernel = [
        _signature(a, b, entry),
        f"  split::run({', '.join(ident(t) for t in a.args)}, blockIdx);",
        *_indent(_target(fu, b), 2),
        f"  if (!arrive_last({COUNTER} + cb_lin, {fu.count}u, (int)threadIdx.x)) return;",
        f"  combine::run({', '.join(ident(t) for t in b.args)}, cb);",
        "}",
    ]
    combine_header = header(gl, b, entry).split("\n", 1)[1]  # its first line names the entry again
    parts = [header(gl, a, entry), note, combine_header, "",
             prelude(a.dtype, a.l2_prefetch, fused=True, l2_loads=reads_past_l1(a, b),
                     tails=a.tails is not None or b.tails is not None, helpers=helpers_used(a, b)),
             _namespace("split", a),
             _namespace("combine", b), "\n".join(kernel)]
    return "\n\n".join(parts) + "\n"
