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


def test_best_of_rotated_times_each_call_first_and_second() -> None:
    """A timing that follows another is slowed (the drift ``rotated`` guards against): each call is timed
    at every place, so its best is its unslowed time, whichever call comes first in the dict."""
    seen: list[str] = []
    base = {"prism": 3.0, "pytorch": 2.0}

    def time_us(key: str) -> float:
        seen.append(key)
        return base[key] + (1.5 if len(seen) % 2 == 0 else 0.0)  # the second of each pair is slowed

    for calls in ({"prism": "prism", "pytorch": "pytorch"}, {"pytorch": "pytorch", "prism": "prism"}):
        seen.clear()
        assert timing.best_of_rotated(calls, time_us) == base
        first = list(calls)
        assert seen == [first[0], first[1], first[1], first[0]]


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
