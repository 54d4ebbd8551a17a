"""The launch plan: what the runtime needs to run a generated μGraph, as plain data.

A ``LaunchPlan`` lists, in order, the steps of a program: custom kernels (``KernelLaunch``: CUDA
source, entry point, grid, block, dynamic shared memory, argument tensors by name) and pre-defined
ops (``PredefinedOp``, run by a library call). Tensors that one step writes and a later one reads,
and that are not program outputs, are float32 intermediate buffers (``BufferSpec``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from prism.ir import TensorSpec

FORMAT = "prism.launch_plan"
VERSION = 1


@dataclass(frozen=True)
class KernelLaunch:
    name: str  # the μGraph kernel's name
    entry: str  # extern "C" symbol in ``source``
    source: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int  # dynamic shared memory; > 48 KB needs the opt-in attribute
    args: tuple[str, ...]  # tensor names, in parameter order (pointers)
    stages: int = 1
    sizes: tuple[tuple[str, int], ...] = ()  # grid dims and loop, for the record

    def to_json(self) -> dict[str, object]:
        return {"type": "kernel", "name": self.name, "entry": self.entry, "grid": list(self.grid),
                "block": list(self.block), "smem_bytes": self.smem_bytes, "args": list(self.args),
                "stages": self.stages, "sizes": dict(self.sizes), "source_lines": self.source.count("\n")}


@dataclass(frozen=True)
class PredefinedOp:
    """A Graph primitive on whole tensors (kind/fn as in prism.ir.PredefinedKernel)."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    output: str
    fn: str | None = None
    dim: int | None = None
    scalar: float | None = None  # resolved scalar operand

    def to_json(self) -> dict[str, object]:
        return {"type": "predefined", "name": self.name, "kind": self.kind, "inputs": list(self.inputs),
                "output": self.output, "fn": self.fn, "dim": self.dim, "scalar": self.scalar}


@dataclass(frozen=True)
class BufferSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}


COUNTER_DTYPE = "uint32"  # a fused kernel's arrival counters (prism.codegen.fuse): zeroed once, self-resetting

Step = KernelLaunch | PredefinedOp


@dataclass(frozen=True)
class LaunchPlan:
    program: str
    arch: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    buffers: tuple[BufferSpec, ...]
    steps: tuple[Step, ...]
    kernel_graph: str = ""  # the μGraph (JSON text) this plan implements

    @property
    def kernels(self) -> list[KernelLaunch]:
        return [s for s in self.steps if isinstance(s, KernelLaunch)]

    @property
    def smem_bytes(self) -> int:
        return max((k.smem_bytes for k in self.kernels), default=0)

    def to_json(self) -> dict[str, object]:
        """The plan without the sources (they are written next to it as .cu files)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "program": self.program,
            "arch": self.arch,
            "inputs": [[t.name, list(t.shape), t.dtype] for t in self.inputs],
            "outputs": [[t.name, list(t.shape), t.dtype] for t in self.outputs],
            "buffers": [b.to_json() for b in self.buffers],
            "steps": [s.to_json() for s in self.steps],
            "kernel_graph": json.loads(self.kernel_graph) if self.kernel_graph else None,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)
