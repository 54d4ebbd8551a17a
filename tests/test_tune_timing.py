"""The timing primitive: CPU checks of its arithmetic; GPU checks (marked) of the protocol."""

from __future__ import annotations

import importlib
import sys

import pytest

from prism.tune import timing
from prism.tune.timing import H200_L2_BYTES, input_copies


def test_importable_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    mod = importlib.reload(timing)
    assert mod.gpu_available() is False
    with pytest.raises(Exception, match="PyTorch"):
        mod.kernel_time_us(lambda: None)
    monkeypatch.undo()
    importlib.reload(timing)


@pytest.mark.parametrize(
    ("nbytes", "expected"),
    [
        (2 * 1024 * 1024, 20),  # small inputs: the cap of 20 copies
        (67_371_008, 4),  # swiglu_d4096 (Wg, Wu, X): 4 copies = 269 MB > 4 × 60 MB
        (4 * H200_L2_BYTES, 2),
        (10**12, 1),
    ],
)
def test_input_copies_exceed_four_l2(nbytes: int, expected: int) -> None:
    n = input_copies(nbytes, H200_L2_BYTES)
    assert n == expected
    assert n == 20 or n * nbytes > 4 * H200_L2_BYTES
    assert n == 1 or (n - 1) * nbytes <= 4 * H200_L2_BYTES  # no more copies than needed


class _FakeClock:
    """Stands in for torch in ``timing._replay_ms``: a replay of graph ``k`` takes ``ms[k]`` plus 1 ms when
    it follows another replay at once (the slowdown interleaving spreads over every graph)."""

    def __init__(self, ms: dict[str, float]) -> None:
        self.now = 0.0
        self.order: list[str] = []
        self.ms = ms
        clock = self

        class Event:
            def __init__(self, enable_timing: bool) -> None:
                assert enable_timing
                self.at = 0.0

            def record(self) -> None:
                self.at = clock.now

            def elapsed_time(self, end: Event) -> float:
                return end.at - self.at

        class Cuda:
            @staticmethod
            def synchronize() -> None:
                pass

        Cuda.Event = Event  # type: ignore[attr-defined]
        self.cuda = Cuda

    def graph(self, key: str) -> timing._Captured:
        clock = self

        class Graph:
            def replay(self) -> None:
                clock.now += clock.ms[key] + (1.0 if clock.order else 0.0)
                clock.order.append(key)

        return timing._Captured(Graph(), [])


def test_replays_interleave_in_rotated_order() -> None:
    clock = _FakeClock({"a": 10.0, "b": 20.0, "c": 30.0})
    ms = timing._replay_ms(clock, {k: clock.graph(k) for k in "abc"}, replays=5)
    assert clock.order == list("abc" "bca" "cab" "abc" "bca")  # each round one later: no graph always first
    assert ms == {"a": 11.0, "b": 21.0, "c": 31.0}  # each graph's median, its own replays' times only


@pytest.mark.gpu
def test_gpu_protocol_times_are_sane() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    n = 1 << 24
    copies = [torch.randn(n, device="cuda", dtype=torch.float16) for _ in range(3)]
    one = timing.kernel_time_us(lambda: copies[0] * 2)
    per_call = timing.graph_time_us(lambda x: x * 2, lambda i: (copies[i % 3],))
    # 32 MiB read + 32 MiB written: a few µs at H200 bandwidth, far under a millisecond
    assert 1.0 < one < 1000.0 and 1.0 < per_call < 1000.0
    assert timing.copy_bandwidth(1 << 28, reps=3) > 1e11


@pytest.mark.gpu
def test_gpu_single_call_timing_excludes_host_overhead() -> None:
    """A call that spends 200 µs on the host before a tiny launch measures the launch, not the host time."""
    import time

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    x = torch.ones(1024, device="cuda")

    def slow_host() -> None:
        t = time.perf_counter()
        while time.perf_counter() - t < 2e-4:
            pass
        x.mul_(1.0)

    assert timing.kernel_time_us(slow_host, reps=10, flush_l2=False) < 100.0
    assert timing.kernel_time_us(slow_host, reps=10, flush_l2=False, hold=False) > 150.0


@pytest.mark.gpu
def test_gpu_interleaved_times_several_and_reports_one_that_fails() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    small = [torch.randn(1 << 22, device="cuda", dtype=torch.float16) for _ in range(3)]
    large = [torch.randn(1 << 25, device="cuda", dtype=torch.float16) for _ in range(3)]

    def broken(x: object) -> object:
        raise RuntimeError("no kernel")

    got = timing.interleaved_time_us({
        "small": timing.Timed(lambda x: x * 2, lambda i: (small[i % 3],)),
        "large": timing.Timed(lambda x: x * 2, lambda i: (large[i % 3],)),
        "broken": timing.Timed(broken, lambda i: (small[0],)),
    })
    assert set(got.us) == {"small", "large"} and got.errors == {"broken": "RuntimeError: no kernel"}
    assert 2.5 < got.us["large"] / got.us["small"] < 20.0  # 8× the bytes; the small ones stay in the L2
    alone = timing.graph_time_us(lambda x: x * 2, lambda i: (large[i % 3],))
    assert 0.8 < got.us["large"] / alone < 1.25


def test_timings_say_their_failures_in_one_line() -> None:
    assert timing.Timings({"a": 1.0}, {}).failures() == ""
    assert timing.Timings({}, {"prism": "RuntimeError: x", "plain": "no graph"}).failures() == \
        "prism: RuntimeError: x; plain: no graph"
