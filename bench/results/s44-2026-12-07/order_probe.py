"""Does a kernel's time depend on what was timed just before it (sum_of_matmuls at prefill)?

    PYTHONPATH=. python3 bench/results/s44-2026-12-07/order_probe.py

Times eager PyTorch's X @ W1 + Y @ W2 (X, Y [1024, 4096], W1, W2 [4096, 4096], float16) with the
bench's protocol (prism.tune.timing.graph_time_us) eight times in a row, then after a 2 s pause, then
a light element-wise kernel after the heavy one; prints each time, and the SM clock nvidia-smi reports
after each phase (not between timings: its call would be a pause of its own)."""
import json
import subprocess
import time

import torch

from prism.tune.timing import graph_time_us


def clock() -> str:
    q = "--query-gpu=clocks.sm,power.draw,temperature.gpu"
    return subprocess.run(["nvidia-smi", q, "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()


def inputs(i: int) -> list[torch.Tensor]:
    g = torch.Generator(device="cuda").manual_seed(i)
    return [torch.randn(s, device="cuda", dtype=torch.float16, generator=g) * sc
            for s, sc in (((1024, 4096), 1), ((1024, 4096), 1), ((4096, 4096), 1 / 64), ((4096, 4096), 1 / 64))]


def heavy(x, y, w1, w2):
    return x @ w1 + y @ w2


def light(x, y, w1, w2):
    return x * y


def timed(label: str, fn, n: int, first: int = 0) -> list[tuple[str, int, float]]:
    return [(label, i, round(graph_time_us(fn, inputs), 2)) for i in range(first, first + n)]


rows = timed("heavy", heavy, 8)
print(rows, clock(), flush=True)
time.sleep(2.0)
rows += timed("heavy after 2 s idle", heavy, 1)
print(rows[-1], clock(), flush=True)
for i in range(3):
    rows += timed("light", light, 1, i) + timed("heavy after light", heavy, 1, i)
    print(rows[-2:], flush=True)
print(clock(), flush=True)
print(json.dumps(rows))
