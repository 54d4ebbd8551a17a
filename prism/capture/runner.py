"""One captured region at run time: a Prism kernel per shape (checked against PyTorch first), or
the region's PyTorch side (``Fallback``: Inductor's kernels for the region's ops, or those ops eagerly).

The first call at a new shape binds the region's Graph at that shape (``prism.capture.build``),
superoptimizes it (the search cache is keyed by the size-free structure, so a second shape of a
region reuses the verified plans and only tunes; the tuned kernel is cached per shape), and checks
the kernel's outputs against the region's eager outputs on the call's own inputs, then times it
against the PyTorch side and keeps the faster (``compare``). Any failure on
that path — a shape the ops do not fit, no GPU, a search, tuning or compile error, a mismatch —
leaves the region to PyTorch at that shape, with a ``CaptureWarning`` naming why (``strict``:
a ``CaptureError`` instead). Later calls at a checked shape only launch: no allocation but the
outputs, no synchronisation, on torch's current stream, so they can be captured in a CUDA graph.
torch is imported by the caller (the backend); this module calls tensor methods, and Inductor.
"""

from __future__ import annotations

import enum
import logging
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from prism.capture.build import Program, RegionSpec, bind
from prism.capture.partition import MIN_OPS
from prism.capture.report import Outcome, RegionRecord
from prism.errors import CaptureError
from prism.ops import DTYPES
from prism.reference import relative_error
from prism.tune.tolerance import tolerance

log = logging.getLogger(__name__)
ALIGNMENT = 16  # bytes: what a Prism kernel needs of each input's address
CHECK_FACTOR = 2.0  # kernel vs eager: each may be off the float64 reference by up to tolerance(graph)


class Fallback(enum.Enum):
    """What runs a region that Prism does not (and what its kernel is timed against)."""

    EAGER = "eager"  # the region's own PyTorch ops, one by one
    INDUCTOR = "inductor"  # TorchInductor's kernels for the region, compiled once per shape


class CaptureWarning(UserWarning):
    """A captured region runs in PyTorch instead of Prism; the message says why."""


class _PyTorchFaster(Exception):
    """The region's PyTorch ops beat its Prism kernel at this shape (the message: both times)."""


@dataclass(frozen=True)
class CaptureOptions:
    """Options of ``prism.compile`` and the ``"prism"`` backend (``superoptimize``'s, and how
    failures are handled)."""

    # tuning samples per part of a region and shape: on the TinyLlama layer's MLP block at decode, 48
    # gave 39.0 us where 16 gave 51.0 (docs/capture.md); the first call at a shape pays for them
    samples: int = 48
    seed: int = 0
    search_budget: float | None = None  # seconds per symbolic search (None: superoptimize's default)
    time_budget: float | None = 120.0  # seconds of tuning per region and shape, parts and final choice together
    strict: bool = False  # raise CaptureError instead of leaving a region to PyTorch
    min_ops: int = MIN_OPS  # fewer arithmetic ops than this: the region is not worth a kernel
    # a region of two model blocks (an MLP and the next layer's projections) is two regions, each run
    # in Prism or PyTorch on its own (partition.split_blocks)
    split_blocks: bool = True
    # time the kernel against the region's own PyTorch ops (CUDA-graph replay, as the tuner times) and
    # keep the faster: a region is never slower in Prism than PyTorch runs it
    compare: bool = True
    # ... and by this much (µs, and fraction of PyTorch's time; the larger counts): a region's edges cost
    # the fusion Inductor would do across them. On the H200 (transformers, decode batch 16) the graph
    # with regions that had each won by 0.1-1.6 µs lost as a whole, 195.9 against 188.2 µs.
    min_gain_us: float = 0.3
    min_gain_fraction: float = 0.02
    # a line on stderr when a region starts and ends its work at a new shape (tuning takes minutes)
    progress: bool = True
    # the PyTorch side of a region: Inductor fuses its ops as torch.compile would, so a region is never
    # slower in Prism than under torch.compile (falls back to EAGER when Inductor fails at a shape)
    fallback: Fallback = Fallback.INDUCTOR


@dataclass(frozen=True)
class _Entry:
    program: Program | None  # None: PyTorch runs the region at this shape
    kernel: Any = None
    out_dtypes: tuple[Any, ...] = ()
    pytorch: Callable[..., Any] | None = None  # the region's PyTorch side at this shape (None: its eager ops)


def shape_key(inputs: Sequence[Any]) -> str:
    return ",".join(f"{list(t.shape)}{str(t.dtype).removeprefix('torch.')}" for t in inputs)


class RegionRunner:
    """Called in place of the region's nodes with the region's inputs; returns its outputs (tuple)."""

    def __init__(self, spec: RegionSpec, eager: Callable[..., Any], record: RegionRecord,
                 options: CaptureOptions) -> None:
        self.spec, self.eager, self.record, self.options = spec, eager, record, options
        self.__name__ = f"prism_{record.label}"  # torch.fx names the call node after it
        self.entries: dict[tuple[Any, ...], _Entry] = {}
        self.fallbacks: dict[str, Callable[..., Any]] = {}  # shapes -> the region's PyTorch side there

    def __call__(self, *inputs: Any) -> tuple[Any, ...]:
        if any(getattr(t, "requires_grad", False) for t in inputs) and _grad_enabled(inputs):
            return tuple(self.eager(*inputs))  # Prism kernels have no backward: autograd stays right
        key = tuple((t.shape, t.dtype) for t in inputs)  # hashable and cheap: this runs on every call
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = self._prepare(shape_key(inputs), inputs)
        if entry.program is None:
            return tuple((entry.pytorch or self.eager)(*inputs))
        return self._launch(entry, inputs)

    def runs_prism(self) -> bool:
        """A Prism kernel runs the region at some shape it was called at."""
        return any(e.program is not None for e in self.entries.values())

    def _prepare(self, key: str, inputs: Sequence[Any]) -> _Entry:
        t0 = time.perf_counter()
        self._say(f"region {self.record.label} ({len(self.record.ops)} ops) at {key}: searching and tuning ...")
        entry = self._decide(key, inputs)
        outcome, detail = self.record.outcomes[key]
        self._say(f"region {self.record.label}: {outcome.value} ({detail}), {time.perf_counter() - t0:.0f} s")
        return entry

    def _say(self, msg: str) -> None:
        if self.options.progress:
            print(f"prism: {msg}", file=sys.stderr, flush=True)

    def _decide(self, key: str, inputs: Sequence[Any]) -> _Entry:
        try:
            entry, detail, source = self._build(inputs)
        except _PyTorchFaster as e:  # not a failure: PyTorch's own kernels win at this shape
            log.info("prism: region %s at %s: %s", self.record.label, key, e)
            self.record.outcomes[key] = (Outcome.PYTORCH, str(e))
            return _Entry(None, pytorch=self._pytorch(inputs))
        except Exception as e:  # "always an answer": whatever failed, PyTorch still runs the region
            if self.options.strict:
                raise CaptureError(f"{self.record.label} at {key}: {type(e).__name__}: {e}") from e
            why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            warnings.warn(f"prism: region {self.record.label} ({', '.join(self.record.ops)}) at {key} runs in "
                          f"PyTorch: {why}", CaptureWarning, stacklevel=2)
            self.record.outcomes[key] = (Outcome.PYTORCH, why)
            return _Entry(None, pytorch=self._pytorch(inputs))
        self.record.outcomes[key] = (Outcome.PRISM, detail)
        self.record.sources[key] = source
        return entry

    def _pytorch(self, inputs: Sequence[Any]) -> Callable[..., Any]:
        """The region's PyTorch side at these shapes (``options.fallback``), made once per shape."""
        key = shape_key(inputs)
        if key not in self.fallbacks:
            self.fallbacks[key] = self._fallback(key, inputs)
        return self.fallbacks[key]

    def _fallback(self, key: str, inputs: Sequence[Any]) -> Callable[..., Any]:
        match self.options.fallback:
            case Fallback.EAGER:
                return self.eager
            case Fallback.INDUCTOR:
                try:
                    return _inductor(self.eager, inputs)
                except Exception as e:  # Inductor cannot take it: the eager ops still can
                    warnings.warn(f"prism: region {self.record.label} at {key}: Inductor failed "
                                  f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                                  "its eager ops run instead", CaptureWarning, stacklevel=2)
                    return self.eager
            case _ as unreachable:
                assert_never(unreachable)

    def _build(self, inputs: Sequence[Any]) -> tuple[_Entry, str, str]:
        """The checked kernel at these shapes, what it is (for the report) and its plan source."""
        from prism.pipeline import superoptimize  # the pipeline's tuner needs the GPU side (CuPy)

        dtype = next((str(t.dtype).removeprefix("torch.") for t in inputs
                      if str(t.dtype).removeprefix("torch.") in DTYPES), None)
        if dtype is None:
            raise CaptureError(f"{self.record.label}: no input of a Prism dtype ({', '.join(DTYPES)})")
        program = bind(self.spec, [tuple(t.shape) for t in inputs], dtype)
        self.record.bound.append(([tuple(t.shape) for t in inputs], dtype))
        ref = tuple(self.eager(*inputs))
        views = self._views(program, inputs)
        fast = superoptimize(program.graph, example_inputs=dict(zip([t.name for t in program.graph.inputs], views,
                                                                      strict=True)),
                             program=self.record.label, progress=False, samples=self.options.samples,
                             seed=self.options.seed, search_budget=self.options.search_budget,
                             time_budget=self.options.time_budget,
                             inductor=False,  # the region is timed against Inductor's own kernels here
                             output_views=False)  # the graph around plans the region's outputs contiguous
        entry = _Entry(program, fast, tuple(r.dtype for r in ref))
        got = self._launch(entry, inputs)
        tol = CHECK_FACTOR * tolerance(program.graph)
        for i, (a, b) in enumerate(zip(got, ref, strict=True)):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise CaptureError(f"{self.record.label}: output {i} is {list(a.shape)} {a.dtype}; PyTorch's is "
                                   f"{list(b.shape)} {b.dtype}")
            err = relative_error(a.detach().double().cpu().numpy(), b.detach().double().cpu().numpy())
            if not err <= tol:
                raise CaptureError(f"{self.record.label}: output {i} differs from PyTorch's by {err:.3g} "
                                   f"(relative, allowed {tol:.3g})")
        summary = fast.summary
        kernels = getattr(getattr(fast, "kernel_graph", None), "kernels", ())
        source = str(summary.get("plan_source", "?"))
        detail = f"{source} plan of {len(kernels)} kernels, {summary.get('best_us') or 0:.1f} us"
        times = self._times(entry, inputs) if self.options.compare else None
        if times is not None:
            prism_us, torch_us = times
            detail += f" (PyTorch {torch_us:.1f} us)"
            gain = max(self.options.min_gain_us, self.options.min_gain_fraction * torch_us)
            if prism_us > torch_us - gain:
                what = f"{torch_us:.1f} us against {prism_us:.1f} us for the {detail.split(' (')[0]}"
                raise _PyTorchFaster(f"PyTorch is faster: {what}" if torch_us < prism_us else
                                     f"PyTorch is as fast: {what} (a gain under {gain:.1f} us does not pay for the "
                                     "fusion Inductor loses at the region's edges)")
        log.info("prism: region %s at %s: %s", self.record.label, shape_key(inputs), detail)
        return entry, detail, source

    def _times(self, entry: _Entry, inputs: Sequence[Any]) -> tuple[float, float] | None:
        """(Prism, PyTorch) µs per call of the region, by CUDA-graph replay on rotated input copies, the two
        graphs' replays interleaved (``interleaved_time_us``: both timed at the same clocks); None when either
        cannot be timed so (the checked kernel is kept)."""
        from prism.tune.timing import Timed, Timings, interleaved_time_us

        def copies(i: int) -> Sequence[Any]:
            return inputs if i == 0 else [t.clone() for t in inputs]

        try:
            pytorch = self._pytorch(inputs)
            got = interleaved_time_us({"prism": Timed(lambda *a: self._launch(entry, a), copies),
                                       "pytorch": Timed(lambda *a: tuple(pytorch(*a)), copies)})
        except Exception as e:  # no PyTorch function for the region: the checked kernel stays
            got = Timings({}, {"pytorch": f"{type(e).__name__}: {e}"})
        if got.errors:  # no CUDA graph for one of them: the checked kernel stays
            log.info("prism: region %s not timed against PyTorch (%s)", self.record.label, got.failures())
            return None
        return got.us["prism"], got.us["pytorch"]

    def _views(self, program: Program, inputs: Sequence[Any]) -> list[Any]:
        """The kernel's inputs: each region input in the compute dtype, contiguous, aligned, viewed."""
        out = []
        for b in program.inputs:
            t = inputs[b.position]
            if str(t.dtype).removeprefix("torch.") != program.dtype:
                t = t.to(getattr(_torch_of(t), program.dtype))
            if not t.is_contiguous():
                t = t.contiguous()
            if t.data_ptr() % ALIGNMENT:
                t = t.clone()
            out.append(t.view(b.shape))
        return out

    def _launch(self, entry: _Entry, inputs: Sequence[Any]) -> tuple[Any, ...]:
        program = entry.program
        assert program is not None
        args = self._views(program, inputs)
        res = entry.kernel(*args)
        storages = _storages(args)
        by_name = dict(zip([t.name for t in program.graph.outputs], res if isinstance(res, tuple) else (res,),
                           strict=True))
        outs = []
        for src, shape, dtype in zip(program.outputs, program.shapes, entry.out_dtypes, strict=True):
            # a cast/clone of an input read outside the region is a tensor of its own, as PyTorch's clone is
            t = _owned(by_name[src], storages).view(shape) if isinstance(src, str) else inputs[src].reshape(shape).clone()
            outs.append(t if t.dtype == dtype else t.to(dtype))
        return tuple(outs)


def _storages(args: Sequence[Any]) -> set[int]:
    """Where the kernel's inputs live (their storages' addresses), for ``_owned``."""
    return {a.untyped_storage().data_ptr() for a in args}


def _owned(t: Any, storages: set[int]) -> Any:
    """A kernel output as a contiguous tensor of its own: a Prism callable returns an output that is an
    input seen through transposes as a view of it (``runtime.view_outputs``), while a region's custom op
    declares no aliasing and the graph around it plans its outputs contiguous (``outer.contiguous``).
    ``storages``: the kernel inputs' (``_storages``)."""
    if t.untyped_storage().data_ptr() not in storages:
        return t
    return t.clone() if t.is_contiguous() else t.contiguous()


def _inductor(eager: Any, inputs: Sequence[Any]) -> Callable[..., Any]:
    """TorchInductor's kernels for the region's GraphModule at these input shapes (inference only)."""
    torch = _torch_of(inputs[0])
    from torch._inductor import compile as inductor_compile  # optional dependency, present with torch

    with torch.no_grad():
        fn = inductor_compile(eager, list(inputs))
        fn(*inputs)  # the first call compiles its kernels: not inside a later CUDA-graph capture
    return fn  # type: ignore[no-any-return]


def _torch_of(t: Any) -> Any:
    import torch  # the tensors are torch's: torch is present

    return torch


def _grad_enabled(inputs: Sequence[Any]) -> bool:
    return bool(_torch_of(inputs[0]).is_grad_enabled())
