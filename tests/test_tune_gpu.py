"""The tuner on the GPU (marked): hand-built plans through codegen + runtime, checked against the reference."""

from __future__ import annotations

import importlib.util
import math

import pytest

from prism import plans, workloads

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("config_id", ["rmsnorm_linear_d1024", "gqa_h1024"])
def test_tune_hand_plans_on_gpu(config_id: str) -> None:
    pytest.importorskip("torch")
    if importlib.util.find_spec("prism.runtime") is None:
        pytest.skip("prism.runtime does not exist yet")
    from prism.tune import tune

    cfg = workloads.config(config_id)
    graph = cfg.build()
    res = tune(graph, plans.hand_plans(cfg.program, graph), samples=8, seed=0, jobs=4)
    assert res.rel_err < 2e-2
    assert 0 < res.time_us < 1000 and not math.isinf(res.time_us)
    assert res.counts["timed"] >= 1 and res.counts["check_failures"] == 0, res.check_failures


def test_cuda_backend_times_like_the_bench() -> None:
    """The tuner's time of a plan is the CUDA-graph replay of rotated input copies (the bench's protocol):
    close to ``graph_time_us`` of the same call, and the backend made the rotated copies."""
    pytest.importorskip("torch")
    from prism.codegen.sizes import default_sizes
    from prism.tune.backends import CudaBackend
    from prism.tune.timing import graph_time_us
    from prism.tune.tuner import default_scales, random_inputs

    cfg = workloads.config("rmsnorm_linear_d1024")
    graph = cfg.build()
    template = plans.hand_plans(cfg.program, graph)[0]
    backend = CudaBackend()
    backend.setup(graph, random_inputs(graph, default_scales(graph), 0))
    kernel = backend.compile(template.instantiate(default_sizes(template)))
    tuned = backend.time_us(kernel)
    assert len(backend._copies) > 1  # rotated copies: the L2 does not hold the next call's inputs
    bench = graph_time_us(kernel, backend._input_copy)
    assert 0.5 * bench < tuned < 2.0 * bench, (tuned, bench)


def test_a_capture_for_timing_survives_compiles_on_other_threads() -> None:
    """The tuner compiles the next samples (NVRTC, module loads) on worker threads while it captures a
    CUDA graph to time one: the capture is thread-local, so neither the compile nor the capture fails
    (in the global mode the module load raised "operation not permitted when stream is capturing" and
    invalidated the capture)."""
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    import threading
    import time

    from prism.tune.timing import graph_time_us

    errors: list[BaseException] = []
    stop = threading.Event()

    def compile_loop() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:  # a fresh module each time: NVRTC and a module load, as a tuning worker does
                cupy.RawModule(code=f'extern "C" __global__ void k{n}(float* p) {{ p[0] = {n}.0f; }}').get_function(f"k{n}")
            except BaseException as e:
                errors.append(e)

    x = torch.ones(1 << 16, device="cuda")

    def slow_call(t: object) -> object:
        time.sleep(0.002)  # the capture stays open while the other thread loads modules
        return x * 2

    worker = threading.Thread(target=compile_loop)
    worker.start()
    try:
        us = graph_time_us(slow_call, lambda i: (x,), calls=10, replays=5)
    finally:
        stop.set()
        worker.join()
    assert not errors, errors[:1]
    assert 0 < us < 1000
