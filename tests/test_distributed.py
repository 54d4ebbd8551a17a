"""Library builds and searches on a Dask cluster (prism.distributed), on the CPU.

A LocalCluster of 2 worker processes, each holding the GPU resource, tunes with the interpreter
backend. The search cache is seeded with verified hand plans (as in test_pipeline.py), so the
tests exercise the engine, not the search."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

import cloudpickle
from distributed import get_task_stream

from prism import codegen, distributed, library, pipeline, plans, workloads
from prism.cache import JsonCache
from prism.codegen.resources import resources
from prism.distributed import ClusterOptions
from prism.ir import KernelGraph
from prism.tune.backends import InterpreterBackend
from prism.verify import verify_all

SPEC = """
arch = "sm_80"
[[entry]]
program = "rmsnorm_linear"
sizes = { n = 16, d = 64 }
[[entry]]
program = "rmsnorm_linear"
sizes = { n = 16, d = 128 }
[[entry]]
program = "swiglu"
sizes = { n = 16, d = 64 }
"""

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module


class _Backend(InterpreterBackend):
    """The interpreter, keeping only candidates the code generator accepts (as the library needs)."""

    def compile(self, kg: KernelGraph) -> Any:
        codegen.generate(kg, arch=self.arch())
        return super().compile(kg)


def _timer(kg: KernelGraph) -> float:
    time.sleep(0.05)  # tuning takes long enough for a worker to die in the middle of it
    return float(sum(abs(hash(str(k))) % 97 + 1 for k in kg.kernels))


def _seed_search_cache(spec: library.Spec) -> None:
    for program in {e.program for e in spec.entries}:
        graph = next(e for e in spec.entries if e.program == program).build_graph()
        templates = plans.hand_plans(program, graph)
        assert all(v.proven for v in verify_all(graph, templates))
        pipeline.save_verified(graph, templates, {"candidates": 0})


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with distributed.connect(ClusterOptions(workers=2, gpus=(None, None))) as c:
        yield c


@pytest.fixture
def client(cluster: Any) -> Any:
    """The cluster's client, its workers using this test's cache folder (a worker restarted by its
    nanny inherits it from this process's environment)."""
    cluster.run(os.environ.__setitem__, "PRISM_CACHE_DIR", os.environ["PRISM_CACHE_DIR"])
    return cluster


def _kill_a_tuning_worker(client: Any, build: threading.Thread) -> int | None:
    """SIGKILL the process of a worker while it runs a tuning task; its pid (None: no task seen)."""
    while build.is_alive():
        for addr, keys in client.processing().items():
            if any(str(k).startswith("prism-tune-") for k in keys):
                pid = client.run(os.getpid, workers=[addr])[addr]
                os.kill(pid, signal.SIGKILL)
                return int(pid)
        time.sleep(0.02)
    return None


def test_build_survives_a_dead_worker_and_a_second_run_rebuilds_nothing(client: Any, tmp_path: Path) -> None:
    spec = library.parse_spec(SPEC)
    _seed_search_cache(spec)
    optimize = library.library_optimizer(samples=4, backend=_Backend(_timer, arch="sm_80", resources=resources))
    status: dict[str, str] = {}

    def run() -> None:
        status.update(library.build(spec, optimize, root=tmp_path, check_nvcc=False, progress=False, client=client))

    build = threading.Thread(target=run)
    build.start()
    killed = _kill_a_tuning_worker(client, build)
    build.join(timeout=240)
    assert killed is not None, "no tuning task was seen running"
    assert status == {e.name: "built" for e in spec.entries}
    manifest = library.read_manifest(tmp_path)
    assert set(manifest["entries"]) == {e.name for e in spec.entries}
    for e in spec.entries:
        rec = manifest["entries"][e.name]
        assert (tmp_path / rec["source"]).is_file() and rec["sizes"] == dict(e.sizes)

    again = library.build(spec, optimize, root=tmp_path, check_nvcc=False, progress=False, client=client)
    assert again == {e.name: "skipped" for e in spec.entries}
    assert library.read_manifest(tmp_path) == manifest


def test_a_failing_entry_fails_alone(client: Any, tmp_path: Path) -> None:
    spec = library.parse_spec(SPEC)
    _seed_search_cache(spec)

    def optimize(graph: Any, entry: library.Entry, arch: str) -> library.Built:
        if entry.program == "swiglu":
            raise RuntimeError("boom")
        kg = plans.hand_plans(entry.program, graph)[0].instantiate({"x": 1, "i": 1})
        return library.Built(kg, f"// {entry.name}\n", {"kernels": []}, 1.0, "FakeGPU")

    status = library.build(spec, optimize, root=tmp_path, check_nvcc=False, progress=False, client=client)
    assert status["swiglu/n16_d64"].startswith("failed: RuntimeError: boom")
    assert status["rmsnorm_linear/n16_d64"] == status["rmsnorm_linear/n16_d128"] == "built"


def test_a_search_spread_over_workers_maps_what_one_process_maps(client: Any) -> None:
    from prism.search import search
    from prism.search.parallel import CHUNK, MIN_PARALLEL, instantiate_all

    g = workloads.swiglu(4, 32)
    cands = search(g, pipeline.default_config(g)).candidates
    assert len(cands) >= MIN_PARALLEL  # enough to be spread
    here = instantiate_all(cands, deadline=time.time() + 120, jobs=1)
    with get_task_stream(client) as tasks, distributed.spread_search(client):
        spread = instantiate_all(cands, deadline=time.time() + 120, jobs=1)
    assert [kg.dumps() for kg in spread.graphs] == [kg.dumps() for kg in here.graphs]
    assert spread.done == len(cands) and not spread.timed_out
    ran = [t for t in tasks.data if str(t["key"]).startswith("_run_chunks")]
    assert len(ran) == -(-len(cands) // CHUNK)  # 4 chunks, 8 worker batches wanted: a task each


def _hammer(writer: int) -> int:
    """Write and read one cache key many times; the reads that missed (0 when writers are safe)."""
    store = JsonCache("hammer", 1)
    misses = 0
    for i in range(60):
        store.put("shared", {"writer": writer, "i": i, "blob": "x" * 20000})
        misses += store.get("shared", dict) is None
    return misses


def test_cache_writers_on_a_shared_folder_never_expose_a_torn_entry(client: Any) -> None:
    futures = client.map(_hammer, range(4), pure=False)
    assert _hammer(99) == 0
    assert client.gather(futures) == [0, 0, 0, 0]
    assert JsonCache("hammer", 1).get("shared", dict) is not None
