"""The one timing primitive of Prism: every kernel time in the tuner and in bench/ comes from here.

Ways to time callables on the GPU, all with CUDA events and a median:

* :func:`kernel_time_us` — single calls: warm-up, then each timed call preceded by an L2 flush
  (a write over a buffer larger than the L2), median of the event times. The tuner's fallback
  for a call that cannot be captured in a CUDA graph.
* :func:`graph_time_us` — the protocol of docs/benchmarks.md: 20 back-to-back calls captured in one CUDA
  graph, each on a different copy of the inputs (enough copies to exceed 4× the L2, at most 20),
  the graph replayed 30 times, median replay time / 20. The tuner (``CudaBackend``, fewer replays)
  times every candidate so.
* :func:`interleaved_time_us` — the same protocol for several callables at once, their graphs' replays
  interleaved so that all of them are timed at the same clocks: bench/ times the systems of one
  program so.

torch is imported lazily: this module imports on machines without torch or a GPU.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prism.errors import DeviceError

H200_L2_BYTES = 60 * 1024 * 1024
MAX_INPUT_COPIES = 20


def rotated[T](order: list[T], rounds: int) -> list[T]:
    """``rounds`` rounds over ``order``, each starting one later: with ``rounds >= len(order)`` every
    candidate is timed once at every place in a round, so a slowdown after a heavy timing does not always
    fall on the same one (sum_of_matmuls' PyTorch kernels, always timed after the generated plan, came out
    7-11% slower than timed alone; docs/off-the-suite.md, "The timing order")."""
    return [order[(r + i) % len(order)] for r in range(rounds) for i in range(len(order))]


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise DeviceError("timing needs PyTorch with CUDA (pip install 'prism[gpu]')") from e
    if not torch.cuda.is_available():
        raise DeviceError("timing needs an NVIDIA GPU; torch.cuda.is_available() is False")
    return torch


def gpu_available() -> bool:
    """True when torch sees a CUDA device (False, not an error, without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available() and torch.cuda.device_count() > 0)


def l2_bytes() -> int:
    """The current device's L2 size (60 MB, the H200's, when torch does not say)."""
    torch = _torch()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return int(getattr(props, "L2_cache_size", 0) or H200_L2_BYTES)


def input_copies(bytes_per_set: int, l2: int = H200_L2_BYTES, *, factor: int = 4, cap: int = MAX_INPUT_COPIES) -> int:
    """How many copies of an input set rotate so that together they exceed ``factor`` × L2 (at most ``cap``)."""
    if bytes_per_set <= 0:
        return cap
    return max(1, min(cap, math.floor(factor * l2 / bytes_per_set) + 1))


def _nbytes(args: Sequence[Any]) -> int:
    total = 0
    for a in args:
        if hasattr(a, "nbytes"):
            total += int(a.nbytes)
        elif hasattr(a, "element_size"):
            total += int(a.element_size() * a.numel())
    return total


class _Flusher:
    """Writes over a buffer twice the L2 to evict the inputs of the previous call."""

    def __init__(self, torch: Any) -> None:
        self.buf = torch.empty(2 * l2_bytes() // 4 + 1, dtype=torch.int32, device="cuda")

    def __call__(self) -> None:
        self.buf.zero_()


# GPU cycles of the spin kernel queued before each timed call (~0.5 ms at 2 GHz): while the GPU
# spins, the host enqueues the start event and the call, so host-side launch overhead (Python,
# argument checks) stays out of the measured interval.
HOLD_CYCLES = 1_000_000


def _hold(torch: Any) -> None:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:
        sleep(HOLD_CYCLES)


def kernel_time_us(fn: Callable[[], Any], *, warmup: int = 3, reps: int = 20, flush_l2: bool = True,
                   hold: bool = True) -> float:
    """Median GPU time of one call of ``fn`` in µs: CUDA events around each call, L2 flushed before it.

    With ``hold`` a spin kernel runs before each start event so that the measured interval is GPU
    work only, not the host's launch overhead (which would dominate kernels of a few µs).
    """
    torch = _torch()
    flush = _Flusher(torch) if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends, strict=True):
        if flush is not None:
            flush()
        if hold:
            _hold(torch)
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return 1000.0 * statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))


@dataclass(frozen=True)
class Timed:
    """One callable for :func:`interleaved_time_us`: ``fn(*inputs(i))`` is a call on the i-th copy of its
    arguments (device tensors)."""

    fn: Callable[..., Any]
    inputs: Callable[[int], Sequence[Any]]


@dataclass(frozen=True)
class Timings[K]:
    """What :func:`interleaved_time_us` measured: µs a call by key, and why a key was not timed."""

    us: dict[K, float]
    errors: dict[K, str]

    def failures(self) -> str:
        """The errors in one line, ``key: why; ...`` (empty when every callable was timed)."""
        return "; ".join(f"{k}: {why}" for k, why in self.errors.items())


@dataclass
class _Captured:
    graph: Any
    keep: list[Any]  # the captured calls' outputs and inputs: the graph's memory stays valid


def _capture(torch: Any, timed: Timed, calls: int, warmup: int, l2: int) -> _Captured:
    """``calls`` back-to-back calls in one CUDA graph, rotating over enough input copies to exceed 4× the L2."""
    first = tuple(timed.inputs(0))
    n_copies = min(calls, input_copies(_nbytes(first), l2))
    copies = [first, *(tuple(timed.inputs(i)) for i in range(1, n_copies))]
    # Warm up on a side stream (lazy init, autotuning, library handles stay out of the capture).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            for args in copies:
                timed.fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    keep: list[Any] = [copies]
    # thread-local: the tuner compiles (NVRTC, module loads) the next samples on other threads while this
    # one captures; in the default global mode such a call fails and invalidates the capture (seen on
    # the H200: samples lost as "operation not permitted when stream is capturing", others timed alone)
    with torch.cuda.graph(graph, capture_error_mode="thread_local"):
        for c in range(calls):
            keep.append(timed.fn(*copies[c % n_copies]))
    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    return _Captured(graph, keep)


def _replay_ms[K](torch: Any, graphs: dict[K, _Captured], replays: int) -> dict[K, float]:
    """Each graph's median replay time in ms, the graphs' replays interleaved in ``rotated`` order."""
    events = {k: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(replays)] for k in graphs}
    done = dict.fromkeys(graphs, 0)
    for k in rotated(list(graphs), replays):
        start, end = events[k][done[k]]
        start.record()
        graphs[k].graph.replay()
        end.record()
        done[k] += 1
    torch.cuda.synchronize()
    return {k: statistics.median(s.elapsed_time(e) for s, e in ev) for k, ev in events.items()}


def interleaved_time_us[K](timed: Mapping[K, Timed], *, calls: int = 20, replays: int = 30, warmup: int = 2,
                           l2: int | None = None) -> Timings[K]:
    """Several callables by the protocol of docs/benchmarks.md, their replays interleaved.

    Each callable's ``calls`` calls are captured in a CUDA graph of their own (as :func:`graph_time_us`);
    then the graphs are replayed in turn, each round starting one later (``rotated``), ``replays`` times
    each, and each one's median replay time / ``calls`` is its time. So every callable is timed at the
    same clocks: a card under a sustained tensor-core load lowers its clock within a few timings (an H100
    ran a 69-GFLOP call at 98 µs after a pause and 106-113 µs in a row of them,
    ``bench/results/s46-2026-12-07/order_probe.log``), which timed one after another falls on whichever
    comes later. A callable whose warm-up or capture raises is left out, its error in ``errors``.
    """
    torch = _torch()
    size = l2 if l2 is not None else l2_bytes()
    graphs: dict[K, _Captured] = {}
    errors: dict[K, str] = {}
    for k, t in timed.items():
        try:
            graphs[k] = _capture(torch, t, calls, warmup, size)
        except Exception as e:  # one callable that cannot be captured is a result, not the end of the others
            errors[k] = f"{type(e).__name__}: {e}"
    ms = _replay_ms(torch, graphs, replays) if graphs else {}
    return Timings({k: 1000.0 * m / calls for k, m in ms.items()}, errors)


def graph_time_us(
    fn: Callable[..., Any],
    make_inputs: Callable[[int], Sequence[Any]],
    *,
    calls: int = 20,
    replays: int = 30,
    warmup: int = 2,
    l2: int | None = None,
) -> float:
    """The protocol of docs/benchmarks.md: median replay time of a CUDA graph of ``calls`` calls, divided by ``calls``.

    ``make_inputs(i)`` returns the i-th copy of the arguments (device tensors); ``fn(*args)`` is one
    call. Calls rotate over ``input_copies`` copies, enough to exceed four times the L2.
    """
    torch = _torch()
    captured = _capture(torch, Timed(fn, make_inputs), calls, warmup, l2 if l2 is not None else l2_bytes())
    return 1000.0 * _replay_ms(torch, {0: captured}, replays)[0] / calls


def copy_bandwidth(nbytes: int = 2 << 30, reps: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written."""
    torch = _torch()
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src.random_(0, 255)
    dst = torch.empty_like(src)
    us = kernel_time_us(lambda: dst.copy_(src), warmup=2, reps=reps, flush_l2=False)
    return 2.0 * nbytes / (us * 1e-6)


def matmul_rate(n: int = 8192, reps: int = 10) -> float:
    """fp16 matmul rate in flop/s of an n×n×n product on random data."""
    torch = _torch()
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    out = torch.empty(n, n, device="cuda", dtype=torch.float16)
    us = kernel_time_us(lambda: torch.matmul(a, b, out=out), warmup=3, reps=reps, flush_l2=False)
    return 2.0 * n**3 / (us * 1e-6)
