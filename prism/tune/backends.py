"""Where the tuner compiles, times and runs candidates.

* :class:`CudaBackend` — the product: ``prism.codegen.generate`` → ``prism.runtime.compile_plan``,
  timed as the benchmark times it (:func:`prism.tune.timing.graph_time_us`: back-to-back calls
  replayed from a CUDA graph on inputs rotated past the L2), so a plan of two kernels pays its
  launches as it will in a user's CUDA graph; a call that cannot be captured is timed one call at a
  time (:func:`prism.tune.timing.kernel_time_us`).
* :class:`InterpreterBackend` — the μGraph interpreter on the CPU with a timer you supply: runs the
  whole tuner without a GPU (tests, dry runs).

A backend's ``compile`` may be called from several threads at once; everything else is called
from the tuner's thread only.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np

from prism import codegen, interpreter, runtime
from prism.codegen.emulate import emulate
from prism.codegen.resources import resources
from prism.codegen.sizes import Footprint, ResourceFn
from prism.errors import DeviceError
from prism.graph import Graph
from prism.ir import KernelGraph, validate
from prism.tune.timing import graph_time_us, kernel_time_us


class Backend(Protocol):
    def arch(self) -> str:
        """The architecture to tune for when the caller names none (e.g. ``"sm_90"``)."""
        ...

    def resources(self) -> ResourceFn[Footprint] | None:
        """The shared-memory/threads check used to enumerate legal sizes (None: no filter)."""
        ...

    def setup(self, graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
        """Keep the inputs every candidate is timed on (float64 arrays holding dtype-rounded values)."""
        ...

    def compile(self, kg: KernelGraph) -> Any:
        """Generate and compile a concrete μGraph; raise on failure. Thread-safe."""
        ...

    def time_us(self, kernel: Any) -> float:
        """Time of one call on the setup inputs; raise when the launch fails."""
        ...

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One call on fresh inputs with outputs poisoned (NaN) before the launch; outputs as float64."""
        ...


class InterpreterBackend:
    """Runs candidates in the μGraph interpreter; their 'time' is ``timer(kg)``."""

    def __init__(self, timer: Callable[[KernelGraph], float], *, arch: str = "sm_90",
                 resources: ResourceFn[Footprint] | None = None) -> None:
        self.timer = timer
        self._arch = arch
        self._resources = resources

    def arch(self) -> str:
        return self._arch

    def resources(self) -> ResourceFn[Footprint] | None:
        return self._resources

    def setup(self, graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
        self.inputs = dict(inputs)

    def compile(self, kg: KernelGraph) -> Any:
        return validate(kg)

    def time_us(self, kernel: Any) -> float:
        return float(self.timer(kernel))

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if kernel.tail is not None:  # (the interpreter runs plans at the program's shapes only)
            return emulate(kernel, inputs)
        return interpreter.run(kernel, inputs)


def detect_arch() -> str:
    """``sm_XY`` of the current CUDA device."""
    try:
        import torch
    except ImportError as e:
        raise DeviceError("tuning on the GPU needs PyTorch with CUDA") from e
    if not torch.cuda.is_available():
        raise DeviceError("tuning on the GPU needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


log = logging.getLogger(__name__)


class CudaBackend:
    """prism.codegen + prism.runtime on the current GPU, torch tensors in and out."""

    def __init__(self, arch: str | None = None, *, warmup: int = 3, reps: int = 20, cuda_graphs: bool = True) -> None:
        self._arch = arch
        self.warmup = warmup
        self.reps = reps  # graph replays (graph timing) or timed calls (single calls)
        self.cuda_graphs = cuda_graphs
        self._args: list[Any] = []
        self._copies: list[list[Any]] = []

    def arch(self) -> str:
        if self._arch is None:
            self._arch = detect_arch()
        return self._arch

    def resources(self) -> ResourceFn[Footprint] | None:
        return resources

    def _tensor(self, a: np.ndarray, dtype: str) -> Any:
        import torch

        return torch.from_numpy(np.ascontiguousarray(a)).to(device="cuda", dtype=getattr(torch, dtype))

    def setup(self, graph: Graph, inputs: Mapping[str, np.ndarray]) -> None:
        self.graph = graph
        self._args = [self._tensor(inputs[t.name], t.dtype) for t in graph.inputs]
        self._copies = [self._args]

    def compile(self, kg: KernelGraph) -> Any:
        plan = codegen.generate(kg, arch=self.arch())
        return runtime.compile_plan(plan)

    def _input_copy(self, i: int) -> list[Any]:
        """The i-th copy of the setup inputs (made once, kept for every later candidate)."""
        while len(self._copies) <= i:
            self._copies.append([a.clone() for a in self._args])
        return self._copies[i]

    def time_us(self, kernel: Any) -> float:
        if self.cuda_graphs:
            try:
                return graph_time_us(kernel, self._input_copy, replays=self.reps)
            except Exception as e:  # not capturable (or the capture failed): time single calls
                log.warning("CUDA-graph timing failed (%s: %s); timing single calls", type(e).__name__, e)
        args = self._args
        return kernel_time_us(lambda: kernel(*args), warmup=self.warmup, reps=self.reps)

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        args = [self._tensor(inputs[t.name], t.dtype) for t in self.graph.inputs]
        names = [t.name for t in self.graph.outputs]
        if _accepts_out(kernel):
            outs = [torch.full(t.shape, float("nan"), device="cuda", dtype=getattr(torch, t.dtype))
                    for t in self.graph.outputs]
            res = kernel(*args, out=outs[0] if len(outs) == 1 else tuple(outs))
            res = outs if res is None else res
        else:  # the runtime allocates the outputs (and poisons them itself)
            res = kernel(*args)
        torch.cuda.synchronize()
        if isinstance(res, Mapping):
            vals = [res[n] for n in names]
        elif isinstance(res, list | tuple):
            vals = list(res)
        else:
            vals = [res]
        return {n: v.double().cpu().numpy() for n, v in zip(names, vals, strict=True)}


def _accepts_out(fn: Any) -> bool:
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
