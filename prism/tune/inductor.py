"""PyTorch's own compiler as one more candidate: ``torch.compile`` (Inductor) of the same program.

``superoptimize`` times the plan its tuner chose against Inductor's kernels for the same program,
on the same inputs and the same way (CUDA-graph replay, ``CudaBackend.time_us``), after checking
Inductor's output against the float64 reference like any plan; it returns whichever is faster (a
tie within ``TIE_MARGIN`` goes to Inductor's) and
says which in ``summary["plan_source"]`` (``"inductor"``) with both times. So a program whose
generated kernels still trail Inductor's (element-wise and norm rows at decode sizes, docs/
off-the-suite.md) is never slower than ``torch.compile`` through Prism; Inductor's code is not
Prism's, and the summary says so. The decision is made on every call (the tuned cache keeps the
generated plan only); ``superoptimize(..., inductor=False)`` leaves it out (the kernel library and the
capture backend do: they want generated kernels, and capture compares regions with Inductor itself).

Imports torch only when a candidate is built, so the module imports without it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from prism.errors import InputError
from prism.graph import Graph
from prism.torch_program import torch_program
from prism.tune.tolerance import bound_for
from prism.tune.tuner import reference_error

log = logging.getLogger(__name__)

SOURCE = "inductor"  # summary["plan_source"] when torch.compile's kernels are returned
COMPARE_ROUNDS = 2  # timings of each kernel in ``compare``, interleaved
# Inductor's kernel is returned unless the generated plan is faster by more than this fraction: the
# bench's timing of Inductor's kernels against the same kernels inside superoptimize spreads 0.98-1.02×
# on an H200, and a 1% win inside superoptimize came out 2% slower in the bench (decoder_norm_linear,
# docs/off-the-suite.md, "After the prior and the warp tiles"); a tie goes to torch.compile's kernels
TIE_MARGIN = 0.02


class InductorKernel:
    """``torch.compile`` of ``graph``'s PyTorch function, called like an ``OptimizedGraph``: inputs in
    the graph's order or by name (torch tensors or CuPy arrays), ``out=`` a tensor (or a tuple, one per
    output) to write into. ``generated`` is the plan Prism's tuner chose, kept for inspection."""

    def __init__(self, graph: Graph, generated: Any = None) -> None:
        import torch

        self.graph = graph
        self.generated = generated
        self.inputs = [t.name for t in graph.inputs]
        self.outputs = [t.name for t in graph.outputs]
        self._fn = torch.compile(torch_program(graph), dynamic=False)

    def __call__(self, *args: Any, out: Any = None, **named: Any) -> Any:
        import torch

        given = _ordered(self.inputs, args, named)
        vals = [torch.as_tensor(a, device="cuda") for a in given]
        for spec, v in zip(self.graph.inputs, vals, strict=True):
            if tuple(v.shape) != spec.shape or v.dtype != getattr(torch, spec.dtype):
                raise InputError(f"input {spec.name!r} is {list(v.shape)} {v.dtype}; the program takes "
                                 f"{list(spec.shape)} {spec.dtype}")
        res = self._fn(*vals)
        if out is None:
            return _like(given[0], res)
        dsts = list(out) if isinstance(out, tuple | list) else [out]
        if len(dsts) != len(self.outputs):
            raise InputError(f"out= has {len(dsts)} buffers for the program's {len(self.outputs)} outputs")
        for spec, d, r in zip(self.graph.outputs, dsts, res if isinstance(res, tuple) else (res,), strict=True):
            dst = torch.as_tensor(d, device="cuda")
            if tuple(dst.shape) != spec.shape or dst.dtype != r.dtype:
                raise InputError(f"out= buffer for {spec.name!r} is {list(dst.shape)} {dst.dtype}; the output is "
                                 f"{list(spec.shape)} {r.dtype}")
            dst.copy_(r)
        return out

    def __repr__(self) -> str:
        return f"InductorKernel({', '.join(self.inputs)} -> {', '.join(self.outputs)})"


def _ordered(names: list[str], args: tuple[Any, ...], named: Mapping[str, Any]) -> list[Any]:
    """The inputs in the graph's order (positional first, the rest by name)."""
    missing = [n for n in names[len(args):] if n not in named]
    unknown = sorted(set(named) - set(names[len(args):]))
    if len(args) > len(names) or missing or unknown:
        raise InputError(f"{len(args)} positional inputs, missing {missing}, unexpected {unknown}; "
                         f"the program takes {names}")
    return [*args, *(named[n] for n in names[len(args):])]


def _like(first: Any, res: Any) -> Any:
    """Outputs as CuPy arrays when the inputs were (zero-copy), else the torch tensors."""
    if not type(first).__module__.startswith("cupy"):
        return res
    import cupy

    return tuple(cupy.asarray(r) for r in res) if isinstance(res, tuple) else cupy.asarray(res)


class Timer(Protocol):
    """What of a tuning backend the comparison needs (``CudaBackend``; a fake in the tests)."""

    def setup(self, graph: Graph, inputs: Mapping[str, np.ndarray]) -> None: ...

    def time_us(self, kernel: Any) -> float: ...

    def run(self, kernel: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]: ...


@dataclass(frozen=True)
class Verdict:
    """The comparison: both times (µs, same inputs, same timing) and the candidate's error; ``why``
    says why Inductor's kernel was not a candidate (None when it was timed)."""

    generated_us: float | None
    inductor_us: float | None = None
    rel_err: float | None = None
    why: str | None = None

    @property
    def inductor_wins(self) -> bool:
        """Inductor's kernel timed and not slower than the generated plan by more than ``TIE_MARGIN``."""
        return (self.why is None and self.inductor_us is not None and self.generated_us is not None
                and self.inductor_us < self.generated_us * (1 + TIE_MARGIN))


def compare(graph: Graph, backend: Timer, generated: Any, inputs: Callable[[int], Mapping[str, np.ndarray]],
            seed: int, build: Callable[[Graph, Any], Any] = InductorKernel) -> tuple[Any, Verdict]:
    """(the faster of ``generated`` and Inductor's kernel of ``graph``, the verdict). Inductor's is a
    candidate only when it compiles, runs and passes the float64 reference check on fresh inputs
    (``inputs(seed)``-style draws); anything else keeps ``generated`` and says why."""
    try:
        cand = build(graph, generated)
        checked = inputs(seed + 0x1D0C)
        err = reference_error(backend, cand, graph, checked)
    except Exception as e:  # torch/triton missing, a compile or launch failure: Prism's own plan stands
        log.warning("Inductor candidate left out: %s: %s", type(e).__name__, str(e)[:200])
        return generated, Verdict(None, why=f"{type(e).__name__}: {str(e)[:200]}")
    if not err < bound_for(graph, err, checked):
        return generated, Verdict(None, rel_err=err, why=f"relative error {err:.3g} against the float64 reference")
    backend.setup(graph, inputs(seed))
    gen_us, ind_us = math.inf, math.inf
    for _ in range(COMPARE_ROUNDS):  # interleaved, the best of each: drift and one slow replay cancel out
        gen_us = min(gen_us, backend.time_us(generated))
        ind_us = min(ind_us, backend.time_us(cand))
    verdict = Verdict(gen_us, ind_us, err)
    return (cand if verdict.inductor_wins else generated), verdict
