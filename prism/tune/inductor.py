"""PyTorch's own kernels as candidates: ``torch.compile`` (Inductor) of the same program, and the same
program run eagerly (PyTorch's kernels op by op: cuBLAS for a matmul).

``superoptimize`` times the plan its tuner chose against both, on the same inputs and the same way
(CUDA-graph replay, ``CudaBackend.time_us``), after checking each against the float64 reference like
any plan; it returns the fastest, where a generated plan must beat the faster of PyTorch's two by more
than ``TIE_MARGIN`` (a tie goes to PyTorch's), and says which in ``summary["plan_source"]``
(``"inductor"`` or ``"eager"``) with every time. So a program whose generated kernels still trail
Inductor's (element-wise and norm rows at decode sizes, docs/off-the-suite.md) or eager's cuBLAS call
(a GEMM with a small epilogue at prefill sizes) is never slower than PyTorch through Prism; PyTorch's
code is not Prism's, and the summary says so. The decision is made on every call (the tuned cache
keeps the generated plan only); ``superoptimize(..., inductor=False)`` leaves both out (the kernel
library and the capture backend do: they want generated kernels, and capture compares regions with
Inductor itself).

Imports torch only when a candidate is built, so the module imports without it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol

import numpy as np

from prism.errors import InputError
from prism.graph import Graph
from prism.reference import evaluate
from prism.torch_program import torch_program
from prism.tune.timing import rotated
from prism.tune.tolerance import bound_for
from prism.tune.tuner import reference_error

log = logging.getLogger(__name__)

COMPARE_ROUNDS = 2  # least timings of each kernel in ``compare``, interleaved
# Inductor's kernel is returned unless the generated plan is faster by more than this fraction: the
# bench's timing of Inductor's kernels against the same kernels inside superoptimize spreads 0.98-1.02×
# on an H200, and a 1% win inside superoptimize came out 2% slower in the bench (decoder_norm_linear,
# docs/off-the-suite.md, "After the prior and the warp tiles"); a tie goes to PyTorch's kernels
TIE_MARGIN = 0.02


class Winner(Enum):
    """Which candidate ``compare`` returned; ``summary["plan_source"]`` is the value of a PyTorch one."""

    GENERATED = "generated"
    INDUCTOR = "inductor"
    EAGER = "eager"


class TorchKernel:
    """``graph``'s PyTorch function (``torch.compile``d when ``COMPILED``), called like an
    ``OptimizedGraph``: inputs in the graph's order or by name (torch tensors or CuPy arrays), ``out=`` a
    tensor (or a tuple, one per output) to write into. ``generated`` is the plan Prism's tuner chose,
    kept for inspection."""

    COMPILED: ClassVar[bool] = True

    def __init__(self, graph: Graph, generated: Any = None) -> None:
        import torch

        self.graph = graph
        self.generated = generated
        self.inputs = [t.name for t in graph.inputs]
        self.outputs = [t.name for t in graph.outputs]
        fn = torch_program(graph)
        self._fn = torch.compile(fn, dynamic=False) if self.COMPILED else fn

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
        return f"{type(self).__name__}({', '.join(self.inputs)} -> {', '.join(self.outputs)})"


class InductorKernel(TorchKernel):
    """``torch.compile`` (Inductor) of the program."""


class EagerKernel(TorchKernel):
    """The program run eagerly, PyTorch's kernels op by op."""

    COMPILED = False


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
    """The comparison: the times (µs, same inputs, same timing) and the candidates' errors; ``why`` and
    ``eager_why`` say why Inductor's and eager's kernels were not candidates (None when timed)."""

    generated_us: float | None
    inductor_us: float | None = None
    rel_err: float | None = None
    why: str | None = None
    eager_us: float | None = None
    eager_rel_err: float | None = None
    eager_why: str | None = None

    @property
    def winner(self) -> Winner:
        """The faster of PyTorch's two kernels unless the generated plan beats it by more than ``TIE_MARGIN``."""
        timed = [(us, w) for us, w in ((self.inductor_us, Winner.INDUCTOR), (self.eager_us, Winner.EAGER))
                 if us is not None]
        if self.generated_us is None or not timed:
            return Winner.GENERATED
        us, w = min(timed, key=lambda t: t[0])
        return w if us < self.generated_us * (1 + TIE_MARGIN) else Winner.GENERATED

    @property
    def inductor_wins(self) -> bool:
        return self.winner is Winner.INDUCTOR

    @property
    def winner_us(self) -> float | None:
        return {Winner.GENERATED: self.generated_us, Winner.INDUCTOR: self.inductor_us,
                Winner.EAGER: self.eager_us}[self.winner]

    @property
    def winner_rel_err(self) -> float | None:
        return {Winner.GENERATED: None, Winner.INDUCTOR: self.rel_err, Winner.EAGER: self.eager_rel_err}[self.winner]


@dataclass(frozen=True)
class _Checked:
    """One PyTorch candidate after its float64 check: the kernel when it passed, else why not."""

    kernel: Any
    rel_err: float | None
    why: str | None


def _checked(build: Callable[[Graph, Any], Any] | None, graph: Graph, backend: Timer, generated: Any,
             checked: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> _Checked:
    if build is None:
        return _Checked(None, None, "not a candidate")
    try:
        cand = build(graph, generated)
        err = reference_error(backend, cand, graph, checked, ref)
    except Exception as e:  # torch/triton missing, a compile or launch failure: the candidate is left out
        log.warning("PyTorch candidate left out: %s: %s", type(e).__name__, str(e)[:200])
        return _Checked(None, None, f"{type(e).__name__}: {str(e)[:200]}")
    if not err < bound_for(graph, err, checked):
        return _Checked(None, err, f"relative error {err:.3g} against the float64 reference")
    return _Checked(cand, err, None)


def compare(graph: Graph, backend: Timer, generated: Any, inputs: Callable[[int], Mapping[str, np.ndarray]],
            seed: int, build: Callable[[Graph, Any], Any] = InductorKernel,
            eager: Callable[[Graph, Any], Any] | None = EagerKernel) -> tuple[Any, Verdict]:
    """(the fastest of ``generated``, Inductor's and eager's kernels of ``graph``, the verdict: ``Verdict.winner``).
    A PyTorch kernel is a candidate only when it builds, runs and passes the float64 reference check on
    fresh inputs (``inputs(seed)``-style draws); ``eager=None`` leaves eager out."""
    checked = inputs(seed + 0x1D0C)
    ref = evaluate(graph, checked)  # once for both candidates (a prefill GEMM's float64 reference takes seconds)
    ind, eag = (_checked(b, graph, backend, generated, checked, ref) for b in (build, eager))
    if ind.kernel is None and eag.kernel is None:
        return generated, Verdict(None, rel_err=ind.rel_err, why=ind.why, eager_rel_err=eag.rel_err, eager_why=eag.why)
    backend.setup(graph, inputs(seed))
    kernels = {w: k for w, k in ((Winner.GENERATED, generated), (Winner.INDUCTOR, ind.kernel),
                                 (Winner.EAGER, eag.kernel)) if k is not None}
    best = dict.fromkeys(kernels, math.inf)
    for w in rotated(list(kernels), max(COMPARE_ROUNDS, len(kernels))):  # the best of each: drift and one
        best[w] = min(best[w], backend.time_us(kernels[w]))  # slow replay cancel out
    verdict = Verdict(best[Winner.GENERATED], best.get(Winner.INDUCTOR), ind.rel_err, ind.why,
                      best.get(Winner.EAGER), eag.rel_err, eag.why)
    return kernels[verdict.winner], verdict
