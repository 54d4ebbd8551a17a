"""Safe split-KV combines: loops in chunks of iterations (``KernelLowering.unroll``, ``lower._unroll``)
and rescaled accumulators in runs (``lower._rescaled_runs``).

A loop of ring Loads and element-wise accumulators with a rescaled one among them (a safe split-KV
combine) waits for the stages of ``unroll`` iterations at once and runs them behind one barrier; where
the ring is refilled it keeps ``stages - unroll`` stages in flight. Checked by the lowered-IR emulator
against the interpreter (its ring-slot and in-flight checks catch a chunk that reads a stage it did
not wait for, or a refill into a slot the chunk still reads), by the source, and by nvcc where
installed. A rescaled accumulator whose shift is one value per row adds runs of its loader's vector
width with one pair of exponentials a run (the emulator reads the shift once a run, as the source
does)."""

from __future__ import annotations

import pytest
from test_emulate import emulate_error, inputs_of

from prism import plans, workloads
from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import EmulationError, emulate
from prism.codegen.lower import UNROLL, lower_graph
from prism.codegen.lowered import KernelLowering
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.ir import KernelGraph

_SHAPE = {"batch": 1, "group": 8, "kv_len": 512, "head_dim": 64}  # 32 keys a split at s = 16
_G = {p: workloads.program(p, **_SHAPE) for p in ("gqa", "qknorm_gqa")}


def _safe(s: int, qknorm: bool = False) -> KernelGraph:
    g = _G["qknorm_gqa" if qknorm else "gqa"]
    return plans.safe_gqa_split_plan(g, qknorm=qknorm).instantiate({"x": 1, "s": s, "i": 1})


def _combine(kg: KernelGraph, opts: Options) -> KernelLowering:
    low = lower_graph(kg, arch("sm_80"), opts).kernels[-1]
    assert low is not None
    return low


@pytest.mark.parametrize(("s", "stages", "want"), [(8, None, 8), (16, None, 8), (4, None, 4), (16, 8, 4), (16, 4, 2)])
def test_a_safe_combine_runs_in_chunks_the_ring_allows(s: int, stages: int | None, want: int) -> None:
    low = _combine(_safe(s), Options(stages=stages))
    assert low.unroll == want <= UNROLL
    if low.prefetch < low.loop:  # refilled: the chunk's refills never reach the slots it reads
        assert low.prefetch == low.stages - low.unroll >= low.unroll
    assert low.loop_wait == low.prefetch - low.unroll


def test_plain_sums_and_matmul_loops_keep_one_wait_an_iteration() -> None:
    unsafe = plans.gqa_split_plan(_G["gqa"]).instantiate({"x": 1, "s": 8, "i": 1})
    assert _combine(unsafe, Options()).unroll == 1
    assert _combine(unsafe, Options(unroll=4)).unroll == 4  # the option still unrolls them
    g = workloads.program("rmsnorm_linear", n=8, d=128)
    gemv = plans.hand_plans("rmsnorm_linear", g)[0].instantiate({"x": 2, "i": 4})
    assert all(k is None or k.unroll == 1 for k in lower_graph(gemv, arch("sm_80"), Options(unroll=8)).kernels)
    assert _combine(_safe(8), Options(unroll=1)).unroll == 1


@pytest.mark.parametrize("qknorm", [False, True])
@pytest.mark.parametrize(("s", "opts"), [(8, Options()), (16, Options(stages=4)), (16, Options(stages=8, unroll=2)),
                                         (8, Options(fuse=False)), (16, Options(stages=8, rotate=3))])
def test_unrolled_combines_emulate_like_the_interpreter(qknorm: bool, s: int, opts: Options) -> None:
    kg = _safe(s, qknorm)
    assert _combine(kg, opts).unroll > 1
    assert emulate_error(kg, opts) < 1e-9


def test_a_chunk_that_waits_for_one_stage_only_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator checks the chunk's wait: leaving one iteration's count in flight reads a stage
    whose copies have not landed."""
    kg = _safe(16)
    monkeypatch.setattr(KernelLowering, "loop_wait", property(lambda self: self.prefetch - 1))
    with pytest.raises(EmulationError, match="in flight"):
        emulate(kg, inputs_of(kg), options=Options(stages=8))


def test_the_source_waits_and_synchronises_once_a_chunk() -> None:
    kg = _safe(16)
    src = generate(kg, arch="sm_80", options=Options(stages=8, fuse=False)).kernels[-1].source
    loop = src.split("int sb_rd")[1].split("// epilogue")[0]
    assert "for (int i0 = 0; i0 < 16; i0 += 4) {" in loop and "for (int iu = 0; iu < 4; ++iu) {" in loop
    chunk = loop.split("for (int iu")[0]
    assert chunk.count("cp_async_wait<0>();") == 1 and chunk.count("__syncthreads();") == 1
    assert loop.split("for (int iu")[1].split("cp_async_wait<0>();")[0].count("__syncthreads") == 0
    if nvcc_path() is not None:
        plan = generate(kg, arch="sm_80")
        assert len(compile_check([(k.entry, k.source) for k in plan.kernels], "sm_80", jobs=1)) == len(plan.kernels)


def test_a_numerator_rescaled_by_its_row_max_adds_runs() -> None:
    kg = _safe(16)
    low = _combine(kg, Options())
    runs = {i: a for i, a in low.accs.items() if a.rescale is not None}
    shifts = {i: low.tiles[a.rescale] for i, a in runs.items() if a.rescale is not None}
    assert any(a.vec == 4 for a in runs.values())
    for i, a in runs.items():  # runs only where the shift is one value along the last dim
        assert (a.vec > 1) == (shifts[i][-1] == 1 and (low.tiles[i] or (1,))[-1] > 1), (i, a, shifts[i])
    assert all(a.vec == 1 for a in _combine(kg, Options(rescaled_runs=False)).accs.values() if a.rescale is not None)
    src = generate(kg, arch="sm_80", options=Options(fuse=False)).kernels[-1].source
    body = src.split("int sb_rd")[1].split("// epilogue")[0]
    assert body.count("__expf(") == 2 + 2  # one pair for a run of the numerator, one for the denominator
    assert "ra3[j * 4 + 3] = ra3[j * 4 + 3] * fo + (a3_v0[3]) * fc;" in body
    for opts in (Options(), Options(rescaled_runs=False), Options(stages=8)):
        assert emulate_error(kg, opts) < 1e-9


def test_runs_that_would_idle_threads_are_not_taken() -> None:
    """A tile of fewer runs than threads (a spread combine's share) keeps one element an item."""
    kg = _safe(16)
    low = _combine(kg, Options(warps=16))  # 512 threads, 128 runs of the numerator
    assert all(a.vec == 1 for a in low.accs.values() if a.rescale is not None)
    assert emulate_error(kg, Options(warps=16)) < 1e-9
