"""``Options.late_refill``: the main loop refills the ring's oldest slot after the iteration's ops, not
before them. The rendered loop holds the same lines in the new order, the emulator runs that order
(wait, slot check, loop ops, refill, commit) like the interpreter, and the sources compile."""

from __future__ import annotations

import pytest

from prism.codegen import Options, generate
from prism.codegen.arch import arch
from prism.codegen.lower import lower_graph
from prism.codegen.nvcc import compile_check, nvcc_path
from prism.ir import KernelGraph
from tests.matmul_cases import matmul_graph
from tests.test_emulate import _hand, cheap_sizes, emulate_error
from tests.test_warp_tiles import _kernel

LATE = Options(late_refill=True)
SMALL_RING = Options(late_refill=True, stages=2)  # small problems fit every stage in flight: force refills


def _loop(source: str) -> list[str]:
    """The lines of the main loop's body (from ``for (int it`` to its closing brace)."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("for (int it = 0;"))
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == " " * indent + "}")
    return [line.strip() for line in lines[start + 1:end]]


def _gemm() -> KernelGraph:
    return matmul_graph(128, 128, 512, (1, 1), 8)  # 8 iterations over a ring: refills run


def test_the_refill_moves_after_the_loop_ops() -> None:
    kg = _gemm()
    plain = Options(carried_copies=False)  # (carried copies run the loop in turns: another shape of loop)
    early, late = (_loop(generate(kg, arch="sm_80", options=o).kernels[0].source) for o in (plain, LATE))
    assert sorted(early) == sorted(late) and early != late  # the same lines, another order
    for body, refill_first in ((early, True), (late, False)):
        mma = next(i for i, line in enumerate(body) if line.startswith("mma_2("))
        commit = body.index("cp_async_commit();")
        advance = next(i for i, line in enumerate(body) if line.startswith("sb_wr = "))
        assert (commit < mma) is refill_first and commit < advance
    assert _kernel(kg, LATE).late_refill and not _kernel(kg, plain).late_refill


def _refills(kg: KernelGraph, options: Options) -> int:
    """Kernels of ``kg`` whose loop refills its ring (more iterations than stages in flight)."""
    return sum(k is not None and k.loop > k.prefetch for k in lower_graph(kg, arch("sm_80"), options).kernels)


@pytest.mark.parametrize(("kg", "options"), [(_gemm(), LATE), (matmul_graph(64, 256, 256, (1, 2), 4), SMALL_RING)],
                         ids=["gemm", "wide"])
def test_late_refill_matmuls_emulate_like_the_interpreter(kg: KernelGraph, options: Options) -> None:
    assert _refills(kg, options) == 1
    assert emulate_error(kg, options) < 1e-9


@pytest.mark.parametrize("program", ["rmsnorm_linear", "swiglu", "rmsnorm_mlp"])
def test_late_refill_hand_plans_emulate_like_the_interpreter(program: str) -> None:
    ran = refilled = 0
    for _, t in _hand(program):
        for sizes in cheap_sizes(t, 2):
            kg = t.instantiate(sizes)
            assert emulate_error(kg, SMALL_RING) < 1e-9
            ran, refilled = ran + 1, refilled + _refills(kg, SMALL_RING)
    assert ran and refilled


@pytest.mark.skipif(nvcc_path() is None, reason="nvcc not on the PATH")
def test_late_refill_sources_compile() -> None:
    sources = [(k.entry, k.source) for kg in (_gemm(), matmul_graph(64, 256, 256, (1, 2), 4))
               for k in generate(kg, arch="sm_80", options=LATE).kernels]
    compiled = compile_check(sources, "sm_80", jobs=2)
    assert len(compiled) == 2 and all(c.spills == 0 for c in compiled)
