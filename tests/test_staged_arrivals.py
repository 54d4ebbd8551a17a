"""``Options.staged_arrivals``: a one-iteration loop whose ring Loads are first read by different ops (an
attention block's K by the scores, its V by the weighted sum) commits them as separate cp.async groups and
waits for each just before its first reader. The lowering records the arrivals, the rendered source
commits and waits in that order, the emulator runs it like the interpreter and rejects a wait placed after
the first reader, and the sources compile."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.emulate import emulate_lowering
from prism.codegen.emulate_mem import EmulationError
from prism.codegen.lower import lower_graph
from prism.codegen.lowered import Arrival, KernelLowering
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.ir import KernelGraph, Load
from tests.test_emulate import _hand, cheap_sizes, emulate_error, inputs_of

ON, OFF = Options(), Options(staged_arrivals=False)


def _one_iteration(program: str) -> Iterator[KernelGraph]:
    """The hand plans of ``program`` at cheap sizes whose first kernel runs its loop once."""
    for _, t in _hand(program):
        for sizes in cheap_sizes(t, 4):
            kg = t.instantiate(sizes)
            low = lower_graph(kg, arch("sm_80")).kernels[0]
            if low is not None and low.loop == 1:
                yield kg


def _staged(kg: KernelGraph, options: Options = ON) -> KernelLowering:
    low = lower_graph(kg, arch("sm_80"), options).kernels[0]
    assert low is not None
    return low


def _attention() -> KernelGraph:
    return next(kg for kg in _one_iteration("gqa") if _staged(kg).arrivals)


def test_k_and_v_arrive_as_two_groups_in_the_order_they_are_read() -> None:
    low = _staged(_attention())
    ops = low.kernel.ops
    names = [[ops[j].tensor for j in a.loads if isinstance(ops[j], Load)] for a in low.arrivals]
    assert names == [["Kt"], ["V"]]
    first, second = low.arrivals
    assert first.before < second.before  # the scores' matmul, then the weighted sum's
    assert low.loop_wait == 1 and low.prologue_wait == 2 and low.arrival_waits() == {second.before: 0}
    assert not _staged(_attention(), OFF).arrivals


def test_the_source_commits_k_then_v_and_waits_for_v_after_the_scores() -> None:
    src = generate(_attention(), arch="sm_80", options=ON).kernels[0].source
    k, v = src.index("load_s_Kt(smem_base"), src.index("load_s_V(smem_base")
    assert k < src.index("cp_async_commit();", k) < v  # a group of its own, committed before V's copies
    wait_v = src.index("cp_async_wait<0>();  // the next arrival")
    loop = src.index("for (int it = 0;")
    scores, weighted = src.index("mma_3(", loop), src.index("mma_5(", loop)
    assert scores < wait_v < weighted
    assert "if (nx < 1)" not in src  # one iteration: no refill
    assert "if (nx < 1)" in generate(_attention(), arch="sm_80", options=OFF).kernels[0].source


@pytest.mark.parametrize("program", ["gqa", "qknorm_gqa", "swiglu", "rmsnorm_mlp"])
def test_staged_hand_plans_emulate_like_the_interpreter(program: str) -> None:
    staged = [kg for kg in _one_iteration(program) if _staged(kg).arrivals]
    assert staged
    for kg in staged:
        assert emulate_error(kg, ON) < 1e-9


def test_a_wait_after_the_first_reader_is_caught() -> None:
    kg = _attention()
    gl = lower_graph(kg, arch("sm_80"), ON)
    low = gl.kernels[0]
    assert low is not None
    late = len(low.kernel.ops) - 1  # V's wait moved to the last op, after the weighted sum read it
    arrivals = (low.arrivals[0], Arrival(low.arrivals[1].loads, late))
    broken = dataclasses.replace(gl, kernels=(dataclasses.replace(low, arrivals=arrivals), *gl.kernels[1:]))
    with pytest.raises(EmulationError, match="in flight"):
        emulate_lowering(broken, inputs_of(kg))


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_staged_sources_compile() -> None:
    kgs = [_attention(), next(kg for kg in _one_iteration("qknorm_gqa") if _staged(kg).arrivals)]
    sources = [(k.entry, k.source) for kg in kgs for k in generate(kg, arch="sm_80", options=ON).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == len(sources) and all(c.spills == 0 for c in compiled)
